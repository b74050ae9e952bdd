/* Tests of the JSON-lines report writer (jsonl.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "test.h"
#include "jsonl.h"
#include "lathist.h"

TEST(jsonl_members_nesting_and_types)
{
	struct jsonl w = { 0 };

	jsonl_begin(&w);
	jsonl_str(&w, "engine", "smallfile");
	jsonl_u64(&w, "n", UINT64_MAX);
	jsonl_i64(&w, "d", -5);
	jsonl_bool(&w, "ok", 1);
	jsonl_obj(&w, "ops");
	jsonl_obj(&w, "read");
	jsonl_u64(&w, "ops", 3);
	jsonl_close(&w);
	jsonl_obj(&w, "empty");
	jsonl_close(&w);
	jsonl_close(&w);
	jsonl_arr(&w, "list");
	jsonl_str(&w, NULL, "a");
	jsonl_str(&w, NULL, NULL);
	jsonl_u64(&w, NULL, 7);
	jsonl_close(&w);
	CHECK(jsonl_end(&w) == 0);
	CHECK_STREQ(w.buf, "{\"engine\":\"smallfile\",\"n\":18446744073709551615,\"d\":-5,"
		    "\"ok\":true,\"ops\":{\"read\":{\"ops\":3},\"empty\":{}},"
		    "\"list\":[\"a\",null,7]}\n");
	CHECK(w.len == strlen(w.buf));
	jsonl_free(&w);
}

TEST(jsonl_escapes_whole_strings)
{
	struct jsonl w = { 0 };

	jsonl_begin(&w);
	jsonl_str(&w, "k\"ey", "a\"b\\c\n\t\x01\x7f d\xc3\xa9");
	CHECK(jsonl_end(&w) == 0);
	CHECK_STREQ(w.buf, "{\"k\\\"ey\":\"a\\\"b\\\\c\\u000a\\u0009\\u0001\\u007f d\xc3\xa9\"}\n");
	jsonl_free(&w);
}

TEST(jsonl_grows_and_drops_nothing)
{
	struct jsonl w = { 0 };
	size_t n = 300000, i;
	char *big = malloc(n + 1);

	CHECK(big != NULL);
	if (!big)
		return;
	for (i = 0; i < n; i++)
		big[i] = i % 97 == 0 ? '"' : 'x';
	big[n] = '\0';
	jsonl_begin(&w);
	jsonl_str(&w, "trace", big);
	jsonl_u64(&w, "after", 1);
	CHECK(jsonl_end(&w) == 0);
	/* every quote escaped, nothing cut, and the members after it are there */
	CHECK(w.len == strlen("{\"trace\":\"\",\"after\":1}\n") + n + (n + 96) / 97);
	CHECK_STREQ(w.buf + w.len - 13, "\",\"after\":1}\n");
	jsonl_free(&w);
	free(big);
}

TEST(jsonl_doubles_and_non_finite)
{
	struct jsonl w = { 0 };

	jsonl_begin(&w);
	jsonl_dbl(&w, "speed", 0.1);
	jsonl_dbl(&w, "inf", 1.0 / 0.0);
	jsonl_dbl(&w, "two", 2);
	jsonl_dbl(&w, "third", 1.0 / 3);
	CHECK(jsonl_end(&w) == 0);
	CHECK_STREQ(w.buf, "{\"speed\":0.1,\"inf\":null,\"two\":2,\"third\":0.3333333333333333}\n");
	jsonl_free(&w);
}

TEST(jsonl_unbalanced_or_too_deep_fails_whole)
{
	struct jsonl w = { 0 };
	int i;

	jsonl_begin(&w);
	jsonl_obj(&w, "open");
	CHECK(jsonl_end(&w) == -1);	/* an object left open */
	jsonl_begin(&w);
	jsonl_close(&w);		/* closing the outer one is jsonl_end's job */
	CHECK(jsonl_end(&w) == -1);
	jsonl_begin(&w);
	for (i = 0; i < JSONL_MAX_DEPTH; i++)
		jsonl_arr(&w, i ? NULL : "deep");
	CHECK(jsonl_end(&w) == -1);
	/* and a writer can be reused after a failure */
	jsonl_begin(&w);
	jsonl_u64(&w, "x", 1);
	CHECK(jsonl_end(&w) == 0);
	CHECK_STREQ(w.buf, "{\"x\":1}\n");
	jsonl_free(&w);
}

TEST(jsonl_latency_convention)
{
	struct jsonl w = { 0 };
	struct lathist *h = calloc(1, sizeof(*h));

	CHECK(h != NULL);
	if (!h)
		return;
	lathist_add(h, 1000);
	jsonl_begin(&w);
	jsonl_lat(&w, "lat", h);
	CHECK(jsonl_end(&w) == 0);
	CHECK_STREQ(w.buf, "{\"lat\":{\"n\":1,\"mean_ns\":1000,\"min_ns\":1000,\"p50_ns\":1000,"
		    "\"p90_ns\":1000,\"p99_ns\":1000,\"p99.9_ns\":1000,\"max_ns\":1000}}\n");
	jsonl_free(&w);
	free(h);
}

TEST(jsonl_latency_members_inline)
{
	struct jsonl w = { 0 };
	struct lathist *h = calloc(1, sizeof(*h));

	CHECK(h != NULL);
	if (!h)
		return;
	lathist_add(h, 2000);
	lathist_add(h, 2000);
	jsonl_begin(&w);
	jsonl_obj(&w, "data read");
	jsonl_u64(&w, "bytes", 16384);
	jsonl_lat_members(&w, h);
	jsonl_close(&w);
	CHECK(jsonl_end(&w) == 0);
	CHECK_STREQ(w.buf, "{\"data read\":{\"bytes\":16384,\"n\":2,\"mean_ns\":2000,\"min_ns\":2000,"
		    "\"p50_ns\":2000,\"p90_ns\":2000,\"p99_ns\":2000,\"p99.9_ns\":2000,\"max_ns\":2000}}\n");
	jsonl_free(&w);
	free(h);
}

TEST(jsonl_append_one_write_per_line)
{
	struct jsonl w = { 0 };
	char *path = test_tmpfile("", 0), err[256], buf[256];
	FILE *f;
	size_t n;

	jsonl_begin(&w);
	jsonl_str(&w, "job", "a");
	CHECK(jsonl_end(&w) == 0);
	CHECK(jsonl_append(&w, path, err, sizeof(err)) == 0);
	CHECK(jsonl_append(&w, path, err, sizeof(err)) == 0);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		CHECK_STREQ(buf, "{\"job\":\"a\"}\n{\"job\":\"a\"}\n");
	}
	CHECK(jsonl_append(&w, "/nonexistent-dir/x.json", err, sizeof(err)) == -1);
	CHECK_STREQ(err, "/nonexistent-dir/x.json: No such file or directory");
	jsonl_free(&w);
	test_rm(path);
}

/* The report file looked at before the run: nothing is created. */
TEST(jsonl_check_path_before_the_run)
{
	char dir[] = "/tmp/jsonl-XXXXXX", p[96], err[256];
	char *file = test_tmpfile("", 0);
	struct jsonl w = { 0 };
	struct stat st;

	CHECK(mkdtemp(dir) != NULL);
	CHECK(jsonl_check_path(file, err, sizeof(err)) == 0);
	/* a new name in a directory we may write: fine, and not made */
	snprintf(p, sizeof(p), "%s/ops.jsonl", dir);
	CHECK(jsonl_check_path(p, err, sizeof(err)) == 0);
	CHECK(stat(p, &st) == -1 && errno == ENOENT);
	CHECK(jsonl_check_path("ops-in-the-cwd.jsonl", err, sizeof(err)) == 0);
	CHECK(jsonl_check_path(dir, err, sizeof(err)) == -1);
	CHECK(strstr(err, ": is not a regular file") != NULL);
	snprintf(p, sizeof(p), "%s/no/ops.jsonl", dir);
	CHECK(jsonl_check_path(p, err, sizeof(err)) == -1);
	CHECK(strstr(err, "/no/ops.jsonl: No such file or directory") != NULL);
	snprintf(p, sizeof(p), "%s/ops.jsonl/x", file);
	CHECK(jsonl_check_path(p, err, sizeof(err)) == -1);
	CHECK(strstr(err, ": Not a directory") != NULL);
	/* a FIFO: refused; and written to at the end, it fails instead of blocking */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	CHECK(mkfifo(p, 0644) == 0);
	CHECK(jsonl_check_path(p, err, sizeof(err)) == -1);
	CHECK(strstr(err, "/fifo: is not a regular file") != NULL);
	jsonl_begin(&w);
	CHECK(jsonl_end(&w) == 0);
	CHECK(jsonl_append(&w, p, err, sizeof(err)) == -1);
	CHECK(strstr(err, "No such device or address") != NULL);
	jsonl_free(&w);
	unlink(p);
	rmdir(dir);
	test_rm(file);
}

TEST(jsonl_open_at_start_refuses_what_is_no_report)
{
	struct jsonl w = { 0 };
	char dir[] = "/tmp/jsonl-open.XXXXXX", path[64], fifo[64], buf[64], err[256];
	int fd, made = -1;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/r.jsonl", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	/* absent: created, and said so */
	fd = jsonl_open(path, &made, err, sizeof(err));
	CHECK(fd >= 0 && made == 1);
	jsonl_begin(&w);
	jsonl_str(&w, "job", "a");
	CHECK(jsonl_end(&w) == 0);
	CHECK(jsonl_write(&w, fd, path, err, sizeof(err)) == 0);
	close(fd);
	/* present: appended to, not made */
	fd = jsonl_open(path, &made, err, sizeof(err));
	CHECK(fd >= 0 && made == 0);
	CHECK(jsonl_write(&w, fd, path, err, sizeof(err)) == 0);
	close(fd);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
		fclose(f);
		CHECK_STREQ(buf, "{\"job\":\"a\"}\n{\"job\":\"a\"}\n");
	}
	/* a FIFO without a reader: refused at once, not a blocked open */
	CHECK(mkfifo(fifo, 0644) == 0);
	CHECK(jsonl_open(fifo, &made, err, sizeof(err)) == -1);
	CHECK(strstr(err, "not a regular file") != NULL);
	CHECK(jsonl_open(dir, &made, err, sizeof(err)) == -1);
	CHECK(jsonl_open("/nonexistent-dir/x.json", &made, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "/nonexistent-dir/x.json: No such file or directory");
	jsonl_free(&w);
	unlink(fifo);
	unlink(path);
	rmdir(dir);
}
