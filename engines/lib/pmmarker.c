/* The postmark engine's marker (see pmmarker.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "decimal.h"
#include "errmsg.h"
#include "pmmarker.h"
#include "sysutil.h"
#include "target.h"

#define PER_PAGE (PMM_HEAD_LEN / PMM_REC_LEN)

/* The head, PMM_HEAD_LEN bytes: what a reader needs, then blanks to a newline. */
static void format_head(char *head, int made_dir)
{
	int n = snprintf(
		head, PMM_HEAD_LEN + 1,
		"fio postmark engine marker, format 2\n"
		"# The fio postmark engine made the entries listed below, and removes\n"
		"# only those, and only while each is still the one it made (its type,\n"
		"# inode and time, one link). From byte %d on, one %d-byte line each:\n"
		"#   f SUBDIR NAME INODE BORN_NS   the file NAME, in s<SUBDIR>/ (-1: here)\n"
		"#   d SUBDIR 0 INODE BORN_NS      the directory s<SUBDIR>\n"
		"#   -                             a free line (so is a line of NUL bytes)\n"
		"# INODE 0: not known; BORN_NS: CLOCK_REALTIME when it was made.\n"
		"# Remove this file only together with what it lists.\n"
		"directory made by the engine: %s\n",
		PMM_HEAD_LEN, PMM_REC_LEN, made_dir ? "yes" : "no");

	memset(head + n, ' ', PMM_HEAD_LEN - 1 - n);
	head[PMM_HEAD_LEN - 1] = '\n';
	head[PMM_HEAD_LEN] = '\0';
}

/*
 * @u (negated if @neg) right-aligned in the @width bytes at @dst, as "%*lld"
 * prints it; of a wider number, its last @width digits (pmm_parse's check
 * of a line then fails, as it must).
 */
static void put_num(char *dst, int width, uint64_t u, int neg)
{
	char digits[20], *end = digits + sizeof(digits), *q = dec_write(end, u), *p;
	int n = (int)(end - q);

	if (n > width) {
		q += n - width;
		n = width;
	}
	p = dst + width - n;
	memcpy(p, q, n);
	if (neg && p > dst)
		*--p = '-';
	memset(dst, ' ', p - dst);
}

static void put_signed(char *dst, int width, int64_t v)
{
	put_num(dst, width, v < 0 ? -(uint64_t)v : (uint64_t)v, v < 0);
}

/*
 * What snprintf("%c %8d %10d %20llu %20lld\n") writes, by hand: a line is
 * made for every file PostMark creates, thousands a second.
 */
#define OFF_SUBDIR 2
#define OFF_NAME   11
#define OFF_INO	   22
#define OFF_BORN   43

void pmm_format(char *line, const struct pmm_rec *r)
{
	line[0] = r->kind;
	line[1] = line[OFF_NAME - 1] = line[OFF_INO - 1] = line[OFF_BORN - 1] = ' ';
	put_signed(line + OFF_SUBDIR, 8, r->subdir);
	put_signed(line + OFF_NAME, 10, r->name);
	put_num(line + OFF_INO, 20, r->ino, 0);
	put_signed(line + OFF_BORN, 20, r->born_ns);
	line[PMM_REC_LEN - 1] = '\n';
}

int pmm_parse(const char *line, struct pmm_rec *r)
{
	char again[PMM_REC_LEN], text[PMM_REC_LEN + 1];
	int subdir, name;
	uint64_t ino;
	int64_t born;

	if (line[0] == '\0' || line[0] == '-')
		return 0;
	if (line[0] != 'f' && line[0] != 'd')
		return -1;
	memcpy(text, line, PMM_REC_LEN);
	text[PMM_REC_LEN] = '\0';
	if (sscanf(text + 1, "%d %d %" SCNu64 " %" SCNd64, &subdir, &name, &ino, &born) != 4)
		return -1;
	r->kind = line[0];
	r->subdir = subdir;
	r->name = name;
	r->ino = ino;
	r->born_ns = born;
	/*
	 * exactly what pmm_format() writes, and nothing the engine cannot have
	 * made: a number wider than its field ("%8d" of 123456789 shifts the
	 * rest of the line) is what no line of the engine's holds
	 */
	pmm_format(again, r);
	if (memcmp(again, line, PMM_REC_LEN) || subdir < -1 ||
	    (r->kind == 'f' ? name <= 0 : name != 0 || subdir < 0))
		return -1;
	return 1;
}

int64_t pmm_now(void)
{
	struct timespec ts;

	/* the kernel's file times are this coarse too; and it is cheaper, once a file */
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int pmm_read(int dirfd, struct pmm *m, char *err, size_t errlen)
{
	char head[PMM_HEAD_LEN + 1], want[PMM_HEAD_LEN + 1];
	struct stat st, fst;
	struct pmm_rec r;
	uint32_t i;
	ssize_t n;
	int fd;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	/* looked at before it is opened: opening a device or a FIFO is not harmless */
	if (fstatat(dirfd, PMM_NAME, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		pack_errf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		pack_errf(err, errlen, "is %s, not the engine's marker",
			  S_ISDIR(st.st_mode)	? "a directory"
			  : S_ISLNK(st.st_mode) ? "a symlink"
						: "not a regular file");
		return -1;
	}
	/* a hard link to someone else's file: the engine's is made with one */
	if (st.st_nlink != 1) {
		pack_errf(err, errlen, "has %lu links, not the engine's marker",
			  (unsigned long)st.st_nlink);
		return -1;
	}
	if (st.st_size < PMM_HEAD_LEN || (st.st_size - PMM_HEAD_LEN) % PMM_HEAD_LEN) {
		pack_errf(err, errlen, "is not the engine's marker (%lld bytes)",
			  (long long)st.st_size);
		return -1;
	}
	fd = NOINTR(openat(dirfd, PMM_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	if (fd < 0) {
		pack_errf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &fst) || fst.st_ino != st.st_ino || fst.st_dev != st.st_dev ||
	    fst.st_size != st.st_size) {
		pack_errf(err, errlen, "changed while it was read");
		goto fail;
	}
	n = pread(fd, head, PMM_HEAD_LEN, 0);
	head[n > 0 ? n : 0] = '\0';
	format_head(want, 1);
	m->made_dir = n == PMM_HEAD_LEN && !memcmp(head, want, PMM_HEAD_LEN);
	format_head(want, 0);
	if (!m->made_dir && (n != PMM_HEAD_LEN || memcmp(head, want, PMM_HEAD_LEN))) {
		pack_errf(err, errlen, "is not the engine's marker (its first line: '%.60s')",
			  strtok(head, "\n") ? head : "");
		goto fail;
	}
	m->cap = (st.st_size - PMM_HEAD_LEN) / PMM_REC_LEN;
	if (m->cap) {
		m->map = mmap(NULL, (size_t)m->cap * PMM_REC_LEN, PROT_READ, MAP_PRIVATE, fd,
			      PMM_HEAD_LEN);
		if (m->map == MAP_FAILED) {
			m->map = NULL;
			pack_errf(err, errlen, "%s", strerror(errno));
			goto fail;
		}
	}
	close(fd);
	for (i = 0; i < m->cap; i++) {
		if (pmm_parse(m->map + (size_t)i * PMM_REC_LEN, &r) < 0) {
			pack_errf(err, errlen, "is not the engine's marker (line %u of its list)",
				  i + 1);
			pmm_close(m);
			return -1;
		}
	}
	m->uid = st.st_uid;
	return 1;
fail:
	close(fd);
	pmm_close(m);
	return -1;
}

int pmm_identify(int dirfd, const char *name, const struct pmm_rec *r, const struct pmm *m,
		 char *why, size_t whylen)
{
	int64_t t;
	struct statx sx;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
		  STATX_TYPE | STATX_NLINK | STATX_UID | STATX_INO | STATX_CTIME | STATX_BTIME,
		  &sx)) {
		if (errno == ENOENT)
			return 0;
		pack_errf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	if (r->kind == 'f' ? !S_ISREG(sx.stx_mode) : !S_ISDIR(sx.stx_mode)) {
		pack_errf(why, whylen, "is not a %s",
			  r->kind == 'f' ? "regular file" : "directory");
		return -1;
	}
	if (r->kind == 'f' && sx.stx_nlink != 1) {
		pack_errf(why, whylen, "has %u links", (unsigned)sx.stx_nlink);
		return -1;
	}
	if (sx.stx_uid != m->uid) {
		pack_errf(why, whylen, "has another owner");
		return -1;
	}
	if (r->ino && sx.stx_ino != r->ino) {
		pack_errf(why, whylen, "has another inode");
		return -1;
	}
	/*
	 * Inode numbers are reused (ext4 gives a new file the one just freed):
	 * the birth time tells a file made later in its place. Without one
	 * (NFS), the change time at least tells a file older than the engine's.
	 */
	if (sx.stx_mask & STATX_BTIME) {
		t = sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec;
		if (t < r->born_ns - PMM_BORN_SLACK_NS || t > r->born_ns + PMM_BORN_SLACK_NS) {
			pack_errf(why, whylen, "was made at another time");
			return -1;
		}
	} else {
		t = sx.stx_ctime.tv_sec * 1000000000LL + sx.stx_ctime.tv_nsec;
		if (t < r->born_ns - PMM_BORN_SLACK_NS) {
			pack_errf(why, whylen, "is older than the engine's");
			return -1;
		}
	}
	return 1;
}

/* Lines @from..@to - 1 are new and free; the stack can hold all @to. */
static int push_free(struct pmm *m, uint32_t from, uint32_t to)
{
	uint32_t *f = realloc(m->free_idx, sizeof(*f) * to);
	uint32_t i;

	if (!f)
		return -ENOMEM;
	m->free_idx = f;
	/* the lowest line is taken first: a short file reads in order */
	for (i = to; i > from; i--)
		f[m->nfree++] = i - 1;
	return 0;
}

int pmm_create(int dirfd, struct pmm *m, uint32_t cap, int made_dir)
{
	char head[PMM_HEAD_LEN + 1];
	struct stat st;
	int ret, fd;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	cap = (cap ? cap + PER_PAGE - 1 : PER_PAGE) / PER_PAGE * PER_PAGE;
	format_head(head, made_dir);
	ret = target_publish_open(dirfd, PMM_NAME, head, PMM_HEAD_LEN + (off_t)cap * PMM_REC_LEN,
				  &fd);
	if (ret)
		return ret;
	m->fd = fd;
	m->made_dir = made_dir;
	m->map = mmap(NULL, (size_t)cap * PMM_REC_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      PMM_HEAD_LEN);
	if (m->map == MAP_FAILED) {
		ret = -errno;
		m->map = NULL;
	} else {
		m->cap = cap;
		ret = push_free(m, 0, cap);
	}
	if (!ret && fstat(fd, &st))
		ret = -errno;
	if (ret) {
		pmm_close(m);
		NOINTR(unlinkat(dirfd, PMM_NAME, 0));
		return ret;
	}
	m->uid = st.st_uid;
	return 0;
}

/* Twice the lines, allocated before they are mapped. 0 or -errno. */
static int grow(struct pmm *m)
{
	uint32_t cap = m->cap * 2;
	off_t end = PMM_HEAD_LEN + (off_t)m->cap * PMM_REC_LEN;
	char *map;
	int ret;

	if (cap <= m->cap)
		return -EFBIG;
	ret = posix_fallocate(m->fd, end, (off_t)(cap - m->cap) * PMM_REC_LEN);
	if (ret)
		return -ret;
	map = mremap(m->map, (size_t)m->cap * PMM_REC_LEN, (size_t)cap * PMM_REC_LEN,
		     MREMAP_MAYMOVE);
	if (map == MAP_FAILED)
		return -errno;
	m->map = map;
	ret = push_free(m, m->cap, cap);
	m->cap = cap;
	return ret;
}

int pmm_add(struct pmm *m, const struct pmm_rec *r)
{
	char *line;
	uint32_t idx;
	int ret;

	if (!m->nfree && (ret = grow(m)))
		return ret;
	idx = m->free_idx[--m->nfree];
	line = m->map + (size_t)idx * PMM_REC_LEN;
	/* the kind last: a line cut short by a kill is still a free one */
	pmm_format(line, r);
	line[0] = '-';
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	line[0] = r->kind;
	return idx;
}

void pmm_set_ino(struct pmm *m, uint32_t idx, uint64_t ino)
{
	put_num(m->map + (size_t)idx * PMM_REC_LEN + OFF_INO, 20, ino, 0);
}

void pmm_drop(struct pmm *m, uint32_t idx)
{
	m->map[(size_t)idx * PMM_REC_LEN] = '-';
	m->free_idx[m->nfree++] = idx;
}

int pmm_get(const struct pmm *m, uint32_t idx, struct pmm_rec *r)
{
	return idx < m->cap && pmm_parse(m->map + (size_t)idx * PMM_REC_LEN, r) == 1;
}

uint32_t pmm_count(const struct pmm *m)
{
	struct pmm_rec r;
	uint32_t i, n = 0;

	for (i = 0; i < m->cap; i++)
		n += pmm_get(m, i, &r);
	return n;
}

void pmm_close(struct pmm *m)
{
	if (m->map)
		munmap(m->map, (size_t)m->cap * PMM_REC_LEN);
	if (m->fd >= 0)
		close(m->fd);
	free(m->free_idx);
	memset(m, 0, sizeof(*m));
	m->fd = -1;
}
