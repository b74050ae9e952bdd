/*
 * A set of paths (strings), as dbreplay's manifest lists them: the paths
 * the engine made in its target and may remove. Open addressing with
 * linear probing in a power-of-two table at most half full, so that a
 * lookup, done for each path the replay creates or opens, is a hash and a
 * probe or two. fio-independent.
 */
#ifndef PACK_PATHSET_H
#define PACK_PATHSET_H

#include <stddef.h>
#include <stdint.h>

struct pathset {
	char **slot;   /* cap slots, NULL where empty; iterate over all of them */
	size_t n, cap; /* n paths held; cap: 0, or a power of two */
};

/* The hash of a path: 64-bit FNV-1a. */
uint64_t pathset_hash(const char *path);

/* Whether @path is in the set. */
int pathset_has(const struct pathset *s, const char *path);

/* Adds a copy of @path: 0 (also if it was there), or -ENOMEM. */
int pathset_add(struct pathset *s, const char *path);

/* Takes @path out of the set: 1, or 0 if it was not in it. */
int pathset_remove(struct pathset *s, const char *path);

/* Frees the paths and the table; the set is empty, usable again. */
void pathset_free(struct pathset *s);

#endif
