// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: the --stats file. The kernel side counts what it could not send
 * in its "stats" and "uring_unmapped" maps, user space what it could not
 * name or pair; each is a line here, and scripts/fiopack/capture/bpf.py
 * makes the losses "incomplete" lines of the trace.
 */
#include <bpf/libbpf.h>
#include <sys/resource.h>

#include "iocap.h"
#include "stats.h"
#include "syscalls.h"

void write_stats(FILE *f, struct bpf_object *obj, const struct iocap_counts *c)
{
	struct bpf_map *stats = bpf_object__find_map_by_name(obj, "stats");
	struct bpf_map *urings = bpf_object__find_map_by_name(obj, "urings");
	struct bpf_map *unmapped = bpf_object__find_map_by_name(obj, "uring_unmapped");
	unsigned long long v[IOC_ST_NR] = { 0 }, left = 0;
	__u64 key = 0, next, *prev = NULL;
	struct rusage ru;
	unsigned i;

	for (i = 0; i < IOC_ST_NR; i++)
		bpf_map__lookup_elem(stats, &i, sizeof(i), &v[i], sizeof(v[i]), 0);
	while (!bpf_map__get_next_key(urings, prev, &next, sizeof(next))) {
		left++;
		key = next;
		prev = &key;
	}
	fprintf(f, "events %llu\n", c->events);
	fprintf(f, "ringbuf_full %llu\n", v[IOC_ST_RINGBUF_FULL]);
	fprintf(f, "inflight_no_slot %llu\n", v[IOC_ST_INFLIGHT_NO_SLOT]);
	fprintf(f, "uring_no_slot %llu\n", v[IOC_ST_URING_NO_SLOT]);
	fprintf(f, "aio_no_slot %llu\n", v[IOC_ST_AIO_NO_SLOT] + c->aio_table_full);
	fprintf(f, "aio_cut %llu\n", v[IOC_ST_AIO_CUT]);
	fprintf(f, "aio_unmapped %llu\n", c->aio_unmapped);
	fprintf(f, "unresolved %llu\n", c->unresolved);
	fprintf(f, "uring_nofile %llu\n", c->uring_nofile);
	for (i = 0; i < 256; i++) {
		__u64 n = 0;

		bpf_map__lookup_elem(unmapped, &i, sizeof(i), &n, sizeof(n), 0);
		if (n)
			fprintf(f, "uring_unmapped %u %llu\n", i, (unsigned long long)n);
	}
	/* in flight when the capture stopped: the capture's edge, not a hole */
	fprintf(f, "uring_in_flight_at_end %llu\n", left);
	fprintf(f, "aio_in_flight_at_end %llu\n", c->aio_in_flight);
	fprintf(f, "aio_done_without_submit %llu\n", c->aio_no_pair);
	syscall_hook_stats(f);
	missed_runs_stats(f, obj);
	getrusage(RUSAGE_SELF, &ru);
	fprintf(f, "cpu_user_s %.3f\ncpu_sys_s %.3f\n",
		ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
}
