/* The per-operation report, opstats_file (see sfengine.h). */
#include "sfengine.h"

/* Whole-file reads of this job over the tree's files: past 1, files were read again. */
static double read_passes(const struct sf_data *sd)
{
	return sd->shape.nfiles ? (double)sd->stats[FOP_READ].ops / (double)sd->shape.nfiles : 0;
}

/*
 * A read job that went past one pass over the tree (time_based, number_ios
 * or loops above the tree's files) reads files again, which the page cache
 * may serve: a cold test turned warm. Said in one line, unless each read
 * dropped its file from the cache.
 */
void sf_say_passes(struct thread_data *td, struct sf_data *sd)
{
	double p = read_passes(sd);

	if (p <= 1.0 || sd->o->file_drop_cache)
		return;
	pack_log_info(
		"smallfile: job %s read %llu files of a %llu-file tree: %.2f passes; reads after the first pass may come from the page cache (for a cold test: number_ios= at most tree_files with caches dropped first, or tree_drop_cache=1)\n",
		td->o.name ? td->o.name : "?", (unsigned long long)sd->stats[FOP_READ].ops,
		(unsigned long long)sd->shape.nfiles, p);
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
	jsonl_dbl(&w, "read_passes", round(read_passes(sd) * 1000) / 1000);
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
