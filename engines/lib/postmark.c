/*
 * PostMark 1.53's operation stream, configuration language and report,
 * modelled without a filesystem (see postmark.h for the stream's shape).
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
/* Configuration                                                      */
/* ------------------------------------------------------------------ */

void pm_config_default(struct pm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size_lo = 500;
	cfg->size_hi = 10000;
	cfg->number = 500;
	cfg->transactions = 500;
	cfg->seed = 42;
	cfg->read_block = 512;
	cfg->write_block = 512;
	cfg->buffered = 1;
	cfg->bias_read = 5;
	cfg->bias_create = 5;
	cfg->subdirs = 0;
	cfg->nloc = 0;
	cfg->report = PM_REPORT_VERBOSE;
}

static int check_locations(const struct pm_config *cfg, char *err, size_t errlen)
{
	int i;

	if (cfg->nloc < 0 || cfg->nloc > PM_MAX_LOCATIONS) {
		pack_errf(err, errlen, "set location: %d locations, at most %d allowed",
		       cfg->nloc, PM_MAX_LOCATIONS);
		return -1;
	}
	for (i = 0; i < cfg->nloc; i++) {
		const struct pm_location *l = &cfg->loc[i];
		size_t n = strnlen(l->path, PM_LOCATION_LEN);

		if (n == 0 || n == PM_LOCATION_LEN) {
			pack_errf(err, errlen, "set location: location %d has %s path",
			       i + 1, n ? "an overlong" : "an empty");
			return -1;
		}
		if (l->weight < 1 || l->weight > PM_MAX_WEIGHT) {
			pack_errf(err, errlen, "set location: weight %d of '%s' is not in 1..%d",
			       l->weight, l->path, PM_MAX_WEIGHT);
			return -1;
		}
	}
	return 0;
}

static int check_bias(int v, const char *what, char *err, size_t errlen)
{
	if (v >= -1 && v <= 10)
		return 0;
	pack_errf(err, errlen, "set bias %s: %d is not in -1..10 (-1 disables)", what, v);
	return -1;
}

int pm_config_check(const struct pm_config *cfg, char *err, size_t errlen)
{
	if (cfg->size_lo <= 0 || cfg->size_hi <= 0) {
		pack_errf(err, errlen, "set size: sizes must be > 0 (got %d %d)",
		       cfg->size_lo, cfg->size_hi);
		return -1;
	}
	if (cfg->size_lo > cfg->size_hi) {
		pack_errf(err, errlen, "set size: low bound %d is above the high bound %d",
		       cfg->size_lo, cfg->size_hi);
		return -1;
	}
	if (cfg->size_hi > PM_MAX_SIZE) {
		pack_errf(err, errlen, "set size: high bound %d is above %d",
		       cfg->size_hi, PM_MAX_SIZE);
		return -1;
	}
	if (cfg->number <= 0 || cfg->number > PM_MAX_NUMBER) {
		pack_errf(err, errlen, "set number: %d files is not in 1..%d",
		       cfg->number, PM_MAX_NUMBER);
		return -1;
	}
	if (cfg->transactions <= 0) {
		pack_errf(err, errlen, "set transactions: %d is not > 0", cfg->transactions);
		return -1;
	}
	/* File names count created files in an int. */
	if (cfg->transactions > INT32_MAX - cfg->number) {
		pack_errf(err, errlen, "set transactions: number + transactions exceeds %d",
		       INT32_MAX);
		return -1;
	}
	if (cfg->seed == 0 || cfg->seed > INT32_MAX) {
		pack_errf(err, errlen, "set seed: %u is not in 1..%d", cfg->seed, INT32_MAX);
		return -1;
	}
	if (cfg->read_block <= 0) {
		pack_errf(err, errlen, "set read: block size %d is not > 0", cfg->read_block);
		return -1;
	}
	if (cfg->write_block <= 0) {
		pack_errf(err, errlen, "set write: block size %d is not > 0", cfg->write_block);
		return -1;
	}
	if (check_bias(cfg->bias_read, "read", err, errlen) ||
	    check_bias(cfg->bias_create, "create", err, errlen))
		return -1;
	if (cfg->subdirs < 0 || cfg->subdirs > PM_MAX_SUBDIRS) {
		pack_errf(err, errlen, "set subdirectories: %d is not in 0..%d",
		       cfg->subdirs, PM_MAX_SUBDIRS);
		return -1;
	}
	if (cfg->report != PM_REPORT_VERBOSE && cfg->report != PM_REPORT_TERSE) {
		pack_errf(err, errlen, "set report: unknown report kind %d", (int)cfg->report);
		return -1;
	}
	return check_locations(cfg, err, errlen);
}

/* ---- Line parser ---- */

#define LINE_MAX_LEN	1024
#define BLANKS		" \t"

struct line_ctx {
	int lineno;
	char *err;
	size_t errlen;
	const char *setting;	/* for messages, e.g. "set size" */
	char name[64];		/* room for a setting's name */
};

static int lerr(struct line_ctx *lc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Writes "line N: <setting>: <reason>" and returns -1. */
static int lerr(struct line_ctx *lc, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (lc->lineno > 0)
		pack_errf(lc->err, lc->errlen, "line %d: %s: %s", lc->lineno,
		       lc->setting, why);
	else
		pack_errf(lc->err, lc->errlen, "%s: %s", lc->setting, why);
	return -1;
}

/* Splits off the next blank-separated word of *s (NULL if none). */
static char *next_word(char **s)
{
	char *w = *s + strspn(*s, BLANKS);

	if (!*w) {
		*s = w;
		return NULL;
	}
	*s = w + strcspn(w, BLANKS);
	if (**s)
		*(*s)++ = '\0';
	return w;
}

/* A whole decimal integer in [lo, hi]. */
static int parse_int(struct line_ctx *lc, const char *w, long lo, long hi,
		     int *out)
{
	char *end;
	long v;

	if (!w)
		return lerr(lc, "a number is missing");
	errno = 0;
	v = strtol(w, &end, 10);
	if (end == w || *end)
		return lerr(lc, "'%s' is not a whole number", w);
	if (errno == ERANGE || v < lo || v > hi)
		return lerr(lc, "%s is not in %ld..%ld", w, lo, hi);
	*out = (int)v;
	return 0;
}

static int no_more(struct line_ctx *lc, char *rest)
{
	char *w = next_word(&rest);

	if (w)
		return lerr(lc, "unexpected '%s'", w);
	return 0;
}

/* One integer setting in [lo, hi] and nothing after it. */
static int set_int(struct line_ctx *lc, char *rest, long lo, long hi, int *out)
{
	if (parse_int(lc, next_word(&rest), lo, hi, out))
		return -1;
	return no_more(lc, rest);
}

/* `set size L [H]`: a missing, non-positive or smaller H means fixed L. */
static int set_size(struct line_ctx *lc, struct pm_config *cfg, char *rest)
{
	char *hw;
	int lo, hi;

	if (parse_int(lc, next_word(&rest), 1, PM_MAX_SIZE, &lo))
		return -1;
	hw = next_word(&rest);
	hi = lo;
	if (hw) {
		if (parse_int(lc, hw, INT32_MIN, PM_MAX_SIZE, &hi))
			return -1;
		if (hi < lo)
			hi = lo;
	}
	if (no_more(lc, rest))
		return -1;
	cfg->size_lo = lo;
	cfg->size_hi = hi;
	return 0;
}

static void trim_end(char *s)
{
	size_t n = strlen(s);

	while (n && strchr(BLANKS, s[n - 1]))
		s[--n] = '\0';
}

/* Removes location @path (the first one so named). */
static int remove_location(struct line_ctx *lc, struct pm_config *cfg,
			   const char *path)
{
	int i;

	for (i = 0; i < cfg->nloc; i++) {
		if (strcmp(cfg->loc[i].path, path))
			continue;
		memmove(&cfg->loc[i], &cfg->loc[i + 1],
			(cfg->nloc - i - 1) * sizeof(cfg->loc[0]));
		cfg->nloc--;
		return 0;
	}
	return lerr(lc, "no location '%s' to remove", path);
}

/* "P" or "P W": the last blank-separated word, if any, is the weight. */
static int add_location(struct line_ctx *lc, struct pm_config *cfg, char *arg)
{
	char *split = arg + strcspn(arg, BLANKS);
	int weight = 1;
	size_t n;

	if (*split) {
		char *w = strrchr(arg, ' ');
		char *t = strrchr(arg, '\t');

		if (!w || (t && t > w))
			w = t;
		*w++ = '\0';
		if (parse_int(lc, w, 1, PM_MAX_WEIGHT, &weight))
			return -1;
		trim_end(arg);
	}
	n = strlen(arg);
	if (!n)
		return lerr(lc, "no directory given");
	if (n >= PM_LOCATION_LEN)
		return lerr(lc, "path longer than %d bytes", PM_LOCATION_LEN - 1);
	if (cfg->nloc == PM_MAX_LOCATIONS)
		return lerr(lc, "more than %d locations", PM_MAX_LOCATIONS);
	memcpy(cfg->loc[cfg->nloc].path, arg, n + 1);
	cfg->loc[cfg->nloc++].weight = weight;
	return 0;
}

static int set_location(struct line_ctx *lc, struct pm_config *cfg, char *rest)
{
	char *arg = rest + strspn(rest, BLANKS);

	switch (*arg) {
	case '\0':
		return lerr(lc, "no directory given");
	case '+':
		return add_location(lc, cfg, arg + 1);
	case '-':
		return remove_location(lc, cfg, arg + 1);
	default:
		cfg->nloc = 0;
		return add_location(lc, cfg, arg);
	}
}

/* One of two words: @v gets 1 for @yes, 0 for @no. */
static int set_choice(struct line_ctx *lc, char *rest, const char *yes,
		      const char *no, int *v)
{
	char *w = next_word(&rest);

	if (w && !strcmp(w, yes))
		*v = 1;
	else if (w && !strcmp(w, no))
		*v = 0;
	else
		return lerr(lc, "expected '%s' or '%s'", yes, no);
	return no_more(lc, rest);
}

static int set_bias(struct line_ctx *lc, struct pm_config *cfg, char *rest)
{
	char *which = next_word(&rest);

	if (which && !strcmp(which, "read")) {
		lc->setting = "set bias read";
		return set_int(lc, rest, -1, 10, &cfg->bias_read);
	}
	if (which && !strcmp(which, "create")) {
		lc->setting = "set bias create";
		return set_int(lc, rest, -1, 10, &cfg->bias_create);
	}
	return lerr(lc, "expected 'read' or 'create'");
}

/* `set <what> ...` into @cfg. */
static int parse_set(struct line_ctx *lc, struct pm_config *cfg, char *rest)
{
	char *what = next_word(&rest);
	int v;

	if (!what)
		return lerr(lc, "which setting?");
	snprintf(lc->name, sizeof(lc->name), "set %.50s", what);
	lc->setting = lc->name;
	if (!strcmp(what, "size"))
		return set_size(lc, cfg, rest);
	if (!strcmp(what, "number"))
		return set_int(lc, rest, 1, PM_MAX_NUMBER, &cfg->number);
	if (!strcmp(what, "seed")) {
		if (set_int(lc, rest, 1, INT32_MAX, &v))
			return -1;
		cfg->seed = (uint32_t)v;
		return 0;
	}
	if (!strcmp(what, "transactions"))
		return set_int(lc, rest, 1, INT32_MAX, &cfg->transactions);
	if (!strcmp(what, "subdirectories"))
		return set_int(lc, rest, 1, PM_MAX_SUBDIRS, &cfg->subdirs);
	if (!strcmp(what, "read"))
		return set_int(lc, rest, 1, INT32_MAX, &cfg->read_block);
	if (!strcmp(what, "write"))
		return set_int(lc, rest, 1, INT32_MAX, &cfg->write_block);
	if (!strcmp(what, "location"))
		return set_location(lc, cfg, rest);
	if (!strcmp(what, "buffering"))
		return set_choice(lc, rest, "true", "false", &cfg->buffered);
	if (!strcmp(what, "bias"))
		return set_bias(lc, cfg, rest);
	if (!strcmp(what, "report")) {
		if (set_choice(lc, rest, "terse", "verbose", &v))
			return -1;
		cfg->report = v ? PM_REPORT_TERSE : PM_REPORT_VERBOSE;
		return 0;
	}
	return lerr(lc, "unknown setting");
}

static enum pm_cmd parse_words(struct line_ctx *lc, struct pm_config *cfg,
			       char *s)
{
	char *cmd = next_word(&s);

	if (!cmd || cmd[0] == '#')
		return PM_CMD_NONE;
	lc->setting = cmd;
	if (!strcmp(cmd, "set"))
		return parse_set(lc, cfg, s) ? PM_CMD_ERROR : PM_CMD_NONE;
	/* run and show may name a file for the report; the file is the caller's. */
	if (!strcmp(cmd, "run"))
		return PM_CMD_RUN;
	if (!strcmp(cmd, "show"))
		return PM_CMD_SHOW;
	if (!strcmp(cmd, "help") || !strcmp(cmd, "?"))
		return PM_CMD_NONE;
	if (!strcmp(cmd, "quit") || !strcmp(cmd, "exit"))
		return no_more(lc, s) ? PM_CMD_ERROR : PM_CMD_QUIT;
	if (!strcmp(cmd, "load"))
		lerr(lc, "not supported here, put the file's lines in its place");
	else if (cmd[0] == '!')
		lerr(lc, "shell escapes are not supported");
	else
		lerr(lc, "unknown command");
	return PM_CMD_ERROR;
}

enum pm_cmd pm_config_parse_line(struct pm_config *cfg, const char *line,
				 int lineno, char *err, size_t errlen)
{
	struct line_ctx lc = {
		.lineno = lineno, .err = err, .errlen = errlen, .setting = "config",
	};
	char buf[LINE_MAX_LEN + 2];
	struct pm_config work;
	enum pm_cmd r;
	size_t n = strlen(line);

	if (n > 0 && line[n - 1] == '\n')
		n--;
	if (n > 0 && line[n - 1] == '\r')
		n--;
	if (n > LINE_MAX_LEN) {
		lerr(&lc, "line longer than %d bytes", LINE_MAX_LEN);
		return PM_CMD_ERROR;
	}
	memcpy(buf, line, n);
	buf[n] = '\0';
	trim_end(buf);

	/* Work on a copy so a bad line leaves the caller's settings alone. */
	work = *cfg;
	r = parse_words(&lc, &work, buf);
	if (r != PM_CMD_ERROR)
		*cfg = work;
	return r;
}

/*
 * The engine's pm_location: entries separated by ':', each a directory with
 * an optional "@WEIGHT"; a backslash escapes the next character.
 */
int pm_parse_locations(struct pm_config *out, const char *spec, char *err, size_t errlen)
{
	const char *s = spec ? spec : "";
	struct pm_config copy = *out, *cfg = &copy;

	cfg->nloc = 0;
	while (*s) {
		char path[PM_LOCATION_LEN + 16];
		size_t n = 0;
		long weight = 1;
		char *at = NULL;
		int last_escaped_at = -1;

		while (*s && *s != ':') {
			if (*s == '\\' && s[1]) {
				s++;
				if (*s == '@')
					last_escaped_at = (int)n;
			}
			if (n + 1 >= sizeof(path)) {
				pack_errf(err, errlen, "pm_location: path longer than %d bytes",
					  PM_LOCATION_LEN - 1);
				return -1;
			}
			path[n++] = *s++;
		}
		path[n] = '\0';
		if (*s == ':')
			s++;
		if (!n)
			continue;
		at = strrchr(path, '@');
		if (at && at - path != last_escaped_at && at[1]) {
			char *end;

			if (strspn(at + 1, "0123456789") != strlen(at + 1)) {
				pack_errf(err, errlen, "pm_location: weight '%s' of %.*s is not a number from 1 to %d",
					  at + 1, (int)(at - path), path, PM_MAX_WEIGHT);
				return -1;
			}
			errno = 0;
			weight = strtol(at + 1, &end, 10);
			if (errno || weight < 1 || weight > PM_MAX_WEIGHT) {
				pack_errf(err, errlen, "pm_location: weight %s of %.*s is out of range 1..%d",
					  at + 1, (int)(at - path), path, PM_MAX_WEIGHT);
				return -1;
			}
			*at = '\0';
		} else if (at && at - path != last_escaped_at && !at[1]) {
			pack_errf(err, errlen, "pm_location: %s: '@' without a weight", path);
			return -1;
		}
		if (!*path) {
			pack_errf(err, errlen, "pm_location: a weight without a directory");
			return -1;
		}
		if (cfg->nloc == PM_MAX_LOCATIONS) {
			pack_errf(err, errlen, "pm_location: more than %d locations", PM_MAX_LOCATIONS);
			return -1;
		}
		if (strlen(path) >= PM_LOCATION_LEN) {
			pack_errf(err, errlen, "pm_location: path longer than %d bytes", PM_LOCATION_LEN - 1);
			return -1;
		}
		strcpy(cfg->loc[cfg->nloc].path, path);
		cfg->loc[cfg->nloc].weight = (int)weight;
		cfg->nloc++;
	}
	*out = copy;
	return 0;
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
