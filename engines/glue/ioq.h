/*
 * The io_us of an engine that completes them itself, through an io_uring of
 * its own (postmark's and dbreplay's io_uring modes): the ones queued since
 * fio's last ->commit, whose submission fio is told about at the commit, and
 * the completed ones, handed to fio by ->getevents and ->event. Plus the
 * ring's set-up both engines want. Compiled into each engine, with fio's
 * headers.
 */
#ifndef PACK_IOQ_H
#define PACK_IOQ_H

#include <liburing.h>
#include "fio.h"
#include "fioglue.h"

struct pack_ioq {
	struct io_u **pending;	/* queued since the last ->commit */
	struct io_u **done;	/* completed, in completion order; the first nreturned handed out */
	struct timespec *done_issue;	/* done[i]'s issue_time when it completed */
	unsigned npending, ndone, nreturned, cap;
};

/* Room for @cap io_us each way (fio's iodepth and a margin). 0, or -1 out of memory. */
int pack_ioq_init(struct pack_ioq *q, unsigned cap);
void pack_ioq_free(struct pack_ioq *q);

/* ->queue returned FIO_Q_QUEUED for @io_u. */
static inline void pack_ioq_queued(struct pack_ioq *q, struct io_u *io_u)
{
	if (q->npending < q->cap)
		q->pending[q->npending++] = io_u;
	else	/* cannot happen: fio has fewer io_us than cap */
		log_err("fio-pack: internal error: more io_us queued than %u\n", q->cap);
}

/*
 * @io_u completed: fio has it at the next ->getevents. Its issue_time is the
 * one fio's latency is measured from (the engine sets it before this call):
 * it is kept, and given back at ->event, since fio before 3.31 overwrites
 * issue_time after ->queue.
 */
static inline void pack_ioq_completed(struct pack_ioq *q, struct io_u *io_u)
{
	if (q->ndone < q->cap) {
		q->done_issue[q->ndone] = io_u->issue_time;
		q->done[q->ndone++] = io_u;
	} else {	/* cannot happen: fio has fewer io_us than cap */
		log_err("fio-pack: internal error: more io_us completed than %u\n", q->cap);
	}
}

/*
 * ->queue has done @io_u at once (its issue_time set): what ->queue returns.
 * Where fio honours PACK_ASYNCIO_SETS_ISSUE_TIME that is FIO_Q_COMPLETED,
 * with fio's submit accounting. Older fio would stamp issue_time after
 * ->queue and measure ~0: there @io_u is queued and handed over, done, at
 * the next ->getevents.
 */
enum fio_q_status pack_ioq_done_in_queue(struct thread_data *td, struct pack_ioq *q,
					 struct io_u *io_u);

/* Completed and not yet handed to fio. */
static inline unsigned pack_ioq_waiting(const struct pack_ioq *q)
{
	return q->ndone - q->nreturned;
}

/* ->commit, once the SQEs are submitted: fio's submit accounting, per io_u. */
void pack_ioq_commit(struct thread_data *td, struct pack_ioq *q);

/* At the start of ->getevents: forgets the io_us fio took at the last one. */
void pack_ioq_forget_returned(struct pack_ioq *q);

/* At the end of ->getevents: how many fio may take now (at most @max). */
unsigned pack_ioq_hand_out(struct pack_ioq *q, unsigned max);

/* ->event */
static inline struct io_u *pack_ioq_event(const struct pack_ioq *q, int event)
{
	struct io_u *io_u = q->done[event];

	io_u->issue_time = q->done_issue[event];
	return io_u;
}

/*
 * io_uring_queue_init() with IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN |
 * TASKRUN_FLAG (Linux 6.1+), else COOP_TASKRUN (5.19+), else plain. The
 * engines create the ring in fio's ->init, which runs in the job's own
 * thread or process, and only that thread submits and reaps, so a single
 * issuer holds; the completions' task work then runs only when the job
 * waits for completions, not as an interrupt of whatever it does between
 * waits. The price: a completion is posted only inside
 * io_uring_enter(GETEVENTS), so a reap that does not wait must call
 * pack_uring_run_deferred() first. 0 or -errno.
 */
int pack_uring_queue_init(unsigned entries, struct io_uring *ring);

/*
 * Posts the completions whose task work the kernel holds back for the next
 * io_uring_enter(GETEVENTS) (DEFER_TASKRUN): one system call when the ring's
 * IORING_SQ_TASKRUN flag says there are some, none otherwise (and never
 * with COOP_TASKRUN or a plain ring, which do not set it). For a reap that
 * does not wait; liburing's waits and io_uring_peek_cqe() enter by themselves.
 */
void pack_uring_run_deferred(struct io_uring *ring);

#endif
