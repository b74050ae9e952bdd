/*
 * The depth each stream had in a capture, from its records' completion
 * times (dbtrace version 2's "+LATENCY"): the replay gives each record the
 * in-flight count its stream had when the database issued it.
 *
 * A record's captured depth is 1 + the number of earlier records of its
 * stream that were issued no later than it and completed after its issue
 * (TIME + LATENCY > its TIME): the requests the thread had queued when it
 * issued this one. A synchronous thread has depth 1 throughout (its next
 * call starts after the previous one returned; times and latencies are both
 * truncated to the time unit, so the computed completion is never after the
 * next issue). Records without a latency have depth 0 ("not known") and are
 * not counted as in flight for later records.
 *
 * Records must be fed in trace order. Memory: per stream, at most
 * DBDEPTH_MAX completion times (a min-heap, grown as needed); depths beyond
 * DBDEPTH_MAX count as DBDEPTH_MAX (exactly: the heap keeps the latest
 * DBDEPTH_MAX completions, and the count is min(true depth, DBDEPTH_MAX)).
 */
#ifndef PACK_DBDEPTH_H
#define PACK_DBDEPTH_H

#include <stdint.h>
#include "dbtrace.h"

#define DBDEPTH_MAX	1024

struct dbdepth;

struct dbdepth *dbdepth_new(void);	/* NULL if out of memory */
void dbdepth_free(struct dbdepth *d);
/* Forgets every stream's records (a new pass over the trace). */
void dbdepth_reset(struct dbdepth *d);

/*
 * The captured depth of @rec (1 .. DBDEPTH_MAX), or 0 if it has no latency
 * (or the trace no times). -1 if out of memory.
 */
int dbdepth_next(struct dbdepth *d, const struct dbtrace_rec *rec);

/* The largest depth dbdepth_next() returned for @stream (0: none known) since the last reset. */
unsigned dbdepth_max(const struct dbdepth *d, uint32_t stream);

/*
 * The most records of all streams in flight at once (1 .. DBDEPTH_MAX, 0:
 * no latency known) since the last reset: how deep the device's queue was
 * in the capture, the replay's iodepth unless the user chooses one.
 */
unsigned dbdepth_total_max(const struct dbdepth *d);

#endif
