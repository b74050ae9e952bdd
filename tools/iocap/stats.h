/*
 * iocap: the --stats file (stats.c), for iocap.c: what the capture saw,
 * and what it could not see, one "name count" line each, read by
 * scripts/fiopack/capture/bpf.py.
 */
#ifndef IOCAP_STATS_H
#define IOCAP_STATS_H

#include <stddef.h>
#include <stdio.h>

struct bpf_object;

/* What user space counted (the kernel side's counts are in its maps). */
struct iocap_counts {
	unsigned long long events;
	unsigned long long aio_table_full, aio_unmapped, aio_no_pair, aio_in_flight;
	unsigned long long unresolved, uring_nofile;
	unsigned long long targets_full;	  /* processes not put in the "targets" table */
	unsigned long long children_unknown;	  /* processes whose children /proc did not list */
	unsigned long long cwd_unknown;		  /* relative paths of a process of unknown cwd */
	unsigned long long path_cut, path_unread; /* calls that succeeded on a path not whole */
	unsigned long long short_records;	  /* ring buffer records shorter than an event */
	const char *stopped_early; /* why the ring buffer was not read to the end, or NULL */
};

/*
 * Writes the --stats lines of the capture of @obj (its maps) and @c to @f
 * (NULL: none). Returns how many classes of what the capture could not see
 * are not empty, each said in @lost ("targets_full 3, stopped_early 1 (...)").
 */
int write_stats(FILE *f, struct bpf_object *obj, const struct iocap_counts *c, char *lost,
		size_t lostlen);

#endif
