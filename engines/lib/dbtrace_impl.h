/*
 * The inside of a dbtrace reader or writer, shared by the parser
 * (dbtrace.c), the reader (dbtrace_read.c) and the writer
 * (dbtrace_write.c): not for other users.
 */
#ifndef PACK_DBTRACE_IMPL_H
#define PACK_DBTRACE_IMPL_H

#include <stdint.h>
#include <stdio.h>
#include <zlib.h>

#include "dbtrace.h"

#define BUF_SIZE	(64 * 1024)
#define MAX_TOKENS	8

enum state {
	ST_MAGIC,	/* expecting "dbtrace 1" or "dbtrace 2" */
	ST_HEADER,	/* header lines and declarations */
	ST_RECORDS,	/* after the first record */
	ST_END,		/* after "end": only blank and comment lines */
	ST_DONE,	/* end of input after "end" */
	ST_ERROR,
};

struct dbtrace {
	enum state state;
	uint64_t line;
	uint64_t nrec;
	char name[256];
	char err[640];

	/* header */
	struct dbtrace_header h;
	struct dbtrace_file *files;
	struct dbtrace_stream *streams;
	unsigned files_cap, streams_cap;
	uint16_t file_idx[DBTRACE_MAX_FILES];		/* index + 1; 0: undeclared */
	uint16_t stream_idx[DBTRACE_MAX_STREAMS];
	char *source;
	char *incomplete[DBTRACE_MAX_INCOMPLETE];
	uint64_t page_line, unit_line, source_line;	/* 0: not given yet */

	/* input */
	FILE *f;
	int own_f;
	const unsigned char *mem;
	size_t mem_len, mem_pos;
	int in_eof;
	int gz;
	int z_init;
	int z_member_done;	/* the last gzip member ended (Z_STREAM_END) */
	z_stream z;
	unsigned char in[BUF_SIZE];
	unsigned char out[BUF_SIZE];
	const unsigned char *bp;	/* decoded bytes not consumed yet */
	size_t bl;
	int pending;		/* open() read the first record into rec_pending */
	struct dbtrace_rec rec_pending;
	char linebuf[DBTRACE_MAX_LINE + 2];

	/* output */
	FILE *w;
};

/* Records the error "NAME line @line: ..." in t->err; returns -1. */
int __attribute__((format(printf, 3, 4)))
dbtrace_fail_at(struct dbtrace *t, uint64_t line, const char *fmt, ...);
#define fail(t, ...)	dbtrace_fail_at(t, (t)->line, __VA_ARGS__)

/*
 * One line (NUL-terminated in a buffer it may modify, @len bytes): 1 with a
 * record in @rec, 0 for any other good line, -1 on error (t->err).
 */
int dbtrace_parse_line(struct dbtrace *t, char *line, size_t len, struct dbtrace_rec *rec);
/*
 * A record line (@len bytes, left as it is) in state ST_RECORDS: 1 with the
 * record in @rec and the state moved on, exactly as dbtrace_parse_line()
 * would; 0 if the line is not plainly a good record, for the general
 * parser to read or refuse (dbtrace_fast.c).
 */
int dbtrace_fast_record(struct dbtrace *t, const char *line, size_t len, struct dbtrace_rec *rec);
/*
 * What a checked record adds, the same from either parser: its stream's
 * last time and count, its file's extent (@end: the byte after what it
 * reaches), the trace's record count.
 */
static inline void dbtrace_count_record(struct dbtrace *t, struct dbtrace_stream *s,
					struct dbtrace_file *f, const struct dbtrace_rec *rec,
					uint64_t end)
{
	if (rec->time != DBTRACE_NO_TIME)
		s->last_time = rec->time;
	s->records++;
	if (end > f->extent)
		f->extent = end;
	t->nrec++;
}
/* 0: every line through the general parser (the fuzz target compares the two) */
extern int dbtrace_fast_records;
/* The end of the header: the paths' conflicts; @what is the line that ends it. */
int dbtrace_finish_header(struct dbtrace *t, const char *what);
/* A reader or writer with nothing read or written yet; NULL if out of memory. */
struct dbtrace *dbtrace_new(const char *name);

#endif
