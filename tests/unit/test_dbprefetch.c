/*
 * Tests of the trace's reader thread (dbprefetch.h): it gives exactly the
 * records, the end and the error that dbtrace_next() gives on the same
 * trace, with blocks and rings of any size, and stops at once mid-trace.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbprefetch.h"
#include "dbtrace.h"
#include "test.h"

/* A trace of @n records (a bad line in place of record @bad if @bad < n); malloc'd. */
static char *make_trace(unsigned n, unsigned bad, size_t *len)
{
	size_t cap = 256 + (size_t)n * 64, at = 0;
	char *s = malloc(cap);
	unsigned i;

	at += snprintf(s + at, cap - at,
		       "dbtrace 1\npagesize 4096\ntimeunit us\nsource unit test: dbprefetch\n"
		       "file 0 data p64 p64 base/1/1\nfile 1 log 0 p64 pg_wal/1\n"
		       "stream 0 backend\nstream 1 walwriter\n");
	for (i = 0; i < n; i++) {
		if (i == bad)
			at += snprintf(s + at, cap - at, "%u 0 0 reed p1 4096\n", 10 * i);
		else if (i % 5 == 4)
			at += snprintf(s + at, cap - at, "%u 1 1 fdatasync\n", 10 * i);
		else
			at += snprintf(s + at, cap - at, "%u %u %u %s p%u 4096\n", 10 * i,
				       i % 5 == 3, i % 5 == 3, i % 2 ? "read" : "write", i % 64);
	}
	at += snprintf(s + at, cap - at, "end %u\n", n);
	*len = at;
	return s;
}

/* Reads the whole trace both ways and compares; returns the final status. */
static int compare(const char *text, size_t len, unsigned block, unsigned nblocks)
{
	char err[512] = "", err2[512] = "";
	struct dbtrace *a = dbtrace_open_mem(text, len, "t", err, sizeof(err));
	struct dbtrace *b = dbtrace_open_mem(text, len, "t", err2, sizeof(err2));
	struct dbprefetch *p;
	struct dbtrace_rec ra, rb;
	uint64_t n = 0;
	int sa, sb;

	CHECK(a && b);
	if (!a || !b)
		return -2;
	p = dbprefetch_start(b, block, nblocks, err, sizeof(err));
	CHECK(p != NULL);
	if (!p)
		return -2;
	do {
		memset(&ra, 0x5a, sizeof(ra));
		memset(&rb, 0xa5, sizeof(rb));
		sa = dbtrace_next(a, &ra);
		sb = dbprefetch_next(p, &rb);
		CHECK(sa == sb);
		if (sa > 0 && sb > 0) {
			n++;
			CHECK(ra.line == rb.line && ra.time == rb.time && ra.stream == rb.stream &&
			      ra.file == rb.file && ra.op == rb.op && ra.off == rb.off &&
			      ra.len == rb.len && ra.size == rb.size);
		}
	} while (sa > 0 && sb > 0);
	if (sa < 0)
		CHECK_STREQ(dbprefetch_error(p), dbtrace_error(a));
	else
		CHECK_STREQ(dbprefetch_error(p), "");
	/* the end, or the error, stays */
	CHECK(dbprefetch_next(p, &rb) == sb);
	CHECK(dbprefetch_next(p, &rb) == sb);
	dbprefetch_stop(p);
	dbtrace_close(a);
	dbtrace_close(b);
	return sb;
}

TEST(dbprefetch_same_records_any_block_size)
{
	size_t len;
	char *t = make_trace(1000, UINT32_MAX, &len);
	static const unsigned sizes[][2] = {
		{ 0, 0 }, { 1, 1 }, { 1, 2 }, { 3, 2 }, { 7, 3 }, { 256, 8 }, { 999, 2 },
		{ 1000, 1 }, { 1001, 1 }, { 4096, 4 },
	};
	unsigned i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		CHECK(compare(t, len, sizes[i][0], sizes[i][1]) == 0);
	free(t);
}

TEST(dbprefetch_empty_trace)
{
	size_t len;
	char *t = make_trace(0, UINT32_MAX, &len);

	CHECK(compare(t, len, 0, 0) == 0);
	CHECK(compare(t, len, 1, 1) == 0);
	free(t);
}

TEST(dbprefetch_error_after_the_records_before_it)
{
	size_t len;
	char *t = make_trace(600, 517, &len);

	CHECK(compare(t, len, 0, 0) == -1);
	CHECK(compare(t, len, 1, 1) == -1);
	CHECK(compare(t, len, 517, 2) == -1);	/* the error starts a block */
	CHECK(compare(t, len, 5, 3) == -1);
	free(t);
	/* a truncated trace: no "end" line */
	t = make_trace(100, UINT32_MAX, &len);
	CHECK(compare(t, len - 8, 16, 2) == -1);
	free(t);
}

/* Stopped with the reader blocked on a full ring, or before reading anything. */
TEST(dbprefetch_stops_mid_trace)
{
	size_t len;
	char *t = make_trace(5000, UINT32_MAX, &len);
	char err[512];
	struct dbtrace_rec r;
	int k;

	for (k = 0; k < 3; k++) {
		struct dbtrace *d = dbtrace_open_mem(t, len, "t", err, sizeof(err));
		struct dbprefetch *p = dbprefetch_start(d, 4, 2, err, sizeof(err));
		int i;

		CHECK(p != NULL);
		for (i = 0; p && i < k * 10; i++)
			CHECK(dbprefetch_next(p, &r) == 1);
		dbprefetch_stop(p);
		/* the trace stands where the reader left it: still readable */
		CHECK(dbtrace_next(d, &r) == 1);
		dbtrace_close(d);
	}
	dbprefetch_stop(NULL);
	free(t);
}
