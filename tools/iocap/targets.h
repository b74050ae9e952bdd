/*
 * iocap: which processes are traced (targets.c), for iocap.c.
 */
#ifndef IOCAP_TARGETS_H
#define IOCAP_TARGETS_H

struct bpf_map;

/* What could not be traced: --stats classes targets_full, children_unknown. */
extern unsigned long long targets_full;	    /* processes not put in @targets */
extern unsigned long long children_unknown; /* processes whose children /proc did not list */

/* Whether process @pid lives (a zombie does not: its parent may wait for the capture). */
int alive(unsigned pid);
/* Puts process @pid in the table @targets. 0, or -1 counted in targets_full. */
int add_target(struct bpf_map *targets, unsigned pid);
/* @pid's descendants from /proc into @targets, their files and cwds named. */
void add_children(struct bpf_map *targets, unsigned pid, int depth);
/* The files and cwds of cgroup @dir's processes at the start. */
void scan_cgroup(const char *dir);
/* The open files of every process in @targets. */
void scan_targets(struct bpf_map *targets);
/* Whether any process of @targets lives; the dead ones leave it. */
int any_target_alive(struct bpf_map *targets);

#endif
