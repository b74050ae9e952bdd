/*
 * ssd: a flash SSD from its datasheet. Flash units (channels x dies) work
 * in parallel; the controller and the host interface handle one request
 * at a time.
 *
 * A read is split into flash pages, striped over the units by page number
 * (the data is where it was written); each unit reads its pages
 * (read_us and the page over its channel bus each), then the controller
 * sends the request over the interface (command_us plus the bytes at
 * interface_mbps). Units serve their reads in arrival order, before any
 * programming.
 *
 * A write crosses the interface first. With a write buffer (buffer_kb) it
 * completes once in the buffer (plus write_us, the controller's latency
 * that does not hold the interface); the buffer drains at the
 * program rate: any free unit takes the oldest dirty unit of the FTL
 * (write_unit_kb, a page on a page-mapped FTL, an erase block on a
 * block-mapped one) and programs it (its pages at program_us each, the
 * erase, and reading the rest of the unit first when the writes did not
 * cover it all). Writes to a unit not yet programmed merge into it, so a
 * sequential stream of small writes programs whole units and random small
 * writes pay a unit each. A write that finds the buffer full waits for
 * room. A flush completes when everything dirty when it came is
 * programmed. Without a buffer, a write completes when its units are
 * programmed, on the unit its address maps to.
 *
 * Reads of data still in the buffer go to the flash like the others (the
 * data is correct either way; only their timing is not the buffer's).
 */
#include <stdlib.h>

#include "devmodel.h"
#include "errmsg.h"
#include "freelist.h"
#include "reqheap.h"

/* clang-format off */
enum { P_CHANNELS, P_READ, P_PROGRAM, P_PAGE_KB, P_CHANNEL_MBPS, P_INTERFACE, P_COMMAND,
       P_BUFFER_KB, P_UNIT_KB, P_ERASE, P_WRITE };

static const struct dev_param ssd_params[] = {
	[P_CHANNELS]     = { "channels", 1, 256, 0, 1, 1, 0,
			     "flash units working at once (channels x dies)" },
	[P_READ]         = { "read_us", 0, 1e6, 0, 1, 0, 0,
			     "reading a page from the flash array, in us" },
	[P_PROGRAM]      = { "program_us", 0, 1e6, 0, 1, 0, 0,
			     "programming a page, in us" },
	[P_PAGE_KB]      = { "page_kb", 0.5, 1024, 4, 0, 0, 0,
			     "a flash page, in KiB" },
	[P_CHANNEL_MBPS] = { "channel_mbps", 0, 1e5, 0, 0, 0, 0,
			     "a unit's channel bus, in MB/s (default: no transfer time)" },
	[P_INTERFACE]    = { "interface_mbps", 1, 1e5, 300, 0, 0, 0,
			     "the host interface, in MB/s (SATA 1.5 Gb/s: 150, 3 Gb/s: 300)" },
	[P_COMMAND]      = { "command_us", 0, 1e6, 0, 0, 0, 0,
			     "the controller's time per request, in us (one request at a time)" },
	[P_BUFFER_KB]    = { "buffer_kb", 0, 4194304, 0, 0, 1, 0,
			     "write buffer in KiB: a write completes in it (default 0: when "
			     "programmed)" },
	[P_UNIT_KB]      = { "write_unit_kb", 0.5, 65536, 0, 0, 0, 0,
			     "what the FTL programs at once, in KiB (default: page_kb)" },
	[P_ERASE]        = { "erase_us", 0, 1e6, 0, 0, 0, 0,
			     "erasing before a unit is programmed, in us (default 0)" },
	[P_WRITE]        = { "write_us", 0, 1e6, 0, 0, 0, 0,
			     "a buffered write's latency once in the buffer, in us (not one at a "
			     "time; default 0)" },
};
/* clang-format on */

struct ssd_io;

/* An FTL unit in the buffer: dirty, then programming. */
struct unit {
	struct unit *next;  /* the dirty list, oldest first; the spares of a write */
	struct unit *hnext; /* its hash chain, while it takes more writes */
	uint64_t index, seq, covered;
};

/* A read's pages on one flash unit, or a write's unit without a buffer. */
struct chan_op {
	struct chan_op *next;
	struct ssd_io *io;
	uint64_t cost;
	unsigned chan;
};

/* A request in the SSD. */
struct ssd_io {
	struct ssd_io *next;
	struct dev_req *r;
	unsigned parts;	   /* flash work outstanding */
	uint64_t xfer_end; /* a write: when it is across the interface */
	uint64_t seq;	   /* a flush: the last dirty unit it waits for */
	struct unit *spare;
	struct chan_op *ops;
};

struct channel {
	uint64_t busy_until;
	struct chan_op *op; /* in service: host work ... */
	struct unit *prog;  /* ... or a unit being programmed */
	struct chan_op *qhead, **qtail;
};

struct ssd {
	struct dev_model m;
	unsigned nch;
	struct channel *ch;
	uint64_t read_ns, program_ns, erase_ns, command_ns, write_ns, page, unit_bytes,
		buffer_units;
	double ch_ns_per_byte, if_ns_per_byte;
	uint64_t if_free;		       /* the interface is busy until */
	struct ssd_io *xfer_head, **xfer_tail; /* writes crossing the interface */
	struct ssd_io *wait_head, **wait_tail; /* writes waiting for room */
	struct ssd_io *flush_head, **flush_tail;
	struct unit *dirty_head, **dirty_tail;
	struct unit **hash;
	size_t hash_mask;
	uint64_t occupancy, dirty_seq, held;
	struct req_heap done;
	struct free_list ios, ops, units;
};

static struct ssd *ssd_of(const struct dev_model *m)
{
	return (struct ssd *)m;
}

static void done_at(struct ssd *s, struct dev_req *r, uint64_t t)
{
	r->done_ns = t;
	req_heap_push(&s->done, r); /* reserved by submit */
}

/* The request's turn on the interface, from @t: when it is done. */
static uint64_t interface(struct ssd *s, uint64_t t, uint32_t len)
{
	uint64_t start = t > s->if_free ? t : s->if_free;

	s->if_free = start + s->command_ns + (uint64_t)(len * s->if_ns_per_byte + 0.5);
	return s->if_free;
}

static uint64_t unit_cost(const struct ssd *s, uint64_t covered)
{
	uint64_t pages = (s->unit_bytes + s->page - 1) / s->page;
	uint64_t cost = pages * s->program_ns + s->erase_ns +
			(uint64_t)(s->unit_bytes * s->ch_ns_per_byte + 0.5);

	/* a unit the writes did not fill: the rest is read before it is programmed */
	if (covered < s->unit_bytes && s->unit_bytes > s->page)
		cost += pages * s->read_ns;
	return cost;
}

static struct unit **bucket(struct ssd *s, uint64_t index)
{
	return &s->hash[(index * 0x9E3779B97F4A7C15ULL >> 20) & s->hash_mask];
}

static struct unit *dirty_unit(struct ssd *s, uint64_t index)
{
	struct unit *u;

	for (u = *bucket(s, index); u; u = u->hnext)
		if (u->index == index)
			return u;
	return NULL;
}

static void unhash(struct ssd *s, struct unit *u)
{
	struct unit **pp;

	for (pp = bucket(s, u->index); *pp; pp = &(*pp)->hnext)
		if (*pp == u) {
			*pp = u->hnext;
			return;
		}
}

/* A free flash unit takes its next read, else the oldest dirty unit. */
static void chan_start(struct ssd *s, unsigned c, uint64_t t)
{
	struct channel *ch = &s->ch[c];
	uint64_t cost;

	if (ch->op || ch->prog)
		return;
	if (ch->qhead) {
		ch->op = ch->qhead;
		ch->qhead = ch->op->next;
		if (!ch->qhead)
			ch->qtail = &ch->qhead;
		cost = ch->op->cost;
	} else if (s->dirty_head) {
		ch->prog = s->dirty_head;
		s->dirty_head = ch->prog->next;
		if (!s->dirty_head)
			s->dirty_tail = &s->dirty_head;
		unhash(s, ch->prog);
		cost = unit_cost(s, ch->prog->covered);
	} else {
		return;
	}
	ch->busy_until = t + cost;
	s->m.service_ns += cost;
}

static void kick(struct ssd *s, uint64_t t)
{
	unsigned c;

	for (c = 0; c < s->nch && s->dirty_head; c++)
		chan_start(s, c, t);
}

static void enqueue(struct ssd *s, struct chan_op *op, uint64_t t)
{
	struct channel *ch = &s->ch[op->chan];

	op->next = NULL;
	*ch->qtail = op;
	ch->qtail = &op->next;
	chan_start(s, op->chan, t);
}

/* The oldest dirty data not yet programmed (UINT64_MAX: none). */
static uint64_t oldest_dirty(const struct ssd *s)
{
	uint64_t seq = s->dirty_head ? s->dirty_head->seq : UINT64_MAX;
	unsigned c;

	for (c = 0; c < s->nch; c++)
		if (s->ch[c].prog && s->ch[c].prog->seq < seq)
			seq = s->ch[c].prog->seq;
	return seq;
}

static void flushes(struct ssd *s, uint64_t t)
{
	struct ssd_io *io;
	uint64_t oldest = oldest_dirty(s);

	while ((io = s->flush_head) && oldest > io->seq) {
		s->flush_head = io->next;
		if (!s->flush_head)
			s->flush_tail = &s->flush_head;
		done_at(s, io->r, t);
		free_list_put(&s->ios, io);
	}
}

/* A write into the buffer at @t if there is room (or the buffer is empty): 1 if it went in. */
static int admit(struct ssd *s, struct ssd_io *io, uint64_t t)
{
	struct dev_req *r = io->r;
	uint64_t u, first = r->offset / s->unit_bytes,
		    last = (r->offset + r->len - 1) / s->unit_bytes;
	uint64_t fresh = 0, lo, hi;
	struct unit *d;

	for (u = first; u <= last; u++)
		fresh += !dirty_unit(s, u);
	if (s->occupancy && s->occupancy + fresh > s->buffer_units)
		return 0;
	for (u = first; u <= last; u++) {
		lo = u * s->unit_bytes > r->offset ? u * s->unit_bytes : r->offset;
		hi = (u + 1) * s->unit_bytes < r->offset + r->len ? (u + 1) * s->unit_bytes
								  : r->offset + r->len;
		d = dirty_unit(s, u);
		if (!d) {
			d = io->spare;
			io->spare = d->next;
			d->index = u;
			d->seq = ++s->dirty_seq;
			d->next = NULL;
			*s->dirty_tail = d;
			s->dirty_tail = &d->next;
			d->hnext = *bucket(s, u);
			*bucket(s, u) = d;
			s->occupancy++;
		}
		d->covered += hi - lo;
	}
	while ((d = io->spare)) {
		io->spare = d->next;
		free_list_put(&s->units, d);
	}
	done_at(s, r, t + s->write_ns);
	free_list_put(&s->ios, io);
	kick(s, t);
	return 1;
}

static void admit_waiting(struct ssd *s, uint64_t t)
{
	struct ssd_io *io;

	while ((io = s->wait_head)) {
		s->wait_head = io->next;
		if (!admit(s, io, t)) {
			s->wait_head = io;
			return;
		}
		if (!s->wait_head)
			s->wait_tail = &s->wait_head;
	}
}

/* A write is across the interface: into the buffer, or to its flash units. */
static void write_arrived(struct ssd *s, struct ssd_io *io, uint64_t t)
{
	struct chan_op *op;

	if (!s->buffer_units) {
		while ((op = io->ops)) {
			io->ops = op->next;
			enqueue(s, op, t);
		}
		return;
	}
	if (!s->wait_head && admit(s, io, t))
		return;
	io->next = NULL;
	*s->wait_tail = io;
	s->wait_tail = &io->next;
}

/* Flash unit @c has finished at @t. */
static void chan_done(struct ssd *s, unsigned c, uint64_t t)
{
	struct channel *ch = &s->ch[c];
	struct chan_op *op = ch->op;
	struct ssd_io *io;

	if (op) {
		ch->op = NULL;
		io = op->io;
		free_list_put(&s->ops, op);
		if (!--io->parts) {
			/* a read goes over the interface; a write without buffer is done */
			done_at(s, io->r, io->r->op == DEV_READ ? interface(s, t, io->r->len) : t);
			free_list_put(&s->ios, io);
		}
	} else {
		free_list_put(&s->units, ch->prog);
		ch->prog = NULL;
		s->occupancy--;
		admit_waiting(s, t);
		flushes(s, t);
	}
	chan_start(s, c, t);
	kick(s, t);
}

/* The work a request needs, allocated before it enters, so that it cannot fail later. */
static int prepare(struct ssd *s, struct ssd_io *io)
{
	struct dev_req *r = io->r;
	uint64_t first, last, n, k, per[256] = { 0 }, bytes;
	struct chan_op *op;
	struct unit *u;
	unsigned c;

	if (r->op == DEV_READ) {
		first = r->offset / s->page;
		last = (r->offset + r->len - 1) / s->page;
		n = last - first + 1;
		for (k = 0; k < n && k < s->nch; k++)
			per[(first + k) % s->nch] = n / s->nch + (k < n % s->nch);
		for (c = 0; c < s->nch; c++) {
			if (!per[c])
				continue;
			op = free_list_get(&s->ops);
			if (!op)
				return -1;
			bytes = per[c] * s->page < r->len ? per[c] * s->page : r->len;
			op->cost =
				per[c] * s->read_ns + (uint64_t)(bytes * s->ch_ns_per_byte + 0.5);
			op->chan = c;
			op->io = io;
			op->next = io->ops;
			io->ops = op;
			io->parts++;
		}
		return 0;
	}
	first = r->offset / s->unit_bytes;
	last = (r->offset + r->len - 1) / s->unit_bytes;
	for (k = first; k <= last; k++) {
		if (s->buffer_units) {
			u = free_list_get(&s->units);
			if (!u)
				return -1;
			u->next = io->spare;
			io->spare = u;
			continue;
		}
		op = free_list_get(&s->ops);
		if (!op)
			return -1;
		bytes = (k + 1) * s->unit_bytes < r->offset + r->len ? (k + 1) * s->unit_bytes
								     : r->offset + r->len;
		bytes -= k * s->unit_bytes > r->offset ? k * s->unit_bytes : r->offset;
		op->cost = unit_cost(s, bytes);
		op->chan = k % s->nch;
		op->io = io;
		op->next = io->ops;
		io->ops = op;
		io->parts++;
	}
	return 0;
}

static void unprepare(struct ssd *s, struct ssd_io *io)
{
	struct chan_op *op;
	struct unit *u;

	while ((op = io->ops)) {
		io->ops = op->next;
		free_list_put(&s->ops, op);
	}
	while ((u = io->spare)) {
		io->spare = u->next;
		free_list_put(&s->units, u);
	}
	free_list_put(&s->ios, io);
}

static int ssd_submit(struct dev_model *m, struct dev_req *r)
{
	struct ssd *s = ssd_of(m);
	uint64_t t = r->arrival_ns;
	struct ssd_io *io;
	struct chan_op *op;

	if (req_heap_reserve(&s->done, s->held + 1))
		return -1;
	r->start_ns = t;
	io = free_list_get(&s->ios);
	if (!io)
		return -1;
	io->r = r;
	if (r->op == DEV_FLUSH) {
		s->held++;
		io->seq = s->dirty_seq;
		if (oldest_dirty(s) > io->seq) {
			done_at(s, r, t);
			free_list_put(&s->ios, io);
			return 0;
		}
		*s->flush_tail = io;
		s->flush_tail = &io->next;
		return 0;
	}
	if (!r->len) {
		/* nothing to move: done as it comes */
		free_list_put(&s->ios, io);
		s->held++;
		done_at(s, r, t);
		return 0;
	}
	if (prepare(s, io)) {
		unprepare(s, io);
		return -1;
	}
	s->held++;
	if (r->op == DEV_READ) {
		while ((op = io->ops)) {
			io->ops = op->next;
			enqueue(s, op, t);
		}
		return 0;
	}
	io->xfer_end = interface(s, t, r->len);
	*s->xfer_tail = io;
	s->xfer_tail = &io->next;
	return 0;
}

static uint64_t ssd_next_event(const struct dev_model *m)
{
	const struct ssd *s = ssd_of(m);
	const struct dev_req *r = req_heap_top(&s->done);
	uint64_t t = r ? r->done_ns : DEV_NEVER;
	unsigned c;

	if (s->xfer_head && s->xfer_head->xfer_end < t)
		t = s->xfer_head->xfer_end;
	for (c = 0; c < s->nch; c++)
		if ((s->ch[c].op || s->ch[c].prog) && s->ch[c].busy_until < t)
			t = s->ch[c].busy_until;
	return t;
}

static void ssd_advance(struct dev_model *m, uint64_t now, dev_done_fn done, void *arg)
{
	struct ssd *s = ssd_of(m);
	struct dev_req *r;
	struct ssd_io *io;
	uint64_t t;
	unsigned c;

	while ((t = ssd_next_event(m)) <= now) {
		r = req_heap_top(&s->done);
		if (r && r->done_ns == t) {
			req_heap_pop(&s->done);
			s->held--;
			done(arg, r);
			continue;
		}
		for (c = 0; c < s->nch; c++)
			if ((s->ch[c].op || s->ch[c].prog) && s->ch[c].busy_until == t)
				break;
		if (c < s->nch) {
			chan_done(s, c, t);
			continue;
		}
		io = s->xfer_head;
		s->xfer_head = io->next;
		if (!s->xfer_head)
			s->xfer_tail = &s->xfer_head;
		write_arrived(s, io, t);
	}
}

static void ssd_destroy(struct dev_model *m)
{
	struct ssd *s = ssd_of(m);

	req_heap_free(&s->done);
	free_list_destroy(&s->ios);
	free_list_destroy(&s->ops);
	free_list_destroy(&s->units);
	free(s->hash);
	free(s->ch);
	free(s);
}

static const struct dev_model_ops ssd_ops = {
	.submit = ssd_submit,
	.next_event = ssd_next_event,
	.advance = ssd_advance,
	.destroy = ssd_destroy,
};

static struct dev_model *ssd_create(const struct dev_params *p, uint64_t size, char *err,
				    size_t errlen)
{
	double page_kb = p->v[P_PAGE_KB];
	double unit_kb = p->given[P_UNIT_KB] ? p->v[P_UNIT_KB] : page_kb;
	size_t buckets = 64;
	struct ssd *s;
	unsigned c;

	if (p->v[P_BUFFER_KB] && p->v[P_BUFFER_KB] < unit_kb) {
		pack_errf(err, errlen, "ssd: buffer_kb=%g: smaller than a write unit (%g KiB)",
			  p->v[P_BUFFER_KB], unit_kb);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s) {
		s->ch = calloc((size_t)p->v[P_CHANNELS], sizeof(*s->ch));
		s->buffer_units = (uint64_t)(p->v[P_BUFFER_KB] / unit_kb);
		while (buckets < 2 * s->buffer_units && buckets < (1u << 20))
			buckets *= 2;
		s->hash = calloc(buckets, sizeof(*s->hash));
	}
	if (!s || !s->ch || !s->hash) {
		if (s) {
			free(s->ch);
			free(s->hash);
		}
		free(s);
		pack_errf(err, errlen, "ssd: out of memory");
		return NULL;
	}
	s->hash_mask = buckets - 1;
	s->m.ops = &ssd_ops;
	s->m.type = &dev_model_ssd;
	s->m.size = size;
	s->m.servers = s->nch = (unsigned)p->v[P_CHANNELS];
	for (c = 0; c < s->nch; c++)
		s->ch[c].qtail = &s->ch[c].qhead;
	s->read_ns = (uint64_t)(p->v[P_READ] * 1000 + 0.5);
	s->program_ns = (uint64_t)(p->v[P_PROGRAM] * 1000 + 0.5);
	s->erase_ns = (uint64_t)(p->v[P_ERASE] * 1000 + 0.5);
	s->command_ns = (uint64_t)(p->v[P_COMMAND] * 1000 + 0.5);
	s->write_ns = (uint64_t)(p->v[P_WRITE] * 1000 + 0.5);
	s->page = (uint64_t)(page_kb * 1024);
	s->unit_bytes = (uint64_t)(unit_kb * 1024);
	s->ch_ns_per_byte = p->v[P_CHANNEL_MBPS] > 0 ? 1000.0 / p->v[P_CHANNEL_MBPS] : 0;
	s->if_ns_per_byte = 1000.0 / p->v[P_INTERFACE];
	s->xfer_tail = &s->xfer_head;
	s->wait_tail = &s->wait_head;
	s->flush_tail = &s->flush_head;
	s->dirty_tail = &s->dirty_head;
	free_list_init(&s->ios, sizeof(struct ssd_io));
	free_list_init(&s->ops, sizeof(struct chan_op));
	free_list_init(&s->units, sizeof(struct unit));
	return &s->m;
}

DEV_MODEL_KIND(
	ssd, "a flash SSD: parallel flash units, page reads and programs, a write buffer",
	ssd_params, ssd_create,
	"a kind of model: its parameters come from an SSD's datasheet (the named models cite theirs)");
