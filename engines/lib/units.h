/* Parsing of sizes as fio users write them ("4k", "1m", "500"). */
#ifndef PACK_UNITS_H
#define PACK_UNITS_H

#include <stdint.h>

/*
 * Parses a non-negative size with an optional binary suffix, as fio does with
 * its default kb_base=1024: k/K = 1024, m/M = 1024^2, g/G, t/T; an optional
 * trailing "iB" or "B" is accepted ("4KiB", "4kB" both mean 4096).
 * Returns 0 and sets *out, or -1 on an empty string, junk, a negative number
 * or overflow. The whole string must be consumed.
 */
int parse_size(const char *s, uint64_t *out);

/* Same, for a string that is not NUL-terminated: the first len bytes. */
int parse_size_n(const char *s, unsigned long len, uint64_t *out);

#endif
