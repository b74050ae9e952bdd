/*
 * The shape of a small-file tree: which directory holds file i and what the
 * file is called. Pure arithmetic on (shape, i), no per-file state.
 *
 * Files are numbered 0..nfiles-1 and fill leaf directories in order
 * (files_per_leaf consecutive files share a leaf), the way a mail spool fills
 * one mailbox at a time, so a sequential layout creates one directory at a
 * time. Leaves sit at depth `depth` below the root, each directory having
 * `fanout` subdirectories; leaf number L is written in base `fanout`, one
 * digit per level, each digit as fixed-width lowercase hex.
 *
 *   depth 2, fanout 16:  file 12345 -> "0/3/f0000012345"  (leaf 3)
 *   maildir layout:      file 12345 -> "0/3/new/f0000012345"
 */
#ifndef PACK_TREE_H
#define PACK_TREE_H

#include <stddef.h>
#include <stdint.h>

struct tree_shape {
	uint64_t nfiles;
	uint32_t fanout;		/* subdirectories per directory, >= 1 */
	uint32_t depth;			/* directory levels under the root */
	uint64_t nleaves;		/* fanout^depth */
	uint64_t files_per_leaf;	/* consecutive files per leaf directory */
	int maildir;			/* files live in <leaf>/new, deliveries stage in <leaf>/tmp */
	unsigned digit_width;		/* hex digits per directory level name */
	unsigned name_width;		/* decimal digits in a file name, >= 10 */
};

/*
 * Fills @t. Give either @depth (files spread evenly over fanout^depth
 * leaves) or @files_per_dir != 0 (depth is then the smallest one whose
 * leaves hold nfiles at files_per_dir each; depth is ignored).
 * Errors (zero files, zero fanout, a depth whose leaf count overflows 2^48, a
 * path that would exceed PATH_MAX) return -1 with a one-line reason in @err
 * naming the option: "tree_files must be at least 1", ...
 * Option names used in messages: tree_files, tree_fanout, tree_depth,
 * files_per_dir.
 */
int tree_shape_init(struct tree_shape *t, uint64_t nfiles, uint32_t fanout,
		    uint32_t depth, uint64_t files_per_dir, int maildir,
		    char *err, size_t errlen);

/* Leaf directory index of file i (i < nfiles). */
uint64_t tree_leaf_of(const struct tree_shape *t, uint64_t i);

/*
 * Relative path of leaf directory @leaf, e.g. "0/3" (empty string for
 * depth 0). Returns the length written, or -1 if @len is too small.
 */
int tree_leaf_path(const struct tree_shape *t, uint64_t leaf, char *buf, size_t len);

/*
 * Relative path of the directory a file lives in: the leaf path, plus "/new"
 * in maildir layout (just "new" at depth 0). Returns length or -1.
 */
int tree_file_dir(const struct tree_shape *t, uint64_t i, char *buf, size_t len);

/* File name of file i, no directory: "f" + i zero-padded to name_width. */
int tree_file_name(const struct tree_shape *t, uint64_t i, char *buf, size_t len);

/* Relative path of file i: tree_file_dir + "/" + tree_file_name. */
int tree_file_path(const struct tree_shape *t, uint64_t i, char *buf, size_t len);

/*
 * Maildir staging path for a delivery of file i by writer @writer (a job
 * number): "<leaf>/tmp/f0000012345.w<writer>". Returns length or -1; only
 * valid in maildir layout.
 */
int tree_tmp_path(const struct tree_shape *t, uint64_t i, unsigned writer,
		  char *buf, size_t len);

/* Number of directories in the tree (all levels, plus maildir subdirs). */
uint64_t tree_ndirs(const struct tree_shape *t);

/*
 * The most files a job can address with slots of @chunk bytes (fio's bs):
 * the smallfile engine shows fio the tree as one file of files x chunk
 * bytes, kept below 2^63 (fio's offsets are 64-bit, and past 2^64 the size
 * wrapped: 2^52 + 1 files of 4 KiB made a 4 KiB file, and every random
 * operation chose file 0). 0 for a chunk of 0.
 */
uint64_t tree_max_files(uint64_t chunk);

/*
 * The files of clone @k (0-based, below @j) of @j sharing @n files:
 * [*base, *base + *count), floor(n * k / j) computed without the product
 * overflowing (it did for n past 2^64 / j). @j 0 counts as 1.
 */
void tree_share(uint64_t n, uint32_t k, uint32_t j, uint64_t *base, uint64_t *count);

#endif
