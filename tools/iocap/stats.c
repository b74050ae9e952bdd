// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: the --stats file. The kernel side counts what it could not send
 * in its "stats" and "uring_unmapped" maps, user space what it could not
 * name, pair or read; each is a line here, and scripts/fiopack/capture/bpf.py
 * makes the losses "incomplete" lines of the trace. iocap itself exits 3
 * when any is not empty (iocap.c), so that no loss is silent without
 * fio-pack capture either.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "iocap.h"
#include "names.h"
#include "user.h"
#include "stats.h"
#include "syscalls.h"

struct lost {
	char *text;
	size_t len, used;
	int classes;
};

/* A "name count" line; a loss (@lost) that is not empty is noted in @l too. */
static void line(FILE *f, struct lost *l, const char *name, unsigned long long n, int lost)
{
	if (f)
		fprintf(f, "%s %llu\n", name, n);
	if (!lost || !n)
		return;
	l->classes++;
	if (l->used < l->len)
		l->used += snprintf(l->text + l->used, l->len - l->used, "%s%s %llu",
				    l->classes > 1 ? ", " : "", name, n);
}

/* The kernel side's counter @what (or an element of an array map). */
static unsigned long long map_count(struct bpf_map *map, unsigned what)
{
	__u64 v = 0;

	if (bpf_map__lookup_elem(map, &what, sizeof(what), &v, sizeof(v), 0))
		die("reading the BPF map %s: %s", bpf_map__name(map), strerror(errno));
	return v;
}

int write_stats(FILE *f, struct bpf_object *obj, const struct iocap_counts *c, char *lost,
		size_t lostlen)
{
	struct bpf_map *stats = bpf_object__find_map_by_name(obj, "stats");
	struct bpf_map *urings = bpf_object__find_map_by_name(obj, "urings");
	struct bpf_map *unmapped = bpf_object__find_map_by_name(obj, "uring_unmapped");
	struct lost l = { lost, lostlen, 0, 0 };
	unsigned long long v[IOC_ST_NR] = { 0 }, left = 0, op_unmapped = 0;
	__u64 key = 0, next, *prev = NULL;
	struct rusage ru;
	unsigned i;

	lost[0] = '\0';
	for (i = 0; i < IOC_ST_NR; i++)
		v[i] = map_count(stats, i);
	while (!bpf_map__get_next_key(urings, prev, &next, sizeof(next))) {
		left++;
		key = next;
		prev = &key;
	}
	line(f, &l, "events", c->events, 0);
	line(f, &l, "ringbuf_full", v[IOC_ST_RINGBUF_FULL], 1);
	line(f, &l, "inflight_no_slot", v[IOC_ST_INFLIGHT_NO_SLOT], 1);
	line(f, &l, "uring_no_slot", v[IOC_ST_URING_NO_SLOT], 1);
	line(f, &l, "aio_no_slot", v[IOC_ST_AIO_NO_SLOT] + c->aio_table_full, 1);
	line(f, &l, "aio_cut", v[IOC_ST_AIO_CUT], 1);
	line(f, &l, "aio_unmapped", c->aio_unmapped, 1);
	line(f, &l, "unresolved", c->unresolved, 1);
	line(f, &l, "uring_nofile", c->uring_nofile, 1);
	line(f, &l, "targets_full", v[IOC_ST_TARGETS_FULL] + c->targets_full, 1);
	line(f, &l, "children_unknown", c->children_unknown, 1);
	line(f, &l, "cwd_unknown", c->cwd_unknown, 1);
	line(f, &l, "path_cut", c->path_cut, 1);
	line(f, &l, "user_unreadable", v[IOC_ST_USER_UNREADABLE] + c->path_unread, 1);
	line(f, &l, "short_records", c->short_records, 1);
	line(f, &l, "stopped_early", c->stopped_early != NULL, 1);
	if (c->stopped_early && l.used < l.len)
		l.used += snprintf(l.text + l.used, l.len - l.used, " (%s)", c->stopped_early);
	for (i = 0; i < 256; i++) {
		unsigned long long n = map_count(unmapped, i);

		if (n && f)
			fprintf(f, "uring_unmapped %u %llu\n", i, n);
		op_unmapped += n;
	}
	/* (the total of the lines above: iocap's own summary) */
	line(NULL, &l, "uring_unmapped", op_unmapped, 1);
	/* in flight when the capture stopped: the capture's edge, not a hole */
	line(f, &l, "uring_in_flight_at_end", left, 0);
	line(f, &l, "aio_in_flight_at_end", c->aio_in_flight, 0);
	line(f, &l, "aio_done_without_submit", c->aio_no_pair, 0);
	line(NULL, &l, "syscall_unseen", syscall_hook_stats(f), 1);
	line(NULL, &l, "missed_runs", missed_runs_stats(f, obj), 1);
	if (f) {
		getrusage(RUSAGE_SELF, &ru);
		fprintf(f, "cpu_user_s %.3f\ncpu_sys_s %.3f\n",
			ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
			ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	}
	return l.classes;
}
