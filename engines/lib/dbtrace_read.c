/*
 * The dbtrace reader (dbtrace.h): a trace's lines from a path, a descriptor,
 * a FILE or a memory buffer, plain or gzip, fed to dbtrace_parse_line()
 * (dbtrace.c); opening, the next record, what the header declared. Input
 * goes through two fixed 64 KiB buffers and one line buffer.
 *
 * Gzip is read with inflate() rather than gzread() so that the same code
 * reads a path, a pipe, a FILE already partly read or a memory buffer (the
 * fuzz target), and so that a stream cut short is told apart exactly from
 * its clean end (inflate never reached Z_STREAM_END).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include "dbtrace.h"
#include "dbtrace_impl.h"
#include "errmsg.h"

static ssize_t src_read(struct dbtrace *t, unsigned char *buf, size_t n)
{
	size_t got;

	if (t->mem) {
		got = t->mem_len - t->mem_pos;
		if (got > n)
			got = n;
		memcpy(buf, t->mem + t->mem_pos, got);
		t->mem_pos += got;
		return got;
	}
	got = fread(buf, 1, n, t->f);
	if (got < n && ferror(t->f))
		return fail(t, "read error: %s", strerror(errno));
	return got;
}

/* Decoded bytes into t->bp/t->bl: > 0, 0 at a clean end of input, -1 on error. */
static int fill(struct dbtrace *t)
{
	ssize_t n;
	int ret;

	if (!t->gz) {
		if (t->in_eof)
			return 0;
		n = src_read(t, t->in, sizeof(t->in));
		if (n < 0)
			return -1;
		if (n == 0)
			t->in_eof = 1;
		t->bp = t->in;
		t->bl = n;
		return n > 0;
	}
	for (;;) {
		if (!t->z.avail_in && !t->in_eof) {
			n = src_read(t, t->in, sizeof(t->in));
			if (n < 0)
				return -1;
			if (n == 0)
				t->in_eof = 1;
			t->z.next_in = t->in;
			t->z.avail_in = n;
		}
		if (t->z_member_done) {
			/* gzip files may be concatenated members (cat a.gz b.gz, pigz) */
			if (!t->z.avail_in) {
				if (t->in_eof)
					return 0;
				continue;
			}
			if (t->z.next_in[0] != 0x1f)
				return fail(t, "data after the end of the gzip stream");
			if (inflateReset(&t->z) != Z_OK)
				return fail(t, "gzip: inflateReset failed");
			t->z_member_done = 0;
		}
		t->z.next_out = t->out;
		t->z.avail_out = sizeof(t->out);
		ret = inflate(&t->z, Z_NO_FLUSH);
		if (ret == Z_STREAM_END)
			t->z_member_done = 1;
		else if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT)
			return fail(t, "corrupt gzip stream (%s)",
				    t->z.msg ? t->z.msg : "bad data");
		else if (ret == Z_MEM_ERROR)
			return fail(t, "out of memory decompressing");
		else if (ret != Z_OK && ret != Z_BUF_ERROR)
			return fail(t, "gzip error %d", ret);
		t->bp = t->out;
		t->bl = sizeof(t->out) - t->z.avail_out;
		if (t->bl)
			return 1;
		if (!t->z_member_done && !t->z.avail_in && t->in_eof)
			return fail(t, "truncated gzip stream (the compressed data ends early)");
	}
}

/* The next line into t->linebuf: its length, 0 at a clean end of input (@len unset), -1. */
static int read_line(struct dbtrace *t, size_t *len)
{
	size_t n = 0, take;
	const unsigned char *nl;
	int r;

	t->line++;
	for (;;) {
		if (!t->bl) {
			r = fill(t);
			if (r < 0)
				return -1;
			if (r == 0) {
				if (n)
					break;
				t->line--;
				return 0;
			}
		}
		nl = memchr(t->bp, '\n', t->bl);
		take = nl ? (size_t)(nl - t->bp) : t->bl;
		if (n + take > DBTRACE_MAX_LINE + 1)
			return fail(t, "line longer than %d bytes", DBTRACE_MAX_LINE);
		memcpy(t->linebuf + n, t->bp, take);
		n += take;
		t->bp += take + (nl != NULL);
		t->bl -= take + (nl != NULL);
		if (nl)
			break;
	}
	if (n && t->linebuf[n - 1] == '\r')
		n--;
	if (n > DBTRACE_MAX_LINE)
		return fail(t, "line longer than %d bytes", DBTRACE_MAX_LINE);
	t->linebuf[n] = '\0';
	*len = n;
	return 1;
}

/* Reads until a record (1), the clean end of the trace (0) or an error (-1). */
static int read_record(struct dbtrace *t, struct dbtrace_rec *rec)
{
	size_t len = 0;
	int r;

	for (;;) {
		r = read_line(t, &len);
		if (r < 0)
			return -1;
		if (r == 0) {
			if (t->state == ST_END) {
				t->state = ST_DONE;
				return 0;
			}
			if (t->state == ST_MAGIC)
				return dbtrace_fail_at(t, 1, "empty input: not a dbtrace trace");
			return dbtrace_fail_at(
				t, t->line + 1,
				"the trace ends without its 'end' line (truncated?)");
		}
		r = dbtrace_parse_line(t, t->linebuf, len, rec);
		if (r)
			return r;
	}
}

struct dbtrace *dbtrace_new(const char *name)
{
	struct dbtrace *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	snprintf(t->name, sizeof(t->name), "%s", name ? name : "trace");
	return t;
}

/* Detects gzip and reads the header; frees @t and returns NULL on error. */
static struct dbtrace *start(struct dbtrace *t, char *err, size_t errlen)
{
	ssize_t n;
	int r;

	n = src_read(t, t->in, sizeof(t->in));
	if (n < 0)
		goto out;
	if (n >= 2 && t->in[0] == 0x1f && t->in[1] == 0x8b) {
		t->gz = 1;
		if (inflateInit2(&t->z, 16 + MAX_WBITS) != Z_OK) {
			dbtrace_fail_at(t, 1, "cannot start gzip decompression");
			goto out;
		}
		t->z_init = 1;
		t->z.next_in = t->in;
		t->z.avail_in = n;
		t->in_eof = n == 0;
	} else {
		t->bp = t->in;
		t->bl = n;
		t->in_eof = n == 0;
	}
	r = read_record(t, &t->rec_pending);
	if (r < 0)
		goto out;
	t->pending = r;
	return t;
out:
	pack_errf(err, errlen, "%s", t->err);
	dbtrace_close(t);
	return NULL;
}

struct dbtrace *dbtrace_open_file(FILE *f, const char *name, char *err, size_t errlen)
{
	struct dbtrace *t = dbtrace_new(name);

	if (!t) {
		pack_errf(err, errlen, "%s: out of memory", name ? name : "trace");
		return NULL;
	}
	t->f = f;
	return start(t, err, errlen);
}

/* A reader of the stream @f, which it closes (at once if out of memory). */
static struct dbtrace *open_owned(FILE *f, const char *name, char *err, size_t errlen)
{
	struct dbtrace *t = dbtrace_new(name);

	if (!t) {
		fclose(f);
		pack_errf(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	t->f = f;
	t->own_f = 1;
	return start(t, err, errlen);
}

struct dbtrace *dbtrace_open(const char *path, char *err, size_t errlen)
{
	FILE *f;

	if (!strcmp(path, "-"))
		return dbtrace_open_file(stdin, "<stdin>", err, errlen);
	f = fopen(path, "rb");
	if (!f) {
		pack_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	return open_owned(f, path, err, errlen);
}

struct dbtrace *dbtrace_open_fd(int fd, const char *name, char *err, size_t errlen)
{
	FILE *f = fdopen(fd, "rb");

	if (!f) {
		pack_errf(err, errlen, "%s: %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	return open_owned(f, name, err, errlen);
}

struct dbtrace *dbtrace_open_mem(const void *buf, size_t len, const char *name, char *err,
				 size_t errlen)
{
	static const unsigned char empty;
	struct dbtrace *t = dbtrace_new(name);

	if (!t) {
		pack_errf(err, errlen, "%s: out of memory", name ? name : "trace");
		return NULL;
	}
	t->mem = buf ? buf : &empty;
	t->mem_len = buf ? len : 0;
	return start(t, err, errlen);
}

int dbtrace_next(struct dbtrace *t, struct dbtrace_rec *rec)
{
	int r;

	if (t->state == ST_ERROR)
		return -1;
	if (t->state == ST_DONE)
		return 0;
	if (t->pending) {
		t->pending = 0;
		*rec = t->rec_pending;
		return 1;
	}
	r = read_record(t, rec);
	if (r < 0)
		t->state = ST_ERROR;
	return r;
}

const struct dbtrace_header *dbtrace_header(const struct dbtrace *t)
{
	return &t->h;
}

const struct dbtrace_file *dbtrace_file_by_id(const struct dbtrace *t, uint32_t id)
{
	if (id >= DBTRACE_MAX_FILES || !t->file_idx[id])
		return NULL;
	return &t->files[t->file_idx[id] - 1];
}

const struct dbtrace_stream *dbtrace_stream_by_id(const struct dbtrace *t, uint32_t id)
{
	if (id >= DBTRACE_MAX_STREAMS || !t->stream_idx[id])
		return NULL;
	return &t->streams[t->stream_idx[id] - 1];
}

const char *dbtrace_error(const struct dbtrace *t)
{
	return t->err;
}

int dbtrace_span(const struct dbtrace_header *h, uint64_t align, uint64_t *total)
{
	uint64_t sum = 0, s;
	unsigned i;

	for (i = 0; i < h->nfiles; i++) {
		if (h->files[i].role == DBTRACE_ROLE_DIRECTORY)
			continue;
		s = h->files[i].max_size;
		if (align > 1 && s % align) {
			if (s > DBTRACE_MAX_OFFSET - (align - s % align))
				return -1;
			s += align - s % align;
		}
		if (s > DBTRACE_MAX_OFFSET - sum)
			return -1;
		sum += s;
	}
	*total = sum;
	return 0;
}

void dbtrace_close(struct dbtrace *t)
{
	unsigned i;

	if (!t)
		return;
	if (t->z_init)
		inflateEnd(&t->z);
	if (t->own_f)
		fclose(t->f);
	for (i = 0; i < t->h.nfiles; i++)
		free((char *)t->files[i].path);
	for (i = 0; i < t->h.nstreams; i++)
		free((char *)t->streams[i].name);
	free(t->files);
	free(t->streams);
	free(t->source);
	for (i = 0; i < t->h.nincomplete; i++)
		free(t->incomplete[i]);
	free(t);
}
