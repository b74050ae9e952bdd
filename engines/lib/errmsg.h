/*
 * One-line error messages for the parsers in engines/lib: callers pass a
 * buffer, the parsers say what is wrong in one line that names the option.
 */
#ifndef PACK_ERRMSG_H
#define PACK_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>

/*
 * snprintf() into @err (nothing if @err is NULL or @errlen 0), then replaces
 * control characters with '?': user text quoted in a message must not split
 * it into several lines or smuggle terminal escapes into fio's output.
 */
void pack_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The same for a line an engine prints: a newline ending @fmt (as fio's
 * log_err formats have) is kept, and only that one: a control character
 * from the arguments (a newline in a path) becomes '?', so the message
 * stays one line. A line cut short by @len still ends with the newline.
 */
void pack_vline(char *buf, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#endif
