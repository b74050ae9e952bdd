/* Tests of the room a tree takes (treespace.h). */
#include <stdint.h>

#include "rng.h"
#include "sizedist.h"
#include "test.h"
#include "tree.h"
#include "treespace.h"

static char err[256];

static void shape_dist(struct tree_shape *t, struct size_dist *d, uint64_t nfiles,
		       uint32_t fanout, uint32_t depth, int maildir, const char *spec)
{
	CHECK(tree_shape_init(t, nfiles, fanout, depth, 0, maildir, err, sizeof(err)) == 0);
	CHECK(size_dist_parse(d, spec, "file_size_dist", err, sizeof(err)) == 0);
}

TEST(treespace_fixed_sizes_round_to_blocks)
{
	struct tree_shape t;
	struct size_dist d;
	struct tree_space s;

	/* 1000 files of 100 bytes take 1000 blocks; of 4097, two blocks each */
	shape_dist(&t, &d, 1000, 4, 2, 0, "fixed:100");
	tree_space(&t, &d, 1, 1, 4096, TREE_SPACE_EXACT_MAX, UINT64_MAX, &s);
	CHECK(s.data_bytes == 1000ULL * 4096 && s.data_error == 0);
	CHECK(s.files == 1000 && s.dirs == 4 + 16);
	/* root and 4 inner directories of 4 entries, 16 leaves of ~63 files */
	CHECK(s.dir_bytes == (1 + 4) * 4096ULL + 16 * 4096ULL);
	size_dist_free(&d);
	shape_dist(&t, &d, 1000, 4, 2, 0, "fixed:4097");
	tree_space(&t, &d, 1, 1, 4096, TREE_SPACE_EXACT_MAX, UINT64_MAX, &s);
	CHECK(s.data_bytes == 1000ULL * 8192);
	/* empty files take no block */
	size_dist_free(&d);
	shape_dist(&t, &d, 1000, 4, 2, 0, "fixed:0");
	tree_space(&t, &d, 1, 1, 4096, TREE_SPACE_EXACT_MAX, UINT64_MAX, &s);
	CHECK(s.data_bytes == 0);
	size_dist_free(&d);
}

TEST(treespace_exact_is_the_sum_of_the_layout)
{
	struct tree_shape t;
	struct size_dist d;
	struct tree_space s;
	uint64_t i, sum = 0;

	shape_dist(&t, &d, 5000, 32, 1, 1, "lognormal:8k:1.2");
	for (i = 0; i < 5000; i++)
		sum += (size_dist_sample(&d, hash_item(42, 1, i)) + 511) / 512 * 512;
	tree_space(&t, &d, 42, 1, 512, TREE_SPACE_EXACT_MAX, UINT64_MAX, &s);
	CHECK(s.data_bytes == sum && s.data_error == 0);
	CHECK(s.dirs == 32 + 3 * 32);	/* maildir: new, cur, tmp in each leaf */
	/* large leaves need more than one directory block: 5000/32 names of 11 bytes */
	CHECK(s.dir_bytes > (1 + 32 * 4) * 512ULL);
	size_dist_free(&d);
}

TEST(treespace_sampled_estimate_holds_the_exact_sum)
{
	struct tree_shape t;
	struct size_dist d;
	struct tree_space exact, est;
	const char *specs[] = { "lognormal:12k:1.1", "uniform:1:100000", "fixed:5000" };
	unsigned k;

	for (k = 0; k < 3; k++) {
		shape_dist(&t, &d, 300000, 16, 2, 0, specs[k]);
		tree_space(&t, &d, 7, 1, 4096, TREE_SPACE_EXACT_MAX, UINT64_MAX, &exact);
		tree_space(&t, &d, 7, 1, 4096, 20000, UINT64_MAX, &est);
		CHECK(exact.data_error == 0);
		CHECK(est.data_bytes + est.data_error >= exact.data_bytes);
		CHECK(est.data_bytes <= exact.data_bytes + est.data_error);
		/* and the bound is tight enough to mean something: within 5% */
		CHECK(est.data_error < exact.data_bytes / 20);
		CHECK(est.dir_bytes == exact.dir_bytes && est.dirs == exact.dirs);
		if (k == 2)	/* every size the same: no error at all */
			CHECK(est.data_error == 0 && est.data_bytes == exact.data_bytes);
		size_dist_free(&d);
	}
}

TEST(treespace_a_partial_layout_needs_its_files_and_their_directories)
{
	struct tree_shape t;
	struct size_dist d;
	struct tree_space s;

	/* 400M files, depth 4: a layout of 3 files makes one leaf and its path */
	shape_dist(&t, &d, 400000000ULL, 64, 4, 1, "fixed:10k");
	tree_space(&t, &d, 1, 1, 4096, TREE_SPACE_EXACT_MAX, 3, &s);
	CHECK(s.files == 3 && s.data_bytes == 3 * 12288ULL && s.data_error == 0);
	CHECK(s.dirs == 4 + 3);
	tree_space(&t, &d, 1, 1, 4096, TREE_SPACE_EXACT_MAX, 0, &s);
	CHECK(s.files == 0 && s.data_bytes == 0);
	size_dist_free(&d);
}

TEST(treespace_files_per_dir_counts_only_the_leaves_that_get_files)
{
	struct tree_shape t;
	struct size_dist d;
	struct tree_space s;

	/*
	 * jobs/smallfile-mail.fio's shape at 10M files: 10,000 maildirs of
	 * 1000, depth 3 (64^2 < 10,000 <= 64^3), so 10,000 of the shape's
	 * 262,144 leaves; above them ceil(10000/64) = 157 and 3 directories
	 */
	CHECK(tree_shape_init(&t, 10000000, 64, 0, 1000, 1, err, sizeof(err)) == 0);
	CHECK(t.depth == 3 && t.nleaves == 262144);
	CHECK(size_dist_parse(&d, "fixed:0", "file_size_dist", err, sizeof(err)) == 0);
	tree_space(&t, &d, 1, 1, 4096, TREE_SPACE_EXACT_MAX, UINT64_MAX, &s);
	CHECK(s.dirs == 10000 + 157 + 3 + 3 * 10000);
	/* the root, 3 and 157 inner directories of 64 two-digit names: a block
	 * each; a maildir: new/cur/tmp, its empty cur and tmp, and new of 1000
	 * names of 11 bytes (24 + 1000 * 20 bytes: 5 blocks) */
	CHECK(s.dir_bytes == (1 + 3 + 157) * 4096ULL + 10000ULL * (3 + 5) * 4096);
	/* a layout of 1500 of them: two leaves, one directory at each level */
	tree_space(&t, &d, 1, 1, 4096, TREE_SPACE_EXACT_MAX, 1500, &s);
	CHECK(s.dirs == 2 + 1 + 1 + 3 * 2);
	size_dist_free(&d);
}

/*
 * A tree of more than 2^64 bytes saturates instead of wrapping: 2^20 files
 * of 16 TiB summed to exactly 2^64, which wrapped to 0 and "fitted" any
 * file system; so did the sampled estimate and the directories of a flat
 * tree of 2^62 files.
 */
TEST(treespace_saturates_past_2_64_bytes)
{
	struct tree_shape t;
	struct size_dist d;
	struct tree_space s;

	shape_dist(&t, &d, 1 << 20, 16, 2, 0, "fixed:16t");
	tree_space(&t, &d, 1, 1, 4096, TREE_SPACE_EXACT_MAX, UINT64_MAX, &s);
	CHECK(s.data_bytes == UINT64_MAX && s.data_error == 0);
	tree_space(&t, &d, 1, 1, 4096, 1000, UINT64_MAX, &s);
	CHECK(s.data_bytes == UINT64_MAX);
	size_dist_free(&d);
	/* a size within a block of 2^64 rounds up to no block count at all */
	shape_dist(&t, &d, 1, 1, 0, 0, "fixed:18446744073709551615");
	tree_space(&t, &d, 1, 1, 4096, TREE_SPACE_EXACT_MAX, UINT64_MAX, &s);
	CHECK(s.data_bytes == UINT64_MAX);
	size_dist_free(&d);
	/* one directory of 2^62 names */
	shape_dist(&t, &d, 1ULL << 62, 1, 0, 0, "fixed:0");
	tree_space(&t, &d, 1, 1, 4096, 1000, UINT64_MAX, &s);
	CHECK(s.data_bytes == 0 && s.dir_bytes == UINT64_MAX);
	size_dist_free(&d);
}
