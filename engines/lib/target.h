/*
 * Claiming the directory an engine works in (smallfile's tree_dir,
 * postmark's pm_location, dbreplay's dbr_target): what the three engines
 * share, written once and fio-independent.
 *
 *  - a private directory under $TMPDIR when the user names none;
 *  - numjobs: each clone's own directory inside the one named;
 *  - the checks before anything is written: not on a read-only file
 *    system, writable and searchable by this process (access(2) with the
 *    effective ids), and an exclusive flock so that two jobs never share a
 *    directory whose files they would trip over;
 *  - the engine's marker or manifest: written whole, read back, published
 *    atomically.
 *
 * What is the engine's own stays with it: the marker's text and what it
 * means, the manifest's contents, which entries may be removed.
 *
 * Errors are returned, never printed: a function that fails fills @err
 * with a predicate the engine prints after its option and the path, e.g.
 * "postmark: pm_location /mnt/x %s" -> "... is on a read-only file system",
 * so the engines keep their one-line wording.
 */
#ifndef PACK_TARGET_H
#define PACK_TARGET_H

#include <stddef.h>
#include <sys/types.h>

/* $TMPDIR, or /tmp if it is unset or empty. */
const char *target_tmpdir(void);

/*
 * Makes a private directory $TMPDIR/fio-ENGINE.JOB.XXXXXX into @out.
 * 0, or -1 with "cannot create a directory under TMPDIR: strerror" in @err
 * (and @out empty).
 */
int target_mkdtemp(const char *engine, const char *job, char *out, size_t len, char *err,
		   size_t errlen);

/*
 * numjobs: the clone's directory @name in @dirfd, created if absent
 * (*@made = 1 then). 0, or -errno.
 */
int target_mkdir(int dirfd, const char *name, int *made);

#define TARGET_WRITABLE 0x1 /* not read-only, and writable by this process */
#define TARGET_LOCK	0x2 /* flock(LOCK_EX | LOCK_NB): no other job in it */

/*
 * The checks @flags asks for on the open directory @fd (@path: its name,
 * for access(2)), in that order. 0, or -1 with the predicate in @err:
 * "is on a read-only file system", "is not writable: strerror", "is in use
 * by another ENGINE job". The lock lasts as long as @fd (or a dup of it) is
 * open.
 */
int target_claim(int fd, const char *path, const char *engine, unsigned flags, char *err,
		 size_t errlen);

/* Writes all of @buf to @fd. 0, or -1 with errno (EIO: no progress). */
int target_write_all(int fd, const void *buf, size_t len);

/*
 * Reads the small file @name of @dirfd into @buf, NUL-terminated. Only a
 * regular file is read: a symlink, FIFO, device, socket or directory of that
 * name gives -EINVAL without being opened; one longer than @len - 1 bytes,
 * or holding a NUL byte, -EFBIG (not read). Its link count goes to @links
 * (if not NULL) once it is opened. 0, or -errno.
 */
int target_read_file(int dirfd, const char *name, char *buf, size_t len, nlink_t *links);

/*
 * Publishes @text as @name in @dirfd atomically: written whole and synced
 * under a private name, then renamed (or linked) into place, so that concurrent jobs
 * see no file or a complete one. 0, -EEXIST if @name is already there (the
 * loser of a race reads the winner's), or -errno.
 */
int target_publish(int dirfd, const char *name, const char *text);

/*
 * target_publish() of a file @size bytes long: @text, then zeros, allocated
 * (a shared mapping of them never meets a full disk); its descriptor, open
 * for reading and writing, in *@fdp. The same returns.
 */
int target_publish_open(int dirfd, const char *name, const char *text, off_t size, int *fdp);

/*
 * 1 if @fd's directory holds nothing but the private names of a
 * target_publish(@name) under way (exactly "@name.ID", the thread ID alive) and, at a
 * file system's root, its lost+found; 0 if it holds something else (a
 * ".marker.orig" of the user's); -1 with errno.
 */
int target_dir_is_empty(int fd, const char *name);

/*
 * Where a write to @path lands, into @out (PATH_MAX bytes): the real path
 * of the file if it exists (links followed, as the write follows them),
 * else, through a dangling link to where it points, its directory's real
 * path and its name. 0, or -1 (no directory).
 */
int target_write_path(const char *path, char *out);

/*
 * 1 if the file @path (one to be written: it need not exist) lies in the
 * directory @dir: where a write to it lands (target_write_path) is in
 * @dir or below it; else 0. A @dir not made yet holds nothing. The
 * engines' outputs are checked with it against their own targets.
 */
int target_path_in(const char *path, const char *dir);

#endif
