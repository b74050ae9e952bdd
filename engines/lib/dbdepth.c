/* Captured per-stream depth from completion times (see dbdepth.h). */
#include <stdlib.h>

#include "dbdepth.h"

struct heap {
	uint64_t *v;		/* min-heap of completion times */
	unsigned n, cap;
	unsigned max;		/* the largest depth seen */
};

struct dbdepth {
	struct heap s[DBTRACE_MAX_STREAMS];
	struct heap all; /* every stream's records */
};

struct dbdepth *dbdepth_new(void)
{
	return calloc(1, sizeof(struct dbdepth));
}

void dbdepth_free(struct dbdepth *d)
{
	unsigned i;

	if (!d)
		return;
	for (i = 0; i < DBTRACE_MAX_STREAMS; i++)
		free(d->s[i].v);
	free(d->all.v);
	free(d);
}

void dbdepth_reset(struct dbdepth *d)
{
	unsigned i;

	for (i = 0; i < DBTRACE_MAX_STREAMS; i++)
		d->s[i].n = d->s[i].max = 0;
	d->all.n = d->all.max = 0;
}

static void sift_down(struct heap *h, unsigned i)
{
	uint64_t x = h->v[i];

	for (;;) {
		unsigned c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1] < h->v[c])
			c++;
		if (h->v[c] >= x)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	h->v[i] = x;
}

static void pop(struct heap *h)
{
	h->v[0] = h->v[--h->n];
	if (h->n)
		sift_down(h, 0);
}

static int push(struct heap *h, uint64_t x)
{
	unsigned i;

	if (h->n == DBDEPTH_MAX) {
		/* keep the latest DBDEPTH_MAX completions: replace the earliest */
		if (x > h->v[0]) {
			h->v[0] = x;
			sift_down(h, 0);
		}
		return 0;
	}
	if (h->n == h->cap) {
		unsigned cap = h->cap ? 2 * h->cap : 16;
		uint64_t *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	i = h->n++;
	while (i && h->v[(i - 1) / 2] > x) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
	return 0;
}

int dbdepth_next(struct dbdepth *d, const struct dbtrace_rec *rec)
{
	struct heap *h = &d->s[rec->stream % DBTRACE_MAX_STREAMS];
	unsigned depth;

	if (!rec->has_lat || rec->time == DBTRACE_NO_TIME)
		return 0;
	/* what completed by this issue is no longer in flight */
	while (h->n && h->v[0] <= rec->time)
		pop(h);
	depth = h->n + 1 > DBDEPTH_MAX ? DBDEPTH_MAX : h->n + 1;
	if (push(h, rec->time + rec->lat))
		return -1;
	if (depth > h->max)
		h->max = depth;
	while (d->all.n && d->all.v[0] <= rec->time)
		pop(&d->all);
	if (d->all.n + 1 > d->all.max)
		d->all.max = d->all.n + 1 > DBDEPTH_MAX ? DBDEPTH_MAX : d->all.n + 1;
	if (push(&d->all, rec->time + rec->lat))
		return -1;
	return (int)depth;
}

unsigned dbdepth_total_max(const struct dbdepth *d)
{
	return d->all.max;
}

unsigned dbdepth_max(const struct dbdepth *d, uint32_t stream)
{
	return d->s[stream % DBTRACE_MAX_STREAMS].max;
}
