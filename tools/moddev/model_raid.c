/*
 * raid0, raid1, raid10, raid5: arrays of member models, each member any
 * model (a spec in parentheses, or a named model):
 *
 *   raid5:members=8,stripe_kb=64,member=(wd740adfd)
 *   raid10:members=8,stripe_kb=64,member=(hdd:rpm=15000,...)
 *
 * The array sends its members requests of its own, one per member and
 * contiguous run (the block layer merges a member's stripe units that
 * follow each other), and completes a request when its last one does.
 *
 * raid0 stripes stripe_kb units over the members in turn. raid1 mirrors:
 * a read goes to the member with the fewest requests in it (ties in
 * turn), a write to all. raid10 stripes over mirrored pairs (members 0-1,
 * 2-3, ...). raid5 stripes data over members - 1 and parity over the
 * rotating last one (left-symmetric, Linux md's default). A write that
 * covers a row's data units whole writes them and the parity without
 * reading; a partial one reads the old data and parity of the bytes it
 * changes, then writes them (read-modify-write), row by row. Rows are not
 * locked against each other: two writes to one row overlap in time as
 * they would without the controller's stripe lock.
 *
 * A flush goes to every member and completes when they all have. Members
 * are as big as the array needs: the array's size over the data members,
 * in whole stripe units.
 */
#include <stdlib.h>

#include "devmodel.h"
#include "errmsg.h"
#include "freelist.h"
#include "members.h"
#include "reqheap.h"

enum level { RAID0, RAID1, RAID10, RAID5 };

/* clang-format off */
enum { P_MEMBERS, P_STRIPE_KB, P_MEMBER };

static const struct dev_param striped_params[] = {
	[P_MEMBERS]   = { "members", 2, MAX_MEMBERS, 0, 1, 1, 0,
			  "how many member devices" },
	[P_STRIPE_KB] = { "stripe_kb", 4, 65536, 64, 0, 1, 0,
			  "stripe unit: what goes to one member before the next, in KiB" },
	[P_MEMBER]    = { "member", 0, 0, 0, 1, 0, 1,
			  "each member's model: (SPEC) or a named model in parentheses" },
};

static const struct dev_param mirror_params[] = {
	{ "members", 2, MAX_MEMBERS, 0, 1, 1, 0, "how many copies" },
	{ "member", 0, 0, 0, 1, 0, 1, "each member's model: (SPEC) or a named model in parentheses" },
};
/* clang-format on */

struct raid_op;

/* A request of the array's to one member. */
struct child {
	struct dev_req r; /* first: the member's request */
	struct raid_op *op;
	struct child *link; /* the op's children not yet sent */
	unsigned member;
};

/*
 * A host request, or one RAID-5 row of a write (then @up is the request's
 * op, which counts its rows): children outstanding, those to send when it
 * starts, and the writes that follow the reads of a read-modify-write.
 */
struct raid_op {
	struct raid_op *up;
	struct raid_op *next_row;
	struct dev_req *req;
	unsigned pending;
	struct child *now, *later;
};

struct raid {
	struct dev_model m;
	enum level level;
	unsigned n;
	uint64_t unit; /* stripe unit, bytes */
	struct member_set ms;
	unsigned inflight[MAX_MEMBERS];
	unsigned turn;
	uint64_t seq, held;
	struct req_heap done;
	struct free_list ops, children;
};

static struct raid *raid_of(const struct dev_model *m)
{
	return (struct raid *)m;
}

/* Children being built for an op: one per member and contiguous run. */
struct batch {
	struct raid_op *op;
	struct child *head, **tail;
	struct child *last[MAX_MEMBERS];
	int failed;
};

static void batch_init(struct batch *b, struct raid_op *op)
{
	unsigned i;

	b->op = op;
	b->head = NULL;
	b->tail = &b->head;
	b->failed = 0;
	for (i = 0; i < MAX_MEMBERS; i++)
		b->last[i] = NULL;
}

static void piece(struct raid *a, struct batch *b, unsigned member, enum dev_op op, uint64_t off,
		  uint64_t len)
{
	struct child *c = b->last[member];

	if (c && c->r.op == op && c->r.offset + c->r.len == off && c->r.len + len <= UINT32_MAX) {
		c->r.len += len;
		return;
	}
	c = free_list_get(&a->children);
	if (!c) {
		b->failed = 1;
		return;
	}
	c->r.op = op;
	c->r.offset = off;
	c->r.len = (uint32_t)len;
	c->r.owner = c;
	c->op = b->op;
	c->member = member;
	*b->tail = c;
	b->tail = &c->link;
	b->last[member] = c;
}

static void children_free(struct raid *a, struct child *c)
{
	struct child *next;

	for (; c; c = next) {
		next = c->link;
		free_list_put(&a->children, c);
	}
}

/* An op not yet started, its rows and their children. */
static void op_free(struct raid *a, struct raid_op *op)
{
	struct raid_op *row, *next;

	for (row = op->next_row; row; row = next) {
		next = row->next_row;
		op_free(a, row);
	}
	children_free(a, op->now);
	children_free(a, op->later);
	free_list_put(&a->ops, op);
}

/* Where stripe unit @k of the array is: its member and the unit's offset there. */
static void locate(const struct raid *a, uint64_t k, unsigned *member, uint64_t *base)
{
	uint64_t row;
	unsigned data = a->n - 1, parity;

	switch (a->level) {
	case RAID10:
		*member = 2 * (k % (a->n / 2));
		*base = k / (a->n / 2) * a->unit;
		break;
	case RAID5:
		row = k / data;
		parity = a->n - 1 - row % a->n;
		*member = (parity + 1 + k % data) % a->n;
		*base = row * a->unit;
		break;
	default:
		*member = k % a->n;
		*base = k / a->n * a->unit;
		break;
	}
}

/* The mirror that reads: the one with the fewest requests in it, ties in turn. */
static unsigned mirror_for_read(struct raid *a, unsigned first, unsigned copies)
{
	unsigned i, best = first + a->turn++ % copies, m;

	for (i = 0; i < copies; i++) {
		m = first + i;
		if (a->inflight[m] < a->inflight[best])
			best = m;
	}
	return best;
}

/* The children of a read, a flush, or a write to a level without parity. */
static void plain(struct raid *a, struct batch *b, const struct dev_req *r)
{
	uint64_t off = r->offset, end = r->offset + r->len, in, len, base;
	unsigned member, i;

	if (r->op == DEV_FLUSH || (a->level == RAID1 && r->op == DEV_WRITE)) {
		for (i = 0; i < a->n; i++)
			piece(a, b, i, r->op, off, r->len);
		return;
	}
	if (a->level == RAID1) {
		piece(a, b, mirror_for_read(a, 0, a->n), DEV_READ, off, r->len);
		return;
	}
	for (; off < end; off += len) {
		in = off % a->unit;
		len = a->unit - in < end - off ? a->unit - in : end - off;
		locate(a, off / a->unit, &member, &base);
		if (a->level == RAID10 && r->op == DEV_READ)
			member = mirror_for_read(a, member, 2);
		piece(a, b, member, r->op, base + in, len);
		if (a->level == RAID10 && r->op == DEV_WRITE)
			piece(a, b, member + 1, DEV_WRITE, base + in, len);
	}
}

/*
 * RAID-5 row @row of a write, [lo, hi) of the row's data. A whole row:
 * the data and the parity written. Part of one: the old data and parity
 * of the bytes it changes read first (read-modify-write).
 */
static struct raid_op *row_write(struct raid *a, struct raid_op *top, uint64_t row, uint64_t lo,
				 uint64_t hi)
{
	uint64_t data = (uint64_t)(a->n - 1) * a->unit, in, len, base, plo = a->unit, phi = 0;
	unsigned member, parity = a->n - 1 - row % a->n;
	int whole = lo == 0 && hi == data;
	struct raid_op *op = free_list_get(&a->ops);
	struct batch reads, writes;

	if (!op)
		return NULL;
	op->up = top;
	batch_init(&reads, op);
	batch_init(&writes, op);
	for (; lo < hi; lo += len) {
		in = lo % a->unit;
		len = a->unit - in < hi - lo ? a->unit - in : hi - lo;
		locate(a, (row * data + lo) / a->unit, &member, &base);
		if (!whole)
			piece(a, &reads, member, DEV_READ, base + in, len);
		piece(a, &writes, member, DEV_WRITE, base + in, len);
		plo = in < plo ? in : plo;
		phi = in + len > phi ? in + len : phi;
	}
	if (!whole)
		piece(a, &reads, parity, DEV_READ, row * a->unit + plo, phi - plo);
	piece(a, &writes, parity, DEV_WRITE, row * a->unit + plo, phi - plo);
	op->now = whole ? writes.head : reads.head;
	op->later = whole ? NULL : writes.head;
	if (reads.failed || writes.failed) {
		op_free(a, op);
		return NULL;
	}
	return op;
}

/* The op of host request @r, every child allocated: NULL when out of memory. */
static struct raid_op *plan(struct raid *a, struct dev_req *r)
{
	uint64_t data = (uint64_t)(a->n - 1) * a->unit, off, end, row, lo, hi;
	struct raid_op *op = free_list_get(&a->ops), *row_op, **rows;
	struct batch b;

	if (!op)
		return NULL;
	op->req = r;
	if (a->level != RAID5 || r->op != DEV_WRITE) {
		batch_init(&b, op);
		plain(a, &b, r);
		op->now = b.head;
		if (b.failed) {
			op_free(a, op);
			return NULL;
		}
		return op;
	}
	rows = &op->next_row;
	end = r->offset + r->len;
	for (off = r->offset; off < end; off = (row + 1) * data) {
		row = off / data;
		lo = off - row * data;
		hi = end - row * data < data ? end - row * data : data;
		row_op = row_write(a, op, row, lo, hi);
		if (!row_op) {
			op_free(a, op);
			return NULL;
		}
		*rows = row_op;
		rows = &row_op->next_row;
	}
	return op;
}

/* The children of @op go to their members at @t. */
static void send(struct raid *a, struct raid_op *op, struct child *c, uint64_t t)
{
	struct child *next;

	for (; c; c = next) {
		next = c->link;
		c->r.arrival_ns = t;
		c->r.seq = a->seq++;
		a->inflight[c->member]++;
		op->pending++;
		if (members_submit(&a->ms, c->member, &c->r)) {
			/* a member out of memory: the child is done, the array goes on */
			c->r.done_ns = t;
			c->r.next = NULL;
			*a->ms.done_tail = &c->r;
			a->ms.done_tail = &c->r.next;
		}
	}
}

static void start(struct raid *a, struct raid_op *op, uint64_t t)
{
	struct raid_op *row, *next;
	struct child *now = op->now;

	op->now = NULL;
	if (op->next_row) {
		for (row = op->next_row; row; row = next) {
			next = row->next_row;
			row->next_row = NULL;
			op->pending++;
			start(a, row, t);
		}
		op->next_row = NULL;
		return;
	}
	send(a, op, now, t);
}

static void op_done(struct raid *a, struct raid_op *op, uint64_t t)
{
	struct raid_op *up = op->up;
	struct dev_req *r = op->req;

	free_list_put(&a->ops, op);
	if (up) {
		if (!--up->pending)
			op_done(a, up, t);
		return;
	}
	r->done_ns = t;
	req_heap_push(&a->done, r); /* reserved by submit */
}

static void child_done(struct raid *a, struct child *c, uint64_t t)
{
	struct raid_op *op = c->op;
	struct child *later;

	a->inflight[c->member]--;
	free_list_put(&a->children, c);
	if (--op->pending)
		return;
	if (op->later) {
		later = op->later;
		op->later = NULL;
		send(a, op, later, t);
		return;
	}
	op_done(a, op, t);
}

static int raid_submit(struct dev_model *m, struct dev_req *r)
{
	struct raid *a = raid_of(m);
	struct raid_op *op;

	if (req_heap_reserve(&a->done, a->held + 1))
		return -1;
	r->start_ns = r->arrival_ns;
	if (!r->len && r->op != DEV_FLUSH) {
		r->done_ns = r->arrival_ns;
		a->held++;
		return req_heap_push(&a->done, r);
	}
	op = plan(a, r);
	if (!op)
		return -1;
	a->held++;
	start(a, op, r->arrival_ns);
	if (!op->pending) /* nothing to send (cannot happen with a length) */
		op_done(a, op, r->arrival_ns);
	return 0;
}

static uint64_t raid_next_event(const struct dev_model *m)
{
	const struct raid *a = raid_of(m);
	const struct dev_req *r = req_heap_top(&a->done);
	uint64_t t = members_next(&a->ms);

	return r && r->done_ns < t ? r->done_ns : t;
}

static void raid_advance(struct dev_model *m, uint64_t now, dev_done_fn done, void *arg)
{
	struct raid *a = raid_of(m);
	struct dev_req *r, *c;
	uint64_t t, tm;

	for (;;) {
		r = req_heap_top(&a->done);
		tm = members_next(&a->ms);
		t = r && r->done_ns <= tm ? r->done_ns : tm;
		if (t > now)
			break;
		if (r && r->done_ns == t) {
			req_heap_pop(&a->done);
			a->held--;
			done(arg, r);
			continue;
		}
		members_advance(&a->ms, t);
		while ((c = members_take(&a->ms)))
			child_done(a, (struct child *)c, t);
	}
	members_advance(&a->ms, now);
	m->service_ns = members_service_ns(&a->ms);
}

static void raid_destroy(struct dev_model *m)
{
	struct raid *a = raid_of(m);

	members_destroy(&a->ms);
	req_heap_free(&a->done);
	free_list_destroy(&a->ops);
	free_list_destroy(&a->children);
	free(a);
}

static const struct dev_model_ops raid_ops = {
	.submit = raid_submit,
	.next_event = raid_next_event,
	.advance = raid_advance,
	.destroy = raid_destroy,
};

static struct dev_model *raid_create(const struct dev_model_type *type, enum level level,
				     const struct dev_params *p, uint64_t size, char *err,
				     size_t errlen)
{
	unsigned n = (unsigned)p->v[P_MEMBERS], data;
	int k = level == RAID1 ? 1 : P_MEMBER;
	uint64_t unit = level == RAID1 ? 4096 : (uint64_t)p->v[P_STRIPE_KB] * 1024, units;
	struct raid *a;

	if (level == RAID10 && n % 2) {
		pack_errf(err, errlen, "raid10: members=%u: must be even (mirrored pairs)", n);
		return NULL;
	}
	if (level == RAID5 && n < 3) {
		pack_errf(err, errlen, "raid5: members=%u: must be at least 3", n);
		return NULL;
	}
	data = level == RAID0 ? n : level == RAID10 ? n / 2 : level == RAID5 ? n - 1 : 1;
	units = (size + data * unit - 1) / (data * unit);
	a = calloc(1, sizeof(*a));
	if (!a) {
		pack_errf(err, errlen, "%s: out of memory", type->name);
		return NULL;
	}
	if (members_create(&a->ms, p->sub[k], p->sublen[k], n, level == RAID1 ? size : units * unit,
			   err, errlen)) {
		free(a);
		return NULL;
	}
	a->m.ops = &raid_ops;
	a->m.type = type;
	a->m.size = size;
	a->m.servers = members_servers(&a->ms);
	a->level = level;
	a->n = n;
	a->unit = unit;
	free_list_init(&a->ops, sizeof(struct raid_op));
	free_list_init(&a->children, sizeof(struct child));
	return &a->m;
}

static struct dev_model *raid0_create(const struct dev_params *p, uint64_t size, char *err,
				      size_t errlen)
{
	return raid_create(&dev_model_raid0, RAID0, p, size, err, errlen);
}

static struct dev_model *raid1_create(const struct dev_params *p, uint64_t size, char *err,
				      size_t errlen)
{
	return raid_create(&dev_model_raid1, RAID1, p, size, err, errlen);
}

static struct dev_model *raid10_create(const struct dev_params *p, uint64_t size, char *err,
				       size_t errlen)
{
	return raid_create(&dev_model_raid10, RAID10, p, size, err, errlen);
}

static struct dev_model *raid5_create(const struct dev_params *p, uint64_t size, char *err,
				      size_t errlen)
{
	return raid_create(&dev_model_raid5, RAID5, p, size, err, errlen);
}

#define RAID_SOURCES                                                                             \
	"a kind of model: the layouts of Linux md (raid5: left-symmetric); the members' models " \
	"cite theirs"

DEV_MODEL_KIND(raid0, "members striped in stripe_kb units", striped_params, raid0_create,
	       RAID_SOURCES);
DEV_MODEL_KIND(raid10, "mirrored pairs of members, striped", striped_params, raid10_create,
	       RAID_SOURCES);
DEV_MODEL_KIND(raid5, "members striped with rotating parity; partial-row writes read-modify-write",
	       striped_params, raid5_create, RAID_SOURCES);
DEV_MODEL_KIND(raid1, "members mirrored: a read from the least busy, a write to all", mirror_params,
	       raid1_create, RAID_SOURCES);
