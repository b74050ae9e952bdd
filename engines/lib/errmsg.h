/*
 * One-line error messages for the parsers in engines/lib: callers pass a
 * buffer, the parsers say what is wrong in one line that names the option.
 */
#ifndef PACK_ERRMSG_H
#define PACK_ERRMSG_H

#include <stddef.h>

/*
 * snprintf() into @err (nothing if @err is NULL or @errlen 0), then replaces
 * control characters with '?': user text quoted in a message must not split
 * it into several lines or smuggle terminal escapes into fio's output.
 */
void pack_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
