/*
 * smallfile: an external fio engine that serves a tree of small files.
 *
 * One fio I/O is one whole file operation (open, read to EOF, close; or
 * create and write whole; stat; append; unlink; maildir delivery), timed as
 * one operation. fio chooses *which* file through its own offset machinery:
 * the engine presents the tree as one virtual file of tree_files slots of
 * `bs` bytes each, and file i is the slot at offset i*bs. So rw=randread,
 * random_distribution=zipf:1.1, randseed, rw=read (sequential) all work the
 * way fio users know, and `bs` doubles as the read/write chunk size.
 *
 * Accounting: fio's IOPS are file operations per second and its byte counts
 * are the bytes that were really read or written (a stat or delete moves 0
 * bytes). Directions: read and stat -> "read"; create, append, deliver and
 * layout -> "write"; delete -> "trim". Per-operation counts go to
 * opstats_file as JSON lines for scripts.
 *
 * Paths and sizes come from (tree parameters, seed, i) - see lib/tree.h and
 * lib/sizedist.h - so the engine keeps no per-file state and can describe a
 * 400-million-file tree.
 *
 * Run: fio --ioengine=external:build/smallfile.so --tree_dir=/mnt/x ...
 *      fio --enghelp=$PWD/build/smallfile.so  lists the options.
 */
#include "sfengine.h"

static const enum fio_ddir op_ddir[FOP_NR] = {
	[FOP_READ]	= DDIR_READ,
	[FOP_STAT]	= DDIR_READ,
	[FOP_CREATE]	= DDIR_WRITE,
	[FOP_APPEND]	= DDIR_WRITE,
	[FOP_DELETE]	= DDIR_TRIM,
	[FOP_DELIVER]	= DDIR_WRITE,
	[FOP_LAYOUT]	= DDIR_WRITE,
};

static struct ioengine_ops ioengine;

/* ------------------------------------------------------------------ */
/* fio hooks                                                           */
/* ------------------------------------------------------------------ */

static void finish_io_u(struct sf_data *sd, struct sf_req *rq)
{
	struct io_u *io_u = rq->io_u;

	sf_close_dirs(rq);
	sf_account(sd, rq);
	if (rq->err) {
		const char *shown =
			rq->op == FOP_DELIVER && rq->step < US_RENAME ? rq->tmp : rq->path;

		if (rq->probes > sd->o->probe_limit)
			sf_report_probe_failure(sd, rq, rq->err);
		else if (rq->err == EOPNOTSUPP)
			pack_log_err(
				"smallfile: direct=1: the file system of %s does not support O_DIRECT\n",
				sd->root);
		else if (!pack_ioq_said(&sd->ioq, rq->err)) /* io_uring_submit's, said */
			pack_log_err("smallfile: %s %s/%s: %s\n", file_op_name(rq->op), sd->root,
				     shown, rq->refused ? rq->refused : strerror(rq->err));
		io_u->error = rq->err;
	}
	/* fio counts xfer_buflen - resid as the bytes moved */
	io_u->xfer_buflen = rq->bytes;
	io_u->resid = 0;
}

static int sf_prep(struct thread_data *td, struct io_u *io_u)
{
	struct sf_data *sd = td->io_ops_data;
	struct sf_req *rq = io_u->engine_data;
	enum file_op op = sd->single;

	if (op == FOP_NR)
		op = op_mix_pick(&sd->mix, (uint32_t)(sf_next_rand(sd) >> 32));
	memset(&rq->op, 0, offsetof(struct sf_req, stx) - offsetof(struct sf_req, op));
	rq->op = op;
	rq->fd = -1;
	rq->dirfd = -1;
	rq->dirfd2 = -1;
	rq->slot = sd->slot_base + io_u->offset / sd->chunk;
	if (rq->slot >= sd->shape.nfiles)
		rq->slot %= sd->shape.nfiles;
	sf_set_paths(sd, rq);
	/*
	 * The operation, not fio's rw=, decides the direction it is reported
	 * in. fio asserts that a job only issues directions its rw= allows, so
	 * allow this one until ->queue; leaving the bits set would turn e.g.
	 * write+trim into fio's trimwrite offset pairing for the next I/O.
	 */
	io_u->ddir = op_ddir[op];
	pack_ddir_allow(td, io_u->ddir, &sd->saved_td_ddir);
	return 0;
}

/*
 * Ends the job once its budget of operations is issued, the way fio ends a
 * time_based job at its runtime: operations in flight still complete and
 * are counted (td->done would drop them).
 */
static void count_issue(struct thread_data *td, struct sf_data *sd)
{
	if (sd->budget && ++sd->issued >= sd->budget)
		fio_mark_td_terminate(td);
}

static enum fio_q_status sf_queue(struct thread_data *td, struct io_u *io_u)
{
	struct sf_data *sd = td->io_ops_data;
	struct sf_req *rq = io_u->engine_data;
	int ret;

	pack_ddir_restore(td, sd->saved_td_ddir);
	count_issue(td, sd);
	/*
	 * An operation's latency is on fio's clock, from fio's issue time:
	 * in sync mode fio has just stamped it (FIO_SYNCIO) unless the job
	 * turned fio's latencies off; io_uring mode stamps it here
	 * (PACK_ASYNCIO_SETS_ISSUE_TIME). One clock reading an operation,
	 * not two, and where fio reads the CPU's time stamp counter a few
	 * nanoseconds, not a clock_gettime().
	 */
	if (sd->o->io_api == API_IO_URING || !fio_fill_issue_time(td))
		fio_gettime(&io_u->issue_time, NULL);
	rq->start = io_u->issue_time;
	if (!sd->issued_any) {
		sd->issued_any = 1;
		sd->t_first = rq->start;
	}

	if (sd->o->io_api == API_IO_URING) {
		rq->step = sf_first_step(rq->op);
		if (sf_uring_prep_step(sd, rq)) {
			finish_io_u(sd, rq);
			return pack_ioq_done_in_queue(td, &sd->ioq, io_u);
		}
		pack_ioq_queued(&sd->ioq, io_u);
		return FIO_Q_QUEUED;
	}

	ret = sf_run_sync(sd, rq);
	if (ret < 0)
		rq->err = -ret;
	finish_io_u(sd, rq);
	return FIO_Q_COMPLETED;
}

static int sf_commit(struct thread_data *td)
{
	struct sf_data *sd = td->io_ops_data;

	if (sd->o->io_api != API_IO_URING)
		return 0;
	/*
	 * At iodepth 1 the queue is full after every ->queue, so fio's next
	 * call is ->getevents, which waits: the SQEs go in with that wait, one
	 * io_uring_enter instead of a submit here and a wait there. What
	 * cannot be submitted fails its operation (pack_ioq_submit).
	 */
	if (!sd->submit_in_wait)
		pack_ioq_submit(&sd->ioq, 0);
	/* fio's submit accounting is per io_u (file operation), not per SQE */
	pack_ioq_commit(td, &sd->ioq);
	return 0;
}

/* A completion (pack_ioq_reap), or an SQE given up (pack_ioq_submit). */
static void sf_uring_cqe(void *data, void *user_data, int res)
{
	struct sf_data *sd = data;
	struct sf_req *rq;

	sd->inring--;
	if (sf_uring_complete(sd, user_data, res, &rq)) {
		finish_io_u(sd, rq);
		/* fio before 3.31 stamped its own after ->queue */
		rq->io_u->issue_time = rq->start;
		pack_ioq_completed(&sd->ioq, rq->io_u);
	}
}

static int sf_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			const struct timespec *t)
{
	struct sf_data *sd = td->io_ops_data;

	pack_ioq_forget_returned(&sd->ioq);
	while (sd->ioq.ndone < min || (sd->ioq.ndone == 0 && min == 0)) {
		struct io_uring_cqe *cqe;
		int ret;

		if (sd->ioq.ndone >= min) { /* min 0: what there is, without waiting */
			pack_ioq_submit(&sd->ioq, 0);
			pack_ioq_reap(&sd->ioq);
			break;
		}
		/*
		 * One system call submits the next steps and waits; whatever is
		 * counted in the ring is then in the kernel (pack_ioq_submit
		 * leaves nothing unsubmitted), so a wait has something to wait for.
		 */
		if (pack_ioq_unsubmitted(&sd->ioq))
			pack_ioq_submit(&sd->ioq, 1);
		if (!pack_ioq_reap(&sd->ioq) && sd->ioq.ndone < min) {
			if (!sd->inring)
				break; /* cannot be: fio waits only for what it queued */
			ret = io_uring_wait_cqe(&sd->ring, &cqe);
			if (ret && ret != -EINTR)
				return ret;
		}
	}
	pack_ioq_submit(&sd->ioq, 0);
	return pack_ioq_hand_out(&sd->ioq, max);
}

static struct io_u *sf_event(struct thread_data *td, int event)
{
	struct sf_data *sd = td->io_ops_data;

	return pack_ioq_event(&sd->ioq, event);
}

static int sf_io_u_init(struct thread_data *td, struct io_u *io_u)
{
	struct sf_req *rq = calloc(1, sizeof(*rq));

	if (!rq)
		return 1;
	rq->io_u = io_u;
	rq->idx = io_u->index;
	io_u->engine_data = rq;
	return 0;
}

static void sf_io_u_free(struct thread_data *td, struct io_u *io_u)
{
	free(io_u->engine_data);
	io_u->engine_data = NULL;
}

/* A plain decimal count; empty (an unset ${VAR} in a job file) means @def. */
static int parse_count(const char *s, uint64_t def, uint64_t *out)
{
	char *end;

	if (!s || !*s) {
		*out = def;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

/*
 * The numeric options, each within its range (fioglue.h, PACK_NUM):
 * fio's own FIO_OPT_INT would store tree_probe_limit=-1 as 4294967295 (a
 * job probing for hours on an emptied tree).
 */
/* clang-format off */
#define SF_NUM(oname, field, lo, hi)	PACK_NUM(struct sf_options, oname, field, lo, hi)

static const struct pack_num_option sf_num_options[] = {
	SF_NUM("tree_fanout",		tree_fanout,	  1, UINT32_MAX),
	SF_NUM("tree_depth",		tree_depth,	  0, UINT32_MAX),
	SF_NUM("tree_files_per_dir",	files_per_dir,	  0, UINT64_MAX),
	SF_NUM("tree_maildir",		tree_maildir,	  0, 1),
	SF_NUM("tree_space_check",	tree_space_check, 0, 1),
	SF_NUM("tree_drop_cache",	file_drop_cache,  0, 1),
	SF_NUM("tree_seed",		tree_seed,	  0, UINT64_MAX),
	SF_NUM("tree_dir_sync",		dir_sync,	  0, 1),
	/* each try is a system call: a million is seconds, not hours */
	SF_NUM("tree_probe_limit",	probe_limit,	  1, 1000000),
};
/* clang-format on */

static struct fio_option options[];

static int parse_sf_options(struct thread_data *td, struct sf_data *sd)
{
	struct sf_options *o = sd->o;
	unsigned long long bs = td->o.bs[DDIR_READ];
	char err[ERRLEN];
	uint64_t nfiles;

	if (pack_parse_num_options(sf_num_options,
				   sizeof(sf_num_options) / sizeof(sf_num_options[0]), options, o,
				   err, sizeof(err)))
		goto bad;
	if (parse_count(o->tree_files, DEFAULT_TREE_FILES, &nfiles)) {
		snprintf(err, sizeof(err), "tree_files '%s' is not a number", o->tree_files);
		goto bad;
	}
	if (nfiles > tree_max_files(bs)) {
		snprintf(
			err, sizeof(err),
			"tree_files=%llu is more than a job can address with bs=%llu: at most %llu (fio sees the tree as one file of tree_files x bs bytes, below 2^63)",
			(unsigned long long)nfiles, bs, (unsigned long long)tree_max_files(bs));
		goto bad;
	}
	if (tree_shape_init(&sd->shape, nfiles, o->tree_fanout, o->tree_depth,
			    o->files_per_dir, o->tree_maildir, err, sizeof(err)))
		goto bad;
	if (size_dist_parse(&sd->sizes, o->file_size_dist, "tree_file_size_dist", err, sizeof(err)))
		goto bad;
	sd->size_max = size_dist_max(&sd->sizes);
	if (size_dist_parse(&sd->appends, o->append_size, "tree_append_size", err, sizeof(err)))
		goto bad;
	if (content_parse(&sd->content, o->file_content, "tree_file_content", err, sizeof(err)))
		goto bad;
	if (op_mix_parse(&sd->mix, o->file_op, "tree_file_op", err, sizeof(err)))
		goto bad;
	sd->single = op_mix_single(&sd->mix);
	if (sd->mix.weight[FOP_DELIVER] && !sd->shape.maildir) {
		snprintf(err, sizeof(err), "tree_file_op: deliver needs tree_maildir=1");
		goto bad;
	}
	return 0;
bad:
	pack_log_err("smallfile: %s\n", err);
	return 1;
}

static int check_fio_options(struct thread_data *td, struct sf_data *sd)
{
	struct thread_options *to = &td->o;
	int i;

	for (i = 0; i < DDIR_RWDIR_CNT; i++) {
		if (to->min_bs[i] != to->max_bs[i] || to->bs[i] != to->bs[DDIR_READ]) {
			pack_log_err(
				"smallfile: bs must be one fixed size for all directions (it is the read/write chunk)\n");
			return 1;
		}
	}
	if (fio_option_is_set(to, size) || fio_option_is_set(to, io_size)) {
		pack_log_err(
			"smallfile: size= and io_size= do not apply to file operations; a job does one pass over its files, or use number_ios=, loops= or time_based with runtime=\n");
		return 1;
	}
	if (to->nr_files > 1) {
		pack_log_err(
			"smallfile: nrfiles must be 1 (the tree is the file; use tree_files)\n");
		return 1;
	}
	if (to->verify != 0) {
		pack_log_err("smallfile: verify= is not supported by this engine\n");
		return 1;
	}
	return 0;
}

/* numjobs clones of a layout job split the tree between them. */
static int job_share(struct thread_data *td, struct sf_data *sd)
{
	uint64_t n = sd->shape.nfiles;
	unsigned k = td->subjob_number, j = pack_clone_count(td);

	sd->slot_base = 0;
	sd->slot_count = n;
	if (op_mix_single(&sd->mix) != FOP_LAYOUT || j <= 1)
		return 0;
	tree_share(n, k, j, &sd->slot_base, &sd->slot_count);
	if (!sd->slot_count) {
		/* every idle clone would say it again; clones run as threads share it */
		static int said;

		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			pack_log_err("smallfile: numjobs=%llu exceeds tree_files=%llu\n",
				     (unsigned long long)j, (unsigned long long)n);
		return 1;
	}
	return 0;
}

static int sf_init(struct thread_data *td)
{
	struct sf_data *sd;
	struct thread_options *to = &td->o;
	uint64_t passes;

	if (pack_check_host_fio(td, "smallfile", &ioengine))
		return 1;
	sd = calloc(1, sizeof(*sd));
	if (!sd)
		return 1;
	td->io_ops_data = sd;
	sd->rootfd = -1;
	sd->pfd = -1;
	sd->o = td->eo;
	if (parse_sf_options(td, sd) || check_fio_options(td, sd))
		return 1;
	if (sf_check_opstats_file(sd))
		return 1;

	sd->chunk = to->bs[DDIR_READ];
	sd->direct = to->odirect;
	sd->seed = sd->o->tree_seed;
	sd->writer = td->thread_number;
	sd->rng = mix64(to->rand_seed ^ ((uint64_t)td->thread_number << 32)) | 1;

	if (job_share(td, sd))
		return 1;

	/*
	 * fio would stop a job after size= bytes; our bytes per operation are
	 * the files' real sizes, so the engine counts operations instead: one
	 * pass over the job's files (times loops=), number_ios=, or the
	 * runtime when the user asked for time_based. fio itself then runs
	 * "time based" and the engine ends the job when its budget is spent.
	 */
	passes = to->loops ? to->loops : 1;
	if (to->number_ios)
		sd->budget = to->number_ios;
	else if (to->time_based)
		sd->budget = 0;
	else if (sd->slot_count > UINT64_MAX / passes)
		sd->budget = UINT64_MAX; /* not 0, which means "until runtime" */
	else
		sd->budget = sd->slot_count * passes;
	to->time_based = 1;

	if (sf_open_tree(td, sd))
		return 1;

	if (content_pool_init(&sd->pool, &sd->content, sd->seed, sd->chunk)) {
		pack_log_err("smallfile: out of memory for the content pool\n");
		return 1;
	}
	if (sd->o->io_api == API_IO_URING) {
		unsigned depth = to->iodepth ? to->iodepth : 1;
		/* DEFER_TASKRUN, else COOP_TASKRUN: see pack_uring_queue_init */
		int ret = pack_uring_queue_init(depth * 2 < 8 ? 8 : depth * 2, &sd->ring);

		if (ret) {
			pack_log_err("smallfile: tree_io_api=io_uring: io_uring_queue_init: %s\n",
				     strerror(-ret));
			return 1;
		}
		sd->ring_ok = 1;
		sd->submit_in_wait = depth == 1;
		if (pack_ioq_init(&sd->ioq, 2 * depth + 8) ||
		    pack_ioq_attach(&sd->ioq, &sd->ring, "smallfile", sf_uring_cqe, sd)) {
			pack_log_err("smallfile: out of memory for the io_uring queue\n");
			return 1;
		}
	} else {
		to->iodepth = 1;
		/*
		 * One operation at a time: tell fio so, or it would stamp the
		 * issue time after ->queue returned and see zero latency.
		 */
		pack_engine_flag_set(td, FIO_SYNCIO);
	}
	return 0;
}

/*
 * The whole tree appears to fio as one file of slot_count slots of bs bytes.
 * fio calls ->setup before ->init (in the parent, with create_serialize), so
 * the share is computed from the options here and again in init.
 */
static int sf_setup(struct thread_data *td)
{
	struct sf_data tmp = { 0 };
	struct fio_file *f;
	unsigned i;
	int ret;

	if (pack_check_host_fio(td, "smallfile", &ioengine)) /* before td->eo is read */
		return 1;
	tmp.o = td->eo;
	ret = parse_sf_options(td, &tmp);
	if (!ret)
		ret = job_share(td, &tmp);
	size_dist_free(&tmp.sizes);
	size_dist_free(&tmp.appends);
	if (ret)
		return 1;
	for_each_file(td, f, i) {
		f->real_file_size = tmp.slot_count * td->o.bs[DDIR_READ];
		fio_file_set_size_known(f);
	}
	return 0;
}

static void sf_cleanup(struct thread_data *td)
{
	struct sf_data *sd = td->io_ops_data;

	if (!sd)
		return;
	if (td->io_ops_init) {
		pack_fix_runtimes(td, sd->issued_any ?
				  (sf_ns_between(&sd->t_first, &sd->t_last) + 999999) / 1000000 : 0);
		sf_write_opstats(td, sd);
		sf_say_passes(td, sd);
	}
	if (sd->ring_ok)
		io_uring_queue_exit(&sd->ring);
	pack_ioq_free(&sd->ioq);
	if (sd->pfd >= 0)
		close(sd->pfd);
	if (sd->rootfd >= 0)
		close(sd->rootfd);
	content_pool_free(&sd->pool);
	size_dist_free(&sd->sizes);
	size_dist_free(&sd->appends);
	free(sd);
	td->io_ops_data = NULL;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

/*
 * tree_dir, tree_files and opstats_file accept an empty value, so that a
 * job file can say tree_dir=${SMALLFILE_DIR} and mean "the default" when
 * the variable is unset (fio substitutes an empty string). fio's string
 * options reject empty values; an option of type FIO_OPT_STR without
 * possible values hands the raw (possibly NULL) string to a callback.
 */
PACK_STR_OPT(struct sf_options, tree_dir)
PACK_STR_OPT(struct sf_options, tree_files)
PACK_STR_OPT(struct sf_options, opstats_file)

/* A numeric option's text (sf_num_options reads it at init). */
#define SF_NUM_TEXT(field) PACK_NUM_OPT(struct sf_options, field)
SF_NUM_TEXT(tree_fanout)
SF_NUM_TEXT(tree_depth)
SF_NUM_TEXT(files_per_dir)
SF_NUM_TEXT(tree_maildir)
SF_NUM_TEXT(tree_space_check)
SF_NUM_TEXT(file_drop_cache)
SF_NUM_TEXT(tree_seed)
SF_NUM_TEXT(dir_sync)
SF_NUM_TEXT(probe_limit)

static struct fio_option options[] = {
	{
		.name	= "tree_dir",
		.lname	= "Tree root directory",
		.type	= FIO_OPT_STR,
		.cb	= str_opt_tree_dir,
		.off1	= offsetof(struct sf_options, tree_dir),
		.help	= "Existing directory holding the tree (empty or a tree of ours); unset: a private directory under $TMPDIR",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_files",
		.lname	= "Number of files",
		.type	= FIO_OPT_STR,
		.cb	= str_opt_tree_files,
		.off1	= offsetof(struct sf_options, tree_files),
		.help	= "Number of files in the tree (empty: 10000, so job files can take it from ${ENV})",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_fanout",
		.lname	= "Directory fanout",
		.type	= FIO_OPT_STR,
		.cb	= num_opt_tree_fanout,
		.off1	= offsetof(struct sf_options, tree_fanout_text),
		.help	= "Subdirectories per directory (default 32)",
		.def	= "32",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_depth",
		.lname	= "Directory depth",
		.type	= FIO_OPT_STR,
		.cb	= num_opt_tree_depth,
		.off1	= offsetof(struct sf_options, tree_depth_text),
		.help	= "Directory levels below the root (used when tree_files_per_dir=0) (default 2)",
		.def	= "2",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_files_per_dir",
		.alias	= "files_per_dir",	/* the old name, until the next release */
		.lname	= "Files per leaf directory",
		.type	= FIO_OPT_STR,
		.cb	= num_opt_files_per_dir,
		.off1	= offsetof(struct sf_options, files_per_dir_text),
		.help	= "Files per leaf directory; the depth follows from it (0: use tree_depth) (default 0)",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_maildir",
		.lname	= "Maildir layout",
		.type	= FIO_OPT_STR,
		.cb	= num_opt_tree_maildir,
		.off1	= offsetof(struct sf_options, tree_maildir_text),
		.help	= "Each leaf is a maildir (tmp/ new/ cur/); files live in new/ (needed by deliver) (default 0)",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_space_check",
		.lname	= "Check the room before a layout",
		.type	= FIO_OPT_STR,
		.cb	= num_opt_tree_space_check,
		.off1	= offsetof(struct sf_options, tree_space_check_text),
		.help	= "Refuse a layout whose bytes or inodes exceed the file system's free ones, before writing (0: on compressing or thin-provisioned file systems) (default 1)",
		.def	= "1",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_drop_cache",
		.alias	= "file_drop_cache",	/* the old name, until the next release */
		.lname	= "Drop each file from the page cache after reading it",
		.type	= FIO_OPT_STR,
		.cb	= num_opt_file_drop_cache,
		.off1	= offsetof(struct sf_options, file_drop_cache_text),
		.help	= "After each whole-file read, posix_fadvise(DONTNEED) its data so no read is served from the page cache (inodes, dentries and directory blocks stay cached) (default 0)",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_file_size_dist",
		.alias	= "file_size_dist",	/* the old name, until the next release */
		.lname	= "File size distribution",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct sf_options, file_size_dist),
		.help	= "4k | fixed:4k | uniform:LOW:HIGH | lognormal:MEDIAN:SIGMA[:MAX] | hist:FILE (lines 'LOW HIGH WEIGHT' or 'SIZE WEIGHT') (default fixed:4k)",
		.def	= "fixed:4k",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_file_content",
		.alias	= "file_content",	/* the old name, until the next release */
		.lname	= "File content",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct sf_options, file_content),
		.help	= "What written files contain: random | zero | compressible:PCT (default random)",
		.def	= "random",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_seed",
		.lname	= "Tree seed",
		.type	= FIO_OPT_STR,
		.cb	= num_opt_tree_seed,
		.off1	= offsetof(struct sf_options, tree_seed_text),
		.help	= "Seed of file sizes and contents (part of the tree's identity; randseed= drives file choice) (default 1)",
		.def	= "1",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_file_op",
		.alias	= "file_op",	/* the old name, until the next release */
		.lname	= "File operation",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct sf_options, file_op),
		.help	= "layout | read | stat | create | append | delete | deliver, or a mix 'read:60,deliver:30,delete:10' (default read)",
		.def	= "read",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_append_size",
		.alias	= "append_size",	/* the old name, until the next release */
		.lname	= "Append size",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct sf_options, append_size),
		.help	= "Bytes written by one append (a size distribution like tree_file_size_dist) (default fixed:4k)",
		.def	= "fixed:4k",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_file_sync",
		.alias	= "file_sync",	/* the old name, until the next release */
		.lname	= "Per-file durability",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct sf_options, file_sync),
		.help	= "none | fsync | fdatasync: sync each written file before close (default none)",
		.def	= "none",
		.posval	= {
			{ .ival = "none", .oval = FSYNC_NONE, .help = "No sync" },
			{ .ival = "fsync", .oval = FSYNC_FSYNC, .help = "fsync(2) each file" },
			{ .ival = "fdatasync", .oval = FSYNC_FDATASYNC, .help = "fdatasync(2) each file" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_dir_sync",
		.alias	= "dir_sync",	/* the old name, until the next release */
		.lname	= "Directory sync",
		.type	= FIO_OPT_STR,
		.cb	= num_opt_dir_sync,
		.off1	= offsetof(struct sf_options, dir_sync_text),
		.help	= "fsync the directory after a create, delivery rename or unlink (durable names) (default 0)",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_io_api",
		.alias	= "io_api",	/* the old name, until the next release */
		.lname	= "System call interface",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct sf_options, io_api),
		.help	= "sync | io_uring (iodepth operations in flight): how file operations are issued (default sync)",
		.def	= "sync",
		.posval	= {
			{ .ival = "sync", .oval = API_SYNC, .help = "Plain system calls, one operation at a time" },
			{ .ival = "io_uring", .oval = API_IO_URING, .help = "io_uring, iodepth operations in flight" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_probe_limit",
		.alias	= "probe_limit",	/* the old name, until the next release */
		.lname	= "Probe limit",
		.type	= FIO_OPT_STR,
		.cb	= num_opt_probe_limit,
		.off1	= offsetof(struct sf_options, probe_limit_text),
		.help	= "Other random slots tried when the chosen file is absent (read/stat/append/delete) or present (create) (default 64)",
		.def	= "64",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_opstats_file",
		.alias	= "opstats_file",	/* the old name, until the next release */
		.lname	= "Per-operation statistics file",
		.type	= FIO_OPT_STR,
		.cb	= str_opt_opstats_file,
		.off1	= offsetof(struct sf_options, opstats_file),
		.help	= "Append one JSON line per job with per-operation counts, bytes, probes and latencies",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= NULL,
	},
};

static struct ioengine_ops ioengine = {
	.name			= "smallfile",
	.version		= FIO_IOOPS_VERSION,
	/* FIO_SYNCIO is set per job by ->init in sync mode; in io_uring mode ->queue sets issue_time */
	.flags			= FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL |
				  PACK_ASYNCIO_SETS_ISSUE_TIME,
	.init			= sf_init,
	.setup			= sf_setup,
	.prep			= sf_prep,
	.queue			= sf_queue,
	.commit			= sf_commit,
	.getevents		= sf_getevents,
	.event			= sf_event,
	.cleanup		= sf_cleanup,
	.open_file		= pack_file_noop,
	.close_file		= pack_file_noop,
	.get_file_size		= pack_file_noop,
	.invalidate		= pack_file_noop,
	.unlink_file		= pack_file_noop,
	.io_u_init		= sf_io_u_init,
	.io_u_free		= sf_io_u_free,
	.options		= options,
	.option_struct_size	= sizeof(struct sf_options),
};

PACK_EXPORT_ENGINE(ioengine)
