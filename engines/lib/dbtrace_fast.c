/*
 * Database page-replay traces: the record lines' fast path (dbtrace_impl.h).
 *
 * A trace is almost all record lines, and each one went through the
 * general parser: a scan for control characters, the split into tokens,
 * then every number read again from its token, the operation found by
 * comparing names. This reads a record line once, byte by byte, and
 * checks it as parse_record() does. It only ever accepts: anything it does
 * not expect (a byte out of place, a number of 19 digits or more, a check
 * that fails) hands the untouched line to the general parser, which
 * accepts or refuses it with its own message. So a line gives the same
 * record, the same state and the same error either way; the fuzz target
 * compares the two on every input (dbtrace_fast_records = 0).
 */
#include <stdint.h>
#include <string.h>

#include "dbtrace.h"
#include "dbtrace_impl.h"

int dbtrace_fast_records = 1;

/*
 * Whether the word at @p is @name (@n bytes) followed by a blank or the
 * end: byte by byte, so the compare stops at the line's NUL.
 */
static inline int word_is(const char *p, const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != name[i])
			return 0;
	return p[n] == ' ' || p[n] == '\t' || !p[n];
}

/* One of parse_record()'s operation names and its length. */
#define OP(name)                       \
	{                              \
		name, sizeof(name) - 1 \
	}
static const struct {
	const char *name;
	unsigned char len;
} ops[DBTRACE_OP_NR] = {
	[DBTRACE_READ] = OP("read"),
	[DBTRACE_WRITE] = OP("write"),
	[DBTRACE_FSYNC] = OP("fsync"),
	[DBTRACE_FDATASYNC] = OP("fdatasync"),
	[DBTRACE_SYNC_FILE_RANGE] = OP("sync_file_range"),
	[DBTRACE_TRIM] = OP("trim"),
	[DBTRACE_TRUNCATE] = OP("truncate"),
	[DBTRACE_CREATE] = OP("create"),
	[DBTRACE_UNLINK] = OP("unlink"),
};
#undef OP

/* The operation at *@pp, which moves past it; -1 if none of parse_record()'s names. */
static inline int op_at(const char **pp)
{
	const char *p = *pp;
	int op;

	/* a switch on the first letter: at most two names to compare */
	switch (p[0]) {
	case 'r':
		op = DBTRACE_READ;
		break;
	case 'w':
		op = DBTRACE_WRITE;
		break;
	case 'f':
		op = p[1] == 's' ? DBTRACE_FSYNC : DBTRACE_FDATASYNC;
		break;
	case 's':
		op = DBTRACE_SYNC_FILE_RANGE;
		break;
	case 't':
		op = p[1] == 'r' && p[2] == 'i' ? DBTRACE_TRIM : DBTRACE_TRUNCATE;
		break;
	case 'c':
		op = DBTRACE_CREATE;
		break;
	case 'u':
		op = DBTRACE_UNLINK;
		break;
	default:
		return -1;
	}
	if (!word_is(p, ops[op].name, ops[op].len))
		return -1;
	*pp = p + ops[op].len;
	return op;
}

/* The line is NUL-terminated: the NUL ends every scan (one inside it is caught at the end). */
static inline const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/*
 * Decimal digits at *@pp into *@v, then a blank or the end of the line,
 * and the blanks after them. 0 if there is none, or 19 or more (18 digits
 * stay below 2^63-1, so no overflow check is needed here: the general
 * parser says "beyond").
 */
static inline int digits(const char **pp, uint64_t *v)
{
	const char *p = *pp, *start = p;
	uint64_t n = 0;
	unsigned d;

	while ((d = (unsigned)(unsigned char)*p - '0') <= 9) {
		n = n * 10 + d;
		p++;
	}
	if (p == start || p - start > 18 || (*p != ' ' && *p != '\t' && *p))
		return 0;
	*v = n;
	*pp = skip_blanks(p);
	return 1;
}

/* A byte count or pN into *@v (bytes); 0 if not plainly one, or beyond 2^63-1. */
static inline int quantity(const struct dbtrace *t, const char **pp, uint64_t *v)
{
	uint64_t n;

	if (**pp != 'p')
		return digits(pp, v);
	(*pp)++;
	if (!digits(pp, &n) || n > DBTRACE_MAX_OFFSET / t->h.page_size)
		return 0;
	*v = n * t->h.page_size;
	return 1;
}

int dbtrace_fast_record(struct dbtrace *t, const char *line, size_t len, struct dbtrace_rec *rec)
{
	const char *p = line, *end = line + len;
	uint64_t time = DBTRACE_NO_TIME, sid, fid, off = 0, qlen = 0, size = 0, lat = 0, xend = 0;
	struct dbtrace_stream *s;
	struct dbtrace_file *f;
	int op, nargs, has_lat = 0;

	p = skip_blanks(p);
	if (*p == '-') {
		if (t->h.time_unit != DBTRACE_TIME_NONE || (p[1] != ' ' && p[1] != '\t'))
			return 0;
		p = skip_blanks(p + 1);
	} else if (t->h.time_unit == DBTRACE_TIME_NONE || !digits(&p, &time)) {
		return 0;
	}
	if (!digits(&p, &sid) || sid >= DBTRACE_MAX_STREAMS || !t->stream_idx[sid])
		return 0;
	if (!digits(&p, &fid) || fid >= DBTRACE_MAX_FILES || !t->file_idx[fid])
		return 0;
	s = &t->streams[t->stream_idx[sid] - 1];
	f = &t->files[t->file_idx[fid] - 1];
	op = op_at(&p);
	if (op < 0)
		return 0;
	p = skip_blanks(p);
	nargs = dbtrace_nargs(op);
	if (nargs == 2 && (!quantity(t, &p, &off) || !quantity(t, &p, &qlen)))
		return 0;
	if (nargs == 1 && !quantity(t, &p, &size))
		return 0;
	if (*p) {
		if (*p != '+' || t->h.version < 2 || time == DBTRACE_NO_TIME)
			return 0;
		p++;
		if (!digits(&p, &lat) || *p)
			return 0;
		has_lat = 1;
	}
	if (p != end)
		return 0; /* a NUL inside the line: a control character */

	/* parse_record()'s checks, in its order: any that fails is its to say */
	if (f->role == DBTRACE_ROLE_DIRECTORY && op != DBTRACE_FSYNC && op != DBTRACE_CREATE &&
	    op != DBTRACE_UNLINK)
		return 0;
	if ((op == DBTRACE_CREATE || op == DBTRACE_UNLINK) && f->path[0] == '.' && !f->path[1])
		return 0;
	if (time != DBTRACE_NO_TIME && s->records && time < s->last_time)
		return 0;
	if (has_lat && lat > DBTRACE_MAX_OFFSET - time)
		return 0;
	if (nargs == 2) {
		if ((qlen == 0 && op != DBTRACE_SYNC_FILE_RANGE) ||
		    ((op == DBTRACE_READ || op == DBTRACE_WRITE) && qlen > DBTRACE_MAX_IO) ||
		    off > DBTRACE_MAX_OFFSET - qlen)
			return 0;
		xend = off + qlen;
		if (xend > f->max_size)
			return 0;
	} else if (nargs == 1) {
		if (size > f->max_size)
			return 0;
		xend = size;
	}

	memset(rec, 0, sizeof(*rec));
	rec->line = t->line;
	rec->time = time;
	rec->stream = sid;
	rec->file = fid;
	rec->op = op;
	rec->off = off;
	rec->len = qlen;
	rec->size = size;
	rec->has_lat = has_lat;
	rec->lat = lat;
	dbtrace_count_record(t, s, f, rec, xend);
	return 1;
}
