/* Tests of the one-line error messages (errmsg.h). */
#include <stdarg.h>
#include <string.h>

#include "errmsg.h"
#include "test.h"

static void line(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pack_vline(buf, len, fmt, ap);
	va_end(ap);
}

TEST(errmsg_errf_blanks_controls)
{
	char err[64];

	pack_errf(err, sizeof(err), "opt: '%s'", "a\nb\tc\033[2Jd\177");
	CHECK_STREQ(err, "opt: 'a?b?c?[2Jd?'");
	/* NULL or empty buffers are left alone */
	pack_errf(NULL, 10, "x");
	pack_errf(err, 0, "x");
	CHECK_STREQ(err, "opt: 'a?b?c?[2Jd?'");
}

TEST(errmsg_line_keeps_only_the_formats_newline)
{
	char buf[128];

	/* a newline in a path does not split the line; the format's ends it */
	line(buf, sizeof(buf), "smallfile: tree_dir %s: %s\n", "/mnt/a\nb", "No such file");
	CHECK_STREQ(buf, "smallfile: tree_dir /mnt/a?b: No such file\n");
	/* a path that ends in a newline, right before the format's */
	line(buf, sizeof(buf), "e: %s\n", "x\n");
	CHECK_STREQ(buf, "e: x?\n");
	/* a format without a newline gets none, and an argument's is blanked */
	line(buf, sizeof(buf), "e: %s", "x\n");
	CHECK_STREQ(buf, "e: x?");
	line(buf, sizeof(buf), "e: %s\r\n", "y");
	CHECK_STREQ(buf, "e: y?\n");
}

TEST(errmsg_line_cut_short_still_ends_the_line)
{
	char buf[8];

	line(buf, sizeof(buf), "e: %s\n", "a long\npath");
	CHECK_STREQ(buf, "e: a l\n");
	CHECK(strlen(buf) == sizeof(buf) - 1);
	line(buf, 1, "e: %s\n", "x");
	CHECK_STREQ(buf, "");
}
