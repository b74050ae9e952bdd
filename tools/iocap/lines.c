// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: its output lines (lines.h), written in issue order as strace's
 * are: a min-heap of the lines by issue time, each held back until a call
 * completed a second after it was issued, so that a call issued earlier
 * and completed later is written before it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lines.h"
#include "user.h"

struct line {
	unsigned long long ts, seq;
	char *text;
};
static struct line *heap;
static size_t hlen, hcap;
static unsigned long long seqno, latest;
static FILE *out;

static int before(const struct line *a, const struct line *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

void hpush(unsigned long long ts, char *text)
{
	size_t i;

	if (hlen == hcap) {
		hcap = hcap ? hcap * 2 : 4096;
		heap = realloc(heap, hcap * sizeof(*heap));
		if (!heap)
			die("out of memory");
	}
	i = hlen++;
	heap[i] = (struct line){ ts, seqno++, text };
	while (i && before(&heap[i], &heap[(i - 1) / 2])) {
		struct line t = heap[i];

		heap[i] = heap[(i - 1) / 2];
		heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static void hpop(void)
{
	size_t i = 0;

	fputs(heap[0].text, out);
	free(heap[0].text);
	heap[0] = heap[--hlen];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct line t;

		if (l < hlen && before(&heap[l], &heap[m]))
			m = l;
		if (r < hlen && before(&heap[r], &heap[m]))
			m = r;
		if (m == i)
			break;
		t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

void lines_open(FILE *f)
{
	out = f;
}

void lines_completed(unsigned long long te)
{
	if (te > latest)
		latest = te;
}

/* Writes what was issued more than a second before the latest completion. */
void flush_lines(int all)
{
	while (hlen && (all || heap[0].ts + 1000000000ULL < latest))
		hpop();
}
