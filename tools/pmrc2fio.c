/*
 * pmrc2fio: converts a PostMark 1.53 configuration file (.pmrc) into an fio
 * job file for the postmark engine (postmark.so). The lines are applied
 * in order with the model's parser (engines/lib/pmconfig.c); every `run`
 * becomes one job section holding every pm_* option as it stands at that
 * point, and a file without `run` gets one job at the end, as PostMark run
 * from its prompt would. Nothing is written unless the whole file converts.
 * `pmrc2fio --help` has the details. Build: the pmrc2fio target in the
 * Makefile.
 *
 * fio reads a job file line by line: it cuts a line at the first ';' or '#',
 * strips blanks and control characters from both ends, replaces ${VAR} by the
 * environment variable VAR and $pagesize, $mb_memory and $ncpus by numbers,
 * and reads at most OPT_LEN_MAX (8192) bytes of a line. pm_location's
 * backslash escapes get around all of that except ';' and '#'; paths with
 * those, and report file names fio would alter, are refused with a message.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errmsg.h"
#include "outfile.h"
#include "postmark.h"

#define PROG		"pmrc2fio"

/*
 * The engine the job files name: the pack's engines wherever the user's
 * FIO_PACK_ENGINES points (docs/jobs.md), so a job file runs from any
 * directory; `make install` builds an installed pmrc2fio naming LIBDIR.
 */
#define ENGINE_VAR "${FIO_PACK_ENGINES}"
#ifndef PMRC2FIO_ENGINE
#define PMRC2FIO_ENGINE "external:" ENGINE_VAR "/postmark.so"
#endif
#define STDIN_NAME	"(standard input)"
/* fio reads a job file line with fgets(buf, 8192): newline included, 8190 is safe. */
#define FIO_LINE_MAX	8190
#define NAME_MAX_LEN	200	/* fio keeps section names in 256 bytes; room for -N */
/*
 * What is read, bounded: a PostMark configuration is a few short lines, and
 * a job file of more than fio's REAL_MAX_JOBS (4096) jobs does not run.
 */
#define PMRC_MAX_BYTES (4 << 20)
#define PMRC_MAX_RUNS  4096
/* A line is copied out up to this: the model's parser refuses any over 1024 bytes. */
#define PMRC_LINE_COPY 8192

struct job {
	struct pm_config cfg;
	char *report_file;	/* `run FILE`; NULL: none (stderr) */
	int lineno;		/* the `run` line; 0: the implicit run at the end */
};

static void help(void)
{
	fputs("NAME\n"
	      "    " PROG " - convert a PostMark configuration (.pmrc) into an fio job file\n"
	      "\n"
	      "SYNOPSIS\n"
	      "    " PROG " [-o OUT] [--engine PATH] [--name NAME] [CONFIG|-]\n"
	      "\n"
	      "DESCRIPTION\n"
	      "    Reads the PostMark 1.53 configuration CONFIG (standard input if CONFIG\n"
	      "    is missing or -) and writes an fio job file that runs the same\n"
	      "    benchmark on the postmark engine of this repository. Lines are applied\n"
	      "    in order, as PostMark does; every `run [FILE]` becomes one job section\n"
	      "    with the settings in force at that point (named NAME for a single run,\n"
	      "    NAME-1, NAME-2, ... for several; each after the first has `stonewall`,\n"
	      "    since PostMark runs them one after the other). `run FILE` adds\n"
	      "    pm_report_file=FILE. Without any `run`, one job is written for the\n"
	      "    settings at the end of the file. `quit` and `exit` stop reading, `show`\n"
	      "    and `help` are ignored; `load` and shell escapes (`!`) are refused.\n"
	      "\n"
	      "    Every job lists all the pm_* engine options, defaults included:\n"
	      "      set size L [H]          pm_size_low=L pm_size_high=H (H missing, <= 0\n"
	      "                              or below L: H = L, a fixed size)\n"
	      "      set number N            pm_number=N\n"
	      "      set seed S              pm_seed=S\n"
	      "      set transactions T      pm_transactions=T\n"
	      "      set subdirectories K    pm_subdirectories=K\n"
	      "      set read B, set write B pm_read_block=B, pm_write_block=B\n"
	      "      set buffering true|false  pm_buffering=1|0\n"
	      "      set bias read R, set bias create C  pm_bias_read=R, pm_bias_create=C\n"
	      "      set report verbose|terse  pm_report=verbose|terse\n"
	      "      set location P [W], +P [W], -P\n"
	      "                              pm_location=P1[@W1]:P2[@W2]... with ':', '\\'\n"
	      "                              and '@' in a path written '\\:', '\\\\', '\\@'\n"
	      "    A configuration without `set location` gets pm_location=${PM_LOCATION}:\n"
	      "    the directories come from the environment variable PM_LOCATION, and if\n"
	      "    it is unset or empty the engine uses a fresh temporary directory\n"
	      "    (PostMark itself would use the current directory).\n"
	      "\n"
	      "    The configuration is checked as the model checks it (whole numbers in\n"
	      "    range, biases -1..10, weights 1..1000000, known commands only); paths\n"
	      "    containing ';' or '#', which fio cannot read back, are refused too.\n"
	      "    CONFIG must be a regular file (a FIFO, a device or a socket is refused;\n"
	      "    - reads standard input) of at most 4 MiB of text, lines of at most 1024\n"
	      "    bytes and at most 4096 `run` lines (fio runs at most 4096 jobs); a\n"
	      "    read error is an error. On any error nothing is written.\n"
	      "\n"
	      "OPTIONS\n"
	      "    -o, --output OUT   write the job file to OUT instead of standard output.\n"
	      "                       A regular file, or a new one, is written atomically\n"
	      "                       (a temporary file in the same directory, then\n"
	      "                       renamed); a character device or a FIFO is written in\n"
	      "                       place (/dev/null, a pipe); a symbolic link is\n"
	      "                       followed, as the shell's > does: the file it points\n"
	      "                       to is replaced, in its own directory, and the link\n"
	      "                       stays; a block device, a directory or a socket is\n"
	      "                       refused\n"
	      "    --engine PATH      the ioengine= value (default " PMRC2FIO_ENGINE ":\n"
	      "                       the pack's engines wherever FIO_PACK_ENGINES points)\n"
	      "    --name NAME        job name prefix (default postmark)\n"
	      "    -h, --help         print this help and exit\n"
	      "\n"
	      "EXIT STATUS\n"
	      "    0 on success; 2 on a bad command line, an unreadable or invalid\n"
	      "    configuration or an unwritable output, after one line on standard\n"
	      "    error: " PROG ": CONFIG: line N: SETTING: REASON, or " PROG ": FILE: ERROR.\n"
	      "\n"
	      "EXAMPLES\n"
	      "    " PROG " -o postmark.fio my.pmrc && fio postmark.fio\n"
	      "    PM_LOCATION=/mnt/ssd/pm fio postmark.fio\n"
	      "    printf 'set number 5000\\nset transactions 10000\\n' | " PROG " > pm.fio\n",
	      stdout);
}

static void die_oom(void)
{
	fprintf(stderr, PROG ": out of memory\n");
	exit(2);
}

/* A copy of @s with control characters as '?', for comments and messages. */
static char *printable(const char *s)
{
	char *p, *r = strdup(s);

	if (!r)
		die_oom();
	for (p = r; *p; p++)
		if (iscntrl((unsigned char)*p))
			*p = '?';
	return r;
}

/* Whether fio would substitute something in @s: ${VAR} or a keyword. */
static const char *fio_substitution(const char *s)
{
	static const char *const kw[] = { "${", "$pagesize", "$mb_memory", "$ncpus" };
	size_t i;

	for (i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (strstr(s, kw[i]))
			return kw[i];
	return NULL;
}

static int fio_blank(char c)
{
	return isspace((unsigned char)c) || iscntrl((unsigned char)c);
}

/*
 * One pm_location entry: backslash before ':', '\', '@', a first character
 * fio would strip, and the character after a '$' (so fio sees neither
 * "${" nor a "$keyword"). @W when the weight is not 1, when the path has an
 * '@', or when it ends in a character fio would strip at the end of a line.
 */
static void put_location(FILE *o, const struct pm_location *l)
{
	const char *p = l->path;
	size_t i, n = strlen(p);

	for (i = 0; i < n; i++) {
		char c = p[i];

		if (c == ':' || c == '\\' || c == '@' || (i == 0 && fio_blank(c)) ||
		    (i > 0 && p[i - 1] == '$'))
			fputc('\\', o);
		fputc(c, o);
	}
	if (l->weight != 1 || strchr(p, '@') || (n && fio_blank(p[n - 1])))
		fprintf(o, "@%d", l->weight);
}

static void put_locations(FILE *o, const struct pm_config *cfg)
{
	int i;

	for (i = 0; i < cfg->nloc; i++) {
		if (i)
			fputc(':', o);
		put_location(o, &cfg->loc[i]);
	}
}

/* 0 if fio can read @cfg's locations back from a job file, else -1 and @err. */
static int check_locations(const struct pm_config *cfg, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *o;
	int i;

	for (i = 0; i < cfg->nloc; i++) {
		const char *bad = strpbrk(cfg->loc[i].path, ";#");

		if (bad) {
			pack_errf(err, errlen, "set location: '%s': fio cannot read a "
				  "'%c' in an option value (it starts a comment)",
				  cfg->loc[i].path, *bad);
			return -1;
		}
	}
	o = open_memstream(&buf, &len);
	if (!o)
		die_oom();
	fputs("pm_location=", o);
	put_locations(o, cfg);
	if (fclose(o))
		die_oom();
	free(buf);
	if (len > FIO_LINE_MAX) {
		pack_errf(err, errlen, "set location: the %d locations make a %zu-byte "
			  "pm_location line, fio reads at most %d", cfg->nloc, len,
			  FIO_LINE_MAX);
		return -1;
	}
	return 0;
}

/*
 * The FILE of `run FILE` in @line (the parser said it is a run) into *@file,
 * NULL if none (PostMark passes the rest of the line; the parser has made
 * words blank-separated). 0, or -1 with @err if fio could not read it back.
 */
static int run_file(const char *line, char **file, char *err, size_t errlen)
{
	const char *s = line + strspn(line, " \t");
	size_t n;
	char *f;

	s += strlen("run");
	s += strspn(s, " \t");
	n = strlen(s);
	if (n && s[n - 1] == '\n')
		n--;
	if (n && s[n - 1] == '\r')
		n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	*file = NULL;
	if (!n)
		return 0;
	f = strndup(s, n);
	if (!f)
		die_oom();
	if (strpbrk(f, ";#")) {
		pack_errf(err, errlen, "run: report file '%s': fio cannot read a '%c' in "
			  "an option value (it starts a comment)", f, *strpbrk(f, ";#"));
		goto bad;
	}
	if (fio_substitution(f)) {
		pack_errf(err, errlen, "run: report file '%s': fio would replace '%s' "
			  "in it", f, fio_substitution(f));
		goto bad;
	}
	if (fio_blank(f[0]) || fio_blank(f[n - 1])) {
		pack_errf(err, errlen, "run: report file '%s': fio strips blank and "
			  "control characters at the ends of a value", f);
		goto bad;
	}
	if (n + strlen("pm_report_file=") > FIO_LINE_MAX) {
		pack_errf(err, errlen, "run: report file name too long for fio");
		goto bad;
	}
	*file = f;
	return 0;
bad:
	free(f);
	return -1;
}

/* What fio accepts as a section name we make: NAME or NAME-N. */
static const char *check_name(const char *name)
{
	const char *p;

	if (!*name)
		return "is empty";
	if (strlen(name) > NAME_MAX_LEN)
		return "is too long";
	if (!strncmp(name, "global", 6))
		return "starts with 'global', which fio takes for a [global] section";
	for (p = name; *p; p++)
		if (fio_blank(*p) || strchr("[];#$", *p))
			return "has a blank, control character or one of [ ] ; # $";
	return NULL;
}

static const char *check_engine(const char *engine)
{
	const char *p;

	if (!*engine)
		return "is empty";
	for (p = engine; *p; p++)
		if (fio_blank(*p) || strchr(";#", *p))
			return "has a blank, control character, ';' or '#'";
	/* the engines' variable, and only it, is fio's to replace */
	if (!strncmp(engine, "external:" ENGINE_VAR "/", strlen("external:" ENGINE_VAR "/")))
		engine += strlen("external:" ENGINE_VAR "/");
	if (fio_substitution(engine))
		return "has a '$' that fio would replace (other than " ENGINE_VAR ")";
	if (strlen(engine) + strlen("ioengine=") > FIO_LINE_MAX)
		return "is too long";
	return NULL;
}

static void put_header(FILE *o, const char *src, const char *out, const char *engine,
		       const struct job *jobs, int njobs)
{
	int i, env = 0, explicit = 0;
	char *s = printable(src);

	for (i = 0; i < njobs; i++) {
		if (jobs[i].cfg.nloc)
			explicit++;
		else
			env++;
	}
	fprintf(o, "; Converted by " PROG " from the PostMark configuration %s.\n", s);
	free(s);
	fprintf(o,
		"; Reproduces that PostMark 1.53 configuration on fio's postmark engine:\n"
		"; the same files, sizes, operations and report.%s\n"
		";\n",
		njobs > 1 ? " One job per `run`,\n; one after the other." : "");
	if (strstr(engine, ENGINE_VAR))
		fprintf(o,
			"; Engine: ioengine=%s. Set\n"
			"; FIO_PACK_ENGINES once to the directory of the pack's engines\n"
			"; (after `make`, in the checkout: export FIO_PACK_ENGINES=$PWD/build),\n"
			"; or run the file with `fio-pack run FILE`, which sets it. Run:\n",
			engine);
	else
		fprintf(o, "; Engine: the ioengine= path below, as given to " PROG " (a\n"
			   "; relative path is read from the directory fio runs in). Run:\n");
	if (out) {
		s = printable(out);
		fprintf(o, ";   fio %s\n", s);
		free(s);
	} else {
		fprintf(o, ";   fio THIS-FILE.fio\n");
	}
	fprintf(o, "; Environment:\n");
	if (env) {
		fprintf(o,
";   PM_LOCATION  the directory the files go into, or several as\n"
";                DIR[@WEIGHT]:DIR[@WEIGHT]... (write '\\:', '\\\\', '\\@' for a\n"
";                ':', '\\', '@' in a DIR). Unset or empty: a fresh temporary\n"
";                directory (PostMark without `set location` would use the\n"
";                current directory).%s\n",
			explicit ? " Jobs with their own pm_location ignore it." : "");
	} else {
		fprintf(o,
";   PM_LOCATION  not used: the configuration names its directories (see\n"
";                pm_location); write pm_location=${PM_LOCATION} to choose\n"
";                them when running instead.\n");
	}
	fprintf(o,
"; pm_report: PostMark's report, written to pm_report_file (from `run FILE`)\n"
"; or, without it, to standard error.\n");
}

static void put_job(FILE *o, const struct job *j, int idx, int njobs, const char *name)
{
	const struct pm_config *c = &j->cfg;

	fputc('\n', o);
	if (njobs > 1)
		fprintf(o, "[%s-%d]\n", name, idx + 1);
	else
		fprintf(o, "[%s]\n", name);
	if (j->lineno)
		fprintf(o, "; `run` at line %d\n", j->lineno);
	else
		fprintf(o, "; the settings at the end of the file (it has no `run`)\n");
	if (idx)
		fprintf(o, "stonewall\n");
	fprintf(o, "pm_size_low=%d\n", c->size_lo);
	fprintf(o, "pm_size_high=%d\n", c->size_hi);
	fprintf(o, "pm_number=%d\n", c->number);
	fprintf(o, "pm_seed=%u\n", (unsigned int)c->seed);
	fprintf(o, "pm_transactions=%d\n", c->transactions);
	fprintf(o, "pm_subdirectories=%d\n", c->subdirs);
	fprintf(o, "pm_read_block=%d\n", c->read_block);
	fprintf(o, "pm_write_block=%d\n", c->write_block);
	fprintf(o, "pm_buffering=%d\n", c->buffered ? 1 : 0);
	fprintf(o, "pm_bias_read=%d\n", c->bias_read);
	fprintf(o, "pm_bias_create=%d\n", c->bias_create);
	fprintf(o, "pm_report=%s\n", c->report == PM_REPORT_TERSE ? "terse" : "verbose");
	if (c->nloc) {
		fputs("pm_location=", o);
		put_locations(o, c);
		fputc('\n', o);
	} else {
		fputs("pm_location=${PM_LOCATION}\n", o);
	}
	if (j->report_file)
		fprintf(o, "pm_report_file=%s\n", j->report_file);
}

struct conversion {
	struct job *jobs;
	int njobs;
	char *text;		/* the job file */
	size_t len;
};

static void conversion_free(struct conversion *cv)
{
	int i;

	for (i = 0; i < cv->njobs; i++)
		free(cv->jobs[i].report_file);
	free(cv->jobs);
	free(cv->text);
	memset(cv, 0, sizeof(*cv));
}

/*
 * The configuration @text (@len bytes; @srcname in messages) made into the
 * job file in @cv (@out: the output's name for its header, NULL for
 * standard output). 0, or -1 with the one-line message for standard error
 * in @msg ("pmrc2fio: CONFIG: line N: ..."), and nothing in @cv. Kept apart
 * from main() so that tests/fuzz/fuzz_roundtrip.c can call it.
 */
static int convert(const char *text, size_t len, const char *srcname, const char *out,
		   const char *engine, const char *name, struct conversion *cv, char *msg,
		   size_t msglen)
{
	struct pm_config cfg;
	struct job *jobs = NULL;
	int njobs = 0, cap = 0, lineno = 0, i;
	char line[PMRC_LINE_COPY], err[1024], *buf = NULL;
	const char *p = text, *end = text + len;
	size_t outlen = 0;
	FILE *o;
	enum pm_cmd cmd = PM_CMD_NONE;

	memset(cv, 0, sizeof(*cv));
	pm_config_default(&cfg);
	while (cmd != PM_CMD_QUIT && p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		lineno++;
		/* a NUL would end the line early for the parser: a figure silently cut */
		if (memchr(p, '\0', n)) {
			pack_errf(err, sizeof(err), "a NUL byte: not a text line");
			goto bad_line;
		}
		memcpy(line, p, n < sizeof(line) ? n : sizeof(line) - 1);
		line[n < sizeof(line) ? n : sizeof(line) - 1] = '\0';
		p += n;
		cmd = pm_config_parse_line(&cfg, line, lineno, err, sizeof(err));
		if (cmd == PM_CMD_ERROR)
			goto bad_line;
		if (check_locations(&cfg, err, sizeof(err)))
			goto bad_line;
		if (cmd != PM_CMD_RUN)
			continue;
		if (pm_config_check(&cfg, err, sizeof(err)))
			goto bad_line;
		if (njobs == PMRC_MAX_RUNS) {
			pack_errf(err, sizeof(err),
				  "run: more than %d runs; fio runs at most %d "
				  "jobs",
				  PMRC_MAX_RUNS, PMRC_MAX_RUNS);
			goto bad_line;
		}
		if (njobs == cap) {
			cap = cap ? cap * 2 : 16;
			jobs = realloc(jobs, cap * sizeof(*jobs));
			if (!jobs)
				die_oom();
		}
		jobs[njobs].cfg = cfg;
		jobs[njobs].lineno = lineno;
		if (run_file(line, &jobs[njobs].report_file, err, sizeof(err)))
			goto bad_line;
		njobs++;
	}
	if (!njobs) {
		/* Like typing `run` at PostMark's prompt after loading the file. */
		if (pm_config_check(&cfg, err, sizeof(err))) {
			pack_errf(msg, msglen, PROG ": %s: %s", srcname, err);
			goto fail;
		}
		jobs = calloc(1, sizeof(*jobs));
		if (!jobs)
			die_oom();
		jobs[0].cfg = cfg;
		njobs = 1;
	}

	o = open_memstream(&buf, &outlen);
	if (!o)
		die_oom();
	put_header(o, srcname, out, engine, jobs, njobs);
	fprintf(o, "\n[global]\nioengine=%s\n", engine);
	for (i = 0; i < njobs; i++)
		put_job(o, &jobs[i], i, njobs, name);
	if (fclose(o))
		die_oom();
	cv->jobs = jobs;
	cv->njobs = njobs;
	cv->text = buf;
	cv->len = outlen;
	return 0;

bad_line:
	if (strncmp(err, "line ", 5))
		pack_errf(msg, msglen, PROG ": %s: line %d: %s", srcname, lineno, err);
	else
		pack_errf(msg, msglen, PROG ": %s: %s", srcname, err);
fail:
	for (i = 0; i < njobs; i++)
		free(jobs[i].report_file);
	free(jobs);
	return -1;
}

static const char *file_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

/*
 * CONFIG opened for reading: a regular file, looked at before it is opened
 * (a FIFO's open waits for a writer, a device's may do something), and at
 * most PMRC_MAX_BYTES long. The descriptor, or -1 with @msg.
 */
static int open_config(const char *src, char *msg, size_t msglen)
{
	struct stat st, fst;
	int fd;

	if (stat(src, &st))
		goto fail_errno;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail_errno;
	}
	if (!S_ISREG(st.st_mode)) {
		pack_errf(msg, msglen,
			  PROG ": %s: is %s, not a configuration file (give a "
			       "regular file, or - for standard input)",
			  src, file_kind(st.st_mode));
		return -1;
	}
	fd = open(src, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		goto fail_errno;
	if (fstat(fd, &fst) || !S_ISREG(fst.st_mode) || fst.st_ino != st.st_ino ||
	    fst.st_dev != st.st_dev) {
		close(fd);
		pack_errf(msg, msglen, PROG ": %s: changed while being opened", src);
		return -1;
	}
	return fd;
fail_errno:
	pack_errf(msg, msglen, PROG ": %s: %s", src, strerror(errno));
	return -1;
}

/*
 * All of @fd (@srcname in messages), at most PMRC_MAX_BYTES, into *@text
 * (*@len bytes). 0, or -1 with @msg: a read error is an error, not the end.
 */
static int read_config(int fd, const char *srcname, char **text, size_t *len, char *msg,
		       size_t msglen)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		die_oom();
	for (;;) {
		ssize_t r;

		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				die_oom();
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			pack_errf(msg, msglen, PROG ": %s: %s", srcname, strerror(errno));
			goto fail;
		}
		if (!r)
			break;
		n += r;
		if (n > PMRC_MAX_BYTES) {
			pack_errf(msg, msglen,
				  PROG ": %s: more than %d bytes: not a PostMark "
				       "configuration",
				  srcname, PMRC_MAX_BYTES);
			goto fail;
		}
	}
	*text = buf;
	*len = n;
	return 0;
fail:
	free(buf);
	return -1;
}

#ifndef PMRC2FIO_NO_MAIN
int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "engine", required_argument, NULL, 'e' },
		{ "name", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *src = "-", *srcname, *out = NULL;
	const char *engine = PMRC2FIO_ENGINE, *name = "postmark", *why;
	struct conversion cv;
	int c, in = STDIN_FILENO, ret = 2, have_cst;
	char msg[8192], *text;
	struct stat cst;
	size_t len;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'e':
			engine = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'h':
			help();
			return 0;
		default:
			if (optopt == 'o' || optopt == 'e' || optopt == 'n')
				fprintf(stderr, PROG ": option %s needs an argument "
					"(see " PROG " --help)\n", argv[optind - 1]);
			else
				fprintf(stderr, PROG ": unknown option '%s' (see "
					PROG " --help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc)
		src = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, PROG ": more than one CONFIG (see " PROG " --help)\n");
		return 2;
	}
	if (out && !*out) {
		fprintf(stderr, PROG ": -o: empty file name\n");
		return 2;
	}
	if ((why = check_engine(engine))) {
		fprintf(stderr, PROG ": --engine: '%s' %s\n", engine, why);
		return 2;
	}
	if ((why = check_name(name))) {
		fprintf(stderr, PROG ": --name: '%s' %s\n", name, why);
		return 2;
	}
	srcname = strcmp(src, "-") ? src : STDIN_NAME;
	if (strcmp(src, "-")) {
		in = open_config(src, msg, sizeof(msg));
		if (in < 0) {
			fprintf(stderr, "%s\n", msg);
			return 2;
		}
	}
	c = read_config(in, srcname, &text, &len, msg, sizeof(msg));
	have_cst = !fstat(in, &cst);
	if (in != STDIN_FILENO)
		close(in);
	if (c) {
		fprintf(stderr, "%s\n", msg);
		return 2;
	}
	c = convert(text, len, srcname, out, engine, name, &cv, msg, sizeof(msg));
	free(text);
	if (c) {
		fprintf(stderr, "%s\n", msg);
		return 2;
	}
	if (out) {
		struct outfile of;
		struct stat ost;

		/*
		 * -o naming CONFIG (or a link to it) replaced the configuration
		 * with its job file: the user's input is not an output.
		 */
		if (have_cst && S_ISREG(cst.st_mode) && !stat(out, &ost) &&
		    ost.st_dev == cst.st_dev && ost.st_ino == cst.st_ino) {
			pack_errf(msg, sizeof(msg),
				  PROG
				  ": -o %s is the configuration %s itself; name another output",
				  out, srcname);
			fprintf(stderr, "%s\n", msg);
			goto out_cv;
		}
		if (outfile_open(&of, out, msg, sizeof(msg))) {
			fprintf(stderr, PROG ": %s: %s\n", out, msg);
			goto out_cv;
		}
		if (outfile_write(&of, cv.text, cv.len)) {
			fprintf(stderr, PROG ": %s: %s\n", out, strerror(errno));
			outfile_abort(&of);
			goto out_cv;
		}
		if (outfile_commit(&of)) {
			fprintf(stderr, PROG ": %s: %s\n", out, strerror(errno));
			goto out_cv;
		}
	} else if (fwrite(cv.text, 1, cv.len, stdout) != cv.len || fflush(stdout)) {
		fprintf(stderr, PROG ": standard output: %s\n", strerror(errno));
		goto out_cv;
	}
	ret = 0;
out_cv:
	conversion_free(&cv);
	return ret;
}
#endif
