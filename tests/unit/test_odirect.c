/* Tests of the O_DIRECT probe (odirect.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "odirect.h"
#include "test.h"

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

TEST(odirect_probe_leaves_no_name)
{
	char dir[] = "/tmp/odirect-test-XXXXXX";
	unsigned align = 12345;
	int fd, r;

	CHECK(mkdtemp(dir) != NULL);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(fd >= 0);
	r = odirect_probe(fd, &align);
	/* ext4, xfs, btrfs, tmpfs since 6.6 have it; a machine without: -1 or 0 */
	CHECK(r == 1 || r == 0 || r == -1);
	if (r == 1)
		CHECK(align >= ODIRECT_MIN_ALIGN && align <= ODIRECT_MAX_ALIGN &&
		      !(align & (align - 1)));
	else
		CHECK(align == 12345);
	CHECK(entries(dir) == 0);
	close(fd);
	/* not a directory: cannot tell */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	align = 7;
	CHECK(odirect_probe(fd, &align) == -1 && align == 7);
	close(fd);
	CHECK(rmdir(dir) == 0);
}
