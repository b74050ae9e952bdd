/*
 * A tiny unit test harness: TEST() registers a function at startup, CHECK()
 * records a failure with file:line and the failing expression and carries on,
 * so one run reports every broken check.
 */
#ifndef PACK_TEST_H
#define PACK_TEST_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

void test_register(const char *name, void (*fn)(void));
void test_fail(const char *file, int line, const char *expr);
void test_fail_str(const char *file, int line, const char *expr,
		   const char *got, const char *want);

/* A temporary file holding @text (NUL-terminated path, free with test_rm). */
char *test_tmpfile(const char *text, size_t len);
void test_rm(char *path);

#define TEST(name)							\
	static void name(void);						\
	__attribute__((constructor)) static void reg_##name(void)	\
	{								\
		test_register(#name, name);				\
	}								\
	static void name(void)

#define CHECK(e)							\
	do {								\
		if (!(e))						\
			test_fail(__FILE__, __LINE__, #e);		\
	} while (0)

/* String equality that shows both strings when it fails. */
#define CHECK_STREQ(got, want)						\
	do {								\
		const char *g_ = (got), *w_ = (want);			\
		if (!g_ || !w_ || strcmp(g_, w_))			\
			test_fail_str(__FILE__, __LINE__,		\
				      #got " == " #want, g_, w_);	\
	} while (0)

/* An error message must be exactly one line starting with "@opt: ". */
#define CHECK_ERRLINE(msg, opt)						\
	do {								\
		const char *m_ = (msg);					\
		CHECK(!strncmp(m_, opt ": ", strlen(opt ": ")));	\
		CHECK(!strchr(m_, '\n'));				\
		CHECK(strlen(m_) > strlen(opt ": "));			\
	} while (0)

#endif
