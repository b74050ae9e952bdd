/* O_DIRECT support and alignment of a directory's files (odirect.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "odirect.h"
#include "sysutil.h"

int odirect_probe(int dirfd, unsigned *align)
{
	int fd = NOINTR(openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)), dfd, e;
	char self[64];
	unsigned a;
	void *buf;

	if (fd < 0)
		return -1;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	dfd = NOINTR(open(self, O_RDWR | O_CLOEXEC | O_DIRECT));
	e = errno;
	close(fd);
	if (dfd < 0)
		return e == EINVAL ? 0 : -1;
	buf = mmap(NULL, ODIRECT_MAX_ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (buf == MAP_FAILED) {
		close(dfd);
		return -1;
	}
	for (a = ODIRECT_MIN_ALIGN; a < ODIRECT_MAX_ALIGN; a *= 2)
		if (NOINTR(pwrite(dfd, buf, a, 0)) == (ssize_t)a)
			break;
	munmap(buf, ODIRECT_MAX_ALIGN);
	close(dfd);
	*align = a;
	return 1;
}
