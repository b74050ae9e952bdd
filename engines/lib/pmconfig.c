/*
 * PostMark 1.53's configuration (postmark.h): the defaults, the checks a
 * run's settings pass, the .pmrc language's lines as PostMark reads them,
 * and the postmark engine's pm_location list.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "postmark.h"

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
		pack_errf(err, errlen, "set location: %d locations, at most %d allowed", cfg->nloc,
			  PM_MAX_LOCATIONS);
		return -1;
	}
	for (i = 0; i < cfg->nloc; i++) {
		const struct pm_location *l = &cfg->loc[i];
		size_t n = strnlen(l->path, PM_LOCATION_LEN);

		if (n == 0 || n == PM_LOCATION_LEN) {
			pack_errf(err, errlen, "set location: location %d has %s path", i + 1,
				  n ? "an overlong" : "an empty");
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
		pack_errf(err, errlen, "set size: sizes must be > 0 (got %d %d)", cfg->size_lo,
			  cfg->size_hi);
		return -1;
	}
	if (cfg->size_lo > cfg->size_hi) {
		pack_errf(err, errlen, "set size: low bound %d is above the high bound %d",
			  cfg->size_lo, cfg->size_hi);
		return -1;
	}
	if (cfg->size_hi > PM_MAX_SIZE) {
		pack_errf(err, errlen, "set size: high bound %d is above %d", cfg->size_hi,
			  PM_MAX_SIZE);
		return -1;
	}
	if (cfg->number <= 0 || cfg->number > PM_MAX_NUMBER) {
		pack_errf(err, errlen, "set number: %d files is not in 1..%d", cfg->number,
			  PM_MAX_NUMBER);
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
		pack_errf(err, errlen, "set subdirectories: %d is not in 0..%d", cfg->subdirs,
			  PM_MAX_SUBDIRS);
		return -1;
	}
	if (cfg->report != PM_REPORT_VERBOSE && cfg->report != PM_REPORT_TERSE) {
		pack_errf(err, errlen, "set report: unknown report kind %d", (int)cfg->report);
		return -1;
	}
	return check_locations(cfg, err, errlen);
}

/* ---- Line parser ---- */

#define LINE_MAX_LEN 1024
#define BLANKS	     " \t"

struct line_ctx {
	int lineno;
	char *err;
	size_t errlen;
	const char *setting; /* for messages, e.g. "set size" */
	char name[64];	     /* room for a setting's name */
};

static int lerr(struct line_ctx *lc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes "line N: <setting>: <reason>" and returns -1. */
static int lerr(struct line_ctx *lc, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (lc->lineno > 0)
		pack_errf(lc->err, lc->errlen, "line %d: %s: %s", lc->lineno, lc->setting, why);
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
static int parse_int(struct line_ctx *lc, const char *w, long lo, long hi, int *out)
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
static int remove_location(struct line_ctx *lc, struct pm_config *cfg, const char *path)
{
	int i;

	for (i = 0; i < cfg->nloc; i++) {
		if (strcmp(cfg->loc[i].path, path))
			continue;
		memmove(&cfg->loc[i], &cfg->loc[i + 1], (cfg->nloc - i - 1) * sizeof(cfg->loc[0]));
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
static int set_choice(struct line_ctx *lc, char *rest, const char *yes, const char *no, int *v)
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

static enum pm_cmd parse_words(struct line_ctx *lc, struct pm_config *cfg, char *s)
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

enum pm_cmd pm_config_parse_line(struct pm_config *cfg, const char *line, int lineno, char *err,
				 size_t errlen)
{
	struct line_ctx lc = {
		.lineno = lineno,
		.err = err,
		.errlen = errlen,
		.setting = "config",
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
				pack_errf(
					err, errlen,
					"pm_location: weight '%s' of %.*s is not a number from 1 to %d",
					at + 1, (int)(at - path), path, PM_MAX_WEIGHT);
				return -1;
			}
			errno = 0;
			weight = strtol(at + 1, &end, 10);
			if (errno || weight < 1 || weight > PM_MAX_WEIGHT) {
				pack_errf(err, errlen,
					  "pm_location: weight %s of %.*s is out of range 1..%d",
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
			pack_errf(err, errlen, "pm_location: more than %d locations",
				  PM_MAX_LOCATIONS);
			return -1;
		}
		if (strlen(path) >= PM_LOCATION_LEN) {
			pack_errf(err, errlen, "pm_location: path longer than %d bytes",
				  PM_LOCATION_LEN - 1);
			return -1;
		}
		strcpy(cfg->loc[cfg->nloc].path, path);
		cfg->loc[cfg->nloc].weight = (int)weight;
		cfg->nloc++;
	}
	*out = copy;
	return 0;
}
