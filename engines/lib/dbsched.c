/* The replay scheduler (see dbsched.h for the rules). */
#include <stdlib.h>
#include <string.h>

#include "dbsched.h"

#define NIL	(-1)

enum stream_state {
	ST_IDLE,	/* no unissued record in the window */
	ST_READY,	/* in the ready heap */
	ST_TIMED,	/* in the timer heap: waits for its head's due time only */
	ST_SELF,	/* waits for its own records in flight */
	ST_FILE,	/* on a file's waiter list */
	ST_GLOBAL,	/* on the directory-operation waiter list */
};

struct slot {
	struct dbsched_item it;
	enum dbsched_kind kind;
	int used, issued;
	int win_prev, win_next;		/* the window, in trace order */
	int q_next;			/* the stream's unissued records */
	int f_prev, f_next;		/* the file's records not done */
	int ns_next;			/* the file's (or the global) namespace operations not done */
};

struct stream {
	int q_head, q_tail;
	unsigned inflight;
	int barrier;			/* a barrier or namespace operation in flight */
	enum stream_state state;
	int wait_next;
};

struct file {
	int head, tail;			/* records not done, in trace order */
	int ns_head, ns_tail;		/* namespace operations not done */
	int waiters;			/* streams waiting for this file */
};

struct dbsched {
	struct dbsched_cfg cfg;
	struct slot *slot;
	int free_head;
	int win_head, win_tail;
	unsigned count, inflight;
	unsigned stream_max;		/* most records one stream had in flight */
	uint64_t seq;
	struct stream *st;		/* DBTRACE_MAX_STREAMS */
	struct file *fl;		/* DBTRACE_MAX_FILES */
	int g_ns_head, g_ns_tail;	/* directory operations not done */
	int g_waiters;
	uint32_t *ready, *timed;	/* min-heaps of stream ids */
	unsigned nready, ntimed;
	uint64_t now;
};

enum dbsched_kind dbsched_kind_of(enum dbtrace_op op, enum dbtrace_role role)
{
	switch (op) {
	case DBTRACE_FSYNC:
	case DBTRACE_FDATASYNC:
		return DBSCHED_BARRIER;
	case DBTRACE_CREATE:
	case DBTRACE_UNLINK:
	case DBTRACE_TRUNCATE:
		return role == DBTRACE_ROLE_DIRECTORY ? DBSCHED_DIR_NS : DBSCHED_FILE_NS;
	default:
		return DBSCHED_DATA;
	}
}

struct dbsched *dbsched_new(const struct dbsched_cfg *cfg)
{
	struct dbsched *s;
	unsigned i;

	if (!cfg->capacity || !cfg->stream_depth || cfg->capacity > (1U << 30))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = *cfg;
	s->slot = calloc(cfg->capacity, sizeof(*s->slot));
	s->st = calloc(DBTRACE_MAX_STREAMS, sizeof(*s->st));
	s->fl = calloc(DBTRACE_MAX_FILES, sizeof(*s->fl));
	s->ready = calloc(DBTRACE_MAX_STREAMS, sizeof(*s->ready));
	s->timed = calloc(DBTRACE_MAX_STREAMS, sizeof(*s->timed));
	if (!s->slot || !s->st || !s->fl || !s->ready || !s->timed) {
		dbsched_free(s);
		return NULL;
	}
	for (i = 0; i < cfg->capacity; i++)
		s->slot[i].q_next = i + 1 < cfg->capacity ? (int)i + 1 : NIL;
	s->free_head = 0;
	s->win_head = s->win_tail = NIL;
	for (i = 0; i < DBTRACE_MAX_STREAMS; i++) {
		s->st[i].q_head = s->st[i].q_tail = NIL;
		s->st[i].wait_next = NIL;
	}
	for (i = 0; i < DBTRACE_MAX_FILES; i++) {
		struct file *f = &s->fl[i];

		f->head = f->tail = f->ns_head = f->ns_tail = f->waiters = NIL;
	}
	s->g_ns_head = s->g_ns_tail = s->g_waiters = NIL;
	return s;
}

void dbsched_free(struct dbsched *s)
{
	if (!s)
		return;
	free(s->slot);
	free(s->st);
	free(s->fl);
	free(s->ready);
	free(s->timed);
	free(s);
}

unsigned dbsched_count(const struct dbsched *s)
{
	return s->count;
}

unsigned dbsched_inflight(const struct dbsched *s)
{
	return s->inflight;
}

unsigned dbsched_stream_max(const struct dbsched *s)
{
	return s->stream_max;
}

int dbsched_full(const struct dbsched *s)
{
	return s->count >= s->cfg.capacity;
}

struct dbsched_item *dbsched_item(struct dbsched *s, int slot)
{
	return &s->slot[slot].it;
}

/* ---- heaps of streams, keyed by their head record ---- */

static uint64_t key_of(const struct dbsched *s, uint32_t stream, int timed)
{
	const struct slot *h = &s->slot[s->st[stream].q_head];

	return timed ? h->it.due_ns : h->it.seq;
}

/* Ties in due time go by trace order. */
static int before(const struct dbsched *s, uint32_t a, uint32_t b, int timed)
{
	uint64_t ka = key_of(s, a, timed), kb = key_of(s, b, timed);

	if (ka != kb)
		return ka < kb;
	return timed && key_of(s, a, 0) < key_of(s, b, 0);
}

static void heap_push(struct dbsched *s, uint32_t *h, unsigned *n, uint32_t v, int timed)
{
	unsigned i = (*n)++;

	while (i) {
		unsigned p = (i - 1) / 2;

		if (!before(s, v, h[p], timed))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = v;
}

static uint32_t heap_pop(struct dbsched *s, uint32_t *h, unsigned *n, int timed)
{
	uint32_t top = h[0], last = h[--(*n)];
	unsigned i = 0;

	for (;;) {
		unsigned c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && before(s, h[c + 1], h[c], timed))
			c++;
		if (!before(s, h[c], last, timed))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
	return top;
}

/* ---- deciding what a stream's head waits for ---- */

/*
 * A read of a range another stream wrote earlier in the trace, that write
 * not done: the read waits for it, as the database's reader did (it read
 * what the writer had written: PostgreSQL's pg_internal.init, written by one
 * backend and read by another 0.6 ms later, read 0 bytes in an asap replay
 * that let the read go first). Only the file's records not done are looked
 * at, older ones first, up to the read.
 */
static int read_after_write(const struct dbsched *s, const struct file *f, const struct slot *h)
{
	uint64_t lo = h->it.rec.off, hi = lo + h->it.rec.len;
	int i;

	if (h->it.rec.op != DBTRACE_READ)
		return 0;
	for (i = f->head; i != NIL && s->slot[i].it.seq < h->it.seq; i = s->slot[i].f_next) {
		const struct dbtrace_rec *w = &s->slot[i].it.rec;

		if (w->op == DBTRACE_WRITE && w->stream != h->it.rec.stream && w->off < hi &&
		    lo < w->off + w->len)
			return 1;
	}
	return 0;
}

static void evaluate(struct dbsched *s, uint32_t id)
{
	struct stream *st = &s->st[id];
	struct slot *h;
	struct file *f;

	if (st->q_head == NIL) {
		st->state = ST_IDLE;
		return;
	}
	h = &s->slot[st->q_head];
	if (st->barrier || (h->kind != DBSCHED_DATA && st->inflight) ||
	    st->inflight >= (h->it.depth ? h->it.depth : s->cfg.stream_depth)) {
		st->state = ST_SELF;
		return;
	}
	if (s->g_ns_head != NIL && (h->kind == DBSCHED_DIR_NS ? s->win_head != st->q_head
					: s->slot[s->g_ns_head].it.seq < h->it.seq)) {
		st->state = ST_GLOBAL;
		st->wait_next = s->g_waiters;
		s->g_waiters = (int)id;
		return;
	}
	f = &s->fl[h->it.rec.file];
	if (h->kind == DBSCHED_FILE_NS
		    ? f->head != st->q_head
		    : (f->ns_head != NIL && s->slot[f->ns_head].it.seq < h->it.seq) ||
			      read_after_write(s, f, h)) {
		st->state = ST_FILE;
		st->wait_next = f->waiters;
		f->waiters = (int)id;
		return;
	}
	if (h->it.due_ns > s->now) {
		st->state = ST_TIMED;
		heap_push(s, s->timed, &s->ntimed, id, 1);
		return;
	}
	st->state = ST_READY;
	heap_push(s, s->ready, &s->nready, id, 0);
}

static void wake_list(struct dbsched *s, int *head)
{
	int id = *head;

	*head = NIL;
	while (id != NIL) {
		int next = s->st[id].wait_next;

		s->st[id].wait_next = NIL;
		evaluate(s, (uint32_t)id);
		id = next;
	}
}

int dbsched_push(struct dbsched *s, const struct dbtrace_rec *rec, enum dbtrace_role role,
		 uint64_t due_ns, uint64_t now_ns)
{
	return dbsched_push_depth(s, rec, role, due_ns, now_ns, 0);
}

int dbsched_push_depth(struct dbsched *s, const struct dbtrace_rec *rec, enum dbtrace_role role,
		       uint64_t due_ns, uint64_t now_ns, unsigned depth)
{
	int i = s->free_head;
	struct stream *st = &s->st[rec->stream % DBTRACE_MAX_STREAMS];
	struct file *f = &s->fl[rec->file % DBTRACE_MAX_FILES];
	struct slot *sl;

	if (s->count >= s->cfg.capacity || i == NIL)
		return -1;
	sl = &s->slot[i];
	if (now_ns > s->now)
		s->now = now_ns;
	s->free_head = sl->q_next;
	memset(sl, 0, sizeof(*sl));
	sl->it.rec = *rec;
	sl->it.rec.stream %= DBTRACE_MAX_STREAMS;
	sl->it.rec.file %= DBTRACE_MAX_FILES;
	sl->it.role = role;
	sl->it.seq = s->seq++;
	sl->it.due_ns = due_ns;
	sl->it.depth = depth;
	sl->kind = dbsched_kind_of(rec->op, role);
	sl->used = 1;
	s->count++;

	sl->win_next = NIL;
	sl->win_prev = s->win_tail;
	if (s->win_tail != NIL)
		s->slot[s->win_tail].win_next = i;
	else
		s->win_head = i;
	s->win_tail = i;

	sl->f_next = NIL;
	sl->f_prev = f->tail;
	if (f->tail != NIL)
		s->slot[f->tail].f_next = i;
	else
		f->head = i;
	f->tail = i;

	sl->ns_next = NIL;
	if (sl->kind == DBSCHED_FILE_NS) {
		if (f->ns_tail != NIL)
			s->slot[f->ns_tail].ns_next = i;
		else
			f->ns_head = i;
		f->ns_tail = i;
	} else if (sl->kind == DBSCHED_DIR_NS) {
		if (s->g_ns_tail != NIL)
			s->slot[s->g_ns_tail].ns_next = i;
		else
			s->g_ns_head = i;
		s->g_ns_tail = i;
	}

	sl->q_next = NIL;
	if (st->q_tail != NIL)
		s->slot[st->q_tail].q_next = i;
	else
		st->q_head = i;
	st->q_tail = i;
	if (st->q_head == i)
		evaluate(s, rec->stream % DBTRACE_MAX_STREAMS);
	return i;
}

int dbsched_pick(struct dbsched *s, uint64_t now_ns, uint64_t *wake_ns)
{
	struct stream *st;
	struct slot *sl;
	uint32_t id;
	int i;

	if (now_ns > s->now)
		s->now = now_ns;
	while (s->ntimed && s->slot[s->st[s->timed[0]].q_head].it.due_ns <= s->now) {
		id = heap_pop(s, s->timed, &s->ntimed, 1);
		s->st[id].state = ST_READY;
		heap_push(s, s->ready, &s->nready, id, 0);
	}
	if (!s->nready) {
		*wake_ns = s->ntimed ? s->slot[s->st[s->timed[0]].q_head].it.due_ns : UINT64_MAX;
		return -1;
	}
	id = heap_pop(s, s->ready, &s->nready, 0);
	st = &s->st[id];
	i = st->q_head;
	sl = &s->slot[i];
	st->q_head = sl->q_next;
	if (st->q_head == NIL)
		st->q_tail = NIL;
	sl->issued = 1;
	st->inflight++;
	s->inflight++;
	if (st->inflight > s->stream_max)
		s->stream_max = st->inflight;
	if (sl->kind != DBSCHED_DATA)
		st->barrier = 1;
	evaluate(s, id);
	return i;
}

void dbsched_done(struct dbsched *s, int i, uint64_t now_ns)
{
	struct slot *sl = &s->slot[i];
	uint32_t id = sl->it.rec.stream;
	struct stream *st = &s->st[id];
	struct file *f = &s->fl[sl->it.rec.file];

	if (!sl->used || !sl->issued)
		return;
	if (now_ns > s->now)
		s->now = now_ns;
	st->inflight--;
	s->inflight--;
	if (sl->kind != DBSCHED_DATA)
		st->barrier = 0;

	if (sl->win_prev != NIL)
		s->slot[sl->win_prev].win_next = sl->win_next;
	else
		s->win_head = sl->win_next;
	if (sl->win_next != NIL)
		s->slot[sl->win_next].win_prev = sl->win_prev;
	else
		s->win_tail = sl->win_prev;

	if (sl->f_prev != NIL)
		s->slot[sl->f_prev].f_next = sl->f_next;
	else
		f->head = sl->f_next;
	if (sl->f_next != NIL)
		s->slot[sl->f_next].f_prev = sl->f_prev;
	else
		f->tail = sl->f_prev;

	/* a stream's namespace operations go one at a time, so they complete in order */
	if (sl->kind == DBSCHED_FILE_NS && f->ns_head == i) {
		f->ns_head = sl->ns_next;
		if (f->ns_head == NIL)
			f->ns_tail = NIL;
	} else if (sl->kind == DBSCHED_DIR_NS && s->g_ns_head == i) {
		s->g_ns_head = sl->ns_next;
		if (s->g_ns_head == NIL)
			s->g_ns_tail = NIL;
	}

	sl->used = 0;
	sl->q_next = s->free_head;
	s->free_head = i;
	s->count--;

	if (st->state == ST_SELF)
		evaluate(s, id);
	if (f->waiters != NIL)
		wake_list(s, &f->waiters);
	if (s->g_waiters != NIL)
		wake_list(s, &s->g_waiters);
}

void dbsched_restart(struct dbsched *s)
{
	s->seq = 0;
	s->now = 0;
}

uint64_t dbsched_scaled_ns(uint64_t units, uint64_t unit_ns, double speed)
{
	double d;

	if (speed == 1.0) {
		unsigned __int128 p = (unsigned __int128)units * unit_ns;

		return p >= DBSCHED_NS_MAX ? DBSCHED_NS_MAX : (uint64_t)p;
	}
	d = (double)units * (double)unit_ns / speed;
	/* a double as large as DBSCHED_NS_MAX is 2^64, which no uint64_t holds */
	return !(d < 18446744073709549568.0) ? DBSCHED_NS_MAX : (uint64_t)d;
}
