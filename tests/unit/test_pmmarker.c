/* engines/lib/pmmarker: the postmark engine's marker and what it proves. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "pmmarker.h"
#include "target.h"
#include "test.h"

/* A fresh empty directory, open; its path in @path. */
static int scratch(char *path, size_t len)
{
	snprintf(path, len, "%s/unit-pmmarker.XXXXXX", target_tmpdir());
	if (!mkdtemp(path))
		return -1;
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(p); /* what cannot go stays in $TMPDIR */
	return 0;
}

static void rm_rf(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TEST(pmmarker_lines_round_trip_and_only_the_engines_parse)
{
	struct pmm_rec r = { 'f', 3, 117, 123456789, 1796522630143555725LL }, back;
	char line[PMM_REC_LEN], bad[PMM_REC_LEN];

	pmm_format(line, &r);
	CHECK(line[PMM_REC_LEN - 1] == '\n');
	CHECK(pmm_parse(line, &back) == 1);
	CHECK(back.kind == 'f' && back.subdir == 3 && back.name == 117 && back.ino == 123456789 &&
	      back.born_ns == r.born_ns);
	r = (struct pmm_rec){ 'd', 0, 0, 0, 5 };
	pmm_format(line, &r);
	CHECK(pmm_parse(line, &back) == 1 && back.kind == 'd' && back.ino == 0);

	/* free lines: a '-' over an old entry, or NUL bytes never written */
	memcpy(bad, line, sizeof(bad));
	bad[0] = '-';
	CHECK(pmm_parse(bad, &back) == 0);
	memset(bad, 0, sizeof(bad));
	CHECK(pmm_parse(bad, &back) == 0);

	/* anything else is not a line the engine writes */
	memcpy(bad, line, sizeof(bad));
	bad[0] = 'x';
	CHECK(pmm_parse(bad, &back) == -1);
	memcpy(bad, line, sizeof(bad));
	bad[PMM_REC_LEN - 1] = ' ';
	CHECK(pmm_parse(bad, &back) == -1);
	r = (struct pmm_rec){ 'f', -1, 17, 0, 5 };
	pmm_format(line, &r);
	memcpy(bad, line, sizeof(bad));
	bad[2] = '0'; /* "0      -1": another layout of the same numbers */
	CHECK(pmm_parse(bad, &back) == -1);
	r.name = 0; /* a file has a number */
	pmm_format(bad, &r);
	CHECK(pmm_parse(bad, &back) == -1);
	r = (struct pmm_rec){ 'd', -1, 0, 0, 5 }; /* a directory is an s<K> */
	pmm_format(bad, &r);
	CHECK(pmm_parse(bad, &back) == -1);
	r = (struct pmm_rec){ 'f', -2, 3, 0, 5 };
	pmm_format(bad, &r);
	CHECK(pmm_parse(bad, &back) == -1);
	/*
	 * a number wider than its field, the others moved to keep 64 bytes
	 * (found by fuzz_pmmarker): snprintf("%8d") would write it so, the
	 * engine never does
	 */
	memcpy(bad, "f 123456789  872525477                   17                    0",
	       PMM_REC_LEN);
	CHECK(pmm_parse(bad, &back) == -1);
}

TEST(pmmarker_format_writes_what_snprintf_would)
{
	static const struct pmm_rec recs[] = {
		{ 'f', -1, 1, 0, 0 },
		{ 'f', 16777215, 2147483647, UINT64_MAX, INT64_MAX },
		{ 'd', 0, 0, 1ULL << 63, -1796522630143555725LL },
		{ 'f', 7, 10, 9999999999ULL, INT64_MIN + 1 },
	};
	char line[PMM_REC_LEN], want[PMM_REC_LEN + 1];
	unsigned i;

	for (i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		const struct pmm_rec *r = &recs[i];

		snprintf(want, sizeof(want), "%c %8d %10d %20llu %20lld\n", r->kind, r->subdir,
			 r->name, (unsigned long long)r->ino, (long long)r->born_ns);
		pmm_format(line, r);
		CHECK(!memcmp(line, want, PMM_REC_LEN));
	}
}

TEST(pmmarker_lists_what_is_added_and_reads_it_back)
{
	char path[4096], err[256];
	struct pmm m, got;
	struct pmm_rec r = { 'f', -1, 0, 0, 42 };
	struct stat st;
	int dfd = scratch(path, sizeof(path)), i, idx[300];

	CHECK(dfd >= 0);
	if (dfd < 0)
		return;
	CHECK(pmm_read(dfd, &got, err, sizeof(err)) == 0); /* none yet */
	CHECK(pmm_create(dfd, &m, 10, 1) == 0);
	CHECK(fstatat(dfd, PMM_NAME, &st, 0) == 0 && st.st_size == PMM_HEAD_LEN + 64 * PMM_REC_LEN);
	CHECK(pmm_create(dfd, &got, 10, 0) == -EEXIST);
	/* past the first page of lines: the file grows */
	for (i = 0; i < 300; i++) {
		r.name = i + 1;
		idx[i] = pmm_add(&m, &r);
		CHECK(idx[i] >= 0);
	}
	CHECK(fstatat(dfd, PMM_NAME, &st, 0) == 0 &&
	      st.st_size == PMM_HEAD_LEN + 512 * PMM_REC_LEN);
	pmm_set_ino(&m, idx[7], 999);
	for (i = 0; i < 300; i += 2)
		pmm_drop(&m, idx[i]);
	CHECK(pmm_count(&m) == 150);
	/* a freed line is taken again */
	r.name = 1000;
	CHECK(pmm_add(&m, &r) == idx[298]);

	/* the next run's view: the file as the mapping left it */
	CHECK(pmm_read(dfd, &got, err, sizeof(err)) == 1);
	CHECK(got.made_dir == 1 && got.cap == 512 && pmm_count(&got) == 151);
	CHECK(pmm_get(&got, idx[7], &r) && r.name == 8 && r.ino == 999 && r.born_ns == 42);
	CHECK(!pmm_get(&got, idx[8], &r));
	pmm_close(&got);
	pmm_close(&m);
	close(dfd);
	rm_rf(path);
}

TEST(pmmarker_refuses_what_the_engine_did_not_write)
{
	char path[4096], other[4200], file[4200], err[256];
	struct pmm m;
	int dfd = scratch(path, sizeof(path)), fd;

	CHECK(dfd >= 0);
	if (dfd < 0)
		return;
	snprintf(file, sizeof(file), "%s/%s", path, PMM_NAME);
	snprintf(other, sizeof(other), "%s/elsewhere", path);

	/* an empty file, as a refused run of an old engine left */
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0644);
	close(fd);
	CHECK(pmm_read(dfd, &m, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "is not the engine's marker (0 bytes)");
	unlink(file);
	CHECK(mkdir(file, 0755) == 0);
	CHECK(pmm_read(dfd, &m, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "is a directory, not the engine's marker");
	rmdir(file);

	/* the engine's own, linked twice or reached through a symlink */
	CHECK(pmm_create(dfd, &m, 1, 0) == 0);
	pmm_close(&m);
	CHECK(link(file, other) == 0);
	CHECK(pmm_read(dfd, &m, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "has 2 links, not the engine's marker");
	unlink(file);
	CHECK(symlink(other, file) == 0);
	CHECK(pmm_read(dfd, &m, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "is a symlink, not the engine's marker");
	unlink(file);

	/* its head changed, or a line damaged */
	CHECK(rename(other, file) == 0);
	fd = open(file, O_WRONLY);
	CHECK(pwrite(fd, "fio postmark engine marker, format 3", 36, 0) == 36);
	CHECK(pmm_read(dfd, &m, err, sizeof(err)) == -1);
	CHECK(!strncmp(err, "is not the engine's marker (its first line: ", 44));
	CHECK(pwrite(fd, "fio postmark engine marker, format 2", 36, 0) == 36);
	CHECK(pmm_read(dfd, &m, err, sizeof(err)) == 1);
	pmm_close(&m);
	CHECK(pwrite(fd, "f 1 2 3 4\n", 10, PMM_HEAD_LEN + 3 * PMM_REC_LEN) == 10);
	CHECK(pmm_read(dfd, &m, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "is not the engine's marker (line 4 of its list)");
	close(fd);
	close(dfd);
	rm_rf(path);
}

TEST(pmmarker_identify_tells_the_engines_entry_from_another)
{
	char path[4096], why[128];
	struct pmm m;
	struct pmm_rec r = { 'f', -1, 17, 0, 0 };
	struct stat st;
	int dfd = scratch(path, sizeof(path)), fd;

	CHECK(dfd >= 0);
	if (dfd < 0)
		return;
	CHECK(pmm_create(dfd, &m, 1, 0) == 0);
	CHECK(pmm_identify(dfd, "17", &r, &m, why, sizeof(why)) == 0); /* not there */
	r.born_ns = pmm_now();
	fd = openat(dfd, "17", O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0 && fstat(fd, &st) == 0);
	close(fd);
	CHECK(pmm_identify(dfd, "17", &r, &m, why, sizeof(why)) == 1);
	r.ino = st.st_ino;
	CHECK(pmm_identify(dfd, "17", &r, &m, why, sizeof(why)) == 1);
	r.ino = st.st_ino + 1;
	CHECK(pmm_identify(dfd, "17", &r, &m, why, sizeof(why)) == -1);
	CHECK_STREQ(why, "has another inode");
	r.ino = st.st_ino;
	/* made long before or after the line that lists it */
	r.born_ns -= 10 * PMM_BORN_SLACK_NS;
	CHECK(pmm_identify(dfd, "17", &r, &m, why, sizeof(why)) == -1);
	r.born_ns += 20 * PMM_BORN_SLACK_NS;
	CHECK(pmm_identify(dfd, "17", &r, &m, why, sizeof(why)) == -1);
	r.born_ns -= 10 * PMM_BORN_SLACK_NS;
	CHECK(linkat(dfd, "17", dfd, "user-link", 0) == 0);
	CHECK(pmm_identify(dfd, "17", &r, &m, why, sizeof(why)) == -1);
	CHECK_STREQ(why, "has 2 links");
	unlinkat(dfd, "17", 0);
	CHECK(symlinkat("user-link", dfd, "17") == 0);
	CHECK(pmm_identify(dfd, "17", &r, &m, why, sizeof(why)) == -1);
	CHECK_STREQ(why, "is not a regular file");
	r.kind = 'd';
	CHECK(mkdirat(dfd, "s0", 0700) == 0);
	r = (struct pmm_rec){ 'd', 0, 0, 0, r.born_ns };
	CHECK(pmm_identify(dfd, "s0", &r, &m, why, sizeof(why)) == 1);
	pmm_close(&m);
	close(dfd);
	rm_rf(path);
}
