/* Tests of tree marker comparison (treemeta.h). */
#include "test.h"
#include "treemeta.h"

#define M	TREEMETA_MAGIC "\n"

static char why[256];

static int cmp(const char *tree, const char *job)
{
	strcpy(why, "untouched");
	return treemeta_compare(tree, job, why, sizeof(why));
}

static const char base[] =
	M "tree_files=1000000\ntree_fanout=16\nfile_size_dist=fixed:4096\n";

TEST(treemeta_equal)
{
	CHECK(cmp(base, base) == 0);
	/* Order, blank lines, comments and CRLF do not matter. */
	CHECK(cmp(base, M "# written by job 1\nfile_size_dist=fixed:4096\n\n"
		  "tree_fanout=16\n   \ntree_files=1000000") == 0);
	CHECK(cmp(TREEMETA_MAGIC "\r\ntree_files=1000000\r\ntree_fanout=16\r\n"
		  "file_size_dist=fixed:4096\r\n", base) == 0);
	CHECK(cmp(M, M) == 0);
	CHECK(cmp(TREEMETA_MAGIC, M "\n# nothing\n") == 0);
	/* Values may contain '='. */
	CHECK(cmp(M "a=b=c\n", M "a=b=c\n") == 0);
	CHECK(cmp(M "a=\n", M "a=\n") == 0);
}

TEST(treemeta_differs)
{
	CHECK(cmp(base, M "tree_files=1000000\ntree_fanout=16\n"
		  "file_size_dist=fixed:8192\n") == 1);
	CHECK_STREQ(why, "file_size_dist: tree has fixed:4096, job has fixed:8192");
	CHECK(cmp(base, M "tree_files=1000000\ntree_fanout=16\n") == 1);
	CHECK_STREQ(why, "job lacks file_size_dist");
	CHECK(cmp(base, M "tree_files=1000000\ntree_fanout=16\n"
		  "file_size_dist=fixed:4096\ncontent=random\n") == 1);
	CHECK_STREQ(why, "tree lacks content");
	CHECK(cmp(M "a=1\n", M "a=1\na=2\n") == 1);
	CHECK_STREQ(why, "a: tree has 1, job has 2");
	CHECK(cmp(M "a=\n", M "a=0\n") == 1);
	CHECK_STREQ(why, "a: tree has , job has 0");
	/* Keys and values are compared exactly. */
	CHECK(cmp(M "a=1\n", M "a =1\n") == 1);
	CHECK(cmp(M "a=1\n", M "a=1 \n") == 1);
	CHECK(cmp(M "a=1\n", M "A=1\n") == 1);
	/* The first differing key (in the tree's order) is named. */
	CHECK(cmp(M "x=1\ny=2\n", M "y=3\nx=4\n") == 1);
	CHECK_STREQ(why, "x: tree has 1, job has 4");
}

TEST(treemeta_not_a_marker)
{
	CHECK(cmp("", base) == -1);
	CHECK(cmp("hello\n", base) == -1);
	CHECK(cmp("# fio-pack smallfile tree v2\na=1\n", base) == -1);
	CHECK(cmp(" " M "a=1\n", base) == -1);
	CHECK(cmp("\n" M "a=1\n", base) == -1);
	CHECK(cmp(M "a=1\nno equals sign\n", base) == -1);
	CHECK(strstr(why, "line 3") != NULL);
	CHECK(!strchr(why, '\n'));
	CHECK(cmp(NULL, base) == -1);
	CHECK(cmp(base, NULL) == -1);
	CHECK(cmp(base, "junk") == -1);
	CHECK(treemeta_compare(base, base, NULL, 0) == 0);
	CHECK(treemeta_compare("x", base, NULL, 0) == -1);
}

TEST(treemeta_why_is_bounded)
{
	char small[8];

	memset(small, 'x', sizeof(small));
	CHECK(treemeta_compare(M "key=value1\n", M "key=value2\n", small, 5) == 1);
	CHECK_STREQ(small, "key:");
	CHECK(small[5] == 'x');
	/* Control characters from the file do not split the line. */
	CHECK(cmp(M "a=1\x1b[2J\n", M "a=2\n") == 1);
	CHECK(!strchr(why, '\x1b'));
}

/* Where a tree was laid out is not how: ignored by the comparison. */
static unsigned long long ino;

static int dir_ino(const char *text)
{
	return treemeta_dir_inode(text, &ino);
}

TEST(treemeta_dir_inode_is_not_a_parameter)
{
	CHECK(cmp(M "a=1\n" TREEMETA_DIR_INODE "=42\n", M "a=1\n") == 0);
	CHECK(cmp(M "a=1\n", M "a=1\n" TREEMETA_DIR_INODE "=42\n") == 0);
	CHECK(cmp(M TREEMETA_DIR_INODE "=7\na=1\n", M "a=1\n" TREEMETA_DIR_INODE "=42\n") == 0);
	/* the parameters still count */
	CHECK(cmp(M "a=1\n" TREEMETA_DIR_INODE "=42\n", M "a=2\n") == 1);
	CHECK_STREQ(why, "a: tree has 1, job has 2");

	CHECK(dir_ino(M "a=1\n" TREEMETA_DIR_INODE "=18446744073709551615\r\n") == 1);
	CHECK(ino == 18446744073709551615ULL);
	CHECK(dir_ino(base) == 0);
	CHECK(dir_ino(M "# " TREEMETA_DIR_INODE "=1\n") == 0);
	/* not one number: not a marker's line */
	CHECK(dir_ino(M TREEMETA_DIR_INODE "=\n") == -1);
	CHECK(dir_ino(M TREEMETA_DIR_INODE "=-1\n") == -1);
	CHECK(dir_ino(M TREEMETA_DIR_INODE "=12 \n") == -1);
	CHECK(dir_ino(M TREEMETA_DIR_INODE "=18446744073709551616\n") == -1);
	CHECK(dir_ino(M TREEMETA_DIR_INODE "=1\n" TREEMETA_DIR_INODE "=1\n") == -1);
	CHECK(dir_ino("hello\n" TREEMETA_DIR_INODE "=1\n") == -1);
}
