/* The model unit tests' simulated workloads: see moddev_sim.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devsched.h"
#include "moddev_sim.h"
#include "test.h"

struct dev_model *sim_model(const char *spec, uint64_t size)
{
	char err[256] = "";
	struct dev_model *m = dev_model_create(spec, size, err, sizeof(err));

	if (!m)
		printf("%s: %s\n", spec, err);
	return m;
}

void sim_logged(void *arg, struct dev_req *r)
{
	struct sim_log *l = arg;

	if (l->n < 256)
		l->r[l->n++] = r;
}

void sim_req(struct dev_req *r, enum dev_op op, uint64_t offset, uint32_t len)
{
	memset(r, 0, sizeof(*r));
	r->op = op;
	r->offset = offset;
	r->len = len;
}

struct done_list {
	struct dev_req *r[1024];
	unsigned n;
};

static void collect(void *arg, struct dev_req *r)
{
	struct done_list *l = arg;

	if (l->n < 1024)
		l->r[l->n++] = r;
}

struct gen {
	const struct sim_load *load;
	uint64_t span, next, seed;
};

static uint64_t next_offset(struct gen *g)
{
	uint64_t blocks = g->span / g->load->bs, off;

	if (g->load->sequential) {
		off = g->next;
		g->next = (g->next + g->load->bs) % (blocks * g->load->bs);
		return off;
	}
	/* the high bits of the LCG, scaled to the range: its low bits repeat too soon */
	g->seed = g->seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint64_t)((double)(g->seed >> 11) / (double)(1ULL << 53) * blocks) * g->load->bs;
}

struct sim_result sim_closed_loop(const char *spec, uint64_t size, const struct sim_load *load)
{
	struct sim_result res = { 0, 0, 0, 0 };
	struct dev_model *m = sim_model(spec, size);
	struct dev_req *r = calloc(load->depth, sizeof(*r));
	struct gen g = { load, load->span ? load->span : size, 0, 1 };
	struct done_list l = { .n = 0 };
	struct dev_sched s;
	unsigned i, done = 0;
	uint64_t now = 0, next, lat = 0;
	/* requests waiting for their think time: when each is due */
	uint64_t *due = calloc(load->depth, sizeof(*due));
	unsigned *idle = calloc(load->depth, sizeof(*idle)), nidle = 0;

	if (!m || !r || !due || !idle)
		goto out;
	dev_sched_init(&s, m, 0, 0);
	for (i = 0; i < load->depth; i++) {
		sim_req(&r[i], load->op, next_offset(&g), load->bs);
		dev_sched_submit(&s, &r[i], 0, collect, &l);
	}
	while (done < load->total) {
		next = dev_sched_next(&s);
		for (i = 0; i < nidle; i++)
			if (due[idle[i]] < next)
				next = due[idle[i]];
		if (next == DEV_NEVER)
			break;
		now = next;
		l.n = 0;
		dev_sched_advance(&s, now, collect, &l);
		for (i = 0; i < l.n; i++, done++) {
			unsigned k = l.r[i] - r;

			lat += l.r[i]->done_ns - l.r[i]->arrival_ns;
			due[k] = now + load->think_ns;
			idle[nidle++] = k;
		}
		for (i = 0; i < nidle;) {
			unsigned k = idle[i];

			if (due[k] > now) {
				i++;
				continue;
			}
			idle[i] = idle[--nidle];
			sim_req(&r[k], load->op, next_offset(&g), load->bs);
			dev_sched_submit(&s, &r[k], now, collect, &l);
		}
	}
	res.elapsed_ns = now;
	res.iops = done * 1e9 / now;
	res.mbps = res.iops * load->bs / 1e6;
	res.mean_latency_ns = (double)lat / done;
out:
	dev_model_destroy(m);
	free(r);
	free(due);
	free(idle);
	return res;
}

int sim_within(const char *what, double got, double want, double tol)
{
	if (fabs(got / want - 1) <= tol)
		return 1;
	printf("  %s: %.6g, want %.6g within %g%%\n", what, got, want, tol * 100);
	return 0;
}

void sim_hdd_datasheet_truths(const char *spec, uint64_t size, double avg_seek_ms, double rpm,
			      double outer_mbps)
{
	struct sim_load rnd = { DEV_READ, 4096, 1, 3000, 0, 0, 0 };
	struct sim_load seq = { DEV_READ, 1 << 20, 1, 300, 1, 0, 0 };
	struct sim_result one, deep, stream;
	double rev_ms = 60e3 / rpm, want;

	one = sim_closed_loop(spec, size, &rnd);
	/* average seek + half a revolution + the transfer (at the outer rate: the bound) */
	want = 1e3 / (avg_seek_ms + rev_ms / 2 + 4096 / (outer_mbps * 1e3));
	CHECK(sim_within("random 4 KiB reads at depth 1, IOPS", one.iops, want, 0.10));
	rnd.depth = 32;
	rnd.total = 6000;
	deep = sim_closed_loop(spec, size, &rnd);
	CHECK(deep.iops >= 1.4 * one.iops);
	/* from the start of the device: the outer zone */
	seq.span = 64ULL << 20;
	stream = sim_closed_loop(spec, size, &seq);
	CHECK(sim_within("sequential 1 MiB reads at depth 1, MB/s", stream.mbps, outer_mbps, 0.10));
}
