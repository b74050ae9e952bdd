/*
 * Data written into files: a pool generated once per job, periodic with
 * period CONTENT_PERIOD, and a per-file aligned start point into it, so
 * writes cost no generation and O_DIRECT chunks come from aligned memory.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "content.h"
#include "rng.h"

#define BLOCK		4096
#define STREAM_CONTENT	3	/* hash_item stream of a file's start point */
#define STREAM_STAMP	4	/* hash_item stream of the per-file unique stamps */

/* "1".."99" in plain decimal, nothing else. */
static int parse_pct(const char *s, unsigned *pct)
{
	unsigned v = 0;
	int n;

	for (n = 0; s[n]; n++) {
		if (s[n] < '0' || s[n] > '9' || n >= 2)
			return -1;
		v = v * 10 + (s[n] - '0');
	}
	if (n == 0 || v < 1 || v > 99)
		return -1;
	*pct = v;
	return 0;
}

int content_parse(struct content_spec *c, const char *spec, const char *optname,
		  char *err, size_t errlen)
{
	static const char cprefix[] = "compressible:";

	memset(c, 0, sizeof(*c));
	if (!optname)
		optname = "file_content";
	if (!spec || !*spec) {
		pack_errf(err, errlen, "%s: no content given (random, zero, compressible:PCT)",
		     optname);
		return -1;
	}
	if (!strcmp(spec, "random")) {
		c->kind = CONTENT_RANDOM;
		return 0;
	}
	if (!strcmp(spec, "zero") || !strcmp(spec, "zeros")) {
		c->kind = CONTENT_ZERO;
		return 0;
	}
	if (!strncmp(spec, cprefix, sizeof(cprefix) - 1)) {
		const char *arg = spec + sizeof(cprefix) - 1;

		if (parse_pct(arg, &c->pct)) {
			pack_errf(err, errlen, "%s: compressible percentage '%s' must be 1..99",
			     optname, arg);
			return -1;
		}
		c->kind = CONTENT_COMPRESSIBLE;
		return 0;
	}
	pack_errf(err, errlen, "%s: unknown content '%s' (random, zero, compressible:PCT)",
	     optname, spec);
	return -1;
}

int content_describe(const struct content_spec *c, char *buf, size_t len)
{
	int r = -1;

	switch (c->kind) {
	case CONTENT_RANDOM:
		r = snprintf(buf, len, "random");
		break;
	case CONTENT_ZERO:
		r = snprintf(buf, len, "zero");
		break;
	case CONTENT_COMPRESSIBLE:
		r = snprintf(buf, len, "compressible:%u", c->pct);
		break;
	}
	if (r < 0 || (size_t)r >= len)
		return -1;
	return r;
}

/* Random bytes, 8 at a time from a splitmix64 stream. */
static void fill_random(unsigned char *buf, size_t n, uint64_t *state)
{
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t v = mix64(*state += 0x9e3779b97f4a7c15ULL);

		memcpy(buf + i, &v, 8);
	}
	if (i < n) {
		uint64_t v = mix64(*state += 0x9e3779b97f4a7c15ULL);

		memcpy(buf + i, &v, n - i);
	}
}

/* One period of content according to @c. */
static void fill_period(unsigned char *buf, const struct content_spec *c, uint64_t seed)
{
	uint64_t state = mix64(seed ^ 0x636f6e74656e74ULL);
	size_t off, nrand;

	switch (c->kind) {
	case CONTENT_ZERO:
		memset(buf, 0, CONTENT_PERIOD);
		return;
	case CONTENT_RANDOM:
		fill_random(buf, CONTENT_PERIOD, &state);
		return;
	case CONTENT_COMPRESSIBLE:
		/* pct % zeros at the end of each block, like fio's buffer_compress_percentage. */
		nrand = BLOCK - (size_t)BLOCK * c->pct / 100;
		for (off = 0; off < CONTENT_PERIOD; off += BLOCK) {
			fill_random(buf + off, nrand, &state);
			memset(buf + off + nrand, 0, BLOCK - nrand);
		}
		return;
	}
}

int content_pool_init(struct content_pool *p, const struct content_spec *c,
		      uint64_t seed, size_t max_chunk)
{
	size_t size, off;
	void *mem;

	p->buf = NULL;
	p->max_chunk = 0;
	if (max_chunk > SIZE_MAX - CONTENT_PERIOD - CONTENT_ALIGN)
		return -1;
	size = (CONTENT_PERIOD + max_chunk + CONTENT_ALIGN - 1) & ~(CONTENT_ALIGN - 1);
	if (posix_memalign(&mem, CONTENT_ALIGN, size))
		return -1;
	p->buf = mem;
	p->max_chunk = max_chunk;
	fill_period(p->buf, c, seed);
	/* Repeat the period so a chunk starting anywhere in it reads on contiguously. */
	for (off = CONTENT_PERIOD; off < size; off += CONTENT_PERIOD) {
		size_t n = size - off < CONTENT_PERIOD ? size - off : CONTENT_PERIOD;

		memcpy(p->buf + off, p->buf + off - CONTENT_PERIOD, n);
	}
	return 0;
}

const unsigned char *content_at(const struct content_pool *p, uint64_t seed,
				uint64_t key, uint64_t off)
{
	uint64_t start = hash_item(seed, STREAM_CONTENT, key) %
			 (CONTENT_PERIOD / CONTENT_ALIGN) * CONTENT_ALIGN;

	/* Reducing off first keeps start + off from wrapping for huge offsets. */
	return p->buf + (start + off % CONTENT_PERIOD) % CONTENT_PERIOD;
}

void content_pool_free(struct content_pool *p)
{
	free(p->buf);
	p->buf = NULL;
	p->max_chunk = 0;
}

void content_fill(const struct content_pool *p, const struct content_spec *c,
		  uint64_t seed, uint64_t key, uint64_t off, void *buf, size_t len)
{
	unsigned char *out = buf;
	uint64_t unit = c->kind == CONTENT_COMPRESSIBLE ? CONTENT_ALIGN : CONTENT_STAMP;
	uint64_t o;

	memcpy(out, content_at(p, seed, key, off), len);
	if (c->kind == CONTENT_ZERO)
		return;
	/*
	 * From the unit boundary at or before off: a chunk that starts inside
	 * a unit's 8-byte stamp (a write resumed after a short one, a bs that
	 * is not a multiple of 8) gets the rest of that stamp, so the bytes
	 * at an offset never depend on where the chunks start.
	 */
	for (o = off / unit * unit; o < off + len; o += unit) {
		uint64_t h = hash_item(seed ^ key, STREAM_STAMP, o / unit);
		uint64_t from = o > off ? o : off;
		uint64_t to = o + 8 < off + len ? o + 8 : off + len;

		if (from < to)
			memcpy(out + (from - off), (const unsigned char *)&h + (from - o), to - from);
	}
}
