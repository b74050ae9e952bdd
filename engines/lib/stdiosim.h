/*
 * The system calls a glibc FILE stream makes, without the stream. PostMark's
 * buffered mode writes and reads through stdio; what reaches the kernel is
 * stdio's, not PostMark's chunk sizes: a buffer of st_blksize bytes (capped
 * at BUFSIZ) allocated with an fstat at the first transfer, whole buffers
 * written or read around it directly when a transfer is larger, the rest
 * copied. The engine replays these calls on its own descriptors (opened
 * safely, relative to a directory it owns) and so issues exactly the calls
 * PostMark's fwrite()/fread()/fclose() would, without stdio's copies.
 *
 * Checked against glibc 2.36's libio (_IO_new_file_xsputn, _IO_file_xsgetn,
 * _IO_file_doallocate, _IO_new_file_close_it) and, end to end, against the
 * real postmark under strace (tests/engines/test_postmark.py).
 *
 * Positions are offsets into the stream of bytes written (or read) since the
 * file was opened.
 */
#ifndef PACK_STDIOSIM_H
#define PACK_STDIOSIM_H

#include <stddef.h>
#include <stdint.h>

/* glibc's buffer size for a file whose st_blksize is @blksize. */
size_t stdiosim_bufsize(long blksize);

struct stdiosim_range {
	uint64_t off;		/* stream offset of the first byte */
	size_t len;
};

/* ---- Writing: fwrite() calls, then fclose(). ---- */

struct stdiosim_w {
	size_t bufsize;		/* 0 until the first fwrite allocates */
	uint64_t pos;		/* bytes handed to fwrite so far */
	uint64_t flushed;	/* bytes handed to write(2) so far */
};

/* 1 if fwrite(@n bytes) on @w first needs the buffer: the caller fstat()s
 * the descriptor and calls stdiosim_w_alloc() (glibc does it there). */
int stdiosim_w_needs_alloc(const struct stdiosim_w *w, size_t n);
void stdiosim_w_alloc(struct stdiosim_w *w, size_t bufsize);

/*
 * fwrite(@n bytes): fills @out with the write(2) calls it makes, in order
 * (at most 2: the full buffer, then whole buffers straight from the
 * caller's data), and returns how many. n == 0 makes none (glibc returns
 * before looking at the stream).
 */
int stdiosim_fwrite(struct stdiosim_w *w, size_t n, struct stdiosim_range out[2]);

/* fclose(): the final write(2) of what is buffered; returns 0 or 1. */
int stdiosim_fclose(struct stdiosim_w *w, struct stdiosim_range *out);

/* ---- Reading: fread() calls. ---- */

struct stdiosim_r {
	size_t bufsize;		/* 0 until the first fread allocates */
	size_t have;		/* bytes buffered and not yet consumed */
	size_t want;		/* bytes of the current fread still wanted */
	int eof;		/* a read(2) returned 0 (or failed) */
};

int stdiosim_r_needs_alloc(const struct stdiosim_r *r, size_t n);
void stdiosim_r_alloc(struct stdiosim_r *r, size_t bufsize);

/*
 * fread(@n bytes): call stdiosim_fread_begin(), then while
 * stdiosim_fread_next() returns 1 issue read(fd, buf, *len) - into the
 * stream buffer if *to_buffer, else into the caller's - and report what it
 * returned (-1 for an error) with stdiosim_fread_done(). Returns 0 when
 * the fread is satisfied or hit end of file.
 */
void stdiosim_fread_begin(struct stdiosim_r *r, size_t n);
int stdiosim_fread_next(struct stdiosim_r *r, size_t *len, int *to_buffer);
void stdiosim_fread_done(struct stdiosim_r *r, long got, int to_buffer);

#endif
