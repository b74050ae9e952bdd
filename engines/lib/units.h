/* Parsing of sizes as fio users write them ("4k", "1m", "500"). */
#ifndef PACK_UNITS_H
#define PACK_UNITS_H

#include <stddef.h>
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

/*
 * A whole-number option an engine keeps as the user's text and checks at
 * init, because fio's own integer options wrap: FIO_OPT_INT stores -1 as
 * 4294967295 and 4294967297 as 1, FIO_OPT_BOOL takes -1 as true. @val NULL
 * or empty (an unset ${VAR}) means @def; otherwise it is read as
 * parse_size() reads sizes ("64", "4k") and must lie in [@lo, @hi].
 * 0 with *@out set, or -1 with one line in @err: "NAME=VAL is not a whole
 * number (LO..HI)" or "NAME=VAL is out of range LO..HI".
 */
int parse_uint_option(const char *name, const char *val, uint64_t def, uint64_t lo, uint64_t hi,
		      uint64_t *out, char *err, size_t errlen);

#endif
