/*
 * A checked trace's records kept compactly (dbrecs.h).
 *
 * A record is a flags byte (the operation, whether it has a time and a
 * latency, whether its offset or size and its length are in pages), then
 * LEB128 numbers: the line after the previous record's, the time as a
 * zigzag difference from the previous timed record's (streams interleave,
 * so a time may go back), stream, file, the operation's arguments, the
 * latency. The replay decodes one in some tens of instructions, where
 * parsing its text line costs hundreds.
 */
#include <stdlib.h>
#include <string.h>

#include "dbrecs.h"

#define BLOCK	(1U << 20)
#define REC_MAX 64 /* more than a record can take: a flags byte and 7 numbers, at most 52 bytes */

#define F_OP	 0x0f
#define F_LAT	 0x10
#define F_TIME	 0x20
#define F_PAGED1 0x40 /* offset (or truncate's size) in pages */
#define F_PAGED2 0x80 /* length in pages */

struct dbrecs {
	uint32_t page_size;
	size_t cap;
	unsigned char **blocks;
	size_t *used; /* bytes of each block */
	size_t nblocks, blocks_cap;
	uint64_t count;
	uint64_t line, time; /* the last record added */
	/* reading: the block open for it (@rp up to @rend), the next one to open */
	const unsigned char *rp, *rend;
	size_t rb;
	uint64_t rline, rtime;
};

struct dbrecs *dbrecs_new(uint32_t page_size, size_t cap)
{
	struct dbrecs *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->page_size = page_size ? page_size : 1;
	s->cap = cap;
	return s;
}

static unsigned char *put(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/* Most numbers take one byte (a record's are mostly small): that case first. */
static inline uint64_t get(const unsigned char **pp)
{
	const unsigned char *p = *pp;
	uint64_t v = *p++;
	unsigned shift = 7;

	if (__builtin_expect(v < 0x80, 1)) {
		*pp = p;
		return v;
	}
	v &= 0x7f;
	for (;;) {
		uint64_t b = *p++;

		v |= (b & 0x7f) << shift;
		if (b < 0x80)
			break;
		shift += 7;
	}
	*pp = p;
	return v;
}

/* Room for one more record: a new block if the last has less than REC_MAX left. */
static unsigned char *room(struct dbrecs *s)
{
	unsigned char *b;

	if (s->nblocks && BLOCK - s->used[s->nblocks - 1] >= REC_MAX)
		return s->blocks[s->nblocks - 1] + s->used[s->nblocks - 1];
	if ((s->nblocks + 1) * (size_t)BLOCK > s->cap)
		return NULL;
	if (s->nblocks == s->blocks_cap) {
		size_t n = s->blocks_cap ? 2 * s->blocks_cap : 16;
		unsigned char **nb = realloc(s->blocks, n * sizeof(*nb));
		size_t *nu;

		if (!nb)
			return NULL;
		s->blocks = nb;
		nu = realloc(s->used, n * sizeof(*nu));
		if (!nu)
			return NULL;
		s->used = nu;
		s->blocks_cap = n;
	}
	b = malloc(BLOCK);
	if (!b)
		return NULL;
	s->blocks[s->nblocks] = b;
	s->used[s->nblocks++] = 0;
	return b;
}

int dbrecs_add(struct dbrecs *s, const struct dbtrace_rec *r)
{
	unsigned char *p = room(s), *start = p;
	uint64_t a1 = 0, a2 = 0;
	unsigned flags = (unsigned)r->op & F_OP;
	int nargs = dbtrace_nargs(r->op);

	if (!p)
		return -1;
	if (r->has_lat)
		flags |= F_LAT;
	if (r->time != DBTRACE_NO_TIME)
		flags |= F_TIME;
	if (nargs) {
		a1 = nargs == 2 ? r->off : r->size;
		a2 = r->len;
		if (a1 % s->page_size == 0) {
			flags |= F_PAGED1;
			a1 /= s->page_size;
		}
		if (nargs == 2 && a2 % s->page_size == 0) {
			flags |= F_PAGED2;
			a2 /= s->page_size;
		}
	}
	*p++ = (unsigned char)flags;
	p = put(p, r->line - s->line);
	if (flags & F_TIME) {
		/* both times are at most 2^63 - 1: their difference fits an int64 */
		int64_t d = (int64_t)(r->time - s->time);

		p = put(p, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
		s->time = r->time;
	}
	p = put(p, r->stream);
	p = put(p, r->file);
	if (nargs)
		p = put(p, a1);
	if (nargs == 2)
		p = put(p, a2);
	if (r->has_lat)
		p = put(p, r->lat);
	s->line = r->line;
	s->used[s->nblocks - 1] += (size_t)(p - start);
	s->count++;
	return 0;
}

int dbrecs_next(struct dbrecs *s, struct dbtrace_rec *r)
{
	const unsigned char *p = s->rp;
	unsigned flags;
	int nargs;

	if (__builtin_expect(p == s->rend, 0)) {
		/* the open block has grown since (records added after reading began) */
		if (s->rb && s->blocks[s->rb - 1] + s->used[s->rb - 1] != s->rend) {
			s->rend = s->blocks[s->rb - 1] + s->used[s->rb - 1];
		} else {
			if (s->rb >= s->nblocks)
				return 0;
			p = s->blocks[s->rb];
			s->rend = p + s->used[s->rb++];
		}
	}
	flags = *p++;
	r->op = (enum dbtrace_op)(flags & F_OP);
	s->rline += get(&p);
	r->line = s->rline;
	r->time = DBTRACE_NO_TIME;
	if (flags & F_TIME) {
		uint64_t z = get(&p);

		s->rtime += (z >> 1) ^ -(z & 1);
		r->time = s->rtime;
	}
	r->stream = (uint32_t)get(&p);
	r->file = (uint32_t)get(&p);
	r->off = r->len = r->size = r->lat = 0;
	r->has_lat = 0;
	nargs = dbtrace_nargs(r->op);
	if (nargs) {
		uint64_t a1 = get(&p);

		if (flags & F_PAGED1)
			a1 *= s->page_size;
		if (nargs == 2)
			r->off = a1;
		else
			r->size = a1;
	}
	if (nargs == 2) {
		r->len = get(&p);
		if (flags & F_PAGED2)
			r->len *= s->page_size;
	}
	if (flags & F_LAT) {
		r->has_lat = 1;
		r->lat = get(&p);
	}
	s->rp = p;
	return 1;
}

void dbrecs_rewind(struct dbrecs *s)
{
	s->rp = s->rend = NULL;
	s->rb = 0;
	s->rline = s->rtime = 0;
}

uint64_t dbrecs_count(const struct dbrecs *s)
{
	return s->count;
}

size_t dbrecs_bytes(const struct dbrecs *s)
{
	return s->nblocks * (size_t)BLOCK;
}

void dbrecs_free(struct dbrecs *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nblocks; i++)
		free(s->blocks[i]);
	free(s->blocks);
	free(s->used);
	free(s);
}
