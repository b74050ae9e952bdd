/*
 * File operations of the small-file engine and a weighted mix of them.
 *
 * Spec: one operation name ("read"), or a comma-separated list of
 * name:weight pairs ("read:60,deliver:30,delete:10"); weights are
 * non-negative integers and need not add up to 100. "layout" may only stand
 * alone.
 */
#ifndef PACK_OPMIX_H
#define PACK_OPMIX_H

#include <stddef.h>
#include <stdint.h>

enum file_op {
	FOP_READ,	/* open, read to EOF in chunks, close */
	FOP_STAT,	/* stat */
	FOP_CREATE,	/* create a new file and write it whole */
	FOP_APPEND,	/* open for append, write, close */
	FOP_DELETE,	/* unlink */
	FOP_DELIVER,	/* maildir: write tmp/, sync, rename into new/ */
	FOP_LAYOUT,	/* make sure the file exists whole (resumable layout) */
	FOP_NR,
};

struct op_mix {
	unsigned weight[FOP_NR];
	uint64_t total;		/* sum of weights, > 0 */
	int nops;		/* operations with weight > 0 */
};

/* -1 with "file_op: unknown operation 'x' (read, stat, ...)"-style messages. */
int op_mix_parse(struct op_mix *m, const char *spec, const char *optname,
		 char *err, size_t errlen);

/* The operation for 32 uniform random bits @r (weighted). */
enum file_op op_mix_pick(const struct op_mix *m, uint32_t r);

/* The single operation if the mix has exactly one, else FOP_NR. */
enum file_op op_mix_single(const struct op_mix *m);

const char *file_op_name(enum file_op op);

/* Canonical text: "read:60,deliver:30,delete:10" in enum order, weights > 0. */
int op_mix_describe(const struct op_mix *m, char *buf, size_t len);

#endif
