/*
 * An output file the user names on a command line (pmrc2fio -o, iocap -o,
 * --stats, --ready): what the pack does with whatever is at that path,
 * written once for every tool that writes one.
 *
 *  - a regular file, or nothing: written under a temporary name in the
 *    same directory, synced, then renamed over the path, so a reader sees
 *    the old file or the whole new one (a file replaced keeps its mode and,
 *    as far as this process may, its owner; a new one gets 0666 & ~umask);
 *  - a character device or a FIFO: opened and written in place, never
 *    replaced (/dev/null, /dev/stdout, a pipe a reader waits on);
 *  - a symbolic link: followed, as the shell's `>` does; the rules apply to
 *    what it points to (a regular file there is replaced in ITS directory;
 *    the link stays a link);
 *  - a block device, a directory, a socket: refused.
 */
#ifndef PACK_OUTFILE_H
#define PACK_OUTFILE_H

#include <stddef.h>

struct outfile {
	int fd;	    /* -1: not open */
	char *path; /* where the output ends up: a symbolic link's target */
	char *tmp;  /* the temporary name renamed to @path; NULL: written in place */
};

/*
 * Opens @path for writing by the rules above. 0, or -1 with what is wrong
 * in @err, to be printed after the path: strerror(errno) ("No such file or
 * directory", "Is a directory"), or "is a block device: ..." and the like.
 * A FIFO's open waits for its reader, as the shell's does.
 */
int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen);

/* Writes all of @buf. 0, or -1 with errno. */
int outfile_write(struct outfile *o, const void *buf, size_t len);

/*
 * Ends the output: synced, closed and renamed into place (a device or FIFO:
 * closed). 0, or -1 with errno, the temporary file removed.
 */
int outfile_commit(struct outfile *o);

/* Gives up: closes, and removes the temporary file (nothing at the path changes). */
void outfile_abort(struct outfile *o);

#endif
