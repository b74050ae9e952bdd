/*
 * The replay scheduler (dbsched.h) against a reference model: random
 * traces of every operation, timed and not, replayed through the
 * scheduler, each pick checked against what the model allows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbsched.h"
#include "rng.h"
#include "test.h"

#define RMAX 400

struct mrec {
	struct dbtrace_rec rec;
	enum dbtrace_role role;
	enum dbsched_kind kind;
	uint64_t due;
	unsigned depth; /* captured depth, 0: the model's */
	int state;	/* 0 not pushed, 1 waiting, 2 in flight, 3 done */
	int slot;
};

struct model {
	struct mrec r[RMAX];
	unsigned n, pushed, first; /* first: the oldest record not done */
	unsigned depth;
};

static uint64_t rnd_state;

static uint64_t rnd(uint64_t n)
{
	rnd_state = mix64(rnd_state);
	return n ? rnd_state % n : 0;
}

/* Whether record @i may be issued at @now by the rules of dbsched.h, independently. */
static int m_may_go(const struct model *m, unsigned i, uint64_t now, int ignore_time)
{
	const struct mrec *r = &m->r[i];
	unsigned j, mine = 0;

	if (r->state != 1)
		return 0;
	for (j = m->first; j < m->pushed; j++) {
		const struct mrec *q = &m->r[j];

		if (q->state == 3)
			continue;
		if (q->rec.stream == r->rec.stream && q->state == 2)
			mine++;
		if (j >= i)
			continue;
		/* q: earlier, not done */
		if (q->rec.stream == r->rec.stream) {
			if (q->state == 1)
				return 0; /* stream order */
			if (r->kind != DBSCHED_DATA || q->kind != DBSCHED_DATA)
				return 0; /* barriers */
		}
		if (q->kind == DBSCHED_DIR_NS || r->kind == DBSCHED_DIR_NS)
			return 0;
		if (q->rec.file == r->rec.file &&
		    (q->kind == DBSCHED_FILE_NS || r->kind == DBSCHED_FILE_NS))
			return 0;
		/* a read after another stream's write of the same bytes */
		if (q->rec.file == r->rec.file && r->rec.op == DBTRACE_READ &&
		    q->rec.op == DBTRACE_WRITE && q->rec.stream != r->rec.stream &&
		    q->rec.off < r->rec.off + r->rec.len && r->rec.off < q->rec.off + q->rec.len)
			return 0;
	}
	if (mine >= (r->depth ? r->depth : m->depth))
		return 0;
	return ignore_time || r->due <= now;
}

static enum dbtrace_op random_op(int dir, unsigned mix)
{
	static const enum dbtrace_op dir_ops[] = { DBTRACE_FSYNC, DBTRACE_CREATE, DBTRACE_UNLINK };
	/* weights: read write fsync fdatasync sfr trim truncate create unlink */
	static const unsigned w[3][DBTRACE_OP_NR] = {
		{ 40, 30, 8, 5, 4, 3, 4, 3, 3 },      /* mostly data */
		{ 20, 20, 10, 10, 2, 2, 12, 12, 12 }, /* namespace-heavy */
		{ 50, 50, 0, 0, 0, 0, 0, 0, 0 },      /* data only */
	};
	unsigned total = 0, x, op;

	if (dir)
		return dir_ops[rnd(3)];
	for (op = 0; op < DBTRACE_OP_NR; op++)
		total += w[mix][op];
	x = (unsigned)rnd(total);
	for (op = 0; op < DBTRACE_OP_NR; op++) {
		if (x < w[mix][op])
			break;
		x -= w[mix][op];
	}
	return (enum dbtrace_op)op;
}

static void m_trace(struct model *m, unsigned n, int timed)
{
	uint32_t sids[6], fids[8];
	enum dbtrace_role froles[8];
	uint64_t st_time[6] = { 0 };
	unsigned nst = 1 + (unsigned)rnd(6), nf = 1 + (unsigned)rnd(8);
	unsigned mix = (unsigned)rnd(3), dirpct = (unsigned)rnd(3) * 15, i;

	for (i = 0; i < nst; i++)
		sids[i] = i == 0 ? (uint32_t)rnd(DBTRACE_MAX_STREAMS)
				 : (sids[i - 1] + 1 + (uint32_t)rnd(600)) % DBTRACE_MAX_STREAMS;
	for (i = 0; i < nf; i++) {
		fids[i] = (uint32_t)((i * 2039 + rnd(2000)) % DBTRACE_MAX_FILES);
		froles[i] = rnd(100) < dirpct
				    ? DBTRACE_ROLE_DIRECTORY
				    : (enum dbtrace_role)(rnd(3) == 0 ? DBTRACE_ROLE_LOG
								      : DBTRACE_ROLE_DATA);
	}
	memset(m->r, 0, sizeof(m->r));
	m->n = n;
	m->pushed = m->first = 0;
	for (i = 0; i < n; i++) {
		struct mrec *r = &m->r[i];
		unsigned s = (unsigned)rnd(nst), f = (unsigned)rnd(nf);

		r->rec.line = 100 + i;
		r->rec.stream = sids[s];
		r->rec.file = fids[f];
		r->role = froles[f];
		r->rec.op = random_op(r->role == DBTRACE_ROLE_DIRECTORY, mix);
		if (r->rec.op == DBTRACE_READ || r->rec.op == DBTRACE_WRITE) {
			r->rec.off = 4096 * rnd(100);
			r->rec.len = 4096;
		}
		r->kind = dbsched_kind_of(r->rec.op, r->role);
		r->depth = rnd(3) ? 0 : 1 + (unsigned)rnd(4); /* a captured depth, or none */
		if (timed) {
			/* per stream, times never decrease; sometimes equal */
			st_time[s] += rnd(3) ? rnd(40) : 0;
			r->due = st_time[s];
		}
		r->rec.time = timed ? r->due : DBTRACE_NO_TIME;
	}
}

/* Runs one trace through @s; returns 0 on the first failure. */
static int m_run(struct dbsched *s, struct model *m, unsigned capacity, uint64_t *steps)
{
	uint64_t now = 0, step;
	unsigned done_n = 0, inflight = 0, i;
	int slot_owner[64];

	for (i = 0; i < 64; i++)
		slot_owner[i] = -1;
	for (step = 0; done_n < m->n; step++) {
		unsigned in_window = m->pushed - done_n, act = (unsigned)rnd(10);

		if (step > 100000) {
			test_fail(__FILE__, __LINE__, "the model run does not end");
			return 0;
		}
		CHECK(dbsched_count(s) == in_window);
		CHECK(dbsched_inflight(s) == inflight);
		CHECK(!!dbsched_full(s) == (in_window == capacity));
		if (rnd(4) == 0)
			now += rnd(30);

		if (m->pushed < m->n && in_window < capacity && act < 3) {
			struct mrec *r = &m->r[m->pushed];
			int slot = dbsched_push_depth(s, &r->rec, r->role, r->due, now, r->depth);
			struct dbsched_item *it;

			if (slot < 0 || slot >= (int)capacity || slot_owner[slot] != -1) {
				test_fail(__FILE__, __LINE__, "push gave a bad or busy slot");
				return 0;
			}
			it = dbsched_item(s, slot);
			CHECK(it->seq == m->pushed);
			CHECK(it->due_ns == r->due && it->role == r->role);
			CHECK(it->rec.stream == r->rec.stream && it->rec.file == r->rec.file &&
			      it->rec.op == r->rec.op && it->rec.off == r->rec.off &&
			      it->rec.len == r->rec.len && it->rec.line == r->rec.line &&
			      it->rec.time == r->rec.time);
			slot_owner[slot] = (int)m->pushed;
			r->slot = slot;
			r->state = 1;
			m->pushed++;
			continue;
		}
		if (inflight && act < 6) {
			/* a random one of those in flight completes */
			unsigned k = (unsigned)rnd(inflight), j;

			for (j = m->first; j < m->pushed; j++)
				if (m->r[j].state == 2 && k-- == 0)
					break;
			dbsched_done(s, m->r[j].slot, now);
			slot_owner[m->r[j].slot] = -1;
			m->r[j].state = 3;
			inflight--;
			done_n++;
			while (m->first < m->pushed && m->r[m->first].state == 3)
				m->first++;
			continue;
		}

		/* a pick: must be exactly the model's oldest record that may go */
		{
			uint64_t wake = 777, want_wake = UINT64_MAX;
			long want = -1;
			int slot;

			for (i = m->first; i < m->pushed; i++) {
				if (m_may_go(m, i, now, 0)) {
					want = i;
					break;
				}
				if (m_may_go(m, i, now, 1) && m->r[i].due < want_wake)
					want_wake = m->r[i].due;
			}
			slot = dbsched_pick(s, now, &wake);
			if (slot >= 0) {
				long got = slot < (int)capacity ? slot_owner[slot] : -2;

				if (got != want) {
					printf("  step %llu now %llu: picked record %ld, the model says %ld\n",
					       (unsigned long long)step, (unsigned long long)now,
					       got, want);
					test_fail(__FILE__, __LINE__, "pick matches the model");
					return 0;
				}
				CHECK(dbsched_item(s, slot)->seq == (uint64_t)want);
				m->r[want].state = 2;
				inflight++;
				continue;
			}
			if (want != -1) {
				printf("  step %llu now %llu: nothing picked, the model says %ld\n",
				       (unsigned long long)step, (unsigned long long)now, want);
				test_fail(__FILE__, __LINE__, "pick matches the model");
				return 0;
			}
			if (wake != want_wake) {
				printf("  step %llu now %llu: wake %llu, the model says %llu\n",
				       (unsigned long long)step, (unsigned long long)now,
				       (unsigned long long)wake, (unsigned long long)want_wake);
				test_fail(__FILE__, __LINE__, "wake time matches the model");
				return 0;
			}
			CHECK(wake == UINT64_MAX || wake > now);
			/* no deadlock: with nothing in flight, only time or more records help */
			if (!inflight && wake == UINT64_MAX && m->pushed - done_n) {
				printf("  step %llu: %u records wait for nothing\n",
				       (unsigned long long)step, m->pushed - done_n);
				test_fail(__FILE__, __LINE__, "no deadlock");
				return 0;
			}
			if (!inflight && wake != UINT64_MAX && rnd(2))
				now = wake;
		}
	}
	/* every record issued exactly once and done */
	for (i = 0; i < m->n; i++)
		CHECK(m->r[i].state == 3);
	CHECK(dbsched_count(s) == 0 && dbsched_inflight(s) == 0);
	*steps += step;
	return 1;
}

TEST(dbsched_random_against_model)
{
	static struct model m;
	uint64_t steps = 0;
	unsigned iter;

	rnd_state = 20240611;
	for (iter = 0; iter < 300; iter++) {
		struct dbsched_cfg cfg;
		struct dbsched *s;
		unsigned loop;

		cfg.capacity = 1 + (unsigned)rnd(iter % 3 == 0 ? 4 : 40);
		cfg.stream_depth = 1 + (unsigned)rnd(iter % 2 ? 2 : 6);
		m.depth = cfg.stream_depth;
		s = dbsched_new(&cfg);
		if (!s) {
			CHECK(s != NULL);
			return;
		}
		/* two loops over two traces through one scheduler, restarted in between */
		for (loop = 0; loop < 2; loop++) {
			m_trace(&m, 20 + (unsigned)rnd(RMAX - 20), iter % 4 != 0);
			if (!m_run(s, &m, cfg.capacity, &steps)) {
				printf("  iteration %u loop %u (capacity %u, depth %u)\n", iter,
				       loop, cfg.capacity, cfg.stream_depth);
				dbsched_free(s);
				return;
			}
			dbsched_restart(s);
		}
		dbsched_free(s);
	}
	CHECK(steps > 100000);
}

/*
 * A sync replay (dbreplay's dbr_io_api=sync): each record picked completes
 * before the next pick, and in asap replay no record has a due time. Then
 * the pick is always the oldest record in the window, whatever the window's
 * size, the streams, barriers, namespace operations, reads after writes
 * and captured depths: the trace's order. dbreplay's in-order path
 * (dbr_next_in_order) hands records out in that order without the
 * scheduler, for a window of one record.
 */
TEST(dbsched_sync_replay_is_trace_order)
{
	static struct model m;
	unsigned iter, total = 0;

	rnd_state = 20261206;
	for (iter = 0; iter < 300; iter++) {
		struct dbsched_cfg cfg;
		struct dbsched *s;
		unsigned loop;

		cfg.capacity = iter % 2 ? 1 : 1 + (unsigned)rnd(40);
		cfg.stream_depth = 1 + (unsigned)rnd(4);
		s = dbsched_new(&cfg);
		if (!s) {
			CHECK(s != NULL);
			return;
		}
		for (loop = 0; loop < 2; loop++) {
			unsigned next = 0, picked = 0;

			m_trace(&m, 20 + (unsigned)rnd(RMAX - 20), 0);
			while (picked < m.n) {
				uint64_t wake = 0;
				int slot;

				while (next < m.n && !dbsched_full(s)) {
					const struct mrec *r = &m.r[next++];

					CHECK(dbsched_push_depth(s, &r->rec, r->role, 0, 0,
								 r->depth) >= 0);
				}
				slot = dbsched_pick(s, 0, &wake);
				if (slot < 0 || dbsched_item(s, slot)->seq != picked ||
				    dbsched_item(s, slot)->rec.line != m.r[picked].rec.line) {
					printf("  iteration %u loop %u (capacity %u): pick %u is slot %d, not record %u\n",
					       iter, loop, cfg.capacity, picked, slot, picked);
					test_fail(__FILE__, __LINE__,
						  "a sync replay goes in trace order");
					dbsched_free(s);
					return;
				}
				dbsched_done(s, slot, 0);
				picked++;
			}
			CHECK(dbsched_count(s) == 0 && dbsched_inflight(s) == 0);
			total += picked;
			dbsched_restart(s);
		}
		dbsched_free(s);
	}
	CHECK(total > 100000);
}
