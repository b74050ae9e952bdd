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
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <dirent.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <liburing.h>

#include "fio.h"
#include "optgroup.h"
#include "fioglue.h"
#include "ioq.h"

#include "postmark.h"
#include "stdiosim.h"
#include "sizedist.h"
#include "content.h"
#include "units.h"
#include "rng.h"
#include "errmsg.h"
#include "sysutil.h"
#include "lathist.h"
#include "jsonl.h"
#include "pmroom.h"

#define ENGINE		"postmark"
#define MARKER_NAME	".fio-postmark"
#define MARKER_TEXT	"fio postmark engine: files named by numbers and s<N>/ directories here are the engine's\n"
#define MAX_DIRFDS	512	/* subdirectory descriptors kept open per job */
#define ERRLEN		512

enum fsync_policy {
	PMF_NONE,
	PMF_CREATE,
	PMF_APPEND,
	PMF_WRITE,		/* create and append */
	PMF_TRANSACTION,
};

enum io_api {
	API_SYNC,
	API_IO_URING,
};

enum report_opt {
	REP_VERBOSE,
	REP_TERSE,
	REP_NONE,
};

/* Operation classes for statistics. */
enum op_class {
	OC_CREATE,
	OC_READ,
	OC_APPEND,
	OC_DELETE,
	OC_TRANSACTION,
	OC_NR,
};

static const char *const class_names[OC_NR] = {
	"create", "read", "append", "delete", "transaction",
};

/* ioprio values that tell creates from appends in fio's write statistics */
#define PRIO_CREATE	1
#define PRIO_APPEND	2

struct pm_options {
	void *pad;			/* fio: off1 == 0 means "unset" */
	char *location;
	char *size_low;
	char *size_high;
	char *number;
	char *transactions;
	char *seed;
	char *read_block;
	char *write_block;
	char *bias_read;
	char *bias_create;
	char *subdirs;
	char *report_file;
	char *size_dist;
	char *content;
	char *opstats_file;
	unsigned int buffering;
	unsigned int report;
	unsigned int whole_seconds;
	unsigned int fsync;
	unsigned int io_api;
	unsigned int space_check;
};

struct class_stats {
	uint64_t ops, bytes, errors;
	struct lathist lat;
};

/* A directory files go into: a location, or this job's directory in it. */
struct pool {
	char path[PATH_MAX];
	int fd;
	int alias;		/* same directory as an earlier pool: shares its fd */
	int made;		/* the engine created this directory */
	int marked;		/* the engine's marker is in it */
	int subdirs_made;
	size_t bufsize;		/* io_uring: stdio's buffer size here (st_blksize) */
};

/* Transaction-policy fsync: files and directories written in this transaction. */
struct deferred {
	int fd[2];
	int nfd;
	int dirfd[2];
	int dirown[2];		/* opened for the operation (no descriptor kept): closed here */
	int ndir;
};

/* pm_io_api=io_uring: where a request is in its sequence of system calls. */
enum uring_step {
	US_OPEN,
	US_READ,
	US_WRITE,
	US_FSYNC,
	US_CLOSE,
	US_UNLINK,
	US_TX_FSYNC,		/* transaction end: a file it wrote */
	US_TX_CLOSE,
	US_TX_DIRFSYNC,		/* a directory it changed */
	US_TX_DIRCLOSE,
};

struct pm_req;

/* io_uring: a transaction from its TX_BEGIN to the completion of its TX_END. */
struct pm_tx {
	int tx;			/* -1: free */
	int ops_left;		/* its operations issued and not completed */
	int started;
	uint64_t start_ns;
	struct timespec start_ts;	/* fio's clock */
	struct pm_req *end;	/* its TX_END, once queued */
	/* pm_fsync=transaction: descriptors handed over by its operations */
	int fd[2];
	int nfd;
	int dirfd[2];
	int dirown[2];		/* opened for the operation: closed after the fsync */
	int ndir;
};

/* io_uring: one io_u the engine has not completed: a file operation or a TX_END. */
struct pm_req {
	struct io_u *io_u;
	struct pm_req *next_free;
	int busy;
	int is_end;
	struct pm_op op;
	struct pm_tx *tx;	/* NULL outside transactions */
	enum uring_step step;
	int idx;		/* TX_END: deferred file (then directory) being synced */
	int pool;		/* the file: pool (aliases resolved), op.subdir, op.name */
	int dfd, dfd_tmp;	/* its directory; dfd_tmp: opened for this operation */
	int fd;
	char name[16];
	uint64_t key;		/* content key */
	uint64_t start_ns;
	struct timespec issue_ts;	/* its io_u's issue_time (fio's clock) */
	uint64_t bytes;
	int err;
	/* the read(2)/write(2) calls still to make */
	int remaining;		/* bytes of PostMark's fread/fwrite calls not begun */
	int loop_done, gen_done;
	uint64_t gpos;		/* raw mode: stream offset of the next chunk */
	struct stdiosim_w w;
	struct stdiosim_range r[2];
	int nr, ri;
	uint64_t cur_off;	/* the write in progress: stream offset and bytes to go */
	size_t cur_len;
	struct stdiosim_r rd;
	int in_fread, tobuf;
	size_t rlen;		/* the read in progress */
	unsigned char *wbuf;	/* generated content (not PostMark's text) */
};

struct pm_data {
	struct pm_options *o;
	struct pm_config cfg;
	struct pm_sim *sim;
	char *text;			/* PostMark's text, extended for wrap-around */
	size_t textlen;
	struct content_spec content;
	int postmark_content;		/* 1: PostMark's own text */
	struct content_pool pool_content;
	struct size_dist sizes;
	int have_sizes;
	int time_based_run;		/* transactions until runtime=, not pm_transactions */
	unsigned char *wbuf;		/* generated content for one write */
	size_t wmax;			/* largest single write */
	char *rbuf;
	size_t rbuflen;

	struct pool pool[PM_MAX_LOCATIONS];
	int npools;
	int tmpdir;			/* pool[0] is a temporary directory of ours */
	int *subfd;			/* npools * subdirs, or NULL: opened per use */

	/* the operation the next io_u carries */
	struct pm_op next;
	int have_next;
	int finished;			/* PHASE(DONE) seen */
	int started;
	int out_of_files;
	uint64_t tx_limit_ns;		/* time-based: length of the transaction phase */
	uint64_t t_ns[4];		/* phase starts, CLOCK_MONOTONIC */
	time_t t_sec[4];		/* the same as time() */
	uint64_t tx_start_ns;
	struct timespec tx_start_ts;
	struct deferred dfr;
	uint64_t table_full, file_full;	/* operations PostMark silently drops */
	uint64_t append_seq;
	unsigned saved_td_ddir;
	int ddir_held;			/* saved_td_ddir is to be restored (a BUSY io_u keeps it) */
	int failed;

	/* pm_io_api=io_uring */
	int uring;
	struct io_uring ring;
	int ring_ok;
	unsigned sqes;			/* SQEs prepared and not yet completed */
	unsigned unsubmitted;
	struct pm_req *reqs;
	struct pm_req *free_reqs;
	int nreqs;
	struct pm_tx *txs;
	int ntxs;
	struct pm_tx *cur_tx;		/* the transaction being issued */
	struct pack_ioq ioq;		/* io_us queued, completed, handed to fio */
	int inflight;			/* io_us (operations and TX_ENDs) not completed */
	int ops_inflight, max_inflight;
	unsigned pending_phases;	/* phase markers passed, stamped when inflight drops to 0 */
	enum pm_phase cur_phase;	/* the phase of the io_us issued */
	int draining;			/* ->cleanup: fio's io_us are gone */
	int stop_on_error;		/* fio ends the job at the first error (no continue_on_error) */

	struct class_stats st[OC_NR];
};

static struct ioengine_ops ioengine;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static void record(struct class_stats *s, uint64_t ns, uint64_t bytes, int err)
{
	s->ops++;
	s->bytes += bytes;
	if (err)
		s->errors++;
	lathist_add(&s->lat, ns);
}

/* The directory descriptor file @op lives in; *@tmp set if it must be closed. */
static int dir_of(struct pm_data *pd, const struct pm_op *op, int *tmp)
{
	int p = op->loc < 0 ? 0 : op->loc;
	char name[32];
	int fd;

	*tmp = 0;
	if (pd->cfg.subdirs <= 1)
		return pd->pool[p].fd;
	if (pd->subfd)
		return pd->subfd[p * pd->cfg.subdirs + op->subdir];
	snprintf(name, sizeof(name), "s%d", op->subdir);
	fd = NOINTR(openat(pd->pool[p].fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	if (fd >= 0)
		*tmp = 1;
	return fd;
}

/* "location/s3/17" for messages. */
static void file_path(struct pm_data *pd, const struct pm_op *op, char *buf, size_t len)
{
	const struct pool *p = &pd->pool[op->loc < 0 ? 0 : op->loc];

	if (pd->cfg.subdirs > 1)
		snprintf(buf, len, "%s/s%d/%d", p->path, op->subdir, op->name);
	else
		snprintf(buf, len, "%s/%d", p->path, op->name);
}

/*
 * The bytes of a created or appended file at stream offset @off: PostMark
 * writes the first bytes of its text (wrapping around, beyond PostMark, for
 * files larger than the text); other content comes from the content pool.
 */
static const void *data_at(struct pm_data *pd, uint64_t key, uint64_t off, size_t len)
{
	if (pd->postmark_content)
		return pd->text + off % (pd->textlen);
	content_fill(&pd->pool_content, &pd->content, pd->cfg.seed, key, off, pd->wbuf, len);
	return pd->wbuf;
}

static int full_write(struct pm_data *pd, int fd, uint64_t key, uint64_t off, size_t len,
		      uint64_t *bytes)
{
	/* PostMark's raw mode really issues its zero-length remainder writes */
	do {
		ssize_t n = write(fd, data_at(pd, key, off, len), len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0 && len)
			return -EIO;
		*bytes += n;
		off += n;
		len -= n;
	} while (len);
	return 0;
}

static ssize_t read_some(int fd, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/*
 * Raw mode: PostMark's read(fd, buf, len) takes the whole chunk for granted.
 * A read may return less before end of file (a signal, NFS, FUSE): read on
 * until the chunk is whole or the file ends. Nothing short: one call, as
 * PostMark makes (its zero-length last read included).
 */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	do {
		n = read_some(fd, (char *)buf + got, len - got);
		if (n < 0)
			return n;
		got += n;
	} while (n > 0 && got < len);
	return got;
}

/* ------------------------------------------------------------------ */
/* PostMark's file operations                                          */
/* ------------------------------------------------------------------ */

/*
 * Writes @size bytes as PostMark's write_blocks()/fwrite_blocks() do: whole
 * write_block chunks, then the remainder (a real zero-length write in raw
 * mode; nothing in buffered mode, where stdio gathers the chunks into
 * buffer-sized writes and flushes the rest at fclose).
 */
static int write_blocks(struct pm_data *pd, int fd, uint64_t key, int size, uint64_t *bytes)
{
	int wb = pd->cfg.write_block, i, k, j, ret;
	uint64_t off = 0;

	if (!pd->cfg.buffered) {
		for (i = size; i >= wb; i -= wb, off += wb) {
			ret = full_write(pd, fd, key, off, wb, bytes);
			if (ret)
				return ret;
		}
		return full_write(pd, fd, key, off, i, bytes);
	} else {
		struct stdiosim_w w = { 0 };
		struct stdiosim_range r[2];
		struct stat st;

		for (i = size; ; i -= wb) {
			size_t n = i >= wb ? (size_t)wb : (size_t)i;

			if (stdiosim_w_needs_alloc(&w, n)) {
				if (fstat(fd, &st))
					return -errno;
				stdiosim_w_alloc(&w, stdiosim_bufsize(st.st_blksize));
			}
			k = stdiosim_fwrite(&w, n, r);
			for (j = 0; j < k; j++) {
				ret = full_write(pd, fd, key, r[j].off, r[j].len, bytes);
				if (ret)
					return ret;
			}
			if (i < wb)
				break;
		}
		if (stdiosim_fclose(&w, r))
			return full_write(pd, fd, key, r[0].off, r[0].len, bytes);
		return 0;
	}
}

/* Reads @size bytes as PostMark's read_file() does, read_block at a time. */
static int read_blocks(struct pm_data *pd, int fd, int size, uint64_t *bytes)
{
	int rb = pd->cfg.read_block, i;
	ssize_t n;

	if (!pd->cfg.buffered) {
		for (i = size; i >= rb; i -= rb) {
			n = read_full(fd, pd->rbuf, rb);
			if (n < 0)
				return n;
			*bytes += n;
		}
		n = read_full(fd, pd->rbuf, i);
		if (n < 0)
			return n;
		*bytes += n;
		return 0;
	} else {
		struct stdiosim_r r = { 0 };
		struct stat st;
		size_t len;
		int tobuf;

		for (i = size; ; i -= rb) {
			size_t want = i >= rb ? (size_t)rb : (size_t)i;

			if (stdiosim_r_needs_alloc(&r, want)) {
				if (fstat(fd, &st))
					return -errno;
				stdiosim_r_alloc(&r, stdiosim_bufsize(st.st_blksize));
			}
			stdiosim_fread_begin(&r, want);
			while (stdiosim_fread_next(&r, &len, &tobuf)) {
				n = read_some(fd, pd->rbuf, len);
				if (n < 0)
					return n;
				*bytes += n;
				stdiosim_fread_done(&r, n, tobuf);
			}
			if (i < rb)
				break;
		}
		return 0;
	}
}

/* fsync per the policy, or keep the descriptor for the transaction's end. */
static int sync_or_defer(struct pm_data *pd, int fd, int is_create)
{
	enum fsync_policy p = pd->o->fsync;

	if (p == PMF_WRITE || (p == PMF_CREATE && is_create) || (p == PMF_APPEND && !is_create))
		return NOINTR(fsync(fd)) ? -errno : 0;
	if (p == PMF_TRANSACTION && pd->next.phase == PM_PHASE_TRANSACTIONS &&
	    pd->dfr.nfd < 2) {
		int d = dup(fd);

		if (d < 0)
			return -errno;
		pd->dfr.fd[pd->dfr.nfd++] = d;
	}
	return 0;
}

/* Returns 1 if it took over @dirfd (@own: a descriptor the caller would close). */
static int defer_dir(struct pm_data *pd, int dirfd, int own)
{
	int i;

	if (pd->o->fsync != PMF_TRANSACTION || pd->next.phase != PM_PHASE_TRANSACTIONS)
		return 0;
	for (i = 0; i < pd->dfr.ndir; i++)
		if (pd->dfr.dirfd[i] == dirfd)
			return 0;
	if (pd->dfr.ndir < 2) {
		pd->dfr.dirown[pd->dfr.ndir] = own;
		pd->dfr.dirfd[pd->dfr.ndir++] = dirfd;
		return own;
	}
	return 0;
}

/* The end of a transaction under pm_fsync=transaction: make it durable. */
static int commit_deferred(struct pm_data *pd)
{
	int i, ret = 0;

	for (i = 0; i < pd->dfr.nfd; i++) {
		if (NOINTR(fsync(pd->dfr.fd[i])) && !ret)
			ret = -errno;
		close(pd->dfr.fd[i]);
	}
	for (i = 0; i < pd->dfr.ndir; i++) {
		if (NOINTR(fsync(pd->dfr.dirfd[i])) && !ret)
			ret = -errno;
		if (pd->dfr.dirown[i])
			close(pd->dfr.dirfd[i]);
	}
	pd->dfr.nfd = pd->dfr.ndir = 0;
	return ret;
}

/*
 * One PostMark operation. Opens are single names relative to a directory
 * the engine owns, with O_NOFOLLOW; creates add O_EXCL, so no file the
 * engine did not create is ever truncated. Otherwise the flags and modes are
 * PostMark's: fopen("w") / open(O_RDWR|O_CREAT, 0644) for creates, fopen("r")
 * / open(O_RDONLY) for reads, fopen("a") (which seeks to the end) /
 * open(O_RDWR|O_APPEND) for appends, remove() for deletes.
 */
static int run_op(struct pm_data *pd, const struct pm_op *op, uint64_t *bytes)
{
	int buffered = pd->cfg.buffered, tmp, dfd, fd, ret = 0, cret;
	char name[16];
	uint64_t key;

	snprintf(name, sizeof(name), "%d", op->name);
	dfd = dir_of(pd, op, &tmp);
	if (dfd < 0)
		return -errno;
	switch (op->kind) {
	case PM_OP_CREATE:
		fd = NOINTR(openat(dfd, name, (buffered ? O_WRONLY | O_TRUNC : O_RDWR) |
				   O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, buffered ? 0666 : 0644));
		if (fd < 0) {
			ret = -errno;
			break;
		}
		key = (uint64_t)op->name;
		ret = write_blocks(pd, fd, key, op->size, bytes);
		if (!ret)
			ret = sync_or_defer(pd, fd, 1);
		cret = close(fd);
		if (!ret && cret)
			ret = -errno;
		if (!ret && defer_dir(pd, dfd, tmp))
			tmp = 0;
		break;
	case PM_OP_READ:
		fd = NOINTR(openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
		if (fd < 0) {
			ret = -errno;
			break;
		}
		ret = read_blocks(pd, fd, op->size, bytes);
		close(fd);
		break;
	case PM_OP_APPEND:
		fd = NOINTR(openat(dfd, name, (buffered ? O_WRONLY | O_CREAT : O_RDWR) | O_APPEND |
				   O_NOFOLLOW | O_CLOEXEC, 0666));
		if (fd < 0) {
			ret = -errno;
			break;
		}
		/* fopen("a") positions the stream at the end */
		if (buffered && lseek(fd, 0, SEEK_END) < 0)
			ret = -errno;
		key = (uint64_t)op->name | ++pd->append_seq << 32;
		if (!ret)
			ret = write_blocks(pd, fd, key, op->size, bytes);
		if (!ret)
			ret = sync_or_defer(pd, fd, 0);
		cret = close(fd);
		if (!ret && cret)
			ret = -errno;
		break;
	case PM_OP_DELETE:
		if (NOINTR(unlinkat(dfd, name, 0)))
			ret = -errno;
		else if (defer_dir(pd, dfd, tmp))
			tmp = 0;
		break;
	default:
		break;
	}
	if (tmp)
		close(dfd);
	return ret;
}

/* ------------------------------------------------------------------ */
/* The operation stream                                                */
/* ------------------------------------------------------------------ */

static void stamp_phase(struct pm_data *pd, enum pm_phase ph)
{
	pd->t_ns[ph] = now_ns();
	pd->t_sec[ph] = time(NULL);
}

/* Time-based runs end the transaction phase at a transaction boundary. */
static void check_tx_limit(struct pm_data *pd)
{
	if (pd->tx_limit_ns && pd->t_ns[PM_PHASE_TRANSACTIONS] &&
	    now_ns() - pd->t_ns[PM_PHASE_TRANSACTIONS] >= pd->tx_limit_ns)
		pm_sim_stop_transactions(pd->sim);
}

/*
 * Moves to the next operation that needs an io_u, handling the markers in
 * between at this moment (just after the previous operation ended, which is
 * where PostMark reads its timers). Operations PostMark drops without a
 * system call are counted and skipped.
 */
static void uring_phase(struct pm_data *pd, enum pm_phase ph);
static void uring_tx_begin(struct pm_data *pd, int tx);

static void advance(struct pm_data *pd, int stamp)
{
	struct pm_op op;

	pd->have_next = 0;
	while (!pd->have_next && pm_sim_next(pd->sim, &op)) {
		if (pd->uring && op.kind == PM_OP_PHASE) {
			/* stamped when the phase's barrier clears */
			if (stamp)
				uring_phase(pd, op.phase);
			continue;
		}
		if (pd->uring && op.kind == PM_OP_TX_BEGIN) {
			/* its start: when its first io_u is issued */
			uring_tx_begin(pd, op.tx);
			continue;
		}
		switch (op.kind) {
		case PM_OP_PHASE:
			if (stamp)
				stamp_phase(pd, op.phase);
			if (op.phase == PM_PHASE_TRANSACTIONS)
				check_tx_limit(pd);
			if (op.phase == PM_PHASE_DONE)
				pd->finished = 1;
			break;
		case PM_OP_TX_BEGIN:
			pd->tx_start_ns = now_ns();
			/* fio's clock (it may be the TSC), as fio compares it with its own */
			fio_gettime(&pd->tx_start_ts, NULL);
			break;
		case PM_OP_OUT_OF_FILES:
			pd->out_of_files = 1;
			log_err("postmark: out of files after %d transactions (every file was deleted); "
				"PostMark would stop here without deleting or reporting: the engine goes on to the deletion phase\n",
				pm_sim_counters(pd->sim)->transactions_done);
			break;
		case PM_OP_CREATE:
			if (op.flags & PM_OPF_TABLE_FULL) {
				pd->table_full++;
				break;
			}
			pd->next = op;
			pd->have_next = 1;
			break;
		case PM_OP_APPEND:
			if (op.flags & PM_OPF_FILE_FULL) {
				pd->file_full++;
				break;
			}
			pd->next = op;
			pd->have_next = 1;
			break;
		default:
			pd->next = op;
			pd->have_next = 1;
		}
	}
}

static enum op_class class_of(const struct pm_op *op)
{
	switch (op->kind) {
	case PM_OP_CREATE:
		return OC_CREATE;
	case PM_OP_READ:
		return OC_READ;
	case PM_OP_APPEND:
		return OC_APPEND;
	case PM_OP_DELETE:
		return OC_DELETE;
	default:
		return OC_TRANSACTION;
	}
}

static const char *op_name(const struct pm_op *op)
{
	return class_names[class_of(op)];
}

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

static enum fio_q_status uring_queue(struct thread_data *td, struct pm_data *pd,
				     struct io_u *io_u);

static enum fio_q_status pm_queue(struct thread_data *td, struct io_u *io_u)
{
	struct pm_data *pd = td->io_ops_data;
	struct pm_op *op = &pd->next;
	uint64_t start, bytes = 0;
	int ret = 0;

	if (pd->uring) {
		enum fio_q_status q = uring_queue(td, pd, io_u);

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
		stamp_phase(pd, PM_PHASE_CREATE);
		if (pd->t_ns[PM_PHASE_TRANSACTIONS] == 0 && op->phase != PM_PHASE_CREATE)
			stamp_phase(pd, PM_PHASE_TRANSACTIONS);
	}
	start = now_ns();
	if (op->kind == PM_OP_TX_END) {
		if (pd->o->fsync == PMF_TRANSACTION)
			ret = commit_deferred(pd);
		/* fio's sync latency is measured from issue_time: the transaction's start */
		io_u->issue_time = pd->tx_start_ts;
		record(&pd->st[OC_TRANSACTION], now_ns() - pd->tx_start_ns, 0, ret);
		if (ret)
			log_err("postmark: transaction %d: fsync: %s\n", op->tx, strerror(-ret));
	} else {
		ret = run_op(pd, op, &bytes);
		record(&pd->st[class_of(op)], now_ns() - start, bytes, ret);
		if (ret) {
			char path[PATH_MAX + 32];

			file_path(pd, op, path, sizeof(path));
			log_err("postmark: %s %s: %s\n", op_name(op), path, strerror(-ret));
		}
	}
	if (ret) {
		io_u->error = -ret;
		pd->failed = 1;
	}
	io_u->xfer_buflen = bytes;
	io_u->resid = 0;

	if (op->kind == PM_OP_TX_END)
		check_tx_limit(pd);
	advance(pd, 1);
	if (!pd->have_next)
		fio_mark_td_terminate(td);
	/* fio leaves this to engines with a ->commit (the io_uring mode's) */
	io_u_mark_submit(td, 1);
	io_u_mark_complete(td, 1);
	return FIO_Q_COMPLETED;
}

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

static struct io_uring_sqe *get_sqe(struct pm_data *pd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&pd->ring);

	if (!sqe) {
		io_uring_submit(&pd->ring);
		pd->unsubmitted = 0;
		sqe = io_uring_get_sqe(&pd->ring);
	}
	return sqe;
}

static void uring_submit(struct pm_data *pd)
{
	if (pd->unsubmitted && io_uring_submit(&pd->ring) >= 0)
		pd->unsubmitted = 0;
}

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
	struct io_uring_sqe *sqe = get_sqe(pd);
	int buffered = pd->cfg.buffered;
	struct pm_tx *tx = rq->tx;

	if (!sqe) {
		if (!rq->err)
			rq->err = EBUSY;
		if (rq->fd >= 0)
			close(rq->fd);
		rq->fd = -1;
		return 1;
	}
	switch (rq->step) {
	case US_OPEN:
		/* the flags and modes of run_op() */
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
	pd->unsubmitted++;
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

static void stamp_pending_phases(struct pm_data *pd)
{
	int ph;

	for (ph = PM_PHASE_CREATE; ph <= PM_PHASE_DONE; ph++) {
		if (!(pd->pending_phases & (1u << ph)))
			continue;
		stamp_phase(pd, ph);
		if (ph == PM_PHASE_DONE)
			pd->finished = 1;
	}
	pd->pending_phases = 0;
}

/* A phase marker passed by the lookahead: stamped once nothing is in flight. */
static void uring_phase(struct pm_data *pd, enum pm_phase ph)
{
	pd->pending_phases |= 1u << ph;
	if (!pd->inflight)
		stamp_pending_phases(pd);
}

/*
 * The transaction the next io_us belong to. Transactions complete out of
 * order (a later one may finish while an earlier one waits for a long
 * write), so records come from a pool: every open transaction but this new
 * one holds an io_u in flight (its TX_END is queued after its operations),
 * so at most iodepth + 1 are open.
 */
static void uring_tx_begin(struct pm_data *pd, int txn)
{
	struct pm_tx *tx = NULL;
	int i;

	for (i = 0; i < pd->ntxs && !tx; i++)
		if (pd->txs[i].tx < 0)
			tx = &pd->txs[i];
	pd->cur_tx = tx;
	if (!tx) {
		log_err("postmark: internal error: no record for transaction %d\n", txn);
		return;
	}
	memset(tx, 0, sizeof(*tx));
	tx->tx = txn;
	tx->fd[0] = tx->fd[1] = tx->dirfd[0] = tx->dirfd[1] = -1;
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
		record(&pd->st[OC_TRANSACTION], now - tx->start_ns, 0, rq->err);
		if (rq->err && !(pd->failed && pd->stop_on_error))
			log_err("postmark: transaction %d: fsync: %s\n", rq->op.tx, strerror(rq->err));
		/* fio's sync latency is measured from issue_time: the transaction's start */
		if (io_u)
			io_u->issue_time = tx->start_ts;
		tx->tx = -1;
		tx->end = NULL;
	} else {
		record(&pd->st[class_of(&rq->op)], now - rq->start_ns, rq->bytes, rq->err);
		/*
		 * fio stops at the first error; operations in flight then that
		 * fail too (a full disk) are counted, not reported
		 */
		if (rq->err && !(pd->failed && pd->stop_on_error)) {
			char path[PATH_MAX + 32];

			file_path(pd, &rq->op, path, sizeof(path));
			log_err("postmark: %s %s: %s\n", op_name(&rq->op), path, strerror(rq->err));
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
		stamp_pending_phases(pd);
}

/* The transaction's operations are complete: its fsyncs, if any. 1: it is complete. */
static int start_end(struct pm_data *pd, struct pm_req *rq)
{
	rq->idx = 0;
	if (tx_pick(rq))
		return 1;
	return uring_prep(pd, rq);
}

/* Processes the completions there are (@wait: at least one). 0 or -errno. */
static int reap(struct pm_data *pd, int wait)
{
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	int ret;

	if (wait) {
		/* what is prepared goes in with the wait: never wait on nothing submitted */
		do
			ret = io_uring_submit_and_wait(&pd->ring, 1);
		while (ret == -EINTR);
		if (ret < 0)
			return ret;
		pd->unsubmitted = 0;
	}
	io_uring_for_each_cqe(&pd->ring, head, cqe) {
		struct pm_req *rq = io_uring_cqe_get_data(cqe);

		seen++;
		pd->sqes--;
		if (uring_advance(pd, rq, cqe->res))
			finish_req(pd, rq, 0);
	}
	io_uring_cq_advance(&pd->ring, seen);
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
	int tmp;

	rq->dfd = dir_of(pd, &rq->op, &tmp);
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
	rq->fd = rq->dfd = -1;
}

static enum fio_q_status uring_queue(struct thread_data *td, struct pm_data *pd,
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
			io_u->error = EINVAL;	/* cannot be (uring_tx_begin()) */
			pd->failed = 1;
			advance(pd, 1);
			if (!pd->have_next)
				fio_mark_td_terminate(td);
			return FIO_Q_COMPLETED;
		}
	}
	pd->free_reqs = rq->next_free;

	if (!pd->started) {
		pd->started = 1;
		stamp_phase(pd, PM_PHASE_CREATE);
		pd->pending_phases &= ~(1u << PM_PHASE_CREATE);
		if (pd->t_ns[PM_PHASE_TRANSACTIONS] == 0 && op->phase != PM_PHASE_CREATE)
			stamp_phase(pd, PM_PHASE_TRANSACTIONS);
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
		check_tx_limit(pd);
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
	advance(pd, 1);
	if (!pd->have_next)
		fio_mark_td_terminate(td);
	if (done)
		return pack_ioq_done_in_queue(td, &pd->ioq, io_u);
	pack_ioq_queued(&pd->ioq, io_u);
	return FIO_Q_QUEUED;
}

static int pm_commit(struct thread_data *td)
{
	struct pm_data *pd = td->io_ops_data;

	if (!pd->uring)
		return 0;
	uring_submit(pd);
	/* fio's submit accounting is per io_u (operation), not per SQE */
	pack_ioq_commit(td, &pd->ioq);
	return 0;
}

static int pm_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			const struct timespec *t)
{
	struct pm_data *pd = td->io_ops_data;
	int ret;

	if (!pd->uring)
		return 0;
	/* an io_u is not handed back before its submission is accounted */
	pm_commit(td);
	pack_ioq_forget_returned(&pd->ioq);
	while (pd->ioq.ndone < min && pd->sqes) {
		ret = reap(pd, 1);
		if (ret)
			return ret;
	}
	if (pd->sqes)
		reap(pd, 0);
	uring_submit(pd);
	return pack_ioq_hand_out(&pd->ioq, max);
}

static struct io_u *pm_event(struct thread_data *td, int event)
{
	struct pm_data *pd = td->io_ops_data;

	return pack_ioq_event(&pd->ioq, event);
}

static int uring_init(struct thread_data *td, struct pm_data *pd)
{
	unsigned depth = td->o.iodepth ? td->o.iodepth : 1;
	int i, ret;

	for (i = 0; i < pd->npools; i++) {
		struct stat st;

		/* stdio's buffer size, once: no fstat per file */
		if (fstat(pd->pool[i].fd, &st)) {
			log_err("postmark: %s: %s\n", pd->pool[i].path, strerror(errno));
			return 1;
		}
		pd->pool[i].bufsize = stdiosim_bufsize(st.st_blksize);
	}
	ret = pack_uring_queue_init(depth * 2 < 8 ? 8 : depth * 2, &pd->ring);
	if (ret) {
		log_err("postmark: pm_io_api=io_uring: io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	pd->ring_ok = 1;
	pd->stop_on_error = !td->o.continue_on_error;
	pd->nreqs = (int)depth;
	pd->ntxs = (int)depth + 2;
	pd->reqs = calloc(pd->nreqs, sizeof(*pd->reqs));
	pd->txs = calloc(pd->ntxs, sizeof(*pd->txs));
	if (!pd->reqs || !pd->txs || pack_ioq_init(&pd->ioq, 2 * depth + 8))
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
	log_err("postmark: out of memory for io_uring requests\n");
	return 1;
}

/*
 * ->cleanup: what is still in flight (fio normally reaps everything first)
 * is completed without fio, and open transactions' descriptors are closed.
 */
static void uring_exit(struct pm_data *pd)
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

/* ------------------------------------------------------------------ */
/* Locations: parsing, claiming, cleaning                              */
/* ------------------------------------------------------------------ */


static int all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

static int subdir_name(const char *s)
{
	return s[0] == 's' && all_digits(s + 1);
}

/*
 * Removes what an interrupted run of this engine left in @dirfd: regular
 * files named by numbers, and (@depth 0) s<N> directories of them. Entries
 * named like those but of another kind (a symlink "17", a file "s3"), or
 * anything else inside an s<N> directory, are not ours: -1 with the name in
 * @bad. Other names are ignored. Returns the files removed (or, @dry, found).
 */
static long clean_leftovers(int dirfd, int depth, char *bad, size_t badlen, int dry)
{
	DIR *d;
	struct dirent *de;
	long removed = 0;
	int fd = dup(dirfd);

	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	/* a dup shares the file offset: an earlier scan left it at the end */
	rewinddir(d);
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (depth == 0 && !strcmp(de->d_name, MARKER_NAME))
			continue;
		/*
		 * Other files of a location (not named like PostMark's) can
		 * never collide with the engine's and are left alone.
		 */
		if (depth == 0 && !all_digits(de->d_name) && !subdir_name(de->d_name))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			goto foreign;
		if (all_digits(de->d_name) && S_ISREG(st.st_mode)) {
			if (!dry && NOINTR(unlinkat(dirfd, de->d_name, 0)))
				goto foreign;
			removed++;
			continue;
		}
		if (depth == 0 && subdir_name(de->d_name) && S_ISDIR(st.st_mode)) {
			int sfd = NOINTR(openat(dirfd, de->d_name,
						O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
			long r;

			if (sfd < 0)
				goto foreign;
			r = clean_leftovers(sfd, 1, bad, badlen, dry);
			close(sfd);
			if (r < 0) {
				closedir(d);
				return -1;
			}
			removed += r;
			if (!dry && NOINTR(unlinkat(dirfd, de->d_name, AT_REMOVEDIR)))
				goto foreign;
			continue;
		}
foreign:
		snprintf(bad, badlen, "%s", de->d_name);
		closedir(d);
		return -1;
	}
	closedir(d);
	return removed;
}

/* @len bytes of @buf, on through short writes: 0, or -1 with errno. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = NOINTR(write(fd, buf, len));

		if (n <= 0) {
			if (!n)
				errno = EIO;
			return -1;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * Takes @p->fd for this job: an exclusive lock (two jobs in one directory
 * would trip over each other's file names); entries named like PostMark's
 * files (numbers, s<N>) must be what an interrupted run of the engine left
 * (its marker is there), and are removed. Other files may be there and are
 * never touched. PostMark itself writes into any directory and truncates
 * what it finds; the engine never touches a file it did not create.
 */
static int claim_pool(struct pool *p)
{
	char bad[NAME_MAX + 1] = "";
	long n;
	int fd, marked;

	if (flock(p->fd, LOCK_EX | LOCK_NB)) {
		log_err("postmark: pm_location %s is in use by another postmark job\n", p->path);
		return 1;
	}
	marked = faccessat(p->fd, MARKER_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	/* look first, so that a foreign directory is not half cleaned */
	n = clean_leftovers(p->fd, 0, bad, sizeof(bad), 1);
	if (n < 0) {
		if (*bad)
			log_err("postmark: pm_location %s holds '%s', named like PostMark's files but not the engine's; refusing to touch it\n",
				p->path, bad);
		else
			log_err("postmark: pm_location %s: %s\n", p->path, strerror(errno));
		return 1;
	}
	if (n > 0 && !marked) {
		log_err("postmark: pm_location %s holds numbered files but no %s marker: not the engine's; give it an empty directory\n",
			p->path, MARKER_NAME);
		return 1;
	}
	if (n > 0) {
		n = clean_leftovers(p->fd, 0, bad, sizeof(bad), 0);
		if (n < 0) {
			log_err("postmark: pm_location %s: cannot remove an interrupted run's files: %s\n",
				p->path, strerror(errno));
			return 1;
		}
		log_err("postmark: pm_location %s: removed %ld files an interrupted run left\n",
			 p->path, n);
	}
	if (!marked) {
		fd = NOINTR(openat(p->fd, MARKER_NAME,
				   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
		if (fd < 0 || write_all(fd, MARKER_TEXT, strlen(MARKER_TEXT))) {
			log_err("postmark: pm_location %s: cannot write %s: %s\n", p->path, MARKER_NAME,
				strerror(errno));
			if (fd >= 0)
				close(fd);
			return 1;
		}
		close(fd);
	}
	p->marked = 1;
	return 0;
}

static int check_writable(const char *path, int fd)
{
	struct statvfs vfs;

	if (fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
		log_err("postmark: pm_location %s is on a read-only file system\n", path);
		return 1;
	}
	if (faccessat(AT_FDCWD, path, W_OK | X_OK, AT_EACCESS)) {
		log_err("postmark: pm_location %s is not writable: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

static uint32_t dist_size(void *ctx, int name);

/*
 * The pool must fit before the first file is made: the run's model gives
 * each location's fullest moment (pmroom.h); the locations on one file
 * system add up, and so do the numjobs clones' pools. A location that does
 * not exist is open_pools()'s to report. 0, or 1 with one line.
 */
static int check_room(struct thread_data *td, struct pm_data *pd)
{
	int nloc = pd->cfg.nloc ? pd->cfg.nloc : 1, i, j;
	const char *tmp = getenv("TMPDIR");
	uint64_t block[PM_MAX_LOCATIONS] = { 0 };
	struct statvfs vfs[PM_MAX_LOCATIONS];
	int ok[PM_MAX_LOCATIONS] = { 0 };
	unsigned jobs = pack_clone_count(td);
	struct pm_room room;
	char err[256];

	for (i = 0; i < nloc; i++) {
		const char *path = pd->cfg.nloc ? pd->cfg.loc[i].path : tmp && *tmp ? tmp : "/tmp";

		ok[i] = statvfs(path, &vfs[i]) == 0;
		block[i] = ok[i] ? (vfs[i].f_frsize ? vfs[i].f_frsize : vfs[i].f_bsize) : 4096;
	}
	/* time_based: the number of transactions is the clock's; the initial pool at least */
	if (pm_room(&pd->cfg, pd->have_sizes ? dist_size : NULL, pd, block,
		    pd->time_based_run, &room, err, sizeof(err))) {
		log_err("postmark: %s\n", err);
		return 1;
	}
	for (i = 0; i < nloc; i++) {
		uint64_t bytes = 0, files = 0, have, inodes;
		const char *path = pd->cfg.nloc ? pd->cfg.loc[i].path : tmp && *tmp ? tmp : "/tmp";

		if (!ok[i] || !vfs[i].f_blocks)
			continue;	/* no fixed size (ramfs), or open_pools() will say */
		for (j = 0; j < nloc; j++) {
			if (!ok[j] || vfs[j].f_fsid != vfs[i].f_fsid)
				continue;
			if (j < i)
				break;	/* counted with the first location of this file system */
			bytes += room.bytes[j];
			files += room.files[j];
		}
		if (j < i)
			continue;
		bytes *= jobs;
		files = (files + (pd->cfg.subdirs > 1 ? (uint64_t)pd->cfg.subdirs : 0)) * jobs;
		have = (uint64_t)vfs[i].f_bavail * block[i];	/* df's Avail */
		inodes = vfs[i].f_favail;
		if (bytes > have) {
			log_err("postmark: pm_location %s: the pool needs %.1f MB (%llu bytes) at its fullest for %llu files, the file system has %.1f MB (%llu bytes) free; use fewer or smaller files (pm_number, pm_size_high, pm_transactions) or a larger file system\n",
				path, (double)bytes / 1e6, (unsigned long long)bytes,
				(unsigned long long)files, (double)have / 1e6, (unsigned long long)have);
			return 1;
		}
		if (vfs[i].f_files && files > inodes) {
			log_err("postmark: pm_location %s: the pool needs %llu inodes at its fullest, the file system has %llu free; use fewer files (pm_number, pm_transactions) or a file system with more inodes\n",
				path, (unsigned long long)files, (unsigned long long)inodes);
			return 1;
		}
	}
	return 0;
}

static int open_pools(struct thread_data *td, struct pm_data *pd)
{
	unsigned jobs = pack_clone_count(td);
	struct stat st[PM_MAX_LOCATIONS];
	int lfd[PM_MAX_LOCATIONS];
	int i, j;

	if (pd->cfg.nloc == 0) {
		/* no location: a private directory, removed at the end */
		const char *base = getenv("TMPDIR");
		char job[64];

		pack_job_dir_name(td, job, sizeof(job));
		snprintf(pd->pool[0].path, sizeof(pd->pool[0].path), "%s/fio-postmark.%s.XXXXXX",
			 base && *base ? base : "/tmp", job);
		if (!mkdtemp(pd->pool[0].path)) {
			log_err("postmark: cannot create a directory under %s: %s\n",
				base && *base ? base : "/tmp", strerror(errno));
			pd->pool[0].path[0] = '\0';
			return 1;
		}
		pd->pool[0].made = 1;
		pd->tmpdir = 1;
		pd->npools = 1;
		pd->pool[0].fd = open(pd->pool[0].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (pd->pool[0].fd < 0) {
			log_err("postmark: %s: %s\n", pd->pool[0].path, strerror(errno));
			return 1;
		}
		return claim_pool(&pd->pool[0]);
	}

	/* every location is checked before any is written to */
	pd->npools = pd->cfg.nloc;
	for (i = 0; i < pd->npools; i++) {
		const char *loc = pd->cfg.loc[i].path;

		lfd[i] = open(loc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lfd[i] < 0) {
			if (errno == ENOTDIR)
				log_err("postmark: pm_location %s is not a directory\n", loc);
			else
				log_err("postmark: pm_location %s: %s\n", loc, strerror(errno));
			goto fail;
		}
		if (check_writable(loc, lfd[i])) {
			close(lfd[i]);
			goto fail;
		}
	}
	for (i = 0; i < pd->npools; i++) {
		struct pool *p = &pd->pool[i];
		char loc[PM_LOCATION_LEN];

		/* a copy: gcc -O1 -fsanitize=address sees p->path and the location overlap */
		memcpy(loc, pd->cfg.loc[i].path, sizeof(loc));
		if (jobs <= 1) {
			snprintf(p->path, sizeof(p->path), "%s", loc);
			p->fd = lfd[i];
		} else {
			/* numjobs: each job has its own pool in the location */
			char job[64];

			pack_job_dir_name(td, job, sizeof(job));
			snprintf(p->path, sizeof(p->path), "%s/%s", loc, job);
			if (NOINTR(mkdirat(lfd[i], job, 0755)) == 0)
				p->made = 1;
			else if (errno != EEXIST) {
				log_err("postmark: %s: %s\n", p->path, strerror(errno));
				goto fail_from;
			}
			p->fd = NOINTR(openat(lfd[i], job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
			close(lfd[i]);
			if (p->fd < 0) {
				log_err("postmark: %s: %s\n", p->path, strerror(errno));
				i++;
				goto fail_from;
			}
		}
		lfd[i] = -1;
		if (fstat(p->fd, &st[i])) {
			log_err("postmark: %s: %s\n", p->path, strerror(errno));
			i++;
			goto fail_from;
		}
		/* one directory named twice: one pool, as in PostMark */
		for (j = 0; j < i; j++) {
			if (st[j].st_dev == st[i].st_dev && st[j].st_ino == st[i].st_ino) {
				close(p->fd);
				p->fd = pd->pool[pd->pool[j].alias ? pd->pool[j].alias - 1 : j].fd;
				p->alias = j + 1;
				break;
			}
		}
		if (!p->alias && claim_pool(p)) {
			i++;
			goto fail_from;
		}
	}
	return 0;
fail_from:
	/* locations not yet turned into pools */
	for (; i < pd->npools; i++)
		if (lfd[i] >= 0)
			close(lfd[i]);
	return 1;
fail:
	while (i-- > 0)
		close(lfd[i]);
	pd->npools = 0;
	return 1;
}

/* s0 .. s<K-1> in each pool, as PostMark makes them (mode 0700) before its timers. */
static int make_subdirs(struct pm_data *pd)
{
	int k = pd->cfg.subdirs, i, s;
	char name[32];

	if (k <= 1)
		return 0;
	if (pd->npools * k <= MAX_DIRFDS) {
		pd->subfd = malloc(sizeof(int) * pd->npools * k);
		if (!pd->subfd)
			return 1;
		for (i = 0; i < pd->npools * k; i++)
			pd->subfd[i] = -1;
	}
	for (i = 0; i < pd->npools; i++) {
		struct pool *p = &pd->pool[i];

		if (p->alias)
			continue;
		for (s = 0; s < k; s++) {
			snprintf(name, sizeof(name), "s%d", s);
			if (NOINTR(mkdirat(p->fd, name, 0700)) && errno != EEXIST) {
				log_err("postmark: %s/%s: %s\n", p->path, name, strerror(errno));
				return 1;
			}
			p->subdirs_made = s + 1;
		}
	}
	if (!pd->subfd)
		return 0;
	for (i = 0; i < pd->npools; i++) {
		struct pool *p = &pd->pool[i];
		int src = p->alias ? p->alias - 1 : i;

		for (s = 0; s < k; s++) {
			int fd;

			if (p->alias) {
				pd->subfd[i * k + s] = pd->subfd[src * k + s];
				continue;
			}
			snprintf(name, sizeof(name), "s%d", s);
			fd = NOINTR(openat(p->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
			if (fd < 0) {
				log_err("postmark: %s/%s: %s\n", p->path, name, strerror(errno));
				return 1;
			}
			pd->subfd[i * k + s] = fd;
		}
	}
	return 0;
}

/* Deletes the files of an interrupted run (fio stopped early or an error). */
static void delete_live(struct pm_data *pd)
{
	struct pm_op op;
	int s, tmp, dfd;
	long n = 0;
	char name[16];

	for (s = 0; s < pm_sim_nslots(pd->sim); s++) {
		if (!pm_sim_slot(pd->sim, s, &op))
			continue;
		dfd = dir_of(pd, &op, &tmp);
		if (dfd < 0)
			continue;
		snprintf(name, sizeof(name), "%d", op.name);
		if (NOINTR(unlinkat(dfd, name, 0)) == 0)
			n++;
		if (tmp)
			close(dfd);
	}
	/* a delete handed out by the model (no longer live there) and not made */
	if (pd->have_next && pd->next.kind == PM_OP_DELETE) {
		dfd = dir_of(pd, &pd->next, &tmp);
		snprintf(name, sizeof(name), "%d", pd->next.name);
		if (dfd >= 0 && NOINTR(unlinkat(dfd, name, 0)) == 0)
			n++;
		if (dfd >= 0 && tmp)
			close(dfd);
	}
	if (n)
		log_err("postmark: the run did not finish; removed its %ld remaining files\n", n);
}

/* Leaves every location as the job found it. */
static void release_pools(struct pm_data *pd)
{
	int i, s;
	char name[32];

	if (pd->subfd) {
		for (i = 0; i < pd->npools * pd->cfg.subdirs; i++)
			if (pd->subfd[i] >= 0 && !pd->pool[i / pd->cfg.subdirs].alias)
				close(pd->subfd[i]);
		free(pd->subfd);
		pd->subfd = NULL;
	}
	for (i = 0; i < pd->npools; i++) {
		struct pool *p = &pd->pool[i];

		if (p->alias || p->fd < 0)
			continue;
		for (s = 0; s < p->subdirs_made; s++) {
			snprintf(name, sizeof(name), "s%d", s);
			NOINTR(unlinkat(p->fd, name, AT_REMOVEDIR));
		}
		if (p->marked) {
			char bad[NAME_MAX + 1] = "";
			long left = clean_leftovers(p->fd, 0, bad, sizeof(bad), 1);

			/*
			 * Files of ours that could not be deleted (an error with
			 * continue_on_error) keep the marker: the next run
			 * recognises them by it and removes them, where without it
			 * it would refuse them as a user's.
			 */
			if (left == 0)
				NOINTR(unlinkat(p->fd, MARKER_NAME, 0));
			else if (left > 0)
				log_err("postmark: pm_location %s: %ld files could not be removed; %s stays so that the next run removes them\n",
					p->path, left, MARKER_NAME);
		}
		close(p->fd);
		p->fd = -1;
		if (p->made && rmdir(p->path) && errno != ENOTEMPTY)
			log_err("postmark: cannot remove %s: %s\n", p->path, strerror(errno));
	}
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

/* An integer option; empty or unset means @def. */
static int opt_int(const char *name, const char *val, long def, long lo, long hi, int *out,
		   char *err, size_t errlen)
{
	char *end;
	long v;

	if (!val || !*val) {
		*out = (int)def;
		return 0;
	}
	errno = 0;
	v = strtol(val, &end, 10);
	if (errno || *end || end == val) {
		pack_errf(err, errlen, "%s=%s is not a whole number", name, val);
		return -1;
	}
	if (v < lo || v > hi) {
		pack_errf(err, errlen, "%s=%s is out of range %ld..%ld", name, val, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* A size option ("4k" allowed); empty or unset means @def. */
static int opt_size(const char *name, const char *val, long def, long lo, long hi, int *out,
		    char *err, size_t errlen)
{
	uint64_t v;

	if (!val || !*val) {
		*out = (int)def;
		return 0;
	}
	if (parse_size(val, &v)) {
		pack_errf(err, errlen, "%s=%s is not a size in bytes", name, val);
		return -1;
	}
	if (v < (uint64_t)lo || v > (uint64_t)hi) {
		pack_errf(err, errlen, "%s=%s is out of range %ld..%ld bytes", name, val, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_pm_options(struct thread_data *td, struct pm_data *pd, char *err, size_t errlen)
{
	struct pm_options *o = pd->o;
	struct pm_config *c = &pd->cfg;
	int seed, tx;

	pm_config_default(c);
	if (opt_size("pm_size_low", o->size_low, c->size_lo, 1, PM_MAX_SIZE, &c->size_lo, err, errlen) ||
	    opt_size("pm_size_high", o->size_high, c->size_hi, 1, PM_MAX_SIZE, &c->size_hi, err, errlen))
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
	    opt_int("pm_transactions", o->transactions, c->transactions, 1, INT32_MAX - 1, &tx, err, errlen) ||
	    opt_int("pm_seed", o->seed, c->seed, 1, INT32_MAX, &seed, err, errlen) ||
	    opt_size("pm_read_block", o->read_block, c->read_block, 1, 64 << 20, &c->read_block, err, errlen) ||
	    opt_size("pm_write_block", o->write_block, c->write_block, 1, 64 << 20, &c->write_block, err, errlen) ||
	    opt_int("pm_bias_read", o->bias_read, c->bias_read, -1, 10, &c->bias_read, err, errlen) ||
	    opt_int("pm_bias_create", o->bias_create, c->bias_create, -1, 10, &c->bias_create, err, errlen) ||
	    opt_int("pm_subdirectories", o->subdirs, c->subdirs, 0, PM_MAX_SUBDIRS, &c->subdirs, err, errlen))
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
		log_err("postmark: size= and io_size= do not apply; PostMark's run is pm_number files and pm_transactions transactions (or time_based with runtime=)\n");
		return 1;
	}
	if (to->nr_files > 1) {
		log_err("postmark: nrfiles must be 1 (the files are PostMark's; use pm_number)\n");
		return 1;
	}
	if (to->odirect) {
		log_err("postmark: direct=1 is not supported (PostMark does buffered I/O of unaligned sizes)\n");
		return 1;
	}
	if (to->verify != 0) {
		log_err("postmark: verify= is not supported by this engine\n");
		return 1;
	}
	if (to->iodepth > 1 && ((struct pm_options *)td->eo)->io_api != API_IO_URING) {
		log_err("postmark: iodepth must be 1: PostMark's operations depend on each other; use numjobs= for concurrency, or pm_io_api=io_uring\n");
		return 1;
	}
	return 0;
}

static uint32_t dist_size(void *ctx, int name)
{
	struct pm_data *pd = ctx;
	uint64_t v = size_dist_sample(&pd->sizes, hash_item(pd->cfg.seed, 1, (uint64_t)name));

	return v > PM_MAX_SIZE ? PM_MAX_SIZE : (uint32_t)v;
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
		log_err("postmark: PostMark 1.53 dies of SIGFPE with fewer than 10 transactions (it divides by transactions / 10); the engine runs the %d\n",
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
		log_err("postmark: file paths here reach %zu characters; PostMark 1.53 keeps them in an 81-byte buffer and would overrun it, the engine has no such limit\n",
			longest + n);
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
		log_err("postmark: %s\n", err);
		return 1;
	}
	if (check_fio_options(td))
		return 1;

	/* numjobs: each job its own pool (open_pools) and seed */
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
			log_err("postmark: time_based needs runtime= (the length of the transaction phase)\n");
			return 1;
		}
		pd->cfg.transactions = INT32_MAX - 1 - pd->cfg.number;
		pd->time_based_run = 1;
	}
	to->timeout = 0;
	to->time_based = 1;

	if (pm_config_check(&pd->cfg, err, sizeof(err))) {
		log_err("postmark: %s\n", err);
		return 1;
	}
	warn_postmark_limits(td, pd);
	pd->sim = pm_sim_new(&pd->cfg, err, sizeof(err));
	if (!pd->sim) {
		log_err("postmark: %s\n", err);
		return 1;
	}
	if (pd->have_sizes)
		pm_sim_set_sizer(pd->sim, dist_size, pd);
	if (make_buffers(pd)) {
		log_err("postmark: out of memory for buffers\n");
		return 1;
	}
	if (pd->o->space_check && check_room(td, pd))
		return 1;
	if (open_pools(td, pd) || make_subdirs(pd))
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
		if (uring_init(td, pd))
			return 1;
	} else {
		to->iodepth = 1;
		/* one operation at a time: fio stamps the issue time before ->queue */
		pack_engine_flag_set(td, FIO_SYNCIO);
	}
	advance(pd, 0);
	return 0;
}

/* fio's view: one file, big enough that fio never runs out of offsets. */
static int pm_setup(struct thread_data *td)
{
	struct fio_file *f;
	unsigned i;

	for_each_file(td, f, i) {
		f->real_file_size = 1ULL << 40;
		fio_file_set_size_known(f);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Reports                                                             */
/* ------------------------------------------------------------------ */

static void write_report(struct thread_data *td, struct pm_data *pd)
{
	const struct pm_counters *c = pm_sim_counters(pd->sim);
	char buf[4096];
	int n;
	FILE *fp = stderr;

	if (pd->o->report == REP_NONE || !pd->started)
		return;
	if (pd->o->whole_seconds) {
		struct pm_times t = { pd->t_sec[0], pd->t_sec[1], pd->t_sec[2], pd->t_sec[3] };

		n = pm_report_format(buf, sizeof(buf), &pd->cfg, c, &t);
	} else {
		struct pm_times_ns t = { pd->t_ns[0], pd->t_ns[1], pd->t_ns[2], pd->t_ns[3] };

		n = pm_report_format_ns(buf, sizeof(buf), &pd->cfg, c, &t);
	}
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	if (pd->o->report_file && *pd->o->report_file) {
		fp = fopen(pd->o->report_file, "a");
		if (!fp) {
			log_err("postmark: pm_report_file %s: %s\n", pd->o->report_file, strerror(errno));
			return;
		}
	}
	if (fputs(buf, fp) < 0)
		log_err("postmark: pm_report_file %s: write failed\n", pd->o->report_file);
	if (fp != stderr)
		fclose(fp);
	else
		fflush(stderr);
}

/* One JSON line per job (engines/lib/jsonl.h): the counters, whole. */
static void write_opstats(struct thread_data *td, struct pm_data *pd)
{
	const struct pm_counters *c = pm_sim_counters(pd->sim);
	struct jsonl w = { 0 };
	char err[PATH_MAX + 128];
	int k, i;

	if (!pd->o->opstats_file || !*pd->o->opstats_file)
		return;
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
	if (jsonl_end(&w))
		log_err("postmark: pm_opstats_file %s: out of memory for the report line, nothing written\n",
			pd->o->opstats_file);
	else if (jsonl_append(&w, pd->o->opstats_file, err, sizeof(err)))
		log_err("postmark: pm_opstats_file %s\n", err);
	jsonl_free(&w);
}

static void pm_cleanup(struct thread_data *td)
{
	struct pm_data *pd = td->io_ops_data;

	if (!pd)
		return;
	/* first: what is in flight completes (and may end the run) */
	uring_exit(pd);
	if (pd->sim) {
		commit_deferred(pd);
		if (td->io_ops_init) {
			uint64_t end = pd->finished ? pd->t_ns[3] : now_ns();

			pack_fix_runtimes(td, pd->started ? (end - pd->t_ns[0] + 999999) / 1000000 : 0);
			if (pd->table_full)
				log_err("postmark: %llu creates found the file table (2 * pm_number slots) full and did nothing, as PostMark does silently\n",
					(unsigned long long)pd->table_full);
			if (pd->file_full)
				log_err("postmark: %llu appends found their file at pm_size_high and did nothing, as PostMark does silently\n",
					(unsigned long long)pd->file_full);
			if (pd->finished)
				write_report(td, pd);
			write_opstats(td, pd);
		}
		if (!pd->finished)
			delete_live(pd);
	}
	release_pools(pd);
	pm_sim_free(pd->sim);
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
	{
		.name	= "pm_buffering",
		.lname	= "Buffered I/O",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct pm_options, buffering),
		.help	= "1: the system calls of PostMark's stdio mode; 0: its raw read/write mode (default 1; PostMark: set buffering)",
		.def	= "1",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
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
	{
		.name	= "pm_whole_seconds",
		.lname	= "PostMark's timing",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct pm_options, whole_seconds),
		.help	= "1: the report uses PostMark's whole-second time() arithmetic exactly; 0: nanosecond timing (default 0)",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "pm_space_check",
		.lname	= "Check the room first",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct pm_options, space_check),
		.help	= "Refuse a run whose pool, at its fullest, needs more bytes or inodes than its locations have free, before making any file (0: on compressing or thin-provisioned file systems) (default 1)",
		.def	= "1",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
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

static void fio_init fio_postmark_register(void)
{
	register_ioengine(&ioengine);
}

static void fio_exit fio_postmark_unregister(void)
{
	unregister_ioengine(&ioengine);
}

/* fio's entry point for external engines loaded with ioengine=external:PATH */
void get_ioengine(struct ioengine_ops **ioengine_ptr) __attribute__((visibility("default")));
void get_ioengine(struct ioengine_ops **ioengine_ptr)
{
	*ioengine_ptr = &ioengine;
}
