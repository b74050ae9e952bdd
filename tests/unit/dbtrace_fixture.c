/* What the dbtrace unit tests share (test_dbtrace.c, test_dbtrace_io.c): see dbtrace_fixture.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dbtrace_fixture.h"
#include "test.h"

char dbt_err[1024];

/* Parses @text (memory, named "t"): records, or -1 with the message in err. */
long dbt_parse_n(const char *text, size_t len)
{
	struct dbtrace_rec rec;
	struct dbtrace *t;
	long n = 0;
	int r;

	dbt_err[0] = '\0';
	t = dbtrace_open_mem(text, len, "t", dbt_err, sizeof(dbt_err));
	if (!t)
		return -1;
	while ((r = dbtrace_next(t, &rec)) == 1)
		n++;
	if (r < 0) {
		snprintf(dbt_err, sizeof(dbt_err), "%s", dbtrace_error(t));
		n = -1;
		/* the error is sticky */
		CHECK(dbtrace_next(t, &rec) == -1);
	} else {
		CHECK(dbtrace_next(t, &rec) == 0);
	}
	dbtrace_close(t);
	return n;
}

long dbt_parse(const char *text)
{
	return dbt_parse_n(text, strlen(text));
}

/* @text must fail with exactly @want; a message is one line. */
void dbt_check_error(const char *text, const char *want, const char *file, int srcline)
{
	if (dbt_parse(text) != -1) {
		printf("  (test line %d: parsed without error)\n", srcline);
		test_fail(file, srcline, "an error was expected");
		return;
	}
	CHECK(!strchr(dbt_err, '\n'));
	if (strcmp(dbt_err, want))
		test_fail_str(file, srcline, "error message", dbt_err, want);
}

const struct dbtrace_file dbt_files[] = {
	{ .id = 0,
	  .role = DBTRACE_ROLE_DATA,
	  .exists = 1,
	  .size = 16384,
	  .max_size = 1 << 20,
	  .path = "base/1/1234" },
	{ .id = 7,
	  .role = DBTRACE_ROLE_LOG,
	  .exists = 1,
	  .size = 0,
	  .max_size = 1 << 24,
	  .path = "pg_wal/000000010000000000000001" },
	{ .id = 2, .role = DBTRACE_ROLE_DIRECTORY, .exists = 1, .path = "pg_wal" },
	{ .id = 3, .role = DBTRACE_ROLE_DIRECTORY, .exists = 1, .path = "." },
	{ .id = 4,
	  .role = DBTRACE_ROLE_TEMP,
	  .exists = 0,
	  .max_size = 100000,
	  .path = "base/pgsql_tmp/pgsql_tmp42.0" },
	{ .id = 5,
	  .role = DBTRACE_ROLE_JOURNAL,
	  .exists = 1,
	  .size = 512,
	  .max_size = 512,
	  .path = "db-journal" },
	{ .id = 6,
	  .role = DBTRACE_ROLE_OTHER,
	  .exists = 1,
	  .size = 10,
	  .max_size = 10,
	  .path = "postmaster.pid" },
};

const struct dbtrace_stream dbt_streams[] = {
	{ .id = 0, .name = "backend-4242" },
	{ .id = 9, .name = "checkpointer" },
};

const struct dbtrace_rec dbt_recs[] = {
	{ .time = 100, .stream = 0, .file = 0, .op = DBTRACE_READ, .off = 8192, .len = 8192 },
	{ .time = 100, .stream = 9, .file = 0, .op = DBTRACE_WRITE, .off = 100, .len = 3 },
	{ .time = 150, .stream = 0, .file = 7, .op = DBTRACE_WRITE, .off = 0, .len = 16384 },
	{ .time = 151, .stream = 0, .file = 7, .op = DBTRACE_FDATASYNC },
	{ .time = 120, .stream = 9, .file = 0, .op = DBTRACE_SYNC_FILE_RANGE, .off = 0, .len = 0 },
	{ .time = 160, .stream = 9, .file = 0, .op = DBTRACE_FSYNC },
	{ .time = 160, .stream = 9, .file = 2, .op = DBTRACE_FSYNC },
	{ .time = 161, .stream = 9, .file = 3, .op = DBTRACE_FSYNC },
	{ .time = 170, .stream = 0, .file = 4, .op = DBTRACE_CREATE },
	{ .time = 171, .stream = 0, .file = 4, .op = DBTRACE_WRITE, .off = 90000, .len = 10000 },
	{ .time = 172, .stream = 0, .file = 4, .op = DBTRACE_TRUNCATE, .size = 4096 },
	{ .time = 173, .stream = 0, .file = 4, .op = DBTRACE_UNLINK },
	{ .time = 180, .stream = 0, .file = 0, .op = DBTRACE_TRIM, .off = 1 << 19, .len = 1 << 19 },
	{ .time = 190, .stream = 0, .file = 5, .op = DBTRACE_READ, .off = 0, .len = 512 },
	{ .time = 191, .stream = 0, .file = 6, .op = DBTRACE_WRITE, .off = 0, .len = 10 },
};

const struct dbtrace_header dbt_header = {
	.page_size = 8192,
	.time_unit = DBTRACE_TIME_US,
	.source = "PostgreSQL 15 pgbench -c 2 -T 5, strace -f -ttt -T, hand-checked",
	.files = dbt_files,
	.nfiles = sizeof(dbt_files) / sizeof(dbt_files[0]),
	.streams = dbt_streams,
	.nstreams = sizeof(dbt_streams) / sizeof(dbt_streams[0]),
};

/* Writes the header and records into a malloc'ed buffer (size in *len). */
char *dbt_write_trace(const struct dbtrace_header *h, const struct dbtrace_rec *r, size_t n,
		      size_t *len)
{
	struct dbtrace *w;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	size_t i;

	w = dbtrace_write_header(f, h, dbt_err, sizeof(dbt_err));
	CHECK(w != NULL);
	if (!w) {
		printf("  %s\n", dbt_err);
		fclose(f);
		free(buf);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (dbtrace_write_record(w, &r[i])) {
			printf("  %s\n", dbtrace_error(w));
			CHECK(!"record rejected");
		}
	CHECK(dbtrace_write_end(w) == 0);
	dbtrace_close(w);
	fclose(f);
	return buf;
}

int dbt_same_file(const struct dbtrace_file *a, const struct dbtrace_file *b)
{
	return a->id == b->id && a->role == b->role && a->exists == b->exists &&
	       a->size == b->size && a->max_size == b->max_size && !strcmp(a->path, b->path) &&
	       a->direct == b->direct;
}

int dbt_same_rec(const struct dbtrace_rec *a, const struct dbtrace_rec *b)
{
	return a->time == b->time && a->stream == b->stream && a->file == b->file &&
	       a->has_lat == b->has_lat && a->lat == b->lat && a->op == b->op && a->off == b->off &&
	       a->len == b->len && a->size == b->size;
}

/* Reads @t to the end and compares with @want. */
void dbt_check_trace(struct dbtrace *t, const struct dbtrace_header *want,
		     const struct dbtrace_rec *r, size_t n, uint64_t first_line)
{
	const struct dbtrace_header *h = dbtrace_header(t);
	struct dbtrace_rec rec;
	unsigned i;
	size_t k = 0;
	int ret;

	CHECK(h->page_size == want->page_size);
	CHECK(h->time_unit == want->time_unit);
	CHECK_STREQ(h->source, want->source);
	CHECK(h->nfiles == want->nfiles);
	CHECK(h->nstreams == want->nstreams);
	for (i = 0; i < h->nfiles && i < want->nfiles; i++) {
		CHECK(dbt_same_file(&h->files[i], &want->files[i]));
		CHECK(dbtrace_file_by_id(t, want->files[i].id) == &h->files[i]);
	}
	for (i = 0; i < h->nstreams && i < want->nstreams; i++) {
		CHECK(h->streams[i].id == want->streams[i].id);
		CHECK_STREQ(h->streams[i].name, want->streams[i].name);
		CHECK(dbtrace_stream_by_id(t, want->streams[i].id) == &h->streams[i]);
	}
	CHECK(dbtrace_file_by_id(t, 1) == NULL);
	CHECK(dbtrace_file_by_id(t, 999999) == NULL);
	CHECK(dbtrace_stream_by_id(t, 1) == NULL);
	while ((ret = dbtrace_next(t, &rec)) == 1) {
		if (k < n) {
			CHECK(dbt_same_rec(&rec, &r[k]));
			CHECK(rec.line == first_line + k);
		}
		k++;
	}
	if (ret)
		printf("  %s\n", dbtrace_error(t));
	CHECK(ret == 0);
	CHECK(k == n);
}

/* Compresses @len bytes into a file; @members > 1 writes that many gzip members. */
char *dbt_gz_file(const char *text, size_t len, int members)
{
	char *path = test_tmpfile("", 0);
	size_t part = len / members, done = 0;
	int m;

	for (m = 0; m < members; m++) {
		gzFile gz = gzopen(path, m ? "ab" : "wb");
		size_t n = m == members - 1 ? len - done : part;

		CHECK(gz != NULL);
		CHECK(gzwrite(gz, text + done, n) == (int)n);
		CHECK(gzclose(gz) == Z_OK);
		done += n;
	}
	return path;
}

char *dbt_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);

	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}
