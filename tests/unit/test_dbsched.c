/* Tests of the replay scheduler of the database page-replay engine (dbsched.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbsched.h"
#include "test.h"

/*
 * A small harness: records are named by their position in the trace (their
 * seq); files 10..19 are directories, every other file holds data.
 */
#define MAXREC	64

struct h {
	struct dbsched *s;
	int slot[MAXREC];
	unsigned n;
	uint64_t wake;
};

static enum dbtrace_role role_of(uint32_t file)
{
	return file >= 10 && file < 20 ? DBTRACE_ROLE_DIRECTORY : DBTRACE_ROLE_DATA;
}

static int h_init(struct h *h, unsigned capacity, unsigned depth)
{
	struct dbsched_cfg cfg = { .capacity = capacity, .stream_depth = depth };

	memset(h, 0, sizeof(*h));
	h->s = dbsched_new(&cfg);
	CHECK(h->s != NULL);
	return h->s != NULL;
}

/* Pushes the next record; returns its seq. */
static unsigned P(struct h *h, uint32_t stream, uint32_t file, enum dbtrace_op op,
		  uint64_t due, uint64_t now)
{
	struct dbtrace_rec r = { .stream = stream, .file = file, .op = op };
	struct dbsched_item *it;
	unsigned seq = h->n++;
	int slot;

	if (op == DBTRACE_READ || op == DBTRACE_WRITE) {
		r.off = 8192 * seq;
		r.len = 8192;
	}
	slot = dbsched_push(h->s, &r, role_of(file), due, now);
	CHECK(slot >= 0);
	h->slot[seq] = slot;
	if (slot >= 0) {
		it = dbsched_item(h->s, slot);
		CHECK(it->seq == seq);
		CHECK(it->rec.stream == stream && it->rec.file == file && it->rec.op == op);
		CHECK(it->role == role_of(file));
		CHECK(it->due_ns == due);
	}
	return seq;
}

/* The seq of the record pick() hands out at @now, or -1 (h->wake set). */
static long pick(struct h *h, uint64_t now)
{
	int slot;

	h->wake = 12345;
	slot = dbsched_pick(h->s, now, &h->wake);
	return slot < 0 ? -1 : (long)dbsched_item(h->s, slot)->seq;
}

static void done(struct h *h, unsigned seq, uint64_t now)
{
	dbsched_done(h->s, h->slot[seq], now);
}

#define PICK(h, want)								\
	do {									\
		long got_ = pick(h, 0);						\
		if (got_ != (long)(want)) {					\
			printf("  picked %ld, want %ld\n", got_, (long)(want));	\
			test_fail(__FILE__, __LINE__, "pick == " #want);	\
		}								\
	} while (0)

#define PICK_NONE(h)								\
	do {									\
		long got_ = pick(h, 0);						\
		if (got_ != -1) {						\
			printf("  picked %ld, want nothing\n", got_);		\
			test_fail(__FILE__, __LINE__, "nothing picked");	\
		}								\
		CHECK((h)->wake == UINT64_MAX);					\
	} while (0)

TEST(dbsched_new_rejects_zero)
{
	struct dbsched_cfg cfg = { .capacity = 0, .stream_depth = 1 };

	CHECK(dbsched_new(&cfg) == NULL);
	cfg.capacity = 4;
	cfg.stream_depth = 0;
	CHECK(dbsched_new(&cfg) == NULL);
	cfg.stream_depth = 1;
	struct dbsched *s = dbsched_new(&cfg);
	CHECK(s != NULL);
	CHECK(dbsched_count(s) == 0 && dbsched_inflight(s) == 0 && !dbsched_full(s));
	dbsched_free(s);
	dbsched_free(NULL);
}

TEST(dbsched_kind)
{
	CHECK(dbsched_kind_of(DBTRACE_READ, DBTRACE_ROLE_DATA) == DBSCHED_DATA);
	CHECK(dbsched_kind_of(DBTRACE_WRITE, DBTRACE_ROLE_LOG) == DBSCHED_DATA);
	CHECK(dbsched_kind_of(DBTRACE_TRIM, DBTRACE_ROLE_DATA) == DBSCHED_DATA);
	CHECK(dbsched_kind_of(DBTRACE_SYNC_FILE_RANGE, DBTRACE_ROLE_DATA) == DBSCHED_DATA);
	CHECK(dbsched_kind_of(DBTRACE_FSYNC, DBTRACE_ROLE_DATA) == DBSCHED_BARRIER);
	CHECK(dbsched_kind_of(DBTRACE_FDATASYNC, DBTRACE_ROLE_LOG) == DBSCHED_BARRIER);
	/* an fsync of a directory is a barrier of its stream, not a namespace operation */
	CHECK(dbsched_kind_of(DBTRACE_FSYNC, DBTRACE_ROLE_DIRECTORY) == DBSCHED_BARRIER);
	CHECK(dbsched_kind_of(DBTRACE_CREATE, DBTRACE_ROLE_TEMP) == DBSCHED_FILE_NS);
	CHECK(dbsched_kind_of(DBTRACE_UNLINK, DBTRACE_ROLE_DATA) == DBSCHED_FILE_NS);
	CHECK(dbsched_kind_of(DBTRACE_TRUNCATE, DBTRACE_ROLE_DATA) == DBSCHED_FILE_NS);
	CHECK(dbsched_kind_of(DBTRACE_CREATE, DBTRACE_ROLE_DIRECTORY) == DBSCHED_DIR_NS);
	CHECK(dbsched_kind_of(DBTRACE_UNLINK, DBTRACE_ROLE_DIRECTORY) == DBSCHED_DIR_NS);
}

TEST(dbsched_single_stream_depth1_in_order)
{
	static const enum dbtrace_op ops[] = {
		DBTRACE_READ, DBTRACE_WRITE, DBTRACE_TRIM, DBTRACE_READ,
		DBTRACE_SYNC_FILE_RANGE, DBTRACE_FSYNC, DBTRACE_WRITE, DBTRACE_READ,
	};
	struct h h;
	unsigned i;

	if (!h_init(&h, 16, 1))
		return;
	for (i = 0; i < 8; i++)
		P(&h, 3, i % 2, ops[i], 0, 0);
	CHECK(dbsched_count(h.s) == 8);
	for (i = 0; i < 8; i++) {
		PICK(&h, i);
		CHECK(dbsched_inflight(h.s) == 1);
		/* one at a time: nothing else until it completes */
		PICK_NONE(&h);
		PICK_NONE(&h);
		done(&h, i, 0);
		CHECK(dbsched_inflight(h.s) == 0);
		CHECK(dbsched_count(h.s) == 7 - i);
	}
	PICK_NONE(&h);
	dbsched_free(h.s);
}

TEST(dbsched_depth4_and_fsync_barrier)
{
	struct h h;
	unsigned i;

	if (!h_init(&h, 32, 4))
		return;
	for (i = 0; i < 6; i++)				/* 0..5 */
		P(&h, 0, 1, DBTRACE_READ, 0, 0);
	P(&h, 0, 1, DBTRACE_FSYNC, 0, 0);		/* 6 */
	P(&h, 0, 2, DBTRACE_READ, 0, 0);		/* 7 */
	P(&h, 0, 2, DBTRACE_WRITE, 0, 0);		/* 8 */

	for (i = 0; i < 4; i++)
		PICK(&h, i);
	CHECK(dbsched_inflight(h.s) == 4);
	PICK_NONE(&h);				/* depth 4 reached */
	done(&h, 2, 0);				/* out of order */
	PICK(&h, 4);
	PICK_NONE(&h);
	done(&h, 0, 0);
	done(&h, 1, 0);
	PICK(&h, 5);
	PICK_NONE(&h);				/* the fsync waits: 3, 4, 5 in flight */
	done(&h, 3, 0);
	done(&h, 5, 0);
	PICK_NONE(&h);				/* 4 still in flight */
	done(&h, 4, 0);
	CHECK(dbsched_inflight(h.s) == 0);
	PICK(&h, 6);
	PICK_NONE(&h);				/* nothing after the fsync until it completes */
	PICK_NONE(&h);
	done(&h, 6, 0);
	PICK(&h, 7);
	PICK(&h, 8);
	PICK_NONE(&h);
	done(&h, 8, 0);
	done(&h, 7, 0);
	CHECK(dbsched_count(h.s) == 0 && dbsched_inflight(h.s) == 0);
	dbsched_free(h.s);
}

/* Pushes a read with a captured depth; returns its seq. */
static unsigned PD(struct h *h, uint32_t stream, unsigned depth)
{
	struct dbtrace_rec r = { .stream = stream, .file = 1, .op = DBTRACE_READ,
				 .off = 8192 * h->n, .len = 8192 };
	unsigned seq = h->n++;
	int slot = dbsched_push_depth(h->s, &r, DBTRACE_ROLE_DATA, 0, 0, depth);

	CHECK(slot >= 0);
	h->slot[seq] = slot;
	if (slot >= 0)
		CHECK(dbsched_item(h->s, slot)->depth == depth);
	return seq;
}

/*
 * Captured depth: each record goes only while fewer than its depth of its
 * stream's records are in flight, whatever stream_depth says; records
 * without one (0) keep stream_depth.
 */
TEST(dbsched_captured_depth)
{
	struct h h;

	if (!h_init(&h, 32, 1))
		return;
	PD(&h, 0, 1);		/* 0: the stream's first request */
	PD(&h, 0, 2);		/* 1: queued while 0 is in flight */
	PD(&h, 0, 3);		/* 2 */
	PD(&h, 0, 3);		/* 3: one of 0..2 had completed in the trace */
	PD(&h, 0, 1);		/* 4: everything before had completed */
	PD(&h, 1, 2);		/* 5: another stream, its own count */
	P(&h, 0, 1, DBTRACE_READ, 0, 0);	/* 6: no depth: stream_depth 1 */
	PICK(&h, 0);
	PICK(&h, 1);
	PICK(&h, 2);
	PICK(&h, 5);		/* stream 0's 3 waits: 3 in flight, its depth is 3 */
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK(&h, 3);		/* 2 in flight: 3 may go, making 3 */
	PICK_NONE(&h);
	CHECK(dbsched_stream_max(h.s) == 3);
	done(&h, 0, 0);
	done(&h, 2, 0);
	PICK_NONE(&h);		/* 4 (depth 1) waits for every earlier one */
	done(&h, 3, 0);
	PICK(&h, 4);
	PICK_NONE(&h);
	done(&h, 4, 0);
	PICK(&h, 6);
	done(&h, 6, 0);
	done(&h, 5, 0);
	CHECK(dbsched_count(h.s) == 0 && dbsched_inflight(h.s) == 0);
	dbsched_free(h.s);

	/* a captured depth below stream_depth limits too; a barrier still waits for all */
	if (!h_init(&h, 32, 8))
		return;
	PD(&h, 0, 1);		/* 0 */
	PD(&h, 0, 1);		/* 1 */
	P(&h, 0, 1, DBTRACE_FSYNC, 0, 0);	/* 2 */
	PICK(&h, 0);
	PICK_NONE(&h);
	done(&h, 0, 0);
	PICK(&h, 1);
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK(&h, 2);
	done(&h, 2, 0);
	dbsched_free(h.s);
}

TEST(dbsched_fdatasync_is_a_barrier_too)
{
	struct h h;

	if (!h_init(&h, 8, 8))
		return;
	P(&h, 0, 1, DBTRACE_WRITE, 0, 0);	/* 0 */
	P(&h, 0, 1, DBTRACE_FDATASYNC, 0, 0);	/* 1 */
	P(&h, 0, 1, DBTRACE_WRITE, 0, 0);	/* 2 */
	PICK(&h, 0);
	PICK_NONE(&h);
	done(&h, 0, 0);
	PICK(&h, 1);
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK(&h, 2);
	done(&h, 2, 0);
	dbsched_free(h.s);
}

TEST(dbsched_two_streams_interleave_oldest_first)
{
	struct h h;

	if (!h_init(&h, 16, 1))
		return;
	P(&h, 1, 0, DBTRACE_READ, 0, 0);	/* 0: A */
	P(&h, 2, 1, DBTRACE_READ, 0, 0);	/* 1: B */
	P(&h, 1, 0, DBTRACE_READ, 0, 0);	/* 2: A */
	P(&h, 2, 1, DBTRACE_READ, 0, 0);	/* 3: B */
	P(&h, 1, 0, DBTRACE_READ, 0, 0);	/* 4: A */
	P(&h, 2, 1, DBTRACE_READ, 0, 0);	/* 5: B */
	PICK(&h, 0);
	PICK(&h, 1);
	PICK_NONE(&h);
	/* A is blocked by its record 0 in flight: B goes on alone */
	done(&h, 1, 0);
	PICK(&h, 3);
	done(&h, 3, 0);
	PICK(&h, 5);
	PICK_NONE(&h);
	done(&h, 0, 0);
	PICK(&h, 2);
	done(&h, 5, 0);
	done(&h, 2, 0);
	PICK(&h, 4);
	done(&h, 4, 0);
	CHECK(dbsched_count(h.s) == 0);
	dbsched_free(h.s);
}

/* Pushes the next record, a read or write of [@off, @off + @len); returns its seq. */
static unsigned P_at(struct h *h, uint32_t stream, uint32_t file, enum dbtrace_op op, uint64_t off,
		     uint64_t len)
{
	struct dbtrace_rec r = { .stream = stream, .file = file, .op = op, .off = off, .len = len };
	unsigned seq = h->n++;
	int slot = dbsched_push(h->s, &r, role_of(file), 0, 0);

	CHECK(slot >= 0);
	h->slot[seq] = slot;
	return seq;
}

/*
 * A read of a range another stream wrote earlier in the trace waits for that
 * write to complete (an asap replay let PostgreSQL's reader of
 * pg_internal.init go before its writer: 0 bytes); ranges apart, the
 * reader's own stream's writes and writes later in the trace do not hold it.
 */
TEST(dbsched_read_waits_for_another_streams_earlier_write)
{
	struct h h;

	if (!h_init(&h, 16, 4))
		return;
	P(&h, 0, 0, DBTRACE_FSYNC, 0, 0);	   /* 0: holds the writer's write */
	P_at(&h, 0, 0, DBTRACE_WRITE, 0, 8192);	   /* 1 */
	P_at(&h, 1, 0, DBTRACE_READ, 4096, 4096);  /* 2: overlaps 1: waits */
	P_at(&h, 1, 0, DBTRACE_READ, 65536, 4096); /* 3: after 2 in its stream */
	P_at(&h, 2, 0, DBTRACE_READ, 8192, 4096);  /* 4: just past 1: goes */
	P_at(&h, 0, 0, DBTRACE_READ, 0, 8192);	   /* 5: the writer's own read */
	P_at(&h, 3, 1, DBTRACE_READ, 0, 4096);	   /* 6: before 7 in the trace */
	P_at(&h, 4, 1, DBTRACE_WRITE, 0, 4096);	   /* 7 */
	PICK(&h, 0);
	PICK(&h, 4);
	PICK(&h, 6);
	PICK(&h, 7);
	PICK_NONE(&h);
	done(&h, 0, 0);
	PICK(&h, 1);
	PICK(&h, 5);
	PICK_NONE(&h); /* 2 waits for 1, 3 behind it */
	done(&h, 4, 0);
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK(&h, 2);
	PICK(&h, 3);
	done(&h, 2, 0);
	done(&h, 3, 0);
	done(&h, 5, 0);
	done(&h, 6, 0);
	done(&h, 7, 0);
	CHECK(dbsched_count(h.s) == 0);
	dbsched_free(h.s);
}

TEST(dbsched_oldest_ready_first)
{
	struct h h;

	if (!h_init(&h, 16, 2))
		return;
	/* both streams ready at once: the older head goes first, whatever the stream id */
	P(&h, 9, 0, DBTRACE_READ, 0, 0);	/* 0 */
	P(&h, 2, 1, DBTRACE_READ, 0, 0);	/* 1 */
	P(&h, 9, 0, DBTRACE_READ, 0, 0);	/* 2 */
	P(&h, 2, 1, DBTRACE_READ, 0, 0);	/* 3 */
	P(&h, 4000, 1, DBTRACE_READ, 0, 0);	/* 4 */
	PICK(&h, 0);
	PICK(&h, 1);
	PICK(&h, 2);
	PICK(&h, 3);
	PICK(&h, 4);
	PICK_NONE(&h);
	dbsched_free(h.s);
}

TEST(dbsched_barrier_blocks_only_its_stream)
{
	struct h h;

	if (!h_init(&h, 16, 4))
		return;
	P(&h, 0, 1, DBTRACE_WRITE, 0, 0);	/* 0: A */
	P(&h, 0, 1, DBTRACE_FSYNC, 0, 0);	/* 1: A */
	P(&h, 0, 1, DBTRACE_WRITE, 0, 0);	/* 2: A */
	P(&h, 1, 1, DBTRACE_WRITE, 0, 0);	/* 3: B, same file */
	P(&h, 1, 2, DBTRACE_READ, 0, 0);	/* 4: B */
	PICK(&h, 0);
	PICK(&h, 3);				/* A's fsync waits, B does not */
	PICK(&h, 4);
	PICK_NONE(&h);
	done(&h, 3, 0);
	PICK_NONE(&h);				/* B's completions do not release A's fsync */
	done(&h, 0, 0);
	PICK(&h, 1);
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK(&h, 2);
	done(&h, 2, 0);
	done(&h, 4, 0);
	dbsched_free(h.s);
}

/* create, unlink or truncate of file 5 by stream A, with stream B on the same file. */
static void file_ns(enum dbtrace_op op)
{
	struct h h;

	if (!h_init(&h, 32, 4))
		return;
	P(&h, 2, 5, DBTRACE_READ, 0, 0);	/* 0: B on F, before */
	P(&h, 1, 5, op, 0, 0);			/* 1: A's namespace op on F */
	P(&h, 2, 6, DBTRACE_READ, 0, 0);	/* 2: B on another file */
	P(&h, 3, 5, DBTRACE_WRITE, 0, 0);	/* 3: C on F, after */
	P(&h, 4, 7, DBTRACE_WRITE, 0, 0);	/* 4: D elsewhere */
	P(&h, 2, 5, DBTRACE_FSYNC, 0, 0);	/* 5: B's fsync of F, after */

	PICK(&h, 0);
	/* the namespace op waits for B's earlier read of F */
	PICK(&h, 2);
	/* C's write of F comes after the namespace op: it waits */
	PICK(&h, 4);
	PICK_NONE(&h);
	done(&h, 2, 0);
	done(&h, 4, 0);
	PICK_NONE(&h);
	done(&h, 0, 0);
	PICK(&h, 1);
	/* B's fsync now only waits for the namespace op, as does C's write */
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK(&h, 3);
	PICK(&h, 5);
	PICK_NONE(&h);
	done(&h, 3, 0);
	done(&h, 5, 0);
	CHECK(dbsched_count(h.s) == 0);
	dbsched_free(h.s);
}

TEST(dbsched_file_create_orders_the_file)
{
	file_ns(DBTRACE_CREATE);
}

TEST(dbsched_file_unlink_orders_the_file)
{
	file_ns(DBTRACE_UNLINK);
}

TEST(dbsched_file_truncate_orders_the_file)
{
	file_ns(DBTRACE_TRUNCATE);
}

TEST(dbsched_file_ns_waits_for_issued_records)
{
	struct h h;

	/* the earlier records on F are issued and in flight, from two streams */
	if (!h_init(&h, 16, 4))
		return;
	P(&h, 1, 5, DBTRACE_WRITE, 0, 0);	/* 0 */
	P(&h, 2, 5, DBTRACE_WRITE, 0, 0);	/* 1 */
	P(&h, 3, 5, DBTRACE_CREATE, 0, 0);	/* 2 */
	P(&h, 3, 5, DBTRACE_WRITE, 0, 0);	/* 3 */
	P(&h, 4, 5, DBTRACE_UNLINK, 0, 0);	/* 4 */
	PICK(&h, 0);
	PICK(&h, 1);
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK_NONE(&h);
	done(&h, 0, 0);
	PICK(&h, 2);
	PICK_NONE(&h);
	done(&h, 2, 0);
	PICK(&h, 3);
	/* the unlink waits for the write before it */
	PICK_NONE(&h);
	done(&h, 3, 0);
	PICK(&h, 4);
	done(&h, 4, 0);
	dbsched_free(h.s);
}

TEST(dbsched_file_ns_two_in_a_row)
{
	struct h h;

	/* create then unlink of one file from different streams: strictly one after the other */
	if (!h_init(&h, 16, 4))
		return;
	P(&h, 1, 5, DBTRACE_CREATE, 0, 0);	/* 0 */
	P(&h, 2, 5, DBTRACE_TRUNCATE, 0, 0);	/* 1 */
	P(&h, 3, 5, DBTRACE_READ, 0, 0);	/* 2 */
	P(&h, 4, 5, DBTRACE_UNLINK, 0, 0);	/* 3 */
	P(&h, 1, 6, DBTRACE_READ, 0, 0);	/* 4: A, another file */
	PICK(&h, 0);
	PICK_NONE(&h);
	done(&h, 0, 0);
	PICK(&h, 1);
	PICK(&h, 4);
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK(&h, 2);
	PICK_NONE(&h);
	done(&h, 2, 0);
	PICK(&h, 3);
	done(&h, 3, 0);
	done(&h, 4, 0);
	CHECK(dbsched_count(h.s) == 0);
	dbsched_free(h.s);
}

static void dir_ns(enum dbtrace_op op)
{
	struct h h;

	if (!h_init(&h, 32, 4))
		return;
	P(&h, 1, 1, DBTRACE_WRITE, 0, 0);	/* 0: A */
	P(&h, 2, 2, DBTRACE_READ, 0, 0);	/* 1: B */
	P(&h, 3, 11, op, 0, 0);			/* 2: C, mkdir/rmdir of directory 11 */
	P(&h, 1, 3, DBTRACE_READ, 0, 0);	/* 3: A, an unrelated file */
	P(&h, 2, 11, DBTRACE_FSYNC, 0, 0);	/* 4: B, fsync of the directory */
	P(&h, 4, 4, DBTRACE_CREATE, 0, 0);	/* 5: D, a file create */
	P(&h, 3, 2, DBTRACE_READ, 0, 0);	/* 6: C */

	PICK(&h, 0);
	PICK(&h, 1);
	/* the directory op waits for both; everything after it waits for it */
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK_NONE(&h);
	done(&h, 0, 0);
	PICK(&h, 2);
	PICK_NONE(&h);
	done(&h, 2, 0);
	PICK(&h, 3);
	PICK(&h, 4);
	PICK(&h, 5);
	PICK(&h, 6);
	PICK_NONE(&h);
	done(&h, 6, 0);
	done(&h, 5, 0);
	done(&h, 3, 0);
	done(&h, 4, 0);
	CHECK(dbsched_count(h.s) == 0 && dbsched_inflight(h.s) == 0);
	dbsched_free(h.s);
}

TEST(dbsched_dir_create_is_a_global_barrier)
{
	dir_ns(DBTRACE_CREATE);
}

TEST(dbsched_dir_unlink_is_a_global_barrier)
{
	dir_ns(DBTRACE_UNLINK);
}

TEST(dbsched_dir_ops_in_a_row)
{
	struct h h;

	/* mkdir a, mkdir a/b from two streams, then a file in it */
	if (!h_init(&h, 8, 4))
		return;
	P(&h, 1, 10, DBTRACE_CREATE, 0, 0);	/* 0 */
	P(&h, 2, 11, DBTRACE_CREATE, 0, 0);	/* 1 */
	P(&h, 3, 1, DBTRACE_CREATE, 0, 0);	/* 2 */
	P(&h, 3, 1, DBTRACE_WRITE, 0, 0);	/* 3 */
	P(&h, 1, 11, DBTRACE_UNLINK, 0, 0);	/* 4 */
	PICK(&h, 0);
	PICK_NONE(&h);
	done(&h, 0, 0);
	PICK(&h, 1);
	PICK_NONE(&h);
	done(&h, 1, 0);
	PICK(&h, 2);
	PICK_NONE(&h);
	done(&h, 2, 0);
	PICK(&h, 3);
	PICK_NONE(&h);				/* the rmdir waits for the write */
	done(&h, 3, 0);
	PICK(&h, 4);
	done(&h, 4, 0);
	dbsched_free(h.s);
}

TEST(dbsched_timed)
{
	struct h h;

	if (!h_init(&h, 16, 1))
		return;
	P(&h, 0, 1, DBTRACE_READ, 100, 0);	/* 0 */
	P(&h, 1, 1, DBTRACE_READ, 50, 0);	/* 1 */
	P(&h, 2, 1, DBTRACE_READ, 50, 0);	/* 2 */
	P(&h, 3, 1, DBTRACE_READ, 70, 0);	/* 3 */
	CHECK(pick(&h, 0) == -1);
	CHECK(h.wake == 50);
	CHECK(pick(&h, 49) == -1);
	CHECK(h.wake == 50);
	CHECK(pick(&h, 50) == 1);		/* at the due time, ties by trace order */
	CHECK(pick(&h, 50) == 2);
	CHECK(pick(&h, 50) == -1);
	CHECK(h.wake == 70);
	CHECK(pick(&h, 200) == 0);		/* both late: the older first */
	CHECK(pick(&h, 200) == 3);
	CHECK(pick(&h, 200) == -1);
	CHECK(h.wake == UINT64_MAX);
	done(&h, 0, 200);
	done(&h, 1, 200);
	done(&h, 2, 200);
	done(&h, 3, 200);
	dbsched_free(h.s);
}

TEST(dbsched_timed_ties_by_trace_order)
{
	struct h h;
	unsigned i;

	/* many streams due at the same time, pushed in an order unlike their ids */
	if (!h_init(&h, 32, 1))
		return;
	for (i = 0; i < 20; i++)
		P(&h, (i * 7) % 20, 1, DBTRACE_READ, i < 10 ? 1000 : 500, 0);
	CHECK(pick(&h, 10) == -1);
	CHECK(h.wake == 500);
	for (i = 10; i < 20; i++)
		CHECK(pick(&h, 500) == (long)i);
	CHECK(pick(&h, 500) == -1);
	CHECK(h.wake == 1000);
	for (i = 0; i < 10; i++)
		CHECK(pick(&h, 1000) == (long)i);
	CHECK(pick(&h, 1000) == -1);
	CHECK(h.wake == UINT64_MAX);
	dbsched_free(h.s);
}

TEST(dbsched_timed_wake_ignores_blocked_records)
{
	struct h h;

	if (!h_init(&h, 16, 1))
		return;
	P(&h, 0, 1, DBTRACE_READ, 0, 0);	/* 0 */
	P(&h, 0, 1, DBTRACE_READ, 10, 0);	/* 1: waits for 0, then for its time */
	P(&h, 1, 1, DBTRACE_READ, 300, 0);	/* 2: waits for its time only */
	CHECK(pick(&h, 0) == 0);
	CHECK(pick(&h, 0) == -1);
	CHECK(h.wake == 300);			/* not 10: record 1 waits for a completion */
	done(&h, 0, 5);
	CHECK(pick(&h, 5) == -1);
	CHECK(h.wake == 10);
	CHECK(pick(&h, 10) == 1);
	CHECK(pick(&h, 11) == -1);
	CHECK(h.wake == 300);
	/* the clock passed to done() counts too */
	done(&h, 1, 400);
	CHECK(pick(&h, 0) == 2);
	done(&h, 2, 401);
	dbsched_free(h.s);
}

TEST(dbsched_timed_push_late)
{
	struct h h;

	/* a record pushed after its due time goes at once; the push's clock counts */
	if (!h_init(&h, 4, 1))
		return;
	P(&h, 0, 1, DBTRACE_READ, 100, 150);
	CHECK(pick(&h, 0) == 0);
	P(&h, 1, 1, DBTRACE_READ, 160, 150);
	CHECK(pick(&h, 150) == -1);
	CHECK(h.wake == 160);
	done(&h, 0, 150);
	dbsched_free(h.s);
}

TEST(dbsched_window_capacity)
{
	struct h h;
	unsigned i;

	if (!h_init(&h, 3, 4))
		return;
	for (i = 0; i < 3; i++) {
		CHECK(!dbsched_full(h.s));
		P(&h, 0, 1, DBTRACE_READ, 0, 0);
	}
	CHECK(dbsched_full(h.s));
	CHECK(dbsched_count(h.s) == 3);
	PICK(&h, 0);
	PICK(&h, 1);
	/* issued records stay in the window until done */
	CHECK(dbsched_full(h.s));
	CHECK(dbsched_inflight(h.s) == 2);
	done(&h, 1, 0);
	CHECK(!dbsched_full(h.s));
	CHECK(dbsched_count(h.s) == 2);
	P(&h, 0, 1, DBTRACE_WRITE, 0, 0);	/* 3, into the freed slot */
	CHECK(h.slot[3] == h.slot[1]);
	CHECK(dbsched_full(h.s));
	PICK(&h, 2);
	PICK(&h, 3);
	PICK_NONE(&h);
	/* the item's caller fields survive until done */
	dbsched_item(h.s, h.slot[3])->user = &h;
	dbsched_item(h.s, h.slot[3])->done_bytes = 77;
	done(&h, 0, 0);
	done(&h, 2, 0);
	CHECK(dbsched_item(h.s, h.slot[3])->user == &h);
	CHECK(dbsched_item(h.s, h.slot[3])->done_bytes == 77);
	done(&h, 3, 0);
	CHECK(dbsched_count(h.s) == 0 && !dbsched_full(h.s));
	dbsched_free(h.s);
}

TEST(dbsched_capacity_one)
{
	struct h h;
	unsigned i;

	if (!h_init(&h, 1, 1))
		return;
	for (i = 0; i < 10; i++) {
		P(&h, i % 3, i % 2 ? 1 : 10, i % 4 == 3 ? DBTRACE_CREATE : DBTRACE_FSYNC, 0, 0);
		CHECK(dbsched_full(h.s));
		PICK(&h, i);
		PICK_NONE(&h);
		done(&h, i, 0);
		CHECK(!dbsched_full(h.s));
	}
	dbsched_free(h.s);
}

TEST(dbsched_done_of_unissued_is_ignored)
{
	struct h h;

	if (!h_init(&h, 4, 1))
		return;
	P(&h, 0, 1, DBTRACE_READ, 0, 0);
	P(&h, 0, 1, DBTRACE_READ, 0, 0);
	PICK(&h, 0);
	done(&h, 1, 0);			/* not issued: no effect */
	CHECK(dbsched_count(h.s) == 2 && dbsched_inflight(h.s) == 1);
	PICK_NONE(&h);
	done(&h, 0, 0);
	done(&h, 0, 0);			/* twice: no effect */
	CHECK(dbsched_count(h.s) == 1 && dbsched_inflight(h.s) == 0);
	PICK(&h, 1);
	done(&h, 1, 0);
	dbsched_free(h.s);
}

TEST(dbsched_restart_new_loop)
{
	struct h h;

	if (!h_init(&h, 4, 1))
		return;
	P(&h, 0, 1, DBTRACE_READ, 1000, 0);
	P(&h, 1, 10, DBTRACE_CREATE, 1000, 0);
	CHECK(pick(&h, 2000) == 0);
	CHECK(pick(&h, 2000) == -1);
	done(&h, 0, 2000);
	CHECK(pick(&h, 2000) == 1);
	done(&h, 1, 2000);
	CHECK(dbsched_count(h.s) == 0);

	/* a new loop: sequence numbers from 0 again, and the clock from 0 */
	dbsched_restart(h.s);
	h.n = 0;
	P(&h, 2, 1, DBTRACE_READ, 10, 0);
	P(&h, 3, 1, DBTRACE_READ, 5, 0);
	CHECK(pick(&h, 0) == -1);
	CHECK(h.wake == 5);
	CHECK(pick(&h, 5) == 1);
	CHECK(pick(&h, 10) == 0);
	done(&h, 0, 10);
	done(&h, 1, 10);
	dbsched_free(h.s);
}

TEST(dbsched_scaled_ns_saturates)
{
	/* exact at speed 1, however large (a double has 53 bits) */
	CHECK(dbsched_scaled_ns(1300, 1000, 1.0) == 1300000);
	CHECK(dbsched_scaled_ns((1ULL << 53) + 1, 1, 1.0) == (1ULL << 53) + 1);
	CHECK(dbsched_scaled_ns(0, 1000000, 0.001) == 0);
	CHECK(dbsched_scaled_ns(300, 1000000, 3.0) == 100000000);
	CHECK(dbsched_scaled_ns(1, 1000000, 0.001) == 1000000000);
	/* 2^62 ms: 4.6e24 ns, past 64 bits: the most, never 0 or a wrapped figure */
	CHECK(dbsched_scaled_ns(1ULL << 62, 1000000, 1.0) == DBSCHED_NS_MAX);
	CHECK(dbsched_scaled_ns(1ULL << 62, 1000000, 2.0) == DBSCHED_NS_MAX);
	CHECK(dbsched_scaled_ns(INT64_MAX, 1000000, 1000.0) == DBSCHED_NS_MAX);
	CHECK(dbsched_scaled_ns(UINT64_MAX, 1, 1.0) == DBSCHED_NS_MAX);
	CHECK(dbsched_scaled_ns(1ULL << 40, 1000000, 0.001) == DBSCHED_NS_MAX);
	/* just below the limit stays exact */
	CHECK(dbsched_scaled_ns(DBSCHED_NS_MAX - 1, 1, 1.0) == DBSCHED_NS_MAX - 1);
	/* never UINT64_MAX: that is the scheduler's "no due time" */
	CHECK(DBSCHED_NS_MAX != UINT64_MAX);
}

TEST(dbsched_add_ns_saturates)
{
	CHECK(dbsched_add_ns(1, 2) == 3);
	CHECK(dbsched_add_ns(DBSCHED_NS_MAX - 2, 1) == DBSCHED_NS_MAX - 1);
	CHECK(dbsched_add_ns(DBSCHED_NS_MAX - 1, 1) == DBSCHED_NS_MAX);
	CHECK(dbsched_add_ns(DBSCHED_NS_MAX, 5) == DBSCHED_NS_MAX);
	CHECK(dbsched_add_ns(5, UINT64_MAX) == DBSCHED_NS_MAX);
	CHECK(dbsched_add_ns(UINT64_MAX, UINT64_MAX) == DBSCHED_NS_MAX);
}
