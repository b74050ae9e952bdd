/*
 * The marker file at the root of a tree: "key=value" lines recording the
 * parameters the tree was laid out with. A job whose parameters differ is
 * refused with the name of the first differing key, rather than silently
 * reading files of the wrong size.
 */
#ifndef PACK_TREEMETA_H
#define PACK_TREEMETA_H

#include <stddef.h>

#define TREEMETA_MAGIC "# fio-pack smallfile tree v1"

/*
 * Compares two marker texts (the first line must be TREEMETA_MAGIC in both).
 * Returns 0 if every key has the same value in both, 1 if they differ, with
 * "KEY: tree has V1, job has V2" (or "tree lacks KEY" / "job lacks KEY") in
 * @why, and -1 if @tree_text is not a marker at all (bad magic or a line
 * without '=').
 */
int treemeta_compare(const char *tree_text, const char *job_text, char *why, size_t whylen);

/*
 * The inode number of the directory the tree was laid out in, recorded when
 * the marker is published: a marker with a second link (cp -al of the tree)
 * is that directory's only. Not a parameter: treemeta_compare ignores it on
 * both sides, so markers without it compare as before.
 */
#define TREEMETA_DIR_INODE "tree_dir_inode"

/*
 * The TREEMETA_DIR_INODE of marker @text: 1 with *@ino set, 0 if the marker
 * records none (made before it was recorded), -1 if it is not a decimal
 * number or is there twice.
 */
int treemeta_dir_inode(const char *text, unsigned long long *ino);

#endif
