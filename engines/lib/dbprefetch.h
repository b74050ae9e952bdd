/*
 * Reads a trace's records ahead on a thread of their own, into a bounded
 * ring of blocks, so that the replaying thread does not parse (or inflate)
 * while its clock runs. Memory stays flat: at most @nblocks blocks of
 * @block records whatever the trace's length.
 *
 * The reader thread is the only user of the dbtrace between
 * dbprefetch_start() and dbprefetch_stop(); the caller may meanwhile read
 * the header's fixed fields (ids, roles, paths, sizes) but not call
 * dbtrace_next() or anything else on it.
 */
#ifndef PACK_DBPREFETCH_H
#define PACK_DBPREFETCH_H

#include <stddef.h>
#include "dbtrace.h"

struct dbprefetch;

/*
 * Starts reading @t from where it stands. NULL with a one-line message in
 * @err if the thread or the ring cannot be had (the caller can then read
 * @t itself). @block and @nblocks of 0 mean 512 and 8.
 */
struct dbprefetch *dbprefetch_start(struct dbtrace *t, unsigned block, unsigned nblocks,
				    char *err, size_t errlen);

/*
 * The next record, as dbtrace_next() would give it: 1 and *@rec, 0 at the
 * end of the trace, -1 on a trace error (dbprefetch_error()). After 0 or -1
 * every further call returns the same.
 */
int dbprefetch_next(struct dbprefetch *p, struct dbtrace_rec *rec);

/* The reader's error ("" if none): dbtrace_error() as it was. */
const char *dbprefetch_error(const struct dbprefetch *p);

/*
 * Stops the reader, also mid-trace (it finishes the block it is filling:
 * at most @block records), waits for it and frees @p. NULL is fine.
 */
void dbprefetch_stop(struct dbprefetch *p);

#endif
