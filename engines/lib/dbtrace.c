/*
 * Database page-replay traces: the parser of their lines (dbtrace.h,
 * format in docs/dbtrace-format.md); the reader, which feeds it the lines
 * of a file, a pipe or a buffer, is dbtrace_read.c, the writer
 * dbtrace_write.c.
 *
 * One function, dbtrace_parse_line(), knows the format: the reader feeds it the
 * lines it reads, the writer the lines it formats, so what the writer writes
 * the reader reads. Everything a record is checked against (declarations,
 * per-stream time, per-file extent) lives in arrays bounded by the limits in
 * dbtrace.h.
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

static const char *const op_names[DBTRACE_OP_NR] = {
	[DBTRACE_READ] = "read",
	[DBTRACE_WRITE] = "write",
	[DBTRACE_FSYNC] = "fsync",
	[DBTRACE_FDATASYNC] = "fdatasync",
	[DBTRACE_SYNC_FILE_RANGE] = "sync_file_range",
	[DBTRACE_TRIM] = "trim",
	[DBTRACE_TRUNCATE] = "truncate",
	[DBTRACE_CREATE] = "create",
	[DBTRACE_UNLINK] = "unlink",
};

static const char *const role_names[DBTRACE_ROLE_NR] = {
	[DBTRACE_ROLE_DATA] = "data",
	[DBTRACE_ROLE_LOG] = "log",
	[DBTRACE_ROLE_JOURNAL] = "journal",
	[DBTRACE_ROLE_DIRECTORY] = "directory",
	[DBTRACE_ROLE_TEMP] = "temp",
	[DBTRACE_ROLE_OTHER] = "other",
};

static const char *const unit_names[] = {
	[DBTRACE_TIME_NONE] = "none",
	[DBTRACE_TIME_NS] = "ns",
	[DBTRACE_TIME_US] = "us",
	[DBTRACE_TIME_MS] = "ms",
};

const char *dbtrace_op_name(enum dbtrace_op op)
{
	return (unsigned)op < DBTRACE_OP_NR ? op_names[op] : "?";
}

const char *dbtrace_role_name(enum dbtrace_role role)
{
	return (unsigned)role < DBTRACE_ROLE_NR ? role_names[role] : "?";
}

const char *dbtrace_time_unit_name(enum dbtrace_time_unit u)
{
	return (unsigned)u <= DBTRACE_TIME_MS ? unit_names[u] : "?";
}

uint64_t dbtrace_time_unit_ns(enum dbtrace_time_unit u)
{
	switch (u) {
	case DBTRACE_TIME_NS:
		return 1;
	case DBTRACE_TIME_US:
		return 1000;
	case DBTRACE_TIME_MS:
		return 1000000;
	default:
		return 0;
	}
}

/* Records "NAME line N: reason" as the error; always returns -1. */
int __attribute__((format(printf, 3, 4)))
dbtrace_fail_at(struct dbtrace *t, uint64_t line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pack_errf(t->err, sizeof(t->err), "%s line %" PRIu64 ": %s", t->name, line, msg);
	return -1;
}


/* ---- Numbers ---- */

/* Plain decimal up to DBTRACE_MAX_OFFSET: 0, -1 not a number, -2 too large. */
static int parse_dec(const char *s, uint64_t *out)
{
	/* v * 10 + d > MAX exactly when v > MAX / 10, or v == MAX / 10 and d > MAX % 10 */
	const uint64_t most = DBTRACE_MAX_OFFSET / 10;
	const unsigned last = DBTRACE_MAX_OFFSET % 10;
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		unsigned d = (unsigned)(unsigned char)*s - '0';

		if (d > 9)
			return -1;
		if (v >= most && (v > most || d > last))
			return -2;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* A byte count or "pN" (N pages); @what names it in messages. */
static int parse_qty(struct dbtrace *t, const char *s, const char *what, uint64_t *out)
{
	uint64_t n;
	int r;

	if (s[0] == '-' && s[1])
		return fail(t, "negative %s '%.40s'", what, s);
	if (s[0] == 'p') {
		r = parse_dec(s + 1, &n);
		if (r == 0 && n > DBTRACE_MAX_OFFSET / t->h.page_size)
			r = -2;
		n *= t->h.page_size;
	} else {
		r = parse_dec(s, &n);
	}
	if (r == -1)
		return fail(t, "bad %s '%.40s' (bytes, or pN for N pages)", what, s);
	if (r == -2)
		return fail(t, "%s '%.40s' is beyond 2^63-1 bytes", what, s);
	*out = n;
	return 0;
}

static int parse_id(struct dbtrace *t, const char *s, const char *what, unsigned limit,
		    uint32_t *out)
{
	uint64_t v;

	if (parse_dec(s, &v) || v >= limit) {
		/* -1 said here, not fail()'s: gcc then sees *@out is set whenever 0 is returned */
		fail(t, "%s id '%.40s' must be an integer from 0 to %u", what, s, limit - 1);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- Names and paths ---- */

static int printable_token(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return 0;
	return 1;
}

int dbtrace_path_check(const char *path, enum dbtrace_role role, char *why, size_t whylen)
{
	const char *c, *slash;
	size_t len = strlen(path);

	if (!len) {
		pack_errf(why, whylen, "is empty");
		return -1;
	}
	if (len > DBTRACE_MAX_PATH) {
		pack_errf(why, whylen, "is longer than %d bytes", DBTRACE_MAX_PATH);
		return -1;
	}
	if (!printable_token(path)) {
		pack_errf(why, whylen, "has a blank or control character");
		return -1;
	}
	if (path[0] == '/') {
		pack_errf(why, whylen, "is absolute");
		return -1;
	}
	if (!strcmp(path, ".")) {
		if (role == DBTRACE_ROLE_DIRECTORY)
			return 0;
		pack_errf(why, whylen, "is the target directory itself, only a directory may be '.'");
		return -1;
	}
	for (c = path;; c = slash + 1) {
		size_t n;

		slash = strchr(c, '/');
		n = slash ? (size_t)(slash - c) : strlen(c);
		if (n == 0) {
			pack_errf(why, whylen, "has an empty component");
			return -1;
		}
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			pack_errf(why, whylen, "has a '..' component");
			return -1;
		}
		if (n == 1 && c[0] == '.') {
			pack_errf(why, whylen, "has a '.' component");
			return -1;
		}
		if (!slash)
			return 0;
	}
}

/* ---- Declarations ---- */

static int header_keys_done(struct dbtrace *t, const char *what)
{
	if (!t->page_line)
		return fail(t, "%s before the header's pagesize line", what);
	if (!t->unit_line)
		return fail(t, "%s before the header's timeunit line", what);
	if (!t->source_line)
		return fail(t, "%s before the header's source line", what);
	return 0;
}

static int parse_file_decl(struct dbtrace *t, char **tok, int ntok)
{
	struct dbtrace_file fd = { .line = t->line }, *nf;
	char why[128];
	uint32_t id;
	int role;

	if (ntok != 6 && ntok != 7)
		return fail(t, "expected 'file ID ROLE SIZE MAXSIZE PATH [direct]'");
	if (parse_id(t, tok[1], "file", DBTRACE_MAX_FILES, &id))
		return -1;
	if (t->file_idx[id])
		return fail(t, "file %u already declared on line %" PRIu64, id,
			    t->files[t->file_idx[id] - 1].line);
	for (role = 0; role < DBTRACE_ROLE_NR; role++)
		if (!strcmp(tok[2], role_names[role]))
			break;
	if (role == DBTRACE_ROLE_NR)
		return fail(t, "file %u: unknown role '%.40s' (data, log, journal, directory, temp, other)",
			    id, tok[2]);
	fd.id = id;
	fd.role = role;
	fd.exists = strcmp(tok[3], "-") != 0;
	if (fd.exists && parse_qty(t, tok[3], "file size", &fd.size))
		return -1;
	if (parse_qty(t, tok[4], "file max size", &fd.max_size))
		return -1;
	if (fd.max_size < fd.size)
		return fail(t, "file %u: max size %" PRIu64 " is below its size %" PRIu64,
			    id, fd.max_size, fd.size);
	if (role == DBTRACE_ROLE_DIRECTORY && fd.max_size)
		return fail(t, "file %u: a directory has size and max size 0", id);
	if (dbtrace_path_check(tok[5], role, why, sizeof(why)))
		return fail(t, "file %u: path '%.60s' %s", id, tok[5], why);
	if (!fd.exists && !strcmp(tok[5], "."))
		return fail(t, "file %u: the target directory '.' always exists (size 0, not '-')", id);
	if (ntok == 7) {
		if (strcmp(tok[6], "direct"))
			return fail(t, "file %u: unknown flag '%.40s' (direct)", id, tok[6]);
		if (t->h.version < 2)
			return fail(t, "file %u: 'direct' needs 'dbtrace 2' (this trace is version 1)", id);
		if (role == DBTRACE_ROLE_DIRECTORY)
			return fail(t, "file %u: a directory is not read or written: no 'direct'", id);
		fd.direct = 1;
	}

	if (t->h.nfiles == t->files_cap) {
		unsigned cap = t->files_cap ? 2 * t->files_cap : 16;

		nf = realloc(t->files, cap * sizeof(*nf));
		if (!nf)
			return fail(t, "out of memory");
		t->files = nf;
		t->files_cap = cap;
	}
	fd.path = strdup(tok[5]);
	if (!fd.path)
		return fail(t, "out of memory");
	t->files[t->h.nfiles++] = fd;
	t->file_idx[id] = t->h.nfiles;
	t->h.files = t->files;
	return 0;
}

static int parse_stream_decl(struct dbtrace *t, char **tok, int ntok)
{
	struct dbtrace_stream sd = { .line = t->line }, *ns;
	uint32_t id;
	unsigned i;

	if (ntok != 3)
		return fail(t, "expected 'stream ID NAME'");
	if (parse_id(t, tok[1], "stream", DBTRACE_MAX_STREAMS, &id))
		return -1;
	if (t->stream_idx[id])
		return fail(t, "stream %u already declared on line %" PRIu64, id,
			    t->streams[t->stream_idx[id] - 1].line);
	if (strlen(tok[2]) > DBTRACE_MAX_NAME)
		return fail(t, "stream %u: name longer than %d bytes", id, DBTRACE_MAX_NAME);
	for (i = 0; i < t->h.nstreams; i++)
		if (!strcmp(t->streams[i].name, tok[2]))
			return fail(t, "stream %u: name '%.60s' already used by stream %u on line %" PRIu64,
				    id, tok[2], t->streams[i].id, t->streams[i].line);
	if (t->h.nstreams == t->streams_cap) {
		unsigned cap = t->streams_cap ? 2 * t->streams_cap : 16;

		ns = realloc(t->streams, cap * sizeof(*ns));
		if (!ns)
			return fail(t, "out of memory");
		t->streams = ns;
		t->streams_cap = cap;
	}
	sd.id = id;
	sd.name = strdup(tok[2]);
	if (!sd.name)
		return fail(t, "out of memory");
	t->streams[t->h.nstreams++] = sd;
	t->stream_idx[id] = t->h.nstreams;
	t->h.streams = t->streams;
	return 0;
}

/*
 * Path order in which a path's descendants follow it directly: '/' sorts
 * before every other byte, the end of a path before '/'.
 */
static int path_cmp(const void *a, const void *b, void *files)
{
	const struct dbtrace_file *f = files;
	const unsigned char *p = (const void *)f[*(const unsigned *)a].path;
	const unsigned char *q = (const void *)f[*(const unsigned *)b].path;
	int cp, cq;

	for (;; p++, q++) {
		cp = *p == '/' ? 1 : *p ? *p + 1 : 0;
		cq = *q == '/' ? 1 : *q ? *q + 1 : 0;
		if (cp != cq || !cp)
			return cp - cq;
	}
}

static uint64_t later(const struct dbtrace_file *a, const struct dbtrace_file *b)
{
	return a->line > b->line ? a->line : b->line;
}

/*
 * At the end of the header: no two files share a path, and no file lies
 * below a file that is not a directory. In path_cmp order a duplicate or a
 * descendant of a path comes right after it, so neighbours are enough. Of
 * several conflicts, the one whose later declaration comes first is
 * reported, at that declaration.
 */
static int check_paths(struct dbtrace *t)
{
	const struct dbtrace_file *a, *b, *pa = NULL, *pb = NULL;
	unsigned *order, i;
	size_t n;

	if (t->h.nfiles < 2)
		return 0;
	order = malloc(t->h.nfiles * sizeof(*order));
	if (!order)
		return fail(t, "out of memory");
	for (i = 0; i < t->h.nfiles; i++)
		order[i] = i;
	qsort_r(order, t->h.nfiles, sizeof(*order), path_cmp, t->files);
	for (i = 0; i + 1 < t->h.nfiles; i++) {
		a = &t->files[order[i]];
		b = &t->files[order[i + 1]];
		n = strlen(a->path);
		if (strcmp(a->path, b->path) && (a->role == DBTRACE_ROLE_DIRECTORY ||
						 strncmp(a->path, b->path, n) || b->path[n] != '/'))
			continue;
		if (!pb || later(a, b) < later(pa, pb)) {
			pa = a;
			pb = b;
		}
	}
	free(order);
	if (!pb)
		return 0;
	a = pa;
	b = pb;
	if (!strcmp(a->path, b->path)) {
		if (b->line < a->line) {
			a = pb;
			b = pa;
		}
		return dbtrace_fail_at(t, b->line, "file %u: path '%.60s' already declared by file %u on line %" PRIu64,
			       b->id, b->path, a->id, a->line);
	}
	/* a, not a directory, has b below it */
	if (b->line > a->line)
		return dbtrace_fail_at(t, b->line,
			       "file %u: path '%.60s' is below '%.60s', file %u (line %" PRIu64 ") of role %s, not a directory",
			       b->id, b->path, a->path, a->id, a->line, role_names[a->role]);
	return dbtrace_fail_at(t, a->line,
		       "file %u: path '%.60s' of role %s has file %u '%.60s' (line %" PRIu64 ") below it",
		       a->id, a->path, role_names[a->role], b->id, b->path, b->line);
}

/* The header is over (first record or "end"): complete and consistent? */
int dbtrace_finish_header(struct dbtrace *t, const char *what)
{
	if (header_keys_done(t, what))
		return -1;
	return check_paths(t);
}

/* ---- Header lines ---- */

static int parse_header_key(struct dbtrace *t, const char *key, char **tok, int ntok)
{
	uint64_t v;

	if (!strcmp(key, "pagesize")) {
		if (t->page_line)
			return fail(t, "duplicate pagesize (first on line %" PRIu64 ")", t->page_line);
		if (ntok != 2)
			return fail(t, "expected 'pagesize BYTES'");
		if (parse_dec(tok[1], &v) || v < DBTRACE_MIN_PAGE || v > DBTRACE_MAX_PAGE ||
		    (v & (v - 1)))
			return fail(t, "pagesize '%.40s' must be a power of two from %d to %u",
				    tok[1], DBTRACE_MIN_PAGE, DBTRACE_MAX_PAGE);
		t->h.page_size = v;
		t->page_line = t->line;
		return 0;
	}
	/* timeunit */
	if (t->unit_line)
		return fail(t, "duplicate timeunit (first on line %" PRIu64 ")", t->unit_line);
	if (ntok != 2)
		return fail(t, "expected 'timeunit ns|us|ms|none'");
	for (v = 0; v <= DBTRACE_TIME_MS; v++)
		if (!strcmp(tok[1], unit_names[v]))
			break;
	if (v > DBTRACE_TIME_MS)
		return fail(t, "unknown time unit '%.40s' (ns, us, ms, none)", tok[1]);
	t->h.time_unit = v;
	t->unit_line = t->line;
	return 0;
}

/* The rest of a free-text line, blanks at both ends removed: a copy, or NULL if empty. */
static char *free_text(struct dbtrace *t, char *text, int *nomem)
{
	size_t n;
	char *s;

	while (*text == ' ' || *text == '\t')
		text++;
	n = strlen(text);
	while (n && (text[n - 1] == ' ' || text[n - 1] == '\t'))
		n--;
	*nomem = 0;
	if (!n)
		return NULL;
	s = strndup(text, n);
	if (!s) {
		*nomem = 1;
		fail(t, "out of memory");
	}
	return s;
}

static int parse_source(struct dbtrace *t, char *text)
{
	int nomem;

	if (t->source_line)
		return fail(t, "duplicate source (first on line %" PRIu64 ")", t->source_line);
	t->source = free_text(t, text, &nomem);
	if (!t->source)
		return nomem ? -1 : fail(t, "source needs a description of what was captured and how");
	t->h.source = t->source;
	t->source_line = t->line;
	return 0;
}

static int parse_incomplete(struct dbtrace *t, char *text)
{
	int nomem;
	char *s;

	if (t->h.nincomplete == DBTRACE_MAX_INCOMPLETE)
		return fail(t, "more than %d incomplete lines", DBTRACE_MAX_INCOMPLETE);
	s = free_text(t, text, &nomem);
	if (!s)
		return nomem ? -1 : fail(t, "incomplete needs a description of what the capture could not see");
	t->incomplete[t->h.nincomplete++] = s;
	t->h.incomplete = (const char *const *)t->incomplete;
	return 0;
}

/* ---- Records ---- */

/*
 * strcmp(@a, @b) == 0 for the short words of a record line: a call of
 * libc's strcmp cost a record more than the compare itself.
 */
static int same_word(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* Checks everything before changing any state: a rejected record leaves none. */
static int parse_record(struct dbtrace *t, char **tok, int ntok, struct dbtrace_rec *rec)
{
	struct dbtrace_stream *s;
	struct dbtrace_file *f;
	uint64_t time = DBTRACE_NO_TIME, end, lat = 0;
	uint32_t sid, fid;
	int op, nargs, r, has_lat = 0;

	memset(rec, 0, sizeof(*rec));
	if (ntok < 4)
		return fail(t, "expected 'TIME STREAM FILE OPERATION [ARGUMENTS] [+LATENCY]'");
	if (tok[ntok - 1][0] == '+') {
		if (t->h.version < 2)
			return fail(t, "a latency '%.40s' needs 'dbtrace 2' (this trace is version 1)",
				    tok[ntok - 1]);
		if (t->h.time_unit == DBTRACE_TIME_NONE)
			return fail(t, "a latency '%.40s' in an untimed trace (timeunit none)",
				    tok[ntok - 1]);
		r = parse_dec(tok[ntok - 1] + 1, &lat);
		if (r == -1)
			return fail(t, "bad latency '%.40s'", tok[ntok - 1]);
		if (r == -2)
			return fail(t, "latency '%.40s' is beyond 2^63-1", tok[ntok - 1]);
		has_lat = 1;
		if (--ntok < 4)
			return fail(t, "expected 'TIME STREAM FILE OPERATION [ARGUMENTS] [+LATENCY]'");
	}
	if (tok[0][0] == '-' && !tok[0][1]) {
		if (t->h.time_unit != DBTRACE_TIME_NONE)
			return fail(t, "time '-' in a timed trace (timeunit %s)",
				    unit_names[t->h.time_unit]);
	} else {
		if (tok[0][0] == '-')
			return fail(t, "negative time '%.40s'", tok[0]);
		r = parse_dec(tok[0], &time);
		if (r == -1)
			return fail(t, "bad time '%.40s'", tok[0]);
		if (r == -2)
			return fail(t, "time '%.40s' is beyond 2^63-1", tok[0]);
		if (t->h.time_unit == DBTRACE_TIME_NONE)
			return fail(t, "time '%.40s' in an untimed trace (timeunit none): use '-'", tok[0]);
	}
	if (parse_id(t, tok[1], "stream", DBTRACE_MAX_STREAMS, &sid))
		return -1;
	if (!t->stream_idx[sid])
		return fail(t, "undeclared stream %u", sid);
	s = &t->streams[t->stream_idx[sid] - 1];
	if (parse_id(t, tok[2], "file", DBTRACE_MAX_FILES, &fid))
		return -1;
	if (!t->file_idx[fid])
		return fail(t, "undeclared file %u", fid);
	f = &t->files[t->file_idx[fid] - 1];
	for (op = 0; op < DBTRACE_OP_NR; op++)
		if (same_word(tok[3], op_names[op]))
			break;
	if (op == DBTRACE_OP_NR)
		return fail(t, "unknown operation '%.40s' (read, write, fsync, fdatasync, "
			    "sync_file_range, trim, truncate, create, unlink)", tok[3]);
	nargs = dbtrace_nargs(op);
	if (ntok - 4 != nargs)
		return fail(t, nargs == 2 ? "%s takes OFFSET LENGTH" : nargs == 1 ?
			    "%s takes SIZE" : "%s takes no arguments", op_names[op]);
	if (f->role == DBTRACE_ROLE_DIRECTORY && op != DBTRACE_FSYNC && op != DBTRACE_CREATE &&
	    op != DBTRACE_UNLINK)
		return fail(t, "%s on file %u, a directory (a directory takes fsync, create, unlink)",
			    op_names[op], fid);
	if ((op == DBTRACE_CREATE || op == DBTRACE_UNLINK) && !strcmp(f->path, "."))
		return fail(t, "%s of file %u '.', the target directory itself", op_names[op], fid);
	if (time != DBTRACE_NO_TIME && s->records && time < s->last_time)
		return fail(t, "time %" PRIu64 " goes back from %" PRIu64 " in stream %u",
			    time, s->last_time, sid);
	if (has_lat && lat > DBTRACE_MAX_OFFSET - time)
		return fail(t, "time %" PRIu64 " + latency %" PRIu64 " is beyond 2^63-1", time, lat);

	end = 0;
	if (nargs == 2) {
		if (parse_qty(t, tok[4], "offset", &rec->off) ||
		    parse_qty(t, tok[5], "length", &rec->len))
			return -1;
		if (rec->len == 0 && op != DBTRACE_SYNC_FILE_RANGE)
			return fail(t, "%s of 0 bytes", op_names[op]);
		if ((op == DBTRACE_READ || op == DBTRACE_WRITE) && rec->len > DBTRACE_MAX_IO)
			return fail(t, "%s of %" PRIu64 " bytes, over the limit of %llu", op_names[op],
				    rec->len, (unsigned long long)DBTRACE_MAX_IO);
		if (rec->off > DBTRACE_MAX_OFFSET - rec->len)
			return fail(t, "offset %" PRIu64 " + length %" PRIu64 " is beyond 2^63-1",
				    rec->off, rec->len);
		end = rec->off + rec->len;
		if (end > f->max_size)
			return fail(t, "%s %" PRIu64 "+%" PRIu64 " ends at %" PRIu64
				    ", beyond file %u's max size %" PRIu64, op_names[op], rec->off,
				    rec->len, end, fid, f->max_size);
	} else if (nargs == 1) {
		if (parse_qty(t, tok[4], "size", &rec->size))
			return -1;
		if (rec->size > f->max_size)
			return fail(t, "truncate to %" PRIu64 " is beyond file %u's max size %" PRIu64,
				    rec->size, fid, f->max_size);
		end = rec->size;
	}

	rec->line = t->line;
	rec->time = time;
	rec->stream = sid;
	rec->file = fid;
	rec->op = op;
	rec->has_lat = has_lat;
	rec->lat = lat;
	dbtrace_count_record(t, s, f, rec, end);
	return 0;
}

static int parse_end(struct dbtrace *t, char **tok, int ntok)
{
	uint64_t n;

	if (ntok > 2)
		return fail(t, "expected 'end [RECORDS]'");
	if (ntok == 2) {
		if (parse_dec(tok[1], &n))
			return fail(t, "end: bad record count '%.40s'", tok[1]);
		if (n != t->nrec)
			return fail(t, "end says %" PRIu64 " records, the trace has %" PRIu64,
				    n, t->nrec);
	}
	t->state = ST_END;
	return 0;
}

/* Whether @c is a control character a line may not hold (a tab it may). */
static int is_control(unsigned char c)
{
	return (c < ' ' && c != '\t') || c == 0x7f;
}

/*
 * The first control character of the @len bytes at @p, or NULL. Eight
 * bytes a step: a byte below 0x20 or equal to 0x7f sets the top bit of its
 * lane in @below or @del (the bit tricks of "determine if a word has a
 * byte less than n" and "... a zero byte"), bytes from 0x80 never do; a
 * word that sets one (a tab does) is looked at byte by byte. The byte by
 * byte loop was about a fifth of the parser's instructions a record.
 */
static const unsigned char *find_control(const unsigned char *p, size_t len)
{
	const uint64_t ones = 0x0101010101010101ULL, tops = 0x8080808080808080ULL;
	const unsigned char *end = p + len;

	for (; end - p >= 8; p += 8) {
		uint64_t w, below, del;
		unsigned k;

		memcpy(&w, p, 8);
		below = (w - 0x20 * ones) & ~w & tops;
		del = ((w ^ 0x7f * ones) - ones) & ~(w ^ 0x7f * ones) & tops;
		if (!(below | del))
			continue;
		for (k = 0; k < 8; k++)
			if (is_control(p[k]))
				return p + k;
	}
	for (; p < end; p++)
		if (is_control(*p))
			return p;
	return NULL;
}

/*
 * One line (NUL-terminated in a buffer it may modify, @len bytes): 1 with a
 * record in @rec, 0 for any other good line, -1 on error (t->err).
 */
int dbtrace_parse_line(struct dbtrace *t, char *line, size_t len, struct dbtrace_rec *rec)
{
	char *tok[MAX_TOKENS], *p = line;
	const unsigned char *ctl;
	int ntok = 0;

	if (t->state == ST_RECORDS && dbtrace_fast_records &&
	    dbtrace_fast_record(t, line, len, rec))
		return 1;
	ctl = find_control((const unsigned char *)line, len);
	if (ctl)
		return fail(t, "control character 0x%02x in the line", *ctl);
	if (t->state == ST_MAGIC) {
		if (strncmp(line, "dbtrace ", 8))
			return fail(t, "not a dbtrace trace: the first line must be 'dbtrace 1' or "
				    "'dbtrace 2'");
		if (strcmp(line + 8, "1") && strcmp(line + 8, "2"))
			return fail(t, "unsupported dbtrace version '%.40s' (this parser reads versions "
				    "1 and 2)", line + 8);
		t->h.version = line[8] - '0';
		t->state = ST_HEADER;
		return 0;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || *p == '#')
		return 0;
	if (t->state == ST_END)
		return fail(t, "'%.40s' after the 'end' line", p);
	/* a record's line starts with a digit: the keywords' strncmp are for the header's */
	if (*p == 's' && !strncmp(p, "source", 6) && (!p[6] || p[6] == ' ' || p[6] == '\t')) {
		if (t->state == ST_RECORDS)
			return fail(t, "'source' after the first record (the header comes first)");
		return parse_source(t, p + 6);
	}
	if (*p == 'i' && !strncmp(p, "incomplete", 10) &&
	    (!p[10] || p[10] == ' ' || p[10] == '\t')) {
		if (t->state == ST_RECORDS)
			return fail(t, "'incomplete' after the first record (the header comes first)");
		return parse_incomplete(t, p + 10);
	}
	while (*p) {
		if (ntok == MAX_TOKENS)
			return fail(t, "too many fields");
		tok[ntok++] = p;
		/* no control characters are left: a byte up to ' ' is ' ', a tab or the end */
		while ((unsigned char)*p > ' ')
			p++;
		if (*p)
			*p++ = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
	}
	if ((tok[0][0] >= '0' && tok[0][0] <= '9') || tok[0][0] == '-') {
		if (t->state == ST_HEADER) {
			if (dbtrace_finish_header(t, "record"))
				return -1;
			t->state = ST_RECORDS;
		}
		return parse_record(t, tok, ntok, rec) ? -1 : 1;
	}
	if (!strcmp(tok[0], "end")) {
		if (t->state == ST_HEADER && dbtrace_finish_header(t, "'end'"))
			return -1;
		return parse_end(t, tok, ntok);
	}
	if (!strcmp(tok[0], "pagesize") || !strcmp(tok[0], "timeunit") ||
	    !strcmp(tok[0], "file") || !strcmp(tok[0], "stream")) {
		if (t->state == ST_RECORDS)
			return fail(t, "'%s' after the first record (the header comes first)", tok[0]);
		if (!strcmp(tok[0], "file") || !strcmp(tok[0], "stream")) {
			if (header_keys_done(t, tok[0]))
				return -1;
			return tok[0][0] == 'f' ? parse_file_decl(t, tok, ntok) :
						  parse_stream_decl(t, tok, ntok);
		}
		/* declarations need all three keys: a key after them is a duplicate */
		return parse_header_key(t, tok[0], tok, ntok);
	}
	return fail(t, "unknown line '%.40s' (expected a header line, a record, 'end', '#' or blank)",
		    tok[0]);
}
