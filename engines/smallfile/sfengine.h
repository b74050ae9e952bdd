/*
 * The smallfile engine's own declarations, shared by its files:
 *   engine.c   fio's hooks, the options, init/setup/cleanup, the ops
 *   fileops.c  a file operation as plain system calls (tree_io_api=sync)
 *   uring.c    the same operations through io_uring
 *   target.c   the tree's directory: its checks, marker, room
 *   opstats.c  the per-operation JSON line (opstats_file)
 */
#ifndef PACK_SF_ENGINE_H
#define PACK_SF_ENGINE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <dirent.h>
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

#include "rng.h"
#include "tree.h"
#include "sizedist.h"
#include "content.h"
#include "opmix.h"
#include "treemeta.h"
#include "sysutil.h"
#include "treespace.h"
#include "jsonl.h"
#include "target.h"
#include "errmsg.h"
#include "units.h"

#define MARKER_NAME	".fio-smallfile-tree"
#define ERRLEN		512
#define DEFAULT_TREE_FILES	10000

/* Streams of per-file randomness (rng.h hash_item). */
enum {
	STREAM_SIZE	= 1,
	STREAM_APPEND	= 2,
	STREAM_CONTENT	= 3,
};

enum file_sync_mode {
	FSYNC_NONE = 0,
	FSYNC_FSYNC,
	FSYNC_FDATASYNC,
};

enum io_api {
	API_SYNC = 0,
	API_IO_URING,
};

struct sf_options {
	void *pad;			/* fio: off1 == 0 means "unset" */
	char *tree_dir;
	char *tree_files;
	/*
	 * The numeric options as the user wrote them, read with their ranges
	 * at init into the fields of the same name without _text (engine.c
	 * sf_num_options: fio's own integer options wrap negative values).
	 */
	char *tree_fanout_text, *tree_depth_text, *files_per_dir_text, *tree_maildir_text;
	char *tree_space_check_text, *file_drop_cache_text, *tree_seed_text, *dir_sync_text;
	char *probe_limit_text;
	unsigned int tree_fanout;
	unsigned int tree_depth;
	unsigned long long files_per_dir;
	unsigned int tree_maildir;
	unsigned int tree_space_check;
	unsigned int file_drop_cache;
	char *file_size_dist;
	char *file_content;
	unsigned long long tree_seed;
	char *file_op;
	char *append_size;
	unsigned int file_sync;
	unsigned int dir_sync;
	unsigned int io_api;
	unsigned int probe_limit;
	char *opstats_file;
};

/* Per-operation counters, written to opstats_file. */
struct op_stats {
	uint64_t ops;
	uint64_t bytes;
	uint64_t probes;	/* extra slots tried because the chosen one was absent/present */
	uint64_t skipped;	/* layout: files already complete */
	uint64_t errors;
	uint64_t lat_sum_ns, lat_min_ns, lat_max_ns;
};

/* io_uring: where a file operation is in its sequence of syscalls. */
enum uring_step {
	US_OPEN,
	US_READ,
	US_READ_CLOSE, /* the last reads with the close hard-linked behind them */
	US_WRITE,
	US_FSYNC,
	US_CLOSE,
	US_RENAME,
	US_UNLINK,
	US_STATX,
	US_DIROPEN,
	US_DIRFSYNC,
	US_DIRCLOSE,
};

/* One in-flight file operation, one per io_u. */
/* reads hard-linked ahead of a file's close (uring.c, prep_reads_close) */
#define LINKED_READS_MAX 2

struct sf_req {
	struct io_u *io_u;
	unsigned idx;		/* io_u->index (shares a union with engine_data): staging names */
	enum file_op op;
	uint64_t slot;
	unsigned probes;
	int fd;
	int dirfd;		/* parent directory for statx/unlinkat/renameat/dir fsync */
	int dirfd2;		/* deliver: the tmp/ directory */
	const char *base;	/* last component of path, relative to dirfd */
	const char *tbase;	/* last component of tmp, relative to dirfd2 */
	struct open_how how;	/* io_uring openat2: must live until submission */
	enum uring_step step;
	uint64_t size;		/* bytes to write */
	uint64_t off;		/* bytes done so far */
	uint64_t bytes;		/* bytes moved */
	int skipped;
	int made_leaf;		/* io_uring: leaf directories created for this op */
	int err;
	const char *refused; /* why a file to write is not the tree's alone (rq->err then) */
	/* io_uring, US_READ_CLOSE: nlinked reads and the close, each once in */
	unsigned nlinked, linked_in;
	int read_res[LINKED_READS_MAX], close_res;
	int reopened;	       /* io_uring: longer than its model size, opened again */
	int looked_past_max;   /* read past sd->size_max: the file's type looked at */
	struct timespec start; /* fio's issue_time (io_uring: given back at completion) */
	struct statx stx;
	char path[PATH_MAX];
	char tmp[PATH_MAX];
};

struct sf_data {
	struct sf_options *o;
	struct tree_shape shape;
	struct size_dist sizes;
	uint64_t size_max; /* the largest file the layout makes (size_dist_max) */
	struct size_dist appends;
	struct content_spec content;
	struct content_pool pool;
	struct op_mix mix;
	enum file_op single;
	int rootfd;
	char root[PATH_MAX];
	int direct;
	unsigned chunk;			/* bs */
	unsigned writer;		/* fio thread number: unique staging names */
	uint64_t seed;
	uint64_t slot_base, slot_count;	/* this job's share of the tree */
	uint64_t budget, issued;	/* operations; budget 0 = until runtime */
	uint64_t rng;			/* xorshift64*: op mix and append sizes */
	uint64_t append_seq;
	int no_openat2;			/* kernel without openat2: O_NOFOLLOW only */
	int pfd;			/* sync mode: the last leaf directory used, kept open */
	size_t plen;
	char pdir[PATH_MAX];
	unsigned saved_td_ddir;		/* fio's rw= while a flipped io_u is queued */
	int issued_any;
	struct timespec t_first, t_last;	/* first issue, last completion */
	struct op_stats stats[FOP_NR];

	/* io_uring mode */
	struct io_uring ring;
	int ring_ok;
	unsigned inring;		/* SQEs prepared and not completed */
	int submit_in_wait;		/* iodepth 1: ->getevents submits (see sf_commit) */
	struct pack_ioq ioq;		/* io_us queued, completed, handed to fio */
};

static inline int sf_op_writes_tree(enum file_op op)
{
	return op == FOP_CREATE || op == FOP_DELIVER || op == FOP_LAYOUT;
}

static inline int sf_op_needs_file(enum file_op op)
{
	return op == FOP_READ || op == FOP_STAT || op == FOP_APPEND || op == FOP_DELETE;
}

/* fileops.c: file operations, sync, and shared helpers */
void sf_account(struct sf_data *sd, struct sf_req *rq);
int sf_begin_write(struct sf_data *sd, struct sf_req *rq);
int sf_check_read_past_max(struct sf_data *sd, struct sf_req *rq, int fd);
const void *sf_chunk_data(struct sf_data *sd, struct sf_req *rq, uint64_t len);
void sf_drop_cache(struct sf_data *sd, int fd);
uint64_t sf_file_size(struct sf_data *sd, uint64_t slot);
int sf_make_leaf(struct sf_data *sd, uint64_t slot);
uint64_t sf_next_chunk(struct sf_data *sd, struct sf_req *rq);
int sf_next_probe(struct sf_data *sd, struct sf_req *rq);
uint64_t sf_next_rand(struct sf_data *sd);
uint64_t sf_ns_between(const struct timespec *a, const struct timespec *b);
int sf_open_beneath(struct sf_data *sd, const char *rel, int flags, mode_t mode);
int sf_open_flags(struct sf_data *sd, enum file_op op);
int sf_open_parent(struct sf_data *sd, const char *rel, int flags, const char **base);
void sf_report_probe_failure(struct sf_data *sd, struct sf_req *rq, int err);
int sf_run_sync(struct sf_data *sd, struct sf_req *rq);
void sf_set_paths(struct sf_data *sd, struct sf_req *rq);

/* uring.c: io_uring */
void sf_close_dirs(struct sf_req *rq);
enum uring_step sf_first_step(enum file_op op);
int sf_uring_advance(struct sf_data *sd, struct sf_req *rq, int res);
int sf_uring_complete(struct sf_data *sd, void *data, int res, struct sf_req **rqp);
int sf_uring_prep_step(struct sf_data *sd, struct sf_req *rq);

/* target.c: the tree's directory */
int sf_open_tree(struct thread_data *td, struct sf_data *sd);

/* opstats.c: the per-operation report */
int sf_check_opstats_file(struct sf_data *sd);
void sf_say_passes(struct thread_data *td, struct sf_data *sd);
void sf_write_opstats(struct thread_data *td, struct sf_data *sd);

#endif
