/* pm_io_api=io_uring (see pmengine.h). */
#include "pmengine.h"

/* ------------------------------------------------------------------ */
/* pm_io_api=io_uring                                                  */
/* ------------------------------------------------------------------ */

/*
 * Each operation is a sequence of io_uring requests, one at a time: openat
 * (relative to the file's directory, the sync mode's flags), the reads or
 * writes (PostMark's chunks in raw mode; in buffered mode the calls stdio
 * would make, from lib/stdiosim with the buffer size taken once from the
 * location's st_blksize: no fstat, no lseek, writes at explicit offsets,
 * appends through O_APPEND; raw mode's zero-length remainder calls are not
 * made), the fsync of the pm_fsync policy, close; or one unlinkat. Up to
 * iodepth io_us are in flight, issued in stream order; ->queue answers
 * FIO_Q_BUSY (and fio reaps completions, then prepares the same io_u again,
 * for the same pd->next) while the next one must wait:
 *   - a file operation waits for earlier ones on the same file;
 *   - the first io_u of a phase waits for every io_u of the previous one
 *     (the phase is stamped when they have all completed);
 * a TX_END is queued at once and completes when its transaction's
 * operations have (then, with pm_fsync=transaction, after fsyncing through
 * io_uring the files they wrote and the directories they changed).
 */

static int pool_of(const struct pm_data *pd, const struct pm_op *op)
{
	int p = op->loc < 0 ? 0 : op->loc;

	return pd->pool[p].alias ? pd->pool[p].alias - 1 : p;
}

/* The read(2) calls of PostMark's read_file(), one at a time: 1 and *@len, or 0 at the end. */
static int next_read(struct pm_data *pd, struct pm_req *rq, size_t *len)
{
	int rb = pd->cfg.read_block;

	if (!pd->cfg.buffered) {
		while (!rq->gen_done) {
			int n = rq->remaining >= rb ? rb : rq->remaining;

			if (rq->remaining < rb)
				rq->gen_done = 1;
			else
				rq->remaining -= rb;
			if (n) {
				*len = (size_t)n;
				return 1;
			}
		}
		return 0;
	}
	for (;;) {
		size_t want;

		if (rq->in_fread) {
			if (stdiosim_fread_next(&rq->rd, len, &rq->tobuf))
				return 1;
			rq->in_fread = 0;
			if (rq->loop_done)
				return 0;
		}
		want = rq->remaining >= rb ? (size_t)rb : (size_t)rq->remaining;
		if (stdiosim_r_needs_alloc(&rq->rd, want))
			stdiosim_r_alloc(&rq->rd, pd->pool[rq->op.loc < 0 ? 0 : rq->op.loc].bufsize);
		stdiosim_fread_begin(&rq->rd, want);
		rq->in_fread = 1;
		if (rq->remaining < rb)
			rq->loop_done = 1;
		else
			rq->remaining -= rb;
	}
}

/* The write(2) calls of write_blocks(), as stream ranges: 1, or 0 at the end. */
static int next_write(struct pm_data *pd, struct pm_req *rq, uint64_t *off, size_t *len)
{
	int wb = pd->cfg.write_block;

	if (!pd->cfg.buffered) {
		while (!rq->gen_done) {
			int n = rq->remaining >= wb ? wb : rq->remaining;

			if (rq->remaining < wb)
				rq->gen_done = 1;
			else
				rq->remaining -= wb;
			if (n) {
				*off = rq->gpos;
				*len = (size_t)n;
				rq->gpos += n;
				return 1;
			}
		}
		return 0;
	}
	for (;;) {
		size_t n;

		if (rq->ri < rq->nr) {
			*off = rq->r[rq->ri].off;
			*len = rq->r[rq->ri].len;
			rq->ri++;
			return 1;
		}
		if (rq->gen_done)
			return 0;
		rq->ri = rq->nr = 0;
		if (rq->loop_done) {
			rq->gen_done = 1;
			rq->nr = stdiosim_fclose(&rq->w, rq->r);
			continue;
		}
		n = rq->remaining >= wb ? (size_t)wb : (size_t)rq->remaining;
		if (stdiosim_w_needs_alloc(&rq->w, n))
			stdiosim_w_alloc(&rq->w, pd->pool[rq->op.loc < 0 ? 0 : rq->op.loc].bufsize);
		rq->nr = stdiosim_fwrite(&rq->w, n, rq->r);
		if (rq->remaining < wb)
			rq->loop_done = 1;
		else
			rq->remaining -= wb;
	}
}

static const void *req_data(struct pm_data *pd, struct pm_req *rq, uint64_t off, size_t len)
{
	if (pd->postmark_content)
		return pd->text + off % (pd->textlen);
	/* a buffer per request: the kernel may read it after another is filled */
	content_fill(&pd->pool_content, &pd->content, pd->cfg.seed, rq->key, off, rq->wbuf, len);
	return rq->wbuf;
}

/* Queues the SQE of @rq's step: 0, or 1 if there is none to be had (rq->err set). */
static int uring_prep(struct pm_data *pd, struct pm_req *rq)
{
	struct io_uring_sqe *sqe = pack_ioq_get_sqe(&pd->ioq);
	int buffered = pd->cfg.buffered;
	struct pm_tx *tx = rq->tx;

	if (!sqe) {
		if (!rq->err)
			rq->err = pack_ioq_no_sqe_error(&pd->ioq);
		if (rq->fd >= 0)
			close(rq->fd);
		rq->fd = -1;
		return 1;
	}
	switch (rq->step) {
	case US_OPEN:
		/* the flags and modes of pm_run_op() */
		if (rq->op.kind == PM_OP_CREATE)
			io_uring_prep_openat(sqe, rq->dfd, rq->name,
					     (buffered ? O_WRONLY | O_TRUNC : O_RDWR) | O_CREAT | O_EXCL |
					     O_NOFOLLOW | O_CLOEXEC, buffered ? 0666 : 0644);
		else if (rq->op.kind == PM_OP_APPEND)
			io_uring_prep_openat(sqe, rq->dfd, rq->name,
					     (buffered ? O_WRONLY | O_CREAT : O_RDWR) | O_APPEND |
					     O_NOFOLLOW | O_CLOEXEC, 0666);
		else
			io_uring_prep_openat(sqe, rq->dfd, rq->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
		break;
	case US_READ:
		/* the file position a read(2) would be at: what was read so far */
		io_uring_prep_read(sqe, rq->fd, pd->rbuf, rq->rlen, rq->bytes);
		break;
	case US_WRITE:
		/* a new file's offsets are the stream's; O_APPEND puts appends at the end */
		io_uring_prep_write(sqe, rq->fd, req_data(pd, rq, rq->cur_off, rq->cur_len), rq->cur_len,
				    rq->op.kind == PM_OP_APPEND ? (uint64_t)-1 : rq->cur_off);
		break;
	case US_FSYNC:
		io_uring_prep_fsync(sqe, rq->fd, 0);
		break;
	case US_CLOSE:
		io_uring_prep_close(sqe, rq->fd);
		break;
	case US_UNLINK:
		io_uring_prep_unlinkat(sqe, rq->dfd, rq->name, 0);
		break;
	case US_TX_FSYNC:
		io_uring_prep_fsync(sqe, tx->fd[rq->idx], 0);
		break;
	case US_TX_CLOSE:
		io_uring_prep_close(sqe, tx->fd[rq->idx]);
		break;
	case US_TX_DIRFSYNC:
		io_uring_prep_fsync(sqe, tx->dirfd[rq->idx - tx->nfd], 0);
		break;
	case US_TX_DIRCLOSE:
		io_uring_prep_close(sqe, tx->dirfd[rq->idx - tx->nfd]);
		break;
	}
	io_uring_sqe_set_data(sqe, rq);
	pd->sqes++;
	return 0;
}

/* pm_fsync=transaction: the transaction fsyncs @rq's directory at its end (defer_dir()). */
static void uring_defer_dir(struct pm_data *pd, struct pm_req *rq)
{
	struct pm_tx *tx = rq->tx;
	int i;

	if (pd->o->fsync != PMF_TRANSACTION || rq->op.phase != PM_PHASE_TRANSACTIONS || !tx)
		return;
	for (i = 0; i < tx->ndir; i++)
		if (tx->dirfd[i] == rq->dfd)
			return;
	if (tx->ndir < 2) {
		tx->dirfd[tx->ndir] = rq->dfd;
		tx->dirown[tx->ndir] = rq->dfd_tmp;
		tx->ndir++;
		rq->dfd_tmp = 0;	/* the transaction closes it */
	}
}

/*
 * After the data: the policy's fsync, or (pm_fsync=transaction) the
 * descriptor goes to the transaction, which fsyncs and closes it at its end
 * (sync_or_defer()), or close. 1 if the operation is complete.
 */
static int after_data(struct pm_data *pd, struct pm_req *rq)
{
	enum fsync_policy p = pd->o->fsync;
	int is_create = rq->op.kind == PM_OP_CREATE;
	struct pm_tx *tx = rq->tx;

	if (rq->op.kind == PM_OP_READ) {
		rq->step = US_CLOSE;
		return 0;
	}
	if (p == PMF_WRITE || (p == PMF_CREATE && is_create) || (p == PMF_APPEND && !is_create)) {
		rq->step = US_FSYNC;
		return 0;
	}
	if (p == PMF_TRANSACTION && rq->op.phase == PM_PHASE_TRANSACTIONS && tx && tx->nfd < 2) {
		tx->fd[tx->nfd++] = rq->fd;
		rq->fd = -1;
		if (is_create)
			uring_defer_dir(pd, rq);
		return 1;
	}
	rq->step = US_CLOSE;
	return 0;
}

/* The first read or write after the open. 1 if the operation is complete. */
static int start_data(struct pm_data *pd, struct pm_req *rq)
{
	if (rq->op.kind == PM_OP_READ) {
		rq->step = next_read(pd, rq, &rq->rlen) ? US_READ : US_CLOSE;
		return 0;
	}
	if (next_write(pd, rq, &rq->cur_off, &rq->cur_len)) {
		rq->step = US_WRITE;
		return 0;
	}
	return after_data(pd, rq);
}

/* A TX_END's next fsync: the files, then the directories. 1 when none is left. */
static int tx_pick(struct pm_req *rq)
{
	struct pm_tx *tx = rq->tx;

	if (rq->idx < tx->nfd)
		rq->step = US_TX_FSYNC;
	else if (rq->idx < tx->nfd + tx->ndir)
		rq->step = US_TX_DIRFSYNC;
	else
		return 1;
	return 0;
}

/* @rq's step completed with @res: queues the next. 1 when the request is complete. */
static int uring_advance(struct pm_data *pd, struct pm_req *rq, int res)
{
	struct pm_tx *tx = rq->tx;

	switch (rq->step) {
	case US_OPEN:
		if (res < 0) {
			rq->err = -res;
			return 1;
		}
		rq->fd = res;
		rq->made = rq->op.kind == PM_OP_CREATE;
		if (start_data(pd, rq))
			return 1;
		break;
	case US_READ:
		if (res < 0) {
			rq->err = -res;
			rq->step = US_CLOSE;
			break;
		}
		rq->bytes += res;
		if (pd->cfg.buffered)
			stdiosim_fread_done(&rq->rd, res, rq->tobuf);
		if (!next_read(pd, rq, &rq->rlen))
			rq->step = US_CLOSE;
		break;
	case US_WRITE:
		if (res <= 0) {
			rq->err = res ? -res : EIO;
			rq->step = US_CLOSE;
			break;
		}
		rq->bytes += res;
		rq->cur_off += res;
		rq->cur_len -= res;
		if (rq->cur_len || next_write(pd, rq, &rq->cur_off, &rq->cur_len))
			break;
		if (after_data(pd, rq))
			return 1;
		break;
	case US_FSYNC:
		if (res < 0)
			rq->err = -res;
		rq->step = US_CLOSE;
		break;
	case US_CLOSE:
		rq->fd = -1;
		if (res < 0 && !rq->err)
			rq->err = -res;
		if (!rq->err && rq->op.kind == PM_OP_CREATE)
			uring_defer_dir(pd, rq);
		return 1;
	case US_UNLINK:
		if (res < 0)
			rq->err = -res;
		else
			uring_defer_dir(pd, rq);
		return 1;
	case US_TX_FSYNC:
		if (res < 0 && !rq->err)
			rq->err = -res;
		rq->step = US_TX_CLOSE;
		break;
	case US_TX_CLOSE:
		tx->fd[rq->idx++] = -1;
		if (tx_pick(rq))
			return 1;
		break;
	case US_TX_DIRFSYNC:
		if (res < 0 && !rq->err)
			rq->err = -res;
		if (tx->dirown[rq->idx - tx->nfd]) {
			rq->step = US_TX_DIRCLOSE;
			break;
		}
		rq->idx++;
		if (tx_pick(rq))
			return 1;
		break;
	case US_TX_DIRCLOSE:
		tx->dirfd[rq->idx - tx->nfd] = -1;
		tx->dirown[rq->idx - tx->nfd] = 0;
		rq->idx++;
		if (tx_pick(rq))
			return 1;
		break;
	}
	return uring_prep(pd, rq);
}

static int start_end(struct pm_data *pd, struct pm_req *rq);

/*
 * @rq is complete: accounting, the message of a failure, its io_u to fio
 * (->event; directly when @in_queue, ->queue returning FIO_Q_COMPLETED).
 */
static void finish_req(struct pm_data *pd, struct pm_req *rq, int in_queue)
{
	struct io_u *io_u = pd->draining ? NULL : rq->io_u;
	struct pm_tx *tx = rq->tx;
	uint64_t now = now_ns();

	if (rq->fd >= 0)
		close(rq->fd);
	if (rq->dfd_tmp && rq->dfd >= 0)
		close(rq->dfd);
	rq->fd = rq->dfd = -1;
	rq->dfd_tmp = 0;
	if (rq->is_end) {
		int k;

		/* descriptors left by a TX_END cut short (no SQE to be had) */
		for (k = 0; k < 2; k++) {
			if (tx->fd[k] >= 0)
				close(tx->fd[k]);
			if (tx->dirown[k] && tx->dirfd[k] >= 0)
				close(tx->dirfd[k]);
		}
		pm_record(&pd->st[OC_TRANSACTION], now - tx->start_ns, 0, rq->err);
		if (rq->err && !(pd->failed && pd->stop_on_error) &&
		    !pack_ioq_said(&pd->ioq, rq->err))
			pack_log_err("postmark: transaction %d: fsync: %s\n", rq->op.tx,
				     strerror(rq->err));
		/* fio's sync latency is measured from issue_time: the transaction's start */
		if (io_u)
			io_u->issue_time = tx->start_ts;
		tx->tx = -1;
		tx->end = NULL;
	} else {
		/* a create that made no file, a delete that removed its file: unlisted */
		if (rq->op.kind == PM_OP_CREATE && !rq->made)
			pm_own_made(pd, &rq->op, rq->rec, 0, 0);
		if (rq->op.kind == PM_OP_DELETE && !rq->err)
			pm_own_gone(pd, &rq->op, rq->rec);
		pm_record(&pd->st[pm_class_of(&rq->op)], now - rq->start_ns, rq->bytes, rq->err);
		/*
		 * fio stops at the first error; operations in flight then that
		 * fail too (a full disk) are counted, not reported
		 */
		if (rq->err && !(pd->failed && pd->stop_on_error) &&
		    !pack_ioq_said(&pd->ioq, rq->err)) { /* io_uring_submit's, said */
			char path[PATH_MAX + 32];

			pm_file_path(pd, &rq->op, path, sizeof(path));
			pack_log_err("postmark: %s %s: %s\n", pm_op_name(&rq->op), path,
				     strerror(rq->err));
		}
		pd->ops_inflight--;
		if (io_u)	/* fio before 3.31 has overwritten it since ->queue */
			io_u->issue_time = rq->issue_ts;
	}
	if (rq->err)
		pd->failed = 1;
	if (io_u) {
		if (rq->err)
			io_u->error = rq->err;
		/* fio counts xfer_buflen - resid as the bytes moved */
		io_u->xfer_buflen = rq->bytes;
		io_u->resid = 0;
		if (!in_queue)
			pack_ioq_completed(&pd->ioq, io_u);
	}
	rq->busy = 0;
	rq->io_u = NULL;
	rq->next_free = pd->free_reqs;
	pd->free_reqs = rq;
	pd->inflight--;
	if (!rq->is_end && tx && --tx->ops_left == 0 && tx->end && start_end(pd, tx->end))
		finish_req(pd, tx->end, 0);
	if (!pd->inflight && pd->pending_phases)
		pm_stamp_pending_phases(pd);
}

/* The transaction's operations are complete: its fsyncs, if any. 1: it is complete. */
static int start_end(struct pm_data *pd, struct pm_req *rq)
{
	rq->idx = 0;
	if (tx_pick(rq))
		return 1;
	return uring_prep(pd, rq);
}

/* A completion (pack_ioq_reap), or an SQE given up (pack_ioq_submit). */
static void uring_cqe(void *data, void *user_data, int res)
{
	struct pm_data *pd = data;
	struct pm_req *rq = user_data;

	pd->sqes--;
	if (uring_advance(pd, rq, res))
		finish_req(pd, rq, 0);
}

/* Processes the completions there are (@wait: at least one). 0 or -errno. */
static int reap(struct pm_data *pd, int wait)
{
	/* what is prepared goes in with the wait: never wait on nothing submitted */
	int ret = wait ? pack_ioq_submit(&pd->ioq, 1) : 0;

	if (ret < 0)
		return ret;
	pack_ioq_reap(&pd->ioq);
	return 0;
}

/* Whether @op may be issued now (see above). */
static int may_start(struct pm_data *pd, const struct pm_op *op)
{
	int i, p;

	if (op->phase != pd->cur_phase && pd->inflight)
		return 0;
	if (op->kind == PM_OP_TX_END)
		return 1;
	p = pool_of(pd, op);
	for (i = 0; i < pd->nreqs; i++) {
		const struct pm_req *rq = &pd->reqs[i];

		if (rq->busy && !rq->is_end && rq->op.name == op->name && rq->pool == p &&
		    rq->op.subdir == op->subdir)
			return 0;
	}
	return 1;
}

/* A file operation's first request. 1 if it is already complete (rq->err set). */
static int start_op(struct pm_data *pd, struct pm_req *rq)
{
	int tmp, held;

	/* what the engine holds (pm_run_op()): a create is listed before it is made */
	if (rq->op.kind == PM_OP_CREATE || rq->op.kind == PM_OP_DELETE) {
		rq->rec = rq->op.kind == PM_OP_CREATE ? pm_own_create(pd, &rq->op)
						      : pm_own_take(pd, &rq->op);
		held = rq->rec >= 0;
	} else {
		held = pm_own_holds(pd, &rq->op);
	}
	if (!held) {
		rq->err = rq->op.kind == PM_OP_CREATE ? -rq->rec : ENOENT;
		rq->rec = -1;
		return 1;
	}
	rq->dfd = pm_dir_of(pd, &rq->op, &tmp);
	if (rq->dfd < 0) {
		rq->err = errno;
		return 1;
	}
	rq->dfd_tmp = tmp;
	rq->pool = pool_of(pd, &rq->op);
	snprintf(rq->name, sizeof(rq->name), "%d", rq->op.name);
	rq->remaining = rq->op.size;
	switch (rq->op.kind) {
	case PM_OP_CREATE:
		rq->key = (uint64_t)rq->op.name;
		rq->step = US_OPEN;
		break;
	case PM_OP_APPEND:
		/* in stream order, as the sync mode numbers them */
		rq->key = (uint64_t)rq->op.name | ++pd->append_seq << 32;
		rq->step = US_OPEN;
		break;
	case PM_OP_READ:
		rq->step = US_OPEN;
		break;
	default:
		rq->step = US_UNLINK;
	}
	return uring_prep(pd, rq);
}

static void req_init(struct pm_req *rq, const struct pm_op *op, struct io_u *io_u, struct pm_tx *tx)
{
	unsigned char *wbuf = rq->wbuf;

	memset(rq, 0, sizeof(*rq));
	rq->wbuf = wbuf;
	rq->io_u = io_u;
	rq->busy = 1;
	rq->op = *op;
	rq->tx = tx;
	rq->fd = rq->dfd = rq->rec = -1;
}

enum fio_q_status pm_uring_queue(struct thread_data *td, struct pm_data *pd,
				     struct io_u *io_u)
{
	struct pm_op *op = &pd->next;
	struct pm_tx *tx = NULL;
	struct pm_req *rq;
	int done;

	/* completions already there may clear the way */
	if (pd->sqes)
		reap(pd, 0);
	rq = pd->free_reqs;
	if (!rq || !may_start(pd, op))
		return FIO_Q_BUSY;	/* pd->next stays: fio prepares this io_u again */
	if (op->tx >= 0) {
		tx = pd->cur_tx;
		if (!tx || tx->tx != op->tx) {
			io_u->error = EINVAL;	/* cannot be (pm_uring_tx_begin()) */
			pd->failed = 1;
			pm_advance(pd, 1);
			if (!pd->have_next)
				fio_mark_td_terminate(td);
			return FIO_Q_COMPLETED;
		}
	}
	pd->free_reqs = rq->next_free;

	if (!pd->started) {
		pd->started = 1;
		pm_stamp_phase(pd, PM_PHASE_CREATE);
		pd->pending_phases &= ~(1u << PM_PHASE_CREATE);
		if (pd->t_ns[PM_PHASE_TRANSACTIONS] == 0 && op->phase != PM_PHASE_CREATE)
			pm_stamp_phase(pd, PM_PHASE_TRANSACTIONS);
	}
	pd->cur_phase = op->phase;
	if (tx) {
		if (!tx->started) {
			tx->started = 1;
			tx->start_ns = now_ns();
			fio_gettime(&tx->start_ts, NULL);
		}
	}
	req_init(rq, op, io_u, tx);
	fio_gettime(&io_u->issue_time, NULL);
	rq->issue_ts = io_u->issue_time;
	pd->inflight++;
	if (op->kind == PM_OP_TX_END) {
		rq->is_end = 1;
		tx->end = rq;
		done = tx->ops_left == 0 && start_end(pd, rq);
		pm_check_tx_limit(pd);
	} else {
		if (++pd->ops_inflight > pd->max_inflight)
			pd->max_inflight = pd->ops_inflight;
		if (tx)
			tx->ops_left++;
		rq->start_ns = now_ns();
		done = start_op(pd, rq);
	}
	if (done)
		finish_req(pd, rq, 1);
	pm_advance(pd, 1);
	if (!pd->have_next)
		fio_mark_td_terminate(td);
	if (done)
		return pack_ioq_done_in_queue(td, &pd->ioq, io_u);
	pack_ioq_queued(&pd->ioq, io_u);
	return FIO_Q_QUEUED;
}

int pm_commit(struct thread_data *td)
{
	struct pm_data *pd = td->io_ops_data;

	if (pd->uring)
		pack_ioq_submit_commit(td, &pd->ioq);
	return 0;
}

int pm_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			const struct timespec *t)
{
	struct pm_data *pd = td->io_ops_data;
	int ret;

	if (!pd->uring)
		return 0;
	pack_ioq_getevents_start(td, &pd->ioq);
	while (pd->ioq.ndone < min && pd->sqes) {
		ret = reap(pd, 1);
		if (ret)
			return ret;
	}
	if (pd->sqes)
		reap(pd, 0);
	pack_ioq_submit(&pd->ioq, 0);
	return pack_ioq_hand_out(&pd->ioq, max);
}

struct io_u *pm_event(struct thread_data *td, int event)
{
	struct pm_data *pd = td->io_ops_data;

	return pack_ioq_event(&pd->ioq, event);
}

int pm_uring_init(struct thread_data *td, struct pm_data *pd)
{
	unsigned depth = td->o.iodepth ? td->o.iodepth : 1;
	int i, ret;

	for (i = 0; i < pd->npools; i++) {
		struct stat st;

		/* stdio's buffer size, once: no fstat per file */
		if (fstat(pd->pool[i].fd, &st)) {
			pack_log_err("postmark: %s: %s\n", pd->pool[i].path, strerror(errno));
			return 1;
		}
		pd->pool[i].bufsize = stdiosim_bufsize(st.st_blksize);
	}
	ret = pack_uring_queue_init(depth * 2 < 8 ? 8 : depth * 2, &pd->ring);
	if (ret) {
		pack_log_err("postmark: pm_io_api=io_uring: io_uring_queue_init: %s\n",
			     strerror(-ret));
		return 1;
	}
	pd->ring_ok = 1;
	pd->stop_on_error = !td->o.continue_on_error;
	pd->nreqs = (int)depth;
	pd->ntxs = (int)depth + 2;
	pd->reqs = calloc(pd->nreqs, sizeof(*pd->reqs));
	pd->txs = calloc(pd->ntxs, sizeof(*pd->txs));
	if (!pd->reqs || !pd->txs || pack_ioq_init(&pd->ioq, 2 * depth + 8) ||
	    pack_ioq_attach(&pd->ioq, &pd->ring, ENGINE, uring_cqe, pd))
		goto nomem;
	for (i = pd->nreqs - 1; i >= 0; i--) {
		struct pm_req *rq = &pd->reqs[i];

		rq->fd = rq->dfd = -1;
		if (!pd->postmark_content && !(rq->wbuf = malloc(pd->wmax)))
			goto nomem;
		rq->next_free = pd->free_reqs;
		pd->free_reqs = rq;
	}
	for (i = 0; i < pd->ntxs; i++) {
		pd->txs[i].tx = -1;
		pd->txs[i].fd[0] = pd->txs[i].fd[1] = -1;
		pd->txs[i].dirfd[0] = pd->txs[i].dirfd[1] = -1;
	}
	pd->cur_phase = PM_PHASE_CREATE;
	return 0;
nomem:
	pack_log_err("postmark: out of memory for io_uring requests\n");
	return 1;
}

/*
 * ->cleanup: what is still in flight (fio normally reaps everything first)
 * is completed without fio, and open transactions' descriptors are closed.
 */
void pm_uring_exit(struct pm_data *pd)
{
	int i, k;

	if (pd->ring_ok) {
		pd->draining = 1;
		while (pd->sqes && reap(pd, 1) == 0)
			;
		io_uring_queue_exit(&pd->ring);
		pd->ring_ok = 0;
	}
	for (i = 0; pd->txs && i < pd->ntxs; i++) {
		struct pm_tx *tx = &pd->txs[i];

		for (k = 0; k < 2; k++) {
			if (tx->fd[k] >= 0)
				close(tx->fd[k]);
			if (tx->dirown[k] && tx->dirfd[k] >= 0)
				close(tx->dirfd[k]);
			tx->fd[k] = tx->dirfd[k] = -1;
			tx->dirown[k] = 0;
		}
	}
	for (i = 0; pd->reqs && i < pd->nreqs; i++)
		free(pd->reqs[i].wbuf);
	free(pd->reqs);
	free(pd->txs);
	pack_ioq_free(&pd->ioq);
	pd->reqs = NULL;
	pd->txs = NULL;
}

