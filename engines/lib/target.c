/* Claiming the directory an engine works in (see target.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>

#include "sysutil.h"
#include "target.h"

const char *target_tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

int target_mkdtemp(const char *engine, const char *job, char *out, size_t len, char *err,
		   size_t errlen)
{
	const char *base = target_tmpdir();

	if (snprintf(out, len, "%s/fio-%s.%s.XXXXXX", base, engine, job) >= (int)len) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	if (mkdtemp(out))
		return 0;
fail:
	snprintf(err, errlen, "cannot create a directory under %s: %s", base, strerror(errno));
	if (len)
		out[0] = '\0';
	return -1;
}

int target_mkdir(int dirfd, const char *name, int *made)
{
	if (NOINTR(mkdirat(dirfd, name, 0755)) == 0) {
		*made = 1;
		return 0;
	}
	return errno == EEXIST ? 0 : -errno;
}

int target_claim(int fd, const char *path, const char *engine, unsigned flags, char *err,
		 size_t errlen)
{
	struct statvfs vfs;

	if (flags & TARGET_WRITABLE) {
		if (fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
			snprintf(err, errlen, "is on a read-only file system");
			return -1;
		}
		/* the effective ids: what the engine's own opens will be checked with */
		if (faccessat(AT_FDCWD, path, W_OK | X_OK, AT_EACCESS)) {
			snprintf(err, errlen, "is not writable: %s", strerror(errno));
			return -1;
		}
	}
	if ((flags & TARGET_LOCK) && flock(fd, LOCK_EX | LOCK_NB)) {
		snprintf(err, errlen, "is in use by another %s job", engine);
		return -1;
	}
	return 0;
}

int target_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = NOINTR(write(fd, p, len));

		if (n <= 0) {
			if (!n)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int target_read_file(int dirfd, const char *name, char *buf, size_t len, nlink_t *links)
{
	struct stat st;
	size_t got = 0;
	ssize_t n = 0;
	int fd;

	/*
	 * Looked at before it is opened: opening a FIFO waits for a writer
	 * for ever, and opening a device can act on it (a tape rewinds).
	 */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	fd = NOINTR(openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	if (fd < 0)
		return -errno;
	/* replaced between the look and the open */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	/* told, not judged: whether a second name is allowed is the marker's owner's question */
	if (links)
		*links = st.st_nlink;
	/* a marker is small: one grown past @len (truncate -s 1T) is not one, and is not read */
	if (st.st_size > (off_t)len - 1) {
		close(fd);
		return -EFBIG;
	}
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
	/* zeros after the text (a file extended while being read, a truncate -s) */
	if (strlen(buf) != got)
		return -EFBIG;
	return 0;
}

/*
 * The private name @tmp becomes @name unless @name is there: a rename that
 * leaves no private name behind (even where unlinks fail), or, where the
 * file system has no RENAME_NOREPLACE (NFS), a link, and the private name
 * unlinked. 0 or -errno.
 */
static int put_in_place(int dirfd, const char *tmp, const char *name)
{
	if (NOINTR(renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE)) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (NOINTR(linkat(dirfd, tmp, dirfd, name, 0)))
		return -errno;
	NOINTR(unlinkat(dirfd, tmp, 0));
	return 0;
}

int target_publish_open(int dirfd, const char *name, const char *text, off_t size, int *fdp)
{
	char tmp[NAME_MAX + 1];
	size_t len = strlen(text);
	int fd, ret = 0;

	/*
	 * The thread's id, not the process's: fio's clones run as threads
	 * (--thread) share one pid, and set up at once (create_serialize=0)
	 * two would race for one private name. kill(tid, 0) says a thread is
	 * alive as it does a process (is_publish_in_progress).
	 */
	if (snprintf(tmp, sizeof(tmp), "%s.%d", name, (int)syscall(SYS_gettid)) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = NOINTR(openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
	if (fd < 0)
		return -errno;
	if (target_write_all(fd, text, len))
		ret = -errno;
	/* posix_fallocate() writes the blocks where the file system cannot allocate them */
	if (!ret && size > (off_t)len)
		ret = -posix_fallocate(fd, len, size - len);
	if (!ret && NOINTR(fsync(fd)))
		ret = -errno;
	if (!ret)
		ret = put_in_place(dirfd, tmp, name);
	if (ret)
		NOINTR(unlinkat(dirfd, tmp, 0));
	if (ret || !fdp)
		close(fd);
	else
		*fdp = fd;
	return ret;
}

int target_publish(int dirfd, const char *name, const char *text)
{
	return target_publish_open(dirfd, name, text, 0, NULL);
}

/*
 * Whether @entry is the private name of a target_publish(@name) under way:
 * exactly "@name.ID" with ID a process or thread that is alive. A user's file that
 * only looks like one (".marker.orig", a number with no process) is data.
 */
static int is_publish_in_progress(const char *entry, const char *name)
{
	size_t nlen = strlen(name);
	const char *p;
	char *end;
	long pid;

	if (strncmp(entry, name, nlen) || entry[nlen] != '.')
		return 0;
	p = entry + nlen + 1;
	if (*p < '1' || *p > '9')
		return 0;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno || *end || pid > INT_MAX)
		return 0;
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

int target_dir_is_empty(int fd, const char *name)
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
	/* a dup shares the file offset: an earlier scan left it at the end */
	rewinddir(d);
	while ((de = readdir(d))) {
		/* a concurrent job's marker being written does not count */
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    !is_publish_in_progress(de->d_name, name) &&
		    !is_fs_root_lost_found(fd, de->d_name)) {
			empty = 0;
			break;
		}
	}
	closedir(d);
	return empty;
}

/* target_write_path through at most @hops more links */
static int write_path(const char *path, char *out, int hops)
{
	char dir[PATH_MAX], rdir[PATH_MAX], link[PATH_MAX], next[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	ssize_t n;

	if (realpath(path, out))
		return 0;
	/* a dangling link: a write creates the file it points to */
	if (hops > 0 && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			return -1;
		link[n] = '\0';
		if (link[0] == '/' || !slash)
			snprintf(next, sizeof(next), "%s", link);
		else if (snprintf(next, sizeof(next), "%.*s%s", (int)(slash - path) + 1, path,
				  link) >= (int)sizeof(next))
			return -1;
		return write_path(next, out, hops - 1);
	}
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	if (!realpath(dir, rdir))
		return -1;
	return snprintf(out, PATH_MAX, "%s/%s", strcmp(rdir, "/") ? rdir : "",
			slash ? slash + 1 : path) >= PATH_MAX
		       ? -1
		       : 0;
}

int target_write_path(const char *path, char *out)
{
	return write_path(path, out, 40); /* the kernel's MAXSYMLINKS */
}

int target_path_in(const char *path, const char *dir)
{
	char rpath[PATH_MAX], rdir[PATH_MAX];
	char *slash;
	size_t n;

	if (!dir || !*dir || !realpath(dir, rdir) || target_write_path(path, rpath))
		return 0;
	slash = strrchr(rpath, '/');
	if (slash)
		slash[slash == rpath] = '\0'; /* its directory; "/" kept */
	n = strlen(rdir);
	return !strncmp(rpath, rdir, n) && (rpath[n] == '\0' || rpath[n] == '/' || n == 1);
}
