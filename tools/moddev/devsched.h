/*
 * The clock between the daemon and a model: it keeps the model's calls in
 * time order, gives each request its arrival time (back-dated by the
 * kernel's share of a round trip, see docs/devices.md) and keeps the
 * device's statistics as `fio-pack device stats` prints them: requests,
 * bytes and latency per direction, time with k requests in the device,
 * busy time and utilisation. No threads and no clock of its own (the
 * daemon passes the time and holds a lock), so it is unit-tested with
 * made-up times.
 */
#ifndef MODDEV_DEVSCHED_H
#define MODDEV_DEVSCHED_H

#include <stdint.h>

#include "devmodel.h"
#include "lathist.h"

struct jsonl;

/* time with 0..127 requests in the device, the last bucket 128 or more */
#define DEV_INFLIGHT_BUCKETS 129

struct dev_dir_stats {
	uint64_t requests, bytes;
	struct lathist latency; /* arrival to completion, as the model saw it */
};

struct dev_sched {
	struct dev_model *model;
	uint64_t backdate_ns;
	uint64_t clock_ns; /* the model's time: the latest submit or event run */
	uint64_t up_ns;	   /* the statistics' start */
	uint64_t seq;
	unsigned inflight, inflight_max;
	uint64_t inflight_since;
	uint64_t inflight_ns[DEV_INFLIGHT_BUCKETS];
	struct dev_dir_stats dir[DEV_NR_OPS];
	uint64_t refused; /* requests the model could not hold (out of memory) */
};

void dev_sched_init(struct dev_sched *s, struct dev_model *m, uint64_t now, uint64_t backdate_ns);
/*
 * @r (op, offset, len and owner set) arrives at @now less the back-dating,
 * never before the model's clock (its last event run, or its last arrival). What completes by then is handed to
 * @done first. 0, or -1 when the model could not hold it (then it is not
 * in the device: the caller fails it).
 */
int dev_sched_submit(struct dev_sched *s, struct dev_req *r, uint64_t now, dev_done_fn done,
		     void *arg);
/*
 * Runs the model's events up to @now: each request completing goes to
 * @done, in time order. The model's clock is left at its last event.
 */
void dev_sched_advance(struct dev_sched *s, uint64_t now, dev_done_fn done, void *arg);
/* When the model next has something to do (DEV_NEVER: nothing in it). */
uint64_t dev_sched_next(const struct dev_sched *s);
/* The statistics at @now as members of the innermost object of @w. */
void dev_sched_json(const struct dev_sched *s, uint64_t now, struct jsonl *w);

#endif
