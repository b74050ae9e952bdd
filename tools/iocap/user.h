/*
 * iocap: what its user-space files share (user.c), and the test build's
 * failures on demand.
 */
#ifndef IOCAP_USER_H
#define IOCAP_USER_H

#include <stddef.h>
#include <stdlib.h>

/* One line on standard error, die_cleanup's function run (the outputs removed), exit 2. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* What die() runs before it exits (iocap.c: its outputs removed). */
void die_cleanup(void (*fn)(void));
/* Zeroed memory, or die. */
void *xmalloc(size_t n);

/* The number of elements of array @a. */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#ifdef IOCAP_TEST_HOOKS
/*
 * The test build (build/iocap-test; tests/capture/test_iocap_incomplete.py)
 * fails on demand where a real capture fails rarely, each set by an
 * environment variable: IOCAP_TEST_TARGETS_MAX=N, a table of N traced
 * processes instead of 8192; IOCAP_TEST_POLL_ERROR=N, the N-th read of the
 * ring buffer fails with EIO; IOCAP_TEST_NO_CHILDREN_LIST=1, /proc's lists
 * of child processes cannot be read; IOCAP_TEST_TIME_DIV=N, times written N
 * times slower (calls a fraction of a microsecond apart then meet in one).
 * The normal build has none of them.
 */
static inline long test_hook(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? atol(v) : 0;
}
#else
#define test_hook(name) 0L
#endif

#endif
