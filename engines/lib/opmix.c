/*
 * The small-file engine's operations and a weighted mix of them, parsed from
 * "read" or "read:60,deliver:30,delete:10" and drawn from 32 random bits.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errmsg.h"
#include "opmix.h"

#define WEIGHT_MAX	1000000
#define OP_NAMES	"(read, stat, create, append, delete, deliver, layout)"

static const char *const op_names[FOP_NR] = {
	[FOP_READ] = "read",
	[FOP_STAT] = "stat",
	[FOP_CREATE] = "create",
	[FOP_APPEND] = "append",
	[FOP_DELETE] = "delete",
	[FOP_DELIVER] = "deliver",
	[FOP_LAYOUT] = "layout",
};

const char *file_op_name(enum file_op op)
{
	if ((unsigned)op >= FOP_NR)
		return "unknown";
	return op_names[op];
}

static int op_lookup(const char *s, size_t n)
{
	int op;

	for (op = 0; op < FOP_NR; op++)
		if (strlen(op_names[op]) == n && !strncmp(s, op_names[op], n))
			return op;
	return -1;
}

/* Bounds of [s, s+n) without surrounding blanks ("read:60, stat:40" is fine). */
static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* Plain decimal 0..WEIGHT_MAX. */
static int parse_weight(const char *s, size_t n, unsigned *w)
{
	unsigned long v = 0;
	size_t i;

	if (!n)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > WEIGHT_MAX)
			return -1;
	}
	*w = v;
	return 0;
}

/* One "name" or "name:weight" item of @spec, [s, s+n). */
static int parse_item(struct op_mix *m, const char *s, size_t n, int single,
		      int *seen, const char *spec, const char *optname,
		      char *err, size_t errlen)
{
	const char *colon = memchr(s, ':', n);
	size_t nlen = colon ? (size_t)(colon - s) : n;
	const char *ws = colon ? colon + 1 : NULL;
	size_t wlen = colon ? n - nlen - 1 : 0;
	unsigned w = 1;
	int op;

	trim(&s, &nlen);
	if (!nlen) {
		pack_errf(err, errlen, "%s: empty operation in '%s'", optname, spec);
		return -1;
	}
	op = op_lookup(s, nlen);
	if (op < 0) {
		pack_errf(err, errlen, "%s: unknown operation '%.*s' " OP_NAMES, optname,
		     (int)nlen, s);
		return -1;
	}
	if (seen[op]) {
		pack_errf(err, errlen, "%s: operation '%s' given twice", optname, op_names[op]);
		return -1;
	}
	seen[op] = 1;
	if (!colon && !single) {
		pack_errf(err, errlen, "%s: '%s' needs a weight in a list (name:weight)",
		     optname, op_names[op]);
		return -1;
	}
	if (colon) {
		trim(&ws, &wlen);
		if (parse_weight(ws, wlen, &w)) {
			pack_errf(err, errlen, "%s: weight '%.*s' for %s must be an integer 0..%d",
			     optname, (int)wlen, ws, op_names[op], WEIGHT_MAX);
			return -1;
		}
	}
	m->weight[op] = w;
	return 0;
}

int op_mix_parse(struct op_mix *m, const char *spec, const char *optname,
		 char *err, size_t errlen)
{
	int seen[FOP_NR] = { 0 };
	const char *s;
	int op, single;

	memset(m, 0, sizeof(*m));
	if (!optname)
		optname = "file_op";
	if (!spec || !*spec) {
		pack_errf(err, errlen, "%s: no operation given " OP_NAMES, optname);
		return -1;
	}
	single = !strchr(spec, ',');
	for (s = spec;; s++) {
		const char *end = strchrnul(s, ',');

		if (parse_item(m, s, end - s, single, seen, spec, optname, err, errlen))
			return -1;
		if (!*end)
			break;
		s = end;
	}
	/* layout creates the whole tree; mixed with other ops its meaning is lost. */
	if (seen[FOP_LAYOUT] && !single) {
		pack_errf(err, errlen, "%s: layout cannot be mixed with other operations", optname);
		return -1;
	}
	for (op = 0; op < FOP_NR; op++) {
		m->total += m->weight[op];
		m->nops += m->weight[op] > 0;
	}
	if (!m->total) {
		pack_errf(err, errlen, "%s: all weights in '%s' are 0", optname, spec);
		return -1;
	}
	return 0;
}

enum file_op op_mix_pick(const struct op_mix *m, uint32_t r)
{
	uint64_t x = ((uint64_t)r * m->total) >> 32, cum = 0;
	int op, last = FOP_NR;

	for (op = 0; op < FOP_NR; op++) {
		if (!m->weight[op])
			continue;
		cum += m->weight[op];
		last = op;
		if (x < cum)
			return op;
	}
	/* Unreachable for a parsed mix (x < total); stay in range anyway. */
	return last == FOP_NR ? FOP_READ : last;
}

enum file_op op_mix_single(const struct op_mix *m)
{
	int op;

	if (m->nops != 1)
		return FOP_NR;
	for (op = 0; op < FOP_NR; op++)
		if (m->weight[op])
			return op;
	return FOP_NR;
}

int op_mix_describe(const struct op_mix *m, char *buf, size_t len)
{
	size_t n = 0;
	int op, r;

	if (!len)
		return -1;
	buf[0] = '\0';
	for (op = 0; op < FOP_NR; op++) {
		if (!m->weight[op])
			continue;
		r = snprintf(buf + n, len - n, "%s%s:%u", n ? "," : "", op_names[op],
			     m->weight[op]);
		if (r < 0 || (size_t)r >= len - n)
			return -1;
		n += r;
	}
	return n;
}
