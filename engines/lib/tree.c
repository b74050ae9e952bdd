/*
 * Small-file tree shape: maps a file index to its directory and name with
 * plain arithmetic, so trees of hundreds of millions of files need no
 * per-file state and every job agrees on where file i lives.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "decimal.h"
#include "errmsg.h"
#include "tree.h"

#define MAX_LEAVES	(1ULL << 48)
/* ".w" plus the widest unsigned writer number. */
#define WRITER_SUFFIX_MAX	(2 + 10)

static unsigned hex_digits(uint64_t v)
{
	unsigned n = 1;

	while (v >>= 4)
		n++;
	return n;
}

static unsigned dec_digits(uint64_t v)
{
	unsigned n = 1;

	while (v /= 10)
		n++;
	return n;
}

/* fanout^depth, or 0 if it exceeds MAX_LEAVES. */
static uint64_t leaves_for(uint32_t fanout, uint32_t depth)
{
	uint64_t n = 1;
	uint32_t d;

	/* fanout 1 never grows; don't loop billions of times for it. */
	if (fanout == 1)
		return 1;
	for (d = 0; d < depth; d++) {
		if (n > MAX_LEAVES / fanout)
			return 0;
		n *= fanout;
	}
	return n;
}

/* Depth for files_per_dir: smallest d with fanout^d * fpd >= nfiles. */
static int depth_for_fpd(struct tree_shape *t, uint64_t fpd, char *err, size_t errlen)
{
	/* Leaves needed, computed without overflowing fpd * leaves. */
	uint64_t need = t->nfiles / fpd + (t->nfiles % fpd != 0);
	uint64_t n = 1;
	uint32_t d = 0;

	if (t->fanout == 1 && need > 1) {
		pack_errf(err, errlen, "tree_fanout must be at least 2 when tree_files_per_dir < tree_files");
		return -1;
	}
	while (n < need) {
		if (n > MAX_LEAVES / t->fanout) {
			pack_errf(err, errlen,
			     "tree_files_per_dir %llu with tree_fanout %u needs more than 2^48 leaf directories",
			     (unsigned long long)fpd, t->fanout);
			return -1;
		}
		n *= t->fanout;
		d++;
	}
	t->depth = d;
	t->nleaves = n;
	t->files_per_leaf = fpd;
	return 0;
}

/* Longest path we will ever build: a maildir staging path at full depth. */
static uint64_t longest_path(const struct tree_shape *t)
{
	uint64_t n = (uint64_t)t->depth * (t->digit_width + 1);

	n += 4;			/* "tmp/" or "new/" */
	n += 1 + t->name_width + WRITER_SUFFIX_MAX;
	return n;
}

int tree_shape_init(struct tree_shape *t, uint64_t nfiles, uint32_t fanout,
		    uint32_t depth, uint64_t files_per_dir, int maildir,
		    char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	if (nfiles == 0) {
		pack_errf(err, errlen, "tree_files must be at least 1");
		return -1;
	}
	if (fanout == 0) {
		pack_errf(err, errlen, "tree_fanout must be at least 1");
		return -1;
	}
	t->nfiles = nfiles;
	t->fanout = fanout;
	t->maildir = !!maildir;
	t->digit_width = hex_digits(fanout - 1);
	t->name_width = dec_digits(nfiles - 1);
	if (t->name_width < 10)
		t->name_width = 10;

	if (files_per_dir) {
		if (depth_for_fpd(t, files_per_dir, err, errlen))
			return -1;
	} else {
		t->depth = depth;
		t->nleaves = leaves_for(fanout, depth);
		if (!t->nleaves) {
			pack_errf(err, errlen,
			     "tree_depth %u with tree_fanout %u gives more than 2^48 leaf directories",
			     depth, fanout);
			return -1;
		}
		t->files_per_leaf = nfiles / t->nleaves + (nfiles % t->nleaves != 0);
	}
	/* +1 for the NUL; a root path is prepended later, so this is a floor. */
	if (longest_path(t) + 1 > PATH_MAX) {
		pack_errf(err, errlen, "tree_depth %u gives paths longer than PATH_MAX (%d)",
		     t->depth, PATH_MAX);
		return -1;
	}
	return 0;
}

uint64_t tree_leaf_of(const struct tree_shape *t, uint64_t i)
{
	return i / t->files_per_leaf;
}

static size_t leaf_path_len(const struct tree_shape *t)
{
	if (!t->depth)
		return 0;
	return (size_t)t->depth * (t->digit_width + 1) - 1;
}

int tree_leaf_path(const struct tree_shape *t, uint64_t leaf, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = leaf_path_len(t);
	char *p = buf + n;
	uint32_t d;

	if (n + 1 > len)
		return -1;
	*p = '\0';
	/* Fill from the least significant level backwards. */
	for (d = 0; d < t->depth; d++) {
		uint64_t digit = leaf % t->fanout;
		unsigned w;

		leaf /= t->fanout;
		if (d)
			*--p = '/';
		for (w = 0; w < t->digit_width; w++) {
			*--p = hex[digit & 15];
			digit >>= 4;
		}
	}
	return n;
}

/*
 * The paths are built by hand, not with snprintf: a read of a small warm
 * file costs the engine less than a microsecond besides its system calls,
 * and two snprintf calls per path were about 1,700 instructions of it.
 */

/* Appends the @n bytes of @s to the path in @buf of length @len (a '/' first if @at > 0). */
static int path_append_n(char *buf, size_t len, int at, const char *s, size_t n)
{
	size_t need;

	if (at < 0)
		return -1;
	need = (size_t)at + (at > 0) + n;
	if (need >= len)
		return -1;
	if (at > 0)
		buf[at++] = '/';
	memcpy(buf + at, s, n);
	buf[need] = '\0';
	return (int)need;
}

static int path_append(char *buf, size_t len, int at, const char *s)
{
	return path_append_n(buf, len, at, s, strlen(s));
}

/* @v in decimal, zero-padded to at least @width digits, at @p (room for 20 or @width); its length. */
static unsigned put_decimal(char *p, uint64_t v, unsigned width)
{
	char digits[20], *end = digits + sizeof(digits), *q = dec_write(end, v);
	unsigned n = (unsigned)(end - q), len = n < width ? width : n;

	memset(p, '0', len - n);
	memcpy(p + len - n, q, n);
	return len;
}

/*
 * "f" + @i zero-padded to name_width, not NUL-terminated, in @name (room for
 * 1 + 20 bytes: name_width is at most 20, the digits of 2^64 - 1).
 */
static unsigned file_name(const struct tree_shape *t, uint64_t i, char *name)
{
	name[0] = 'f';
	return 1 + put_decimal(name + 1, i, t->name_width);
}

static int leaf_sub_path(const struct tree_shape *t, uint64_t i, const char *sub,
			 char *buf, size_t len)
{
	int n = tree_leaf_path(t, tree_leaf_of(t, i), buf, len);

	return path_append(buf, len, n, sub);
}

int tree_file_dir(const struct tree_shape *t, uint64_t i, char *buf, size_t len)
{
	if (t->maildir)
		return leaf_sub_path(t, i, "new", buf, len);
	return tree_leaf_path(t, tree_leaf_of(t, i), buf, len);
}

int tree_file_name(const struct tree_shape *t, uint64_t i, char *buf, size_t len)
{
	char name[1 + 20 + WRITER_SUFFIX_MAX];
	unsigned n;

	if (t->name_width > 20)
		return -1;
	n = file_name(t, i, name);
	if (n >= len)
		return -1;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return (int)n;
}

int tree_file_path(const struct tree_shape *t, uint64_t i, char *buf, size_t len)
{
	char name[1 + 20 + WRITER_SUFFIX_MAX];

	if (t->name_width > 20)
		return -1;
	return path_append_n(buf, len, tree_file_dir(t, i, buf, len), name, file_name(t, i, name));
}

int tree_tmp_path(const struct tree_shape *t, uint64_t i, unsigned writer,
		  char *buf, size_t len)
{
	char name[1 + 20 + WRITER_SUFFIX_MAX];
	unsigned n;

	if (!t->maildir || t->name_width > 20)
		return -1;
	n = file_name(t, i, name);
	name[n++] = '.';
	name[n++] = 'w';
	n += put_decimal(name + n, writer, 1);
	return path_append_n(buf, len, leaf_sub_path(t, i, "tmp", buf, len), name, n);
}

uint64_t tree_ndirs(const struct tree_shape *t)
{
	uint64_t n = 0, level = 1;
	uint32_t d;

	for (d = 0; d < t->depth; d++) {
		level *= t->fanout;
		n += level;
	}
	if (t->maildir)
		n += 3 * t->nleaves;
	return n;
}

uint64_t tree_max_files(uint64_t chunk)
{
	return chunk ? (uint64_t)INT64_MAX / chunk : 0;
}

/*
 * floor(n * k / j) for k <= j < 2^32: n = q * j + r, so n * k / j =
 * q * k + r * k / j, where q * k <= n and r * k < j * j < 2^64.
 */
static uint64_t share_start(uint64_t n, uint64_t k, uint64_t j)
{
	return n / j * k + n % j * k / j;
}

void tree_share(uint64_t n, uint32_t k, uint32_t j, uint64_t *base, uint64_t *count)
{
	if (!j)
		j = 1;
	*base = share_start(n, k, j);
	*count = share_start(n, (uint64_t)k + 1, j) - *base;
}
