/*
 * A binary min-heap of requests by completion time (done_ns, then arrival
 * order): the models' list of what completes next. Grows as needed.
 */
#ifndef MODDEV_REQHEAP_H
#define MODDEV_REQHEAP_H

#include <stddef.h>

#include "devmodel.h"

struct req_heap {
	struct dev_req **a;
	size_t n, cap;
};

/* 0, or -1 when it cannot grow (the heap is unchanged). */
int req_heap_push(struct req_heap *h, struct dev_req *r);
/*
 * Room for @n requests in all: 0, or -1 (unchanged). A model reserves in
 * submit() what it will push later in advance(), which cannot fail.
 */
int req_heap_reserve(struct req_heap *h, size_t n);
/* The request that completes first (NULL when empty), and removing it. */
static inline struct dev_req *req_heap_top(const struct req_heap *h)
{
	return h->n ? h->a[0] : NULL;
}
struct dev_req *req_heap_pop(struct req_heap *h);
void req_heap_free(struct req_heap *h);

#endif
