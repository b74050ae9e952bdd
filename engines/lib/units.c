/*
 * Size parsing for job options: "500", "4k", "4KiB", "1m". Strict on purpose:
 * a typo in a file size silently read as something else would make a whole
 * benchmark run measure the wrong thing.
 */
#include <stdint.h>
#include <string.h>

#include "errmsg.h"
#include "units.h"

/* Multiplier for a k/m/g/t suffix letter, 0 if @c is not one. */
static uint64_t suffix_mult(char c)
{
	switch (c) {
	case 'k': case 'K':
		return 1ULL << 10;
	case 'm': case 'M':
		return 1ULL << 20;
	case 'g': case 'G':
		return 1ULL << 30;
	case 't': case 'T':
		return 1ULL << 40;
	}
	return 0;
}

static int is_b(char c)
{
	return c == 'b' || c == 'B';
}

/*
 * The unit part after the digits: "", "B", or a multiplier letter followed
 * by nothing, "B" or "iB". A bare "iB" without a multiplier is rejected, it
 * is more likely a typo than a byte count.
 */
static int parse_suffix(const char *s, unsigned long len, uint64_t *mult)
{
	*mult = 1;
	if (len == 0)
		return 0;
	if (len == 1 && is_b(s[0]))
		return 0;
	*mult = suffix_mult(s[0]);
	if (!*mult)
		return -1;
	s++;
	len--;
	if (len == 0)
		return 0;
	if (len == 1 && is_b(s[0]))
		return 0;
	if (len == 2 && (s[0] == 'i' || s[0] == 'I') && is_b(s[1]))
		return 0;
	return -1;
}

int parse_size_n(const char *s, unsigned long len, uint64_t *out)
{
	uint64_t v = 0, mult;
	unsigned long i = 0;

	if (!s || !out)
		return -1;
	/* Only plain decimal digits: no sign, no whitespace, no hex. */
	while (i < len && s[i] >= '0' && s[i] <= '9') {
		unsigned d = s[i] - '0';

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		i++;
	}
	if (i == 0)
		return -1;
	if (parse_suffix(s + i, len - i, &mult))
		return -1;
	if (v > UINT64_MAX / mult)
		return -1;
	*out = v * mult;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	if (!s)
		return -1;
	return parse_size_n(s, strlen(s), out);
}

/* Whether @s is an integer in decimal digits, maybe negative, of any size. */
static int is_integer(const char *s)
{
	if (*s == '-')
		s++;
	return *s && !s[strspn(s, "0123456789")];
}

int parse_uint_option(const char *name, const char *val, uint64_t def, uint64_t lo, uint64_t hi,
		      uint64_t *out, char *err, size_t errlen)
{
	uint64_t v;

	if (!val || !*val) {
		*out = def;
		return 0;
	}
	if (parse_size(val, &v) && !is_integer(val)) {
		pack_errf(err, errlen, "%s=%s is not a whole number (%llu..%llu)", name, val,
			  (unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	/* a negative number and one past 2^64 are numbers, only out of the range */
	if (parse_size(val, &v) || v < lo || v > hi) {
		pack_errf(err, errlen, "%s=%s is out of range %llu..%llu", name, val,
			  (unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}
