/*
 * The room a PostMark run takes on each of its locations, found by running
 * the model (postmark.h) without touching a file system: at its fullest
 * moment, the live files' data in whole blocks and the live files
 * themselves (inodes), per location. A pool that cannot fit is then refused
 * before the first file is made, instead of a run stopping at ENOSPC.
 */
#ifndef PACK_PMROOM_H
#define PACK_PMROOM_H

#include <stdint.h>
#include "postmark.h"

struct pm_room {
	uint64_t bytes[PM_MAX_LOCATIONS];	/* peak data bytes, in whole blocks */
	uint64_t files[PM_MAX_LOCATIONS];	/* peak live files */
};

/*
 * @cfg: the run; @sizer/@ctx as pm_sim_set_sizer() (NULL: PostMark's own
 * draw); @block[i]: location i's block size (location 0 when cfg->nloc is
 * 0). @create_only: only the initial pool (a time-based run, whose number of
 * transactions is not known). 0, or -1 with a one-line reason in @err.
 */
int pm_room(const struct pm_config *cfg, pm_size_fn sizer, void *ctx,
	    const uint64_t *block, int create_only, struct pm_room *out,
	    char *err, size_t errlen);

#endif
