/*
 * File size distributions. The size of file i is size_dist_sample(d,
 * hash_item(seed, STREAM_SIZE, i)): deterministic, no per-file memory.
 *
 * Spec strings (sizes as in units.h):
 *   "4k" or "fixed:4k"            every file 4096 bytes
 *   "uniform:500:500000"          uniform integer in [500, 500000]
 *   "lognormal:8k:1.2"            lognormal, median 8 KiB, sigma 1.2 (of ln size)
 *   "lognormal:8k:1.2:16m"        same, clamped to at most 16 MiB
 *                                 (default clamp 64 MiB; lower clamp 0)
 *   "hist:/path/to/file"          empirical histogram read from a file
 *
 * Histogram file: one bin a line, "LOW HIGH WEIGHT" (a size uniform in
 * [LOW, HIGH] with relative weight WEIGHT, a non-negative number) or
 * "SIZE WEIGHT" (exactly SIZE). Blank lines and lines starting with '#'
 * are ignored. At least one bin with weight > 0.
 */
#ifndef PACK_SIZEDIST_H
#define PACK_SIZEDIST_H

#include <stddef.h>
#include <stdint.h>

enum size_dist_kind {
	SIZE_FIXED,
	SIZE_UNIFORM,
	SIZE_LOGNORMAL,
	SIZE_HIST,
};

struct size_bin {
	uint64_t lo, hi;	/* inclusive */
	double cum;		/* cumulative weight up to and including this bin, normalised to 1 */
};

struct size_dist {
	enum size_dist_kind kind;
	uint64_t lo, hi;		/* fixed: lo==hi; uniform: range; lognormal: clamp [0, hi] */
	double mu, sigma;		/* lognormal: ln(median), sigma */
	struct size_bin *bins;		/* histogram */
	size_t nbins;
	uint64_t hist_hash;		/* FNV-1a 64 of the parsed bins, for the tree marker */
};

/*
 * Parses @spec into @d. On error returns -1 and writes a one-line reason to
 * @err naming @optname and what is wrong, e.g.
 *   "file_size_dist: unknown distribution 'gauss' (fixed, uniform, lognormal, hist)"
 *   "file_size_dist: uniform range 9000:500 is inverted"
 *   "file_size_dist: cannot read histogram /x/y: No such file or directory"
 *   "file_size_dist: /x/y line 3: expected 'LOW HIGH WEIGHT' or 'SIZE WEIGHT'"
 * Zero-size files are allowed (fixed:0) but a uniform range 0:0 is just fixed 0.
 */
int size_dist_parse(struct size_dist *d, const char *spec, const char *optname,
		    char *err, size_t errlen);

/* A size drawn from @d using the 64 random bits @u. */
uint64_t size_dist_sample(const struct size_dist *d, uint64_t u);

/* Largest size the distribution can return. */
uint64_t size_dist_max(const struct size_dist *d);

/* Mean size (exact for fixed/uniform/hist, of the clamped lognormal approximately). */
double size_dist_mean(const struct size_dist *d);

/*
 * Canonical text of the distribution, independent of how it was spelled
 * ("4k" and "fixed:4096" give the same text; a histogram is named by its
 * contents' hash, not its path). Used to record and compare tree parameters.
 */
int size_dist_describe(const struct size_dist *d, char *buf, size_t len);

void size_dist_free(struct size_dist *d);

#endif
