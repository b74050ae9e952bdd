/*
 * libFuzzer target for the replay engine's record filters (engines/lib/dbfilter.h):
 * the input is split at its first two NUL bytes into the dbr_ops, dbr_streams
 * and dbr_files option strings (missing parts are empty), parsed against the
 * header of a fixed small trace. The parser must never crash; an error is one
 * line naming the option it blames ("dbr_ops: ...", in the order the options
 * are parsed); an accepted filter keeps no bit beyond the operations, agrees
 * with an independent reading of the dbr_ops list, keeps everything when all
 * three lists are empty, and answers dbfilter_match on every record of the
 * trace's files and streams.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iengines/lib \
 *       tests/fuzz/fuzz_dbfilter.c engines/lib/\*.c -lm -lz -o fuzz-dbfilter
 *   ./fuzz-dbfilter -max_total_time=60 tests/fuzz/corpus-dbfilter
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbfilter.h"
#include "dbtrace.h"

/* Names that look like ranges, ids, roles and op names on purpose. */
static const char trace[] =
	"dbtrace 1\n"
	"pagesize 8192\n"
	"timeunit us\n"
	"source fuzz: dbfilter\n"
	"file 0 data 0 p10 base/1/1\n"
	"file 1 data 0 p10 base/1/2\n"
	"file 7 log 0 p10 pg_wal/0001\n"
	"file 9 directory 0 0 pg_wal\n"
	"file 12 temp - p4 tmp/t1\n"
	"file 3 other 0 8192 read\n"
	"file 16383 journal 0 p1 log\n"
	"stream 0 backend-1\n"
	"stream 1 1-2\n"
	"stream 5 walwriter\n"
	"stream 7 data\n"
	"stream 4095 x,y\n"
	"1 0 0 read p0 8192\n"
	"end 1\n";

static struct dbtrace *t;
static const struct dbtrace_header *hdr;

/* The dbr_ops list read independently: 0 and the op bits, or -1. */
static int ref_ops(const char *list, uint32_t *out)
{
	static const char *const names[DBTRACE_OP_NR] = {
		"read", "write", "fsync", "fdatasync", "sync_file_range", "trim",
		"truncate", "create", "unlink",
	};
	const char *p = list, *end;
	uint32_t ops;
	int includes = 0, pass;

	if (!*list) {
		*out = (1U << DBTRACE_OP_NR) - 1;
		return 0;
	}
	/* pass 0: syntax and whether something includes; pass 1: apply in order */
	for (pass = 0; pass < 2; pass++) {
		ops = includes ? 0 : (1U << DBTRACE_OP_NR) - 1;
		for (p = list;; p = end + 1) {
			size_t n;
			uint32_t bits = 0;
			int on = 1, i;

			end = strchr(p, ',');
			if (!end)
				end = p + strlen(p);
			if (*p == '!') {
				on = 0;
				p++;
			}
			n = (size_t)(end - p);
			if (!n)
				return -1;
			if (n == 4 && !strncmp(p, "sync", 4))
				bits = 1U << 2 | 1U << 3;
			else if (n == 9 && !strncmp(p, "namespace", 9))
				bits = 1U << 6 | 1U << 7 | 1U << 8;
			for (i = 0; i < DBTRACE_OP_NR; i++)
				if (strlen(names[i]) == n && !strncmp(p, names[i], n))
					bits = 1U << i;
			if (!bits)
				return -1;
			if (on)
				includes = 1;
			ops = on ? ops | bits : ops & ~bits;
			if (!*end)
				break;
		}
	}
	*out = ops;
	return 0;
}

static void check_err(const char *err, const char *opt)
{
	size_t n = strlen(opt);

	if (strchr(err, '\n') || strncmp(err, opt, n) || strncmp(err + n, ": ", 2) || !err[n + 2])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *part[3], err[1024];
	struct dbfilter f;
	uint32_t want_ops = 0;
	unsigned i, j, op, k;
	size_t at = 0;
	int r, ref;

	if (!t) {
		t = dbtrace_open_mem(trace, sizeof(trace) - 1, "fuzz", err, sizeof(err));
		if (!t)
			abort();
		hdr = dbtrace_header(t);
	}
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (k = 0; k < 3; k++) {
		part[k] = buf + at;
		at += strlen(buf + at);
		if (at < size)
			at++;
	}

	memset(err, 0, sizeof(err));
	r = dbfilter_parse(&f, hdr, part[0], part[1], part[2], err, sizeof(err));
	ref = ref_ops(part[0], &want_ops);
	if (r) {
		/* the dbr_ops list is parsed first: blamed exactly when it is bad */
		if (ref)
			check_err(err, "dbr_ops");
		else if (strncmp(err, "dbr_streams", 11))
			check_err(err, "dbr_files");
		else
			check_err(err, "dbr_streams");
	} else {
		if (ref || f.ops != want_ops)
			abort();
		if (!*part[0] && !*part[1] && !*part[2]) {
			for (i = 0; i < sizeof(f.streams); i++)
				if (f.streams[i] != 0xff)
					abort();
			for (i = 0; i < sizeof(f.files); i++)
				if (f.files[i] != 0xff)
					abort();
		}
		for (i = 0; i < hdr->nstreams; i++)
			for (j = 0; j < hdr->nfiles; j++)
				for (op = 0; op < DBTRACE_OP_NR; op++) {
					struct dbtrace_rec rec = {
						.stream = hdr->streams[i].id,
						.file = hdr->files[j].id,
						.op = (enum dbtrace_op)op,
					};
					int m = dbfilter_match(&f, &rec);

					/* a record is kept iff its op, stream and file all are */
					if (m != ((f.ops >> op & 1) &&
						  (f.streams[rec.stream / 8] >> rec.stream % 8 & 1) &&
						  (f.files[rec.file / 8] >> rec.file % 8 & 1)))
						abort();
				}
	}
	free(buf);
	return 0;
}
