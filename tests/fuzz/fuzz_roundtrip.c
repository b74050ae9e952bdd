/*
 * libFuzzer target for the texts this project writes for a parser to read
 * back (tests/fuzz/fuzz_specs.c covers the parsers' robustness on their
 * own):
 *
 *   selector 0-3: a PostMark configuration (.pmrc) through pmrc2fio's whole
 *     conversion (tools/pmrc2fio.c convert(), compiled in here). On error:
 *     one line "pmrc2fio: fuzz: ...", nothing made. On success the job file
 *     is read back the way fio 3.33 reads one (a line is at most 8191 bytes;
 *     blanks stripped at the front; cut at the first ';', then '#'; blanks
 *     and control characters stripped at the end; ${VAR} and $pagesize,
 *     $mb_memory, $ncpus replaced) and must give every job exactly its
 *     configuration: pm_location through the engine's own parser
 *     pm_parse_locations() (same paths, same weights), pm_report_file, and
 *     every number.
 *   selector 4: a size distribution spec: its canonical text (the tree
 *     marker's) parses again to the same text and the same sizes.
 *   selector 5: a content spec, 6: an operation mix, 7: a size: the same,
 *     for their canonical texts.
 *
 *   make fuzz FUZZ_SECONDS=60
 */
#define PMRC2FIO_NO_MAIN
#include "../../tools/pmrc2fio.c"

#include <stdint.h>

#include "content.h"
#include "opmix.h"
#include "sizedist.h"
#include "units.h"

/* One job-file line as fio 3.33 sees it (init.c __parse_jobs_ini, parse.c). */
static char *fio_line(char *p)
{
	size_t n;
	char *s;

	while (isspace((unsigned char)*p))
		p++;
	if ((s = strchr(p, ';')))
		*s = '\0';
	if ((s = strchr(p, '#')))
		*s = '\0';
	n = strlen(p);
	while (n && (isspace((unsigned char)p[n - 1]) || iscntrl((unsigned char)p[n - 1])))
		p[--n] = '\0';
	return p;
}

static int substituted(const char *v)
{
	return strstr(v, "${") || strstr(v, "$pagesize") || strstr(v, "$mb_memory") ||
	       strstr(v, "$ncpus");
}

static void check_number(const char *v, long want)
{
	char *end;
	long got;

	errno = 0;
	got = strtol(v, &end, 10);
	if (errno || *end || end == v || got != want)
		abort();
}

/* The options of one job section, checked against its configuration. */
static void check_job(char **keys, char **vals, int n, const struct job *j)
{
	const struct pm_config *c = &j->cfg;
	int i, k, loc = 0, rep = 0;

	for (i = 0; i < n; i++) {
		const char *k_ = keys[i], *v = vals[i];

		if (!strcmp(k_, "pm_location")) {
			struct pm_config back;
			char err[512];

			loc++;
			if (!c->nloc) {
				if (strcmp(v, "${PM_LOCATION}"))
					abort();
				continue;
			}
			if (substituted(v))
				abort();
			pm_config_default(&back);
			if (pm_parse_locations(&back, v, err, sizeof(err)))
				abort();
			if (back.nloc != c->nloc)
				abort();
			for (k = 0; k < c->nloc; k++)
				if (strcmp(back.loc[k].path, c->loc[k].path) ||
				    back.loc[k].weight != c->loc[k].weight)
					abort();
		} else if (!strcmp(k_, "pm_report_file")) {
			rep++;
			if (!j->report_file || strcmp(v, j->report_file) || substituted(v))
				abort();
		} else if (!strcmp(k_, "pm_size_low")) {
			check_number(v, c->size_lo);
		} else if (!strcmp(k_, "pm_size_high")) {
			check_number(v, c->size_hi);
		} else if (!strcmp(k_, "pm_number")) {
			check_number(v, c->number);
		} else if (!strcmp(k_, "pm_seed")) {
			check_number(v, (long)c->seed);
		} else if (!strcmp(k_, "pm_transactions")) {
			check_number(v, c->transactions);
		} else if (!strcmp(k_, "pm_subdirectories")) {
			check_number(v, c->subdirs);
		} else if (!strcmp(k_, "pm_read_block")) {
			check_number(v, c->read_block);
		} else if (!strcmp(k_, "pm_write_block")) {
			check_number(v, c->write_block);
		} else if (!strcmp(k_, "pm_buffering")) {
			check_number(v, c->buffered ? 1 : 0);
		} else if (!strcmp(k_, "pm_bias_read")) {
			check_number(v, c->bias_read);
		} else if (!strcmp(k_, "pm_bias_create")) {
			check_number(v, c->bias_create);
		} else if (!strcmp(k_, "pm_report")) {
			if (strcmp(v, c->report == PM_REPORT_TERSE ? "terse" : "verbose"))
				abort();
		} else if (strcmp(k_, "stonewall")) {
			abort();
		}
	}
	if (loc != 1 || rep != (j->report_file != NULL))
		abort();
}

static void fuzz_pmrc(const uint8_t *data, size_t size)
{
	struct conversion cv;
	char msg[8192], *text, *line, *rest, *keys[64], *vals[64];
	int sections = -1, n = 0;

	if (convert((const char *)data, size, "fuzz", NULL, "external:build/postmark.so",
		    "postmark", &cv, msg, sizeof(msg))) {
		if (strchr(msg, '\n') || strncmp(msg, "pmrc2fio: fuzz: ", 16))
			abort();
		return;
	}
	if (cv.njobs < 1 || strlen(cv.text) != cv.len)
		abort();
	text = strdup(cv.text);
	if (!text)
		abort();
	for (rest = text; (line = strsep(&rest, "\n"));) {
		char *p, *eq;

		if (strlen(line) + 1 > 8191)	/* fgets(8192) with the newline */
			abort();
		p = fio_line(line);
		if (!*p)
			continue;
		if (*p == '[') {
			/* sections: -1 before [global], 0 in it, k in the k-th job */
			if (sections < 0 && strcmp(p, "[global]"))
				abort();
			if (sections >= 1)
				check_job(keys, vals, n, &cv.jobs[sections - 1]);
			if (++sections > cv.njobs)
				abort();
			n = 0;
			continue;
		}
		if (sections < 0)
			abort();
		eq = strchr(p, '=');
		if (sections == 0) {
			if (!eq || strncmp(p, "ioengine=", 9))
				abort();
			continue;
		}
		if (n == 64)
			abort();
		if (eq)
			*eq = '\0';
		keys[n] = p;
		vals[n++] = eq ? eq + 1 : NULL;
		if (!eq && strcmp(p, "stonewall"))
			abort();
	}
	if (sections != cv.njobs)
		abort();
	check_job(keys, vals, n, &cv.jobs[sections - 1]);	/* the last job */
	free(text);
	conversion_free(&cv);
}

/* The canonical text of a size distribution describes it faithfully. */
static void fuzz_sizedist(const char *text)
{
	struct size_dist d, d2;
	char err[512], a[512], b[512];
	uint64_t u;
	int i;

	if (size_dist_parse(&d, text, "x", err, sizeof(err)))
		return;
	if (d.kind == SIZE_HIST || size_dist_describe(&d, a, sizeof(a)) < 0) {
		size_dist_free(&d);
		return;
	}
	if (size_dist_parse(&d2, a, "x", err, sizeof(err)))
		abort();
	if (size_dist_describe(&d2, b, sizeof(b)) < 0 || strcmp(a, b))
		abort();
	if (size_dist_max(&d) != size_dist_max(&d2))
		abort();
	for (i = 0, u = 0x9e3779b97f4a7c15ULL; i < 64; i++, u = u * 6364136223846793005ULL + 1)
		if (size_dist_sample(&d, u) != size_dist_sample(&d2, u))
			abort();
	size_dist_free(&d);
	size_dist_free(&d2);
}

static void fuzz_content(const char *text)
{
	struct content_spec c, c2;
	char err[512], a[128];

	if (content_parse(&c, text, "x", err, sizeof(err)))
		return;
	if (content_describe(&c, a, sizeof(a)) < 0 || content_parse(&c2, a, "x", err, sizeof(err)))
		abort();
	if (c.kind != c2.kind || (c.kind == CONTENT_COMPRESSIBLE && c.pct != c2.pct))
		abort();
}

static void fuzz_opmix(const char *text)
{
	struct op_mix m, m2;
	char err[512], a[512];

	if (op_mix_parse(&m, text, "x", err, sizeof(err)))
		return;
	if (op_mix_describe(&m, a, sizeof(a)) < 0 || op_mix_parse(&m2, a, "x", err, sizeof(err)))
		abort();
	if (memcmp(m.weight, m2.weight, sizeof(m.weight)) || m.total != m2.total ||
	    m.nops != m2.nops || op_mix_single(&m) != op_mix_single(&m2))
		abort();
}

static void fuzz_size(const char *text)
{
	uint64_t v, w;
	char a[64];

	if (parse_size(text, &v))
		return;
	if (parse_size_n(text, strlen(text), &w) || v != w)
		abort();
	snprintf(a, sizeof(a), "%llu", (unsigned long long)v);
	if (parse_size(a, &w) || v != w)
		abort();
	if (v && v % 1024 == 0) {
		snprintf(a, sizeof(a), "%lluKiB", (unsigned long long)(v / 1024));
		if (parse_size(a, &w) || v != w)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1)
		return 0;
	if (data[0] % 8 < 4) {
		fuzz_pmrc(data + 1, size - 1);
		return 0;
	}
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 8) {
	case 4:
		fuzz_sizedist(text);
		break;
	case 5:
		fuzz_content(text);
		break;
	case 6:
		fuzz_opmix(text);
		break;
	case 7:
		fuzz_size(text);
		break;
	}
	free(text);
	return 0;
}
