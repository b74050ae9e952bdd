// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: the system calls it maps, and how their programs are hooked in.
 *
 * iocap.bpf.c has two ways to see a system call: a pair of programs per
 * call on its syscalls:sys_enter_NAME/sys_exit_NAME tracepoints (they run
 * only on the calls that matter), and the raw_syscalls pair, which runs on
 * every call of every process and looks the number up in a table. The
 * first is chosen wherever the kernel has the tracepoints; the second is
 * the fallback for a kernel built without them (CONFIG_FTRACE_SYSCALLS
 * off) or without tracefs, or when IOCAP_SYSCALL_HOOKS=raw asks for it (to
 * compare the two).
 * A call whose tracepoint is missing on a kernel that has the others is
 * left out, and said in the --stats file unless the kernel lacks the call
 * itself.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "iocap.h"
#include "syscalls.h"

/*
 * Each mapped call by its tracepoint name (x86-64 calls its sendfile
 * "sendfile64") and its number on this architecture. The calls an
 * architecture does not have (open, creat, ... on arm64) are not here, and
 * their programs are not loaded.
 */
static const struct { const char *name; long nr; unsigned op; } sysops[] = {
	{ "read", SYS_read, IOC_READ }, { "write", SYS_write, IOC_WRITE },
	{ "pread64", SYS_pread64, IOC_PREAD }, { "pwrite64", SYS_pwrite64, IOC_PWRITE },
	{ "readv", SYS_readv, IOC_READV }, { "writev", SYS_writev, IOC_WRITEV },
	{ "preadv", SYS_preadv, IOC_PREADV }, { "pwritev", SYS_pwritev, IOC_PWRITEV },
	{ "preadv2", SYS_preadv2, IOC_PREADV }, { "pwritev2", SYS_pwritev2, IOC_PWRITEV },
	{ "fsync", SYS_fsync, IOC_FSYNC }, { "fdatasync", SYS_fdatasync, IOC_FDATASYNC },
	{ "sync_file_range", SYS_sync_file_range, IOC_SYNC_FILE_RANGE },
	{ "syncfs", SYS_syncfs, IOC_SYNCFS },
#ifdef SYS_open
	{ "open", SYS_open, IOC_OPEN }, { "creat", SYS_creat, IOC_CREAT },
	{ "unlink", SYS_unlink, IOC_UNLINK }, { "rename", SYS_rename, IOC_RENAME },
	{ "mkdir", SYS_mkdir, IOC_MKDIR }, { "rmdir", SYS_rmdir, IOC_RMDIR },
	{ "dup2", SYS_dup2, IOC_DUP2 },
#endif
	{ "openat", SYS_openat, IOC_OPENAT }, { "openat2", SYS_openat2, IOC_OPENAT2 },
	{ "close", SYS_close, IOC_CLOSE }, { "dup", SYS_dup, IOC_DUP },
	{ "dup3", SYS_dup3, IOC_DUP3 }, { "fcntl", SYS_fcntl, IOC_FCNTL },
	{ "lseek", SYS_lseek, IOC_LSEEK }, { "ftruncate", SYS_ftruncate, IOC_FTRUNCATE },
	{ "truncate", SYS_truncate, IOC_TRUNCATE }, { "fallocate", SYS_fallocate, IOC_FALLOCATE },
	{ "unlinkat", SYS_unlinkat, IOC_UNLINKAT }, { "renameat", SYS_renameat, IOC_RENAMEAT },
	{ "renameat2", SYS_renameat2, IOC_RENAMEAT2 }, { "mkdirat", SYS_mkdirat, IOC_MKDIRAT },
	{ "chdir", SYS_chdir, IOC_CHDIR }, { "fchdir", SYS_fchdir, IOC_FCHDIR },
	{ "clone", SYS_clone, IOC_CLONE }, { "clone3", SYS_clone3, IOC_CLONE3 },
	{ "io_submit", SYS_io_submit, IOC_IO_SUBMIT },
	{ "io_getevents", SYS_io_getevents, IOC_IO_GETEVENTS },
	{ "io_pgetevents", SYS_io_pgetevents, IOC_IO_GETEVENTS },
	{ "copy_file_range", SYS_copy_file_range, IOC_COPY_FILE_RANGE },
	{ "sendfile64", SYS_sendfile, IOC_SENDFILE },
};
#define NSYSOPS (sizeof(sysops) / sizeof(sysops[0]))

#define ENTER_SEC "tracepoint/syscalls/sys_enter_"
#define EXIT_SEC "tracepoint/syscalls/sys_exit_"

static int raw;			/* the raw_syscalls pair is loaded */
static unsigned ntracepoints;	/* calls on their own tracepoints */
static const char *unseen[NSYSOPS];	/* mapped, implemented, no tracepoint */
static unsigned nunseen;

static int mapped(const char *name)
{
	unsigned i;

	for (i = 0; i < NSYSOPS; i++)
		if (!strcmp(sysops[i].name, name))
			return 1;
	return 0;
}

/*
 * The tracefs directory libbpf will read tracepoint ids from (libbpf 1.1
 * prefers the debugfs one when it exists), mounted if it is not. NULL: none.
 * IOCAP_TRACEFS=DIR: which tracepoints exist is read from DIR instead, so
 * that the tests can show a kernel without some of them.
 */
static const char *tracefs(void)
{
#define TRACEFS "/sys/kernel/tracing"
	static const char debugfs[] = "/sys/kernel/debug/tracing";
	const char *test = getenv("IOCAP_TRACEFS");
	struct stat st;

	if (test && *test)
		return test;
	if (!access(debugfs, F_OK))
		return debugfs;
	if (stat(TRACEFS "/events", &st) && mount("nodev", TRACEFS, "tracefs", 0, NULL))
		return NULL;
	return TRACEFS;
}

static int has_event(const char *dir, const char *kind, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/events/syscalls/sys_%s_%s", dir, kind, name);
	return !access(path, F_OK);
}

/*
 * Whether the running kernel implements system call @name: some symbol
 * sys_NAME, __x64_sys_NAME, __arm64_sys_NAME... in /proc/kallsyms. A call
 * the kernel lacks (openat2 before 5.6) has no tracepoint and nothing to
 * miss either. Unreadable kallsyms: assumed implemented, so a gap is said.
 */
static int implemented(const char *name)
{
	char line[512], want[128];
	size_t n;
	FILE *f = fopen("/proc/kallsyms", "r");
	int found = 0;

	if (!f)
		return 1;
	n = (size_t)snprintf(want, sizeof(want), "sys_%s", name);
	while (!found && fgets(line, sizeof(line), f)) {
		char *sym = strrchr(line, ' ');
		size_t len;

		if (!sym)
			continue;
		sym++;
		len = strcspn(sym, "\t\n");
		found = len >= n && !strncmp(sym + len - n, want, n) &&
			(len == n || sym[len - n - 1] == '_');
	}
	fclose(f);
	return found;
}

int pick_syscall_hooks(struct bpf_object *obj)
{
	const char *force = getenv("IOCAP_SYSCALL_HOOKS"), *dir = NULL;
	struct bpf_program *prog;
	struct stat st;

	if (force && *force && strcmp(force, "raw") && strcmp(force, "auto"))
		return -EINVAL;
	if (!force || strcmp(force, "raw")) {
		dir = tracefs();
		if (dir) {
			char path[512];

			snprintf(path, sizeof(path), "%s/events/syscalls", dir);
			if (stat(path, &st) || !S_ISDIR(st.st_mode))
				dir = NULL;	/* CONFIG_FTRACE_SYSCALLS off */
		}
	}
	raw = !dir;
	bpf_object__for_each_program(prog, obj) {
		const char *sec = bpf_program__section_name(prog), *name;
		int enter = !strncmp(sec, ENTER_SEC, strlen(ENTER_SEC)), keep;

		if (!strcmp(sec, "raw_tp/sys_enter") || !strcmp(sec, "raw_tp/sys_exit")) {
			bpf_program__set_autoload(prog, raw);
			continue;
		}
		if (!enter && strncmp(sec, EXIT_SEC, strlen(EXIT_SEC)))
			continue;	/* io_uring, sched: always */
		name = sec + strlen(enter ? ENTER_SEC : EXIT_SEC);
		keep = !raw && mapped(name) && has_event(dir, "enter", name) &&
		       has_event(dir, "exit", name);
		bpf_program__set_autoload(prog, keep);
		if (!enter || raw || !mapped(name))
			continue;
		if (keep)
			ntracepoints++;
		else if (implemented(name))
			unseen[nunseen++] = name;
	}
	return 0;
}

int fill_sysops(struct bpf_map *map)
{
	unsigned i;

	if (!raw)
		return 0;	/* the tracepoint programs know their call */
	for (i = 0; i < NSYSOPS; i++) {
		unsigned nr = (unsigned)sysops[i].nr, op = sysops[i].op;

		if (nr < IOCAP_MAX_NR &&
		    bpf_map__update_elem(map, &nr, sizeof(nr), &op, sizeof(op), BPF_ANY))
			return -errno;
	}
	return 0;
}

unsigned syscall_hook_stats(FILE *f)
{
	unsigned i;

	if (!f)
		return nunseen;
	fprintf(f, "syscalls_on_raw_tp %d\n", raw);
	fprintf(f, "syscalls_on_tracepoints %u\n", ntracepoints);
	for (i = 0; i < nunseen; i++)
		fprintf(f, "syscall_unseen %s 1\n", unseen[i]);
	return nunseen;
}

/*
 * Runs of @obj's programs the kernel skipped (bpf_prog_info.recursion_misses):
 * a tracepoint program does not run while another BPF program of the kind
 * is running on the same CPU, and that call or request is then not seen.
 */
unsigned long long missed_runs_stats(FILE *f, struct bpf_object *obj)
{
	struct bpf_program *prog;
	unsigned long long total = 0;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		if (info.recursion_misses && f)
			fprintf(f, "prog_missed %s %llu\n", bpf_program__name(prog),
				(unsigned long long)info.recursion_misses);
		total += info.recursion_misses;
	}
	if (f)
		fprintf(f, "missed_runs %llu\n", total);
	return total;
}

static void *destroy_link(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

/*
 * Detaches every program of @s at once. Each syscalls:* tracepoint link
 * waits for an RCU grace period as it is closed (about 60 ms here on 6.18),
 * so the ~90 links closed one by one (bpf_object__detach_skeleton) took 5 s
 * to stop a capture; closed from one thread each, the waits overlap.
 */
void detach_all(struct bpf_object_skeleton *s)
{
	pthread_t tid[256];
	int i, n = 0;

	for (i = 0; i < s->prog_cnt; i++) {
		struct bpf_link **link = s->progs[i].link;

		if (!*link)
			continue;
		if (n < 256 && !pthread_create(&tid[n], NULL, destroy_link, *link))
			n++;
		else
			bpf_link__destroy(*link);
		*link = NULL;
	}
	while (n)
		pthread_join(tid[--n], NULL);
}
