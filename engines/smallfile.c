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
	struct timespec start;
	struct timespec issue_ts;	/* io_uring: fio's issue_time, given back at completion */
	struct statx stx;
	char path[PATH_MAX];
	char tmp[PATH_MAX];
};

struct sf_data {
	struct sf_options *o;
	struct tree_shape shape;
	struct size_dist sizes;
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
	unsigned queued;		/* SQEs prepared but not submitted */
	struct pack_ioq ioq;		/* io_us queued, completed, handed to fio */
};

static const enum fio_ddir op_ddir[FOP_NR] = {
	[FOP_READ]	= DDIR_READ,
	[FOP_STAT]	= DDIR_READ,
	[FOP_CREATE]	= DDIR_WRITE,
	[FOP_APPEND]	= DDIR_WRITE,
	[FOP_DELETE]	= DDIR_TRIM,
	[FOP_DELIVER]	= DDIR_WRITE,
	[FOP_LAYOUT]	= DDIR_WRITE,
};

static int op_writes_tree(enum file_op op)
{
	return op == FOP_CREATE || op == FOP_DELIVER || op == FOP_LAYOUT;
}

static int op_needs_file(enum file_op op)
{
	return op == FOP_READ || op == FOP_STAT || op == FOP_APPEND || op == FOP_DELETE;
}

static struct ioengine_ops ioengine;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static uint64_t next_rand(struct sf_data *sd)
{
	uint64_t x = sd->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	sd->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint64_t file_size_of(struct sf_data *sd, uint64_t slot)
{
	return size_dist_sample(&sd->sizes, hash_item(sd->seed, STREAM_SIZE, slot));
}

static uint64_t ns_between(const struct timespec *a, const struct timespec *b)
{
	return (uint64_t)(b->tv_sec - a->tv_sec) * 1000000000ULL + b->tv_nsec - a->tv_nsec;
}

static void account(struct sf_data *sd, struct sf_req *rq)
{
	struct op_stats *s = &sd->stats[rq->op];
	struct timespec now;
	uint64_t ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	sd->t_last = now;
	ns = ns_between(&rq->start, &now);
	s->ops++;
	s->bytes += rq->bytes;
	s->probes += rq->probes;
	s->skipped += rq->skipped;
	if (rq->err)
		s->errors++;
	s->lat_sum_ns += ns;
	if (!s->lat_min_ns || ns < s->lat_min_ns)
		s->lat_min_ns = ns;
	if (ns > s->lat_max_ns)
		s->lat_max_ns = ns;
}

static void set_paths(struct sf_data *sd, struct sf_req *rq)
{
	tree_file_path(&sd->shape, rq->slot, rq->path, sizeof(rq->path));
	if (rq->op == FOP_DELIVER) {
		/*
		 * Staging name unique per job and per in-flight request, so two
		 * deliveries to one mailbox slot never share a tmp/ file.
		 */
		int n = tree_tmp_path(&sd->shape, rq->slot, sd->writer, rq->tmp, sizeof(rq->tmp));

		if (n > 0)
			snprintf(rq->tmp + n, sizeof(rq->tmp) - n, ".%u", rq->idx);
	}
}

/*
 * The chosen slot was absent (or, for create, present): try another. A mix
 * of deliveries and deletes changes which files exist, so a read may pick a
 * message a delete removed; trying other slots keeps every counted
 * operation a real one. The retries are uniformly random rather than the
 * next slot: stepping forward would make deletes carve ever longer holes
 * into the tree (the clustering of linear probing). Gives up after
 * probe_limit tries.
 */
static int next_probe(struct sf_data *sd, struct sf_req *rq)
{
	if (++rq->probes > sd->o->probe_limit)
		return 0;
	rq->slot = next_rand(sd) % sd->shape.nfiles;
	set_paths(sd, rq);
	return 1;
}

static void report_probe_failure(struct sf_data *sd, struct sf_req *rq, int err)
{
	log_err("smallfile: %s: no %s file found in %u tries in %s (%s); is the tree laid out?\n",
		file_op_name(rq->op), rq->op == FOP_CREATE ? "absent" : "existing",
		sd->o->probe_limit + 1, sd->root, strerror(err));
}

static int open_flags(struct sf_data *sd, enum file_op op)
{
	int fl = O_NOFOLLOW | O_CLOEXEC;

	switch (op) {
	case FOP_READ:
		fl |= O_RDONLY;
		break;
	case FOP_CREATE:
		fl |= O_WRONLY | O_CREAT | O_EXCL;
		break;
	case FOP_LAYOUT:
		fl |= O_WRONLY | O_CREAT;
		break;
	case FOP_DELIVER:
		fl |= O_WRONLY | O_CREAT | O_TRUNC;
		break;
	case FOP_APPEND:
		/* O_DIRECT appends at unaligned file ends fail: appends stay buffered */
		return fl | O_WRONLY | O_APPEND;
	default:
		break;
	}
	if (sd->direct)
		fl |= O_DIRECT;
	return fl;
}

static uint64_t write_size(struct sf_data *sd, struct sf_req *rq)
{
	if (rq->op == FOP_APPEND)
		return size_dist_sample(&sd->appends, next_rand(sd));
	return file_size_of(sd, rq->slot);
}

/* Length of the next write chunk; clears O_DIRECT before an unaligned tail. */
static uint64_t next_chunk(struct sf_data *sd, struct sf_req *rq)
{
	uint64_t left = rq->size - rq->off;
	uint64_t len = left < sd->chunk ? left : sd->chunk;

	if (sd->direct && rq->op != FOP_APPEND && (len & 4095)) {
		int fl = fcntl(rq->fd, F_GETFL);

		if (fl >= 0 && (fl & O_DIRECT))
			fcntl(rq->fd, F_SETFL, fl & ~O_DIRECT);
	}
	return len;
}

/* The next @len bytes to write, made in the io_u's buffer (unique per file and offset). */
static const void *chunk_data(struct sf_data *sd, struct sf_req *rq, uint64_t len)
{
	uint64_t key = rq->op == FOP_APPEND ? rq->slot ^ (sd->append_seq << 32) : rq->slot;

	content_fill(&sd->pool, &sd->content, sd->seed, key, rq->off, rq->io_u->buf, len);
	return rq->io_u->buf;
}

/* ------------------------------------------------------------------ */
/* Synchronous file operations                                         */
/* ------------------------------------------------------------------ */

/*
 * Opens @rel below the tree root without following any symlink on the way
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a symlink planted in
 * place of one of the tree's directories or files gives ELOOP instead of
 * leading the engine outside its tree. Kernels before 5.6 lack openat2; there
 * only the last component is protected (O_NOFOLLOW).
 */
static int open_beneath_at(struct sf_data *sd, int dfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = flags,
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	int fd;

	if (!sd->no_openat2) {
		fd = NOINTR(syscall(SYS_openat2, dfd, rel, &how, sizeof(how)));
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		sd->no_openat2 = 1;
	}
	return NOINTR(openat(dfd, rel, flags | O_NOFOLLOW, mode));
}

static int open_beneath(struct sf_data *sd, const char *rel, int flags, mode_t mode)
{
	return open_beneath_at(sd, sd->rootfd, rel, flags, mode);
}

/*
 * Opens the directory that holds @rel (safely, as above) and points @base at
 * the last component, for the *at() calls that have no resolve flags:
 * fstatat, unlinkat, renameat. @flags: O_PATH to look, O_RDONLY to fsync.
 */
static int open_parent(struct sf_data *sd, const char *rel, int flags, const char **base)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(rel, '/');
	size_t n;

	if (!slash) {
		*base = rel;
		return open_beneath(sd, ".", flags | O_DIRECTORY | O_CLOEXEC, 0);
	}
	n = slash - rel;
	if (n >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, rel, n);
	dir[n] = '\0';
	*base = slash + 1;
	return open_beneath(sd, dir, flags | O_DIRECTORY | O_CLOEXEC, 0);
}

/*
 * mkdir -p of a relative directory path under the root, one component at a
 * time relative to the previous one, refusing symlinks: mkdirat() with a
 * multi-component path would follow a symlinked parent out of the tree.
 */
static int make_dirs(struct sf_data *sd, const char *rel)
{
	char buf[PATH_MAX];
	char *comp, *save;
	int pfd = -1, ret = 0;

	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int dfd = pfd < 0 ? sd->rootfd : pfd;
		int nfd;

		if (NOINTR(mkdirat(dfd, comp, 0755)) && errno != EEXIST) {
			ret = -errno;
			break;
		}
		nfd = open_beneath_at(sd, dfd, comp, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (nfd < 0) {
			ret = -errno;
			break;
		}
		if (pfd >= 0)
			close(pfd);
		pfd = nfd;
	}
	if (pfd >= 0)
		close(pfd);
	return ret;
}

/* Creates the directories file @slot needs (leaf and, for maildir, tmp/new/cur). */
static int make_leaf(struct sf_data *sd, uint64_t slot)
{
	char leaf[PATH_MAX], sub[PATH_MAX];
	static const char *const maildirs[] = { "tmp", "new", "cur" };
	int ret, i;

	if (tree_leaf_path(&sd->shape, tree_leaf_of(&sd->shape, slot), leaf, sizeof(leaf)) < 0)
		return -ENAMETOOLONG;
	ret = make_dirs(sd, leaf);
	if (ret || !sd->shape.maildir)
		return ret;
	for (i = 0; i < 3; i++) {
		if (snprintf(sub, sizeof(sub), "%s%s%s", leaf, *leaf ? "/" : "",
			     maildirs[i]) >= (int)sizeof(sub))
			return -ENAMETOOLONG;
		ret = make_dirs(sd, sub);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Sync mode: the directory holding @rel, for stat, delete and directory
 * fsync. Consecutive operations mostly hit the same leaf (and a flat tree
 * has only the root), so the last one stays open: one openat2 and close
 * fewer per operation. Not to be closed by the caller.
 */
static int parent_fd(struct sf_data *sd, const char *rel, const char **base)
{
	const char *slash = strrchr(rel, '/');
	size_t n;
	int fd;

	if (!slash) {
		*base = rel;
		return sd->rootfd;
	}
	n = slash - rel;
	if (sd->pfd >= 0 && n == sd->plen && !memcmp(sd->pdir, rel, n)) {
		*base = slash + 1;
		return sd->pfd;
	}
	fd = open_parent(sd, rel, O_RDONLY, base);
	if (fd < 0)
		return -1;
	if (sd->pfd >= 0)
		close(sd->pfd);
	sd->pfd = fd;
	memcpy(sd->pdir, rel, n);
	sd->plen = n;
	return fd;
}

static int sync_dir_of(struct sf_data *sd, const char *path)
{
	const char *base;
	int fd;

	fd = parent_fd(sd, path, &base);
	if (fd < 0)
		return -errno;
	return NOINTR(fsync(fd)) ? -errno : 0;
}

static int sync_file(struct sf_data *sd, int fd)
{
	if (sd->o->file_sync == FSYNC_FSYNC)
		return NOINTR(fsync(fd)) ? -errno : 0;
	if (sd->o->file_sync == FSYNC_FDATASYNC)
		return NOINTR(fdatasync(fd)) ? -errno : 0;
	return 0;
}

static int write_whole(struct sf_data *sd, struct sf_req *rq)
{
	while (rq->off < rq->size) {
		uint64_t len = next_chunk(sd, rq);
		ssize_t n = write(rq->fd, chunk_data(sd, rq, len), len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		rq->off += n;
		rq->bytes += n;
	}
	return 0;
}

/* Opens rq->path (or rq->tmp) creating missing directories on the way. */
static int open_creating(struct sf_data *sd, struct sf_req *rq, const char *path)
{
	int fl = open_flags(sd, rq->op);
	int fd, ret;

	fd = open_beneath(sd, path, fl, 0644);
	if (fd < 0 && errno == ENOENT) {
		ret = make_leaf(sd, rq->slot);
		if (ret)
			return ret;
		fd = open_beneath(sd, path, fl, 0644);
	}
	if (fd < 0 && errno == EINVAL && (fl & O_DIRECT))
		return -EOPNOTSUPP;
	return fd < 0 ? -errno : fd;
}

/*
 * file_drop_cache: the file's data leaves the page cache once read, so the
 * next read of it goes to the device (a cold test that runs past one pass).
 * Only data: inodes, dentries and directory blocks stay cached.
 */
static void drop_cache(struct sf_data *sd, int fd)
{
	if (sd->o->file_drop_cache)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static int do_read(struct sf_data *sd, struct sf_req *rq)
{
	int fd;

	for (;;) {
		fd = open_beneath(sd, rq->path, open_flags(sd, FOP_READ), 0);
		if (fd >= 0)
			break;
		if (errno == EINVAL && sd->direct)
			return -EOPNOTSUPP;
		if (errno != ENOENT || !next_probe(sd, rq))
			return -errno;
	}
	for (;;) {
		ssize_t n = read(fd, rq->io_u->buf, sd->chunk);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		/*
		 * Only 0 means end of file: a read can return less than asked
		 * before it (a signal, NFS, FUSE), and stopping there would
		 * count a partial file as whole.
		 */
		if (n == 0)
			break;
		rq->bytes += n;
	}
	drop_cache(sd, fd);
	close(fd);
	return 0;
}

static int do_stat(struct sf_data *sd, struct sf_req *rq)
{
	const char *base;
	struct stat st;
	int dfd, ret;

	for (;;) {
		dfd = parent_fd(sd, rq->path, &base);
		if (dfd >= 0) {
			ret = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
		} else {
			ret = -errno;
		}
		if (ret != -ENOENT || !next_probe(sd, rq))
			return ret;
	}
}

static int do_delete(struct sf_data *sd, struct sf_req *rq)
{
	const char *base;
	int dfd, ret;

	for (;;) {
		dfd = parent_fd(sd, rq->path, &base);
		if (dfd < 0) {
			ret = -errno;
		} else {
			ret = NOINTR(unlinkat(dfd, base, 0)) ? -errno : 0;
			if (!ret && sd->o->dir_sync && NOINTR(fsync(dfd)))
				ret = -errno;
		}
		if (ret != -ENOENT || !next_probe(sd, rq))
			return ret;
	}
}

/* maildir: rename tmp/NAME.wJOB.N over new/NAME, both directories opened safely */
static int deliver_rename(struct sf_data *sd, struct sf_req *rq)
{
	const char *tbase, *nbase;
	int tdfd, ndfd, ret = 0;

	tdfd = open_parent(sd, rq->tmp, O_PATH, &tbase);
	if (tdfd < 0)
		return -errno;
	ndfd = open_parent(sd, rq->path, O_RDONLY, &nbase);
	if (ndfd < 0) {
		ret = -errno;
		close(tdfd);
		return ret;
	}
	if (NOINTR(renameat(tdfd, tbase, ndfd, nbase)))
		ret = -errno;
	else if (sd->o->dir_sync && NOINTR(fsync(ndfd)))
		ret = -errno;
	close(tdfd);
	close(ndfd);
	return ret;
}

/* create, append, deliver and layout: open, write whole, sync, close(, rename). */
static int do_write_op(struct sf_data *sd, struct sf_req *rq)
{
	const char *path = rq->op == FOP_DELIVER ? rq->tmp : rq->path;
	int ret;

	for (;;) {
		if (rq->op == FOP_APPEND) {
			ret = open_beneath(sd, path, open_flags(sd, FOP_APPEND), 0);
			if (ret < 0)
				ret = -errno;
		} else {
			ret = open_creating(sd, rq, path);
		}
		if (ret >= 0)
			break;
		if (rq->op == FOP_CREATE && ret == -EEXIST && next_probe(sd, rq))
			continue;
		if (rq->op == FOP_APPEND && ret == -ENOENT && next_probe(sd, rq))
			continue;
		return ret;
	}
	rq->fd = ret;
	rq->size = write_size(sd, rq);
	if (rq->op == FOP_APPEND)
		sd->append_seq++;
	if (rq->op == FOP_LAYOUT) {
		struct stat st;

		/* resumable: a file as long as its model size was written whole */
		if (fstat(rq->fd, &st) == 0 && (uint64_t)st.st_size >= rq->size) {
			rq->skipped = 1;
			close(rq->fd);
			return 0;
		}
		if (st.st_size && NOINTR(ftruncate(rq->fd, 0))) {
			ret = -errno;
			goto out;
		}
	}
	ret = write_whole(sd, rq);
	if (!ret)
		ret = sync_file(sd, rq->fd);
out:
	if (close(rq->fd) && !ret)
		ret = -errno;
	if (ret)
		return ret;
	if (rq->op == FOP_DELIVER) {
		rq->step = US_RENAME;	/* error messages name new/, not tmp/ */
		return deliver_rename(sd, rq);
	}
	if (sd->o->dir_sync)
		return sync_dir_of(sd, rq->path);
	return 0;
}

static int run_sync(struct sf_data *sd, struct sf_req *rq)
{
	switch (rq->op) {
	case FOP_READ:
		return do_read(sd, rq);
	case FOP_STAT:
		return do_stat(sd, rq);
	case FOP_DELETE:
		return do_delete(sd, rq);
	default:
		return do_write_op(sd, rq);
	}
}

/* ------------------------------------------------------------------ */
/* io_uring: each file operation is a small state machine of SQEs     */
/* ------------------------------------------------------------------ */

static struct io_uring_sqe *get_sqe(struct sf_data *sd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sd->ring);

	if (!sqe) {
		io_uring_submit(&sd->ring);
		sqe = io_uring_get_sqe(&sd->ring);
	}
	return sqe;
}

static void close_dirs(struct sf_req *rq)
{
	if (rq->dirfd >= 0)
		close(rq->dirfd);
	if (rq->dirfd2 >= 0)
		close(rq->dirfd2);
	rq->dirfd = rq->dirfd2 = -1;
}

/*
 * statx, unlinkat and renameat have no resolve flags, so the directories
 * they work in are opened first, synchronously and safely (open_parent),
 * and the calls name only the last component. Returns 0, or -errno.
 */
static int open_step_dirs(struct sf_data *sd, struct sf_req *rq)
{
	switch (rq->step) {
	case US_STATX:
		rq->dirfd = open_parent(sd, rq->path, O_PATH, &rq->base);
		break;
	case US_UNLINK:
	case US_DIROPEN:
		rq->dirfd = open_parent(sd, rq->path, O_RDONLY, &rq->base);
		break;
	case US_RENAME:
		rq->dirfd2 = open_parent(sd, rq->tmp, O_PATH, &rq->tbase);
		if (rq->dirfd2 < 0)
			return -errno;
		rq->dirfd = open_parent(sd, rq->path, O_RDONLY, &rq->base);
		break;
	default:
		return 0;
	}
	return rq->dirfd < 0 ? -errno : 0;
}

/* Queues the SQE for rq's current step. Returns 0, or 1 if the op is complete. */
static int uring_prep_step(struct sf_data *sd, struct sf_req *rq)
{
	struct io_uring_sqe *sqe;
	const char *path = rq->op == FOP_DELIVER ? rq->tmp : rq->path;
	int ret;

	for (;;) {
		ret = open_step_dirs(sd, rq);
		if (!ret)
			break;
		close_dirs(rq);
		/* a missing directory means a missing file: try another */
		if (ret == -ENOENT && (rq->step == US_STATX || rq->step == US_UNLINK) &&
		    next_probe(sd, rq))
			continue;
		rq->err = -ret;
		return 1;
	}
	if (rq->step == US_DIROPEN)
		rq->step = US_DIRFSYNC;

	sqe = get_sqe(sd);
	if (!sqe) {
		close_dirs(rq);
		rq->err = EBUSY;
		return 1;
	}
	switch (rq->step) {
	case US_OPEN: {
		int fl = open_flags(sd, rq->op);

		if (sd->no_openat2) {
			io_uring_prep_openat(sqe, sd->rootfd, path, fl, 0644);
			break;
		}
		memset(&rq->how, 0, sizeof(rq->how));
		rq->how.flags = fl;
		rq->how.mode = (fl & O_CREAT) ? 0644 : 0;
		rq->how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
		io_uring_prep_openat2(sqe, sd->rootfd, path, &rq->how);
		break;
	}
	case US_READ:
		io_uring_prep_read(sqe, rq->fd, rq->io_u->buf, sd->chunk, rq->off);
		break;
	case US_WRITE: {
		uint64_t len = next_chunk(sd, rq);

		io_uring_prep_write(sqe, rq->fd, chunk_data(sd, rq, len), len,
				    rq->op == FOP_APPEND ? (uint64_t)-1 : rq->off);
		break;
	}
	case US_FSYNC:
		io_uring_prep_fsync(sqe, rq->fd,
				    sd->o->file_sync == FSYNC_FDATASYNC ? IORING_FSYNC_DATASYNC : 0);
		break;
	case US_CLOSE:
		io_uring_prep_close(sqe, rq->fd);
		break;
	case US_RENAME:
		io_uring_prep_renameat(sqe, rq->dirfd2, rq->tbase, rq->dirfd, rq->base, 0);
		break;
	case US_UNLINK:
		io_uring_prep_unlinkat(sqe, rq->dirfd, rq->base, 0);
		break;
	case US_STATX:
		io_uring_prep_statx(sqe, rq->dirfd, rq->base, AT_SYMLINK_NOFOLLOW,
				    STATX_BASIC_STATS, &rq->stx);
		break;
	case US_DIROPEN:	/* opened synchronously above; now US_DIRFSYNC */
	case US_DIRFSYNC:
		io_uring_prep_fsync(sqe, rq->dirfd, 0);
		break;
	case US_DIRCLOSE:
		io_uring_prep_close(sqe, rq->dirfd);
		break;
	}
	io_uring_sqe_set_data(sqe, rq);
	sd->queued++;
	return 0;
}

static enum uring_step first_step(enum file_op op)
{
	switch (op) {
	case FOP_STAT:
		return US_STATX;
	case FOP_DELETE:
		return US_UNLINK;
	default:
		return US_OPEN;
	}
}

/* After the data is written: sync, close, rename, dir sync as configured. */
static enum uring_step after_write(struct sf_data *sd)
{
	return sd->o->file_sync != FSYNC_NONE ? US_FSYNC : US_CLOSE;
}

static enum uring_step after_close(struct sf_data *sd, struct sf_req *rq, int *done)
{
	if (rq->op == FOP_DELIVER)
		return US_RENAME;
	if (sd->o->dir_sync && rq->op != FOP_READ) {
		return US_DIROPEN;
	}
	*done = 1;
	return US_CLOSE;
}

/*
 * Advances rq after a completion with result @res. Returns 1 when the file
 * operation is finished (successfully or with rq->err set).
 */
static int uring_advance(struct sf_data *sd, struct sf_req *rq, int res)
{
	int done = 0;

	switch (rq->step) {
	case US_OPEN:
		if (res == -ENOENT && op_writes_tree(rq->op) && !rq->made_leaf) {
			int ret = make_leaf(sd, rq->slot);

			if (ret) {
				rq->err = -ret;
				return 1;
			}
			rq->made_leaf = 1;
			break;	/* retry the open once */
		}
		if ((res == -ENOENT && op_needs_file(rq->op)) ||
		    (res == -EEXIST && rq->op == FOP_CREATE)) {
			if (next_probe(sd, rq))
				break;
		}
		if (res == -EINVAL && sd->direct)
			res = -EOPNOTSUPP;
		if (res < 0) {
			rq->err = -res;
			return 1;
		}
		rq->fd = res;
		if (rq->op == FOP_READ) {
			rq->step = US_READ;
			break;
		}
		rq->size = write_size(sd, rq);
		if (rq->op == FOP_APPEND)
			sd->append_seq++;
		if (rq->op == FOP_LAYOUT) {
			struct stat st;

			if (fstat(rq->fd, &st) == 0 && (uint64_t)st.st_size >= rq->size) {
				rq->skipped = 1;
				rq->step = US_CLOSE;
				break;
			}
			if (st.st_size && ftruncate(rq->fd, 0)) {
				rq->err = errno;
				rq->step = US_CLOSE;
				break;
			}
		}
		rq->step = rq->size ? US_WRITE : after_write(sd);
		break;
	case US_READ:
		if (res < 0) {
			rq->err = -res;
			rq->step = US_CLOSE;
			break;
		}
		rq->bytes += res;
		rq->off += res;
		if ((unsigned)res < sd->chunk) {
			drop_cache(sd, rq->fd);	/* synchronous: one fadvise a file */
			rq->step = US_CLOSE;
		}
		break;
	case US_WRITE:
		if (res <= 0) {
			rq->err = res ? -res : EIO;
			rq->step = US_CLOSE;
			break;
		}
		rq->off += res;
		rq->bytes += res;
		if (rq->off >= rq->size)
			rq->step = after_write(sd);
		break;
	case US_FSYNC:
		if (res < 0)
			rq->err = -res;
		rq->step = US_CLOSE;
		break;
	case US_CLOSE:
		if (res < 0 && !rq->err)
			rq->err = -res;
		if (rq->err || rq->op == FOP_READ || rq->skipped)
			return 1;
		rq->step = after_close(sd, rq, &done);
		if (done)
			return 1;
		break;
	case US_RENAME:
		close(rq->dirfd2);
		rq->dirfd2 = -1;
		if (res < 0 || !sd->o->dir_sync) {
			if (res < 0)
				rq->err = -res;
			close_dirs(rq);
			return 1;
		}
		rq->step = US_DIRFSYNC;
		break;
	case US_UNLINK:
		if (res == -ENOENT) {
			close_dirs(rq);
			if (next_probe(sd, rq))
				break;
		}
		if (res < 0 || !sd->o->dir_sync) {
			if (res < 0)
				rq->err = -res;
			close_dirs(rq);
			return 1;
		}
		rq->step = US_DIRFSYNC;
		break;
	case US_STATX:
		close_dirs(rq);
		if (res == -ENOENT && next_probe(sd, rq))
			break;
		if (res < 0)
			rq->err = -res;
		return 1;
	case US_DIROPEN:
		/* not submitted: uring_prep_step turns it into US_DIRFSYNC */
		break;
	case US_DIRFSYNC:
		if (res < 0)
			rq->err = -res;
		rq->step = US_DIRCLOSE;
		break;
	case US_DIRCLOSE:
		rq->dirfd = -1;
		return 1;
	}
	return uring_prep_step(sd, rq);
}

/* ------------------------------------------------------------------ */
/* fio hooks                                                           */
/* ------------------------------------------------------------------ */

static void finish_io_u(struct sf_data *sd, struct sf_req *rq)
{
	struct io_u *io_u = rq->io_u;

	close_dirs(rq);
	account(sd, rq);
	if (rq->err) {
		if (rq->probes > sd->o->probe_limit)
			report_probe_failure(sd, rq, rq->err);
		else if (rq->err == EOPNOTSUPP)
			log_err("smallfile: direct=1: the file system of %s does not support O_DIRECT\n",
				sd->root);
		else
			log_err("smallfile: %s %s/%s: %s\n", file_op_name(rq->op), sd->root,
				rq->op == FOP_DELIVER && rq->step < US_RENAME ? rq->tmp : rq->path,
				strerror(rq->err));
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
		op = op_mix_pick(&sd->mix, (uint32_t)(next_rand(sd) >> 32));
	memset(&rq->op, 0, offsetof(struct sf_req, stx) - offsetof(struct sf_req, op));
	rq->op = op;
	rq->fd = -1;
	rq->dirfd = -1;
	rq->dirfd2 = -1;
	rq->slot = sd->slot_base + io_u->offset / sd->chunk;
	if (rq->slot >= sd->shape.nfiles)
		rq->slot %= sd->shape.nfiles;
	set_paths(sd, rq);
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
	clock_gettime(CLOCK_MONOTONIC, &rq->start);
	if (!sd->issued_any) {
		sd->issued_any = 1;
		sd->t_first = rq->start;
	}

	if (sd->o->io_api == API_IO_URING) {
		fio_gettime(&io_u->issue_time, NULL);	/* PACK_ASYNCIO_SETS_ISSUE_TIME */
		rq->issue_ts = io_u->issue_time;
		rq->step = first_step(rq->op);
		if (uring_prep_step(sd, rq)) {
			finish_io_u(sd, rq);
			return pack_ioq_done_in_queue(td, &sd->ioq, io_u);
		}
		pack_ioq_queued(&sd->ioq, io_u);
		return FIO_Q_QUEUED;
	}

	ret = run_sync(sd, rq);
	if (ret < 0)
		rq->err = -ret;
	finish_io_u(sd, rq);
	return FIO_Q_COMPLETED;
}

static int sf_commit(struct thread_data *td)
{
	struct sf_data *sd = td->io_ops_data;
	int ret;

	if (sd->o->io_api != API_IO_URING)
		return 0;
	if (sd->queued) {
		ret = io_uring_submit(&sd->ring);
		if (ret < 0)
			return ret;
		sd->queued = 0;
	}
	/* fio's submit accounting is per io_u (file operation), not per SQE */
	pack_ioq_commit(td, &sd->ioq);
	return 0;
}

static int sf_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			const struct timespec *t)
{
	struct sf_data *sd = td->io_ops_data;

	pack_ioq_forget_returned(&sd->ioq);
	while (sd->ioq.ndone < min || (sd->ioq.ndone == 0 && min == 0)) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		int ret;

		if (sd->queued) {
			io_uring_submit(&sd->ring);
			sd->queued = 0;
		}
		if (sd->ioq.ndone >= min) {
			ret = io_uring_peek_cqe(&sd->ring, &cqe);
			if (ret)
				break;
		} else {
			ret = io_uring_wait_cqe(&sd->ring, &cqe);
			if (ret == -EINTR)
				continue;
			if (ret)
				return ret;
		}
		io_uring_for_each_cqe(&sd->ring, head, cqe) {
			struct sf_req *rq = io_uring_cqe_get_data(cqe);

			seen++;
			if (uring_advance(sd, rq, cqe->res)) {
				finish_io_u(sd, rq);
				/* fio before 3.31 stamped its own after ->queue */
				rq->io_u->issue_time = rq->issue_ts;
				pack_ioq_completed(&sd->ioq, rq->io_u);
			}
		}
		io_uring_cq_advance(&sd->ring, seen);
		if (min == 0)
			break;
	}
	if (sd->queued) {
		io_uring_submit(&sd->ring);
		sd->queued = 0;
	}
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

/* ------------------------------------------------------------------ */
/* Tree set-up and validation                                          */
/* ------------------------------------------------------------------ */

static int format_marker(struct sf_data *sd, char *buf, size_t len)
{
	char sizes[256], content[64];
	const struct tree_shape *t = &sd->shape;

	size_dist_describe(&sd->sizes, sizes, sizeof(sizes));
	content_describe(&sd->content, content, sizeof(content));
	return snprintf(buf, len,
			TREEMETA_MAGIC "\n"
			"# made by the smallfile fio engine; every file below this directory is its own\n"
			"tree_files=%llu\ntree_fanout=%u\ntree_depth=%u\nfiles_per_leaf=%llu\n"
			"tree_maildir=%d\nfile_size_dist=%s\nfile_content=%s\ntree_seed=%llu\n",
			(unsigned long long)t->nfiles, t->fanout, t->depth,
			(unsigned long long)t->files_per_leaf, t->maildir, sizes, content,
			(unsigned long long)sd->seed);
}

/*
 * How many files this layout writes, over all its numjobs clones: the whole
 * tree, or number_ios= of them a clone (a layout cut short on purpose).
 */
static uint64_t layout_files(struct thread_data *td, struct sf_data *sd)
{
	uint64_t n = sd->shape.nfiles, per = td->o.number_ios;

	if (per && per * pack_clone_count(td) < n)
		return per * pack_clone_count(td);
	return n;
}

/* @b bytes as "5.62 GB (5621441331 bytes)": decimal, as df -H and disk labels */
static void room_text(uint64_t b, char *buf, size_t len)
{
	if (b >= 1000000000ULL)
		snprintf(buf, len, "%.2f GB (%llu bytes)", (double)b / 1e9, (unsigned long long)b);
	else
		snprintf(buf, len, "%.1f MB (%llu bytes)", (double)b / 1e6, (unsigned long long)b);
}

/*
 * A new layout: the tree's bytes and inodes must fit in the file system
 * before anything is written (a layout that hits ENOSPC hours in leaves a
 * tree that fits nobody's question). 0, or 1 with one line saying both.
 */
static int check_room(struct thread_data *td, struct sf_data *sd)
{
	struct tree_space need;
	struct statvfs vfs;
	uint64_t have, inodes, bytes;
	char nb[64], hb[64], eb[80] = "";

	if (fstatvfs(sd->rootfd, &vfs))
		return 0;	/* no statistics to check against (some FUSE file systems) */
	tree_space(&sd->shape, &sd->sizes, sd->seed, STREAM_SIZE, vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize,
		   TREE_SPACE_EXACT_MAX, layout_files(td, sd), &need);
	/*
	 * What df calls Avail, for root too: ext4 keeps some of the blocks
	 * root may use for its own metadata, so filling those is no plan
	 */
	have = (uint64_t)vfs.f_bavail * (vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize);
	inodes = vfs.f_favail;
	bytes = need.data_bytes + need.dir_bytes;
	/* f_blocks 0: no fixed size to check against (ramfs) */
	if (vfs.f_blocks && bytes > have) {
		room_text(bytes, nb, sizeof(nb));
		room_text(have, hb, sizeof(hb));
		if (need.data_error)
			snprintf(eb, sizeof(eb), " (+-%.1f MB: sizes sampled)", (double)need.data_error / 1e6);
		log_err("smallfile: tree_dir %s: the tree needs %s%s for %llu files in %llu directories, the file system has %s free; lay out fewer or smaller files (tree_files, file_size_dist) or use a larger file system\n",
			sd->root, nb, eb, (unsigned long long)need.files,
			(unsigned long long)need.dirs, hb);
		return 1;
	}
	/* f_files 0: no fixed inode table (btrfs, tmpfs without nr_inodes) */
	if (vfs.f_files && need.files + need.dirs > inodes) {
		log_err("smallfile: tree_dir %s: the tree needs %llu inodes (%llu files, %llu directories), the file system has %llu free; lay out fewer files or make the file system with more inodes (mkfs.ext4 -N, -i)\n",
			sd->root, (unsigned long long)(need.files + need.dirs),
			(unsigned long long)need.files, (unsigned long long)need.dirs,
			(unsigned long long)inodes);
		return 1;
	}
	return 0;
}

static int dir_is_empty(int fd)
{
	int dup_fd = dup(fd);
	DIR *d;
	struct dirent *de;
	int empty = 1;

	if (dup_fd < 0)
		return -1;
	d = fdopendir(dup_fd);
	if (!d) {
		close(dup_fd);
		return -1;
	}
	while ((de = readdir(d))) {
		/* a concurrent job's marker being written does not count */
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strncmp(de->d_name, MARKER_NAME ".", sizeof(MARKER_NAME)) &&
		    !is_fs_root_lost_found(fd, de->d_name)) {
			empty = 0;
			break;
		}
	}
	closedir(d);
	return empty;
}

static int read_marker(int rootfd, char *buf, size_t len)
{
	int fd = NOINTR(openat(rootfd, MARKER_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	size_t got = 0;
	ssize_t n = 0;

	if (fd < 0)
		return -errno;
	/* to end of file: a read may return less before it */
	while (got < len - 1 && (n = NOINTR(read(fd, buf + got, len - 1 - got))) > 0)
		got += n;
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	buf[got] = '\0';
	return 0;
}

/*
 * Publishes the marker atomically: written whole under a private name, then
 * linked into place, so concurrent jobs see either no marker or a complete
 * one; a loser of the race compares against the winner's.
 */
static int write_marker(struct sf_data *sd, const char *text)
{
	char tmp[64];
	int fd, ret = 0;
	size_t len = strlen(text);

	snprintf(tmp, sizeof(tmp), MARKER_NAME ".%d", (int)getpid());
	fd = NOINTR(openat(sd->rootfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			   0644));
	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = NOINTR(write(fd, text, len));

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		text += n;
		len -= n;
	}
	if (!ret && NOINTR(fsync(fd)))
		ret = -errno;
	close(fd);
	if (!ret && NOINTR(linkat(sd->rootfd, tmp, sd->rootfd, MARKER_NAME, 0)))
		ret = -errno;
	NOINTR(unlinkat(sd->rootfd, tmp, 0));
	return ret;
}

static int writes_tree(struct sf_data *sd)
{
	int op;

	for (op = 0; op < FOP_NR; op++)
		if (sd->mix.weight[op] && op != FOP_READ && op != FOP_STAT)
			return 1;
	return 0;
}

static int creates_tree(struct sf_data *sd)
{
	int op;

	for (op = 0; op < FOP_NR; op++)
		if (sd->mix.weight[op] && op_writes_tree(op))
			return 1;
	return 0;
}

/*
 * The default target when tree_dir is empty: a directory of our own under
 * $TMPDIR, named after the tree parameters so that jobs sharing [global]
 * options share a tree, and trees with other parameters never collide.
 */
static int default_root(struct sf_data *sd, const char *marker, char *out, size_t len)
{
	const char *tmpdir = getenv("TMPDIR");
	char parent[PATH_MAX];
	struct stat st;
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *p;

	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	for (p = marker; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	snprintf(parent, sizeof(parent), "%s/fio-smallfile-%u", tmpdir, (unsigned)getuid());
	if (mkdir(parent, 0700) && errno != EEXIST) {
		log_err("smallfile: tree_dir unset and cannot create %s: %s\n", parent, strerror(errno));
		return 1;
	}
	if (lstat(parent, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
		log_err("smallfile: tree_dir unset and %s is not a directory of ours; set tree_dir\n", parent);
		return 1;
	}
	if (snprintf(out, len, "%s/%016llx", parent, (unsigned long long)h) >= (int)len) {
		log_err("smallfile: TMPDIR %s is too long\n", tmpdir);
		return 1;
	}
	if (mkdir(out, 0755) && errno != EEXIST) {
		log_err("smallfile: cannot create %s: %s\n", out, strerror(errno));
		return 1;
	}
	return 0;
}

static int open_tree(struct thread_data *td, struct sf_data *sd)
{
	char marker[1024], found[4096], why[512];
	struct statvfs vfs;
	struct stat st;
	int ret, empty;

	format_marker(sd, marker, sizeof(marker));
	if (!sd->o->tree_dir || !*sd->o->tree_dir) {
		if (default_root(sd, marker, sd->root, sizeof(sd->root)))
			return 1;
	} else {
		snprintf(sd->root, sizeof(sd->root), "%s", sd->o->tree_dir);
	}
	if (stat(sd->root, &st)) {
		log_err("smallfile: tree_dir %s: %s\n", sd->root, strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_err("smallfile: tree_dir %s is not a directory\n", sd->root);
		return 1;
	}
	sd->rootfd = open(sd->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sd->rootfd < 0) {
		log_err("smallfile: tree_dir %s: %s\n", sd->root, strerror(errno));
		return 1;
	}
	if (writes_tree(sd)) {
		if (fstatvfs(sd->rootfd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
			log_err("smallfile: tree_dir %s is on a read-only file system\n", sd->root);
			return 1;
		}
		if (faccessat(AT_FDCWD, sd->root, W_OK | X_OK, AT_EACCESS)) {
			log_err("smallfile: tree_dir %s is not writable: %s\n", sd->root, strerror(errno));
			return 1;
		}
	}

	ret = read_marker(sd->rootfd, found, sizeof(found));
	if (ret == -ENOENT) {
		empty = dir_is_empty(sd->rootfd);
		if (!empty) {
			/* a racing clone may have just published the marker */
			ret = read_marker(sd->rootfd, found, sizeof(found));
			if (ret == -ENOENT) {
				log_err("smallfile: tree_dir %s is not empty and holds no smallfile tree; refusing to touch it\n",
					sd->root);
				return 1;
			}
		} else if (!creates_tree(sd)) {
			log_err("smallfile: tree_dir %s holds no laid-out tree; run a job with file_op=layout first\n",
				sd->root);
			/* leave no empty default directory behind */
			if (!sd->o->tree_dir || !*sd->o->tree_dir)
				rmdir(sd->root);
			return 1;
		} else {
			if (op_mix_single(&sd->mix) == FOP_LAYOUT && sd->o->tree_space_check &&
			    check_room(td, sd))
				return 1;
			ret = write_marker(sd, marker);
			if (ret == -EEXIST)
				ret = read_marker(sd->rootfd, found, sizeof(found));
			else if (!ret)
				return 0;
		}
	}
	if (ret) {
		log_err("smallfile: tree_dir %s: cannot read %s: %s\n", sd->root, MARKER_NAME,
			strerror(-ret));
		return 1;
	}
	ret = treemeta_compare(found, marker, why, sizeof(why));
	if (ret < 0) {
		log_err("smallfile: tree_dir %s: %s is not a smallfile tree marker; refusing to touch it\n",
			sd->root, MARKER_NAME);
		return 1;
	}
	if (ret) {
		log_err("smallfile: tree_dir %s was laid out with other parameters: %s\n", sd->root, why);
		return 1;
	}
	return 0;
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

static int parse_sf_options(struct thread_data *td, struct sf_data *sd)
{
	struct sf_options *o = sd->o;
	char err[ERRLEN];
	uint64_t nfiles;

	if (parse_count(o->tree_files, DEFAULT_TREE_FILES, &nfiles)) {
		snprintf(err, sizeof(err), "tree_files '%s' is not a number", o->tree_files);
		goto bad;
	}
	if (tree_shape_init(&sd->shape, nfiles, o->tree_fanout, o->tree_depth,
			    o->files_per_dir, o->tree_maildir, err, sizeof(err)))
		goto bad;
	if (size_dist_parse(&sd->sizes, o->file_size_dist, "file_size_dist", err, sizeof(err)))
		goto bad;
	if (size_dist_parse(&sd->appends, o->append_size, "append_size", err, sizeof(err)))
		goto bad;
	if (content_parse(&sd->content, o->file_content, "file_content", err, sizeof(err)))
		goto bad;
	if (op_mix_parse(&sd->mix, o->file_op, "file_op", err, sizeof(err)))
		goto bad;
	sd->single = op_mix_single(&sd->mix);
	if (sd->mix.weight[FOP_DELIVER] && !sd->shape.maildir) {
		snprintf(err, sizeof(err), "file_op: deliver needs tree_maildir=1");
		goto bad;
	}
	if (!o->probe_limit) {
		snprintf(err, sizeof(err), "probe_limit must be at least 1");
		goto bad;
	}
	return 0;
bad:
	log_err("smallfile: %s\n", err);
	return 1;
}

static int check_fio_options(struct thread_data *td, struct sf_data *sd)
{
	struct thread_options *to = &td->o;
	int i;

	for (i = 0; i < DDIR_RWDIR_CNT; i++) {
		if (to->min_bs[i] != to->max_bs[i] || to->bs[i] != to->bs[DDIR_READ]) {
			log_err("smallfile: bs must be one fixed size for all directions (it is the read/write chunk)\n");
			return 1;
		}
	}
	if (fio_option_is_set(to, size) || fio_option_is_set(to, io_size)) {
		log_err("smallfile: size= and io_size= do not apply to file operations; a job does one pass over its files, or use number_ios=, loops= or time_based with runtime=\n");
		return 1;
	}
	if (to->nr_files > 1) {
		log_err("smallfile: nrfiles must be 1 (the tree is the file; use tree_files)\n");
		return 1;
	}
	if (to->verify != 0) {
		log_err("smallfile: verify= is not supported by this engine\n");
		return 1;
	}
	return 0;
}

/* numjobs clones of a layout job split the tree between them. */
static int job_share(struct thread_data *td, struct sf_data *sd)
{
	uint64_t n = sd->shape.nfiles, k = td->subjob_number, j = pack_clone_count(td);

	sd->slot_base = 0;
	sd->slot_count = n;
	if (op_mix_single(&sd->mix) != FOP_LAYOUT || j <= 1)
		return 0;
	sd->slot_base = n * k / j;
	sd->slot_count = n * (k + 1) / j - sd->slot_base;
	if (!sd->slot_count) {
		static int said;	/* every idle clone would say it again */

		if (!said++)
			log_err("smallfile: numjobs=%llu exceeds tree_files=%llu\n",
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
	else
		sd->budget = sd->slot_count * passes;
	to->time_based = 1;

	if (open_tree(td, sd))
		return 1;

	if (content_pool_init(&sd->pool, &sd->content, sd->seed, sd->chunk)) {
		log_err("smallfile: out of memory for the content pool\n");
		return 1;
	}
	if (sd->o->io_api == API_IO_URING) {
		unsigned depth = to->iodepth ? to->iodepth : 1;
		/* COOP_TASKRUN where the kernel has it (5.19+): see pack_uring_queue_init */
		int ret = pack_uring_queue_init(depth * 2 < 8 ? 8 : depth * 2, &sd->ring);

		if (ret) {
			log_err("smallfile: io_api=io_uring: io_uring_queue_init: %s\n", strerror(-ret));
			return 1;
		}
		sd->ring_ok = 1;
		if (pack_ioq_init(&sd->ioq, 2 * depth + 8)) {
			log_err("smallfile: out of memory for the io_uring queue\n");
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
	struct sf_data tmp = { .o = td->eo };
	struct fio_file *f;
	unsigned i;
	int ret;

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

/* Whole-file reads of this job over the tree's files: past 1, files were read again. */
static double read_passes(const struct sf_data *sd)
{
	return sd->shape.nfiles ? (double)sd->stats[FOP_READ].ops / (double)sd->shape.nfiles : 0;
}

/*
 * A read job that went past one pass over the tree (time_based, number_ios
 * or loops above the tree's files) reads files again, which the page cache
 * may serve: a cold test turned warm. Said in one line, unless each read
 * dropped its file from the cache.
 */
static void say_passes(struct thread_data *td, struct sf_data *sd)
{
	double p = read_passes(sd);

	if (p <= 1.0 || sd->o->file_drop_cache)
		return;
	log_err("smallfile: job %s read %llu files of a %llu-file tree: %.2f passes; reads after the first pass may come from the page cache (for a cold test: number_ios= at most tree_files with caches dropped first, or file_drop_cache=1)\n",
		td->o.name ? td->o.name : "?", (unsigned long long)sd->stats[FOP_READ].ops,
		(unsigned long long)sd->shape.nfiles, p);
}

/* One JSON line per job (engines/lib/jsonl.h): the counters, whole. */
static void write_opstats(struct thread_data *td, struct sf_data *sd)
{
	struct jsonl w = { 0 };
	char err[PATH_MAX + 128];
	int op;

	if (!sd->o->opstats_file || !*sd->o->opstats_file)
		return;
	jsonl_begin(&w);
	jsonl_str(&w, "engine", "smallfile");
	jsonl_str(&w, "job", td->o.name);
	jsonl_u64(&w, "subjob", td->subjob_number);
	jsonl_str(&w, "tree_dir", sd->root);
	/* three decimals, as a person reads it */
	jsonl_dbl(&w, "read_passes", round(read_passes(sd) * 1000) / 1000);
	jsonl_u64(&w, "file_drop_cache", sd->o->file_drop_cache);
	jsonl_obj(&w, "ops");
	for (op = 0; op < FOP_NR; op++) {
		struct op_stats *s = &sd->stats[op];

		if (!s->ops)
			continue;
		jsonl_obj(&w, file_op_name(op));
		jsonl_u64(&w, "ops", s->ops);
		jsonl_u64(&w, "bytes", s->bytes);
		jsonl_u64(&w, "probes", s->probes);
		jsonl_u64(&w, "skipped", s->skipped);
		jsonl_u64(&w, "errors", s->errors);
		jsonl_u64(&w, "lat_mean_ns", s->lat_sum_ns / s->ops);
		jsonl_u64(&w, "lat_min_ns", s->lat_min_ns);
		jsonl_u64(&w, "lat_max_ns", s->lat_max_ns);
		jsonl_close(&w);
	}
	jsonl_close(&w);
	if (jsonl_end(&w))
		log_err("smallfile: opstats_file %s: out of memory for the report line, nothing written\n",
			sd->o->opstats_file);
	else if (jsonl_append(&w, sd->o->opstats_file, err, sizeof(err)))
		log_err("smallfile: opstats_file %s\n", err);
	jsonl_free(&w);
}

static void sf_cleanup(struct thread_data *td)
{
	struct sf_data *sd = td->io_ops_data;

	if (!sd)
		return;
	if (td->io_ops_init) {
		pack_fix_runtimes(td, sd->issued_any ?
				  (ns_between(&sd->t_first, &sd->t_last) + 999999) / 1000000 : 0);
		write_opstats(td, sd);
		say_passes(td, sd);
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
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct sf_options, tree_fanout),
		.help	= "Subdirectories per directory (default 32)",
		.def	= "32",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_depth",
		.lname	= "Directory depth",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct sf_options, tree_depth),
		.help	= "Directory levels below the root (used when files_per_dir=0) (default 2)",
		.def	= "2",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "files_per_dir",
		.lname	= "Files per leaf directory",
		.type	= FIO_OPT_STR_VAL,
		.off1	= offsetof(struct sf_options, files_per_dir),
		.help	= "Files per leaf directory; the depth follows from it (0: use tree_depth) (default 0)",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_maildir",
		.lname	= "Maildir layout",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct sf_options, tree_maildir),
		.help	= "Each leaf is a maildir (tmp/ new/ cur/); files live in new/ (needed by deliver) (default 0)",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "tree_space_check",
		.lname	= "Check the room before a layout",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct sf_options, tree_space_check),
		.help	= "Refuse a layout whose bytes or inodes exceed the file system's free ones, before writing (0: on compressing or thin-provisioned file systems) (default 1)",
		.def	= "1",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "file_drop_cache",
		.lname	= "Drop each file from the page cache after reading it",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct sf_options, file_drop_cache),
		.help	= "After each whole-file read, posix_fadvise(DONTNEED) its data so no read is served from the page cache (inodes, dentries and directory blocks stay cached) (default 0)",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "file_size_dist",
		.lname	= "File size distribution",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct sf_options, file_size_dist),
		.help	= "4k | fixed:4k | uniform:LOW:HIGH | lognormal:MEDIAN:SIGMA[:MAX] | hist:FILE (lines 'LOW HIGH WEIGHT' or 'SIZE WEIGHT') (default fixed:4k)",
		.def	= "fixed:4k",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "file_content",
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
		.type	= FIO_OPT_STR_VAL,
		.off1	= offsetof(struct sf_options, tree_seed),
		.help	= "Seed of file sizes and contents (part of the tree's identity; randseed= drives file choice) (default 1)",
		.def	= "1",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "file_op",
		.lname	= "File operation",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct sf_options, file_op),
		.help	= "layout | read | stat | create | append | delete | deliver, or a mix 'read:60,deliver:30,delete:10' (default read)",
		.def	= "read",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "append_size",
		.lname	= "Append size",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct sf_options, append_size),
		.help	= "Bytes written by one append (a size distribution like file_size_dist) (default fixed:4k)",
		.def	= "fixed:4k",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "file_sync",
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
		.name	= "dir_sync",
		.lname	= "Directory sync",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct sf_options, dir_sync),
		.help	= "fsync the directory after a create, delivery rename or unlink (durable names) (default 0)",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "io_api",
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
		.name	= "probe_limit",
		.lname	= "Probe limit",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct sf_options, probe_limit),
		.help	= "Other random slots tried when the chosen file is absent (read/stat/append/delete) or present (create) (default 64)",
		.def	= "64",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "opstats_file",
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
