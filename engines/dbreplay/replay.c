/* A record's I/O as plain system calls, its completion, the window (see dbrengine.h). */
#include "dbrengine.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

/*
 * The engine's clock is fio's (fio_gettime, clocksource= honoured): the
 * latencies it reports are on the same clock as fio's own, and where fio
 * has chosen the CPU's time stamp counter a reading costs a few
 * nanoseconds, where a clock_gettime() on a virtual machine can cost 100.
 * Its origin is not CLOCK_MONOTONIC's, so waits are relative.
 */

/*
 * Whether fio is ending the job: it was told to (a signal, exitall, another
 * job's error), or runtime= is over. fio checks both between I/Os only
 * (runtime_exceeded() in its do_io loop), never while the engine waits in
 * ->prep for a record's due time, so the wait checks them itself.
 */
int dbr_job_stopping(struct thread_data *td)
{
	return td->terminate ||
	       (td->o.timeout && !pack_in_ramp(td) && utime_since_now(&td->epoch) >= td->o.timeout);
}

/*
 * Sleeps until @abs_ns on the engine's clock, in slices of at most
 * DBR_WAIT_SLICE_NS, each after a look at dbr_job_stopping(): a trace's
 * hour-long gap or a slow dbr_speed must not outlive runtime=, SIGINT or
 * SIGTERM (fio gives a job that ignores them 300 s, then leaves its
 * process running and exits). 0 at the due time, 1 if the job is stopping.
 */
int dbr_sleep_until(struct thread_data *td, uint64_t abs_ns)
{
	uint64_t now;

	while ((now = dbr_now()) < abs_ns) {
		uint64_t left = abs_ns - now < DBR_WAIT_SLICE_NS ? abs_ns - now : DBR_WAIT_SLICE_NS;
		struct timespec ts = { .tv_sec = left / 1000000000ULL,
				       .tv_nsec = left % 1000000000ULL };

		if (dbr_job_stopping(td))
			return 1;
		nanosleep(&ts, NULL);	/* EINTR or early: the loop sleeps again */
	}
	return 0;
}

static struct cls *cls_of(struct dbr_job *dj, enum dbtrace_role role, enum dbtrace_op op)
{
	struct cls **c = &dj->cls[role][op];

	if (!*c)
		*c = calloc(1, sizeof(**c));
	return *c;
}

static const char *path_of(const struct dbr_job *dj, uint32_t file)
{
	return dj->files[file].decl ? dj->files[file].decl->path : "?";
}

/* ------------------------------------------------------------------ */
/* Buffers and the I/O of one record                                   */
/* ------------------------------------------------------------------ */

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Read and write buffers as large as the largest read or write of the trace
 * (checked at init): anonymous memory, page-aligned for O_DIRECT. The write
 * buffer holds incompressible bytes, so a compressing or deduplicating
 * device is not flattered.
 */
int dbr_make_buffers(struct dbr_job *dj, size_t len)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	size_t i;

	if (len < FILL_CHUNK)
		len = FILL_CHUNK;
	len = (len + 4095) & ~(size_t)4095;
	if (posix_memalign((void **)&dj->rbuf, 4096, len) ||
	    posix_memalign((void **)&dj->wbuf, 4096, len))
		return -1;
	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = xorshift(&s);

		memcpy(dj->wbuf + i, &v, 8);
	}
	dj->buf_len = len;
	return 0;
}

/*
 * O_DIRECT needs reads and writes aligned to the logical block: @align (the
 * target's, probed; 512 if it could not be) and every smaller power of two
 * down to 512 (index 0: 512, 1: 1024, 2: 2048, 3: 4096). The smallest
 * alignment @r misses, or 4 if it has them all (or is no read or write).
 */
unsigned dbr_misaligned_at(const struct dbtrace_rec *r)
{
	unsigned k;

	if (r->op != DBTRACE_READ && r->op != DBTRACE_WRITE)
		return 4;
	for (k = 0; k < 4; k++)
		if ((r->off | r->len) & ((512U << k) - 1))
			break;
	return k;
}

static unsigned align_index(unsigned align)
{
	return align >= 4096 ? 3 : align >= 2048 ? 2 : align >= 1024 ? 1 : 0;
}

static int unaligned(const struct dbr_job *dj, const struct dbtrace_rec *r)
{
	/* most replays have no O_DIRECT file: that answer costs less than the alignment's */
	return dbr_file_direct(dj, dj->files[r->file].decl) &&
	       dbr_misaligned_at(r) <= align_index(dj->dio_align);
}

/* Records done through a buffered descriptor: unaligned ones of O_DIRECT files. */
uint64_t dbr_buffered_records(const struct dbr_job *dj)
{
	uint64_t n = 0;
	unsigned k;

	for (k = 0; k <= align_index(dj->dio_align); k++)
		n += dj->direct ? dj->misaligned_records[k]
			: dj->trace_direct ? dj->misaligned_direct[k] : 0;
	return n;
}

/* The descriptor and offset a record's I/O goes to. */
int dbr_io_target(struct dbr_job *dj, const struct dbtrace_rec *r, uint64_t *off)
{
	struct rfile *f = &dj->files[r->file];
	int buffered = unaligned(dj, r);

	*off = r->off;
	if (dj->packed) {
		*off += f->region;
		return buffered || dj->dev_dfd < 0 || !dbr_file_direct(dj, f->decl) ? dj->devfd
										    : dj->dev_dfd;
	}
	return buffered && f->bfd >= 0 ? f->bfd : f->fd;
}

/*
 * A record on a file that has no descriptor: a capture that began after the
 * database opened the file, a read before its create. The file is created
 * (it is the engine's) and counted.
 */
static int implicit_open(struct dbr_job *dj, struct rfile *f)
{
	const char *base;
	int dfd, fd, ret;

	if ((ret = dbr_own(dj, f->decl->path)))
		return ret;
	dfd = dbr_open_parent(dj, f->decl->path, 1, &base);
	if (dfd < 0)
		return dfd;
	/* O_EXCL: a file there now was made by someone else, not by the trace's database */
	fd = NOINTR(openat(dfd, base, dbr_open_flags(dj) | O_CREAT | O_EXCL, 0644));
	ret = fd < 0 ? -errno : 0;
	close(dfd);
	if (ret == -EEXIST)
		dbr_disown(dj, f->decl->path, 1);
	if (ret || (ret = dbr_set_fd(dj, f, fd)))
		return ret;
	f->present = 1;
	dj->implicit_creates++;
	return 0;
}

static int do_create(struct dbr_job *dj, struct rfile *f)
{
	const char *path = f->decl->path, *base;
	int dfd, fd, ret = 0;

	if (f->present)
		return 0;	/* open(O_CREAT) of an existing file */
	if ((ret = dbr_own(dj, path)))
		return ret;
	dfd = dbr_open_parent(dj, path, 1, &base);
	if (dfd < 0)
		return dfd;
	if (f->decl->role == DBTRACE_ROLE_DIRECTORY) {
		if (NOINTR(mkdirat(dfd, base, 0755)))
			ret = -errno;
		else if ((fd = NOINTR(openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))) < 0)
			ret = -errno;
		else
			ret = dbr_set_fd(dj, f, fd);
	} else {
		/* O_EXCL: a name that appeared meanwhile is not the engine's */
		fd = NOINTR(openat(dfd, base, dbr_open_flags(dj) | O_CREAT | O_EXCL, 0644));
		if (fd < 0)
			ret = -errno;
		else
			ret = dbr_set_fd(dj, f, fd);
	}
	close(dfd);
	if (ret == -EEXIST)
		dbr_disown(dj, path, 1); /* someone else's, made during the replay */
	if (!ret)
		f->present = 1;
	return ret;
}

static int do_unlink(struct dbr_job *dj, struct rfile *f)
{
	const char *base;
	int dfd, ret = 0;

	if (!f->present)
		return -ENOENT;
	dfd = dbr_open_parent(dj, f->decl->path, 0, &base);
	if (dfd < 0)
		return dfd;
	if (NOINTR(unlinkat(dfd, base, f->decl->role == DBTRACE_ROLE_DIRECTORY ? AT_REMOVEDIR : 0)))
		ret = -errno;
	close(dfd);
	if (!ret) {
		/* an open file stays usable, as on POSIX; a directory's descriptor is dropped */
		f->present = 0;
		if (f->decl->role == DBTRACE_ROLE_DIRECTORY && f->fd >= 0)
			dbr_set_fd(dj, f, -1);
	}
	return ret;
}

static int do_trim(struct dbr_job *dj, int fd, uint64_t off, uint64_t len)
{
	if (dj->packed && dj->dev_is_blk) {
		uint64_t range[2] = { off, len };

		return NOINTR(ioctl(fd, BLKDISCARD, range)) ? -errno : 0;
	}
	return NOINTR(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
		? -errno : 0;
}

/*
 * Namespace operations, truncate and what packed mode skips: done at once,
 * in io_uring mode too (they are rare, and io_uring has no ftruncate in the
 * kernels this runs on). 1 if the record was not one of them.
 */
int dbr_run_meta(struct dbr_job *dj, const struct dbtrace_rec *r, int *err)
{
	struct rfile *f = &dj->files[r->file];

	*err = 0;
	if (dj->packed) {
		switch (r->op) {
		case DBTRACE_CREATE:
		case DBTRACE_UNLINK:
		case DBTRACE_TRUNCATE:
			dj->skipped++;
			return 0;
		default:
			/* a directory's fsync makes a create or unlink durable: none here */
			if (f->decl->role == DBTRACE_ROLE_DIRECTORY) {
				dj->skipped++;
				return 0;
			}
			return 1;
		}
	}
	switch (r->op) {
	case DBTRACE_CREATE:
		*err = do_create(dj, f);
		return 0;
	case DBTRACE_UNLINK:
		*err = do_unlink(dj, f);
		return 0;
	case DBTRACE_TRUNCATE:
		if (f->fd < 0 && (*err = implicit_open(dj, f)))
			return 0;
		*err = NOINTR(ftruncate(f->fd, (off_t)r->size)) ? -errno : 0;
		return 0;
	default:
		if (f->fd < 0) {
			if (f->decl->role == DBTRACE_ROLE_DIRECTORY) {
				/* an fsync of a directory the trace removed: nothing to sync */
				*err = -ENOENT;
				return 0;
			}
			*err = implicit_open(dj, f);
			if (*err)
				return 0;
		}
		return 1;
	}
}

/*
 * A whole read or write with pread/pwrite on @fd from @off (dbr_io_target's):
 * short transfers and EINTR continue. Inlined: dbr_run_sync's common case
 * then makes no call of its own.
 */
static inline __attribute__((always_inline)) int
rw_sync(struct dbr_job *dj, const struct dbtrace_rec *r, int fd, uint64_t off, uint64_t *bytes)
{
	uint64_t done = 0;

	while (done < r->len) {
		off_t at = (off_t)(off + done);
		ssize_t n = r->op == DBTRACE_READ
				    ? sys_pread(fd, dj->rbuf + done, r->len - done, at)
				    : sys_pwrite(fd, dj->wbuf + done, r->len - done, at);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			*bytes = done;
			return -errno;
		}
		if (n == 0) {
			if (r->op == DBTRACE_READ)
				break;	/* end of file: the database read less too */
			*bytes = done;
			return -EIO;
		}
		done += (uint64_t)n;
	}
	*bytes = done;
	return 0;
}

/* A record other than a read or write of an open file of a target directory. */
static __attribute__((noinline)) int run_sync_other(struct dbr_job *dj, const struct dbtrace_rec *r,
						    uint64_t *bytes)
{
	uint64_t off;
	int fd, err;

	*bytes = 0;
	if (!dbr_run_meta(dj, r, &err))
		return err;
	fd = dbr_io_target(dj, r, &off);
	switch (r->op) {
	case DBTRACE_READ:
	case DBTRACE_WRITE:
		return rw_sync(dj, r, fd, off, bytes);
	case DBTRACE_FSYNC:
		return NOINTR(fsync(fd)) ? -errno : 0;
	case DBTRACE_FDATASYNC:
		return NOINTR(fdatasync(fd)) ? -errno : 0;
	case DBTRACE_SYNC_FILE_RANGE:
		return NOINTR(sync_file_range(fd, (off_t)off, (off_t)r->len, SYNC_FILE_RANGE_WRITE))
			? -errno : 0;
	case DBTRACE_TRIM:
		err = do_trim(dj, fd, off, r->len);
		if (err == -EOPNOTSUPP) {
			dj->unsupported++;
			return 0;
		}
		*bytes = err ? 0 : r->len;
		return err;
	default:
		return -EINVAL;
	}
}

/*
 * One record with system calls, one at a time; 0 or -errno. Inlined in
 * dbr_queue_sync: most records are a read or write of a file already open
 * in a target directory, done here without a call of the engine's own
 * (what dbr_run_meta and dbr_io_target give them). A buffered descriptor
 * exists only for O_DIRECT files: asked first, it spares the alignment.
 */
static inline __attribute__((always_inline)) int
run_sync(struct dbr_job *dj, const struct dbtrace_rec *r, uint64_t *bytes)
{
	const struct rfile *f = &dj->files[r->file];

	if ((r->op == DBTRACE_READ || r->op == DBTRACE_WRITE) && !dj->packed && f->fd >= 0)
		return rw_sync(dj, r, f->bfd >= 0 && unaligned(dj, r) ? f->bfd : f->fd, r->off,
			       bytes);
	return run_sync_other(dj, r, bytes);
}

int dbr_run_sync(struct dbr_job *dj, const struct dbtrace_rec *r, uint64_t *bytes)
{
	return run_sync(dj, r, bytes);
}

/* ------------------------------------------------------------------ */
/* fio's view of a record, and its completion                          */
/* ------------------------------------------------------------------ */

/* The rarer part of a record's end: a short read, an error, the record log. */
static __attribute__((noinline, cold)) void finish_rare(struct dbr_job *dj,
							const struct dbsched_item *it, int err,
							uint64_t bytes, uint64_t end)
{
	if (!err && it->rec.op == DBTRACE_READ && bytes < it->rec.len) {
		if (!dj->short_reads++)
			dj->short_read_line = it->rec.line;
		dj->short_read_bytes += it->rec.len - bytes;
	}
	if (err) {
		/* with continue_on_error a full disk fails every later write: say it a few times */
		if (dj->errors < MAX_ERROR_LINES && !pack_ioq_said(&dj->ioq, -err))
			pack_log_err("dbreplay: %s line %llu: %s %s: %s\n", dj->trace_path,
				     (unsigned long long)it->rec.line, dbtrace_op_name(it->rec.op),
				     path_of(dj, it->rec.file), strerror(-err));
		else if (dj->errors == MAX_ERROR_LINES)
			pack_log_err(
				"dbreplay: further errors are counted, not shown (the report has them per class)\n");
		dj->errors++;
		dj->failed = 1;
	}
	if (dj->rlog)
		fprintf(dj->rlog, "%llu %llu %u %u %s %llu %llu %llu %llu %d\n",
			(unsigned long long)dj->loop, (unsigned long long)it->rec.line,
			it->rec.stream, it->rec.file, dbtrace_op_name(it->rec.op),
			(unsigned long long)it->due_ns,
			(unsigned long long)(it->issue_ns - dj->start_ns),
			(unsigned long long)(end - dj->start_ns), (unsigned long long)bytes, -err);
}

/*
 * A record's I/O has ended (@err: 0 or -errno): statistics, fio's io_u, the
 * window. @stamped: @io_u's issue time is already the record's.
 */
static inline __attribute__((always_inline)) void finish(struct dbr_job *dj, int slot,
							 struct dbsched_item *it, struct io_u *io_u,
							 int err, uint64_t bytes, uint64_t end,
							 int stamped)
{
	struct cls *c = cls_of(dj, it->role, it->rec.op);

	if (c) {
		lathist_add(&c->lat, end - it->issue_ns);
		/*
		 * As fio counts: a record that failed counts no bytes, even
		 * those it wrote before the error (dbr_record_log has them).
		 */
		if (err)
			c->errors++;
		else
			c->bytes += bytes;
	}
	if (__builtin_expect(err || dj->rlog || (it->rec.op == DBTRACE_READ && bytes < it->rec.len),
			     0))
		finish_rare(dj, it, err, bytes, end);
	if (io_u) {
		io_u->error = err ? -err : 0;
		/* fio requeues a short transfer: report what was done, as done */
		io_u->xfer_buflen = bytes;
		io_u->buflen = bytes;
		io_u->resid = 0;
		io_u->engine_data = NULL;
		/* fio's latency starts here; fio before 3.31 overwrote it after ->queue */
		if (!stamped) {
			io_u->issue_time.tv_sec = it->issue_ns / 1000000000ULL;
			io_u->issue_time.tv_nsec = it->issue_ns % 1000000000ULL;
		}
	}
	dj->replayed++;
	if (end - dj->start_ns > dj->last_done_ns)
		dj->last_done_ns = end - dj->start_ns;
	if (slot == DBR_ONE_SLOT)
		dj->one_pending = 0;
	else
		dbsched_done(dj->sched, slot, end - dj->start_ns);
}

void dbr_finish(struct dbr_job *dj, int slot, struct io_u *io_u, int err, uint64_t bytes,
		uint64_t end)
{
	finish(dj, slot, dbr_item(dj, slot), io_u, err, bytes, end, 0);
}

/*
 * dbr_io_api=sync: the record of @slot done and finished, ->queue's work.
 * @stamped: fio has set @io_u's issue time, on the engine's clock, just
 * before (the record's issue time, one clock reading less a record).
 */
void dbr_queue_sync(struct dbr_job *dj, int slot, struct io_u *io_u, int stamped)
{
	struct dbsched_item *it = dbr_item(dj, slot);
	uint64_t bytes;
	int err;

	it->issue_ns = stamped ? dbr_ts_ns(&io_u->issue_time) : dbr_now();
	err = run_sync(dj, &it->rec, &bytes);
	finish(dj, slot, it, io_u, err, bytes, dbr_now(), stamped);
}

/* ------------------------------------------------------------------ */
/* Feeding the window, loops                                           */
/* ------------------------------------------------------------------ */

static uint64_t due_of(struct dbr_job *dj, uint64_t time)
{
	if (dj->timing == TM_ASAP || time == DBTRACE_NO_TIME)
		return 0;
	if (!dj->have_t0) {
		dj->t0 = time;
		dj->have_t0 = 1;
	}
	if (time <= dj->t0)
		return 0;
	return dbsched_scaled_ns(time - dj->t0, dj->unit_ns, dj->speed);
}

/* What kind of file @m is, for a message. */
static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m)   ? "a FIFO"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
			     : "not a regular file";
}

/*
 * The trace is opened once, at init: a regular file only (a FIFO would
 * block the job for ever, a device never ends, and the trace is read more
 * than once: checked, then replayed, again each loop), registered with
 * the engine's other files. 0, or 1 with the error said.
 */
int dbr_open_trace_file(struct dbr_job *dj)
{
	struct stat st;

	/* O_NONBLOCK: opening a FIFO with no writer must not block */
	dj->trace_fd = NOINTR(open(dj->trace_path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
	if (dj->trace_fd < 0) {
		pack_log_err("dbreplay: cannot open %s: %s\n", dj->trace_path, strerror(errno));
		return 1;
	}
	if (fstat(dj->trace_fd, &st) || !S_ISREG(st.st_mode)) {
		pack_log_err(
			"dbreplay: dbr_trace %s is %s, not a regular file: the trace is read more than once (checked, then replayed)\n",
			dj->trace_path, file_kind(st.st_mode));
		return 1;
	}
	return dbr_distinct(dj, &st, "dbr_trace", dj->trace_path);
}

/*
 * A reader of the trace opened at init, from its start: the same file
 * (through /proc/self/fd, with an offset of its own), whatever its name
 * points to by now. NULL with the error in @err.
 */
struct dbtrace *dbr_open_trace(struct dbr_job *dj, char *err, size_t errlen)
{
	char self[64];
	int fd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", dj->trace_fd);
	fd = NOINTR(open(self, O_RDONLY | O_CLOEXEC));
	if (fd < 0) {
		pack_errf(err, errlen, "cannot open %s again: %s", dj->trace_path, strerror(errno));
		return NULL;
	}
	return dbtrace_open_fd(fd, dj->trace_path, err, errlen);
}

/*
 * With dbr_reader_thread=1 a thread parses (and inflates) the trace ahead,
 * off the replaying thread's clock: started once the trace is open, before
 * the clock of each pass starts, so that its first block is ready. If it
 * cannot start, the replaying thread reads the trace itself, as with 0.
 */
void dbr_start_reader(struct dbr_job *dj)
{
	char err[ERRLEN];

	if (dj->kept || dj->pf || !dj->o->reader_thread || dj->pf_failed)
		return;
	dj->pf = dbprefetch_start(dj->t, 0, 0, err, sizeof(err));
	if (!dj->pf) {
		pack_log_err("dbreplay: %s; the trace is read by the replaying thread\n", err);
		dj->pf_failed = 1;
	}
}

/* The next record of this pass over the trace. */
static int next_record(struct dbr_job *dj, struct dbtrace_rec *r)
{
	if (dj->kept)
		return dbrecs_next(dj->kept, r);
	dbr_start_reader(dj);
	return dj->pf ? dbprefetch_next(dj->pf, r) : dbtrace_next(dj->t, r);
}

/*
 * The next record of the pass that the filters keep, and its due time: 1;
 * 0 at the end of the pass (eof set); -1 on a trace error (said). Inlined
 * in both callers: the in-order path's one call a record is dbrecs_next.
 */
static inline __attribute__((always_inline)) int next_kept(struct dbr_job *dj,
							   struct dbtrace_rec *r, uint64_t *due)
{
	for (;;) {
		int ret = next_record(dj, r);

		if (ret < 0) {
			pack_log_err("dbreplay: %s\n",
				     dj->pf ? dbprefetch_error(dj->pf) : dbtrace_error(dj->t));
			return -1;
		}
		if (ret == 0) {
			dj->eof = 1;
			return 0;
		}
		/* the first record sets the origin even if filtered out */
		*due = due_of(dj, r->time);
		if (dbfilter_match(&dj->filter, r))
			return 1;
		dj->filtered++;
	}
}

/* Pushes records until the window is full or the trace ends; -1 on a trace error. */
int dbr_fill_window(struct dbr_job *dj, uint64_t now_rel)
{
	struct dbtrace_rec r;
	uint64_t due;

	while (!dj->eof && !dbsched_full(dj->sched)) {
		int ret = next_kept(dj, &r, &due);

		if (ret <= 0)
			return ret;
		int depth = dj->depth ? dbdepth_next(dj->depth, &r) : 0;

		if (depth < 0) {
			pack_log_err("dbreplay: out of memory for the trace's captured depths\n");
			return -1;
		}
		dbsched_push_depth(dj->sched, &r, dj->files[r.file].decl->role, due, now_rel,
				   (unsigned)depth);
		dj->pushed++;
	}
	return 0;
}

/*
 * dj->in_order: the next record into dj->one, in the pass's order: 1; 0 at
 * the end of the pass; -1 on a trace error (said). What dbr_fill_window
 * and dbsched_pick give with a window of one record and none in flight:
 * alone in the window, a record waits for nothing (its stream's, its
 * file's and the directories' earlier records are all done; asap: no due
 * time), so the pick is always the record just pushed
 * (tests/unit/test_dbsched_model.c, dbsched_sync_replay_is_trace_order).
 * The captured depth is not needed: one record in flight is within any.
 */
int dbr_next_in_order(struct dbr_job *dj)
{
	struct dbsched_item *it = &dj->one;
	uint64_t due;
	int ret;

	if (dj->eof)
		return 0;
	ret = next_kept(dj, &it->rec, &due);
	if (ret <= 0)
		return ret;
	it->role = dj->files[it->rec.file].decl->role;
	it->seq = dj->one_seq++;
	it->due_ns = due;
	dj->one_pending = 1;
	dj->pushed++;
	return 1;
}

/*
 * The end of one pass over the trace: 1 if another loop starts, 0 if the
 * replay is over, -1 if the next loop could not start (said).
 */
int dbr_next_loop(struct dbr_job *dj)
{
	char err[ERRLEN];
	uint64_t end = dbr_now();
	/* the trace's own duration (scaled in timed modes: the schedule the replay had) */
	uint64_t trace_ns = dbsched_scaled_ns(dj->trace_span_units, dj->unit_ns, dj->speed);

	dj->replay_ns_total = dbsched_add_ns(dj->replay_ns_total, end - dj->start_ns);
	dj->trace_ns_total = dbsched_add_ns(dj->trace_ns_total, trace_ns);
	if (dj->timing != TM_ASAP)
		dj->behind_end_ns = dj->last_done_ns > trace_ns ? dj->last_done_ns - trace_ns : 0;
	dj->loop++;
	if (dj->loops && dj->loop >= dj->loops)
		return 0;
	if (dj->kept) {
		dbrecs_rewind(dj->kept);
	} else {
		dbprefetch_stop(dj->pf);
		dj->pf = NULL;
		dbtrace_close(dj->t);
		dj->t = dbr_open_trace(dj, err, sizeof(err));
		if (!dj->t) {
			pack_log_err("dbreplay: %s\n", err);
			return -1;
		}
		dj->h = dbtrace_header(dj->t);
		dbr_start_reader(dj); /* parses the first block while the files are reset */
	}
	/* back to the state before the first record, off the clock of the next loop */
	if (dbr_layout(dj, 0))
		return -1;
	dbsched_restart(dj->sched);
	dj->one_seq = 0;
	if (dj->depth)
		dbdepth_reset(dj->depth);
	dj->eof = 0;
	dj->have_t0 = 0;
	dj->last_done_ns = 0;
	dj->start_ns = dbr_now();
	return 1;
}
