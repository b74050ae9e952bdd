// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: what its user-space files share (user.h): an error's one line and
 * exit, and memory or that exit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "user.h"

static void (*on_die)(void);

void die_cleanup(void (*fn)(void))
{
	on_die = fn;
}

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "iocap: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (on_die)
		on_die();
	exit(2);
}

void *xmalloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		die("out of memory");
	return p;
}
