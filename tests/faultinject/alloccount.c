/*
 * alloccount.so: counts a process's calls to the allocator, so that a test
 * can hold a long-running program (the modeled-device daemon) to "no
 * allocation per request" from outside, without building it differently.
 *
 *   ALLOCCOUNT_REPORT=/tmp/allocs LD_PRELOAD=build/alloccount.so PROGRAM ...
 *
 * Every process that loads it appends one line "PID CALLS" to the report
 * file when it exits normally (exit or a return from main), CALLS being its
 * calls to malloc, calloc, realloc, reallocarray, memalign,
 * posix_memalign, aligned_alloc, valloc and pvalloc. A forked child counts
 * on from its parent's count. The calls go on to glibc's allocator
 * (__libc_malloc and its siblings), so nothing else changes. A sanitizer's
 * allocator loaded before it (LD_PRELOAD=libasan.so ...) takes the calls
 * instead, and the count is 0.
 *
 * Built by `make build/alloccount.so`; plain C, no dependencies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static uint64_t calls;

static void count(void)
{
	__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
	count();
	return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	count();
	return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
	count();
	return __libc_realloc(p, n);
}

void *reallocarray(void *p, size_t k, size_t n)
{
	count();
	if (n && k > SIZE_MAX / n) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, k * n);
}

void *memalign(size_t align, size_t n)
{
	count();
	return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	count();
	return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	count();
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *valloc(size_t n)
{
	count();
	return __libc_memalign(sysconf(_SC_PAGESIZE), n);
}

void *pvalloc(size_t n)
{
	size_t page = sysconf(_SC_PAGESIZE);

	count();
	return __libc_memalign(page, (n + page - 1) / page * page);
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("ALLOCCOUNT_REPORT");
	char line[64];
	int fd, len;

	if (!path || !*path)
		return;
	/* one write of one line with O_APPEND: the processes' lines never mix */
	len = snprintf(line, sizeof(line), "%ld %llu\n", (long)getpid(),
		       (unsigned long long)__atomic_load_n(&calls, __ATOMIC_RELAXED));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, len) != len)
		fprintf(stderr, "alloccount: cannot write %s\n", path);
	close(fd);
}
