/*
 * Comparison of tree marker files, so a job refuses a tree laid out with
 * other parameters and says which one differs. The texts are compared as
 * sets of key=value lines: order, blank lines and comments do not matter.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "treemeta.h"

struct kv {
	const char *key, *val;
	size_t klen, vlen;
};

/* The line at *pos without its "\n" or "\r\n"; advances *pos. 0 at the end. */
static int next_line(const char **pos, const char **line, size_t *len)
{
	const char *s = *pos, *nl;

	if (!*s)
		return 0;
	nl = strchrnul(s, '\n');
	*line = s;
	*len = nl - s;
	if (*len && s[*len - 1] == '\r')
		(*len)--;
	*pos = *nl ? nl + 1 : nl;
	return 1;
}

static int is_blank(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	return n == 0;
}

/*
 * Next key=value line after the magic line. Returns 1 with @kv set, 0 at the
 * end, -1 for a line without '=' (with @lineno set to its number).
 */
static int next_kv(const char **pos, unsigned long *lineno, struct kv *kv)
{
	const char *line, *eq;
	size_t len;

	while (next_line(pos, &line, &len)) {
		(*lineno)++;
		if (is_blank(line, len) || line[0] == '#')
			continue;
		eq = memchr(line, '=', len);
		if (!eq)
			return -1;
		kv->key = line;
		kv->klen = eq - line;
		kv->val = eq + 1;
		kv->vlen = len - kv->klen - 1;
		return 1;
	}
	return 0;
}

/* Skips the magic line; -1 if the text does not start with it. */
static int skip_magic(const char **pos)
{
	const char *line;
	size_t len;

	if (!*pos || !next_line(pos, &line, &len))
		return -1;
	if (len != strlen(TREEMETA_MAGIC) || memcmp(line, TREEMETA_MAGIC, len))
		return -1;
	return 0;
}

/* Checks that @text is a marker, naming the problem as @who's. */
static int validate(const char *text, const char *who, char *why, size_t whylen)
{
	unsigned long lineno = 1;
	const char *pos = text;
	struct kv kv;
	int r;

	if (skip_magic(&pos)) {
		pack_errf(why, whylen, "%s marker does not start with '%s'", who, TREEMETA_MAGIC);
		return -1;
	}
	while ((r = next_kv(&pos, &lineno, &kv)) > 0)
		;
	if (r < 0) {
		pack_errf(why, whylen, "%s marker line %lu is not key=value", who, lineno);
		return -1;
	}
	return 0;
}

static int kv_key_eq(const struct kv *a, const struct kv *b)
{
	return a->klen == b->klen && !memcmp(a->key, b->key, a->klen);
}

static int kv_eq(const struct kv *a, const struct kv *b)
{
	return kv_key_eq(a, b) && a->vlen == b->vlen && !memcmp(a->val, b->val, a->vlen);
}

/*
 * Looks for @want in marker @text: 1 if the exact line is there, else 0 with
 * @same_key set to a line with the same key (its key is NULL if none).
 */
static int find_kv(const char *text, const struct kv *want, struct kv *same_key)
{
	unsigned long lineno = 1;
	const char *pos = text;
	struct kv kv;

	same_key->key = NULL;
	skip_magic(&pos);
	while (next_kv(&pos, &lineno, &kv) > 0) {
		if (kv_eq(&kv, want))
			return 1;
		if (!same_key->key && kv_key_eq(&kv, want))
			*same_key = kv;
	}
	return 0;
}

static int is_dir_inode(const struct kv *kv)
{
	return kv->klen == strlen(TREEMETA_DIR_INODE) &&
	       !memcmp(kv->key, TREEMETA_DIR_INODE, kv->klen);
}

/*
 * Finds the first line of @a missing from @b and explains it; @a_is_tree
 * says which side is which. Returns 1 if one was found.
 */
static int first_missing(const char *a, const char *b, int a_is_tree,
			 char *why, size_t whylen)
{
	unsigned long lineno = 1;
	const char *pos = a;
	struct kv kv, other;

	skip_magic(&pos);
	while (next_kv(&pos, &lineno, &kv) > 0) {
		const struct kv *t = a_is_tree ? &kv : &other, *j = a_is_tree ? &other : &kv;

		/* where the tree was laid out, not how: a copy of it compares equal */
		if (is_dir_inode(&kv))
			continue;
		if (find_kv(b, &kv, &other))
			continue;
		if (!other.key)
			pack_errf(why, whylen, "%s lacks %.*s", a_is_tree ? "job" : "tree",
			     (int)kv.klen, kv.key);
		else
			pack_errf(why, whylen, "%.*s: tree has %.*s, job has %.*s",
			     (int)kv.klen, kv.key, (int)t->vlen, t->val,
			     (int)j->vlen, j->val);
		return 1;
	}
	return 0;
}

int treemeta_compare(const char *tree_text, const char *job_text, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = '\0';
	if (validate(tree_text, "tree", why, whylen))
		return -1;
	/* The job's text is ours; if it is malformed, comparing means nothing. */
	if (validate(job_text, "job", why, whylen))
		return -1;
	if (first_missing(tree_text, job_text, 1, why, whylen))
		return 1;
	if (first_missing(job_text, tree_text, 0, why, whylen))
		return 1;
	return 0;
}

int treemeta_dir_inode(const char *text, unsigned long long *ino)
{
	unsigned long lineno = 1;
	const char *pos = text;
	char num[24];
	struct kv kv;
	int found = 0;
	size_t i;

	if (skip_magic(&pos))
		return -1;
	while (next_kv(&pos, &lineno, &kv) > 0) {
		if (!is_dir_inode(&kv))
			continue;
		/* two lines: which one is the tree's is not for us to guess */
		if (found || !kv.vlen || kv.vlen >= sizeof(num))
			return -1;
		for (i = 0; i < kv.vlen; i++)
			if (!isdigit((unsigned char)kv.val[i]))
				return -1;
		memcpy(num, kv.val, kv.vlen);
		num[kv.vlen] = '\0';
		errno = 0;
		*ino = strtoull(num, NULL, 10);
		if (errno)
			return -1;
		found = 1;
	}
	return found;
}
