/*
 * The dbtrace writer (dbtrace.h): every line it formats goes through the
 * parser's own dbtrace_parse_line() before it is written, so it never
 * writes a trace the reader refuses.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dbtrace.h"
#include "dbtrace_impl.h"
#include "errmsg.h"

/*
 * Line @i of @h's header into @buf: 1, or 0 past the last line, or -1 if
 * it does not fit a line.
 */
static int header_line(const struct dbtrace_header *h, unsigned i, char *buf, size_t len)
{
	const struct dbtrace_file *f;
	char size[24];
	int n;

	if (i == 0)
		n = snprintf(buf, len, "dbtrace %u", h->version ? h->version : 1);
	else if (i == 1)
		n = snprintf(buf, len, "pagesize %" PRIu32, h->page_size);
	else if (i == 2)
		n = snprintf(buf, len, "timeunit %s", dbtrace_time_unit_name(h->time_unit));
	else if (i == 3)
		n = snprintf(buf, len, "source %s", h->source ? h->source : "");
	else if ((i -= 4) < h->nincomplete)
		n = snprintf(buf, len, "incomplete %s", h->incomplete[i] ? h->incomplete[i] : "");
	else if ((i -= h->nincomplete) < h->nfiles) {
		f = &h->files[i];
		if (f->exists)
			snprintf(size, sizeof(size), "%" PRIu64, f->size);
		else
			snprintf(size, sizeof(size), "-");
		n = snprintf(buf, len, "file %" PRIu32 " %s %s %" PRIu64 " %s%s", f->id,
			     dbtrace_role_name(f->role), size, f->max_size, f->path ? f->path : "",
			     f->direct ? " direct" : "");
	} else if ((i -= h->nfiles) < h->nstreams) {
		n = snprintf(buf, len, "stream %" PRIu32 " %s", h->streams[i].id,
			     h->streams[i].name ? h->streams[i].name : "");
	} else {
		return 0;
	}
	return n >= 0 && (size_t)n <= DBTRACE_MAX_LINE && (size_t)n < len ? 1 : -1;
}

/* Runs a formatted line through the parser; the line in @buf stays intact. */
static int check_line(struct dbtrace *t, const char *buf, struct dbtrace_rec *rec)
{
	size_t n = strlen(buf);

	memcpy(t->linebuf, buf, n + 1);
	return dbtrace_parse_line(t, t->linebuf, n, rec);
}

struct dbtrace *dbtrace_write_header(FILE *out, const struct dbtrace_header *h,
				     char *err, size_t errlen)
{
	char buf[DBTRACE_MAX_LINE + 2];
	struct dbtrace_rec rec;
	struct dbtrace *t = dbtrace_new("output");
	unsigned i;
	int r;

	if (!t) {
		pack_errf(err, errlen, "output: out of memory");
		return NULL;
	}
	for (i = 0; (r = header_line(h, i, buf, sizeof(buf))) > 0; i++) {
		t->line++;
		if (check_line(t, buf, &rec))
			goto bad;
	}
	if (r < 0) {
		dbtrace_fail_at(t, t->line + 1, "header line longer than %d bytes", DBTRACE_MAX_LINE);
		goto bad;
	}
	if (dbtrace_finish_header(t, "record"))
		goto bad;
	for (i = 0; header_line(h, i, buf, sizeof(buf)) > 0; i++)
		fprintf(out, "%s\n", buf);
	if (ferror(out)) {
		pack_errf(err, errlen, "output: write error: %s", strerror(errno));
		dbtrace_close(t);
		return NULL;
	}
	t->w = out;
	t->state = ST_RECORDS;
	return t;
bad:
	pack_errf(err, errlen, "%s", t->err);
	dbtrace_close(t);
	return NULL;
}

static void fmt_off(char *buf, size_t len, uint64_t v, uint32_t page)
{
	if (v % page == 0)
		snprintf(buf, len, "p%" PRIu64, v / page);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

int dbtrace_write_record(struct dbtrace *w, const struct dbtrace_rec *rec)
{
	char buf[256], tm[48], off[24];
	struct dbtrace_rec parsed;
	int nargs, n;

	if (!w->w || w->state != ST_RECORDS)
		return dbtrace_fail_at(w, w->line + 1, "record after the end of the trace");
	if (rec->time == DBTRACE_NO_TIME)
		snprintf(tm, sizeof(tm), "-");
	else
		snprintf(tm, sizeof(tm), "%" PRIu64, rec->time);
	if ((unsigned)rec->op >= DBTRACE_OP_NR)
		return dbtrace_fail_at(w, w->line + 1, "unknown operation %d", (int)rec->op);
	nargs = dbtrace_nargs(rec->op);
	if (nargs == 2) {
		fmt_off(off, sizeof(off), rec->off, w->h.page_size);
		n = snprintf(buf, sizeof(buf), "%s %" PRIu32 " %" PRIu32 " %s %s %" PRIu64, tm,
			     rec->stream, rec->file, dbtrace_op_name(rec->op), off, rec->len);
	} else if (nargs == 1) {
		n = snprintf(buf, sizeof(buf), "%s %" PRIu32 " %" PRIu32 " %s %" PRIu64, tm,
			     rec->stream, rec->file, dbtrace_op_name(rec->op), rec->size);
	} else {
		n = snprintf(buf, sizeof(buf), "%s %" PRIu32 " %" PRIu32 " %s", tm,
			     rec->stream, rec->file, dbtrace_op_name(rec->op));
	}
	if (n >= 0 && rec->has_lat && (size_t)n < sizeof(buf))
		n += snprintf(buf + n, sizeof(buf) - n, " +%" PRIu64, rec->lat);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return dbtrace_fail_at(w, w->line + 1, "record does not fit a line");
	w->line++;
	if (check_line(w, buf, &parsed) < 0) {
		w->line--;
		return -1;
	}
	if (fprintf(w->w, "%s\n", buf) < 0)
		return fail(w, "write error: %s", strerror(errno));
	return 0;
}

int dbtrace_write_end(struct dbtrace *w)
{
	if (!w->w || w->state != ST_RECORDS)
		return dbtrace_fail_at(w, w->line + 1, "the trace is already ended");
	w->line++;
	w->state = ST_END;
	if (fprintf(w->w, "end %" PRIu64 "\n", w->nrec) < 0 || fflush(w->w))
		return fail(w, "write error: %s", strerror(errno));
	return 0;
}
