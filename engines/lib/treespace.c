/* See treespace.h. */
#include <math.h>
#include <stdint.h>

#include "rng.h"
#include "treespace.h"

/*
 * The sums saturate at UINT64_MAX: a tree larger than 2^64 bytes (2^20
 * files of fixed:16t) wrapped to a small number, or to 0, and "fitted".
 */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* A non-negative double as uint64_t, UINT64_MAX from 2^64 up (a cast there is undefined). */
static uint64_t sat_from_double(double x)
{
	if (!(x > 0))
		return 0;
	return x >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)x;
}

static uint64_t blocks_of(uint64_t bytes, uint64_t block)
{
	if (bytes > UINT64_MAX - (block - 1))
		return UINT64_MAX;
	return (bytes + block - 1) / block * block;
}

/* Bytes of a directory holding @n entries of names @namelen long. */
static uint64_t dir_bytes(uint64_t n, unsigned namelen, uint64_t block)
{
	/* ".", ".." and the entries: an 8-byte header and the name, 4-aligned */
	uint64_t b = sat_add(24, sat_mul(n, 8 + ((namelen + 3) & ~3u)));

	return blocks_of(b, block);
}

void tree_space(const struct tree_shape *t, const struct size_dist *d, uint64_t seed,
		uint64_t stream, uint64_t block, uint64_t exact_max, uint64_t count,
		struct tree_space *out)
{
	uint64_t i, n = count < t->nfiles ? count : t->nfiles, ndirs;
	uint64_t inner = 0, level, leaves, per_leaf;
	unsigned k;

	if (!block)
		block = 4096;
	if (!exact_max)
		exact_max = 1;
	out->files = n;
	out->data_error = 0;
	if (n <= exact_max) {
		uint64_t sum = 0;

		for (i = 0; i < n; i++) {
			uint64_t size = size_dist_sample(d, hash_item(seed, stream, i));

			sum = sat_add(sum, blocks_of(size, block));
		}
		out->data_bytes = sum;
	} else {
		/* every step-th file, from an offset in the middle of the first step */
		uint64_t step = n / exact_max, m = 0;
		double mean = 0, m2 = 0, sd;

		for (i = step / 2; i < n && m < exact_max; i += step) {
			double x = (double)blocks_of(size_dist_sample(d, hash_item(seed, stream, i)),
						     block);
			double delta = x - mean;

			m++;
			mean += delta / (double)m;
			m2 += delta * (x - mean);
		}
		sd = m > 1 ? sqrt(m2 / (double)(m - 1)) : 0;
		out->data_bytes = sat_from_double(mean * (double)n + 0.5);
		out->data_error = sat_from_double(4.0 * sd * (double)n / sqrt((double)m) + 0.5);
	}

	/*
	 * Directories: files fill leaves in order and a layout makes only the
	 * directories on the paths of the leaves that get a file: the first
	 * ceil(n / files_per_leaf) leaves, and at each level above them the
	 * ceil(leaves / fanout^levels) ancestors of those. A files_per_dir tree
	 * has fanout^depth >= the leaves it needs (400M files at 1000 a leaf and
	 * fanout 64: 400,000 of 16.7M leaves), so counting every leaf of the
	 * shape would ask for 40 times the directories the layout makes.
	 */
	per_leaf = t->files_per_leaf;
	leaves = per_leaf ? (n + per_leaf - 1) / per_leaf : 1;
	if (leaves > t->nleaves)
		leaves = t->nleaves;
	ndirs = 0;
	level = leaves;
	for (k = t->depth; k > 0; k--) {
		ndirs += level;
		if (k < t->depth)
			inner += level;
		level = (level + t->fanout - 1) / t->fanout;
	}
	if (t->depth && leaves)
		inner++;	/* the root holds the first level */
	if (t->maildir)
		ndirs += 3 * leaves;
	if (per_leaf > n)
		per_leaf = n;
	out->dirs = ndirs;
	out->dir_bytes = sat_mul(inner, dir_bytes(t->fanout, t->digit_width, block));
	/* each maildir leaf holds new, cur and tmp, and its files are in new */
	if (t->maildir) {
		uint64_t maildir = dir_bytes(3, 3, block) + 2 * dir_bytes(0, 0, block);

		out->dir_bytes = sat_add(out->dir_bytes, sat_mul(leaves, maildir));
	}
	out->dir_bytes = sat_add(out->dir_bytes,
				 sat_mul(leaves, dir_bytes(per_leaf, 1 + t->name_width, block)));
}
