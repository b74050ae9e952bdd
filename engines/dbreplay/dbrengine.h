/*
 * The dbreplay engine's own declarations, shared by its files:
 *   engine.c  ->prep and ->queue, options and the check pass, init/cleanup, the ops
 *   replay.c  a record's I/O as system calls, its completion, the window, loops
 *   uring.c   dbr_io_api=io_uring
 *   target.c  the target: files in a directory (its manifest), or a device
 *   report.c  the summary and the dbr_report_file line
 *   files.c   the paths the engine made (the manifest's set), opening them, a file's descriptors
 * Calls go one way: engine.c to all; uring.c to replay.c; replay.c to
 * target.c; report.c to replay.c and target.c; engine.c, replay.c and
 * target.c to files.c, which calls none of them.
 */
#ifndef PACK_DBR_ENGINE_H
#define PACK_DBR_ENGINE_H

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
#include <sys/sysmacros.h>
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
#include "dbrecs.h"
#include "dbfilter.h"
#include "odirect.h"
#include "pathset.h"
#include "lathist.h"
#include "jsonl.h"
#include "target.h"
#include "units.h"
#include "errmsg.h"
#include "sysutil.h"

#define ENGINE		"dbreplay"
#define MANIFEST	".fio-dbreplay"
#define MANIFEST_HEAD	"# fio dbreplay engine: it created the paths below (one a line) and removes only those\n"
/* a path the manifest lists but the engine found made by someone else: not the engine's */
#define MANIFEST_DISOWNED "# not created by dbreplay (it was there): "
/* numjobs: the job directory DIR/JOBNAME.K is the engine's too (removed once empty) */
#define MANIFEST_JOBDIR	"# it also created this directory\n"
#define SIDECAR_SUFFIX	".fio-dbreplay"
#define SIDECAR_HEAD \
	"# fio dbreplay engine: it created the file beside this one, whose identity follows, and removes only that file\n"
#define ERRLEN		1024
/*
 * The check pass keeps the records it read (about 8 bytes each) for the
 * replay, up to this many bytes a job; a longer trace is read again.
 */
#define DBR_KEPT_RECORDS_MAX (256U << 20)
#define FILL_CHUNK	(1U << 20)
#define MAX_ERROR_LINES	10
/* a wait for a record's due time looks this often whether fio is stopping the job */
#define DBR_WAIT_SLICE_NS (50 * 1000000ULL)
/* dbr_speed: beyond these a timed replay is no replay of the trace's timing */
#define DBR_SPEED_MIN 0.001
#define DBR_SPEED_MAX 1000.0

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
	unsigned int accept_partial;
	unsigned int accept_serial;
	unsigned int reader_thread;
	unsigned int overwrite_device;
	/* the text of the 0/1 options, read at init (fioglue.h, PACK_NUM) */
	char *keep_text, *accept_incomplete_text, *accept_partial_text, *accept_serial_text;
	char *reader_thread_text, *overwrite_device_text;
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

/*
 * A file the engine reads or writes besides the trace's: the trace itself,
 * the device and its sidecar, the manifest, the record log, the report
 * file. Each must be a file of its own (dbr_distinct).
 */
struct dbr_ident {
	dev_t dev;
	ino_t ino;
	const char *what; /* the option or role: "dbr_record_log" */
	char path[PATH_MAX];
};

#define DBR_IDENTS 8

struct dbr_job {
	struct dbr_options *o;
	char *trace_path;
	int trace_fd;			/* the trace, opened once: every reader reopens this file */
	struct dbtrace *t;		/* the replay's reader */
	struct dbprefetch *pf;		/* its thread reading ahead (dbr_reader_thread=1) */
	struct dbrecs *kept; /* the check pass's records (NULL: the replay reads the text) */
	const struct dbtrace_header *h;
	struct rfile *files;		/* by file id: DBTRACE_MAX_FILES entries */
	struct dbfilter filter;
	struct dbsched *sched;
	/*
	 * dbr_io_api=sync, dbr_timing=asap, a window of one record: ->queue
	 * completes each record before the next ->prep, so the scheduler
	 * would always pick the one record it was just given (see
	 * dbr_next_in_order). The records then go from the trace to the I/O
	 * without it, in @one (slot DBR_ONE_SLOT).
	 */
	int in_order;
	struct dbsched_item one;
	int one_pending;  /* handed to fio, not finished */
	uint64_t one_seq; /* records handed out in this loop */

	/* the target */
	int packed;
	int rootfd;			/* the target directory */
	char root[PATH_MAX];
	int tmproot;			/* a private directory made by the engine */
	int manifest_fd;
	char manifest_path[PATH_MAX + 16];
	int manifest_torn;		/* its last line was never finished */
	uint64_t manifest_len;		/* bytes up to the end of its last whole line */
	struct pathset owned;		/* the paths in the manifest */
	int devfd;			/* packed: the device or file */
	int dev_dfd;			/* packed, direct=1: the same with O_DIRECT */
	char device[PATH_MAX];
	int dev_is_blk, dev_made, sidecar_made;
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
	/* the target is this run's: cleanup may remove what its manifest lists */
	int claimed;
	int overwrite_device;
	int partial;	       /* the last loop was cut short */
	const char *cut_short; /* why: "runtime", "stopped", "error" (NULL: complete) */
	int partial_accepted;  /* dbr_accept_partial=1, or the user's time_based */
	int user_time_based;   /* time_based as the user set it (the engine sets it) */
	int aborted;	       /* the engine stopped the replay on an error */
	uint64_t pushed, filtered, replayed, implicit_creates, skipped, unsupported, errors;
	/* reads that returned fewer bytes than their records': a file shorter than it was */
	uint64_t short_reads, short_read_bytes, short_read_line;
	char **incomplete;		/* the trace's "incomplete" lines, copied (the header goes with each loop's reader) */
	unsigned nincomplete;
	unsigned direct_files;		/* files the trace marks "direct" */
	int trace_direct;		/* they get O_DIRECT (dbr_direct, and the target allows it) */
	struct dbdepth *depth;		/* captured depths (NULL: dbr_stream_depth=N, or no latencies) */
	unsigned captured_depth;	/* the largest captured depth of a kept stream */
	unsigned captured_total;	/* the most kept records of all streams in flight at once */
	int iodepth_from_trace;		/* iodepth is captured_total (the user set none) */
	unsigned ioworkers; /* kept streams of PostgreSQL's I/O workers (ioworker-TID) */
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
	int rlog_fd;			/* opened at init; rlog from the end of init */
	int rlog_made;			/* created by this job: removed if the job is refused */
	struct dbr_ident ident[DBR_IDENTS];
	unsigned nident;
	int report_fd;	 /* dbr_report_file, opened at init */
	int report_made; /* created by this job: removed if it gets no line */
	int report_written;

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

static inline uint64_t dbr_ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + ts->tv_nsec;
}

static inline uint64_t dbr_now(void)
{
	struct timespec ts;

	fio_gettime(&ts, NULL);
	return dbr_ts_ns(&ts);
}

/*
 * files.c: the paths the engine made (the manifest's set), opening them, a
 * file's descriptors; the one of the engine's files that calls none of the
 * others
 */
int dbr_direct_refused(struct dbr_job *dj, const char *where);
void dbr_disown(struct dbr_job *dj, const char *path, int log);
void __attribute__((format(printf, 2, 3))) dbr_fidelity(struct dbr_job *dj, const char *fmt, ...);
int dbr_open_flags(const struct dbr_job *dj);
int dbr_open_parent(struct dbr_job *dj, const char *path, int create, const char **base);
int dbr_own(struct dbr_job *dj, const char *path);
int dbr_own_path(struct dbr_job *dj, const char *path, int log);
int dbr_set_fd(struct dbr_job *dj, struct rfile *f, int fd);

/*
 * Whether a file's reads and writes go through O_DIRECT: all with
 * direct=1, else the trace's flag. Inline: asked for every record.
 */
static inline int dbr_file_direct(const struct dbr_job *dj, const struct dbtrace_file *d)
{
	/* most replays have no O_DIRECT file: that answer first, without @d */
	return (dj->direct || dj->trace_direct) && d && d->role != DBTRACE_ROLE_DIRECTORY &&
	       (dj->direct || d->direct);
}

/* The slot of dbr_job.one (->engine_data holds a slot + 1). */
#define DBR_ONE_SLOT (INT_MAX - 1)

/* A slot's record: the scheduler's, or the in-order path's. */
static inline struct dbsched_item *dbr_item(struct dbr_job *dj, int slot)
{
	return slot == DBR_ONE_SLOT ? &dj->one : dbsched_item(dj->sched, slot);
}

/* fio's direction and prio of a record (inline: ->prep asks it for every record) */
static inline enum fio_ddir dbr_ddir_of(const struct dbsched_item *it, unsigned *prio, int *prio_ix)
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

/* replay.c: a record's I/O, its completion, the window */
uint64_t dbr_buffered_records(const struct dbr_job *dj);
int dbr_fill_window(struct dbr_job *dj, uint64_t now_rel);
void dbr_finish(struct dbr_job *dj, int slot, struct io_u *io_u, int err, uint64_t bytes,
		   uint64_t end);
int dbr_io_target(struct dbr_job *dj, const struct dbtrace_rec *r, uint64_t *off);
int dbr_make_buffers(struct dbr_job *dj, size_t len);
unsigned dbr_misaligned_at(const struct dbtrace_rec *r);
int dbr_next_in_order(struct dbr_job *dj);
int dbr_next_loop(struct dbr_job *dj);
int dbr_open_trace_file(struct dbr_job *dj);
struct dbtrace *dbr_open_trace(struct dbr_job *dj, char *err, size_t errlen);
int dbr_run_meta(struct dbr_job *dj, const struct dbtrace_rec *r, int *err);
int dbr_run_sync(struct dbr_job *dj, const struct dbtrace_rec *r, uint64_t *bytes);
void dbr_queue_sync(struct dbr_job *dj, int slot, struct io_u *io_u, int stamped);
int dbr_job_stopping(struct thread_data *td);
int dbr_sleep_until(struct thread_data *td, uint64_t abs_ns);
void dbr_start_reader(struct dbr_job *dj);

/* uring.c: dbr_io_api=io_uring */
int dbr_commit(struct thread_data *td);
struct io_u *dbr_event(struct thread_data *td, int event);
int dbr_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			const struct timespec *t);
int dbr_reap(struct dbr_job *dj, int wait, uint64_t deadline_ns);
void dbr_uring_cqe(void *data, void *user_data, int res);
enum fio_q_status dbr_uring_queue(struct thread_data *td, struct dbr_job *dj,
				     struct io_u *io_u, int slot);

/* target.c: the target */
const struct dbr_ident *dbr_same_as(const struct dbr_job *dj, const struct stat *st);
int dbr_distinct(struct dbr_job *dj, const struct stat *st, const char *what, const char *path);
int dbr_distinct_fd(struct dbr_job *dj, int fd, const char *what, const char *path);
void dbr_invalidate(struct dbr_job *dj);
int dbr_layout(struct dbr_job *dj, int first);
int dbr_open_device(struct thread_data *td, struct dbr_job *dj);
int dbr_open_target_dir(struct thread_data *td, struct dbr_job *dj);
void dbr_remove_owned(struct dbr_job *dj);
void dbr_remove_device(struct dbr_job *dj);

/* report.c: the reports */
int dbr_open_report_file(struct dbr_job *dj);
void dbr_close_report_file(struct dbr_job *dj);
int dbr_open_record_log(struct dbr_job *dj);
int dbr_start_record_log(struct dbr_job *dj);
int dbr_close_record_log(struct dbr_job *dj);
void dbr_write_report_file(struct thread_data *td, struct dbr_job *dj);
void dbr_write_summary(struct thread_data *td, struct dbr_job *dj);

#endif
