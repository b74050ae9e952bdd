/*
 * A latency histogram with bounded memory and bounded relative error:
 * log-linear buckets, 16 per power of two (error under 1/32 of the value),
 * from 1 ns to 2^63 ns. Used for the engines' own per-class reports, where
 * fio's histograms (one per direction) are too coarse a split.
 */
#ifndef PACK_LATHIST_H
#define PACK_LATHIST_H

#include <stdint.h>

#define LATHIST_BUCKETS	976

struct lathist {
	uint64_t n;
	uint64_t sum, min, max;	/* ns; min is 0 when n is 0 */
	uint64_t bucket[LATHIST_BUCKETS];
};

/* The bucket of @ns: 0..15 exact, then 16 a power of two. */
static inline int lathist_bucket_of(uint64_t ns)
{
	int e;

	if (ns < 16)
		return (int)ns;
	e = 63 - __builtin_clzll(ns);
	return 16 + (e - 4) * 16 + (int)((ns >> (e - 4)) & 15);
}

/* Inline: the replay adds a sample for every record. */
static inline void lathist_add(struct lathist *h, uint64_t ns)
{
	if (!h->n || ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
	h->n++;
	h->sum += ns;
	h->bucket[lathist_bucket_of(ns)]++;
}

/* Adds every sample of @src to @dst. */
void lathist_merge(struct lathist *dst, const struct lathist *src);
/*
 * The @p-th percentile (0 < p <= 100) in ns: the middle of the bucket that
 * holds it, clamped to [min, max]; exactly min or max when it is the first
 * or the last sample (so p100 is max); 0 for an empty histogram.
 */
uint64_t lathist_percentile(const struct lathist *h, double p);
uint64_t lathist_mean(const struct lathist *h);

#endif
