/*
 * File size distributions: parsing of the size spec, stateless sampling from
 * 64 random bits, and a canonical description so a tree records exactly the
 * sizes it was laid out with.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "errmsg.h"
#include "sizedist.h"
#include "sysutil.h"
#include "units.h"

#define HIST_MAX_BINS		65536
/*
 * A histogram file is read within bounds (hist:/dev/zero once read
 * gigabytes into one line): a line, comments included, of at most a page,
 * and the file at most 16 MiB, room for the most bins at 256 bytes a line.
 */
#define HIST_MAX_LINE		4096
#define HIST_MAX_BYTES		((uint64_t)HIST_MAX_BINS * 256)
#define LOGNORMAL_DEF_MAX	(64ULL << 20)
#define SIGMA_MAX		100.0
#define DIST_NAMES		"(fixed, uniform, lognormal, hist)"

/* Nearest integer to a non-negative double, saturating at UINT64_MAX. */
static uint64_t round_u64(double x)
{
	if (!(x > 0))
		return 0;
	if (x >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)(x + 0.5);
}

/* lo + (uniform in [0, hi-lo]) from 64 bits, by multiply-high (no modulo). */
static uint64_t uniform_in(uint64_t lo, uint64_t hi, uint64_t u)
{
	unsigned __int128 span = (unsigned __int128)(hi - lo) + 1;

	return lo + (uint64_t)(((unsigned __int128)u * span) >> 64);
}

/*
 * Inverse standard normal CDF (Acklam's rational approximation, relative
 * error below 1.2e-9), which is plenty for sizes rounded to whole bytes.
 */
static double norm_inv(double p)
{
	static const double a[] = { -3.969683028665376e+01, 2.209460984245205e+02,
		-2.759285104469687e+02, 1.383577518672690e+02,
		-3.066479806614716e+01, 2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01, 1.615858368580409e+02,
		-1.556989798598866e+02, 6.680131188771972e+01,
		-1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03, -3.223964580411365e-01,
		-2.400758277161838e+00, -2.549732539343734e+00,
		4.374664141464968e+00, 2.938163982698783e+00 };
	static const double d[] = { 7.784695709041462e-03, 3.224671290700398e-01,
		2.445134137142996e+00, 3.754408661907416e+00 };
	const double plow = 0.02425;
	double q, r;

	if (p < plow) {
		q = sqrt(-2 * log(p));
		return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	if (p > 1 - plow) {
		q = sqrt(-2 * log(1 - p));
		return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
			((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	q = p - 0.5;
	r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

static uint64_t sample_lognormal(const struct size_dist *d, uint64_t u)
{
	/*
	 * Centre of one of 2^52 cells: strictly inside (0, 1) and exact in a
	 * double (with 53 bits the top cell would round to 1.0 and give NaN).
	 */
	double p = ((double)(u >> 12) + 0.5) * 0x1.0p-52;
	double x = exp(d->mu + d->sigma * norm_inv(p));
	uint64_t v;

	if (!(x < (double)d->hi))
		return d->hi;
	v = round_u64(x);
	return v > d->hi ? d->hi : v;
}

static uint64_t sample_hist(const struct size_dist *d, uint64_t u)
{
	double x = u64_to_unit(u);
	size_t lo = 0, hi = d->nbins - 1;

	/* First bin whose cumulative weight exceeds x; the last one is 1.0. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x < d->bins[mid].cum)
			hi = mid;
		else
			lo = mid + 1;
	}
	/* The top bits picked the bin; mix so the position inside is independent. */
	return uniform_in(d->bins[lo].lo, d->bins[lo].hi, mix64(u));
}

uint64_t size_dist_sample(const struct size_dist *d, uint64_t u)
{
	switch (d->kind) {
	case SIZE_FIXED:
		return d->lo;
	case SIZE_UNIFORM:
		return uniform_in(d->lo, d->hi, u);
	case SIZE_LOGNORMAL:
		return sample_lognormal(d, u);
	case SIZE_HIST:
		return sample_hist(d, u);
	}
	return d->lo;
}

uint64_t size_dist_max(const struct size_dist *d)
{
	uint64_t m = 0;
	size_t i;

	if (d->kind != SIZE_HIST)
		return d->hi;
	for (i = 0; i < d->nbins; i++)
		if (d->bins[i].hi > m)
			m = d->bins[i].hi;
	return m;
}

/* Standard normal CDF. */
static double phi(double x)
{
	return 0.5 * erfc(-x / sqrt(2.0));
}

/*
 * E[min(X, M)] for X lognormal(mu, sigma): the clamp moves the upper tail to
 * M. The first term is summed in log space so a wide sigma cannot give inf*0.
 */
static double lognormal_mean(const struct size_dist *d)
{
	double m = (double)d->hi, lm = log(m), s = d->sigma;

	/* Every sample is the rounded median then. */
	if (s == 0)
		return (double)size_dist_sample(d, 0);
	return exp(d->mu + s * s / 2 + log(phi((lm - d->mu - s * s) / s))) +
	       m * phi((d->mu - lm) / s);
}

double size_dist_mean(const struct size_dist *d)
{
	double sum = 0, prev = 0;
	size_t i;

	switch (d->kind) {
	case SIZE_FIXED:
		return (double)d->lo;
	case SIZE_UNIFORM:
		return ((double)d->lo + (double)d->hi) / 2;
	case SIZE_LOGNORMAL:
		return lognormal_mean(d);
	case SIZE_HIST:
		for (i = 0; i < d->nbins; i++) {
			const struct size_bin *b = &d->bins[i];

			sum += (b->cum - prev) * (((double)b->lo + (double)b->hi) / 2);
			prev = b->cum;
		}
		return sum;
	}
	return 0;
}

int size_dist_describe(const struct size_dist *d, char *buf, size_t len)
{
	int r = -1;

	switch (d->kind) {
	case SIZE_FIXED:
		r = snprintf(buf, len, "fixed:%llu", (unsigned long long)d->lo);
		break;
	case SIZE_UNIFORM:
		r = snprintf(buf, len, "uniform:%llu:%llu",
			     (unsigned long long)d->lo, (unsigned long long)d->hi);
		break;
	case SIZE_LOGNORMAL:
		r = snprintf(buf, len, "lognormal:%llu:%.6g:%llu",
			     (unsigned long long)round_u64(exp(d->mu)), d->sigma,
			     (unsigned long long)d->hi);
		break;
	case SIZE_HIST:
		r = snprintf(buf, len, "hist:%016llx", (unsigned long long)d->hist_hash);
		break;
	}
	if (r < 0 || (size_t)r >= len)
		return -1;
	return r;
}

void size_dist_free(struct size_dist *d)
{
	free(d->bins);
	d->bins = NULL;
	d->nbins = 0;
}

/* ---- parsing ---- */

/* Parses the size in [s, s+n) or complains about it as part of @what. */
static int get_size(const char *s, size_t n, uint64_t *out, const char *optname,
		    const char *what, char *err, size_t errlen)
{
	if (!parse_size_n(s, n, out))
		return 0;
	pack_errf(err, errlen, "%s: invalid %s '%.*s' (expected a size like 4096 or 4k)",
	     optname, what, (int)n, s);
	return -1;
}

static int parse_fixed(struct size_dist *d, const char *arg, const char *optname,
		       char *err, size_t errlen)
{
	if (get_size(arg, strlen(arg), &d->lo, optname, "size", err, errlen))
		return -1;
	d->kind = SIZE_FIXED;
	d->hi = d->lo;
	return 0;
}

static int parse_uniform(struct size_dist *d, const char *arg, const char *optname,
			 char *err, size_t errlen)
{
	const char *colon = strchr(arg, ':');

	if (!colon) {
		pack_errf(err, errlen, "%s: uniform needs LOW:HIGH, got '%s'", optname, arg);
		return -1;
	}
	if (get_size(arg, colon - arg, &d->lo, optname, "uniform low", err, errlen) ||
	    get_size(colon + 1, strlen(colon + 1), &d->hi, optname, "uniform high",
		     err, errlen))
		return -1;
	if (d->lo > d->hi) {
		pack_errf(err, errlen, "%s: uniform range %llu:%llu is inverted", optname,
		     (unsigned long long)d->lo, (unsigned long long)d->hi);
		return -1;
	}
	/* A one-value range is a fixed size; describe it the same way. */
	d->kind = d->lo == d->hi ? SIZE_FIXED : SIZE_UNIFORM;
	return 0;
}

/* Parses a sigma in [s, s+n): a finite, non-negative number. */
static int get_sigma(const char *s, size_t n, double *out, const char *optname,
		     char *err, size_t errlen)
{
	char tmp[64], *end;

	if (n == 0 || n >= sizeof(tmp) || isspace((unsigned char)s[0]))
		goto bad;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	*out = strtod(tmp, &end);
	/* Written so NaN fails too; beyond 100 sizes are all 0 or the max anyway. */
	if (*end || errno || !(*out >= 0 && *out <= SIGMA_MAX))
		goto bad;
	return 0;
bad:
	pack_errf(err, errlen, "%s: lognormal sigma '%.*s' must be a number in [0, %g]",
	     optname, (int)n, s, SIGMA_MAX);
	return -1;
}

static int parse_lognormal(struct size_dist *d, const char *arg, const char *optname,
			   char *err, size_t errlen)
{
	const char *c1 = strchr(arg, ':'), *c2;
	uint64_t median;

	if (!c1) {
		pack_errf(err, errlen, "%s: lognormal needs MEDIAN:SIGMA[:MAX], got '%s'",
		     optname, arg);
		return -1;
	}
	c2 = strchr(c1 + 1, ':');
	if (get_size(arg, c1 - arg, &median, optname, "lognormal median", err, errlen))
		return -1;
	if (get_sigma(c1 + 1, c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1), &d->sigma,
		      optname, err, errlen))
		return -1;
	d->hi = LOGNORMAL_DEF_MAX;
	if (c2 && get_size(c2 + 1, strlen(c2 + 1), &d->hi, optname, "lognormal max",
			   err, errlen))
		return -1;
	if (median == 0) {
		pack_errf(err, errlen, "%s: lognormal median must be above 0", optname);
		return -1;
	}
	if (median > d->hi) {
		pack_errf(err, errlen, "%s: lognormal median %llu is above the max %llu",
		     optname, (unsigned long long)median, (unsigned long long)d->hi);
		return -1;
	}
	d->kind = SIZE_LOGNORMAL;
	d->lo = 0;
	d->mu = log((double)median);
	/*
	 * The canonical text (the tree marker's) gives sigma to 6 significant
	 * digits: use exactly that value, or two sigmas written alike there
	 * would draw different sizes (found by tests/fuzz/fuzz_roundtrip.c).
	 */
	{
		char t[32];

		snprintf(t, sizeof(t), "%.6g", d->sigma);
		d->sigma = strtod(t, NULL);
	}
	return 0;
}

/* ---- histogram file ---- */

struct hist_ctx {
	const char *path, *optname;
	char *err;
	size_t errlen;
	unsigned long line;
	size_t cap;
	double *w;		/* raw weights, parallel to bins */
};

/* Splits @s in place into at most @max whitespace-separated tokens. */
static int split_ws(char *s, char **tok, int max)
{
	int n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return n;
		if (n == max)
			return max + 1;
		tok[n++] = s;
		while (*s && *s != ' ' && *s != '\t')
			s++;
		if (*s)
			*s++ = '\0';
	}
}

static int hist_line_err(struct hist_ctx *h, const char *what, const char *tok)
{
	pack_errf(h->err, h->errlen, "%s: %s line %lu: %s '%s'", h->optname, h->path,
	     h->line, what, tok);
	return -1;
}

static int hist_grow(struct size_dist *d, struct hist_ctx *h)
{
	size_t cap = h->cap ? h->cap * 2 : 64;
	struct size_bin *b;
	double *w;

	b = realloc(d->bins, cap * sizeof(*b));
	if (b)
		d->bins = b;
	w = realloc(h->w, cap * sizeof(*w));
	if (w)
		h->w = w;
	if (!b || !w) {
		pack_errf(h->err, h->errlen, "%s: %s: out of memory", h->optname, h->path);
		return -1;
	}
	h->cap = cap;
	return 0;
}

/* One non-comment line: "LOW HIGH WEIGHT" or "SIZE WEIGHT". */
static int hist_line(struct size_dist *d, struct hist_ctx *h, char *s)
{
	char *tok[3], *end;
	uint64_t lo, hi;
	double w;
	int n = split_ws(s, tok, 3);

	if (n < 2 || n > 3) {
		pack_errf(h->err, h->errlen,
		     "%s: %s line %lu: expected 'LOW HIGH WEIGHT' or 'SIZE WEIGHT'",
		     h->optname, h->path, h->line);
		return -1;
	}
	if (parse_size(tok[0], &lo))
		return hist_line_err(h, "invalid size", tok[0]);
	hi = lo;
	if (n == 3 && parse_size(tok[1], &hi))
		return hist_line_err(h, "invalid size", tok[1]);
	errno = 0;
	w = strtod(tok[n - 1], &end);
	if (*end || errno || !isfinite(w) || w < 0)
		return hist_line_err(h, "weight must be a finite number >= 0, got",
				     tok[n - 1]);
	if (lo > hi) {
		pack_errf(h->err, h->errlen, "%s: %s line %lu: range %llu %llu is inverted",
		     h->optname, h->path, h->line, (unsigned long long)lo,
		     (unsigned long long)hi);
		return -1;
	}
	/* Zero-weight bins can never be drawn; leaving them out keeps the hash canonical. */
	if (w == 0)
		return 0;
	if (d->nbins == HIST_MAX_BINS) {
		pack_errf(h->err, h->errlen, "%s: %s line %lu: more than %d bins",
		     h->optname, h->path, h->line, HIST_MAX_BINS);
		return -1;
	}
	if (d->nbins == h->cap && hist_grow(d, h))
		return -1;
	d->bins[d->nbins].lo = lo;
	d->bins[d->nbins].hi = hi;
	h->w[d->nbins++] = w;
	return 0;
}

/* One line of the file, @len bytes in @s (room for a NUL after them). */
static int hist_text_line(struct size_dist *d, struct hist_ctx *h, char *s, size_t len)
{
	h->line++;
	/* Strip "\n" and a DOS "\r\n". */
	while (len > 0 && s[len - 1] == '\r')
		len--;
	if (memchr(s, '\0', len)) {
		pack_errf(h->err, h->errlen, "%s: %s line %lu: contains a NUL byte", h->optname,
			  h->path, h->line);
		return -1;
	}
	s[len] = '\0';
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s || *s == '#')
		return 0;
	return hist_line(d, h, s);
}

/*
 * The file's lines, read in chunks into a line of at most HIST_MAX_LINE
 * bytes, HIST_MAX_BYTES in all: memory and time stay bounded whatever the
 * file holds. A read error is an error, not an end.
 */
static int hist_read(struct size_dist *d, struct hist_ctx *h, int fd)
{
	char chunk[16384], line[HIST_MAX_LINE + 1];
	size_t llen = 0;
	uint64_t total = 0;

	for (;;) {
		ssize_t n = NOINTR(read(fd, chunk, sizeof(chunk)));
		ssize_t i;

		if (n < 0) {
			pack_errf(h->err, h->errlen, "%s: cannot read histogram %s: %s", h->optname,
				  h->path, strerror(errno));
			return -1;
		}
		if (n == 0)
			return llen ? hist_text_line(d, h, line, llen) : 0;
		total += n;
		if (total > HIST_MAX_BYTES) {
			pack_errf(h->err, h->errlen, "%s: histogram %s is larger than %llu MiB",
				  h->optname, h->path, (unsigned long long)(HIST_MAX_BYTES >> 20));
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (chunk[i] == '\n') {
				if (hist_text_line(d, h, line, llen))
					return -1;
				llen = 0;
			} else if (llen == HIST_MAX_LINE) {
				pack_errf(h->err, h->errlen,
					  "%s: %s line %lu is longer than %d bytes", h->optname,
					  h->path, h->line + 1, HIST_MAX_LINE);
				return -1;
			} else {
				line[llen++] = chunk[i];
			}
		}
	}
}

static void fnv_u64(uint64_t *h, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++) {
		*h ^= (v >> (8 * i)) & 0xff;
		*h *= 0x100000001b3ULL;
	}
}

/* Normalises weights into cum and hashes the result (not the file's spelling). */
static int hist_finish(struct size_dist *d, struct hist_ctx *h)
{
	double total = 0, run = 0;
	uint64_t hash = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < d->nbins; i++)
		total += h->w[i];
	if (!d->nbins || total == 0) {
		pack_errf(h->err, h->errlen, "%s: histogram %s has no bin with weight > 0",
		     h->optname, h->path);
		return -1;
	}
	if (!isfinite(total)) {
		pack_errf(h->err, h->errlen, "%s: histogram %s: total weight is not finite",
		     h->optname, h->path);
		return -1;
	}
	for (i = 0; i < d->nbins; i++) {
		uint64_t bits;

		run += h->w[i];
		d->bins[i].cum = i + 1 == d->nbins ? 1.0 : run / total;
		memcpy(&bits, &d->bins[i].cum, sizeof(bits));
		fnv_u64(&hash, d->bins[i].lo);
		fnv_u64(&hash, d->bins[i].hi);
		fnv_u64(&hash, bits);
	}
	d->hist_hash = hash;
	d->kind = SIZE_HIST;
	d->lo = 0;
	d->hi = size_dist_max(d);
	return 0;
}

/* The histogram file cannot be read (@why), or is not a regular file (@why NULL). */
static int hist_open_err(struct hist_ctx *h, const char *why)
{
	if (why)
		pack_errf(h->err, h->errlen, "%s: cannot read histogram %s: %s", h->optname,
			  h->path, why);
	else
		pack_errf(h->err, h->errlen, "%s: histogram %s is not a regular file", h->optname,
			  h->path);
	return -1;
}

static int parse_hist(struct size_dist *d, const char *path, const char *optname,
		      char *err, size_t errlen)
{
	struct hist_ctx h = { .path = path, .optname = optname, .err = err,
			      .errlen = errlen };
	struct stat st;
	int fd, ret;

	if (!*path) {
		pack_errf(err, errlen, "%s: hist needs a file name", optname);
		return -1;
	}
	/*
	 * Looked at before it is opened, and opened without waiting: a FIFO
	 * would block the open (and the job) for ever, a device is no file
	 * of sizes. A symlink to a regular file is fine.
	 */
	if (stat(path, &st))
		return hist_open_err(&h, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return hist_open_err(&h, NULL);
	fd = NOINTR(open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC));
	if (fd < 0)
		return hist_open_err(&h, strerror(errno));
	/* replaced between the look and the open */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return hist_open_err(&h, NULL);
	}
	ret = hist_read(d, &h, fd);
	close(fd);
	if (!ret)
		ret = hist_finish(d, &h);
	free(h.w);
	if (ret)
		size_dist_free(d);
	return ret;
}

static int parse_named(struct size_dist *d, const char *spec, size_t namelen,
		       const char *optname, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		int (*fn)(struct size_dist *, const char *, const char *, char *, size_t);
	} kinds[] = {
		{ "fixed", parse_fixed },
		{ "uniform", parse_uniform },
		{ "lognormal", parse_lognormal },
		{ "hist", parse_hist },
	};
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strlen(kinds[i].name) == namelen &&
		    !strncmp(spec, kinds[i].name, namelen))
			return kinds[i].fn(d, spec + namelen + 1, optname, err, errlen);
	pack_errf(err, errlen, "%s: unknown distribution '%.*s' " DIST_NAMES, optname,
	     (int)namelen, spec);
	return -1;
}

int size_dist_parse(struct size_dist *d, const char *spec, const char *optname,
		    char *err, size_t errlen)
{
	const char *colon;

	memset(d, 0, sizeof(*d));
	if (!optname)
		optname = "file_size_dist";
	if (!spec || !*spec) {
		pack_errf(err, errlen, "%s: no size distribution given", optname);
		return -1;
	}
	colon = strchr(spec, ':');
	if (colon)
		return parse_named(d, spec, colon - spec, optname, err, errlen);
	/* A bare size is a fixed size; a bare word is probably a misspelt kind. */
	if (isdigit((unsigned char)spec[0]))
		return parse_fixed(d, spec, optname, err, errlen);
	pack_errf(err, errlen, "%s: unknown distribution '%s' " DIST_NAMES, optname, spec);
	return -1;
}
