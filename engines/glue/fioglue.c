/* See fioglue.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fioglue.h"

extern const char fio_version_string[];
extern struct fio_option fio_options[];

/*
 * fio's ioops version does not change when struct layouts do (3.30..3.33 all
 * say 31), so check the version string and a few offsets against fio's own
 * option table.
 */
int pack_check_host_fio(struct thread_data *td, const char *engine,
			const struct ioengine_ops *ops)
{
	static const struct {
		const char *name;
		size_t off;
	} probes[] = {
		{ "bs", offsetof(struct thread_options, bs) },
		{ "direct", offsetof(struct thread_options, odirect) },
		{ "time_based", offsetof(struct thread_options, time_based) },
		{ "number_ios", offsetof(struct thread_options, number_ios) },
		{ "loops", offsetof(struct thread_options, loops) },
		{ "randseed", offsetof(struct thread_options, rand_seed) },
		{ "iodepth", offsetof(struct thread_options, iodepth) },
		{ "runtime", offsetof(struct thread_options, timeout) },
	};
	size_t i;

	if (strcmp(fio_version_string, PACK_FIO_VERSION)) {
		log_err("%s: built for %s but loaded into %s; build for this fio with: make FIO=$(command -v fio) (or FIO_SRC=its source)\n",
			engine, PACK_FIO_VERSION, fio_version_string);
		return 1;
	}
	if (td->io_ops != ops) {
		log_err("%s: struct thread_data layout differs from the fio this engine was built for; rebuild (make)\n",
			engine);
		return 1;
	}
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		struct fio_option *fo;
		int found = 0;

		for (fo = fio_options; fo->name; fo++) {
			if (strcmp(fo->name, probes[i].name))
				continue;
			found = 1;
			if (fo->off1 != probes[i].off) {
				log_err("%s: struct thread_options layout differs from the fio this engine was built for (%s); rebuild (make)\n",
					engine, probes[i].name);
				return 1;
			}
		}
		if (!found) {
			log_err("%s: fio option %s not found; wrong fio version\n", engine,
				probes[i].name);
			return 1;
		}
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
	/* fio's for_each_td() changed its arguments in 3.34; these two did not */
	for (i = 0; i < thread_number; i++) {
		t = tnumber_to_td(i);
		if (t == td)
			break;
		if (t->subjob_number == 0 && t->o.name && td->o.name &&
		    !strcmp(t->o.name, td->o.name))
			parent = t;
	}
	return parent && parent->o.numjobs > td->subjob_number ? parent->o.numjobs : 1;
}

void pack_ddir_allow(struct thread_data *td, enum fio_ddir ddir, unsigned *saved)
{
	*saved = td->o.td_ddir;
	if (ddir == DDIR_WRITE)
		td->o.td_ddir |= TD_DDIR_WRITE;
	else if (ddir == DDIR_TRIM)
		td->o.td_ddir |= TD_DDIR_TRIM;
	else if (ddir == DDIR_READ)
		td->o.td_ddir |= TD_DDIR_READ;
}

void pack_ddir_restore(struct thread_data *td, unsigned saved)
{
	td->o.td_ddir = saved;
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

	/* once for a job and its numjobs clones, which are processes of their own */
	if (td->subjob_number || said)
		return;
	said = 1;
	log_err("%s: %s has no %s (fio %s and later): %s\n", engine, fio_version_string,
		feature, since, consequence);
}
