/* Tests of the captured depth of a trace's streams (dbdepth.h). */
#include <stdint.h>

#include "dbdepth.h"
#include "test.h"

/*
 * The most records of all streams in flight at once: three synchronous
 * threads whose calls overlap had three requests at the device, though each
 * stream's depth is 1 (what iodepth must allow for the replay to keep them).
 */
TEST(dbdepth_total_across_streams)
{
	struct dbdepth *d = dbdepth_new();
	struct dbtrace_rec r = { .has_lat = 1 };
	static const struct {
		uint32_t stream;
		uint64_t time, lat;
	} c[] = {
		{ 0, 100, 50 }, /* 100-150 */
		{ 1, 110, 50 }, /* 110-160 */
		{ 2, 120, 50 }, /* 120-170: three at once */
		{ 0, 150, 10 }, /* 0's first completed at 150: still three */
		{ 1, 200, 10 }, /* alone */
	};
	unsigned i;

	CHECK(d != NULL);
	if (!d)
		return;
	CHECK(dbdepth_total_max(d) == 0);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		r.stream = c[i].stream;
		r.time = c[i].time;
		r.lat = c[i].lat;
		CHECK(dbdepth_next(d, &r) == 1);
	}
	CHECK(dbdepth_total_max(d) == 3);
	CHECK(dbdepth_max(d, 0) == 1 && dbdepth_max(d, 2) == 1);
	r.has_lat = 0; /* no latency: not counted */
	r.time = 201;
	CHECK(dbdepth_next(d, &r) == 0 && dbdepth_total_max(d) == 3);
	dbdepth_reset(d);
	CHECK(dbdepth_total_max(d) == 0);
	/* beyond DBDEPTH_MAX across streams: DBDEPTH_MAX */
	r.has_lat = 1;
	for (i = 0; i < DBDEPTH_MAX + 10; i++) {
		r.stream = i % 64;
		r.time = 1000 + i;
		r.lat = 1000000;
		dbdepth_next(d, &r);
	}
	CHECK(dbdepth_total_max(d) == DBDEPTH_MAX);
	dbdepth_free(d);
}

/* The captured depth of each record, from issue and completion times. */
TEST(dbdepth_from_completions)
{
	struct dbdepth *d = dbdepth_new();
	struct dbtrace_rec r = { .has_lat = 1 };
	static const struct {
		uint32_t stream;
		uint64_t time, lat;
		int has_lat, want;
	} c[] = {
		{ 0, 100, 50, 1, 1 },  /* completes at 150 */
		{ 0, 110, 10, 1, 2 },  /* 120 */
		{ 0, 115, 100, 1, 3 }, /* 215 */
		{ 1, 116, 1, 1, 1 },   /* another stream: its own */
		{ 0, 120, 5, 1, 3 },   /* 110's completed at 120 (not after): 100, 115 + itself */
		{ 0, 130, 0, 0, 0 },   /* no latency: not known, not counted */
		{ 0, 149, 1, 1, 3 },   /* 150, 215 in flight (125 done) */
		{ 0, 150, 0, 1, 2 },   /* 150 completed at 150: 215 */
		{ 0, 215, 3, 1, 1 },   /* all done */
		{ 0, 218, 2, 1, 1 },   /* sync: the last completed at 218 */
	};
	unsigned i;

	CHECK(d != NULL);
	if (!d)
		return;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		r.stream = c[i].stream;
		r.time = c[i].time;
		r.lat = c[i].lat;
		r.has_lat = c[i].has_lat;
		if (dbdepth_next(d, &r) != c[i].want) {
			printf("  record %u: depth %d\n", i, dbdepth_next(d, &r));
			CHECK(!"depth");
		}
	}
	CHECK(dbdepth_max(d, 0) == 3 && dbdepth_max(d, 1) == 1 && dbdepth_max(d, 2) == 0);
	r.time = DBTRACE_NO_TIME;
	CHECK(dbdepth_next(d, &r) == 0);
	dbdepth_reset(d);
	CHECK(dbdepth_max(d, 0) == 0);
	r.stream = 0;
	r.time = 1;
	r.lat = 1;
	CHECK(dbdepth_next(d, &r) == 1); /* nothing left from before the reset */

	/* beyond DBDEPTH_MAX in flight: counted as DBDEPTH_MAX, exactly after */
	dbdepth_reset(d);
	r.stream = 7;
	for (i = 0; i < DBDEPTH_MAX + 500; i++) {
		int got;

		r.time = 1000 + i;
		r.lat = 1000000; /* all still in flight */
		got = dbdepth_next(d, &r);
		if (got != (int)(i + 1 > DBDEPTH_MAX ? DBDEPTH_MAX : i + 1)) {
			printf("  record %u: depth %d\n", i, got);
			CHECK(!"saturated depth");
			break;
		}
	}
	r.time = 1000000 + 1000 + DBDEPTH_MAX + 200; /* records 0 .. 1224 completed */
	r.lat = 1;
	CHECK(dbdepth_next(d, &r) == DBDEPTH_MAX + 500 - 1225 + 1);
	CHECK(dbdepth_max(d, 7) == DBDEPTH_MAX);
	dbdepth_free(d);
}
