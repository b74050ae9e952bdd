/* JSON-lines writer: see jsonl.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/stat.h>

#include "jsonl.h"
#include "lathist.h"

static int room(struct jsonl *w, size_t more)
{
	size_t cap;
	char *p;

	if (w->failed)
		return -1;
	if (w->len + more + 1 <= w->cap)
		return 0;
	cap = w->cap ? w->cap : 1024;
	while (cap < w->len + more + 1) {
		if (cap > SIZE_MAX / 2) {
			w->failed = 1;
			return -1;
		}
		cap *= 2;
	}
	p = realloc(w->buf, cap);
	if (!p) {
		w->failed = 1;
		return -1;
	}
	w->buf = p;
	w->cap = cap;
	return 0;
}

static void put(struct jsonl *w, const char *s, size_t n)
{
	if (room(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void puts_(struct jsonl *w, const char *s)
{
	put(w, s, strlen(s));
}

static void put_string(struct jsonl *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];

	put(w, "\"", 1);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = *p;
			put(w, esc, 2);
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			put(w, esc, 6);
		} else {
			put(w, (const char *)p, 1);
		}
	}
	put(w, "\"", 1);
}

/* The comma and the key before a member. */
static void member(struct jsonl *w, const char *key)
{
	if (w->depth < 1) {
		w->failed = 1;
		return;
	}
	if (!w->first[w->depth - 1])
		put(w, ",", 1);
	w->first[w->depth - 1] = 0;
	if (key) {
		put_string(w, key);
		put(w, ":", 1);
	}
}

static void open_(struct jsonl *w, const char *key, char bracket)
{
	member(w, key);
	if (w->depth >= JSONL_MAX_DEPTH) {
		w->failed = 1;
		return;
	}
	put(w, &bracket, 1);
	w->closer[w->depth] = bracket == '{' ? '}' : ']';
	w->first[w->depth++] = 1;
}

void jsonl_begin(struct jsonl *w)
{
	w->len = 0;
	w->failed = 0;
	w->depth = 0;
	if (!room(w, 1))
		w->buf[0] = '\0';
	puts_(w, "{");
	w->closer[w->depth] = '}';
	w->first[w->depth++] = 1;
}

void jsonl_str(struct jsonl *w, const char *key, const char *val)
{
	member(w, key);
	if (val)
		put_string(w, val);
	else
		puts_(w, "null");
}

void jsonl_u64(struct jsonl *w, const char *key, uint64_t v)
{
	char num[24];

	member(w, key);
	snprintf(num, sizeof(num), "%" PRIu64, v);
	puts_(w, num);
}

void jsonl_i64(struct jsonl *w, const char *key, int64_t v)
{
	char num[24];

	member(w, key);
	snprintf(num, sizeof(num), "%" PRId64, v);
	puts_(w, num);
}

void jsonl_dbl(struct jsonl *w, const char *key, double v)
{
	char num[40];

	member(w, key);
	if (!isfinite(v)) {
		puts_(w, "null");
		return;
	}
	/* the fewest significant digits (15 to 17) that read back exactly */
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(num, sizeof(num), "%.*g", prec, v);
		if (strtod(num, NULL) == v)
			break;
	}
	puts_(w, num);
}

void jsonl_bool(struct jsonl *w, const char *key, int v)
{
	member(w, key);
	puts_(w, v ? "true" : "false");
}

void jsonl_obj(struct jsonl *w, const char *key)
{
	open_(w, key, '{');
}

void jsonl_arr(struct jsonl *w, const char *key)
{
	open_(w, key, '[');
}

void jsonl_close(struct jsonl *w)
{
	if (w->depth <= 1) {	/* the outer object is closed by jsonl_end */
		w->failed = 1;
		return;
	}
	w->depth--;
	put(w, &w->closer[w->depth], 1);
}

void jsonl_lat(struct jsonl *w, const char *key, const struct lathist *h)
{
	jsonl_obj(w, key);
	jsonl_lat_members(w, h);
	jsonl_close(w);
}

void jsonl_lat_members(struct jsonl *w, const struct lathist *h)
{
	jsonl_u64(w, "n", h->n);
	jsonl_u64(w, "mean_ns", lathist_mean(h));
	jsonl_u64(w, "min_ns", h->min);
	jsonl_u64(w, "p50_ns", lathist_percentile(h, 50));
	jsonl_u64(w, "p90_ns", lathist_percentile(h, 90));
	jsonl_u64(w, "p99_ns", lathist_percentile(h, 99));
	jsonl_u64(w, "p99.9_ns", lathist_percentile(h, 99.9));
	jsonl_u64(w, "max_ns", h->max);
}

int jsonl_end(struct jsonl *w)
{
	if (w->failed || w->depth != 1)
		return -1;
	put(w, "}\n", 2);
	w->depth = 0;
	return w->failed ? -1 : 0;
}

int jsonl_write(const struct jsonl *w, int fd, const char *path, char *err, size_t errlen)
{
	ssize_t n = write(fd, w->buf, w->len);

	if (n < 0 || (size_t)n != w->len) {
		snprintf(err, errlen, "%s: %s", path, n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

int jsonl_append(const struct jsonl *w, const char *path, char *err, size_t errlen)
{
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (jsonl_write(w, fd, path, err, errlen)) {
		close(fd);
		return -1;
	}
	if (close(fd)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int jsonl_open(const char *path, int *made, char *err, size_t errlen)
{
	const int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY;
	struct stat st;
	int fd;

	*made = 0;
	/* O_EXCL first: whether this job made it (and may remove it if it never runs) */
	fd = open(path, flags | O_CREAT | O_EXCL, 0644);
	if (fd >= 0) {
		*made = 1;
		return fd;
	}
	/* O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of blocking */
	if (errno == EEXIST)
		fd = open(path, flags | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path,
			 errno == ENXIO ? "not a regular file" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (fcntl(fd, F_SETFL, O_APPEND) == -1) { /* O_NONBLOCK off again */
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

void jsonl_free(struct jsonl *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

/* The directory part of @path into @dir: "." for none, "/" for the root. 0, or -1 too long. */
static int dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);

	if (!n) {
		snprintf(dir, len, ".");
		return 0;
	}
	if (n >= len)
		return -1;
	memcpy(dir, path, n);
	dir[n] = '\0';
	return 0;
}

int jsonl_check_path(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	struct stat st;

	if (!stat(path, &st)) {
		if (!S_ISREG(st.st_mode)) {
			/* a FIFO would block the job's end, a device is no report */
			snprintf(err, errlen, "%s: is not a regular file", path);
			return -1;
		}
		if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS))
			goto fail;
		return 0;
	}
	if (errno != ENOENT)
		goto fail;
	/* a new file: the directory it goes in must let us create it */
	if (dir_of(path, dir, sizeof(dir))) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS))
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return -1;
}
