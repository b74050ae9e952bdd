/*
 * iocap: the --stats file (stats.c), for iocap.c: what the capture saw,
 * and what it could not see, one "name count" line each, read by
 * scripts/fiopack/capture/bpf.py.
 */
#ifndef IOCAP_STATS_H
#define IOCAP_STATS_H

#include <stdio.h>

struct bpf_object;

/* What user space counted (the kernel side's counts are in its maps). */
struct iocap_counts {
	unsigned long long events;
	unsigned long long aio_table_full, aio_unmapped, aio_no_pair, aio_in_flight;
	unsigned long long unresolved, uring_nofile;
};

/* Writes the --stats lines of the capture of @obj (its maps) and @c to @f. */
void write_stats(FILE *f, struct bpf_object *obj, const struct iocap_counts *c);

#endif
