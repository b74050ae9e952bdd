/*
 * Stateless hashing for per-file properties. Everything about file i of a
 * tree (its size, where its content starts) is a function of (seed, i), so a
 * 400-million-file tree needs no per-file memory and every job that opens the
 * same tree sees the same files.
 */
#ifndef PACK_RNG_H
#define PACK_RNG_H

#include <stdint.h>

/* splitmix64 finaliser: a good 64-bit mix of x. */
static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Independent stream @stream of per-item randomness for item @i. */
static inline uint64_t hash_item(uint64_t seed, uint64_t stream, uint64_t i)
{
	return mix64(mix64(seed ^ (stream * 0xd1b54a32d192ed03ULL)) ^ i);
}

/* Uniform double in [0, 1) from 64 random bits. */
static inline double u64_to_unit(uint64_t x)
{
	return (double)(x >> 11) * 0x1.0p-53;
}

#endif
