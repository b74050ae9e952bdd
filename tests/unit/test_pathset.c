/* Tests of the path set behind dbreplay's manifest (pathset.h). */
#include <stdio.h>

#include "pathset.h"
#include "test.h"

#define N 2000

static void name(char *buf, size_t len, unsigned i)
{
	snprintf(buf, len, "base/%u/%u", i % 7, i * 2654435761u);
}

TEST(pathset_add_has_remove)
{
	struct pathset s = { 0 };

	CHECK(!pathset_has(&s, "a"));
	CHECK(pathset_remove(&s, "a") == 0);
	CHECK(pathset_add(&s, "a") == 0);
	CHECK(pathset_add(&s, "a") == 0); /* already there: still one */
	CHECK(s.n == 1 && s.cap == 256);
	CHECK(pathset_has(&s, "a") && !pathset_has(&s, "b") && !pathset_has(&s, ""));
	CHECK(pathset_remove(&s, "a") == 1);
	CHECK(!pathset_has(&s, "a") && s.n == 0);
	CHECK(pathset_remove(&s, "a") == 0);
	pathset_free(&s);
	CHECK(!s.slot && !s.n && !s.cap);
	CHECK(!pathset_has(&s, "a"));
}

/*
 * Thousands of paths grow the table past its first size, collide in it, and
 * every other one leaves: each removal moves its probe chain back, so each
 * path left is still found and none of those removed is.
 */
TEST(pathset_grows_and_removes_within_probe_chains)
{
	struct pathset s = { 0 };
	char p[64];
	size_t i, held = 0;
	unsigned k;

	for (k = 0; k < N; k++) {
		name(p, sizeof(p), k);
		CHECK(pathset_add(&s, p) == 0);
	}
	CHECK(s.n == N && s.cap >= 2 * N && !(s.cap & (s.cap - 1)));
	for (k = 0; k < N; k += 2) {
		name(p, sizeof(p), k);
		CHECK(pathset_remove(&s, p) == 1);
	}
	CHECK(s.n == N / 2);
	for (k = 0; k < N; k++) {
		name(p, sizeof(p), k);
		CHECK(pathset_has(&s, p) == (int)(k & 1));
	}
	for (i = 0; i < s.cap; i++)
		held += s.slot[i] != NULL;
	CHECK(held == N / 2);
	/* back in, and out again, all of them */
	for (k = 0; k < N; k += 2) {
		name(p, sizeof(p), k);
		CHECK(pathset_add(&s, p) == 0);
	}
	for (k = 0; k < N; k++) {
		name(p, sizeof(p), k);
		CHECK(pathset_remove(&s, p) == 1);
	}
	CHECK(s.n == 0);
	for (i = 0; i < s.cap; i++)
		CHECK(!s.slot[i]);
	pathset_free(&s);
}

/* FNV-1a's published values (its offset basis has 20 digits, the last a 7) */
TEST(pathset_hash_is_fnv1a)
{
	CHECK(pathset_hash("") == 0xcbf29ce484222325ULL);
	CHECK(pathset_hash("a") == 0xaf63dc4c8601ec8cULL);
	CHECK(pathset_hash("foobar") == 0x85944171f73967e8ULL);
}
