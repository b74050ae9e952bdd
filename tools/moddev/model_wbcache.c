/*
 * wbcache: a controller's write-back cache in front of any model (a RAID
 * controller's, or a drive's own write cache: hdd's write_cache_mb):
 *
 *   wbcache:size_mb=256,member=(raid5:members=4,member=(mtron-7035))
 *
 * The cache holds 4 KiB lines. A write is done once in the cache
 * (latency_us, plus its bytes at mbps): its lines become dirty, taking
 * clean ones least recently used first; when dirty lines fill the cache it
 * waits for room, and so do the writes after it. A read found whole in
 * the cache is served from it the same way; any other read goes to the
 * member. Read data is not cached (a write-back cache, not a read cache).
 *
 * Destaging: the dirty lines go to the member in ascending order from
 * where the last destage ended (an elevator, wrapping at the end), as
 * writes of contiguous dirty lines up to 1 MiB (so that a RAID-5 behind
 * it gets whole rows when the data is there), destage_depth of them at a
 * time, and no faster than destage_mbps if given. It starts as soon as a
 * line is dirty. A line written again while it is being destaged stays
 * dirty.
 *
 * A flush completes when every line dirty when it came has been destaged,
 * and the member has then flushed too. The daemon writes the backing file
 * before it answers, so what was acknowledged survives a crash either
 * way: the cache decides when, not whether.
 */
#include <stdlib.h>
#include <string.h>

#include "devmodel.h"
#include "errmsg.h"
#include "freelist.h"
#include "members.h"
#include "reqheap.h"
#include "wbcache.h"

#define LINE 4096ULL
/* the longest destage write, in lines */
#define RUN_LINES 256

/* clang-format off */
enum { P_SIZE, P_LATENCY, P_MBPS, P_DESTAGE_MBPS, P_DEPTH, P_MEMBER };

static const struct dev_param wbcache_params[] = {
	[P_SIZE]          = { "size_mb", 1, 1048576, 0, 1, 0, 0,
			      "the cache, in MiB" },
	[P_LATENCY]       = { "latency_us", 0, 1e6, 0, 0, 0, 0,
			      "a write into the cache or a hit, in us (default 0)" },
	[P_MBPS]          = { "mbps", 0, 1e6, 0, 0, 0, 0,
			      "bytes to and from the cache, in MB/s (default: no transfer time)" },
	[P_DESTAGE_MBPS]  = { "destage_mbps", 0, 1e6, 0, 0, 0, 0,
			      "destaging no faster than this, in MB/s (default: as the member takes it)" },
	[P_DEPTH]         = { "destage_depth", 1, 256, 8, 0, 1, 0,
			      "destage writes in the member at once" },
	[P_MEMBER]        = { "member", 0, 0, 0, 1, 0, 1,
			      "the model behind the cache: (SPEC) or a named model in parentheses" },
};
/* clang-format on */

struct line {
	struct line *hnext;
	struct line *prev, *next; /* the clean lines, least recently used first */
	uint64_t index, epoch, redirty_epoch;
	unsigned char dirty, destaging, redirty;
};

enum child_kind { MISS, DESTAGE, FLUSH };

/* A request of the cache's to its member. */
struct child {
	struct dev_req r; /* first: the member's request */
	enum child_kind kind;
	struct dev_req *host; /* a miss's or a flush's */
	struct child *next_free;
};

/* A host write waiting for room, or a flush waiting for the destage. */
struct waiter {
	struct waiter *next;
	struct dev_req *r;
	struct line *spare; /* a write's lines, allocated when it came */
	struct child *flush;
	uint64_t epoch;
};

struct wbcache {
	struct dev_model m;
	struct member_set ms;
	uint64_t capacity, nlines, nclean, ndirty;
	uint64_t latency_ns;
	double ns_per_byte, destage_ns_per_byte;
	unsigned depth, destaging;
	uint64_t next_destage; /* pacing: no destage before */
	uint64_t cursor;       /* the elevator: the line after the last destage */
	struct line **hash;
	size_t hash_mask;
	struct line lru;		     /* sentinel of the clean list */
	uint64_t *bits, *summary, dev_lines; /* dirty and not being destaged */
	uint64_t nbits;
	size_t words, swords;
	/* dirty lines per epoch (a flush closes one) */
	uint64_t epoch, ebase, *ecount;
	size_t ecap;
	struct waiter *wait_head, **wait_tail, *flush_head, **flush_tail;
	struct child *destage_free;
	uint64_t seq, held;
	struct req_heap done;
	struct free_list lines, children, waiters;
};

static struct wbcache *wb_of(const struct dev_model *m)
{
	return (struct wbcache *)m;
}

/* ---- lines: the hash, the clean list, the dirty bitmap ---------------- */

static struct line **bucket(struct wbcache *c, uint64_t index)
{
	return &c->hash[(index * 0x9E3779B97F4A7C15ULL >> 24) & c->hash_mask];
}

static struct line *lookup(struct wbcache *c, uint64_t index)
{
	struct line *l;

	for (l = *bucket(c, index); l; l = l->hnext)
		if (l->index == index)
			return l;
	return NULL;
}

static void unhash(struct wbcache *c, struct line *l)
{
	struct line **pp;

	for (pp = bucket(c, l->index); *pp != l; pp = &(*pp)->hnext)
		;
	*pp = l->hnext;
}

static void lru_remove(struct wbcache *c, struct line *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	c->nclean--;
}

static void lru_add(struct wbcache *c, struct line *l)
{
	l->prev = c->lru.prev;
	l->next = &c->lru;
	c->lru.prev->next = l;
	c->lru.prev = l;
	c->nclean++;
}

static void bit_set(struct wbcache *c, uint64_t i)
{
	c->nbits += !((c->bits[i / 64] >> (i % 64)) & 1);
	c->bits[i / 64] |= 1ULL << (i % 64);
	c->summary[i / 4096] |= 1ULL << (i / 64 % 64);
}

static void bit_clear(struct wbcache *c, uint64_t i)
{
	c->nbits -= (c->bits[i / 64] >> (i % 64)) & 1;
	c->bits[i / 64] &= ~(1ULL << (i % 64));
	if (!c->bits[i / 64])
		c->summary[i / 4096] &= ~(1ULL << (i / 64 % 64));
}

static int bit_test(const struct wbcache *c, uint64_t i)
{
	return i < c->dev_lines && (c->bits[i / 64] >> (i % 64)) & 1;
}

/* The first set bit at or after @from, or UINT64_MAX. */
static uint64_t bit_next(const struct wbcache *c, uint64_t from)
{
	uint64_t w = from / 64, word, s;

	if (from >= c->dev_lines)
		return UINT64_MAX;
	word = c->bits[w] & (~0ULL << (from % 64));
	if (word)
		return w * 64 + __builtin_ctzll(word);
	for (w++; w < c->words; w++) {
		if (w % 64 == 0) {
			/* whole summary words at a time */
			for (s = w / 64; s < c->swords && !c->summary[s]; s++)
				;
			if (s == c->swords)
				return UINT64_MAX;
			w = s * 64 + __builtin_ctzll(c->summary[s]);
		} else if (!((c->summary[w / 64] >> (w % 64)) & 1)) {
			continue;
		}
		if (c->bits[w])
			return w * 64 + __builtin_ctzll(c->bits[w]);
	}
	return UINT64_MAX;
}

/* ---- epochs: how many dirty lines each flush waits for ---------------- */

/* The epochs from ebase to the current one, in a ring indexed by the epoch itself. */
static uint64_t *ecount(struct wbcache *c, uint64_t epoch)
{
	return &c->ecount[epoch % c->ecap];
}

/* Room for the counts of the current epoch and the next: 0, or -1 (out of memory). */
static int epoch_room(struct wbcache *c)
{
	size_t cap = c->ecap * 2, i;
	uint64_t *a;

	if (c->epoch + 1 - c->ebase < c->ecap)
		return 0;
	a = calloc(cap, sizeof(*a));
	if (!a)
		return -1;
	for (i = 0; i < c->ecap; i++)
		a[(c->ebase + i) % cap] = *ecount(c, c->ebase + i);
	free(c->ecount);
	c->ecount = a;
	c->ecap = cap;
	return 0;
}

/* The oldest epoch with a dirty line (the current one if none). */
static uint64_t oldest_epoch(struct wbcache *c)
{
	while (c->ebase < c->epoch && !*ecount(c, c->ebase))
		c->ebase++;
	return c->ebase;
}

static void make_dirty(struct wbcache *c, struct line *l)
{
	if (l->destaging) {
		/* its destage may miss this write: it stays dirty after it */
		if (!l->redirty) {
			l->redirty = 1;
			l->redirty_epoch = c->epoch;
			++*ecount(c, c->epoch);
		}
		return;
	}
	if (l->dirty)
		return;
	if (l->index < c->dev_lines)
		bit_set(c, l->index);
	l->dirty = 1;
	l->epoch = c->epoch;
	++*ecount(c, c->epoch);
	c->ndirty++;
}

/* ---- host requests ------------------------------------------------------ */

static uint64_t served_at(const struct wbcache *c, uint64_t t, uint32_t len)
{
	return t + c->latency_ns + (uint64_t)(len * c->ns_per_byte + 0.5);
}

static void complete(struct wbcache *c, struct dev_req *r, uint64_t t)
{
	r->done_ns = t;
	req_heap_push(&c->done, r); /* reserved by submit */
}

static uint64_t first_line(const struct dev_req *r)
{
	return r->offset / LINE;
}

static uint64_t end_line(const struct dev_req *r)
{
	return (r->offset + r->len + LINE - 1) / LINE;
}

/* A write into the cache at @t if there is room: 1 if it went in. */
static int admit(struct wbcache *c, struct waiter *w, uint64_t t)
{
	struct dev_req *r = w->r;
	uint64_t i, fresh = 0;
	struct line *l;

	for (i = first_line(r); i < end_line(r); i++)
		fresh += !lookup(c, i);
	/* too big for the cache goes in when nothing else is dirty */
	if (c->nlines + fresh > c->capacity + c->nclean && c->nlines > c->nclean)
		return 0;
	/* its cached lines first, so that making room never evicts one of them */
	for (i = first_line(r); i < end_line(r); i++) {
		l = lookup(c, i);
		if (!l)
			continue;
		if (!l->dirty && !l->destaging)
			lru_remove(c, l);
		make_dirty(c, l);
	}
	for (i = first_line(r); i < end_line(r); i++) {
		if (lookup(c, i))
			continue;
		if (c->nlines >= c->capacity && c->nclean) {
			/* the least recently used clean line makes room */
			l = c->lru.next;
			lru_remove(c, l);
			unhash(c, l);
			c->nlines--;
			free_list_put(&c->lines, l);
		}
		l = w->spare;
		w->spare = l->hnext;
		memset(l, 0, sizeof(*l));
		l->index = i;
		l->hnext = *bucket(c, i);
		*bucket(c, i) = l;
		c->nlines++;
		make_dirty(c, l);
	}
	while ((l = w->spare)) {
		w->spare = l->hnext;
		free_list_put(&c->lines, l);
	}
	complete(c, r, served_at(c, t, r->len));
	free_list_put(&c->waiters, w);
	return 1;
}

static void admit_waiting(struct wbcache *c, uint64_t t)
{
	struct waiter *w;

	while ((w = c->wait_head)) {
		c->wait_head = w->next;
		if (!admit(c, w, t)) {
			c->wait_head = w;
			return;
		}
		if (!c->wait_head)
			c->wait_tail = &c->wait_head;
	}
}

static void send(struct wbcache *c, struct child *ch, uint64_t t)
{
	ch->r.arrival_ns = t;
	ch->r.seq = c->seq++;
	ch->r.owner = ch;
	if (members_submit(&c->ms, 0, &ch->r)) {
		/* the member out of memory: taken as done, the cache goes on */
		ch->r.done_ns = t;
		ch->r.next = NULL;
		*c->ms.done_tail = &ch->r;
		c->ms.done_tail = &ch->r.next;
	}
}

/* Flushes whose dirty lines are all destaged flush the member. */
static void flushes(struct wbcache *c, uint64_t t)
{
	struct waiter *w;

	while ((w = c->flush_head) && oldest_epoch(c) > w->epoch) {
		c->flush_head = w->next;
		if (!c->flush_head)
			c->flush_tail = &c->flush_head;
		send(c, w->flush, t);
		free_list_put(&c->waiters, w);
	}
}

/* ---- destaging ----------------------------------------------------------- */

static void destage(struct wbcache *c, uint64_t t)
{
	uint64_t first, n, end;
	struct child *ch;
	struct line *l;

	while (c->destaging < c->depth && c->next_destage <= t) {
		first = bit_next(c, c->cursor);
		if (first == UINT64_MAX)
			first = bit_next(c, 0);
		if (first == UINT64_MAX)
			return;
		for (n = 0; n < RUN_LINES && bit_test(c, first + n); n++) {
			bit_clear(c, first + n);
			l = lookup(c, first + n);
			l->dirty = 0;
			l->destaging = 1;
		}
		c->cursor = first + n;
		ch = c->destage_free;
		c->destage_free = ch->next_free;
		end = (first + n) * LINE < c->m.size ? (first + n) * LINE : c->m.size;
		ch->kind = DESTAGE;
		ch->r.op = DEV_WRITE;
		ch->r.offset = first * LINE;
		ch->r.len = (uint32_t)(end - first * LINE);
		c->destaging++;
		if (c->destage_ns_per_byte > 0)
			c->next_destage = (c->next_destage > t ? c->next_destage : t) +
					  (uint64_t)(ch->r.len * c->destage_ns_per_byte + 0.5);
		send(c, ch, t);
	}
}

static void destaged(struct wbcache *c, struct child *ch, uint64_t t)
{
	uint64_t i;
	struct line *l;

	for (i = ch->r.offset / LINE; i < (ch->r.offset + ch->r.len + LINE - 1) / LINE; i++) {
		l = lookup(c, i);
		l->destaging = 0;
		--*ecount(c, l->epoch);
		if (l->redirty) {
			/* written again meanwhile: dirty from that write's epoch */
			l->redirty = 0;
			l->dirty = 1;
			l->epoch = l->redirty_epoch;
			bit_set(c, i);
		} else {
			c->ndirty--;
			lru_add(c, l);
		}
	}
	c->destaging--;
	ch->next_free = c->destage_free;
	c->destage_free = ch;
	admit_waiting(c, t);
	flushes(c, t);
}

static void child_done(struct wbcache *c, struct child *ch, uint64_t t)
{
	if (ch->kind == DESTAGE) {
		destaged(c, ch, t);
		return;
	}
	complete(c, ch->host, ch->kind == MISS ? served_at(c, t, ch->r.len) - c->latency_ns : t);
	free_list_put(&c->children, ch);
}

/* ---- the model ----------------------------------------------------------- */

static int cached(struct wbcache *c, const struct dev_req *r)
{
	uint64_t i;

	for (i = first_line(r); i < end_line(r); i++)
		if (!lookup(c, i))
			return 0;
	return 1;
}

static void touch(struct wbcache *c, const struct dev_req *r)
{
	struct line *l;
	uint64_t i;

	for (i = first_line(r); i < end_line(r); i++) {
		l = lookup(c, i);
		if (!l->dirty && !l->destaging) {
			lru_remove(c, l);
			lru_add(c, l);
		}
	}
}

static int wb_submit(struct dev_model *m, struct dev_req *r)
{
	struct wbcache *c = wb_of(m);
	uint64_t t = r->arrival_ns, fresh;
	struct waiter *w;
	struct child *ch;
	struct line *l;

	if (req_heap_reserve(&c->done, c->held + 1) || epoch_room(c))
		return -1;
	r->start_ns = t;
	if (r->op == DEV_READ && r->len && !cached(c, r)) {
		ch = free_list_get(&c->children);
		if (!ch)
			return -1;
		c->held++;
		ch->kind = MISS;
		ch->host = r;
		ch->r.op = DEV_READ;
		ch->r.offset = r->offset;
		ch->r.len = r->len;
		send(c, ch, t);
		return 0;
	}
	if (r->op == DEV_READ || (r->op == DEV_WRITE && !r->len)) {
		c->held++;
		if (r->len)
			touch(c, r);
		complete(c, r, r->len ? served_at(c, t, r->len) : t);
		return 0;
	}
	w = free_list_get(&c->waiters);
	if (!w)
		return -1;
	w->r = r;
	if (r->op == DEV_FLUSH) {
		w->flush = free_list_get(&c->children);
		if (!w->flush) {
			free_list_put(&c->waiters, w);
			return -1;
		}
		c->held++;
		w->flush->kind = FLUSH;
		w->flush->host = r;
		w->flush->r.op = DEV_FLUSH;
		/* what is dirty now belongs to this flush's epoch; later writes to the next */
		w->epoch = c->epoch++;
		*c->flush_tail = w;
		c->flush_tail = &w->next;
		flushes(c, t);
		return 0;
	}
	/*
	 * A line for every line it covers, not only those not cached now: while
	 * it waits for room, its cached lines may be evicted by others.
	 */
	for (fresh = end_line(r) - first_line(r); fresh; fresh--) {
		l = free_list_get(&c->lines);
		if (!l) {
			while ((l = w->spare)) {
				w->spare = l->hnext;
				free_list_put(&c->lines, l);
			}
			free_list_put(&c->waiters, w);
			return -1;
		}
		l->hnext = w->spare;
		w->spare = l;
	}
	c->held++;
	if (c->wait_head || !admit(c, w, t)) {
		w->next = NULL;
		*c->wait_tail = w;
		c->wait_tail = &w->next;
		return 0;
	}
	destage(c, t);
	return 0;
}

static uint64_t own_next(const struct wbcache *c)
{
	const struct dev_req *r = req_heap_top(&c->done);
	uint64_t t = r ? r->done_ns : DEV_NEVER;

	/* a destage held back by destage_mbps (unpaced, destage() issues them as they come) */
	if (c->destage_ns_per_byte > 0 && c->destaging < c->depth && c->nbits &&
	    c->next_destage < t)
		t = c->next_destage;
	return t;
}

static uint64_t wb_next_event(const struct dev_model *m)
{
	const struct wbcache *c = wb_of(m);
	uint64_t t = own_next(c), tm = members_next(&c->ms);

	return tm < t ? tm : t;
}

static void wb_advance(struct dev_model *m, uint64_t now, dev_done_fn done, void *arg)
{
	struct wbcache *c = wb_of(m);
	struct dev_req *r, *ch;
	uint64_t t, tm;

	for (;;) {
		tm = members_next(&c->ms);
		r = req_heap_top(&c->done);
		t = own_next(c);
		t = tm < t ? tm : t;
		if (t > now)
			break;
		if (r && r->done_ns == t) {
			req_heap_pop(&c->done);
			c->held--;
			done(arg, r);
			continue;
		}
		members_advance(&c->ms, t);
		while ((ch = members_take(&c->ms)))
			child_done(c, (struct child *)ch, t);
		destage(c, t);
	}
	members_advance(&c->ms, now);
	m->service_ns = members_service_ns(&c->ms);
}

static void wb_destroy(struct dev_model *m)
{
	struct wbcache *c = wb_of(m);

	members_destroy(&c->ms);
	req_heap_free(&c->done);
	free_list_destroy(&c->lines);
	free_list_destroy(&c->children);
	free_list_destroy(&c->waiters);
	free(c->hash);
	free(c->bits);
	free(c->summary);
	free(c->ecount);
	free(c);
}

static const struct dev_model_ops wb_ops = {
	.submit = wb_submit,
	.next_event = wb_next_event,
	.advance = wb_advance,
	.destroy = wb_destroy,
};

struct dev_model *wbcache_wrap(struct dev_model *member, const struct wbcache_params *p, char *err,
			       size_t errlen)
{
	struct wbcache *c = calloc(1, sizeof(*c));
	size_t buckets = 64;
	unsigned i;

	if (!c)
		goto oom;
	memset(&c->ms, 0, sizeof(c->ms));
	c->ms.done_tail = &c->ms.done_head;
	c->ms.m[0] = member;
	c->ms.n = 1;
	c->m.ops = &wb_ops;
	c->m.type = &dev_model_wbcache;
	c->m.size = member->size;
	c->m.servers = members_servers(&c->ms);
	c->capacity = p->size_bytes / LINE ? p->size_bytes / LINE : 1;
	c->latency_ns = p->latency_ns;
	c->ns_per_byte = p->mbps > 0 ? 1000.0 / p->mbps : 0;
	c->destage_ns_per_byte = p->destage_mbps > 0 ? 1000.0 / p->destage_mbps : 0;
	c->depth = p->destage_depth;
	while (buckets < c->capacity && buckets < (1u << 20))
		buckets *= 2;
	c->hash = calloc(buckets, sizeof(*c->hash));
	c->hash_mask = buckets - 1;
	c->dev_lines = (member->size + LINE - 1) / LINE;
	c->words = (c->dev_lines + 63) / 64;
	c->swords = (c->words + 63) / 64;
	c->bits = calloc(c->words, sizeof(*c->bits));
	c->summary = calloc(c->swords, sizeof(*c->summary));
	c->ecap = 16;
	c->ecount = calloc(c->ecap, sizeof(*c->ecount));
	if (!c->hash || !c->bits || !c->summary || !c->ecount)
		goto oom;
	c->lru.prev = c->lru.next = &c->lru;
	c->wait_tail = &c->wait_head;
	c->flush_tail = &c->flush_head;
	free_list_init(&c->lines, sizeof(struct line));
	free_list_init(&c->children, sizeof(struct child));
	free_list_init(&c->waiters, sizeof(struct waiter));
	/* the destage writes, never more than destage_depth: taken in advance(), which cannot fail */
	for (i = 0; i < c->depth; i++) {
		struct child *ch = free_list_get(&c->children);

		if (!ch)
			goto oom;
		ch->next_free = c->destage_free;
		c->destage_free = ch;
	}
	return &c->m;
oom:
	if (c) {
		c->ms.n = 0; /* the caller still owns the member */
		wb_destroy(&c->m);
	}
	pack_errf(err, errlen, "wbcache: out of memory");
	return NULL;
}

static struct dev_model *wbcache_create(const struct dev_params *p, uint64_t size, char *err,
					size_t errlen)
{
	struct wbcache_params wp = {
		.size_bytes = (uint64_t)(p->v[P_SIZE] * 1048576),
		.latency_ns = (uint64_t)(p->v[P_LATENCY] * 1000 + 0.5),
		.mbps = p->v[P_MBPS],
		.destage_mbps = p->v[P_DESTAGE_MBPS],
		.destage_depth = (unsigned)p->v[P_DEPTH],
	};
	struct dev_model *member, *m;

	member = dev_model_create_n(p->sub[P_MEMBER], p->sublen[P_MEMBER], size, err, errlen);
	if (!member)
		return NULL;
	m = wbcache_wrap(member, &wp, err, errlen);
	if (!m)
		dev_model_destroy(member);
	return m;
}

DEV_MODEL_KIND(
	wbcache,
	"a write-back cache in front of a model: writes done in the cache, destaged, "
	"flushes honoured",
	wbcache_params, wbcache_create,
	"a kind of model: a controller's cache size from its datasheet (the named models cite "
	"theirs); the destage policy is the model's own");
