/*
 * libFuzzer target for the lines of the postmark engine's marker
 * (engines/lib/pmmarker.h), which anyone who can write in a location can
 * forge: the input is cut into 64-byte lines, each parsed. The parser must
 * never crash; a line it takes is exactly what pmm_format() writes for
 * what it read, and names something the engine makes (a file with a
 * number, in the location or an s<K>; a directory s<K>); a free line
 * starts with '-' or NUL.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iengines/lib \
 *       tests/fuzz/fuzz_pmmarker.c engines/lib/\*.c -lm -lz -o fuzz-pmmarker
 *   ./fuzz-pmmarker -max_total_time=60 tests/fuzz/corpus-pmmarker
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pmmarker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[PMM_REC_LEN], again[PMM_REC_LEN];
	struct pmm_rec r;
	size_t off;
	int ret;

	for (off = 0; off + PMM_REC_LEN <= size; off += PMM_REC_LEN) {
		memcpy(line, data + off, PMM_REC_LEN);
		ret = pmm_parse(line, &r);
		if (ret == 0 && line[0] != '-' && line[0] != '\0')
			abort();
		if (ret != 1)
			continue;
		pmm_format(again, &r);
		if (memcmp(again, line, PMM_REC_LEN))
			abort();
		if (r.kind == 'f' ? r.name <= 0 || r.subdir < -1
				  : r.kind != 'd' || r.name || r.subdir < 0)
			abort();
	}
	return 0;
}
