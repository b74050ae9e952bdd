/*
 * libFuzzer target for every text the small-file engine parses from users:
 * size specs, size-distribution specs (including histogram files), content
 * specs, operation mixes and tree markers, plus the PostMark configuration
 * line parser (.pmrc files, as pmrc2fio reads them) and the postmark engine's
 * pm_location list. The input's first byte, modulo 8, picks the parser; the
 * rest, cut at its first NUL, is the text. Each parser must return cleanly,
 * with a one-line message on error, and never crash.
 *
 *   make fuzz FUZZ_SECONDS=60
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "units.h"
#include "sizedist.h"
#include "content.h"
#include "opmix.h"
#include "treemeta.h"
#include "tree.h"
#include "postmark.h"

static void check_err(const char *err)
{
	/* a message is one line */
	if (strchr(err, '\n'))
		abort();
}

static void fuzz_hist(const char *text, size_t len)
{
	char path[] = "/tmp/fuzz-hist-XXXXXX";
	char spec[64], err[512] = "";
	struct size_dist d;
	int fd = mkstemp(path);

	if (fd < 0)
		return;
	if (write(fd, text, len) == (ssize_t)len) {
		snprintf(spec, sizeof(spec), "hist:%s", path);
		if (size_dist_parse(&d, spec, "file_size_dist", err, sizeof(err)) == 0) {
			for (uint64_t u = 0; u < 64; u++)
				if (size_dist_sample(&d, u * 0x9e3779b97f4a7c15ULL) > size_dist_max(&d))
					abort();
			size_dist_free(&d);
		} else {
			check_err(err);
		}
	}
	close(fd);
	unlink(path);
}

/*
 * A .pmrc: each line through pm_config_parse_line() with its line number. A
 * bad line must leave the configuration byte for byte as it was and say
 * "line N: ..." in one line; a good one must leave a configuration that
 * pm_config_check() judges without crashing.
 */
static void fuzz_pmrc(char *text)
{
	struct pm_config cfg, before;
	char err[512], prefix[32];
	char *line, *rest = text;
	int lineno = 0;
	enum pm_cmd cmd;

	pm_config_default(&cfg);
	while ((line = strsep(&rest, "\n"))) {
		memcpy(&before, &cfg, sizeof(cfg));
		err[0] = '\0';
		cmd = pm_config_parse_line(&cfg, line, ++lineno, err, sizeof(err));
		if (cmd == PM_CMD_ERROR) {
			check_err(err);
			snprintf(prefix, sizeof(prefix), "line %d: ", lineno);
			if (strncmp(err, prefix, strlen(prefix)))
				abort();
			if (memcmp(&before, &cfg, sizeof(cfg)))
				abort();
			continue;
		}
		if (cmd < PM_CMD_NONE || cmd > PM_CMD_QUIT)
			abort();
		if (cfg.nloc < 0 || cfg.nloc > PM_MAX_LOCATIONS)
			abort();
		if (pm_config_check(&cfg, err, sizeof(err)))
			check_err(err);
		if (cmd == PM_CMD_QUIT)
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512] = "", buf[512];
	char *text;
	uint64_t v;

	if (size < 1)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';

	switch (data[0] % 8) {
	case 0:
		parse_size(text, &v);
		break;
	case 1: {
		struct size_dist d;

		if (size_dist_parse(&d, text, "file_size_dist", err, sizeof(err)) == 0) {
			size_dist_describe(&d, buf, sizeof(buf));
			for (uint64_t u = 0; u < 64; u++)
				if (size_dist_sample(&d, u * 0xbf58476d1ce4e5b9ULL) > size_dist_max(&d))
					abort();
			size_dist_free(&d);
		} else {
			check_err(err);
		}
		break;
	}
	case 2: {
		struct content_spec c;

		if (content_parse(&c, text, "file_content", err, sizeof(err)) == 0)
			content_describe(&c, buf, sizeof(buf));
		else
			check_err(err);
		break;
	}
	case 3: {
		struct op_mix m;

		if (op_mix_parse(&m, text, "file_op", err, sizeof(err)) == 0) {
			op_mix_describe(&m, buf, sizeof(buf));
			if (op_mix_pick(&m, 0xffffffffu) >= FOP_NR)
				abort();
		} else {
			check_err(err);
		}
		break;
	}
	case 4: {
		unsigned long long ino;

		treemeta_compare(text, TREEMETA_MAGIC "\ntree_files=1\n", err, sizeof(err));
		treemeta_dir_inode(text, &ino);
		break;
	}
	case 5:
		fuzz_hist(text, strlen(text));
		break;
	case 6:
		fuzz_pmrc(text);
		break;
	case 7: {
		/* the engine's pm_location list: errors leave the config as it was */
		struct pm_config cfg, before;
		int i;

		pm_config_default(&cfg);
		memcpy(&before, &cfg, sizeof(cfg));
		if (pm_parse_locations(&cfg, text, err, sizeof(err))) {
			check_err(err);
			if (memcmp(&before, &cfg, sizeof(cfg)))
				abort();
			break;
		}
		if (cfg.nloc < 0 || cfg.nloc > PM_MAX_LOCATIONS)
			abort();
		for (i = 0; i < cfg.nloc; i++)
			if (!cfg.loc[i].path[0] || cfg.loc[i].weight < 1 ||
			    cfg.loc[i].weight > PM_MAX_WEIGHT ||
			    strlen(cfg.loc[i].path) >= PM_LOCATION_LEN)
				abort();
		break;
	}
	}
	free(text);
	return 0;
}
