/*
 * The trace's reader thread (dbprefetch.h). A ring of blocks: the reader
 * fills a free block without the lock and publishes it whole; the replaying
 * thread takes published blocks in order, reads them without the lock and
 * gives each back when it is through. One lock round trip per block, not
 * per record, keeps the hand-over off the per-record cost, and a sleeping
 * side is woken only when it has work: the reader, once the ring is full,
 * when half of it is free again (so it refills in a burst rather than a
 * block at a time, a futex wake and wait each); the replaying thread when
 * a block it waits for is published.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "dbprefetch.h"
#include "errmsg.h"

#define DEFAULT_BLOCK	512
#define DEFAULT_NBLOCKS	8
#define ERRLEN		512

struct block {
	struct dbtrace_rec *recs;
	unsigned n;
	int status;		/* 1: more blocks follow, 0: the trace's end, -1: an error */
};

struct dbprefetch {
	struct dbtrace *t;
	unsigned block, nblocks;
	struct block *blocks;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t filled, freed;
	/* under the lock */
	unsigned long long produced, consumed;	/* blocks published, blocks given back */
	int stop;
	int reader_waits, replay_waits;		/* asleep on freed / on filled */
	/* the replaying thread's own */
	struct block *cur;
	unsigned pos;
	int final;		/* the status that ended the stream, once reached */
	char err[ERRLEN];	/* the reader's, written before its last block is published */
};

static void *reader(void *arg)
{
	struct dbprefetch *p = arg;
	int status = 1;

	while (status == 1) {
		struct block *b;

		pthread_mutex_lock(&p->lock);
		if (p->produced - p->consumed >= p->nblocks) {
			p->reader_waits = 1;
			while (!p->stop && p->reader_waits)
				pthread_cond_wait(&p->freed, &p->lock);
		}
		if (p->stop) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		b = &p->blocks[p->produced % p->nblocks];
		pthread_mutex_unlock(&p->lock);

		b->n = 0;
		while (b->n < p->block) {
			int ret = dbtrace_next(p->t, &b->recs[b->n]);

			if (ret > 0) {
				b->n++;
				continue;
			}
			status = ret < 0 ? -1 : 0;
			if (ret < 0)
				pack_errf(p->err, sizeof(p->err), "%s", dbtrace_error(p->t));
			break;
		}
		b->status = status;

		pthread_mutex_lock(&p->lock);
		p->produced++;
		if (p->replay_waits) {
			p->replay_waits = 0;
			pthread_cond_signal(&p->filled);
		}
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

struct dbprefetch *dbprefetch_start(struct dbtrace *t, unsigned block, unsigned nblocks,
				    char *err, size_t errlen)
{
	struct dbprefetch *p = calloc(1, sizeof(*p));
	sigset_t all, old;
	unsigned i;
	int ret;

	if (!p) {
		pack_errf(err, errlen, "trace reader: out of memory");
		return NULL;
	}
	p->t = t;
	p->block = block ? block : DEFAULT_BLOCK;
	p->nblocks = nblocks ? nblocks : DEFAULT_NBLOCKS;
	p->final = 1;
	p->blocks = calloc(p->nblocks, sizeof(*p->blocks));
	for (i = 0; p->blocks && i < p->nblocks; i++)
		if (!(p->blocks[i].recs = calloc(p->block, sizeof(struct dbtrace_rec))))
			break;
	if (!p->blocks || i < p->nblocks) {
		pack_errf(err, errlen, "trace reader: out of memory");
		goto fail;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->filled, NULL);
	pthread_cond_init(&p->freed, NULL);
	/* signals (fio's SIGINT/SIGTERM/SIGUSR1 handlers) stay with the replaying thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&p->thread, NULL, reader, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		pack_errf(err, errlen, "trace reader: cannot start a thread: %s", strerror(ret));
		pthread_cond_destroy(&p->freed);
		pthread_cond_destroy(&p->filled);
		pthread_mutex_destroy(&p->lock);
		goto fail;
	}
	return p;
fail:
	for (i = 0; p->blocks && i < p->nblocks; i++)
		free(p->blocks[i].recs);
	free(p->blocks);
	free(p);
	return NULL;
}

int dbprefetch_next(struct dbprefetch *p, struct dbtrace_rec *rec)
{
	for (;;) {
		if (p->cur && p->pos < p->cur->n) {
			*rec = p->cur->recs[p->pos++];
			return 1;
		}
		if (p->final != 1)
			return p->final;
		pthread_mutex_lock(&p->lock);
		if (p->cur) {		/* through with it: the reader may refill it */
			p->final = p->cur->status;
			p->cur = NULL;
			p->consumed++;
			if (p->reader_waits && p->produced - p->consumed <= p->nblocks / 2) {
				p->reader_waits = 0;
				pthread_cond_signal(&p->freed);
			}
			if (p->final != 1) {
				pthread_mutex_unlock(&p->lock);
				continue;
			}
		}
		while (p->produced == p->consumed) {
			p->replay_waits = 1;
			pthread_cond_wait(&p->filled, &p->lock);
		}
		p->cur = &p->blocks[p->consumed % p->nblocks];
		p->pos = 0;
		pthread_mutex_unlock(&p->lock);
	}
}

const char *dbprefetch_error(const struct dbprefetch *p)
{
	return p->err;
}

void dbprefetch_stop(struct dbprefetch *p)
{
	unsigned i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	p->reader_waits = 0;
	pthread_cond_broadcast(&p->freed);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->freed);
	pthread_cond_destroy(&p->filled);
	pthread_mutex_destroy(&p->lock);
	for (i = 0; i < p->nblocks; i++)
		free(p->blocks[i].recs);
	free(p->blocks);
	free(p);
}
