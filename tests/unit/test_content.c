/* Tests of file content generation (content.h). */
#include <stdint.h>
#include <stdlib.h>

#include "content.h"
#include "test.h"

#define OPT	"file_content"

static char err[256];

static const char *canon(const char *spec)
{
	static char buf[300];
	struct content_spec c;

	err[0] = '\0';
	if (content_parse(&c, spec, OPT, err, sizeof(err))) {
		snprintf(buf, sizeof(buf), "(error: %s)", err);
		return buf;
	}
	if (content_describe(&c, buf, sizeof(buf)) < 0)
		return "(describe failed)";
	return buf;
}

static int bad(const char *spec)
{
	struct content_spec c;

	err[0] = '\0';
	if (content_parse(&c, spec, OPT, err, sizeof(err)) != -1)
		return 0;
	CHECK_ERRLINE(err, OPT);
	return 1;
}

static size_t count_zero(const unsigned char *p, size_t n)
{
	size_t i, z = 0;

	for (i = 0; i < n; i++)
		z += !p[i];
	return z;
}

static int pool(struct content_pool *p, const char *spec, uint64_t seed, size_t max_chunk)
{
	struct content_spec c;

	if (content_parse(&c, spec, OPT, err, sizeof(err)))
		return -1;
	return content_pool_init(p, &c, seed, max_chunk);
}

/* Every byte beyond the first period repeats it. */
static int periodic(const struct content_pool *p)
{
	size_t i;

	for (i = CONTENT_PERIOD; i < CONTENT_PERIOD + p->max_chunk; i++)
		if (p->buf[i] != p->buf[i - CONTENT_PERIOD])
			return 0;
	return 1;
}

TEST(content_parse_and_describe)
{
	CHECK_STREQ(canon("random"), "random");
	CHECK_STREQ(canon("zero"), "zero");
	CHECK_STREQ(canon("zeros"), "zero");
	CHECK_STREQ(canon("compressible:50"), "compressible:50");
	CHECK_STREQ(canon("compressible:1"), "compressible:1");
	CHECK_STREQ(canon("compressible:99"), "compressible:99");
	CHECK(bad("rand"));
	CHECK_STREQ(err, OPT ": unknown content 'rand' (random, zero, compressible:PCT)");
	CHECK(bad("compressible:0"));
	CHECK_STREQ(err, OPT ": compressible percentage '0' must be 1..99");
	CHECK(bad("compressible:100"));
	CHECK(bad("compressible:"));
	CHECK(bad("compressible:5x"));
	CHECK(bad("compressible:-5"));
	CHECK(bad("compressible: 5"));
	CHECK(bad("compressible:99999999999999999999"));
	CHECK(bad("compressible"));
	CHECK(bad("Random"));
	CHECK(bad("random "));
	CHECK(bad(""));
	CHECK(bad(NULL));
	CHECK(bad("zero\n"));
}

TEST(content_zero_pool)
{
	struct content_pool p;

	CHECK(pool(&p, "zero", 1, 65536) == 0);
	CHECK(((uintptr_t)p.buf & (CONTENT_ALIGN - 1)) == 0);
	CHECK(count_zero(p.buf, CONTENT_PERIOD + 65536) == CONTENT_PERIOD + 65536);
	content_pool_free(&p);
	CHECK(p.buf == NULL);
}

TEST(content_random_pool)
{
	struct content_pool a, b, c;
	size_t z;

	CHECK(pool(&a, "random", 1, 131072) == 0);
	CHECK(pool(&b, "random", 1, 131072) == 0);
	CHECK(pool(&c, "random", 2, 131072) == 0);
	CHECK(((uintptr_t)a.buf & (CONTENT_ALIGN - 1)) == 0);
	CHECK(memcmp(a.buf, b.buf, CONTENT_PERIOD + 131072) == 0);
	CHECK(memcmp(a.buf, c.buf, 4096) != 0);
	/* About 1/256 of random bytes are zero: 4096 +- 4*64. */
	z = count_zero(a.buf, CONTENT_PERIOD);
	CHECK(z > 4096 - 256 && z < 4096 + 256);
	CHECK(periodic(&a));
	/* No two 4 KiB blocks alike (the generator does not cycle early). */
	CHECK(memcmp(a.buf, a.buf + 4096, 4096) != 0);
	CHECK(memcmp(a.buf, a.buf + CONTENT_PERIOD - 4096, 4096) != 0);
	content_pool_free(&a);
	content_pool_free(&b);
	content_pool_free(&c);
}

TEST(content_compressible_pool)
{
	static const unsigned pcts[] = { 1, 25, 50, 99 };
	struct content_pool p;
	size_t k, off;

	for (k = 0; k < 4; k++) {
		char spec[32];
		size_t nzero = 4096 * pcts[k] / 100, nrand = 4096 - nzero;
		double want, got;
		int tail_zero = 1, head_random = 1;

		snprintf(spec, sizeof(spec), "compressible:%u", pcts[k]);
		CHECK(pool(&p, spec, 9, 8192) == 0);
		for (off = 0; off < CONTENT_PERIOD; off += 4096) {
			tail_zero &= count_zero(p.buf + off + nrand, nzero) == nzero;
			/* A random stretch of >= 40 bytes is almost never all zeros. */
			head_random &= count_zero(p.buf + off, nrand) < nrand;
		}
		CHECK(tail_zero);
		CHECK(head_random);
		want = pcts[k] / 100.0 + (1 - pcts[k] / 100.0) / 256;
		got = count_zero(p.buf, CONTENT_PERIOD) / (double)CONTENT_PERIOD;
		CHECK(got > want - 0.002 && got < want + 0.002);
		CHECK(periodic(&p));
		content_pool_free(&p);
	}
}

TEST(content_at_alignment_and_bounds)
{
	const size_t max_chunk = 256 * 1024;
	struct content_pool p;
	uint64_t key, starts = 0, sum = 0;
	int aligned = 1, inside = 1, stream = 1;

	CHECK(pool(&p, "random", 3, max_chunk) == 0);
	for (key = 0; key < 2000; key++) {
		const unsigned char *s = content_at(&p, 77, key, 0);
		uint64_t off = (key * 8192) % (3 * CONTENT_PERIOD);
		const unsigned char *q = content_at(&p, 77, key, off);
		size_t i;

		aligned &= ((uintptr_t)s % CONTENT_ALIGN) == 0;
		aligned &= ((uintptr_t)q % CONTENT_ALIGN) == 0;
		inside &= s >= p.buf && s < p.buf + CONTENT_PERIOD;
		inside &= q >= p.buf && q < p.buf + CONTENT_PERIOD;
		starts += s != content_at(&p, 77, key + 1, 0);
		/* Read the whole chunk: ASan catches any overrun. */
		for (i = 0; i < max_chunk; i += 512)
			sum += q[i] + q[max_chunk - 1 - i];
		/* The file's bytes are one stream: offset 100 is byte 100 of offset 0. */
		stream &= content_at(&p, 77, key, 100)[0] == s[100];
		stream &= content_at(&p, 77, key, max_chunk - 1)[0] == s[max_chunk - 1];
		stream &= content_at(&p, 77, key, 333)[0] ==
			  content_at(&p, 77, key, 333 + CONTENT_PERIOD)[0];
	}
	CHECK(aligned);
	CHECK(inside);
	CHECK(stream);
	CHECK(starts > 1900);
	CHECK(sum > 0);
	/* Unaligned and huge offsets stay inside the pool. */
	CHECK(content_at(&p, 77, 5, 1) == content_at(&p, 77, 5, 0) + 1 ||
	      content_at(&p, 77, 5, 1) == p.buf);
	CHECK(content_at(&p, 77, 5, UINT64_MAX) < p.buf + CONTENT_PERIOD);
	CHECK(content_at(&p, 77, 5, UINT64_MAX) >= p.buf);
	/* Same key, same seed: same start; another seed moves it. */
	CHECK(content_at(&p, 77, 5, 0) == content_at(&p, 77, 5, 0));
	CHECK(content_at(&p, 77, 5, 0) != content_at(&p, 78, 5, 0) ||
	      content_at(&p, 77, 6, 0) != content_at(&p, 78, 6, 0));
	content_pool_free(&p);
}

TEST(content_big_and_tiny_chunks)
{
	struct content_pool p;
	const unsigned char *q;

	/* A chunk bigger than the period still reads contiguously. */
	CHECK(pool(&p, "random", 4, 3 * CONTENT_PERIOD + 100) == 0);
	CHECK(periodic(&p));
	q = content_at(&p, 1, 1, CONTENT_PERIOD - 4096);
	CHECK(q[3 * CONTENT_PERIOD + 99] == q[99]);
	content_pool_free(&p);

	CHECK(pool(&p, "random", 4, 0) == 0);
	CHECK(p.max_chunk == 0 && p.buf != NULL);
	content_pool_free(&p);
	content_pool_free(&p);

	CHECK(pool(&p, "random", 4, SIZE_MAX) == -1);
	CHECK(pool(&p, "random", 4, SIZE_MAX - CONTENT_PERIOD) == -1);
}

/* Sorting helper for the uniqueness check below. */
static int cmp_sector(const void *a, const void *b)
{
	return memcmp(a, b, CONTENT_STAMP);
}

/*
 * Deduplicating storage must not see a tree as a handful of repeated blocks:
 * every 512-byte sector of 2000 random 4 KiB files (16000 sectors, far more
 * than the pool's 256 start points) is distinct.
 */
TEST(content_fill_sectors_unique_across_files)
{
	struct content_spec c = { .kind = CONTENT_RANDOM };
	struct content_pool p;
	enum { NFILES = 2000, FILESZ = 4096 };
	unsigned char *all = malloc((size_t)NFILES * FILESZ);
	size_t nsec = (size_t)NFILES * FILESZ / CONTENT_STAMP, i, dups = 0;

	CHECK(all != NULL);
	CHECK(content_pool_init(&p, &c, 7, FILESZ) == 0);
	for (i = 0; i < NFILES; i++)
		content_fill(&p, &c, 7, i, 0, all + i * FILESZ, FILESZ);
	qsort(all, nsec, CONTENT_STAMP, cmp_sector);
	for (i = 1; i < nsec; i++)
		dups += !memcmp(all + (i - 1) * CONTENT_STAMP, all + i * CONTENT_STAMP, CONTENT_STAMP);
	CHECK(dups == 0);
	content_pool_free(&p);
	free(all);
}

/* The same file and offset always get the same bytes; a chunk split anywhere agrees. */
TEST(content_fill_deterministic_and_split_consistent)
{
	struct content_spec c = { .kind = CONTENT_COMPRESSIBLE, .pct = 50 };
	struct content_pool p;
	unsigned char whole[8192], a[8192], b[8192];
	size_t zeros = 0, i;

	CHECK(content_pool_init(&p, &c, 3, sizeof(whole)) == 0);
	content_fill(&p, &c, 3, 42, 4096, whole, sizeof(whole));
	content_fill(&p, &c, 3, 42, 4096, a, sizeof(a));
	CHECK(!memcmp(whole, a, sizeof(a)));
	content_fill(&p, &c, 3, 42, 4096, a, 1000);
	content_fill(&p, &c, 3, 42, 4096 + 1000, b, sizeof(b) - 1000);
	CHECK(!memcmp(whole, a, 1000));
	CHECK(!memcmp(whole + 1000, b, sizeof(b) - 1000));
	content_fill(&p, &c, 3, 43, 4096, b, sizeof(b));
	CHECK(memcmp(whole, b, sizeof(b)) != 0);
	/* the stamps leave the zero half of each block alone */
	for (i = 0; i < sizeof(whole); i++)
		zeros += whole[i] == 0;
	CHECK(zeros >= sizeof(whole) / 2 - 16);
	content_pool_free(&p);
}

/*
 * Regression (tests/engines/test_reliability.py, a write resumed after a short one):
 * a chunk starting inside a unit's 8-byte stamp (offsets 1..7 past a 512- or
 * 4096-byte boundary) left that stamp's remaining bytes unstamped, so a file's
 * bytes depended on where its chunks started. Split at every offset of the
 * first 1100 bytes of a 9000-byte stretch: the two halves equal the whole.
 */
TEST(content_fill_split_inside_a_stamp)
{
	static const struct content_spec specs[] = {
		{ .kind = CONTENT_RANDOM }, { .kind = CONTENT_COMPRESSIBLE, .pct = 30 },
	};
	unsigned char whole[9000], a[9000], b[9000];
	struct content_pool p;
	size_t k, cut, bad = 0;

	for (k = 0; k < 2; k++) {
		CHECK(content_pool_init(&p, &specs[k], 5, sizeof(whole)) == 0);
		content_fill(&p, &specs[k], 5, 77, 4096 - 3, whole, sizeof(whole));
		for (cut = 1; cut < 1100; cut++) {
			content_fill(&p, &specs[k], 5, 77, 4096 - 3, a, cut);
			content_fill(&p, &specs[k], 5, 77, 4096 - 3 + cut, b, sizeof(b) - cut);
			bad += memcmp(whole, a, cut) != 0;
			bad += memcmp(whole + cut, b, sizeof(b) - cut) != 0;
		}
		content_pool_free(&p);
	}
	CHECK(bad == 0);
}

TEST(content_fill_zero_stays_zero)
{
	struct content_spec c = { .kind = CONTENT_ZERO };
	struct content_pool p;
	unsigned char buf[5000];
	size_t i, nz = 0;

	CHECK(content_pool_init(&p, &c, 1, sizeof(buf)) == 0);
	memset(buf, 0xaa, sizeof(buf));
	content_fill(&p, &c, 1, 9, 123, buf, sizeof(buf));
	for (i = 0; i < sizeof(buf); i++)
		nz += buf[i] != 0;
	CHECK(nz == 0);
	content_pool_free(&p);
}
