/*
 * libFuzzer target for the model specs of the modeled-device daemon
 * (tools/moddev/devspec.h) and the models they make. The input is a spec.
 * The parser must never crash, and an error is one line starting with
 * "NAME: " (the model or "model"). Parsed against every model the daemon
 * knows (the kinds, the arrays and the cache with their member models in
 * parentheses, the named models) and two made-up ones, a kind with a member
 * and a named model. A spec the daemon accepts
 * makes a model that then serves requests in simulated time, and must
 * keep the interface's promises (devmodel.h): every request completes, no
 * earlier than it arrived and no later than next_event said, in
 * non-decreasing completion order.
 *
 *   make fuzz-run-modelspec FUZZ_SECONDS=60
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmodel.h"
#include "devsched.h"
#include "devspec.h"

static void check_err(const char *err)
{
	const char *colon = strchr(err, ':');

	if (strchr(err, '\n') || !colon || colon == err || colon[1] != ' ')
		abort();
}

/* clang-format off */
static const struct dev_param pair_params[] = {
	{ "members", 2, 8, 2, 0, 1, 0, "how many" },
	{ "member", 0, 0, 0, 1, 0, 1, "the member model" },
};
/* clang-format on */
static const struct dev_model_type pair = {
	.name = "pair",
	.params = pair_params,
	.nparams = 2,
};
static const struct dev_model_type named = {
	.name = "named",
	.alias_of = "fixed:channels=2,latency_us=80",
};
/* every model the daemon knows, and the two above */
static const struct dev_model_type *table[64];

static void fill_table(void)
{
	unsigned n = 0;

	if (table[0])
		return;
	for (; dev_model_types[n] && n < 61; n++)
		table[n] = dev_model_types[n];
	table[n++] = &pair;
	table[n++] = &named;
}

#define NREQ 48

struct order {
	uint64_t last;
	unsigned done;
};

static void completed(void *arg, struct dev_req *r)
{
	struct order *o = arg;

	if (r->done_ns < o->last || r->done_ns < r->start_ns || r->start_ns < r->arrival_ns)
		abort();
	o->last = r->done_ns;
	o->done++;
}

/* The model serves NREQ requests, arriving in bursts, read, write and flush. */
static void serve(const char *spec, uint32_t seed)
{
	static struct dev_req reqs[NREQ];
	struct order o = { 0, 0 };
	struct dev_model *m;
	struct dev_sched s;
	char err[256];
	uint64_t now = 0, next;
	unsigned i;

	m = dev_model_create(spec, 1ULL << 30, err, sizeof(err));
	if (!m) {
		check_err(err);
		return;
	}
	if (!m->servers)
		abort();
	dev_sched_init(&s, m, 0, seed % 50000);
	for (i = 0; i < NREQ; i++) {
		seed = seed * 1103515245 + 12345;
		memset(&reqs[i], 0, sizeof(reqs[i]));
		reqs[i].op = (seed >> 8) % 8 == 0 ? DEV_FLUSH
			     : (seed >> 8) % 2	  ? DEV_WRITE
						  : DEV_READ;
		reqs[i].len = reqs[i].op == DEV_FLUSH ? 0 : 512u << ((seed >> 12) % 12);
		reqs[i].offset = ((uint64_t)(seed >> 4) << 9) % ((1ULL << 30) - reqs[i].len);
		now += (seed >> 20) % 4 ? 0 : (seed >> 16) % 2000000;
		if (dev_sched_submit(&s, &reqs[i], now, completed, &o))
			abort();
	}
	while ((next = dev_sched_next(&s)) != DEV_NEVER) {
		if (next < o.last)
			abort();
		dev_sched_advance(&s, next, completed, &o);
	}
	if (o.done != NREQ || s.inflight)
		abort();
	dev_model_destroy(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct dev_model_type *type;
	struct dev_params p;
	char err[256], *spec;
	uint32_t seed = 0;
	size_t i;

	spec = malloc(size + 1);
	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	for (i = 0; i < size; i++)
		seed = seed * 31 + data[i];
	fill_table();
	if (dev_spec_parse((const struct dev_model_type *const *)table, spec, size, &type, &p, err,
			   sizeof(err)))
		check_err(err);
	if (!memchr(data, '\0', size))
		serve(spec, seed);
	free(spec);
	return 0;
}
