/*
 * A JSON-lines writer for the engines' sidecar reports (smallfile's
 * opstats_file, postmark's pm_report, dbreplay's dbr_report): one object a
 * job, built in a buffer that grows as needed, then appended to the report
 * file with a single write(2), so that the lines of jobs running at once
 * never interleave.
 *
 * Nothing is dropped or cut: strings are escaped whole (", \, control
 * characters as \u00XX; other bytes, UTF-8 included, as they are), and a
 * failed allocation makes the whole line fail (jsonl_end returns -1) rather
 * than write a truncated object.
 *
 * The key convention the three reports share:
 *  - keys are lowercase with underscores; a quantity carries its unit as a
 *    suffix (_ns, _bytes) unless it is a count;
 *  - a latency distribution is an object (jsonl_lat) with the keys
 *    n, mean_ns, min_ns, p50_ns, p90_ns, p99_ns, p99.9_ns, max_ns;
 *  - every line starts with "engine" and "job" (fio's job name), then
 *    "subjob" (fio's subjob number, numjobs > 1).
 */
#ifndef PACK_JSONL_H
#define PACK_JSONL_H

#include <stddef.h>
#include <stdint.h>

struct lathist;

#define JSONL_MAX_DEPTH 16

struct jsonl {
	char *buf;
	size_t len, cap;
	int failed;		/* out of memory, or nesting past JSONL_MAX_DEPTH */
	int depth;
	unsigned char first[JSONL_MAX_DEPTH];	/* no member yet at that depth */
	char closer[JSONL_MAX_DEPTH];		/* '}' or ']' */
};

/* Starts a line: the outer object is open. */
void jsonl_begin(struct jsonl *w);
/* Members of the innermost object; @key NULL inside an array. */
void jsonl_str(struct jsonl *w, const char *key, const char *val);	/* NULL: null */
void jsonl_u64(struct jsonl *w, const char *key, uint64_t v);
void jsonl_i64(struct jsonl *w, const char *key, int64_t v);
void jsonl_dbl(struct jsonl *w, const char *key, double v);	/* exact; NaN, inf: null */
void jsonl_bool(struct jsonl *w, const char *key, int v);
void jsonl_obj(struct jsonl *w, const char *key);
void jsonl_arr(struct jsonl *w, const char *key);
void jsonl_close(struct jsonl *w);	/* the innermost object or array */
/* A latency distribution in the shared convention (see above). */
void jsonl_lat(struct jsonl *w, const char *key, const struct lathist *h);
/*
 * The same keys as members of the innermost object, beside others of the
 * thing measured (dbreplay's classes: bytes, errors, n, mean_ns, ...).
 */
void jsonl_lat_members(struct jsonl *w, const struct lathist *h);
/*
 * Closes the outer object and adds the newline. Returns 0 and the line in
 * w->buf (w->len bytes, NUL-terminated), or -1 if any step failed or the
 * nesting is unbalanced; then nothing must be written.
 */
int jsonl_end(struct jsonl *w);
/*
 * Appends the finished line to @path (created 0644 if absent) with one
 * write. 0, or -1 with a one-line reason in @err ("PATH: strerror"). A
 * FIFO put there since jsonl_check_path() fails (ENXIO) instead of
 * blocking the end of the job.
 */
int jsonl_append(const struct jsonl *w, const char *path, char *err, size_t errlen);
/*
 * Opens the report file @path when a job starts, so that a path that
 * cannot be written fails the job before it runs, not after it: appended
 * to, never truncated (a report file gathers the lines of many jobs),
 * created 0644 if absent (*@made = 1 then, else 0). A regular file only: a
 * FIFO would block the job's end, a device or directory is no report. The
 * descriptor, or -1 with "PATH: reason" in @err.
 */
int jsonl_open(const char *path, int *made, char *err, size_t errlen);
/* Writes the finished line to @fd (from jsonl_open) with one write. 0, or -1 with "PATH: reason". */
int jsonl_write(const struct jsonl *w, int fd, const char *path, char *err, size_t errlen);
void jsonl_free(struct jsonl *w);

/*
 * Whether the report file @path can take its line at the end of a run,
 * checked before the run starts, so that a report that cannot be written
 * is not found out after the run: an existing regular file (or a symlink
 * to one) this process may write, or a new name in a directory it may
 * write in (access(2) with the effective ids, which also sees a read-only
 * file system). Nothing is created. 0, or -1 with "PATH: why" in @err.
 */
int jsonl_check_path(const char *path, char *err, size_t errlen);

#endif
