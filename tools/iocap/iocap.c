// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: captures the file I/O of running processes with eBPF (iocap.bpf.c)
 * and writes it as the text `strace -f -ttt -yy -T` would, so that one
 * converter (`scripts/fio-pack capture`) turns either tracer's output into a
 * dbtrace trace. What strace cannot show is written the same way:
 *
 * - an io_uring request (read, write, readv, writev, read_fixed,
 *   write_fixed, fsync, sync_file_range) is a pread64/pwrite64/fsync/
 *   fdatasync/sync_file_range line of the thread that submitted it, at its
 *   submission time, with the file the kernel resolved for it (registered
 *   files too) and its result;
 * - a libaio iocb likewise, paired with its io_event;
 * - read/write/readv/writev (file position implied) are pread64/pwrite64 at
 *   the position the kernel had for the file at entry, so no position needs
 *   tracking;
 * - descriptors carry the path of their file (found by device and inode:
 *   from /proc/PID/fd at start, then from the opens, renames and unlinks it
 *   sees).
 *
 * Lines are written in issue order (a min-heap, held back one second past
 * the latest completion seen), as strace's are.
 *
 * What it could not see is counted and written to --stats FILE, for
 * `fio-pack capture` to put in the trace's header.
 *
 * This file sets the capture up and reads its ring buffer; events.c writes
 * each event, lines.c puts the lines in order.
 */
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "events.h"
#include "iocap.h"
#include "iocap.skel.h"
#include "lines.h"
#include "names.h"
#include "outfile.h"
#include "stats.h"
#include "syscalls.h"
#include "targets.h"
#include "user.h"

#define PROG "iocap"
/* --duration at most: a year. strtod takes "inf" and "1e999" (inf), which
 * the loop's comparison never reaches: a capture without the limit asked */
#define DURATION_MAX (365.0 * 24 * 3600)

/* -o, --stats, --ready: opened at the start, renamed into place when written */
static struct outfile out_trace = { .fd = -1 }, out_stats = { .fd = -1 }, out_ready = { .fd = -1 };
static volatile sig_atomic_t capturing, stop;

/*
 * Before the capture runs a signal ends iocap as it would without a
 * handler, its temporary files removed (unlink is async-signal-safe); from
 * then on it ends the capture, which is written out.
 */
static void on_signal(int sig)
{
	if (!capturing) {
		struct outfile *o[] = { &out_trace, &out_stats, &out_ready };

		for (unsigned i = 0; i < ARRAY_SIZE(o); i++)
			if (o[i]->tmp)
				unlink(o[i]->tmp);
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	stop = 1;
}

/* die()'s clean-up: the outputs not yet in place are removed. */
static void abort_outputs(void)
{
	outfile_abort(&out_trace);
	outfile_abort(&out_stats);
	outfile_abort(&out_ready);
}

/* @path (the value of option @opt) opened by the pack's rules for an output (outfile.h). */
static void open_output(struct outfile *o, const char *opt, const char *path)
{
	char err[512];

	if (outfile_open(o, path, err, sizeof(err)))
		die("%s %s: %s", opt, path, err);
}

/*
 * Whether outputs @a and @b are to replace the same file (-o FILE --stats
 * FILE, or a link to it): the one committed last replaced the other, and
 * the capture or its statistics were lost with exit 0. A device or FIFO
 * written in place (-o /dev/null --stats /dev/null) may be shared.
 */
static int same_replaced_file(const struct outfile *a, const struct outfile *b)
{
	const char *na, *nb;
	char da[PATH_MAX], db[PATH_MAX];
	struct stat sa, sb;

	if (a->fd < 0 || b->fd < 0 || !a->tmp || !b->tmp)
		return 0;
	na = strrchr(a->path, '/');
	nb = strrchr(b->path, '/');
	if (strcmp(na ? na + 1 : a->path, nb ? nb + 1 : b->path))
		return 0;
	snprintf(da, sizeof(da), "%.*s", na ? (int)(na - a->path) + 1 : 1, na ? a->path : ".");
	snprintf(db, sizeof(db), "%.*s", nb ? (int)(nb - b->path) + 1 : 1, nb ? b->path : ".");
	return !stat(da, &sa) && !stat(db, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A stream on output @o's descriptor, closed before @o is committed. */
static FILE *output_stream(struct outfile *o, const char *opt, const char *path)
{
	int fd = dup(o->fd);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	if (!f)
		die("%s %s: %s", opt, path, strerror(errno));
	return f;
}

/* Why the ring buffer was not read to the end: an "incomplete" class of --stats. */
static char stopped_early[160];

/* Flushes and closes @f, then puts output @o in place. */
static void close_output(FILE *f, struct outfile *o, const char *opt, const char *path)
{
	if (fflush(f) || ferror(f)) {
		int e = errno;

		fclose(f);
		die("%s %s: write error: %s", opt, path, strerror(e));
	}
	if (fclose(f) || outfile_commit(o))
		die("%s %s: %s", opt, path, strerror(errno));
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN && getenv("IOCAP_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: iocap -p PID [-p PID]... | --cgroup DIR  [-o FILE] [--stats FILE]\n"
		   "             [--duration SECONDS] [--ready FILE] [--no-children] [--btf FILE]\n"
		   "\n"
		   "Captures the file I/O of the processes PID (their threads, and the children\n"
		   "they have or fork unless --no-children) or of every process of the cgroup\n"
		   "DIR (a cgroup v2 directory), with eBPF, until SIGINT or SIGTERM, --duration\n"
		   "(seconds, at most a year), or the end of the processes. Writes it in\n"
		   "strace's -f -ttt -yy -T form to FILE (default: standard output): system\n"
		   "calls, io_uring requests and libaio iocbs, each with its file, offset,\n"
		   "length and result. --stats FILE gets what it could not see, one 'name\n"
		   "count' line each. --btf FILE: the kernel's BTF from FILE instead of\n"
		   "/sys/kernel/btf/vmlinux. Needs root (CAP_BPF and CAP_PERFMON).\n"
		   "scripts/fio-pack capture --tracer bpf runs it.\n"
		   "\n"
		   "FILE of -o, --stats and --ready: a regular file (or a new one) is written\n"
		   "under a temporary name in its directory and renamed into place when\n"
		   "complete; a character device or a FIFO is written in place; a symbolic link\n"
		   "is followed, as the shell's > does; a block device, a directory or a socket\n"
		   "is refused.\n"
		   "\n"
		   "Exit status: 0; 2 on an error (one line); 3 when the capture is written but\n"
		   "could not see everything (one line naming what, as --stats does).\n");
}

/* What the command line asks for. */
struct options {
	unsigned pids[64], npids;
	const char *cgroup, *outpath, *stats, *ready, *btf;
	/* --cgroup's id: cgroup v2's is its directory's inode */
	unsigned long long cgroup_id;
	double duration; /* 0: until the processes end or a signal */
	int children;
};

/* The options into @o, checked before anything is opened (exits on --help or an error). */
static void parse_args(int argc, char **argv, struct options *o)
{
	/* clang-format off */
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' }, { "cgroup", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' }, { "stats", required_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 'd' }, { "ready", required_argument, NULL, 'r' },
		{ "no-children", no_argument, NULL, 'n' }, { "btf", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	/* clang-format on */
	const char *hooks;
	struct stat bst;
	unsigned i;
	char *end;
	int c;

	o->children = 1;
	while ((c = getopt_long(argc, argv, "p:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			long v = strtol(optarg, &end, 10);

			if (*end || v <= 0 || v > INT_MAX)
				die("--pid '%s': not a process id", optarg);
			if (o->npids == ARRAY_SIZE(o->pids))
				die("--pid: at most %zu", ARRAY_SIZE(o->pids));
			o->pids[o->npids++] = (unsigned)v;
			break;
		}
		case 'c':
			o->cgroup = optarg;
			break;
		case 'o':
			o->outpath = optarg;
			break;
		case 's':
			o->stats = optarg;
			break;
		case 'r':
			o->ready = optarg;
			break;
		case 'b':
			o->btf = optarg;
			break;
		case 'n':
			o->children = 0;
			break;
		case 'd':
			o->duration = strtod(optarg, &end);
			/* written so that nan and inf fail it too */
			if (*end || !(o->duration > 0 && o->duration <= DURATION_MAX))
				die("--duration '%s': not a number of seconds above 0 and at most "
				    "%.0f (a year)",
				    optarg, DURATION_MAX);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see iocap --help)", argv[optind]);
	if (!o->npids == !o->cgroup)
		die("give the processes to capture: -p PID (repeatable) or --cgroup DIR");
	for (i = 0; i < o->npids; i++)
		if (!alive(o->pids[i]))
			die("--pid %u: no such process", o->pids[i]);
	/* looked at first: libbpf's open of a FIFO waited for a writer for ever */
	if (o->btf && !stat(o->btf, &bst) && !S_ISREG(bst.st_mode))
		die("--btf %s: not a regular file (the kernel's BTF is read from a file)", o->btf);
	if (o->btf && access(o->btf, R_OK))
		die("--btf %s: %s (the kernel's BTF is needed to read its structures)", o->btf,
		    strerror(errno));
	if (!o->btf && access("/sys/kernel/btf/vmlinux", R_OK))
		die("this kernel has no BTF (/sys/kernel/btf/vmlinux: %s): the BPF capture needs "
		    "CONFIG_DEBUG_INFO_BTF; use fio-pack capture --tracer strace", strerror(errno));
	if (o->cgroup) {
		struct statfs sf;
		struct stat st;

		if (statfs(o->cgroup, &sf) || stat(o->cgroup, &st))
			die("--cgroup %s: %s", o->cgroup, strerror(errno));
		if (sf.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode))
			die("--cgroup %s: not a cgroup v2 directory", o->cgroup);
		o->cgroup_id = st.st_ino;
	}
	hooks = getenv("IOCAP_SYSCALL_HOOKS");
	if (hooks && *hooks && strcmp(hooks, "raw") && strcmp(hooks, "auto"))
		die("IOCAP_SYSCALL_HOOKS='%s': raw or auto", hooks);
}

/* -o, --stats and --ready opened, and refused when two would replace one file. */
static void open_outputs(const struct options *o)
{
	if (o->outpath)
		open_output(&out_trace, "-o", o->outpath);
	if (o->stats)
		open_output(&out_stats, "--stats", o->stats);
	if (o->ready)
		open_output(&out_ready, "--ready", o->ready);
	if (same_replaced_file(&out_trace, &out_stats) ||
	    same_replaced_file(&out_trace, &out_ready))
		die("-o %s and %s %s are the same file: one would replace the other", o->outpath,
		    same_replaced_file(&out_trace, &out_stats) ? "--stats" : "--ready",
		    same_replaced_file(&out_trace, &out_stats) ? o->stats : o->ready);
	if (same_replaced_file(&out_stats, &out_ready))
		die("--stats %s and --ready %s are the same file: one would replace the other",
		    o->stats, o->ready);
}

/* The BPF program opened, set for @o, loaded, and its tables filled. */
static struct iocap_bpf *load(const struct options *o)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = o->btf);
	struct iocap_bpf *skel;
	unsigned i;
	int err;

	libbpf_set_print(libbpf_quiet);
	skel = iocap_bpf__open_opts(&oo);
	if (!skel)
		die("cannot open the BPF program: %s", strerror(errno));
	if (o->cgroup)
		skel->rodata->target_cgroup = o->cgroup_id;
	skel->rodata->follow_children = o->children;
	if (test_hook("IOCAP_TEST_TARGETS_MAX"))
		bpf_map__set_max_entries(skel->maps.targets,
					 (__u32)test_hook("IOCAP_TEST_TARGETS_MAX"));
	if (pick_syscall_hooks(skel->obj))
		die("IOCAP_SYSCALL_HOOKS='%s': raw or auto", getenv("IOCAP_SYSCALL_HOOKS"));
	err = iocap_bpf__load(skel);
	if (err) {
		if (err == -EPERM || errno == EPERM)
			die("loading the BPF program: permission denied (run as root, or with "
			    "CAP_BPF and CAP_PERFMON)");
		die("loading the BPF program: %s", strerror(-err));
	}
	err = fill_sysops(skel->maps.sysops);
	if (err)
		die("filling the system call table: %s", strerror(-err));
	for (i = 0; i < o->npids; i++) {
		if (add_target(skel->maps.targets, o->pids[i]))
			continue;
		scan_fds(o->pids[i]);
		cwd_of(o->pids[i]);
		if (o->children)
			add_children(skel->maps.targets, o->pids[i], 0);
	}
	return skel;
}

/* The programs attached and the capture started; its ring buffer, read by on_event. */
static struct ring_buffer *start(const struct options *o, struct iocap_bpf *skel)
{
	struct ring_buffer *rb;
	unsigned i;
	int err;

	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, NULL, NULL);
	if (!rb)
		die("cannot set up the ring buffer: %s", strerror(errno));
	err = iocap_bpf__attach(skel);
	if (err)
		die("attaching to the tracepoints: %s", strerror(-err));
	capturing = 1;
	/*
	 * Every program is attached: first only the calls that name files are
	 * seen, then the open files are named again from /proc, then every
	 * call is captured (iocap.bpf.c, armed). A file opened before the
	 * first step is open in /proc at the second, or was closed before any
	 * call of the capture; one opened after is named by its open.
	 */
	skel->bss->armed = 1;
	if (o->cgroup) {
		scan_cgroup(o->cgroup);
	} else {
		/* and a child forked before the attach is not yet in the table */
		if (o->children)
			for (i = 0; i < o->npids; i++)
				add_children(skel->maps.targets, o->pids[i], 0);
		scan_targets(skel->maps.targets);
	}
	skel->bss->armed = 2;
	if (o->ready && outfile_commit(&out_ready))
		die("--ready %s: %s", o->ready, strerror(errno));
	return rb;
}

/*
 * Reads the ring buffer until a signal, --duration or the end of the
 * processes, then detaches and drains it; a read that failed is said in
 * stopped_early.
 */
static void capture_loop(const struct options *o, struct iocap_bpf *skel, struct ring_buffer *rb)
{
	struct timespec t0, now;
	long polls = 0;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		/* events come without wake-ups (iocap.bpf.c): read them every 100 ms */
		err = ring_buffer__poll(rb, 100);
		if (err >= 0)
			err = ring_buffer__consume(rb);
		if (++polls == test_hook("IOCAP_TEST_POLL_ERROR"))
			err = -EIO;
		if (err < 0 && err != -EINTR) {
			snprintf(stopped_early, sizeof(stopped_early),
				 "reading the ring buffer: %s", strerror(-err));
			break;
		}
		flush_lines(0);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (o->duration &&
		    (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 >= o->duration)
			break;
		if (!o->cgroup && !any_target_alive(skel->maps.targets))
			break;
	}
	/* detach first, then drain what is in the ring */
	detach_all(skel->skeleton);
	err = ring_buffer__consume(rb);
	if (err < 0 && !stopped_early[0])
		snprintf(stopped_early, sizeof(stopped_early), "draining the ring buffer: %s",
			 strerror(-err));
	flush_lines(1);
}

/*
 * The --stats file written and put in place. Returns how many classes of
 * what the capture could not see are not empty, each said in @lost.
 */
static int write_stats_file(const struct options *o, struct iocap_bpf *skel, char *lost,
			    size_t lostlen)
{
	FILE *f = o->stats ? output_stream(&out_stats, "--stats", o->stats) : NULL;
	struct iocap_counts c = {
		.targets_full = targets_full,
		.children_unknown = children_unknown,
		.stopped_early = stopped_early[0] ? stopped_early : NULL,
	};
	int incomplete;

	events_counted(&c);
	incomplete = write_stats(f, skel->obj, &c, lost, lostlen);
	if (f)
		close_output(f, &out_stats, "--stats", o->stats);
	return incomplete;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct iocap_bpf *skel;
	struct ring_buffer *rb;
	char lost[512];
	int incomplete;
	FILE *out;

	die_cleanup(abort_outputs);
	parse_args(argc, argv, &o);
	/* refused before anything is loaded; gone again if the capture fails */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	open_outputs(&o);
	skel = load(&o);
	events_start();
	out = o.outpath ? output_stream(&out_trace, "-o", o.outpath) : stdout;
	lines_open(out);
	rb = start(&o, skel);
	capture_loop(&o, skel, rb);
	if (o.outpath)
		close_output(out, &out_trace, "-o", o.outpath);
	else if (fflush(out) || ferror(out))
		die("-o -: write error: %s", strerror(errno));
	incomplete = write_stats_file(&o, skel, lost, sizeof(lost));
	ring_buffer__free(rb);
	iocap_bpf__destroy(skel);
	/* written whole, but not all of it was seen: said, and not exit 0 */
	if (incomplete) {
		fprintf(stderr,
			PROG ": the capture is incomplete (%d class%s of what it could not see, "
			     "in --stats): %s\n",
			incomplete, incomplete > 1 ? "es" : "", lost);
		return 3;
	}
	return 0;
}
