/* See pathset.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pathset.h"

uint64_t pathset_hash(const char *path)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *path; path++)
		h = (h ^ (unsigned char)*path) * 1099511628211ULL;
	return h;
}

static char **slot_of(char **tab, size_t cap, const char *path)
{
	size_t i = pathset_hash(path) & (cap - 1);

	while (tab[i] && strcmp(tab[i], path))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

int pathset_has(const struct pathset *s, const char *path)
{
	return s->cap && *slot_of(s->slot, s->cap, path);
}

int pathset_add(struct pathset *s, const char *path)
{
	size_t i;

	if (pathset_has(s, path))
		return 0;
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		char **tab = calloc(cap, sizeof(*tab));

		if (!tab)
			return -ENOMEM;
		for (i = 0; i < s->cap; i++)
			if (s->slot[i])
				*slot_of(tab, cap, s->slot[i]) = s->slot[i];
		free(s->slot);
		s->slot = tab;
		s->cap = cap;
	}
	if (!(*slot_of(s->slot, s->cap, path) = strdup(path)))
		return -ENOMEM;
	s->n++;
	return 0;
}

/* Empties @slot, moving later entries of its probe chain back. */
static void delete_slot(char **tab, size_t cap, char **slot)
{
	size_t hole = (size_t)(slot - tab), j = hole;

	free(*slot);
	*slot = NULL;
	for (j = (j + 1) & (cap - 1); tab[j]; j = (j + 1) & (cap - 1)) {
		size_t home = pathset_hash(tab[j]) & (cap - 1);

		/* tab[j] may move into the hole unless its home lies after the hole, up to j */
		if (hole < j ? home <= hole || home > j : home <= hole && home > j) {
			tab[hole] = tab[j];
			tab[j] = NULL;
			hole = j;
		}
	}
}

int pathset_remove(struct pathset *s, const char *path)
{
	char **slot;

	if (!s->cap || !*(slot = slot_of(s->slot, s->cap, path)))
		return 0;
	delete_slot(s->slot, s->cap, slot);
	s->n--;
	return 1;
}

void pathset_free(struct pathset *s)
{
	size_t i;

	for (i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	s->slot = NULL;
	s->cap = s->n = 0;
}
