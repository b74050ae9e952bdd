/*
 * Tests of the record lines' fast path (engines/lib/dbtrace_fast.c): it
 * takes the plain good records, hands everything else to the general
 * parser, and a trace read with it gives the same records, the same state
 * and the same error, naming the same line, as one read without it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbtrace.h"
#include "dbtrace_impl.h"
#include "test.h"

/* version 2, timed; line 12 is a good first record, so line 13 is read in ST_RECORDS */
#define HDR                                     \
	"dbtrace 2\n"                           \
	"pagesize 8192\n"                       \
	"timeunit us\n"                         \
	"source unit test: the fast path\n"     \
	"file 0 data 16384 65536 base/1/1234\n" \
	"file 1 log 0 p8 pg_wal/0001\n"         \
	"file 2 directory 0 0 pg_wal\n"         \
	"file 3 directory 0 0 .\n"              \
	"stream 0 backend\n"                    \
	"stream 7 walwriter\n"                  \
	"# records\n"                           \
	"10 0 0 fsync\n"

/* Lines the fast path takes itself (1) or leaves to the general parser (0). */
static const struct {
	const char *line;
	int fast;
} lines[] = {
	{ "12 0 0 read p1 8192", 1 },
	{ "12 7 1 write 0 8192 +35", 1 },
	{ "  12\t0   0 read 8192 p1  ", 1 },
	{ "00012 0 000 read p000001 08192", 1 },
	{ "12 0 0 sync_file_range p1 0", 1 },
	{ "12 0 0 trim 0 1", 1 },
	{ "12 0 1 truncate p8", 1 },
	{ "12 0 2 fsync", 1 },
	{ "12 0 2 create", 1 },
	{ "12 0 2 unlink", 1 },
	{ "12 0 0 fdatasync +0", 1 },
	{ "10 0 0 fsync", 1 },
	{ "999999999999999999 7 0 fsync", 1 },
	/* the general parser's: 19 digits, and everything it refuses */
	{ "9223372036854775807 0 0 fsync", 0 },
	{ "0922337203685477580 0 0 fsync", 0 },
	{ "12 0 0 read 0 9223372036854775807", 0 },
	{ "9 0 0 fsync", 0 },
	{ "12 0 0 frobnicate 0 1", 0 },
	{ "12 0 0 READ 0 1", 0 },
	{ "12 0 0 reads 0 1", 0 },
	{ "12 0 0 trunc 1", 0 },
	{ "12 0 0 fsyncx", 0 },
	{ "12 0 0", 0 },
	{ "12 0 0 read 0 1 2 3 4 5", 0 },
	{ "12 3 0 fsync", 0 },
	{ "12 0 9 fsync", 0 },
	{ "12 x 0 fsync", 0 },
	{ "12 0 99999 fsync", 0 },
	{ "12x 0 0 fsync", 0 },
	{ "-5 0 0 fsync", 0 },
	{ "- 0 0 fsync", 0 },
	{ "12 0 0 read 0", 0 },
	{ "12 0 1 truncate", 0 },
	{ "12 0 0 fsync 0", 0 },
	{ "12 0 0 read -1 8192", 0 },
	{ "12 0 0 read 0 -8192", 0 },
	{ "12 0 0 read 0x10 1", 0 },
	{ "12 0 0 read p 1", 0 },
	{ "12 0 0 read 18446744073709551616 1", 0 },
	{ "12 0 0 read p1125899906842624 1", 0 },
	{ "12 0 0 read p112589990684262 1", 0 },
	{ "12 0 0 read 0 0", 0 },
	{ "12 0 0 trim p1 0", 0 },
	{ "12 0 0 write 0 67108865", 0 },
	{ "12 0 0 read 65536 1", 0 },
	{ "12 0 0 write p7 16384", 0 },
	{ "12 0 0 sync_file_range 65537 0", 0 },
	{ "12 0 1 truncate 65537", 0 },
	{ "12 0 2 read 0 1", 0 },
	{ "12 0 3 fdatasync", 0 },
	{ "12 0 3 unlink", 0 },
	{ "12 0 3 create", 0 },
	{ "12 0 0 read p1 8192 +", 0 },
	{ "12 0 0 read p1 8192 +x", 0 },
	{ "12 0 0 read p1 8192 +9223372036854775800", 0 },
	{ "12 0 0 read p1 8192 +35 +35", 0 },
	{ "12 0 0 read p1 8192 35", 0 },
	{ "12 0 0 read p1 8192:", 0 },
	{ "12 0 0 read p1 /8192", 0 },
	{ "12 0 0 read p1 8192\x7f", 0 },
	{ "12\x1f 0 0 read p1 8192", 0 },
	{ "12 0 0 read p1 8192\xc3\xa9", 0 },
	{ "12 0 0 read p1 8192\r", 0 },
	{ "# 12 0 0 fsync", 0 },
	{ "", 0 },
	{ "end", 0 },
	{ "source late", 0 },
};

struct outcome {
	int status; /* dbtrace_next()'s last: 0 at the end, -1 on an error */
	unsigned n;
	struct dbtrace_rec rec[4];
	char err[640];
	uint64_t extent0, extent1, last_time0, records0;
};

/* Reads @text whole, with the fast path on or off. */
static void read_all(const char *text, int fast, struct outcome *o)
{
	char err[640] = "";
	struct dbtrace *t;
	struct dbtrace_rec r;

	memset(o, 0, sizeof(*o));
	dbtrace_fast_records = fast;
	t = dbtrace_open_mem(text, strlen(text), "t", err, sizeof(err));
	if (!t) {
		o->status = -2;
		snprintf(o->err, sizeof(o->err), "%s", err);
		dbtrace_fast_records = 1;
		return;
	}
	while ((o->status = dbtrace_next(t, &r)) == 1)
		if (o->n < 4)
			o->rec[o->n++] = r;
	snprintf(o->err, sizeof(o->err), "%s", dbtrace_error(t));
	o->extent0 = dbtrace_file_by_id(t, 0)->extent;
	o->extent1 = dbtrace_file_by_id(t, 1)->extent;
	o->last_time0 = dbtrace_stream_by_id(t, 0)->last_time;
	o->records0 = dbtrace_stream_by_id(t, 0)->records;
	dbtrace_close(t);
	dbtrace_fast_records = 1;
}

static int same_rec(const struct dbtrace_rec *a, const struct dbtrace_rec *b)
{
	return a->line == b->line && a->time == b->time && a->stream == b->stream &&
	       a->file == b->file && a->op == b->op && a->off == b->off && a->len == b->len &&
	       a->size == b->size && a->has_lat == b->has_lat && a->lat == b->lat;
}

TEST(dbtrace_fast_path_same_as_general_parser)
{
	char text[1024];
	struct outcome a, b;
	unsigned i, k;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		/* the line, then a good record after it (the state it left is the same) */
		snprintf(text, sizeof(text), HDR "%s\n99 0 0 read p1 8192\nend\n", lines[i].line);
		read_all(text, 1, &a);
		read_all(text, 0, &b);
		CHECK(a.status == b.status && a.n == b.n);
		CHECK_STREQ(a.err, b.err);
		for (k = 0; k < a.n && k < b.n; k++)
			CHECK(same_rec(&a.rec[k], &b.rec[k]));
		CHECK(a.extent0 == b.extent0 && a.extent1 == b.extent1);
		CHECK(a.last_time0 == b.last_time0 && a.records0 == b.records0);
		if (a.status != b.status || strcmp(a.err, b.err))
			fprintf(stderr, "  line '%s': %d '%s' against %d '%s'\n", lines[i].line,
				a.status, a.err, b.status, b.err);
	}
}

/* Which lines the fast path takes: the good ones, so the speed is not lost to fallbacks. */
TEST(dbtrace_fast_path_takes_plain_records)
{
	char err[640] = "", line[256];
	struct dbtrace_rec r;
	unsigned i;
	int got;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct dbtrace *t =
			dbtrace_open_mem(HDR "end\n", strlen(HDR "end\n"), "t", err, sizeof(err));

		CHECK(t != NULL);
		if (!t)
			return;
		snprintf(line, sizeof(line), "%s", lines[i].line);
		got = dbtrace_fast_record(t, line, strlen(line), &r);
		CHECK(got == lines[i].fast);
		if (got != lines[i].fast)
			fprintf(stderr, "  line '%s': %d\n", lines[i].line, got);
		dbtrace_close(t);
	}
}

/* A NUL inside a line is a control character: the general parser names it. */
TEST(dbtrace_fast_path_nul_inside_a_line)
{
	static const char text[] = HDR "12 0 0 fsync\0 junk\nend\n";
	char err[640] = "";
	struct dbtrace_rec r;
	struct dbtrace *t = dbtrace_open_mem(text, sizeof(text) - 1, "t", err, sizeof(err));

	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(dbtrace_next(t, &r) == 1); /* line 12 */
	CHECK(dbtrace_next(t, &r) == -1);
	CHECK_STREQ(dbtrace_error(t), "t line 13: control character 0x00 in the line");
	dbtrace_close(t);
}
