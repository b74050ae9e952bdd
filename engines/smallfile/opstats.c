/* The per-operation report, opstats_file (see sfengine.h). */
#include <ctype.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "sfengine.h"

/* Whole-file reads of this job over the tree's files: past 1, files were read again. */
static double read_passes(const struct sf_data *sd)
{
	return sd->shape.nfiles ? (double)sd->stats[FOP_READ].ops / (double)sd->shape.nfiles : 0;
}

/* The figure of the opstats line and of fio-pack summary: three decimals. */
static double read_passes_shown(const struct sf_data *sd)
{
	return round(read_passes(sd) * 1000) / 1000;
}

/* @text holds @word as a word of its own, in any case (Python's \bword\b, re.I). */
static int has_word(const char *text, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = text; p && (p = strcasestr(p, word)); p++) {
		int before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
		int after = isalnum((unsigned char)p[n]) || p[n] == '_';

		if (!before && !after)
			return 1;
	}
	return 0;
}

/*
 * Whether job @td asked for a cold test, by the rule of fio-pack summary
 * (scripts/fiopack/results/summary.py declared_cold): tree_drop_cache=1, caches
 * dropped before the job (an exec_prerun that writes drop_caches, as the
 * job files' headers say), or a description that says cold. The mail and
 * web jobs re-read a hot spool on purpose: theirs is no cold test.
 */
static int asked_cold(struct thread_data *td, const struct sf_data *sd)
{
	return sd->o->file_drop_cache ||
	       (td->o.exec_prerun && strstr(td->o.exec_prerun, "drop_caches")) ||
	       (td->o.description && has_word(td->o.description, "cold"));
}

/* The tree is in memory (tmpfs, ramfs): no read there comes from a device. */
static int tree_in_memory(const struct sf_data *sd)
{
	struct statfs fs;

	if (sd->rootfd < 0 || fstatfs(sd->rootfd, &fs))
		return 0;
	return fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
}

/*
 * A cold read test that went past one pass over the tree (time_based,
 * number_ios or loops above the tree's files) read files again, which the
 * page cache may serve: said once per job, never on tmpfs. With a
 * tree_opstats_file the figure is in its line and fio-pack summary says it,
 * once for the job's clones together, so nothing here (one clone cannot
 * know its siblings' figures, in processes). Without one, clone 0 says its
 * own, rounded as the opstats line rounds it.
 */
void sf_say_passes(struct thread_data *td, struct sf_data *sd)
{
	double p = read_passes_shown(sd);
	unsigned clones = pack_clone_count(td);
	char clone[64] = "";

	if (td->subjob_number || p <= 1.0 || (sd->o->opstats_file && *sd->o->opstats_file) ||
	    !asked_cold(td, sd) || tree_in_memory(sd))
		return;
	if (clones > 1)
		snprintf(clone, sizeof(clone), " (its clone 0 of %u)", clones);
	pack_log_info(
		"smallfile: job %s%s read %llu files of a %llu-file tree: %.2f passes over the tree: %s\n",
		td->o.name ? td->o.name : "?", clone, (unsigned long long)sd->stats[FOP_READ].ops,
		(unsigned long long)sd->shape.nfiles, p,
		sd->o->file_drop_cache
			? "each file's data was dropped once read, but the inodes, dentries and directory blocks of later passes may come from the cache"
			: "reads after the first pass may come from the page cache (for a cold test: number_ios= at most tree_files, or tree_drop_cache=1)");
}

/* Whether @path is the marker of tree @tree by its inode (a hard link elsewhere). */
static int is_the_marker(const char *path, const char *tree)
{
	char marker[PATH_MAX];
	struct stat a, b;

	if (!tree || !*tree || stat(path, &a) || a.st_nlink < 2 ||
	    snprintf(marker, sizeof(marker), "%s/%s", tree, MARKER_NAME) >= (int)sizeof(marker) ||
	    stat(marker, &b))
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * Before the run: a tree_opstats_file that cannot be written is said now,
 * not after the run it was to report on. 0, or 1 with one line.
 */
int sf_check_opstats_file(struct sf_data *sd)
{
	char err[PATH_MAX + 128];

	if (!sd->o->opstats_file || !*sd->o->opstats_file)
		return 0;
	/*
	 * Appended to at the end of the run: in the tree it was written into
	 * the tree's marker or one of its files (exit 0), or made a file the
	 * next run takes for a user's.
	 */
	if (target_path_in(sd->o->opstats_file, sd->o->tree_dir)) {
		pack_log_err(
			"smallfile: tree_opstats_file %s is in tree_dir %s: the tree holds only the engine's files; name a file outside it\n",
			sd->o->opstats_file, sd->o->tree_dir);
		return 1;
	}
	if (is_the_marker(sd->o->opstats_file, sd->o->tree_dir)) {
		pack_log_err(
			"smallfile: tree_opstats_file %s is a hard link to the marker of tree_dir %s; name another file\n",
			sd->o->opstats_file, sd->o->tree_dir);
		return 1;
	}
	if (!jsonl_check_path(sd->o->opstats_file, err, sizeof(err)))
		return 0;
	pack_log_err("smallfile: tree_opstats_file %s\n", err);
	return 1;
}

/*
 * One JSON line per job (engines/lib/jsonl.h): the counters, whole. A line
 * that cannot be written (the disk filled during the run) fails the job:
 * fio counts td->error set here in its exit status.
 */
void sf_write_opstats(struct thread_data *td, struct sf_data *sd)
{
	struct jsonl w = { 0 };
	char err[PATH_MAX + 128];
	int op, failed = 0;

	if (!sd->o->opstats_file || !*sd->o->opstats_file)
		return;
	jsonl_begin(&w);
	jsonl_str(&w, "engine", "smallfile");
	jsonl_str(&w, "job", td->o.name);
	jsonl_u64(&w, "subjob", td->subjob_number);
	jsonl_str(&w, "tree_dir", sd->root);
	/* three decimals, as a person reads it */
	jsonl_dbl(&w, "read_passes", read_passes_shown(sd));
	jsonl_u64(&w, "file_drop_cache", sd->o->file_drop_cache);
	jsonl_obj(&w, "ops");
	for (op = 0; op < FOP_NR; op++) {
		struct op_stats *s = &sd->stats[op];

		if (!s->ops)
			continue;
		jsonl_obj(&w, file_op_name(op));
		jsonl_u64(&w, "ops", s->ops);
		jsonl_u64(&w, "bytes", s->bytes);
		jsonl_u64(&w, "probes", s->probes);
		jsonl_u64(&w, "skipped", s->skipped);
		jsonl_u64(&w, "errors", s->errors);
		jsonl_u64(&w, "lat_mean_ns", s->lat_sum_ns / s->ops);
		jsonl_u64(&w, "lat_min_ns", s->lat_min_ns);
		jsonl_u64(&w, "lat_max_ns", s->lat_max_ns);
		jsonl_close(&w);
	}
	jsonl_close(&w);
	if (jsonl_end(&w)) {
		pack_log_err(
			"smallfile: tree_opstats_file %s: out of memory for the report line, nothing written\n",
			sd->o->opstats_file);
		failed = ENOMEM;
	} else if (jsonl_append(&w, sd->o->opstats_file, err, sizeof(err))) {
		failed = errno ? errno : EIO;
		pack_log_err("smallfile: tree_opstats_file %s\n", err);
	}
	jsonl_free(&w);
	if (failed && !td->error)
		td->error = failed;
}
