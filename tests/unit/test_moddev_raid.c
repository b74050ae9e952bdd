/*
 * Tests of the array models (tools/moddev/model_raid.c, members.c) in
 * simulated time, with fixed members whose times are known: striping and
 * the merging of a member's units, mirrors, the RAID-5 layout, full-row
 * writes against read-modify-write, flushes, and members of any model.
 */
#include "devsched.h"
#include "moddev_sim.h"
#include "test.h"

#define GIB (1ULL << 30)
#define KIB 1024ULL

/* one server each, 1 ms plus 64 KiB a millisecond (65.536 MB/s) */
#define SLOW "(fixed:channels=1,latency_us=1000,mbps=65.536)"
/* one server each, 1 ms whatever the size */
#define FLAT "(fixed:channels=1,latency_us=1000)"

/* Requests of @op at (@off[i], @len[i]) all at time 0: each one's completion. */
static void at_once(const char *spec, enum dev_op op, const uint64_t *off, const uint32_t *len,
		    unsigned n, uint64_t *done)
{
	struct dev_model *m = sim_model(spec, GIB);
	struct sim_log l = { .n = 0 };
	struct dev_req r[8];
	struct dev_sched s;
	unsigned i;

	for (i = 0; i < n; i++)
		done[i] = 0;
	if (!m)
		return;
	dev_sched_init(&s, m, 0, 0);
	for (i = 0; i < n; i++) {
		sim_req(&r[i], op, off[i], len[i]);
		CHECK(dev_sched_submit(&s, &r[i], 0, sim_logged, &l) == 0);
	}
	dev_sched_advance(&s, DEV_NEVER - 1, sim_logged, &l);
	CHECK(l.n == n);
	for (i = 0; i < n; i++)
		done[i] = r[i].done_ns;
	CHECK(s.inflight == 0);
	dev_model_destroy(m);
}

TEST(moddev_raid0_stripes_and_merges_a_members_units)
{
	uint64_t off[2] = { 0, 0 }, done[2];
	uint32_t len[2] = { 256 * KIB, 64 * KIB };

	/* 256 KiB over 2 members: 128 KiB each, one request each (1 + 2 ms), not two (4 ms) */
	at_once("raid0:members=2,stripe_kb=64,member=" SLOW, DEV_READ, off, len, 1, done);
	CHECK(done[0] == 3 * MS);
	/* 64 KiB at 64 KiB: the second member alone */
	off[0] = 0;
	off[1] = 64 * KIB;
	len[0] = 64 * KIB;
	at_once("raid0:members=2,stripe_kb=64,member=" SLOW, DEV_READ, off, len, 2, done);
	CHECK(done[0] == 2 * MS && done[1] == 2 * MS);
	/* a unit of 128 KiB: both on the first member, one after the other */
	off[1] = 64 * KIB;
	at_once("raid0:members=2,stripe_kb=128,member=" SLOW, DEV_READ, off, len, 2, done);
	CHECK(done[0] == 2 * MS && done[1] == 4 * MS);
}

TEST(moddev_raid1_reads_from_one_writes_to_all)
{
	struct sim_load rd = { DEV_READ, 4096, 2, 2000, 0, 0, 0 };
	struct sim_result r;

	/* two reads in flight: one on each copy */
	r = sim_closed_loop("raid1:members=2,member=" FLAT, GIB, &rd);
	CHECK(sim_within("mirrored reads at depth 2", r.iops, 2000, 0.001));
	rd.op = DEV_WRITE;
	r = sim_closed_loop("raid1:members=2,member=" FLAT, GIB, &rd);
	CHECK(sim_within("mirrored writes at depth 2", r.iops, 1000, 0.001));
	/* raid10: reads on 4 members, writes on 2 pairs */
	rd.op = DEV_READ;
	rd.depth = 64;
	rd.total = 20000;
	r = sim_closed_loop("raid10:members=4,stripe_kb=64,member=" FLAT, GIB, &rd);
	CHECK(r.iops <= 4000 * 1.0001 && r.iops > 0.9 * 4000);
	rd.op = DEV_WRITE;
	r = sim_closed_loop("raid10:members=4,stripe_kb=64,member=" FLAT, GIB, &rd);
	CHECK(r.iops <= 2000 * 1.0001 && r.iops > 0.9 * 2000);
}

TEST(moddev_raid5_layout_rotates_parity_left_symmetric)
{
	uint64_t off[2], done[2];
	uint32_t len[2] = { 4096, 4096 };

	/*
	 * 4 members, 3 data units a row. Row 0: units 0-2 on members 0-2,
	 * parity on 3. Row 1: parity on 2, units 3-5 on members 3, 0, 1. So
	 * units 0 and 4 share member 0; units 1 and 4 do not (with the parity
	 * always on member 3 they would).
	 */
	off[0] = 0;
	off[1] = 4 * 64 * KIB;
	at_once("raid5:members=4,stripe_kb=64,member=" FLAT, DEV_READ, off, len, 2, done);
	CHECK(done[0] == MS && done[1] == 2 * MS);
	off[0] = 64 * KIB;
	at_once("raid5:members=4,stripe_kb=64,member=" FLAT, DEV_READ, off, len, 2, done);
	CHECK(done[0] == MS && done[1] == MS);
}

TEST(moddev_raid5_full_rows_write_partial_rows_read_modify_write)
{
	uint64_t off[1] = { 0 }, done[1];
	uint32_t len[1] = { 3 * 64 * KIB };
	struct sim_load w = { DEV_WRITE, 4096, 64, 20000, 0, 0, 0 };
	struct sim_result r;

	/* a whole row: 3 data units and the parity at once, nothing read */
	at_once("raid5:members=4,stripe_kb=64,member=" FLAT, DEV_WRITE, off, len, 1, done);
	CHECK(done[0] == MS);
	/* 4 KiB: its data and parity read (1 ms), then written (1 ms) */
	len[0] = 4096;
	at_once("raid5:members=4,stripe_kb=64,member=" FLAT, DEV_WRITE, off, len, 1, done);
	CHECK(done[0] == 2 * MS);
	/*
	 * Across two rows: each row on its own. Left-symmetric puts the next
	 * row's first unit on this row's parity member, so both rows read and
	 * write members 2 and 3: row 0's reads at 1 ms, row 1's at 2, row 0's
	 * writes behind them at 3, row 1's at 4.
	 */
	off[0] = 3 * 64 * KIB - 4096;
	len[0] = 8192;
	at_once("raid5:members=4,stripe_kb=64,member=" FLAT, DEV_WRITE, off, len, 1, done);
	CHECK(done[0] == 4 * MS);
	/* random small writes cost 4 member requests each: 4 members give 1,000 a second */
	r = sim_closed_loop("raid5:members=4,stripe_kb=64,member=" FLAT, GIB, &w);
	CHECK(r.iops <= 1000 * 1.0001 && r.iops > 0.9 * 1000);
}

TEST(moddev_raid_flushes_every_member_and_members_are_any_model)
{
	struct dev_model *m = sim_model("raid5:members=3,member=(ssd:channels=1,read_us=50,"
					"program_us=1000,buffer_kb=64)",
					GIB);
	struct sim_log l = { .n = 0 };
	struct sim_load seq = { DEV_READ, 1 << 20, 1, 200, 1, 64ULL << 20, 0 };
	struct sim_result one, two;
	struct dev_req w, f;
	struct dev_sched s;
	char err[256];

	if (!m)
		return;
	/* 3 members of the ssd kind: as many servers as their flash units */
	CHECK(m->servers == 3);
	dev_sched_init(&s, m, 0, 0);
	/*
	 * A 4 KiB write: its data and parity read (50 us + the interface),
	 * then written into the SSDs' buffers, where their programs start.
	 * A flush at 500 us waits for them: 1 ms after the write was done.
	 */
	sim_req(&w, DEV_WRITE, 0, 4096);
	dev_sched_submit(&s, &w, 0, sim_logged, &l);
	dev_sched_advance(&s, 500 * US, sim_logged, &l);
	CHECK(l.n == 1 && w.done_ns == 2 * (50000 + 13653) - 50000);
	sim_req(&f, DEV_FLUSH, 0, 0);
	dev_sched_submit(&s, &f, 500 * US, sim_logged, &l);
	dev_sched_advance(&s, 10 * MS, sim_logged, &l);
	CHECK(l.n == 2 && f.done_ns == w.done_ns + MS);
	dev_model_destroy(m);

	/* two drives striped stream at twice the media rate of one */
	one = sim_closed_loop("hdd:rpm=10000,seek_track_ms=0.6,seek_avg_ms=4.5,seek_full_ms=10,"
			      "outer_mbps=90,cache_segments=4",
			      GIB, &seq);
	two = sim_closed_loop("raid0:members=2,stripe_kb=64,member=(hdd:rpm=10000,"
			      "seek_track_ms=0.6,seek_avg_ms=4.5,seek_full_ms=10,outer_mbps=90,"
			      "cache_segments=4)",
			      GIB, &seq);
	CHECK(sim_within("two drives striped", two.mbps, 2 * one.mbps, 0.1));

	/* a bad member names itself; a bad array names the array */
	CHECK(!dev_model_create("raid0:members=2,member=(fixed:channels=0,latency_us=1)", GIB, err,
				sizeof(err)));
	CHECK_STREQ(err, "fixed: channels=0: must be at least 1");
	CHECK(!dev_model_create("raid5:members=2,member=" FLAT, GIB, err, sizeof(err)));
	CHECK_STREQ(err, "raid5: members=2: must be at least 3");
	CHECK(!dev_model_create("raid10:members=3,member=" FLAT, GIB, err, sizeof(err)));
	CHECK_STREQ(err, "raid10: members=3: must be even (mirrored pairs)");
	CHECK(!dev_model_create("raid1:members=2,stripe_kb=64,member=" FLAT, GIB, err,
				sizeof(err)));
	CHECK_STREQ(err, "raid1: unknown key 'stripe_kb' (keys: members, member)");
}

TEST(moddev_members_of_members_are_bounded)
{
	struct dev_model *m;
	char err[256] = "";

	/* 32 arrays of 32 would be 1,057 models: refused in one line, nothing left made */
	CHECK(!dev_model_create("raid0:members=32,member=(raid0:members=32,member=" FLAT ")", GIB,
				err, sizeof(err)));
	CHECK_STREQ(err, "model: more than 256 models in one spec (members of members)");
	CHECK(!dev_model_create("raid0:members=16,member=(raid0:members=15,member=" FLAT ")", GIB,
				err, sizeof(err)));
	/* 1 + 15 + 225 is within; and every spec counts from nothing */
	m = dev_model_create("raid0:members=15,member=(raid0:members=15,member=" FLAT ")", GIB, err,
			     sizeof(err));
	CHECK(m && m->servers == 225);
	dev_model_destroy(m);
	m = dev_model_create("raid0:members=15,member=(raid0:members=15,member=" FLAT ")", GIB, err,
			     sizeof(err));
	CHECK(m != NULL);
	dev_model_destroy(m);
}
