/*
 * fixed:channels=C,latency_us=D[,write_latency_us=W][,mbps=B]: C servers
 * with a fixed service time (D for a read, W for a write), plus len/B of
 * transfer on the server, requests served first come, first served by the
 * earliest free server. It is an M/D/C queue whose answers are known in
 * closed form (C/D requests a second when saturated, D alone at depth 1),
 * so the daemon's own behaviour is checked against it and the other
 * models are checked against what it measures.
 *
 * A flush completes when it arrives: there is no cache to empty (the block
 * layer has already waited for the writes it orders).
 */
#include <stdlib.h>

#include "devmodel.h"
#include "errmsg.h"
#include "reqheap.h"

/* clang-format off */
enum { P_CHANNELS, P_LATENCY, P_WRITE_LATENCY, P_MBPS };

static const struct dev_param fixed_params[] = {
	[P_CHANNELS]      = { "channels", 1, 1024, 0, 1, 1, 0,
			      "servers working at once (1-1024)" },
	[P_LATENCY]       = { "latency_us", 0, 10e6, 0, 1, 0, 0,
			      "service time of a read, in microseconds" },
	[P_WRITE_LATENCY] = { "write_latency_us", 0, 10e6, 0, 0, 0, 0,
			      "service time of a write, in microseconds (default: latency_us)" },
	[P_MBPS]          = { "mbps", 0.1, 1e6, 0, 0, 0, 0,
			      "transfer rate of a server, in MB/s (10^6 bytes/s; default: no transfer time)" },
};
/* clang-format on */

struct fixed_model {
	struct dev_model m;
	uint64_t latency_ns[DEV_NR_OPS];
	double ns_per_byte; /* 0: no transfer time */
	unsigned channels;
	uint64_t *free_at; /* min-heap: when each server is next free */
	struct req_heap serving;
};

static struct fixed_model *fixed_of(const struct dev_model *m)
{
	return (struct fixed_model *)m;
}

/* The earliest-free server is busy until @until. */
static void take_server(struct fixed_model *f, uint64_t until)
{
	uint64_t *h = f->free_at;
	unsigned i = 0, child, n = f->channels;

	for (;;) {
		child = 2 * i + 1;
		if (child >= n)
			break;
		if (child + 1 < n && h[child + 1] < h[child])
			child++;
		if (h[child] >= until)
			break;
		h[i] = h[child];
		i = child;
	}
	h[i] = until;
}

static int fixed_submit(struct dev_model *m, struct dev_req *r)
{
	struct fixed_model *f = fixed_of(m);
	uint64_t service = 0;

	r->start_ns = r->arrival_ns;
	if (r->op != DEV_FLUSH) {
		service = f->latency_ns[r->op];
		if (f->ns_per_byte > 0)
			service += (uint64_t)(r->len * f->ns_per_byte + 0.5);
		if (f->free_at[0] > r->start_ns)
			r->start_ns = f->free_at[0];
	}
	r->done_ns = r->start_ns + service;
	if (req_heap_push(&f->serving, r))
		return -1;
	if (r->op != DEV_FLUSH)
		take_server(f, r->done_ns);
	return 0;
}

static uint64_t fixed_next_event(const struct dev_model *m)
{
	const struct dev_req *r = req_heap_top(&fixed_of(m)->serving);

	return r ? r->done_ns : DEV_NEVER;
}

static void fixed_advance(struct dev_model *m, uint64_t now, dev_done_fn done, void *arg)
{
	struct fixed_model *f = fixed_of(m);
	struct dev_req *r;

	while ((r = req_heap_top(&f->serving)) && r->done_ns <= now) {
		req_heap_pop(&f->serving);
		m->service_ns += r->done_ns - r->start_ns;
		done(arg, r);
	}
}

static void fixed_destroy(struct dev_model *m)
{
	struct fixed_model *f = fixed_of(m);

	req_heap_free(&f->serving);
	free(f->free_at);
	free(f);
}

static const struct dev_model_ops fixed_ops = {
	.submit = fixed_submit,
	.next_event = fixed_next_event,
	.advance = fixed_advance,
	.destroy = fixed_destroy,
};

static struct dev_model *fixed_create(const struct dev_params *p, uint64_t size, char *err,
				      size_t errlen)
{
	struct fixed_model *f = calloc(1, sizeof(*f));

	if (f)
		f->free_at = calloc((size_t)p->v[P_CHANNELS], sizeof(*f->free_at));
	if (!f || !f->free_at) {
		free(f);
		pack_errf(err, errlen, "fixed: out of memory");
		return NULL;
	}
	f->m.ops = &fixed_ops;
	f->m.type = &dev_model_fixed;
	f->m.size = size;
	f->m.servers = f->channels = (unsigned)p->v[P_CHANNELS];
	f->latency_ns[DEV_READ] = (uint64_t)(p->v[P_LATENCY] * 1000 + 0.5);
	f->latency_ns[DEV_WRITE] = p->given[P_WRITE_LATENCY]
					   ? (uint64_t)(p->v[P_WRITE_LATENCY] * 1000 + 0.5)
					   : f->latency_ns[DEV_READ];
	if (p->given[P_MBPS])
		f->ns_per_byte = 1000.0 / p->v[P_MBPS];
	return &f->m;
}

DEV_MODEL_KIND(fixed, "C servers with a fixed service time, plus len/B of transfer", fixed_params,
	       fixed_create,
	       "none: the queueing reference (an M/D/C queue), not a device of the field");
