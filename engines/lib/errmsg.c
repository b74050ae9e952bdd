/* One-line error messages for the parsers in engines/lib (see errmsg.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>

#include "errmsg.h"

void pack_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	char *p;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	for (p = err; *p; p++)
		if (iscntrl((unsigned char)*p))
			*p = '?';
}
