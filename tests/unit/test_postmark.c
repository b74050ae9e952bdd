/*
 * Tests of the PostMark 1.53 model (postmark.h): generator, configuration
 * language, operation stream, counters and reports.
 *
 * Where expected values come from the real program they were printed by
 * Debian's postmark 1.53-2+b1 (amd64) for the configuration shown, once, and
 * copied here; tests/engines/test_postmark_model.py repeats such comparisons live.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "postmark.h"
#include "test.h"

static char err[512];

/* ---- Generator ---- */

/*
 * Seed 42 with the 1999 seeding. Obtained once from an independent Python
 * implementation written from the published algorithm (LCG 69069 seeding,
 * top 16 bits of two successive values per word; standard twist and
 * tempering), printing outputs 0..7, 623, 624 (first after a refill) and 999.
 */
TEST(postmark_mt_seed42_outputs)
{
	static const uint32_t first[] = {
		4179544424u, 615236124u, 4165290828u, 3119652344u,
		1623863471u, 605280572u, 1209526912u, 2753559756u,
	};
	struct pm_mt g;
	uint32_t v[1000];
	int i;

	pm_mt_seed(&g, 42);
	for (i = 0; i < 1000; i++)
		v[i] = pm_mt_next(&g);
	for (i = 0; i < 8; i++)
		CHECK(v[i] == first[i]);
	CHECK(v[623] == 1304686307u);
	CHECK(v[624] == 299826205u);
	CHECK(v[999] == 2144691740u);

	/* Reseeding starts over. */
	pm_mt_seed(&g, 42);
	CHECK(pm_mt_next(&g) == first[0]);
}

TEST(postmark_rnd_edges)
{
	struct pm_mt g, ref;

	pm_mt_seed(&g, 42);
	pm_mt_seed(&ref, 42);
	/* An empty or negative range is 0 and consumes nothing. */
	CHECK(pm_rnd(&g, 0) == 0);
	CHECK(pm_rnd(&g, -1) == 0);
	CHECK(pm_rnd(&g, INT_MIN) == 0);
	CHECK(pm_rnd(&g, 95) == pm_mt_next(&ref) % 95);
	/* A range of one is 0 but does draw. */
	CHECK(pm_rnd(&g, 1) == 0);
	pm_mt_next(&ref);
	CHECK(pm_rnd(&g, INT_MAX) == pm_mt_next(&ref) % INT_MAX);
	CHECK(pm_mt_next(&g) == pm_mt_next(&ref));
}

/* ---- Simulation helpers ---- */

static struct pm_config cfg_of(const char *text)
{
	struct pm_config cfg;
	char line[512];
	const char *p = text;
	int n = 0;

	pm_config_default(&cfg);
	while (*p) {
		size_t len = strcspn(p, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (pm_config_parse_line(&cfg, line, ++n, err, sizeof(err)) ==
		    PM_CMD_ERROR) {
			printf("bad test config: %s\n", err);
			abort();
		}
		p += len + (p[len] == '\n');
	}
	return cfg;
}

struct tally {
	int ops[PM_OP_OUT_OF_FILES + 1];
	int table_full, file_full;
	int phases[4], nphases;
	int bad;		/* broken invariants */
};

/* Runs @cfg to the end, checking what holds for any run. */
static struct pm_counters run_cfg(const struct pm_config *cfg, struct tally *t)
{
	struct pm_sim *sim = pm_sim_new(cfg, err, sizeof(err));
	struct pm_counters c;
	struct pm_op op;
	int tx = 0, in_tx = 0, last_del = -1, names = 0;

	memset(t, 0, sizeof(*t));
	if (!sim) {
		printf("pm_sim_new: %s\n", err);
		abort();
	}
	while (pm_sim_next(sim, &op)) {
		t->ops[op.kind]++;
		switch (op.kind) {
		case PM_OP_PHASE:
			if (t->nphases < 4)
				t->phases[t->nphases] = op.phase;
			t->nphases++;
			break;
		case PM_OP_TX_BEGIN:
			t->bad += in_tx || op.tx != tx;
			in_tx = 1;
			break;
		case PM_OP_TX_END:
			t->bad += !in_tx || op.tx != tx;
			in_tx = 0;
			tx++;
			break;
		case PM_OP_CREATE:
			if (op.flags & PM_OPF_TABLE_FULL) {
				t->table_full++;
				t->bad += op.slot != -1 || op.name != 0;
				break;
			}
			/* Names count creations; sizes are in [lo, hi - 1] or lo. */
			t->bad += op.name != ++names;
			t->bad += op.size < cfg->size_lo ||
				  op.size > cfg->size_hi ||
				  (op.size == cfg->size_hi && cfg->size_lo != cfg->size_hi);
			t->bad += op.loc >= (cfg->nloc ? cfg->nloc : 0);
			t->bad += op.subdir >= (cfg->subdirs > 1 ? cfg->subdirs : 0);
			t->bad += (cfg->nloc > 0) != (op.loc >= 0);
			t->bad += (cfg->subdirs > 1) != (op.subdir >= 0);
			break;
		case PM_OP_APPEND:
			if (op.flags & PM_OPF_FILE_FULL) {
				t->file_full++;
				t->bad += op.size != 0;
			} else {
				t->bad += op.size < 1 || op.size > cfg->size_hi;
			}
			break;
		case PM_OP_DELETE:
			if (op.phase == PM_PHASE_DELETE) {
				/* Deleted in slot order once the transactions end. */
				t->bad += op.slot <= last_del;
				last_del = op.slot;
			}
			break;
		default:
			break;
		}
		t->bad += op.slot >= 2 * cfg->number;
	}
	t->bad += in_tx || pm_sim_next(sim, &op) != 0 || pm_sim_live(sim) != 0;
	c = *pm_sim_counters(sim);
	pm_sim_free(sim);
	return c;
}

static const char *report_of(const struct pm_config *cfg,
			     const struct pm_counters *c, const struct pm_times *t)
{
	static char buf[4096];

	if (pm_report_format(buf, sizeof(buf), cfg, c, t) < 0)
		return "(format failed)";
	return buf;
}

static const struct pm_times zero_times;

/* ---- Runs ---- */

/* The 000 article's configuration: the counts the real postmark printed. */
TEST(postmark_sim_reference_run)
{
	struct pm_config cfg = cfg_of("set read 4096\nset write 4096\n"
				      "set transactions 10000\nset size 500 500000\n"
				      "set number 5000");
	struct pm_counters c;
	struct tally t;
	char mb[32];

	c = run_cfg(&cfg, &t);
	CHECK(t.bad == 0);
	CHECK(c.created == 9950 && c.created_alone == 5000);
	CHECK(c.created - c.created_alone == 4950);
	CHECK(c.read == 5026);
	CHECK(c.appended == 4974);
	CHECK(c.deleted == 9950 && c.deleted_alone == 4900);
	CHECK(c.deleted - c.deleted_alone == 5050);
	CHECK(c.transactions_done == 10000 && !c.out_of_files);
	snprintf(mb, sizeof(mb), "%.2f", (double)(c.bytes_read / 1048576.0f));
	CHECK_STREQ(mb, "1396.61");
	snprintf(mb, sizeof(mb), "%.2f", (double)(c.bytes_written / 1048576.0f));
	CHECK_STREQ(mb, "2861.03");
	CHECK(strstr(report_of(&cfg, &c, &zero_times),
		     "\n\t1396.61 megabytes read (1396.61 megabytes per second)\n"
		     "\t2861.03 megabytes written (2861.03 megabytes per second)\n"));
	CHECK(t.ops[PM_OP_TX_BEGIN] == 10000 && t.ops[PM_OP_TX_END] == 10000);
	CHECK(t.nphases == 4 && t.phases[0] == PM_PHASE_CREATE &&
	      t.phases[1] == PM_PHASE_TRANSACTIONS &&
	      t.phases[2] == PM_PHASE_DELETE && t.phases[3] == PM_PHASE_DONE);
}

/* Both reports, character for character as the real postmark printed them
 * for this configuration in a run that took under a second. */
TEST(postmark_report_small_run_exact)
{
	struct pm_config cfg = cfg_of("set location /x\nset number 50\n"
				      "set transactions 100\nset size 500 2000");
	struct pm_counters c;
	struct tally t;

	c = run_cfg(&cfg, &t);
	CHECK(t.bad == 0);
	CHECK_STREQ(report_of(&cfg, &c, &zero_times),
		    "Time:\n"
		    "\t1 seconds total\n"
		    "\t1 seconds of transactions (100 per second)\n"
		    "\n"
		    "Files:\n"
		    "\t95 created (95 per second)\n"
		    "\t\tCreation alone: 50 files (50 per second)\n"
		    "\t\tMixed with transactions: 45 files (45 per second)\n"
		    "\t53 read (53 per second)\n"
		    "\t47 appended (47 per second)\n"
		    "\t95 deleted (95 per second)\n"
		    "\t\tDeletion alone: 40 files (40 per second)\n"
		    "\t\tMixed with transactions: 55 files (55 per second)\n"
		    "\n"
		    "Data:\n"
		    "\t72.53 kilobytes read (72.53 kilobytes per second)\n"
		    "\t126.87 kilobytes written (126.87 kilobytes per second)\n");
	cfg.report = PM_REPORT_TERSE;
	CHECK_STREQ(report_of(&cfg, &c, &zero_times),
		    "1 1 100.00 95.00 50.00 45.00 53.00 47.00 95.00 40.00 55.00 "
		    "74273.00 129916.00\n");
}

/* Creations beyond the 2N slots do nothing. Real postmark, terse:
 * 1 1 200.00 40.00 20.00 20.00 111.00 76.00 40.00 40.00 0.00 8329.00 3542.00 */
TEST(postmark_sim_table_full)
{
	struct pm_config cfg = cfg_of("set location /x\nset bias create 10\n"
				      "set number 20\nset transactions 200\n"
				      "set size 10 100");
	struct pm_counters c;
	struct tally t;

	c = run_cfg(&cfg, &t);
	CHECK(t.bad == 0);
	CHECK(c.created == 40 && c.created_alone == 20);
	CHECK(c.read == 111 && c.appended == 76);
	CHECK(c.deleted == 40 && c.deleted_alone == 40);
	CHECK(c.bytes_read == 8329.0f && c.bytes_written == 3542.0f);
	CHECK(t.table_full == 200 - 20);
	CHECK(t.ops[PM_OP_CREATE] == 200 + 20);
	CHECK(t.ops[PM_OP_DELETE] == 40);
}

/* A fixed size leaves appends nothing to do. Real postmark, terse:
 * 1 1 1000.00 577.00 100.00 477.00 509.00 0.00 577.00 54.00 523.00
 * 509000.00 577000.00 */
TEST(postmark_sim_fixed_size_appends_nothing)
{
	struct pm_config cfg = cfg_of("set location /x\nset size 1000\n"
				      "set number 100\nset transactions 1000");
	struct pm_counters c;
	struct tally t;

	CHECK(cfg.size_lo == 1000 && cfg.size_hi == 1000);
	c = run_cfg(&cfg, &t);
	CHECK(t.bad == 0);
	CHECK(c.created == 577 && c.read == 509 && c.appended == 0);
	CHECK(c.deleted == 577 && c.deleted_alone == 54);
	CHECK(c.bytes_read == 509000.0f && c.bytes_written == 577000.0f);
	CHECK(t.file_full == 1000 - 509);
	CHECK(t.ops[PM_OP_APPEND] == t.file_full);
}

/* Weighted locations and subdirectories draw in PostMark's order. Real
 * postmark, terse: 1 1 100.00 78.00 30.00 48.00 51.00 49.00 78.00 26.00
 * 52.00 327991.00 490963.00 */
TEST(postmark_sim_locations_subdirs)
{
	struct pm_config cfg = cfg_of("set location /x/a\nset number 30\n"
				      "set transactions 100\nset subdirectories 3\n"
				      "set location /x/a\nset location +/x/b 2");
	struct pm_counters c;
	struct tally t;

	CHECK(cfg.nloc == 2 && cfg.loc[1].weight == 2);
	c = run_cfg(&cfg, &t);
	CHECK(t.bad == 0);
	CHECK(c.created == 78 && c.read == 51 && c.appended == 49);
	CHECK(c.deleted == 78 && c.deleted_alone == 26);
	CHECK(c.bytes_read == 327991.0f && c.bytes_written == 490963.0f);
}

/* Where files go: every location and subdirectory gets some, in proportion. */
TEST(postmark_sim_location_spread)
{
	struct pm_config cfg = cfg_of("set location /a 1\nset location +/b 3\n"
				      "set subdirectories 4\nset number 20000\n"
				      "set transactions 10");
	struct pm_sim *sim = pm_sim_new(&cfg, err, sizeof(err));
	int per_loc[2] = { 0 }, per_sub[4] = { 0 };
	struct pm_op op;

	CHECK(sim != NULL);
	while (sim && pm_sim_next(sim, &op)) {
		if (op.kind != PM_OP_CREATE || op.phase != PM_PHASE_CREATE)
			continue;
		per_loc[op.loc]++;
		per_sub[op.subdir]++;
	}
	pm_sim_free(sim);
	CHECK(per_loc[0] > 4500 && per_loc[0] < 5500);
	CHECK(per_loc[1] > 14500 && per_loc[1] < 15500);
	CHECK(per_sub[0] > 4500 && per_sub[3] > 4500);
}

/* Deleting every transaction empties the pool after 20 transactions. */
TEST(postmark_sim_out_of_files)
{
	struct pm_config cfg = cfg_of("set bias create 0\nset number 20\n"
				      "set transactions 1000");
	struct pm_counters c;
	struct tally t;

	c = run_cfg(&cfg, &t);
	CHECK(t.bad == 0);
	CHECK(c.out_of_files == 1);
	CHECK(c.transactions_done == 20);
	CHECK(t.ops[PM_OP_OUT_OF_FILES] == 1);
	CHECK(c.created == 20 && c.deleted == 20 && c.deleted_alone == 0);
	CHECK(c.read + c.appended == 20);
	/* The delete and done phases still follow (PostMark still times them). */
	CHECK(t.nphases == 4 && t.phases[3] == PM_PHASE_DONE);
	CHECK(strstr(pm_out_of_files_msg, "out of files!\n") == pm_out_of_files_msg);
}

/* Fewer than 10 transactions: PostMark divides by T/10 and dies; the model
 * runs the T transactions like any others. */
TEST(postmark_sim_few_transactions)
{
	int n;

	for (n = 1; n < 10; n++) {
		struct pm_config cfg = cfg_of("set number 5");
		struct pm_counters c;
		struct tally t;

		cfg.transactions = n;
		c = run_cfg(&cfg, &t);
		CHECK(t.bad == 0);
		CHECK(c.transactions_done == n);
		CHECK(t.ops[PM_OP_TX_BEGIN] == n && t.ops[PM_OP_TX_END] == n);
		CHECK(c.read + c.appended == n);
		CHECK(t.ops[PM_OP_CREATE] + t.ops[PM_OP_DELETE] == 5 + n + c.deleted_alone);
	}
}

/* A bias of -1 takes that half out of every transaction. */
TEST(postmark_sim_biases_disabled)
{
	struct pm_config cfg = cfg_of("set bias read -1\nset bias create -1\n"
				      "set number 10\nset transactions 50");
	struct pm_counters c;
	struct tally t;

	c = run_cfg(&cfg, &t);
	CHECK(t.bad == 0);
	CHECK(c.created == 10 && c.deleted == 10 && c.deleted_alone == 10);
	CHECK(c.read == 0 && c.appended == 0 && c.bytes_read == 0.0f);
	CHECK(t.ops[PM_OP_TX_BEGIN] == 50);
	CHECK(t.ops[PM_OP_CREATE] == 10);
	CHECK(strstr(report_of(&cfg, &c, &zero_times),
		     "\t0.000000 bytes read (0.000000 bytes per second)\n"));
}

/* The text: 2H printable bytes, the same for a seed whatever else is set. */
TEST(postmark_sim_text)
{
	struct pm_config cfg;
	struct pm_sim *sim;
	const char *text;
	size_t len, i;
	int ok = 1;

	pm_config_default(&cfg);
	sim = pm_sim_new(&cfg, err, sizeof(err));
	CHECK(sim != NULL);
	if (!sim)
		return;
	text = pm_sim_text(sim, &len);
	CHECK(len == 20000);
	/* 32 + output % 95 of the first 16 seed-42 outputs (the Python model). */
	CHECK(!memcmp(text, "LeZebJ6S5~qPv$C$", 16));
	for (i = 0; i < len; i++)
		ok &= text[i] >= 32 && text[i] <= 126;
	CHECK(ok);
	CHECK(pm_sim_config(sim)->size_hi == 10000);
	pm_sim_free(sim);
}

/* A freed slot is reused: the cursor first, then the first hole. */
TEST(postmark_sim_slot_reuse)
{
	struct pm_config cfg = cfg_of("set number 50\nset transactions 2000\n"
				      "set size 10 20\nset bias create 6");
	struct pm_sim *sim = pm_sim_new(&cfg, err, sizeof(err));
	int live[100] = { 0 }, bad = 0, creates = 0, holes = 0;
	struct pm_op op;

	while (sim && pm_sim_next(sim, &op)) {
		if (op.kind == PM_OP_CREATE && !(op.flags & PM_OPF_TABLE_FULL)) {
			bad += live[op.slot];
			live[op.slot] = op.name;
			creates++;
			/* The first 50 go to slots 0 .. 49. */
			if (op.phase == PM_PHASE_CREATE)
				bad += op.slot != op.name - 1;
			holes += op.slot < 50 && op.phase != PM_PHASE_CREATE;
		} else if (op.kind == PM_OP_DELETE) {
			bad += live[op.slot] != op.name;
			live[op.slot] = 0;
		} else if (op.kind == PM_OP_READ || op.kind == PM_OP_APPEND) {
			bad += live[op.slot] != op.name;
		}
	}
	CHECK(bad == 0);
	CHECK(creates == 866);	/* pm-sim, and postmark, agree */
	CHECK(holes > 100);
	CHECK(sim && !pm_sim_counters(sim)->out_of_files);
	pm_sim_free(sim);
}

TEST(postmark_sim_new_rejects_bad_config)
{
	struct pm_config cfg;

	pm_config_default(&cfg);
	cfg.number = 0;
	err[0] = '\0';
	CHECK(pm_sim_new(&cfg, err, sizeof(err)) == NULL);
	CHECK_ERRLINE(err, "set number");
}

/* ---- Reports ---- */

TEST(postmark_report_arithmetic)
{
	struct pm_config cfg;
	struct pm_counters c = {
		.created = 9950, .created_alone = 5000, .read = 5026,
		.appended = 4974, .deleted = 9950, .deleted_alone = 4900,
		.bytes_read = 3145728.0f, .bytes_written = 1048576.0f,
		.transactions_done = 1000,
	};
	/* 12 s in all, 3 creating, 7 in transactions, 2 deleting. */
	struct pm_times t = { .start = 100, .tx_start = 103, .tx_end = 110, .end = 112 };

	pm_config_default(&cfg);
	cfg.transactions = 1000;
	/* Worked out by hand: truncated quotients; 3 MiB / 12 s is 0.25 MiB
	 * so kilobytes; exactly 1 MiB is not above 1 MiB. */
	CHECK_STREQ(report_of(&cfg, &c, &t),
		    "Time:\n"
		    "\t12 seconds total\n"
		    "\t7 seconds of transactions (142 per second)\n"
		    "\n"
		    "Files:\n"
		    "\t9950 created (829 per second)\n"
		    "\t\tCreation alone: 5000 files (1666 per second)\n"
		    "\t\tMixed with transactions: 4950 files (707 per second)\n"
		    "\t5026 read (718 per second)\n"
		    "\t4974 appended (710 per second)\n"
		    "\t9950 deleted (829 per second)\n"
		    "\t\tDeletion alone: 4900 files (2450 per second)\n"
		    "\t\tMixed with transactions: 5050 files (721 per second)\n"
		    "\n"
		    "Data:\n"
		    "\t3.00 megabytes read (256.00 kilobytes per second)\n"
		    "\t1024.00 kilobytes written (85.33 kilobytes per second)\n");
	cfg.report = PM_REPORT_TERSE;
	/* 1048576 / 12 in single precision is 87381.3359375. */
	CHECK_STREQ(report_of(&cfg, &c, &t),
		    "12 7 142.86 829.17 1666.67 707.14 718.00 710.57 829.17 "
		    "2450.00 721.43 262144.00 87381.34\n");
}

/* Zero intervals count as 1 s; so do clocks that did not move at all. */
TEST(postmark_report_zero_intervals)
{
	struct pm_config cfg;
	struct pm_counters c = { .created = 7, .created_alone = 7, .deleted = 7,
				 .deleted_alone = 7, .bytes_written = 1.0f,
				 .transactions_done = 500 };
	struct pm_times t = { 5, 5, 5, 5 };
	const char *r;

	pm_config_default(&cfg);
	cfg.report = PM_REPORT_TERSE;
	CHECK_STREQ(report_of(&cfg, &c, &t),
		    "1 1 500.00 7.00 7.00 0.00 0.00 0.00 7.00 7.00 0.00 0.00 1.00\n");
	cfg.report = PM_REPORT_VERBOSE;
	r = report_of(&cfg, &c, &t);
	CHECK(strstr(r, "\t1 seconds total\n\t1 seconds of transactions (500 per second)\n"));
	/* One byte is a (small) number of kilobytes; none is "bytes". */
	CHECK(strstr(r, "\t0.000000 bytes read (0.000000 bytes per second)\n"
		     "\t0.00 kilobytes written (0.00 kilobytes per second)\n"));
}

/* Float counters: sums beyond 2^24 round like PostMark's. */
TEST(postmark_report_float_counters)
{
	struct pm_config cfg;
	struct pm_counters c = { 0 };
	const char *r;
	int i;

	pm_config_default(&cfg);
	c.bytes_read = 16777216.0f;
	for (i = 0; i < 100; i++)
		c.bytes_read += (float)1;	/* each addition is lost */
	CHECK(c.bytes_read == 16777216.0f);
	c.bytes_written = 1048577.0f;
	r = report_of(&cfg, &c, &zero_times);
	CHECK(strstr(r, "\t16.00 megabytes read (16.00 megabytes per second)\n"));
	CHECK(strstr(r, "\t1.00 megabytes written (1.00 megabytes per second)\n"));
}

TEST(postmark_report_buffer_and_file)
{
	struct pm_config cfg;
	struct pm_counters c = { .created = 1 };
	char small[10], *big;
	int n;
	FILE *fp;
	size_t got;

	pm_config_default(&cfg);
	n = pm_report_format(small, sizeof(small), &cfg, &c, &zero_times);
	CHECK(n > 300);
	CHECK(strlen(small) == sizeof(small) - 1);
	CHECK(pm_report_format(NULL, 0, &cfg, &c, &zero_times) == n);
	big = malloc(n + 1);
	fp = tmpfile();
	CHECK(big && fp);
	if (!big || !fp)
		return;
	CHECK(pm_report_write(fp, &cfg, &c, &zero_times) == 0);
	rewind(fp);
	got = fread(big, 1, n + 1, fp);
	CHECK(got == (size_t)n);
	big[got] = '\0';
	CHECK_STREQ(big, report_of(&cfg, &c, &zero_times));
	fclose(fp);
	free(big);
}

/* ---- Configuration ---- */

static enum pm_cmd line(struct pm_config *cfg, const char *text, int lineno)
{
	err[0] = '\0';
	return pm_config_parse_line(cfg, text, lineno, err, sizeof(err));
}

TEST(postmark_config_defaults)
{
	struct pm_config cfg;

	pm_config_default(&cfg);
	CHECK(cfg.size_lo == 500 && cfg.size_hi == 10000);
	CHECK(cfg.number == 500 && cfg.transactions == 500 && cfg.seed == 42);
	CHECK(cfg.read_block == 512 && cfg.write_block == 512);
	CHECK(cfg.buffered == 1 && cfg.bias_read == 5 && cfg.bias_create == 5);
	CHECK(cfg.subdirs == 0 && cfg.nloc == 0);
	CHECK(cfg.report == PM_REPORT_VERBOSE);
	CHECK(pm_config_check(&cfg, err, sizeof(err)) == 0);
}

TEST(postmark_config_parse_settings)
{
	struct pm_config cfg;

	pm_config_default(&cfg);
	CHECK(line(&cfg, "set size 100 2000\n", 1) == PM_CMD_NONE);
	CHECK(cfg.size_lo == 100 && cfg.size_hi == 2000);
	CHECK(line(&cfg, "set number 77", 2) == PM_CMD_NONE && cfg.number == 77);
	CHECK(line(&cfg, "set seed 2147483647", 3) == PM_CMD_NONE &&
	      cfg.seed == 2147483647u);
	CHECK(line(&cfg, "set transactions 12\r\n", 4) == PM_CMD_NONE &&
	      cfg.transactions == 12);
	CHECK(line(&cfg, "set subdirectories 5", 5) == PM_CMD_NONE && cfg.subdirs == 5);
	CHECK(line(&cfg, "set read 4096", 6) == PM_CMD_NONE && cfg.read_block == 4096);
	CHECK(line(&cfg, "  set\twrite   1  ", 7) == PM_CMD_NONE && cfg.write_block == 1);
	CHECK(line(&cfg, "set buffering false", 8) == PM_CMD_NONE && cfg.buffered == 0);
	CHECK(line(&cfg, "set buffering true", 9) == PM_CMD_NONE && cfg.buffered == 1);
	CHECK(line(&cfg, "set bias read -1", 10) == PM_CMD_NONE && cfg.bias_read == -1);
	CHECK(line(&cfg, "set bias create 10", 11) == PM_CMD_NONE &&
	      cfg.bias_create == 10);
	CHECK(line(&cfg, "set report terse", 12) == PM_CMD_NONE &&
	      cfg.report == PM_REPORT_TERSE);
	CHECK(line(&cfg, "set report verbose", 13) == PM_CMD_NONE &&
	      cfg.report == PM_REPORT_VERBOSE);
	CHECK(pm_config_check(&cfg, err, sizeof(err)) == 0);
}

/* PostMark's size rule: H missing, <= 0 or below L means fixed L. */
TEST(postmark_config_parse_size_quirks)
{
	struct pm_config cfg;

	pm_config_default(&cfg);
	CHECK(line(&cfg, "set size 700", 1) == PM_CMD_NONE);
	CHECK(cfg.size_lo == 700 && cfg.size_hi == 700);
	CHECK(line(&cfg, "set size 700 0", 1) == PM_CMD_NONE && cfg.size_hi == 700);
	CHECK(line(&cfg, "set size 700 -5", 1) == PM_CMD_NONE && cfg.size_hi == 700);
	CHECK(line(&cfg, "set size 700 699", 1) == PM_CMD_NONE && cfg.size_hi == 700);
	CHECK(line(&cfg, "set size 700 701", 1) == PM_CMD_NONE && cfg.size_hi == 701);
}

TEST(postmark_config_parse_locations)
{
	struct pm_config cfg;

	pm_config_default(&cfg);
	CHECK(line(&cfg, "set location /a", 1) == PM_CMD_NONE);
	CHECK(cfg.nloc == 1 && !strcmp(cfg.loc[0].path, "/a") && cfg.loc[0].weight == 1);
	CHECK(line(&cfg, "set location +/b 3", 2) == PM_CMD_NONE);
	CHECK(line(&cfg, "set location +/c\t7 ", 3) == PM_CMD_NONE);
	CHECK(cfg.nloc == 3 && !strcmp(cfg.loc[1].path, "/b") && cfg.loc[1].weight == 3);
	CHECK(!strcmp(cfg.loc[2].path, "/c") && cfg.loc[2].weight == 7);
	/* The last word is the weight, so a path may hold blanks before it. */
	CHECK(line(&cfg, "set location +/my dir 2", 4) == PM_CMD_NONE);
	CHECK(!strcmp(cfg.loc[3].path, "/my dir") && cfg.loc[3].weight == 2);
	CHECK(line(&cfg, "set location -/b", 5) == PM_CMD_NONE);
	CHECK(cfg.nloc == 3 && !strcmp(cfg.loc[1].path, "/c"));
	/* A plain set replaces the list. */
	CHECK(line(&cfg, "set location /z 4", 6) == PM_CMD_NONE);
	CHECK(cfg.nloc == 1 && !strcmp(cfg.loc[0].path, "/z") && cfg.loc[0].weight == 4);
	CHECK(line(&cfg, "set location -/z", 7) == PM_CMD_NONE && cfg.nloc == 0);
}

TEST(postmark_config_parse_commands)
{
	struct pm_config cfg, before;

	pm_config_default(&cfg);
	before = cfg;
	CHECK(line(&cfg, "run", 1) == PM_CMD_RUN);
	CHECK(line(&cfg, "run /tmp/report\n", 1) == PM_CMD_RUN);
	CHECK(line(&cfg, "show", 1) == PM_CMD_SHOW);
	CHECK(line(&cfg, "quit\n", 1) == PM_CMD_QUIT);
	CHECK(line(&cfg, "exit", 1) == PM_CMD_QUIT);
	CHECK(line(&cfg, "help", 1) == PM_CMD_NONE);
	CHECK(line(&cfg, "", 1) == PM_CMD_NONE);
	CHECK(line(&cfg, "   \t \n", 1) == PM_CMD_NONE);
	CHECK(line(&cfg, "# set number 3", 1) == PM_CMD_NONE);
	CHECK(line(&cfg, "  #comment", 1) == PM_CMD_NONE);
	CHECK(!memcmp(&cfg, &before, sizeof(cfg)));
}

/* @text on line 7 must fail with "line 7: @setting: ..." and change nothing. */
static int bad_line(const char *text, const char *setting)
{
	struct pm_config cfg, before;
	char want[128];
	int ok;

	pm_config_default(&cfg);
	line(&cfg, "set location /keep 2", 1);
	before = cfg;
	ok = line(&cfg, text, 7) == PM_CMD_ERROR;
	snprintf(want, sizeof(want), "line 7: %s: ", setting);
	ok &= !strncmp(err, want, strlen(want)) && strlen(err) > strlen(want);
	ok &= !strchr(err, '\n');
	ok &= !memcmp(&cfg, &before, sizeof(cfg));
	if (!ok)
		printf("  line \"%s\" gave \"%s\"\n", text, err);
	return ok;
}

TEST(postmark_config_parse_errors)
{
	char longpath[400], longline[1100];

	CHECK(bad_line("set size 0", "set size"));
	CHECK(bad_line("set size abc", "set size"));
	CHECK(bad_line("set size", "set size"));
	CHECK(bad_line("set size 10 20x", "set size"));
	CHECK(bad_line("set size 10 20 30", "set size"));
	CHECK(bad_line("set size 2000000000", "set size"));
	CHECK(bad_line("set number", "set number"));
	CHECK(bad_line("set number 0", "set number"));
	CHECK(bad_line("set number 5 6", "set number"));
	CHECK(bad_line("set seed 0", "set seed"));
	CHECK(bad_line("set seed 99999999999999999999", "set seed"));
	CHECK(bad_line("set transactions -1", "set transactions"));
	CHECK(bad_line("set subdirectories 0", "set subdirectories"));
	CHECK(bad_line("set read 0", "set read"));
	CHECK(bad_line("set write x", "set write"));
	CHECK(bad_line("set location", "set location"));
	CHECK(bad_line("set location +", "set location"));
	CHECK(bad_line("set location /a b", "set location"));
	CHECK(bad_line("set location /a 0", "set location"));
	CHECK(bad_line("set location /a 1000001", "set location"));
	CHECK(bad_line("set location -/absent", "set location"));
	memset(longpath, 'p', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	snprintf(longline, sizeof(longline), "set location %s", longpath);
	CHECK(bad_line(longline, "set location"));
	CHECK(bad_line("set buffering yes", "set buffering"));
	CHECK(bad_line("set buffering", "set buffering"));
	CHECK(bad_line("set bias read 11", "set bias read"));
	CHECK(bad_line("set bias create -2", "set bias create"));
	CHECK(bad_line("set bias create", "set bias create"));
	CHECK(bad_line("set bias sideways 1", "set bias"));
	CHECK(bad_line("set report brief", "set report"));
	CHECK(bad_line("set colour 3", "set colour"));
	CHECK(bad_line("set", "set"));
	CHECK(bad_line("frobnicate", "frobnicate"));
	CHECK(bad_line("load other.pmrc", "load"));
	CHECK(bad_line("!ls", "!ls"));
	CHECK(bad_line("quit now", "quit"));
	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	CHECK(bad_line(longline, "config"));
}

TEST(postmark_config_parse_too_many_locations)
{
	struct pm_config cfg;
	char text[64];
	int i;

	pm_config_default(&cfg);
	for (i = 0; i < PM_MAX_LOCATIONS; i++) {
		snprintf(text, sizeof(text), "set location +/d%d", i);
		CHECK(line(&cfg, text, i + 1) == PM_CMD_NONE);
	}
	CHECK(line(&cfg, "set location +/one-more", 40) == PM_CMD_ERROR);
	CHECK(!strncmp(err, "line 40: set location: ", 23));
	CHECK(cfg.nloc == PM_MAX_LOCATIONS);
	CHECK(pm_config_check(&cfg, err, sizeof(err)) == 0);
}

TEST(postmark_config_parse_no_lineno)
{
	struct pm_config cfg;

	pm_config_default(&cfg);
	CHECK(line(&cfg, "set number -3", 0) == PM_CMD_ERROR);
	CHECK_ERRLINE(err, "set number");
}

/* @cfg must fail pm_config_check() with a message naming @setting. */
static int bad_cfg(const struct pm_config *cfg, const char *setting)
{
	char want[64];

	err[0] = '\0';
	snprintf(want, sizeof(want), "%s: ", setting);
	if (pm_config_check(cfg, err, sizeof(err)) != -1 ||
	    strncmp(err, want, strlen(want)) || strchr(err, '\n')) {
		printf("  wanted a '%s' error, got \"%s\"\n", setting, err);
		return 0;
	}
	return 1;
}

TEST(postmark_config_check_errors)
{
	struct pm_config d, c;

	pm_config_default(&d);
#define BAD(field, value, setting)		\
	do {					\
		c = d;				\
		c.field = (value);		\
		CHECK(bad_cfg(&c, setting));	\
	} while (0)
	BAD(size_lo, 0, "set size");
	BAD(size_lo, 10001, "set size");	/* above size_hi 10000: inverted */
	BAD(size_hi, 0, "set size");
	BAD(size_hi, PM_MAX_SIZE + 1, "set size");
	BAD(number, 0, "set number");
	BAD(number, -4, "set number");
	BAD(number, PM_MAX_NUMBER + 1, "set number");
	BAD(transactions, 0, "set transactions");
	BAD(transactions, -10, "set transactions");
	BAD(transactions, INT_MAX, "set transactions");	/* + number overflows */
	BAD(seed, 0, "set seed");
	BAD(seed, 0x80000000u, "set seed");
	BAD(read_block, 0, "set read");
	BAD(write_block, -1, "set write");
	BAD(bias_read, -2, "set bias read");
	BAD(bias_read, 11, "set bias read");
	BAD(bias_create, 11, "set bias create");
	BAD(subdirs, -1, "set subdirectories");
	BAD(subdirs, PM_MAX_SUBDIRS + 1, "set subdirectories");
	BAD(nloc, PM_MAX_LOCATIONS + 1, "set location");
	BAD(report, 7, "set report");
#undef BAD
	c = d;
	c.nloc = 1;		/* an empty path */
	CHECK(bad_cfg(&c, "set location"));
	strcpy(c.loc[0].path, "/x");
	c.loc[0].weight = 0;
	CHECK(bad_cfg(&c, "set location"));
	c.loc[0].weight = PM_MAX_WEIGHT + 1;
	CHECK(bad_cfg(&c, "set location"));
	memset(c.loc[0].path, 'a', PM_LOCATION_LEN);	/* no NUL */
	c.loc[0].weight = 1;
	CHECK(bad_cfg(&c, "set location"));
	/* The extremes that are fine. */
	c = d;
	c.size_lo = c.size_hi = 1;
	c.bias_read = -1;
	c.bias_create = 10;
	c.subdirs = PM_MAX_SUBDIRS;
	CHECK(pm_config_check(&c, err, sizeof(err)) == 0);
}

/* High-resolution reports: PostMark's lines, real quotients, rounded seconds. */
TEST(postmark_report_ns)
{
	struct pm_config cfg;
	char buf[4096];
	struct pm_counters c = { .created = 30, .created_alone = 20, .read = 5,
				 .appended = 5, .deleted = 30, .deleted_alone = 25,
				 .bytes_read = 2048.0f, .bytes_written = 4096.0f,
				 .transactions_done = 10 };
	/* 0.25 s creating, 0.5 s of transactions, 0.25 s deleting */
	struct pm_times_ns t = { 1000000000ULL, 1250000000ULL, 1750000000ULL, 2000000000ULL };

	pm_config_default(&cfg);
	CHECK(pm_report_format_ns(buf, sizeof(buf), &cfg, &c, &t) > 0);
	CHECK(strstr(buf, "\t1 seconds total\n\t1 seconds of transactions (20 per second)\n"));
	CHECK(strstr(buf, "\t30 created (30 per second)\n\t\tCreation alone: 20 files (80 per second)\n"));
	CHECK(strstr(buf, "\t\tDeletion alone: 25 files (100 per second)\n"));
	CHECK(strstr(buf, "\t2.00 kilobytes read (2.00 kilobytes per second)\n"));
	cfg.report = PM_REPORT_TERSE;
	CHECK(pm_report_format_ns(buf, sizeof(buf), &cfg, &c, &t) > 0);
	CHECK_STREQ(buf, "1 1 20.00 30.00 80.00 20.00 10.00 10.00 30.00 100.00 10.00 2048.00 4096.00\n");
}

static uint32_t fixed_777(void *ctx, int name)
{
	(void)ctx;
	return name == 2 ? 0 : 777;	/* 0 is raised to 1 */
}

/* Sizer hook, early stop of the transactions, and the live-slot walk. */
TEST(postmark_sim_hooks)
{
	struct pm_config cfg;
	struct pm_sim *sim;
	struct pm_op op;
	char err[256];
	int creates = 0, tx_ends = 0, s, live = 0;

	pm_config_default(&cfg);
	cfg.number = 10;
	cfg.transactions = 1000;
	sim = pm_sim_new(&cfg, err, sizeof(err));
	CHECK(sim != NULL);
	pm_sim_set_sizer(sim, fixed_777, NULL);
	while (pm_sim_next(sim, &op)) {
		if (op.kind == PM_OP_CREATE && op.phase == PM_PHASE_CREATE) {
			CHECK(op.size == (op.name == 2 ? 1 : 777));
			creates++;
		}
		if (op.kind == PM_OP_TX_END && ++tx_ends == 3)
			pm_sim_stop_transactions(sim);
		if (op.kind == PM_OP_PHASE && op.phase == PM_PHASE_DELETE) {
			CHECK(tx_ends == 3);
			CHECK(pm_sim_counters(sim)->transactions_done == 3);
			for (s = 0; s < pm_sim_nslots(sim); s++)
				if (pm_sim_slot(sim, s, &op)) {
					CHECK(op.name > 0 && op.size >= 1);
					live++;
				}
			CHECK(live == pm_sim_live(sim));
			CHECK(!pm_sim_slot(sim, -1, &op) && !pm_sim_slot(sim, pm_sim_nslots(sim), &op));
		}
	}
	CHECK(creates == 10);
	CHECK(live > 0);
	pm_sim_free(sim);
}

/* ---- pm_location lists ---- */

TEST(postmark_locations_grammar)
{
	struct pm_config cfg;
	char err[256];

	pm_config_default(&cfg);
	CHECK(pm_parse_locations(&cfg, "/a@2:/b::/c\\:d@7:/e\\@5:/f\\\\g", err, sizeof(err)) == 0);
	CHECK(cfg.nloc == 5);
	CHECK_STREQ(cfg.loc[0].path, "/a");
	CHECK(cfg.loc[0].weight == 2);
	CHECK_STREQ(cfg.loc[1].path, "/b");
	CHECK(cfg.loc[1].weight == 1);
	CHECK_STREQ(cfg.loc[2].path, "/c:d");
	CHECK(cfg.loc[2].weight == 7);
	CHECK_STREQ(cfg.loc[3].path, "/e@5");	/* escaped: part of the name */
	CHECK(cfg.loc[3].weight == 1);
	CHECK_STREQ(cfg.loc[4].path, "/f\\g");
	CHECK(pm_parse_locations(&cfg, "", err, sizeof(err)) == 0 && cfg.nloc == 0);
	CHECK(pm_parse_locations(&cfg, NULL, err, sizeof(err)) == 0 && cfg.nloc == 0);
	/* an '@' inside a name, not followed by digits to the end, is an error */
	CHECK(pm_parse_locations(&cfg, "/x@y", err, sizeof(err)) == -1);
}

TEST(postmark_locations_errors_leave_config)
{
	static const char *const bad[] = {
		"/a@0", "/a@1000001", "/a@", "@3", "/a@x1", "/a@99999999999999999999",
	};
	struct pm_config cfg, before;
	char err[256];
	size_t i;

	pm_config_default(&cfg);
	CHECK(pm_parse_locations(&cfg, "/keep@3", err, sizeof(err)) == 0);
	before = cfg;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(pm_parse_locations(&cfg, bad[i], err, sizeof(err)) == -1);
		CHECK(strncmp(err, "pm_location: ", 13) == 0);
		CHECK(strchr(err, '\n') == NULL);
		CHECK(memcmp(&cfg, &before, sizeof(cfg)) == 0);
	}
}

TEST(postmark_locations_limits)
{
	struct pm_config cfg;
	char err[256], spec[PM_MAX_LOCATIONS * 4 + 8], longp[PM_LOCATION_LEN + 8];
	int i, n = 0;

	pm_config_default(&cfg);
	for (i = 0; i < PM_MAX_LOCATIONS; i++)
		n += sprintf(spec + n, "/%c:", 'a' + i % 26);
	CHECK(pm_parse_locations(&cfg, spec, err, sizeof(err)) == 0 && cfg.nloc == PM_MAX_LOCATIONS);
	strcpy(spec + n, "/z");
	CHECK(pm_parse_locations(&cfg, spec, err, sizeof(err)) == -1);
	CHECK(strstr(err, "more than") != NULL);
	memset(longp, 'x', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	CHECK(pm_parse_locations(&cfg, longp, err, sizeof(err)) == -1);
	CHECK(strstr(err, "longer than") != NULL);
}
