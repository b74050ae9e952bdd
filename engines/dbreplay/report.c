/* The end-of-job summary and the dbr_report_file line (see dbrengine.h). */
#include "dbrengine.h"

/* ------------------------------------------------------------------ */
/* Reports                                                             */
/* ------------------------------------------------------------------ */

static const char *direct_mode_name(unsigned m)
{
	return m == DIRECT_TRACE ? "trace" : m == DIRECT_TRY ? "try" : "off";
}

static const char *timing_name(enum timing t)
{
	return t == TM_ASAP ? "asap" : t == TM_ORIGINAL ? "original" : "scaled";
}

/*
 * The classes that saw an I/O, in (role, op) order, each with its "role op"
 * name: the summary's table and the report file's "classes" walk them with
 * this one loop, so the two list the same classes under the same names.
 */
struct class_iter {
	int next;      /* role * DBTRACE_OP_NR + op of the next class to look at */
	char name[64]; /* "role op" of the class last returned */
};

static const struct cls *next_class(const struct dbr_job *dj, struct class_iter *it)
{
	while (it->next < DBTRACE_ROLE_NR * DBTRACE_OP_NR) {
		int r = it->next / DBTRACE_OP_NR, o = it->next % DBTRACE_OP_NR;
		const struct cls *c = dj->cls[r][o];

		it->next++;
		if (!c || !c->lat.n)
			continue;
		snprintf(it->name, sizeof(it->name), "%s %s", dbtrace_role_name(r),
			 dbtrace_op_name(o));
		return c;
	}
	return NULL;
}

void dbr_write_summary(struct thread_data *td, struct dbr_job *dj)
{
	struct class_iter it = { 0 };
	const struct cls *c;
	int r;

	if (dj->o->report == REP_NONE)
		return;
	pack_log_info(
		"dbreplay: %s: %s: %llu records replayed (the trace has %llu) in %llu loop(s)%s, %llu errors, %.3f s (trace: %.3f s), timing %s",
		td->o.name, dj->trace_path, (unsigned long long)dj->replayed,
		(unsigned long long)dj->trace_records, (unsigned long long)dj->loop,
		!dj->partial			    ? ""
		: !strcmp(dj->cut_short, "runtime") ? " (the last cut short by runtime=)"
		: !strcmp(dj->cut_short, "stopped") ? " (the last cut short: fio stopped the job)"
						    : " (the last cut short by an error)",
		(unsigned long long)dj->errors, dj->replay_ns_total / 1e9, dj->trace_ns_total / 1e9,
		timing_name(dj->timing));
	if (dj->timing != TM_ASAP)
		pack_log_info(" x%g: lag p50 %.3f ms p99 %.3f ms max %.3f ms, ended %.3f ms behind",
			      dj->speed, lathist_percentile(&dj->lag, 50) / 1e6,
			      lathist_percentile(&dj->lag, 99) / 1e6, dj->lag.max / 1e6,
			      dj->behind_end_ns / 1e6);
	pack_log_info("\n");
	for (r = 0; r < (int)dj->nincomplete; r++)
		pack_log_info("dbreplay: %s: INCOMPLETE capture, the replay lacks: %s\n",
			      td->o.name, dj->incomplete[r]);
	for (r = 0; r < (int)dj->nfidelity; r++)
		pack_log_info("dbreplay: %s: NOT AS CAPTURED: %s\n", td->o.name, dj->fidelity[r]);
	pack_log_info("dbreplay: %-22s %10s %7s %12s %10s %10s %10s %10s %10s\n", "class", "ops",
		      "errors", "MiB", "mean_us", "p50_us", "p99_us", "p99.9_us", "max_us");
	while ((c = next_class(dj, &it)))
		pack_log_info(
			"dbreplay: %-22s %10llu %7llu %12.3f %10.1f %10.1f %10.1f %10.1f %10.1f\n",
			it.name, (unsigned long long)c->lat.n, (unsigned long long)c->errors,
			c->bytes / 1048576.0, lathist_mean(&c->lat) / 1e3,
			lathist_percentile(&c->lat, 50) / 1e3,
			lathist_percentile(&c->lat, 99) / 1e3,
			lathist_percentile(&c->lat, 99.9) / 1e3, c->lat.max / 1e3);
}

/*
 * The engine's outputs, dbr_report_file and dbr_record_log, are opened at
 * init, before anything is written: a path that cannot take them is said
 * then, not after the replay, and each is checked to be none of the
 * engine's other files. @option names it, @path its value; *@fd and
 * *@made are set. 0, or 1 with the error said.
 */
static int open_output(struct dbr_job *dj, const char *option, const char *path, int *fd, int *made)
{
	char err[PATH_MAX + 128];

	if (!path || !*path)
		return 0;
	*fd = jsonl_open(path, made, err, sizeof(err));
	if (*fd < 0) {
		pack_log_err("dbreplay: %s %s\n", option, err);
		return 1;
	}
	return dbr_distinct_fd(dj, *fd, option, path);
}

int dbr_open_report_file(struct dbr_job *dj)
{
	return open_output(dj, "dbr_report_file", dj->o->report_file, &dj->report_fd,
			   &dj->report_made);
}

/*
 * The record log is emptied only once every check has passed
 * (dbr_start_record_log), so a refused job leaves a file it did not make
 * as it was.
 */
int dbr_open_record_log(struct dbr_job *dj)
{
	return open_output(dj, "dbr_record_log", dj->o->record_log, &dj->rlog_fd, &dj->rlog_made);
}

/* Removes the file @path opened as @fd if it is still the empty one this job made. */
static void drop_made(int fd, const char *path)
{
	struct stat fst, st;

	if (fstat(fd, &fst) == 0 && fst.st_size == 0 && stat(path, &st) == 0 &&
	    st.st_dev == fst.st_dev && st.st_ino == fst.st_ino)
		unlink(path);
}

/* The record log from its first line: the replay starts. 0, or 1 with the error said. */
int dbr_start_record_log(struct dbr_job *dj)
{
	if (dj->rlog_fd < 0)
		return 0;
	if (NOINTR(ftruncate(dj->rlog_fd, 0)) || !(dj->rlog = fdopen(dj->rlog_fd, "a"))) {
		pack_log_err("dbreplay: dbr_record_log %s: %s\n", dj->o->record_log,
			     strerror(errno));
		return 1;
	}
	dj->rlog_fd = -1; /* the FILE's now */
	setvbuf(dj->rlog, NULL, _IOFBF, 1 << 16);
	fputs("# loop line stream file op due_ns issue_ns done_ns bytes errno\n", dj->rlog);
	return 0;
}

/* 0, or -errno if the log's last lines could not be written. */
int dbr_close_record_log(struct dbr_job *dj)
{
	int ret = 0;

	if (dj->rlog_fd >= 0) {
		/* never started: the job was refused */
		if (dj->rlog_made)
			drop_made(dj->rlog_fd, dj->o->record_log);
		close(dj->rlog_fd);
		dj->rlog_fd = -1;
	}
	if (dj->rlog) {
		/* a write that failed during the replay (stdio keeps the error), or the last ones */
		int lost = ferror(dj->rlog);

		if (fclose(dj->rlog) || lost)
			ret = errno ? -errno : -EIO;
	}
	dj->rlog = NULL;
	return ret;
}

/* A report file this job created and never wrote (the job was refused) goes again. */
void dbr_close_report_file(struct dbr_job *dj)
{
	if (dj->report_fd < 0)
		return;
	if (dj->report_made && !dj->report_written)
		drop_made(dj->report_fd, dj->o->report_file);
	close(dj->report_fd);
	dj->report_fd = -1;
}

/*
 * One JSON line per job (engines/lib/jsonl.h): counters, fidelity notes,
 * the trace's "incomplete" lines and the classes, whole. A class is one
 * object with its bytes and errors beside the members of its latency
 * distribution (n, mean_ns, ...: the shared convention's keys, flat, as
 * the readers of this report have them).
 */
void dbr_write_report_file(struct thread_data *td, struct dbr_job *dj)
{
	struct jsonl w = { 0 };
	struct class_iter it = { 0 };
	const struct cls *c;
	char err[ERRLEN];
	unsigned i;

	if (dj->report_fd < 0)
		return;
	jsonl_begin(&w);
	jsonl_str(&w, "engine", ENGINE);
	jsonl_str(&w, "job", td->o.name);
	jsonl_u64(&w, "subjob", td->subjob_number);
	jsonl_str(&w, "trace", dj->trace_path);
	jsonl_u64(&w, "trace_records", dj->trace_records);
	jsonl_u64(&w, "replayed", dj->replayed);
	jsonl_u64(&w, "filtered", dj->filtered);
	jsonl_u64(&w, "loops", dj->loop);
	jsonl_bool(&w, "last_loop_complete", !dj->partial);
	jsonl_str(&w, "cut_short_by", dj->cut_short);
	jsonl_bool(&w, "partial_accepted", dj->partial_accepted);
	jsonl_u64(&w, "errors", dj->errors);
	jsonl_u64(&w, "short_reads", dj->short_reads);
	jsonl_str(&w, "timing", timing_name(dj->timing));
	jsonl_dbl(&w, "speed", dj->speed);
	jsonl_str(&w, "io_api", dj->uring ? "io_uring" : "sync");
	jsonl_u64(&w, "stream_depth", dj->stream_depth);
	jsonl_str(&w, "mapping", dj->packed ? "packed" : "files");
	jsonl_u64(&w, "trace_duration_ns", dj->trace_ns_total);
	jsonl_u64(&w, "replay_duration_ns", dj->replay_ns_total);
	jsonl_u64(&w, "behind_at_end_ns", dj->behind_end_ns);
	jsonl_lat(&w, "lag", &dj->lag);
	jsonl_u64(&w, "implicit_creates", dj->implicit_creates);
	jsonl_u64(&w, "skipped", dj->skipped);
	jsonl_u64(&w, "unsupported", dj->unsupported);
	jsonl_i64(&w, "direct", dj->direct);
	jsonl_u64(&w, "buffered_records", dbr_buffered_records(dj));
	jsonl_str(&w, "dbr_direct", direct_mode_name(dj->o->direct_mode));
	jsonl_u64(&w, "direct_files", dj->direct_files);
	jsonl_bool(&w, "direct_files_replayed_direct",
		   dj->direct_files && (dj->direct || dj->trace_direct));
	jsonl_u64(&w, "direct_align", dj->dio_align);
	jsonl_str(&w, "depth", dj->depth ? "captured" : "fixed");
	jsonl_u64(&w, "captured_depth", dj->captured_depth);
	jsonl_u64(&w, "captured_total_depth", dj->captured_total);
	jsonl_u64(&w, "iodepth", td->o.iodepth);
	jsonl_bool(&w, "iodepth_from_trace", dj->iodepth_from_trace);
	jsonl_u64(&w, "ioworker_streams", dj->ioworkers);
	jsonl_bool(&w, "ioworker_reads_linked", 0);
	jsonl_u64(&w, "records_with_completion", dj->lat_records);
	/* the in-order path issues one record at a time, each of them */
	jsonl_u64(&w, "replay_stream_depth",
		  dj->in_order ? dj->pushed > 0
		  : dj->sched  ? dbsched_stream_max(dj->sched)
			       : 0);
	jsonl_arr(&w, "fidelity");
	for (i = 0; i < dj->nfidelity; i++)
		jsonl_str(&w, NULL, dj->fidelity[i]);
	jsonl_close(&w);
	jsonl_arr(&w, "incomplete");
	for (i = 0; i < dj->nincomplete; i++)
		jsonl_str(&w, NULL, dj->incomplete[i]);
	jsonl_close(&w);
	jsonl_obj(&w, "classes");
	while ((c = next_class(dj, &it))) {
		jsonl_obj(&w, it.name);
		jsonl_u64(&w, "bytes", c->bytes);
		jsonl_u64(&w, "errors", c->errors);
		jsonl_lat_members(&w, &c->lat);
		jsonl_close(&w);
	}
	jsonl_close(&w);
	if (jsonl_end(&w)) {
		pack_log_err(
			"dbreplay: dbr_report_file %s: out of memory: the job's line is not written\n",
			dj->o->report_file);
	} else if (jsonl_write(&w, dj->report_fd, dj->o->report_file, err, sizeof(err))) {
		pack_log_err("dbreplay: dbr_report_file %s\n", err);
	} else {
		dj->report_written = 1;
	}
	jsonl_free(&w);
	/* a report asked for and not written fails the job: its figures are lost */
	if (!dj->report_written && !td->error)
		td_verror(td, EIO, "dbr_report_file");
}
