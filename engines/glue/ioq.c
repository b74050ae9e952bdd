/* See ioq.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ioq.h"

int pack_ioq_init(struct pack_ioq *q, unsigned cap)
{
	memset(q, 0, sizeof(*q));
	q->pending = calloc(cap, sizeof(*q->pending));
	q->done = calloc(cap, sizeof(*q->done));
	if (!q->pending || !q->done) {
		pack_ioq_free(q);
		return -1;
	}
	q->cap = cap;
	return 0;
}

void pack_ioq_free(struct pack_ioq *q)
{
	free(q->pending);
	free(q->done);
	memset(q, 0, sizeof(*q));
}

void pack_ioq_commit(struct thread_data *td, struct pack_ioq *q)
{
	unsigned i;

	for (i = 0; i < q->npending; i++)
		io_u_queued(td, q->pending[i]);
	io_u_mark_submit(td, q->npending);
	q->npending = 0;
}

void pack_ioq_forget_returned(struct pack_ioq *q)
{
	if (!q->nreturned)
		return;
	memmove(q->done, q->done + q->nreturned, (q->ndone - q->nreturned) * sizeof(*q->done));
	q->ndone -= q->nreturned;
	q->nreturned = 0;
}

unsigned pack_ioq_hand_out(struct pack_ioq *q, unsigned max)
{
	q->nreturned = q->ndone < max ? q->ndone : max;
	return q->nreturned;
}

int pack_uring_queue_init(unsigned entries, struct io_uring *ring)
{
	int ret = io_uring_queue_init(entries, ring, IORING_SETUP_COOP_TASKRUN);

	if (ret == -EINVAL)
		ret = io_uring_queue_init(entries, ring, 0);
	return ret;
}
