/* Tests of size parsing (units.h). */
#include <stdint.h>

#include "test.h"
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
