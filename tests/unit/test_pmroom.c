/* Tests of a PostMark run's room (pmroom.h). */
#include <stdint.h>
#include <string.h>

#include "pmroom.h"
#include "test.h"

static char err[256];

static void config(struct pm_config *c, int number, int transactions, int lo, int hi)
{
	pm_config_default(c);
	c->number = number;
	c->transactions = transactions;
	c->size_lo = lo;
	c->size_hi = hi;
}

/* The same walk by hand: live bytes in blocks and files, at their peak. */
static void by_hand(const struct pm_config *c, uint64_t block, uint64_t *bytes, uint64_t *files)
{
	struct pm_sim *sim = pm_sim_new(c, err, sizeof(err));
	static uint32_t size[1 << 16];
	uint64_t b = 0, f = 0;
	struct pm_op op;

	*bytes = *files = 0;
	memset(size, 0, sizeof(size));
	while (pm_sim_next(sim, &op)) {
		if (op.kind == PM_OP_PHASE && op.phase == PM_PHASE_DELETE)
			break;
		if (op.kind == PM_OP_CREATE && !(op.flags & PM_OPF_TABLE_FULL)) {
			size[op.slot] = op.size;
			b += (op.size + block - 1) / block * block;
			f++;
		} else if (op.kind == PM_OP_APPEND && !(op.flags & PM_OPF_FILE_FULL)) {
			b -= (size[op.slot] + block - 1) / block * block;
			size[op.slot] += op.size;
			b += (size[op.slot] + block - 1) / block * block;
		} else if (op.kind == PM_OP_DELETE) {
			b -= (size[op.slot] + block - 1) / block * block;
			f--;
		}
		if (b > *bytes)
			*bytes = b;
		if (f > *files)
			*files = f;
	}
	pm_sim_free(sim);
}

TEST(pmroom_fixed_pool_is_number_times_blocks)
{
	struct pm_config c;
	struct pm_room r;
	uint64_t block[PM_MAX_LOCATIONS] = { 4096 };

	/* creates only (no transactions): number files of 100 bytes, a block each */
	config(&c, 500, 0, 100, 100);
	c.transactions = 10;
	c.bias_create = -1;	/* transactions neither create nor delete */
	c.bias_read = 10;	/* and only read */
	CHECK(pm_room(&c, NULL, NULL, block, 0, &r, err, sizeof(err)) == 0);
	CHECK(r.files[0] == 500 && r.bytes[0] == 500 * 4096ULL);
	CHECK(pm_room(&c, NULL, NULL, block, 1, &r, err, sizeof(err)) == 0);
	CHECK(r.files[0] == 500 && r.bytes[0] == 500 * 4096ULL);
}

TEST(pmroom_peak_matches_a_walk_of_the_run)
{
	struct pm_config c;
	struct pm_room r;
	uint64_t block[PM_MAX_LOCATIONS] = { 4096 }, bytes, files;

	/* PostMark's defaults, then a create-heavy run whose pool grows */
	config(&c, 500, 500, 500, 10000);
	CHECK(pm_room(&c, NULL, NULL, block, 0, &r, err, sizeof(err)) == 0);
	by_hand(&c, 4096, &bytes, &files);
	CHECK(r.bytes[0] == bytes && r.files[0] == files);
	CHECK(r.files[0] >= 500 && r.bytes[0] >= 500 * 4096ULL);
	config(&c, 1000, 20000, 500, 20000);
	c.bias_create = 9;
	CHECK(pm_room(&c, NULL, NULL, block, 0, &r, err, sizeof(err)) == 0);
	by_hand(&c, 4096, &bytes, &files);
	CHECK(r.bytes[0] == bytes && r.files[0] == files);
	CHECK(r.files[0] > 1000);	/* it grew past the initial pool */
	CHECK(pm_room(&c, NULL, NULL, block, 1, &r, err, sizeof(err)) == 0);
	CHECK(r.files[0] == 1000);
}

TEST(pmroom_per_location)
{
	struct pm_config c;
	struct pm_room r;
	uint64_t block[PM_MAX_LOCATIONS] = { 4096, 512 };

	config(&c, 2000, 0, 1000, 1000);
	c.transactions = 10;
	CHECK(pm_parse_locations(&c, "/a@3:/b@1", err, sizeof(err)) == 0);
	CHECK(pm_room(&c, NULL, NULL, block, 1, &r, err, sizeof(err)) == 0);
	CHECK(r.files[0] + r.files[1] == 2000 && r.files[0] > r.files[1]);
	CHECK(r.bytes[0] == r.files[0] * 4096 && r.bytes[1] == r.files[1] * 1024);
}
