/*
 * dbtrace-check: what the C parser (engines/lib/dbtrace.h) makes of a trace,
 * for the tests that hold it against the Python reader and fio, and for a
 * person who wants to see how the replay engine will read a trace.
 *
 *   dbtrace-check TRACE        "records N", the header, the record count of
 *                              each operation, files and streams; or
 *                              "error MESSAGE" (exit 1)
 *   dbtrace-check -m TRACE...  one line per trace: "ok RECORDS" or
 *                              "error MESSAGE"
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "dbtrace.h"

/* -m TRACE...: one line per trace, "ok RECORDS" or "error MESSAGE". */
static int each(int argc, char **argv)
{
	char err[1024];
	struct dbtrace_rec r;
	struct dbtrace *t;
	uint64_t n;
	int i, ret;

	for (i = 2; i < argc; i++) {
		t = dbtrace_open(argv[i], err, sizeof(err));
		if (!t) {
			printf("error %s\n", err);
			continue;
		}
		for (n = 0; (ret = dbtrace_next(t, &r)) > 0; n++)
			;
		if (ret < 0)
			printf("error %s\n", dbtrace_error(t));
		else
			printf("ok %" PRIu64 "\n", n);
		dbtrace_close(t);
	}
	return 0;
}

/* Reads a trace with the C parser: what it holds, or the error. */
int main(int argc, char **argv)
{
	char err[1024];
	struct dbtrace_rec r;
	const struct dbtrace_header *h;
	uint64_t n = 0, ops[DBTRACE_OP_NR] = { 0 };
	struct dbtrace *t;
	unsigned i;
	int ret;

	if (argc > 2 && !strcmp(argv[1], "-m"))
		return each(argc, argv);
	if (argc != 2) {
		fprintf(stderr, "usage: dbtrace-check TRACE | dbtrace-check -m TRACE...\n");
		return 2;
	}
	t = dbtrace_open(argv[1], err, sizeof(err));
	if (!t) {
		printf("error %s\n", err);
		return 1;
	}
	while ((ret = dbtrace_next(t, &r)) > 0) {
		n++;
		ops[r.op]++;
	}
	if (ret < 0) {
		printf("error %s\n", dbtrace_error(t));
		dbtrace_close(t);
		return 1;
	}
	h = dbtrace_header(t);
	printf("records %" PRIu64 "\n", n);
	printf("pagesize %u\ntimeunit %s\n", h->page_size, dbtrace_time_unit_name(h->time_unit));
	for (i = 0; i < DBTRACE_OP_NR; i++)
		if (ops[i])
			printf("op %s %" PRIu64 "\n", dbtrace_op_name(i), ops[i]);
	for (i = 0; i < h->nfiles; i++) {
		const struct dbtrace_file *f = &h->files[i];

		if (f->exists)
			printf("file %u %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", f->id,
			       dbtrace_role_name(f->role), f->size, f->max_size, f->extent, f->path);
		else
			printf("file %u %s - %" PRIu64 " %" PRIu64 " %s\n", f->id,
			       dbtrace_role_name(f->role), f->max_size, f->extent, f->path);
	}
	for (i = 0; i < h->nstreams; i++)
		printf("stream %u %s %" PRIu64 "\n", h->streams[i].id, h->streams[i].name,
		       h->streams[i].records);
	dbtrace_close(t);
	return 0;
}
