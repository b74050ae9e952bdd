/*
 * Tests of the named models (tools/moddev/models_named.c): every one made
 * and serving requests, the hard disks against their datasheets (the
 * issue's truths), and the SSDs against the datasheet figures their flash
 * times were derived from (docs/devices.md), in simulated time.
 */
#include <string.h>

#include "devsched.h"
#include "moddev_sim.h"
#include "test.h"

#define GIB (1ULL << 30)

TEST(moddev_named_every_one_serves_reads_writes_and_flushes)
{
	const struct dev_model_type *const *t;
	struct sim_log l;
	struct dev_req r[48];
	struct dev_sched s;
	struct dev_model *m;
	uint64_t sizes[2] = { 64ULL << 20, GIB }, last, x = 1;
	unsigned i, k, named = 0;

	for (t = dev_model_types; *t; t++) {
		if (!(*t)->alias_of)
			continue;
		named++;
		for (k = 0; k < 2; k++) {
			m = sim_model((*t)->name, sizes[k]);
			CHECK(m != NULL);
			if (!m)
				continue;
			dev_sched_init(&s, m, 0, 0);
			l.n = 0;
			for (i = 0; i < 48; i++) {
				x = x * 6364136223846793005ULL + 1442695040888963407ULL;
				sim_req(&r[i],
					i % 12 == 11 ? DEV_FLUSH
					: i % 3	     ? DEV_READ
						     : DEV_WRITE,
					(x >> 20) % (sizes[k] / 4096 - 64) * 4096,
					i % 12 == 11 ? 0 : 4096u << (i % 5));
				CHECK(dev_sched_submit(&s, &r[i], i * 100 * US, sim_logged, &l) ==
				      0);
			}
			dev_sched_advance(&s, DEV_NEVER - 1, sim_logged, &l);
			CHECK(l.n == 48 && s.inflight == 0);
			for (i = 0, last = 0; i < l.n; i++) {
				CHECK(l.r[i]->done_ns >= last &&
				      l.r[i]->done_ns >= l.r[i]->arrival_ns);
				last = l.r[i]->done_ns;
			}
			CHECK(m->servers >= 1 && m->service_ns > 0);
			dev_model_destroy(m);
		}
	}
	CHECK(named >= 13);
}

TEST(moddev_named_hard_disks_keep_their_datasheets)
{
	/* WD Raptor: 4.5 ms, 10,000 rpm, 90 MB/s outer; Fujitsu MBA3147RC: 3.1 ms, 15,000, 171 */
	sim_hdd_datasheet_truths("wd740adfd", GIB, 4.5, 10000, 90);
	sim_hdd_datasheet_truths("wd740adfd", 16 * GIB, 4.5, 10000, 90);
	sim_hdd_datasheet_truths("mba3147rc", GIB, 3.1, 15000, 171);
	sim_hdd_datasheet_truths("mba3147rc", 16 * GIB, 3.1, 15000, 171);
}

static struct sim_result load(const char *spec, enum dev_op op, uint32_t bs, unsigned depth,
			      int sequential)
{
	struct sim_load l = { op, bs, depth, depth > 1 ? 20000 : 2000, sequential, 0, 0 };

	if (bs > 65536)
		l.total = 400;
	return sim_closed_loop(spec, GIB, &l);
}

TEST(moddev_named_ssds_keep_the_figures_they_come_from)
{
	/* Intel SSD 320 160 GB: 75/90 us read/write latency, 39,000 random reads, 165 MB/s written */
	CHECK(sim_within("intel320 read latency (us)",
			 load("intel320", DEV_READ, 4096, 1, 0).mean_latency_ns / 1e3, 75, 0.02));
	CHECK(sim_within("intel320 write latency (us)",
			 load("intel320", DEV_WRITE, 4096, 1, 0).mean_latency_ns / 1e3, 90, 0.02));
	CHECK(sim_within("intel320 random 4 KiB reads at depth 32",
			 load("intel320", DEV_READ, 4096, 32, 0).iops, 39000, 0.02));
	CHECK(sim_within("intel320 sequential writes (MB/s)",
			 load("intel320", DEV_WRITE, 1 << 20, 4, 1).mbps, 165, 0.05));
	/* Mtron MSP-SATA7035: 0.1 ms access, 120 MB/s read, 90 MB/s written */
	CHECK(sim_within("mtron-7035 access (us)",
			 load("mtron-7035", DEV_READ, 4096, 1, 0).mean_latency_ns / 1e3, 100,
			 0.15));
	CHECK(sim_within("mtron-7035 sequential reads (MB/s)",
			 load("mtron-7035", DEV_READ, 1 << 20, 4, 1).mbps, 120, 0.05));
	CHECK(sim_within("mtron-7035 sequential writes (MB/s)",
			 load("mtron-7035", DEV_WRITE, 1 << 20, 4, 1).mbps, 90, 0.05));
	/* Mtron Mobi 3000: 100 MB/s read, 80 MB/s written */
	CHECK(sim_within("mtron-mobi3000 sequential reads (MB/s)",
			 load("mtron-mobi3000", DEV_READ, 1 << 20, 4, 1).mbps, 100, 0.05));
	CHECK(sim_within("mtron-mobi3000 sequential writes (MB/s)",
			 load("mtron-mobi3000", DEV_WRITE, 1 << 20, 4, 1).mbps, 80, 0.05));
	/* the block-mapped FTL: a random 4 KiB write costs far more than a sequential one */
	CHECK(load("mtron-7035", DEV_WRITE, 4096, 32, 0).iops * 20 <
	      load("mtron-7035", DEV_WRITE, 4096, 32, 1).iops);
}
