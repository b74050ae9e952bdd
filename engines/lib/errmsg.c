/* One-line error messages for the parsers in engines/lib (see errmsg.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errmsg.h"

/* Control characters to '?' in the first @n bytes of @s. */
static void blank_controls(char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n && s[i]; i++)
		if (iscntrl((unsigned char)s[i]))
			s[i] = '?';
}

void pack_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	blank_controls(err, errlen);
}

void pack_vline(char *buf, size_t len, const char *fmt, va_list ap)
{
	size_t flen = strlen(fmt), n;
	int newline = flen && fmt[flen - 1] == '\n';

	if (!buf || !len)
		return;
	vsnprintf(buf, len, fmt, ap);
	n = strlen(buf);
	blank_controls(buf, n);
	/* the format's own newline was the last byte, or was cut off: either way it ends the line */
	if (newline && n)
		buf[n - 1] = '\n';
}
