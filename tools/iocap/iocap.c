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

#include "iocap.h"
#include "iocap.skel.h"
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

		for (unsigned i = 0; i < 3; i++)
			if (o[i]->tmp)
				unlink(o[i]->tmp);
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	stop = 1;
}

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	outfile_abort(&out_trace);
	outfile_abort(&out_stats);
	outfile_abort(&out_ready);
	exit(2);
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

/*
 * What user space could not see, each an "incomplete" class of --stats
 * (with the kernel side's "stats" map, targets.c's and syscalls.c's).
 */
static unsigned long long cwd_unknown;		 /* relative paths of a process of unknown cwd */
static unsigned long long path_cut, path_unread; /* calls with a path not whole */
static unsigned long long short_records; /* ring buffer records shorter than an event head */
static char stopped_early[160];		 /* why the ring buffer was not read to the end */

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

void *xmalloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		die("out of memory");
	return p;
}

/* ------------------------------------------------------------------ */
/* Output in strace's form, in issue order                            */
/* ------------------------------------------------------------------ */

struct line {
	unsigned long long ts, seq;
	char *text;
};
static struct line *heap;
static size_t hlen, hcap;
static unsigned long long seqno, latest;
static FILE *out;

static int before(const struct line *a, const struct line *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

static void hpush(unsigned long long ts, char *text)
{
	size_t i;

	if (hlen == hcap) {
		hcap = hcap ? hcap * 2 : 4096;
		heap = realloc(heap, hcap * sizeof(*heap));
		if (!heap)
			die("out of memory");
	}
	i = hlen++;
	heap[i] = (struct line){ ts, seqno++, text };
	while (i && before(&heap[i], &heap[(i - 1) / 2])) {
		struct line t = heap[i];

		heap[i] = heap[(i - 1) / 2];
		heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static void hpop(void)
{
	size_t i = 0;

	fputs(heap[0].text, out);
	free(heap[0].text);
	heap[0] = heap[--hlen];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct line t;

		if (l < hlen && before(&heap[l], &heap[m]))
			m = l;
		if (r < hlen && before(&heap[r], &heap[m]))
			m = r;
		if (m == i)
			break;
		t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/* Writes what was issued more than a second before the latest completion. */
static void flush_lines(int all)
{
	while (hlen && (all || heap[0].ts + 1000000000ULL < latest))
		hpop();
}

/* strace's escapes, and <, > so an annotation ends where it should */
static void quote(char *dst, size_t len, const char *s)
{
	size_t n = 0;

	for (; *s && n + 5 < len; s++) {
		unsigned char c = *s;

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>')
			n += snprintf(dst + n, len - n, "\\x%02x", c);
		else
			dst[n++] = c;
	}
	dst[n] = '\0';
}

static unsigned long long unresolved;

/* "FD</path>", "FD</path>(deleted)", "FD<other:[ino]>" or "FD" */
static void fdtext(char *dst, size_t len, unsigned tgid, long long fd, const struct iocap_file *f)
{
	const struct fent *e;
	char q[PATH_MAX * 2];

	if (!f->mode) {
		snprintf(dst, len, "%lld", fd);
		return;
	}
	if (!S_ISREG(f->mode) && !S_ISDIR(f->mode)) {
		snprintf(dst, len, "%lld<other:[%llu]>", fd, f->ino);
		return;
	}
	e = path_of(tgid, fd, f);
	if (!e) {
		unresolved++;
		snprintf(dst, len, "%lld", fd);
		return;
	}
	quote(q, sizeof(q), e->path);
	snprintf(dst, len, "%lld<%s>%s", fd, q, e->deleted ? "(deleted)" : "");
}

static void result(char *dst, size_t len, long long ret)
{
	if (ret < 0 && ret > -4096) {
		const char *name = strerrorname_np((int)-ret);

		snprintf(dst, len, "-1 %s (%s)", name ? name : "E?", strerror((int)-ret));
	} else {
		snprintf(dst, len, "%lld", ret);
	}
}

static void emit(const struct iocap_event *ev, const char *call, const char *res)
{
	/*
	 * Issue and completion each cut to the microsecond, the latency their
	 * difference: a latency rounded on its own could end a call after the
	 * next call of its thread was issued in the same microsecond, a request
	 * in flight that never was. (The test build's IOCAP_TEST_TIME_DIV=N
	 * runs the clock N times slower, so that calls meet in a microsecond.)
	 */
	long slow = test_hook("IOCAP_TEST_TIME_DIV");
	unsigned long long div = slow > 1 ? (unsigned long long)slow : 1;
	unsigned long long us = ev->ts / div / 1000, end = ev->te / div / 1000;
	unsigned long long lat = end > us ? end - us : 0;
	char *text;

	if (ev->early) /* before the start: its names were all it was sent for */
		return;
	if (asprintf(&text, "%u %llu.%06llu %s = %s <%llu.%06llu>\n", ev->tid, us / 1000000,
		     us % 1000000, call, res, lat / 1000000, lat % 1000000) < 0)
		die("out of memory");
	hpush(ev->ts, text);
}

static const char *open_flags(unsigned long long fl, char *buf, size_t len)
{
	static const struct { unsigned long long bit; const char *name; } bits[] = {
		{ O_CREAT, "O_CREAT" }, { O_EXCL, "O_EXCL" }, { O_NOCTTY, "O_NOCTTY" },
		{ O_TRUNC, "O_TRUNC" }, { O_APPEND, "O_APPEND" }, { O_NONBLOCK, "O_NONBLOCK" },
		{ O_SYNC & ~O_DSYNC, "O_SYNC" }, { O_DSYNC, "O_DSYNC" }, { O_DIRECT, "O_DIRECT" },
		{ O_NOFOLLOW, "O_NOFOLLOW" }, { O_NOATIME, "O_NOATIME" }, { O_CLOEXEC, "O_CLOEXEC" },
		{ O_PATH, "O_PATH" }, { O_TMPFILE & ~O_DIRECTORY, "O_TMPFILE" }, { O_DIRECTORY, "O_DIRECTORY" },
	};
	size_t n;
	unsigned i;

	n = snprintf(buf, len, "%s", (fl & O_ACCMODE) == O_WRONLY ? "O_WRONLY" :
		     (fl & O_ACCMODE) == O_RDWR ? "O_RDWR" : "O_RDONLY");
	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (fl & bits[i].bit)
			n += snprintf(buf + n, n < len ? len - n : 0, "|%s", bits[i].name);
	return buf;
}

/* @ev's path argument made absolute: against its dirfd's directory or the cwd. */
static void abs_path(const struct iocap_event *ev, const char *path, long long dirfd,
		     const struct iocap_file *dir, char *outp, size_t len)
{
	const struct fent *e = NULL;
	const char *base;

	if (path[0] == '/') {
		join("/", path, outp, len);
		return;
	}
	if (dirfd != AT_FDCWD && dirfd >= 0) {
		e = path_of(ev->tgid, dirfd, dir);
		if (!e)
			unresolved++; /* named against a directory it cannot name */
	}
	base = e ? e->path : cwd_of(ev->tgid);
	if (!e && !*base && dirfd == AT_FDCWD)
		cwd_unknown++;
	join(*base ? base : "/", path, outp, len);
}

/* ------------------------------------------------------------------ */
/* libaio: iocbs waiting for their io_event                            */
/* ------------------------------------------------------------------ */

struct aio {
	unsigned long long ctx, obj;	/* obj 0: free */
	struct iocap_event ev;
};
static struct aio *aios;
static size_t acap = 1 << 16, acount;
static unsigned long long aio_no_pair, aio_table_full, aio_unmapped;

static struct aio *aslot(unsigned long long ctx, unsigned long long obj, int add)
{
	size_t i = (size_t)((obj ^ ctx * 31) * 0x9e3779b97f4a7c15ULL >> 20) & (acap - 1);
	size_t k;

	for (k = 0; k < acap; k++, i = (i + 1) & (acap - 1)) {
		if (aios[i].obj == obj && aios[i].ctx == ctx)
			return &aios[i];
		if (!aios[i].obj)
			return add ? &aios[i] : NULL;
	}
	return NULL;
}

static void aio_forget(struct aio *a)
{
	/* backward-shift deletion keeps the probe chains intact */
	size_t i = a - aios, j = i;

	aios[i].obj = 0;
	acount--;
	for (;;) {
		size_t h;

		j = (j + 1) & (acap - 1);
		if (!aios[j].obj)
			return;
		h = (size_t)((aios[j].obj ^ aios[j].ctx * 31) * 0x9e3779b97f4a7c15ULL >> 20) & (acap - 1);
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			aios[i] = aios[j];
			aios[j].obj = 0;
			i = j;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static unsigned long long nevents, uring_nofile;

static void data_call(const struct iocap_event *ev, int write, long long fd,
		      const struct iocap_file *f, unsigned long long count, unsigned long long off)
{
	char call[PATH_MAX * 3], fdt[PATH_MAX * 2 + 64], res[128];

	fdtext(fdt, sizeof(fdt), ev->tgid, fd, f);
	snprintf(call, sizeof(call), "%s(%s, \"\"..., %llu, %llu)", write ? "pwrite64" : "pread64",
		 fdt, count, off);
	result(res, sizeof(res), ev->ret);
	emit(ev, call, res);
}

static void fd_call(const struct iocap_event *ev, const char *name, const char *rest)
{
	char call[PATH_MAX * 3], fdt[PATH_MAX * 2 + 64], res[128];

	fdtext(fdt, sizeof(fdt), ev->tgid, ev->fd, &ev->f);
	snprintf(call, sizeof(call), "%s(%s%s)", name, fdt, rest);
	result(res, sizeof(res), ev->ret);
	emit(ev, call, res);
}

static void on_syscall(const struct iocap_event *ev)
{
	char call[PATH_MAX * 9], p1[PATH_MAX], p2[PATH_MAX], q1[PATH_MAX * 4],
	     q2[PATH_MAX * 4], res[PATH_MAX * 4 + 128], rest[256], fl[256];
	const struct iocap_file *f = &ev->f;
	int ok = ev->ret >= 0;

	/*
	 * A call that succeeded on a path the capture does not have whole
	 * named some other file: not written, counted. A chdir's leaves the
	 * working directory unknown.
	 */
	if (ev->cut && ok) {
		if (ev->early)
			; /* before the capture: nothing lost */
		else if (ev->cut & IOCAP_PATH_UNREAD)
			path_unread++;
		else
			path_cut++;
		if (ev->op == IOC_CHDIR)
			set_cwd(ev->tgid, "");
		return;
	}
	switch (ev->op) {
	case IOC_READ: case IOC_READV:
		data_call(ev, 0, ev->fd, f, ev->a[1], f->pos);
		return;
	case IOC_WRITE: case IOC_WRITEV:
		data_call(ev, 1, ev->fd, f, ev->a[1], (f->flags & O_APPEND) ? (unsigned long long)f->size
								     : (unsigned long long)f->pos);
		return;
	case IOC_PREAD: case IOC_PWRITE:
		data_call(ev, ev->op == IOC_PWRITE, ev->fd, f, ev->a[1], ev->a[2]);
		return;
	case IOC_PREADV: case IOC_PWRITEV:
		/* preadv2/pwritev2 with offset -1 use the file position */
		data_call(ev, ev->op == IOC_PWRITEV, ev->fd, f, ev->a[1],
			  (long long)ev->a[2] == -1 ? (unsigned long long)f->pos : ev->a[2]);
		return;
	case IOC_FSYNC:
		fd_call(ev, "fsync", "");
		return;
	case IOC_FDATASYNC:
		fd_call(ev, "fdatasync", "");
		return;
	case IOC_SYNCFS:
		fd_call(ev, "syncfs", "");
		return;
	case IOC_SYNC_FILE_RANGE:
		snprintf(rest, sizeof(rest), ", %lld, %lld, %llu", (long long)ev->a[0],
			 (long long)ev->a[1], ev->a[2]);
		fd_call(ev, "sync_file_range", rest);
		return;
	case IOC_CLOSE: {
		unsigned long long u = unresolved;

		fd_call(ev, "close", "");
		unresolved = u;	/* a close loses no I/O, even of a file it cannot name */
		return;
	}
	case IOC_FTRUNCATE:
		snprintf(rest, sizeof(rest), ", %lld", (long long)ev->a[0]);
		fd_call(ev, "ftruncate", rest);
		return;
	case IOC_FALLOCATE: {
		static const char *const modes[] = { "FALLOC_FL_KEEP_SIZE", "FALLOC_FL_PUNCH_HOLE",
			"FALLOC_FL_NO_HIDE_STALE", "FALLOC_FL_COLLAPSE_RANGE", "FALLOC_FL_ZERO_RANGE",
			"FALLOC_FL_INSERT_RANGE", "FALLOC_FL_UNSHARE_RANGE" };
		size_t n = 0;
		unsigned i;

		fl[0] = '\0';
		for (i = 0; i < 7; i++)
			if (ev->a[0] & (1u << i))
				n += snprintf(fl + n, sizeof(fl) - n, "%s%s", n ? "|" : "", modes[i]);
		snprintf(rest, sizeof(rest), ", %s, %lld, %lld", n ? fl : "0", (long long)ev->a[1],
			 (long long)ev->a[2]);
		fd_call(ev, "fallocate", rest);
		return;
	}
	case IOC_LSEEK: {
		static const char *const whence[] = { [SEEK_SET] = "SEEK_SET",
						      [SEEK_CUR] = "SEEK_CUR",
						      [SEEK_END] = "SEEK_END",
						      [SEEK_DATA] = "SEEK_DATA",
						      [SEEK_HOLE] = "SEEK_HOLE" };

		/* a whence without a name by its number, as strace writes it */
		if (ev->a[1] < sizeof(whence) / sizeof(whence[0]))
			snprintf(rest, sizeof(rest), ", %lld, %s", (long long)ev->a[0],
				 whence[ev->a[1]]);
		else
			snprintf(rest, sizeof(rest), ", %lld, %llu", (long long)ev->a[0], ev->a[1]);
		fd_call(ev, "lseek", rest);
		return;
	}
	case IOC_FCHDIR:
		if (ok) {
			const struct fent *e = path_of(ev->tgid, ev->fd, f);

			if (e)
				set_cwd(ev->tgid, e->path);
		}
		fd_call(ev, "fchdir", "");
		return;
	case IOC_COPY_FILE_RANGE:
		fd_call(ev, "copy_file_range", ", NULL, -1, NULL, 0, 0");
		return;
	case IOC_SENDFILE:
		fd_call(ev, "sendfile", ", -1, NULL, 0");
		return;
	case IOC_DUP: case IOC_DUP2: case IOC_DUP3: case IOC_FCNTL: {
		char old[PATH_MAX * 2 + 64], nfd[PATH_MAX * 2 + 64];

		if (ev->op == IOC_FCNTL && ev->a[0] != F_DUPFD && ev->a[0] != F_DUPFD_CLOEXEC)
			return;		/* locks and flags: nothing the trace holds */
		/* the new descriptor's file is the old one's: f holds it (the result's) */
		fdtext(old, sizeof(old), ev->tgid, ev->fd, f);
		if (ok)
			fdtext(nfd, sizeof(nfd), ev->tgid, ev->ret, f);
		else
			result(nfd, sizeof(nfd), ev->ret);
		if (ev->op == IOC_FCNTL)
			snprintf(call, sizeof(call), "fcntl(%s, %s, %llu)", old,
				 ev->a[0] == F_DUPFD ? "F_DUPFD" : "F_DUPFD_CLOEXEC", ev->a[1]);
		else if (ev->op == IOC_DUP)
			snprintf(call, sizeof(call), "dup(%s)", old);
		else
			snprintf(call, sizeof(call), "%s(%s, %lld)", ev->op == IOC_DUP2 ? "dup2" : "dup3",
				 old, (long long)ev->a[0]);
		emit(ev, call, nfd);
		return;
	}
	case IOC_OPEN: case IOC_CREAT: case IOC_OPENAT: case IOC_OPENAT2: {
		unsigned long long flags = ev->op == IOC_CREAT ? O_CREAT | O_WRONLY | O_TRUNC : ev->a[0];
		long long dirfd = ev->op == IOC_OPEN || ev->op == IOC_CREAT ? AT_FDCWD : ev->fd;

		abs_path(ev, ev->path, dirfd, &ev->dir, p1, sizeof(p1));
		quote(q1, sizeof(q1), p1);
		if (ok && (S_ISREG(f->mode) || S_ISDIR(f->mode))) {
			fput(kdev(f->dev), f->ino, p1, 0);
			snprintf(res, sizeof(res), "%lld<%s>", ev->ret, q1);
		} else if (ok) {
			snprintf(res, sizeof(res), "%lld<other:[%llu]>", ev->ret, f->ino);
		} else {
			result(res, sizeof(res), ev->ret);
		}
		snprintf(call, sizeof(call), "openat(AT_FDCWD, \"%s\", %s)", q1,
			 open_flags(flags, fl, sizeof(fl)));
		emit(ev, call, res);
		return;
	}
	case IOC_TRUNCATE: case IOC_UNLINK: case IOC_UNLINKAT: case IOC_MKDIR: case IOC_MKDIRAT:
	case IOC_RMDIR: case IOC_CHDIR: {
		int at = ev->op == IOC_UNLINKAT || ev->op == IOC_MKDIRAT;
		int rmdir = ev->op == IOC_RMDIR || (ev->op == IOC_UNLINKAT && (ev->a[0] & AT_REMOVEDIR));

		abs_path(ev, ev->path, at ? ev->fd : AT_FDCWD, &ev->dir, p1, sizeof(p1));
		quote(q1, sizeof(q1), p1);
		if (ev->op == IOC_TRUNCATE)
			snprintf(call, sizeof(call), "truncate(\"%s\", %lld)", q1, (long long)ev->a[0]);
		else if (ev->op == IOC_MKDIR || ev->op == IOC_MKDIRAT)
			snprintf(call, sizeof(call), "mkdir(\"%s\", 0700)", q1);
		else if (ev->op == IOC_CHDIR)
			snprintf(call, sizeof(call), "chdir(\"%s\")", q1);
		else
			snprintf(call, sizeof(call), "%s(\"%s\")", rmdir ? "rmdir" : "unlink", q1);
		if (ok && ev->op == IOC_CHDIR)
			set_cwd(ev->tgid, p1);
		if (ok && (ev->op == IOC_UNLINK || ev->op == IOC_UNLINKAT || ev->op == IOC_RMDIR))
			frename(p1, NULL);
		result(res, sizeof(res), ev->ret);
		emit(ev, call, res);
		return;
	}
	case IOC_RENAME: case IOC_RENAMEAT: case IOC_RENAMEAT2: {
		int at = ev->op != IOC_RENAME;

		abs_path(ev, ev->path, at ? ev->fd : AT_FDCWD, &ev->dir, p1, sizeof(p1));
		abs_path(ev, ev->path2, at ? ev->fd2 : AT_FDCWD, &ev->dir2, p2, sizeof(p2));
		quote(q1, sizeof(q1), p1);
		quote(q2, sizeof(q2), p2);
		if (ok && !(ev->a[0] & 2 /* RENAME_EXCHANGE */)) {
			frename(p2, NULL);
			frename(p1, p2);
		}
		snprintf(call, sizeof(call), "renameat2(AT_FDCWD, \"%s\", AT_FDCWD, \"%s\", %s)", q1, q2,
			 ev->a[0] & 2 ? "RENAME_EXCHANGE" : ev->a[0] & 1 ? "RENAME_NOREPLACE" : "0");
		result(res, sizeof(res), ev->ret);
		emit(ev, call, res);
		return;
	}
	case IOC_CLONE: case IOC_CLONE3: {
		unsigned long long cf = ev->a[0];

		snprintf(call, sizeof(call), "clone3({flags=%s%s%s%s0}, 88)",
			 cf & 0x100 ? "CLONE_VM|" : "", cf & 0x200 ? "CLONE_FS|" : "",
			 cf & 0x400 ? "CLONE_FILES|" : "", cf & 0x10000 ? "CLONE_THREAD|" : "");
		result(res, sizeof(res), ev->ret);
		emit(ev, call, res);
		return;
	}
	}
}

static void on_uring(const struct iocap_event *ev)
{
	/* a registered file gets a descriptor number no real one has */
	long long fd = ev->fixed ? (1LL << 30) + ev->fd : ev->fd;
	char rest[128];

	if (!ev->f.mode) {
		uring_nofile++;
		return;
	}
	switch (ev->op) {
	case 1: case 4: case 22:	/* IORING_OP_READV, READ_FIXED, READ */
		data_call(ev, 0, fd, &ev->f, ev->a[0], ev->a[1]);
		return;
	case 2: case 5: case 23:	/* IORING_OP_WRITEV, WRITE_FIXED, WRITE */
		data_call(ev, 1, fd, &ev->f, ev->a[0], ev->a[1]);
		return;
	case 3: {			/* IORING_OP_FSYNC: IORING_FSYNC_DATASYNC is bit 0 */
		struct iocap_event e = *ev;

		e.fd = fd;
		fd_call(&e, ev->a[2] & 1 ? "fdatasync" : "fsync", "");
		return;
	}
	case 8: {			/* IORING_OP_SYNC_FILE_RANGE */
		struct iocap_event e = *ev;

		e.fd = fd;
		snprintf(rest, sizeof(rest), ", %llu, %llu, %llu", ev->a[1], ev->a[0], ev->a[2]);
		fd_call(&e, "sync_file_range", rest);
		return;
	}
	}
}

static void on_aio_submit(const struct iocap_event *ev)
{
	struct aio *a = aslot(ev->a[3], ev->a[2], 1);

	if (!a || acount * 4 >= acap * 3) {
		aio_table_full++;
		return;
	}
	if (!a->obj)
		acount++;
	a->ctx = ev->a[3];
	a->obj = ev->a[2];
	a->ev = *ev;
	/* the path now: the descriptor may be closed before the completion */
	path_of(ev->tgid, ev->fd, &ev->f);
}

static void on_aio_done(const struct iocap_event *ev)
{
	struct aio *a = aslot(ev->a[3], ev->a[2], 0);
	struct iocap_event e;

	if (!a) {
		aio_no_pair++;
		return;
	}
	e = a->ev;
	e.te = ev->te;
	e.ret = ev->ret;
	aio_forget(a);
	switch (e.op) {
	case 0: case 7:		/* IOCB_CMD_PREAD, PREADV */
		data_call(&e, 0, e.fd, &e.f, e.a[0], e.a[1]);
		break;
	case 1: case 8:		/* IOCB_CMD_PWRITE, PWRITEV */
		data_call(&e, 1, e.fd, &e.f, e.a[0], e.a[1]);
		break;
	case 2:			/* IOCB_CMD_FSYNC */
		fd_call(&e, "fsync", "");
		break;
	case 3:			/* IOCB_CMD_FDSYNC */
		fd_call(&e, "fdatasync", "");
		break;
	default:
		aio_unmapped++;
	}
}


static int on_event(void *ctx, void *data, size_t len)
{
	struct iocap_event ev_full;
	const struct iocap_event *ev = data;

	(void)ctx;
	if (len < offsetof(struct iocap_event, path)) {
		short_records++;
		return 0;
	}
	if (len < sizeof(*ev)) {	/* sent without its path buffers */
		memcpy(&ev_full, data, len);
		memset((char *)&ev_full + len, 0, sizeof(ev_full) - len);
		ev = &ev_full;
	}
	if (ev->kind == IOC_EV_FORK) {	/* the child starts where its parent is */
		char cwd[PATH_MAX];

		snprintf(cwd, sizeof(cwd), "%s", cwd_of(ev->tgid));
		set_cwd((unsigned)ev->a[0], cwd);
		return 0;
	}
	if (ev->early) { /* names a file, or a directory (iocap.bpf.c, armed) */
		unsigned long long u = unresolved, c = cwd_unknown;

		if (ev->kind == IOC_EV_SYSCALL)
			on_syscall(ev);
		unresolved = u;
		cwd_unknown = c;
		return 0;
	}
	nevents++;
	if (ev->te > latest)
		latest = ev->te;
	switch (ev->kind) {
	case IOC_EV_SYSCALL:
		on_syscall(ev);
		break;
	case IOC_EV_URING:
		on_uring(ev);
		break;
	case IOC_EV_AIO_SUBMIT:
		on_aio_submit(ev);
		break;
	case IOC_EV_AIO_DONE:
		on_aio_done(ev);
		break;
	}
	return 0;
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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' }, { "cgroup", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' }, { "stats", required_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 'd' }, { "ready", required_argument, NULL, 'r' },
		{ "no-children", no_argument, NULL, 'n' }, { "btf", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	const char *cgroup = NULL, *outpath = NULL, *stats = NULL, *ready = NULL, *btf = NULL;
	struct stat bst;
	unsigned pids[64], npids = 0, i;
	double duration = 0;
	int children = 1, c, err;
	struct iocap_bpf *skel;
	struct ring_buffer *rb;
	struct timespec t0, now;
	char lost[512];
	int incomplete;
	long polls = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "p:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			long v = strtol(optarg, &end, 10);

			if (*end || v <= 0 || v > INT_MAX)
				die("--pid '%s': not a process id", optarg);
			if (npids == 64)
				die("--pid: at most 64");
			pids[npids++] = (unsigned)v;
			break;
		}
		case 'c': cgroup = optarg; break;
		case 'o': outpath = optarg; break;
		case 's': stats = optarg; break;
		case 'r': ready = optarg; break;
		case 'b': btf = optarg; break;
		case 'n': children = 0; break;
		case 'd':
			duration = strtod(optarg, &end);
			/* written so that nan and inf fail it too */
			if (*end || !(duration > 0 && duration <= DURATION_MAX))
				die("--duration '%s': not a number of seconds above 0 and at most "
				    "%.0f (a year)",
				    optarg, DURATION_MAX);
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see iocap --help)", argv[optind]);
	if (!npids == !cgroup)
		die("give the processes to capture: -p PID (repeatable) or --cgroup DIR");
	for (i = 0; i < npids; i++)
		if (!alive(pids[i]))
			die("--pid %u: no such process", pids[i]);
	/* looked at first: libbpf's open of a FIFO waited for a writer for ever */
	if (btf && !stat(btf, &bst) && !S_ISREG(bst.st_mode))
		die("--btf %s: not a regular file (the kernel's BTF is read from a file)", btf);
	if (btf && access(btf, R_OK))
		die("--btf %s: %s (the kernel's BTF is needed to read its structures)", btf,
		    strerror(errno));
	if (!btf && access("/sys/kernel/btf/vmlinux", R_OK))
		die("this kernel has no BTF (/sys/kernel/btf/vmlinux: %s): the BPF capture needs "
		    "CONFIG_DEBUG_INFO_BTF; use fio-pack capture --tracer strace", strerror(errno));

	/* refused before anything is loaded; gone again if the capture fails */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (outpath)
		open_output(&out_trace, "-o", outpath);
	if (stats)
		open_output(&out_stats, "--stats", stats);
	if (ready)
		open_output(&out_ready, "--ready", ready);
	if (same_replaced_file(&out_trace, &out_stats) ||
	    same_replaced_file(&out_trace, &out_ready))
		die("-o %s and %s %s are the same file: one would replace the other", outpath,
		    same_replaced_file(&out_trace, &out_stats) ? "--stats" : "--ready",
		    same_replaced_file(&out_trace, &out_stats) ? stats : ready);
	if (same_replaced_file(&out_stats, &out_ready))
		die("--stats %s and --ready %s are the same file: one would replace the other",
		    stats, ready);

	libbpf_set_print(libbpf_quiet);
	{
		LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf);

		skel = iocap_bpf__open_opts(&oo);
	}
	if (!skel)
		die("cannot open the BPF program: %s", strerror(errno));
	if (cgroup) {
		struct statfs sf;
		struct stat st;

		if (statfs(cgroup, &sf) || stat(cgroup, &st))
			die("--cgroup %s: %s", cgroup, strerror(errno));
		if (sf.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode))
			die("--cgroup %s: not a cgroup v2 directory", cgroup);
		skel->rodata->target_cgroup = st.st_ino;	/* cgroup v2: the id is the inode */
	}
	skel->rodata->follow_children = children;
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
	for (i = 0; i < npids; i++) {
		if (add_target(skel->maps.targets, pids[i]))
			continue;
		scan_fds(pids[i]);
		cwd_of(pids[i]);
		if (children)
			add_children(skel->maps.targets, pids[i], 0);
	}
	aios = xmalloc(acap * sizeof(*aios));
	out = outpath ? output_stream(&out_trace, "-o", outpath) : stdout;
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
	if (cgroup) {
		scan_cgroup(cgroup);
	} else {
		/* and a child forked before the attach is not yet in the table */
		if (children)
			for (i = 0; i < npids; i++)
				add_children(skel->maps.targets, pids[i], 0);
		scan_targets(skel->maps.targets);
	}
	skel->bss->armed = 2;
	if (ready && outfile_commit(&out_ready))
		die("--ready %s: %s", ready, strerror(errno));
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
		if (duration && (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 >= duration)
			break;
		if (!cgroup && !any_target_alive(skel->maps.targets))
			break;
	}
	/* detach first, then drain what is in the ring */
	detach_all(skel->skeleton);
	err = ring_buffer__consume(rb);
	if (err < 0 && !stopped_early[0])
		snprintf(stopped_early, sizeof(stopped_early), "draining the ring buffer: %s",
			 strerror(-err));
	flush_lines(1);
	if (outpath)
		close_output(out, &out_trace, "-o", outpath);
	else if (fflush(out) || ferror(out))
		die("-o -: write error: %s", strerror(errno));
	{
		FILE *f = stats ? output_stream(&out_stats, "--stats", stats) : NULL;
		struct iocap_counts c = {
			.events = nevents,
			.aio_table_full = aio_table_full,
			.aio_unmapped = aio_unmapped,
			.aio_no_pair = aio_no_pair,
			.aio_in_flight = acount,
			.unresolved = unresolved,
			.uring_nofile = uring_nofile,
			.targets_full = targets_full,
			.children_unknown = children_unknown,
			.cwd_unknown = cwd_unknown,
			.path_cut = path_cut,
			.path_unread = path_unread,
			.short_records = short_records,
			.stopped_early = stopped_early[0] ? stopped_early : NULL,
		};

		incomplete = write_stats(f, skel->obj, &c, lost, sizeof(lost));
		if (f)
			close_output(f, &out_stats, "--stats", stats);
	}
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
