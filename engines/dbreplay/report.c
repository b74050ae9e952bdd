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

void dbr_write_summary(struct thread_data *td, struct dbr_job *dj)
{
	int r, o;

	if (dj->o->report == REP_NONE)
		return;
	log_err("dbreplay: %s: %s: %llu records replayed (the trace has %llu) in %llu loop(s)%s, %llu errors, %.3f s (trace: %.3f s), timing %s",
		td->o.name, dj->trace_path, (unsigned long long)dj->replayed,
		(unsigned long long)dj->trace_records, (unsigned long long)dj->loop,
		dj->partial ? " (the last cut short)" : "", (unsigned long long)dj->errors,
		dj->replay_ns_total / 1e9, dj->trace_ns_total / 1e9, timing_name(dj->timing));
	if (dj->timing != TM_ASAP)
		log_err(" x%g: lag p50 %.3f ms p99 %.3f ms max %.3f ms, ended %.3f ms behind",
			dj->speed, lathist_percentile(&dj->lag, 50) / 1e6,
			lathist_percentile(&dj->lag, 99) / 1e6, dj->lag.max / 1e6,
			dj->behind_end_ns / 1e6);
	log_err("\n");
	for (r = 0; r < (int)dj->nincomplete; r++)
		log_err("dbreplay: %s: INCOMPLETE capture, the replay lacks: %s\n", td->o.name,
			dj->incomplete[r]);
	for (r = 0; r < (int)dj->nfidelity; r++)
		log_err("dbreplay: %s: NOT AS CAPTURED: %s\n", td->o.name, dj->fidelity[r]);
	log_err("dbreplay: %-22s %10s %7s %12s %10s %10s %10s %10s %10s\n", "class", "ops", "errors",
		"MiB", "mean_us", "p50_us", "p99_us", "p99.9_us", "max_us");
	for (r = 0; r < DBTRACE_ROLE_NR; r++)
		for (o = 0; o < DBTRACE_OP_NR; o++) {
			const struct cls *c = dj->cls[r][o];
			char name[64];

			if (!c || !c->lat.n)
				continue;
			snprintf(name, sizeof(name), "%s %s", dbtrace_role_name(r), dbtrace_op_name(o));
			log_err("dbreplay: %-22s %10llu %7llu %12.3f %10.1f %10.1f %10.1f %10.1f %10.1f\n",
				name, (unsigned long long)c->lat.n, (unsigned long long)c->errors,
				c->bytes / 1048576.0, lathist_mean(&c->lat) / 1e3,
				lathist_percentile(&c->lat, 50) / 1e3,
				lathist_percentile(&c->lat, 99) / 1e3,
				lathist_percentile(&c->lat, 99.9) / 1e3, c->lat.max / 1e3);
		}
}

static int json_hist(char *buf, size_t len, const struct lathist *h)
{
	return snprintf(buf, len,
			"\"n\":%llu,\"mean_ns\":%llu,\"min_ns\":%llu,\"p50_ns\":%llu,\"p90_ns\":%llu,\"p99_ns\":%llu,\"p99.9_ns\":%llu,\"max_ns\":%llu",
			(unsigned long long)h->n, (unsigned long long)lathist_mean(h),
			(unsigned long long)h->min, (unsigned long long)lathist_percentile(h, 50),
			(unsigned long long)lathist_percentile(h, 90),
			(unsigned long long)lathist_percentile(h, 99),
			(unsigned long long)lathist_percentile(h, 99.9), (unsigned long long)h->max);
}

/* One JSON line per job: classes, fidelity, counters. */
void dbr_write_report_file(struct thread_data *td, struct dbr_job *dj)
{
	char *buf, name[512], tpath[PATH_MAX * 2], hist[512];
	size_t cap = 65536, n = 0;
	int r, o, first = 1, fd;
	unsigned i;

	if (!dj->o->report_file || !*dj->o->report_file)
		return;
	for (i = 0; i < dj->nincomplete; i++)
		cap += 6 * strlen(dj->incomplete[i]) + 4;	/* escaped: at most \u00XX a byte */
	buf = malloc(cap);
	if (!buf)
		return;
	pack_json_escape(td->o.name, name, sizeof(name));
	pack_json_escape(dj->trace_path, tpath, sizeof(tpath));
	json_hist(hist, sizeof(hist), &dj->lag);
	n += snprintf(buf + n, cap - n,
		      "{\"engine\":\"dbreplay\",\"job\":\"%s\",\"subjob\":%u,\"trace\":\"%s\",\"trace_records\":%llu,\"replayed\":%llu,\"filtered\":%llu,\"loops\":%llu,\"last_loop_complete\":%s,\"errors\":%llu,"
		      "\"timing\":\"%s\",\"speed\":%g,\"io_api\":\"%s\",\"stream_depth\":%u,\"mapping\":\"%s\","
		      "\"trace_duration_ns\":%llu,\"replay_duration_ns\":%llu,\"behind_at_end_ns\":%llu,\"lag\":{%s},"
		      "\"implicit_creates\":%llu,\"skipped\":%llu,\"unsupported\":%llu,\"direct\":%d,\"buffered_records\":%llu,"
		      "\"dbr_direct\":\"%s\",\"direct_files\":%u,\"direct_files_replayed_direct\":%s,\"direct_align\":%u,"
		      "\"depth\":\"%s\",\"captured_depth\":%u,\"records_with_completion\":%llu,\"replay_stream_depth\":%u,",
		      name, td->subjob_number, tpath, (unsigned long long)dj->trace_records,
		      (unsigned long long)dj->replayed, (unsigned long long)dj->filtered,
		      (unsigned long long)dj->loop, dj->partial ? "false" : "true",
		      (unsigned long long)dj->errors, timing_name(dj->timing), dj->speed,
		      dj->uring ? "io_uring" : "sync", dj->stream_depth, dj->packed ? "packed" : "files",
		      (unsigned long long)dj->trace_ns_total, (unsigned long long)dj->replay_ns_total,
		      (unsigned long long)dj->behind_end_ns, hist,
		      (unsigned long long)dj->implicit_creates, (unsigned long long)dj->skipped,
		      (unsigned long long)dj->unsupported, dj->direct,
		      (unsigned long long)dbr_buffered_records(dj),
		      direct_mode_name(dj->o->direct_mode), dj->direct_files,
		      dj->direct_files && (dj->direct || dj->trace_direct) ? "true" : "false",
		      dj->dio_align,
		      dj->depth ? "captured" : "fixed", dj->captured_depth,
		      (unsigned long long)dj->lat_records,
		      dj->sched ? dbsched_stream_max(dj->sched) : 0);
	n += snprintf(buf + n, cap - n, "\"fidelity\":[");
	for (i = 0; i < dj->nfidelity; i++) {
		n += snprintf(buf + n, cap - n, "%s\"", i ? "," : "");
		pack_json_escape(dj->fidelity[i], buf + n, cap - n);
		n += strlen(buf + n);
		n += snprintf(buf + n, cap - n, "\"");
	}
	n += snprintf(buf + n, cap - n, "],");
	n += snprintf(buf + n, cap - n, "\"incomplete\":[");
	for (i = 0; i < dj->nincomplete; i++) {
		n += snprintf(buf + n, cap - n, "%s\"", i ? "," : "");
		pack_json_escape(dj->incomplete[i], buf + n, cap - n);
		n += strlen(buf + n);
		n += snprintf(buf + n, cap - n, "\"");
	}
	n += snprintf(buf + n, cap - n, "],\"classes\":{");
	for (r = 0; r < DBTRACE_ROLE_NR; r++)
		for (o = 0; o < DBTRACE_OP_NR; o++) {
			const struct cls *c = dj->cls[r][o];

			if (!c || !c->lat.n || n + 1024 > cap)
				continue;
			json_hist(hist, sizeof(hist), &c->lat);
			n += snprintf(buf + n, cap - n, "%s\"%s %s\":{\"bytes\":%llu,\"errors\":%llu,%s}",
				      first ? "" : ",", dbtrace_role_name(r), dbtrace_op_name(o),
				      (unsigned long long)c->bytes, (unsigned long long)c->errors, hist);
			first = 0;
		}
	n += snprintf(buf + n, cap - n, "}}\n");
	fd = open(dj->o->report_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, n) != (ssize_t)n)
		log_err("dbreplay: dbr_report_file %s: %s\n", dj->o->report_file, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(buf);
}
