/* See ioq.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	free(q->given_up);
	memset(q, 0, sizeof(*q));
}

int pack_ioq_attach(struct pack_ioq *q, struct io_uring *ring, const char *engine,
		    pack_ioq_complete_fn complete, void *data)
{
	q->given_up = calloc(ring->sq.ring_entries, sizeof(*q->given_up));
	if (!q->given_up)
		return -1;
	q->ring = ring;
	q->engine = engine;
	q->complete = complete;
	q->data = data;
	return 0;
}

unsigned pack_ioq_reap(struct pack_ioq *q)
{
	struct io_uring *ring = q->ring;
	/* liburing's own timeouts post completions only on kernels without EXT_ARG */
	const int own_timeouts = !(ring->features & IORING_FEAT_EXT_ARG);
	int giving_up = q->giving_up;
	unsigned n = 0;

	pack_uring_run_deferred(ring);
	/*
	 * The completion queue read in place, as io_uring_for_each_cqe() does:
	 * io_uring_cq_ready() and io_uring_peek_cqe() for each completion read
	 * the queue's head and tail twice, a few times an operation.
	 */
	for (;;) {
		unsigned head = *ring->cq.khead;
		struct io_uring_cqe *cqe;
		void *user_data;
		int res;

		if (head == io_uring_smp_load_acquire(ring->cq.ktail))
			break;
		cqe = &ring->cq.cqes[io_uring_cqe_index(ring, head, ring->cq.ring_mask)];
		user_data = io_uring_cqe_get_data(cqe);
		res = cqe->res;
		/* seen before it is handled: the handler may reap too */
		io_uring_cq_advance(ring, 1);
		if (own_timeouts && user_data == (void *)(uintptr_t)LIBURING_UDATA_TIMEOUT)
			continue;
		q->giving_up = 0;
		q->complete(q->data, user_data, res);
		n++;
	}
	q->giving_up = giving_up;
	return n;
}

/*
 * Takes the SQEs the kernel has not consumed out of the ring, as if they had
 * never been prepared, and completes each with -@err (a close is made with
 * close(2), and completes with its result): the ring stays usable for what
 * comes next. What the handlers need is copied first, since they prepare
 * SQEs of their own in the same slots. liburing has no call for this: its
 * SQ tail, and the kernel's, go back to the kernel's head (no SQPOLL here:
 * only io_uring_enter reads them).
 */
static void give_up(struct pack_ioq *q, int err)
{
	struct io_uring_sq *sq = &q->ring->sq;
	unsigned head = IO_URING_READ_ONCE(*sq->khead), n = sq->sqe_tail - head, i;

	for (i = 0; i < n; i++) {
		const struct io_uring_sqe *sqe = &sq->sqes[(head + i) & sq->ring_mask];

		q->given_up[i].user_data = (void *)(uintptr_t)sqe->user_data;
		q->given_up[i].close_fd = sqe->opcode == IORING_OP_CLOSE ? sqe->fd : -1;
	}
	sq->sqe_head = sq->sqe_tail = head;
	IO_URING_WRITE_ONCE(*sq->ktail, head);
	q->submitting = 1; /* a handler's submission is one try: given_up stays */
	for (i = 0; i < n; i++) {
		int fd = q->given_up[i].close_fd, res = -err;

		if (fd >= 0)
			res = close(fd) ? -errno : 0;
		q->giving_up = 1;
		q->complete(q->data, q->given_up[i].user_data, res);
		q->giving_up = 0;
	}
	q->submitting = 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int pack_ioq_submit_now(struct pack_ioq *q, unsigned wait_nr)
{
	unsigned tries = 0, gave_up = 0;
	uint64_t t0 = 0;
	int ret, err;

	if (q->submitting)
		wait_nr = 0; /* a handler's, inside a retry: never a wait there */
	if (!pack_ioq_unsubmitted(q)) {
		struct io_uring_cqe *cqe;

		/* a wait alone: no submission to retry or give up */
		ret = wait_nr ? io_uring_wait_cqe_nr(q->ring, &cqe, wait_nr) : 0;
		return ret == -EINTR ? 0 : ret;
	}
	while (pack_ioq_unsubmitted(q)) {
		ret = wait_nr ? io_uring_submit_and_wait(q->ring, wait_nr)
			      : io_uring_submit(q->ring);
		wait_nr = 0;
		if (!pack_ioq_unsubmitted(q)) {
			if (ret >= 0 || ret == -EINTR)
				continue; /* all in (a signal may cut the wait short) */
			return ret;	  /* the wait's own error */
		}
		if (ret > 0) {
			tries = 0; /* the kernel took part of them: progress */
			continue;
		}
		if (ret == 0)
			ret = -EAGAIN; /* took none and said nothing */
		if (q->submitting)
			return 0; /* the outer pack_ioq_submit() retries; all stays */
		if (!t0)
			t0 = now_ms();
		if ((ret == -EAGAIN || ret == -EBUSY || ret == -EINTR) && !gave_up &&
		    tries < PACK_IOQ_SUBMIT_TRIES) {
			q->submitting = 1;
			if (ret != -EINTR)
				pack_ioq_reap(q); /* completions free what the kernel lacks */
			q->submitting = 0;
			if (tries)
				usleep(1000u << (tries - 1));
			tries++;
			continue;
		}
		/*
		 * Given up: SQEs that handlers prepare now (a close after the
		 * failed step) get one try each, without pauses.
		 */
		err = -ret;
		/* once a ring and error: each operation given up fails with it too */
		if (!gave_up++ && q->failed != err)
			pack_log_err(
				"%s: io_uring_submit: %s (%u attempt%s in %llu ms): failing the %u request%s not submitted\n",
				q->engine, strerror(err), tries + 1, tries ? "s" : "",
				(unsigned long long)(now_ms() - t0), pack_ioq_unsubmitted(q),
				pack_ioq_unsubmitted(q) == 1 ? "" : "s");
		q->failed = err;
		give_up(q, err);
	}
	return 0;
}

struct io_uring_sqe *pack_ioq_get_sqe(struct pack_ioq *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(q->ring);

	if (!sqe) {
		pack_ioq_submit(q, 0);
		sqe = io_uring_get_sqe(q->ring);
	}
	return sqe;
}

void pack_ioq_commit(struct thread_data *td, struct pack_ioq *q)
{
	unsigned i;

	/*
	 * fio's td_io_getevents() calls ->commit before every wait, with
	 * nothing queued since the last: that is no submission, and counting
	 * it put half of the job's submissions in fio's "submit: 0" bucket.
	 */
	if (!q->npending)
		return;
	for (i = 0; i < q->npending; i++)
		io_u_queued(td, q->pending[i]);
	io_u_mark_submit(td, q->npending);
	q->npending = 0;
}

void pack_ioq_forget_returned(struct pack_ioq *q)
{
	if (!q->nreturned)
		return;
	if (q->nreturned == q->ndone) { /* fio took them all: nothing to move */
		q->ndone = q->nreturned = 0;
		return;
	}
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
