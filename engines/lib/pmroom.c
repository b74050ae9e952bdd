/* See pmroom.h. */
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "pmroom.h"

static uint64_t blocks_of(uint64_t bytes, uint64_t block)
{
	return block ? (bytes + block - 1) / block * block : bytes;
}

int pm_room(const struct pm_config *cfg, pm_size_fn sizer, void *ctx,
	    const uint64_t *block, int create_only, struct pm_room *out,
	    char *err, size_t errlen)
{
	struct pm_room now;
	struct pm_sim *sim;
	struct pm_op op;
	uint32_t *size;		/* each table slot's file size */
	int nslots;

	memset(out, 0, sizeof(*out));
	memset(&now, 0, sizeof(now));
	sim = pm_sim_new(cfg, err, errlen);
	if (!sim)
		return -1;
	if (sizer)
		pm_sim_set_sizer(sim, sizer, ctx);
	nslots = pm_sim_nslots(sim);
	size = calloc(nslots ? nslots : 1, sizeof(*size));
	if (!size) {
		pm_sim_free(sim);
		pack_errf(err, errlen, "out of memory for %d slots", nslots);
		return -1;
	}
	while (pm_sim_next(sim, &op)) {
		int l = op.loc < 0 ? 0 : op.loc;
		uint64_t b = block[l];

		if (op.kind == PM_OP_PHASE && op.phase == PM_PHASE_TRANSACTIONS && create_only)
			break;
		if (op.kind == PM_OP_PHASE && op.phase == PM_PHASE_DELETE)
			break;		/* from here on files only go */
		if (op.slot < 0 || op.slot >= nslots)
			continue;
		switch (op.kind) {
		case PM_OP_CREATE:
			if (op.flags & PM_OPF_TABLE_FULL)
				continue;
			size[op.slot] = (uint32_t)op.size;
			now.bytes[l] += blocks_of((uint64_t)op.size, b);
			now.files[l]++;
			break;
		case PM_OP_APPEND:
			if (op.flags & PM_OPF_FILE_FULL)
				continue;
			now.bytes[l] -= blocks_of(size[op.slot], b);
			size[op.slot] += (uint32_t)op.size;
			now.bytes[l] += blocks_of(size[op.slot], b);
			break;
		case PM_OP_DELETE:
			now.bytes[l] -= blocks_of(size[op.slot], b);
			now.files[l]--;
			size[op.slot] = 0;
			break;
		default:
			continue;
		}
		if (now.bytes[l] > out->bytes[l])
			out->bytes[l] = now.bytes[l];
		if (now.files[l] > out->files[l])
			out->files[l] = now.files[l];
	}
	free(size);
	pm_sim_free(sim);
	return 0;
}
