/* The daemon's clock around a model, and the device's statistics: see devsched.h. */
#include <string.h>

#include "devsched.h"
#include "jsonl.h"

void dev_sched_init(struct dev_sched *s, struct dev_model *m, uint64_t now, uint64_t backdate_ns)
{
	memset(s, 0, sizeof(*s));
	s->model = m;
	s->backdate_ns = backdate_ns;
	s->clock_ns = s->up_ns = s->inflight_since = now;
}

/* The time since the last change of the number in flight goes to its bucket. */
static void account(struct dev_sched *s, uint64_t t)
{
	unsigned k = s->inflight < DEV_INFLIGHT_BUCKETS ? s->inflight : DEV_INFLIGHT_BUCKETS - 1;

	if (t > s->inflight_since) {
		s->inflight_ns[k] += t - s->inflight_since;
		s->inflight_since = t;
	}
}

struct done_ctx {
	struct dev_sched *s;
	dev_done_fn done;
	void *arg;
};

static void completed(void *arg, struct dev_req *r)
{
	struct done_ctx *c = arg;
	struct dev_sched *s = c->s;
	struct dev_dir_stats *d = &s->dir[r->op];

	account(s, r->done_ns);
	s->inflight--;
	d->requests++;
	d->bytes += r->len;
	lathist_add(&d->latency, r->done_ns - r->arrival_ns);
	c->done(c->arg, r);
}

/*
 * Runs the model's events up to @t, one event time at a time rather than
 * straight to @t: the model's clock then stays at its last event, so that
 * an arrival back-dated into the idle time after it (at depth 1: the time
 * the reply and the next request spent in the kernel, and the completion
 * thread's own wake-up) is still in the model's time order. Run to @t
 * itself, no clock was left behind: the completion thread, woken late,
 * moved the clock past the time the next request was back-dated to.
 */
static void run_to(struct dev_sched *s, uint64_t t, dev_done_fn done, void *arg)
{
	const struct dev_model_ops *ops = s->model->ops;
	struct done_ctx c = { s, done, arg };
	uint64_t next, last = 0;
	int ran = 0;

	while ((next = ops->next_event(s->model)) <= t) {
		if (next < s->clock_ns)
			next = s->clock_ns;
		if (ran && next <= last) {
			/* a model whose event stays due after its advance: at once to @t */
			ops->advance(s->model, t, completed, &c);
			s->clock_ns = t;
			return;
		}
		ops->advance(s->model, next, completed, &c);
		s->clock_ns = last = next;
		ran = 1;
	}
}

int dev_sched_submit(struct dev_sched *s, struct dev_req *r, uint64_t now, dev_done_fn done,
		     void *arg)
{
	uint64_t t = now > s->backdate_ns ? now - s->backdate_ns : 0;

	if (t < s->clock_ns)
		t = s->clock_ns;
	run_to(s, t, done, arg);
	/* the model has seen @t now: nothing after it may be earlier */
	s->clock_ns = t;
	r->arrival_ns = t;
	r->start_ns = r->done_ns = 0;
	r->seq = s->seq++;
	r->next = NULL;
	if (s->model->ops->submit(s->model, r)) {
		s->refused++;
		return -1;
	}
	account(s, t);
	if (++s->inflight > s->inflight_max)
		s->inflight_max = s->inflight;
	return 0;
}

void dev_sched_advance(struct dev_sched *s, uint64_t now, dev_done_fn done, void *arg)
{
	run_to(s, now, done, arg);
}

uint64_t dev_sched_next(const struct dev_sched *s)
{
	return s->model->ops->next_event(s->model);
}

void dev_sched_json(const struct dev_sched *s, uint64_t now, struct jsonl *w)
{
	uint64_t hist[DEV_INFLIGHT_BUCKETS], elapsed, busy, weighted = 0;
	unsigned k, last = 0, cur;
	int op;

	/* the statistics up to @now, without changing them */
	memcpy(hist, s->inflight_ns, sizeof(hist));
	cur = s->inflight < DEV_INFLIGHT_BUCKETS ? s->inflight : DEV_INFLIGHT_BUCKETS - 1;
	if (now > s->inflight_since)
		hist[cur] += now - s->inflight_since;
	elapsed = now > s->up_ns ? now - s->up_ns : 0;
	for (k = 0; k < DEV_INFLIGHT_BUCKETS; k++) {
		weighted += k * hist[k];
		if (hist[k])
			last = k;
	}
	busy = elapsed > hist[0] ? elapsed - hist[0] : 0;

	jsonl_u64(w, "elapsed_ns", elapsed);
	for (op = 0; op < DEV_NR_OPS; op++) {
		jsonl_obj(w, dev_op_names[op]);
		jsonl_u64(w, "requests", s->dir[op].requests);
		jsonl_u64(w, "bytes", s->dir[op].bytes);
		jsonl_lat(w, "latency", &s->dir[op].latency);
		jsonl_close(w);
	}
	jsonl_u64(w, "busy_ns", busy);
	jsonl_u64(w, "servers", s->model->servers);
	jsonl_u64(w, "service_ns", s->model->service_ns);
	jsonl_dbl(w, "utilisation",
		  elapsed ? (double)s->model->service_ns / ((double)s->model->servers * elapsed)
			  : 0);
	jsonl_obj(w, "in_flight");
	jsonl_u64(w, "now", s->inflight);
	jsonl_u64(w, "max", s->inflight_max);
	jsonl_dbl(w, "mean", elapsed ? (double)weighted / elapsed : 0);
	jsonl_arr(w, "time_ns");
	for (k = 0; k <= last; k++)
		jsonl_u64(w, NULL, hist[k]);
	jsonl_close(w);
	jsonl_close(w);
	jsonl_u64(w, "refused", s->refused);
}
