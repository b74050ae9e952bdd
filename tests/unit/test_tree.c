/* Tests of tree shape arithmetic (tree.h). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tree.h"

static char err[256];

static int shape(struct tree_shape *t, uint64_t nfiles, uint32_t fanout, uint32_t depth,
		 uint64_t fpd, int maildir)
{
	err[0] = '\0';
	return tree_shape_init(t, nfiles, fanout, depth, fpd, maildir, err, sizeof(err));
}

static const char *fpath(const struct tree_shape *t, uint64_t i)
{
	static char buf[PATH_MAX];

	if (tree_file_path(t, i, buf, sizeof(buf)) < 0)
		return "(error)";
	return buf;
}

static const char *lpath(const struct tree_shape *t, uint64_t leaf)
{
	static char buf[PATH_MAX];

	if (tree_leaf_path(t, leaf, buf, sizeof(buf)) < 0)
		return "(error)";
	return buf;
}

TEST(tree_header_example)
{
	struct tree_shape t;
	char buf[64];

	/* 1e6 files over 256 leaves: ceil(1e6/256) = 3907 per leaf, 12345/3907 = 3. */
	CHECK(shape(&t, 1000000, 16, 2, 0, 0) == 0);
	CHECK(t.nleaves == 256);
	CHECK(t.files_per_leaf == 3907);
	CHECK(t.digit_width == 1);
	CHECK(t.name_width == 10);
	CHECK(tree_leaf_of(&t, 12345) == 3);
	CHECK_STREQ(lpath(&t, 3), "0/3");
	CHECK_STREQ(fpath(&t, 12345), "0/3/f0000012345");
	CHECK(tree_file_path(&t, 12345, buf, sizeof(buf)) == 15);
	CHECK(tree_file_name(&t, 12345, buf, sizeof(buf)) == 11);
	CHECK_STREQ(buf, "f0000012345");
	CHECK(tree_file_dir(&t, 12345, buf, sizeof(buf)) == 3);
	CHECK_STREQ(buf, "0/3");
	/* The last file lands in the last leaf: 999999/3907 = 255 = "f/f". */
	CHECK(tree_leaf_of(&t, 999999) == 255);
	CHECK_STREQ(fpath(&t, 999999), "f/f/f0000999999");
	CHECK(tree_tmp_path(&t, 1, 0, buf, sizeof(buf)) == -1);
	CHECK(tree_ndirs(&t) == 16 + 256);
}

TEST(tree_maildir_paths)
{
	struct tree_shape t;
	char buf[64];

	CHECK(shape(&t, 1000000, 16, 2, 0, 1) == 0);
	CHECK_STREQ(fpath(&t, 12345), "0/3/new/f0000012345");
	CHECK(tree_file_dir(&t, 12345, buf, sizeof(buf)) == 7);
	CHECK_STREQ(buf, "0/3/new");
	CHECK(tree_tmp_path(&t, 12345, 7, buf, sizeof(buf)) > 0);
	CHECK_STREQ(buf, "0/3/tmp/f0000012345.w7");
	CHECK(tree_tmp_path(&t, 12345, UINT_MAX, buf, sizeof(buf)) > 0);
	CHECK_STREQ(buf, "0/3/tmp/f0000012345.w4294967295");
	CHECK(tree_ndirs(&t) == 16 + 256 + 3 * 256);
}

TEST(tree_depth0)
{
	struct tree_shape t;
	char buf[64];

	CHECK(shape(&t, 10, 16, 0, 0, 0) == 0);
	CHECK(t.nleaves == 1 && t.files_per_leaf == 10);
	CHECK(tree_leaf_path(&t, 0, buf, sizeof(buf)) == 0 && buf[0] == '\0');
	CHECK(tree_file_dir(&t, 5, buf, sizeof(buf)) == 0 && buf[0] == '\0');
	CHECK_STREQ(fpath(&t, 5), "f0000000005");
	CHECK(tree_ndirs(&t) == 0);

	CHECK(shape(&t, 10, 16, 0, 0, 1) == 0);
	CHECK_STREQ(fpath(&t, 5), "new/f0000000005");
	CHECK(tree_tmp_path(&t, 5, 0, buf, sizeof(buf)) > 0);
	CHECK_STREQ(buf, "tmp/f0000000005.w0");
	CHECK(tree_ndirs(&t) == 3);
}

TEST(tree_wide_digits)
{
	struct tree_shape t;

	/* Fanout 256: digits 00..ff; leaf 258 = 1*256 + 2. */
	CHECK(shape(&t, 65536, 256, 2, 0, 0) == 0);
	CHECK(t.digit_width == 2 && t.files_per_leaf == 1);
	CHECK_STREQ(lpath(&t, 258), "01/02");
	CHECK_STREQ(lpath(&t, 65535), "ff/ff");
	/* Fanout 17: 16 = 0x10 needs two digits. */
	CHECK(shape(&t, 100, 17, 1, 0, 0) == 0);
	CHECK(t.digit_width == 2);
	CHECK_STREQ(lpath(&t, 16), "10");
	/* Fanout 1000: 999 = 0x3e7; leaf 123456789 = 123,456,789 = 7b,1c8,315. */
	CHECK(shape(&t, 2000000000, 1000, 3, 0, 0) == 0);
	CHECK(t.digit_width == 3 && t.files_per_leaf == 2);
	CHECK(tree_leaf_of(&t, 246913578) == 123456789);
	CHECK_STREQ(fpath(&t, 246913578), "07b/1c8/315/f0246913578");
	/* Fanout 2: digit width 1, binary digits. Leaf 5 = 101. */
	CHECK(shape(&t, 8, 2, 3, 0, 0) == 0);
	CHECK(t.digit_width == 1);
	CHECK_STREQ(lpath(&t, 5), "1/0/1");
	/* Fanout 1: one chain of directories named 0. */
	CHECK(shape(&t, 8, 1, 3, 0, 0) == 0);
	CHECK(t.nleaves == 1 && t.digit_width == 1);
	CHECK_STREQ(fpath(&t, 7), "0/0/0/f0000000007");
	CHECK(tree_ndirs(&t) == 3);
}

TEST(tree_name_width)
{
	struct tree_shape t;

	CHECK(shape(&t, 10000000000ULL, 16, 2, 0, 0) == 0);
	CHECK(t.name_width == 10);
	CHECK(shape(&t, 10000000001ULL, 16, 2, 0, 0) == 0);
	CHECK(t.name_width == 11);
	CHECK_STREQ(fpath(&t, 12), "0/0/f00000000012");
	CHECK(shape(&t, UINT64_MAX, 16, 12, 0, 0) == 0);
	CHECK(t.name_width == 20);
	CHECK_STREQ(fpath(&t, UINT64_MAX - 1),
		    "f/f/f/f/f/f/f/f/f/f/f/f/f18446744073709551614");
}

TEST(tree_files_per_dir)
{
	struct tree_shape t;

	/* 1000 leaves needed: 16^2 = 256 is too few, 16^3 = 4096 is enough. */
	CHECK(shape(&t, 1000000, 16, 7, 1000, 0) == 0);
	CHECK(t.depth == 3 && t.nleaves == 4096 && t.files_per_leaf == 1000);
	CHECK(tree_leaf_of(&t, 12345) == 12);
	CHECK_STREQ(fpath(&t, 12345), "0/0/c/f0000012345");
	CHECK(tree_ndirs(&t) == 16 + 256 + 4096);
	/* Exactly fitting: 256 leaves of 1000. */
	CHECK(shape(&t, 256000, 16, 0, 1000, 0) == 0);
	CHECK(t.depth == 2);
	CHECK(shape(&t, 256001, 16, 0, 1000, 0) == 0);
	CHECK(t.depth == 3);
	/* Everything fits in the root. */
	CHECK(shape(&t, 1000, 16, 5, 1000, 0) == 0);
	CHECK(t.depth == 0 && t.nleaves == 1);
	CHECK(shape(&t, 1000, 1, 5, 5000, 0) == 0);
	CHECK(t.depth == 0);
	/* Fanout 1 cannot spread files out. */
	CHECK(shape(&t, 1001, 1, 0, 1000, 0) == -1);
	CHECK_STREQ(err, "tree_fanout must be at least 2 when tree_files_per_dir < tree_files");
	/* Huge: 2^64-1 files, 1 per dir, needs 2^64 leaves. */
	CHECK(shape(&t, UINT64_MAX, 2, 0, 1, 0) == -1);
	CHECK(strstr(err, "tree_files_per_dir") != NULL);
	CHECK(shape(&t, 1ULL << 48, 2, 0, 1, 0) == 0);
	CHECK(t.depth == 48);
}

TEST(tree_errors)
{
	struct tree_shape t;

	CHECK(shape(&t, 0, 16, 2, 0, 0) == -1);
	CHECK_STREQ(err, "tree_files must be at least 1");
	CHECK(shape(&t, 10, 0, 2, 0, 0) == -1);
	CHECK_STREQ(err, "tree_fanout must be at least 1");
	CHECK(shape(&t, 10, 2, 48, 0, 0) == 0);
	CHECK(t.nleaves == 1ULL << 48);
	CHECK(shape(&t, 10, 2, 49, 0, 0) == -1);
	CHECK(strstr(err, "tree_depth 49") != NULL);
	CHECK(!strchr(err, '\n'));
	CHECK(shape(&t, 10, 65536, 4, 0, 0) == -1);
	CHECK(strstr(err, "tree_depth") != NULL);
	CHECK(shape(&t, 10, UINT32_MAX, 3, 0, 0) == -1);
	CHECK(shape(&t, 10, UINT32_MAX, UINT32_MAX, 0, 0) == -1);
	/* Fanout 1 keeps one leaf but the path still grows with depth. */
	CHECK(shape(&t, 10, 1, 100, 0, 0) == 0);
	CHECK(shape(&t, 10, 1, 5000, 0, 1) == -1);
	CHECK(strstr(err, "PATH_MAX") != NULL);
	CHECK(shape(&t, 10, 1, UINT32_MAX, 0, 1) == -1);
	/* err may be absent. */
	CHECK(tree_shape_init(&t, 0, 1, 1, 0, 0, NULL, 0) == -1);
}

TEST(tree_buffer_too_small)
{
	struct tree_shape t;
	char buf[32];

	CHECK(shape(&t, 1000000, 16, 2, 0, 1) == 0);
	/* "0/3/new/f0000012345" is 19 bytes: needs 20 with the NUL. */
	CHECK(tree_file_path(&t, 12345, buf, 19) == -1);
	CHECK(tree_file_path(&t, 12345, buf, 20) == 19);
	CHECK(tree_leaf_path(&t, 3, buf, 3) == -1);
	CHECK(tree_leaf_path(&t, 3, buf, 4) == 3);
	CHECK(tree_file_dir(&t, 3, buf, 7) == -1);
	CHECK(tree_file_name(&t, 3, buf, 11) == -1);
	CHECK(tree_file_name(&t, 3, buf, 12) == 11);
	/* "0/3/tmp/f0000012345.w12" is 23 bytes. */
	CHECK(tree_tmp_path(&t, 12345, 12, buf, 23) == -1);
	CHECK(tree_tmp_path(&t, 12345, 12, buf, 24) == 23);
	CHECK(tree_leaf_path(&t, 3, NULL, 0) == -1);
}

/*
 * What a path function writes into buffers of every length up to one byte
 * more than @want needs: @want whole, or -1 with nothing written past the
 * buffer's end. 1 if so.
 */
static int fits_or_fails(const struct tree_shape *t, uint64_t i, unsigned writer,
			 int (*fn)(const struct tree_shape *, uint64_t, unsigned, char *, size_t),
			 const char *want)
{
	int n = (int)strlen(want), len, ok = 1;
	char got[128];

	for (len = 0; len <= n + 1; len++) {
		memset(got, 'x', sizeof(got));
		ok &= fn(t, i, writer, got, (size_t)len) == (len > n ? n : -1);
		ok &= got[len] == 'x';
		ok &= len <= n || !strcmp(got, want);
	}
	return ok;
}

static int file_path(const struct tree_shape *t, uint64_t i, unsigned w, char *buf, size_t len)
{
	return tree_file_path(t, i, buf, len);
}

static int file_name(const struct tree_shape *t, uint64_t i, unsigned w, char *buf, size_t len)
{
	return tree_file_name(t, i, buf, len);
}

/* fits_or_fails() of file @i's path, name and staging paths against printf's. */
static int paths_are_printfs(const struct tree_shape *t, uint64_t i)
{
	static const unsigned writers[] = { 0, 7, 10, UINT_MAX };
	int width = (int)t->name_width, ok = 1;
	char dir[64], want[128];
	size_t w;

	if (tree_file_dir(t, i, dir, sizeof(dir)) < 0)
		return 0;
	snprintf(want, sizeof(want), "%s%sf%0*llu", dir, *dir ? "/" : "", width,
		 (unsigned long long)i);
	ok &= fits_or_fails(t, i, 0, file_path, want);
	snprintf(want, sizeof(want), "f%0*llu", width, (unsigned long long)i);
	ok &= fits_or_fails(t, i, 0, file_name, want);
	for (w = 0; t->maildir && w < sizeof(writers) / sizeof(writers[0]); w++) {
		/* dir is "<leaf>/new" */
		snprintf(want, sizeof(want), "%.*stmp/f%0*llu.w%u", (int)strlen(dir) - 3, dir,
			 width, (unsigned long long)i, writers[w]);
		ok &= fits_or_fails(t, i, writers[w], tree_tmp_path, want);
	}
	return ok;
}

/*
 * The hand-built paths (no snprintf) are printf's "%s/f%0*llu" and
 * "%s/f%0*llu.w%u" for every width and number, and a buffer too short
 * gets -1 and nothing written past its end.
 */
TEST(tree_paths_are_printfs)
{
	static const uint64_t nfiles[] = { 1, 10, 12345, 10000000001ULL, UINT64_MAX };
	static const uint64_t ids[] = {
		0, 1, 9, 10, 99, 12345, 9999999999ULL, 10000000000ULL, UINT64_MAX - 1,
	};
	struct tree_shape t;
	size_t a, b;
	int maildir;

	for (maildir = 0; maildir < 2; maildir++) {
		for (a = 0; a < sizeof(nfiles) / sizeof(nfiles[0]); a++) {
			CHECK(shape(&t, nfiles[a], 16, 2, 0, maildir) == 0);
			for (b = 0; b < sizeof(ids) / sizeof(ids[0]); b++)
				CHECK(paths_are_printfs(&t, ids[b] % nfiles[a]));
		}
	}
}

/* Parses a leaf path back into a leaf number. */
static uint64_t parse_leaf(const struct tree_shape *t, const char *p)
{
	uint64_t leaf = 0;
	uint32_t d;

	for (d = 0; d < t->depth; d++) {
		char digits[16];

		memcpy(digits, p, t->digit_width);
		digits[t->digit_width] = '\0';
		leaf = leaf * t->fanout + strtoull(digits, NULL, 16);
		p += t->digit_width + (d + 1 < t->depth);
	}
	return *p ? UINT64_MAX : leaf;
}

/* Every file maps to a leaf < nleaves; leaves fill in order; paths round-trip. */
static int check_cover(uint64_t nfiles, uint32_t fanout, uint32_t depth, uint64_t fpd)
{
	struct tree_shape t;
	uint64_t i, prev = 0, count = 0;

	if (shape(&t, nfiles, fanout, depth, fpd, 0))
		return 0;
	for (i = 0; i < nfiles; i++) {
		uint64_t leaf = tree_leaf_of(&t, i);

		if (leaf >= t.nleaves)
			return 0;
		if (i == 0 ? leaf != 0 : leaf != prev && leaf != prev + 1)
			return 0;
		count = leaf == prev ? count + 1 : 1;
		if (count > t.files_per_leaf)
			return 0;
		if (parse_leaf(&t, lpath(&t, leaf)) != leaf)
			return 0;
		prev = leaf;
	}
	/* Depth mode spreads over all leaves (up to the rounding of files_per_leaf). */
	if (!fpd && nfiles >= t.nleaves && (prev + 1) * t.files_per_leaf < nfiles)
		return 0;
	return 1;
}

TEST(tree_every_file_in_a_leaf)
{
	CHECK(check_cover(1, 16, 2, 0));
	CHECK(check_cover(255, 16, 2, 0));
	CHECK(check_cover(256, 16, 2, 0));
	CHECK(check_cover(257, 16, 2, 0));
	CHECK(check_cover(100000, 16, 2, 0));
	CHECK(check_cover(100003, 7, 3, 0));
	CHECK(check_cover(99991, 256, 1, 0));
	CHECK(check_cover(5000, 3, 9, 0));
	CHECK(check_cover(100000, 16, 0, 97));
	CHECK(check_cover(65536, 2, 0, 1));
	CHECK(check_cover(12345, 10, 0, 10));
	CHECK(check_cover(12345, 1, 4, 0));
}

TEST(tree_leaf_numbers_round_trip)
{
	struct tree_shape t;
	uint64_t leaf;

	CHECK(shape(&t, 1ULL << 40, 100, 6, 0, 0) == 0);
	for (leaf = 0; leaf < t.nleaves; leaf += 999999937)
		CHECK(parse_leaf(&t, lpath(&t, leaf)) == leaf);
	CHECK(parse_leaf(&t, lpath(&t, t.nleaves - 1)) == t.nleaves - 1);
	CHECK_STREQ(lpath(&t, t.nleaves - 1), "63/63/63/63/63/63");
}

/* What a job can address: tree_files x bs below 2^63 (past 2^64 it wrapped). */
TEST(tree_max_files_keeps_the_span_below_2_63)
{
	CHECK(tree_max_files(4096) == (1ULL << 51) - 1);
	CHECK(tree_max_files(1) == INT64_MAX);
	CHECK(tree_max_files(3) * 3 <= INT64_MAX && (tree_max_files(3) + 1) * 3 > INT64_MAX);
	CHECK(tree_max_files(0) == 0);
	/* the case of the report: 2^52 + 1 files of 4 KiB made a 4 KiB file */
	CHECK(((1ULL << 52) + 1) * 4096 == 4096);
	CHECK((1ULL << 52) + 1 > tree_max_files(4096));
}

/* numjobs clones split the tree exactly, however large it is. */
TEST(tree_share_splits_without_overflow)
{
	static const uint64_t sizes[] = { 1, 7, 1000, 1ULL << 40, (1ULL << 63) - 1, UINT64_MAX };
	static const uint32_t clones[] = { 1, 2, 3, 7, 64, 1000, UINT32_MAX };
	uint64_t base, count, next;
	size_t a, b;
	uint32_t k;

	for (a = 0; a < sizeof(sizes) / sizeof(sizes[0]); a++) {
		for (b = 0; b < sizeof(clones) / sizeof(clones[0]); b++) {
			uint64_t n = sizes[a];
			uint32_t j = clones[b];
			int ok = 1;

			/* every clone starts where the one before ended, the last ends at n */
			next = 0;
			for (k = 0; k < j && k < 70; k++) {
				tree_share(n, k, j, &base, &count);
				ok &= base == next;
				next = base + count;
			}
			tree_share(n, j - 1, j, &base, &count);
			ok &= base + count == n;
			/* each share is floor(n / j) or one more */
			ok &= count == n / j || count == n / j + 1;
			CHECK(ok);
		}
	}
	/* the old n * k / j: 2^62 files over 8 clones overflowed for k >= 4 */
	tree_share(1ULL << 62, 4, 8, &base, &count);
	CHECK(base == 1ULL << 61 && count == 1ULL << 59);
	tree_share(10, 0, 0, &base, &count);
	CHECK(base == 0 && count == 10);
}
