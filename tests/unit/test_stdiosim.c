/*
 * stdiosim: the write(2)/read(2) calls glibc stdio makes. The expectations
 * below follow glibc's libio step by step; tests/engines/test_postmark.py checks the
 * same against the real postmark under strace.
 */
#include <stdio.h>
#include <string.h>

#include "stdiosim.h"
#include "test.h"

/* Writes @total bytes in fwrite()s of @chunk (plus the remainder), then
 * fclose()s; the write(2) lengths go to @lens. Returns how many. */
static int write_calls(size_t bufsize, size_t total, size_t chunk, size_t *lens, int max)
{
	struct stdiosim_w w = { 0 };
	struct stdiosim_range r[2];
	uint64_t expect_off = 0;
	size_t left = total;
	int n = 0, k, i;

	while (left) {
		size_t c = left < chunk ? left : chunk;

		if (stdiosim_w_needs_alloc(&w, c))
			stdiosim_w_alloc(&w, bufsize);
		k = stdiosim_fwrite(&w, c, r);
		for (i = 0; i < k && n < max; i++) {
			CHECK(r[i].off == expect_off);	/* the file is written in order */
			expect_off += r[i].len;
			lens[n++] = r[i].len;
		}
		left -= c;
	}
	if (stdiosim_fclose(&w, r) && n < max) {
		CHECK(r[0].off == expect_off);
		expect_off += r[0].len;
		lens[n++] = r[0].len;
	}
	CHECK(expect_off == total);
	return n;
}

TEST(stdiosim_bufsize_rule)
{
	CHECK(stdiosim_bufsize(4096) == 4096);
	CHECK(stdiosim_bufsize(512) == 512);
	CHECK(stdiosim_bufsize(65536) == BUFSIZ);
	CHECK(stdiosim_bufsize(0) == BUFSIZ);
	CHECK(stdiosim_bufsize(-1) == BUFSIZ);
}

TEST(stdiosim_small_chunks_are_gathered)
{
	size_t l[16];
	/* 10000 bytes in 512-byte fwrites: two full buffers, then the rest at fclose */
	CHECK(write_calls(4096, 10000, 512, l, 16) == 3);
	CHECK(l[0] == 4096 && l[1] == 4096 && l[2] == 1808);
	/* exactly one buffer: written at fclose only */
	CHECK(write_calls(4096, 4096, 512, l, 16) == 1 && l[0] == 4096);
}

TEST(stdiosim_large_chunks_go_direct)
{
	size_t l[16];
	/* 4096-byte fwrites on a fresh stream: straight to write(2) */
	CHECK(write_calls(4096, 10000, 4096, l, 16) == 3);
	CHECK(l[0] == 4096 && l[1] == 4096 && l[2] == 1808);
	/* 10000-byte fwrites: 8192 direct + 1808 buffered; then 2288 fill the
	 * buffer, it is flushed, 4096 go direct, 3616 wait */
	CHECK(write_calls(4096, 20000, 10000, l, 16) == 4);
	CHECK(l[0] == 8192 && l[1] == 4096 && l[2] == 4096 && l[3] == 3616);
}

TEST(stdiosim_tiny_buffers_do_not_align)
{
	size_t l[16];
	/* buffers under 128 bytes: no whole-block rounding, everything direct */
	CHECK(write_calls(100, 250, 250, l, 16) == 1 && l[0] == 250);
}

TEST(stdiosim_zero_fwrite_does_nothing)
{
	struct stdiosim_w w = { 0 };
	struct stdiosim_range r[2];

	CHECK(!stdiosim_w_needs_alloc(&w, 0));
	CHECK(stdiosim_fwrite(&w, 0, r) == 0);
	CHECK(stdiosim_fclose(&w, r) == 0);
}

/* Reads @total bytes of a @filesize file in freads of @chunk: read(2) lengths. */
static int read_calls(size_t bufsize, size_t filesize, size_t total, size_t chunk,
		      size_t *lens, int max)
{
	struct stdiosim_r r = { 0 };
	size_t left = total, fpos = 0, len;
	int n = 0, tobuf;

	while (left) {
		size_t c = left < chunk ? left : chunk;

		if (stdiosim_r_needs_alloc(&r, c))
			stdiosim_r_alloc(&r, bufsize);
		stdiosim_fread_begin(&r, c);
		while (stdiosim_fread_next(&r, &len, &tobuf)) {
			size_t got = filesize - fpos < len ? filesize - fpos : len;

			fpos += got;
			if (n < max)
				lens[n++] = len;
			stdiosim_fread_done(&r, (long)got, tobuf);
		}
		left -= c;
	}
	return n;
}

TEST(stdiosim_reads)
{
	size_t l[16];
	/* 512-byte freads of a 10000-byte file: buffer refills, the last short */
	CHECK(read_calls(4096, 10000, 10000, 512, l, 16) == 3);
	CHECK(l[0] == 4096 && l[1] == 4096 && l[2] == 4096);
	/* 4096-byte freads: direct; the 1808 remainder refills the buffer */
	CHECK(read_calls(4096, 10000, 10000, 4096, l, 16) == 3);
	CHECK(l[0] == 4096 && l[1] == 4096 && l[2] == 4096);
	/* 10000-byte fread: 8192 direct, then one refill */
	CHECK(read_calls(4096, 10000, 10000, 10000, l, 16) == 2);
	CHECK(l[0] == 8192 && l[1] == 4096);
	/* reading past the end: one read returns 0, later refills are not tried */
	CHECK(read_calls(4096, 100, 300, 100, l, 16) == 2);
	CHECK(l[0] == 4096 && l[1] == 4096);
}
