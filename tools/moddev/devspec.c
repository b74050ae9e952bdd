/* Model specs: see devspec.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devspec.h"
#include "errmsg.h"

/* How much of a user's text a message quotes, so that it stays one short line. */
#define QUOTE 40
/* How deep member models nest: a RAID-10 is two levels; more is a typo or a fuzzer. */
#define MAX_NESTING 4

static int parse_at(const struct dev_model_type *const *types, const char *spec, size_t len,
		    int depth, const struct dev_model_type **type, struct dev_params *p, char *err,
		    size_t errlen);

int dev_param_index(const struct dev_model_type *type, const char *key)
{
	unsigned i;

	for (i = 0; i < type->nparams; i++)
		if (!strcmp(type->params[i].key, key))
			return (int)i;
	return -1;
}

static const struct dev_model_type *find(const struct dev_model_type *const *types,
					 const char *name, size_t len)
{
	for (; *types; types++)
		if (strlen((*types)->name) == len && !memcmp((*types)->name, name, len))
			return *types;
	return NULL;
}

/* "a, b, c": the names of @types, or the keys of @type, for a message. */
static void list_names(const struct dev_model_type *const *types, const struct dev_model_type *type,
		       char *buf, size_t len)
{
	size_t used = 0;
	unsigned i, n = type ? type->nparams : 0;
	const char *name;

	buf[0] = '\0';
	for (i = 0;; i++) {
		if (type) {
			if (i == n)
				break;
			name = type->params[i].key;
		} else {
			if (!types[i])
				break;
			name = types[i]->name;
		}
		if (used < len)
			used += snprintf(buf + used, len - used, "%s%s", i ? ", " : "", name);
	}
}

/*
 * A decimal number: digits, optionally a '.' and more digits, optionally a
 * leading '-' (so that a negative value is refused for its range, not as
 * junk). No exponent, hex, inf or nan: a spec is written by hand.
 */
static int parse_number(const char *s, size_t len, double *out)
{
	char buf[64];
	size_t i = 0, digits = 0;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	if (s[0] == '-')
		i++;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
		digits++;
	if (i < len && s[i] == '.') {
		size_t frac = 0;

		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			frac++;
		if (!frac)
			return -1;
	}
	if (!digits || i != len)
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	*out = strtod(buf, NULL);
	return isfinite(*out) ? 0 : -1;
}

/* The end of the item starting at @s: the next ',' outside parentheses; -1 if unbalanced. */
static long item_end(const char *s, size_t len)
{
	size_t i;
	int open = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '(') {
			open++;
		} else if (s[i] == ')') {
			if (--open < 0)
				return -1;
		} else if (s[i] == ',' && !open) {
			break;
		}
	}
	return open ? -1 : (long)i;
}

static int parse_value(const struct dev_model_type *const *types, const struct dev_model_type *type,
		       int k, const char *item, size_t ilen, const char *val, size_t vlen,
		       int depth, struct dev_params *p, char *err, size_t errlen)
{
	const struct dev_param *d = &type->params[k];
	const struct dev_model_type *subtype;
	struct dev_params sub;
	double v;

	if (d->model) {
		if (vlen < 2 || val[0] != '(' || val[vlen - 1] != ')') {
			pack_errf(err, errlen,
				  "%s: %.*s: a member model goes in parentheses: %s=(SPEC)",
				  type->name, (int)(ilen < QUOTE ? ilen : QUOTE), item, d->key);
			return -1;
		}
		/* the member's own errors name the member's model */
		if (parse_at(types, val + 1, vlen - 2, depth + 1, &subtype, &sub, err, errlen))
			return -1;
		p->sub[k] = val + 1;
		p->sublen[k] = vlen - 2;
		return 0;
	}
	if (parse_number(val, vlen, &v)) {
		pack_errf(err, errlen, "%s: %.*s: not a number", type->name,
			  (int)(ilen < QUOTE ? ilen : QUOTE), item);
		return -1;
	}
	if (d->integer && v != floor(v)) {
		pack_errf(err, errlen, "%s: %.*s: must be a whole number", type->name,
			  (int)(ilen < QUOTE ? ilen : QUOTE), item);
		return -1;
	}
	if (v < d->min || v > d->max) {
		pack_errf(err, errlen, "%s: %.*s: must be %s %.15g", type->name,
			  (int)(ilen < QUOTE ? ilen : QUOTE), item,
			  v < d->min ? "at least" : "at most", v < d->min ? d->min : d->max);
		return -1;
	}
	p->v[k] = v;
	return 0;
}

static int parse_params(const struct dev_model_type *const *types,
			const struct dev_model_type *type, const char *s, size_t len, int depth,
			struct dev_params *p, char *err, size_t errlen)
{
	char key[64], names[256];
	const char *eq;
	size_t ilen;
	long end;
	int k;

	for (;;) {
		end = item_end(s, len);
		if (end < 0) {
			pack_errf(err, errlen, "%s: unbalanced parentheses in '%.*s'", type->name,
				  (int)(len < QUOTE ? len : QUOTE), s);
			return -1;
		}
		ilen = (size_t)end;
		eq = memchr(s, '=', ilen);
		if (!eq || eq == s) {
			pack_errf(err, errlen, "%s: '%.*s' is not key=value", type->name,
				  (int)(ilen < QUOTE ? ilen : QUOTE), s);
			return -1;
		}
		k = -1;
		if ((size_t)(eq - s) < sizeof(key)) {
			memcpy(key, s, eq - s);
			key[eq - s] = '\0';
			k = dev_param_index(type, key);
		}
		if (k < 0) {
			list_names(NULL, type, names, sizeof(names));
			pack_errf(err, errlen, "%s: unknown key '%.*s' (keys: %s)", type->name,
				  (int)(eq - s < QUOTE ? eq - s : QUOTE), s,
				  type->nparams ? names : "none");
			return -1;
		}
		if (p->given[k]) {
			pack_errf(err, errlen, "%s: %s given twice", type->name, key);
			return -1;
		}
		if (parse_value(types, type, k, s, ilen, eq + 1, ilen - (eq + 1 - s), depth, p, err,
				errlen))
			return -1;
		p->given[k] = 1;
		if (ilen == len)
			return 0;
		s += ilen + 1;
		len -= ilen + 1;
	}
}

static int parse_at(const struct dev_model_type *const *types, const char *spec, size_t len,
		    int depth, const struct dev_model_type **type, struct dev_params *p, char *err,
		    size_t errlen)
{
	const char *colon = memchr(spec, ':', len);
	size_t nlen = colon ? (size_t)(colon - spec) : len;
	const struct dev_model_type *t;
	char names[1024]; /* every model's name: the kinds and the named ones */
	unsigned i;

	memset(p, 0, sizeof(*p));
	if (depth > MAX_NESTING) {
		pack_errf(err, errlen, "model: member models nested more than %d deep",
			  MAX_NESTING);
		return -1;
	}
	if (!nlen) {
		pack_errf(err, errlen, "model: %s",
			  len ? "no model name before ':'" : "empty spec");
		return -1;
	}
	t = find(types, spec, nlen);
	if (!t) {
		list_names(types, NULL, names, sizeof(names));
		pack_errf(err, errlen, "model: unknown model '%.*s' (models: %s)",
			  (int)(nlen < QUOTE ? nlen : QUOTE), spec, names);
		return -1;
	}
	if (t->alias_of) {
		if (colon) {
			pack_errf(err, errlen, "%s: a named model takes no parameters (it is %s)",
				  t->name, t->alias_of);
			return -1;
		}
		return parse_at(types, t->alias_of, strlen(t->alias_of), depth, type, p, err,
				errlen);
	}
	if (colon) {
		if (colon + 1 == spec + len) {
			pack_errf(err, errlen, "%s: nothing after ':'", t->name);
			return -1;
		}
		if (parse_params(types, t, colon + 1, len - nlen - 1, depth, p, err, errlen))
			return -1;
	}
	for (i = 0; i < t->nparams; i++) {
		if (p->given[i])
			continue;
		if (t->params[i].required) {
			pack_errf(err, errlen, "%s: %s is required", t->name, t->params[i].key);
			return -1;
		}
		p->v[i] = t->params[i].def;
	}
	*type = t;
	return 0;
}

int dev_spec_parse(const struct dev_model_type *const *types, const char *spec, size_t len,
		   const struct dev_model_type **type, struct dev_params *p, char *err,
		   size_t errlen)
{
	return parse_at(types, spec, len, 0, type, p, err, errlen);
}
