/*
 * dbreplay: database page replay as an external fio engine.
 *
 * Replays a dbtrace (docs/dbtrace-format.md: the file I/O one database
 * did, captured once with `scripts/fio-pack capture` or imported) on the device
 * under test, with fio's latency statistics per operation and the engine's
 * own per-class report (data read, log write, log fdatasync, ...) and replay
 * dbr_fidelity (how far behind the trace's schedule the replay ran).
 *
 * What fio's read_iolog replay lacks and this engine does: the trace's
 * streams (database threads) replay concurrently, each in its own order;
 * fsync and fdatasync are barriers for their stream in every mode, io_uring
 * included; create, unlink, truncate and directory fsync are replayed; every
 * file is created and sized from the trace header before the clock starts;
 * the trace is checked in full before anything is written, then streamed
 * (memory is flat), parsed ahead by a reader thread (engines/lib/dbprefetch)
 * off the replaying thread's clock.
 *
 * One fio I/O is one trace record:
 *   read                                  -> "read"  (prios: one per file role)
 *   write                                 -> "write" (prios: one per file role)
 *   fsync, fdatasync, sync_file_range     -> "sync"
 *   trim, truncate, create, unlink        -> "trim"  (prios 1..4 in that order)
 *
 * Files: one-to-one below dbr_target (a directory the engine owns: it keeps
 * a manifest, .fio-dbreplay, of every path it created, never touches a path
 * it did not create, and removes what it created at the end unless
 * dbr_keep=1); or packed as consecutive regions of dbr_device (a file, or a
 * block device with dbr_overwrite_device=1).
 *
 * Run: fio --ioengine=external:build/dbreplay.so --dbr_trace=T.trace.gz ...
 *      fio --enghelp=$PWD/build/dbreplay.so lists the options.
 */
#include "dbrengine.h"

static struct ioengine_ops ioengine;

/* ------------------------------------------------------------------ */
/* ->prep and ->queue                                                   */
/* ------------------------------------------------------------------ */

/* fio's io_u for the record of @slot: its direction, prio and slot. */
static inline __attribute__((always_inline)) int
prep_record(struct thread_data *td, struct dbr_job *dj, struct io_u *io_u, int slot)
{
	struct dbsched_item *it = dbr_item(dj, slot);
	unsigned prio;
	int prio_ix;
	enum fio_ddir ddir = dbr_ddir_of(it, &prio, &prio_ix);

	it->user = io_u;
	io_u->engine_data = (void *)(intptr_t)(slot + 1);
	if (dj->timing != TM_ASAP) {
		uint64_t now = dbr_now() - dj->start_ns;

		lathist_add(&dj->lag, now > it->due_ns ? now - it->due_ns : 0);
	}
	io_u->ddir = ddir;
	pack_io_u_prio(io_u, prio, prio_ix);
	if (dj->ddir_held)
		pack_ddir_restore(td, dj->saved_td_ddir);
	pack_ddir_allow(td, ddir, &dj->saved_td_ddir);
	dj->ddir_held = 1;
	return 0;
}

/* The replay cannot go on (said): fio ends the job. */
static int prep_end(struct thread_data *td, struct dbr_job *dj, int err, const char *what)
{
	if (err) {
		dj->failed = dj->aborted = dj->finished = 1;
		td_verror(td, err, what);
	}
	fio_mark_td_terminate(td);
	return 1;
}

/* ->prep's search for a record: the scheduler, its waits, the loops. */
static __attribute__((noinline)) int prep_search(struct thread_data *td, struct dbr_job *dj,
						 struct io_u *io_u)
{
	int slot = -1, ret;

	io_u->engine_data = NULL;
	if (!dj->started) {
		dj->started = 1;
		dj->start_ns = dj->first_start_ns = dbr_now();
	}
	while (!dj->finished) {
		/* as fast as possible: the scheduler needs no clock */
		uint64_t wake = UINT64_MAX, now = dj->timing == TM_ASAP ? dj->start_ns : dbr_now();

		if (dj->in_order) {
			/* the record the scheduler would pick, without it */
			ret = dbr_next_in_order(dj);
			if (ret > 0)
				slot = DBR_ONE_SLOT;
		} else {
			ret = dbr_fill_window(dj, now - dj->start_ns);
			if (!ret)
				slot = dbsched_pick(dj->sched, now - dj->start_ns, &wake);
		}
		if (ret < 0)
			return prep_end(td, dj, EINVAL, "dbreplay trace");
		if (slot >= 0)
			return prep_record(td, dj, io_u, slot);
		if (dbsched_inflight(dj->sched) || pack_ioq_waiting(&dj->ioq)) {
			dj->next_wake = wake;
			break;		/* a wait */
		}
		if (wake != UINT64_MAX) {
			/* runtime= or a signal ends the wait: the replay is cut short */
			if (dbr_sleep_until(td, dbsched_add_ns(dj->start_ns, wake)))
				return prep_end(td, dj, 0, NULL);
			continue;
		}
		if (dbsched_count(dj->sched) || !dj->eof) {
			pack_log_err("dbreplay: internal error: %u records wait for nothing\n",
				     dbsched_count(dj->sched));
			return prep_end(td, dj, EINVAL, "dbreplay scheduler");
		}
		ret = dbr_next_loop(dj);
		/* the next loop could not start (said): the loops asked for are not done */
		if (ret < 0)
			return prep_end(td, dj, EIO, "dbreplay loop");
		if (!ret)
			dj->finished = 1;
	}
	if (dj->finished)
		return prep_end(td, dj, 0, NULL);
	/* a wait: ->queue answers FIO_Q_BUSY */
	io_u->ddir = DDIR_SYNC;
	pack_io_u_prio(io_u, 0, 0);
	if (dj->ddir_held)
		pack_ddir_restore(td, dj->saved_td_ddir);
	pack_ddir_allow(td, DDIR_SYNC, &dj->saved_td_ddir);
	dj->ddir_held = 1;
	return 0;
}

/*
 * ->prep decides which record this io_u carries: the scheduler's pick, after
 * sleeping for its due time if nothing is in flight. With records in flight
 * and none free to go, the io_u is a "wait": ->queue answers FIO_Q_BUSY, fio
 * reaps completions and prepares the io_u again.
 */
static int dbr_prep(struct thread_data *td, struct io_u *io_u)
{
	struct dbr_job *dj = td->io_ops_data;

	dj->next_wake = UINT64_MAX; /* set again only for a wait */
	if (dj->in_order && dj->started && !dj->finished) {
		/* most records of a sync replay as fast as possible: the next in the trace */
		int ret = dbr_next_in_order(dj);

		if (ret > 0)
			return prep_record(td, dj, io_u, DBR_ONE_SLOT);
		if (ret < 0)
			return prep_end(td, dj, EINVAL, "dbreplay trace");
	}
	return prep_search(td, dj, io_u);
}

static enum fio_q_status dbr_queue(struct thread_data *td, struct io_u *io_u)
{
	struct dbr_job *dj = td->io_ops_data;
	int slot = (int)(intptr_t)io_u->engine_data - 1;

	if (slot < 0)
		return FIO_Q_BUSY;	/* a wait: ddir stays allowed for the next ->prep */
	pack_ddir_restore(td, dj->saved_td_ddir);
	dj->ddir_held = 0;
	if (dj->uring)
		return dbr_uring_queue(td, dj, io_u, slot);
	/* fio has just stamped it on the same clock (FIO_SYNCIO): one reading less a record */
	dbr_queue_sync(dj, slot, io_u, fio_fill_issue_time(td));
	/* fio leaves this to engines with a ->commit (the io_uring mode's) */
	io_u_mark_submit(td, 1);
	io_u_mark_complete(td, 1);
	return FIO_Q_COMPLETED;
}

/* What keeps the replay from the depths the trace's completion times give. */
static void depth_notes(struct dbr_job *dj, unsigned iodepth, unsigned window)
{
	unsigned d = dj->captured_depth;

	if (!dj->depth_captured && dj->lat_records && (d > 1 || dj->stream_depth > 1))
		dbr_fidelity(dj, "dbr_stream_depth=%u replaces the depths the trace's completion times give (1 to %u)",
			 dj->stream_depth, d);
	if (!dj->depth || d < 2)
		return;
	if (!dj->uring)
		dbr_fidelity(dj, "the trace's streams had up to %u requests in flight (its completion times); dbr_io_api=sync replays one record at a time: use dbr_io_api=io_uring with iodepth>=%u",
			 d, d);
	else if (iodepth < d)
		dbr_fidelity(dj, "a stream of the trace had %u requests in flight; iodepth=%u keeps the replay below that",
			 d, iodepth);
	else if (window < d)
		dbr_fidelity(dj, "a stream of the trace had %u requests in flight; dbr_window=%u keeps the replay below that",
			 d, window);
}

/* ------------------------------------------------------------------ */
/* Options and the check pass                                          */
/* ------------------------------------------------------------------ */

static int opt_u64(const char *name, const char *val, uint64_t def, uint64_t lo, uint64_t hi,
		   uint64_t *out)
{
	char err[ERRLEN];

	if (parse_uint_option(name, val, def, lo, hi, out, err, sizeof(err)) == 0)
		return 0;
	pack_log_err("dbreplay: %s\n", err);
	return 1;
}

/* clang-format off */
#define DBR_BOOL(oname, field)	PACK_NUM(struct dbr_options, oname, field, 0, 1)

static const struct pack_num_option dbr_num_options[] = {
	DBR_BOOL("dbr_overwrite_device",	overwrite_device),
	DBR_BOOL("dbr_keep",			keep),
	DBR_BOOL("dbr_accept_incomplete",	accept_incomplete),
	DBR_BOOL("dbr_accept_partial",		accept_partial),
	DBR_BOOL("dbr_accept_serial",		accept_serial),
	DBR_BOOL("dbr_reader_thread",		reader_thread),
};
/* clang-format on */

static struct fio_option options[];

/*
 * A trace whose capture could not see part of the I/O ("incomplete" header
 * lines) would give figures for a workload that is not the one captured:
 * refused unless dbr_accept_incomplete=1, and then repeated in the notes,
 * the summary and the report file.
 */
static int take_incomplete(struct thread_data *td, struct dbr_job *dj)
{
	unsigned i, n = dj->h->nincomplete;

	if (!n)
		return 0;
	if (!dj->o->accept_incomplete) {
		if (n > 1)
			pack_log_err(
				"dbreplay: %s is an incomplete capture: %s (and %u more: fio-pack trace check lists them); set dbr_accept_incomplete=1 to replay it as it is\n",
				dj->trace_path, dj->h->incomplete[0], n - 1);
		else
			pack_log_err(
				"dbreplay: %s is an incomplete capture: %s; set dbr_accept_incomplete=1 to replay it as it is\n",
				dj->trace_path, dj->h->incomplete[0]);
		return 1;
	}
	dj->incomplete = calloc(n, sizeof(*dj->incomplete));
	if (!dj->incomplete)
		return 1;
	for (i = 0; i < n; i++) {
		dj->incomplete[i] = strdup(dj->h->incomplete[i]);
		if (!dj->incomplete[i])
			return 1;
		dj->nincomplete++;
		if (!td->subjob_number)
			pack_log_err(
				"dbreplay: note: %s: replaying an incomplete capture (dbr_accept_incomplete=1): %s\n",
				dj->trace_path, dj->incomplete[i]);
	}
	return 0;
}

/*
 * Reads the whole trace once before anything is written: a malformed line
 * anywhere is reported with its line number and the job ends with nothing
 * touched. Also finds the trace's time span and its largest transfer, and
 * keeps the records for the replay, which then parses nothing (up to
 * DBR_KEPT_RECORDS_MAX; past it the replay reads the trace again).
 */
static int check_trace(struct dbr_job *dj, uint64_t *max_io)
{
	struct dbtrace_rec r;
	char err[ERRLEN];
	struct dbtrace *t = dbr_open_trace(dj, err, sizeof(err));
	uint64_t first = 0, last = 0, kept = 0;
	int ret, have = 0;

	if (!t) {
		pack_log_err("dbreplay: %s\n", err);
		return 1;
	}
	*max_io = 0;
	dj->kept = dbrecs_new(dbtrace_header(t)->page_size, DBR_KEPT_RECORDS_MAX);
	while ((ret = dbtrace_next(t, &r)) > 0) {
		dj->trace_records++;
		if (dj->kept && dbrecs_add(dj->kept, &r)) {
			dbrecs_free(dj->kept);
			dj->kept = NULL;
		}
		if (r.time != DBTRACE_NO_TIME) {
			if (!have)
				first = r.time;
			have = 1;
			if (r.time > last)
				last = r.time;
		}
		if (!dbfilter_match(&dj->filter, &r))
			continue;
		kept++;
		if ((r.op == DBTRACE_READ || r.op == DBTRACE_WRITE) && r.len > *max_io)
			*max_io = r.len;
		if (dbr_misaligned_at(&r) < 4) {
			dj->misaligned_records[dbr_misaligned_at(&r)]++;
			if (dbtrace_file_by_id(t, r.file)->direct)
				dj->misaligned_direct[dbr_misaligned_at(&r)]++;
		}
		if (dj->depth) {
			int d = dbdepth_next(dj->depth, &r);

			if (d < 0) {
				pack_log_err(
					"dbreplay: out of memory for the trace's captured depths\n");
				dbtrace_close(t);
				return 1;
			}
			if (d)
				dj->lat_records++;
			if ((unsigned)d > dj->captured_depth)
				dj->captured_depth = (unsigned)d;
		}
	}
	if (ret < 0) {
		pack_log_err("dbreplay: %s\n", dbtrace_error(t));
		dbtrace_close(t);
		return 1;
	}
	dbtrace_close(t);
	if (!kept) {
		pack_log_err(
			"dbreplay: %s: no record is left to replay (%llu records, dbr_ops/dbr_streams/dbr_files keep none)\n",
			dj->trace_path, (unsigned long long)dj->trace_records);
		return 1;
	}
	dj->trace_span_units = have && last > first ? last - first : 0;
	if (dj->depth)
		dj->captured_total = dbdepth_total_max(dj->depth);
	return 0;
}

/*
 * io_uring without an iodepth from the user: the most requests the capture
 * had in flight at once, so that the replay's queue can be as deep as the
 * database's was (fio's default of 1 held every such replay to one request,
 * the README's iodepth=32 a MariaDB capture's 1,024). fio has derived
 * iodepth_low and iodepth_batch from iodepth already: they follow it,
 * unless set too.
 */
/*
 * PostgreSQL 18's I/O workers (streams ioworker-TID) read for the backends,
 * beside them: a replay one request at a time puts every backend behind
 * every worker's read, which never happened; refused unless accepted. And
 * the capture sees a worker's read, not which backend waited for it: the
 * replay cannot make that backend wait, and says so. 0, or 1 refused.
 */
static int ioworker_streams(struct thread_data *td, struct dbr_job *dj)
{
	unsigned i;

	for (i = 0; i < dj->h->nstreams; i++) {
		uint32_t id = dj->h->streams[i].id;

		if (!strncmp(dj->h->streams[i].name, "ioworker-", 9) &&
		    (dj->filter.streams[id >> 3] >> (id & 7) & 1))
			dj->ioworkers++;
	}
	if (!dj->ioworkers)
		return 0;
	if (dj->api != API_IO_URING || td->o.iodepth < 2) {
		if (!dj->o->accept_serial) {
			pack_log_err(
				"dbreplay: %s: its %u PostgreSQL I/O-worker stream(s) (ioworker-TID) read beside the backends; %s replays one request at a time, behind each other: use dbr_io_api=io_uring (without iodepth, or iodepth>=2), or set dbr_accept_serial=1 to accept it\n",
				dj->trace_path, dj->ioworkers,
				dj->api == API_IO_URING ? "iodepth=1" : "dbr_io_api=sync");
			return 1;
		}
		dbr_fidelity(
			dj,
			"the trace's %u I/O-worker stream(s) replayed one request at a time with the backends (%s, dbr_accept_serial=1)",
			dj->ioworkers, dj->api == API_IO_URING ? "iodepth=1" : "dbr_io_api=sync");
	}
	dbr_fidelity(
		dj,
		"the backends that waited for the %u I/O-worker stream(s)' reads do not wait for them: the capture does not link a worker's read to the backend that asked for it",
		dj->ioworkers);
	return 0;
}

static void iodepth_from_trace(struct thread_data *td, struct dbr_job *dj)
{
	struct thread_options *to = &td->o;

	if (fio_option_is_set(to, iodepth) || dj->captured_total <= to->iodepth)
		return;
	to->iodepth = dj->captured_total;
	if (!fio_option_is_set(to, iodepth_low))
		to->iodepth_low = to->iodepth;
	if (!fio_option_is_set(to, iodepth_batch))
		to->iodepth_batch = to->iodepth;
	dj->iodepth_from_trace = 1;
}

static int check_fio_options(struct thread_data *td, struct dbr_job *dj)
{
	struct thread_options *to = &td->o;

	if (fio_option_is_set(to, size) || fio_option_is_set(to, io_size)) {
		pack_log_err(
			"dbreplay: size= and io_size= do not apply; the trace says what is done (dbr_loops=, or time_based with runtime=)\n");
		return 1;
	}
	if (to->loops > 1) {
		pack_log_err(
			"dbreplay: use dbr_loops= instead of loops= (the engine resets the trace's files between loops)\n");
		return 1;
	}
	if (to->nr_files > 1) {
		pack_log_err("dbreplay: nrfiles must be 1 (the files are the trace's)\n");
		return 1;
	}
	if (to->verify != 0) {
		pack_log_err("dbreplay: verify= is not supported by this engine\n");
		return 1;
	}
	if (to->iodepth > 1 && dj->api != API_IO_URING) {
		pack_log_err(
			"dbreplay: iodepth must be 1 with dbr_io_api=sync (one record at a time, in trace order); use dbr_io_api=io_uring for concurrent streams\n");
		return 1;
	}
	return 0;
}

static int dbr_parse_options(struct thread_data *td, struct dbr_job *dj)
{
	struct dbr_options *o = dj->o;
	char err[ERRLEN];
	uint64_t v;

	if (pack_parse_num_options(dbr_num_options,
				   sizeof(dbr_num_options) / sizeof(dbr_num_options[0]), options, o,
				   err, sizeof(err))) {
		pack_log_err("dbreplay: %s\n", err);
		return 1;
	}
	if (!o->trace || !*o->trace) {
		pack_log_err(
			"dbreplay: dbr_trace= is required: the trace to replay (docs/dbtrace-format.md)\n");
		return 1;
	}
	dj->trace_path = o->trace;
	if (!strcmp(o->trace, "-")) {
		pack_log_err(
			"dbreplay: dbr_trace=- is not supported: the trace is read twice (checked, then replayed)\n");
		return 1;
	}
	if (o->target && *o->target && o->device && *o->device) {
		pack_log_err(
			"dbreplay: dbr_target= and dbr_device= exclude each other (files one-to-one in a directory, or packed in one file or device)\n");
		return 1;
	}
	dj->packed = o->device && *o->device;
	/* strings, so that an unset ${VAR} in a job file means the default */
	if (!o->timing || !*o->timing || !strcmp(o->timing, "asap"))
		dj->timing = TM_ASAP;
	else if (!strcmp(o->timing, "original"))
		dj->timing = TM_ORIGINAL;
	else if (!strcmp(o->timing, "scaled"))
		dj->timing = TM_SCALED;
	else {
		pack_log_err("dbreplay: dbr_timing=%s is not asap, original or scaled\n",
			     o->timing);
		return 1;
	}
	if (!o->io_api || !*o->io_api || !strcmp(o->io_api, "sync"))
		dj->api = API_SYNC;
	else if (!strcmp(o->io_api, "io_uring"))
		dj->api = API_IO_URING;
	else {
		pack_log_err("dbreplay: dbr_io_api=%s is not sync or io_uring\n", o->io_api);
		return 1;
	}
	dj->speed = 1.0;
	if (o->speed && *o->speed) {
		char *end;

		errno = 0;
		dj->speed = strtod(o->speed, &end);
		if (errno || *end || end == o->speed || isnan(dj->speed)) {
			pack_log_err(
				"dbreplay: dbr_speed=%s is not a positive factor (2: twice as fast as the trace)\n",
				o->speed);
			return 1;
		}
		/* 1e-300 made every gap a wait of ages; 1e9 is asap in all but name */
		if (!(dj->speed >= DBR_SPEED_MIN && dj->speed <= DBR_SPEED_MAX)) {
			pack_log_err(
				"dbreplay: dbr_speed=%s is out of range %g..%g (a thousand times slower to a thousand times faster than the trace; dbr_timing=asap for as fast as possible)\n",
				o->speed, DBR_SPEED_MIN, DBR_SPEED_MAX);
			return 1;
		}
		if (dj->timing == TM_ASAP) {
			pack_log_err("dbreplay: dbr_speed= needs dbr_timing=scaled\n");
			return 1;
		}
	}
	if (dj->timing == TM_ORIGINAL)
		dj->speed = 1.0;
	dj->overwrite_device = o->overwrite_device;
	/* unset or "captured": the trace's completion times give each record its depth */
	dj->depth_captured = !o->stream_depth || !*o->stream_depth ||
			     !strcmp(o->stream_depth, "captured");
	if (!dj->depth_captured && strspn(o->stream_depth, "0123456789") != strlen(o->stream_depth)) {
		pack_log_err("dbreplay: dbr_stream_depth=%s is not 'captured' or a whole number\n",
			     o->stream_depth);
		return 1;
	}
	if (opt_u64("dbr_stream_depth", dj->depth_captured ? NULL : o->stream_depth, 1, 1, 65536, &v))
		return 1;
	dj->stream_depth = (unsigned)v;
	if (opt_u64("dbr_loops", o->loops, 1, 0, UINT32_MAX, &dj->loops))
		return 1;
	if (dj->loops == 0 && !td->o.time_based) {
		pack_log_err(
			"dbreplay: dbr_loops=0 (until stopped) needs time_based and runtime=\n");
		return 1;
	}
	if (opt_u64("dbr_window", o->window, 0, 1, 1U << 22, &v))
		return 1;
	dj->window = (unsigned)v;
	return 0;
}

static int uring_init(struct thread_data *td, struct dbr_job *dj)
{
	unsigned depth = td->o.iodepth ? td->o.iodepth : 1;
	int ret;

	ret = pack_uring_queue_init(depth * 2 < 8 ? 8 : depth * 2, &dj->ring);
	if (ret) {
		pack_log_err("dbreplay: dbr_io_api=io_uring: io_uring_queue_init: %s\n",
			     strerror(-ret));
		return 1;
	}
	dj->ring_ok = 1;
	if (pack_ioq_init(&dj->ioq, depth + 8) ||
	    pack_ioq_attach(&dj->ioq, &dj->ring, ENGINE, dbr_uring_cqe, dj)) {
		pack_log_err("dbreplay: out of memory\n");
		return 1;
	}
	return 0;
}

static int dbr_init(struct thread_data *td)
{
	struct thread_options *to = &td->o;
	struct dbsched_cfg sc;
	struct dbr_job *dj;
	char err[ERRLEN];
	uint64_t max_io;
	struct rlimit rl;
	unsigned i;

	if (pack_check_host_fio(td, ENGINE, &ioengine))
		return 1;
	dj = calloc(1, sizeof(*dj));
	if (!dj)
		return 1;
	td->io_ops_data = dj;
	dj->o = td->eo;
	dj->rootfd = dj->manifest_fd = dj->devfd = dj->dev_dfd = dj->report_fd = dj->rlog_fd = -1;
	dj->trace_fd = -1;
	dj->next_wake = UINT64_MAX;
	dj->files = calloc(DBTRACE_MAX_FILES, sizeof(*dj->files));
	if (!dj->files)
		return 1;
	for (i = 0; i < DBTRACE_MAX_FILES; i++)
		dj->files[i].fd = dj->files[i].bfd = -1;
	if (dbr_parse_options(td, dj) || check_fio_options(td, dj))
		return 1;
	dj->direct = to->odirect;
	dj->dio_align = ODIRECT_MIN_ALIGN;
	dj->tdo_invalidate = to->invalidate_cache;
	if (dbr_open_trace_file(dj))
		return 1;

	dj->t = dbr_open_trace(dj, err, sizeof(err));
	if (!dj->t) {
		pack_log_err("dbreplay: %s\n", err);
		return 1;
	}
	dj->h = dbtrace_header(dj->t);
	if (take_incomplete(td, dj))
		return 1;
	dj->unit_ns = dbtrace_time_unit_ns(dj->h->time_unit);
	if (dj->timing != TM_ASAP && dj->h->time_unit == DBTRACE_TIME_NONE) {
		pack_log_err(
			"dbreplay: %s is an order-only trace (timeunit none): dbr_timing=%s needs record times; use dbr_timing=asap\n",
			dj->trace_path, dj->timing == TM_ORIGINAL ? "original" : "scaled");
		return 1;
	}
	if (dbfilter_parse(&dj->filter, dj->h, dj->o->ops, dj->o->streams, dj->o->files, err,
			   sizeof(err))) {
		pack_log_err("dbreplay: %s\n", err);
		return 1;
	}
	for (i = 0; i < dj->h->nfiles; i++)
		dj->direct_files += dj->h->files[i].direct;
	dj->trace_direct = dj->direct_files && dj->o->direct_mode != DIRECT_OFF;
	if (dj->h->version >= 2 && !(dj->depth = dbdepth_new())) {
		pack_log_err("dbreplay: out of memory\n");
		return 1;
	}
	if (check_trace(dj, &max_io))
		return 1;
	/* before anything is written: the depth, and what it refuses */
	if (dj->api == API_IO_URING)
		iodepth_from_trace(td, dj);
	if (ioworker_streams(td, dj))
		return 1;
	if (dj->depth && (!dj->depth_captured || !dj->lat_records)) {
		dbdepth_free(dj->depth);
		dj->depth = NULL;
	} else if (dj->depth) {
		dbdepth_reset(dj->depth);
	}
	if (dj->direct_files && dj->o->direct_mode == DIRECT_OFF && !dj->direct)
		dbr_fidelity(dj, "%u file(s) the database opened with O_DIRECT are replayed through the page cache (dbr_direct=off)",
			 dj->direct_files);

	/* every file of the trace is open at once */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < dj->h->nfiles + 256) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < dj->h->nfiles + 256) {
			pack_log_err(
				"dbreplay: the trace has %u files, the descriptor limit is %llu (ulimit -n)\n",
				dj->h->nfiles, (unsigned long long)rl.rlim_cur);
			return 1;
		}
	}
	if (dbr_make_buffers(dj, (size_t)max_io)) {
		pack_log_err("dbreplay: out of memory for %llu-byte buffers\n",
			     (unsigned long long)max_io);
		return 1;
	}
	for (i = 0; i < dj->h->nfiles; i++)
		dj->files[dj->h->files[i].id].decl = &dj->h->files[i];
	if (dbr_open_report_file(dj) || dbr_open_record_log(dj))
		return 1;
	if (dj->packed ? dbr_open_device(td, dj) : dbr_open_target_dir(td, dj))
		return 1;
	if (!dj->packed && (dj->trace_direct || dj->direct)) {
		/* before anything is written: O_DIRECT there, and the alignment it needs */
		int ok = odirect_probe(dj->rootfd, &dj->dio_align);

		if (ok == 0 && dbr_direct_refused(dj, dj->root))
			return 1;
	}
	if (dbr_layout(dj, 1) || dbr_start_record_log(dj))
		return 1;

	if (dj->api == API_IO_URING) {
		dj->uring = 1;
		if (uring_init(td, dj))
			return 1;
	} else {
		to->iodepth = 1;
		/* one record at a time: fio stamps the issue time before ->queue */
		pack_engine_flag_set(td, FIO_SYNCIO);
	}
	sc.stream_depth = dj->stream_depth;
	sc.capacity = dj->window ? dj->window
		: dj->uring ? (to->iodepth * 64 < 1024 ? 1024 : to->iodepth * 64) : 1;
	dj->sched = dbsched_new(&sc);
	if (!dj->sched) {
		pack_log_err("dbreplay: out of memory for a %u-record window\n", sc.capacity);
		return 1;
	}
	depth_notes(dj, to->iodepth, sc.capacity);
	dj->in_order = !dj->uring && dj->timing == TM_ASAP && sc.capacity == 1;

	/* per-role read and write latencies, and the trim direction's kinds, in fio's JSON */
	for (i = 0; i < 3; i++) {
		enum fio_ddir d = i == 0 ? DDIR_READ : i == 1 ? DDIR_WRITE : DDIR_TRIM;
		unsigned short k, ioprio[(int)TP_NR > (int)DBTRACE_ROLE_NR ? (int)TP_NR : (int)DBTRACE_ROLE_NR];
		int n = d == DDIR_TRIM ? TP_NR : DBTRACE_ROLE_NR;

		for (k = 0; k < n; k++)
			ioprio[k] = k + 1;
		if (pack_prio_stats(td, d, ioprio, n))
			return 1;
	}
	if (!pack_fio_has_prios())
		pack_fio_lacks(td, "dbreplay", "per-priority statistics", "3.30",
			       "fio's JSON has no \"prios\" split by file role and trim kind; the engine's report has them");
	/* fio runs "time based" with no limit unless runtime= is set: the trace ends the job */
	dj->user_time_based = to->time_based;
	to->time_based = 1;
	dbr_start_reader(dj);
	return 0;
}

/* fio's view: one file, big enough that fio never runs out of offsets. */
static int dbr_setup(struct thread_data *td)
{
	struct fio_file *f;
	unsigned i;

	if (pack_check_host_fio(td, ENGINE, &ioengine)) /* first: fio calls ->setup before ->init */
		return 1;
	for_each_file(td, f, i) {
		f->real_file_size = 1ULL << 40;
		fio_file_set_size_known(f);
	}
	return 0;
}

/*
 * Why the replay ended before the last record of its last loop, or NULL if
 * it did not: "error" (a failed record or the trace stopped the job),
 * "runtime" (runtime= ended it), "stopped" (fio stopped the job: a signal,
 * exitall, another job's error).
 */
static const char *cut_short_by(struct thread_data *td, const struct dbr_job *dj)
{
	if (dj->finished && !dj->aborted)
		return NULL;
	if (dj->aborted || td->error)
		return "error";
	if (td->o.timeout && utime_since_now(&td->epoch) >= td->o.timeout)
		return "runtime";
	return "stopped";
}

/*
 * A replay cut short measured part of the workload: it fails the job unless
 * the user accepted that (dbr_accept_partial=1, or time_based: a run of
 * runtime='s length). Said in one line; the report says it too.
 */
static void check_partial(struct thread_data *td, struct dbr_job *dj)
{
	dj->cut_short = cut_short_by(td, dj);
	dj->partial = dj->cut_short != NULL;
	dj->partial_accepted = dj->partial && (dj->o->accept_partial || dj->user_time_based);
	if (!dj->partial || dj->partial_accepted || !strcmp(dj->cut_short, "error"))
		return; /* an error has said so and failed the job already */
	pack_log_err(
		"dbreplay: %s: the replay was cut short by %s in loop %llu of %llu (%llu records replayed, the trace has %llu); a partial replay fails: set dbr_accept_partial=1 to accept it, or time_based=1 for a run of runtime='s length\n",
		td->o.name,
		!strcmp(dj->cut_short, "runtime")
			? "runtime="
			: "fio stopping the job (a signal, exitall, another job's error)",
		(unsigned long long)dj->loop, (unsigned long long)dj->loops,
		(unsigned long long)dj->replayed, (unsigned long long)dj->trace_records);
	if (!td->error)
		td_verror(td, !strcmp(dj->cut_short, "runtime") ? ETIME : EINTR,
			  "dbreplay: partial replay");
}

static void dbr_cleanup(struct thread_data *td)
{
	struct dbr_job *dj = td->io_ops_data;
	unsigned i;
	int r, o;

	if (!dj)
		return;
	if (dj->ring_ok) {
		while (dj->sqes && dbr_reap(dj, 1, UINT64_MAX) == 0)
			;
		io_uring_queue_exit(&dj->ring);
		dj->ring_ok = 0;
	}
	if (dj->started && td->io_ops_init) {
		/* runtime= ended the job just after the last record: the replay is whole */
		if (!dj->finished && !dj->aborted && dj->eof && !dbsched_count(dj->sched) &&
		    !dj->one_pending && dj->loops && dj->loop + 1 >= dj->loops &&
		    dbr_next_loop(dj) == 0)
			dj->finished = 1;
		if (!dj->finished || dj->replay_ns_total == 0) {
			/* stopped in the middle of a loop (runtime=, an error): it counts, unfinished */
			dj->replay_ns_total =
				dbsched_add_ns(dj->replay_ns_total, dbr_now() - dj->start_ns);
			if (dj->timing != TM_ASAP)
				dj->trace_ns_total =
					dbsched_add_ns(dj->trace_ns_total, dj->last_done_ns);
			dj->loop++;
		}
		check_partial(td, dj);
		if (dj->short_reads)
			dbr_fidelity(
				dj,
				"%llu reads returned fewer bytes than the trace's (%llu bytes fewer; the first: trace line %llu): their file was shorter than in the capture when they ran",
				(unsigned long long)dj->short_reads,
				(unsigned long long)dj->short_read_bytes,
				(unsigned long long)dj->short_read_line);
		pack_fix_runtimes(td, (dbr_now() - dj->first_start_ns + 999999) / 1000000);
		dbr_write_summary(td, dj);
		dbr_write_report_file(td, dj);
	}
	dbr_close_report_file(dj);
	for (i = 0; dj->files && i < DBTRACE_MAX_FILES; i++) {
		if (dj->files[i].fd >= 0)
			close(dj->files[i].fd);
		if (dj->files[i].bfd >= 0)
			close(dj->files[i].bfd);
	}
	if (dj->dev_dfd >= 0)
		close(dj->dev_dfd);
	if (dj->manifest_fd >= 0)
		close(dj->manifest_fd);
	if (dj->rootfd >= 0 && dj->claimed && (!dj->o->keep || dj->tmproot))
		dbr_remove_owned(dj);
	else if (dj->tmproot || (dj->jobdir_made && dj->claimed))
		rmdir(dj->root);	/* only if empty; unclaimed, it may be another run's */
	if (dj->rootfd >= 0)
		close(dj->rootfd);
	if (dj->packed && !dj->o->keep)
		dbr_remove_device(dj);
	if (dj->devfd >= 0)
		close(dj->devfd);
	pathset_free(&dj->owned);
	for (r = 0; r < DBTRACE_ROLE_NR; r++)
		for (o = 0; o < DBTRACE_OP_NR; o++)
			free(dj->cls[r][o]);
	errno = 0;
	if ((r = dbr_close_record_log(dj))) {
		/* lines of the log are lost: as the report file's, a failure of the job */
		pack_log_err("dbreplay: dbr_record_log %s: %s\n", dj->o->record_log, strerror(-r));
		if (!td->error)
			td_verror(td, -r, "dbr_record_log");
	}
	dbsched_free(dj->sched);
	dbdepth_free(dj->depth);
	dbprefetch_stop(dj->pf);	/* before the trace it reads */
	dbrecs_free(dj->kept);
	if (dj->t)
		dbtrace_close(dj->t);
	if (dj->trace_fd >= 0)
		close(dj->trace_fd);
	for (i = 0; i < dj->nincomplete; i++)
		free(dj->incomplete[i]);
	free(dj->incomplete);
	free(dj->files);
	free(dj->rbuf);
	free(dj->wbuf);
	pack_ioq_free(&dj->ioq);
	free(dj);
	td->io_ops_data = NULL;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

/*
 * Numbers and paths are kept as strings and parsed at init: an empty value
 * (an unset ${VAR} in a job file) means the default, and every error names
 * the option.
 */
#define STR_OPT(field)	PACK_STR_OPT(struct dbr_options, field)
STR_OPT(trace)
STR_OPT(target)
STR_OPT(device)
STR_OPT(align)
STR_OPT(timing)
STR_OPT(speed)
STR_OPT(io_api)
STR_OPT(stream_depth)
STR_OPT(window)
STR_OPT(loops)
STR_OPT(ops)
STR_OPT(streams)
STR_OPT(files)
STR_OPT(report_file)
STR_OPT(record_log)

#define STR_OPTION(oname, field, long_name, helptext)	\
	PACK_STR_OPTION(struct dbr_options, oname, field, long_name, helptext)

PACK_NUM_OPT(struct dbr_options, overwrite_device)
PACK_NUM_OPT(struct dbr_options, keep)
PACK_NUM_OPT(struct dbr_options, accept_incomplete)
PACK_NUM_OPT(struct dbr_options, accept_partial)
PACK_NUM_OPT(struct dbr_options, accept_serial)
PACK_NUM_OPT(struct dbr_options, reader_thread)

/* a 0/1 option, read at init within its range (fioglue.h: FIO_OPT_BOOL took -1 as 1) */
#define BOOL_OPTION(oname, field, long_name, helptext, dflt) \
	PACK_NUM_OPTION(struct dbr_options, oname, field, long_name, helptext, dflt)

static struct fio_option options[] = {
	STR_OPTION("dbr_trace", trace, "Trace",
		   "The dbtrace to replay (plain or gzip; docs/dbtrace-format.md)"),
	STR_OPTION("dbr_target", target, "Target directory",
		   "Directory the trace's files are created in, one to one (unset: a private directory under $TMPDIR); only paths the engine created are ever written or removed"),
	STR_OPTION("dbr_device", device, "Packed target",
		   "Instead of dbr_target: one file or block device holding every file as a region (directory and namespace operations are skipped)"),
	BOOL_OPTION("dbr_overwrite_device", overwrite_device, "Confirm device overwrite",
		    "1: dbr_device may be a block device, whose content the replay overwrites (default 0)", "0"),
	STR_OPTION("dbr_align", align, "Region alignment",
		   "Packed mode: each file's region starts at a multiple of this (default 1m)"),
	STR_OPTION("dbr_timing", timing, "Timing",
		   "asap: as fast as possible, order and dependencies only (default); original: at the trace's times, lag reported; scaled: at the trace's times divided by dbr_speed"),
	STR_OPTION("dbr_speed", speed, "Speed factor",
		   "With dbr_timing=scaled: 2 replays twice as fast as captured, 0.5 at half speed"),
	STR_OPTION("dbr_io_api", io_api, "System call interface",
		   "sync: pread/pwrite/fsync..., one record at a time in trace order (default); io_uring: the streams concurrently, up to iodepth records in flight"),
	STR_OPTION("dbr_stream_depth", stream_depth, "Per-stream depth",
		   "io_uring: a stream's reads/writes in flight at once: captured (default): as many as the stream had in flight when the database issued each record (the trace's completion times; 1 for records without); N: at most N for every record"),
	{
		.name	= "dbr_direct",
		.lname	= "O_DIRECT of the trace's files",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, direct_mode),
		.help	= "Files the trace says the database opened with O_DIRECT (direct=1 makes every file O_DIRECT)",
		.def	= "trace",
		.posval	= {
			{ .ival = "trace", .oval = DIRECT_TRACE, .help = "Open them with O_DIRECT; refuse a target that has no O_DIRECT (default)" },
			{ .ival = "try", .oval = DIRECT_TRY, .help = "The same, but on a target without O_DIRECT replay them through the page cache, said in one line, the summary and the report" },
			{ .ival = "off", .oval = DIRECT_OFF, .help = "Replay them through the page cache (said in one line, the summary and the report)" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	STR_OPTION("dbr_window", window, "Look-ahead window",
		   "Records read ahead to find independent work (default 64 x iodepth, at least 1024; 1 in sync mode)"),
	STR_OPTION("dbr_loops", loops, "Loops",
		   "Passes over the trace (default 1; 0: until runtime= with time_based); files go back to their starting state between loops"),
	STR_OPTION("dbr_ops", ops, "Operation filter",
		   "Operations to replay: names (read, write, fsync, ..., sync, namespace), '!' excludes; default all"),
	STR_OPTION("dbr_streams", streams, "Stream filter",
		   "Streams to replay: ids, ranges A-B or names, '!' excludes; default all"),
	STR_OPTION("dbr_files", files, "File filter",
		   "Files to replay: ids, ranges, paths or roles (data, log, journal, directory, temp, other), '!' excludes; default all"),
	{
		.name	= "dbr_fill",
		.lname	= "Fill",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, fill),
		.help	= "How files that exist before the trace are laid out (default data)",
		.def	= "data",
		.posval	= {
			{ .ival = "data", .oval = FILL_DATA, .help = "Written with incompressible data, so reads hit the device" },
			{ .ival = "sparse", .oval = FILL_SPARSE, .help = "Sized with ftruncate only (reads of holes never reach the device)" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	BOOL_OPTION("dbr_keep", keep, "Keep files",
		    "1: leave the files for the next run (which resets them to the trace's starting sizes); 0: remove what the engine created", "0"),
	BOOL_OPTION("dbr_accept_incomplete", accept_incomplete, "Accept an incomplete trace",
		    "1: replay a trace whose capture could not see part of the I/O (its header's incomplete lines, repeated in the summary and report); 0: refuse it (default)", "0"),
	BOOL_OPTION("dbr_accept_partial", accept_partial, "Accept a partial replay",
		    "1: a replay cut short (runtime= without time_based, or fio stopping the job) is a result, said in the summary and report; 0: it fails the job (default)", "0"),
	BOOL_OPTION("dbr_accept_serial", accept_serial, "Accept serialised I/O workers",
		    "1: replay a trace with PostgreSQL I/O-worker streams (ioworker-TID) one request at a time (dbr_io_api=sync, iodepth=1), said in the summary and report; 0: refuse it (default): the workers' reads ran beside the backends'", "0"),
	BOOL_OPTION("dbr_reader_thread", reader_thread, "Trace reader thread",
		    "For a trace past the 256 MiB of records the check pass keeps (else the replay reads those, and this changes nothing): 1: a thread of its own parses the trace again ahead of the replay (a bounded ring of records, off the replaying thread's clock); 0: the replaying thread parses as it goes", "1"),
	{
		.name	= "dbr_report",
		.lname	= "Summary",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, report),
		.help	= "Per-class summary and replay fidelity on stderr at the end (default summary)",
		.def	= "summary",
		.posval	= {
			{ .ival = "summary", .oval = REP_SUMMARY, .help = "Print it" },
			{ .ival = "none", .oval = REP_NONE, .help = "Do not" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	STR_OPTION("dbr_report_file", report_file, "Report file",
		   "Append one JSON line per job: per-class counts, bytes and latency percentiles, lag percentiles, trace and replay durations"),
	STR_OPTION("dbr_record_log", record_log, "Per-record log",
		   "Write a line per replayed record: loop, trace line, stream, file, operation, due, issue and completion time (ns from the loop's start), bytes, errno"),
	{
		.name	= NULL,
	},
};

static struct ioengine_ops ioengine = {
	.name			= ENGINE,
	.version		= FIO_IOOPS_VERSION,
	/* FIO_SYNCIO is set per job by ->init in sync mode; in io_uring mode ->queue sets issue_time */
	.flags			= FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL |
				  PACK_ASYNCIO_SETS_ISSUE_TIME,
	.init			= dbr_init,
	.setup			= dbr_setup,
	.prep			= dbr_prep,
	.queue			= dbr_queue,
	.commit			= dbr_commit,
	.getevents		= dbr_getevents,
	.event			= dbr_event,
	.cleanup		= dbr_cleanup,
	.open_file		= pack_file_noop,
	.close_file		= pack_file_noop,
	.get_file_size		= pack_file_noop,
	.invalidate		= pack_file_noop,
	.unlink_file		= pack_file_noop,
	.options		= options,
	.option_struct_size	= sizeof(struct dbr_options),
};

PACK_EXPORT_ENGINE(ioengine)
