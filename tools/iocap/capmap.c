/* The hash tables of iocap-convert: capmap.h. */
#include "capmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char capmap_tomb[1];

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "iocap-convert: out of memory\n");
		exit(1);
	}
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p) {
		fprintf(stderr, "iocap-convert: out of memory\n");
		exit(1);
	}
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

static uint64_t shash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void sgrow(struct smap *m)
{
	struct sent *old = m->e;
	size_t ocap = m->cap, i;

	m->cap = ocap ? (m->live * 2 >= ocap ? ocap * 2 : ocap) : 64;
	m->e = xcalloc(m->cap, sizeof(*m->e));
	m->used = m->live;
	for (i = 0; i < ocap; i++) {
		size_t j;

		if (!old[i].k || old[i].k == CAPMAP_TOMB)
			continue;
		for (j = old[i].h & (m->cap - 1); m->e[j].k; j = (j + 1) & (m->cap - 1))
			;
		m->e[j] = old[i];
	}
	free(old);
}

struct sent *smap_get(const struct smap *m, const char *k)
{
	uint64_t h;
	size_t j;

	if (!m->cap)
		return NULL;
	h = shash(k);
	for (j = h & (m->cap - 1); m->e[j].k; j = (j + 1) & (m->cap - 1))
		if (m->e[j].k != CAPMAP_TOMB && m->e[j].h == h && !strcmp(m->e[j].k, k))
			return &m->e[j];
	return NULL;
}

struct sent *smap_put(struct smap *m, const char *k)
{
	struct sent *e = smap_get(m, k);
	uint64_t h;
	size_t j;

	if (e)
		return e;
	if ((m->used + 1) * 4 >= m->cap * 3)
		sgrow(m);
	h = shash(k);
	for (j = h & (m->cap - 1); m->e[j].k && m->e[j].k != CAPMAP_TOMB;
	     j = (j + 1) & (m->cap - 1))
		;
	if (!m->e[j].k)
		m->used++;
	m->live++;
	m->e[j] = (struct sent){ .k = xstrdup(k), .h = h };
	return &m->e[j];
}

void *smap_del(struct smap *m, const char *k)
{
	struct sent *e = smap_get(m, k);
	void *v;

	if (!e)
		return NULL;
	v = e->v;
	free(e->k);
	*e = (struct sent){ .k = CAPMAP_TOMB };
	m->live--;
	return v;
}

struct sent *smap_next(const struct smap *m, size_t *i)
{
	for (; *i < m->cap; (*i)++)
		if (m->e[*i].k && m->e[*i].k != CAPMAP_TOMB)
			return &m->e[(*i)++];
	return NULL;
}

static size_t islot(int64_t k, size_t cap)
{
	return (size_t)(((uint64_t)k * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

static void igrow(struct imap *m)
{
	struct ient *old = m->e;
	size_t ocap = m->cap, i;

	m->cap = ocap ? (m->live * 2 >= ocap ? ocap * 2 : ocap) : 16;
	m->e = xcalloc(m->cap, sizeof(*m->e));
	m->used = m->live;
	for (i = 0; i < ocap; i++) {
		size_t j;

		if (old[i].state != 1)
			continue;
		for (j = islot(old[i].k, m->cap); m->e[j].state; j = (j + 1) & (m->cap - 1))
			;
		m->e[j] = old[i];
	}
	free(old);
}

static struct ient *ifind(const struct imap *m, int64_t k)
{
	size_t j;

	if (!m->cap)
		return NULL;
	for (j = islot(k, m->cap); m->e[j].state; j = (j + 1) & (m->cap - 1))
		if (m->e[j].state == 1 && m->e[j].k == k)
			return &m->e[j];
	return NULL;
}

void *imap_get(const struct imap *m, int64_t k)
{
	struct ient *e = ifind(m, k);

	return e ? e->v : NULL;
}

void imap_set(struct imap *m, int64_t k, void *v)
{
	struct ient *e = ifind(m, k);
	size_t j;

	if (e) {
		e->v = v;
		return;
	}
	if ((m->used + 1) * 4 >= m->cap * 3)
		igrow(m);
	for (j = islot(k, m->cap); m->e[j].state == 1; j = (j + 1) & (m->cap - 1))
		;
	if (!m->e[j].state)
		m->used++;
	m->live++;
	m->e[j] = (struct ient){ .k = k, .state = 1, .v = v };
}

void *imap_del(struct imap *m, int64_t k)
{
	struct ient *e = ifind(m, k);
	void *v;

	if (!e)
		return NULL;
	v = e->v;
	e->state = 2;
	e->v = NULL;
	m->live--;
	return v;
}

struct ient *imap_next(const struct imap *m, size_t *i)
{
	for (; *i < m->cap; (*i)++)
		if (m->e[*i].state == 1)
			return &m->e[(*i)++];
	return NULL;
}
