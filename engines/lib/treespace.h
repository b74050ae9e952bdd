/*
 * The room a laid-out small-file tree takes on a file system, so a layout
 * can be refused before it writes anything instead of failing at ENOSPC
 * hours in: file data in whole blocks (a 1-byte file takes one block), the
 * directories' blocks, and one inode per file and directory.
 *
 * File i's size is size_dist_sample(d, hash_item(seed, stream, i)), as the
 * smallfile engine lays it out. Up to @exact_max files every size is drawn
 * (a lognormal draw costs ~50 ns: 16M files take under a second); past
 * that, an evenly spread sample of @exact_max files gives the data bytes
 * with @error = four standard errors of the estimate. Directory blocks are
 * an estimate either way (ext4's 8-byte entry header plus the name rounded
 * to 4 bytes, every leaf taken as full; no hash-tree index blocks).
 */
#ifndef PACK_TREESPACE_H
#define PACK_TREESPACE_H

#include <stdint.h>
#include "sizedist.h"
#include "tree.h"

#define TREE_SPACE_EXACT_MAX (16ULL << 20)

struct tree_space {
	uint64_t data_bytes;	/* file data, rounded up to whole blocks */
	uint64_t data_error;	/* 0 when every size was drawn */
	uint64_t dir_bytes;	/* directory blocks (estimate) */
	uint64_t files, dirs;	/* inodes: files + dirs, the root not counted */
};

/*
 * @count: how many files the layout writes (files 0..count-1; nfiles for the
 * whole tree, fewer for a layout cut short by number_ios): their data, and
 * the directories on their paths.
 */
void tree_space(const struct tree_shape *t, const struct size_dist *d, uint64_t seed,
		uint64_t stream, uint64_t block, uint64_t exact_max, uint64_t count,
		struct tree_space *out);

#endif
