// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: the captured events (iocap.h) written as `strace -f -ttt -yy -T`
 * writes its calls (events.h): a system call as strace writes it; an
 * io_uring request or a libaio iocb as the pread64/pwrite64/fsync/
 * fdatasync/sync_file_range call that does the same, the iocb paired with
 * its io_event; each descriptor with its file's path (names.h). Lines go
 * out in issue order (lines.h).
 */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/aio_abi.h>
#include <linux/falloc.h>
#include <linux/io_uring.h>

#include "events.h"
#include "iocap.h"
#include "lines.h"
#include "names.h"
#include "stats.h"
#include "user.h"

/*
 * What user space could not see, each an "incomplete" class of --stats
 * (with the kernel side's "stats" map, targets.c's, syscalls.c's and
 * iocap.c's).
 */
static unsigned long long cwd_unknown;		 /* relative paths of a process of unknown cwd */
static unsigned long long path_cut, path_unread; /* calls with a path not whole */
static unsigned long long short_records; /* ring buffer records shorter than an event head */

/* ------------------------------------------------------------------ */
/* A call in strace's form                                             */
/* ------------------------------------------------------------------ */

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

/*
 * Counts in @n a name @ev's call needed and the capture did not have, unless
 * nothing was lost: an event from before the start is sent for the names
 * only, and a close loses no I/O, even of a file it cannot name.
 */
static void count_unnamed(const struct iocap_event *ev, unsigned long long *n)
{
	if (!ev->early && !(ev->kind == IOC_EV_SYSCALL && ev->op == IOC_CLOSE))
		(*n)++;
}

/* "FD</path>", "FD</path>(deleted)", "FD<other:[ino]>" or "FD", for a call of @ev */
static void fdtext(char *dst, size_t len, const struct iocap_event *ev, long long fd,
		   const struct iocap_file *f)
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
	e = path_of(ev->tgid, fd, f);
	if (!e) {
		count_unnamed(ev, &unresolved);
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
	/* clang-format off */
	static const struct { unsigned long long bit; const char *name; } bits[] = {
		{ O_CREAT, "O_CREAT" }, { O_EXCL, "O_EXCL" }, { O_NOCTTY, "O_NOCTTY" },
		{ O_TRUNC, "O_TRUNC" }, { O_APPEND, "O_APPEND" }, { O_NONBLOCK, "O_NONBLOCK" },
		{ O_SYNC & ~O_DSYNC, "O_SYNC" }, { O_DSYNC, "O_DSYNC" }, { O_DIRECT, "O_DIRECT" },
		{ O_NOFOLLOW, "O_NOFOLLOW" }, { O_NOATIME, "O_NOATIME" }, { O_CLOEXEC, "O_CLOEXEC" },
		{ O_PATH, "O_PATH" }, { O_TMPFILE & ~O_DIRECTORY, "O_TMPFILE" }, { O_DIRECTORY, "O_DIRECTORY" },
	};
	/* clang-format on */
	size_t n;
	unsigned i;

	n = snprintf(buf, len, "%s",
		     (fl & O_ACCMODE) == O_WRONLY ? "O_WRONLY"
		     : (fl & O_ACCMODE) == O_RDWR ? "O_RDWR"
						  : "O_RDONLY");
	for (i = 0; i < ARRAY_SIZE(bits); i++)
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
		if (!e) /* named against a directory it cannot name */
			count_unnamed(ev, &unresolved);
	}
	base = e ? e->path : cwd_of(ev->tgid);
	if (!e && !*base && dirfd == AT_FDCWD)
		count_unnamed(ev, &cwd_unknown);
	join(*base ? base : "/", path, outp, len);
}

/* ------------------------------------------------------------------ */
/* libaio: iocbs waiting for their io_event                            */
/* ------------------------------------------------------------------ */

struct aio {
	unsigned long long ctx, obj; /* obj 0: free */
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
		h = (size_t)((aios[j].obj ^ aios[j].ctx * 31) * 0x9e3779b97f4a7c15ULL >> 20) &
		    (acap - 1);
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

	fdtext(fdt, sizeof(fdt), ev, fd, f);
	snprintf(call, sizeof(call), "%s(%s, \"\"..., %llu, %llu)", write ? "pwrite64" : "pread64",
		 fdt, count, off);
	result(res, sizeof(res), ev->ret);
	emit(ev, call, res);
}

static void fd_call(const struct iocap_event *ev, const char *name, const char *rest)
{
	char call[PATH_MAX * 3], fdt[PATH_MAX * 2 + 64], res[128];

	fdtext(fdt, sizeof(fdt), ev, ev->fd, &ev->f);
	snprintf(call, sizeof(call), "%s(%s%s)", name, fdt, rest);
	result(res, sizeof(res), ev->ret);
	emit(ev, call, res);
}

static void on_syscall(const struct iocap_event *ev)
{
	char call[PATH_MAX * 9], p1[PATH_MAX], p2[PATH_MAX], q1[PATH_MAX * 4], q2[PATH_MAX * 4],
		res[PATH_MAX * 4 + 128], rest[256], fl[256];
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
	case IOC_READ:
	case IOC_READV:
		data_call(ev, 0, ev->fd, f, ev->a[1], f->pos);
		return;
	case IOC_WRITE:
	case IOC_WRITEV:
		data_call(ev, 1, ev->fd, f, ev->a[1],
			  (f->flags & O_APPEND) ? (unsigned long long)f->size
						: (unsigned long long)f->pos);
		return;
	case IOC_PREAD:
	case IOC_PWRITE:
		data_call(ev, ev->op == IOC_PWRITE, ev->fd, f, ev->a[1], ev->a[2]);
		return;
	case IOC_PREADV:
	case IOC_PWRITEV:
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
	case IOC_CLOSE:
		fd_call(ev, "close", "");
		return;
	case IOC_FTRUNCATE:
		snprintf(rest, sizeof(rest), ", %lld", (long long)ev->a[0]);
		fd_call(ev, "ftruncate", rest);
		return;
	case IOC_FALLOCATE: {
		/* clang-format off */
		static const struct { unsigned long long bit; const char *name; } modes[] = {
			{ FALLOC_FL_KEEP_SIZE, "FALLOC_FL_KEEP_SIZE" },
			{ FALLOC_FL_PUNCH_HOLE, "FALLOC_FL_PUNCH_HOLE" },
			{ FALLOC_FL_NO_HIDE_STALE, "FALLOC_FL_NO_HIDE_STALE" },
			{ FALLOC_FL_COLLAPSE_RANGE, "FALLOC_FL_COLLAPSE_RANGE" },
			{ FALLOC_FL_ZERO_RANGE, "FALLOC_FL_ZERO_RANGE" },
			{ FALLOC_FL_INSERT_RANGE, "FALLOC_FL_INSERT_RANGE" },
			{ FALLOC_FL_UNSHARE_RANGE, "FALLOC_FL_UNSHARE_RANGE" },
		};
		/* clang-format on */
		size_t n = 0;
		unsigned i;

		fl[0] = '\0';
		for (i = 0; i < ARRAY_SIZE(modes); i++)
			if (ev->a[0] & modes[i].bit)
				n += snprintf(fl + n, sizeof(fl) - n, "%s%s", n ? "|" : "",
					      modes[i].name);
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
		if (ev->a[1] < ARRAY_SIZE(whence))
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
	case IOC_DUP:
	case IOC_DUP2:
	case IOC_DUP3:
	case IOC_FCNTL: {
		char old[PATH_MAX * 2 + 64], nfd[PATH_MAX * 2 + 64];

		if (ev->op == IOC_FCNTL && ev->a[0] != F_DUPFD && ev->a[0] != F_DUPFD_CLOEXEC)
			return; /* locks and flags: nothing the trace holds */
		/* the new descriptor's file is the old one's: f holds it (the result's) */
		fdtext(old, sizeof(old), ev, ev->fd, f);
		if (ok)
			fdtext(nfd, sizeof(nfd), ev, ev->ret, f);
		else
			result(nfd, sizeof(nfd), ev->ret);
		if (ev->op == IOC_FCNTL)
			snprintf(call, sizeof(call), "fcntl(%s, %s, %llu)", old,
				 ev->a[0] == F_DUPFD ? "F_DUPFD" : "F_DUPFD_CLOEXEC", ev->a[1]);
		else if (ev->op == IOC_DUP)
			snprintf(call, sizeof(call), "dup(%s)", old);
		else
			snprintf(call, sizeof(call), "%s(%s, %lld)",
				 ev->op == IOC_DUP2 ? "dup2" : "dup3", old, (long long)ev->a[0]);
		emit(ev, call, nfd);
		return;
	}
	case IOC_OPEN:
	case IOC_CREAT:
	case IOC_OPENAT:
	case IOC_OPENAT2: {
		unsigned long long flags =
			ev->op == IOC_CREAT ? O_CREAT | O_WRONLY | O_TRUNC : ev->a[0];
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
	case IOC_TRUNCATE:
	case IOC_UNLINK:
	case IOC_UNLINKAT:
	case IOC_MKDIR:
	case IOC_MKDIRAT:
	case IOC_RMDIR:
	case IOC_CHDIR: {
		int at = ev->op == IOC_UNLINKAT || ev->op == IOC_MKDIRAT;
		int rmdir = ev->op == IOC_RMDIR ||
			    (ev->op == IOC_UNLINKAT && (ev->a[0] & AT_REMOVEDIR));

		abs_path(ev, ev->path, at ? ev->fd : AT_FDCWD, &ev->dir, p1, sizeof(p1));
		quote(q1, sizeof(q1), p1);
		if (ev->op == IOC_TRUNCATE)
			snprintf(call, sizeof(call), "truncate(\"%s\", %lld)", q1,
				 (long long)ev->a[0]);
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
	case IOC_RENAME:
	case IOC_RENAMEAT:
	case IOC_RENAMEAT2: {
		int at = ev->op != IOC_RENAME;

		abs_path(ev, ev->path, at ? ev->fd : AT_FDCWD, &ev->dir, p1, sizeof(p1));
		abs_path(ev, ev->path2, at ? ev->fd2 : AT_FDCWD, &ev->dir2, p2, sizeof(p2));
		quote(q1, sizeof(q1), p1);
		quote(q2, sizeof(q2), p2);
		if (ok && !(ev->a[0] & RENAME_EXCHANGE)) {
			frename(p2, NULL);
			frename(p1, p2);
		}
		snprintf(call, sizeof(call), "renameat2(AT_FDCWD, \"%s\", AT_FDCWD, \"%s\", %s)",
			 q1, q2,
			 ev->a[0] & RENAME_EXCHANGE    ? "RENAME_EXCHANGE"
			 : ev->a[0] & RENAME_NOREPLACE ? "RENAME_NOREPLACE"
						       : "0");
		result(res, sizeof(res), ev->ret);
		emit(ev, call, res);
		return;
	}
	case IOC_CLONE:
	case IOC_CLONE3: {
		unsigned long long cf = ev->a[0];

		snprintf(call, sizeof(call), "clone3({flags=%s%s%s%s0}, 88)",
			 cf & CLONE_VM ? "CLONE_VM|" : "", cf & CLONE_FS ? "CLONE_FS|" : "",
			 cf & CLONE_FILES ? "CLONE_FILES|" : "",
			 cf & CLONE_THREAD ? "CLONE_THREAD|" : "");
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
	case IORING_OP_READV:
	case IORING_OP_READ_FIXED:
	case IORING_OP_READ:
		data_call(ev, 0, fd, &ev->f, ev->a[0], ev->a[1]);
		return;
	case IORING_OP_WRITEV:
	case IORING_OP_WRITE_FIXED:
	case IORING_OP_WRITE:
		data_call(ev, 1, fd, &ev->f, ev->a[0], ev->a[1]);
		return;
	case IORING_OP_FSYNC: {
		struct iocap_event e = *ev;

		e.fd = fd;
		fd_call(&e, ev->a[2] & IORING_FSYNC_DATASYNC ? "fdatasync" : "fsync", "");
		return;
	}
	case IORING_OP_SYNC_FILE_RANGE: {
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
	case IOCB_CMD_PREAD:
	case IOCB_CMD_PREADV:
		data_call(&e, 0, e.fd, &e.f, e.a[0], e.a[1]);
		break;
	case IOCB_CMD_PWRITE:
	case IOCB_CMD_PWRITEV:
		data_call(&e, 1, e.fd, &e.f, e.a[0], e.a[1]);
		break;
	case IOCB_CMD_FSYNC:
		fd_call(&e, "fsync", "");
		break;
	case IOCB_CMD_FDSYNC:
		fd_call(&e, "fdatasync", "");
		break;
	default:
		aio_unmapped++;
	}
}

int on_event(void *ctx, void *data, size_t len)
{
	struct iocap_event ev_full;
	const struct iocap_event *ev = data;

	(void)ctx;
	if (len < offsetof(struct iocap_event, path)) {
		short_records++;
		return 0;
	}
	if (len < sizeof(*ev)) { /* sent without its path buffers */
		memcpy(&ev_full, data, len);
		memset((char *)&ev_full + len, 0, sizeof(ev_full) - len);
		ev = &ev_full;
	}
	if (ev->kind == IOC_EV_FORK) { /* the child starts where its parent is */
		char cwd[PATH_MAX];

		snprintf(cwd, sizeof(cwd), "%s", cwd_of(ev->tgid));
		set_cwd((unsigned)ev->a[0], cwd);
		return 0;
	}
	if (ev->early) { /* names a file, or a directory (iocap.bpf.c, armed) */
		if (ev->kind == IOC_EV_SYSCALL)
			on_syscall(ev);
		return 0;
	}
	nevents++;
	lines_completed(ev->te);
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

void events_start(void)
{
	aios = xmalloc(acap * sizeof(*aios));
}

void events_counted(struct iocap_counts *c)
{
	c->events = nevents;
	c->aio_table_full = aio_table_full;
	c->aio_unmapped = aio_unmapped;
	c->aio_no_pair = aio_no_pair;
	c->aio_in_flight = acount;
	c->unresolved = unresolved;
	c->uring_nofile = uring_nofile;
	c->cwd_unknown = cwd_unknown;
	c->path_cut = path_cut;
	c->path_unread = path_unread;
	c->short_records = short_records;
}
