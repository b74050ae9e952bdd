/* Tests of size parsing (units.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test.h"
#include "decimal.h"
#include "units.h"

static int size_is(const char *s, uint64_t want)
{
	uint64_t v = 12345;

	return parse_size(s, &v) == 0 && v == want;
}

static int size_bad(const char *s)
{
	uint64_t v = 12345;

	return parse_size(s, &v) == -1 && v == 12345;
}

TEST(units_plain_and_suffixes)
{
	CHECK(size_is("0", 0));
	CHECK(size_is("500", 500));
	CHECK(size_is("500B", 500));
	CHECK(size_is("4k", 4096));
	CHECK(size_is("4K", 4096));
	CHECK(size_is("4kB", 4096));
	CHECK(size_is("4KiB", 4096));
	CHECK(size_is("4kib", 4096));
	CHECK(size_is("1m", 1048576));
	CHECK(size_is("3M", 3 << 20));
	CHECK(size_is("1MiB", 1048576));
	CHECK(size_is("2g", 2ULL << 30));
	CHECK(size_is("2t", 2ULL << 40));
	CHECK(size_is("007", 7));
}

TEST(units_limits)
{
	CHECK(size_is("18446744073709551615", UINT64_MAX));
	CHECK(size_bad("18446744073709551616"));
	CHECK(size_bad("99999999999999999999999999"));
	CHECK(size_is("16777215t", 16777215ULL << 40));
	CHECK(size_bad("16777216t"));
	CHECK(size_is("17179869183g", 17179869183ULL << 30));
	CHECK(size_bad("17179869184g"));
}

TEST(units_rejects)
{
	uint64_t v;

	CHECK(size_bad(""));
	CHECK(size_bad("-1"));
	CHECK(size_bad("+1"));
	CHECK(size_bad("4q"));
	CHECK(size_bad(" 4k"));
	CHECK(size_bad("4k "));
	CHECK(size_bad("4 k"));
	CHECK(size_bad("k"));
	CHECK(size_bad("B"));
	CHECK(size_bad("4kk"));
	CHECK(size_bad("4iB"));
	CHECK(size_bad("4kiBB"));
	CHECK(size_bad("4.5k"));
	CHECK(size_bad("0x10"));
	CHECK(size_bad("1e3"));
	CHECK(size_bad("4p"));
	CHECK(parse_size(NULL, &v) == -1);
}

TEST(units_counted_string)
{
	uint64_t v = 0;

	CHECK(parse_size_n("4k123", 2, &v) == 0 && v == 4096);
	CHECK(parse_size_n("4k123", 5, &v) == -1);
	CHECK(parse_size_n("123", 0, &v) == -1);
	CHECK(parse_size_n("12\0" "3", 4, &v) == -1);
	CHECK(parse_size_n("8KiB:", 4, &v) == 0 && v == 8192);
}

static char opt_err[160];

static int opt_is(const char *val, uint64_t lo, uint64_t hi, uint64_t want)
{
	uint64_t v = 12345;

	return parse_uint_option("o", val, 7, lo, hi, &v, opt_err, sizeof(opt_err)) == 0 &&
	       v == want;
}

/* Refused with @msg, and *out untouched. */
static int opt_bad(const char *val, uint64_t lo, uint64_t hi, const char *msg)
{
	uint64_t v = 12345;

	if (parse_uint_option("o", val, 7, lo, hi, &v, opt_err, sizeof(opt_err)) != -1 ||
	    v != 12345)
		return 0;
	if (strcmp(opt_err, msg))
		printf("  message was: %s\n", opt_err);
	return !strcmp(opt_err, msg);
}

TEST(units_option_ranges)
{
	CHECK(opt_is(NULL, 1, 9, 7));
	CHECK(opt_is("", 1, 9, 7));
	CHECK(opt_is("1", 1, 9, 1));
	CHECK(opt_is("9", 1, 9, 9));
	CHECK(opt_is("1k", 0, UINT32_MAX, 1024));
	CHECK(opt_is("4294967295", 0, UINT32_MAX, UINT32_MAX));
	CHECK(opt_is("18446744073709551615", 0, UINT64_MAX, UINT64_MAX));
	CHECK(opt_bad("0", 1, 9, "o=0 is out of range 1..9"));
	CHECK(opt_bad("10", 1, 9, "o=10 is out of range 1..9"));
	/* what fio's FIO_OPT_INT wrapped: -1 to 4294967295, 2^32 + 1 to 1 */
	CHECK(opt_bad("-1", 1, 1000000, "o=-1 is out of range 1..1000000"));
	CHECK(opt_bad("4294967297", 0, UINT32_MAX, "o=4294967297 is out of range 0..4294967295"));
	CHECK(opt_bad("18446744073709551616", 0, UINT64_MAX,
		      "o=18446744073709551616 is out of range 0..18446744073709551615"));
	CHECK(opt_bad("-99999999999999999999", 0, 1,
		      "o=-99999999999999999999 is out of range 0..1"));
	CHECK(opt_bad("12x", 0, 1, "o=12x is not a whole number (0..1)"));
	CHECK(opt_bad("-", 0, 1, "o=- is not a whole number (0..1)"));
	CHECK(opt_bad("0x10", 0, 99, "o=0x10 is not a whole number (0..99)"));
	CHECK(opt_bad("1.5", 0, 9, "o=1.5 is not a whole number (0..9)"));
	CHECK(opt_bad(" 1", 0, 9, "o= 1 is not a whole number (0..9)"));
	/* the user's text is quoted on one line */
	CHECK(opt_bad("1\n2", 0, 9, "o=1?2 is not a whole number (0..9)"));
}

/* engines/lib/decimal.h: the same bytes as printf, every length of number */
TEST(decimal_writes_what_printf_would)
{
	char got[32], want[32], digits[20], *end = digits + sizeof(digits), *q;
	uint64_t p = 1;
	int i, d;

	for (i = 0; i < 20; i++, p *= 10) {
		const uint64_t us[] = { p - 1, p, p + 1, p * 9 + 7 };

		for (d = 0; d < 4; d++) {
			int64_t v = (int64_t)us[d];

			snprintf(want, sizeof(want), "%llu", (unsigned long long)us[d]);
			q = dec_write(end, us[d]);
			CHECK(end - q == (long)strlen(want) && !memcmp(q, want, end - q));
			snprintf(want, sizeof(want), "%lld", (long long)v);
			CHECK(dec_i64(got, v) == strlen(want) && !strcmp(got, want));
			snprintf(want, sizeof(want), "%lld", (long long)-v);
			CHECK(dec_i64(got, -v) == strlen(want) && !strcmp(got, want));
		}
	}
	q = dec_write(end, UINT64_MAX);
	CHECK(end - q == 20 && !memcmp(q, "18446744073709551615", 20));
	CHECK(dec_i64(got, INT64_MIN) == 20 && !strcmp(got, "-9223372036854775808"));
	CHECK(dec_i64(got, INT64_MAX) == 19 && !strcmp(got, "9223372036854775807"));
}
