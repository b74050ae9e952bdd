/*
 * libFuzzer target for every text the small-file engine parses from users:
 * size specs, size-distribution specs (including histogram files), content
 * specs, operation mixes and tree markers. The input is split at the first
 * NUL-free byte 0x01 into a selector byte and the text; each parser must
 * return cleanly, with a one-line message on error, and never crash.
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

	switch (data[0] % 6) {
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
	case 4:
		treemeta_compare(text, TREEMETA_MAGIC "\ntree_files=1\n", err, sizeof(err));
		break;
	case 5:
		fuzz_hist(text, strlen(text));
		break;
	}
	free(text);
	return 0;
}
