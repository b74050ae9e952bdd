/*
 * Small system-call helpers every engine uses: retrying an interrupted call,
 * the monotonic clock in nanoseconds, and a fresh file system's lost+found. Header-only (static inline), so
 * each engine's copy stays private to it.
 */
#ifndef PACK_SYSUTIL_H
#define PACK_SYSUTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * Repeats a system call that a signal interrupted before it did anything
 * (EINTR). fio installs its handlers with SA_RESTART, but a file system
 * that is interrupted itself (NFS, CIFS, FUSE) returns EINTR regardless.
 */
#define NOINTR(call) ({						\
	__typeof__(call) r_;						\
	do								\
		r_ = (call);						\
	while (r_ < 0 && errno == EINTR);				\
	r_;								\
})

/*
 * The hot paths' read, write, pread, pwrite, openat and close, made through
 * syscall(2) rather than libc's wrappers of the same names. The system
 * call is the same (strace shows no difference); what is left out is the
 * wrapper's cancellation point. In fio's job process glibc takes its
 * multi-threaded path, so each wrapper enables and then disables
 * asynchronous cancellation around the call: about 30 instructions a
 * call (callgrind: __pthread_enable_asynccancel/_disable), 3 calls of a
 * warm 4 KiB file's read. No engine thread is ever cancelled, so that
 * buys nothing. Return values and errno are the wrappers'. pread/pwrite
 * take the raw path only where off_t is one register (64-bit).
 */
#include <sys/syscall.h>

static inline ssize_t sys_read(int fd, void *buf, size_t len)
{
	return syscall(SYS_read, fd, buf, len);
}

static inline ssize_t sys_write(int fd, const void *buf, size_t len)
{
	return syscall(SYS_write, fd, buf, len);
}

static inline int sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static inline int sys_openat(int dfd, const char *path, int flags, mode_t mode)
{
	return (int)syscall(SYS_openat, dfd, path, flags, mode);
}

#if defined(__LP64__) && defined(SYS_pread64) && defined(SYS_pwrite64)
static inline ssize_t sys_pread(int fd, void *buf, size_t len, off_t off)
{
	return syscall(SYS_pread64, fd, buf, len, off);
}

static inline ssize_t sys_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return syscall(SYS_pwrite64, fd, buf, len, off);
}
#else
static inline ssize_t sys_pread(int fd, void *buf, size_t len, off_t off)
{
	return pread(fd, buf, len, off);
}

static inline ssize_t sys_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return pwrite(fd, buf, len, off);
}
#endif

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * 1 if entry @name of directory @dirfd is the empty lost+found that mkfs
 * (ext2/3/4) puts at a new file system's root: a fresh disk's mount point
 * then counts as an empty target. The entry itself is never touched.
 */
static inline int is_fs_root_lost_found(int dirfd, const char *name)
{
	struct stat self, parent, lf;
	struct dirent *de;
	int fd, empty = 1;
	DIR *d;

	if (strcmp(name, "lost+found"))
		return 0;
	if (fstat(dirfd, &self) || fstatat(dirfd, "..", &parent, 0))
		return 0;
	/* the root of a file system: its parent is on another one (or is itself) */
	if (self.st_dev == parent.st_dev && self.st_ino != parent.st_ino)
		return 0;
	if (fstatat(dirfd, name, &lf, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(lf.st_mode) ||
	    lf.st_dev != self.st_dev)
		return 0;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == EACCES;	/* root-only by mkfs: a user cannot look, nor harm it */
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}

#endif
