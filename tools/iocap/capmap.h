/*
 * The hash tables of iocap-convert (convert.c): by string (paths, note
 * texts) and by integer (descriptors, thread ids). Open addressing with
 * tombstones, so deletion keeps the probe chains; both grow at 3/4 full.
 */
#ifndef CAPMAP_H
#define CAPMAP_H

#include <stddef.h>
#include <stdint.h>

struct sent {
	char *k; /* NULL: empty; CAPMAP_TOMB: deleted */
	uint64_t h;
	void *v;
	long long n; /* a count (the notes' tables) */
};

struct smap {
	struct sent *e;
	size_t cap, live, used; /* used: live and tombstones */
};

struct ient {
	int64_t k;
	int state; /* 0 empty, 1 live, 2 deleted */
	void *v;
};

struct imap {
	struct ient *e;
	size_t cap, live, used;
};

extern char capmap_tomb[];
#define CAPMAP_TOMB capmap_tomb

/* the entry of @k, NULL if none */
struct sent *smap_get(const struct smap *m, const char *k);
/* the entry of @k, made (key copied, v NULL, n 0) if none */
struct sent *smap_put(struct smap *m, const char *k);
/* removes @k; its value, NULL if it was not there */
void *smap_del(struct smap *m, const char *k);
/* live entries in turn: *@i starts at 0; NULL at the end */
struct sent *smap_next(const struct smap *m, size_t *i);

void *imap_get(const struct imap *m, int64_t k);
void imap_set(struct imap *m, int64_t k, void *v);
void *imap_del(struct imap *m, int64_t k);
struct ient *imap_next(const struct imap *m, size_t *i);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);

#endif
