/*
 * The io_us of an engine that completes them itself, through an io_uring of
 * its own (the io_uring modes of the three engines): the ones queued since
 * fio's last ->commit, whose submission fio is told about at the commit, and
 * the completed ones, handed to fio by ->getevents and ->event. Plus what
 * every engine does with its ring: the set-up, getting an SQE, submitting
 * with the one policy for a failed submission, reaping. Compiled into each
 * engine, with fio's headers.
 */
#ifndef PACK_IOQ_H
#define PACK_IOQ_H

#include <errno.h>
#include <liburing.h>
#include "fio.h"
#include "fioglue.h"

/* A completion's handler: the engine's @data, the SQE's user data, its result. */
typedef void (*pack_ioq_complete_fn)(void *data, void *user_data, int res);

/* An SQE a failed submission takes out of the ring (pack_ioq_submit). */
struct pack_ioq_given_up {
	void *user_data;
	int close_fd; /* an IORING_OP_CLOSE's descriptor, else -1 */
};

struct pack_ioq {
	struct io_u **pending;	/* queued since the last ->commit */
	struct io_u **done;	/* completed, in completion order; the first nreturned handed out */
	struct timespec *done_issue;	/* done[i]'s issue_time when it completed */
	unsigned npending, ndone, nreturned, cap;
	/* the ring and its engine (pack_ioq_attach) */
	struct io_uring *ring;
	const char *engine;
	pack_ioq_complete_fn complete;
	void *data;
	struct pack_ioq_given_up *given_up; /* SQEs a failed submission gives up */
	int submitting; /* inside pack_ioq_submit(): a nested one does not retry */
	int giving_up;	/* the handler runs for an SQE given up (pack_ioq_giving_up) */
	int failed;	/* errno of the last submission given up, 0 if none */
};

/* Room for @cap io_us each way (fio's iodepth and a margin). 0, or -1 out of memory. */
int pack_ioq_init(struct pack_ioq *q, unsigned cap);
void pack_ioq_free(struct pack_ioq *q);

/*
 * The io_uring the io_us go through, set up, and @complete, which @engine
 * (its name, for the error line) has called for each completion with @data.
 * 0, or -1 out of memory.
 */
int pack_ioq_attach(struct pack_ioq *q, struct io_uring *ring, const char *engine,
		    pack_ioq_complete_fn complete, void *data);

/*
 * Submits the SQEs prepared in the ring; with @wait_nr, also waits for that
 * many completions in the same system call (the caller knows they are in
 * the kernel; a signal may cut the wait short). The one policy for a failed
 * submission, for every engine (docs/RELIABILITY.md: the io_uring_submit
 * faults): what is prepared stays prepared; EAGAIN and EBUSY (the kernel
 * short of memory, or the completion queue full) are retried after reaping
 * the completions there are, EINTR at once, up to PACK_IOQ_SUBMIT_TRIES times with a
 * growing pause (about 0.13 s in all); then, and at once for any other
 * error, the SQEs not submitted are given up: taken out of the ring and
 * completed with the error through the engine's handler (which may prepare
 * next steps, submitted here too; a close is made with close(2) instead,
 * so that no descriptor stays open), and one line names the engine, the
 * call and the error. Returns with nothing left unsubmitted: 0 (what was
 * given up fails with its operations), or the wait's own -errno.
 */
#define PACK_IOQ_SUBMIT_TRIES 8
int pack_ioq_submit_now(struct pack_ioq *q, unsigned wait_nr);

/* SQEs prepared and not submitted. */
static inline unsigned pack_ioq_unsubmitted(const struct pack_ioq *q)
{
	return io_uring_sq_ready(q->ring);
}

/*
 * pack_ioq_submit_now(), without a call when there is nothing to submit
 * and no wait: the engines ask at every ->commit and ->getevents, several
 * times an operation, and most find the ring's SQEs already in.
 */
static inline int pack_ioq_submit(struct pack_ioq *q, unsigned wait_nr)
{
	if (!wait_nr && !pack_ioq_unsubmitted(q))
		return 0;
	return pack_ioq_submit_now(q, wait_nr);
}

/*
 * An SQE: one the ring has room for, else one after submitting what is
 * prepared (pack_ioq_submit). NULL if there is none to be had.
 */
struct io_uring_sqe *pack_ioq_get_sqe(struct pack_ioq *q);

/*
 * The errno of an operation that could get no SQE: the error a submission
 * was given up with, else EBUSY.
 */
static inline int pack_ioq_no_sqe_error(const struct pack_ioq *q)
{
	return q->failed ? q->failed : EBUSY;
}

/*
 * In the engine's handler: 1 when the SQE was given up (never submitted),
 * not completed by the kernel: an engine that retries a request whose
 * completion says EAGAIN or EINTR must not retry this one.
 */
static inline int pack_ioq_giving_up(const struct pack_ioq *q)
{
	return q->giving_up;
}

/*
 * Whether an operation's error @err is the one pack_ioq_submit() has said:
 * the engine need not say it again for each operation given up.
 */
static inline int pack_ioq_said(const struct pack_ioq *q, int err)
{
	return q->failed && err == q->failed;
}

/*
 * Hands each completion there is to the engine's handler, without waiting
 * (after posting those DEFER_TASKRUN holds back). Each is taken off the
 * completion queue before its handler runs, so a handler may submit, and
 * reap, itself. Returns how many.
 */
unsigned pack_ioq_reap(struct pack_ioq *q);

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

/*
 * ->commit of an engine whose SQEs go in at the commit: what is prepared
 * is submitted (what cannot be fails its operation: pack_ioq_submit), then
 * fio's submit accounting, per io_u (operation), not per SQE.
 */
static inline void pack_ioq_submit_commit(struct thread_data *td, struct pack_ioq *q)
{
	pack_ioq_submit(q, 0);
	pack_ioq_commit(td, q);
}

/*
 * The start of ->getevents for such an engine: an io_u is not handed back
 * before its submission is accounted (pack_ioq_submit_commit), and the
 * io_us fio took at the last ->getevents are forgotten.
 */
static inline void pack_ioq_getevents_start(struct thread_data *td, struct pack_ioq *q)
{
	pack_ioq_submit_commit(td, q);
	pack_ioq_forget_returned(q);
}

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
