/*
 * Which records of a trace a replay keeps (dbreplay's dbr_ops, dbr_streams
 * and dbr_files options). Each option is a comma-separated list; an item
 * prefixed with '!' excludes. A list of exclusions only starts from
 * everything; an empty list keeps everything.
 *   ops:     operation names (read, write, fsync, ...), or "sync" for fsync
 *            and fdatasync, "namespace" for create, unlink and truncate
 *   streams: stream ids, ranges "A-B", stream names, or the ROLE of
 *            streams named ROLE-TID (a capture's "walwriter-4250")
 *   files:   file ids, ranges, paths, or roles (data, log, journal, ...)
 */
#ifndef PACK_DBFILTER_H
#define PACK_DBFILTER_H

#include <stddef.h>
#include <stdint.h>
#include "dbtrace.h"

struct dbfilter {
	int all;					/* keeps every record: no bit is clear */
	uint32_t ops;					/* bit per enum dbtrace_op */
	uint8_t streams[DBTRACE_MAX_STREAMS / 8];
	uint8_t files[DBTRACE_MAX_FILES / 8];
};

/* 0, or -1 with a one-line message naming the option in @err. */
int dbfilter_parse(struct dbfilter *f, const struct dbtrace_header *h, const char *ops,
		   const char *streams, const char *files, char *err, size_t errlen);

static inline int dbfilter_match(const struct dbfilter *f, const struct dbtrace_rec *r)
{
	/* most replays filter nothing: one test a record instead of three lookups */
	return f->all ||
	       ((f->ops >> r->op & 1) && (f->streams[r->stream >> 3] >> (r->stream & 7) & 1) &&
		(f->files[r->file >> 3] >> (r->file & 7) & 1));
}

#endif
