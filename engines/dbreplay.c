/*
 * dbreplay: database page replay as an external fio engine.
 *
 * Replays a dbtrace (docs/dbtrace-format.md: the file I/O one database
 * did, captured once with scripts/dbcapture.py or imported) on the device
 * under test, with fio's latency statistics per operation and the engine's
 * own per-class report (data read, log write, log fdatasync, ...) and replay
 * fidelity (how far behind the trace's schedule the replay ran).
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
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <unistd.h>
#include <time.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <linux/fs.h>
#include <liburing.h>

#include "fio.h"
#include "optgroup.h"
#include "fioglue.h"
#include "ioq.h"

#include "dbtrace.h"
#include "dbdepth.h"
#include "dbsched.h"
#include "dbprefetch.h"
#include "dbfilter.h"
#include "odirect.h"
#include "lathist.h"
#include "units.h"
#include "errmsg.h"
#include "sysutil.h"

#define ENGINE		"dbreplay"
#define MANIFEST	".fio-dbreplay"
#define MANIFEST_HEAD	"# fio dbreplay engine: it created the paths below (one a line) and removes only those\n"
/* numjobs: the job directory DIR/JOBNAME.K is the engine's too (removed once empty) */
#define MANIFEST_JOBDIR	"# it also created this directory\n"
#define SIDECAR_SUFFIX	".fio-dbreplay"
#define ERRLEN		1024
#define FILL_CHUNK	(1U << 20)
#define MAX_ERROR_LINES	10

enum timing { TM_ASAP, TM_ORIGINAL, TM_SCALED };
enum io_api { API_SYNC, API_IO_URING };
enum fill { FILL_DATA, FILL_SPARSE };
enum report { REP_SUMMARY, REP_NONE };
/* dbr_direct: what a trace's "direct" files get */
enum direct_mode { DIRECT_TRACE, DIRECT_TRY, DIRECT_OFF };

/* the "trim" direction's prios */
enum { TP_TRIM = 1, TP_TRUNCATE, TP_CREATE, TP_UNLINK, TP_NR = TP_UNLINK };

struct dbr_options {
	void *pad;		/* fio: off1 == 0 means "unset" */
	char *trace;
	char *target;
	char *device;
	char *overwrite_device;
	char *align;
	char *timing;
	char *speed;
	char *io_api;
	char *stream_depth;
	char *window;
	char *loops;
	char *ops;
	char *streams;
	char *files;
	unsigned int fill;
	unsigned int keep;
	unsigned int accept_incomplete;
	unsigned int reader_thread;
	unsigned int report;
	unsigned int direct_mode;
	char *report_file;
	char *record_log;
};

/* A trace file as replayed. */
struct rfile {
	const struct dbtrace_file *decl;
	int fd;			/* open descriptor (file or directory), -1 if none */
	int bfd;		/* direct=1: a buffered descriptor of the same file, for unaligned records */
	int present;		/* its name exists in the target (one-to-one mapping) */
	uint64_t region;	/* packed: where its region starts on the device */
};

/* Per-class statistics: file role x operation. */
struct cls {
	uint64_t bytes, errors;
	struct lathist lat;
};

struct dbr_job {
	struct dbr_options *o;
	char *trace_path;
	struct dbtrace *t;		/* the replay's reader */
	struct dbprefetch *pf;		/* its thread reading ahead (dbr_reader_thread=1) */
	const struct dbtrace_header *h;
	struct rfile *files;		/* by file id: DBTRACE_MAX_FILES entries */
	struct dbfilter filter;
	struct dbsched *sched;

	/* the target */
	int packed;
	int rootfd;			/* the target directory */
	char root[PATH_MAX];
	int tmproot;			/* a private directory made by the engine */
	int manifest_fd;
	char **owned;			/* hash set of the paths in the manifest */
	size_t nowned, owned_cap;	/* owned_cap: a power of two */
	int devfd;			/* packed: the device or file */
	int dev_dfd;			/* packed, direct=1: the same with O_DIRECT */
	char device[PATH_MAX];
	int dev_is_blk, dev_made;
	uint64_t span;

	/* replay */
	enum timing timing;
	enum io_api api;
	double speed;
	unsigned stream_depth, window;
	int depth_captured;		/* dbr_stream_depth unset or "captured" */
	uint64_t loops, loop;		/* loops: 0 = until fio stops the job */
	int eof;			/* the trace's records are all pushed */
	int pf_failed;			/* the reader thread could not start: no second try */
	int jobdir;			/* numjobs: the target is DIR/JOBNAME.K */
	int jobdir_made;		/* created by this run, or by an earlier one (its manifest says) */
	int have_t0;
	uint64_t t0;			/* time of the first record */
	uint64_t unit_ns;
	uint64_t start_ns;		/* replay clock origin of the loop */
	uint64_t first_start_ns;
	uint64_t last_done_ns;
	int started, finished, failed, direct, tdo_invalidate;
	int claimed;
	int overwrite_device;
	int partial;			/* the last loop was cut short */			/* the target passed its checks: cleanup may remove what is ours */
	uint64_t pushed, filtered, replayed, implicit_creates, skipped, unsupported, errors;
	char **incomplete;		/* the trace's "incomplete" lines, copied (the header goes with each loop's reader) */
	unsigned nincomplete;
	unsigned direct_files;		/* files the trace marks "direct" */
	int trace_direct;		/* they get O_DIRECT (dbr_direct, and the target allows it) */
	struct dbdepth *depth;		/* captured depths (NULL: dbr_stream_depth=N, or no latencies) */
	unsigned captured_depth;	/* the largest captured depth of a kept stream */
	uint64_t lat_records;		/* kept records with a completion time */
	/* kept reads and writes by the smallest alignment they miss (misaligned_at): all, of "direct" files */
	uint64_t misaligned_records[4], misaligned_direct[4];
	unsigned dio_align;		/* O_DIRECT alignment of the target (probed; default 512) */
	/* what the replay cannot honour: said at the start, repeated in the summary and report */
	char fidelity[4][320];
	unsigned nfidelity;

	/* from the check pass */
	uint64_t trace_records, trace_span_units;

	/* buffers */
	char *rbuf, *wbuf;
	size_t buf_len, wfilled;

	FILE *rlog;			/* dbr_record_log */

	/* statistics */
	struct cls *cls[DBTRACE_ROLE_NR][DBTRACE_OP_NR];
	struct lathist lag;
	uint64_t behind_end_ns;		/* last loop: replay end minus trace end (scaled) */
	uint64_t trace_ns_total, replay_ns_total;
	uint64_t next_wake;		/* a wait's earliest due time, for ->getevents */

	/* io_uring */
	int uring, ring_ok;
	struct io_uring ring;
	unsigned sqes;			/* submitted or prepared, not reaped */
	struct pack_ioq ioq;		/* io_us queued, completed, handed to fio */
	int ddir_held;
	unsigned saved_td_ddir;
};

static struct ioengine_ops ioengine;

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
static inline uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + ts->tv_nsec;
}

static inline uint64_t dbr_now(void)
{
	struct timespec ts;

	fio_gettime(&ts, NULL);
	return ts_ns(&ts);
}

static void sleep_until(uint64_t abs_ns)
{
	uint64_t now;

	while ((now = dbr_now()) < abs_ns) {
		uint64_t left = abs_ns - now;
		struct timespec ts = { .tv_sec = left / 1000000000ULL,
				       .tv_nsec = left % 1000000000ULL };

		nanosleep(&ts, NULL);	/* EINTR or early: the loop sleeps again */
	}
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

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static char **owned_slot(char **tab, size_t cap, const char *path)
{
	size_t i = str_hash(path) & (cap - 1);

	while (tab[i] && strcmp(tab[i], path))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static int owned(const struct dbr_job *dj, const char *path)
{
	return dj->owned_cap && *owned_slot(dj->owned, dj->owned_cap, path);
}

/* Adds @path to the set; with @log, appends it to the manifest first (before it is created). */
static int own_path(struct dbr_job *dj, const char *path, int log)
{
	size_t n = strlen(path), i;

	if (owned(dj, path))
		return 0;
	if (log && dj->manifest_fd >= 0) {
		struct iovec iov[2] = { { (void *)path, n }, { (void *)"\n", 1 } };

		errno = 0;
		if (NOINTR(writev(dj->manifest_fd, iov, 2)) != (ssize_t)n + 1)
			return errno ? -errno : -EIO;
	}
	if ((dj->nowned + 1) * 2 > dj->owned_cap) {
		size_t cap = dj->owned_cap ? dj->owned_cap * 2 : 256;
		char **tab = calloc(cap, sizeof(*tab));

		if (!tab)
			return -ENOMEM;
		for (i = 0; i < dj->owned_cap; i++)
			if (dj->owned[i])
				*owned_slot(tab, cap, dj->owned[i]) = dj->owned[i];
		free(dj->owned);
		dj->owned = tab;
		dj->owned_cap = cap;
	}
	if (!(*owned_slot(dj->owned, dj->owned_cap, path) = strdup(path)))
		return -ENOMEM;
	dj->nowned++;
	return 0;
}

static int own(struct dbr_job *dj, const char *path)
{
	return own_path(dj, path, 1);
}

/*
 * The directory holding @path (relative to the target), opened one component
 * at a time without following symlinks; missing directories are created
 * (and recorded as the engine's) when @create. *@base: the last component.
 * A descriptor to close, or -errno.
 */
static int open_parent(struct dbr_job *dj, const char *path, int create, const char **base)
{
	char comp[DBTRACE_MAX_PATH + 1];
	const char *p = path, *slash;
	int fd = dup(dj->rootfd);

	if (fd < 0)
		return -errno;
	while ((slash = strchr(p, '/'))) {
		int next;

		memcpy(comp, path, (size_t)(slash - path));
		comp[slash - path] = '\0';
		next = NOINTR(openat(fd, comp + (p - path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
		if (next < 0 && errno == ENOENT && create) {
			int ret = own(dj, comp);

			if (ret) {
				close(fd);
				return ret;
			}
			if (NOINTR(mkdirat(fd, comp + (p - path), 0755)) && errno != EEXIST) {
				ret = -errno;
				close(fd);
				return ret;
			}
			next = NOINTR(openat(fd, comp + (p - path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
		}
		if (next < 0) {
			int ret = -errno;

			close(fd);
			/* a symlink in the path: ELOOP or ENOTDIR with O_NOFOLLOW */
			return ret;
		}
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*base = p;
	return fd;
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
static int make_buffers(struct dbr_job *dj, size_t len)
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

/* Whether a file's reads and writes go through O_DIRECT: all with direct=1, else the trace's flag. */
static int file_direct(const struct dbr_job *dj, const struct dbtrace_file *d)
{
	return d && d->role != DBTRACE_ROLE_DIRECTORY && (dj->direct || (dj->trace_direct && d->direct));
}

/*
 * O_DIRECT needs reads and writes aligned to the logical block: @align (the
 * target's, probed; 512 if it could not be) and every smaller power of two
 * down to 512 (index 0: 512, 1: 1024, 2: 2048, 3: 4096). The smallest
 * alignment @r misses, or 4 if it has them all (or is no read or write).
 */
static unsigned misaligned_at(const struct dbtrace_rec *r)
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
	return misaligned_at(r) <= align_index(dj->dio_align) &&
	       file_direct(dj, dj->files[r->file].decl);
}

/* Records done through a buffered descriptor: unaligned ones of O_DIRECT files. */
static uint64_t buffered_records(const struct dbr_job *dj)
{
	uint64_t n = 0;
	unsigned k;

	for (k = 0; k <= align_index(dj->dio_align); k++)
		n += dj->direct ? dj->misaligned_records[k]
			: dj->trace_direct ? dj->misaligned_direct[k] : 0;
	return n;
}

/* The descriptor and offset a record's I/O goes to. */
static int io_target(struct dbr_job *dj, const struct dbtrace_rec *r, uint64_t *off)
{
	struct rfile *f = &dj->files[r->file];
	int buffered = unaligned(dj, r);

	*off = r->off;
	if (dj->packed) {
		*off += f->region;
		return buffered || dj->dev_dfd < 0 || !file_direct(dj, f->decl) ? dj->devfd : dj->dev_dfd;
	}
	return buffered && f->bfd >= 0 ? f->bfd : f->fd;
}

/* A line the replay cannot honour: said now, repeated in the summary and the report. */
static void __attribute__((format(printf, 2, 3))) fidelity(struct dbr_job *dj, const char *fmt, ...)
{
	va_list ap;
	char *line;

	if (dj->nfidelity == sizeof(dj->fidelity) / sizeof(dj->fidelity[0]))
		return;
	line = dj->fidelity[dj->nfidelity++];
	va_start(ap, fmt);
	vsnprintf(line, sizeof(dj->fidelity[0]), fmt, ap);
	va_end(ap);
	log_err("dbreplay: %s\n", line);
}

/*
 * The target refuses O_DIRECT, which the trace's "direct" files were
 * captured with: dbr_direct=trace refuses the replay (1), dbr_direct=try
 * says so and goes on through the page cache (0).
 */
static int direct_refused(struct dbr_job *dj, const char *where)
{
	if (!dj->trace_direct)
		return 0;
	dj->trace_direct = 0;
	if (dj->o->direct_mode == DIRECT_TRY) {
		fidelity(dj, "%u file(s) the database opened with O_DIRECT are replayed through the page cache: %s refuses O_DIRECT (dbr_direct=try)",
			 dj->direct_files, where);
		return 0;
	}
	log_err("dbreplay: %s refuses O_DIRECT, which %u file(s) of %s were captured with; replay on a file system that has it, or set dbr_direct=try (page cache, said in the report) or dbr_direct=off\n",
		where, dj->direct_files, dj->trace_path);
	return 1;
}

static int open_flags(const struct dbr_job *dj)
{
	return O_RDWR | O_NOFOLLOW | O_CLOEXEC;
}

/*
 * Makes @fd (opened buffered) the file's descriptor. With direct=1 the file
 * gets an O_DIRECT descriptor for its aligned reads and writes and keeps the
 * buffered one for the rest, as databases do: InnoDB opens its tablespaces
 * with O_DIRECT but reads a 24-byte header through the page cache elsewhere.
 */
static int set_fd(struct dbr_job *dj, struct rfile *f, int fd)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->bfd >= 0)
		close(f->bfd);
	f->fd = fd;
	f->bfd = -1;
	if (fd >= 0 && file_direct(dj, f->decl)) {
		char self[64];
		int dfd;

		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		dfd = NOINTR(open(self, O_RDWR | O_CLOEXEC | O_DIRECT));
		if (dfd < 0 && errno == EINVAL) {
			/* tmpfs before Linux 6.6, ramfs: say so once, replay through the page cache */
			if (dj->direct)
				log_err("dbreplay: direct=1: %s does not support O_DIRECT; the replay goes through the page cache\n",
					dj->root);
			dj->direct = 0;
			return direct_refused(dj, dj->root) ? -EINVAL : 0;
		}
		if (dfd < 0)
			return -errno;
		f->bfd = fd;
		f->fd = dfd;
	}
	return 0;
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

	if ((ret = own(dj, f->decl->path)))
		return ret;
	dfd = open_parent(dj, f->decl->path, 1, &base);
	if (dfd < 0)
		return dfd;
	fd = NOINTR(openat(dfd, base, open_flags(dj) | O_CREAT, 0644));
	ret = fd < 0 ? -errno : 0;
	close(dfd);
	if (ret || (ret = set_fd(dj, f, fd)))
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
	if ((ret = own(dj, path)))
		return ret;
	dfd = open_parent(dj, path, 1, &base);
	if (dfd < 0)
		return dfd;
	if (f->decl->role == DBTRACE_ROLE_DIRECTORY) {
		if (NOINTR(mkdirat(dfd, base, 0755)))
			ret = -errno;
		else if ((fd = NOINTR(openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))) < 0)
			ret = -errno;
		else
			ret = set_fd(dj, f, fd);
	} else {
		/* O_EXCL: a name that appeared meanwhile is not the engine's */
		fd = NOINTR(openat(dfd, base, open_flags(dj) | O_CREAT | O_EXCL, 0644));
		if (fd < 0)
			ret = -errno;
		else
			ret = set_fd(dj, f, fd);
	}
	close(dfd);
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
	dfd = open_parent(dj, f->decl->path, 0, &base);
	if (dfd < 0)
		return dfd;
	if (NOINTR(unlinkat(dfd, base, f->decl->role == DBTRACE_ROLE_DIRECTORY ? AT_REMOVEDIR : 0)))
		ret = -errno;
	close(dfd);
	if (!ret) {
		/* an open file stays usable, as on POSIX; a directory's descriptor is dropped */
		f->present = 0;
		if (f->decl->role == DBTRACE_ROLE_DIRECTORY && f->fd >= 0)
			set_fd(dj, f, -1);
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
static int run_meta(struct dbr_job *dj, const struct dbtrace_rec *r, int *err)
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

/* A whole read or write with pread/pwrite: short transfers and EINTR continue. */
static int rw_sync(struct dbr_job *dj, const struct dbtrace_rec *r, uint64_t *bytes)
{
	uint64_t off, done = 0;
	int fd = io_target(dj, r, &off);

	while (done < r->len) {
		ssize_t n = r->op == DBTRACE_READ
			? pread(fd, dj->rbuf + done, r->len - done, (off_t)(off + done))
			: pwrite(fd, dj->wbuf + done, r->len - done, (off_t)(off + done));

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

/* One record with system calls, one at a time; 0 or -errno. */
static int run_sync(struct dbr_job *dj, const struct dbtrace_rec *r, uint64_t *bytes)
{
	uint64_t off;
	int fd, err;

	*bytes = 0;
	if (!run_meta(dj, r, &err))
		return err;
	fd = io_target(dj, r, &off);
	switch (r->op) {
	case DBTRACE_READ:
	case DBTRACE_WRITE:
		return rw_sync(dj, r, bytes);
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

/* ------------------------------------------------------------------ */
/* fio's view of a record, and its completion                          */
/* ------------------------------------------------------------------ */

static enum fio_ddir ddir_of(const struct dbsched_item *it, unsigned *prio, int *prio_ix)
{
	*prio = 0;
	*prio_ix = 0;
	switch (it->rec.op) {
	case DBTRACE_READ:
	case DBTRACE_WRITE:
		*prio = it->role + 1;
		*prio_ix = (int)it->role;
		return it->rec.op == DBTRACE_READ ? DDIR_READ : DDIR_WRITE;
	case DBTRACE_FSYNC:
	case DBTRACE_FDATASYNC:
	case DBTRACE_SYNC_FILE_RANGE:
		/*
		 * All three are fio's DDIR_SYNC, so "sync" in fio's JSON counts
		 * them all on every fio. fio up to 3.42 indexes its 4-entry
		 * total_io_u[] with an io_u's direction: DDIR_DATASYNC and
		 * DDIR_SYNC_FILE_RANGE wrote past it, into short_io_u[] (fio
		 * commit af511749 fixed it after 3.42). The engine does the
		 * record's own call; its report keeps the three apart.
		 */
		return DDIR_SYNC;
	case DBTRACE_TRIM:
		*prio = TP_TRIM;
		break;
	case DBTRACE_TRUNCATE:
		*prio = TP_TRUNCATE;
		break;
	case DBTRACE_CREATE:
		*prio = TP_CREATE;
		break;
	default:
		*prio = TP_UNLINK;
	}
	*prio_ix = (int)*prio - 1;
	return DDIR_TRIM;
}

/* A record's I/O has ended (@err: 0 or -errno): statistics, fio's io_u, the window. */
static void finish(struct dbr_job *dj, int slot, struct io_u *io_u, int err, uint64_t bytes,
		   uint64_t end)
{
	struct dbsched_item *it = dbsched_item(dj->sched, slot);
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
	if (err) {
		/* with continue_on_error a full disk fails every later write: say it a few times */
		if (dj->errors < MAX_ERROR_LINES)
			log_err("dbreplay: %s line %llu: %s %s: %s\n", dj->trace_path,
				(unsigned long long)it->rec.line, dbtrace_op_name(it->rec.op),
				path_of(dj, it->rec.file), strerror(-err));
		else if (dj->errors == MAX_ERROR_LINES)
			log_err("dbreplay: further errors are counted, not shown (the report has them per class)\n");
		dj->errors++;
		dj->failed = 1;
	}
	if (io_u) {
		io_u->error = err ? -err : 0;
		/* fio requeues a short transfer: report what was done, as done */
		io_u->xfer_buflen = bytes;
		io_u->buflen = bytes;
		io_u->resid = 0;
		io_u->engine_data = NULL;
		/* fio's latency starts here; fio before 3.31 overwrote it after ->queue */
		io_u->issue_time.tv_sec = it->issue_ns / 1000000000ULL;
		io_u->issue_time.tv_nsec = it->issue_ns % 1000000000ULL;
	}
	dj->replayed++;
	if (dj->rlog)
		fprintf(dj->rlog, "%llu %llu %u %u %s %llu %llu %llu %llu %d\n",
			(unsigned long long)dj->loop, (unsigned long long)it->rec.line,
			it->rec.stream, it->rec.file, dbtrace_op_name(it->rec.op),
			(unsigned long long)it->due_ns,
			(unsigned long long)(it->issue_ns - dj->start_ns),
			(unsigned long long)(end - dj->start_ns), (unsigned long long)bytes, -err);
	if (end - dj->start_ns > dj->last_done_ns)
		dj->last_done_ns = end - dj->start_ns;
	dbsched_done(dj->sched, slot, end - dj->start_ns);
}

/* ------------------------------------------------------------------ */
/* Feeding the window, loops                                           */
/* ------------------------------------------------------------------ */

static uint64_t due_of(struct dbr_job *dj, uint64_t time)
{
	double d;

	if (dj->timing == TM_ASAP || time == DBTRACE_NO_TIME)
		return 0;
	if (!dj->have_t0) {
		dj->t0 = time;
		dj->have_t0 = 1;
	}
	if (time <= dj->t0)
		return 0;
	d = (double)(time - dj->t0) * (double)dj->unit_ns / dj->speed;
	return d >= 1.8e19 ? UINT64_MAX - 1 : (uint64_t)d;
}

/*
 * With dbr_reader_thread=1 a thread parses (and inflates) the trace ahead,
 * off the replaying thread's clock: started once the trace is open, before
 * the clock of each pass starts, so that its first block is ready. If it
 * cannot start, the replaying thread reads the trace itself, as with 0.
 */
static void start_reader(struct dbr_job *dj)
{
	char err[ERRLEN];

	if (dj->pf || !dj->o->reader_thread || dj->pf_failed)
		return;
	dj->pf = dbprefetch_start(dj->t, 0, 0, err, sizeof(err));
	if (!dj->pf) {
		log_err("dbreplay: %s; the trace is read by the replaying thread\n", err);
		dj->pf_failed = 1;
	}
}

/* The next record of this pass over the trace. */
static int next_record(struct dbr_job *dj, struct dbtrace_rec *r)
{
	start_reader(dj);
	return dj->pf ? dbprefetch_next(dj->pf, r) : dbtrace_next(dj->t, r);
}

/* Pushes records until the window is full or the trace ends; -1 on a trace error. */
static int fill_window(struct dbr_job *dj, uint64_t now_rel)
{
	struct dbtrace_rec r;

	while (!dj->eof && !dbsched_full(dj->sched)) {
		int ret = next_record(dj, &r);

		if (ret < 0) {
			log_err("dbreplay: %s\n", dj->pf ? dbprefetch_error(dj->pf) : dbtrace_error(dj->t));
			return -1;
		}
		if (ret == 0) {
			dj->eof = 1;
			break;
		}
		/* the first record sets the origin even if filtered out */
		uint64_t due = due_of(dj, r.time);

		if (!dbfilter_match(&dj->filter, &r)) {
			dj->filtered++;
			continue;
		}
		int depth = dj->depth ? dbdepth_next(dj->depth, &r) : 0;

		if (depth < 0) {
			log_err("dbreplay: out of memory for the trace's captured depths\n");
			return -1;
		}
		dbsched_push_depth(dj->sched, &r, dj->files[r.file].decl->role, due, now_rel,
				   (unsigned)depth);
		dj->pushed++;
	}
	return 0;
}

static int layout(struct dbr_job *dj, int first);

/* The end of one pass over the trace: 1 if another loop starts, 0 if the replay is over. */
static int next_loop(struct dbr_job *dj)
{
	char err[ERRLEN];
	uint64_t end = dbr_now();
	/* the trace's own duration (scaled in timed modes: the schedule the replay had) */
	double trace_ns = (double)dj->trace_span_units * (double)dj->unit_ns / dj->speed;

	dj->replay_ns_total += end - dj->start_ns;
	dj->trace_ns_total += (uint64_t)trace_ns;
	if (dj->timing != TM_ASAP)
		dj->behind_end_ns = dj->last_done_ns > trace_ns
			? dj->last_done_ns - (uint64_t)trace_ns : 0;
	dj->loop++;
	if (dj->loops && dj->loop >= dj->loops)
		return 0;
	dbprefetch_stop(dj->pf);
	dj->pf = NULL;
	dbtrace_close(dj->t);
	dj->t = dbtrace_open(dj->trace_path, err, sizeof(err));
	if (!dj->t) {
		log_err("dbreplay: %s\n", err);
		return 0;
	}
	dj->h = dbtrace_header(dj->t);
	start_reader(dj);	/* parses the first block while the files are reset */
	/* back to the state before the first record, off the clock of the next loop */
	if (layout(dj, 0))
		return 0;
	dbsched_restart(dj->sched);
	if (dj->depth)
		dbdepth_reset(dj->depth);
	dj->eof = 0;
	dj->have_t0 = 0;
	dj->last_done_ns = 0;
	dj->start_ns = dbr_now();
	return 1;
}

/* ------------------------------------------------------------------ */
/* ->prep and ->queue                                                   */
/* ------------------------------------------------------------------ */

/*
 * ->prep decides which record this io_u carries: the scheduler's pick, after
 * sleeping for its due time if nothing is in flight. With records in flight
 * and none free to go, the io_u is a "wait": ->queue answers FIO_Q_BUSY, fio
 * reaps completions and prepares the io_u again.
 */
static int dbr_prep(struct thread_data *td, struct io_u *io_u)
{
	struct dbr_job *dj = td->io_ops_data;
	enum fio_ddir ddir = DDIR_SYNC;
	unsigned prio = 0;
	int slot = -1, prio_ix = 0;

	if (!dj->started) {
		dj->started = 1;
		dj->start_ns = dj->first_start_ns = dbr_now();
	}
	io_u->engine_data = NULL;
	dj->next_wake = UINT64_MAX;	/* set again below only for a wait */
	while (!dj->finished) {
		/* as fast as possible: the scheduler needs no clock */
		uint64_t wake, now = dj->timing == TM_ASAP ? dj->start_ns : dbr_now();

		if (fill_window(dj, now - dj->start_ns)) {
			dj->failed = 1;
			dj->finished = 1;
			td_verror(td, EINVAL, "dbreplay trace");
			break;
		}
		slot = dbsched_pick(dj->sched, now - dj->start_ns, &wake);
		if (slot >= 0)
			break;
		if (dbsched_inflight(dj->sched) || pack_ioq_waiting(&dj->ioq)) {
			dj->next_wake = wake;
			break;		/* a wait */
		}
		if (wake != UINT64_MAX) {
			sleep_until(dj->start_ns + wake);
			continue;
		}
		if (dbsched_count(dj->sched) || !dj->eof) {
			log_err("dbreplay: internal error: %u records wait for nothing\n",
				dbsched_count(dj->sched));
			dj->failed = dj->finished = 1;
			break;
		}
		if (!next_loop(dj))
			dj->finished = 1;
	}
	if (dj->finished && slot < 0) {
		fio_mark_td_terminate(td);
		return 1;
	}
	if (slot >= 0) {
		struct dbsched_item *it = dbsched_item(dj->sched, slot);

		ddir = ddir_of(it, &prio, &prio_ix);
		it->user = io_u;
		io_u->engine_data = (void *)(intptr_t)(slot + 1);
		if (dj->timing != TM_ASAP) {
			uint64_t now = dbr_now() - dj->start_ns;

			lathist_add(&dj->lag, now > it->due_ns ? now - it->due_ns : 0);
		}
	}
	io_u->ddir = ddir;
	pack_io_u_prio(io_u, prio, prio_ix);
	if (dj->ddir_held)
		pack_ddir_restore(td, dj->saved_td_ddir);
	pack_ddir_allow(td, ddir, &dj->saved_td_ddir);
	dj->ddir_held = 1;
	return 0;
}

static enum fio_q_status uring_queue(struct thread_data *td, struct dbr_job *dj,
				     struct io_u *io_u, int slot);

static enum fio_q_status dbr_queue(struct thread_data *td, struct io_u *io_u)
{
	struct dbr_job *dj = td->io_ops_data;
	int slot = (int)(intptr_t)io_u->engine_data - 1;
	struct dbsched_item *it;
	uint64_t bytes;
	int err;

	if (slot < 0)
		return FIO_Q_BUSY;	/* a wait: ddir stays allowed for the next ->prep */
	pack_ddir_restore(td, dj->saved_td_ddir);
	dj->ddir_held = 0;
	it = dbsched_item(dj->sched, slot);
	if (dj->uring)
		return uring_queue(td, dj, io_u, slot);
	/* fio has just stamped it on the same clock (FIO_SYNCIO): one reading less a record */
	it->issue_ns = fio_fill_issue_time(td) ? ts_ns(&io_u->issue_time) : dbr_now();
	err = run_sync(dj, &it->rec, &bytes);
	finish(dj, slot, io_u, err, bytes, dbr_now());
	/* fio leaves this to engines with a ->commit (the io_uring mode's) */
	io_u_mark_submit(td, 1);
	io_u_mark_complete(td, 1);
	return FIO_Q_COMPLETED;
}

/* ------------------------------------------------------------------ */
/* dbr_io_api=io_uring                                                 */
/* ------------------------------------------------------------------ */

static void uring_submit(struct dbr_job *dj)
{
	int ret;

	do
		ret = io_uring_submit(&dj->ring);
	while (ret == -EINTR || ret == -EAGAIN);
}

static struct io_uring_sqe *get_sqe(struct dbr_job *dj)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&dj->ring);

	if (!sqe) {
		uring_submit(dj);
		sqe = io_uring_get_sqe(&dj->ring);
	}
	return sqe;
}

/* Prepares the SQE for what is left of @slot's record (a read or write may be resumed). */
static int uring_prep_rec(struct dbr_job *dj, int slot)
{
	struct dbsched_item *it = dbsched_item(dj->sched, slot);
	const struct dbtrace_rec *r = &it->rec;
	struct io_uring_sqe *sqe = get_sqe(dj);
	uint64_t off, done = it->done_bytes;
	int fd = io_target(dj, r, &off);

	if (!sqe)
		return -EBUSY;
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

static enum fio_q_status uring_queue(struct thread_data *td, struct dbr_job *dj,
				     struct io_u *io_u, int slot)
{
	struct dbsched_item *it = dbsched_item(dj->sched, slot);
	int err = 0, ret;

	fio_gettime(&io_u->issue_time, NULL);	/* PACK_ASYNCIO_SETS_ISSUE_TIME */
	it->issue_ns = ts_ns(&io_u->issue_time);
	it->done_bytes = 0;
	/*
	 * Done at once: namespace operations, truncate, a record that failed to
	 * get its descriptor, a discard on a block device, a sync_file_range
	 * longer than io_uring's 32-bit length.
	 */
	ret = run_meta(dj, &it->rec, &err);
	if (ret && ((it->rec.op == DBTRACE_TRIM && dj->packed && dj->dev_is_blk) ||
		    (it->rec.op == DBTRACE_SYNC_FILE_RANGE && it->rec.len > UINT32_MAX))) {
		uint64_t bytes;

		err = run_sync(dj, &it->rec, &bytes);
		ret = 0;
	}
	if (!ret) {
		finish(dj, slot, io_u, err, 0, dbr_now());
		return pack_ioq_done_in_queue(td, &dj->ioq, io_u);
	}
	err = uring_prep_rec(dj, slot);
	if (err) {
		finish(dj, slot, io_u, err, 0, dbr_now());
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

	if (res == -EINTR || res == -EAGAIN) {
		if (uring_prep_rec(dj, slot) == 0)
			return;
		err = -EIO;
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
			else if (uring_prep_rec(dj, slot) == 0)
				return;
			else
				err = -EIO;
		}
	}
	finish(dj, slot, io_u, err,
	       r->op == DBTRACE_READ || r->op == DBTRACE_WRITE ? it->done_bytes
	       : (r->op == DBTRACE_TRIM && !err ? r->len : 0), dbr_now());
	if (io_u)
		pack_ioq_completed(&dj->ioq, io_u);
}

/* Reaps completions (waiting for one if @wait, at most until @deadline_ns); 0 or -errno. */
static int reap(struct dbr_job *dj, int wait, uint64_t deadline_ns)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
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
	io_uring_for_each_cqe(&dj->ring, head, cqe) {
		int slot = (int)(intptr_t)io_uring_cqe_get_data(cqe) - 1;

		n++;
		dj->sqes--;
		uring_complete(dj, slot, cqe->res);
	}
	io_uring_cq_advance(&dj->ring, n);
	uring_submit(dj);	/* resubmitted short transfers */
	return 0;
}

static int dbr_commit(struct thread_data *td)
{
	struct dbr_job *dj = td->io_ops_data;

	if (!dj->uring)
		return 0;
	uring_submit(dj);
	pack_ioq_commit(td, &dj->ioq);
	return 0;
}

/*
 * Waits for @min completions, but in timed replay not past the due time of
 * the next record: fio then prepares it (0 events is fine with fio).
 */
static int dbr_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			const struct timespec *t)
{
	struct dbr_job *dj = td->io_ops_data;
	uint64_t deadline = UINT64_MAX;
	int ret;

	if (!dj->uring)
		return 0;
	dbr_commit(td);
	pack_ioq_forget_returned(&dj->ioq);
	/* ->prep saw a record that waits for its time only */
	if (dj->timing != TM_ASAP && dj->next_wake != UINT64_MAX)
		deadline = dj->start_ns + dj->next_wake;
	while (dj->ioq.ndone < min && dj->sqes) {
		ret = reap(dj, 1, deadline);
		if (ret)
			return ret;
		if (deadline != UINT64_MAX && dbr_now() >= deadline)
			break;
	}
	if (dj->sqes)
		reap(dj, 0, UINT64_MAX);
	return pack_ioq_hand_out(&dj->ioq, max);
}

static struct io_u *dbr_event(struct thread_data *td, int event)
{
	struct dbr_job *dj = td->io_ops_data;

	return pack_ioq_event(&dj->ioq, event);
}

/* ------------------------------------------------------------------ */
/* What keeps the replay from the depths the trace's completion times give. */
static void depth_notes(struct dbr_job *dj, unsigned iodepth, unsigned window)
{
	unsigned d = dj->captured_depth;

	if (!dj->depth_captured && dj->lat_records && (d > 1 || dj->stream_depth > 1))
		fidelity(dj, "dbr_stream_depth=%u replaces the depths the trace's completion times give (1 to %u)",
			 dj->stream_depth, d);
	if (!dj->depth || d < 2)
		return;
	if (!dj->uring)
		fidelity(dj, "the trace's streams had up to %u requests in flight (its completion times); dbr_io_api=sync replays one record at a time: use dbr_io_api=io_uring with iodepth>=%u",
			 d, d);
	else if (iodepth < d)
		fidelity(dj, "a stream of the trace had %u requests in flight; iodepth=%u keeps the replay below that",
			 d, iodepth);
	else if (window < d)
		fidelity(dj, "a stream of the trace had %u requests in flight; dbr_window=%u keeps the replay below that",
			 d, window);
}

/* The target: one-to-one files in a directory, or regions of a device */
/* ------------------------------------------------------------------ */

static int fill_range(struct dbr_job *dj, int fd, uint64_t from, uint64_t to)
{
	uint64_t start = from;

	while (from < to) {
		/* after a short write, on from where it stopped in the buffer too */
		size_t at = (size_t)((from - start) % dj->buf_len);
		size_t n = to - from > dj->buf_len - at ? dj->buf_len - at : (size_t)(to - from);
		ssize_t w;

		w = pwrite(fd, dj->wbuf + at, n, (off_t)from);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		from += (uint64_t)w;
	}
	return 0;
}

/* A file of the trace as it is before the first record: present at its size, or absent. */
static int lay_file(struct dbr_job *dj, struct rfile *f)
{
	const struct dbtrace_file *d = f->decl;
	const char *base;
	struct stat st;
	int dfd, fd, ret = 0;

	set_fd(dj, f, -1);
	f->present = 0;
	dfd = open_parent(dj, d->path, d->exists, &base);
	if (dfd == -ENOENT && !d->exists)
		return 0;
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* the engine's (checked at init): back to the state before the trace */
		if (!d->exists) {
			if (NOINTR(unlinkat(dfd, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0)))
				ret = -errno;
			goto out;
		}
	} else if (errno != ENOENT) {
		ret = -errno;
		goto out;
	} else if (!d->exists) {
		goto out;
	} else if ((ret = own(dj, d->path))) {
		goto out;
	} else if (d->role == DBTRACE_ROLE_DIRECTORY) {
		if (NOINTR(mkdirat(dfd, base, 0755))) {
			ret = -errno;
			goto out;
		}
	} else {
		fd = NOINTR(openat(dfd, base, open_flags(dj) | O_CREAT | O_EXCL, 0644));
		if (fd < 0) {
			ret = -errno;
			goto out;
		}
		close(fd);
		st.st_size = 0;
	}
	if (d->role == DBTRACE_ROLE_DIRECTORY) {
		fd = NOINTR(openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	} else {
		fd = NOINTR(openat(dfd, base, open_flags(dj)));
		if (fd >= 0 && fstat(fd, &st) == 0) {
			if ((uint64_t)st.st_size > d->size)
				ret = NOINTR(ftruncate(fd, (off_t)d->size)) ? -errno : 0;
			else if (dj->o->fill == FILL_DATA)
				ret = fill_range(dj, fd, (uint64_t)st.st_size, d->size);
			if (!ret && (uint64_t)st.st_size != d->size && NOINTR(ftruncate(fd, (off_t)d->size)))
				ret = -errno;
		}
	}
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (!ret)
		ret = set_fd(dj, f, fd);
	else
		close(fd);
	if (!ret)
		f->present = 1;
out:
	close(dfd);
	return ret;
}

/* Drops the files from the page cache, so reads go to the device as in production. */
static void invalidate(struct dbr_job *dj)
{
	unsigned i;

	if (dj->packed) {
		NOINTR(fsync(dj->devfd));
		posix_fadvise(dj->devfd, 0, 0, POSIX_FADV_DONTNEED);
		return;
	}
	for (i = 0; i < dj->h->nfiles; i++) {
		struct rfile *f = &dj->files[dj->h->files[i].id];

		if (f->fd >= 0 && f->decl->role != DBTRACE_ROLE_DIRECTORY) {
			NOINTR(fdatasync(f->fd));
			posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);
		}
	}
}

/*
 * Files and directories as they were before the first record; @first: the
 * first time (else between loops, when every path is the engine's).
 * Directories that exist are made first, then files, then what must be
 * absent is removed deepest first.
 */
static int layout(struct dbr_job *dj, int first)
{
	const struct dbtrace_header *h = dj->h;
	unsigned i, pass;
	int ret;

	for (i = 0; i < h->nfiles; i++)
		dj->files[h->files[i].id].decl = &h->files[i];
	if (dj->packed) {
		if (!first)
			return 0;
		for (i = 0; i < h->nfiles; i++) {
			const struct dbtrace_file *d = &h->files[i];

			if (d->role != DBTRACE_ROLE_DIRECTORY && d->exists && dj->o->fill == FILL_DATA &&
			    (ret = fill_range(dj, dj->devfd, dj->files[d->id].region,
					      dj->files[d->id].region + d->size))) {
				log_err("dbreplay: dbr_device %s: writing the region of %s: %s\n",
					dj->device, d->path, strerror(-ret));
				return 1;
			}
		}
		invalidate(dj);
		return 0;
	}
	/* pass 0: directories that exist; 1: files; 2: directories that must not, in reverse */
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < h->nfiles; i++) {
			const struct dbtrace_file *d = &h->files[pass == 2 ? h->nfiles - 1 - i : i];
			struct rfile *f = &dj->files[d->id];
			int isdir = d->role == DBTRACE_ROLE_DIRECTORY;

			if (!strcmp(d->path, ".")) {
				if (pass == 0) {
					set_fd(dj, f, dup(dj->rootfd));
					f->present = 1;
				}
				continue;
			}
			if ((pass == 0 && !(isdir && d->exists)) || (pass == 1 && isdir) ||
			    (pass == 2 && !(isdir && !d->exists)))
				continue;
			ret = lay_file(dj, f);
			if (ret) {
				log_err("dbreplay: dbr_target %s: %s %s: %s\n", dj->root,
					d->exists ? "creating" : "removing", d->path, strerror(-ret));
				return 1;
			}
		}
	}
	if (dj->tdo_invalidate)
		invalidate(dj);
	return 0;
}

/* Reads the manifest of a target the engine used before; 0 or 1 (error said). */
static int read_manifest(struct dbr_job *dj)
{
	char line[DBTRACE_MAX_PATH + 2], why[256];
	unsigned long n = 0;
	FILE *fp;
	int fd;

	fd = NOINTR(openat(dj->rootfd, MANIFEST, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		log_err("dbreplay: dbr_target %s: %s: %s\n", dj->root, MANIFEST, strerror(errno));
		return 1;
	}
	fp = fdopen(fd, "r");
	if (!fp) {
		close(fd);
		return 1;
	}
	while (fgets(line, sizeof(line), fp)) {
		size_t len = strlen(line);

		n++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (dj->jobdir && !strncmp(line, MANIFEST_JOBDIR, len) && MANIFEST_JOBDIR[len] == '\n')
			dj->jobdir_made = 1;	/* by an earlier run (dbr_keep=1, or killed) */
		if (!len || line[0] == '#')
			continue;
		/* a path the engine could have made: nothing else is ever removed */
		if (dbtrace_path_check(line, DBTRACE_ROLE_DATA, why, sizeof(why)) || own_path(dj, line, 0)) {
			log_err("dbreplay: dbr_target %s: %s line %lu is not a path the engine makes (%s); refusing to use this directory\n",
				dj->root, MANIFEST, n, why);
			fclose(fp);
			return 1;
		}
	}
	fclose(fp);
	return 0;
}

/*
 * Opens and claims the target directory, and checks before anything is
 * written that no declared path is someone else's and that the space is
 * there. 0, or 1 with the error said.
 */
static int open_target_dir(struct thread_data *td, struct dbr_job *dj)
{
	const struct dbtrace_header *h = dj->h;
	uint64_t need = 0, avail;
	struct statvfs vfs;
	unsigned i;
	const char *head;
	char job[80];
	int nofollow = 0;	/* the job's own directory DIR/JOBNAME.K: never a symlink */

	if (!dj->o->target || !*dj->o->target) {
		const char *base = getenv("TMPDIR");

		pack_job_dir_name(td, job, sizeof(job));
		snprintf(dj->root, sizeof(dj->root), "%s/fio-dbreplay.%s.XXXXXX",
			 base && *base ? base : "/tmp", job);
		if (!mkdtemp(dj->root)) {
			log_err("dbreplay: cannot create a directory under %s: %s\n",
				base && *base ? base : "/tmp", strerror(errno));
			dj->root[0] = '\0';
			return 1;
		}
		dj->tmproot = 1;
	} else if (pack_clone_count(td) > 1) {
		int lfd;

		/* numjobs: each job replays into its own directory of the target */
		pack_job_dir_name(td, job, sizeof(job));
		snprintf(dj->root, sizeof(dj->root), "%s/%s", dj->o->target, job);
		lfd = NOINTR(open(dj->o->target, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		if (lfd < 0) {
			log_err("dbreplay: dbr_target %s: %s\n", dj->o->target, strerror(errno));
			return 1;
		}
		dj->jobdir = 1;
		if (NOINTR(mkdirat(lfd, job, 0755)) == 0)
			dj->jobdir_made = 1;
		else if (errno != EEXIST) {
			log_err("dbreplay: dbr_target %s: %s\n", dj->root, strerror(errno));
			close(lfd);
			return 1;
		}
		close(lfd);
		nofollow = O_NOFOLLOW;
	} else {
		snprintf(dj->root, sizeof(dj->root), "%s", dj->o->target);
	}
	dj->rootfd = NOINTR(open(dj->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | nofollow));
	if (dj->rootfd < 0) {
		log_err("dbreplay: dbr_target %s: %s\n", dj->root,
			nofollow && (errno == ENOTDIR || errno == ELOOP)
			? "a symlink or not a directory; refusing to follow it"
			: errno == ENOTDIR ? "not a directory" : strerror(errno));
		return 1;
	}
	if (fstatvfs(dj->rootfd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
		log_err("dbreplay: dbr_target %s is on a read-only file system\n", dj->root);
		return 1;
	}
	if (faccessat(AT_FDCWD, dj->root, W_OK | X_OK, AT_EACCESS)) {
		log_err("dbreplay: dbr_target %s is not writable: %s\n", dj->root, strerror(errno));
		return 1;
	}
	if (flock(dj->rootfd, LOCK_EX | LOCK_NB)) {
		log_err("dbreplay: dbr_target %s is in use by another dbreplay job\n", dj->root);
		return 1;
	}
	if (read_manifest(dj))
		return 1;

	for (i = 0; i < h->nfiles; i++) {
		const struct dbtrace_file *d = &h->files[i];
		const char *base;
		struct stat st;
		int dfd;

		if (!strcmp(d->path, "."))
			continue;
		dfd = open_parent(dj, d->path, 0, &base);
		if (dfd == -ENOENT) {
			if (d->role != DBTRACE_ROLE_DIRECTORY)
				need += d->max_size;
			continue;
		}
		if (dfd < 0) {
			log_err("dbreplay: dbr_target %s: %s: a parent is a symlink or not a directory (%s); refusing to follow it\n",
				dj->root, d->path, strerror(-dfd));
			return 1;
		}
		if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
			close(dfd);
			if (d->role != DBTRACE_ROLE_DIRECTORY)
				need += d->max_size;
			continue;
		}
		close(dfd);
		if (!owned(dj, d->path)) {
			log_err("dbreplay: dbr_target %s: %s exists and was not created by dbreplay; refusing to touch it (use an empty directory)\n",
				dj->root, d->path);
			return 1;
		}
		if (d->role == DBTRACE_ROLE_DIRECTORY ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
			log_err("dbreplay: dbr_target %s: %s is not a %s\n", dj->root, d->path,
				d->role == DBTRACE_ROLE_DIRECTORY ? "directory" : "regular file");
			return 1;
		}
		if (d->role != DBTRACE_ROLE_DIRECTORY && d->max_size > (uint64_t)st.st_blocks * 512)
			need += d->max_size - (uint64_t)st.st_blocks * 512;
	}
	avail = fstatvfs(dj->rootfd, &vfs) == 0 ? (uint64_t)vfs.f_bavail * vfs.f_frsize : UINT64_MAX;
	if (dj->o->fill == FILL_DATA && need > avail) {
		log_err("dbreplay: dbr_target %s has %llu bytes free; the trace's files need %llu more (their max sizes; dbr_fill=sparse to skip writing them out)\n",
			dj->root, (unsigned long long)avail, (unsigned long long)need);
		return 1;
	}
	dj->manifest_fd = NOINTR(openat(dj->rootfd, MANIFEST,
				 O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
	if (dj->manifest_fd < 0) {
		log_err("dbreplay: dbr_target %s: cannot write %s: %s\n", dj->root, MANIFEST,
			strerror(errno));
		return 1;
	}
	/* whole: a head cut short would take the first path into its comment line */
	head = dj->jobdir_made ? MANIFEST_HEAD MANIFEST_JOBDIR : MANIFEST_HEAD;
	for (i = 0; !dj->nowned && i < strlen(head);) {
		ssize_t w = NOINTR(write(dj->manifest_fd, head + i, strlen(head) - i));

		if (w <= 0) {
			log_err("dbreplay: dbr_target %s: cannot write %s: %s\n", dj->root, MANIFEST,
				w < 0 ? strerror(errno) : "no progress");
			return 1;
		}
		i += (unsigned)w;
	}
	dj->claimed = 1;
	return 0;
}

static int open_dev_direct(struct dbr_job *dj)
{
	if (!dj->direct && !dj->trace_direct)
		return 0;
	dj->dev_dfd = NOINTR(open(dj->device, O_RDWR | O_CLOEXEC | O_DIRECT));
	if (dj->dev_dfd < 0 && errno == EINVAL && !dj->direct)
		return direct_refused(dj, dj->device);
	if (dj->dev_dfd < 0) {
		log_err("dbreplay: dbr_device %s: direct=1: %s\n", dj->device, strerror(errno));
		return 1;
	}
	return 0;
}

/* Packed mode: one file or block device holding every file as a region. */
static int open_device(struct thread_data *td, struct dbr_job *dj)
{
	const struct dbtrace_header *h = dj->h;
	char sidecar[PATH_MAX + 32];
	uint64_t align = 1 << 20, off = 0, size;
	struct stat st;
	unsigned i;

	if (dj->o->align && *dj->o->align &&
	    (parse_size(dj->o->align, &align) || !align || (align & (align - 1)) || align > (1ULL << 30))) {
		log_err("dbreplay: dbr_align=%s is not a power of two from 1 to 1g\n", dj->o->align);
		return 1;
	}
	if (pack_clone_count(td) > 1) {
		log_err("dbreplay: numjobs must be 1 with dbr_device (the jobs would share its regions); use one job per device\n");
		return 1;
	}
	if (dbtrace_span(h, align, &dj->span)) {
		log_err("dbreplay: the trace's files do not fit in 2^63 bytes\n");
		return 1;
	}
	for (i = 0; i < h->nfiles; i++) {
		const struct dbtrace_file *d = &h->files[i];

		if (d->role == DBTRACE_ROLE_DIRECTORY)
			continue;
		dj->files[d->id].region = off;
		off += (d->max_size + align - 1) / align * align;
	}
	snprintf(dj->device, sizeof(dj->device), "%s", dj->o->device);
	snprintf(sidecar, sizeof(sidecar), "%s%s", dj->device, SIDECAR_SUFFIX);
	if (stat(dj->device, &st) == 0 && S_ISBLK(st.st_mode)) {
		if (!dj->overwrite_device) {
			log_err("dbreplay: dbr_device %s is a block device: the replay overwrites %llu bytes of it; set dbr_overwrite_device=1 to confirm\n",
				dj->device, (unsigned long long)dj->span);
			return 1;
		}
		dj->dev_is_blk = 1;
		dj->devfd = NOINTR(open(dj->device, O_RDWR | O_CLOEXEC));
		if (dj->devfd < 0) {
			log_err("dbreplay: dbr_device %s: %s\n", dj->device, strerror(errno));
			return 1;
		}
		if (ioctl(dj->devfd, BLKGETSIZE64, &size)) {
			log_err("dbreplay: dbr_device %s: cannot read its size: %s\n", dj->device, strerror(errno));
			return 1;
		}
		if (size < dj->span) {
			log_err("dbreplay: dbr_device %s has %llu bytes; the trace needs %llu (its files' max sizes, each aligned to %llu)\n",
				dj->device, (unsigned long long)size, (unsigned long long)dj->span,
				(unsigned long long)align);
			return 1;
		}
		return open_dev_direct(dj);
	}
	if (lstat(dj->device, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			log_err("dbreplay: dbr_device %s is neither a regular file nor a block device\n", dj->device);
			return 1;
		}
		if (access(sidecar, F_OK)) {
			log_err("dbreplay: dbr_device %s exists and was not created by dbreplay (no %s beside it); refusing to overwrite it\n",
				dj->device, sidecar);
			return 1;
		}
		dj->dev_made = 1;	/* an earlier run's (dbr_keep=1) */
	} else {
		int fd;
		struct statvfs vfs;
		char dir[PATH_MAX];
		char *slash;

		snprintf(dir, sizeof(dir), "%s", dj->device);
		slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
		if (statvfs(dir, &vfs) == 0 && dj->o->fill == FILL_DATA &&
		    (uint64_t)vfs.f_bavail * vfs.f_frsize < dj->span) {
			log_err("dbreplay: dbr_device %s: %s has %llu bytes free; the trace needs %llu\n",
				dj->device, dir, (unsigned long long)vfs.f_bavail * vfs.f_frsize,
				(unsigned long long)dj->span);
			return 1;
		}
		fd = NOINTR(open(sidecar, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
		if (fd < 0) {
			log_err("dbreplay: dbr_device %s: cannot create %s: %s\n", dj->device, sidecar,
				strerror(errno));
			return 1;
		}
		if (write(fd, MANIFEST_HEAD, strlen(MANIFEST_HEAD)) < 0) {
			/* nothing: the sidecar's presence is what counts */
		}
		close(fd);
		dj->dev_made = 1;
	}
	dj->devfd = NOINTR(open(dj->device, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
	if (dj->devfd < 0) {
		log_err("dbreplay: dbr_device %s: %s\n", dj->device, strerror(errno));
		return 1;
	}
	if (fstat(dj->devfd, &st) == 0 && (uint64_t)st.st_size < dj->span &&
	    NOINTR(ftruncate(dj->devfd, (off_t)dj->span))) {
		log_err("dbreplay: dbr_device %s: cannot size it to %llu bytes: %s\n", dj->device,
			(unsigned long long)dj->span, strerror(errno));
		return 1;
	}
	return open_dev_direct(dj);
}

/* Removes what the engine created in the target (dbr_keep=0), deepest first. */
static int depth_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	int dx = 0, dy = 0;

	for (const char *p = x; *p; p++)
		dx += *p == '/';
	for (const char *p = y; *p; p++)
		dy += *p == '/';
	return dx != dy ? dy - dx : strcmp(y, x);
}

static void remove_owned(struct dbr_job *dj)
{
	char **list;
	size_t i, n = 0, left = 0;

	list = calloc(dj->nowned + 1, sizeof(*list));
	if (!list)
		return;
	for (i = 0; i < dj->owned_cap; i++)
		if (dj->owned[i])
			list[n++] = dj->owned[i];
	qsort(list, n, sizeof(*list), depth_cmp);
	for (i = 0; i < n; i++) {
		const char *base;
		struct stat st;
		int dfd = open_parent(dj, list[i], 0, &base);

		if (dfd < 0)
			continue;
		if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    NOINTR(unlinkat(dfd, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0)))
			left++;	/* a directory that holds someone else's files stays */
		close(dfd);
	}
	free(list);
	if (!left)
		NOINTR(unlinkat(dj->rootfd, MANIFEST, 0));
	/* the private directory, or this run's DIR/JOBNAME.K: only if empty */
	if ((dj->tmproot || dj->jobdir_made) && !left)
		rmdir(dj->root);
}

/* ------------------------------------------------------------------ */
/* Options and the check pass                                          */
/* ------------------------------------------------------------------ */

static int opt_u64(const char *name, const char *val, uint64_t def, uint64_t lo, uint64_t hi,
		   uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!val || !*val) {
		*out = def;
		return 0;
	}
	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || *end || end == val || val[0] == '-') {
		log_err("dbreplay: %s=%s is not a whole number\n", name, val);
		return 1;
	}
	if (v < lo || v > hi) {
		log_err("dbreplay: %s=%s is out of range %llu..%llu\n", name, val,
			(unsigned long long)lo, (unsigned long long)hi);
		return 1;
	}
	*out = v;
	return 0;
}

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
			log_err("dbreplay: %s is an incomplete capture: %s (and %u more: dbtrace.py check lists them); set dbr_accept_incomplete=1 to replay it as it is\n",
				dj->trace_path, dj->h->incomplete[0], n - 1);
		else
			log_err("dbreplay: %s is an incomplete capture: %s; set dbr_accept_incomplete=1 to replay it as it is\n",
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
			log_err("dbreplay: note: %s: replaying an incomplete capture (dbr_accept_incomplete=1): %s\n",
				dj->trace_path, dj->incomplete[i]);
	}
	return 0;
}

/*
 * Reads the whole trace once before anything is written: a malformed line
 * anywhere is reported with its line number and the job ends with nothing
 * touched. Also finds the trace's time span and its largest transfer.
 */
static int check_trace(struct dbr_job *dj, uint64_t *max_io)
{
	struct dbtrace_rec r;
	char err[ERRLEN];
	struct dbtrace *t = dbtrace_open(dj->trace_path, err, sizeof(err));
	uint64_t first = 0, last = 0, kept = 0;
	int ret, have = 0;

	if (!t) {
		log_err("dbreplay: %s\n", err);
		return 1;
	}
	*max_io = 0;
	while ((ret = dbtrace_next(t, &r)) > 0) {
		dj->trace_records++;
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
		if (misaligned_at(&r) < 4) {
			dj->misaligned_records[misaligned_at(&r)]++;
			if (dbtrace_file_by_id(t, r.file)->direct)
				dj->misaligned_direct[misaligned_at(&r)]++;
		}
		if (dj->depth) {
			int d = dbdepth_next(dj->depth, &r);

			if (d < 0) {
				log_err("dbreplay: out of memory for the trace's captured depths\n");
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
		log_err("dbreplay: %s\n", dbtrace_error(t));
		dbtrace_close(t);
		return 1;
	}
	dbtrace_close(t);
	if (!kept) {
		log_err("dbreplay: %s: no record is left to replay (%llu records, dbr_ops/dbr_streams/dbr_files keep none)\n",
			dj->trace_path, (unsigned long long)dj->trace_records);
		return 1;
	}
	dj->trace_span_units = have && last > first ? last - first : 0;
	return 0;
}

static int check_fio_options(struct thread_data *td, struct dbr_job *dj)
{
	struct thread_options *to = &td->o;

	if (fio_option_is_set(to, size) || fio_option_is_set(to, io_size)) {
		log_err("dbreplay: size= and io_size= do not apply; the trace says what is done (dbr_loops=, or time_based with runtime=)\n");
		return 1;
	}
	if (to->loops > 1) {
		log_err("dbreplay: use dbr_loops= instead of loops= (the engine resets the trace's files between loops)\n");
		return 1;
	}
	if (to->nr_files > 1) {
		log_err("dbreplay: nrfiles must be 1 (the files are the trace's)\n");
		return 1;
	}
	if (to->verify != 0) {
		log_err("dbreplay: verify= is not supported by this engine\n");
		return 1;
	}
	if (to->iodepth > 1 && dj->api != API_IO_URING) {
		log_err("dbreplay: iodepth must be 1 with dbr_io_api=sync (one record at a time, in trace order); use dbr_io_api=io_uring for concurrent streams\n");
		return 1;
	}
	return 0;
}

static int dbr_parse_options(struct thread_data *td, struct dbr_job *dj)
{
	struct dbr_options *o = dj->o;
	uint64_t v;

	if (!o->trace || !*o->trace) {
		log_err("dbreplay: dbr_trace= is required: the trace to replay (docs/dbtrace-format.md)\n");
		return 1;
	}
	dj->trace_path = o->trace;
	if (!strcmp(o->trace, "-")) {
		log_err("dbreplay: dbr_trace=- is not supported: the trace is read twice (checked, then replayed)\n");
		return 1;
	}
	if (o->target && *o->target && o->device && *o->device) {
		log_err("dbreplay: dbr_target= and dbr_device= exclude each other (files one-to-one in a directory, or packed in one file or device)\n");
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
		log_err("dbreplay: dbr_timing=%s is not asap, original or scaled\n", o->timing);
		return 1;
	}
	if (!o->io_api || !*o->io_api || !strcmp(o->io_api, "sync"))
		dj->api = API_SYNC;
	else if (!strcmp(o->io_api, "io_uring"))
		dj->api = API_IO_URING;
	else {
		log_err("dbreplay: dbr_io_api=%s is not sync or io_uring\n", o->io_api);
		return 1;
	}
	dj->speed = 1.0;
	if (o->speed && *o->speed) {
		char *end;

		errno = 0;
		dj->speed = strtod(o->speed, &end);
		if (errno || *end || end == o->speed || !(dj->speed > 0) || dj->speed > 1e9 ||
		    isnan(dj->speed)) {
			log_err("dbreplay: dbr_speed=%s is not a positive factor (2: twice as fast as the trace)\n",
				o->speed);
			return 1;
		}
		if (dj->timing == TM_ASAP) {
			log_err("dbreplay: dbr_speed= needs dbr_timing=scaled\n");
			return 1;
		}
	}
	if (dj->timing == TM_ORIGINAL)
		dj->speed = 1.0;
	if (o->overwrite_device && *o->overwrite_device && strcmp(o->overwrite_device, "0")) {
		if (strcmp(o->overwrite_device, "1")) {
			log_err("dbreplay: dbr_overwrite_device=%s is not 0 or 1\n", o->overwrite_device);
			return 1;
		}
		dj->overwrite_device = 1;
	}
	/* unset or "captured": the trace's completion times give each record its depth */
	dj->depth_captured = !o->stream_depth || !*o->stream_depth ||
			     !strcmp(o->stream_depth, "captured");
	if (!dj->depth_captured && strspn(o->stream_depth, "0123456789") != strlen(o->stream_depth)) {
		log_err("dbreplay: dbr_stream_depth=%s is not 'captured' or a whole number\n",
			o->stream_depth);
		return 1;
	}
	if (opt_u64("dbr_stream_depth", dj->depth_captured ? NULL : o->stream_depth, 1, 1, 65536, &v))
		return 1;
	dj->stream_depth = (unsigned)v;
	if (opt_u64("dbr_loops", o->loops, 1, 0, UINT32_MAX, &dj->loops))
		return 1;
	if (dj->loops == 0 && !td->o.time_based) {
		log_err("dbreplay: dbr_loops=0 (until stopped) needs time_based and runtime=\n");
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
		log_err("dbreplay: dbr_io_api=io_uring: io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	dj->ring_ok = 1;
	if (pack_ioq_init(&dj->ioq, depth + 8)) {
		log_err("dbreplay: out of memory\n");
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
	dj->rootfd = dj->manifest_fd = dj->devfd = dj->dev_dfd = -1;
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

	dj->t = dbtrace_open(dj->trace_path, err, sizeof(err));
	if (!dj->t) {
		log_err("dbreplay: %s\n", err);
		return 1;
	}
	dj->h = dbtrace_header(dj->t);
	if (take_incomplete(td, dj))
		return 1;
	dj->unit_ns = dbtrace_time_unit_ns(dj->h->time_unit);
	if (dj->timing != TM_ASAP && dj->h->time_unit == DBTRACE_TIME_NONE) {
		log_err("dbreplay: %s is an order-only trace (timeunit none): dbr_timing=%s needs record times; use dbr_timing=asap\n",
			dj->trace_path, dj->timing == TM_ORIGINAL ? "original" : "scaled");
		return 1;
	}
	if (dbfilter_parse(&dj->filter, dj->h, dj->o->ops, dj->o->streams, dj->o->files, err,
			   sizeof(err))) {
		log_err("dbreplay: %s\n", err);
		return 1;
	}
	for (i = 0; i < dj->h->nfiles; i++)
		dj->direct_files += dj->h->files[i].direct;
	dj->trace_direct = dj->direct_files && dj->o->direct_mode != DIRECT_OFF;
	if (dj->h->version >= 2 && !(dj->depth = dbdepth_new())) {
		log_err("dbreplay: out of memory\n");
		return 1;
	}
	if (check_trace(dj, &max_io))
		return 1;
	if (dj->depth && (!dj->depth_captured || !dj->lat_records)) {
		dbdepth_free(dj->depth);
		dj->depth = NULL;
	} else if (dj->depth) {
		dbdepth_reset(dj->depth);
	}
	if (dj->direct_files && dj->o->direct_mode == DIRECT_OFF && !dj->direct)
		fidelity(dj, "%u file(s) the database opened with O_DIRECT are replayed through the page cache (dbr_direct=off)",
			 dj->direct_files);

	/* every file of the trace is open at once */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < dj->h->nfiles + 256) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < dj->h->nfiles + 256) {
			log_err("dbreplay: the trace has %u files, the descriptor limit is %llu (ulimit -n)\n",
				dj->h->nfiles, (unsigned long long)rl.rlim_cur);
			return 1;
		}
	}
	if (make_buffers(dj, (size_t)max_io)) {
		log_err("dbreplay: out of memory for %llu-byte buffers\n", (unsigned long long)max_io);
		return 1;
	}
	for (i = 0; i < dj->h->nfiles; i++)
		dj->files[dj->h->files[i].id].decl = &dj->h->files[i];
	if (dj->packed ? open_device(td, dj) : open_target_dir(td, dj))
		return 1;
	if (!dj->packed && (dj->trace_direct || dj->direct)) {
		/* before anything is written: O_DIRECT there, and the alignment it needs */
		int ok = odirect_probe(dj->rootfd, &dj->dio_align);

		if (ok == 0 && direct_refused(dj, dj->root))
			return 1;
	}
	if (layout(dj, 1))
		return 1;
	if (dj->o->record_log && *dj->o->record_log) {
		dj->rlog = fopen(dj->o->record_log, "we");
		if (!dj->rlog) {
			log_err("dbreplay: dbr_record_log %s: %s\n", dj->o->record_log, strerror(errno));
			return 1;
		}
		setvbuf(dj->rlog, NULL, _IOFBF, 1 << 16);
		fputs("# loop line stream file op due_ns issue_ns done_ns bytes errno\n", dj->rlog);
	}

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
		log_err("dbreplay: out of memory for a %u-record window\n", sc.capacity);
		return 1;
	}
	depth_notes(dj, to->iodepth, sc.capacity);

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
	to->time_based = 1;
	start_reader(dj);
	return 0;
}

/* fio's view: one file, big enough that fio never runs out of offsets. */
static int dbr_setup(struct thread_data *td)
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

static const char *direct_mode_name(unsigned m)
{
	return m == DIRECT_TRACE ? "trace" : m == DIRECT_TRY ? "try" : "off";
}

static const char *timing_name(enum timing t)
{
	return t == TM_ASAP ? "asap" : t == TM_ORIGINAL ? "original" : "scaled";
}

static void write_summary(struct thread_data *td, struct dbr_job *dj)
{
	int r, o;

	if (dj->o->report == REP_NONE)
		return;
	log_err("dbreplay: %s: %s: %llu records replayed (the trace has %llu) in %llu loop(s)%s, %llu errors, %.3f s (trace: %.3f s), timing %s",
		td->o.name, dj->trace_path, (unsigned long long)dj->replayed,
		(unsigned long long)dj->trace_records, (unsigned long long)dj->loop,
		dj->partial ? " (the last cut short)" : "", (unsigned long long)dj->errors,
		dj->replay_ns_total / 1e9, dj->trace_ns_total / 1e9, timing_name(dj->timing));
	if (dj->timing != TM_ASAP)
		log_err(" x%g: lag p50 %.3f ms p99 %.3f ms max %.3f ms, ended %.3f ms behind",
			dj->speed, lathist_percentile(&dj->lag, 50) / 1e6,
			lathist_percentile(&dj->lag, 99) / 1e6, dj->lag.max / 1e6,
			dj->behind_end_ns / 1e6);
	log_err("\n");
	for (r = 0; r < (int)dj->nincomplete; r++)
		log_err("dbreplay: %s: INCOMPLETE capture, the replay lacks: %s\n", td->o.name,
			dj->incomplete[r]);
	for (r = 0; r < (int)dj->nfidelity; r++)
		log_err("dbreplay: %s: NOT AS CAPTURED: %s\n", td->o.name, dj->fidelity[r]);
	log_err("dbreplay: %-22s %10s %7s %12s %10s %10s %10s %10s %10s\n", "class", "ops", "errors",
		"MiB", "mean_us", "p50_us", "p99_us", "p99.9_us", "max_us");
	for (r = 0; r < DBTRACE_ROLE_NR; r++)
		for (o = 0; o < DBTRACE_OP_NR; o++) {
			const struct cls *c = dj->cls[r][o];
			char name[64];

			if (!c || !c->lat.n)
				continue;
			snprintf(name, sizeof(name), "%s %s", dbtrace_role_name(r), dbtrace_op_name(o));
			log_err("dbreplay: %-22s %10llu %7llu %12.3f %10.1f %10.1f %10.1f %10.1f %10.1f\n",
				name, (unsigned long long)c->lat.n, (unsigned long long)c->errors,
				c->bytes / 1048576.0, lathist_mean(&c->lat) / 1e3,
				lathist_percentile(&c->lat, 50) / 1e3,
				lathist_percentile(&c->lat, 99) / 1e3,
				lathist_percentile(&c->lat, 99.9) / 1e3, c->lat.max / 1e3);
		}
}

static int json_hist(char *buf, size_t len, const struct lathist *h)
{
	return snprintf(buf, len,
			"\"n\":%llu,\"mean_ns\":%llu,\"min_ns\":%llu,\"p50_ns\":%llu,\"p90_ns\":%llu,\"p99_ns\":%llu,\"p99.9_ns\":%llu,\"max_ns\":%llu",
			(unsigned long long)h->n, (unsigned long long)lathist_mean(h),
			(unsigned long long)h->min, (unsigned long long)lathist_percentile(h, 50),
			(unsigned long long)lathist_percentile(h, 90),
			(unsigned long long)lathist_percentile(h, 99),
			(unsigned long long)lathist_percentile(h, 99.9), (unsigned long long)h->max);
}

/* One JSON line per job: classes, fidelity, counters. */
static void write_report_file(struct thread_data *td, struct dbr_job *dj)
{
	char *buf, name[512], tpath[PATH_MAX * 2], hist[512];
	size_t cap = 65536, n = 0;
	int r, o, first = 1, fd;
	unsigned i;

	if (!dj->o->report_file || !*dj->o->report_file)
		return;
	for (i = 0; i < dj->nincomplete; i++)
		cap += 6 * strlen(dj->incomplete[i]) + 4;	/* escaped: at most \u00XX a byte */
	buf = malloc(cap);
	if (!buf)
		return;
	pack_json_escape(td->o.name, name, sizeof(name));
	pack_json_escape(dj->trace_path, tpath, sizeof(tpath));
	json_hist(hist, sizeof(hist), &dj->lag);
	n += snprintf(buf + n, cap - n,
		      "{\"engine\":\"dbreplay\",\"job\":\"%s\",\"subjob\":%u,\"trace\":\"%s\",\"trace_records\":%llu,\"replayed\":%llu,\"filtered\":%llu,\"loops\":%llu,\"last_loop_complete\":%s,\"errors\":%llu,"
		      "\"timing\":\"%s\",\"speed\":%g,\"io_api\":\"%s\",\"stream_depth\":%u,\"mapping\":\"%s\","
		      "\"trace_duration_ns\":%llu,\"replay_duration_ns\":%llu,\"behind_at_end_ns\":%llu,\"lag\":{%s},"
		      "\"implicit_creates\":%llu,\"skipped\":%llu,\"unsupported\":%llu,\"direct\":%d,\"buffered_records\":%llu,"
		      "\"dbr_direct\":\"%s\",\"direct_files\":%u,\"direct_files_replayed_direct\":%s,\"direct_align\":%u,"
		      "\"depth\":\"%s\",\"captured_depth\":%u,\"records_with_completion\":%llu,\"replay_stream_depth\":%u,",
		      name, td->subjob_number, tpath, (unsigned long long)dj->trace_records,
		      (unsigned long long)dj->replayed, (unsigned long long)dj->filtered,
		      (unsigned long long)dj->loop, dj->partial ? "false" : "true",
		      (unsigned long long)dj->errors, timing_name(dj->timing), dj->speed,
		      dj->uring ? "io_uring" : "sync", dj->stream_depth, dj->packed ? "packed" : "files",
		      (unsigned long long)dj->trace_ns_total, (unsigned long long)dj->replay_ns_total,
		      (unsigned long long)dj->behind_end_ns, hist,
		      (unsigned long long)dj->implicit_creates, (unsigned long long)dj->skipped,
		      (unsigned long long)dj->unsupported, dj->direct,
		      (unsigned long long)buffered_records(dj),
		      direct_mode_name(dj->o->direct_mode), dj->direct_files,
		      dj->direct_files && (dj->direct || dj->trace_direct) ? "true" : "false",
		      dj->dio_align,
		      dj->depth ? "captured" : "fixed", dj->captured_depth,
		      (unsigned long long)dj->lat_records,
		      dj->sched ? dbsched_stream_max(dj->sched) : 0);
	n += snprintf(buf + n, cap - n, "\"fidelity\":[");
	for (i = 0; i < dj->nfidelity; i++) {
		n += snprintf(buf + n, cap - n, "%s\"", i ? "," : "");
		pack_json_escape(dj->fidelity[i], buf + n, cap - n);
		n += strlen(buf + n);
		n += snprintf(buf + n, cap - n, "\"");
	}
	n += snprintf(buf + n, cap - n, "],");
	n += snprintf(buf + n, cap - n, "\"incomplete\":[");
	for (i = 0; i < dj->nincomplete; i++) {
		n += snprintf(buf + n, cap - n, "%s\"", i ? "," : "");
		pack_json_escape(dj->incomplete[i], buf + n, cap - n);
		n += strlen(buf + n);
		n += snprintf(buf + n, cap - n, "\"");
	}
	n += snprintf(buf + n, cap - n, "],\"classes\":{");
	for (r = 0; r < DBTRACE_ROLE_NR; r++)
		for (o = 0; o < DBTRACE_OP_NR; o++) {
			const struct cls *c = dj->cls[r][o];

			if (!c || !c->lat.n || n + 1024 > cap)
				continue;
			json_hist(hist, sizeof(hist), &c->lat);
			n += snprintf(buf + n, cap - n, "%s\"%s %s\":{\"bytes\":%llu,\"errors\":%llu,%s}",
				      first ? "" : ",", dbtrace_role_name(r), dbtrace_op_name(o),
				      (unsigned long long)c->bytes, (unsigned long long)c->errors, hist);
			first = 0;
		}
	n += snprintf(buf + n, cap - n, "}}\n");
	fd = open(dj->o->report_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, n) != (ssize_t)n)
		log_err("dbreplay: dbr_report_file %s: %s\n", dj->o->report_file, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(buf);
}

static void dbr_cleanup(struct thread_data *td)
{
	struct dbr_job *dj = td->io_ops_data;
	unsigned i;
	int r, o;

	if (!dj)
		return;
	if (dj->ring_ok) {
		while (dj->sqes && reap(dj, 1, UINT64_MAX) == 0)
			;
		io_uring_queue_exit(&dj->ring);
		dj->ring_ok = 0;
	}
	if (dj->started && td->io_ops_init) {
		if (!dj->finished || dj->replay_ns_total == 0) {
			/* stopped in the middle of a loop (runtime=, an error): it counts, unfinished */
			dj->replay_ns_total += dbr_now() - dj->start_ns;
			if (dj->timing != TM_ASAP)
				dj->trace_ns_total += dj->last_done_ns;
			dj->loop++;
			dj->partial = 1;
		}
		pack_fix_runtimes(td, (dbr_now() - dj->first_start_ns + 999999) / 1000000);
		write_summary(td, dj);
		write_report_file(td, dj);
	}
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
		remove_owned(dj);
	else if (dj->tmproot || (dj->jobdir_made && dj->claimed))
		rmdir(dj->root);	/* only if empty; unclaimed, it may be another run's */
	if (dj->rootfd >= 0)
		close(dj->rootfd);
	if (dj->devfd >= 0) {
		close(dj->devfd);
		if (dj->dev_made && !dj->o->keep) {
			char sidecar[PATH_MAX + 32];

			snprintf(sidecar, sizeof(sidecar), "%s%s", dj->device, SIDECAR_SUFFIX);
			unlink(dj->device);
			unlink(sidecar);
		}
	}
	for (i = 0; i < dj->owned_cap; i++)
		free(dj->owned[i]);
	free(dj->owned);
	for (r = 0; r < DBTRACE_ROLE_NR; r++)
		for (o = 0; o < DBTRACE_OP_NR; o++)
			free(dj->cls[r][o]);
	if (dj->rlog && fclose(dj->rlog))
		log_err("dbreplay: dbr_record_log %s: %s\n", dj->o->record_log, strerror(errno));
	dbsched_free(dj->sched);
	dbdepth_free(dj->depth);
	dbprefetch_stop(dj->pf);	/* before the trace it reads */
	if (dj->t)
		dbtrace_close(dj->t);
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
STR_OPT(overwrite_device)
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

#define BOOL_OPTION(oname, field, long_name, helptext, dflt)		\
	{								\
		.name	= oname,					\
		.lname	= long_name,					\
		.type	= FIO_OPT_BOOL,					\
		.off1	= offsetof(struct dbr_options, field),		\
		.help	= helptext,					\
		.def	= dflt,						\
		.category = FIO_OPT_C_ENGINE,				\
		.group	= FIO_OPT_G_INVALID,				\
	}

static struct fio_option options[] = {
	STR_OPTION("dbr_trace", trace, "Trace",
		   "The dbtrace to replay (plain or gzip; docs/dbtrace-format.md)"),
	STR_OPTION("dbr_target", target, "Target directory",
		   "Directory the trace's files are created in, one to one (unset: a private directory under $TMPDIR); only paths the engine created are ever written or removed"),
	STR_OPTION("dbr_device", device, "Packed target",
		   "Instead of dbr_target: one file or block device holding every file as a region (directory and namespace operations are skipped)"),
	STR_OPTION("dbr_overwrite_device", overwrite_device, "Confirm device overwrite",
		   "1: dbr_device may be a block device, whose content the replay overwrites (default 0)"),
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
	BOOL_OPTION("dbr_reader_thread", reader_thread, "Trace reader thread",
		    "1: a thread of its own parses the trace ahead of the replay (a bounded ring of records, off the replaying thread's clock); 0: the replaying thread parses as it goes", "1"),
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
