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
