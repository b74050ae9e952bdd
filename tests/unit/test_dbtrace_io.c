/* Tests of reading and writing database page-replay traces (dbtrace.h): round trips, gzip, descriptors, memory. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "dbtrace.h"
#include "dbtrace_fixture.h"
#include "test.h"

/* Resident set size in bytes (Linux). */
static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

TEST(dbtrace_round_trip_memory_and_path)
{
	char *path, *buf;
	size_t len;
	struct dbtrace *t;
	const struct dbtrace_file *f;

	buf = dbt_write_trace(&dbt_header, dbt_recs, NRECS, &len);
	if (!buf)
		return;
	/* offsets that are whole pages are written as pages */
	CHECK(strstr(buf, "\n100 0 0 read p1 8192\n") != NULL);
	CHECK(strstr(buf, "\n100 9 0 write 100 3\n") != NULL);
	CHECK(strstr(buf, "\nfile 4 temp - 100000 base/pgsql_tmp/pgsql_tmp42.0\n") != NULL);
	CHECK(strstr(buf, "\nend 15\n") != NULL);

	t = dbtrace_open_mem(buf, len, "mem", dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		dbt_check_trace(t, &dbt_header, dbt_recs, NRECS, 14);
		f = dbtrace_file_by_id(t, 4);
		CHECK(f && f->extent == 100000);
		f = dbtrace_file_by_id(t, 0);
		CHECK(f && f->extent == 1 << 20);
		CHECK(dbtrace_stream_by_id(t, 9)->records == 5);
		CHECK(dbtrace_stream_by_id(t, 9)->last_time == 161);
		dbtrace_close(t);
	}

	path = test_tmpfile(buf, len);
	t = dbtrace_open(path, dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		dbt_check_trace(t, &dbt_header, dbt_recs, NRECS, 14);
		dbtrace_close(t);
	}
	test_rm(path);
	free(buf);
}

TEST(dbtrace_untimed_round_trip)
{
	struct dbtrace_header h = dbt_header;
	struct dbtrace_rec r[NRECS];
	struct dbtrace *t;
	size_t i, len;
	char *buf;

	h.time_unit = DBTRACE_TIME_NONE;
	for (i = 0; i < NRECS; i++) {
		r[i] = dbt_recs[i];
		r[i].time = DBTRACE_NO_TIME;
	}
	buf = dbt_write_trace(&h, r, NRECS, &len);
	if (!buf)
		return;
	CHECK(strstr(buf, "\ntimeunit none\n") != NULL);
	CHECK(strstr(buf, "\n- 0 0 read p1 8192\n") != NULL);
	t = dbtrace_open_mem(buf, len, "mem", dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		dbt_check_trace(t, &h, r, NRECS, 14);
		dbtrace_close(t);
	}
	free(buf);
}

TEST(dbtrace_gzip)
{
	struct dbtrace *t;
	char *path, *buf, *gz;
	size_t len, gzlen;
	FILE *f;

	buf = dbt_write_trace(&dbt_header, dbt_recs, NRECS, &len);
	if (!buf)
		return;
	/* by path, in one member and in three */
	path = dbt_gz_file(buf, len, 1);
	t = dbtrace_open(path, dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		dbt_check_trace(t, &dbt_header, dbt_recs, NRECS, 14);
		dbtrace_close(t);
	}
	/* from memory, and from a FILE whose first bytes are already buffered */
	gz = dbt_slurp(path, &gzlen);
	t = dbtrace_open_mem(gz, gzlen, "gzmem", dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		dbt_check_trace(t, &dbt_header, dbt_recs, NRECS, 14);
		dbtrace_close(t);
	}
	f = fopen(path, "rb");
	CHECK(fgetc(f) == 0x1f && ungetc(0x1f, f) == 0x1f);
	t = dbtrace_open_file(f, "gzfile", dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		dbt_check_trace(t, &dbt_header, dbt_recs, NRECS, 14);
		dbtrace_close(t);
	}
	fclose(f);
	test_rm(path);

	path = dbt_gz_file(buf, len, 3);
	t = dbtrace_open(path, dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		dbt_check_trace(t, &dbt_header, dbt_recs, NRECS, 14);
		dbtrace_close(t);
	}
	test_rm(path);

	/* garbage after the stream; a corrupt stream */
	gz = realloc(gz, gzlen + 4);
	memcpy(gz + gzlen, "junk", 4);
	CHECK(dbt_parse_n(gz, gzlen + 4) == -1);
	CHECK_STREQ(dbt_err, "t line 30: data after the end of the gzip stream");
	gz[gzlen / 2] ^= 0x55;
	gz[gzlen / 2 + 1] ^= 0x55;
	CHECK(dbt_parse_n(gz, gzlen) == -1);
	CHECK(strstr(dbt_err, "corrupt gzip stream") || strstr(dbt_err, "line"));
	CHECK(!strncmp(dbt_err, "t line ", 7) && !strchr(dbt_err, '\n'));
	free(gz);
	free(buf);
}

TEST(dbtrace_truncated_gzip)
{
	char *path, *buf, *gz, want[128];
	size_t len, gzlen, cut;

	buf = dbt_write_trace(&dbt_header, dbt_recs, NRECS, &len);
	if (!buf)
		return;
	path = dbt_gz_file(buf, len, 1);
	gz = dbt_slurp(path, &gzlen);
	/* the whole text decompresses, only the 8-byte trailer is missing */
	CHECK(dbt_parse_n(gz, gzlen - 8) == -1);
	CHECK_STREQ(dbt_err, "t line 30: truncated gzip stream (the compressed data ends early)");
	/* plain text cut at the same place parses the same records: the gzip
	 * check is what tells a truncated trace from a clean end */
	for (cut = 10; cut < gzlen - 8; cut += 7) {
		CHECK(dbt_parse_n(gz, cut) == -1);
		CHECK(strstr(dbt_err, "truncated gzip stream") != NULL);
		CHECK(!strncmp(dbt_err, "t line ", 7) && !strchr(dbt_err, '\n'));
	}
	/* the complete file is fine */
	CHECK(dbt_parse_n(gz, gzlen) == (long)NRECS);
	/* a plain trace cut before its end line */
	snprintf(want, sizeof(want),
		 "t line 29: the trace ends without its 'end' line (truncated?)");
	CHECK(dbt_parse_n(buf, strstr(buf, "end 15") - buf) == -1);
	CHECK_STREQ(dbt_err, want);
	test_rm(path);
	free(gz);
	free(buf);
}

TEST(dbtrace_version2_round_trip)
{
	static const struct dbtrace_file files[] = {
		{ .id = 3,
		  .role = DBTRACE_ROLE_DATA,
		  .exists = 1,
		  .size = 8192,
		  .max_size = 8192,
		  .path = "a",
		  .direct = 1 },
		{ .id = 4,
		  .role = DBTRACE_ROLE_LOG,
		  .exists = 1,
		  .size = 0,
		  .max_size = 4096,
		  .path = "b" },
	};
	static const struct dbtrace_stream streams[] = { { .id = 0, .name = "t" } };
	struct dbtrace_header h = {
		.version = 2,
		.page_size = 4096,
		.time_unit = DBTRACE_TIME_NS,
		.source = "rt",
		.files = files,
		.nfiles = 2,
		.streams = streams,
		.nstreams = 1,
	};
	struct dbtrace_rec r[] = {
		{ .time = 5, .file = 3, .op = DBTRACE_READ, .off = 0, .len = 4096, .has_lat = 1,
		  .lat = 1000 },
		{ .time = 6, .file = 4, .op = DBTRACE_WRITE, .off = 1, .len = 10 },
		{ .time = 6, .file = 4, .op = DBTRACE_FSYNC, .has_lat = 1, .lat = 0 },
	}, got;
	struct dbtrace *t;
	size_t len, i;
	char *buf = dbt_write_trace(&h, r, 3, &len), *w1;
	FILE *f;

	CHECK(buf != NULL);
	if (!buf)
		return;
	CHECK(strstr(buf, "dbtrace 2\n") == buf);
	CHECK(strstr(buf, "file 3 data 8192 8192 a direct\n") != NULL);
	CHECK(strstr(buf, "5 0 3 read p0 4096 +1000\n") != NULL);
	CHECK(strstr(buf, "6 0 4 fsync +0\n") != NULL);
	t = dbtrace_open_mem(buf, len, "t", dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		CHECK(dbt_same_file(dbtrace_file_by_id(t, 3), &files[0]));
		CHECK(dbt_same_file(dbtrace_file_by_id(t, 4), &files[1]));
		for (i = 0; i < 3; i++)
			CHECK(dbtrace_next(t, &got) == 1 && dbt_same_rec(&got, &r[i]));
		dbtrace_close(t);
	}
	free(buf);

	/* a version-1 writer refuses what version 1 cannot say, and writes nothing */
	h.version = 0;
	f = open_memstream(&w1, &len);
	CHECK(dbtrace_write_header(f, &h, dbt_err, sizeof(dbt_err)) == NULL);
	CHECK(!strcmp(
		dbt_err,
		"output line 5: file 3: 'direct' needs 'dbtrace 2' (this trace is version 1)"));
	h.nfiles = 0;
	{
		static const struct dbtrace_file plain = { .id = 4,
							   .role = DBTRACE_ROLE_LOG,
							   .exists = 1,
							   .max_size = 4096,
							   .path = "b" };
		struct dbtrace *w;

		h.files = &plain;
		h.nfiles = 1;
		w = dbtrace_write_header(f, &h, dbt_err, sizeof(dbt_err));
		CHECK(w != NULL);
		if (w) {
			CHECK(dbtrace_write_record(w, &r[2]) == -1);
			CHECK(strstr(dbtrace_error(w), "needs 'dbtrace 2'") != NULL);
			dbtrace_close(w);
		}
	}
	fclose(f);
	CHECK(strstr(w1, "+0") == NULL);
	free(w1);
}

TEST(dbtrace_writer_checks)
{
	struct dbtrace_file bad_files[2] = { dbt_files[0], dbt_files[2] };
	struct dbtrace_header h = dbt_header;
	struct dbtrace_rec r;
	struct dbtrace *w;
	char *buf = NULL;
	size_t len;
	FILE *f;

	/* a bad header writes nothing */
	f = open_memstream(&buf, &len);
	bad_files[1].path = "../../etc";
	h.files = bad_files;
	h.nfiles = 2;
	CHECK(dbtrace_write_header(f, &h, dbt_err, sizeof(dbt_err)) == NULL);
	CHECK_STREQ(dbt_err, "output line 6: file 2: path '../../etc' has a '..' component");
	h.source = "two\nlines";
	CHECK(dbtrace_write_header(f, &h, dbt_err, sizeof(dbt_err)) == NULL);
	CHECK_STREQ(dbt_err, "output line 4: control character 0x0a in the line");
	bad_files[1].path = "base/1/1234";
	h.source = dbt_header.source;
	CHECK(dbtrace_write_header(f, &h, dbt_err, sizeof(dbt_err)) == NULL);
	CHECK_STREQ(
		dbt_err,
		"output line 6: file 2: path 'base/1/1234' already declared by file 0 on line 5");
	fflush(f);
	CHECK(len == 0);

	/* a bad record writes nothing and the writer carries on */
	w = dbtrace_write_header(f, &dbt_header, dbt_err, sizeof(dbt_err));
	CHECK(w != NULL);
	if (!w)
		return;
	r = dbt_recs[0];
	CHECK(dbtrace_write_record(w, &r) == 0);
	r.file = 1;
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK_STREQ(dbtrace_error(w), "output line 15: undeclared file 1");
	r.file = 0;
	r.time = 99;
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK_STREQ(dbtrace_error(w), "output line 15: time 99 goes back from 100 in stream 0");
	r.time = DBTRACE_NO_TIME;
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK_STREQ(dbtrace_error(w), "output line 15: time '-' in a timed trace (timeunit us)");
	r.time = 200;
	r.off = 1 << 20;
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK_STREQ(
		dbtrace_error(w),
		"output line 15: read 1048576+8192 ends at 1056768, beyond file 0's max size 1048576");
	r.off = 0;
	r.op = DBTRACE_OP_NR;
	CHECK(dbtrace_write_record(w, &r) == -1);
	r.op = DBTRACE_FSYNC;
	CHECK(dbtrace_write_record(w, &r) == 0);
	CHECK(dbtrace_write_end(w) == 0);
	CHECK(dbtrace_write_record(w, &r) == -1);
	CHECK(dbtrace_write_end(w) == -1);
	dbtrace_close(w);
	fclose(f);
	CHECK(buf && strstr(buf, "\n100 0 0 read p1 8192\n200 0 0 fsync\nend 2\n") != NULL);
	CHECK(dbt_parse(buf) == 2);
	free(buf);
}

TEST(dbtrace_open_errors)
{
	CHECK(dbtrace_open("/nonexistent/trace", dbt_err, sizeof(dbt_err)) == NULL);
	CHECK_STREQ(dbt_err, "cannot open /nonexistent/trace: No such file or directory");
}

TEST(dbtrace_span_and_paths)
{
	struct dbtrace_file fs[3] = { dbt_files[0], dbt_files[2], dbt_files[4] };
	struct dbtrace_header h = { .page_size = 4096, .files = fs, .nfiles = 3 };
	char why[128];
	uint64_t total;

	/* directories take no room; each file rounded up to the alignment */
	CHECK(dbtrace_span(&h, 0, &total) == 0 && total == (1 << 20) + 100000);
	CHECK(dbtrace_span(&h, 4096, &total) == 0 && total == (1 << 20) + 102400);
	fs[0].max_size = INT64_MAX - 50000;
	CHECK(dbtrace_span(&h, 1, &total) == -1);
	fs[0].max_size = INT64_MAX;
	fs[2].max_size = 0;
	CHECK(dbtrace_span(&h, 1, &total) == 0 && total == INT64_MAX);
	CHECK(dbtrace_span(&h, 4096, &total) == -1);

	CHECK(dbtrace_path_check("a/b.c", DBTRACE_ROLE_DATA, why, sizeof(why)) == 0);
	CHECK(dbtrace_path_check("...", DBTRACE_ROLE_DATA, why, sizeof(why)) == 0);
	CHECK(dbtrace_path_check(".", DBTRACE_ROLE_DIRECTORY, why, sizeof(why)) == 0);
	CHECK(dbtrace_path_check("", DBTRACE_ROLE_DATA, why, sizeof(why)) == -1);
	CHECK_STREQ(why, "is empty");
	CHECK(dbtrace_path_check("a b", DBTRACE_ROLE_DATA, why, sizeof(why)) == -1);
	CHECK_STREQ(why, "has a blank or control character");
	CHECK(dbtrace_path_check("a/..", DBTRACE_ROLE_DATA, why, sizeof(why)) == -1);
	CHECK(dbtrace_path_check("//x", DBTRACE_ROLE_DATA, why, sizeof(why)) == -1);
	CHECK_STREQ(why, "is absolute");

	CHECK_STREQ(dbtrace_op_name(DBTRACE_SYNC_FILE_RANGE), "sync_file_range");
	CHECK_STREQ(dbtrace_role_name(DBTRACE_ROLE_JOURNAL), "journal");
	CHECK_STREQ(dbtrace_time_unit_name(DBTRACE_TIME_NONE), "none");
	CHECK(dbtrace_time_unit_ns(DBTRACE_TIME_MS) == 1000000);
}

/*
 * A million records through the writer and back through the parser. The
 * parser allocates only while reading the header: the heap in use is the
 * same after the last record as after the first (mallinfo2; meaningless
 * but harmless under ASan), and the resident set does not grow - under ASan
 * freed memory sits in quarantine, so even per-record malloc/free would show.
 */
TEST(dbtrace_million_records_flat_memory)
{
	const uint64_t n = 1000000;
	struct dbtrace_rec r = { 0 }, got;
	struct dbtrace *w, *t;
	char *path = test_tmpfile("", 0);
	FILE *f = fopen(path, "w");
	size_t heap_first = 0;
	long rss_first = 0;
	uint64_t i, k = 0;
	int ret;

	w = dbtrace_write_header(f, &dbt_header, dbt_err, sizeof(dbt_err));
	CHECK(w != NULL);
	if (!w)
		return;
	for (i = 0; i < n; i++) {
		r.time = i / 3;
		r.stream = i % 2 ? 9 : 0;
		r.file = i % 5 ? 0 : 7;
		r.op = i % 7 ? DBTRACE_READ : DBTRACE_WRITE;
		r.off = (i * 8192) % (1 << 20);
		r.len = 8192;
		if (dbtrace_write_record(w, &r)) {
			CHECK(!"writer rejected a record");
			break;
		}
	}
	CHECK(dbtrace_write_end(w) == 0);
	dbtrace_close(w);
	fclose(f);

	t = dbtrace_open(path, dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (!t) {
		test_rm(path);
		return;
	}
	while ((ret = dbtrace_next(t, &got)) == 1) {
		if (++k == 1000) {
			rss_first =
				rss_bytes(); /* first: glibc keeps what its first fscanf() allocates */
			heap_first = mallinfo2().uordblks;
		}
		if (got.line != 13 + k) {
			CHECK(got.line == 13 + k);
			break;
		}
	}
	CHECK(ret == 0);
	CHECK(k == n);
	CHECK(mallinfo2().uordblks == heap_first);
	CHECK(rss_bytes() - rss_first < 4 << 20);
	CHECK(dbtrace_stream_by_id(t, 9)->records == n / 2);
	CHECK(dbtrace_file_by_id(t, 0)->extent == 1 << 20);
	dbtrace_close(t);
	test_rm(path);
}

TEST(dbtrace_open_fd_takes_the_descriptor)
{
	static const char text[] = "dbtrace 1\npagesize 4096\ntimeunit none\nsource t\n"
				   "file 0 data p1 p1 db\nstream 0 a\n- 0 0 read 0 4096\nend 1\n";
	char *path = test_tmpfile(text, sizeof(text) - 1), dbt_err[256];
	struct dbtrace_rec r;
	struct dbtrace *t;
	int fd = open(path, O_RDONLY);

	t = dbtrace_open_fd(fd, "named.trace", dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		CHECK(dbtrace_next(t, &r) == 1 && r.op == DBTRACE_READ);
		CHECK(dbtrace_next(t, &r) == 0);
		dbtrace_close(t);
	}
	/* closed by dbtrace_close */
	CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
	/* a bad descriptor: an error naming the trace, nothing leaked */
	CHECK(dbtrace_open_fd(-1, "named.trace", dbt_err, sizeof(dbt_err)) == NULL);
	CHECK(strncmp(dbt_err, "named.trace: ", 13) == 0);
	test_rm(path);
}
