/*
 * Tests of the fixed model and of the clock around it (tools/moddev:
 * model_fixed.c, devsched.h), in simulated time: the M/D/C answers the
 * daemon is measured against, and the statistics `fio-pack device stats`
 * prints.
 */
#include <stdlib.h>
#include <string.h>

#include "devmodel.h"
#include "devsched.h"
#include "jsonl.h"
#include "test.h"

#define US 1000ULL
#define MS 1000000ULL

struct log {
	struct dev_req *r[4096];
	unsigned n;
};

static void logged(void *arg, struct dev_req *r)
{
	struct log *l = arg;

	if (l->n < 4096)
		l->r[l->n++] = r;
}

static struct dev_model *model(const char *spec)
{
	char err[256] = "";
	struct dev_model *m = dev_model_create(spec, 1ULL << 30, err, sizeof(err));

	if (!m)
		printf("%s: %s\n", spec, err);
	return m;
}

static void req(struct dev_req *r, enum dev_op op, uint64_t off, uint32_t len)
{
	memset(r, 0, sizeof(*r));
	r->op = op;
	r->offset = off;
	r->len = len;
}

TEST(moddev_fixed_serves_c_at_a_time_first_come_first_served)
{
	struct dev_model *m = model("fixed:channels=4,latency_us=1000");
	struct dev_req r[16];
	struct dev_sched s;
	struct log l = { .n = 0 };
	unsigned i;

	CHECK(m && m->servers == 4);
	if (!m)
		return;
	dev_sched_init(&s, m, 0, 0);
	for (i = 0; i < 16; i++) {
		req(&r[i], DEV_READ, i * 16384ULL, 16384);
		CHECK(dev_sched_submit(&s, &r[i], 0, logged, &l) == 0);
	}
	CHECK(dev_sched_next(&s) == 1 * MS);
	dev_sched_advance(&s, 1 * MS - 1, logged, &l);
	CHECK(l.n == 0);
	dev_sched_advance(&s, 10 * MS, logged, &l);
	CHECK(l.n == 16);
	for (i = 0; i < l.n; i++) {
		/* in arrival order, four every millisecond */
		CHECK(l.r[i] == &r[i]);
		CHECK(r[i].done_ns == (i / 4 + 1) * MS);
		CHECK(r[i].start_ns == (i / 4) * MS);
		CHECK(r[i].arrival_ns == 0);
	}
	CHECK(dev_sched_next(&s) == DEV_NEVER);
	CHECK(m->service_ns == 16 * MS);
	/* time with k in flight: 16, 12, 8 and 4 for a millisecond each */
	CHECK(s.inflight_ns[16] == MS && s.inflight_ns[12] == MS && s.inflight_ns[8] == MS &&
	      s.inflight_ns[4] == MS);
	CHECK(s.inflight_ns[0] == 0 && s.inflight == 0 && s.inflight_max == 16);
	CHECK(s.dir[DEV_READ].requests == 16 && s.dir[DEV_READ].bytes == 16 * 16384);
	CHECK(s.dir[DEV_READ].latency.min == MS && s.dir[DEV_READ].latency.max == 4 * MS);
	dev_model_destroy(m);
}

/*
 * A closed loop of @depth requests (each completion brings the next at
 * once, as fio does): the completions per second.
 */
static double closed_loop_iops(const char *spec, unsigned depth, unsigned total)
{
	struct dev_model *m = model(spec);
	struct dev_req *r = calloc(depth, sizeof(*r));
	struct dev_sched s;
	struct log l = { .n = 0 };
	unsigned i, issued = 0, done = 0;
	uint64_t now = 0;

	if (!m || !r)
		return -1;
	dev_sched_init(&s, m, 0, 0);
	for (i = 0; i < depth; i++, issued++) {
		req(&r[i], DEV_READ, i * 4096ULL, 4096);
		dev_sched_submit(&s, &r[i], 0, logged, &l);
	}
	while (done < total) {
		l.n = 0;
		now = dev_sched_next(&s);
		dev_sched_advance(&s, now, logged, &l);
		for (i = 0; i < l.n; i++, done++) {
			struct dev_req *q = l.r[i];

			req(q, DEV_READ, (issued++ % 1000) * 4096ULL, 4096);
			dev_sched_submit(&s, q, now, logged, &l);
		}
	}
	dev_model_destroy(m);
	free(r);
	return done * 1e9 / now;
}

TEST(moddev_fixed_saturates_at_c_over_d)
{
	unsigned depth;

	/* the truth: 4,000 IOPS from depth 4 up, 1/D alone */
	for (depth = 4; depth <= 64; depth *= 2) {
		double iops = closed_loop_iops("fixed:channels=4,latency_us=1000", depth, 4000);

		CHECK(iops > 3999 && iops < 4001);
	}
	CHECK(closed_loop_iops("fixed:channels=4,latency_us=1000", 1, 1000) > 999.9);
	CHECK(closed_loop_iops("fixed:channels=4,latency_us=1000", 1, 1000) < 1000.1);
	CHECK(closed_loop_iops("fixed:channels=4,latency_us=1000", 2, 1000) > 1999.9);
	for (depth = 1; depth <= 32; depth *= 2) {
		double iops = closed_loop_iops("fixed:channels=1,latency_us=8000", depth, 200);

		CHECK(iops > 124.99 && iops < 125.01);
	}
}

TEST(moddev_fixed_write_latency_transfer_and_flush)
{
	/* 4.096 MB/s: 4096 bytes take 1 ms on the server */
	struct dev_model *m =
		model("fixed:channels=1,latency_us=100,write_latency_us=300,mbps=4.096");
	struct dev_req w, rd, f;
	struct dev_sched s;
	struct log l = { .n = 0 };

	if (!m)
		return;
	dev_sched_init(&s, m, 0, 0);
	req(&w, DEV_WRITE, 0, 4096);
	req(&rd, DEV_READ, 4096, 4096);
	req(&f, DEV_FLUSH, 0, 0);
	dev_sched_submit(&s, &w, 0, logged, &l);
	dev_sched_submit(&s, &rd, 0, logged, &l);
	/* a flush has no cache to empty here: done as it arrives, before the others */
	dev_sched_submit(&s, &f, 10 * US, logged, &l);
	dev_sched_advance(&s, 10 * MS, logged, &l);
	CHECK(l.n == 3);
	CHECK(l.n == 3 && l.r[0] == &f && l.r[1] == &w && l.r[2] == &rd);
	CHECK(f.done_ns == 10 * US);
	CHECK(w.done_ns == 300 * US + 1 * MS);
	CHECK(rd.start_ns == w.done_ns && rd.done_ns == w.done_ns + 100 * US + 1 * MS);
	CHECK(s.dir[DEV_FLUSH].requests == 1 && s.dir[DEV_FLUSH].bytes == 0);
	CHECK(s.dir[DEV_WRITE].requests == 1 && s.dir[DEV_WRITE].bytes == 4096);
	dev_model_destroy(m);
}

TEST(moddev_sched_backdates_never_before_the_model_clock)
{
	struct dev_model *m = model("fixed:channels=1,latency_us=1000");
	struct dev_req a, b, c, e;
	struct dev_sched s;
	struct log l = { .n = 0 };

	if (!m)
		return;
	dev_sched_init(&s, m, 50 * US, 30 * US);
	req(&a, DEV_READ, 0, 512);
	dev_sched_submit(&s, &a, 100 * US, logged, &l);
	CHECK(a.arrival_ns == 70 * US && a.done_ns == 1070 * US);
	/*
	 * Advanced to 1100 us (a completion thread woken late), the model's
	 * clock is at its last event, 1070 us: the next arrival is back-dated
	 * in full into the idle time since.
	 */
	dev_sched_advance(&s, 1100 * US, logged, &l);
	CHECK(l.n == 1 && s.clock_ns == 1070 * US);
	req(&b, DEV_READ, 0, 512);
	dev_sched_submit(&s, &b, 1110 * US, logged, &l);
	CHECK(b.arrival_ns == 1080 * US && b.done_ns == 2080 * US);
	/* never before an event the model has run (b's completion at 2080 us) */
	dev_sched_advance(&s, 2200 * US, logged, &l);
	CHECK(l.n == 2 && s.clock_ns == 2080 * US);
	req(&c, DEV_READ, 0, 512);
	dev_sched_submit(&s, &c, 2100 * US, logged, &l);
	CHECK(c.arrival_ns == 2080 * US);
	/* nor before an arrival it has seen */
	req(&e, DEV_READ, 0, 512);
	dev_sched_submit(&s, &e, 2090 * US, logged, &l);
	CHECK(e.arrival_ns == 2080 * US && e.start_ns == 3080 * US);
	/* what completed before an arrival is handed over by its submit */
	dev_sched_submit(&s, &a, 5 * MS, logged, &l);
	CHECK(a.arrival_ns == 5 * MS - 30 * US);
	CHECK(l.n == 4 && l.r[2] == &c && l.r[3] == &e);
	CHECK(s.seq == 5 && b.seq == 1 && c.seq == 2 && e.seq == 3 && a.seq == 4);
	dev_model_destroy(m);
}

TEST(moddev_sched_json_is_the_device_statistics)
{
	struct dev_model *m = model("fixed:channels=2,latency_us=1000");
	struct jsonl w = { 0 };
	struct dev_req r[4];
	struct dev_sched s;
	struct log l = { .n = 0 };
	unsigned i;

	if (!m)
		return;
	dev_sched_init(&s, m, 0, 0);
	for (i = 0; i < 4; i++) {
		req(&r[i], i % 2 ? DEV_WRITE : DEV_READ, 0, 4096);
		dev_sched_submit(&s, &r[i], 0, logged, &l);
	}
	dev_sched_advance(&s, 2 * MS, logged, &l);
	/* 2 ms busy of 4 elapsed: 4 ms of service on 2 servers */
	jsonl_begin(&w);
	dev_sched_json(&s, 4 * MS, &w);
	CHECK(jsonl_end(&w) == 0);
	CHECK(strstr(w.buf, "\"elapsed_ns\":4000000,"));
	CHECK(strstr(w.buf, "\"read\":{\"requests\":2,\"bytes\":8192,\"latency\":{\"n\":2,"));
	CHECK(strstr(w.buf, "\"write\":{\"requests\":2,\"bytes\":8192,"));
	CHECK(strstr(w.buf, "\"flush\":{\"requests\":0,\"bytes\":0,"));
	CHECK(strstr(w.buf, "\"busy_ns\":2000000,\"servers\":2,\"service_ns\":4000000,"
			    "\"utilisation\":0.5,"));
	CHECK(strstr(w.buf, "\"in_flight\":{\"now\":0,\"max\":4,\"mean\":1.5,"
			    "\"time_ns\":[2000000,0,1000000,0,1000000]}"));
	CHECK(strstr(w.buf, "\"refused\":0"));
	jsonl_free(&w);
	dev_model_destroy(m);
}

TEST(moddev_create_refuses_with_one_line)
{
	char err[256] = "";

	CHECK(!dev_model_create("fixed:channels=0,latency_us=1", 1 << 20, err, sizeof(err)));
	CHECK_ERRLINE(err, "fixed");
	CHECK(!dev_model_create("nosuch", 1 << 20, err, sizeof(err)));
	CHECK_ERRLINE(err, "model");
}
