/*
 * pm-sim: what PostMark 1.53 would do with a configuration, without a
 * filesystem. Reads a PostMark configuration (a file, or stdin for "-" or no
 * argument) and at every `run` (or once at the end if there is none) prints
 * the report PostMark would print had every phase taken no time (so every
 * interval counts as 1 s), or PostMark's "out of files!" message instead.
 * With --ops, first one line per operation:
 *
 *   create|read|append|delete SLOT NAME LOCATION SUBDIR SIZE [table-full|file-full]
 *   phase create|transactions|delete|done, tx-begin N, tx-end N, out-of-files
 *
 * LOCATION and SUBDIR are indexes, -1 for none; `show` is ignored and the
 * report of `run FILE` goes to stdout too. Exit status 2 on a bad
 * configuration. Build: see the pm-sim target in the Makefile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postmark.h"

static const char *const kind_names[] = {
	[PM_OP_PHASE] = "phase",
	[PM_OP_TX_BEGIN] = "tx-begin",
	[PM_OP_TX_END] = "tx-end",
	[PM_OP_CREATE] = "create",
	[PM_OP_READ] = "read",
	[PM_OP_APPEND] = "append",
	[PM_OP_DELETE] = "delete",
	[PM_OP_OUT_OF_FILES] = "out-of-files",
};

static const char *const phase_names[] = {
	[PM_PHASE_CREATE] = "create",
	[PM_PHASE_TRANSACTIONS] = "transactions",
	[PM_PHASE_DELETE] = "delete",
	[PM_PHASE_DONE] = "done",
};

static void print_op(const struct pm_op *op)
{
	const char *k = kind_names[op->kind];

	switch (op->kind) {
	case PM_OP_PHASE:
		printf("%s %s\n", k, phase_names[op->phase]);
		return;
	case PM_OP_TX_BEGIN:
	case PM_OP_TX_END:
		printf("%s %d\n", k, op->tx);
		return;
	case PM_OP_OUT_OF_FILES:
		printf("%s\n", k);
		return;
	default:
		printf("%s %d %d %d %d %d%s\n", k, op->slot, op->name, op->loc,
		       op->subdir, op->size,
		       op->flags & PM_OPF_TABLE_FULL ? " table-full" :
		       op->flags & PM_OPF_FILE_FULL ? " file-full" : "");
	}
}

/* One run of @cfg; 0, or -1 after printing why it cannot run. */
static int run(const struct pm_config *cfg, int ops, const char *src)
{
	static const struct pm_times zero;
	const struct pm_counters *c;
	struct pm_sim *sim;
	struct pm_op op;
	char err[512];

	sim = pm_sim_new(cfg, err, sizeof(err));
	if (!sim) {
		fprintf(stderr, "pm-sim: %s: %s\n", src, err);
		return -1;
	}
	while (pm_sim_next(sim, &op))
		if (ops)
			print_op(&op);
	c = pm_sim_counters(sim);
	if (c->out_of_files)
		fputs(pm_out_of_files_msg, stdout);
	else
		pm_report_write(stdout, cfg, c, &zero);
	pm_sim_free(sim);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: pm-sim [--ops] [CONFIG|-]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *src = "-";
	struct pm_config cfg;
	int ops = 0, runs = 0, lineno = 0, argi;
	char *line = NULL, err[512];
	size_t cap = 0;
	FILE *in = stdin;
	enum pm_cmd cmd = PM_CMD_NONE;

	for (argi = 1; argi < argc && argv[argi][0] == '-' && argv[argi][1]; argi++) {
		if (strcmp(argv[argi], "--ops"))
			return usage();
		ops = 1;
	}
	if (argi < argc)
		src = argv[argi++];
	if (argi < argc)
		return usage();
	if (strcmp(src, "-")) {
		in = fopen(src, "r");
		if (!in) {
			perror(src);
			return 2;
		}
	}

	pm_config_default(&cfg);
	while (cmd != PM_CMD_QUIT && getline(&line, &cap, in) >= 0) {
		cmd = pm_config_parse_line(&cfg, line, ++lineno, err, sizeof(err));
		if (cmd == PM_CMD_ERROR) {
			fprintf(stderr, "pm-sim: %s: %s\n", src, err);
			return 2;
		}
		if (cmd == PM_CMD_RUN) {
			runs++;
			if (run(&cfg, ops, src))
				return 2;
		}
	}
	free(line);
	if (in != stdin)
		fclose(in);
	/* Like typing `run` at PostMark's prompt after loading the file. */
	if (!runs && run(&cfg, ops, src))
		return 2;
	return 0;
}
