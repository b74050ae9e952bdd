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

#endif
