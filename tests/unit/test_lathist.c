/* Tests of the log-linear latency histogram (lathist.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lathist.h"
#include "rng.h"
#include "test.h"

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state = mix64(rnd_state);
	return rnd_state;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* |got - want| <= want / 32, without overflow. */
static int close_enough(uint64_t got, uint64_t want)
{
	unsigned __int128 d = got > want ? got - want : want - got;

	return d * 32 <= (unsigned __int128)want;
}

/* Sample @i of distribution @kind: spreads over many octaves, or stays in few. */
static uint64_t sample(unsigned kind)
{
	uint64_t r = rnd();

	switch (kind) {
	case 0:		/* uniform, small: the exact buckets and the first octaves */
		return r % 200;
	case 1:		/* log-uniform over 0 .. 2^40 */
		return (r >> 24) >> (r % 41);
	case 2:		/* a narrow band around 100 us */
		return 100000 + r % 5000;
	case 3:		/* heavy tail up to 2^63 - 1 */
		return (r >> 1) >> (r % 64);
	default:	/* few distinct values, many ties */
		return 1000 * (1 + r % 5);
	}
}

TEST(lathist_empty)
{
	static struct lathist h;

	memset(&h, 0, sizeof(h));
	CHECK(lathist_percentile(&h, 50) == 0);
	CHECK(lathist_percentile(&h, 100) == 0);
	CHECK(lathist_percentile(&h, 0.001) == 0);
	CHECK(lathist_mean(&h) == 0);
	CHECK(h.n == 0 && h.min == 0 && h.max == 0);
}

TEST(lathist_single_sample)
{
	static const uint64_t v[] = { 0, 1, 15, 16, 17, 31, 32, 33, 1000, 123456789,
				      1ULL << 40, (1ULL << 63) - 1, 1ULL << 63, UINT64_MAX };
	unsigned i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		static struct lathist h;

		memset(&h, 0, sizeof(h));
		lathist_add(&h, v[i]);
		CHECK(h.n == 1);
		CHECK(h.min == v[i] && h.max == v[i]);
		CHECK(lathist_mean(&h) == v[i]);
		/* clamped to [min, max]: one sample is exact at every percentile */
		CHECK(lathist_percentile(&h, 0.1) == v[i]);
		CHECK(lathist_percentile(&h, 50) == v[i]);
		CHECK(lathist_percentile(&h, 99.9) == v[i]);
		CHECK(lathist_percentile(&h, 100) == v[i]);
	}
}

TEST(lathist_small_values_exact)
{
	static struct lathist h;
	uint64_t v;

	/* below 16 every value has its own bucket */
	memset(&h, 0, sizeof(h));
	for (v = 0; v < 16; v++)
		lathist_add(&h, v);
	CHECK(h.min == 0 && h.max == 15);
	CHECK(lathist_mean(&h) == 7);		/* 120 / 16 = 7.5, rounded down */
	for (v = 1; v <= 16; v++)
		CHECK(lathist_percentile(&h, 100.0 * v / 16) == v - 1);
}

TEST(lathist_percentiles_against_sorting)
{
	static uint64_t data[20000];
	static struct lathist h;
	/* per mille, so that the rank is an exact integer computation here */
	static const unsigned pm[] = { 1, 10, 100, 250, 500, 750, 900, 950, 990, 999, 1000 };
	unsigned iter, i, k;

	rnd_state = 4242;
	for (iter = 0; iter < 60; iter++) {
		unsigned n = 1 + (unsigned)(rnd() % 20000), kind = iter % 5;
		uint64_t sum = 0;

		memset(&h, 0, sizeof(h));
		for (i = 0; i < n; i++) {
			data[i] = sample(kind);
			if (kind == 3)
				data[i] >>= 16;		/* keep the sum in 64 bits */
			sum += data[i];
			lathist_add(&h, data[i]);
		}
		qsort(data, n, sizeof(data[0]), cmp_u64);
		CHECK(h.n == n);
		CHECK(h.min == data[0]);
		CHECK(h.max == data[n - 1]);
		CHECK(h.sum == sum);
		CHECK(lathist_mean(&h) == sum / n);
		CHECK(lathist_percentile(&h, 100) == data[n - 1]);
		for (k = 0; k < sizeof(pm) / sizeof(pm[0]); k++) {
			/* nearest rank: the ceil(p * n)-th smallest */
			uint64_t rank = ((uint64_t)pm[k] * n + 999) / 1000;
			uint64_t want, got = lathist_percentile(&h, pm[k] / 10.0);

			if (rank < 1)
				rank = 1;
			want = data[rank - 1];
			if (!close_enough(got, want)) {
				printf("  n %u kind %u p%.1f: got %llu, want %llu\n", n, kind,
				       pm[k] / 10.0, (unsigned long long)got, (unsigned long long)want);
				test_fail(__FILE__, __LINE__, "percentile within 1/32");
			}
			CHECK(got >= h.min && got <= h.max);
		}
	}
}

TEST(lathist_huge_values)
{
	static struct lathist h;
	uint64_t v[64];
	unsigned i;

	/* one sample per octave up to 2^63: no bucket index out of range, 1/32 everywhere */
	memset(&h, 0, sizeof(h));
	for (i = 0; i < 64; i++) {
		v[i] = (1ULL << i) + (i > 5 ? (1ULL << (i - 5)) * 3 : 0);
		lathist_add(&h, v[i]);
	}
	CHECK(h.min == 1 && h.max == v[63]);
	for (i = 1; i <= 64; i++) {
		uint64_t got = lathist_percentile(&h, 100.0 * i / 64);

		if (!close_enough(got, v[i - 1])) {
			printf("  p%.2f: got %llu, want %llu\n", 100.0 * i / 64,
			       (unsigned long long)got, (unsigned long long)v[i - 1]);
			test_fail(__FILE__, __LINE__, "percentile within 1/32");
		}
	}
	CHECK(lathist_percentile(&h, 100) == v[63]);
}

/* Every value of an octave lands within 1/32 of its bucket's middle. */
TEST(lathist_bucket_bound_every_value)
{
	static const uint64_t base[] = { 16, 32, 1024, 1ULL << 20, 1ULL << 33 };
	unsigned b;

	for (b = 0; b < sizeof(base) / sizeof(base[0]); b++) {
		uint64_t step = base[b] >= 1024 ? base[b] / 512 : 1, v;

		for (v = base[b]; v < 2 * base[b]; v += step) {
			static struct lathist h;

			/* min and max far away, so that the clamp does not hide the bucket's value */
			memset(&h, 0, sizeof(h));
			lathist_add(&h, 0);
			lathist_add(&h, v);
			lathist_add(&h, v);
			lathist_add(&h, UINT64_MAX / 4);
			if (!close_enough(lathist_percentile(&h, 50), v)) {
				printf("  value %llu: p50 %llu\n", (unsigned long long)v,
				       (unsigned long long)lathist_percentile(&h, 50));
				test_fail(__FILE__, __LINE__, "bucket middle within 1/32");
				return;
			}
		}
	}
}

TEST(lathist_merge_equals_adding_all)
{
	static struct lathist a, b, all, empty;
	unsigned iter, i;

	rnd_state = 99;
	for (iter = 0; iter < 20; iter++) {
		unsigned na = (unsigned)(rnd() % 3000), nb = (unsigned)(rnd() % 3000);

		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		memset(&all, 0, sizeof(all));
		for (i = 0; i < na; i++) {
			uint64_t v = sample(iter % 5) >> 16;

			lathist_add(&a, v);
			lathist_add(&all, v);
		}
		for (i = 0; i < nb; i++) {
			uint64_t v = sample((iter + 2) % 5) >> 16;

			lathist_add(&b, v);
			lathist_add(&all, v);
		}
		lathist_merge(&a, &b);
		/* the same histogram, field by field (an empty side included) */
		CHECK(!memcmp(&a, &all, sizeof(a)));
		CHECK(lathist_percentile(&a, 99) == lathist_percentile(&all, 99));
	}

	/* merging into an empty one copies; merging an empty one changes nothing */
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&empty, 0, sizeof(empty));
	lathist_add(&b, 500);
	lathist_add(&b, 700);
	lathist_merge(&a, &b);
	CHECK(!memcmp(&a, &b, sizeof(a)));
	CHECK(a.min == 500 && a.max == 700);
	lathist_merge(&a, &empty);
	CHECK(!memcmp(&a, &b, sizeof(a)));
	/* a min of 0 in the source is kept */
	memset(&b, 0, sizeof(b));
	lathist_add(&b, 0);
	lathist_merge(&a, &b);
	CHECK(a.min == 0 && a.max == 700 && a.n == 3);
}

TEST(lathist_percentile_edges)
{
	static struct lathist h;
	unsigned i;

	memset(&h, 0, sizeof(h));
	for (i = 1; i <= 100; i++)
		lathist_add(&h, i * 1000);
	CHECK(lathist_percentile(&h, 100) == 100000);
	CHECK(close_enough(lathist_percentile(&h, 50), 50000));
	CHECK(close_enough(lathist_percentile(&h, 1), 1000));
	CHECK(close_enough(lathist_percentile(&h, 99), 99000));
	/* p99.5 of 100 samples is the 100th: the max */
	CHECK(lathist_percentile(&h, 99.5) == 100000);
	/* very small p is the smallest sample */
	CHECK(lathist_percentile(&h, 0.0001) == 1000);
	CHECK(lathist_mean(&h) == 50500);
}
