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
	q->done_issue = calloc(cap, sizeof(*q->done_issue));
	if (!q->pending || !q->done || !q->done_issue) {
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
	free(q->done_issue);
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
	memmove(q->done_issue, q->done_issue + q->nreturned,
		(q->ndone - q->nreturned) * sizeof(*q->done_issue));
	q->ndone -= q->nreturned;
	q->nreturned = 0;
}

enum fio_q_status pack_ioq_done_in_queue(struct thread_data *td, struct pack_ioq *q,
					 struct io_u *io_u)
{
	if (PACK_FIO_HAVE_ASYNCIO_SETS_ISSUE_TIME) {
		/* fio leaves this to engines with a ->commit */
		io_u_mark_submit(td, 1);
		io_u_mark_complete(td, 1);
		return FIO_Q_COMPLETED;
	}
	pack_ioq_queued(q, io_u);
	pack_ioq_completed(q, io_u);
	return FIO_Q_QUEUED;
}

unsigned pack_ioq_hand_out(struct pack_ioq *q, unsigned max)
{
	q->nreturned = q->ndone < max ? q->ndone : max;
	return q->nreturned;
}

int pack_uring_queue_init(unsigned entries, struct io_uring *ring)
{
	const unsigned defer =
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	int ret = io_uring_queue_init(entries, ring, defer);

	if (ret == -EINVAL)
		ret = io_uring_queue_init(entries, ring, IORING_SETUP_COOP_TASKRUN);
	if (ret == -EINVAL)
		ret = io_uring_queue_init(entries, ring, 0);
	return ret;
}

void pack_uring_run_deferred(struct io_uring *ring)
{
	if (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_TASKRUN)
		io_uring_get_events(ring);
}
