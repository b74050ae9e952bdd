/* See stdiosim.h. The comments name the glibc functions each step mirrors. */
#include <stdio.h>

#include "stdiosim.h"

size_t stdiosim_bufsize(long blksize)
{
	/* _IO_file_doallocate: BUFSIZ unless 0 < st_blksize < BUFSIZ */
	if (blksize > 0 && blksize < BUFSIZ)
		return (size_t)blksize;
	return BUFSIZ;
}

/* "Try to maintain alignment": whole buffers only, for buffers >= 128 bytes. */
static size_t whole_blocks(size_t n, size_t bufsize)
{
	return bufsize >= 128 ? n - n % bufsize : n;
}

int stdiosim_w_needs_alloc(const struct stdiosim_w *w, size_t n)
{
	return n > 0 && w->bufsize == 0;
}

void stdiosim_w_alloc(struct stdiosim_w *w, size_t bufsize)
{
	w->bufsize = bufsize ? bufsize : 1;
}

int stdiosim_fwrite(struct stdiosim_w *w, size_t n, struct stdiosim_range out[2])
{
	size_t held = (size_t)(w->pos - w->flushed);
	size_t room, direct;
	int k = 0;

	if (n == 0)
		return 0;
	/* _IO_new_file_xsputn: before the first overflow there is no room */
	room = w->flushed == 0 && w->pos == 0 ? 0 : w->bufsize - held;
	if (n <= room) {
		w->pos += n;
		return 0;
	}
	/* fill the buffer, then _IO_OVERFLOW flushes it (nothing if empty) */
	w->pos += room;
	n -= room;
	if (w->pos > w->flushed) {
		out[k].off = w->flushed;
		out[k].len = (size_t)(w->pos - w->flushed);
		k++;
		w->flushed = w->pos;
	}
	/* new_do_write straight from the caller's data */
	direct = whole_blocks(n, w->bufsize);
	if (direct) {
		out[k].off = w->pos;
		out[k].len = direct;
		k++;
		w->pos += direct;
		w->flushed = w->pos;
	}
	/* _IO_default_xsputn: the rest fits in the now empty buffer */
	w->pos += n - direct;
	return k;
}

int stdiosim_fclose(struct stdiosim_w *w, struct stdiosim_range *out)
{
	if (w->pos == w->flushed)
		return 0;
	out->off = w->flushed;
	out->len = (size_t)(w->pos - w->flushed);
	w->flushed = w->pos;
	return 1;
}

int stdiosim_r_needs_alloc(const struct stdiosim_r *r, size_t n)
{
	return n > 0 && r->bufsize == 0;
}

void stdiosim_r_alloc(struct stdiosim_r *r, size_t bufsize)
{
	r->bufsize = bufsize ? bufsize : 1;
}

void stdiosim_fread_begin(struct stdiosim_r *r, size_t n)
{
	r->want = n;
}

int stdiosim_fread_next(struct stdiosim_r *r, size_t *len, int *to_buffer)
{
	/* _IO_file_xsgetn */
	if (r->want == 0)
		return 0;
	if (r->want <= r->have) {
		r->have -= r->want;
		r->want = 0;
		return 0;
	}
	r->want -= r->have;
	r->have = 0;
	if (r->want < r->bufsize) {
		/* __underflow: refill the whole buffer; EOF is sticky there */
		if (r->eof) {
			r->want = 0;
			return 0;
		}
		*len = r->bufsize;
		*to_buffer = 1;
	} else {
		*len = whole_blocks(r->want, r->bufsize);
		*to_buffer = 0;
	}
	return 1;
}

void stdiosim_fread_done(struct stdiosim_r *r, long got, int to_buffer)
{
	if (got <= 0) {
		/* _IO_EOF_SEEN / _IO_ERR_SEEN: this fread stops here */
		r->eof = got == 0 || r->eof;
		r->want = 0;
		return;
	}
	if (to_buffer)
		r->have = (size_t)got;
	else
		r->want -= (size_t)got;
}
