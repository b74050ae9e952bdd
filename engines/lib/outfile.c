/* An output file the user names: the pack's rules for what is there (outfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "errmsg.h"
#include "outfile.h"
#include "sysutil.h"
#include "target.h"

#define MAX_LINKS 40 /* as the kernel's ELOOP */

/*
 * The name @path stands for once its symbolic links are followed (as text,
 * the last component only: the directories on the way are the kernel's
 * business at the rename): the name the file is, or would be created as.
 * *@st its lstat(); *@exists 0 if nothing is there. NULL with errno.
 */
static char *final_name(const char *path, struct stat *st, int *exists)
{
	char *cur = strdup(path);
	int hops;

	for (hops = 0; cur; hops++) {
		char *link, *next, *slash;
		ssize_t n;

		if (lstat(cur, st)) {
			if (errno != ENOENT)
				goto fail;
			*exists = 0;
			return cur;
		}
		if (!S_ISLNK(st->st_mode)) {
			*exists = 1;
			return cur;
		}
		if (hops == MAX_LINKS) {
			errno = ELOOP;
			goto fail;
		}
		link = malloc(PATH_MAX);
		if (!link)
			goto fail;
		n = readlink(cur, link, PATH_MAX);
		if (n < 0 || n == PATH_MAX) {
			if (n == PATH_MAX)
				errno = ENAMETOOLONG; /* cut: another name */
			free(link);
			goto fail;
		}
		link[n] = '\0';
		slash = strrchr(cur, '/');
		if (link[0] == '/' || !slash)
			next = strdup(link);
		else if (asprintf(&next, "%.*s%s", (int)(slash - cur + 1), cur, link) < 0)
			next = NULL;
		free(link);
		free(cur);
		cur = next;
	}
	return NULL;
fail:
	free(cur);
	return NULL;
}

/* 0, -1 with errno, or -2: what was opened is not what was looked at. */
static int open_in_place(struct outfile *o, const char *path, const struct stat *st)
{
	struct stat now;
	int fd = NOINTR(open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC));

	if (fd < 0)
		return -1;
	if (fstat(fd, &now) || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(fd);
		return -2;
	}
	o->fd = fd;
	o->path = strdup(path);
	if (o->path)
		return 0;
	close(fd);
	o->fd = -1;
	return -1;
}

/* A temporary file beside @final, with the mode (and owner) of @old if there is one. */
static int open_temporary(struct outfile *o, char *final, const struct stat *old)
{
	const char *base = strrchr(final, '/');
	int dirlen = base ? (int)(base - final + 1) : 0;
	mode_t mask = umask(0);
	int e;

	umask(mask);
	base = base ? base + 1 : final;
	/* a long name still leaves room for the suffix within NAME_MAX */
	if (asprintf(&o->tmp, "%.*s%.200s.XXXXXX", dirlen, final, base) < 0) {
		o->tmp = NULL;
		goto fail;
	}
	o->fd = mkostemp(o->tmp, O_CLOEXEC);
	if (o->fd < 0)
		goto fail;
	/* the owner first: a chown clears the set-id bits the mode then restores */
	if (old && (old->st_uid != geteuid() || old->st_gid != getegid()) &&
	    fchown(o->fd, old->st_uid, old->st_gid) && errno != EPERM)
		goto fail_unlink;
	if (fchmod(o->fd, old ? old->st_mode & 07777 : 0666 & ~mask))
		goto fail_unlink;
	o->path = final;
	return 0;
fail_unlink:
	unlink(o->tmp);
fail:
	e = errno;
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	free(o->tmp);
	o->tmp = NULL;
	free(final);
	errno = e;
	return -1;
}

static const char *refused_kind(mode_t mode)
{
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "neither a file, a character device nor a FIFO";
}

int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen)
{
	struct stat st, fst;
	char *final;
	int there, exists;

	o->fd = -1;
	o->path = o->tmp = NULL;
	/* stat() follows the links the way open() will, /proc's fd links too */
	there = stat(path, &st) == 0;
	if (!there && errno != ENOENT)
		goto fail_errno;
	if (there && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
		int r = open_in_place(o, path, &st);

		if (!r)
			return 0;
		if (r == -1)
			goto fail_errno;
		goto changed;
	}
	if (there && S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail_errno;
	}
	if (there && !S_ISREG(st.st_mode)) {
		pack_errf(err, errlen,
			  "is %s: refused (output goes to a file, a character device "
			  "or a FIFO)",
			  refused_kind(st.st_mode));
		return -1;
	}
	final = final_name(path, &fst, &exists);
	if (!final)
		goto fail_errno;
	/*
	 * A regular file is replaced where the links lead, and the name they
	 * lead to must be that file (a /proc link to a deleted file is not).
	 */
	if (exists != there || (exists && (!S_ISREG(fst.st_mode) || fst.st_dev != st.st_dev ||
					   fst.st_ino != st.st_ino))) {
		free(final);
		goto changed;
	}
	if (open_temporary(o, final, exists ? &fst : NULL) == 0)
		return 0;
fail_errno:
	pack_errf(err, errlen, "%s", strerror(errno));
	return -1;
changed:
	pack_errf(err, errlen,
		  "changed while being opened, or is a link that does not name "
		  "the file it opens: not written");
	return -1;
}

int outfile_write(struct outfile *o, const void *buf, size_t len)
{
	return target_write_all(o->fd, buf, len);
}

int outfile_commit(struct outfile *o)
{
	int ret = 0, e = 0;

	/* fsync: renamed, the new name must not point at data still in memory */
	if (o->tmp && NOINTR(fsync(o->fd)))
		ret = -1, e = errno;
	if (close(o->fd) && !ret && errno != EINTR)
		ret = -1, e = errno;
	o->fd = -1;
	if (!ret && o->tmp && rename(o->tmp, o->path))
		ret = -1, e = errno;
	if (ret && o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	errno = e;
	return ret;
}

void outfile_abort(struct outfile *o)
{
	int e = errno;

	if (o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	o->fd = -1;
	o->tmp = o->path = NULL;
	errno = e;
}
