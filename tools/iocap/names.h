/*
 * iocap: what descriptors and paths name (names.c).
 */
#ifndef IOCAP_NAMES_H
#define IOCAP_NAMES_H

#include <stddef.h>
#include <sys/types.h>

struct iocap_file;

/* A file seen, by device and inode. */
struct fent {
	dev_t dev;
	ino_t ino;
	char *path; /* NULL: free slot */
	int deleted;
};

/* @dev/@ino is known as @path (@deleted: unlinked since). */
void fput(dev_t dev, ino_t ino, const char *path, int deleted);
/* The file @dev/@ino as known, or NULL. */
struct fent *fget(dev_t dev, ino_t ino);
/* A name changed: @old (and what is below it) is now @new (NULL: unlinked). */
void frename(const char *old, const char *new);
/* The kernel's s_dev (MAJOR << 20 | MINOR) as a dev_t. */
dev_t kdev(unsigned long long d);

/* @path made absolute against @base and normalised (".", "..", "//"). */
void join(const char *base, const char *path, char *out, size_t len);
/* Process @tgid's working directory, read from /proc when first asked; "": unknown. */
const char *cwd_of(unsigned tgid);
/* Process @tgid is now in @path. */
void set_cwd(unsigned tgid, const char *path);

/* The path of a descriptor's file: known by inode, else read from /proc now. */
const struct fent *path_of(unsigned tgid, long long fd, const struct iocap_file *f);
/* The files process @tgid has open now, named from /proc. */
void scan_fds(unsigned tgid);

#endif
