/*
 * Tests of the ssd model (tools/moddev/model_ssd.c) in simulated time:
 * latencies worked out by hand from the parameters, the limits of the
 * flash units and of the interface, the write buffer filling, draining
 * at the program rate and holding flushes, and the FTL unit that makes
 * random small writes pay a whole unit.
 */
#include "devsched.h"
#include "moddev_sim.h"
#include "test.h"

#define GIB (1ULL << 30)

TEST(moddev_ssd_read_latency_is_flash_then_interface)
{
	/* 50 us read + 4 KiB at 200 MB/s on the channel, then 10 us + 4 KiB at 250 MB/s */
	struct dev_model *m = sim_model("ssd:channels=4,read_us=50,program_us=200,channel_mbps=200,"
					"interface_mbps=250,command_us=10",
					GIB);
	struct sim_log l = { .n = 0 };
	struct dev_req a, b;
	struct dev_sched s;

	if (!m)
		return;
	dev_sched_init(&s, m, 0, 0);
	sim_req(&a, DEV_READ, 0, 4096);
	dev_sched_submit(&s, &a, 0, sim_logged, &l);
	/* the unit finishes first, then the interface */
	CHECK(dev_sched_next(&s) == 50000 + 20480);
	/* 16 KiB on four units at once: one page each, then 16 KiB over the interface */
	sim_req(&b, DEV_READ, 1 << 20, 16384);
	dev_sched_submit(&s, &b, MS, sim_logged, &l);
	dev_sched_advance(&s, 10 * MS, sim_logged, &l);
	CHECK(l.n == 2 && a.done_ns == 96864);
	CHECK(b.done_ns == MS + 50000 + 20480 + 10000 + 65536);
	CHECK(m->servers == 4 && m->service_ns == 70480 * 5);
	dev_model_destroy(m);
}

TEST(moddev_ssd_saturates_at_its_units_or_its_interface)
{
	struct sim_load rnd = { DEV_READ, 4096, 32, 20000, 0, 0, 0 };
	struct sim_result r;

	/* the interface: 10 us + 4096 bytes at 300 MB/s a request */
	r = sim_closed_loop("ssd:channels=10,read_us=50,program_us=200,command_us=10", GIB, &rnd);
	CHECK(sim_within("interface-bound 4 KiB reads", r.iops, 1e9 / (10000 + 4096 / 0.3), 0.01));
	/*
	 * The flash: 4 units of 200 us. At depth 32 a unit is idle only when
	 * none of the 32 is at its address: 20,000 a second at most, over
	 * 90% of it (a closed network of 4 queues; 95% here).
	 */
	r = sim_closed_loop("ssd:channels=4,read_us=200,program_us=200,interface_mbps=100000", GIB,
			    &rnd);
	CHECK(r.iops <= 20000 * 1.0001 && r.iops >= 0.9 * 20000);
	/* at depth 1, one unit at a time */
	rnd.depth = 1;
	rnd.total = 2000;
	r = sim_closed_loop("ssd:channels=4,read_us=200,program_us=200,interface_mbps=100000", GIB,
			    &rnd);
	CHECK(sim_within("depth 1", r.iops, 1e9 / (200000 + 4096 / 100.0), 0.001));
}

TEST(moddev_ssd_buffer_absorbs_writes_and_drains_at_the_program_rate)
{
	/* a write is done once across the interface; 4 units of 400 us drain 10,000 pages a second */
	const char *spec = "ssd:channels=4,read_us=50,program_us=400,buffer_kb=1024";
	struct sim_load w = { DEV_WRITE, 4096, 1, 100, 0, 0, 0 };
	struct sim_result r;

	r = sim_closed_loop(spec, GIB, &w);
	CHECK(sim_within("a buffered write's latency", r.mean_latency_ns, 4096 / 0.3, 0.001));
	/* write_us adds to each write's latency, without holding the interface */
	r = sim_closed_loop("ssd:channels=4,read_us=50,program_us=400,buffer_kb=1024,write_us=60",
			    GIB, &w);
	CHECK(sim_within("write_us", r.mean_latency_ns, 4096 / 0.3 + 60000, 0.001));
	w.depth = 32;
	w.total = 40000;
	r = sim_closed_loop(spec, GIB, &w);
	/* the buffer's 256 pages went in at the interface's pace first */
	CHECK(sim_within("sustained random writes", r.iops, 10000, 0.01));
}

TEST(moddev_ssd_write_unit_makes_small_random_writes_pay_a_unit)
{
	/*
	 * A block-mapped FTL: 256 KiB units of 64 pages. Random 4 KiB writes
	 * each read the rest, erase and program 64 pages (64 x 25 + 1500 +
	 * 64 x 200 us on one of 2 units); a sequential stream fills units
	 * whole (no read).
	 */
	const char *spec = "ssd:channels=2,read_us=25,program_us=200,erase_us=1500,page_kb=4,"
			   "write_unit_kb=256,buffer_kb=1024";
	struct sim_load w = { DEV_WRITE, 4096, 32, 3000, 0, 0, 0 };
	struct sim_result rnd, seq;
	double unit_us = 64 * 25 + 1500 + 64 * 200;

	rnd = sim_closed_loop(spec, GIB, &w);
	CHECK(sim_within("random 4 KiB writes", rnd.iops, 2 * 1e6 / unit_us, 0.02));
	w.sequential = 1;
	w.total = 30000;
	seq = sim_closed_loop(spec, GIB, &w);
	CHECK(sim_within("sequential 4 KiB writes", seq.iops, 64 * 2 * 1e6 / (1500 + 64 * 200),
			 0.02));
}

TEST(moddev_ssd_flush_waits_for_the_buffer_and_full_buffer_waits_for_room)
{
	/* one unit, 1 ms a page, a buffer of 2 pages; the interface takes 4096 / 300 MB/s */
	struct dev_model *m =
		sim_model("ssd:channels=1,read_us=50,program_us=1000,buffer_kb=8", GIB);
	struct sim_log l = { .n = 0 };
	struct dev_req w[3], f, g;
	struct dev_sched s;
	uint64_t x = 13653; /* 4096 bytes at 300 MB/s, rounded */
	int i;

	if (!m)
		return;
	dev_sched_init(&s, m, 0, 0);
	for (i = 0; i < 3; i++) {
		sim_req(&w[i], DEV_WRITE, (uint64_t)i << 20, 4096);
		dev_sched_submit(&s, &w[i], 0, sim_logged, &l);
	}
	dev_sched_advance(&s, 10 * MS, sim_logged, &l);
	/* two went in as they arrived; the third waited for the first to be programmed */
	CHECK(w[0].done_ns == x && w[1].done_ns == 2 * x);
	CHECK(w[2].done_ns == x + MS);
	/* a flush waits for everything dirty when it came: the third, programmed at x + 3 ms */
	sim_req(&w[0], DEV_WRITE, 5 << 20, 4096);
	dev_sched_submit(&s, &w[0], 10 * MS, sim_logged, &l);
	sim_req(&f, DEV_FLUSH, 0, 0);
	dev_sched_submit(&s, &f, 10 * MS + x, sim_logged, &l);
	dev_sched_advance(&s, 20 * MS, sim_logged, &l);
	CHECK(f.done_ns == 10 * MS + x + MS);
	/* with nothing dirty it is done as it comes */
	sim_req(&g, DEV_FLUSH, 0, 0);
	dev_sched_submit(&s, &g, 30 * MS, sim_logged, &l);
	CHECK(g.done_ns == 30 * MS);
	dev_model_destroy(m);

	/* without a buffer a write is done when programmed */
	m = sim_model("ssd:channels=1,read_us=50,program_us=1000", GIB);
	if (!m)
		return;
	dev_sched_init(&s, m, 0, 0);
	sim_req(&w[0], DEV_WRITE, 0, 4096);
	dev_sched_submit(&s, &w[0], 0, sim_logged, &l);
	dev_sched_advance(&s, 10 * MS, sim_logged, &l);
	CHECK(w[0].done_ns == x + MS);
	dev_model_destroy(m);
	CHECK(!sim_model("ssd:channels=1,read_us=50,program_us=1000,write_unit_kb=256,buffer_kb=64",
			 GIB));
}
