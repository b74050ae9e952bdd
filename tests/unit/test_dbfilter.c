/* Tests of the record filters of the database page-replay engine (dbfilter.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbfilter.h"
#include "dbtrace.h"
#include "test.h"

/* Stream names that look like ranges or ids on purpose. */
static const char trace[] =
	"dbtrace 1\n"
	"pagesize 8192\n"
	"timeunit none\n"
	"source unit test: dbfilter\n"
	"file 0 data 0 p10 base/1/1\n"
	"file 1 data 0 p10 base/1/2\n"
	"file 7 log 0 p10 pg_wal/0001\n"
	"file 9 directory 0 0 pg_wal\n"
	"file 12 temp - p4 tmp/t1\n"
	"file 3 other 0 8192 postmaster.pid\n"
	"file 16383 journal 0 p1 log\n"
	"stream 0 backend-1\n"
	"stream 1 backend-2\n"
	"stream 5 walwriter\n"
	"stream 7 checkpointer\n"
	"stream 4095 x9\n"
	"- 0 0 read p0 8192\n"
	"end 1\n";

static const uint32_t file_ids[] = { 0, 1, 7, 9, 12, 3, 16383 };
static const uint32_t stream_ids[] = { 0, 1, 5, 7, 4095 };
#define NFILES		(sizeof(file_ids) / sizeof(file_ids[0]))
#define NSTREAMS	(sizeof(stream_ids) / sizeof(stream_ids[0]))

static struct dbtrace *t;
static const struct dbtrace_header *hdr;
static struct dbfilter f;
static char err[512];

static int open_trace(void)
{
	err[0] = '\0';
	t = dbtrace_open_mem(trace, sizeof(trace) - 1, "t", err, sizeof(err));
	if (!t) {
		printf("  %s\n", err);
		test_fail(__FILE__, __LINE__, "the test trace opens");
		return 0;
	}
	hdr = dbtrace_header(t);
	CHECK(hdr->nfiles == NFILES && hdr->nstreams == NSTREAMS);
	return 1;
}

static void close_trace(void)
{
	dbtrace_close(t);
	t = NULL;
}

static int parse(const char *ops, const char *streams, const char *files)
{
	int r;

	memset(&f, 0xa5, sizeof(f));		/* whatever was there before must not matter */
	strcpy(err, "untouched");
	r = dbfilter_parse(&f, hdr, ops, streams, files, err, sizeof(err));
	if (r == 0)
		CHECK_STREQ(err, "untouched");
	return r;
}

static int match(enum dbtrace_op op, uint32_t stream, uint32_t file)
{
	struct dbtrace_rec r = { .op = op, .stream = stream, .file = file };

	return dbfilter_match(&f, &r);
}

/* Bit masks of what the filter keeps: ops, declared streams, declared files (by index). */
static unsigned kept_ops(void)
{
	return f.ops;		/* no bit beyond the operations either */
}

static unsigned kept_streams(void)
{
	unsigned m = 0, i;

	for (i = 0; i < NSTREAMS; i++)
		if (f.streams[stream_ids[i] >> 3] >> (stream_ids[i] & 7) & 1)
			m |= 1U << i;
	return m;
}

static unsigned kept_files(void)
{
	unsigned m = 0, i;

	for (i = 0; i < NFILES; i++)
		if (f.files[file_ids[i] >> 3] >> (file_ids[i] & 7) & 1)
			m |= 1U << i;
	return m;
}

#define OP(x)	(1U << DBTRACE_##x)
#define ALL_OPS	((1U << DBTRACE_OP_NR) - 1)
#define ALL_ST	((1U << NSTREAMS) - 1)
#define ALL_FI	((1U << NFILES) - 1)
/* stream and file bits by position in stream_ids[] / file_ids[] */
enum { S0 = 1, S1 = 2, S5 = 4, S7 = 8, S4095 = 16 };
enum { F0 = 1, F1 = 2, F7 = 4, F9 = 8, F12 = 16, F3 = 32, F16383 = 64 };

#define KEEPS(ops, streams, files, want_ops, want_st, want_fi)			\
	do {									\
		if (parse(ops, streams, files)) {				\
			printf("  error: %s\n", err);				\
			test_fail(__FILE__, __LINE__, "parses");		\
		} else {							\
			if (kept_ops() != (want_ops)) {				\
				printf("  ops kept %#x, want %#x\n", kept_ops(),	\
				       (unsigned)(want_ops));			\
				test_fail(__FILE__, __LINE__, "ops kept");	\
			}							\
			if (kept_streams() != (want_st)) {			\
				printf("  streams kept %#x, want %#x\n",	\
				       kept_streams(), (unsigned)(want_st));	\
				test_fail(__FILE__, __LINE__, "streams kept");	\
			}							\
			if (kept_files() != (want_fi)) {			\
				printf("  files kept %#x, want %#x\n",		\
				       kept_files(), (unsigned)(want_fi));	\
				test_fail(__FILE__, __LINE__, "files kept");	\
			}							\
		}								\
	} while (0)

TEST(dbfilter_empty_keeps_all)
{
	unsigned op, i, j;

	if (!open_trace())
		return;
	KEEPS(NULL, NULL, NULL, ALL_OPS, ALL_ST, ALL_FI);
	KEEPS("", "", "", ALL_OPS, ALL_ST, ALL_FI);
	/* dbfilter_match agrees with the bit maps, on every combination */
	for (op = 0; op < DBTRACE_OP_NR; op++)
		for (i = 0; i < NSTREAMS; i++)
			for (j = 0; j < NFILES; j++)
				CHECK(match((enum dbtrace_op)op, stream_ids[i], file_ids[j]));
	close_trace();
}

TEST(dbfilter_ops)
{
	unsigned op;

	if (!open_trace())
		return;
	KEEPS("read", "", "", OP(READ), ALL_ST, ALL_FI);
	KEEPS("read,write", NULL, NULL, OP(READ) | OP(WRITE), ALL_ST, ALL_FI);
	KEEPS("!read", NULL, NULL, ALL_OPS & ~OP(READ), ALL_ST, ALL_FI);
	KEEPS("!read,!trim", NULL, NULL, ALL_OPS & ~OP(READ) & ~OP(TRIM), ALL_ST, ALL_FI);
	KEEPS("sync", NULL, NULL, OP(FSYNC) | OP(FDATASYNC), ALL_ST, ALL_FI);
	KEEPS("!sync", NULL, NULL, ALL_OPS & ~OP(FSYNC) & ~OP(FDATASYNC), ALL_ST, ALL_FI);
	KEEPS("namespace", NULL, NULL, OP(CREATE) | OP(UNLINK) | OP(TRUNCATE), ALL_ST, ALL_FI);
	KEEPS("!namespace", NULL, NULL, ALL_OPS & ~(OP(CREATE) | OP(UNLINK) | OP(TRUNCATE)),
	      ALL_ST, ALL_FI);
	/* a mix: includes start from nothing, items apply in order */
	KEEPS("sync,!fsync", NULL, NULL, OP(FDATASYNC), ALL_ST, ALL_FI);
	KEEPS("!fsync,sync", NULL, NULL, OP(FSYNC) | OP(FDATASYNC), ALL_ST, ALL_FI);
	KEEPS("write,namespace,!unlink", NULL, NULL, OP(WRITE) | OP(CREATE) | OP(TRUNCATE),
	      ALL_ST, ALL_FI);
	KEEPS("read,read", NULL, NULL, OP(READ), ALL_ST, ALL_FI);
	/* an exclusion first does not make the list exclusions-only */
	KEEPS("!write,read", NULL, NULL, OP(READ), ALL_ST, ALL_FI);
	/* every operation by its own name */
	for (op = 0; op < DBTRACE_OP_NR; op++) {
		KEEPS(dbtrace_op_name((enum dbtrace_op)op), NULL, NULL, 1U << op, ALL_ST, ALL_FI);
		CHECK(match((enum dbtrace_op)op, 5, 7));
		CHECK(!match((enum dbtrace_op)((op + 1) % DBTRACE_OP_NR), 5, 7));
	}
	KEEPS("sync_file_range,trim", NULL, NULL, OP(SYNC_FILE_RANGE) | OP(TRIM), ALL_ST, ALL_FI);
	close_trace();
}

TEST(dbfilter_streams)
{
	if (!open_trace())
		return;
	KEEPS(NULL, "5", NULL, ALL_OPS, S5, ALL_FI);
	KEEPS(NULL, "0,7", NULL, ALL_OPS, S0 | S7, ALL_FI);
	KEEPS(NULL, "0-1", NULL, ALL_OPS, S0 | S1, ALL_FI);
	/* a range keeps the declared ids in it; 2..4 and 6 are not declared */
	KEEPS(NULL, "1-6", NULL, ALL_OPS, S1 | S5, ALL_FI);
	KEEPS(NULL, "0-4095", NULL, ALL_OPS, ALL_ST, ALL_FI);
	KEEPS(NULL, "4095-4095", NULL, ALL_OPS, S4095, ALL_FI);
	KEEPS(NULL, "0-999999", NULL, ALL_OPS, ALL_ST, ALL_FI);
	/* names, including names with a dash that are not ranges */
	KEEPS(NULL, "walwriter", NULL, ALL_OPS, S5, ALL_FI);
	KEEPS(NULL, "backend-1,backend-2", NULL, ALL_OPS, S0 | S1, ALL_FI);
	/* a capture's ROLE-TID streams by their role */
	KEEPS(NULL, "backend", NULL, ALL_OPS, S0 | S1, ALL_FI);
	KEEPS(NULL, "!backend", NULL, ALL_OPS, ALL_ST & ~(S0 | S1), ALL_FI);
	KEEPS(NULL, "x9", NULL, ALL_OPS, S4095, ALL_FI);
	/* excludes only, and mixes */
	KEEPS(NULL, "!walwriter", NULL, ALL_OPS, ALL_ST & ~S5, ALL_FI);
	KEEPS(NULL, "!0-1,!4095", NULL, ALL_OPS, S5 | S7, ALL_FI);
	KEEPS(NULL, "0-7,!checkpointer", NULL, ALL_OPS, S0 | S1 | S5, ALL_FI);
	KEEPS(NULL, "!5,walwriter", NULL, ALL_OPS, S5, ALL_FI);
	/* leading zeros: still an id */
	KEEPS(NULL, "005", NULL, ALL_OPS, S5, ALL_FI);
	/* the record side */
	if (!parse(NULL, "walwriter,!x9", NULL)) {
		CHECK(match(DBTRACE_WRITE, 5, 7));
		CHECK(!match(DBTRACE_WRITE, 0, 7));
		CHECK(!match(DBTRACE_WRITE, 4095, 7));
	}
	if (!parse(NULL, "!walwriter", NULL)) {
		CHECK(!match(DBTRACE_WRITE, 5, 7));
		CHECK(match(DBTRACE_WRITE, 4095, 16383));
	}
	close_trace();
}

TEST(dbfilter_files)
{
	if (!open_trace())
		return;
	KEEPS(NULL, NULL, "7", ALL_OPS, ALL_ST, F7);
	KEEPS(NULL, NULL, "0-3", ALL_OPS, ALL_ST, F0 | F1 | F3);
	KEEPS(NULL, NULL, "16383", ALL_OPS, ALL_ST, F16383);
	/* paths */
	KEEPS(NULL, NULL, "pg_wal/0001", ALL_OPS, ALL_ST, F7);
	KEEPS(NULL, NULL, "base/1/2,pg_wal", ALL_OPS, ALL_ST, F1 | F9);
	/* roles */
	KEEPS(NULL, NULL, "data", ALL_OPS, ALL_ST, F0 | F1);
	KEEPS(NULL, NULL, "directory", ALL_OPS, ALL_ST, F9);
	KEEPS(NULL, NULL, "temp,other", ALL_OPS, ALL_ST, F12 | F3);
	KEEPS(NULL, NULL, "journal", ALL_OPS, ALL_ST, F16383);
	/* "log" is a role (file 7) and a path (file 16383): both */
	KEEPS(NULL, NULL, "log", ALL_OPS, ALL_ST, F7 | F16383);
	/* excludes only, and mixes */
	KEEPS(NULL, NULL, "!data", ALL_OPS, ALL_ST, ALL_FI & ~(F0 | F1));
	KEEPS(NULL, NULL, "!directory,!12", ALL_OPS, ALL_ST, ALL_FI & ~(F9 | F12));
	KEEPS(NULL, NULL, "data,!base/1/2", ALL_OPS, ALL_ST, F0);
	KEEPS(NULL, NULL, "0-20,!data,pg_wal/0001", ALL_OPS, ALL_ST, F7 | F9 | F12 | F3);
	close_trace();
}

TEST(dbfilter_all_three)
{
	if (!open_trace())
		return;
	KEEPS("write,sync", "walwriter", "log", OP(WRITE) | OP(FSYNC) | OP(FDATASYNC), S5,
	      F7 | F16383);
	if (!parse("write,sync", "walwriter", "log")) {
		CHECK(match(DBTRACE_WRITE, 5, 7));
		CHECK(match(DBTRACE_FDATASYNC, 5, 7));
		CHECK(!match(DBTRACE_READ, 5, 7));		/* op */
		CHECK(!match(DBTRACE_WRITE, 0, 7));		/* stream */
		CHECK(!match(DBTRACE_WRITE, 5, 0));		/* file */
		CHECK(!match(DBTRACE_READ, 0, 0));
	}
	close_trace();
}

/* @opt names the option that must be blamed; @item must appear in the message. */
static void bad(const char *ops, const char *streams, const char *files, const char *opt,
		const char *item, int line)
{
	if (parse(ops, streams, files) != -1) {
		printf("  (test line %d: '%s' '%s' '%s' parsed)\n", line, ops ? ops : "(null)",
		       streams ? streams : "(null)", files ? files : "(null)");
		test_fail(__FILE__, line, "an error was expected");
		return;
	}
	/* "OPTION: reason", one line */
	if (strncmp(err, opt, strlen(opt)) || strncmp(err + strlen(opt), ": ", 2) ||
	    strchr(err, '\n') || !strstr(err, item) || strlen(err) <= strlen(opt) + 2) {
		printf("  (test line %d: option %s, item '%s')\n", line, opt, item);
		test_fail_str(__FILE__, line, "error names the option and the item", err, opt);
	}
}

#define BAD(ops, streams, files, opt, item)	bad(ops, streams, files, opt, item, __LINE__)

TEST(dbfilter_errors)
{
	static char longitem[3000];

	if (!open_trace())
		return;
	/* unknown names */
	BAD("read,bogus", NULL, NULL, "dbr_ops", "'bogus'");
	BAD("READ", NULL, NULL, "dbr_ops", "'READ'");
	BAD("!fsyncs", NULL, NULL, "dbr_ops", "'fsyncs'");
	BAD("read ", NULL, NULL, "dbr_ops", "'read '");
	BAD(NULL, "nobody", NULL, "dbr_streams", "'nobody'");
	BAD(NULL, "!back", NULL, "dbr_streams", "'back'");
	BAD(NULL, "backend-", NULL, "dbr_streams", "'backend-'");
	BAD(NULL, NULL, "base/1/3", "dbr_files", "'base/1/3'");
	BAD(NULL, NULL, "!indexes", "dbr_files", "'indexes'");
	/* empty items */
	BAD("read,,write", NULL, NULL, "dbr_ops", "an empty item in 'read,,write'");
	BAD(",read", NULL, NULL, "dbr_ops", "an empty item in ',read'");
	BAD("read,", NULL, NULL, "dbr_ops", "an empty item in 'read,'");
	BAD(",", NULL, NULL, "dbr_ops", "an empty item in ','");
	BAD("!", NULL, NULL, "dbr_ops", "an empty item in '!'");
	BAD(NULL, "0,,1", NULL, "dbr_streams", "an empty item in '0,,1'");
	BAD(NULL, "0,!", NULL, "dbr_streams", "an empty item in '0,!'");
	BAD(NULL, NULL, ",,", "dbr_files", "an empty item in ',,'");
	BAD(NULL, NULL, "data,", "dbr_files", "an empty item in 'data,'");
	/* bad ranges */
	BAD(NULL, "5-3", NULL, "dbr_streams", "'5-3'");
	BAD(NULL, "-3", NULL, "dbr_streams", "'-3'");
	BAD(NULL, "3-", NULL, "dbr_streams", "'3-'");
	BAD(NULL, "1-2-3", NULL, "dbr_streams", "'1-2-3'");
	BAD(NULL, NULL, "9-0", "dbr_files", "'9-0'");
	/* ids or ranges with no declared id */
	BAD(NULL, "2", NULL, "dbr_streams", "'2'");
	BAD(NULL, "!3", NULL, "dbr_streams", "'3'");
	BAD(NULL, "2-4", NULL, "dbr_streams", "'2-4'");
	BAD(NULL, "4096", NULL, "dbr_streams", "'4096'");
	BAD(NULL, "1234567", NULL, "dbr_streams", "'1234567'");
	BAD(NULL, NULL, "2", "dbr_files", "'2'");
	BAD(NULL, NULL, "13-100", "dbr_files", "'13-100'");
	BAD(NULL, NULL, "16384", "dbr_files", "'16384'");
	/* a stream name is not a file, nor a file path a stream */
	BAD(NULL, NULL, "walwriter", "dbr_files", "'walwriter'");
	BAD(NULL, "pg_wal", NULL, "dbr_streams", "'pg_wal'");
	/* the first bad option is the one named, even when the others are fine */
	BAD("read", "walwriter", "nope", "dbr_files", "'nope'");
	BAD("read", "nope", "nope2", "dbr_streams", "'nope'");
	/* control characters do not split the message */
	BAD("re\nad", NULL, NULL, "dbr_ops", "re?ad");
	BAD(NULL, "a\tb", NULL, "dbr_streams", "a?b");
	/* an item too long for the parser's buffer */
	memset(longitem, 'a', sizeof(longitem) - 1);
	BAD(NULL, longitem, NULL, "dbr_streams", "too long");
	/* and the reason survives a small message buffer (the engine's is 1 KiB) */
	if (dbfilter_parse(&f, hdr, NULL, NULL, longitem, err, 64) == 0)
		test_fail(__FILE__, __LINE__, "a too long item is refused");
	else
		CHECK(!strncmp(err, "dbr_files: an item of 2999 bytes is too long", 44));
	/* the longest item that fits is looked up (and not found) */
	longitem[1099] = '\0';
	BAD("read", NULL, longitem, "dbr_files", "no file 'aaaa");
	/* an item list only of exclusions with one empty item */
	BAD(NULL, "!0,", NULL, "dbr_streams", "an empty item in '!0,'");
	close_trace();
}

/*
 * f.all (every bit set: dbfilter_match's shortcut) only when nothing is
 * left out, and dbfilter_match agrees with the bit maps either way.
 */
TEST(dbfilter_all_shortcut)
{
	static const struct {
		const char *ops, *streams, *files;
		int all;
	} c[] = {
		{ NULL, NULL, NULL, 1 },
		{ "", "", "", 1 },
		{ "!read", NULL, NULL, 0 },
		{ "read", NULL, NULL, 0 },
		{ NULL, "!walwriter", NULL, 0 },
		{ NULL, NULL, "!log", 0 },
		{ NULL, "0", NULL, 0 },
		{ "read,write,fsync,fdatasync,sync_file_range,trim,truncate,create,unlink", NULL,
		  NULL, 1 },
	};
	unsigned k, op, i, j;

	if (!open_trace())
		return;
	for (k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		if (parse(c[k].ops, c[k].streams, c[k].files)) {
			printf("  case %u: %s\n", k, err);
			test_fail(__FILE__, __LINE__, "parses");
			continue;
		}
		CHECK(f.all == c[k].all);
		for (op = 0; op < DBTRACE_OP_NR; op++)
			for (i = 0; i < NSTREAMS; i++)
				for (j = 0; j < NFILES; j++)
					CHECK(match((enum dbtrace_op)op, stream_ids[i],
						    file_ids[j]) == ((kept_ops() >> op & 1) &&
								     (kept_streams() >> i & 1) &&
								     (kept_files() >> j & 1)));
	}
	close_trace();
}
