/* Member models of a composite model: see members.h. */
#include <string.h>

#include "members.h"

int members_create(struct member_set *s, const char *spec, size_t len, unsigned n, uint64_t size,
		   char *err, size_t errlen)
{
	unsigned i;

	memset(s, 0, sizeof(*s));
	s->done_tail = &s->done_head;
	for (i = 0; i < n && i < MAX_MEMBERS; i++) {
		s->m[i] = dev_model_create_n(spec, len, size, err, errlen);
		if (!s->m[i]) {
			members_destroy(s);
			return -1;
		}
		s->n++;
	}
	return 0;
}

void members_destroy(struct member_set *s)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		dev_model_destroy(s->m[i]);
	s->n = 0;
}

uint64_t members_next(const struct member_set *s)
{
	uint64_t t = DEV_NEVER, e;
	unsigned i;

	for (i = 0; i < s->n; i++) {
		e = s->m[i]->ops->next_event(s->m[i]);
		if (e < t)
			t = e;
	}
	return t;
}

static void collect(void *arg, struct dev_req *r)
{
	struct member_set *s = arg;

	r->next = NULL;
	*s->done_tail = r;
	s->done_tail = &r->next;
}

void members_advance(struct member_set *s, uint64_t t)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		s->m[i]->ops->advance(s->m[i], t, collect, s);
}

struct dev_req *members_take(struct member_set *s)
{
	struct dev_req *r = s->done_head;

	if (r) {
		s->done_head = r->next;
		if (!s->done_head)
			s->done_tail = &s->done_head;
	}
	return r;
}

int members_submit(struct member_set *s, unsigned i, struct dev_req *r)
{
	r->next = NULL;
	r->start_ns = r->done_ns = 0;
	return s->m[i]->ops->submit(s->m[i], r);
}

unsigned members_servers(const struct member_set *s)
{
	unsigned i, n = 0;

	for (i = 0; i < s->n; i++)
		n += s->m[i]->servers;
	return n;
}

uint64_t members_service_ns(const struct member_set *s)
{
	uint64_t ns = 0;
	unsigned i;

	for (i = 0; i < s->n; i++)
		ns += s->m[i]->service_ns;
	return ns;
}
