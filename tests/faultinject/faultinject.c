/*
 * faultinject.so: makes chosen libc calls fail (EIO, EINTR, ENOSPC) or
 * transfer fewer bytes than asked, for paths under one directory only, so
 * the engines' error and retry paths can be tested inside a real fio.
 *
 *   FAULTINJECT_DIR=/tmp/t FAULTINJECT="write:short:every=3,fsync:eio:nth=5" \
 *   FAULTINJECT_REPORT=/tmp/fi.json LD_PRELOAD=build/faultinject.so fio ...
 *
 * FAULTINJECT   comma-separated rules CALL:KIND[:PARAM=VALUE...]
 *   CALL   a libc entry point: open open64 openat openat64 openat2 (the
 *          openat2 system call made through syscall(2); read, write,
 *          pread, pwrite and openat made that way count as those names) read pread pread64
 *          write pwrite pwrite64 fsync fdatasync rename renameat renameat2
 *          unlink unlinkat mkdir mkdirat ftruncate ftruncate64 fstat fstat64.
 *          open64, openat64, pread64, pwrite64, ftruncate64 and fstat64 are the same
 *          functions as the names without 64 (glibc aliases on 64-bit
 *          systems; programs built with _FILE_OFFSET_BITS=64 call the *64
 *          names): a rule for either name covers both.
 *          io_uring_submit: liburing's submission calls (io_uring_submit,
 *          io_uring_submit_and_wait, io_uring_submit_and_wait_timeout: a
 *          rule for any of the three names covers all three), which the
 *          engines' io_uring modes make; a ring has no path, so these are
 *          counted and injected in every call of the process (fio itself
 *          links no liburing).
 *   KIND   eio | eintr | enospc | eagain | ebusy | enomem: fail with that
 *          errno without calling the real function (so nothing happens on
 *          disk; an io_uring submission returns -errno, its SQEs stay
 *          prepared, as when the kernel refuses them);
 *          short: read/pread/write/pwrite only: the real call with half the
 *          byte count (at least 1; a call for fewer than 2 bytes is left
 *          alone), so a real, shorter transfer happens;
 *          delay: the real call, after sleeping us=N microseconds (slow
 *          storage under a program: the call succeeds, late).
 *   PARAM  every=N   the Nth, 2Nth, ... matching call (default every=1)
 *          nth=N     only the Nth matching call
 *          after=N   no injection during the first N matching calls
 *          rate=P    each matching call with probability P (0..1), from a
 *                    generator seeded by seed=S (default 1): repeatable
 *          max=N     at most N injections (per thread of each process)
 *          us=N      delay only: how long each delayed call sleeps first
 *   Calls are counted per rule and per thread (fio's jobs are forked
 *   processes or threads: each job sees the same sequence of decisions for
 *   the same sequence of calls), so a run is repeatable.
 *
 * FAULTINJECT_DIR  only calls on paths under this directory are counted or
 *   injected: path arguments are resolved against the directory descriptor
 *   (or the current directory), descriptors through /proc/self/fd. fio's
 *   own files elsewhere are never hit. Unset or empty: nothing is injected.
 *
 * FAULTINJECT_REPORT  at exit of the process that loaded the library (fio's
 *   main process, after its jobs ended) a JSON object is written there:
 *   {"calls":{"write":N,...}, "rules":[{"call":"write","kind":"short",
 *   "matched":N,"injected":M},...]}; "calls" counts every call under the
 *   directory per entry point (aliases merged), "matched" the calls a rule
 *   looked at, "injected" what it did. Counters live in shared memory, so
 *   forked job processes are included.
 *
 * Built by `make build/faultinject.so`; plain C, no dependencies.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_RULES	32

/* the call tables, laid out by hand */
/* clang-format off */
enum call_id {
	C_OPEN, C_OPENAT, C_OPENAT2, C_READ, C_PREAD, C_WRITE, C_PWRITE,
	C_FSYNC, C_FDATASYNC, C_RENAME, C_RENAMEAT, C_RENAMEAT2, C_UNLINK,
	C_UNLINKAT, C_MKDIR, C_MKDIRAT, C_FTRUNCATE, C_FSTAT, C_URING_SUBMIT, C_NR
};

static const char *const call_names[C_NR] = {
	"open", "openat", "openat2", "read", "pread", "write", "pwrite",
	"fsync", "fdatasync", "rename", "renameat", "renameat2", "unlink",
	"unlinkat", "mkdir", "mkdirat", "ftruncate", "fstat", "io_uring_submit",
};

enum kind { K_EIO, K_EINTR, K_ENOSPC, K_EAGAIN, K_EBUSY, K_ENOMEM, K_SHORT, K_DELAY, K_NR };
static const char *const kind_names[K_NR] = {
	"eio", "eintr", "enospc", "eagain", "ebusy", "enomem", "short", "delay",
};
static const int kind_errno[K_NR] = { EIO, EINTR, ENOSPC, EAGAIN, EBUSY, ENOMEM, 0, 0 };
/* clang-format on */

struct rule {
	enum call_id call;
	enum kind kind;
	uint64_t every, nth, after, max;
	uint64_t delay_us;	/* K_DELAY */
	double rate;		/* < 0: not random */
	uint64_t seed;
};

struct shared {
	uint64_t calls[C_NR];
	uint64_t matched[MAX_RULES];
	uint64_t injected[MAX_RULES];
};

static struct rule rules[MAX_RULES];
static int nrules;
static char dir[PATH_MAX];
static size_t dirlen;
static int active;
static struct shared *shm;
static pid_t owner_pid;
static char report_path[PATH_MAX];

/* per thread (and, through the pid check, per forked process) */
static __thread pid_t t_pid;
static __thread uint64_t t_calls[MAX_RULES], t_injected[MAX_RULES], t_rng[MAX_RULES];
static __thread int t_busy;	/* inside our own bookkeeping: no recursion */

/* ------------------------------------------------------------------ */

static void *real(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f) {
		fprintf(stderr, "faultinject: cannot find %s: %s\n", name, dlerror());
		abort();
	}
	return f;
}

#define REAL(ret, name, ...)						\
	static ret (*real_fn)(__VA_ARGS__);				\
	if (!real_fn)							\
		real_fn = (ret (*)(__VA_ARGS__))real(name)

static void die_config(const char *what, const char *rule)
{
	fprintf(stderr, "faultinject: FAULTINJECT: %s in '%s'\n", what, rule);
	exit(2);
}

static int call_by_name(const char *s)
{
	/* clang-format off */
	static const struct { const char *alias; enum call_id id; } aliases[] = {
		{ "open64", C_OPEN }, { "openat64", C_OPENAT }, { "pread64", C_PREAD },
		{ "pwrite64", C_PWRITE }, { "ftruncate64", C_FTRUNCATE }, { "fstat64", C_FSTAT },
		{ "io_uring_submit_and_wait", C_URING_SUBMIT },
		{ "io_uring_submit_and_wait_timeout", C_URING_SUBMIT },
	};
	/* clang-format on */
	size_t i;

	for (i = 0; i < C_NR; i++)
		if (!strcmp(s, call_names[i]))
			return (int)i;
	for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(s, aliases[i].alias))
			return aliases[i].id;
	return -1;
}

static uint64_t parse_u64(const char *v, const char *rule)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v || *end)
		die_config("bad number", rule);
	return n;
}

static void parse_rule(char *text)
{
	char copy[256], *field, *save;
	struct rule *r;
	int c, k, nf = 0;

	snprintf(copy, sizeof(copy), "%s", text);
	if (nrules == MAX_RULES)
		die_config("too many rules", copy);
	r = &rules[nrules];
	memset(r, 0, sizeof(*r));
	r->rate = -1;
	r->seed = 1;
	for (field = strtok_r(text, ":", &save); field; field = strtok_r(NULL, ":", &save), nf++) {
		if (nf == 0) {
			c = call_by_name(field);
			if (c < 0)
				die_config("unknown call", copy);
			r->call = (enum call_id)c;
		} else if (nf == 1) {
			for (k = 0; k < K_NR && strcmp(field, kind_names[k]); k++)
				;
			if (k == K_NR)
				die_config(
					"unknown kind (eio, eintr, enospc, eagain, ebusy, enomem, "
					"short, delay)",
					copy);
			r->kind = (enum kind)k;
		} else if (!strncmp(field, "every=", 6)) {
			r->every = parse_u64(field + 6, copy);
		} else if (!strncmp(field, "nth=", 4)) {
			r->nth = parse_u64(field + 4, copy);
		} else if (!strncmp(field, "after=", 6)) {
			r->after = parse_u64(field + 6, copy);
		} else if (!strncmp(field, "max=", 4)) {
			r->max = parse_u64(field + 4, copy);
		} else if (!strncmp(field, "us=", 3)) {
			r->delay_us = parse_u64(field + 3, copy);
		} else if (!strncmp(field, "seed=", 5)) {
			r->seed = parse_u64(field + 5, copy);
		} else if (!strncmp(field, "rate=", 5)) {
			char *end;

			r->rate = strtod(field + 5, &end);
			if (end == field + 5 || *end || r->rate < 0 || r->rate > 1)
				die_config("bad rate", copy);
		} else {
			die_config("unknown parameter", copy);
		}
	}
	if (nf < 2)
		die_config("expected CALL:KIND", copy);
	if (r->kind == K_SHORT && r->call != C_READ && r->call != C_PREAD &&
	    r->call != C_WRITE && r->call != C_PWRITE)
		die_config("short applies to read, pread, write, pwrite only", copy);
	if ((r->kind == K_DELAY) != (r->delay_us != 0))
		die_config("delay needs us=N (N > 0), and us= applies to delay only", copy);
	if (!r->every && !r->nth && r->rate < 0)
		r->every = 1;
	nrules++;
}

__attribute__((constructor))
static void fi_init(void)
{
	const char *spec = getenv("FAULTINJECT");
	const char *d = getenv("FAULTINJECT_DIR");
	const char *rep = getenv("FAULTINJECT_REPORT");
	char *buf, *rule, *save;

	t_busy = 1;
	owner_pid = getpid();
	if (rep && *rep)
		snprintf(report_path, sizeof(report_path), "%s", rep);
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED) {
		fprintf(stderr, "faultinject: mmap: %s\n", strerror(errno));
		abort();
	}
	if (spec && *spec) {
		buf = strdup(spec);
		if (!buf)
			abort();
		for (rule = strtok_r(buf, ",", &save); rule; rule = strtok_r(NULL, ",", &save))
			parse_rule(rule);
		free(buf);
	}
	if (d && *d) {
		if (!realpath(d, dir)) {
			fprintf(stderr, "faultinject: FAULTINJECT_DIR %s: %s\n", d, strerror(errno));
			exit(2);
		}
		dirlen = strlen(dir);
		while (dirlen > 1 && dir[dirlen - 1] == '/')
			dir[--dirlen] = '\0';
		active = 1;
	}
	t_busy = 0;
}

__attribute__((destructor))
static void fi_report(void)
{
	FILE *f;
	int i, first = 1;

	if (!report_path[0] || getpid() != owner_pid)
		return;
	t_busy = 1;
	f = fopen(report_path, "w");
	if (!f) {
		fprintf(stderr, "faultinject: FAULTINJECT_REPORT %s: %s\n", report_path, strerror(errno));
		return;
	}
	fputs("{\"dir\":\"", f);
	for (i = 0; dir[i]; i++) {
		if (dir[i] == '"' || dir[i] == '\\')
			fputc('\\', f);
		fputc(dir[i], f);
	}
	fputs("\",\"calls\":{", f);
	for (i = 0; i < C_NR; i++) {
		uint64_t n = __atomic_load_n(&shm->calls[i], __ATOMIC_RELAXED);

		if (!n)
			continue;
		fprintf(f, "%s\"%s\":%llu", first ? "" : ",", call_names[i], (unsigned long long)n);
		first = 0;
	}
	fprintf(f, "},\"rules\":[");
	for (i = 0; i < nrules; i++)
		fprintf(f, "%s{\"call\":\"%s\",\"kind\":\"%s\",\"matched\":%llu,\"injected\":%llu}",
			i ? "," : "", call_names[rules[i].call], kind_names[rules[i].kind],
			(unsigned long long)__atomic_load_n(&shm->matched[i], __ATOMIC_RELAXED),
			(unsigned long long)__atomic_load_n(&shm->injected[i], __ATOMIC_RELAXED));
	fprintf(f, "]}\n");
	fclose(f);
}

/* ------------------------------------------------------------------ */
/* Is it under the directory?                                          */
/* ------------------------------------------------------------------ */

static int under_dir(const char *path)
{
	if (strncmp(path, dir, dirlen))
		return 0;
	return path[dirlen] == '\0' || path[dirlen] == '/' || dirlen == 1;
}

static int fd_path(int fd, char *out, size_t len)
{
	char link[64];
	ssize_t n;

	if (fd == AT_FDCWD)
		return getcwd(out, len) ? 0 : -1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, len - 1);
	if (n < 0)
		return -1;
	out[n] = '\0';
	return 0;
}

static int fd_under(int fd)
{
	char p[PATH_MAX];

	return fd_path(fd, p, sizeof(p)) == 0 && under_dir(p);
}

static int at_under(int dirfd, const char *path)
{
	char p[PATH_MAX * 2];
	size_t n;

	if (!path)
		return 0;
	if (path[0] == '/')
		return under_dir(path);
	if (fd_path(dirfd, p, PATH_MAX))
		return 0;
	n = strlen(p);
	snprintf(p + n, sizeof(p) - n, "/%s", path);
	return under_dir(p);
}

/* ------------------------------------------------------------------ */
/* The decision                                                        */
/* ------------------------------------------------------------------ */

static double next_unit(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return (double)((x * 0x2545f4914f6cdd1dULL) >> 11) / 9007199254740992.0;
}

static uint64_t mix_seed(uint64_t s, int i)
{
	uint64_t z = s + 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z ? z : 1;
}

/*
 * The rule that fires for this call (which the caller has found to be under
 * the directory), or NULL. @len: the byte count of a transfer (short needs
 * at least 2), or 0 for other calls.
 */
static const struct rule *decide(enum call_id call, size_t len, int transfer)
{
	pid_t pid = getpid();
	int i;

	if (t_pid != pid) {
		t_pid = pid;
		for (i = 0; i < nrules; i++) {
			t_calls[i] = t_injected[i] = 0;
			t_rng[i] = mix_seed(rules[i].seed, i);
		}
	}
	__atomic_fetch_add(&shm->calls[call], 1, __ATOMIC_RELAXED);
	for (i = 0; i < nrules; i++) {
		const struct rule *r = &rules[i];
		uint64_t n;
		int fire;

		if (r->call != call)
			continue;
		if (r->kind == K_SHORT && (!transfer || len < 2))
			continue;
		n = ++t_calls[i];
		__atomic_fetch_add(&shm->matched[i], 1, __ATOMIC_RELAXED);
		if (r->rate >= 0)
			fire = next_unit(&t_rng[i]) < r->rate;	/* drawn for every call: repeatable */
		else if (r->nth)
			fire = n == r->nth;
		else
			fire = n % r->every == 0;
		if (!fire || n <= r->after || (r->max && t_injected[i] >= r->max))
			continue;
		t_injected[i]++;
		__atomic_fetch_add(&shm->injected[i], 1, __ATOMIC_RELAXED);
		return r;
	}
	return NULL;
}

static int errno_of(const struct rule *r)
{
	return kind_errno[r->kind];
}

/* Guards for calls that name a path / a descriptor. */
#define PATH_RULE(call, dirfd, path)					\
	const struct rule *r = NULL;					\
	if (active && !t_busy) {					\
		t_busy = 1;						\
		if (at_under(dirfd, path))				\
			r = decide(call, 0, 0);				\
		t_busy = 0;						\
	}

#define FD_RULE(call, fd, len, transfer)				\
	const struct rule *r = NULL;					\
	if (active && !t_busy) {					\
		t_busy = 1;						\
		if (fd_under(fd))					\
			r = decide(call, len, transfer);		\
		t_busy = 0;						\
	}

/* A delay sleeps and lets the real call run whole; short is the caller's. */
/* clang-format off */
#define APPLY_FAULT(r)							\
	if (r && r->kind == K_DELAY) {					\
		sleep_us(r->delay_us);					\
		r = NULL;						\
	} else if (r && r->kind != K_SHORT) {				\
		errno = errno_of(r);					\
		return -1;						\
	}
/* clang-format on */

static void sleep_us(uint64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
	int saved = errno;

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	errno = saved;
}

static size_t shorter(size_t len)
{
	return len / 2 ? len / 2 : 1;
}

/* ------------------------------------------------------------------ */
/* The calls                                                           */
/* ------------------------------------------------------------------ */

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

int open(const char *path, int flags, ...)
{
	REAL(int, "open", const char *, int, mode_t);
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	PATH_RULE(C_OPEN, AT_FDCWD, path);
	APPLY_FAULT(r);
	return real_fn(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	REAL(int, "open64", const char *, int, mode_t);
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	PATH_RULE(C_OPEN, AT_FDCWD, path);
	APPLY_FAULT(r);
	return real_fn(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	REAL(int, "openat", int, const char *, int, mode_t);
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	PATH_RULE(C_OPENAT, dirfd, path);
	APPLY_FAULT(r);
	return real_fn(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	REAL(int, "openat64", int, const char *, int, mode_t);
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	PATH_RULE(C_OPENAT, dirfd, path);
	APPLY_FAULT(r);
	return real_fn(dirfd, path, flags, mode);
}

/*
 * openat2 has no glibc wrapper (2.36): programs call syscall(SYS_openat2, ...).
 * The engines also make read, write, pread, pwrite and openat through
 * syscall(2) on their hot paths: those count, and are injected, as the libc
 * calls of the same names.
 */
long syscall(long nr, ...)
{
	static long (*real_fn)(long, ...);
	va_list ap;
	long a[6];
	int i;

	if (!real_fn)
		real_fn = (long (*)(long, ...))real("syscall");
	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	switch (nr) {
	case SYS_openat2: {
		PATH_RULE(C_OPENAT2, (int)a[0], (const char *)a[1]);
		APPLY_FAULT(r);
		break;
	}
	case SYS_openat: {
		PATH_RULE(C_OPENAT, (int)a[0], (const char *)a[1]);
		APPLY_FAULT(r);
		break;
	}
	/* the engines' hot paths make these through syscall(2) (sysutil.h's sys_read, ...) */
	case SYS_read:
	case SYS_write:
	case SYS_pread64:
	case SYS_pwrite64: {
		enum call_id call = nr == SYS_read	? C_READ
				    : nr == SYS_write	? C_WRITE
				    : nr == SYS_pread64 ? C_PREAD
							: C_PWRITE;

		FD_RULE(call, (int)a[0], (size_t)a[2], 1);
		APPLY_FAULT(r);
		if (r) /* short: the real call with half the byte count */
			a[2] = (long)shorter((size_t)a[2]);
		break;
	}
	default:
		break;
	}
	return real_fn(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

ssize_t read(int fd, void *buf, size_t len)
{
	REAL(ssize_t, "read", int, void *, size_t);
	FD_RULE(C_READ, fd, len, 1);
	APPLY_FAULT(r);
	return real_fn(fd, buf, r ? shorter(len) : len);
}

static ssize_t do_pread(const char *name, int fd, void *buf, size_t len, off_t off)
{
	REAL(ssize_t, name, int, void *, size_t, off_t);
	FD_RULE(C_PREAD, fd, len, 1);
	APPLY_FAULT(r);
	return real_fn(fd, buf, r ? shorter(len) : len, off);
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	return do_pread("pread", fd, buf, len, off);
}

ssize_t pread64(int fd, void *buf, size_t len, off64_t off)
{
	return do_pread("pread64", fd, buf, len, off);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	REAL(ssize_t, "write", int, const void *, size_t);
	FD_RULE(C_WRITE, fd, len, 1);
	APPLY_FAULT(r);
	return real_fn(fd, buf, r ? shorter(len) : len);
}

static ssize_t do_pwrite(const char *name, int fd, const void *buf, size_t len, off_t off)
{
	REAL(ssize_t, name, int, const void *, size_t, off_t);
	FD_RULE(C_PWRITE, fd, len, 1);
	APPLY_FAULT(r);
	return real_fn(fd, buf, r ? shorter(len) : len, off);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return do_pwrite("pwrite", fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off)
{
	return do_pwrite("pwrite64", fd, buf, len, off);
}

int fsync(int fd)
{
	REAL(int, "fsync", int);
	FD_RULE(C_FSYNC, fd, 0, 0);
	APPLY_FAULT(r);
	return real_fn(fd);
}

int fdatasync(int fd)
{
	REAL(int, "fdatasync", int);
	FD_RULE(C_FDATASYNC, fd, 0, 0);
	APPLY_FAULT(r);
	return real_fn(fd);
}

static int do_ftruncate(const char *name, int fd, off_t len)
{
	REAL(int, name, int, off_t);
	FD_RULE(C_FTRUNCATE, fd, 0, 0);
	APPLY_FAULT(r);
	return real_fn(fd, len);
}

int ftruncate(int fd, off_t len)
{
	return do_ftruncate("ftruncate", fd, len);
}

int ftruncate64(int fd, off64_t len)
{
	return do_ftruncate("ftruncate64", fd, len);
}

static int do_fstat(const char *name, int fd, void *st)
{
	REAL(int, name, int, void *);
	FD_RULE(C_FSTAT, fd, 0, 0);
	APPLY_FAULT(r);
	return real_fn(fd, st);
}

int fstat(int fd, struct stat *st)
{
	return do_fstat("fstat", fd, st);
}

int fstat64(int fd, struct stat64 *st)
{
	return do_fstat("fstat64", fd, st);
}

int rename(const char *from, const char *to)
{
	REAL(int, "rename", const char *, const char *);
	PATH_RULE(C_RENAME, AT_FDCWD, to);
	APPLY_FAULT(r);
	return real_fn(from, to);
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	REAL(int, "renameat", int, const char *, int, const char *);
	PATH_RULE(C_RENAMEAT, tofd, to);
	APPLY_FAULT(r);
	return real_fn(fromfd, from, tofd, to);
}

int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags)
{
	REAL(int, "renameat2", int, const char *, int, const char *, unsigned int);
	PATH_RULE(C_RENAMEAT2, tofd, to);
	APPLY_FAULT(r);
	return real_fn(fromfd, from, tofd, to, flags);
}

int unlink(const char *path)
{
	REAL(int, "unlink", const char *);
	PATH_RULE(C_UNLINK, AT_FDCWD, path);
	APPLY_FAULT(r);
	return real_fn(path);
}

int unlinkat(int dirfd, const char *path, int flags)
{
	REAL(int, "unlinkat", int, const char *, int);
	PATH_RULE(C_UNLINKAT, dirfd, path);
	APPLY_FAULT(r);
	return real_fn(dirfd, path, flags);
}

int mkdir(const char *path, mode_t mode)
{
	REAL(int, "mkdir", const char *, mode_t);
	PATH_RULE(C_MKDIR, AT_FDCWD, path);
	APPLY_FAULT(r);
	return real_fn(path, mode);
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
	REAL(int, "mkdirat", int, const char *, mode_t);
	PATH_RULE(C_MKDIRAT, dirfd, path);
	APPLY_FAULT(r);
	return real_fn(dirfd, path, mode);
}

/* ------------------------------------------------------------------ */
/* liburing's submission calls                                         */
/* ------------------------------------------------------------------ */

struct io_uring;
struct io_uring_cqe;
struct __kernel_timespec;

/*
 * The engines load liburing with the engine, after this library and not in
 * the global scope: RTLD_NEXT may not see it, the handle of the loaded
 * library does.
 */
static void *real_uring(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name), *h;

	if (!f && (h = dlopen("liburing.so.2", RTLD_NOW | RTLD_NOLOAD)))
		f = dlsym(h, name);
	if (!f) {
		fprintf(stderr, "faultinject: cannot find %s in liburing.so.2\n", name);
		abort();
	}
	return f;
}

/* The errno of the fault to inject into this submission, or 0. */
static int uring_fault(void)
{
	const struct rule *r = NULL;

	if (active && !t_busy) {
		t_busy = 1;
		r = decide(C_URING_SUBMIT, 0, 0);
		t_busy = 0;
	}
	if (r && r->kind == K_DELAY) {
		sleep_us(r->delay_us);
		return 0;
	}
	return r ? errno_of(r) : 0;
}

int io_uring_submit(struct io_uring *ring)
{
	static int (*real_fn)(struct io_uring *);
	int err = uring_fault();

	if (err)
		return -err;
	if (!real_fn)
		real_fn = (int (*)(struct io_uring *))real_uring("io_uring_submit");
	return real_fn(ring);
}

int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	typedef int (*fn_t)(struct io_uring *, unsigned);
	static fn_t real_fn;
	int err = uring_fault();

	if (err)
		return -err;
	if (!real_fn)
		real_fn = (fn_t)real_uring("io_uring_submit_and_wait");
	return real_fn(ring, wait_nr);
}

int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe,
				     unsigned wait_nr, struct __kernel_timespec *ts,
				     sigset_t *sigmask)
{
	typedef int (*fn_t)(struct io_uring *, struct io_uring_cqe **, unsigned,
			    struct __kernel_timespec *, sigset_t *);
	static fn_t real_fn;
	int err = uring_fault();

	if (err)
		return -err;
	if (!real_fn)
		real_fn = (fn_t)real_uring("io_uring_submit_and_wait_timeout");
	return real_fn(ring, cqe, wait_nr, ts, sigmask);
}
