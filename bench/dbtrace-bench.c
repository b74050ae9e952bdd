/*
 * dbtrace-bench: the synthetic database trace of `scripts/fio-pack bench dbreplay`,
 * and the parse rate and peak memory of the dbtrace parser on its own.
 *
 *   dbtrace-bench gen --records N [--seed S] [--streams K] [--io BYTES]
 *                     [--data-mib M] [--log-mib M] [--log-share PCT]
 *                     [--read-pct PCT] [--sync-every W]
 *       Writes a trace to stdout through the C writer (dbtrace_write_*: every
 *       line is checked by the parser's own code before it is written):
 *       pagesize BYTES (default 8192), timeunit us, file 0 a data file of
 *       M MiB (default 64) and file 1 a log file of M MiB (default 16), both
 *       existing at their full size; K backend streams (default 4) and a
 *       walwriter stream. Each step is, with probability PCT % (default 20)
 *       a log write of BYTES at the log's next offset (sequential, wrapping
 *       at the end of the file, as a circular redo log) by the walwriter,
 *       followed by an fdatasync of the log every W log writes (default 8);
 *       otherwise a data read (PCT %, default 70) or write of one random page
 *       by a random backend. Times (us) grow by 1..100 per step. Exactly N
 *       records (an fdatasync counts as one). One line on stderr: the counts.
 *
 *   dbtrace-bench parse TRACE
 *       Reads TRACE (plain or gzip) with dbtrace_open/dbtrace_next and
 *       prints one JSON line: records, seconds (CLOCK_MONOTONIC around the
 *       whole read, open included), records_per_s, cpu_s (user+system),
 *       input bytes, vmhwm_kib (VmHWM of /proc/self/status: the peak RSS of
 *       this program image) and maxrss_kib (getrusage ru_maxrss, which Linux
 *       carries over execve: it includes the process this one was forked
 *       from, e.g. a large Python parent).
 *
 * Built by make (build/bench/dbtrace-bench) from engines/lib.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "dbtrace.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static uint64_t below(uint64_t n)
{
	return rnd() % n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: dbtrace-bench gen --records N [--seed S] [--streams K] [--io BYTES]\n"
		"                         [--data-mib M] [--log-mib M] [--log-share PCT]\n"
		"                         [--read-pct PCT] [--sync-every W] > TRACE\n"
		"       dbtrace-bench parse TRACE\n");
	return 2;
}

static int gen(int argc, char **argv)
{
	uint64_t records = 0, seed = 1, streams = 4, io = 8192, data_mib = 64, log_mib = 16;
	uint64_t log_share = 20, read_pct = 70, sync_every = 8;
	uint64_t n = 0, t = 1000000, log_off = 0, log_writes = 0;
	uint64_t data_reads = 0, data_writes = 0, log_syncs = 0;
	struct dbtrace_file files[2];
	struct dbtrace_stream st[65];
	struct dbtrace_header h;
	struct dbtrace_rec r;
	struct dbtrace *w;
	char names[65][32], src[512], err[1024];
	uint64_t data_pages, log_size;
	int i;

	for (i = 2; i < argc; i++) {
		uint64_t *dst = NULL;

		if (!strcmp(argv[i], "--records"))
			dst = &records;
		else if (!strcmp(argv[i], "--seed"))
			dst = &seed;
		else if (!strcmp(argv[i], "--streams"))
			dst = &streams;
		else if (!strcmp(argv[i], "--io"))
			dst = &io;
		else if (!strcmp(argv[i], "--data-mib"))
			dst = &data_mib;
		else if (!strcmp(argv[i], "--log-mib"))
			dst = &log_mib;
		else if (!strcmp(argv[i], "--log-share"))
			dst = &log_share;
		else if (!strcmp(argv[i], "--read-pct"))
			dst = &read_pct;
		else if (!strcmp(argv[i], "--sync-every"))
			dst = &sync_every;
		if (!dst || i + 1 >= argc)
			return usage();
		*dst = strtoull(argv[++i], NULL, 10);
	}
	if (!records || !streams || streams > 64 || io < 512 || (io & (io - 1)) || io > (1 << 20) ||
	    !data_mib || !log_mib || log_share > 100 || read_pct > 100 || !sync_every) {
		fprintf(stderr, "dbtrace-bench gen: bad arguments\n");
		return usage();
	}
	rng_state ^= seed * 0xbf58476d1ce4e5b9ULL;
	if (!rng_state)
		rng_state = 1;
	data_pages = (data_mib << 20) / io;
	log_size = log_mib << 20;

	snprintf(src, sizeof(src),
		 "synthetic (bench/dbtrace-bench.c gen --records %" PRIu64 " --seed %" PRIu64
		 " --streams %" PRIu64 " --io %" PRIu64 " --data-mib %" PRIu64 " --log-mib %" PRIu64
		 " --log-share %" PRIu64 " --read-pct %" PRIu64 " --sync-every %" PRIu64
		 "): random data page reads/writes by backends, sequential circular log writes with fdatasync",
		 records, seed, streams, io, data_mib, log_mib, log_share, read_pct, sync_every);
	memset(files, 0, sizeof(files));
	files[0] = (struct dbtrace_file){ .id = 0, .role = DBTRACE_ROLE_DATA, .exists = 1,
					  .size = data_mib << 20, .max_size = data_mib << 20,
					  .path = "base/16384/16397" };
	files[1] = (struct dbtrace_file){ .id = 1, .role = DBTRACE_ROLE_LOG, .exists = 1,
					  .size = log_size, .max_size = log_size,
					  .path = "pg_wal/000000010000000000000001" };
	for (i = 0; i <= (int)streams; i++) {
		if (i < (int)streams)
			snprintf(names[i], sizeof(names[i]), "backend-%d", i);
		else
			snprintf(names[i], sizeof(names[i]), "walwriter");
		st[i] = (struct dbtrace_stream){ .id = (uint32_t)i, .name = names[i] };
	}
	h = (struct dbtrace_header){ .page_size = (uint32_t)io, .time_unit = DBTRACE_TIME_US,
				     .source = src, .files = files, .nfiles = 2,
				     .streams = st, .nstreams = (unsigned)streams + 1 };
	w = dbtrace_write_header(stdout, &h, err, sizeof(err));
	if (!w) {
		fprintf(stderr, "dbtrace-bench gen: %s\n", err);
		return 1;
	}
	while (n < records) {
		memset(&r, 0, sizeof(r));
		t += 1 + below(100);
		r.time = t;
		if (below(100) < log_share) {
			r.stream = (uint32_t)streams;
			r.file = 1;
			r.op = DBTRACE_WRITE;
			r.off = log_off;
			r.len = io;
			log_off = log_off + io >= log_size ? 0 : log_off + io;
			log_writes++;
		} else {
			r.stream = (uint32_t)below(streams);
			r.file = 0;
			r.op = below(100) < read_pct ? DBTRACE_READ : DBTRACE_WRITE;
			r.off = below(data_pages) * io;
			r.len = io;
		}
		if (dbtrace_write_record(w, &r)) {
			fprintf(stderr, "dbtrace-bench gen: %s\n", dbtrace_error(w));
			return 1;
		}
		if (r.file == 0)
			*(r.op == DBTRACE_READ ? &data_reads : &data_writes) += 1;
		n++;
		if (r.file == 1 && log_writes % sync_every == 0 && n < records) {
			memset(&r, 0, sizeof(r));
			r.time = t;
			r.stream = (uint32_t)streams;
			r.file = 1;
			r.op = DBTRACE_FDATASYNC;
			if (dbtrace_write_record(w, &r)) {
				fprintf(stderr, "dbtrace-bench gen: %s\n", dbtrace_error(w));
				return 1;
			}
			log_syncs++;
			n++;
		}
	}
	if (dbtrace_write_end(w) || fflush(stdout)) {
		fprintf(stderr, "dbtrace-bench gen: %s\n", dbtrace_error(w));
		return 1;
	}
	dbtrace_close(w);
	fprintf(stderr, "{\"records\":%" PRIu64 ",\"data_read\":%" PRIu64 ",\"data_write\":%" PRIu64
		",\"log_write\":%" PRIu64 ",\"log_fdatasync\":%" PRIu64 ",\"io\":%" PRIu64 "}\n",
		n, data_reads, data_writes, log_writes, log_syncs, io);
	return 0;
}

/* Peak resident set of this program image (VmHWM), KiB; -1 if unknown. */
static long vm_hwm_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6)) {
			kib = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

static int parse(const char *path)
{
	char err[1024];
	struct dbtrace_rec r;
	struct rusage ru;
	struct stat sb;
	struct dbtrace *t;
	uint64_t n = 0;
	double t0, t1, cpu;
	int ret;

	t0 = now_s();
	t = dbtrace_open(path, err, sizeof(err));
	if (!t) {
		fprintf(stderr, "dbtrace-bench parse: %s\n", err);
		return 1;
	}
	while ((ret = dbtrace_next(t, &r)) > 0)
		n++;
	t1 = now_s();
	if (ret < 0) {
		fprintf(stderr, "dbtrace-bench parse: %s\n", dbtrace_error(t));
		dbtrace_close(t);
		return 1;
	}
	dbtrace_close(t);
	getrusage(RUSAGE_SELF, &ru);
	cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	      ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	printf("{\"records\":%" PRIu64 ",\"seconds\":%.6f,\"records_per_s\":%.0f,\"cpu_s\":%.6f,"
	       "\"bytes\":%lld,\"vmhwm_kib\":%ld,\"maxrss_kib\":%ld}\n",
	       n, t1 - t0, n / (t1 - t0), cpu, stat(path, &sb) ? -1LL : (long long)sb.st_size,
	       vm_hwm_kib(), ru.ru_maxrss);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "gen"))
		return gen(argc, argv);
	if (argc == 3 && !strcmp(argv[1], "parse"))
		return parse(argv[2]);
	return usage();
}
