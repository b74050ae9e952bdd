/*
 * Tests of the write-back cache (tools/moddev/model_wbcache.c) in
 * simulated time, in front of fixed members whose times are known: writes
 * done in the cache, destaged (merged runs, paced), a flush waiting for
 * what was dirty before it and no more, a full cache, hits and misses, and
 * an HDD's own write cache.
 */
#include "devsched.h"
#include "moddev_sim.h"
#include "test.h"

#define GIB (1ULL << 30)

/* one server, 1 ms whatever the size: a destage of any run takes 1 ms */
#define FLAT "(fixed:channels=1,latency_us=1000)"

struct bench {
	struct dev_model *m;
	struct dev_sched s;
	struct sim_log l;
	struct dev_req r[80];
	unsigned n;
};

static int bench_up(struct bench *b, const char *spec)
{
	b->m = sim_model(spec, GIB);
	b->l.n = 0;
	b->n = 0;
	if (b->m)
		dev_sched_init(&b->s, b->m, 0, 0);
	return b->m != NULL;
}

static struct dev_req *at(struct bench *b, uint64_t t, enum dev_op op, uint64_t off, uint32_t len)
{
	struct dev_req *r = &b->r[b->n++];

	sim_req(r, op, off, len);
	CHECK(dev_sched_submit(&b->s, r, t, sim_logged, &b->l) == 0);
	return r;
}

static void bench_down(struct bench *b)
{
	dev_sched_advance(&b->s, DEV_NEVER - 1, sim_logged, &b->l);
	CHECK(b->l.n == b->n && b->s.inflight == 0);
	dev_model_destroy(b->m);
}

TEST(moddev_wbcache_writes_are_done_in_the_cache_and_flushes_wait_for_them)
{
	struct bench b;
	struct dev_req *w, *f, *later, *f2;

	/* 20 us and 4 KiB at 409.6 MB/s (10 us) into the cache */
	if (!bench_up(&b, "wbcache:size_mb=16,latency_us=20,mbps=409.6,member=" FLAT))
		return;
	w = at(&b, 0, DEV_WRITE, 0, 4096);
	CHECK(w->done_ns == 30 * US);
	/* the flush waits for that write's destage (1 ms), not for a write after it */
	f = at(&b, 40 * US, DEV_FLUSH, 0, 0);
	later = at(&b, 50 * US, DEV_WRITE, 1 << 20, 4096);
	f2 = at(&b, 60 * US, DEV_FLUSH, 0, 0);
	bench_down(&b);
	CHECK(later->done_ns == 80 * US);
	CHECK(f->done_ns == MS);
	/* the second destage waits for the member's one server: 2 ms */
	CHECK(f2->done_ns == 2 * MS);
}

TEST(moddev_wbcache_destages_merged_runs_and_rewrites)
{
	struct bench b;
	struct dev_req *f, *again, *f2;
	unsigned i;

	/* one destage at a time: 64 lines written while the first is out go as one */
	if (!bench_up(&b, "wbcache:size_mb=16,destage_depth=1,member=" FLAT))
		return;
	for (i = 0; i < 64; i++)
		at(&b, i * US, DEV_WRITE, i * 4096ULL, 4096);
	f = at(&b, 100 * US, DEV_FLUSH, 0, 0);
	bench_down(&b);
	CHECK(f->done_ns == 2 * MS);

	/* a line written again while it is being destaged is destaged again */
	if (!bench_up(&b, "wbcache:size_mb=16,member=" FLAT))
		return;
	at(&b, 0, DEV_WRITE, 0, 4096);
	f = at(&b, 400 * US, DEV_FLUSH, 0, 0);
	again = at(&b, 500 * US, DEV_WRITE, 0, 4096);
	f2 = at(&b, 600 * US, DEV_FLUSH, 0, 0);
	bench_down(&b);
	CHECK(again->done_ns == 500 * US);
	CHECK(f->done_ns == MS && f2->done_ns == 2 * MS);

	/* a flush after each write, more flushes waiting than the cache first has room for */
	if (!bench_up(&b, "wbcache:size_mb=16,destage_depth=1,member=" FLAT))
		return;
	for (i = 0; i < 40; i++) {
		at(&b, i * US, DEV_WRITE, (uint64_t)i << 20, 4096);
		at(&b, i * US, DEV_FLUSH, 0, 0);
	}
	bench_down(&b);
	for (i = 0; i < 40; i++)
		CHECK(b.r[2 * i + 1].done_ns == (i + 1) * MS);
}

TEST(moddev_wbcache_paced_destage_and_a_full_cache)
{
	struct bench b;
	struct dev_req *f, *w;
	unsigned i;

	/* a member with no time, destaging 4 KiB a millisecond: 4 lines apart take 3 ms */
	if (!bench_up(&b, "wbcache:size_mb=16,destage_mbps=4.096,"
			  "member=(fixed:channels=64,latency_us=0)"))
		return;
	for (i = 0; i < 4; i++)
		at(&b, 0, DEV_WRITE, (uint64_t)i << 20, 4096);
	f = at(&b, US, DEV_FLUSH, 0, 0);
	bench_down(&b);
	CHECK(f->done_ns == 3 * MS);

	/* 1 MiB of cache: a second 1 MiB write waits for the first's destage */
	if (!bench_up(&b, "wbcache:size_mb=1,member=" FLAT))
		return;
	at(&b, 0, DEV_WRITE, 0, 1 << 20);
	w = at(&b, 0, DEV_WRITE, 8 << 20, 1 << 20);
	bench_down(&b);
	CHECK(b.r[0].done_ns == 0 && w->done_ns == MS);
}

TEST(moddev_wbcache_a_waiting_write_whose_cached_lines_are_evicted)
{
	struct bench b;
	struct dev_req *a, *c, *w3;

	/*
	 * 256 lines. Line 0 written and destaged (clean by 1 ms); 255 more
	 * fill the cache; C (2 lines) and then W3 (line 0, cached, and line
	 * 1) wait for room. When the 255 are destaged C goes in and evicts
	 * the least recently used clean line, line 0: W3 then needs 2 new
	 * lines, not the 1 it needed when it came.
	 */
	if (!bench_up(&b, "wbcache:size_mb=1,destage_depth=1,member=" FLAT))
		return;
	a = at(&b, 0, DEV_WRITE, 0, 4096);
	at(&b, 1500 * US, DEV_WRITE, 10 * 4096, 255 * 4096);
	c = at(&b, 1600 * US, DEV_WRITE, 300 * 4096, 2 * 4096);
	w3 = at(&b, 1700 * US, DEV_WRITE, 0, 2 * 4096);
	bench_down(&b);
	CHECK(a->done_ns == 0);
	CHECK(c->done_ns == 2500 * US && w3->done_ns == 2500 * US);
}

TEST(moddev_wbcache_hits_misses_and_sustained_writes)
{
	struct sim_load w = { DEV_WRITE, 4096, 32, 20000, 0, 0, 0 };
	struct sim_result r;
	struct bench b;
	struct dev_req *hit, *miss;

	if (!bench_up(&b, "wbcache:size_mb=16,latency_us=20,member=" FLAT))
		return;
	at(&b, 0, DEV_WRITE, 0, 8192);
	/* what was written is read from the cache, dirty or destaged; the rest from the member */
	hit = at(&b, 10 * US, DEV_READ, 4096, 4096);
	miss = at(&b, 10 * US, DEV_READ, 8192, 4096);
	bench_down(&b);
	CHECK(hit->done_ns == 30 * US);
	CHECK(miss->done_ns == 2 * MS);
	/* random writes beyond what the cache holds go at the member's pace: 4 x 1 ms */
	r = sim_closed_loop("wbcache:size_mb=1,member=(fixed:channels=4,latency_us=1000)", GIB, &w);
	CHECK(r.iops <= 4000 * 1.03 && r.iops >= 0.97 * 4000);
	/* sequential ones merge into runs of 1 MiB: far more */
	w.sequential = 1;
	r = sim_closed_loop("wbcache:size_mb=1,member=(fixed:channels=4,latency_us=1000)", GIB, &w);
	CHECK(r.iops > 10 * 4000);
}

TEST(moddev_hdd_write_cache_is_a_cache_in_front_of_the_drive)
{
	struct sim_load w = { DEV_WRITE, 4096, 1, 200, 0, 0, 0 };
	struct sim_result off, on;
	struct bench b;
	struct dev_req *f;

#define HDD                                                                              \
	"hdd:rpm=10000,seek_track_ms=0.6,seek_avg_ms=4.5,seek_full_ms=10,outer_mbps=90," \
	"interface_mbps=150"
	off = sim_closed_loop(HDD, GIB, &w);
	on = sim_closed_loop(HDD ",write_cache_mb=16", GIB, &w);
	/* off: a seek and half a turn each; on: 4 KiB at 150 MB/s while the cache has room */
	CHECK(off.iops < 150);
	CHECK(sim_within("cached writes", on.iops, 150e6 / 4096, 0.001));
	if (!bench_up(&b, HDD ",write_cache_mb=16"))
		return;
	at(&b, 0, DEV_WRITE, 512 << 20, 4096);
	f = at(&b, 100 * US, DEV_FLUSH, 0, 0);
	bench_down(&b);
	/* the flush waits for the write to reach the platter */
	CHECK(f->done_ns > 2 * MS);
}
