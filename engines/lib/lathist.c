/* Log-linear latency histogram (see lathist.h). */
#include "lathist.h"

/* The middle of bucket @b. */
static uint64_t bucket_value(int b)
{
	int e, sub;

	if (b < 16)
		return (uint64_t)b;
	e = (b - 16) / 16 + 4;
	sub = (b - 16) % 16;
	return ((16ULL + sub) << (e - 4)) + ((1ULL << (e - 4)) >> 1);
}

void lathist_merge(struct lathist *dst, const struct lathist *src)
{
	int b;

	if (!src->n)
		return;
	if (!dst->n || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->n += src->n;
	dst->sum += src->sum;
	for (b = 0; b < LATHIST_BUCKETS; b++)
		dst->bucket[b] += src->bucket[b];
}

uint64_t lathist_percentile(const struct lathist *h, double p)
{
	uint64_t want, seen = 0, v;
	int b;

	if (!h->n)
		return 0;
	want = (uint64_t)(p / 100.0 * (double)h->n + 0.999999);
	if (want < 1)
		want = 1;
	if (want >= h->n)
		return h->max;		/* the last sample is known exactly, */
	if (want == 1)
		return h->min;		/* and so is the first */
	for (b = 0; b < LATHIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= want)
			break;
	}
	v = b < LATHIST_BUCKETS ? bucket_value(b) : h->max;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

uint64_t lathist_mean(const struct lathist *h)
{
	return h->n ? h->sum / h->n : 0;
}
