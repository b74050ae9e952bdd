/*
 * Decimal numbers written by hand. The engines format a number for every
 * file they touch (a tree path, a PostMark file name, a marker line): a
 * libc snprintf("%d") costs some 300 instructions, about as much as the
 * rest of a warm file operation's own work; this costs a tenth of it.
 * Header-only (static inline), like sysutil.h.
 */
#ifndef PACK_DECIMAL_H
#define PACK_DECIMAL_H

#include <stdint.h>
#include <string.h>

/* @v's decimal digits, ending just before @end (room for 20); where they start. */
static inline char *dec_write(char *end, uint64_t v)
{
	/* two digits a step: half the divisions of one a step */
	static const char pairs[] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";

	while (v >= 100) {
		end -= 2;
		memcpy(end, pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, pairs + 2 * v, 2);
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

/* What snprintf(@buf, 21, "%lld", @v) writes (NUL-terminated); its length. */
static inline unsigned dec_i64(char *buf, int64_t v)
{
	char digits[20], *end = digits + sizeof(digits), *q;
	unsigned n, neg = v < 0;

	q = dec_write(end, neg ? -(uint64_t)v : (uint64_t)v);
	n = (unsigned)(end - q);
	buf[0] = '-';
	memcpy(buf + neg, q, n);
	buf[neg + n] = '\0';
	return neg + n;
}

#endif
