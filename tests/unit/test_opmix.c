/* Tests of the file operation mix (opmix.h). */
#include <math.h>
#include <stdint.h>

#include "opmix.h"
#include "rng.h"
#include "test.h"

#define OPT	"file_op"

static char err[256];

static const char *canon(const char *spec)
{
	static char buf[300];
	struct op_mix m;

	err[0] = '\0';
	if (op_mix_parse(&m, spec, OPT, err, sizeof(err))) {
		snprintf(buf, sizeof(buf), "(error: %s)", err);
		return buf;
	}
	if (op_mix_describe(&m, buf, sizeof(buf)) < 0)
		return "(describe failed)";
	return buf;
}

static int bad(const char *spec)
{
	struct op_mix m;

	err[0] = '\0';
	if (op_mix_parse(&m, spec, OPT, err, sizeof(err)) != -1)
		return 0;
	CHECK_ERRLINE(err, OPT);
	return 1;
}

TEST(opmix_names)
{
	CHECK_STREQ(file_op_name(FOP_READ), "read");
	CHECK_STREQ(file_op_name(FOP_STAT), "stat");
	CHECK_STREQ(file_op_name(FOP_CREATE), "create");
	CHECK_STREQ(file_op_name(FOP_APPEND), "append");
	CHECK_STREQ(file_op_name(FOP_DELETE), "delete");
	CHECK_STREQ(file_op_name(FOP_DELIVER), "deliver");
	CHECK_STREQ(file_op_name(FOP_LAYOUT), "layout");
	CHECK(file_op_name(FOP_NR) != NULL);
	CHECK(file_op_name((enum file_op)-1) != NULL);
}

TEST(opmix_parse_single)
{
	struct op_mix m;
	int op;

	for (op = 0; op < FOP_NR; op++) {
		CHECK(op_mix_parse(&m, file_op_name(op), OPT, err, sizeof(err)) == 0);
		CHECK(op_mix_single(&m) == (enum file_op)op);
		CHECK(m.total == 1 && m.nops == 1);
		CHECK(op_mix_pick(&m, 0) == (enum file_op)op);
		CHECK(op_mix_pick(&m, UINT32_MAX) == (enum file_op)op);
	}
	CHECK_STREQ(canon("read"), "read:1");
	CHECK_STREQ(canon("layout"), "layout:1");
	CHECK_STREQ(canon("stat:7"), "stat:7");
}

TEST(opmix_parse_list)
{
	struct op_mix m;

	CHECK(op_mix_parse(&m, "read:60,deliver:30,delete:10", OPT, err, sizeof(err)) == 0);
	CHECK(m.total == 100 && m.nops == 3);
	CHECK(m.weight[FOP_READ] == 60 && m.weight[FOP_DELIVER] == 30 &&
	      m.weight[FOP_DELETE] == 10 && m.weight[FOP_STAT] == 0);
	CHECK(op_mix_single(&m) == FOP_NR);
	/* Enum order, not spelling order. */
	CHECK_STREQ(canon("read:60,deliver:30,delete:10"), "read:60,delete:10,deliver:30");
	CHECK_STREQ(canon("delete:10,read:60,deliver:30"), "read:60,delete:10,deliver:30");
	CHECK_STREQ(canon("read:60, stat:40"), "read:60,stat:40");
	CHECK_STREQ(canon("read:0,stat:5"), "stat:5");
	CHECK_STREQ(canon("read:1000000,stat:1000000,create:1000000,append:1000000,"
			  "delete:1000000,deliver:1000000"),
		    "read:1000000,stat:1000000,create:1000000,append:1000000,"
		    "delete:1000000,deliver:1000000");
	CHECK(op_mix_parse(&m, "read:0,stat:5", OPT, err, sizeof(err)) == 0);
	CHECK(op_mix_single(&m) == FOP_STAT);
}

TEST(opmix_errors)
{
	CHECK(bad("layout:1,read:1"));
	CHECK_STREQ(err, OPT ": layout cannot be mixed with other operations");
	CHECK(bad("read:1,layout:0"));
	CHECK_STREQ(err, OPT ": layout cannot be mixed with other operations");
	CHECK(bad("foo"));
	CHECK_STREQ(err, OPT ": unknown operation 'foo' "
		    "(read, stat, create, append, delete, deliver, layout)");
	CHECK(bad("read:1,foo:2"));
	CHECK(strstr(err, "'foo'") != NULL);
	CHECK(bad("read:1,read:2"));
	CHECK(strstr(err, "read") && strstr(err, "twice"));
	CHECK(bad("read:1000001"));
	CHECK(strstr(err, "1000001") != NULL);
	CHECK(bad("read:99999999999999999999999"));
	CHECK(bad("read:-1"));
	CHECK(bad("read:1x"));
	CHECK(bad("read:"));
	CHECK(bad("read:1.5"));
	CHECK(bad("read:1,"));
	CHECK(bad(",read:1"));
	CHECK(bad("read:1,,stat:1"));
	CHECK(bad("read,stat"));
	CHECK(bad("read:0"));
	CHECK(bad("read:0,stat:0"));
	CHECK(strstr(err, "0") != NULL);
	CHECK(bad("layout:0"));
	CHECK(bad("READ"));
	CHECK(bad(""));
	CHECK(bad(" "));
	CHECK(bad(NULL));
	CHECK(bad(":5"));
	CHECK(bad("re\nad"));
}

TEST(opmix_pick_boundaries)
{
	struct op_mix m;

	CHECK(op_mix_parse(&m, "read:1,stat:1", OPT, err, sizeof(err)) == 0);
	CHECK(op_mix_pick(&m, 0) == FOP_READ);
	CHECK(op_mix_pick(&m, 0x7fffffff) == FOP_READ);
	CHECK(op_mix_pick(&m, 0x80000000) == FOP_STAT);
	CHECK(op_mix_pick(&m, UINT32_MAX) == FOP_STAT);
	/* Zero-weight operations are never picked, even at the edges. */
	CHECK(op_mix_parse(&m, "read:0,stat:3,deliver:0", OPT, err, sizeof(err)) == 0);
	CHECK(op_mix_pick(&m, 0) == FOP_STAT);
	CHECK(op_mix_pick(&m, UINT32_MAX) == FOP_STAT);
}

TEST(opmix_pick_frequencies)
{
	struct op_mix m;
	int count[FOP_NR] = { 0 };
	const int n = 100000;
	int i;

	CHECK(op_mix_parse(&m, "read:60,deliver:30,delete:10", OPT, err, sizeof(err)) == 0);
	for (i = 0; i < n; i++) {
		enum file_op op = op_mix_pick(&m, (uint32_t)hash_item(5, 2, i));

		if (op < FOP_NR)
			count[op]++;
	}
	CHECK(fabs(count[FOP_READ] / (double)n - 0.6) < 0.01);
	CHECK(fabs(count[FOP_DELIVER] / (double)n - 0.3) < 0.01);
	CHECK(fabs(count[FOP_DELETE] / (double)n - 0.1) < 0.01);
	CHECK(count[FOP_READ] + count[FOP_DELIVER] + count[FOP_DELETE] == n);
}

TEST(opmix_describe_small_buffer)
{
	struct op_mix m;
	char buf[16];

	/* "read:60,stat:40" is 15 bytes: it fits in 16, not in 15. */
	CHECK(op_mix_parse(&m, "read:60,stat:40", OPT, err, sizeof(err)) == 0);
	CHECK(op_mix_describe(&m, buf, 16) == 15);
	CHECK_STREQ(buf, "read:60,stat:40");
	CHECK(op_mix_describe(&m, buf, 15) == -1);
	CHECK(op_mix_describe(&m, buf, 0) == -1);
}
