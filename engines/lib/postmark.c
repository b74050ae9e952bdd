/*
 * PostMark 1.53's operation stream and report, modelled without a
 * filesystem (see postmark.h for the stream's shape); its configuration
 * language is pmconfig.c.
 *
 * Everything that decides which operation comes next follows PostMark's
 * observable behaviour draw for draw, because a single extra or missing
 * generator draw changes every later file choice.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "postmark.h"

/* ------------------------------------------------------------------ */
/* Generator                                                          */
/* ------------------------------------------------------------------ */

#define MT_SHIFT	397
#define MT_TWIST	0x9908b0dfu
#define MT_HIGH		0x80000000u
#define MT_LOW		0x7fffffffu

void pm_mt_seed(struct pm_mt *g, uint32_t seed)
{
	uint32_t x = seed;
	int i;

	/*
	 * The 1999 seeding: each state word is the top 16 bits of two
	 * consecutive values of x -> 69069x + 1, high half first. Arithmetic
	 * mod 2^32 matches PostMark's 64-bit unsigned long, which only ever
	 * looks at the low 32 bits.
	 */
	for (i = 0; i < PM_MT_WORDS; i++) {
		g->s[i] = x & 0xffff0000u;
		x = 69069u * x + 1;
		g->s[i] |= x >> 16;
		x = 69069u * x + 1;
	}
	g->next = PM_MT_WORDS;
}

static uint32_t mt_mix(uint32_t upper, uint32_t lower, uint32_t far)
{
	uint32_t y = (upper & MT_HIGH) | (lower & MT_LOW);

	return far ^ (y >> 1) ^ ((y & 1) ? MT_TWIST : 0);
}

/* Regenerates all 624 words; later words use already regenerated ones. */
static void mt_refill(struct pm_mt *g)
{
	int i;

	for (i = 0; i < PM_MT_WORDS; i++) {
		int j = (i + 1) % PM_MT_WORDS;
		int k = (i + MT_SHIFT) % PM_MT_WORDS;

		g->s[i] = mt_mix(g->s[i], g->s[j], g->s[k]);
	}
	g->next = 0;
}

uint32_t pm_mt_next(struct pm_mt *g)
{
	uint32_t y;

	if (g->next >= PM_MT_WORDS)
		mt_refill(g);
	y = g->s[g->next++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

uint32_t pm_rnd(struct pm_mt *g, int x)
{
	/* No draw at all for an empty range: a fixed size costs nothing. */
	if (x <= 0)
		return 0;
	return pm_mt_next(g) % (uint32_t)x;
}

/* ------------------------------------------------------------------ */
/* Simulation                                                         */
/* ------------------------------------------------------------------ */

/*
 * A table slot: size 0 means free (PostMark's own convention; real files
 * are never empty because size_lo > 0). place = location << 24 | subdir.
 */
struct pm_slot {
	int32_t size;
	int32_t name;
	uint32_t place;
};

#define PLACE_SUBDIR_BITS	24

enum sim_state {
	ST_START,
	ST_CREATE,
	ST_TX_BEGIN,
	ST_TX_FIRST,
	ST_TX_SECOND,
	ST_TX_END,
	ST_DELETE_PHASE,
	ST_DELETE,
	ST_END,
};

struct pm_sim {
	struct pm_config cfg;
	struct pm_mt g;
	char *text;
	size_t textlen;
	struct pm_slot *slot;
	int nslots;
	int cursor;		/* where the next create looks first */
	uint64_t *freemap;	/* bit s: slot s is free (its size is 0) */
	uint64_t *freesum;	/* bit w: freemap[w] has a free slot */
	int nsum;		/* words of freesum */
	int live;
	int total_weight;
	int i;			/* create count / delete scan position */
	int tx;
	int stop_tx;		/* pm_sim_stop_transactions() was called */
	enum sim_state state;
	struct pm_counters c;
	pm_size_fn sizer;	/* NULL: PostMark's uniform size draw */
	void *sizer_ctx;
};

/*
 * Slot @s marked free or in use in the bitmaps that find_free_slot() looks
 * through: PostMark's first free slot is then two word scans away, not a
 * walk over every slot in use (6,000 instructions a transaction of the 000
 * article's table once the creates wrap around).
 */
static void slot_mark(struct pm_sim *sim, int s, int free)
{
	uint64_t bit = 1ULL << (s & 63);
	int w = s >> 6;

	if (free) {
		sim->freemap[w] |= bit;
		sim->freesum[w >> 6] |= 1ULL << (w & 63);
	} else if (!(sim->freemap[w] &= ~bit)) {
		sim->freesum[w >> 6] &= ~(1ULL << (w & 63));
	}
}

struct pm_sim *pm_sim_new(const struct pm_config *cfg, char *err, size_t errlen)
{
	struct pm_sim *sim;
	size_t i;
	int l;

	if (pm_config_check(cfg, err, errlen))
		return NULL;
	sim = calloc(1, sizeof(*sim));
	if (!sim)
		goto nomem;
	sim->cfg = *cfg;
	sim->nslots = 2 * cfg->number;
	sim->textlen = 2 * (size_t)cfg->size_hi;
	sim->slot = calloc(sim->nslots, sizeof(sim->slot[0]));
	sim->text = malloc(sim->textlen);
	sim->nsum = sim->nslots / 4096 + 1;
	sim->freemap = calloc((size_t)sim->nsum * 64, sizeof(uint64_t));
	sim->freesum = calloc(sim->nsum, sizeof(uint64_t));
	if (!sim->slot || !sim->text || !sim->freemap || !sim->freesum)
		goto nomem;
	for (i = 0; i < (size_t)sim->nslots; i++)
		slot_mark(sim, i, 1);
	for (l = 0; l < cfg->nloc; l++)
		sim->total_weight += cfg->loc[l].weight;

	/* Seeding and the text come first: they fix every later draw. */
	pm_mt_seed(&sim->g, cfg->seed);
	for (i = 0; i < sim->textlen; i++)
		sim->text[i] = (char)(32 + pm_rnd(&sim->g, 95));
	sim->state = ST_START;
	return sim;
nomem:
	pack_errf(err, errlen, "set number: no memory for %d files of up to %d bytes",
	       cfg->number, cfg->size_hi);
	pm_sim_free(sim);
	return NULL;
}

void pm_sim_free(struct pm_sim *sim)
{
	if (!sim)
		return;
	free(sim->slot);
	free(sim->text);
	free(sim->freemap);
	free(sim->freesum);
	free(sim);
}

const char *pm_sim_text(const struct pm_sim *sim, size_t *len)
{
	if (len)
		*len = sim->textlen;
	return sim->text;
}

const struct pm_counters *pm_sim_counters(const struct pm_sim *sim)
{
	return &sim->c;
}

const struct pm_config *pm_sim_config(const struct pm_sim *sim)
{
	return &sim->cfg;
}

int pm_sim_live(const struct pm_sim *sim)
{
	return sim->live;
}

void pm_sim_set_sizer(struct pm_sim *sim, pm_size_fn fn, void *ctx)
{
	sim->sizer = fn;
	sim->sizer_ctx = ctx;
}

void pm_sim_stop_transactions(struct pm_sim *sim)
{
	sim->stop_tx = 1;
}

int pm_sim_nslots(const struct pm_sim *sim)
{
	return sim->nslots;
}

static void op_init(struct pm_sim *sim, struct pm_op *op, enum pm_op_kind kind,
		    enum pm_phase phase)
{
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->phase = phase;
	op->tx = phase == PM_PHASE_TRANSACTIONS ? sim->tx : -1;
	op->slot = -1;
	op->loc = -1;
	op->subdir = -1;
}

/* Fills in where slot @s's file lives. */
static void op_file(struct pm_sim *sim, struct pm_op *op, int s)
{
	const struct pm_slot *f = &sim->slot[s];

	op->slot = s;
	op->name = f->name;
	op->size = f->size;
	if (sim->cfg.nloc > 0)
		op->loc = f->place >> PLACE_SUBDIR_BITS;
	if (sim->cfg.subdirs > 1)
		op->subdir = f->place & ((1u << PLACE_SUBDIR_BITS) - 1);
}

int pm_sim_slot(struct pm_sim *sim, int s, struct pm_op *op)
{
	if (s < 0 || s >= sim->nslots || sim->slot[s].size == 0)
		return 0;
	op_init(sim, op, PM_OP_DELETE, PM_PHASE_DELETE);
	op_file(sim, op, s);
	return 1;
}

/* The cursor slot if free, else the first free slot; -1 if the table is full. */
static int find_free_slot(struct pm_sim *sim)
{
	int i, w, s;

	if (sim->cursor < sim->nslots && sim->slot[sim->cursor].size == 0)
		return sim->cursor++;
	for (i = 0; i < sim->nsum; i++) {
		if (sim->freesum[i]) {
			w = i * 64 + __builtin_ctzll(sim->freesum[i]);
			s = w * 64 + __builtin_ctzll(sim->freemap[w]);
			sim->cursor = s + 1;
			return s;
		}
	}
	return -1;
}

/* Draws slots until a live one comes up (callers know one exists). */
static int pick_live(struct pm_sim *sim)
{
	int s;

	do
		s = pm_rnd(&sim->g, sim->nslots);
	while (sim->slot[s].size == 0);
	return s;
}

/* The location a draw in [0, total weight) falls into. */
static int weighted_location(const struct pm_sim *sim, int r)
{
	int l;

	for (l = 0; l < sim->cfg.nloc - 1; l++) {
		r -= sim->cfg.loc[l].weight;
		if (r < 0)
			break;
	}
	return l;
}

static void do_create(struct pm_sim *sim, struct pm_op *op, enum pm_phase ph)
{
	const struct pm_config *cfg = &sim->cfg;
	int s = find_free_slot(sim);
	uint32_t loc = 0, sub = 0;
	struct pm_slot *f;

	op_init(sim, op, PM_OP_CREATE, ph);
	if (s < 0) {
		op->flags = PM_OPF_TABLE_FULL;
		return;
	}
	/* Draw order: location, subdirectory, size. */
	if (cfg->nloc > 1)
		loc = weighted_location(sim, pm_rnd(&sim->g, sim->total_weight));
	if (cfg->subdirs > 1)
		sub = pm_rnd(&sim->g, cfg->subdirs);
	f = &sim->slot[s];
	slot_mark(sim, s, 0);
	f->name = ++sim->c.created;
	f->place = loc << PLACE_SUBDIR_BITS | sub;
	if (sim->sizer) {
		uint32_t v = sim->sizer(sim->sizer_ctx, f->name);

		/* size 0 marks a free slot: a created file has at least 1 byte */
		f->size = v < 1 ? 1 : v > PM_MAX_SIZE ? PM_MAX_SIZE : (int32_t)v;
	} else {
		f->size = cfg->size_lo + pm_rnd(&sim->g, cfg->size_hi - cfg->size_lo);
	}
	sim->live++;
	sim->c.bytes_written += (float)f->size;
	op_file(sim, op, s);
}

static void do_read_or_append(struct pm_sim *sim, struct pm_op *op)
{
	int reading = (int)pm_rnd(&sim->g, 10) < sim->cfg.bias_read;
	int s = pick_live(sim);
	struct pm_slot *f = &sim->slot[s];
	int add;

	op_init(sim, op, reading ? PM_OP_READ : PM_OP_APPEND,
		PM_PHASE_TRANSACTIONS);
	op_file(sim, op, s);
	if (reading) {
		sim->c.read++;
		sim->c.bytes_read += (float)f->size;
		return;
	}
	if (f->size >= sim->cfg.size_hi) {
		op->size = 0;
		op->flags = PM_OPF_FILE_FULL;
		return;
	}
	add = pm_rnd(&sim->g, sim->cfg.size_hi - f->size) + 1;
	f->size += add;
	op->size = add;
	sim->c.appended++;
	sim->c.bytes_written += (float)add;
}

static void do_delete(struct pm_sim *sim, struct pm_op *op, int s,
		      enum pm_phase ph)
{
	op_init(sim, op, PM_OP_DELETE, ph);
	op_file(sim, op, s);
	sim->slot[s].size = 0;
	slot_mark(sim, s, 1);
	sim->live--;
	sim->c.deleted++;
}

static void do_create_or_delete(struct pm_sim *sim, struct pm_op *op)
{
	if ((int)pm_rnd(&sim->g, 10) < sim->cfg.bias_create)
		do_create(sim, op, PM_PHASE_TRANSACTIONS);
	else
		do_delete(sim, op, pick_live(sim), PM_PHASE_TRANSACTIONS);
}

/* Hands out a phase marker and moves to @next. */
static int phase(struct pm_sim *sim, struct pm_op *op, enum pm_phase ph,
		 enum sim_state next)
{
	op_init(sim, op, PM_OP_PHASE, ph);
	op->tx = -1;
	sim->state = next;
	return 1;
}

/* The transaction phase's states; 0 when it has nothing more to say. */
static int next_tx(struct pm_sim *sim, struct pm_op *op)
{
	switch (sim->state) {
	case ST_TX_BEGIN:
		if (sim->tx == sim->cfg.transactions || sim->stop_tx)
			return 0;
		if (sim->live == 0) {
			/* PostMark gives up here, before any draw. */
			op_init(sim, op, PM_OP_OUT_OF_FILES, PM_PHASE_TRANSACTIONS);
			sim->c.out_of_files = 1;
			sim->state = ST_DELETE_PHASE;
			return 1;
		}
		op_init(sim, op, PM_OP_TX_BEGIN, PM_PHASE_TRANSACTIONS);
		sim->state = ST_TX_FIRST;
		return 1;
	case ST_TX_FIRST:
		sim->state = ST_TX_SECOND;
		if (sim->cfg.bias_read == -1)
			return next_tx(sim, op);
		do_read_or_append(sim, op);
		return 1;
	case ST_TX_SECOND:
		sim->state = ST_TX_END;
		if (sim->cfg.bias_create == -1)
			return next_tx(sim, op);
		do_create_or_delete(sim, op);
		return 1;
	case ST_TX_END:
		op_init(sim, op, PM_OP_TX_END, PM_PHASE_TRANSACTIONS);
		sim->tx++;
		sim->c.transactions_done++;
		sim->state = ST_TX_BEGIN;
		return 1;
	default:
		return 0;
	}
}

int pm_sim_next(struct pm_sim *sim, struct pm_op *op)
{
	switch (sim->state) {
	case ST_START:
		sim->i = 0;
		return phase(sim, op, PM_PHASE_CREATE, ST_CREATE);
	case ST_CREATE:
		if (sim->i == sim->cfg.number)
			return phase(sim, op, PM_PHASE_TRANSACTIONS, ST_TX_BEGIN);
		sim->i++;
		do_create(sim, op, PM_PHASE_CREATE);
		sim->c.created_alone++;
		return 1;
	case ST_TX_BEGIN:
	case ST_TX_FIRST:
	case ST_TX_SECOND:
	case ST_TX_END:
		if (next_tx(sim, op))
			return 1;
		/* All transactions are done. */
		/* fall through */
	case ST_DELETE_PHASE:
		sim->i = 0;
		return phase(sim, op, PM_PHASE_DELETE, ST_DELETE);
	case ST_DELETE:
		while (sim->i < sim->nslots && sim->slot[sim->i].size == 0)
			sim->i++;
		if (sim->i == sim->nslots)
			return phase(sim, op, PM_PHASE_DONE, ST_END);
		do_delete(sim, op, sim->i++, PM_PHASE_DELETE);
		sim->c.deleted_alone++;
		return 1;
	case ST_END:
	default:
		return 0;
	}
}

/* ------------------------------------------------------------------ */
/* Reports                                                            */
/* ------------------------------------------------------------------ */

const char pm_out_of_files_msg[] =
	"out of files!\n"
	"For this workload, either increase the number of files or\n"
	"decrease the number of transactions.\n";

/* snprintf() into a buffer a piece at a time, counting what did not fit. */
struct out {
	char *buf;
	size_t len;
	size_t pos;
	int bad;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	size_t room = o->pos < o->len ? o->len - o->pos : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->pos : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		o->bad = 1;
	else
		o->pos += n;
}

/*
 * The four intervals of a report in seconds. Whole-second mode (PostMark's
 * own): differences of time() readings, 0 counted as 1, rates truncated by
 * integer division. High-resolution mode: nanosecond intervals, rates are the
 * truncated (verbose) or "%.2f" (terse) real quotients, and the seconds
 * PostMark prints as integers are rounded.
 */
struct spans {
	int whole;
	double all, tx, crt, del;
};

/* An interval in seconds; PostMark turns 0 into 1 to keep divisions legal. */
static long long secs(time_t to, time_t from)
{
	long long d = (long long)to - (long long)from;

	return d ? d : 1;
}

static struct spans whole_spans(const struct pm_times *t)
{
	struct spans sp = { .whole = 1 };

	sp.all = (double)secs(t->end, t->start);
	sp.tx = (double)secs(t->tx_end, t->tx_start);
	sp.crt = (double)secs(t->tx_start, t->start);
	sp.del = (double)secs(t->end, t->tx_end);
	return sp;
}

/* A nanosecond interval in seconds; never 0 so that rates stay finite. */
static double hr_secs(uint64_t ns)
{
	return (double)(ns ? ns : 1) / 1e9;
}

/* An interval printed where PostMark prints whole seconds. */
static int shown_secs(const struct spans *sp, double s)
{
	return sp->whole ? (int)s : (int)(s + 0.5);
}

/*
 * A truncated rate. PostMark prints these long quotients with "%d", so only
 * the low 32 bits show (the int conversion does the same).
 */
static int irate(const struct spans *sp, long long n, double s)
{
	if (sp->whole)
		return (int)(n / (long long)s);
	return (int)(long long)((double)n / s);
}

/*
 * A byte amount as PostMark words it, computed in single precision as its
 * float counters are: megabytes only strictly above 1 MiB, kilobytes unless
 * the amount is zero.
 */
static void put_bytes(struct out *o, float v)
{
	float mb = v / 1048576.0f, kb = v / 1024.0f;

	if (mb > 1.0f)
		put(o, "%.2f megabytes", (double)mb);
	else if (kb != 0.0f)
		put(o, "%.2f kilobytes", (double)kb);
	else
		put(o, "%f bytes", (double)v);
}

static float per_sec(const struct spans *sp, float v, double s)
{
	return sp->whole ? v / (float)s : (float)((double)v / s);
}

static void verbose(struct out *o, const struct pm_counters *c, const struct spans *sp)
{
	int tdone = c->transactions_done;

	put(o, "Time:\n\t%d seconds total\n", shown_secs(sp, sp->all));
	put(o, "\t%d seconds of transactions (%d per second)\n", shown_secs(sp, sp->tx),
	    irate(sp, tdone, sp->tx));
	put(o, "\nFiles:\n\t%d created (%d per second)\n", c->created,
	    irate(sp, c->created, sp->all));
	/* PostMark keeps these two intervals in an int: same truncation */
	put(o, "\t\tCreation alone: %d files (%d per second)\n",
	    c->created_alone, irate(sp, c->created_alone, sp->crt));
	put(o, "\t\tMixed with transactions: %d files (%d per second)\n",
	    c->created - c->created_alone,
	    irate(sp, c->created - c->created_alone, sp->tx));
	put(o, "\t%d read (%d per second)\n", c->read, irate(sp, c->read, sp->tx));
	put(o, "\t%d appended (%d per second)\n", c->appended,
	    irate(sp, c->appended, sp->tx));
	put(o, "\t%d deleted (%d per second)\n", c->deleted,
	    irate(sp, c->deleted, sp->all));
	put(o, "\t\tDeletion alone: %d files (%d per second)\n",
	    c->deleted_alone, irate(sp, c->deleted_alone, sp->del));
	put(o, "\t\tMixed with transactions: %d files (%d per second)\n",
	    c->deleted - c->deleted_alone,
	    irate(sp, c->deleted - c->deleted_alone, sp->tx));
	put(o, "\nData:\n\t");
	put_bytes(o, c->bytes_read);
	put(o, " read (");
	put_bytes(o, per_sec(sp, c->bytes_read, sp->all));
	put(o, " per second)\n\t");
	put_bytes(o, c->bytes_written);
	put(o, " written (");
	put_bytes(o, per_sec(sp, c->bytes_written, sp->all));
	put(o, " per second)\n");
}

/* A float quotient as the terse report prints it. */
static void put_q(struct out *o, const struct spans *sp, float n, double s, const char *sep)
{
	put(o, "%.2f%s", (double)per_sec(sp, n, s), sep);
}

static void terse(struct out *o, const struct pm_counters *c, const struct spans *sp)
{
	put(o, "%d %d ", shown_secs(sp, sp->all), shown_secs(sp, sp->tx));
	put_q(o, sp, (float)c->transactions_done, sp->tx, " ");
	put_q(o, sp, (float)c->created, sp->all, " ");
	put_q(o, sp, (float)c->created_alone, sp->crt, " ");
	put_q(o, sp, (float)(c->created - c->created_alone), sp->tx, " ");
	put_q(o, sp, (float)c->read, sp->tx, " ");
	put_q(o, sp, (float)c->appended, sp->tx, " ");
	put_q(o, sp, (float)c->deleted, sp->all, " ");
	put_q(o, sp, (float)c->deleted_alone, sp->del, " ");
	put_q(o, sp, (float)(c->deleted - c->deleted_alone), sp->tx, " ");
	put_q(o, sp, c->bytes_read, sp->all, " ");
	put_q(o, sp, c->bytes_written, sp->all, "\n");
}

static int format(char *buf, size_t len, const struct pm_config *cfg,
		  const struct pm_counters *c, const struct spans *sp)
{
	struct out o = { .buf = buf, .len = len };

	if (buf && len)
		buf[0] = '\0';
	if (cfg->report == PM_REPORT_TERSE)
		terse(&o, c, sp);
	else
		verbose(&o, c, sp);
	return o.bad ? -1 : (int)o.pos;
}

int pm_report_format(char *buf, size_t len, const struct pm_config *cfg,
		     const struct pm_counters *c, const struct pm_times *t)
{
	struct spans sp = whole_spans(t);

	return format(buf, len, cfg, c, &sp);
}

int pm_report_format_ns(char *buf, size_t len, const struct pm_config *cfg,
			const struct pm_counters *c, const struct pm_times_ns *t)
{
	struct spans sp = { .whole = 0 };

	sp.all = hr_secs(t->end - t->start);
	sp.tx = hr_secs(t->tx_end - t->tx_start);
	sp.crt = hr_secs(t->tx_start - t->start);
	sp.del = hr_secs(t->end - t->tx_end);
	return format(buf, len, cfg, c, &sp);
}

int pm_report_write(FILE *fp, const struct pm_config *cfg,
		    const struct pm_counters *c, const struct pm_times *t)
{
	char buf[4096];
	int n = pm_report_format(buf, sizeof(buf), cfg, c, t);

	if (n < 0 || (size_t)n >= sizeof(buf))
		return -1;
	return fputs(buf, fp) < 0 ? -1 : 0;
}
