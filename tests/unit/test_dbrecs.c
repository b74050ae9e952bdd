/*
 * Tests of the kept records (dbrecs.h): every record comes back exactly as
 * it was added, over block boundaries and after a rewind, with the
 * format's extreme values; a set that would pass its cap refuses.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbrecs.h"
#include "dbtrace.h"
#include "test.h"

static int same_rec(const struct dbtrace_rec *a, const struct dbtrace_rec *b)
{
	return a->line == b->line && a->time == b->time && a->stream == b->stream &&
	       a->file == b->file && a->op == b->op && a->off == b->off && a->len == b->len &&
	       a->size == b->size && a->has_lat == b->has_lat && a->lat == b->lat;
}

/* Record @i of a made-up trace: every operation, times that go back across streams. */
static void make_rec(uint64_t i, int timed, uint32_t page, struct dbtrace_rec *r)
{
	uint64_t h = i * 0x9e3779b97f4a7c15ULL;

	memset(r, 0, sizeof(*r));
	r->line = 12 + i + (h >> 60);
	r->time = timed ? 1000 * i + (h >> 50) : DBTRACE_NO_TIME;
	r->stream = (uint32_t)(h >> 20) % DBTRACE_MAX_STREAMS;
	r->file = (uint32_t)(h >> 33) % DBTRACE_MAX_FILES;
	r->op = (enum dbtrace_op)(i % DBTRACE_OP_NR);
	if (dbtrace_nargs(r->op) == 2) {
		/* whole pages, or not */
		r->off = i % 3 ? (h >> 40) * page : (h >> 30) + 1;
		r->len = i % 5 ? page * (1 + i % 16) : 1 + (h >> 52);
	} else if (dbtrace_nargs(r->op) == 1) {
		r->size = i % 2 ? (h >> 40) * page : h >> 35;
	}
	if (timed && i % 4 == 0) {
		r->has_lat = 1;
		r->lat = h >> (20 + i % 40);
	}
}

TEST(dbrecs_round_trip)
{
	static const uint32_t pages[] = { 512, 8192, 1U << 20 };
	struct dbtrace_rec in, out;
	unsigned k, timed;
	uint64_t i, n = 300000; /* several 1 MiB blocks */

	for (k = 0; k < 3; k++)
		for (timed = 0; timed < 2; timed++) {
			struct dbrecs *s = dbrecs_new(pages[k], 64U << 20);
			int pass, ok = 1;

			CHECK(s != NULL);
			if (!s)
				return;
			for (i = 0; i < n; i++) {
				make_rec(i, timed, pages[k], &in);
				ok &= dbrecs_add(s, &in) == 0;
			}
			CHECK(ok);
			CHECK(dbrecs_count(s) == n);
			CHECK(dbrecs_bytes(s) > (1U << 20) && dbrecs_bytes(s) <= 24 * n);
			for (pass = 0; pass < 2; pass++) {
				for (i = 0; i < n && ok; i++) {
					make_rec(i, timed, pages[k], &in);
					ok &= dbrecs_next(s, &out) == 1 && same_rec(&in, &out);
				}
				CHECK(ok);
				CHECK(dbrecs_next(s, &out) == 0);
				CHECK(dbrecs_next(s, &out) == 0);
				dbrecs_rewind(s);
			}
			dbrecs_free(s);
		}
}

/* The largest values the parser gives: offsets, sizes and times up to 2^63 - 1. */
TEST(dbrecs_extremes)
{
	const uint64_t max = DBTRACE_MAX_OFFSET;
	struct dbtrace_rec in[6], out;
	struct dbrecs *s = dbrecs_new(4096, 8U << 20);
	unsigned i;

	memset(in, 0, sizeof(in));
	in[0] = (struct dbtrace_rec){
		.line = 1, .time = max, .op = DBTRACE_READ, .off = max - 4096, .len = 4096
	};
	in[1] = (struct dbtrace_rec){ .line = 2,
				      .time = 0,
				      .stream = DBTRACE_MAX_STREAMS - 1,
				      .file = DBTRACE_MAX_FILES - 1,
				      .op = DBTRACE_TRIM,
				      .off = 1,
				      .len = max - 1,
				      .has_lat = 1,
				      .lat = max };
	in[2] = (struct dbtrace_rec){
		.line = UINT64_MAX - 1, .time = max, .op = DBTRACE_TRUNCATE, .size = max
	};
	in[3] = (struct dbtrace_rec){ .line = UINT64_MAX,
				      .time = 0,
				      .op = DBTRACE_SYNC_FILE_RANGE };
	in[4] = (struct dbtrace_rec){
		.line = UINT64_MAX, .time = max, .op = DBTRACE_UNLINK, .has_lat = 1, .lat = 0
	};
	CHECK(s != NULL);
	if (!s)
		return;
	for (i = 0; i < 5; i++)
		CHECK(dbrecs_add(s, &in[i]) == 0);
	for (i = 0; i < 5; i++)
		CHECK(dbrecs_next(s, &out) == 1 && same_rec(&in[i], &out));
	CHECK(dbrecs_next(s, &out) == 0);
	dbrecs_free(s);
}

/* A cap of two blocks: the records that fill them are kept, the next is refused. */
TEST(dbrecs_cap)
{
	struct dbtrace_rec r;
	struct dbrecs *s = dbrecs_new(8192, 2U << 20);
	uint64_t i = 0;

	CHECK(s != NULL);
	if (!s)
		return;
	do
		make_rec(i, 1, 8192, &r);
	while (dbrecs_add(s, &r) == 0 && ++i < 10000000);
	CHECK(i > 100000 && i < 10000000);
	CHECK(dbrecs_count(s) == i);
	CHECK(dbrecs_bytes(s) == 2U << 20);
	dbrecs_free(s);
	s = dbrecs_new(8192, 0);
	CHECK(s && dbrecs_add(s, &r) == -1 && dbrecs_count(s) == 0);
	dbrecs_free(s);
	dbrecs_free(NULL);
}

/* Records added after reading began come back too, in a block being read and in new ones. */
TEST(dbrecs_add_while_reading)
{
	struct dbtrace_rec in, out;
	struct dbrecs *s = dbrecs_new(8192, 64U << 20);
	uint64_t added = 0, read = 0, i;
	int ok = 1;

	CHECK(s != NULL);
	if (!s)
		return;
	/* rounds of adds then reads, past the first 1 MiB block */
	while (added < 250000) {
		uint64_t more = added < 100 ? 7 : 30011;

		for (i = 0; i < more; i++, added++) {
			make_rec(added, 1, 8192, &in);
			ok &= dbrecs_add(s, &in) == 0;
		}
		for (; read < added - (added > 50 ? 5 : 0); read++) {
			make_rec(read, 1, 8192, &in);
			ok &= dbrecs_next(s, &out) == 1 && same_rec(&in, &out);
		}
	}
	for (; read < added; read++) {
		make_rec(read, 1, 8192, &in);
		ok &= dbrecs_next(s, &out) == 1 && same_rec(&in, &out);
	}
	CHECK(ok);
	CHECK(dbrecs_bytes(s) > (1U << 20));
	CHECK(dbrecs_next(s, &out) == 0);
	dbrecs_free(s);
}
