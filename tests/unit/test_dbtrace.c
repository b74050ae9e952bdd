/* Tests of the database page-replay trace parser and writer (dbtrace.h). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "dbtrace.h"
#include "test.h"

/* Lines 1-11; the first record of a test goes on line 12. */
#define HDR								\
	"dbtrace 1\n"							\
	"pagesize 8192\n"						\
	"timeunit us\n"							\
	"source unit test: hand-written\n"				\
	"file 0 data 16384 65536 base/1/1234\n"				\
	"file 1 log 0 p8 pg_wal/0001\n"					\
	"file 2 directory 0 0 pg_wal\n"					\
	"file 3 directory 0 0 .\n"					\
	"file 4 temp - 8192 tmp/t1\n"					\
	"stream 0 backend\n"						\
	"stream 5 walwriter\n"

static char err[1024];

/* Parses @text (memory, named "t"): records, or -1 with the message in err. */
static long parse_n(const char *text, size_t len)
{
	struct dbtrace_rec rec;
	struct dbtrace *t;
	long n = 0;
	int r;

	err[0] = '\0';
	t = dbtrace_open_mem(text, len, "t", err, sizeof(err));
	if (!t)
		return -1;
	while ((r = dbtrace_next(t, &rec)) == 1)
		n++;
	if (r < 0) {
		snprintf(err, sizeof(err), "%s", dbtrace_error(t));
		n = -1;
		/* the error is sticky */
		CHECK(dbtrace_next(t, &rec) == -1);
	} else {
		CHECK(dbtrace_next(t, &rec) == 0);
	}
	dbtrace_close(t);
	return n;
}

static long parse(const char *text)
{
	return parse_n(text, strlen(text));
}

/* @text must fail with exactly @want; a message is one line. */
static void check_error(const char *text, const char *want, int srcline)
{
	if (parse(text) != -1) {
		printf("  (test line %d: parsed without error)\n", srcline);
		test_fail(__FILE__, srcline, "an error was expected");
		return;
	}
	CHECK(!strchr(err, '\n'));
	if (strcmp(err, want))
		test_fail_str(__FILE__, srcline, "error message", err, want);
}

#define BAD(text, want)	check_error(text, want, __LINE__)

static const struct dbtrace_file files[] = {
	{ .id = 0, .role = DBTRACE_ROLE_DATA, .exists = 1, .size = 16384, .max_size = 1 << 20,
	  .path = "base/1/1234" },
	{ .id = 7, .role = DBTRACE_ROLE_LOG, .exists = 1, .size = 0, .max_size = 1 << 24,
	  .path = "pg_wal/000000010000000000000001" },
	{ .id = 2, .role = DBTRACE_ROLE_DIRECTORY, .exists = 1, .path = "pg_wal" },
	{ .id = 3, .role = DBTRACE_ROLE_DIRECTORY, .exists = 1, .path = "." },
	{ .id = 4, .role = DBTRACE_ROLE_TEMP, .exists = 0, .max_size = 100000,
	  .path = "base/pgsql_tmp/pgsql_tmp42.0" },
	{ .id = 5, .role = DBTRACE_ROLE_JOURNAL, .exists = 1, .size = 512, .max_size = 512,
	  .path = "db-journal" },
	{ .id = 6, .role = DBTRACE_ROLE_OTHER, .exists = 1, .size = 10, .max_size = 10,
	  .path = "postmaster.pid" },
};

static const struct dbtrace_stream streams[] = {
	{ .id = 0, .name = "backend-4242" },
	{ .id = 9, .name = "checkpointer" },
};

static const struct dbtrace_rec recs[] = {
	{ .time = 100, .stream = 0, .file = 0, .op = DBTRACE_READ, .off = 8192, .len = 8192 },
	{ .time = 100, .stream = 9, .file = 0, .op = DBTRACE_WRITE, .off = 100, .len = 3 },
	{ .time = 150, .stream = 0, .file = 7, .op = DBTRACE_WRITE, .off = 0, .len = 16384 },
	{ .time = 151, .stream = 0, .file = 7, .op = DBTRACE_FDATASYNC },
	{ .time = 120, .stream = 9, .file = 0, .op = DBTRACE_SYNC_FILE_RANGE, .off = 0, .len = 0 },
	{ .time = 160, .stream = 9, .file = 0, .op = DBTRACE_FSYNC },
	{ .time = 160, .stream = 9, .file = 2, .op = DBTRACE_FSYNC },
	{ .time = 161, .stream = 9, .file = 3, .op = DBTRACE_FSYNC },
	{ .time = 170, .stream = 0, .file = 4, .op = DBTRACE_CREATE },
	{ .time = 171, .stream = 0, .file = 4, .op = DBTRACE_WRITE, .off = 90000, .len = 10000 },
	{ .time = 172, .stream = 0, .file = 4, .op = DBTRACE_TRUNCATE, .size = 4096 },
	{ .time = 173, .stream = 0, .file = 4, .op = DBTRACE_UNLINK },
	{ .time = 180, .stream = 0, .file = 0, .op = DBTRACE_TRIM, .off = 1 << 19, .len = 1 << 19 },
	{ .time = 190, .stream = 0, .file = 5, .op = DBTRACE_READ, .off = 0, .len = 512 },
	{ .time = 191, .stream = 0, .file = 6, .op = DBTRACE_WRITE, .off = 0, .len = 10 },
};
#define NRECS	(sizeof(recs) / sizeof(recs[0]))

static const struct dbtrace_header header = {
	.page_size = 8192,
	.time_unit = DBTRACE_TIME_US,
	.source = "PostgreSQL 15 pgbench -c 2 -T 5, strace -f -ttt -T, hand-checked",
	.files = files,
	.nfiles = sizeof(files) / sizeof(files[0]),
	.streams = streams,
	.nstreams = sizeof(streams) / sizeof(streams[0]),
};

/* Writes the header and records into a malloc'ed buffer (size in *len). */
static char *write_trace(const struct dbtrace_header *h, const struct dbtrace_rec *r,
			 size_t n, size_t *len)
{
	struct dbtrace *w;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	size_t i;

	w = dbtrace_write_header(f, h, err, sizeof(err));
	CHECK(w != NULL);
	if (!w) {
		printf("  %s\n", err);
		fclose(f);
		free(buf);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (dbtrace_write_record(w, &r[i])) {
			printf("  %s\n", dbtrace_error(w));
			CHECK(!"record rejected");
		}
	CHECK(dbtrace_write_end(w) == 0);
	dbtrace_close(w);
	fclose(f);
	return buf;
}

static int same_file(const struct dbtrace_file *a, const struct dbtrace_file *b)
{
	return a->id == b->id && a->role == b->role && a->exists == b->exists &&
	       a->size == b->size && a->max_size == b->max_size && !strcmp(a->path, b->path) &&
	       a->direct == b->direct;
}

static int same_rec(const struct dbtrace_rec *a, const struct dbtrace_rec *b)
{
	return a->time == b->time && a->stream == b->stream && a->file == b->file &&
	       a->has_lat == b->has_lat && a->lat == b->lat &&
	       a->op == b->op && a->off == b->off && a->len == b->len && a->size == b->size;
}

/* Reads @t to the end and compares with @want. */
static void check_trace(struct dbtrace *t, const struct dbtrace_header *want,
			const struct dbtrace_rec *r, size_t n, uint64_t first_line)
{
	const struct dbtrace_header *h = dbtrace_header(t);
	struct dbtrace_rec rec;
	unsigned i;
	size_t k = 0;
	int ret;

	CHECK(h->page_size == want->page_size);
	CHECK(h->time_unit == want->time_unit);
	CHECK_STREQ(h->source, want->source);
	CHECK(h->nfiles == want->nfiles);
	CHECK(h->nstreams == want->nstreams);
	for (i = 0; i < h->nfiles && i < want->nfiles; i++) {
		CHECK(same_file(&h->files[i], &want->files[i]));
		CHECK(dbtrace_file_by_id(t, want->files[i].id) == &h->files[i]);
	}
	for (i = 0; i < h->nstreams && i < want->nstreams; i++) {
		CHECK(h->streams[i].id == want->streams[i].id);
		CHECK_STREQ(h->streams[i].name, want->streams[i].name);
		CHECK(dbtrace_stream_by_id(t, want->streams[i].id) == &h->streams[i]);
	}
	CHECK(dbtrace_file_by_id(t, 1) == NULL);
	CHECK(dbtrace_file_by_id(t, 999999) == NULL);
	CHECK(dbtrace_stream_by_id(t, 1) == NULL);
	while ((ret = dbtrace_next(t, &rec)) == 1) {
		if (k < n) {
			CHECK(same_rec(&rec, &r[k]));
			CHECK(rec.line == first_line + k);
		}
		k++;
	}
	if (ret)
		printf("  %s\n", dbtrace_error(t));
	CHECK(ret == 0);
	CHECK(k == n);
}

TEST(dbtrace_round_trip_memory_and_path)
{
	char *path, *buf;
	size_t len;
	struct dbtrace *t;
	const struct dbtrace_file *f;

	buf = write_trace(&header, recs, NRECS, &len);
	if (!buf)
		return;
	/* offsets that are whole pages are written as pages */
	CHECK(strstr(buf, "\n100 0 0 read p1 8192\n") != NULL);
	CHECK(strstr(buf, "\n100 9 0 write 100 3\n") != NULL);
	CHECK(strstr(buf, "\nfile 4 temp - 100000 base/pgsql_tmp/pgsql_tmp42.0\n") != NULL);
	CHECK(strstr(buf, "\nend 15\n") != NULL);

	t = dbtrace_open_mem(buf, len, "mem", err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		check_trace(t, &header, recs, NRECS, 14);
		f = dbtrace_file_by_id(t, 4);
		CHECK(f && f->extent == 100000);
		f = dbtrace_file_by_id(t, 0);
		CHECK(f && f->extent == 1 << 20);
		CHECK(dbtrace_stream_by_id(t, 9)->records == 5);
		CHECK(dbtrace_stream_by_id(t, 9)->last_time == 161);
		dbtrace_close(t);
	}

	path = test_tmpfile(buf, len);
	t = dbtrace_open(path, err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		check_trace(t, &header, recs, NRECS, 14);
		dbtrace_close(t);
	}
	test_rm(path);
	free(buf);
}

TEST(dbtrace_untimed_round_trip)
{
	struct dbtrace_header h = header;
	struct dbtrace_rec r[NRECS];
	struct dbtrace *t;
	size_t i, len;
	char *buf;

	h.time_unit = DBTRACE_TIME_NONE;
	for (i = 0; i < NRECS; i++) {
		r[i] = recs[i];
		r[i].time = DBTRACE_NO_TIME;
	}
	buf = write_trace(&h, r, NRECS, &len);
	if (!buf)
		return;
	CHECK(strstr(buf, "\ntimeunit none\n") != NULL);
	CHECK(strstr(buf, "\n- 0 0 read p1 8192\n") != NULL);
	t = dbtrace_open_mem(buf, len, "mem", err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		check_trace(t, &h, r, NRECS, 14);
		dbtrace_close(t);
	}
	free(buf);
}

TEST(dbtrace_accepts)
{
	/* comments, blank lines, tabs, CRLF, pages, "end" without a count */
	CHECK(parse(HDR "# a comment\n\n  \t\n12\t0  0 read p1 p1\r\n"
		    "12 5 1 write 0 8192\n  # indented comment\nend\n") == 2);
	/* the last line without its newline, comments after "end" */
	CHECK(parse(HDR "12 0 0 fsync\nend 1\n# done\n\n") == 1);
	CHECK(parse(HDR "12 0 0 fsync\nend 1") == 1);
	/* no records at all */
	CHECK(parse(HDR "end 0\n") == 0);
	CHECK(parse("dbtrace 1\npagesize 512\ntimeunit ns\nsource x\nend\n") == 0);
	/* header keys in any order; same time twice; other streams may go back */
	CHECK(parse("dbtrace 1\nsource a b  c\ntimeunit ms\npagesize 4096\n"
		    "file 9 data 0 4096 a\nstream 1 s1\nstream 2 s2\n"
		    "5 1 9 read 0 1\n5 1 9 read 0 1\n3 2 9 read 0 1\nend 3\n") == 3);
	/* up to the max size; sync_file_range of 0 bytes (to the end of the file) */
	CHECK(parse(HDR "12 0 0 read p7 8192\n12 0 0 sync_file_range 65536 0\n"
		    "12 0 1 truncate 65536\n12 0 4 create\n12 0 2 create\n12 0 2 unlink\n"
		    "12 0 3 fsync\nend 7\n") == 7);
	/* read/write of exactly the limit */
	CHECK(parse("dbtrace 1\npagesize 4096\ntimeunit us\nsource x\n"
		    "file 0 data 0 p32768 f\nstream 0 s\n1 0 0 write 0 67108864\nend\n") == 1);
	/* largest offsets */
	CHECK(parse("dbtrace 1\npagesize 4096\ntimeunit us\nsource x\n"
		    "file 0 data 0 9223372036854775807 f\nstream 0 s\n"
		    "9223372036854775807 0 0 read 9223372036854775806 1\nend\n") == 1);
	/* a directory may hold files; '#' is fine inside a path */
	CHECK(parse("dbtrace 1\npagesize 4096\ntimeunit us\nsource x\n"
		    "file 0 directory 0 0 db\nfile 1 data 0 0 db/t#P#p0.ibd\nfile 2 data 0 0 db2\n"
		    "file 3 data 0 0 db-1\nend\n") == 0);
}

/* "incomplete" lines: read back in order, blanks trimmed; written after source */
TEST(dbtrace_incomplete_lines)
{
	static const char *const holes[] = {
		"io_uring: 15711 io_uring_enter calls, their reads and writes are not in the trace",
		"io_submit: 3 requests strace did not print",
	};
	static const char text[] = "dbtrace 1\nincomplete  a  b \npagesize 512\ntimeunit ns\n"
				   "source x\nincomplete\tc\nfile 0 data 0 0 a\nstream 0 s\n"
				   "1 0 0 fsync\nend\n";
	struct dbtrace_header h = header;
	const struct dbtrace_header *got;
	struct dbtrace *t;
	char *buf, many[64 * 16 + 256];
	size_t len;
	int i, n;

	t = dbtrace_open_mem(text, strlen(text), "t", err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		got = dbtrace_header(t);
		CHECK(got->nincomplete == 2);
		if (got->nincomplete == 2) {
			CHECK_STREQ(got->incomplete[0], "a  b");
			CHECK_STREQ(got->incomplete[1], "c");
		}
		dbtrace_close(t);
	}
	CHECK(dbtrace_header(t = dbtrace_open_mem(HDR "end\n", strlen(HDR "end\n"), "t", err,
						  sizeof(err)))->nincomplete == 0);
	dbtrace_close(t);

	h.incomplete = holes;
	h.nincomplete = 2;
	buf = write_trace(&h, recs, NRECS, &len);
	if (buf) {
		CHECK(strstr(buf, "\nsource PostgreSQL 15 pgbench -c 2 -T 5, strace -f -ttt -T, hand-checked\n"
				  "incomplete io_uring: 15711 io_uring_enter calls") != NULL);
		t = dbtrace_open_mem(buf, len, "t", err, sizeof(err));
		CHECK(t != NULL);
		if (t) {
			got = dbtrace_header(t);
			CHECK(got->nincomplete == 2);
			for (i = 0; i < 2 && i < (int)got->nincomplete; i++)
				CHECK_STREQ(got->incomplete[i], holes[i]);
			check_trace(t, &header, recs, NRECS, 16);
			dbtrace_close(t);
		}
		free(buf);
	}

	BAD("dbtrace 1\nincomplete \t \n",
	    "t line 2: incomplete needs a description of what the capture could not see");
	BAD(HDR "12 0 0 fsync\nincomplete late\n",
	    "t line 13: 'incomplete' after the first record (the header comes first)");
	n = snprintf(many, sizeof(many), "dbtrace 1\n");
	for (i = 0; i <= DBTRACE_MAX_INCOMPLETE; i++)
		n += snprintf(many + n, sizeof(many) - n, "incomplete %d\n", i);
	BAD(many, "t line 66: more than 64 incomplete lines");
	/* a word that starts with the keyword is not the keyword */
	BAD(HDR "incompletely\n",
	    "t line 12: unknown line 'incompletely' (expected a header line, a record, 'end', '#' or blank)");
}

TEST(dbtrace_header_errors)
{
	BAD("", "t line 1: empty input: not a dbtrace trace");
	BAD("hello\n", "t line 1: not a dbtrace trace: the first line must be 'dbtrace 1' or 'dbtrace 2'");
	BAD("# dbtrace 1\n", "t line 1: not a dbtrace trace: the first line must be 'dbtrace 1' or 'dbtrace 2'");
	BAD("dbtrace 3\n", "t line 1: unsupported dbtrace version '3' (this parser reads versions 1 and 2)");
	BAD("dbtrace 2.0\n", "t line 1: unsupported dbtrace version '2.0' (this parser reads versions 1 and 2)");
	BAD("dbtrace 1\n", "t line 2: the trace ends without its 'end' line (truncated?)");
	BAD("dbtrace 1\npagesize 8192\npagesize 8192\n",
	    "t line 3: duplicate pagesize (first on line 2)");
	BAD("dbtrace 1\npagesize 1000\n",
	    "t line 2: pagesize '1000' must be a power of two from 512 to 1048576");
	BAD("dbtrace 1\npagesize 256\n",
	    "t line 2: pagesize '256' must be a power of two from 512 to 1048576");
	BAD("dbtrace 1\npagesize\n", "t line 2: expected 'pagesize BYTES'");
	BAD("dbtrace 1\ntimeunit s\n", "t line 2: unknown time unit 's' (ns, us, ms, none)");
	BAD("dbtrace 1\nsource  \t\n",
	    "t line 2: source needs a description of what was captured and how");
	BAD("dbtrace 1\nsource a\nsource b\n", "t line 3: duplicate source (first on line 2)");
	BAD("dbtrace 1\nfile 0 data 0 0 a\n", "t line 2: file before the header's pagesize line");
	BAD("dbtrace 1\npagesize 512\nsource x\nstream 0 a\n",
	    "t line 4: stream before the header's timeunit line");
	BAD("dbtrace 1\npagesize 512\ntimeunit us\n12 0 0 fsync\n",
	    "t line 4: record before the header's source line");
	BAD("dbtrace 1\npagesize 512\ntimeunit us\nend\n",
	    "t line 4: 'end' before the header's source line");
	BAD(HDR "pagesize 4096\n", "t line 12: duplicate pagesize (first on line 2)");
	BAD(HDR "frobnicate 1\n",
	    "t line 12: unknown line 'frobnicate' (expected a header line, a record, 'end', '#' or blank)");
	BAD(HDR "File 1 data 0 0 x\n",
	    "t line 12: unknown line 'File' (expected a header line, a record, 'end', '#' or blank)");
}

TEST(dbtrace_declaration_errors)
{
	BAD(HDR "file 9 data 0 0\n", "t line 12: expected 'file ID ROLE SIZE MAXSIZE PATH [direct]'");
	BAD(HDR "file 16384 data 0 0 x\n",
	    "t line 12: file id '16384' must be an integer from 0 to 16383");
	BAD(HDR "file -1 data 0 0 x\n",
	    "t line 12: file id '-1' must be an integer from 0 to 16383");
	BAD(HDR "file 1 data 0 0 x\n", "t line 12: file 1 already declared on line 6");
	BAD(HDR "file 9 index 0 0 x\n",
	    "t line 12: file 9: unknown role 'index' (data, log, journal, directory, temp, other)");
	BAD(HDR "file 9 data x 0 x\n",
	    "t line 12: bad file size 'x' (bytes, or pN for N pages)");
	BAD(HDR "file 9 data -5 0 x\n", "t line 12: negative file size '-5'");
	BAD(HDR "file 9 data 0 p9223372036854775807 x\n",
	    "t line 12: file max size 'p9223372036854775807' is beyond 2^63-1 bytes");
	BAD(HDR "file 9 data 0 9223372036854775808 x\n",
	    "t line 12: file max size '9223372036854775808' is beyond 2^63-1 bytes");
	BAD(HDR "file 9 data p2 8192 x\n",
	    "t line 12: file 9: max size 8192 is below its size 16384");
	BAD(HDR "file 9 directory 0 512 x\n",
	    "t line 12: file 9: a directory has size and max size 0");
	BAD(HDR "file 9 data 0 0 /etc/passwd\n",
	    "t line 12: file 9: path '/etc/passwd' is absolute");
	BAD(HDR "file 9 data 0 0 ../x\n", "t line 12: file 9: path '../x' has a '..' component");
	BAD(HDR "file 9 data 0 0 a/../../x\n",
	    "t line 12: file 9: path 'a/../../x' has a '..' component");
	BAD(HDR "file 9 data 0 0 a//b\n", "t line 12: file 9: path 'a//b' has an empty component");
	BAD(HDR "file 9 data 0 0 a/\n", "t line 12: file 9: path 'a/' has an empty component");
	BAD(HDR "file 9 data 0 0 ./a\n", "t line 12: file 9: path './a' has a '.' component");
	BAD(HDR "file 9 data 0 0 .\n",
	    "t line 12: file 9: path '.' is the target directory itself, only a directory may be '.'");
	BAD(HDR "file 9 directory - 0 .\n",
	    "t line 12: file 9: the target directory '.' always exists (size 0, not '-')");
	BAD(HDR "stream 0 x\n", "t line 12: stream 0 already declared on line 10");
	BAD(HDR "stream 4096 x\n", "t line 12: stream id '4096' must be an integer from 0 to 4095");
	BAD(HDR "stream 1 walwriter\n",
	    "t line 12: stream 1: name 'walwriter' already used by stream 5 on line 11");
	BAD(HDR "stream 1\n", "t line 12: expected 'stream ID NAME'");
	BAD(HDR "stream 1 two words\n", "t line 12: expected 'stream ID NAME'");
	/* paths are compared when the header ends, reported at the later declaration */
	BAD(HDR "file 9 data 0 0 base/1/1234\nend\n",
	    "t line 12: file 9: path 'base/1/1234' already declared by file 0 on line 5");
	BAD(HDR "file 9 directory 0 0 pg_wal\n12 0 0 fsync\nend\n",
	    "t line 12: file 9: path 'pg_wal' already declared by file 2 on line 7");
	BAD(HDR "file 9 data 0 0 base/1/1234/x\nend\n",
	    "t line 12: file 9: path 'base/1/1234/x' is below 'base/1/1234', file 0 (line 5) of role data, not a directory");
	BAD(HDR "file 9 log 0 0 base\nend\n",
	    "t line 12: file 9: path 'base' of role log has file 0 'base/1/1234' (line 5) below it");
	/* of two conflicts, the earlier line */
	BAD(HDR "file 8 data 0 0 x\nfile 9 data 0 0 base/1/1234\nfile 10 data 0 0 x\nend\n",
	    "t line 13: file 9: path 'base/1/1234' already declared by file 0 on line 5");
	/* declarations after the first record */
	BAD(HDR "12 0 0 fsync\nfile 9 data 0 0 x\n",
	    "t line 13: 'file' after the first record (the header comes first)");
	BAD(HDR "12 0 0 fsync\nsource again\n",
	    "t line 13: 'source' after the first record (the header comes first)");
}

TEST(dbtrace_record_errors)
{
	BAD(HDR "12 0 0 frobnicate 0 1\n",
	    "t line 12: unknown operation 'frobnicate' (read, write, fsync, fdatasync, "
	    "sync_file_range, trim, truncate, create, unlink)");
	BAD(HDR "12 0 0 READ 0 1\n",
	    "t line 12: unknown operation 'READ' (read, write, fsync, fdatasync, "
	    "sync_file_range, trim, truncate, create, unlink)");
	BAD(HDR "12 0 0\n", "t line 12: expected 'TIME STREAM FILE OPERATION [ARGUMENTS] [+LATENCY]'");
	BAD(HDR "12 0 0 read 0 1 2 3 4 5\n", "t line 12: too many fields");
	BAD(HDR "12 3 0 fsync\n", "t line 12: undeclared stream 3");
	BAD(HDR "12 0 9 fsync\n", "t line 12: undeclared file 9");
	BAD(HDR "12 x 0 fsync\n", "t line 12: stream id 'x' must be an integer from 0 to 4095");
	BAD(HDR "12 0 99999 fsync\n", "t line 12: file id '99999' must be an integer from 0 to 16383");
	BAD(HDR "12x 0 0 fsync\n", "t line 12: bad time '12x'");
	BAD(HDR "-5 0 0 fsync\n", "t line 12: negative time '-5'");
	BAD(HDR "99999999999999999999 0 0 fsync\n",
	    "t line 12: time '99999999999999999999' is beyond 2^63-1");
	BAD(HDR "- 0 0 fsync\n", "t line 12: time '-' in a timed trace (timeunit us)");
	BAD("dbtrace 1\npagesize 512\ntimeunit none\nsource x\nfile 0 data 0 0 a\nstream 0 s\n"
	    "- 0 0 fsync\n5 0 0 fsync\n",
	    "t line 8: time '5' in an untimed trace (timeunit none): use '-'");
	BAD(HDR "12 0 0 read 0\n", "t line 12: read takes OFFSET LENGTH");
	BAD(HDR "12 0 1 truncate\n", "t line 12: truncate takes SIZE");
	BAD(HDR "12 0 0 fsync 0\n", "t line 12: fsync takes no arguments");
	BAD(HDR "12 0 0 read -1 8192\n", "t line 12: negative offset '-1'");
	BAD(HDR "12 0 0 read 0 -8192\n", "t line 12: negative length '-8192'");
	BAD(HDR "12 0 0 read 0x10 1\n", "t line 12: bad offset '0x10' (bytes, or pN for N pages)");
	BAD(HDR "12 0 0 read p 1\n", "t line 12: bad offset 'p' (bytes, or pN for N pages)");
	BAD(HDR "12 0 0 read 18446744073709551616 1\n",
	    "t line 12: offset '18446744073709551616' is beyond 2^63-1 bytes");
	BAD(HDR "12 0 0 read p1125899906842624 1\n",
	    "t line 12: offset 'p1125899906842624' is beyond 2^63-1 bytes");
	BAD(HDR "12 0 0 trim 9223372036854775807 1\n",
	    "t line 12: offset 9223372036854775807 + length 1 is beyond 2^63-1");
	BAD(HDR "12 0 0 trim 1 9223372036854775807\n",
	    "t line 12: offset 1 + length 9223372036854775807 is beyond 2^63-1");
	BAD(HDR "12 0 0 read 0 0\n", "t line 12: read of 0 bytes");
	BAD(HDR "12 0 0 trim p1 0\n", "t line 12: trim of 0 bytes");
	BAD(HDR "12 0 0 write 0 67108865\n",
	    "t line 12: write of 67108865 bytes, over the limit of 67108864");
	BAD(HDR "12 0 0 read 65536 1\n",
	    "t line 12: read 65536+1 ends at 65537, beyond file 0's max size 65536");
	BAD(HDR "12 0 0 write p7 16384\n",
	    "t line 12: write 57344+16384 ends at 73728, beyond file 0's max size 65536");
	BAD(HDR "12 0 0 sync_file_range 65537 0\n",
	    "t line 12: sync_file_range 65537+0 ends at 65537, beyond file 0's max size 65536");
	BAD(HDR "12 0 1 truncate 65537\n",
	    "t line 12: truncate to 65537 is beyond file 1's max size 65536");
	BAD(HDR "12 0 2 read 0 1\n",
	    "t line 12: read on file 2, a directory (a directory takes fsync, create, unlink)");
	BAD(HDR "12 0 3 fdatasync\n",
	    "t line 12: fdatasync on file 3, a directory (a directory takes fsync, create, unlink)");
	BAD(HDR "12 0 3 unlink\n", "t line 12: unlink of file 3 '.', the target directory itself");
	BAD(HDR "12 0 0 fsync\n20 0 0 fsync\n19 0 0 fsync\n",
	    "t line 14: time 19 goes back from 20 in stream 0");
	BAD(HDR "12 0 0 fsync\n", "t line 13: the trace ends without its 'end' line (truncated?)");
	BAD(HDR "12 0 0 fsync\nend 2\n", "t line 13: end says 2 records, the trace has 1");
	BAD(HDR "12 0 0 fsync\nend x\n", "t line 13: end: bad record count 'x'");
	BAD(HDR "12 0 0 fsync\nend 1 2\n", "t line 13: expected 'end [RECORDS]'");
	BAD(HDR "end\n12 0 0 fsync\n", "t line 13: '12 0 0 fsync' after the 'end' line");
	BAD(HDR "end\nend\n", "t line 13: 'end' after the 'end' line");
}

/*
 * The control-character check looks at eight bytes a step: every control
 * character at every place of a line (first byte, the middle of a word,
 * the tail after the last whole word) is found and named, and what is no
 * control character (a tab, 0x80 to 0xff, 0x20 to 0x7e) is not, wherever
 * it sits.
 */
TEST(dbtrace_control_characters_anywhere)
{
	static const unsigned char bad[] = { 0x00, 0x01, 0x08, 0x0a, 0x0b, 0x1f, 0x7f };
	static const unsigned char fine[] = { '\t', ' ', '~', 0x80, 0xc3, 0xa9, 0xff };
	char text[512], want[128];
	size_t k, at, hlen = strlen(HDR);

	for (at = 0; at < 24; at++) {
		for (k = 0; k < sizeof(bad); k++) {
			/* a comment line of 23 bytes: "#" and 22 x's, one of them replaced */
			memcpy(text, HDR, hlen);
			memset(text + hlen, 'x', 23);
			text[hlen] = '#';
			text[hlen + 1 + at % 22] = (char)bad[k];
			memcpy(text + hlen + 23, "\nend\n", 6);
			if (bad[k] == '\n') /* ends the line: what follows it is no line */
				continue;
			snprintf(want, sizeof(want),
				 "t line 12: control character 0x%02x in the line", bad[k]);
			CHECK(parse_n(text, hlen + 28) == -1);
			CHECK_STREQ(err, want);
		}
		for (k = 0; k < sizeof(fine); k++) {
			memcpy(text, HDR, hlen);
			memset(text + hlen, 'x', 23);
			text[hlen] = '#';
			text[hlen + 1 + at % 22] = (char)fine[k];
			memcpy(text + hlen + 23, "\nend\n", 6);
			CHECK(parse_n(text, hlen + 28) == 0);
		}
	}
	/* in a record: a control character in any field, tabs between them */
	BAD(HDR "12\t0\t0\tread\tp1\t8192\x7f\n", "t line 12: control character 0x7f in the line");
	BAD(HDR "1234567\x1f 0 0 read p1 8192\n", "t line 12: control character 0x1f in the line");
	CHECK(parse(HDR "12\t0\t0\tread\tp1\t8192\nend\n") == 1);
}

/* Numbers up to 2^63 - 1 and no further, without a division a digit. */
TEST(dbtrace_numbers_at_the_limit)
{
	CHECK(parse(HDR "9223372036854775807 0 0 fsync\nend\n") == 1);
	BAD(HDR "9223372036854775808 0 0 fsync\n",
	    "t line 12: time '9223372036854775808' is beyond 2^63-1");
	BAD(HDR "9223372036854775810 0 0 fsync\n",
	    "t line 12: time '9223372036854775810' is beyond 2^63-1");
	BAD(HDR "92233720368547758070 0 0 fsync\n",
	    "t line 12: time '92233720368547758070' is beyond 2^63-1");
	CHECK(parse(HDR "0922337203685477580 0 0 fsync\nend\n") == 1);
	BAD(HDR "12x 0 0 fsync\n", "t line 12: bad time '12x'");
	BAD(HDR "12 0 0 read p1 8192:\n",
	    "t line 12: bad length '8192:' (bytes, or pN for N pages)");
	BAD(HDR "12 0 0 read p1 /8192\n",
	    "t line 12: bad length '/8192' (bytes, or pN for N pages)");
}

TEST(dbtrace_line_errors)
{
	char *big = malloc(6000);

	BAD(HDR "# \001\n", "t line 12: control character 0x01 in the line");
	BAD(HDR "12 0 0 fsync\r\r\n", "t line 12: control character 0x0d in the line");
	CHECK(parse_n(HDR "12 0 0 fsync\0x\nend\n", sizeof(HDR "12 0 0 fsync\0x\nend\n") - 1) == -1);
	CHECK_STREQ(err, "t line 12: control character 0x00 in the line");
	/* exactly the limit, then one more byte */
	snprintf(big, 6000, HDR "#%04095d\nend\n", 0);
	CHECK(parse(big) == 0);
	snprintf(big, 6000, HDR "#%04095d\r\nend\n", 0);
	CHECK(parse(big) == 0);
	snprintf(big, 6000, HDR "#%04096d\nend\n", 0);
	BAD(big, "t line 12: line longer than 4096 bytes");
	snprintf(big, 6000, HDR "#%05000d", 0);
	BAD(big, "t line 12: line longer than 4096 bytes");
	free(big);
}

/* Compresses @len bytes into a file; @members > 1 writes that many gzip members. */
static char *gz_file(const char *text, size_t len, int members)
{
	char *path = test_tmpfile("", 0);
	size_t part = len / members, done = 0;
	int m;

	for (m = 0; m < members; m++) {
		gzFile gz = gzopen(path, m ? "ab" : "wb");
		size_t n = m == members - 1 ? len - done : part;

		CHECK(gz != NULL);
		CHECK(gzwrite(gz, text + done, n) == (int)n);
		CHECK(gzclose(gz) == Z_OK);
		done += n;
	}
	return path;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);

	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

TEST(dbtrace_gzip)
{
	struct dbtrace *t;
	char *path, *buf, *gz;
	size_t len, gzlen;
	FILE *f;

	buf = write_trace(&header, recs, NRECS, &len);
	if (!buf)
		return;
	/* by path, in one member and in three */
	path = gz_file(buf, len, 1);
	t = dbtrace_open(path, err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		check_trace(t, &header, recs, NRECS, 14);
		dbtrace_close(t);
	}
	/* from memory, and from a FILE whose first bytes are already buffered */
	gz = slurp(path, &gzlen);
	t = dbtrace_open_mem(gz, gzlen, "gzmem", err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		check_trace(t, &header, recs, NRECS, 14);
		dbtrace_close(t);
	}
	f = fopen(path, "rb");
	CHECK(fgetc(f) == 0x1f && ungetc(0x1f, f) == 0x1f);
	t = dbtrace_open_file(f, "gzfile", err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		check_trace(t, &header, recs, NRECS, 14);
		dbtrace_close(t);
	}
	fclose(f);
	test_rm(path);

	path = gz_file(buf, len, 3);
	t = dbtrace_open(path, err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		check_trace(t, &header, recs, NRECS, 14);
		dbtrace_close(t);
	}
	test_rm(path);

	/* garbage after the stream; a corrupt stream */
	gz = realloc(gz, gzlen + 4);
	memcpy(gz + gzlen, "junk", 4);
	CHECK(parse_n(gz, gzlen + 4) == -1);
	CHECK_STREQ(err, "t line 30: data after the end of the gzip stream");
	gz[gzlen / 2] ^= 0x55;
	gz[gzlen / 2 + 1] ^= 0x55;
	CHECK(parse_n(gz, gzlen) == -1);
	CHECK(strstr(err, "corrupt gzip stream") || strstr(err, "line"));
	CHECK(!strncmp(err, "t line ", 7) && !strchr(err, '\n'));
	free(gz);
	free(buf);
}

TEST(dbtrace_truncated_gzip)
{
	char *path, *buf, *gz, want[128];
	size_t len, gzlen, cut;

	buf = write_trace(&header, recs, NRECS, &len);
	if (!buf)
		return;
	path = gz_file(buf, len, 1);
	gz = slurp(path, &gzlen);
	/* the whole text decompresses, only the 8-byte trailer is missing */
	CHECK(parse_n(gz, gzlen - 8) == -1);
	CHECK_STREQ(err, "t line 30: truncated gzip stream (the compressed data ends early)");
	/* plain text cut at the same place parses the same records: the gzip
	 * check is what tells a truncated trace from a clean end */
	for (cut = 10; cut < gzlen - 8; cut += 7) {
		CHECK(parse_n(gz, cut) == -1);
		CHECK(strstr(err, "truncated gzip stream") != NULL);
		CHECK(!strncmp(err, "t line ", 7) && !strchr(err, '\n'));
	}
	/* the complete file is fine */
	CHECK(parse_n(gz, gzlen) == (long)NRECS);
	/* a plain trace cut before its end line */
	snprintf(want, sizeof(want), "t line 29: the trace ends without its 'end' line (truncated?)");
	CHECK(parse_n(buf, strstr(buf, "end 15") - buf) == -1);
	CHECK_STREQ(err, want);
	test_rm(path);
	free(gz);
	free(buf);
}

/* Version 2: a file's "direct" flag and a record's "+LATENCY". */
#define HDR2								\
	"dbtrace 2\n"							\
	"pagesize 4096\n"						\
	"timeunit us\n"							\
	"source unit test: version 2\n"					\
	"file 0 data 0 p16 d direct\n"					\
	"file 1 log - 65536 l\n"						\
	"file 2 directory 0 0 .\n"					\
	"stream 0 s0\n"							\
	"stream 1 s1\n"

TEST(dbtrace_version2)
{
	static const char text[] = HDR2
		"10 0 0 read p1 4096 +25\n"
		"11 0 0 read p2 4096\n"
		"12 1 1 write 0 512 +0\n"
		"13 1 1 fdatasync\t+100\n"
		"14 0 2 fsync +7\n"
		"end 5\n";
	struct dbtrace_rec rec;
	struct dbtrace *t = dbtrace_open_mem(text, sizeof(text) - 1, "t", err, sizeof(err));
	const struct dbtrace_header *h;

	CHECK(t != NULL);
	if (!t)
		return;
	h = dbtrace_header(t);
	CHECK(h->version == 2);
	CHECK(dbtrace_file_by_id(t, 0)->direct == 1);
	CHECK(dbtrace_file_by_id(t, 1)->direct == 0);
	CHECK(dbtrace_next(t, &rec) == 1 && rec.has_lat && rec.lat == 25 && rec.time == 10);
	CHECK(dbtrace_next(t, &rec) == 1 && !rec.has_lat && rec.lat == 0);
	CHECK(dbtrace_next(t, &rec) == 1 && rec.has_lat && rec.lat == 0 && rec.len == 512);
	CHECK(dbtrace_next(t, &rec) == 1 && rec.has_lat && rec.lat == 100 &&
	      rec.op == DBTRACE_FDATASYNC);
	CHECK(dbtrace_next(t, &rec) == 1 && rec.has_lat && rec.lat == 7);
	CHECK(dbtrace_next(t, &rec) == 0);
	dbtrace_close(t);

	/* version 1 keeps parsing as before; a version-1 trace reports 1 */
	t = dbtrace_open_mem(HDR "end\n", strlen(HDR "end\n"), "t", err, sizeof(err));
	CHECK(t != NULL && dbtrace_header(t)->version == 1);
	dbtrace_close(t);

	/* the additions are errors in a version-1 trace, with the version named */
	BAD(HDR "file 9 data 0 0 x direct\n",
	    "t line 12: file 9: 'direct' needs 'dbtrace 2' (this trace is version 1)");
	BAD(HDR "12 0 0 read 0 1 +5\n",
	    "t line 12: a latency '+5' needs 'dbtrace 2' (this trace is version 1)");
	BAD(HDR2 "file 9 data 0 0 x Direct\n", "t line 10: file 9: unknown flag 'Direct' (direct)");
	BAD(HDR2 "file 9 data 0 0 x direct 1\n",
	    "t line 10: expected 'file ID ROLE SIZE MAXSIZE PATH [direct]'");
	BAD(HDR2 "file 9 directory 0 0 x direct\n",
	    "t line 10: file 9: a directory is not read or written: no 'direct'");
	BAD(HDR2 "10 0 0 read 0 1 +x\n", "t line 10: bad latency '+x'");
	BAD(HDR2 "10 0 0 read 0 1 +\n", "t line 10: bad latency '+'");
	BAD(HDR2 "10 0 0 read 0 1 +-1\n", "t line 10: bad latency '+-1'");
	BAD(HDR2 "10 0 0 read 0 1 +99999999999999999999\n",
	    "t line 10: latency '+99999999999999999999' is beyond 2^63-1");
	BAD(HDR2 "9223372036854775800 0 0 read 0 1 +8\n",
	    "t line 10: time 9223372036854775800 + latency 8 is beyond 2^63-1");
	BAD(HDR2 "10 0 0 read 0 1 +1 +2\n", "t line 10: read takes OFFSET LENGTH");
	BAD(HDR2 "10 0 0 fsync +1 0\n", "t line 10: fsync takes no arguments");
	BAD(HDR2 "10 0 0 +1\n",
	    "t line 10: expected 'TIME STREAM FILE OPERATION [ARGUMENTS] [+LATENCY]'");
	BAD("dbtrace 2\npagesize 4096\ntimeunit none\nsource x\nfile 0 data 0 9 d\n"
	    "stream 0 s\n- 0 0 read 0 1 +3\n",
	    "t line 7: a latency '+3' in an untimed trace (timeunit none)");
}

TEST(dbtrace_version2_round_trip)
{
	static const struct dbtrace_file files[] = {
		{ .id = 3, .role = DBTRACE_ROLE_DATA, .exists = 1, .size = 8192, .max_size = 8192,
		  .path = "a", .direct = 1 },
		{ .id = 4, .role = DBTRACE_ROLE_LOG, .exists = 1, .size = 0, .max_size = 4096,
		  .path = "b" },
	};
	static const struct dbtrace_stream streams[] = { { .id = 0, .name = "t" } };
	struct dbtrace_header h = {
		.version = 2, .page_size = 4096, .time_unit = DBTRACE_TIME_NS, .source = "rt",
		.files = files, .nfiles = 2, .streams = streams, .nstreams = 1,
	};
	struct dbtrace_rec r[] = {
		{ .time = 5, .file = 3, .op = DBTRACE_READ, .off = 0, .len = 4096, .has_lat = 1,
		  .lat = 1000 },
		{ .time = 6, .file = 4, .op = DBTRACE_WRITE, .off = 1, .len = 10 },
		{ .time = 6, .file = 4, .op = DBTRACE_FSYNC, .has_lat = 1, .lat = 0 },
	}, got;
	struct dbtrace *t;
	size_t len, i;
	char *buf = write_trace(&h, r, 3, &len), *w1;
	FILE *f;

	CHECK(buf != NULL);
	if (!buf)
		return;
	CHECK(strstr(buf, "dbtrace 2\n") == buf);
	CHECK(strstr(buf, "file 3 data 8192 8192 a direct\n") != NULL);
	CHECK(strstr(buf, "5 0 3 read p0 4096 +1000\n") != NULL);
	CHECK(strstr(buf, "6 0 4 fsync +0\n") != NULL);
	t = dbtrace_open_mem(buf, len, "t", err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		CHECK(same_file(dbtrace_file_by_id(t, 3), &files[0]));
		CHECK(same_file(dbtrace_file_by_id(t, 4), &files[1]));
		for (i = 0; i < 3; i++)
			CHECK(dbtrace_next(t, &got) == 1 && same_rec(&got, &r[i]));
		dbtrace_close(t);
	}
	free(buf);

	/* a version-1 writer refuses what version 1 cannot say, and writes nothing */
	h.version = 0;
	f = open_memstream(&w1, &len);
	CHECK(dbtrace_write_header(f, &h, err, sizeof(err)) == NULL);
	CHECK(!strcmp(err, "output line 5: file 3: 'direct' needs 'dbtrace 2' (this trace is version 1)"));
	h.nfiles = 0;
	{
		static const struct dbtrace_file plain = { .id = 4, .role = DBTRACE_ROLE_LOG,
			.exists = 1, .max_size = 4096, .path = "b" };
		struct dbtrace *w;

		h.files = &plain;
		h.nfiles = 1;
		w = dbtrace_write_header(f, &h, err, sizeof(err));
		CHECK(w != NULL);
		if (w) {
			CHECK(dbtrace_write_record(w, &r[2]) == -1);
			CHECK(strstr(dbtrace_error(w), "needs 'dbtrace 2'") != NULL);
			dbtrace_close(w);
		}
	}
	fclose(f);
	CHECK(strstr(w1, "+0") == NULL);
	free(w1);
}

TEST(dbtrace_writer_checks)
{
	struct dbtrace_file bad_files[2] = { files[0], files[2] };
	struct dbtrace_header h = header;
	struct dbtrace_rec r;
	struct dbtrace *w;
	char *buf = NULL;
	size_t len;
	FILE *f;

	/* a bad header writes nothing */
	f = open_memstream(&buf, &len);
	bad_files[1].path = "../../etc";
	h.files = bad_files;
	h.nfiles = 2;
	CHECK(dbtrace_write_header(f, &h, err, sizeof(err)) == NULL);
	CHECK_STREQ(err, "output line 6: file 2: path '../../etc' has a '..' component");
	h.source = "two\nlines";
	CHECK(dbtrace_write_header(f, &h, err, sizeof(err)) == NULL);
	CHECK_STREQ(err, "output line 4: control character 0x0a in the line");
	bad_files[1].path = "base/1/1234";
	h.source = header.source;
	CHECK(dbtrace_write_header(f, &h, err, sizeof(err)) == NULL);
	CHECK_STREQ(err, "output line 6: file 2: path 'base/1/1234' already declared by file 0 on line 5");
	fflush(f);
	CHECK(len == 0);

	/* a bad record writes nothing and the writer carries on */
	w = dbtrace_write_header(f, &header, err, sizeof(err));
	CHECK(w != NULL);
	if (!w)
		return;
	r = recs[0];
	CHECK(dbtrace_write_record(w, &r) == 0);
	r.file = 1;
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK_STREQ(dbtrace_error(w), "output line 15: undeclared file 1");
	r.file = 0;
	r.time = 99;
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK_STREQ(dbtrace_error(w), "output line 15: time 99 goes back from 100 in stream 0");
	r.time = DBTRACE_NO_TIME;
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK_STREQ(dbtrace_error(w), "output line 15: time '-' in a timed trace (timeunit us)");
	r.time = 200;
	r.off = 1 << 20;
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK_STREQ(dbtrace_error(w),
		    "output line 15: read 1048576+8192 ends at 1056768, beyond file 0's max size 1048576");
	r.off = 0;
	r.op = DBTRACE_OP_NR;
	CHECK(dbtrace_write_record(w, &r) == -1);
	r.op = DBTRACE_FSYNC;
	CHECK(dbtrace_write_record(w, &r) == 0);
	CHECK(dbtrace_write_end(w) == 0);
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK(dbtrace_write_end(w) == -1);
	dbtrace_close(w);
	fclose(f);
	CHECK(buf && strstr(buf, "\n100 0 0 read p1 8192\n200 0 0 fsync\nend 2\n") != NULL);
	CHECK(parse(buf) == 2);
	free(buf);
}

TEST(dbtrace_open_errors)
{
	CHECK(dbtrace_open("/nonexistent/trace", err, sizeof(err)) == NULL);
	CHECK_STREQ(err, "cannot open /nonexistent/trace: No such file or directory");
}

TEST(dbtrace_span_and_paths)
{
	struct dbtrace_file fs[3] = { files[0], files[2], files[4] };
	struct dbtrace_header h = { .page_size = 4096, .files = fs, .nfiles = 3 };
	char why[128];
	uint64_t total;

	/* directories take no room; each file rounded up to the alignment */
	CHECK(dbtrace_span(&h, 0, &total) == 0 && total == (1 << 20) + 100000);
	CHECK(dbtrace_span(&h, 4096, &total) == 0 && total == (1 << 20) + 102400);
	fs[0].max_size = INT64_MAX - 50000;
	CHECK(dbtrace_span(&h, 1, &total) == -1);
	fs[0].max_size = INT64_MAX;
	fs[2].max_size = 0;
	CHECK(dbtrace_span(&h, 1, &total) == 0 && total == INT64_MAX);
	CHECK(dbtrace_span(&h, 4096, &total) == -1);

	CHECK(dbtrace_path_check("a/b.c", DBTRACE_ROLE_DATA, why, sizeof(why)) == 0);
	CHECK(dbtrace_path_check("...", DBTRACE_ROLE_DATA, why, sizeof(why)) == 0);
	CHECK(dbtrace_path_check(".", DBTRACE_ROLE_DIRECTORY, why, sizeof(why)) == 0);
	CHECK(dbtrace_path_check("", DBTRACE_ROLE_DATA, why, sizeof(why)) == -1);
	CHECK_STREQ(why, "is empty");
	CHECK(dbtrace_path_check("a b", DBTRACE_ROLE_DATA, why, sizeof(why)) == -1);
	CHECK_STREQ(why, "has a blank or control character");
	CHECK(dbtrace_path_check("a/..", DBTRACE_ROLE_DATA, why, sizeof(why)) == -1);
	CHECK(dbtrace_path_check("//x", DBTRACE_ROLE_DATA, why, sizeof(why)) == -1);
	CHECK_STREQ(why, "is absolute");

	CHECK_STREQ(dbtrace_op_name(DBTRACE_SYNC_FILE_RANGE), "sync_file_range");
	CHECK_STREQ(dbtrace_role_name(DBTRACE_ROLE_JOURNAL), "journal");
	CHECK_STREQ(dbtrace_time_unit_name(DBTRACE_TIME_NONE), "none");
	CHECK(dbtrace_time_unit_ns(DBTRACE_TIME_MS) == 1000000);
}

/* Resident set size in bytes (Linux). */
static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

/*
 * A million records through the writer and back through the parser. The
 * parser allocates only while reading the header: the heap in use is the
 * same after the last record as after the first (mallinfo2; meaningless
 * but harmless under ASan), and the resident set does not grow - under ASan
 * freed memory sits in quarantine, so even per-record malloc/free would show.
 */
TEST(dbtrace_million_records_flat_memory)
{
	const uint64_t n = 1000000;
	struct dbtrace_rec r = { 0 }, got;
	struct dbtrace *w, *t;
	char *path = test_tmpfile("", 0);
	FILE *f = fopen(path, "w");
	size_t heap_first = 0;
	long rss_first = 0;
	uint64_t i, k = 0;
	int ret;

	w = dbtrace_write_header(f, &header, err, sizeof(err));
	CHECK(w != NULL);
	if (!w)
		return;
	for (i = 0; i < n; i++) {
		r.time = i / 3;
		r.stream = i % 2 ? 9 : 0;
		r.file = i % 5 ? 0 : 7;
		r.op = i % 7 ? DBTRACE_READ : DBTRACE_WRITE;
		r.off = (i * 8192) % (1 << 20);
		r.len = 8192;
		if (dbtrace_write_record(w, &r)) {
			CHECK(!"writer rejected a record");
			break;
		}
	}
	CHECK(dbtrace_write_end(w) == 0);
	dbtrace_close(w);
	fclose(f);

	t = dbtrace_open(path, err, sizeof(err));
	CHECK(t != NULL);
	if (!t) {
		test_rm(path);
		return;
	}
	while ((ret = dbtrace_next(t, &got)) == 1) {
		if (++k == 1000) {
			rss_first = rss_bytes();	/* first: glibc keeps what its first fscanf() allocates */
			heap_first = mallinfo2().uordblks;
		}
		if (got.line != 13 + k) {
			CHECK(got.line == 13 + k);
			break;
		}
	}
	CHECK(ret == 0);
	CHECK(k == n);
	CHECK(mallinfo2().uordblks == heap_first);
	CHECK(rss_bytes() - rss_first < 4 << 20);
	CHECK(dbtrace_stream_by_id(t, 9)->records == n / 2);
	CHECK(dbtrace_file_by_id(t, 0)->extent == 1 << 20);
	dbtrace_close(t);
	test_rm(path);
}

TEST(dbtrace_open_fd_takes_the_descriptor)
{
	static const char text[] = "dbtrace 1\npagesize 4096\ntimeunit none\nsource t\n"
				   "file 0 data p1 p1 db\nstream 0 a\n- 0 0 read 0 4096\nend 1\n";
	char *path = test_tmpfile(text, sizeof(text) - 1), err[256];
	struct dbtrace_rec r;
	struct dbtrace *t;
	int fd = open(path, O_RDONLY);

	t = dbtrace_open_fd(fd, "named.trace", err, sizeof(err));
	CHECK(t != NULL);
	if (t) {
		CHECK(dbtrace_next(t, &r) == 1 && r.op == DBTRACE_READ);
		CHECK(dbtrace_next(t, &r) == 0);
		dbtrace_close(t);
	}
	/* closed by dbtrace_close */
	CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
	/* a bad descriptor: an error naming the trace, nothing leaked */
	CHECK(dbtrace_open_fd(-1, "named.trace", err, sizeof(err)) == NULL);
	CHECK(strncmp(err, "named.trace: ", 13) == 0);
	test_rm(path);
}
