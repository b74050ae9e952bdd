/*
 * What goes into files the engines write: random bytes, zeros, or data that
 * compresses to a given percentage. A pool of bytes is generated once per job;
 * file i takes its bytes from a start point that depends on (seed, i), so
 * files differ from each other without per-write generation cost.
 */
#ifndef PACK_CONTENT_H
#define PACK_CONTENT_H

#include <stddef.h>
#include <stdint.h>

enum content_kind {
	CONTENT_RANDOM,
	CONTENT_ZERO,
	CONTENT_COMPRESSIBLE,	/* pct % of each 4 KiB block is zeros, the rest random */
};

struct content_spec {
	enum content_kind kind;
	unsigned pct;		/* CONTENT_COMPRESSIBLE: 1..99 */
};

/*
 * "random", "zero" (or "zeros"), "compressible:50" (1..99).
 * Errors: -1 and "file_content: ..." style message using @optname.
 */
int content_parse(struct content_spec *c, const char *spec, const char *optname,
		  char *err, size_t errlen);

/* Canonical text: "random", "zero", "compressible:50". */
int content_describe(const struct content_spec *c, char *buf, size_t len);

#define CONTENT_PERIOD	(1UL << 20)	/* pool repeats every 1 MiB */
#define CONTENT_ALIGN	4096UL

struct content_pool {
	unsigned char *buf;	/* CONTENT_PERIOD + max_chunk bytes, CONTENT_ALIGN aligned */
	size_t max_chunk;
};

/*
 * Allocates and fills a pool from which any chunk of up to @max_chunk bytes
 * can be taken at any CONTENT_ALIGN-aligned period offset. Returns 0, or -1
 * on allocation failure.
 */
int content_pool_init(struct content_pool *p, const struct content_spec *c,
		      uint64_t seed, size_t max_chunk);

/*
 * Pointer to the bytes of file @key at file offset @off (any offset), valid
 * for @len <= max_chunk bytes. The start point is CONTENT_ALIGN aligned when
 * @off is, so O_DIRECT writes of aligned chunks get aligned buffers.
 */
const unsigned char *content_at(const struct content_pool *p, uint64_t seed,
				uint64_t key, uint64_t off);

/*
 * Copies @len bytes of file @key at file offset @off into @buf and makes them
 * unique to this file and offset: the pool alone repeats every
 * CONTENT_PERIOD bytes and has only CONTENT_PERIOD / CONTENT_ALIGN start
 * points, so storage that deduplicates would see a whole tree as 1 MiB of
 * data. Every CONTENT_STAMP-byte unit of random content, and the first
 * CONTENT_STAMP bytes of every 4 KiB block of compressible content, begins
 * with 8 bytes of hash(seed, key, file offset). Zero content stays zeros.
 * @len <= max_chunk.
 */
#define CONTENT_STAMP	512UL
void content_fill(const struct content_pool *p, const struct content_spec *c,
		  uint64_t seed, uint64_t key, uint64_t off, void *buf, size_t len);

void content_pool_free(struct content_pool *p);

#endif
