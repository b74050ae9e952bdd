/* See fioglue.h. */
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fioglue.h"
#include "errmsg.h"
#include "units.h"

extern const char fio_version_string[];
extern struct fio_option fio_options[FIO_MAX_OPTS];
extern struct thread_stat client_ts;
extern unsigned int *fio_debug_jobp;

/* The size of the object fio exports at @addr (its dynamic symbol's), or 0. */
static size_t exported_size(const void *addr)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	if (!dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 0;
	return sym->st_size;
}

/*
 * Whether fio's struct layouts differ between the fio we were compiled
 * against and the one running, as far as what fio exports shows: 0, or 1
 * with what differs in @what ("struct thread_data is N bytes, the build's M").
 *
 * fio's ioops version does not change when struct layouts do (3.30..3.33
 * all say 31; 3.41 and 3.42 say 39 with td->eo and td->files moved), and
 * none of this may read a thread_data, whose layout is what is in doubt:
 *   - fio_options, fio's option table: its size (struct fio_option, which
 *     the probes below walk), and the offset in struct thread_options of
 *     every field of td->o the engines read;
 *   - client_ts, a struct thread_stat (td->ts);
 *   - struct thread_data itself: fio lays its jobs out in segments of
 *     JOBS_PER_SEG and points fio_debug_jobp right after the first
 *     segment's last job (init.c, add_thread_segment), so the two are
 *     JOBS_PER_SEG of fio's thread_data apart. Before fio has made a job
 *     (--enghelp alone) there is no segment, and no thread_data is read.
 * A field moved inside struct thread_data without changing its size is not
 * seen: that is what "built against the source of the fio you run" is for.
 */
static int layout_differs(char *what, size_t len, int *whole)
{
	/* clang-format off */
	static const struct {
		const char *name;
		size_t off;
	} probes[] = {
		{ "name",		offsetof(struct thread_options, name) },
		{ "rw",			offsetof(struct thread_options, td_ddir) },
		{ "size",		offsetof(struct thread_options, size) },
		{ "io_size",		offsetof(struct thread_options, io_size) },
		{ "bs",			offsetof(struct thread_options, bs) },
		{ "bsrange",		offsetof(struct thread_options, min_bs) },
		{ "direct",		offsetof(struct thread_options, odirect) },
		{ "invalidate",		offsetof(struct thread_options, invalidate_cache) },
		{ "nrfiles",		offsetof(struct thread_options, nr_files) },
		{ "numjobs",		offsetof(struct thread_options, numjobs) },
		{ "time_based",		offsetof(struct thread_options, time_based) },
		{ "number_ios",		offsetof(struct thread_options, number_ios) },
		{ "loops",		offsetof(struct thread_options, loops) },
		{ "randseed",		offsetof(struct thread_options, rand_seed) },
		{ "iodepth",		offsetof(struct thread_options, iodepth) },
		{ "runtime",		offsetof(struct thread_options, timeout) },
		{ "verify",		offsetof(struct thread_options, verify) },
		{ "continue_on_error",	offsetof(struct thread_options, continue_on_error) },
	};
	/* clang-format on */
	size_t i, have;

	*whole = 0;
	have = exported_size(fio_options);
	if (have && have != sizeof(fio_options)) {
		snprintf(what, len, "option table is %zu bytes, the build's %zu", have,
			 sizeof(fio_options));
		return 1;
	}
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		struct fio_option *fo;

		for (fo = fio_options; fo->name && strcmp(fo->name, probes[i].name); fo++)
			;
		if (!fo->name) {
			snprintf(what, len, "option table has no %s", probes[i].name);
			return 1;
		}
		if (fo->off1 != probes[i].off) {
			snprintf(
				what, len,
				"option %s is at offset %u of struct thread_options, the build's %zu",
				probes[i].name, fo->off1, probes[i].off);
			return 1;
		}
	}
	have = exported_size(&client_ts);
	if (have && have != sizeof(client_ts)) {
		snprintf(what, len, "struct thread_stat is %zu bytes, the build's %zu", have,
			 sizeof(client_ts));
		return 1;
	}
	if (nr_segments && segments[0].threads && fio_debug_jobp) {
		have = (size_t)((char *)fio_debug_jobp - (char *)segments[0].threads) /
		       JOBS_PER_SEG;
		if (have != sizeof(struct thread_data)) {
			snprintf(what, len, "struct thread_data is %zu bytes, the build's %zu",
				 have, sizeof(struct thread_data));
			return 1;
		}
		*whole = 1;
	}
	return 0;
}

int pack_host_fio_refused(const char *engine, int say)
{
	/* jobs run as threads (thread=1) ask at once, each from its ->init */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static int verdict = -1, said;
	static char line[PATH_MAX + 512];
	char exe[PATH_MAX], what[160];
	int whole = 1, refused;
	ssize_t n;

	pthread_mutex_lock(&lock);
	/* decided once, when all could be compared (not before fio's first job) */
	if (verdict < 0) {
		/* the command that builds for the fio running names its path */
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0)
			exe[n] = '\0';
		else
			snprintf(exe, sizeof(exe), "$(command -v fio)");
		if (strcmp(fio_version_string, PACK_FIO_VERSION))
			snprintf(
				line, sizeof(line),
				"%s: built for %s but loaded into %s; build it for this fio: make engines FIO=%s (or FIO_SRC=its source)\n",
				engine, PACK_FIO_VERSION, fio_version_string, exe);
		else if (layout_differs(what, sizeof(what), &whole))
			snprintf(
				line, sizeof(line),
				"%s: built for %s but loaded into a %s whose %s: a build from other source; build it against the source of this fio: make engines FIO=%s FIO_SRC=its source\n",
				engine, PACK_FIO_VERSION, fio_version_string, what, exe);
		if (line[0])
			verdict = 1;
		else if (whole)
			verdict = 0;
	}
	if (verdict > 0 && say && !said++)
		log_err("%s", line);
	refused = verdict > 0;
	pthread_mutex_unlock(&lock);
	return refused;
}

int pack_check_host_fio(struct thread_data *td, const char *engine, const struct ioengine_ops *ops)
{
	if (pack_host_fio_refused(engine, 1))
		return 1;
	/* a pointer compared, not followed: td->io_ops where the build has it */
	if (td->io_ops != ops) {
		log_err("%s: built for %s but its struct thread_data differs from this fio's (io_ops); build it against the source of this fio: make engines FIO=$(command -v fio) FIO_SRC=its source\n",
			engine, PACK_FIO_VERSION);
		return 1;
	}
	return 0;
}

/*
 * fio resets numjobs to 1 in the clones it makes, so look up the first job
 * of the group: the nearest earlier job of the same name with subjob 0.
 */
unsigned pack_clone_count(struct thread_data *td)
{
	struct thread_data *t, *parent = NULL;
	unsigned i;

	if (td->subjob_number == 0)
		return td->o.numjobs;
	/*
	 * fio's add_job() makes a job's clones in the slots right after it, so
	 * a clone's parent is the nearest job before it that is no clone. No
	 * other job's option strings are read: under --thread a job of an
	 * earlier group may be freeing its own while this one starts.
	 * fio's for_each_td() changed its arguments in 3.34; these two did not.
	 */
	for (i = 0; i < thread_number; i++) {
		t = tnumber_to_td(i);
		if (t == td)
			break;
		if (t->subjob_number == 0)
			parent = t;
	}
	return parent && parent->o.numjobs > td->subjob_number ? parent->o.numjobs : 1;
}

void pack_fix_runtimes(struct thread_data *td, uint64_t fallback_ms)
{
	uint64_t ms = 0;
	int d;

	for (d = 0; d < DDIR_RWDIR_CNT; d++)
		if (td->ts.runtime[d] > ms)
			ms = td->ts.runtime[d];
	if (!ms)
		ms = fallback_ms;
	for (d = 0; d < DDIR_RWDIR_CNT; d++)
		if (td->io_blocks[d] && !td->ts.runtime[d])
			td->ts.runtime[d] = ms ? ms : 1;
}

int pack_file_noop(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

/*
 * Where an engine's line goes. Not fio's log_err() in a local fio: with
 * --output=FILE fio points its error stream at FILE as well as stderr, so
 * the line would come before the JSON document and FILE would not parse
 * (a dbreplay report with --thread, or any line a job's process flushed).
 * stderr alone is where the user reads them. A fio --server sends what it
 * logs to the client, which writes it into its output (stdout or FILE,
 * before the JSON): an error goes there, as fio's own do (the run failed;
 * the client must say why), a report or a note stays on the server's
 * stderr (the engines' report files carry it to the client's side).
 */
static void pack_emit(const char *line, int to_client)
{
	if (is_backend && to_client)
		log_err("%s", line);
	else
		fputs(line, stderr);
}

void pack_log_err(const char *fmt, ...)
{
	/* two paths of PATH_MAX and the words around them */
	char line[2 * PATH_MAX + 1024];
	va_list ap;

	va_start(ap, fmt);
	pack_vline(line, sizeof(line), fmt, ap);
	va_end(ap);
	pack_emit(line, 1);
}

void pack_log_info(const char *fmt, ...)
{
	char line[2 * PATH_MAX + 1024];
	va_list ap;

	va_start(ap, fmt);
	pack_vline(line, sizeof(line), fmt, ap);
	va_end(ap);
	pack_emit(line, 0);
}

int pack_store_str(char **field, const char *val)
{
	/*
	 * The old value is not freed: a job section starts with a copy of
	 * [global]'s options, and fio copies only FIO_OPT_STR_STORE strings,
	 * so *field may still be the string of [global] (or of an earlier
	 * section), read by the next section that inherits it. Freeing it
	 * here was a use after free (tests/engines/test_reliability.py). The strings
	 * live until fio exits, like fio's own option strings.
	 */
	*field = strdup(val ? val : "");
	return *field ? 0 : 1;
}

/* What a numeric option's text is for a bare option name (no '='). */
static char pack_bare_option[] = "";

int pack_store_num_text(char **text, const char *val)
{
	if (!val) {
		*text = pack_bare_option;
		return 0;
	}
	return pack_store_str(text, val);
}

/* The default of option @name: its .def in the option table (what --enghelp shows). */
static const char *option_default(const struct fio_option *options, const char *name)
{
	for (; options->name; options++)
		if (!strcmp(options->name, name))
			return options->def;
	return NULL;
}

int pack_parse_num_options(const struct pack_num_option *table, size_t n,
			   const struct fio_option *options, void *o, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct pack_num_option *t = &table[i];
		const char *text = *(char **)((char *)o + t->text);
		void *value = (char *)o + t->value;
		uint64_t v;

		if (text == pack_bare_option) {
			pack_errf(err, errlen, "%s needs a value (%llu..%llu)", t->name,
				  (unsigned long long)t->lo, (unsigned long long)t->hi);
			return -1;
		}
		if (!text || !*text)
			text = option_default(options, t->name);
		if (parse_uint_option(t->name, text, 0, t->lo, t->hi, &v, err, errlen))
			return -1;
		if (t->bytes == sizeof(uint32_t))
			*(uint32_t *)value = (uint32_t)v;
		else
			*(uint64_t *)value = v;
	}
	return 0;
}

void pack_job_dir_name(struct thread_data *td, char *buf, size_t len)
{
	const char *s = td->o.name ? td->o.name : "job";
	size_t n = 0;

	for (; *s && n + 12 < len; s++)
		buf[n++] = (isalnum((unsigned char)*s) || *s == '.' || *s == '-' || *s == '_') ? *s : '_';
	snprintf(buf + n, len - n, ".%u", td->subjob_number);
}

int pack_prio_stats(struct thread_data *td, enum fio_ddir ddir,
		    const unsigned short *ioprio, int n)
{
#if PACK_FIO_HAVE_CLAT_PRIO
	int k;

	if (td->ts.clat_prio[ddir])
		return 0;	/* a clone's: its parent's statistics were copied */
	if (alloc_clat_prio_stat_ddir(&td->ts, ddir, n))
		return 1;
	for (k = 0; k < n; k++)
		td->ts.clat_prio[ddir][k].ioprio = ioprio[k];
#else
	(void)td;
	(void)ddir;
	(void)ioprio;
	(void)n;
#endif
	return 0;
}

void pack_fio_lacks(struct thread_data *td, const char *engine, const char *feature,
		    const char *since, const char *consequence)
{
	static int said;

	/*
	 * once for a job and its numjobs clones, which are processes of their
	 * own, or threads (thread=1) sharing this flag
	 */
	if (td->subjob_number || __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		return;
	pack_log_info("%s: %s has no %s (fio %s and later): %s\n", engine, fio_version_string,
		      feature, since, consequence);
}
