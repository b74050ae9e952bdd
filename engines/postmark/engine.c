/*
 * postmark: PostMark 1.53's small-file transactions as an external fio
 * engine, with fio's latency statistics.
 *
 * The operation stream comes from lib/postmark.c, a model of PostMark that
 * reproduces its generator, file table and counters exactly. The engine
 * replays it on real files: the same files created, read, appended and
 * deleted, in the same order, with the same names, sizes and bytes, and -
 * in buffered mode - the same system calls stdio would make for PostMark's
 * fwrite()/fread() calls (lib/stdiosim.c), issued on descriptors opened
 * relative to directories the engine owns.
 *
 * One fio I/O is one PostMark file operation:
 *   read              -> fio's "read" direction
 *   create, append    -> "write" (split in the JSON "prios" array: prio 1 =
 *                        create, prio 2 = append)
 *   delete            -> "trim"
 *   end of transaction-> "sync": its latency is the whole transaction, from
 *                        its start to the end of its last operation
 * so fio's JSON carries per-operation and per-transaction latency
 * percentiles. opstats_file gets the same per class, by name, plus
 * PostMark's counters. The PostMark-style report goes to stderr or
 * pm_report_file, never into fio's output.
 *
 * Run: fio --ioengine=external:build/postmark.so --pm_location=/mnt/x ...
 *      fio --enghelp=$PWD/build/postmark.so  lists the options.
 */
#include "pmengine.h"

static struct ioengine_ops ioengine;

static int pm_prep(struct thread_data *td, struct io_u *io_u)
{
	struct pm_data *pd = td->io_ops_data;
	enum fio_ddir ddir;

	if (!pd->have_next) {
		/* fio asked for more than the run holds; end the job */
		fio_mark_td_terminate(td);
		return 1;
	}
	switch (pd->next.kind) {
	case PM_OP_READ:
		ddir = DDIR_READ;
		break;
	case PM_OP_CREATE:
		ddir = DDIR_WRITE;
		pack_io_u_prio(io_u, PRIO_CREATE, 0);
		break;
	case PM_OP_APPEND:
		ddir = DDIR_WRITE;
		pack_io_u_prio(io_u, PRIO_APPEND, 1);
		break;
	case PM_OP_DELETE:
		ddir = DDIR_TRIM;
		break;
	default:
		ddir = DDIR_SYNC;
	}
	io_u->ddir = ddir;
	/* an io_u ->queue answered BUSY is prepared again with the direction still allowed */
	if (pd->ddir_held)
		pack_ddir_restore(td, pd->saved_td_ddir);
	pack_ddir_allow(td, ddir, &pd->saved_td_ddir);
	pd->ddir_held = 1;
	return 0;
}


static enum fio_q_status pm_queue(struct thread_data *td, struct io_u *io_u)
{
	struct pm_data *pd = td->io_ops_data;
	struct pm_op *op = &pd->next;
	uint64_t start, bytes = 0;
	int ret = 0;

	if (pd->uring) {
		enum fio_q_status q = pm_uring_queue(td, pd, io_u);

		/*
		 * fio checks a requeued io_u's direction before ->prep: it
		 * stays allowed until the io_u is really queued
		 */
		if (q != FIO_Q_BUSY) {
			pack_ddir_restore(td, pd->saved_td_ddir);
			pd->ddir_held = 0;
		}
		return q;
	}
	pack_ddir_restore(td, pd->saved_td_ddir);
	pd->ddir_held = 0;
	if (!pd->started) {
		pd->started = 1;
		pm_stamp_phase(pd, PM_PHASE_CREATE);
		if (pd->t_ns[PM_PHASE_TRANSACTIONS] == 0 && op->phase != PM_PHASE_CREATE)
			pm_stamp_phase(pd, PM_PHASE_TRANSACTIONS);
	}
	start = now_ns();
	if (op->kind == PM_OP_TX_END) {
		if (pd->o->fsync == PMF_TRANSACTION)
			ret = pm_commit_deferred(pd);
		/* fio's sync latency is measured from issue_time: the transaction's start */
		io_u->issue_time = pd->tx_start_ts;
		pm_record(&pd->st[OC_TRANSACTION], now_ns() - pd->tx_start_ns, 0, ret);
		if (ret)
			pack_log_err("postmark: transaction %d: fsync: %s\n", op->tx,
				     strerror(-ret));
	} else {
		ret = pm_run_op(pd, op, &bytes);
		pm_record(&pd->st[pm_class_of(op)], now_ns() - start, bytes, ret);
		if (ret) {
			char path[PATH_MAX + 32];

			pm_file_path(pd, op, path, sizeof(path));
			pack_log_err("postmark: %s %s: %s\n", pm_op_name(op), path, strerror(-ret));
		}
	}
	if (ret) {
		io_u->error = -ret;
		pd->failed = 1;
	}
	io_u->xfer_buflen = bytes;
	io_u->resid = 0;

	if (op->kind == PM_OP_TX_END)
		pm_check_tx_limit(pd);
	pm_advance(pd, 1);
	if (!pd->have_next)
		fio_mark_td_terminate(td);
	/* fio leaves this to engines with a ->commit (the io_uring mode's) */
	io_u_mark_submit(td, 1);
	io_u_mark_complete(td, 1);
	return FIO_Q_COMPLETED;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

/*
 * A whole-number or size option ("4k"), in [@lo, @hi] (lib/units.h: never
 * wrapped); empty or unset means @def.
 */
static int opt_int(const char *name, const char *val, long def, long lo, long hi, int *out,
		   char *err, size_t errlen)
{
	uint64_t v;

	if (parse_uint_option(name, val, (uint64_t)def, (uint64_t)lo, (uint64_t)hi, &v, err,
			      errlen))
		return -1;
	*out = (int)v;
	return 0;
}

/* A bias: -1 (none of either) or 0..10 of the 10 halves. */
static int opt_bias(const char *name, const char *val, int def, int *out, char *err, size_t errlen)
{
	if (val && !strcmp(val, "-1")) {
		*out = -1;
		return 0;
	}
	if (opt_int(name, val, def, 0, 10, out, err, errlen) == 0)
		return 0;
	pack_errf(err, errlen, "%s=%s is not -1 (none) or 0..10", name, val);
	return -1;
}

/* clang-format off */
#define PM_NUM(oname, field)	PACK_NUM(struct pm_options, oname, field, 0, 1)

static const struct pack_num_option pm_num_options[] = {
	PM_NUM("pm_buffering",		buffering),
	PM_NUM("pm_whole_seconds",	whole_seconds),
	PM_NUM("pm_space_check",	space_check),
};
/* clang-format on */

static struct fio_option options[];

static int parse_pm_options(struct thread_data *td, struct pm_data *pd, char *err, size_t errlen)
{
	struct pm_options *o = pd->o;
	struct pm_config *c = &pd->cfg;
	int seed, tx;

	pm_config_default(c);
	if (pack_parse_num_options(pm_num_options,
				   sizeof(pm_num_options) / sizeof(pm_num_options[0]), options, o,
				   err, errlen))
		return -1;
	if (opt_int("pm_size_low", o->size_low, c->size_lo, 1, PM_MAX_SIZE, &c->size_lo, err,
		    errlen) ||
	    opt_int("pm_size_high", o->size_high, c->size_hi, 1, PM_MAX_SIZE, &c->size_hi, err,
		    errlen))
		return -1;
	if (!o->size_high || !*o->size_high) {
		/* only the low bound given: at least that, keeping PostMark's high bound */
		if (c->size_hi < c->size_lo)
			c->size_hi = c->size_lo;
	}
	if (c->size_hi < c->size_lo) {
		pack_errf(err, errlen, "pm_size_high=%d is below pm_size_low=%d (inverted size range)",
			  c->size_hi, c->size_lo);
		return -1;
	}
	if (opt_int("pm_number", o->number, c->number, 1, PM_MAX_NUMBER, &c->number, err, errlen) ||
	    opt_int("pm_transactions", o->transactions, c->transactions, 1, INT32_MAX - 1, &tx, err,
		    errlen) ||
	    opt_int("pm_seed", o->seed, c->seed, 1, INT32_MAX, &seed, err, errlen) ||
	    opt_int("pm_read_block", o->read_block, c->read_block, 1, 64 << 20, &c->read_block, err,
		    errlen) ||
	    opt_int("pm_write_block", o->write_block, c->write_block, 1, 64 << 20, &c->write_block,
		    err, errlen) ||
	    opt_bias("pm_bias_read", o->bias_read, c->bias_read, &c->bias_read, err, errlen) ||
	    opt_bias("pm_bias_create", o->bias_create, c->bias_create, &c->bias_create, err,
		     errlen) ||
	    opt_int("pm_subdirectories", o->subdirs, c->subdirs, 0, PM_MAX_SUBDIRS, &c->subdirs,
		    err, errlen))
		return -1;
	c->transactions = tx;
	c->seed = (uint32_t)seed;
	c->buffered = !!o->buffering;
	c->report = o->report == REP_TERSE ? PM_REPORT_TERSE : PM_REPORT_VERBOSE;
	if (pm_parse_locations(c, o->location, err, errlen))
		return -1;
	if (o->size_dist && *o->size_dist) {
		if (size_dist_parse(&pd->sizes, o->size_dist, "pm_file_size_dist", err, errlen))
			return -1;
		pd->have_sizes = 1;
	}
	pd->postmark_content = !o->content || !*o->content || !strcmp(o->content, "postmark");
	if (!pd->postmark_content &&
	    content_parse(&pd->content, o->content, "pm_file_content", err, errlen)) {
		char *p = strstr(err, "(random,");

		/* the engine's own default is one more choice */
		if (p && strlen(err) + 10 < errlen) {
			memmove(p + 10, p + 1, strlen(p + 1) + 1);
			memcpy(p, "(postmark,", 10);
		}
		return -1;
	}
	return 0;
}

static int check_fio_options(struct thread_data *td)
{
	struct thread_options *to = &td->o;

	if (fio_option_is_set(to, size) || fio_option_is_set(to, io_size)) {
		pack_log_err(
			"postmark: size= and io_size= do not apply; PostMark's run is pm_number files and pm_transactions transactions (or time_based with runtime=)\n");
		return 1;
	}
	if (to->nr_files > 1) {
		pack_log_err(
			"postmark: nrfiles must be 1 (the files are PostMark's; use pm_number)\n");
		return 1;
	}
	if (to->odirect) {
		pack_log_err(
			"postmark: direct=1 is not supported (PostMark does buffered I/O of unaligned sizes)\n");
		return 1;
	}
	if (to->verify != 0) {
		pack_log_err("postmark: verify= is not supported by this engine\n");
		return 1;
	}
	if (to->iodepth > 1 && ((struct pm_options *)td->eo)->io_api != API_IO_URING) {
		pack_log_err(
			"postmark: iodepth must be 1: PostMark's operations depend on each other; use numjobs= for concurrency, or pm_io_api=io_uring\n");
		return 1;
	}
	return 0;
}

/* The run's text (plus a wrap-around tail) and its read and write buffers. */
static int make_buffers(struct pm_data *pd)
{
	const char *text;
	size_t len, ext, i;

	pd->wmax = (size_t)pd->cfg.write_block > BUFSIZ ? (size_t)pd->cfg.write_block : BUFSIZ;
	text = pm_sim_text(pd->sim, &len);
	ext = pd->wmax;
	pd->textlen = len;
	pd->text = malloc(len + ext);
	if (!pd->text)
		return 1;
	memcpy(pd->text, text, len);
	for (i = 0; i < ext; i++)
		pd->text[len + i] = text[i % len];
	pd->rbuflen = (size_t)pd->cfg.read_block > BUFSIZ ? (size_t)pd->cfg.read_block : BUFSIZ;
	pd->rbuf = malloc(pd->rbuflen);
	if (!pd->rbuf)
		return 1;
	if (!pd->postmark_content) {
		pd->wbuf = malloc(pd->wmax);
		if (!pd->wbuf || content_pool_init(&pd->pool_content, &pd->content, pd->cfg.seed,
						  pd->wmax))
			return 1;
	}
	return 0;
}

/*
 * Where PostMark 1.53 itself would misbehave on this configuration, say
 * what the engine does instead (once per job group).
 */
static void warn_postmark_limits(struct thread_data *td, struct pm_data *pd)
{
	const struct pm_config *c = &pd->cfg;
	size_t longest = 0, n;
	char tail[64];
	int i;

	if (td->subjob_number)
		return;
	if (c->transactions < 10)
		pack_log_err(
			"postmark: PostMark 1.53 dies of SIGFPE with fewer than 10 transactions (it divides by transactions / 10); the engine runs the %d\n",
			c->transactions);
	/* PostMark builds "location/sN/NAME" in an 81-byte buffer without a check */
	n = (size_t)snprintf(tail, sizeof(tail), "%s%d", c->subdirs > 1 ? "/s0/" : "/",
			     c->number + (c->transactions < INT32_MAX / 2 ? c->transactions : 0));
	if (c->subdirs > 1)
		n += (size_t)snprintf(tail, sizeof(tail), "%d", c->subdirs - 1) - 1;
	for (i = 0; i < c->nloc; i++)
		if (strlen(c->loc[i].path) > longest)
			longest = strlen(c->loc[i].path);
	if (longest + n > 80)
		pack_log_err(
			"postmark: file paths here reach %zu characters; PostMark 1.53 keeps them in an 81-byte buffer and would overrun it, the engine has no such limit\n",
			longest + n);
}

/*
 * An output named as the engine's files (its marker, PostMark's numbers and
 * s<N>) in a location or below it: the marker's name had the report removed
 * by the run's cleanup (exit 0), a numbered one made a location the next
 * run refuses as not all the engine's. Other names there are the user's
 * (PostMark's `run FILE` in the current directory). 0, or 1 with the line
 * said.
 */
static int output_in_location(struct pm_data *pd, const char *option, const char *path)
{
	const struct pm_config *c = &pd->cfg;
	char real[PATH_MAX];
	const char *name;
	int i;

	/* the name the write lands on: a link beside the location to its marker too */
	if (target_write_path(path, real))
		return 0;
	name = strrchr(real, '/') + 1;
	if (strcmp(name, PMM_NAME) && !pm_name_like(name))
		return 0;
	for (i = 0; i < (c->nloc ? c->nloc : 1); i++) {
		const char *loc = c->nloc ? c->loc[i].path : ".";

		if (target_path_in(path, loc)) {
			pack_log_err(
				"postmark: %s %s is in pm_location %s, named as the engine's files there (its marker, numbers, s<N>); name another file\n",
				option, path, loc);
			return 1;
		}
	}
	return 0;
}

/*
 * The reports written at the end, checked now: a run is not lost, nor
 * ends with exit 0, because the one file it was for cannot be written.
 */
static int check_outputs(struct pm_data *pd)
{
	const struct {
		const char *option, *path;
		int used;
	} out[] = {
		{ "pm_report_file", pd->o->report_file, pd->o->report != REP_NONE },
		{ "pm_opstats_file", pd->o->opstats_file, 1 },
	};
	char err[256];
	unsigned i;

	for (i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		if (!out[i].used || !out[i].path || !*out[i].path)
			continue;
		if (output_in_location(pd, out[i].option, out[i].path))
			return 1;
		if (jsonl_check_path(out[i].path, err, sizeof(err))) {
			pack_log_err("postmark: %s %s\n", out[i].option, err);
			return 1;
		}
	}
	return 0;
}

static int pm_init(struct thread_data *td)
{
	struct thread_options *to = &td->o;
	struct pm_data *pd;
	char err[ERRLEN];
	unsigned jobs;
	int i;

	if (pack_check_host_fio(td, ENGINE, &ioengine))
		return 1;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return 1;
	td->io_ops_data = pd;
	pd->o = td->eo;
	for (i = 0; i < PM_MAX_LOCATIONS; i++)
		pd->pool[i].fd = -1;
	if (parse_pm_options(td, pd, err, sizeof(err))) {
		pack_log_err("postmark: %s\n", err);
		return 1;
	}
	if (check_fio_options(td) || check_outputs(pd))
		return 1;

	/* numjobs: each job its own pool (pm_open_pools) and seed */
	jobs = pack_clone_count(td);
	if (jobs > 1)
		pd->cfg.seed += td->subjob_number;

	/*
	 * fio's runtime= bounds the transaction phase, not the job: the files
	 * are created before and deleted after it, as in PostMark. With
	 * time_based the transactions go on until then; without, runtime= is a
	 * cap on pm_transactions. fio itself runs "time based" with no limit
	 * and the engine ends the job when the run is over.
	 */
	if (to->timeout)
		pd->tx_limit_ns = to->timeout * 1000ULL;
	if (to->time_based) {
		if (!to->timeout) {
			pack_log_err(
				"postmark: time_based needs runtime= (the length of the transaction phase)\n");
			return 1;
		}
		pd->cfg.transactions = INT32_MAX - 1 - pd->cfg.number;
		pd->time_based_run = 1;
	}
	to->timeout = 0;
	to->time_based = 1;

	if (pm_config_check(&pd->cfg, err, sizeof(err))) {
		pack_log_err("postmark: %s\n", err);
		return 1;
	}
	warn_postmark_limits(td, pd);
	pd->sim = pm_sim_new(&pd->cfg, err, sizeof(err));
	if (!pd->sim) {
		pack_log_err("postmark: %s\n", err);
		return 1;
	}
	if (pd->have_sizes)
		pm_sim_set_sizer(pd->sim, pm_dist_size, pd);
	pd->slot_rec = malloc(sizeof(int) * pm_sim_nslots(pd->sim));
	if (!pd->slot_rec) {
		pack_log_err("postmark: out of memory for %d file table slots\n",
			     pm_sim_nslots(pd->sim));
		return 1;
	}
	memset(pd->slot_rec, 0xff, sizeof(int) * pm_sim_nslots(pd->sim)); /* -1: none held */
	if (make_buffers(pd)) {
		pack_log_err("postmark: out of memory for buffers\n");
		return 1;
	}
	if (pd->o->space_check && pm_check_room(td, pd))
		return 1;
	if (pm_open_pools(td, pd) || pm_make_subdirs(pd))
		return 1;

	/* creates and appends get their own latency statistics in "write" */
	{
		static const unsigned short ioprio[] = { PRIO_CREATE, PRIO_APPEND };

		if (pack_prio_stats(td, DDIR_WRITE, ioprio, 2))
			return 1;
		if (!pack_fio_has_prios())
			pack_fio_lacks(td, "postmark", "per-priority statistics", "3.30",
				       "fio's JSON \"write\" has no \"prios\" split of creates and appends; pm_opstats_file has them");
	}

	if (pd->o->io_api == API_IO_URING) {
		pd->uring = 1;
		if (pm_uring_init(td, pd))
			return 1;
	} else {
		to->iodepth = 1;
		/* one operation at a time: fio stamps the issue time before ->queue */
		pack_engine_flag_set(td, FIO_SYNCIO);
	}
	pm_advance(pd, 0);
	return 0;
}

/* fio's view: one file, big enough that fio never runs out of offsets. */
static int pm_setup(struct thread_data *td)
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

/* ------------------------------------------------------------------ */
/* Reports                                                             */
/* ------------------------------------------------------------------ */

/* 0, or the errno of a report file that could not be written (said). */
static int write_report(struct thread_data *td, struct pm_data *pd)
{
	const struct pm_counters *c = pm_sim_counters(pd->sim);
	char buf[4096];
	int n, err = 0;
	FILE *fp = stderr;

	if (pd->o->report == REP_NONE || !pd->started)
		return 0;
	if (pd->o->whole_seconds) {
		struct pm_times t = { pd->t_sec[0], pd->t_sec[1], pd->t_sec[2], pd->t_sec[3] };

		n = pm_report_format(buf, sizeof(buf), &pd->cfg, c, &t);
	} else {
		struct pm_times_ns t = { pd->t_ns[0], pd->t_ns[1], pd->t_ns[2], pd->t_ns[3] };

		n = pm_report_format_ns(buf, sizeof(buf), &pd->cfg, c, &t);
	}
	if (n < 0 || (size_t)n >= sizeof(buf))
		return 0;
	if (pd->o->report_file && *pd->o->report_file) {
		fp = fopen(pd->o->report_file, "a");
		if (!fp)
			err = errno;
	}
	if (fp == stderr) {
		fputs(buf, fp);
		fflush(stderr);
		return 0;
	}
	/* stdio writes at fclose what it buffered: a full disk is said there */
	if (fp && fputs(buf, fp) < 0)
		err = errno ? errno : EIO;
	if (fp && fclose(fp) && !err)
		err = errno;
	if (err)
		pack_log_err("postmark: pm_report_file %s: %s\n", pd->o->report_file,
			     strerror(err));
	return err;
}

/* One JSON line per job (engines/lib/jsonl.h): the counters, whole. 0, or an errno (said). */
static int write_opstats(struct thread_data *td, struct pm_data *pd)
{
	const struct pm_counters *c = pm_sim_counters(pd->sim);
	struct jsonl w = { 0 };
	char err[PATH_MAX + 128];
	int k, i, ret = 0;

	if (!pd->o->opstats_file || !*pd->o->opstats_file)
		return 0;
	jsonl_begin(&w);
	jsonl_str(&w, "engine", "postmark");
	jsonl_str(&w, "job", td->o.name);
	jsonl_u64(&w, "subjob", td->subjob_number);
	jsonl_arr(&w, "locations");
	for (i = 0; i < pd->npools; i++)
		jsonl_str(&w, NULL, pd->pool[i].path);
	jsonl_close(&w);
	jsonl_bool(&w, "finished", pd->finished);
	jsonl_str(&w, "io_api", pd->uring ? "io_uring" : "sync");
	jsonl_i64(&w, "max_in_flight", pd->uring ? pd->max_inflight : pd->started ? 1 : 0);
	jsonl_obj(&w, "ops");
	for (k = 0; k < OC_NR; k++) {
		const struct class_stats *s = &pd->st[k];

		if (!s->ops)
			continue;
		jsonl_obj(&w, class_names[k]);
		jsonl_u64(&w, "ops", s->ops);
		jsonl_u64(&w, "bytes", s->bytes);
		jsonl_u64(&w, "errors", s->errors);
		jsonl_u64(&w, "lat_mean_ns", lathist_mean(&s->lat));
		jsonl_u64(&w, "lat_min_ns", s->lat.min);
		jsonl_u64(&w, "lat_max_ns", s->lat.max);
		jsonl_u64(&w, "lat_p50_ns", lathist_percentile(&s->lat, 50));
		jsonl_u64(&w, "lat_p90_ns", lathist_percentile(&s->lat, 90));
		jsonl_u64(&w, "lat_p99_ns", lathist_percentile(&s->lat, 99));
		jsonl_u64(&w, "lat_p99.9_ns", lathist_percentile(&s->lat, 99.9));
		jsonl_close(&w);
	}
	jsonl_close(&w);
	jsonl_obj(&w, "postmark");
	jsonl_i64(&w, "created", c->created);
	jsonl_i64(&w, "created_alone", c->created_alone);
	jsonl_i64(&w, "read", c->read);
	jsonl_i64(&w, "appended", c->appended);
	jsonl_i64(&w, "deleted", c->deleted);
	jsonl_i64(&w, "deleted_alone", c->deleted_alone);
	jsonl_u64(&w, "bytes_read", (uint64_t)c->bytes_read);
	jsonl_u64(&w, "bytes_written", (uint64_t)c->bytes_written);
	jsonl_i64(&w, "transactions", c->transactions_done);
	jsonl_bool(&w, "out_of_files", pd->out_of_files);
	jsonl_u64(&w, "table_full_skips", pd->table_full);
	jsonl_u64(&w, "file_full_skips", pd->file_full);
	jsonl_u64(&w, "seed", pd->cfg.seed);
	jsonl_obj(&w, "phase_ns");
	jsonl_u64(&w, "create", pd->finished ? pd->t_ns[1] - pd->t_ns[0] : 0);
	jsonl_u64(&w, "transactions", pd->finished ? pd->t_ns[2] - pd->t_ns[1] : 0);
	jsonl_u64(&w, "delete", pd->finished ? pd->t_ns[3] - pd->t_ns[2] : 0);
	jsonl_close(&w);
	jsonl_close(&w);
	if (jsonl_end(&w)) {
		ret = ENOMEM;
		pack_log_err(
			"postmark: pm_opstats_file %s: out of memory for the report line, nothing written\n",
			pd->o->opstats_file);
	} else if (jsonl_append(&w, pd->o->opstats_file, err, sizeof(err))) {
		ret = EIO; /* the line names the reason */
		pack_log_err("postmark: pm_opstats_file %s\n", err);
	}
	jsonl_free(&w);
	return ret;
}

static void pm_cleanup(struct thread_data *td)
{
	struct pm_data *pd = td->io_ops_data;
	int err, ret;

	if (!pd)
		return;
	/* first: what is in flight completes (and may end the run) */
	pm_uring_exit(pd);
	if (pd->sim) {
		pm_commit_deferred(pd);
		if (td->io_ops_init) {
			uint64_t end = pd->finished ? pd->t_ns[3] : now_ns();

			pack_fix_runtimes(td, pd->started ? (end - pd->t_ns[0] + 999999) / 1000000 : 0);
			if (pd->table_full)
				pack_log_err(
					"postmark: %llu creates found the file table (2 * pm_number slots) full and did nothing, as PostMark does silently\n",
					(unsigned long long)pd->table_full);
			if (pd->file_full)
				pack_log_err(
					"postmark: %llu appends found their file at pm_size_high and did nothing, as PostMark does silently\n",
					(unsigned long long)pd->file_full);
			err = pd->finished ? write_report(td, pd) : 0;
			ret = write_opstats(td, pd);
			if (!err)
				err = ret;
			/* the figures are not where the user asked for them: the job failed */
			if (err)
				td_verror(td, err, "postmark report");
		}
		if (!pd->finished)
			pm_delete_live(pd);
	}
	pm_release_pools(pd);
	pm_sim_free(pd->sim);
	free(pd->slot_rec);
	free(pd->text);
	free(pd->rbuf);
	free(pd->wbuf);
	content_pool_free(&pd->pool_content);
	if (pd->have_sizes)
		size_dist_free(&pd->sizes);
	free(pd);
	td->io_ops_data = NULL;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

/*
 * Numbers and paths are kept as strings and parsed at init: an empty value
 * (an unset ${VAR} in a job file) means the default, and every error names
 * the option. fio's FIO_OPT_STR without possible values hands the raw
 * string to a callback.
 */
#define STR_OPT(field)	PACK_STR_OPT(struct pm_options, field)
STR_OPT(location)
STR_OPT(size_low)
STR_OPT(size_high)
STR_OPT(number)
STR_OPT(transactions)
STR_OPT(seed)
STR_OPT(read_block)
STR_OPT(write_block)
STR_OPT(bias_read)
STR_OPT(bias_create)
STR_OPT(subdirs)
STR_OPT(report_file)
STR_OPT(size_dist)
STR_OPT(content)
STR_OPT(opstats_file)
PACK_NUM_OPT(struct pm_options, buffering)
PACK_NUM_OPT(struct pm_options, whole_seconds)
PACK_NUM_OPT(struct pm_options, space_check)
#define NUM_OPTION(oname, field, long_name, helptext, dflt) \
	PACK_NUM_OPTION(struct pm_options, oname, field, long_name, helptext, dflt)

#define STR_OPTION(oname, field, long_name, helptext)	\
	PACK_STR_OPTION(struct pm_options, oname, field, long_name, helptext)

static struct fio_option options[] = {
	STR_OPTION("pm_location", location, "PostMark locations",
		   "Directories for the files, DIR[@WEIGHT]:DIR[@WEIGHT]... ('\\' escapes ':' and '@'); each empty, or the engine's; unset: a private directory under $TMPDIR (PostMark: set location)"),
	STR_OPTION("pm_size_low", size_low, "Smallest file size",
		   "Smallest file size in bytes (default 500; PostMark: set size LOW HIGH)"),
	STR_OPTION("pm_size_high", size_high, "File size bound",
		   "Sizes are uniform in [pm_size_low, pm_size_high - 1]; equal bounds: fixed size (default 10000)"),
	STR_OPTION("pm_number", number, "Initial files",
		   "Files created before the transactions (default 500; PostMark: set number)"),
	STR_OPTION("pm_transactions", transactions, "Transactions",
		   "Transactions (default 500; PostMark: set transactions); with time_based, runtime= instead"),
	STR_OPTION("pm_seed", seed, "Random seed",
		   "PostMark's random seed (default 42); job N of numjobs uses pm_seed + N"),
	STR_OPTION("pm_read_block", read_block, "Read chunk",
		   "Bytes per read call (default 512; PostMark: set read)"),
	STR_OPTION("pm_write_block", write_block, "Write chunk",
		   "Bytes per write call (default 512; PostMark: set write)"),
	STR_OPTION("pm_bias_read", bias_read, "Read bias",
		   "Reads per 10 read-or-append halves, -1 for none of either (default 5; PostMark: set bias read)"),
	STR_OPTION("pm_bias_create", bias_create, "Create bias",
		   "Creates per 10 create-or-delete halves, -1 for none of either (default 5; PostMark: set bias create)"),
	STR_OPTION("pm_subdirectories", subdirs, "Subdirectories",
		   "Subdirectories s0..sN-1 per location when above 1 (default 0; PostMark: set subdirectories)"),
	NUM_OPTION("pm_buffering", buffering, "Buffered I/O",
		   "1: the system calls of PostMark's stdio mode; 0: its raw read/write mode (default 1; PostMark: set buffering)", "1"),
	{
		.name	= "pm_report",
		.lname	= "PostMark report",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct pm_options, report),
		.help	= "PostMark-style report to stderr or pm_report_file (default verbose; PostMark: set report)",
		.def	= "verbose",
		.posval	= {
			{ .ival = "verbose", .oval = REP_VERBOSE, .help = "PostMark's verbose report" },
			{ .ival = "terse", .oval = REP_TERSE, .help = "PostMark's one-line report" },
			{ .ival = "none", .oval = REP_NONE, .help = "No report" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	STR_OPTION("pm_report_file", report_file, "Report file",
		   "Append the report to this file instead of stderr (PostMark: run FILE)"),
	NUM_OPTION("pm_whole_seconds", whole_seconds, "PostMark's timing",
		   "1: the report uses PostMark's whole-second time() arithmetic exactly; 0: nanosecond timing (default 0)", "0"),
	NUM_OPTION("pm_space_check", space_check, "Check the room first",
		   "Refuse a run whose pool, at its fullest, needs more bytes or inodes than its locations have free, before making any file (0: on compressing or thin-provisioned file systems) (default 1)", "1"),
	{
		.name	= "pm_fsync",
		.lname	= "fsync policy",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct pm_options, fsync),
		.help	= "When to fsync (default none, as PostMark)",
		.def	= "none",
		.posval	= {
			{ .ival = "none", .oval = PMF_NONE, .help = "Never (PostMark)" },
			{ .ival = "create", .oval = PMF_CREATE, .help = "Each created file before its close" },
			{ .ival = "append", .oval = PMF_APPEND, .help = "Each appended file before its close" },
			{ .ival = "write", .oval = PMF_WRITE, .help = "Each created or appended file" },
			{ .ival = "transaction", .oval = PMF_TRANSACTION,
			  .help = "At the end of each transaction: the files it wrote and the directories it changed" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "pm_io_api",
		.lname	= "System call interface",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct pm_options, io_api),
		.help	= "sync: PostMark's exact system calls, one operation at a time (default); io_uring: iodepth operations in flight, each one's calls as io_uring requests - the same operations, files, bytes and counters, but NOT PostMark's system calls (no fstat/lseek, explicit offsets)",
		.def	= "sync",
		.posval	= {
			{ .ival = "sync", .oval = API_SYNC, .help = "PostMark's system calls, one operation at a time" },
			{ .ival = "io_uring", .oval = API_IO_URING,
			  .help = "io_uring, up to iodepth independent operations in flight (not PostMark's system calls)" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	STR_OPTION("pm_file_size_dist", size_dist, "File size distribution",
		   "Beyond PostMark: sizes of created files from a distribution (as file_size_dist of the smallfile engine: 4k, uniform:A:B, lognormal:M:S[:MAX], hist:FILE); appends still stop at pm_size_high"),
	STR_OPTION("pm_file_content", content, "File content",
		   "postmark (PostMark's printable text, default), random, zero or compressible:PCT"),
	STR_OPTION("pm_opstats_file", opstats_file, "Per-operation statistics file",
		   "Append a JSON line per job: counts, bytes and latency percentiles per operation and per transaction, PostMark's counters"),
	{
		.name	= NULL,
	},
};

static struct ioengine_ops ioengine = {
	.name			= ENGINE,
	.version		= FIO_IOOPS_VERSION,
	/*
	 * FIO_SYNCIO is set per job by ->init in sync mode; in io_uring mode
	 * ->queue sets issue_time (a TX_END's is its transaction's start)
	 */
	.flags			= FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL |
				  PACK_ASYNCIO_SETS_ISSUE_TIME,
	.init			= pm_init,
	.setup			= pm_setup,
	.prep			= pm_prep,
	.queue			= pm_queue,
	.commit			= pm_commit,
	.getevents		= pm_getevents,
	.event			= pm_event,
	.cleanup		= pm_cleanup,
	.open_file		= pack_file_noop,
	.close_file		= pack_file_noop,
	.get_file_size		= pack_file_noop,
	.invalidate		= pack_file_noop,
	.unlink_file		= pack_file_noop,
	.options		= options,
	.option_struct_size	= sizeof(struct pm_options),
};

PACK_EXPORT_ENGINE(ioengine)
