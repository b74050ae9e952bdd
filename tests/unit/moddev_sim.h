/*
 * What the model unit tests share (tests/unit/test_moddev_*.c): a model
 * from a spec, and a closed-loop workload in simulated time (each
 * completion brings the next request at once, as fio does at a fixed
 * depth), through the clock the daemon uses (devsched.h).
 */
#ifndef MODDEV_SIM_H
#define MODDEV_SIM_H

#include <stdint.h>

#include "devmodel.h"

#define US 1000ULL
#define MS 1000000ULL

/* The model of @spec for a device of @size bytes; NULL (and the reason printed) if refused. */
struct dev_model *sim_model(const char *spec, uint64_t size);

/* What completed, in order: a dev_done_fn's argument. */
struct sim_log {
	struct dev_req *r[256];
	unsigned n;
};
void sim_logged(void *arg, struct dev_req *r);

/* @r as a fresh request. */
void sim_req(struct dev_req *r, enum dev_op op, uint64_t offset, uint32_t len);

struct sim_load {
	enum dev_op op;
	uint32_t bs;
	unsigned depth;
	unsigned total;	   /* requests to complete */
	int sequential;	   /* else uniformly random, bs-aligned, over the device */
	uint64_t span;	   /* bytes the offsets cover (0: the whole device) */
	uint64_t think_ns; /* from a completion to the request it brings */
};

struct sim_result {
	double iops, mbps; /* MB/s: 10^6 bytes */
	double mean_latency_ns;
	uint64_t elapsed_ns;
};

/* Runs @load on the model of @spec (a device of @size bytes). */
struct sim_result sim_closed_loop(const char *spec, uint64_t size, const struct sim_load *load);

/*
 * The datasheet truths for a drive (a CHECK each): random 4 KiB
 * reads at depth 1 within 10% of 1 / (average seek + half a revolution +
 * transfer), sequential 1 MiB reads at depth 1 within 10% of the outer
 * media rate, depth 32 at least 1.4x depth 1.
 */
void sim_hdd_datasheet_truths(const char *spec, uint64_t size, double avg_seek_ms, double rpm,
			      double outer_mbps);

/* |got / want - 1| <= tol, printing both when not. */
int sim_within(const char *what, double got, double want, double tol);

#endif
