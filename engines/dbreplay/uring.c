/* dbr_io_api=io_uring (see dbrengine.h). */
#include "dbrengine.h"

/* ------------------------------------------------------------------ */
/* dbr_io_api=io_uring                                                 */
/* ------------------------------------------------------------------ */

/* Prepares the SQE for what is left of @slot's record (a read or write may be resumed). */
static int uring_prep_rec(struct dbr_job *dj, int slot)
{
	struct dbsched_item *it = dbsched_item(dj->sched, slot);
	const struct dbtrace_rec *r = &it->rec;
	struct io_uring_sqe *sqe = pack_ioq_get_sqe(&dj->ioq);
	uint64_t off, done = it->done_bytes;
	int fd = dbr_io_target(dj, r, &off);

	if (!sqe)
		return -pack_ioq_no_sqe_error(&dj->ioq);
	switch (r->op) {
	case DBTRACE_READ:
		io_uring_prep_read(sqe, fd, dj->rbuf + done, (unsigned)(r->len - done), off + done);
		break;
	case DBTRACE_WRITE:
		io_uring_prep_write(sqe, fd, dj->wbuf + done, (unsigned)(r->len - done), off + done);
		break;
	case DBTRACE_FSYNC:
		io_uring_prep_fsync(sqe, fd, 0);
		break;
	case DBTRACE_FDATASYNC:
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		break;
	case DBTRACE_SYNC_FILE_RANGE:
		io_uring_prep_sync_file_range(sqe, fd, (unsigned)r->len, off, SYNC_FILE_RANGE_WRITE);
		break;
	case DBTRACE_TRIM:
		io_uring_prep_fallocate(sqe, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					off, r->len);
		break;
	default:
		return -EINVAL;
	}
	io_uring_sqe_set_data(sqe, (void *)(intptr_t)(slot + 1));
	dj->sqes++;
	return 0;
}

enum fio_q_status dbr_uring_queue(struct thread_data *td, struct dbr_job *dj,
				     struct io_u *io_u, int slot)
{
	struct dbsched_item *it = dbsched_item(dj->sched, slot);
	int err = 0, ret;

	fio_gettime(&io_u->issue_time, NULL);	/* PACK_ASYNCIO_SETS_ISSUE_TIME */
	it->issue_ns = dbr_ts_ns(&io_u->issue_time);
	it->done_bytes = 0;
	/*
	 * Done at once: namespace operations, truncate, a record that failed to
	 * get its descriptor, a discard on a block device, a sync_file_range
	 * longer than io_uring's 32-bit length.
	 */
	ret = dbr_run_meta(dj, &it->rec, &err);
	if (ret && ((it->rec.op == DBTRACE_TRIM && dj->packed && dj->dev_is_blk) ||
		    (it->rec.op == DBTRACE_SYNC_FILE_RANGE && it->rec.len > UINT32_MAX))) {
		uint64_t bytes;

		err = dbr_run_sync(dj, &it->rec, &bytes);
		ret = 0;
	}
	if (!ret) {
		dbr_finish(dj, slot, io_u, err, 0, dbr_now());
		return pack_ioq_done_in_queue(td, &dj->ioq, io_u);
	}
	err = uring_prep_rec(dj, slot);
	if (err) {
		dbr_finish(dj, slot, io_u, err, 0, dbr_now());
		return pack_ioq_done_in_queue(td, &dj->ioq, io_u);
	}
	pack_ioq_queued(&dj->ioq, io_u);
	return FIO_Q_QUEUED;
}

/* Handles one completion: done, or resubmitted for the rest of a short transfer. */
static void uring_complete(struct dbr_job *dj, int slot, int res)
{
	struct dbsched_item *it = dbsched_item(dj->sched, slot);
	const struct dbtrace_rec *r = &it->rec;
	struct io_u *io_u = it->user;
	int err = 0;

	/* the kernel's EAGAIN/EINTR is retried; a submission given up is not */
	if ((res == -EINTR || res == -EAGAIN) && !pack_ioq_giving_up(&dj->ioq)) {
		err = uring_prep_rec(dj, slot);
		if (!err)
			return;
	} else if (res < 0) {
		err = res;
		if (r->op == DBTRACE_TRIM && res == -EOPNOTSUPP) {
			dj->unsupported++;
			err = 0;
		}
	} else if (r->op == DBTRACE_READ || r->op == DBTRACE_WRITE) {
		it->done_bytes += (uint64_t)res;
		if (it->done_bytes < r->len && !(res == 0 && r->op == DBTRACE_READ)) {
			if (res == 0)
				err = -EIO;	/* a write that makes no progress */
			else if (!(err = uring_prep_rec(dj, slot)))
				return;
		}
	}
	dbr_finish(dj, slot, io_u, err,
	       r->op == DBTRACE_READ || r->op == DBTRACE_WRITE ? it->done_bytes
	       : (r->op == DBTRACE_TRIM && !err ? r->len : 0), dbr_now());
	if (io_u)
		pack_ioq_completed(&dj->ioq, io_u);
}

/* A completion (pack_ioq_reap), or an SQE given up (pack_ioq_submit). */
void dbr_uring_cqe(void *data, void *user_data, int res)
{
	struct dbr_job *dj = data;

	dj->sqes--;
	uring_complete(dj, (int)(intptr_t)user_data - 1, res);
}

/* Reaps completions (waiting for one if @wait, at most until @deadline_ns); 0 or -errno. */
int dbr_reap(struct dbr_job *dj, int wait, uint64_t deadline_ns)
{
	struct io_uring_cqe *cqe;
	int ret;

	if (wait && !io_uring_cq_ready(&dj->ring)) {
		if (deadline_ns != UINT64_MAX) {
			uint64_t now = dbr_now();
			struct __kernel_timespec ts;

			if (deadline_ns <= now)
				return 0;
			ts.tv_sec = (deadline_ns - now) / 1000000000ULL;
			ts.tv_nsec = (deadline_ns - now) % 1000000000ULL;
			ret = io_uring_wait_cqe_timeout(&dj->ring, &cqe, &ts);
			if (ret == -ETIME || ret == -EINTR)
				return 0;
		} else {
			do
				ret = io_uring_wait_cqe(&dj->ring, &cqe);
			while (ret == -EINTR);
		}
		if (ret < 0)
			return ret;
	}
	pack_ioq_reap(&dj->ioq);
	pack_ioq_submit(&dj->ioq, 0); /* resubmitted short transfers */
	return 0;
}

int dbr_commit(struct thread_data *td)
{
	struct dbr_job *dj = td->io_ops_data;

	if (dj->uring)
		pack_ioq_submit_commit(td, &dj->ioq);
	return 0;
}

/*
 * Waits for @min completions, but in timed replay not past the due time of
 * the next record: fio then prepares it (0 events is fine with fio).
 */
int dbr_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			const struct timespec *t)
{
	struct dbr_job *dj = td->io_ops_data;
	uint64_t deadline = UINT64_MAX;
	int ret;

	if (!dj->uring)
		return 0;
	pack_ioq_getevents_start(td, &dj->ioq);
	/* ->prep saw a record that waits for its time only */
	if (dj->timing != TM_ASAP && dj->next_wake != UINT64_MAX)
		deadline = dbsched_add_ns(dj->start_ns, dj->next_wake);
	while (dj->ioq.ndone < min && dj->sqes) {
		ret = dbr_reap(dj, 1, deadline);
		if (ret)
			return ret;
		if (deadline != UINT64_MAX && dbr_now() >= deadline)
			break;
	}
	if (dj->sqes)
		dbr_reap(dj, 0, UINT64_MAX);
	return pack_ioq_hand_out(&dj->ioq, max);
}

struct io_u *dbr_event(struct thread_data *td, int event)
{
	struct dbr_job *dj = td->io_ops_data;

	return pack_ioq_event(&dj->ioq, event);
}
