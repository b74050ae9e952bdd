/*
 * Tests of the hdd model (tools/moddev/model_hdd.c, hddgeom.c) in
 * simulated time: the seek curve through the datasheet's three figures,
 * the platter's angle kept in time, zones, queue reordering, the segment
 * cache; and the datasheet truths the issue holds a drive to (random 4 KiB
 * reads at depth 1, sequential 1 MiB reads, depth 32 against depth 1).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "devsched.h"
#include "hddgeom.h"
#include "moddev_sim.h"
#include "test.h"

#define GIB (1ULL << 30)

/* A 10k rpm drive of the Raptor's class (rev 6 ms). */
#define DRIVE                                                                            \
	"hdd:rpm=10000,seek_track_ms=0.6,seek_avg_ms=4.5,seek_full_ms=10,outer_mbps=90," \
	"inner_mbps=54"

TEST(moddev_hdd_seek_curve_goes_through_the_datasheet)
{
	struct hdd_geom g;
	char err[256] = "";
	double prev = 0, t, d;
	unsigned k;

	CHECK(hdd_geom_init(&g, 10000, 90e6, 54e6, 16, GIB, 0.6e6, 4.5e6, 10e6, err, sizeof(err)) ==
	      0);
	CHECK(fabs(g.rev_ns - 6e6) < 1e-6);
	/* one track, the full stroke, and the datasheet's weighted average */
	CHECK(fabs(hdd_seek_ns(&g, 1) - 0.6e6) < 1);
	CHECK(fabs(hdd_seek_ns(&g, g.tracks - 1) - 10e6) < 1);
	CHECK(fabs(hdd_seek_mean_ns(&g) - 4.5e6) < 10);
	CHECK(hdd_seek_ns(&g, 0) == 0);
	/* it rises all the way, and the two pieces meet */
	for (k = 1; k < g.tracks; k += 7) {
		t = hdd_seek_ns(&g, k);
		CHECK(t >= prev);
		prev = t;
	}
	CHECK(g.d0 > g.dmin && g.d0 < 1);
	d = g.d0;
	CHECK(fabs((g.a + g.b * sqrt(d)) - (g.c + g.e * d)) < 1e-3);
	/* zones: the datasheet's rates at the edges, the position continuous across them */
	CHECK(fabs(hdd_rate_at(&g, 0) - 90e6) < 1);
	CHECK(fabs(hdd_rate_at(&g, GIB - 1) - 54e6) < 1);
	CHECK(fabs(hdd_tp(&g, GIB) - g.tracks) < 0.01);
	for (k = 1; k < 16; k++) {
		uint64_t edge = g.zone[k].start;

		CHECK(fabs(hdd_tp(&g, edge) - hdd_tp(&g, edge - 1) -
			   1 / g.zone[k - 1].track_bytes) < 1e-6);
	}
	for (k = 0; k < 100; k++) {
		uint64_t x = k * (GIB / 100) + 12345;

		CHECK(hdd_byte_at(&g, hdd_tp(&g, x)) + 1 >= x &&
		      hdd_byte_at(&g, hdd_tp(&g, x)) <= x);
	}
}

TEST(moddev_hdd_refuses_a_curve_it_cannot_draw)
{
	struct hdd_geom g;
	char err[256] = "";

	/* a line through 0.6 and 10 ms averages 3.74, a square root 5.53 */
	CHECK(hdd_geom_init(&g, 10000, 90e6, 54e6, 16, GIB, 0.6e6, 3e6, 10e6, err, sizeof(err)));
	CHECK_STREQ(err, "hdd: seek_avg_ms=3: must be from 3.74 to 5.53 with seek_track_ms=0.6 and "
			 "seek_full_ms=10");
	CHECK(hdd_geom_init(&g, 10000, 90e6, 54e6, 16, GIB, 0.6e6, 12e6, 10e6, err, sizeof(err)));
	CHECK_STREQ(err,
		    "hdd: seek_track_ms=0.6, seek_avg_ms=12, seek_full_ms=10: must increase in "
		    "that order");
	CHECK(!sim_model("hdd:rpm=10000,seek_track_ms=0.6,seek_avg_ms=4.5,seek_full_ms=10,"
			 "outer_mbps=50,inner_mbps=60",
			 GIB));
	CHECK(!sim_model(DRIVE ",capacity_gb=0.5", GIB));
}

/*
 * One zone at 6,000 rpm and 10 MB/s: a revolution is 10 ms, a track holds
 * 100,000 bytes, and where a byte is on the platter is known by hand.
 */
#define PLATTER "hdd:rpm=6000,seek_track_ms=1,seek_avg_ms=5,seek_full_ms=12,outer_mbps=10,zones=1"

TEST(moddev_hdd_platter_angle_is_kept_in_time)
{
	struct dev_model *m = sim_model(PLATTER, 100000000);
	struct sim_log l = { .n = 0 };
	struct dev_req a, b, c, d;
	struct dev_sched s;
	struct hdd_geom g;
	char err[256];
	double seek, at, wait;

	if (!m)
		return;
	dev_sched_init(&s, m, 0, 0);
	/* half a track away on the track the head is on: half a revolution, then 409.6 us */
	sim_req(&a, DEV_READ, 50000, 4096);
	CHECK(dev_sched_submit(&s, &a, 0, sim_logged, &l) == 0);
	CHECK(a.start_ns == 0 && a.done_ns == 5409600);
	CHECK(dev_sched_next(&s) == 5409600);
	/* back to byte 0 of the same track: the rest of the revolution from 0.54096 */
	sim_req(&b, DEV_READ, 0, 4096);
	CHECK(dev_sched_submit(&s, &b, 5409600, sim_logged, &l) == 0);
	CHECK(l.n == 1 && l.r[0] == &a);
	CHECK(b.start_ns == 5409600 && b.done_ns == 10409600);
	/* idle until 20 ms: the platter turned on, byte 0 is under the head again */
	sim_req(&c, DEV_READ, 0, 4096);
	CHECK(dev_sched_submit(&s, &c, 20 * MS, sim_logged, &l) == 0);
	CHECK(c.done_ns == 20 * MS + 409600);
	/* ten tracks in, a quarter round: a seek of ten tracks, then the platter from there */
	CHECK(hdd_geom_init(&g, 6000, 10e6, 10e6, 1, 100000000, 1e6, 5e6, 12e6, err, sizeof(err)) ==
	      0);
	seek = hdd_seek_ns(&g, 10);
	CHECK(seek > 1e6 && seek < 5e6);
	sim_req(&d, DEV_READ, 10 * 100000 + 25000, 4096);
	CHECK(dev_sched_submit(&s, &d, 30 * MS, sim_logged, &l) == 0);
	at = 30e6 + seek;
	wait = 0.25 - fmod(at, 10e6) / 10e6;
	if (wait < 0)
		wait += 1;
	CHECK(llabs((long long)d.done_ns - (long long)(at + wait * 10e6 + 409600)) <= 1);
	dev_sched_advance(&s, DEV_NEVER - 1, sim_logged, &l);
	CHECK(l.n == 4 && l.r[3] == &d);
	/* what the head spent: transfers, rotation and the one seek, nothing while idle */
	CHECK(m->service_ns == (a.done_ns - a.start_ns) + (b.done_ns - b.start_ns) +
				       (c.done_ns - c.start_ns) + (d.done_ns - d.start_ns));
	dev_model_destroy(m);
}

TEST(moddev_hdd_keeps_its_datasheet)
{
	sim_hdd_datasheet_truths(DRIVE ",cache_segments=8", GIB, 4.5, 10000, 90);
	/* on a device of another size: the same drive, its tracks over the full stroke */
	sim_hdd_datasheet_truths(DRIVE ",cache_segments=8", 256ULL << 20, 4.5, 10000, 90);
}

TEST(moddev_hdd_without_read_ahead_a_stream_waits_for_the_platter)
{
	struct sim_load seq = { DEV_READ, 1 << 20, 1, 100, 1, 64ULL << 20, 50 * US };
	struct sim_result none, cached;

	/* 50 us between a completion and the next request: a revolution lost each time */
	none = sim_closed_loop(DRIVE, GIB, &seq);
	cached = sim_closed_loop(DRIVE ",cache_segments=4", GIB, &seq);
	CHECK(none.mbps < 0.75 * 90);
	CHECK(sim_within("a stream with read-ahead, MB/s", cached.mbps,
			 90 * 1.048576 / (1.048576 + 90 * 50e-6), 0.02));
}

TEST(moddev_hdd_short_stroked_by_capacity)
{
	struct sim_load rnd = { DEV_READ, 4096, 1, 2000, 0, 0, 0 };
	struct sim_result whole, part;

	whole = sim_closed_loop(DRIVE, GIB, &rnd);
	/* the same device as the first GiB of a 74 GB drive: seeks of 1.4% of the stroke */
	part = sim_closed_loop(DRIVE ",capacity_gb=74", GIB, &rnd);
	CHECK(part.iops > 1.5 * whole.iops);
}

TEST(moddev_hdd_queue_reorders_up_to_its_depth)
{
	const char *spec[2] = { DRIVE ",queue_depth=1", DRIVE };
	struct sim_log l;
	struct dev_req busy, far, near;
	struct dev_sched s;
	struct dev_model *m;
	int i;

	for (i = 0; i < 2; i++) {
		m = sim_model(spec[i], GIB);
		if (!m)
			return;
		l.n = 0;
		dev_sched_init(&s, m, 0, 0);
		/* the head busy at the start; then a far request, then a near one */
		sim_req(&busy, DEV_READ, 0, 4096);
		sim_req(&far, DEV_READ, GIB - 8192, 4096);
		sim_req(&near, DEV_READ, 2 * 4096 * 1024, 4096);
		dev_sched_submit(&s, &busy, 0, sim_logged, &l);
		dev_sched_submit(&s, &far, 1000, sim_logged, &l);
		dev_sched_submit(&s, &near, 2000, sim_logged, &l);
		dev_sched_advance(&s, DEV_NEVER - 1, sim_logged, &l);
		CHECK(l.n == 3 && l.r[0] == &busy);
		/* without queueing, arrival order; with it, the near one first */
		if (i == 0)
			CHECK(l.r[1] == &far && l.r[2] == &near);
		else
			CHECK(l.r[1] == &near && l.r[2] == &far);
		dev_model_destroy(m);
	}
}

TEST(moddev_hdd_segment_cache_hits_and_writes_invalidate)
{
	struct dev_model *m = sim_model(DRIVE ",cache_segments=2,interface_mbps=150", GIB);
	struct sim_log l = { .n = 0 };
	struct dev_req a, b, w, c, f;
	struct dev_sched s;

	if (!m)
		return;
	dev_sched_init(&s, m, 0, 0);
	sim_req(&a, DEV_READ, 1 << 20, 4096);
	dev_sched_submit(&s, &a, 0, sim_logged, &l);
	dev_sched_advance(&s, a.done_ns, sim_logged, &l);
	/* 1 ms later read-ahead has read what follows: from the buffer at 150 MB/s */
	sim_req(&b, DEV_READ, (1 << 20) + 4096, 8192);
	dev_sched_submit(&s, &b, a.done_ns + MS, sim_logged, &l);
	CHECK(b.done_ns == b.arrival_ns + (uint64_t)(8192 * 1000.0 / 150 + 0.5));
	/* a write over it: the next read of those bytes goes to the media */
	sim_req(&w, DEV_WRITE, (1 << 20) + 4096, 4096);
	dev_sched_submit(&s, &w, b.done_ns, sim_logged, &l);
	dev_sched_advance(&s, w.done_ns, sim_logged, &l);
	CHECK(w.done_ns > w.arrival_ns + 100 * US);
	sim_req(&c, DEV_READ, (1 << 20) + 4096, 4096);
	dev_sched_submit(&s, &c, w.done_ns + MS, sim_logged, &l);
	CHECK(c.done_ns > c.arrival_ns + 100 * US);
	/* no write cache: a flush has nothing to wait for */
	sim_req(&f, DEV_FLUSH, 0, 0);
	dev_sched_submit(&s, &f, c.arrival_ns, sim_logged, &l);
	CHECK(f.done_ns == f.arrival_ns);
	dev_model_destroy(m);
}

/*
 * A sequential stream of 1 MiB reads, each in two halves that reach the
 * drive in the wrong order 50 us apart (the daemon's worker threads can
 * hand over a split request so): MB/s.
 */
static double reversed_halves(const char *spec)
{
	struct dev_model *m = sim_model(spec, GIB);
	struct sim_log l = { .n = 0 };
	struct dev_req lo, hi;
	struct dev_sched s;
	uint64_t t = 0, off = 0;
	unsigned i;

	if (!m)
		return 0;
	dev_sched_init(&s, m, 0, 0);
	/* the stream under way: the head reading on from the first MiB */
	sim_req(&lo, DEV_READ, 0, 1 << 20);
	dev_sched_submit(&s, &lo, 0, sim_logged, &l);
	while (l.n < 1)
		dev_sched_advance(&s, dev_sched_next(&s), sim_logged, &l);
	t = lo.done_ns + 50 * US;
	off = 1 << 20;
	for (i = 0; i < 100; i++, off += 1 << 20) {
		sim_req(&hi, DEV_READ, off + (1 << 19), 1 << 19);
		sim_req(&lo, DEV_READ, off, 1 << 19);
		l.n = 0;
		dev_sched_submit(&s, &hi, t, sim_logged, &l);
		dev_sched_submit(&s, &lo, t + 50 * US, sim_logged, &l);
		while (l.n < 2)
			dev_sched_advance(&s, dev_sched_next(&s), sim_logged, &l);
		t = (lo.done_ns > hi.done_ns ? lo.done_ns : hi.done_ns) + 50 * US;
	}
	dev_model_destroy(m);
	return 101.0 * (1 << 20) / (t / 1e3);
}

TEST(moddev_hdd_reads_on_to_a_request_just_ahead)
{
	double none = reversed_halves(DRIVE);
	double ahead = reversed_halves(DRIVE ",cache_segments=8,segment_kb=1024");

	/* without a segment cache: the second half first, then most of a turn for the first */
	CHECK(none < 0.8 * 90);
	/*
	 * With one: the second half is 512 KiB ahead of the head, which reads
	 * on to it (sooner than the track switch and rotation a seek costs),
	 * passing over the first half, which the buffer then serves.
	 */
	CHECK(sim_within("reversed halves, MB/s", ahead, 90, 0.1));
}

TEST(moddev_hdd_command_overhead_gathers_what_arrives_meanwhile)
{
	const char *spec[2] = { DRIVE, DRIVE ",overhead_us=200" };
	struct sim_log l;
	struct dev_req far, near;
	struct dev_sched s;
	struct dev_model *m;
	int i;

	for (i = 0; i < 2; i++) {
		m = sim_model(spec[i], GIB);
		if (!m)
			return;
		l.n = 0;
		dev_sched_init(&s, m, 0, 0);
		/* an idle drive: a request a full stroke away, then one on its track 100 us later */
		sim_req(&far, DEV_READ, GIB - 8192, 4096);
		sim_req(&near, DEV_READ, 300000, 4096);
		dev_sched_submit(&s, &far, 0, sim_logged, &l);
		dev_sched_submit(&s, &near, 100 * US, sim_logged, &l);
		dev_sched_advance(&s, 100 * MS, sim_logged, &l);
		CHECK(l.n == 2);
		/* without an overhead the head has gone; with 200 us both are in its choice */
		if (i == 0)
			CHECK(l.r[0] == &far && far.start_ns == 0);
		else
			CHECK(l.r[0] == &near && near.start_ns == 200 * US);
		dev_model_destroy(m);
	}
}
