/*
 * A free list of fixed-size items, allocated in chunks and never given
 * back until the list is freed: the models' per-request state (an SSD's
 * channel work, an array's children, a cache's lines) and the daemon's
 * request records without a malloc per request.
 */
#ifndef MODDEV_FREELIST_H
#define MODDEV_FREELIST_H

#include <stddef.h>

struct free_list {
	size_t size;   /* of an item */
	void *free;    /* the first free item; its first word links the next */
	void **chunks; /* every chunk allocated */
	size_t nchunks;
};

/* An empty list of items of @size bytes. */
void free_list_init(struct free_list *l, size_t size);
/* A zeroed item, or NULL when out of memory. */
void *free_list_get(struct free_list *l);
/*
 * An item as it was put back, but for its first word (the list's link),
 * or a zeroed new one; NULL when out of memory. For items that keep what
 * they own (a buffer) from one use to the next.
 */
void *free_list_take(struct free_list *l);
void free_list_put(struct free_list *l, void *item);
/* Every item, in use or not. */
void free_list_destroy(struct free_list *l);

#endif
