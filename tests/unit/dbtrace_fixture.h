/*
 * What the dbtrace unit tests share (test_dbtrace.c: the parser, what it
 * accepts and refuses; test_dbtrace_io.c: reading and writing, gzip,
 * descriptors, memory): traces as text, a parse that keeps its message,
 * a header and records written and read back.
 */
#ifndef DBTRACE_FIXTURE_H
#define DBTRACE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "dbtrace.h"

/* Lines 1-11; the first record of a test goes on line 12. */
#define HDR                                     \
	"dbtrace 1\n"                           \
	"pagesize 8192\n"                       \
	"timeunit us\n"                         \
	"source unit test: hand-written\n"      \
	"file 0 data 16384 65536 base/1/1234\n" \
	"file 1 log 0 p8 pg_wal/0001\n"         \
	"file 2 directory 0 0 pg_wal\n"         \
	"file 3 directory 0 0 .\n"              \
	"file 4 temp - 8192 tmp/t1\n"           \
	"stream 0 backend\n"                    \
	"stream 5 walwriter\n"

/* Version 2: a file's "direct" flag and a record's "+LATENCY". */
#define HDR2                            \
	"dbtrace 2\n"                   \
	"pagesize 4096\n"               \
	"timeunit us\n"                 \
	"source unit test: version 2\n" \
	"file 0 data 0 p16 d direct\n"  \
	"file 1 log - 65536 l\n"        \
	"file 2 directory 0 0 .\n"      \
	"stream 0 s0\n"                 \
	"stream 1 s1\n"

/* The message of the last failure (parse, open, write). */
extern char dbt_err[1024];

/* Parses @text (memory, named "t"): records, or -1 with the message in dbt_err. */
long dbt_parse_n(const char *text, size_t len);
long dbt_parse(const char *text);

/* @text must fail with exactly @want; a message is one line. */
void dbt_check_error(const char *text, const char *want, const char *file, int srcline);
#define BAD(text, want) dbt_check_error(text, want, __FILE__, __LINE__)

/* A header declaring every role, and records of every operation on it. */
extern const struct dbtrace_file dbt_files[7];
extern const struct dbtrace_stream dbt_streams[2];
extern const struct dbtrace_rec dbt_recs[15];
#define NRECS (sizeof(dbt_recs) / sizeof(dbt_recs[0]))
extern const struct dbtrace_header dbt_header;

/* Writes the header and records into a malloc'ed buffer (size in *len). */
char *dbt_write_trace(const struct dbtrace_header *h, const struct dbtrace_rec *r, size_t n,
		      size_t *len);
int dbt_same_file(const struct dbtrace_file *a, const struct dbtrace_file *b);
int dbt_same_rec(const struct dbtrace_rec *a, const struct dbtrace_rec *b);
/* Reads @t to the end and compares with @want. */
void dbt_check_trace(struct dbtrace *t, const struct dbtrace_header *want,
		     const struct dbtrace_rec *r, size_t n, uint64_t first_line);

/* Compresses @len bytes into a file; @members > 1 writes that many gzip members. */
char *dbt_gz_file(const char *text, size_t len, int members);
/* A file's bytes (up to 1 MiB), malloc'ed. */
char *dbt_slurp(const char *path, size_t *len);

#endif
