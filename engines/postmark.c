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

#include "fio.h"
#include "optgroup.h"
#include "fioglue.h"

#include "postmark.h"
#include "stdiosim.h"
#include "sizedist.h"
#include "content.h"
#include "units.h"
#include "rng.h"
#include "errmsg.h"

#define ENGINE		"postmark"
#define MARKER_NAME	".fio-postmark"
#define MARKER_TEXT	"fio postmark engine: files named by numbers and s<N>/ directories here are the engine's\n"
#define MAX_DIRFDS	512	/* subdirectory descriptors kept open per job */
#define ERRLEN		512
#define NBUCKETS	976	/* log-linear latency histogram, 16 steps per power of 2 */

enum fsync_policy {
	PMF_NONE,
	PMF_CREATE,
	PMF_APPEND,
	PMF_WRITE,		/* create and append */
	PMF_TRANSACTION,
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
};

struct class_stats {
	uint64_t ops, bytes, errors;
	uint64_t lat_sum_ns, lat_min_ns, lat_max_ns;
	uint64_t hist[NBUCKETS];
};

/* A directory files go into: a location, or this job's directory in it. */
struct pool {
	char path[PATH_MAX];
	int fd;
	int alias;		/* same directory as an earlier pool: shares its fd */
	int made;		/* the engine created this directory */
	int marked;		/* the engine's marker is in it */
	int subdirs_made;
};

/* Transaction-policy fsync: files and directories written in this transaction. */
struct deferred {
	int fd[2];
	int nfd;
	int dirfd[2];
	int ndir;
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
	int failed;

	struct class_stats st[OC_NR];
};

static struct ioengine_ops ioengine;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int bucket_of(uint64_t ns)
{
	int e;

	if (ns < 16)
		return (int)ns;
	e = 63 - __builtin_clzll(ns);
	return 16 + (e - 4) * 16 + (int)((ns >> (e - 4)) & 15);
}

/* The middle of bucket @b, in ns. */
static uint64_t bucket_value(int b)
{
	int e, sub;

	if (b < 16)
		return b;
	e = (b - 16) / 16 + 4;
	sub = (b - 16) % 16;
	return ((16ULL + sub) << (e - 4)) + ((1ULL << (e - 4)) >> 1);
}

static void record(struct class_stats *s, uint64_t ns, uint64_t bytes, int err)
{
	s->ops++;
	s->bytes += bytes;
	if (err)
		s->errors++;
	s->lat_sum_ns += ns;
	if (!s->lat_min_ns || ns < s->lat_min_ns)
		s->lat_min_ns = ns;
	if (ns > s->lat_max_ns)
		s->lat_max_ns = ns;
	s->hist[bucket_of(ns)]++;
}

static uint64_t percentile(const struct class_stats *s, double p)
{
	uint64_t want = (uint64_t)(p / 100.0 * (double)s->ops + 0.999999), seen = 0;
	int b;

	if (!want)
		want = 1;
	for (b = 0; b < NBUCKETS; b++) {
		seen += s->hist[b];
		if (seen >= want)
			return bucket_value(b);
	}
	return s->lat_max_ns;
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
	fd = openat(pd->pool[p].fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
			n = read_some(fd, pd->rbuf, rb);
			if (n < 0)
				return n;
			*bytes += n;
		}
		n = read_some(fd, pd->rbuf, i);
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
		return fsync(fd) ? -errno : 0;
	if (p == PMF_TRANSACTION && pd->next.phase == PM_PHASE_TRANSACTIONS &&
	    pd->dfr.nfd < 2) {
		int d = dup(fd);

		if (d < 0)
			return -errno;
		pd->dfr.fd[pd->dfr.nfd++] = d;
	}
	return 0;
}

static void defer_dir(struct pm_data *pd, int dirfd)
{
	int i;

	if (pd->o->fsync != PMF_TRANSACTION || pd->next.phase != PM_PHASE_TRANSACTIONS)
		return;
	for (i = 0; i < pd->dfr.ndir; i++)
		if (pd->dfr.dirfd[i] == dirfd)
			return;
	if (pd->dfr.ndir < 2)
		pd->dfr.dirfd[pd->dfr.ndir++] = dirfd;
}

/* The end of a transaction under pm_fsync=transaction: make it durable. */
static int commit_deferred(struct pm_data *pd)
{
	int i, ret = 0;

	for (i = 0; i < pd->dfr.nfd; i++) {
		if (fsync(pd->dfr.fd[i]) && !ret)
			ret = -errno;
		close(pd->dfr.fd[i]);
	}
	for (i = 0; i < pd->dfr.ndir; i++)
		if (fsync(pd->dfr.dirfd[i]) && !ret)
			ret = -errno;
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
		fd = openat(dfd, name, (buffered ? O_WRONLY | O_TRUNC : O_RDWR) |
			    O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, buffered ? 0666 : 0644);
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
		if (!ret)
			defer_dir(pd, dfd);
		break;
	case PM_OP_READ:
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		ret = read_blocks(pd, fd, op->size, bytes);
		close(fd);
		break;
	case PM_OP_APPEND:
		fd = openat(dfd, name, (buffered ? O_WRONLY | O_CREAT : O_RDWR) | O_APPEND |
			    O_NOFOLLOW | O_CLOEXEC, 0666);
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
		if (unlinkat(dfd, name, 0))
			ret = -errno;
		else
			defer_dir(pd, dfd);
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
	if (pd->tx_limit_ns && now_ns() - pd->t_ns[PM_PHASE_TRANSACTIONS] >= pd->tx_limit_ns)
		pm_sim_stop_transactions(pd->sim);
}

/*
 * Moves to the next operation that needs an io_u, handling the markers in
 * between at this moment (just after the previous operation ended, which is
 * where PostMark reads its timers). Operations PostMark drops without a
 * system call are counted and skipped.
 */
static void advance(struct pm_data *pd, int stamp)
{
	struct pm_op op;

	pd->have_next = 0;
	while (!pd->have_next && pm_sim_next(pd->sim, &op)) {
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
		io_u->ioprio = PRIO_CREATE;
		io_u->clat_prio_index = 0;
		break;
	case PM_OP_APPEND:
		ddir = DDIR_WRITE;
		io_u->ioprio = PRIO_APPEND;
		io_u->clat_prio_index = 1;
		break;
	case PM_OP_DELETE:
		ddir = DDIR_TRIM;
		break;
	default:
		ddir = DDIR_SYNC;
	}
	io_u->ddir = ddir;
	pack_ddir_allow(td, ddir, &pd->saved_td_ddir);
	return 0;
}

static enum fio_q_status pm_queue(struct thread_data *td, struct io_u *io_u)
{
	struct pm_data *pd = td->io_ops_data;
	struct pm_op *op = &pd->next;
	uint64_t start, bytes = 0;
	int ret = 0;

	pack_ddir_restore(td, pd->saved_td_ddir);
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
	return FIO_Q_COMPLETED;
}

/* ------------------------------------------------------------------ */
/* Locations: parsing, claiming, cleaning                              */
/* ------------------------------------------------------------------ */

/*
 * pm_location: entries separated by ':', each a directory with an optional
 * "@WEIGHT" (1..1000000); a backslash escapes the next character.
 */
static int parse_locations(struct pm_data *pd, const char *spec, char *err, size_t errlen)
{
	const char *s = spec;
	struct pm_config *cfg = &pd->cfg;

	cfg->nloc = 0;
	while (*s) {
		char path[PM_LOCATION_LEN + 16];
		size_t n = 0;
		long weight = 1;
		char *at = NULL;
		int last_escaped_at = -1;

		while (*s && *s != ':') {
			if (*s == '\\' && s[1]) {
				s++;
				if (*s == '@')
					last_escaped_at = (int)n;
			}
			if (n + 1 >= sizeof(path)) {
				pack_errf(err, errlen, "pm_location: path longer than %d bytes",
					  PM_LOCATION_LEN - 1);
				return -1;
			}
			path[n++] = *s++;
		}
		path[n] = '\0';
		if (*s == ':')
			s++;
		if (!n)
			continue;
		at = strrchr(path, '@');
		if (at && at - path != last_escaped_at && at[1]) {
			char *end;

			if (strspn(at + 1, "0123456789") != strlen(at + 1)) {
				pack_errf(err, errlen, "pm_location: weight '%s' of %.*s is not a number from 1 to %d",
					  at + 1, (int)(at - path), path, PM_MAX_WEIGHT);
				return -1;
			}
			errno = 0;
			weight = strtol(at + 1, &end, 10);
			if (errno || weight < 1 || weight > PM_MAX_WEIGHT) {
				pack_errf(err, errlen, "pm_location: weight %s of %.*s is out of range 1..%d",
					  at + 1, (int)(at - path), path, PM_MAX_WEIGHT);
				return -1;
			}
			*at = '\0';
		} else if (at && at - path != last_escaped_at && !at[1]) {
			pack_errf(err, errlen, "pm_location: %s: '@' without a weight", path);
			return -1;
		}
		if (!*path) {
			pack_errf(err, errlen, "pm_location: a weight without a directory");
			return -1;
		}
		if (cfg->nloc == PM_MAX_LOCATIONS) {
			pack_errf(err, errlen, "pm_location: more than %d locations", PM_MAX_LOCATIONS);
			return -1;
		}
		if (strlen(path) >= PM_LOCATION_LEN) {
			pack_errf(err, errlen, "pm_location: path longer than %d bytes", PM_LOCATION_LEN - 1);
			return -1;
		}
		strcpy(cfg->loc[cfg->nloc].path, path);
		cfg->loc[cfg->nloc].weight = (int)weight;
		cfg->nloc++;
	}
	return 0;
}

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
 * files named by numbers, and (@depth 0) s<N> directories of them. Anything
 * else is not ours: -1 with its name in @bad. Returns files removed.
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
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			goto foreign;
		if (all_digits(de->d_name) && S_ISREG(st.st_mode)) {
			if (!dry && unlinkat(dirfd, de->d_name, 0))
				goto foreign;
			removed++;
			continue;
		}
		if (depth == 0 && subdir_name(de->d_name) && S_ISDIR(st.st_mode)) {
			int sfd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
			if (!dry && unlinkat(dirfd, de->d_name, AT_REMOVEDIR))
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

/*
 * Takes @p->fd for this job: an exclusive lock (two jobs in one directory
 * would trip over each other's file names), and the directory must be empty
 * or hold only the engine's marker and what an interrupted run of the engine
 * left, which is removed. PostMark itself writes into any directory; the
 * engine never touches a file it did not create.
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
			log_err("postmark: pm_location %s holds '%s', which the engine did not create; give it an empty directory\n",
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
		fd = openat(p->fd, MARKER_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, MARKER_TEXT, strlen(MARKER_TEXT)) < 0) {
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

/* A directory name made of the job's name: letters, digits, '.', '_', '-'. */
static void job_dir_name(struct thread_data *td, char *buf, size_t len)
{
	const char *s = td->o.name ? td->o.name : "job";
	size_t n = 0;

	for (; *s && n + 12 < len; s++)
		buf[n++] = (isalnum((unsigned char)*s) || *s == '.' || *s == '-' || *s == '_') ? *s : '_';
	snprintf(buf + n, len - n, ".%u", td->subjob_number);
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

		job_dir_name(td, job, sizeof(job));
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
		const char *loc = pd->cfg.loc[i].path;

		if (jobs <= 1) {
			snprintf(p->path, sizeof(p->path), "%s", loc);
			p->fd = lfd[i];
		} else {
			/* numjobs: each job has its own pool in the location */
			char job[64];

			job_dir_name(td, job, sizeof(job));
			snprintf(p->path, sizeof(p->path), "%s/%s", loc, job);
			if (mkdirat(lfd[i], job, 0755) == 0)
				p->made = 1;
			else if (errno != EEXIST) {
				log_err("postmark: %s: %s\n", p->path, strerror(errno));
				goto fail_from;
			}
			p->fd = openat(lfd[i], job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
			if (mkdirat(p->fd, name, 0700) && errno != EEXIST) {
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
			fd = openat(p->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
		if (unlinkat(dfd, name, 0) == 0)
			n++;
		if (tmp)
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
			unlinkat(p->fd, name, AT_REMOVEDIR);
		}
		if (p->marked)
			unlinkat(p->fd, MARKER_NAME, 0);
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
	if (parse_locations(pd, o->location ? o->location : "", err, errlen))
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
	if (to->iodepth > 1) {
		log_err("postmark: iodepth must be 1: PostMark's operations depend on each other; use numjobs= for concurrency\n");
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
	if (open_pools(td, pd) || make_subdirs(pd))
		return 1;

	/* creates and appends get their own latency statistics in "write" */
	if (!td->ts.clat_prio[DDIR_WRITE]) {
		if (alloc_clat_prio_stat_ddir(&td->ts, DDIR_WRITE, 2))
			return 1;
		td->ts.clat_prio[DDIR_WRITE][0].ioprio = PRIO_CREATE;
		td->ts.clat_prio[DDIR_WRITE][1].ioprio = PRIO_APPEND;
	}

	to->iodepth = 1;
	/* one operation at a time: fio stamps the issue time before ->queue */
	td->flags |= (unsigned long long)FIO_SYNCIO << TD_ENG_FLAG_SHIFT;
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

static int pm_open_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int pm_close_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int pm_get_file_size(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int pm_invalidate(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

/* fio's unlink= must never remove anything: the files are the engine's. */
static int pm_unlink_file(struct thread_data *td, struct fio_file *f)
{
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

static void write_opstats(struct thread_data *td, struct pm_data *pd)
{
	const struct pm_counters *c = pm_sim_counters(pd->sim);
	char line[8192], name[512], loc[2048] = "", esc[PATH_MAX * 2];
	int len, fd, k, i, first = 1;
	size_t ln = 0;

	if (!pd->o->opstats_file || !*pd->o->opstats_file)
		return;
	pack_json_escape(td->o.name, name, sizeof(name));
	for (i = 0; i < pd->npools && ln + 16 < sizeof(loc); i++) {
		pack_json_escape(pd->pool[i].path, esc, sizeof(esc));
		ln += snprintf(loc + ln, sizeof(loc) - ln, "%s\"%.*s\"", i ? "," : "",
			       (int)(sizeof(loc) - ln - 8), esc);
	}
	len = snprintf(line, sizeof(line),
		       "{\"job\":\"%s\",\"subjob\":%u,\"locations\":[%s],\"finished\":%s,\"ops\":{",
		       name, td->subjob_number, loc, pd->finished ? "true" : "false");
	for (k = 0; k < OC_NR && len < (int)sizeof(line); k++) {
		const struct class_stats *s = &pd->st[k];

		if (!s->ops)
			continue;
		len += snprintf(line + len, sizeof(line) - len,
				"%s\"%s\":{\"ops\":%llu,\"bytes\":%llu,\"errors\":%llu,\"lat_mean_ns\":%llu,"
				"\"lat_min_ns\":%llu,\"lat_max_ns\":%llu,\"lat_p50_ns\":%llu,\"lat_p90_ns\":%llu,"
				"\"lat_p99_ns\":%llu,\"lat_p99.9_ns\":%llu}",
				first ? "" : ",", class_names[k],
				(unsigned long long)s->ops, (unsigned long long)s->bytes,
				(unsigned long long)s->errors,
				(unsigned long long)(s->lat_sum_ns / s->ops),
				(unsigned long long)s->lat_min_ns, (unsigned long long)s->lat_max_ns,
				(unsigned long long)percentile(s, 50), (unsigned long long)percentile(s, 90),
				(unsigned long long)percentile(s, 99), (unsigned long long)percentile(s, 99.9));
		first = 0;
	}
	if (len < (int)sizeof(line))
		len += snprintf(line + len, sizeof(line) - len,
				"},\"postmark\":{\"created\":%d,\"created_alone\":%d,\"read\":%d,\"appended\":%d,"
				"\"deleted\":%d,\"deleted_alone\":%d,\"bytes_read\":%.0f,\"bytes_written\":%.0f,"
				"\"transactions\":%d,\"out_of_files\":%s,\"table_full_skips\":%llu,"
				"\"file_full_skips\":%llu,\"seed\":%u,"
				"\"phase_ns\":{\"create\":%llu,\"transactions\":%llu,\"delete\":%llu}}}\n",
				c->created, c->created_alone, c->read, c->appended, c->deleted,
				c->deleted_alone, (double)c->bytes_read, (double)c->bytes_written,
				c->transactions_done, pd->out_of_files ? "true" : "false",
				(unsigned long long)pd->table_full, (unsigned long long)pd->file_full,
				pd->cfg.seed,
				(unsigned long long)(pd->finished ? pd->t_ns[1] - pd->t_ns[0] : 0),
				(unsigned long long)(pd->finished ? pd->t_ns[2] - pd->t_ns[1] : 0),
				(unsigned long long)(pd->finished ? pd->t_ns[3] - pd->t_ns[2] : 0));
	if (len >= (int)sizeof(line))
		return;
	fd = open(pd->o->opstats_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		log_err("postmark: pm_opstats_file %s: %s\n", pd->o->opstats_file, strerror(errno));
		return;
	}
	if (write(fd, line, len) != len)
		log_err("postmark: pm_opstats_file %s: short write\n", pd->o->opstats_file);
	close(fd);
}

static void pm_cleanup(struct thread_data *td)
{
	struct pm_data *pd = td->io_ops_data;

	if (!pd)
		return;
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
#define STR_OPT(field)							\
static int str_opt_##field(void *data, const char *val)		\
{									\
	return pack_store_str(&((struct pm_options *)data)->field, val);\
}
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

#define STR_OPTION(oname, field, long_name, helptext)			\
	{								\
		.name	= oname,					\
		.lname	= long_name,					\
		.type	= FIO_OPT_STR,					\
		.cb	= str_opt_##field,				\
		.off1	= offsetof(struct pm_options, field),		\
		.help	= helptext,					\
		.category = FIO_OPT_C_ENGINE,				\
		.group	= FIO_OPT_G_INVALID,				\
	}

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
	.flags			= FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL | FIO_SYNCIO,
	.init			= pm_init,
	.setup			= pm_setup,
	.prep			= pm_prep,
	.queue			= pm_queue,
	.cleanup		= pm_cleanup,
	.open_file		= pm_open_file,
	.close_file		= pm_close_file,
	.get_file_size		= pm_get_file_size,
	.invalidate		= pm_invalidate,
	.unlink_file		= pm_unlink_file,
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
