/* Tests of the database page-replay trace parser (dbtrace.h): what it accepts and refuses. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "dbtrace.h"
#include "dbtrace_fixture.h"
#include "test.h"

TEST(dbtrace_accepts)
{
	/* comments, blank lines, tabs, CRLF, pages, "end" without a count */
	CHECK(dbt_parse(HDR "# a comment\n\n  \t\n12\t0  0 read p1 p1\r\n"
			    "12 5 1 write 0 8192\n  # indented comment\nend\n") == 2);
	/* the last line without its newline, comments after "end" */
	CHECK(dbt_parse(HDR "12 0 0 fsync\nend 1\n# done\n\n") == 1);
	CHECK(dbt_parse(HDR "12 0 0 fsync\nend 1") == 1);
	/* no records at all */
	CHECK(dbt_parse(HDR "end 0\n") == 0);
	CHECK(dbt_parse("dbtrace 1\npagesize 512\ntimeunit ns\nsource x\nend\n") == 0);
	/* header keys in any order; same time twice; other streams may go back */
	CHECK(dbt_parse("dbtrace 1\nsource a b  c\ntimeunit ms\npagesize 4096\n"
			"file 9 data 0 4096 a\nstream 1 s1\nstream 2 s2\n"
			"5 1 9 read 0 1\n5 1 9 read 0 1\n3 2 9 read 0 1\nend 3\n") == 3);
	/* up to the max size; sync_file_range of 0 bytes (to the end of the file) */
	CHECK(dbt_parse(HDR "12 0 0 read p7 8192\n12 0 0 sync_file_range 65536 0\n"
			    "12 0 1 truncate 65536\n12 0 4 create\n12 0 2 create\n12 0 2 unlink\n"
			    "12 0 3 fsync\nend 7\n") == 7);
	/* read/write of exactly the limit */
	CHECK(dbt_parse("dbtrace 1\npagesize 4096\ntimeunit us\nsource x\n"
			"file 0 data 0 p32768 f\nstream 0 s\n1 0 0 write 0 67108864\nend\n") == 1);
	/* largest offsets */
	CHECK(dbt_parse("dbtrace 1\npagesize 4096\ntimeunit us\nsource x\n"
			"file 0 data 0 9223372036854775807 f\nstream 0 s\n"
			"9223372036854775807 0 0 read 9223372036854775806 1\nend\n") == 1);
	/* a directory may hold files; '#' is fine inside a path */
	CHECK(dbt_parse(
		      "dbtrace 1\npagesize 4096\ntimeunit us\nsource x\n"
		      "file 0 directory 0 0 db\nfile 1 data 0 0 db/t#P#p0.ibd\nfile 2 data 0 0 db2\n"
		      "file 3 data 0 0 db-1\nend\n") == 0);
}

/* "incomplete" lines: read back in order, blanks trimmed; written after source */
TEST(dbtrace_incomplete_lines)
{
	static const char *const holes[] = {
		"io_uring: 15711 io_uring_enter calls, their reads and writes are not in the trace",
		"io_submit: 3 requests strace did not print",
	};
	static const char text[] = "dbtrace 1\nincomplete  a  b \npagesize 512\ntimeunit ns\n"
				   "source x\nincomplete\tc\nfile 0 data 0 0 a\nstream 0 s\n"
				   "1 0 0 fsync\nend\n";
	struct dbtrace_header h = dbt_header;
	const struct dbtrace_header *got;
	struct dbtrace *t;
	char *buf, many[64 * 16 + 256];
	size_t len;
	int i, n;

	t = dbtrace_open_mem(text, strlen(text), "t", dbt_err, sizeof(dbt_err));
	CHECK(t != NULL);
	if (t) {
		got = dbtrace_header(t);
		CHECK(got->nincomplete == 2);
		if (got->nincomplete == 2) {
			CHECK_STREQ(got->incomplete[0], "a  b");
			CHECK_STREQ(got->incomplete[1], "c");
		}
		dbtrace_close(t);
	}
	CHECK(dbtrace_header(t = dbtrace_open_mem(HDR "end\n", strlen(HDR "end\n"), "t", dbt_err,
						  sizeof(dbt_err)))
		      ->nincomplete == 0);
	dbtrace_close(t);

	h.incomplete = holes;
	h.nincomplete = 2;
	buf = dbt_write_trace(&h, dbt_recs, NRECS, &len);
	if (buf) {
		CHECK(strstr(buf, "\nsource PostgreSQL 15 pgbench -c 2 -T 5, strace -f -ttt -T, hand-checked\n"
				  "incomplete io_uring: 15711 io_uring_enter calls") != NULL);
		t = dbtrace_open_mem(buf, len, "t", dbt_err, sizeof(dbt_err));
		CHECK(t != NULL);
		if (t) {
			got = dbtrace_header(t);
			CHECK(got->nincomplete == 2);
			for (i = 0; i < 2 && i < (int)got->nincomplete; i++)
				CHECK_STREQ(got->incomplete[i], holes[i]);
			dbt_check_trace(t, &dbt_header, dbt_recs, NRECS, 16);
			dbtrace_close(t);
		}
		free(buf);
	}

	BAD("dbtrace 1\nincomplete \t \n",
	    "t line 2: incomplete needs a description of what the capture could not see");
	BAD(HDR "12 0 0 fsync\nincomplete late\n",
	    "t line 13: 'incomplete' after the first record (the header comes first)");
	n = snprintf(many, sizeof(many), "dbtrace 1\n");
	for (i = 0; i <= DBTRACE_MAX_INCOMPLETE; i++)
		n += snprintf(many + n, sizeof(many) - n, "incomplete %d\n", i);
	BAD(many, "t line 66: more than 64 incomplete lines");
	/* a word that starts with the keyword is not the keyword */
	BAD(HDR "incompletely\n",
	    "t line 12: unknown line 'incompletely' (expected a header line, a record, 'end', '#' or blank)");
}

TEST(dbtrace_header_errors)
{
	BAD("", "t line 1: empty input: not a dbtrace trace");
	BAD("hello\n", "t line 1: not a dbtrace trace: the first line must be 'dbtrace 1' or 'dbtrace 2'");
	BAD("# dbtrace 1\n", "t line 1: not a dbtrace trace: the first line must be 'dbtrace 1' or 'dbtrace 2'");
	BAD("dbtrace 3\n", "t line 1: unsupported dbtrace version '3' (this parser reads versions 1 and 2)");
	BAD("dbtrace 2.0\n", "t line 1: unsupported dbtrace version '2.0' (this parser reads versions 1 and 2)");
	BAD("dbtrace 1\n", "t line 2: the trace ends without its 'end' line (truncated?)");
	BAD("dbtrace 1\npagesize 8192\npagesize 8192\n",
	    "t line 3: duplicate pagesize (first on line 2)");
	BAD("dbtrace 1\npagesize 1000\n",
	    "t line 2: pagesize '1000' must be a power of two from 512 to 1048576");
	BAD("dbtrace 1\npagesize 256\n",
	    "t line 2: pagesize '256' must be a power of two from 512 to 1048576");
	BAD("dbtrace 1\npagesize\n", "t line 2: expected 'pagesize BYTES'");
	BAD("dbtrace 1\ntimeunit s\n", "t line 2: unknown time unit 's' (ns, us, ms, none)");
	BAD("dbtrace 1\nsource  \t\n",
	    "t line 2: source needs a description of what was captured and how");
	BAD("dbtrace 1\nsource a\nsource b\n", "t line 3: duplicate source (first on line 2)");
	BAD("dbtrace 1\nfile 0 data 0 0 a\n", "t line 2: file before the header's pagesize line");
	BAD("dbtrace 1\npagesize 512\nsource x\nstream 0 a\n",
	    "t line 4: stream before the header's timeunit line");
	BAD("dbtrace 1\npagesize 512\ntimeunit us\n12 0 0 fsync\n",
	    "t line 4: record before the header's source line");
	BAD("dbtrace 1\npagesize 512\ntimeunit us\nend\n",
	    "t line 4: 'end' before the header's source line");
	BAD(HDR "pagesize 4096\n", "t line 12: duplicate pagesize (first on line 2)");
	BAD(HDR "frobnicate 1\n",
	    "t line 12: unknown line 'frobnicate' (expected a header line, a record, 'end', '#' or blank)");
	BAD(HDR "File 1 data 0 0 x\n",
	    "t line 12: unknown line 'File' (expected a header line, a record, 'end', '#' or blank)");
}

TEST(dbtrace_declaration_errors)
{
	BAD(HDR "file 9 data 0 0\n", "t line 12: expected 'file ID ROLE SIZE MAXSIZE PATH [direct]'");
	BAD(HDR "file 16384 data 0 0 x\n",
	    "t line 12: file id '16384' must be an integer from 0 to 16383");
	BAD(HDR "file -1 data 0 0 x\n",
	    "t line 12: file id '-1' must be an integer from 0 to 16383");
	BAD(HDR "file 1 data 0 0 x\n", "t line 12: file 1 already declared on line 6");
	BAD(HDR "file 9 index 0 0 x\n",
	    "t line 12: file 9: unknown role 'index' (data, log, journal, directory, temp, other)");
	BAD(HDR "file 9 data x 0 x\n",
	    "t line 12: bad file size 'x' (bytes, or pN for N pages)");
	BAD(HDR "file 9 data -5 0 x\n", "t line 12: negative file size '-5'");
	BAD(HDR "file 9 data 0 p9223372036854775807 x\n",
	    "t line 12: file max size 'p9223372036854775807' is beyond 2^63-1 bytes");
	BAD(HDR "file 9 data 0 9223372036854775808 x\n",
	    "t line 12: file max size '9223372036854775808' is beyond 2^63-1 bytes");
	BAD(HDR "file 9 data p2 8192 x\n",
	    "t line 12: file 9: max size 8192 is below its size 16384");
	BAD(HDR "file 9 directory 0 512 x\n",
	    "t line 12: file 9: a directory has size and max size 0");
	BAD(HDR "file 9 data 0 0 /etc/passwd\n",
	    "t line 12: file 9: path '/etc/passwd' is absolute");
	BAD(HDR "file 9 data 0 0 ../x\n", "t line 12: file 9: path '../x' has a '..' component");
	BAD(HDR "file 9 data 0 0 a/../../x\n",
	    "t line 12: file 9: path 'a/../../x' has a '..' component");
	BAD(HDR "file 9 data 0 0 a//b\n", "t line 12: file 9: path 'a//b' has an empty component");
	BAD(HDR "file 9 data 0 0 a/\n", "t line 12: file 9: path 'a/' has an empty component");
	BAD(HDR "file 9 data 0 0 ./a\n", "t line 12: file 9: path './a' has a '.' component");
	BAD(HDR "file 9 data 0 0 .\n",
	    "t line 12: file 9: path '.' is the target directory itself, only a directory may be '.'");
	BAD(HDR "file 9 directory - 0 .\n",
	    "t line 12: file 9: the target directory '.' always exists (size 0, not '-')");
	BAD(HDR "stream 0 x\n", "t line 12: stream 0 already declared on line 10");
	BAD(HDR "stream 4096 x\n", "t line 12: stream id '4096' must be an integer from 0 to 4095");
	BAD(HDR "stream 1 walwriter\n",
	    "t line 12: stream 1: name 'walwriter' already used by stream 5 on line 11");
	BAD(HDR "stream 1\n", "t line 12: expected 'stream ID NAME'");
	BAD(HDR "stream 1 two words\n", "t line 12: expected 'stream ID NAME'");
	/* paths are compared when the header ends, reported at the later declaration */
	BAD(HDR "file 9 data 0 0 base/1/1234\nend\n",
	    "t line 12: file 9: path 'base/1/1234' already declared by file 0 on line 5");
	BAD(HDR "file 9 directory 0 0 pg_wal\n12 0 0 fsync\nend\n",
	    "t line 12: file 9: path 'pg_wal' already declared by file 2 on line 7");
	BAD(HDR "file 9 data 0 0 base/1/1234/x\nend\n",
	    "t line 12: file 9: path 'base/1/1234/x' is below 'base/1/1234', file 0 (line 5) of role data, not a directory");
	BAD(HDR "file 9 log 0 0 base\nend\n",
	    "t line 12: file 9: path 'base' of role log has file 0 'base/1/1234' (line 5) below it");
	/* of two conflicts, the earlier line */
	BAD(HDR "file 8 data 0 0 x\nfile 9 data 0 0 base/1/1234\nfile 10 data 0 0 x\nend\n",
	    "t line 13: file 9: path 'base/1/1234' already declared by file 0 on line 5");
	/* declarations after the first record */
	BAD(HDR "12 0 0 fsync\nfile 9 data 0 0 x\n",
	    "t line 13: 'file' after the first record (the header comes first)");
	BAD(HDR "12 0 0 fsync\nsource again\n",
	    "t line 13: 'source' after the first record (the header comes first)");
}

TEST(dbtrace_record_errors)
{
	BAD(HDR "12 0 0 frobnicate 0 1\n",
	    "t line 12: unknown operation 'frobnicate' (read, write, fsync, fdatasync, "
	    "sync_file_range, trim, truncate, create, unlink)");
	BAD(HDR "12 0 0 READ 0 1\n",
	    "t line 12: unknown operation 'READ' (read, write, fsync, fdatasync, "
	    "sync_file_range, trim, truncate, create, unlink)");
	BAD(HDR "12 0 0\n", "t line 12: expected 'TIME STREAM FILE OPERATION [ARGUMENTS] [+LATENCY]'");
	BAD(HDR "12 0 0 read 0 1 2 3 4 5\n", "t line 12: too many fields");
	BAD(HDR "12 3 0 fsync\n", "t line 12: undeclared stream 3");
	BAD(HDR "12 0 9 fsync\n", "t line 12: undeclared file 9");
	BAD(HDR "12 x 0 fsync\n", "t line 12: stream id 'x' must be an integer from 0 to 4095");
	BAD(HDR "12 0 99999 fsync\n", "t line 12: file id '99999' must be an integer from 0 to 16383");
	BAD(HDR "12x 0 0 fsync\n", "t line 12: bad time '12x'");
	BAD(HDR "-5 0 0 fsync\n", "t line 12: negative time '-5'");
	BAD(HDR "99999999999999999999 0 0 fsync\n",
	    "t line 12: time '99999999999999999999' is beyond 2^63-1");
	BAD(HDR "- 0 0 fsync\n", "t line 12: time '-' in a timed trace (timeunit us)");
	BAD("dbtrace 1\npagesize 512\ntimeunit none\nsource x\nfile 0 data 0 0 a\nstream 0 s\n"
	    "- 0 0 fsync\n5 0 0 fsync\n",
	    "t line 8: time '5' in an untimed trace (timeunit none): use '-'");
	BAD(HDR "12 0 0 read 0\n", "t line 12: read takes OFFSET LENGTH");
	BAD(HDR "12 0 1 truncate\n", "t line 12: truncate takes SIZE");
	BAD(HDR "12 0 0 fsync 0\n", "t line 12: fsync takes no arguments");
	BAD(HDR "12 0 0 read -1 8192\n", "t line 12: negative offset '-1'");
	BAD(HDR "12 0 0 read 0 -8192\n", "t line 12: negative length '-8192'");
	BAD(HDR "12 0 0 read 0x10 1\n", "t line 12: bad offset '0x10' (bytes, or pN for N pages)");
	BAD(HDR "12 0 0 read p 1\n", "t line 12: bad offset 'p' (bytes, or pN for N pages)");
	BAD(HDR "12 0 0 read 18446744073709551616 1\n",
	    "t line 12: offset '18446744073709551616' is beyond 2^63-1 bytes");
	BAD(HDR "12 0 0 read p1125899906842624 1\n",
	    "t line 12: offset 'p1125899906842624' is beyond 2^63-1 bytes");
	BAD(HDR "12 0 0 trim 9223372036854775807 1\n",
	    "t line 12: offset 9223372036854775807 + length 1 is beyond 2^63-1");
	BAD(HDR "12 0 0 trim 1 9223372036854775807\n",
	    "t line 12: offset 1 + length 9223372036854775807 is beyond 2^63-1");
	BAD(HDR "12 0 0 read 0 0\n", "t line 12: read of 0 bytes");
	BAD(HDR "12 0 0 trim p1 0\n", "t line 12: trim of 0 bytes");
	BAD(HDR "12 0 0 write 0 67108865\n",
	    "t line 12: write of 67108865 bytes, over the limit of 67108864");
	BAD(HDR "12 0 0 read 65536 1\n",
	    "t line 12: read 65536+1 ends at 65537, beyond file 0's max size 65536");
	BAD(HDR "12 0 0 write p7 16384\n",
	    "t line 12: write 57344+16384 ends at 73728, beyond file 0's max size 65536");
	BAD(HDR "12 0 0 sync_file_range 65537 0\n",
	    "t line 12: sync_file_range 65537+0 ends at 65537, beyond file 0's max size 65536");
	BAD(HDR "12 0 1 truncate 65537\n",
	    "t line 12: truncate to 65537 is beyond file 1's max size 65536");
	BAD(HDR "12 0 2 read 0 1\n",
	    "t line 12: read on file 2, a directory (a directory takes fsync, create, unlink)");
	BAD(HDR "12 0 3 fdatasync\n",
	    "t line 12: fdatasync on file 3, a directory (a directory takes fsync, create, unlink)");
	BAD(HDR "12 0 3 unlink\n", "t line 12: unlink of file 3 '.', the target directory itself");
	BAD(HDR "12 0 0 fsync\n20 0 0 fsync\n19 0 0 fsync\n",
	    "t line 14: time 19 goes back from 20 in stream 0");
	BAD(HDR "12 0 0 fsync\n", "t line 13: the trace ends without its 'end' line (truncated?)");
	BAD(HDR "12 0 0 fsync\nend 2\n", "t line 13: end says 2 records, the trace has 1");
	BAD(HDR "12 0 0 fsync\nend x\n", "t line 13: end: bad record count 'x'");
	BAD(HDR "12 0 0 fsync\nend 1 2\n", "t line 13: expected 'end [RECORDS]'");
	BAD(HDR "end\n12 0 0 fsync\n", "t line 13: '12 0 0 fsync' after the 'end' line");
	BAD(HDR "end\nend\n", "t line 13: 'end' after the 'end' line");
}

/*
 * The control-character check looks at eight bytes a step: every control
 * character at every place of a line (first byte, the middle of a word,
 * the tail after the last whole word) is found and named, and what is no
 * control character (a tab, 0x80 to 0xff, 0x20 to 0x7e) is not, wherever
 * it sits.
 */
TEST(dbtrace_control_characters_anywhere)
{
	static const unsigned char bad[] = { 0x00, 0x01, 0x08, 0x0a, 0x0b, 0x1f, 0x7f };
	static const unsigned char fine[] = { '\t', ' ', '~', 0x80, 0xc3, 0xa9, 0xff };
	char text[512], want[128];
	size_t k, at, hlen = strlen(HDR);

	for (at = 0; at < 24; at++) {
		for (k = 0; k < sizeof(bad); k++) {
			/* a comment line of 23 bytes: "#" and 22 x's, one of them replaced */
			memcpy(text, HDR, hlen);
			memset(text + hlen, 'x', 23);
			text[hlen] = '#';
			text[hlen + 1 + at % 22] = (char)bad[k];
			memcpy(text + hlen + 23, "\nend\n", 6);
			if (bad[k] == '\n') /* ends the line: what follows it is no line */
				continue;
			snprintf(want, sizeof(want),
				 "t line 12: control character 0x%02x in the line", bad[k]);
			CHECK(dbt_parse_n(text, hlen + 28) == -1);
			CHECK_STREQ(dbt_err, want);
		}
		for (k = 0; k < sizeof(fine); k++) {
			memcpy(text, HDR, hlen);
			memset(text + hlen, 'x', 23);
			text[hlen] = '#';
			text[hlen + 1 + at % 22] = (char)fine[k];
			memcpy(text + hlen + 23, "\nend\n", 6);
			CHECK(dbt_parse_n(text, hlen + 28) == 0);
		}
	}
	/* in a record: a control character in any field, tabs between them */
	BAD(HDR "12\t0\t0\tread\tp1\t8192\x7f\n", "t line 12: control character 0x7f in the line");
	BAD(HDR "1234567\x1f 0 0 read p1 8192\n", "t line 12: control character 0x1f in the line");
	CHECK(dbt_parse(HDR "12\t0\t0\tread\tp1\t8192\nend\n") == 1);
}

/* Numbers up to 2^63 - 1 and no further, without a division a digit. */
TEST(dbtrace_numbers_at_the_limit)
{
	CHECK(dbt_parse(HDR "9223372036854775807 0 0 fsync\nend\n") == 1);
	BAD(HDR "9223372036854775808 0 0 fsync\n",
	    "t line 12: time '9223372036854775808' is beyond 2^63-1");
	BAD(HDR "9223372036854775810 0 0 fsync\n",
	    "t line 12: time '9223372036854775810' is beyond 2^63-1");
	BAD(HDR "92233720368547758070 0 0 fsync\n",
	    "t line 12: time '92233720368547758070' is beyond 2^63-1");
	CHECK(dbt_parse(HDR "0922337203685477580 0 0 fsync\nend\n") == 1);
	BAD(HDR "12x 0 0 fsync\n", "t line 12: bad time '12x'");
	BAD(HDR "12 0 0 read p1 8192:\n",
	    "t line 12: bad length '8192:' (bytes, or pN for N pages)");
	BAD(HDR "12 0 0 read p1 /8192\n",
	    "t line 12: bad length '/8192' (bytes, or pN for N pages)");
}

TEST(dbtrace_line_errors)
{
	char *big = malloc(6000);

	BAD(HDR "# \001\n", "t line 12: control character 0x01 in the line");
	BAD(HDR "12 0 0 fsync\r\r\n", "t line 12: control character 0x0d in the line");
	CHECK(dbt_parse_n(HDR "12 0 0 fsync\0x\nend\n", sizeof(HDR "12 0 0 fsync\0x\nend\n") - 1) ==
	      -1);
	CHECK_STREQ(dbt_err, "t line 12: control character 0x00 in the line");
	/* exactly the limit, then one more byte */
	snprintf(big, 6000, HDR "#%04095d\nend\n", 0);
	CHECK(dbt_parse(big) == 0);
	snprintf(big, 6000, HDR "#%04095d\r\nend\n", 0);
	CHECK(dbt_parse(big) == 0);
	snprintf(big, 6000, HDR "#%04096d\nend\n", 0);
	BAD(big, "t line 12: line longer than 4096 bytes");
	snprintf(big, 6000, HDR "#%05000d", 0);
	BAD(big, "t line 12: line longer than 4096 bytes");
	free(big);
}

TEST(dbtrace_version2)
{
	static const char text[] = HDR2
		"10 0 0 read p1 4096 +25\n"
		"11 0 0 read p2 4096\n"
		"12 1 1 write 0 512 +0\n"
		"13 1 1 fdatasync\t+100\n"
		"14 0 2 fsync +7\n"
		"end 5\n";
	struct dbtrace_rec rec;
	struct dbtrace *t = dbtrace_open_mem(text, sizeof(text) - 1, "t", dbt_err, sizeof(dbt_err));
	const struct dbtrace_header *h;

	CHECK(t != NULL);
	if (!t)
		return;
	h = dbtrace_header(t);
	CHECK(h->version == 2);
	CHECK(dbtrace_file_by_id(t, 0)->direct == 1);
	CHECK(dbtrace_file_by_id(t, 1)->direct == 0);
	CHECK(dbtrace_next(t, &rec) == 1 && rec.has_lat && rec.lat == 25 && rec.time == 10);
	CHECK(dbtrace_next(t, &rec) == 1 && !rec.has_lat && rec.lat == 0);
	CHECK(dbtrace_next(t, &rec) == 1 && rec.has_lat && rec.lat == 0 && rec.len == 512);
	CHECK(dbtrace_next(t, &rec) == 1 && rec.has_lat && rec.lat == 100 &&
	      rec.op == DBTRACE_FDATASYNC);
	CHECK(dbtrace_next(t, &rec) == 1 && rec.has_lat && rec.lat == 7);
	CHECK(dbtrace_next(t, &rec) == 0);
	dbtrace_close(t);

	/* version 1 keeps parsing as before; a version-1 trace reports 1 */
	t = dbtrace_open_mem(HDR "end\n", strlen(HDR "end\n"), "t", dbt_err, sizeof(dbt_err));
	CHECK(t != NULL && dbtrace_header(t)->version == 1);
	dbtrace_close(t);

	/* the additions are errors in a version-1 trace, with the version named */
	BAD(HDR "file 9 data 0 0 x direct\n",
	    "t line 12: file 9: 'direct' needs 'dbtrace 2' (this trace is version 1)");
	BAD(HDR "12 0 0 read 0 1 +5\n",
	    "t line 12: a latency '+5' needs 'dbtrace 2' (this trace is version 1)");
	BAD(HDR2 "file 9 data 0 0 x Direct\n", "t line 10: file 9: unknown flag 'Direct' (direct)");
	BAD(HDR2 "file 9 data 0 0 x direct 1\n",
	    "t line 10: expected 'file ID ROLE SIZE MAXSIZE PATH [direct]'");
	BAD(HDR2 "file 9 directory 0 0 x direct\n",
	    "t line 10: file 9: a directory is not read or written: no 'direct'");
	BAD(HDR2 "10 0 0 read 0 1 +x\n", "t line 10: bad latency '+x'");
	BAD(HDR2 "10 0 0 read 0 1 +\n", "t line 10: bad latency '+'");
	BAD(HDR2 "10 0 0 read 0 1 +-1\n", "t line 10: bad latency '+-1'");
	BAD(HDR2 "10 0 0 read 0 1 +99999999999999999999\n",
	    "t line 10: latency '+99999999999999999999' is beyond 2^63-1");
	BAD(HDR2 "9223372036854775800 0 0 read 0 1 +8\n",
	    "t line 10: time 9223372036854775800 + latency 8 is beyond 2^63-1");
	BAD(HDR2 "10 0 0 read 0 1 +1 +2\n", "t line 10: read takes OFFSET LENGTH");
	BAD(HDR2 "10 0 0 fsync +1 0\n", "t line 10: fsync takes no arguments");
	BAD(HDR2 "10 0 0 +1\n",
	    "t line 10: expected 'TIME STREAM FILE OPERATION [ARGUMENTS] [+LATENCY]'");
	BAD("dbtrace 2\npagesize 4096\ntimeunit none\nsource x\nfile 0 data 0 9 d\n"
	    "stream 0 s\n- 0 0 read 0 1 +3\n",
	    "t line 7: a latency '+3' in an untimed trace (timeunit none)");
}
