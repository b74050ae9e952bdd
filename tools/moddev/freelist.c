/* The models' free lists: see freelist.h. */
#include <stdlib.h>
#include <string.h>

#include "freelist.h"

#define CHUNK_ITEMS 64

void free_list_init(struct free_list *l, size_t size)
{
	memset(l, 0, sizeof(*l));
	/* room for the link, and each item aligned as malloc's */
	l->size = ((size < sizeof(void *) ? sizeof(void *) : size) + 15) & ~(size_t)15;
}

static int grow(struct free_list *l)
{
	void **chunks = realloc(l->chunks, (l->nchunks + 1) * sizeof(*chunks));
	char *c;
	size_t i;

	if (!chunks)
		return -1;
	l->chunks = chunks;
	/* zeroed: free_list_take() hands new items out as they are */
	c = calloc(CHUNK_ITEMS, l->size);
	if (!c)
		return -1;
	l->chunks[l->nchunks++] = c;
	for (i = 0; i < CHUNK_ITEMS; i++)
		free_list_put(l, c + i * l->size);
	return 0;
}

void *free_list_take(struct free_list *l)
{
	void *item;

	if (!l->free && grow(l))
		return NULL;
	item = l->free;
	l->free = *(void **)item;
	return item;
}

void *free_list_get(struct free_list *l)
{
	void *item = free_list_take(l);

	if (item)
		memset(item, 0, l->size);
	return item;
}

void free_list_put(struct free_list *l, void *item)
{
	*(void **)item = l->free;
	l->free = item;
}

void free_list_destroy(struct free_list *l)
{
	size_t i;

	for (i = 0; i < l->nchunks; i++)
		free(l->chunks[i]);
	free(l->chunks);
	memset(l, 0, sizeof(*l));
}
