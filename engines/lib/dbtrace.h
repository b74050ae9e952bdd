/*
 * Database page-replay traces (format: docs/dbtrace-format.md): a streaming
 * parser and a writer. The parser keeps the header (page size, time unit,
 * source, file and stream declarations) and per-file and per-stream state,
 * all bounded by the limits below, plus fixed-size I/O buffers: memory does
 * not grow with the number of records. Input may be plain text or gzip
 * (detected by its magic bytes, decompressed with zlib's inflate so that any
 * byte source works: a path, a FILE, memory).
 *
 * Every error is one line, "NAME line N: reason", where NAME is the path (or
 * the name given for a FILE or memory buffer) and N the line the reader was
 * on; opening a path that cannot be read is the one error without a line.
 *
 * The writer runs every line it formats through the parser's own checks
 * before writing it, so it never produces a trace the parser rejects.
 */
#ifndef PACK_DBTRACE_H
#define PACK_DBTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Versions this parser reads: 1, and 2 which adds a file's "direct" flag and
 * a record's "+LATENCY" (docs/dbtrace-format.md). A version-1 trace is a
 * valid version-2 trace with "dbtrace 1" as its first line.
 */
#define DBTRACE_VERSION		2

/* Limits (docs/dbtrace-format.md, "Limits"). */
#define DBTRACE_MAX_LINE	4096		/* bytes of a line, without its newline */
#define DBTRACE_MAX_FILES	16384		/* file ids are 0 .. DBTRACE_MAX_FILES - 1 */
#define DBTRACE_MAX_STREAMS	4096		/* stream ids are 0 .. DBTRACE_MAX_STREAMS - 1 */
#define DBTRACE_MAX_PATH	1024		/* bytes of a file path */
#define DBTRACE_MAX_NAME	256		/* bytes of a stream name */
#define DBTRACE_MAX_INCOMPLETE	64		/* "incomplete" lines of a header */
#define DBTRACE_MAX_IO		(64ULL << 20)	/* length of one read or write */
#define DBTRACE_MAX_OFFSET	INT64_MAX	/* offsets, sizes, ends of ranges, times */
#define DBTRACE_MIN_PAGE	512
#define DBTRACE_MAX_PAGE	(1U << 20)

#define DBTRACE_NO_TIME		UINT64_MAX	/* record time in an untimed trace */

enum dbtrace_time_unit {
	DBTRACE_TIME_NONE,	/* order-only trace: no record has a time */
	DBTRACE_TIME_NS,
	DBTRACE_TIME_US,
	DBTRACE_TIME_MS,
};

enum dbtrace_role {
	DBTRACE_ROLE_DATA,
	DBTRACE_ROLE_LOG,
	DBTRACE_ROLE_JOURNAL,
	DBTRACE_ROLE_DIRECTORY,
	DBTRACE_ROLE_TEMP,
	DBTRACE_ROLE_OTHER,
	DBTRACE_ROLE_NR,
};

enum dbtrace_op {
	DBTRACE_READ,			/* off, len */
	DBTRACE_WRITE,			/* off, len */
	DBTRACE_FSYNC,			/* on a directory: fsync of the directory */
	DBTRACE_FDATASYNC,
	DBTRACE_SYNC_FILE_RANGE,	/* off, len (0: to the end of the file) */
	DBTRACE_TRIM,			/* off, len: deallocate (fallocate punch hole) */
	DBTRACE_TRUNCATE,		/* size */
	DBTRACE_CREATE,			/* a directory: mkdir */
	DBTRACE_UNLINK,			/* a directory: rmdir */
	DBTRACE_OP_NR,
};

struct dbtrace_file {
	uint32_t id;
	enum dbtrace_role role;
	int exists;		/* 1: exists before the first record, 0: declared size "-" */
	uint64_t size;		/* size before the first record (0 if !exists) */
	uint64_t max_size;	/* no record reaches beyond it: the span the file needs */
	const char *path;	/* relative to the target directory; "." is the target itself */
	int direct;		/* version 2: the database read and wrote it with O_DIRECT */
	uint64_t line;		/* line of the declaration */
	uint64_t extent;	/* parser: highest range end or truncate size seen so far */
};

struct dbtrace_stream {
	uint32_t id;
	const char *name;
	uint64_t line;		/* line of the declaration */
	uint64_t last_time;	/* parser: time of the stream's last record so far */
	uint64_t records;	/* parser: records of this stream so far */
};

/* The header as parsed, or as handed to the writer. Arrays in declaration order. */
struct dbtrace_header {
	/* 1 or 2 (the writer: 0 means 1); direct files and latencies need 2 */
	unsigned version;
	uint32_t page_size;
	enum dbtrace_time_unit time_unit;
	const char *source;
	/*
	 * What the capture could not see, one line per class of I/O ("incomplete"
	 * header lines): a trace with any is not the whole workload.
	 */
	const char *const *incomplete;
	unsigned nincomplete;
	const struct dbtrace_file *files;
	unsigned nfiles;
	const struct dbtrace_stream *streams;
	unsigned nstreams;
};

struct dbtrace_rec {
	uint64_t line;		/* line number in the trace (parser; ignored by the writer) */
	uint64_t time;		/* in the header's unit; DBTRACE_NO_TIME in an untimed trace */
	uint32_t stream;	/* stream id */
	uint32_t file;		/* file id */
	enum dbtrace_op op;
	uint64_t off, len;	/* read, write, sync_file_range, trim; else 0 */
	uint64_t size;		/* truncate; else 0 */
	/*
	 * Version 2, timed traces: the record completed @lat time units after
	 * @time (the capture saw its completion). has_lat 0: not known.
	 */
	int has_lat;
	uint64_t lat;
};

struct dbtrace;

/* ---- Reading ---- */

/*
 * Opens a trace and reads its header (up to the first record). NULL with a
 * one-line message in @err on failure. "-" reads standard input.
 */
struct dbtrace *dbtrace_open(const char *path, char *err, size_t errlen);
/*
 * The same on the open descriptor @fd, which the reader takes: closed by
 * dbtrace_close(), or at once on failure. @name is used in messages.
 */
struct dbtrace *dbtrace_open_fd(int fd, const char *name, char *err, size_t errlen);
/* The same on an open stream (left open by dbtrace_close); @name is used in messages. */
struct dbtrace *dbtrace_open_file(FILE *f, const char *name, char *err, size_t errlen);
/* The same on @len bytes in memory (not copied: keep them until dbtrace_close). */
struct dbtrace *dbtrace_open_mem(const void *buf, size_t len, const char *name,
				 char *err, size_t errlen);

const struct dbtrace_header *dbtrace_header(const struct dbtrace *t);
/* NULL if @id is not declared. O(1). */
const struct dbtrace_file *dbtrace_file_by_id(const struct dbtrace *t, uint32_t id);
const struct dbtrace_stream *dbtrace_stream_by_id(const struct dbtrace *t, uint32_t id);

/*
 * The next record into @rec: 1, or 0 at the end of the trace (its "end"
 * line and then the end of the input), or -1 on an error (dbtrace_error()
 * says which; every later call returns -1 too).
 */
int dbtrace_next(struct dbtrace *t, struct dbtrace_rec *rec);

/* The last error ("" if none): one line, "NAME line N: reason". */
const char *dbtrace_error(const struct dbtrace *t);

/*
 * Bytes a target needs to hold every non-directory file, each rounded up to
 * a multiple of @align (0 or 1: no rounding), one after the other: the size
 * of one file or device holding them all as regions. For one file alone,
 * its max_size is the span. -1 if the sum overflows 2^63 - 1.
 */
int dbtrace_span(const struct dbtrace_header *h, uint64_t align, uint64_t *total);

void dbtrace_close(struct dbtrace *t);

/* ---- Writing ---- */

/*
 * Writes "dbtrace V" (V = h->version, 0 meaning 1) and the header @h to @out and returns a writer (NULL
 * with a one-line message in @err if @h is not a valid header: every
 * declaration is checked as the parser checks it). @h is copied.
 */
struct dbtrace *dbtrace_write_header(FILE *out, const struct dbtrace_header *h,
				     char *err, size_t errlen);
/*
 * Writes one record (rec->line is ignored): offsets a multiple of the page
 * size as "pN", everything else in bytes. 0, or -1 if the parser would
 * reject it or writing failed (dbtrace_error() says why; nothing written).
 */
int dbtrace_write_record(struct dbtrace *w, const struct dbtrace_rec *rec);
/* Writes the "end N" line and flushes. 0 or -1 (dbtrace_error()). */
int dbtrace_write_end(struct dbtrace *w);

/* ---- Names and checks shared with importers and the engine ---- */

const char *dbtrace_op_name(enum dbtrace_op op);
/*
 * Arguments an operation takes: 2 (offset, length), 1 (size) or 0. Inline:
 * the parser's fast path and the replay's kept records ask once a record.
 */
static inline int dbtrace_nargs(enum dbtrace_op op)
{
	switch (op) {
	case DBTRACE_READ:
	case DBTRACE_WRITE:
	case DBTRACE_SYNC_FILE_RANGE:
	case DBTRACE_TRIM:
		return 2;
	case DBTRACE_TRUNCATE:
		return 1;
	default:
		return 0;
	}
}
const char *dbtrace_role_name(enum dbtrace_role role);
const char *dbtrace_time_unit_name(enum dbtrace_time_unit u);	/* "none", "ns", ... */
/* Nanoseconds in one time unit (0 for DBTRACE_TIME_NONE). */
uint64_t dbtrace_time_unit_ns(enum dbtrace_time_unit u);

/*
 * 0 if @path may name a file of role @role below a target directory: relative,
 * non-empty, at most DBTRACE_MAX_PATH bytes of printable non-blank characters,
 * no empty, "." or ".." component ("." alone is allowed for a directory: the
 * target itself). Else -1 with a reason (no prefix) in @why.
 */
int dbtrace_path_check(const char *path, enum dbtrace_role role, char *why, size_t whylen);

#endif
