/*
 * hdd: a hard disk from its datasheet. One head serves one request at a
 * time: seek (hddgeom.h: a curve through the datasheet's track-to-track,
 * average and full-stroke times), then wait for the platter, whose angle is
 * a function of the model's clock (never drawn at random), then transfer at
 * the rate of the zone the data is in.
 *
 * Command queueing: the drive holds up to queue_depth requests (NCQ: 32,
 * SAS TCQ: more; 1 is a drive without queueing) and, each time the head is
 * free, serves the one it reaches first (seek + rotation from where the
 * head and the platter are then: shortest positioning time first), ties by
 * arrival. Requests beyond the queue depth wait in arrival order, as they
 * would in the host. An idle drive takes its command overhead (overhead_us)
 * before the head moves, and what arrives meanwhile is part of its choice;
 * a busy one overlaps it with the request on the head.
 *
 * The segment cache (cache_segments x segment_kb, 0 segments: none): a read
 * served from the media leaves its data in a segment, and while nothing is
 * queued the head goes on reading what follows into it (read-ahead), up to
 * segment_kb past the last byte read from it. A read found whole in a
 * segment is served from the buffer at the interface rate without the
 * head; one that starts in it is served from where the segment ends; one a
 * little ahead of the head (within segment_kb) may be reached by reading
 * on, which the choice weighs against seeking. So a sequential stream
 * keeps the media rate even at depth 1, even when its requests reach the
 * drive out of order. A write empties the segments it overlaps.
 *
 * Writes go to the media before they complete: the drive's write cache is
 * off (a flush has nothing to wait for). With write_cache_mb it is on: the
 * write-back cache of model_wbcache.c in front of the drive, filled at the
 * interface rate and destaged into the drive's queue (which reorders the
 * destage writes as it does any), a flush waiting for it to empty.
 *
 * The device is the whole drive (its tracks spread over the full stroke),
 * unless capacity_gb gives the drive's size: then the device is its first
 * bytes (outer zones, short seeks), as a small partition of a big drive.
 */
#include <math.h>
#include <stdlib.h>

#include "devmodel.h"
#include "errmsg.h"
#include "hddgeom.h"
#include "reqheap.h"
#include "wbcache.h"

#define HDD_MAX_SEGMENTS 64
/*
 * A start the platter passed less than this ago is still under the head:
 * positions are rounded to bytes, so a request that continues exactly
 * where the head is may compute a hair behind it.
 */
#define UNDER_HEAD_NS 1000.0

/* clang-format off */
enum { P_RPM, P_SEEK_TRACK, P_SEEK_AVG, P_SEEK_FULL, P_SEEK_AVG_WRITE, P_OUTER, P_INNER,
       P_ZONES, P_CAPACITY, P_QUEUE, P_INTERFACE, P_SEGMENTS, P_SEGMENT_KB, P_WRITE_CACHE,
       P_OVERHEAD };

static const struct dev_param hdd_params[] = {
	[P_RPM]            = { "rpm", 1000, 30000, 0, 1, 1, 0,
			       "spindle speed, revolutions a minute" },
	[P_SEEK_TRACK]     = { "seek_track_ms", 0.01, 20, 0, 1, 0, 0,
			       "track-to-track seek (read), in ms" },
	[P_SEEK_AVG]       = { "seek_avg_ms", 0.01, 50, 0, 1, 0, 0,
			       "average seek (read), in ms: the datasheet's weighted average" },
	[P_SEEK_FULL]      = { "seek_full_ms", 0.01, 100, 0, 1, 0, 0,
			       "full-stroke seek (read), in ms" },
	[P_SEEK_AVG_WRITE] = { "seek_avg_write_ms", 0.01, 50, 0, 0, 0, 0,
			       "average seek of a write, in ms: the difference to seek_avg_ms is "
			       "added to every seek of a write (default: seek_avg_ms)" },
	[P_OUTER]          = { "outer_mbps", 0.1, 100000, 0, 1, 0, 0,
			       "sustained media rate at the outer edge (maximum), in MB/s" },
	[P_INNER]          = { "inner_mbps", 0.1, 100000, 0, 0, 0, 0,
			       "sustained media rate at the inner edge (minimum), in MB/s "
			       "(default: outer_mbps)" },
	[P_ZONES]          = { "zones", 1, HDD_MAX_ZONES, 16, 0, 1, 0,
			       "recording zones from outer to inner, as many tracks each" },
	[P_CAPACITY]       = { "capacity_gb", 0, 1e6, 0, 0, 0, 0,
			       "the drive's size in GB (10^9 bytes): the device is its first bytes "
			       "(default: the device is the whole drive)" },
	[P_QUEUE]          = { "queue_depth", 1, 256, 32, 0, 1, 0,
			       "requests the drive reorders (NCQ 32, TCQ deeper, 1 none)" },
	[P_INTERFACE]      = { "interface_mbps", 1, 100000, 300, 0, 0, 0,
			       "interface rate of a read served from the cache, in MB/s" },
	[P_SEGMENTS]       = { "cache_segments", 0, HDD_MAX_SEGMENTS, 0, 0, 1, 0,
			       "read-ahead cache segments (0: no read cache)" },
	[P_SEGMENT_KB]     = { "segment_kb", 4, 65536, 512, 0, 1, 0,
			       "bytes a segment holds, in KiB" },
	[P_WRITE_CACHE]    = { "write_cache_mb", 0, 4096, 0, 0, 0, 0,
			       "the drive's write cache, in MiB (default 0: off, as servers run "
			       "them)" },
	[P_OVERHEAD]       = { "overhead_us", 0, 100000, 0, 0, 0, 0,
			       "command overhead of an idle drive before the head moves, in us; "
			       "commands arriving meanwhile are part of the choice (default 0)" },
};
/* clang-format on */

struct segment {
	uint64_t lo, hi; /* what was read into it; it keeps the last segment_kb */
	uint64_t used;	 /* for least recently used replacement */
};

struct hdd {
	struct dev_model m;
	struct hdd_geom g;
	double write_extra_ns;
	double if_ns_per_byte;
	unsigned queue_depth;
	struct dev_req *qhead, **qtail; /* arrival order */
	unsigned qlen;
	struct req_heap done;
	/* an idle drive takes its command overhead before it picks (DEV_NEVER: none pending) */
	uint64_t overhead_ns, pick_at;
	/* the request on the head (NULL: the head is free), from where its transfer starts */
	struct dev_req *serving;
	uint64_t serving_from;
	int serving_seg;
	uint64_t head_pos; /* where the last transfer ended */
	/* the segment cache */
	unsigned nseg;
	uint64_t seg_bytes, lru;
	struct segment seg[HDD_MAX_SEGMENTS];
	int ra_seg; /* the segment read-ahead fills (the last one read into), or -1 */
	int ra_on;  /* the head is reading ahead (nothing queued) */
	uint64_t ra_t0, ra_p0, ra_limit;
};

static struct hdd *hdd_of(const struct dev_model *m)
{
	return (struct hdd *)m;
}

/* How long until the platter brings byte @x under the head, from @t. */
static double rot_wait(const struct hdd *h, uint64_t x, double t)
{
	double rev = h->g.rev_ns, at = hdd_tp(&h->g, x), w;

	w = (at - floor(at)) - fmod(t, rev) / rev;
	if (w < 0)
		w += 1;
	w *= rev;
	return rev - w < UNDER_HEAD_NS ? 0 : w;
}

static double xfer_ns(const struct hdd *h, uint64_t from, uint64_t to)
{
	return (hdd_tp(&h->g, to) - hdd_tp(&h->g, from)) * h->g.rev_ns;
}

/* What read-ahead has read by @t. */
static uint64_t ra_filled(const struct hdd *h, uint64_t t)
{
	uint64_t p;

	if (!h->ra_on)
		return h->seg[h->ra_seg].hi;
	if (t <= h->ra_t0)
		return h->ra_p0;
	p = hdd_byte_at(&h->g, hdd_tp(&h->g, h->ra_p0) + (t - h->ra_t0) / h->g.rev_ns);
	if (p > h->ra_limit)
		p = h->ra_limit;
	return p > h->m.size ? h->m.size : p;
}

/* The head stops reading ahead at @t, where it is then. */
static void ra_stop(struct hdd *h, uint64_t t)
{
	if (!h->ra_on)
		return;
	h->seg[h->ra_seg].hi = h->head_pos = ra_filled(h, t);
	h->ra_on = 0;
}

/* The free head reads on from the end of the read-ahead segment, if it is there. */
static void ra_start(struct hdd *h, uint64_t t)
{
	if (h->ra_on || h->ra_seg < 0 || h->serving || h->qlen)
		return;
	if (h->head_pos != h->seg[h->ra_seg].hi || h->head_pos >= h->ra_limit ||
	    h->head_pos >= h->m.size)
		return;
	h->ra_p0 = h->head_pos;
	h->ra_t0 = t + (uint64_t)rot_wait(h, h->head_pos, t);
	h->ra_on = 1;
}

/*
 * How far [x, x + len) is in one segment from x on (x itself if not), at
 * @t; the segment in *@segi (-1 if none).
 */
static uint64_t cached_to(const struct hdd *h, uint64_t x, uint32_t len, uint64_t t, int *segi)
{
	uint64_t best = x, lo, hi;
	unsigned i;

	*segi = -1;
	for (i = 0; i < h->nseg; i++) {
		hi = (int)i == h->ra_seg ? ra_filled(h, t) : h->seg[i].hi;
		lo = hi - h->seg[i].lo > h->seg_bytes ? hi - h->seg_bytes : h->seg[i].lo;
		if (lo <= x && x < hi && hi > best) {
			best = hi;
			*segi = (int)i;
		}
	}
	return best > x + len ? x + len : best;
}

/* A write makes what the segments hold of its bytes stale. */
static void invalidate(struct hdd *h, uint64_t x, uint32_t len, uint64_t t)
{
	uint64_t hi;
	unsigned i;

	for (i = 0; i < h->nseg; i++) {
		hi = (int)i == h->ra_seg ? ra_filled(h, t) : h->seg[i].hi;
		if (h->seg[i].lo >= x + len || hi <= x)
			continue;
		if ((int)i == h->ra_seg) {
			ra_stop(h, t);
			h->ra_seg = -1;
		}
		if ((int)i == h->serving_seg)
			h->serving_seg = -1;
		h->seg[i].lo = h->seg[i].hi = 0;
	}
}

/*
 * A hit in the read-ahead segment: the head reads on to @limit. If it had
 * stopped at the old limit, it starts again when the platter comes round.
 */
static void ra_extend(struct hdd *h, uint64_t t, uint64_t limit)
{
	if (limit <= h->ra_limit)
		return;
	if (h->ra_on && ra_filled(h, t) >= h->ra_limit) {
		h->seg[h->ra_seg].hi = h->head_pos = h->ra_limit;
		h->ra_on = 0;
	}
	h->ra_limit = limit;
	ra_start(h, t);
}

/*
 * How long from @t until the head reaches the start of what @r needs from
 * the media: a seek and the platter's rotation, or, for a read a little
 * ahead of the head (within a segment's length), reading on to it, as a
 * drive's read-ahead does; whichever is sooner. The start in *@from, the
 * segment the data goes into in *@segi (-1: a new one).
 */
static double positioning(const struct hdd *h, const struct dev_req *r, uint64_t t, uint64_t *from,
			  int *segi)
{
	double seek = 0, tracks, cost, on;

	*segi = -1;
	*from = r->op == DEV_READ && h->nseg ? cached_to(h, r->offset, r->len, t, segi) : r->offset;
	if (*from == r->offset + r->len)
		return 0; /* all in the cache by now */
	if (*from != h->head_pos) {
		tracks = fabs(floor(hdd_tp(&h->g, *from)) - floor(hdd_tp(&h->g, h->head_pos)));
		if (tracks > 0)
			seek = hdd_seek_ns(&h->g, tracks) +
			       (r->op == DEV_WRITE ? h->write_extra_ns : 0);
	}
	cost = seek + rot_wait(h, *from, t + seek);
	if (r->op == DEV_READ && h->nseg && *from > h->head_pos &&
	    *from - h->head_pos <= h->seg_bytes) {
		/*
		 * A seek that lands before the data comes round costs the same
		 * as reading on (the platter turns either way): a tie reads on,
		 * and keeps what it passes.
		 */
		on = rot_wait(h, h->head_pos, t) + xfer_ns(h, h->head_pos, *from);
		if (on <= cost + UNDER_HEAD_NS) {
			cost = on;
			/* what it reads on the way goes into the segment that ends there */
			*segi = h->ra_seg >= 0 && h->seg[h->ra_seg].hi == h->head_pos ? h->ra_seg
										      : -1;
		}
	}
	return cost;
}

/*
 * The free head takes, at @t, the queued request it reaches first. One
 * that read-ahead has brought into the buffer meanwhile is served from it
 * without the head, which then takes the next, or reads on.
 */
static void pick(struct hdd *h, uint64_t t)
{
	struct dev_req **pp, **best, *r;
	double cost, best_cost;
	uint64_t from, best_from, end;
	int segi, best_seg;
	unsigned n;

	for (;;) {
		best = NULL;
		best_cost = 0;
		best_from = 0;
		best_seg = -1;
		for (pp = &h->qhead, n = 0; *pp && n < h->queue_depth; pp = &(*pp)->next, n++) {
			cost = positioning(h, *pp, t, &from, &segi);
			if (!best || cost < best_cost) {
				best = pp;
				best_cost = cost;
				best_from = from;
				best_seg = segi;
			}
		}
		if (!best)
			return;
		r = *best;
		*best = r->next;
		if (h->qtail == &r->next)
			h->qtail = best;
		h->qlen--;
		end = r->offset + r->len;
		r->start_ns = t;
		if (best_from == end) {
			r->done_ns = t + (uint64_t)(r->len * h->if_ns_per_byte + 0.5);
			req_heap_push(&h->done, r); /* reserved by submit */
			h->seg[best_seg].used = ++h->lru;
			if (best_seg == h->ra_seg)
				ra_extend(h, t, end + h->seg_bytes);
			if (!h->qlen)
				ra_start(h, t);
			continue;
		}
		r->done_ns = t + (uint64_t)(best_cost + xfer_ns(h, best_from, end) + 0.5);
		h->head_pos = end;
		h->serving = r;
		h->serving_from = best_from;
		h->serving_seg = best_seg;
		req_heap_push(&h->done, r); /* reserved by submit */
		return;
	}
}

static int least_used_segment(const struct hdd *h)
{
	unsigned i, best = 0;

	for (i = 1; i < h->nseg; i++)
		if (h->seg[i].used < h->seg[best].used)
			best = i;
	return (int)best;
}

/* The head has finished @r at @t: its data is in a segment, and the head moves on. */
static void head_done(struct hdd *h, struct dev_req *r, uint64_t t)
{
	struct segment *s;
	int i = h->serving_seg;

	h->serving = NULL;
	h->m.service_ns += r->done_ns - r->start_ns;
	if (r->op == DEV_READ && h->nseg) {
		if (i < 0) {
			i = least_used_segment(h);
			h->seg[i].lo = r->offset;
			h->seg[i].hi = r->offset;
		}
		s = &h->seg[i];
		if (s->hi < r->offset + r->len)
			s->hi = r->offset + r->len;
		s->used = ++h->lru;
		h->ra_seg = i;
		h->ra_limit = r->offset + r->len + h->seg_bytes;
	}
	if (h->qlen)
		pick(h, t);
	else if (r->op == DEV_READ)
		ra_start(h, t);
}

static int hdd_submit(struct dev_model *m, struct dev_req *r)
{
	struct hdd *h = hdd_of(m);
	uint64_t t = r->arrival_ns;
	int segi;

	if (req_heap_reserve(&h->done, h->done.n + h->qlen + 1))
		return -1;
	r->next = NULL;
	if (r->op == DEV_FLUSH) {
		r->start_ns = r->done_ns = t;
		return req_heap_push(&h->done, r);
	}
	if (r->op == DEV_WRITE) {
		invalidate(h, r->offset, r->len, t);
	} else if (h->nseg && cached_to(h, r->offset, r->len, t, &segi) == r->offset + r->len) {
		/* a hit: from the buffer, the head goes on with what it does */
		r->start_ns = t;
		r->done_ns = t + (uint64_t)(r->len * h->if_ns_per_byte + 0.5);
		h->seg[segi].used = ++h->lru;
		if (segi == h->ra_seg)
			ra_extend(h, t, r->offset + r->len + h->seg_bytes);
		return req_heap_push(&h->done, r);
	}
	*h->qtail = r;
	h->qtail = &r->next;
	h->qlen++;
	if (!h->serving && h->pick_at == DEV_NEVER) {
		if (h->overhead_ns) {
			h->pick_at = t + h->overhead_ns;
			return 0;
		}
		ra_stop(h, t);
		pick(h, t);
	}
	return 0;
}

static uint64_t hdd_next_event(const struct dev_model *m)
{
	const struct hdd *h = hdd_of(m);
	const struct dev_req *r = req_heap_top(&h->done);

	return r && r->done_ns < h->pick_at ? r->done_ns : h->pick_at;
}

static void hdd_advance(struct dev_model *m, uint64_t now, dev_done_fn done, void *arg)
{
	struct hdd *h = hdd_of(m);
	struct dev_req *r;
	uint64_t t;

	for (;;) {
		r = req_heap_top(&h->done);
		if (h->pick_at <= now && (!r || h->pick_at < r->done_ns)) {
			/* the command overhead is over: the head goes */
			t = h->pick_at;
			h->pick_at = DEV_NEVER;
			ra_stop(h, t);
			pick(h, t);
			continue;
		}
		if (!r || r->done_ns > now)
			break;
		req_heap_pop(&h->done);
		if (r == h->serving)
			head_done(h, r, r->done_ns);
		done(arg, r);
	}
}

static void hdd_destroy(struct dev_model *m)
{
	struct hdd *h = hdd_of(m);

	req_heap_free(&h->done);
	free(h);
}

static const struct dev_model_ops hdd_ops = {
	.submit = hdd_submit,
	.next_event = hdd_next_event,
	.advance = hdd_advance,
	.destroy = hdd_destroy,
};

static struct dev_model *hdd_create(const struct dev_params *p, uint64_t size, char *err,
				    size_t errlen)
{
	double outer = p->v[P_OUTER], inner = p->given[P_INNER] ? p->v[P_INNER] : outer;
	double avg = p->v[P_SEEK_AVG];
	double drive = p->v[P_CAPACITY] * 1e9;
	struct hdd *h;

	if (inner > outer) {
		pack_errf(err, errlen, "hdd: inner_mbps=%g: more than outer_mbps=%g", inner, outer);
		return NULL;
	}
	if (drive > 0 && drive < (double)size) {
		pack_errf(err, errlen, "hdd: capacity_gb=%g: smaller than the device (%llu bytes)",
			  p->v[P_CAPACITY], (unsigned long long)size);
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		pack_errf(err, errlen, "hdd: out of memory");
		return NULL;
	}
	if (hdd_geom_init(&h->g, p->v[P_RPM], outer * 1e6, inner * 1e6, (unsigned)p->v[P_ZONES],
			  drive > 0 ? (uint64_t)drive : size, p->v[P_SEEK_TRACK] * 1e6, avg * 1e6,
			  p->v[P_SEEK_FULL] * 1e6, err, errlen)) {
		free(h);
		return NULL;
	}
	h->m.ops = &hdd_ops;
	h->m.type = &dev_model_hdd;
	h->m.size = size;
	h->m.servers = 1;
	if (p->given[P_SEEK_AVG_WRITE])
		h->write_extra_ns = (p->v[P_SEEK_AVG_WRITE] - avg) * 1e6;
	h->if_ns_per_byte = 1000.0 / p->v[P_INTERFACE];
	h->queue_depth = (unsigned)p->v[P_QUEUE];
	h->qtail = &h->qhead;
	h->nseg = (unsigned)p->v[P_SEGMENTS];
	h->seg_bytes = (uint64_t)p->v[P_SEGMENT_KB] * 1024;
	h->ra_seg = h->serving_seg = -1;
	h->overhead_ns = (uint64_t)(p->v[P_OVERHEAD] * 1000 + 0.5);
	h->pick_at = DEV_NEVER;
	if (p->v[P_WRITE_CACHE] > 0) {
		struct wbcache_params wp = {
			.size_bytes = (uint64_t)(p->v[P_WRITE_CACHE] * 1048576),
			.mbps = p->v[P_INTERFACE],
			.destage_depth = h->queue_depth,
		};
		struct dev_model *cached = wbcache_wrap(&h->m, &wp, err, errlen);

		if (!cached)
			hdd_destroy(&h->m);
		return cached;
	}
	return &h->m;
}

DEV_MODEL_KIND(
	hdd, "a hard disk: seek curve, platter angle in time, zones, NCQ/TCQ, read-ahead",
	hdd_params, hdd_create,
	"a kind of model: its parameters come from a drive's datasheet (the named models cite theirs)");
