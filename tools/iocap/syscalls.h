/*
 * iocap: which system calls it maps and how its programs see them
 * (syscalls.c), for iocap.c.
 */
#ifndef IOCAP_SYSCALLS_H
#define IOCAP_SYSCALLS_H

#include <stdio.h>

struct bpf_object;
struct bpf_object_skeleton;
struct bpf_map;

/*
 * Before the load: keeps the per-call tracepoint programs of @obj whose
 * tracepoints this kernel has, or the raw_syscalls pair where it has none
 * (or IOCAP_SYSCALL_HOOKS=raw), and drops the others. -EINVAL: the variable
 * holds something else than raw or auto.
 */
int pick_syscall_hooks(struct bpf_object *obj);

/* After the load: the number-to-call table the raw_syscalls pair reads. */
int fill_sysops(struct bpf_map *map);

/*
 * The --stats lines (@f NULL: none): how calls were hooked, the mapped ones
 * not seen; returns how many mapped calls were not seen.
 */
unsigned syscall_hook_stats(FILE *f);

/* The --stats lines (@f NULL: none): program runs the kernel skipped; returns their number. */
unsigned long long missed_runs_stats(FILE *f, struct bpf_object *obj);

/* Detaches all of @s's programs, their links closed in parallel. */
void detach_all(struct bpf_object_skeleton *s);

#endif
