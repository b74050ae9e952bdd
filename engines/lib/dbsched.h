/*
 * The replay scheduler of the database page-replay engine: which trace
 * record may be issued now. fio-independent, so it is unit-tested alone.
 *
 * Records enter a window of bounded size in trace order (push) and leave it
 * when their I/O completes (done). pick() hands out the next record that may
 * be issued, following the rules a database's own threads obeyed:
 *
 *  - each stream issues its records in its own order; up to stream_depth of
 *    its reads, writes, trims and sync_file_ranges may be in flight at once
 *    (1: the stream is one thread doing synchronous calls);
 *  - captured depth: a record pushed with a depth D (> 0) replaces
 *    stream_depth for itself: it is issued only while fewer than D of its
 *    stream's records are in flight, so that with it at most D are, the
 *    in-flight count its stream had in the capture when the database issued
 *    it (dbdepth.h computes D from the trace's completion times). The stream
 *    reaches D whenever the replay issues faster than records complete (asap
 *    replay on a device no slower than the captured one) and never exceeds
 *    it; a synchronous thread's records all have D = 1;
 *  - fsync and fdatasync are barriers: they wait until the stream's earlier
 *    records have completed, and the stream's later records wait for them;
 *  - namespace operations (create, unlink, truncate) on a file wait for every
 *    earlier record on that file, from any stream, and every later record on
 *    the file waits for them; on a directory they do so for every record of
 *    every file (a mkdir must precede what is created in it);
 *  - a read of a range that another stream wrote earlier in the trace waits
 *    until that write has completed (the reader read what the writer wrote);
 *  - in timed modes a record is not issued before its due time.
 *
 * Among the records that may go, the oldest in trace order goes first.
 * Memory is fixed at creation: the window, and per-stream and per-file
 * state; every operation is O(log streams) apart from waking the waiters of
 * a file or of a directory operation.
 */
#ifndef PACK_DBSCHED_H
#define PACK_DBSCHED_H

#include <stdint.h>
#include "dbtrace.h"

struct dbsched_cfg {
	unsigned capacity;	/* records in the window (pushed and not done) */
	unsigned stream_depth;	/* a stream's data operations in flight at once */
};

/* How a record is ordered against others (from its operation and file role). */
enum dbsched_kind {
	DBSCHED_DATA,		/* read, write, trim, sync_file_range */
	DBSCHED_BARRIER,	/* fsync, fdatasync */
	DBSCHED_FILE_NS,	/* create, unlink, truncate of a file */
	DBSCHED_DIR_NS,		/* create, unlink of a directory */
};

enum dbsched_kind dbsched_kind_of(enum dbtrace_op op, enum dbtrace_role role);

struct dbsched_item {
	struct dbtrace_rec rec;
	enum dbtrace_role role;
	uint64_t seq;		/* position in the trace among pushed records, from 0 */
	uint64_t due_ns;	/* not issued before (0: as soon as possible) */
	unsigned depth;		/* captured depth (0: stream_depth applies) */
	/* free for the caller while the record is in the window: */
	uint64_t issue_ns;
	void *user;
	uint64_t done_bytes;
};

struct dbsched;

/* NULL if out of memory or @cfg->capacity or stream_depth is 0. */
struct dbsched *dbsched_new(const struct dbsched_cfg *cfg);
void dbsched_free(struct dbsched *s);

/* Records in the window (pushed, not done), and of those, issued ones. */
unsigned dbsched_count(const struct dbsched *s);
unsigned dbsched_inflight(const struct dbsched *s);
/* The most records one stream had in flight at once, since dbsched_new(). */
unsigned dbsched_stream_max(const struct dbsched *s);
int dbsched_full(const struct dbsched *s);

/*
 * Adds the next record of the trace (the window must not be full), of a file
 * of role @role, due @due_ns after the start (0 in untimed replay). @now_ns:
 * the replay clock. Returns the record's slot.
 */
int dbsched_push(struct dbsched *s, const struct dbtrace_rec *rec, enum dbtrace_role role,
		 uint64_t due_ns, uint64_t now_ns);
/* The same with the record's captured depth (0: the configured stream_depth). */
int dbsched_push_depth(struct dbsched *s, const struct dbtrace_rec *rec, enum dbtrace_role role,
		       uint64_t due_ns, uint64_t now_ns, unsigned depth);

/*
 * The slot of the next record to issue at @now_ns, which is from then on in
 * flight; or -1: nothing may go now. Then *@wake_ns is the earliest due time
 * of a record that waits only for its time (UINT64_MAX if none: wait for a
 * completion, or push more records).
 */
int dbsched_pick(struct dbsched *s, uint64_t now_ns, uint64_t *wake_ns);

struct dbsched_item *dbsched_item(struct dbsched *s, int slot);

/* The issued record in @slot has completed: it leaves the window. */
void dbsched_done(struct dbsched *s, int slot, uint64_t now_ns);

/* Forgets the sequence numbers (for a new loop over the trace); the window must be empty. */
void dbsched_restart(struct dbsched *s);

/*
 * Replay time arithmetic, in nanoseconds. A trace's times go up to 2^63 - 1
 * of its unit (ms: 2.9e8 years), which no 64-bit count of nanoseconds
 * holds: every conversion and sum saturates at DBSCHED_NS_MAX (584 years)
 * instead of wrapping to a small or zero figure. UINT64_MAX stays the
 * scheduler's "no due time" (dbsched_pick's @wake_ns).
 */
#define DBSCHED_NS_MAX (UINT64_MAX - 1)

/*
 * @units of a trace's time unit of @unit_ns nanoseconds, divided by @speed
 * (> 0; 1: as captured): a record's due time, a trace's duration. Exact
 * at speed 1, else to a double's precision.
 */
uint64_t dbsched_scaled_ns(uint64_t units, uint64_t unit_ns, double speed);

/* @a + @b, or DBSCHED_NS_MAX if the sum is larger. */
static inline uint64_t dbsched_add_ns(uint64_t a, uint64_t b)
{
	return a >= DBSCHED_NS_MAX - b || b >= DBSCHED_NS_MAX ? DBSCHED_NS_MAX : a + b;
}

#endif
