/*
 * A checked trace's records kept in memory, compactly, for the replay to
 * read back instead of parsing the text a second time (dbreplay's check
 * pass reads every record before anything is written; the replay then
 * needs the same records again, once a loop).
 *
 * A record is kept in about 8-14 bytes (its fields as variable-length
 * numbers: the line and time as differences from the record before,
 * offsets and lengths in pages when they are whole pages), in blocks of
 * 1 MiB, up to a cap the caller sets: a set that would pass it refuses the
 * record, and the caller reads the text again instead. Memory is then at
 * most the cap plus one block, however long the trace.
 */
#ifndef PACK_DBRECS_H
#define PACK_DBRECS_H

#include <stddef.h>
#include <stdint.h>

#include "dbtrace.h"

struct dbrecs;

/* An empty set for a trace of @page_size, holding at most @cap bytes; NULL if out of memory. */
struct dbrecs *dbrecs_new(uint32_t page_size, size_t cap);
/*
 * Keeps @r (a record the parser gave: fields within the format's limits,
 * lines increasing). 0, or -1 if it would pass the cap or memory ran out:
 * the set is then incomplete, for dbrecs_free() only.
 */
int dbrecs_add(struct dbrecs *s, const struct dbtrace_rec *r);
/* The next record in the order they were added: 1, or 0 after the last. */
int dbrecs_next(struct dbrecs *s, struct dbtrace_rec *r);
/* dbrecs_next() starts again from the first record. */
void dbrecs_rewind(struct dbrecs *s);
uint64_t dbrecs_count(const struct dbrecs *s);
/* Bytes of memory the set holds (its blocks). */
size_t dbrecs_bytes(const struct dbrecs *s);
void dbrecs_free(struct dbrecs *s);

#endif
