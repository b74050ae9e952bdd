/* A file operation as plain system calls, and the helpers all paths share (see sfengine.h). */
#include "sfengine.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

uint64_t sf_next_rand(struct sf_data *sd)
{
	uint64_t x = sd->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	sd->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* The size the tree's arithmetic gives the file of @slot (the layout's). */
uint64_t sf_file_size(struct sf_data *sd, uint64_t slot)
{
	/* a fixed size needs no hash of the slot: two mix64 rounds a file fewer */
	if (sd->sizes.kind == SIZE_FIXED)
		return sd->sizes.lo;
	return size_dist_sample(&sd->sizes, hash_item(sd->seed, STREAM_SIZE, slot));
}

uint64_t sf_ns_between(const struct timespec *a, const struct timespec *b)
{
	return (uint64_t)(b->tv_sec - a->tv_sec) * 1000000000ULL + b->tv_nsec - a->tv_nsec;
}

void sf_account(struct sf_data *sd, struct sf_req *rq)
{
	struct op_stats *s = &sd->stats[rq->op];
	struct timespec now;
	uint64_t ns;

	fio_gettime(&now, NULL); /* the clock of rq->start (sf_queue) */
	sd->t_last = now;
	ns = sf_ns_between(&rq->start, &now);
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

void sf_set_paths(struct sf_data *sd, struct sf_req *rq)
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
int sf_next_probe(struct sf_data *sd, struct sf_req *rq)
{
	if (++rq->probes > sd->o->probe_limit)
		return 0;
	rq->slot = sf_next_rand(sd) % sd->shape.nfiles;
	sf_set_paths(sd, rq);
	return 1;
}

void sf_report_probe_failure(struct sf_data *sd, struct sf_req *rq, int err)
{
	pack_log_err(
		"smallfile: %s: no %s file found in %u tries in %s (%s); is the tree laid out?\n",
		file_op_name(rq->op), rq->op == FOP_CREATE ? "absent" : "existing",
		sd->o->probe_limit + 1, sd->root, strerror(err));
}

/*
 * O_NONBLOCK: a FIFO put in place of a tree file blocked the job in open()
 * for ever (a read waited for a writer, a write for a reader), in an io-wq
 * worker with io_uring. With it a read open of a FIFO returns at once (its
 * read: end of file, or EAGAIN while a writer holds it) and a write open
 * fails with ENXIO. For a regular file it changes no read or write: the
 * kernel takes IOCB_NOWAIT from RWF_NOWAIT only, never from the file's
 * flags; io_uring tries a read or write of such a file inline first (as it
 * does for file systems with FMODE_NOWAIT) and hands it to io-wq when that
 * would block. What it changes: an open of a file under a lease (a Samba
 * or NFS server's) fails with EWOULDBLOCK instead of waiting for the lease
 * to break. No system call is added.
 */
int sf_open_flags(struct sf_data *sd, enum file_op op)
{
	int fl = O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;

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
		/* no O_TRUNC: a stale staging file is looked at before it is cut (sf_begin_write) */
		fl |= O_WRONLY | O_CREAT;
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
		return size_dist_sample(&sd->appends, sf_next_rand(sd));
	return sf_file_size(sd, rq->slot);
}

/*
 * Whether the file open as rq->fd may be written: a regular file with no
 * other name. A second hard link (a `cp -al` backup of the tree) shares
 * the data, so writing here would change the backup too; anything but a
 * regular file (a device node put in the tree) is not the tree's. 0, or
 * -EMLINK / -EINVAL with rq->refused saying why.
 */
static int writable_here(struct sf_req *rq, const struct stat *st)
{
	if (!S_ISREG(st->st_mode)) {
		rq->refused = "is not a regular file; refusing to write to it";
		return -EINVAL;
	}
	if (st->st_nlink > 1) {
		rq->refused =
			"has other hard links (a cp -al copy?) that would change with it; refusing to write through it";
		return -EMLINK;
	}
	return 0;
}

/*
 * After a file to write is open (rq->fd), in both I/O paths: its size to
 * write, the append sequence moved on, a layout's resume check, and the
 * check that the file is the tree's alone (create's O_EXCL makes a new
 * one; layout, append and deliver may meet an existing one). Returns 0 to
 * write rq->size bytes, 1 when a layout finds the file whole (rq->skipped
 * set: nothing to write), or -errno (a refused file, a failed truncate).
 */
int sf_begin_write(struct sf_data *sd, struct sf_req *rq)
{
	struct stat st;
	int ret;

	rq->size = write_size(sd, rq);
	if (rq->op == FOP_APPEND)
		sd->append_seq++;
	if (rq->op == FOP_CREATE)
		return 0;
	if (fstat(rq->fd, &st))
		return -errno;
	/* resumable: a file as long as its model size was written whole (and is not written) */
	if (rq->op == FOP_LAYOUT && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= rq->size) {
		rq->skipped = 1;
		return 1;
	}
	ret = writable_here(rq, &st);
	if (ret)
		return ret;
	/* a layout's shorter file, a deliver's staging file left by a killed run */
	if (rq->op != FOP_APPEND && st.st_size && NOINTR(ftruncate(rq->fd, 0)))
		return -errno;
	return 0;
}

/*
 * A read has reached rq->bytes from the file open as @fd. No tree file is
 * laid out longer than sd->size_max, so past it the file was grown by
 * appends, or is no tree file at all: a device node put in its place
 * (/dev/zero never ends; a block device is a disk's data), a FIFO a
 * writer keeps filling. Looked at once a file, by the one fstat only such
 * a read makes (reads of files within the layout's sizes make none): 0 to
 * read on, or -EINVAL with rq->refused, or -errno.
 */
int sf_check_read_past_max(struct sf_data *sd, struct sf_req *rq, int fd)
{
	struct stat st;

	if (rq->bytes <= sd->size_max || rq->looked_past_max)
		return 0;
	rq->looked_past_max = 1;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		rq->refused =
			"is not a regular file (read past the largest tree file); refusing to read on";
		return -EINVAL;
	}
	return 0;
}

/* Length of the next write chunk; clears O_DIRECT before an unaligned tail. */
uint64_t sf_next_chunk(struct sf_data *sd, struct sf_req *rq)
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
const void *sf_chunk_data(struct sf_data *sd, struct sf_req *rq, uint64_t len)
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

int sf_open_beneath(struct sf_data *sd, const char *rel, int flags, mode_t mode)
{
	return open_beneath_at(sd, sd->rootfd, rel, flags, mode);
}

/*
 * Opens the directory that holds @rel (safely, as above) and points @base at
 * the last component, for the *at() calls that have no resolve flags:
 * fstatat, unlinkat, renameat. @flags: O_PATH to look, O_RDONLY to fsync.
 */
int sf_open_parent(struct sf_data *sd, const char *rel, int flags, const char **base)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(rel, '/');
	size_t n;

	if (!slash) {
		*base = rel;
		return sf_open_beneath(sd, ".", flags | O_DIRECTORY | O_CLOEXEC, 0);
	}
	n = slash - rel;
	if (n >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, rel, n);
	dir[n] = '\0';
	*base = slash + 1;
	return sf_open_beneath(sd, dir, flags | O_DIRECTORY | O_CLOEXEC, 0);
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
int sf_make_leaf(struct sf_data *sd, uint64_t slot)
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
	fd = sf_open_parent(sd, rel, O_RDONLY, base);
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
		uint64_t len = sf_next_chunk(sd, rq);
		ssize_t n = sys_write(rq->fd, sf_chunk_data(sd, rq, len), len);

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
	int fl = sf_open_flags(sd, rq->op);
	int fd, ret;

	fd = sf_open_beneath(sd, path, fl, 0644);
	if (fd < 0 && errno == ENOENT) {
		ret = sf_make_leaf(sd, rq->slot);
		if (ret)
			return ret;
		fd = sf_open_beneath(sd, path, fl, 0644);
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
void sf_drop_cache(struct sf_data *sd, int fd)
{
	if (sd->o->file_drop_cache)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static int do_read(struct sf_data *sd, struct sf_req *rq)
{
	int fd;

	for (;;) {
		fd = sf_open_beneath(sd, rq->path, sf_open_flags(sd, FOP_READ), 0);
		if (fd >= 0)
			break;
		if (errno == EINVAL && sd->direct)
			return -EOPNOTSUPP;
		if (errno != ENOENT || !sf_next_probe(sd, rq))
			return -errno;
	}
	for (;;) {
		ssize_t n = sys_read(fd, rq->io_u->buf, sd->chunk);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			sys_close(fd);
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
		n = sf_check_read_past_max(sd, rq, fd);
		if (n) {
			sys_close(fd);
			return n;
		}
	}
	sf_drop_cache(sd, fd);
	sys_close(fd);
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
		if (ret != -ENOENT || !sf_next_probe(sd, rq))
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
		if (ret != -ENOENT || !sf_next_probe(sd, rq))
			return ret;
	}
}

/* maildir: rename tmp/NAME.wJOB.N over new/NAME, both directories opened safely */
static int deliver_rename(struct sf_data *sd, struct sf_req *rq)
{
	const char *tbase, *nbase;
	int tdfd, ndfd, ret = 0;

	tdfd = sf_open_parent(sd, rq->tmp, O_PATH, &tbase);
	if (tdfd < 0)
		return -errno;
	ndfd = sf_open_parent(sd, rq->path, O_RDONLY, &nbase);
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
			ret = sf_open_beneath(sd, path, sf_open_flags(sd, FOP_APPEND), 0);
			if (ret < 0)
				ret = -errno;
		} else {
			ret = open_creating(sd, rq, path);
		}
		if (ret >= 0)
			break;
		if (rq->op == FOP_CREATE && ret == -EEXIST && sf_next_probe(sd, rq))
			continue;
		if (rq->op == FOP_APPEND && ret == -ENOENT && sf_next_probe(sd, rq))
			continue;
		return ret;
	}
	rq->fd = ret;
	ret = sf_begin_write(sd, rq);
	if (ret > 0) { /* a layout's file already whole */
		close(rq->fd);
		return 0;
	}
	if (!ret)
		ret = write_whole(sd, rq);
	if (!ret)
		ret = sync_file(sd, rq->fd);
	if (sys_close(rq->fd) && !ret)
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

int sf_run_sync(struct sf_data *sd, struct sf_req *rq)
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
