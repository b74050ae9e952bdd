/* Tests of file size distributions (sizedist.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include "rng.h"
#include "sizedist.h"
#include "test.h"

#define NSAMPLES	100000
#define OPT		"file_size_dist"

static char err[512];

static int parse(struct size_dist *d, const char *spec)
{
	err[0] = '\0';
	return size_dist_parse(d, spec, OPT, err, sizeof(err));
}

/* The canonical text of @spec, or "(error: msg)". */
static const char *canon(const char *spec)
{
	static char buf[600];
	struct size_dist d;

	if (parse(&d, spec)) {
		snprintf(buf, sizeof(buf), "(error: %s)", err);
		return buf;
	}
	if (size_dist_describe(&d, buf, sizeof(buf)) < 0)
		snprintf(buf, sizeof(buf), "(describe failed)");
	size_dist_free(&d);
	return buf;
}

/* @spec must fail with a one-line message naming the option. */
static int bad(const char *spec)
{
	struct size_dist d;

	if (parse(&d, spec) != -1)
		return 0;
	CHECK_ERRLINE(err, OPT);
	return d.bins == NULL;
}

static uint64_t draw(const struct size_dist *d, uint64_t i)
{
	return size_dist_sample(d, hash_item(42, 1, i));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

TEST(sizedist_canonical_text)
{
	CHECK_STREQ(canon("4k"), "fixed:4096");
	CHECK_STREQ(canon("fixed:4096"), "fixed:4096");
	CHECK_STREQ(canon("fixed:4KiB"), "fixed:4096");
	CHECK_STREQ(canon("fixed:0"), "fixed:0");
	CHECK_STREQ(canon("0"), "fixed:0");
	CHECK_STREQ(canon("uniform:500:500000"), "uniform:500:500000");
	CHECK_STREQ(canon("uniform:1k:1m"), "uniform:1024:1048576");
	CHECK_STREQ(canon("uniform:4k:4096"), "fixed:4096");
	CHECK_STREQ(canon("uniform:0:0"), "fixed:0");
	CHECK_STREQ(canon("lognormal:8k:1.2"), "lognormal:8192:1.2:67108864");
	CHECK_STREQ(canon("lognormal:8k:1.2:16m"), "lognormal:8192:1.2:16777216");
	CHECK_STREQ(canon("lognormal:8192:1.20:16777216"), "lognormal:8192:1.2:16777216");
	CHECK_STREQ(canon("lognormal:1000:0.333333333"), "lognormal:1000:0.333333:67108864");
	CHECK_STREQ(canon("lognormal:1:0:1"), "lognormal:1:0:1");
	CHECK_STREQ(canon("lognormal:1t:1:2t"), "lognormal:1099511627776:1:2199023255552");
}

TEST(sizedist_error_messages)
{
	struct size_dist d;

	CHECK(bad("uniform:9000:500"));
	CHECK_STREQ(err, "file_size_dist: uniform range 9000:500 is inverted");
	CHECK(bad("gauss:1:2"));
	CHECK_STREQ(err, "file_size_dist: unknown distribution 'gauss' "
		    "(fixed, uniform, lognormal, hist)");
	CHECK(bad("gauss"));
	CHECK_STREQ(err, "file_size_dist: unknown distribution 'gauss' "
		    "(fixed, uniform, lognormal, hist)");
	CHECK(bad("hist:/nonexistent/x"));
	CHECK_STREQ(err, "file_size_dist: cannot read histogram /nonexistent/x: "
		    "No such file or directory");
	CHECK(bad("4q"));
	CHECK(strstr(err, "'4q'") != NULL);
	/* The option name comes from the caller. */
	CHECK(size_dist_parse(&d, "uniform:2:1", "other_opt", err, sizeof(err)) == -1);
	CHECK_STREQ(err, "other_opt: uniform range 2:1 is inverted");
	/* A short or absent error buffer is not overrun. */
	CHECK(size_dist_parse(&d, "uniform:2:1", OPT, err, 5) == -1);
	CHECK_STREQ(err, "file");
	CHECK(size_dist_parse(&d, "uniform:2:1", OPT, NULL, 0) == -1);
}

TEST(sizedist_rejects)
{
	CHECK(bad(NULL));
	CHECK(bad(""));
	CHECK(bad(" 4k"));
	CHECK(bad("4k "));
	CHECK(bad("-1"));
	CHECK(bad("4k\n"));
	CHECK(bad("fixed:"));
	CHECK(bad("fixed:-4"));
	CHECK(bad("fixed:1:2"));
	CHECK(bad("18446744073709551616"));
	CHECK(bad("16777216t"));
	CHECK(bad("99999999999999999999999999999999999999"));
	CHECK(bad("uniform:"));
	CHECK(bad("uniform:5"));
	CHECK(bad("uniform:5:"));
	CHECK(bad("uniform::5"));
	CHECK(bad("uniform:1:x"));
	CHECK(bad("uniform:1:2:3"));
	CHECK(bad("lognormal:"));
	CHECK(bad("lognormal:8k"));
	CHECK(bad("lognormal:8k:"));
	CHECK(bad("lognormal:8k:-1"));
	CHECK(bad("lognormal:8k:nan"));
	CHECK(bad("lognormal:8k:inf"));
	CHECK(bad("lognormal:8k:1e999"));
	CHECK(bad("lognormal:8k:1x"));
	CHECK(bad("lognormal:8k: 1"));
	CHECK(bad("lognormal:8k:101"));
	CHECK(bad("lognormal:0:1"));
	CHECK(bad("lognormal:8k:1:4k"));
	CHECK(bad("lognormal:128m:1"));
	CHECK(bad("lognormal:8k:1:x"));
	CHECK(bad("lognormal:8k:1:"));
	CHECK(bad("lognormal:8k:1:1m:2"));
	CHECK(bad("hist:"));
	CHECK(bad(":"));
	CHECK(bad("4k:"));
	CHECK(bad("Fixed:4k"));
	/* Control characters from the spec never split the message. */
	CHECK(bad("gau\nss"));
	CHECK(bad("uniform:1\r\n:2"));
}

TEST(sizedist_fixed_and_max)
{
	struct size_dist d;
	uint64_t i;
	int ok = 1;

	CHECK(parse(&d, "fixed:4k") == 0);
	CHECK(d.kind == SIZE_FIXED);
	for (i = 0; i < 1000; i++)
		ok &= draw(&d, i) == 4096;
	CHECK(ok);
	CHECK(size_dist_max(&d) == 4096);
	CHECK(size_dist_mean(&d) == 4096);
	CHECK(parse(&d, "uniform:10:20") == 0);
	CHECK(size_dist_max(&d) == 20);
	CHECK(size_dist_mean(&d) == 15);
	CHECK(parse(&d, "lognormal:8k:1:1m") == 0);
	CHECK(size_dist_max(&d) == 1048576);
}

TEST(sizedist_deterministic)
{
	struct size_dist a, b;
	uint64_t i;
	int same = 1, differ = 0;

	CHECK(parse(&a, "lognormal:8k:1.5") == 0);
	CHECK(parse(&b, "lognormal:8192:1.5:64m") == 0);
	for (i = 0; i < 10000; i++) {
		same &= draw(&a, i) == draw(&b, i);
		differ |= draw(&a, i) != draw(&a, i + 1);
		same &= size_dist_sample(&a, hash_item(7, 1, i)) ==
			size_dist_sample(&a, hash_item(7, 1, i));
	}
	CHECK(same);
	CHECK(differ);
}

TEST(sizedist_uniform_stats)
{
	struct size_dist d;
	uint64_t i, v, lo = UINT64_MAX, hi = 0;
	double sum = 0;
	int inrange = 1;

	CHECK(parse(&d, "uniform:500:500000") == 0);
	for (i = 0; i < NSAMPLES; i++) {
		v = draw(&d, i);
		inrange &= v >= 500 && v <= 500000;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		sum += v;
	}
	CHECK(inrange);
	/* Expected mean 250250, sd of the mean ~ 144000/sqrt(1e5) = 455. */
	CHECK(fabs(sum / NSAMPLES - 250250) < 2500);
	CHECK(lo < 500 + 100 && hi > 500000 - 100);

	/* Both ends of a tiny range are hit, nothing outside. */
	CHECK(parse(&d, "uniform:7:8") == 0);
	{
		int n7 = 0, n8 = 0;

		for (i = 0; i < 10000; i++) {
			v = draw(&d, i);
			n7 += v == 7;
			n8 += v == 8;
		}
		CHECK(n7 + n8 == 10000);
		CHECK(n7 > 4700 && n8 > 4700);
	}
	/* The full 64-bit range does not overflow. */
	CHECK(parse(&d, "uniform:0:18446744073709551615") == 0);
	CHECK(size_dist_sample(&d, UINT64_MAX) == UINT64_MAX);
	CHECK(size_dist_sample(&d, 0) == 0);
	CHECK(parse(&d, "uniform:1:18446744073709551615") == 0);
	CHECK(size_dist_sample(&d, 0) == 1);
}

static uint64_t samples[NSAMPLES];

TEST(sizedist_lognormal_median)
{
	static const char *const specs[] = {
		"lognormal:8k:1.2", "lognormal:100000:0.5", "lognormal:1m:2:1g",
	};
	static const double medians[] = { 8192, 100000, 1048576 };
	struct size_dist d;
	size_t k, i;

	for (k = 0; k < 3; k++) {
		CHECK(parse(&d, specs[k]) == 0);
		for (i = 0; i < NSAMPLES; i++)
			samples[i] = draw(&d, i);
		qsort(samples, NSAMPLES, sizeof(samples[0]), cmp_u64);
		CHECK(fabs(samples[NSAMPLES / 2] / medians[k] - 1) < 0.03);
	}
}

TEST(sizedist_lognormal_spread_and_mean)
{
	struct size_dist d;
	size_t i;
	double sum = 0, sumlog = 0, sumlog2 = 0, mean, var;

	/* The clamp is far away here: ln(size) is normal(ln 8192, 1.2). */
	CHECK(parse(&d, "lognormal:8k:1.2:1t") == 0);
	for (i = 0; i < NSAMPLES; i++) {
		double l = log((double)draw(&d, i));

		sumlog += l;
		sumlog2 += l * l;
	}
	mean = sumlog / NSAMPLES;
	var = sumlog2 / NSAMPLES - mean * mean;
	CHECK(fabs(mean - log(8192)) < 0.02);
	CHECK(fabs(sqrt(var) - 1.2) < 0.02);
	/* Unclamped mean is exp(mu + sigma^2/2). */
	CHECK(fabs(size_dist_mean(&d) / (8192 * exp(0.72)) - 1) < 0.001);

	/* Clamped: size_dist_mean agrees with the sample mean. */
	CHECK(parse(&d, "lognormal:8k:2:64k") == 0);
	for (i = 0; i < NSAMPLES; i++)
		sum += draw(&d, i);
	CHECK(fabs(size_dist_mean(&d) / (sum / NSAMPLES) - 1) < 0.03);

	/* Sigma 0 is a constant median; huge sigma stays finite. */
	CHECK(parse(&d, "lognormal:5000:0") == 0);
	CHECK(draw(&d, 1) == 5000 && draw(&d, 2) == 5000);
	CHECK(size_dist_mean(&d) == 5000);
	CHECK(parse(&d, "lognormal:5000:100") == 0);
	CHECK(isfinite(size_dist_mean(&d)));
	CHECK(size_dist_mean(&d) <= 64 << 20);
	CHECK(size_dist_sample(&d, 0) == 0);
	CHECK(size_dist_sample(&d, UINT64_MAX) == 64 << 20);
}

TEST(sizedist_lognormal_clamp)
{
	struct size_dist d;
	size_t i;
	int inrange = 1, at_max = 0;

	CHECK(parse(&d, "lognormal:8k:2:64k") == 0);
	for (i = 0; i < NSAMPLES; i++) {
		uint64_t v = draw(&d, i);

		inrange &= v <= 65536;
		at_max += v == 65536;
	}
	CHECK(inrange);
	/* P(X >= 64k) = P(Z > ln(8)/2 = 1.0397) = 0.1493. */
	CHECK(fabs(at_max / (double)NSAMPLES - 0.1493) < 0.006);
	/* Extreme bits give the ends, not garbage. */
	CHECK(size_dist_sample(&d, UINT64_MAX) == 65536);
	CHECK(size_dist_sample(&d, 0) < 100);
}

/* Parses a histogram file with @text; returns 0/-1 and leaves @d parsed. */
static int parse_hist_text(struct size_dist *d, const char *text, char **pathp)
{
	char spec[300];
	char *path = test_tmpfile(text, strlen(text));
	int r;

	snprintf(spec, sizeof(spec), "hist:%s", path);
	r = parse(d, spec);
	if (pathp)
		*pathp = path;
	else
		test_rm(path);
	return r;
}

static const char hist_lf[] =
	"# sizes of a mail spool\n"
	"\n"
	"100 200 1\n"
	"   # indented comment\n"
	"4096 3\n"
	"7 7 0\n"
	"\t1m  2m\t4\n";

static const char hist_crlf[] =
	"# sizes of a mail spool\r\n"
	"\r\n"
	"100 200 1\r\n"
	"   # indented comment\r\n"
	"4096 3\r\n"
	"7 7 0\r\n"
	"\t1m  2m\t4";

TEST(sizedist_hist_frequencies)
{
	struct size_dist d;
	size_t i;
	int n[3] = { 0 }, other = 0;
	double want_mean, sum2 = 0;

	CHECK(parse_hist_text(&d, hist_lf, NULL) == 0);
	CHECK(d.kind == SIZE_HIST);
	CHECK(d.nbins == 3);
	CHECK(size_dist_max(&d) == 2 << 20);
	for (i = 0; i < NSAMPLES; i++) {
		uint64_t v = draw(&d, i);

		if (v >= 100 && v <= 200)
			n[0]++;
		else if (v == 4096)
			n[1]++;
		else if (v >= 1 << 20 && v <= 2 << 20)
			n[2]++, sum2 += v;
		else
			other++;
	}
	CHECK(other == 0);
	CHECK(fabs(n[0] / (double)NSAMPLES - 1 / 8.0) < 0.01);
	CHECK(fabs(n[1] / (double)NSAMPLES - 3 / 8.0) < 0.01);
	CHECK(fabs(n[2] / (double)NSAMPLES - 4 / 8.0) < 0.01);
	/* Uniform inside the bin, independent of the bits that chose it. */
	CHECK(fabs(sum2 / n[2] / 1572864.5 - 1) < 0.01);
	want_mean = (150.0 * 1 + 4096.0 * 3 + (1572864.0 + 0.5) * 4) / 8;
	CHECK(fabs(size_dist_mean(&d) - want_mean) < 1e-6 * want_mean);
	size_dist_free(&d);
	CHECK(d.bins == NULL);
}

TEST(sizedist_hist_uniform_inside_bin)
{
	struct size_dist d;
	size_t i;
	double sum = 0;
	uint64_t lo = UINT64_MAX, hi = 0;

	CHECK(parse_hist_text(&d, "1000 2000 1\n", NULL) == 0);
	for (i = 0; i < NSAMPLES; i++) {
		uint64_t v = draw(&d, i);

		sum += v;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	CHECK(lo >= 1000 && lo < 1010 && hi <= 2000 && hi > 1990);
	CHECK(fabs(sum / NSAMPLES - 1500) < 5);
	size_dist_free(&d);
}

/* Description of a histogram given as text, or "" on error. */
static char *hist_canon(const char *text)
{
	struct size_dist d;
	char buf[64] = "";

	if (parse_hist_text(&d, text, NULL) == 0) {
		size_dist_describe(&d, buf, sizeof(buf));
		size_dist_free(&d);
	}
	return strdup(buf);
}

TEST(sizedist_hist_canonical)
{
	char *lf = hist_canon(hist_lf);
	char *crlf = hist_canon(hist_crlf);
	char *scaled = hist_canon("100 200 0.5\n4096 1.5\n1048576 2097152 2\n");
	char *other = hist_canon("100 201 1\n4096 3\n1m 2m 4\n");
	char *reordered = hist_canon("4096 3\n100 200 1\n1m 2m 4\n");

	CHECK(strlen(lf) == strlen("hist:") + 16);
	CHECK(!strncmp(lf, "hist:", 5));
	CHECK(strspn(lf + 5, "0123456789abcdef") == 16);
	CHECK_STREQ(crlf, lf);
	CHECK_STREQ(scaled, lf);
	CHECK(strcmp(other, lf) != 0);
	CHECK(strcmp(reordered, lf) != 0);
	CHECK(strcmp(other, "") != 0 && strcmp(reordered, "") != 0);
	free(lf);
	free(crlf);
	free(scaled);
	free(other);
	free(reordered);
}

/* A histogram file that must fail; the message must name it and @want. */
static int hist_bad(const char *text, const char *want)
{
	struct size_dist d;
	char *path;
	int ok;

	ok = parse_hist_text(&d, text, &path) == -1 && d.bins == NULL &&
	     strstr(err, path) != NULL && strstr(err, want) != NULL;
	CHECK_ERRLINE(err, OPT);
	if (!ok)
		printf("  message was: %s\n", err);
	test_rm(path);
	return ok;
}

TEST(sizedist_hist_errors)
{
	struct size_dist d;
	char *path, want[600];

	CHECK(parse_hist_text(&d, "# c\n1 2 3\n1 2 3 4\n", &path) == -1);
	snprintf(want, sizeof(want),
		 OPT ": %s line 3: expected 'LOW HIGH WEIGHT' or 'SIZE WEIGHT'", path);
	CHECK_STREQ(err, want);
	test_rm(path);

	CHECK(hist_bad("1 2\n500 100 1\n", "line 2"));
	CHECK(hist_bad("1 2\n500 100 1\n", "inverted"));
	CHECK(hist_bad("1\n", "line 1"));
	CHECK(hist_bad("\n\n\n1 2 3 4\n", "line 4"));
	CHECK(hist_bad("1 2\r\n\r\nx 2\r\n", "line 3"));
	CHECK(hist_bad("1 -2\n", "'-2'"));
	CHECK(hist_bad("1 nan\n", "'nan'"));
	CHECK(hist_bad("1 inf\n", "'inf'"));
	CHECK(hist_bad("1 1e999\n", "line 1"));
	CHECK(hist_bad("1 2x\n", "'2x'"));
	CHECK(hist_bad("4q 2\n", "'4q'"));
	CHECK(hist_bad("1 99999999999999999999999 2\n", "line 1"));
	CHECK(hist_bad("", "weight > 0"));
	CHECK(hist_bad("# only a comment\n\n", "weight > 0"));
	CHECK(hist_bad("1 0\n2 5 0\n", "weight > 0"));
	CHECK(hist_bad("1 1e308\n2 1e308\n", "not finite"));

	/* An embedded NUL would silently cut the line short. */
	{
		static const char nul[] = "1 2\n3 4\0 5 6\n";
		char spec[300];

		path = test_tmpfile(nul, sizeof(nul) - 1);
		snprintf(spec, sizeof(spec), "hist:%s", path);
		CHECK(parse(&d, spec) == -1);
		CHECK(strstr(err, "line 2") && strstr(err, "NUL"));
		test_rm(path);
	}

	/* A directory is no file of sizes. */
	CHECK(parse(&d, "hist:/") == -1);
	CHECK_STREQ(err, OPT ": histogram / is not a regular file");
}

/*
 * What is not a regular file is refused before it is read: /dev/zero (read
 * into one line, it once took all memory) and a FIFO (its open waited for a
 * writer for ever). A symlink to a histogram is read.
 */
TEST(sizedist_hist_only_regular_files)
{
	struct size_dist d;
	char dir[] = "/tmp/sizedist-XXXXXX", spec[80];
	char *path = test_tmpfile("4096 1\n", 7);

	CHECK(parse(&d, "hist:/dev/zero") == -1);
	CHECK_STREQ(err, OPT ": histogram /dev/zero is not a regular file");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(spec, sizeof(spec), "hist:%s/fifo", dir);
	CHECK(mkfifo(spec + 5, 0644) == 0);
	CHECK(parse(&d, spec) == -1);
	CHECK(strstr(err, "is not a regular file") && strstr(err, spec + 5));
	unlink(spec + 5);
	snprintf(spec, sizeof(spec), "hist:%s/link", dir);
	CHECK(symlink(path, spec + 5) == 0);
	CHECK(parse(&d, spec) == 0);
	CHECK(d.nbins == 1 && size_dist_max(&d) == 4096);
	size_dist_free(&d);
	unlink(spec + 5);
	rmdir(dir);
	test_rm(path);
}

/* A line is at most 4096 bytes, the file at most 16 MiB: memory stays bounded. */
TEST(sizedist_hist_bounded)
{
	size_t cap = (16 << 20) + 64;
	char *text = malloc(cap);
	struct size_dist d;

	/* a comment line of 4096 bytes is fine, one more byte is not */
	memset(text, '#', 4096);
	memcpy(text + 4096, "\n4096 1\n", 9);
	CHECK(parse_hist_text(&d, text, NULL) == 0);
	size_dist_free(&d);
	memset(text, '#', 4097);
	memcpy(text + 4097, "\n4096 1\n", 9);
	CHECK(hist_bad(text, "line 1 is longer than 4096 bytes"));
	/* no newline at all (as /dev/zero's bytes) */
	memset(text, '0', 100000);
	text[100000] = '\0';
	CHECK(hist_bad(text, "line 1 is longer than 4096 bytes"));
	/* the longest line, last in the file, without its newline */
	memcpy(text, "4096 1\n", 7);
	memset(text + 7, ' ', 4093);
	memcpy(text + 7 + 4093, "1 1", 4);
	CHECK(parse_hist_text(&d, text, NULL) == 0);
	CHECK(d.nbins == 2);
	size_dist_free(&d);
	/* 16 MiB of short lines is fine, a byte more is not */
	memset(text, '\n', 16 << 20);
	memcpy(text, "4096 1", 6);
	text[16 << 20] = '\0';
	CHECK(parse_hist_text(&d, text, NULL) == 0);
	size_dist_free(&d);
	memcpy(text + (16 << 20), "\n", 2);
	CHECK(hist_bad(text, "is larger than 16 MiB"));
	free(text);
}

TEST(sizedist_hist_bin_limit)
{
	size_t cap = 65537 * 16, n = 0, i;
	char *text = malloc(cap);
	struct size_dist d;
	char *path;

	for (i = 0; i < 65536; i++)
		n += snprintf(text + n, cap - n, "%zu 1\n", i);
	CHECK(parse_hist_text(&d, text, NULL) == 0);
	CHECK(d.nbins == 65536);
	CHECK(size_dist_max(&d) == 65535);
	CHECK(d.bins[65535].cum == 1.0);
	CHECK(fabs(d.bins[32767].cum - 0.5) < 1e-12);
	size_dist_free(&d);

	snprintf(text + n, cap - n, "65536 1\n");
	CHECK(parse_hist_text(&d, text, &path) == -1);
	CHECK(strstr(err, "line 65537") != NULL);
	CHECK(strstr(err, "65536") != NULL);
	test_rm(path);
	free(text);
}
