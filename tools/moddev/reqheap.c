/* The models' heap of requests by completion time: see reqheap.h. */
#include <stdlib.h>

#include "reqheap.h"

static int before(const struct dev_req *a, const struct dev_req *b)
{
	return a->done_ns < b->done_ns || (a->done_ns == b->done_ns && a->seq < b->seq);
}

int req_heap_reserve(struct req_heap *h, size_t n)
{
	size_t cap = h->cap ? h->cap : 64;
	struct dev_req **a;

	if (n <= h->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	a = realloc(h->a, cap * sizeof(*a));
	if (!a)
		return -1;
	h->a = a;
	h->cap = cap;
	return 0;
}

int req_heap_push(struct req_heap *h, struct dev_req *r)
{
	size_t i, parent;

	if (h->n == h->cap && req_heap_reserve(h, h->n + 1))
		return -1;
	for (i = h->n++; i > 0; i = parent) {
		parent = (i - 1) / 2;
		if (!before(r, h->a[parent]))
			break;
		h->a[i] = h->a[parent];
	}
	h->a[i] = r;
	return 0;
}

struct dev_req *req_heap_pop(struct req_heap *h)
{
	struct dev_req *top, *last;
	size_t i = 0, child;

	if (!h->n)
		return NULL;
	top = h->a[0];
	last = h->a[--h->n];
	for (;;) {
		child = 2 * i + 1;
		if (child >= h->n)
			break;
		if (child + 1 < h->n && before(h->a[child + 1], h->a[child]))
			child++;
		if (!before(h->a[child], last))
			break;
		h->a[i] = h->a[child];
		i = child;
	}
	if (h->n)
		h->a[i] = last;
	return top;
}

void req_heap_free(struct req_heap *h)
{
	free(h->a);
	h->a = NULL;
	h->n = h->cap = 0;
}
