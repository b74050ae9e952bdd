/*
 * The PostMark engine's own declarations, shared by its files:
 *   engine.c     options, init/cleanup, reports, the ops
 *   stream.c     the operation stream: the model's next operation, the markers between them
 *   fileops.c    PostMark's file operations as plain system calls
 *   uring.c      the same operations through io_uring (pm_io_api=io_uring)
 *   locations.c  the locations: parsing, claiming, room, the directory of a file, cleaning up
 * Calls go one way: engine.c to all; uring.c to fileops.c, locations.c and
 * stream.c; fileops.c to locations.c; locations.c to stream.c; stream.c to
 * none of them.
 */
#ifndef PACK_PM_ENGINE_H
#define PACK_PM_ENGINE_H

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
#include "target.h"
#include "pmmarker.h"

#define ENGINE		"postmark"
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
	/* the text of the 0/1 options, read at init (fioglue.h, PACK_NUM) */
	char *buffering_text, *whole_seconds_text, *space_check_text;
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
	struct pmm marker;	/* what the engine made here (pmmarker.h) */
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
	int rec;		/* its line in the marker (create, delete), or -1 */
	int made;		/* a create's open succeeded: the file is the engine's */
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
	int *slot_rec;			/* per table slot: its file's line in the marker, or -1 */
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
	unsigned sqes; /* SQEs prepared and not yet completed */
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

/* stream.c: the operation stream (and the io_uring mode's phase and transaction markers) */
void pm_advance(struct pm_data *pd, int stamp);
void pm_check_tx_limit(struct pm_data *pd);
enum op_class pm_class_of(const struct pm_op *op);
uint32_t pm_dist_size(void *ctx, int name);
const char *pm_op_name(const struct pm_op *op);
void pm_stamp_pending_phases(struct pm_data *pd);
void pm_stamp_phase(struct pm_data *pd, enum pm_phase ph);

/* fileops.c: PostMark's file operations, plain system calls */
int pm_commit_deferred(struct pm_data *pd);
void pm_file_path(struct pm_data *pd, const struct pm_op *op, char *buf, size_t len);
void pm_record(struct class_stats *s, uint64_t ns, uint64_t bytes, int err);
int pm_run_op(struct pm_data *pd, const struct pm_op *op, uint64_t *bytes);

/* uring.c: pm_io_api=io_uring (the ops' commit, getevents and event hooks too) */
int pm_commit(struct thread_data *td);
struct io_u *pm_event(struct thread_data *td, int event);
int pm_getevents(struct thread_data *td, unsigned int min, unsigned int max,
		 const struct timespec *t);
void pm_uring_exit(struct pm_data *pd);
int pm_uring_init(struct thread_data *td, struct pm_data *pd);
enum fio_q_status pm_uring_queue(struct thread_data *td, struct pm_data *pd, struct io_u *io_u);

/*
 * locations.c: what the engine holds. A create is listed in its pool's
 * marker before it is made and unlisted if it fails; a read, append or
 * delete touches only a file the engine holds (one whose create failed,
 * say with EEXIST for a user's file, is not); a deleted file is unlisted.
 */
int pm_own_create(struct pm_data *pd, const struct pm_op *op);
void pm_own_made(struct pm_data *pd, const struct pm_op *op, int rec, int made, uint64_t ino);
int pm_own_holds(const struct pm_data *pd, const struct pm_op *op);
int pm_own_take(struct pm_data *pd, const struct pm_op *op);
void pm_own_gone(struct pm_data *pd, const struct pm_op *op, int rec);

/* locations.c: the locations */
int pm_dir_of(struct pm_data *pd, const struct pm_op *op, int *tmp);
int pm_name_like(const char *s);
int pm_check_room(struct thread_data *td, struct pm_data *pd);
void pm_delete_live(struct pm_data *pd);
int pm_make_subdirs(struct pm_data *pd);
int pm_open_pools(struct thread_data *td, struct pm_data *pd);
void pm_release_pools(struct pm_data *pd);

#endif
