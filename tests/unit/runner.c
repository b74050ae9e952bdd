/*
 * Unit test runner: runs every registered test and prints one line per
 * failed check, then "N passed, N failed" (counting tests); exits non-zero
 * if any test failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define MAX_TESTS	512

static struct {
	const char *name;
	void (*fn)(void);
} tests[MAX_TESTS];
static int ntests;
static const char *current;
static int current_failed;

void test_register(const char *name, void (*fn)(void))
{
	if (ntests == MAX_TESTS) {
		fprintf(stderr, "too many tests, raise MAX_TESTS\n");
		exit(2);
	}
	tests[ntests].name = name;
	tests[ntests++].fn = fn;
}

void test_fail(const char *file, int line, const char *expr)
{
	printf("FAIL %s:%d: %s: %s\n", file, line, current, expr);
	current_failed = 1;
}

void test_fail_str(const char *file, int line, const char *expr,
		   const char *got, const char *want)
{
	printf("FAIL %s:%d: %s: %s (got \"%s\", want \"%s\")\n", file, line,
	       current, expr, got ? got : "(null)", want ? want : "(null)");
	current_failed = 1;
}

char *test_tmpfile(const char *text, size_t len)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	int fd;

	if (asprintf(&path, "%s/pack-unit-XXXXXX", dir && *dir ? dir : "/tmp") < 0)
		abort();
	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		perror("test_tmpfile");
		abort();
	}
	close(fd);
	return path;
}

void test_rm(char *path)
{
	unlink(path);
	free(path);
}

/* Tests are registered in link order; run them sorted by name for stable output. */
static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv)
{
	int i, passed = 0, failed = 0;

	qsort(tests, ntests, sizeof(tests[0]), by_name);
	for (i = 0; i < ntests; i++) {
		/* An argument runs only the tests whose names contain it. */
		if (argc > 1 && !strstr(tests[i].name, argv[1]))
			continue;
		current = tests[i].name;
		current_failed = 0;
		tests[i].fn();
		if (current_failed)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
