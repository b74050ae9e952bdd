/* Record filters of the replay engine (see dbfilter.h). */
#include <stdlib.h>
#include <string.h>

#include "dbfilter.h"
#include "errmsg.h"

#define ITEM_MAX	1100

static void bit_set(uint8_t *m, uint32_t i, int on)
{
	if (on)
		m[i >> 3] |= (uint8_t)(1U << (i & 7));
	else
		m[i >> 3] &= (uint8_t)~(1U << (i & 7));
}

/* A plain decimal id, or -1. */
static long id_of(const char *s, size_t n)
{
	long v = 0;
	size_t i;

	if (!n || n > 6)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Parses "A-B" or "A"; 0 and the bounds, or -1. */
static int range_of(const char *s, long *lo, long *hi)
{
	const char *dash = strchr(s, '-');

	if (!dash) {
		*lo = *hi = id_of(s, strlen(s));
		return *lo < 0 ? -1 : 0;
	}
	*lo = id_of(s, (size_t)(dash - s));
	*hi = id_of(dash + 1, strlen(dash + 1));
	return *lo < 0 || *hi < 0 || *lo > *hi ? -1 : 0;
}

enum kind { K_OPS, K_STREAMS, K_FILES };

/*
 * A stream's name, or its role: captures name a task's stream ROLE-TID
 * ("walwriter-4250", "backend-4262"), so "walwriter" picks every WAL
 * writer stream whatever its thread id.
 */
static int stream_name_matches(const char *item, const char *name)
{
	size_t n = strlen(item);

	if (!strcmp(item, name))
		return 1;
	if (strncmp(item, name, n) || name[n] != '-' || !name[n + 1])
		return 0;
	for (name += n + 1; *name; name++)
		if (*name < '0' || *name > '9')
			return 0;
	return 1;
}

/* Sets or clears in @m (or in *@ops) what @item names; -1 if nothing. */
static int apply(enum kind k, const struct dbtrace_header *h, const char *item, int on,
		 uint32_t *ops, uint8_t *m)
{
	long lo, hi;
	unsigned i;
	int hit = 0;

	if (k == K_OPS) {
		uint32_t bits = 0;

		if (!strcmp(item, "sync"))
			bits = 1U << DBTRACE_FSYNC | 1U << DBTRACE_FDATASYNC;
		else if (!strcmp(item, "namespace"))
			bits = 1U << DBTRACE_CREATE | 1U << DBTRACE_UNLINK | 1U << DBTRACE_TRUNCATE;
		else
			for (i = 0; i < DBTRACE_OP_NR; i++)
				if (!strcmp(item, dbtrace_op_name((enum dbtrace_op)i)))
					bits = 1U << i;
		if (!bits)
			return -1;
		*ops = on ? *ops | bits : *ops & ~bits;
		return 0;
	}
	if (range_of(item, &lo, &hi) == 0) {
		/* ids: each must be declared, a range must hold at least one */
		for (i = 0; k == K_STREAMS ? i < h->nstreams : i < h->nfiles; i++) {
			uint32_t id = k == K_STREAMS ? h->streams[i].id : h->files[i].id;

			if ((long)id >= lo && (long)id <= hi) {
				bit_set(m, id, on);
				hit = 1;
			}
		}
		return hit ? 0 : -1;
	}
	for (i = 0; k == K_STREAMS ? i < h->nstreams : i < h->nfiles; i++) {
		if (k == K_STREAMS) {
			if (stream_name_matches(item, h->streams[i].name)) {
				bit_set(m, h->streams[i].id, on);
				hit = 1;
			}
		} else if (!strcmp(item, h->files[i].path) ||
			   !strcmp(item, dbtrace_role_name(h->files[i].role))) {
			bit_set(m, h->files[i].id, on);
			hit = 1;
		}
	}
	return hit ? 0 : -1;
}

static int parse_list(enum kind k, const char *opt, const char *list,
		      const struct dbtrace_header *h, uint32_t *ops, uint8_t *m, size_t mlen,
		      char *err, size_t errlen)
{
	static const char *const what[] = { "operation", "stream", "file" };
	const char *p = list ? list : "";
	char item[ITEM_MAX];
	int includes = 0;

	/* everything kept unless some item includes: then start from nothing */
	for (const char *q = p; *q; ) {
		size_t n = strcspn(q, ",");

		if (n && q[0] != '!')
			includes = 1;
		q += n + (q[n] == ',');
	}
	if (k == K_OPS)
		*ops = includes ? 0 : (1U << DBTRACE_OP_NR) - 1;
	else
		memset(m, includes ? 0 : 0xff, mlen);
	while (*p) {
		size_t n = strcspn(p, ",");
		int on = 1;
		const char *s = p;

		if (n && *s == '!') {
			on = 0;
			s++;
		}
		if (p + n == s) {
			pack_errf(err, errlen, "%s: an empty item in '%s'", opt, list);
			return -1;
		}
		if ((size_t)(p + n - s) >= sizeof(item)) {
			/* the reason first: the list itself would not fit in a message */
			pack_errf(err, errlen, "%s: an item of %zu bytes is too long (at most %zu)",
				  opt, (size_t)(p + n - s), sizeof(item) - 1);
			return -1;
		}
		memcpy(item, s, (size_t)(p + n - s));
		item[p + n - s] = '\0';
		if (apply(k, h, item, on, ops, m)) {
			pack_errf(err, errlen, "%s: no %s '%s' in the trace%s", opt, what[k], item,
				  k == K_OPS ? " format (read, write, fsync, fdatasync, sync_file_range, trim, truncate, create, unlink, sync, namespace)" : "");
			return -1;
		}
		/* after a comma comes an item, even at the end: "read," has an empty one */
		p += n;
		if (*p == ',' && !p[1]) {
			pack_errf(err, errlen, "%s: an empty item in '%s'", opt, list);
			return -1;
		}
		p += *p == ',';
	}
	return 0;
}

static int all_set(const uint8_t *m, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (m[i] != 0xff)
			return 0;
	return 1;
}

int dbfilter_parse(struct dbfilter *f, const struct dbtrace_header *h, const char *ops,
		   const char *streams, const char *files, char *err, size_t errlen)
{
	uint32_t dummy;

	memset(f, 0, sizeof(*f));
	if (parse_list(K_OPS, "dbr_ops", ops, h, &f->ops, NULL, 0, err, errlen) ||
	    parse_list(K_STREAMS, "dbr_streams", streams, h, &dummy, f->streams,
		       sizeof(f->streams), err, errlen) ||
	    parse_list(K_FILES, "dbr_files", files, h, &dummy, f->files, sizeof(f->files),
		       err, errlen))
		return -1;
	f->all = all_set(f->streams, sizeof(f->streams)) && all_set(f->files, sizeof(f->files)) &&
		 (f->ops & ((1U << DBTRACE_OP_NR) - 1)) == (1U << DBTRACE_OP_NR) - 1;
	return 0;
}
