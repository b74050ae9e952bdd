/* PostMark's file operations as plain system calls (see pmengine.h). */
#include "decimal.h"
#include "pmengine.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

void pm_record(struct class_stats *s, uint64_t ns, uint64_t bytes, int err)
{
	s->ops++;
	s->bytes += bytes;
	if (err)
		s->errors++;
	lathist_add(&s->lat, ns);
}

/* "location/s3/17" for messages. */
void pm_file_path(struct pm_data *pd, const struct pm_op *op, char *buf, size_t len)
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
		ssize_t n = sys_write(fd, data_at(pd, key, off, len), len);

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
		n = sys_read(fd, buf, len);
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
static int write_blocks(struct pm_data *pd, int fd, uint64_t key, int size, uint64_t *bytes,
			uint64_t *ino)
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
				/* the marker's proof of a created file, for free */
				if (ino)
					*ino = st.st_ino;
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
int pm_commit_deferred(struct pm_data *pd)
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
 * engine did not create is ever truncated; a file whose create failed (a
 * user's of the same name: EEXIST) is not read, appended to or removed
 * after (ENOENT, no call). Otherwise the flags and modes are
 * PostMark's: fopen("w") / open(O_RDWR|O_CREAT, 0644) for creates, fopen("r")
 * / open(O_RDONLY) for reads, fopen("a") (which seeks to the end) /
 * open(O_RDWR|O_APPEND) for appends, remove() for deletes.
 */
int pm_run_op(struct pm_data *pd, const struct pm_op *op, uint64_t *bytes)
{
	int buffered = pd->cfg.buffered, tmp, dfd, fd, ret = 0, cret, rec;
	uint64_t key, ino = 0;
	char name[24];

	dec_i64(name, op->name);
	dfd = pm_dir_of(pd, op, &tmp);
	if (dfd < 0)
		return -errno;
	switch (op->kind) {
	case PM_OP_CREATE:
		/* listed before it is made: a kill leaves no file of ours unlisted */
		rec = pm_own_create(pd, op);
		if (rec < 0) {
			ret = rec;
			break;
		}
		fd = NOINTR(sys_openat(dfd, name,
				       (buffered ? O_WRONLY | O_TRUNC : O_RDWR) | O_CREAT | O_EXCL |
					       O_NOFOLLOW | O_CLOEXEC,
				       buffered ? 0666 : 0644));
		if (fd < 0) {
			ret = -errno;
			pm_own_made(pd, op, rec, 0, 0);
			break;
		}
		key = (uint64_t)op->name;
		ret = write_blocks(pd, fd, key, op->size, bytes, &ino);
		pm_own_made(pd, op, rec, 1, ino);
		if (!ret)
			ret = sync_or_defer(pd, fd, 1);
		cret = sys_close(fd);
		if (!ret && cret)
			ret = -errno;
		if (!ret && defer_dir(pd, dfd, tmp))
			tmp = 0;
		break;
	case PM_OP_READ:
		if (!pm_own_holds(pd, op)) {
			ret = -ENOENT;
			break;
		}
		fd = NOINTR(sys_openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0));
		if (fd < 0) {
			ret = -errno;
			break;
		}
		ret = read_blocks(pd, fd, op->size, bytes);
		sys_close(fd);
		break;
	case PM_OP_APPEND:
		if (!pm_own_holds(pd, op)) {
			ret = -ENOENT;
			break;
		}
		fd = NOINTR(sys_openat(dfd, name,
				       (buffered ? O_WRONLY | O_CREAT : O_RDWR) | O_APPEND |
					       O_NOFOLLOW | O_CLOEXEC,
				       0666));
		if (fd < 0) {
			ret = -errno;
			break;
		}
		/* fopen("a") positions the stream at the end */
		if (buffered && lseek(fd, 0, SEEK_END) < 0)
			ret = -errno;
		key = (uint64_t)op->name | ++pd->append_seq << 32;
		if (!ret)
			ret = write_blocks(pd, fd, key, op->size, bytes, NULL);
		if (!ret)
			ret = sync_or_defer(pd, fd, 0);
		cret = sys_close(fd);
		if (!ret && cret)
			ret = -errno;
		break;
	case PM_OP_DELETE:
		rec = pm_own_take(pd, op);
		if (rec < 0)
			ret = -ENOENT;
		else if (NOINTR(unlinkat(dfd, name, 0)))
			ret = -errno; /* still there: it stays listed */
		else {
			pm_own_gone(pd, op, rec);
			if (defer_dir(pd, dfd, tmp))
				tmp = 0;
		}
		break;
	default:
		break;
	}
	if (tmp)
		close(dfd);
	return ret;
}

