/*
 * libFuzzer target for database page-replay traces (engines/lib/dbtrace.h):
 * the input is a whole trace, plain or gzip, read from memory. The parser
 * must never crash; every error is one line "fuzz line N: ..." with N within
 * the input; every header and record it accepts respects the format's
 * guarantees (paths inside the target, ranges within the declared max size,
 * per-stream time order); and a trace it accepts, written back with the
 * writer and parsed again, gives the same header and records. The record
 * lines' fast path (dbtrace_fast.c) changes nothing: read without it, the
 * input gives the same records and the same error.
 *
 *   make fuzz FUZZ_SECONDS=60
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbtrace.h"
#include "dbtrace_impl.h"

#define MAX_KEEP	256		/* records kept for the round trip */
#define MAX_RECORDS	200000		/* a small gzip input can inflate to many */

static struct dbtrace_rec kept[MAX_KEEP];

/* "fuzz line N: x" with 1 <= N <= @max_line (0: unknown), on one line. */
static void check_err(const char *err, uint64_t max_line)
{
	unsigned long long n;
	char *end;

	if (strchr(err, '\n') || strncmp(err, "fuzz line ", 10))
		abort();
	n = strtoull(err + 10, &end, 10);
	if (end == err + 10 || strncmp(end, ": ", 2) || !end[2] || n < 1)
		abort();
	if (max_line && n > max_line)
		abort();
}

/* Independently of the parser: could @path leave the target directory? */
static int escapes(const char *path)
{
	const char *c = path, *e;

	if (path[0] == '/' || !path[0])
		return 1;
	if (!strcmp(path, "."))
		return 0;
	for (;;) {
		e = strchr(c, '/');
		if (!e)
			e = c + strlen(c);
		if (e == c || (e - c == 2 && !strncmp(c, "..", 2)) || (e - c == 1 && c[0] == '.'))
			return 1;
		if (!*e)
			return 0;
		c = e + 1;
	}
}

static void check_header(const struct dbtrace *t)
{
	const struct dbtrace_header *h = dbtrace_header(t);
	char why[128];
	unsigned i;

	if (h->version < 1 || h->version > DBTRACE_VERSION)
		abort();
	if (h->page_size < DBTRACE_MIN_PAGE || h->page_size > DBTRACE_MAX_PAGE ||
	    (h->page_size & (h->page_size - 1)) || !h->source || !h->source[0])
		abort();
	for (i = 0; i < h->nfiles; i++) {
		const struct dbtrace_file *f = &h->files[i];

		if (dbtrace_path_check(f->path, f->role, why, sizeof(why)) || escapes(f->path) ||
		    f->size > f->max_size || f->max_size > DBTRACE_MAX_OFFSET ||
		    (f->role == DBTRACE_ROLE_DIRECTORY && (f->max_size || f->direct)) ||
		    (f->direct && h->version < 2) ||
		    dbtrace_file_by_id(t, f->id) != f)
			abort();
	}
	for (i = 0; i < h->nstreams; i++)
		if (dbtrace_stream_by_id(t, h->streams[i].id) != &h->streams[i] ||
		    !h->streams[i].name[0])
			abort();
}

static void check_rec(const struct dbtrace *t, const struct dbtrace_rec *r, uint64_t prev_time)
{
	const struct dbtrace_file *f = dbtrace_file_by_id(t, r->file);

	if (!f || !dbtrace_stream_by_id(t, r->stream) || (unsigned)r->op >= DBTRACE_OP_NR)
		abort();
	if (r->off > DBTRACE_MAX_OFFSET || r->len > DBTRACE_MAX_OFFSET - r->off ||
	    r->off + r->len > f->max_size || r->size > f->max_size || f->extent > f->max_size)
		abort();
	if ((r->op == DBTRACE_READ || r->op == DBTRACE_WRITE) && (!r->len || r->len > DBTRACE_MAX_IO))
		abort();
	if (f->role == DBTRACE_ROLE_DIRECTORY && r->op != DBTRACE_FSYNC &&
	    r->op != DBTRACE_CREATE && r->op != DBTRACE_UNLINK)
		abort();
	if ((r->time == DBTRACE_NO_TIME) != (dbtrace_header(t)->time_unit == DBTRACE_TIME_NONE))
		abort();
	if (r->time != DBTRACE_NO_TIME && prev_time != DBTRACE_NO_TIME && r->time < prev_time)
		abort();
	if (r->has_lat && (dbtrace_header(t)->version < 2 || r->time == DBTRACE_NO_TIME ||
			   r->lat > DBTRACE_MAX_OFFSET - r->time))
		abort();
	if (!r->has_lat && r->lat)
		abort();
}

static int same_header(const struct dbtrace_header *a, const struct dbtrace_header *b)
{
	unsigned i;

	if (a->version != b->version || a->page_size != b->page_size || a->time_unit != b->time_unit ||
	    strcmp(a->source, b->source) || a->nfiles != b->nfiles || a->nstreams != b->nstreams)
		return 0;
	for (i = 0; i < a->nfiles; i++)
		if (a->files[i].id != b->files[i].id || a->files[i].role != b->files[i].role ||
		    a->files[i].exists != b->files[i].exists || a->files[i].size != b->files[i].size ||
		    a->files[i].max_size != b->files[i].max_size ||
		    a->files[i].direct != b->files[i].direct ||
		    strcmp(a->files[i].path, b->files[i].path))
			return 0;
	for (i = 0; i < a->nstreams; i++)
		if (a->streams[i].id != b->streams[i].id ||
		    strcmp(a->streams[i].name, b->streams[i].name))
			return 0;
	return 1;
}

/* Writes @t's header and the kept records, parses the result, compares. */
static void round_trip(const struct dbtrace *t, size_t n)
{
	struct dbtrace_rec r;
	struct dbtrace *w, *t2;
	char err[640], *buf = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	w = dbtrace_write_header(f, dbtrace_header(t), err, sizeof(err));
	if (!w)
		abort();
	for (i = 0; i < n; i++)
		if (dbtrace_write_record(w, &kept[i]))
			abort();
	if (dbtrace_write_end(w))
		abort();
	dbtrace_close(w);
	fclose(f);
	t2 = dbtrace_open_mem(buf, len, "again", err, sizeof(err));
	if (!t2 || !same_header(dbtrace_header(t), dbtrace_header(t2)))
		abort();
	for (i = 0; i < n; i++) {
		if (dbtrace_next(t2, &r) != 1)
			abort();
		if (r.time != kept[i].time || r.stream != kept[i].stream || r.file != kept[i].file ||
		    r.op != kept[i].op || r.off != kept[i].off || r.len != kept[i].len ||
		    r.size != kept[i].size || r.has_lat != kept[i].has_lat || r.lat != kept[i].lat)
			abort();
	}
	if (dbtrace_next(t2, &r) != 0)
		abort();
	dbtrace_close(t2);
	free(buf);
}

/* The input read with and without the fast path: the same records, end and error. */
static void same_both_ways(const uint8_t *data, size_t size)
{
	char ea[640] = "", eb[640] = "";
	struct dbtrace *a, *b;
	struct dbtrace_rec ra, rb;
	size_t n = 0;
	int sa, sb;

	dbtrace_fast_records = 1;
	a = dbtrace_open_mem(data, size, "fuzz", ea, sizeof(ea));
	dbtrace_fast_records = 0;
	b = dbtrace_open_mem(data, size, "fuzz", eb, sizeof(eb));
	if (!a != !b || strcmp(ea, eb))
		abort();
	while (a && n++ < MAX_RECORDS) {
		dbtrace_fast_records = 1;
		sa = dbtrace_next(a, &ra);
		dbtrace_fast_records = 0;
		sb = dbtrace_next(b, &rb);
		if (sa != sb || strcmp(dbtrace_error(a), dbtrace_error(b)))
			abort();
		if (sa != 1)
			break;
		if (ra.line != rb.line || ra.time != rb.time || ra.stream != rb.stream ||
		    ra.file != rb.file || ra.op != rb.op || ra.off != rb.off || ra.len != rb.len ||
		    ra.size != rb.size || ra.has_lat != rb.has_lat || ra.lat != rb.lat)
			abort();
	}
	dbtrace_fast_records = 1;
	dbtrace_close(a);
	dbtrace_close(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct dbtrace_stream *s;
	struct dbtrace_rec rec;
	struct dbtrace *t;
	char err[640] = "";
	uint64_t max_line = 0, prev;
	size_t i, n = 0;
	int r;

	/*
	 * A plain trace has at most one line per newline plus a last one; a
	 * missing "end" is reported on the line after the last.
	 */
	if (!(size >= 2 && data[0] == 0x1f && data[1] == 0x8b)) {
		max_line = 2;
		for (i = 0; i < size; i++)
			max_line += data[i] == '\n';
	}
	same_both_ways(data, size);
	t = dbtrace_open_mem(data, size, "fuzz", err, sizeof(err));
	if (!t) {
		check_err(err, max_line);
		return 0;
	}
	check_header(t);
	while (n < MAX_RECORDS) {
		/* the stream's time before this record: a record is checked against it */
		r = dbtrace_next(t, &rec);
		if (r != 1)
			break;
		s = dbtrace_stream_by_id(t, rec.stream);
		if (!s)
			abort();
		prev = DBTRACE_NO_TIME;
		if (n < MAX_KEEP) {
			/* earlier kept record of the same stream, if any */
			for (i = n; i-- > 0;)
				if (kept[i].stream == rec.stream) {
					prev = kept[i].time;
					break;
				}
			kept[n] = rec;
		}
		check_rec(t, &rec, prev);
		if (s->last_time != rec.time && rec.time != DBTRACE_NO_TIME)
			abort();
		n++;
	}
	if (n == MAX_RECORDS) {
		dbtrace_close(t);
		return 0;
	}
	if (r < 0) {
		check_err(dbtrace_error(t), max_line);
		if (dbtrace_next(t, &rec) != -1)
			abort();
	} else if (n <= MAX_KEEP) {
		round_trip(t, n);
	}
	dbtrace_close(t);
	return 0;
}
