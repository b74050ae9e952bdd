/*
 * What a model made of member models shares (an array, a controller cache
 * in front of a model): creating the members from a spec, advancing them
 * together in time order, and collecting the requests of its own they
 * complete.
 *
 * A composite's advance(now) is a loop: t = the earliest of
 * members_next() and its own events; stop past @now; members_advance(t),
 * which leaves what the members completed by t in the done list; act on
 * those at t (complete a host request, or send the next requests to the
 * members, at t: every member's clock is at t then); its own events at t.
 * Then members_advance(now) brings every member's clock to @now, so that
 * a request submitted at @now finds them there. Acting on a completion
 * never happens inside a member's advance: a member is never called back
 * into while it runs.
 */
#ifndef MODDEV_MEMBERS_H
#define MODDEV_MEMBERS_H

#include <stddef.h>
#include <stdint.h>

#include "devmodel.h"

#define MAX_MEMBERS 32

struct member_set {
	struct dev_model *m[MAX_MEMBERS];
	unsigned n;
	struct dev_req *done_head, **done_tail; /* completed, in completion order */
};

/*
 * @n members of @size bytes each, each the model of @spec (@len bytes).
 * 0, or -1 with the member's own one-line reason in @err.
 */
int members_create(struct member_set *s, const char *spec, size_t len, unsigned n, uint64_t size,
		   char *err, size_t errlen);
void members_destroy(struct member_set *s);
uint64_t members_next(const struct member_set *s);
/* Every member to @t; what they complete is appended to the done list. */
void members_advance(struct member_set *s, uint64_t t);
/* The first completed request (NULL: none), taken off the list. */
struct dev_req *members_take(struct member_set *s);
/* @r to member @i at r->arrival_ns: 0, or -1 (out of memory). */
int members_submit(struct member_set *s, unsigned i, struct dev_req *r);
/* The members' servers and the service time they have spent, for the utilisation. */
unsigned members_servers(const struct member_set *s);
uint64_t members_service_ns(const struct member_set *s);

#endif
