/*
 * Tests of the free list (tools/moddev/freelist.h): the models' per-request
 * state and the daemon's request records, which keep their read buffers
 * from one request to the next (free_list_take).
 */
#include <stdlib.h>
#include <string.h>

#include "freelist.h"
#include "test.h"

struct item {
	void *link; /* the list's while the item is on it */
	char *buf;
	size_t cap;
};

TEST(moddev_freelist_take_keeps_what_an_item_owns_and_get_zeroes_it)
{
	struct free_list l;
	struct item *a, *b;
	char *buf = malloc(16);

	free_list_init(&l, sizeof(struct item));
	a = free_list_take(&l);
	CHECK(a && !a->buf && !a->cap); /* a new item is zeroed */
	if (!a || !buf)
		return;
	a->buf = buf;
	a->cap = 16;
	free_list_put(&l, a);
	b = free_list_take(&l);
	CHECK(b == a && b->buf == buf && b->cap == 16);
	free_list_put(&l, b);
	b = free_list_get(&l);
	CHECK(b == a && !b->buf && !b->cap);
	free_list_put(&l, b);
	free(buf);
	free_list_destroy(&l);
}

TEST(moddev_freelist_grows_past_a_chunk_and_hands_out_distinct_items)
{
	struct free_list l;
	struct item *it[200];
	int i, j, distinct = 1;

	free_list_init(&l, sizeof(struct item));
	for (i = 0; i < 200; i++) {
		it[i] = free_list_take(&l);
		CHECK(it[i] && !it[i]->buf);
		if (!it[i])
			return;
		it[i]->cap = i;
	}
	for (i = 0; i < 200; i++)
		for (j = 0; j < i; j++)
			distinct &= it[i] != it[j];
	CHECK(distinct);
	for (i = 0; i < 200; i++)
		free_list_put(&l, it[i]);
	free_list_destroy(&l);
}
