/* The file operations through io_uring (see sfengine.h). */
#include "sfengine.h"

/* ------------------------------------------------------------------ */
/* io_uring: each file operation is a small state machine of SQEs     */
/* ------------------------------------------------------------------ */

void sf_close_dirs(struct sf_req *rq)
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
		rq->dirfd = sf_open_parent(sd, rq->path, O_PATH, &rq->base);
		break;
	case US_UNLINK:
	case US_DIROPEN:
		rq->dirfd = sf_open_parent(sd, rq->path, O_RDONLY, &rq->base);
		break;
	case US_RENAME:
		rq->dirfd2 = sf_open_parent(sd, rq->tmp, O_PATH, &rq->tbase);
		if (rq->dirfd2 < 0)
			return -errno;
		rq->dirfd = sf_open_parent(sd, rq->path, O_RDONLY, &rq->base);
		break;
	default:
		return 0;
	}
	return rq->dirfd < 0 ? -errno : 0;
}

/*
 * The SQEs of a file's linked reads and close complete with rq's address
 * plus a tag as their user data (an sf_req is aligned: the two low bits
 * are free), so their completions are told apart: the close 1, the
 * chain's read i its i << 1.
 */
#define LINKED_CLOSE_TAG ((uintptr_t)1)
#define LINKED_TAGS	 ((uintptr_t)3)
_Static_assert(_Alignof(struct sf_req) > LINKED_TAGS, "no room for the tags");
_Static_assert(LINKED_READS_MAX <= 2, "a read's tag is its index << 1");

/*
 * How many reads from rq->off are expected to reach the file's end: the
 * file's size from the tree's arithmetic (the layout's) leaves n - 1 full
 * chunks and a short (or empty) read from there, the reads the sync path
 * makes, read until a short read. 0, the reads going one at a time, when
 * more than LINKED_READS_MAX; after a reopen (the file is longer than its
 * model); and with file_drop_cache, whose fadvise needs the descriptor
 * after the last read.
 */
static unsigned reads_to_end(struct sf_data *sd, struct sf_req *rq)
{
	uint64_t size;

	if (rq->reopened || sd->o->file_drop_cache)
		return 0;
	size = sf_file_size(sd, rq->slot);
	if (size < rq->off)
		return 0;
	return (size - rq->off) / sd->chunk < LINKED_READS_MAX ? (size - rq->off) / sd->chunk + 1
							       : 0;
}

/*
 * The file's last @n reads and its close as one hard-linked chain: one
 * ring round trip for the end of the file instead of one a read and one
 * for the close (a 4 KiB file at bs=4k: its full read, the empty one that
 * says its end, the close). IOSQE_IO_HARDLINK, not _LINK: a short read (the
 * expected last one) or a failed one would cancel a soft link's next SQE
 * and leak the descriptor; so a file shorter than its model gets a read
 * past its end, which returns 0. All must go in the same submission, so
 * room is made first. Returns 0, or -EBUSY without SQEs.
 */
static int prep_reads_close(struct sf_data *sd, struct sf_req *rq, unsigned n)
{
	struct io_uring_sqe *sqe[LINKED_READS_MAX + 1];
	unsigned i;

	if (io_uring_sq_space_left(&sd->ring) < n + 1)
		pack_ioq_submit(&sd->ioq, 0);
	for (i = 0; i <= n; i++) {
		sqe[i] = io_uring_get_sqe(&sd->ring);
		if (!sqe[i]) { /* cannot be after the room check: undo the SQEs got */
			while (i--) {
				io_uring_prep_nop(sqe[i]);
				io_uring_sqe_set_data(sqe[i], NULL);
				sd->inring++;
			}
			return -EBUSY;
		}
	}
	for (i = 0; i < n; i++) {
		io_uring_prep_read(sqe[i], rq->fd, rq->io_u->buf, sd->chunk,
				   rq->off + (uint64_t)i * sd->chunk);
		sqe[i]->flags |= IOSQE_IO_HARDLINK;
		io_uring_sqe_set_data(sqe[i], (void *)((uintptr_t)rq | (uintptr_t)i << 1));
	}
	io_uring_prep_close(sqe[n], rq->fd);
	io_uring_sqe_set_data(sqe[n], (void *)((uintptr_t)rq | LINKED_CLOSE_TAG));
	rq->step = US_READ_CLOSE;
	rq->nlinked = n;
	rq->linked_in = 0;
	sd->inring += n + 1;
	return 0;
}

/*
 * Every completion of the linked reads and close is in: the file is
 * closed. The reads count up to the first short one (or 0), the file's end,
 * as in the step-by-step path, or to the first failed one. Every read full
 * means the file is longer than its model (an append, a rewrite): it is
 * opened again and read on from rq->off, one read at a time. Returns 1
 * when the op is finished.
 */
static int read_close_done(struct sf_data *sd, struct sf_req *rq)
{
	unsigned i;

	rq->fd = -1;
	for (i = 0; i < rq->nlinked; i++) {
		int res = rq->read_res[i];

		if (res < 0) {
			rq->err = -res;
			return 1;
		}
		rq->bytes += res;
		rq->off += res;
		if ((unsigned)res < sd->chunk)
			break;
	}
	if (rq->close_res < 0) {
		rq->err = -rq->close_res;
		return 1;
	}
	if (i < rq->nlinked)
		return 1;
	rq->reopened = 1;
	rq->step = US_OPEN;
	return sf_uring_prep_step(sd, rq);
}

/*
 * One completion, with its user data: returns 1 when the file operation of
 * the request it belongs to (*rqp) is finished. A NOP with no request
 * (prep_reads_close's undo) belongs to none: returns 0, *rqp NULL.
 */
int sf_uring_complete(struct sf_data *sd, void *data, int res, struct sf_req **rqp)
{
	uintptr_t tag = (uintptr_t)data & LINKED_TAGS;
	struct sf_req *rq = (struct sf_req *)((uintptr_t)data & ~LINKED_TAGS);

	*rqp = rq;
	if (!rq)
		return 0;
	if (rq->step != US_READ_CLOSE)
		return sf_uring_advance(sd, rq, res);
	if (tag == LINKED_CLOSE_TAG)
		rq->close_res = res;
	else
		rq->read_res[tag >> 1] = res;
	if (++rq->linked_in <= rq->nlinked)
		return 0; /* rq stays until all are in */
	return read_close_done(sd, rq);
}

/* Queues the SQE for rq's current step. Returns 0, or 1 if the op is complete. */
int sf_uring_prep_step(struct sf_data *sd, struct sf_req *rq)
{
	struct io_uring_sqe *sqe;
	const char *path = rq->op == FOP_DELIVER ? rq->tmp : rq->path;
	unsigned nreads;
	int ret;

	for (;;) {
		ret = open_step_dirs(sd, rq);
		if (!ret)
			break;
		sf_close_dirs(rq);
		/* a missing directory means a missing file: try another */
		if (ret == -ENOENT && (rq->step == US_STATX || rq->step == US_UNLINK) &&
		    sf_next_probe(sd, rq))
			continue;
		rq->err = -ret;
		return 1;
	}
	if (rq->step == US_DIROPEN)
		rq->step = US_DIRFSYNC;
	/*
	 * With nothing else in the ring an open keeps nothing else going: it is
	 * made here, a system call, and the ring goes on from its result. In
	 * the ring, an open whose inode is not cached is handed to an io-wq
	 * worker (its lookup waits for the disk), a hand-off per file that
	 * made io_uring at iodepth 1 slower than sync on a cold tree. With
	 * requests in flight the open stays in the ring, so they go on.
	 */
	if (rq->step == US_OPEN && !sd->inring) {
		int fd = sf_open_beneath(sd, path, sf_open_flags(sd, rq->op), 0644);

		return sf_uring_advance(sd, rq, fd < 0 ? -errno : fd);
	}

	if (rq->step == US_READ && (nreads = reads_to_end(sd, rq))) {
		if (!prep_reads_close(sd, rq, nreads))
			return 0;
		/* no SQEs: as pack_ioq_get_sqe() failing below, the op ends */
		close(rq->fd);
		rq->fd = -1;
		rq->err = pack_ioq_no_sqe_error(&sd->ioq);
		return 1;
	}
	sqe = pack_ioq_get_sqe(&sd->ioq);
	if (!sqe) { /* the op ends, its descriptors closed, with its own error if any */
		sf_close_dirs(rq);
		if (rq->fd >= 0)
			close(rq->fd);
		rq->fd = -1;
		if (!rq->err)
			rq->err = pack_ioq_no_sqe_error(&sd->ioq);
		return 1;
	}
	switch (rq->step) {
	case US_OPEN: {
		int fl = sf_open_flags(sd, rq->op);

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
	case US_READ_CLOSE: /* prepared by prep_reads_close() above */
		break;
	case US_WRITE: {
		uint64_t len = sf_next_chunk(sd, rq);

		io_uring_prep_write(sqe, rq->fd, sf_chunk_data(sd, rq, len), len,
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
	sd->inring++;
	return 0;
}

enum uring_step sf_first_step(enum file_op op)
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
 * After the rename or unlink that changed a directory (still open as
 * rq->dirfd): an error, or no tree_dir_sync, ends the op with its
 * directories closed (returns 1); otherwise that directory is fsync'ed next.
 */
static int end_or_dir_fsync(struct sf_data *sd, struct sf_req *rq, int res)
{
	if (res < 0 || !sd->o->dir_sync) {
		if (res < 0)
			rq->err = -res;
		sf_close_dirs(rq);
		return 1;
	}
	rq->step = US_DIRFSYNC;
	return 0;
}

/*
 * Advances rq after a completion with result @res. Returns 1 when the file
 * operation is finished (successfully or with rq->err set).
 */
int sf_uring_advance(struct sf_data *sd, struct sf_req *rq, int res)
{
	int done = 0, ret;

	switch (rq->step) {
	case US_OPEN:
		/*
		 * Opened again to read past the model size, and gone in between
		 * (a delete or a rename of the mix): what was read is the file.
		 */
		if (rq->reopened && res == -ENOENT)
			return 1;
		if (res == -ENOENT && sf_op_writes_tree(rq->op) && !rq->made_leaf) {
			ret = sf_make_leaf(sd, rq->slot);

			if (ret) {
				rq->err = -ret;
				return 1;
			}
			rq->made_leaf = 1;
			break;	/* retry the open once */
		}
		if ((res == -ENOENT && sf_op_needs_file(rq->op)) ||
		    (res == -EEXIST && rq->op == FOP_CREATE)) {
			if (sf_next_probe(sd, rq))
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
		ret = sf_begin_write(sd, rq);
		if (ret) { /* a layout's file already whole, or not truncated */
			if (ret < 0)
				rq->err = -ret;
			rq->step = US_CLOSE;
			break;
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
		ret = sf_check_read_past_max(sd, rq, rq->fd);
		if (ret) {
			rq->err = -ret;
			rq->step = US_CLOSE;
			break;
		}
		if ((unsigned)res < sd->chunk) {
			sf_drop_cache(sd, rq->fd);	/* synchronous: one fadvise a file */
			rq->step = US_CLOSE;
		}
		break;
	case US_READ_CLOSE: /* sf_uring_complete() takes its completions */
		return 0;
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
		if (end_or_dir_fsync(sd, rq, res))
			return 1;
		break;
	case US_UNLINK:
		if (res == -ENOENT) {
			sf_close_dirs(rq);
			if (sf_next_probe(sd, rq))
				break;
		}
		if (end_or_dir_fsync(sd, rq, res))
			return 1;
		break;
	case US_STATX:
		sf_close_dirs(rq);
		if (res == -ENOENT && sf_next_probe(sd, rq))
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
	return sf_uring_prep_step(sd, rq);
}
