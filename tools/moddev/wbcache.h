/*
 * The write-back cache (model_wbcache.c) in front of a model made
 * elsewhere: the hdd model's own write cache (write_cache_mb) is one.
 */
#ifndef MODDEV_WBCACHE_H
#define MODDEV_WBCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "devmodel.h"

struct wbcache_params {
	uint64_t size_bytes;
	uint64_t latency_ns; /* a write into the cache, a hit */
	double mbps;	     /* bytes to and from the cache (0: no transfer time) */
	double destage_mbps; /* 0: as fast as the member takes them */
	unsigned destage_depth;
};

/*
 * A cache of @p in front of @member, which it then owns; NULL and a
 * one-line reason in @err (then @member is still the caller's).
 */
struct dev_model *wbcache_wrap(struct dev_model *member, const struct wbcache_params *p, char *err,
			       size_t errlen);

#endif
