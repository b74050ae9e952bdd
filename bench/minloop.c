/*
 * minloop: "the practical limit" for the smallfile engine's two hot loops.
 *
 * A plain C loop doing exactly the system calls the engine does per file
 * operation, with nothing around them (no fio, no per-operation timing, no
 * accounting), so `engine files/s / minloop files/s` says how much of the
 * possible speed the engine (and fio around it) keeps.
 *
 *   layout  for i = 0 .. files-1 (the order of fio's rw=write):
 *             openat2(rootfd, path(i), O_WRONLY|O_CREAT|O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK, 0644,
 *                     RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)
 *               on ENOENT: mkdirat each level of the leaf directory
 *               (EEXIST is fine), then openat again
 *             fstat; skip if st_size >= size(i), ftruncate(0) if partial
 *             write size(i) bytes in bs chunks (content from the engine's pool)
 *             close
 *   read    ios times: i = xorshift64* % files (uniform, like fio's
 *           rw=randread norandommap=1):
 *             openat2(rootfd, path(i), O_RDONLY|O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK,
 *                     RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)
 *             read(bs) until a short read
 *             close
 *
 * Paths, sizes and contents come from the project's own library
 * (engines/lib: tree.c, sizedist.c, content.c, units.c), so the tree is the
 * engine's tree file for file: an engine-laid tree can be read by minloop
 * and the other way round (minloop writes no marker file, though, so the
 * engine refuses a tree minloop laid out).
 *
 * Output: one JSON line on stdout,
 *   {"mode":"layout","files":N,"seconds":S,"files_per_s":R,"bytes":B,...}
 * where seconds covers the loop only (not the 1 MiB content pool set-up).
 *
 * Build (from the repository root):
 *   cc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -Iengines/lib \
 *      -o build/bench/minloop bench/minloop.c engines/lib/tree.c \
 *      engines/lib/sizedist.c engines/lib/content.c engines/lib/units.c \
 *      engines/lib/errmsg.c -lm
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "content.h"
#include "rng.h"
#include "sizedist.h"
#include "tree.h"
#include "units.h"

#define STREAM_SIZE	1	/* as in engines/smallfile.c */

struct cfg {
	const char *mode;
	const char *dir;
	uint64_t files;
	uint32_t fanout;
	uint32_t depth;
	uint64_t files_per_dir;
	int maildir;
	const char *size_dist;
	uint64_t bs;
	uint64_t seed;		/* tree_seed: sizes and contents */
	uint64_t ios;		/* read: operations */
	uint64_t rand_seed;	/* read: file choice */
};

static struct tree_shape shape;
static struct size_dist sizes;
static struct content_pool pool;
static struct content_spec content;
static unsigned char *wbuf;
static int rootfd;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("minloop: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The engine's make_leaf (non-maildir part plus maildir subdirectories). */
static void make_leaf(uint64_t i)
{
	static const char *const maildirs[] = { "tmp", "new", "cur" };
	char buf[PATH_MAX], sub[PATH_MAX];
	char *p;
	int k;

	if (tree_leaf_path(&shape, tree_leaf_of(&shape, i), buf, sizeof(buf)) < 0)
		die("leaf path too long");
	if (*buf) {
		for (p = buf + 1; ; p++) {
			if (*p == '/' || !*p) {
				char c = *p;

				*p = '\0';
				if (mkdirat(rootfd, buf, 0755) && errno != EEXIST)
					die("mkdirat %s: %s", buf, strerror(errno));
				*p = c;
				if (!c)
					break;
			}
		}
	}
	if (!shape.maildir)
		return;
	for (k = 0; k < 3; k++) {
		if (snprintf(sub, sizeof(sub), "%s%s%s", buf, *buf ? "/" : "",
			     maildirs[k]) >= (int)sizeof(sub))
			die("leaf path too long");
		if (mkdirat(rootfd, sub, 0755) && errno != EEXIST)
			die("mkdirat %s: %s", sub, strerror(errno));
	}
}

/* The engine's safe open: no symlink anywhere on the path (openat2; else openat, as the engine). */
static int open_beneath(const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = flags,
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};

	static int no_openat2;
	int fd;

	if (!no_openat2) {
		fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		/* as the engine: a kernel before 5.6, or valgrind, which lacks openat2 */
		no_openat2 = 1;
	}
	return openat(rootfd, path, flags | O_NOFOLLOW, mode);
}

static uint64_t do_layout(const struct cfg *c, uint64_t *skipped)
{
	/* the engine's flags (sf_open_flags), O_NONBLOCK included */
	const int fl = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
	char path[PATH_MAX];
	uint64_t i, bytes = 0;

	for (i = 0; i < c->files; i++) {
		uint64_t size = size_dist_sample(&sizes, hash_item(c->seed, STREAM_SIZE, i));
		uint64_t off = 0;
		struct stat st;
		int fd;

		if (tree_file_path(&shape, i, path, sizeof(path)) < 0)
			die("path of file %llu too long", (unsigned long long)i);
		fd = open_beneath(path, fl, 0644);
		if (fd < 0 && errno == ENOENT) {
			make_leaf(i);
			fd = open_beneath(path, fl, 0644);
		}
		if (fd < 0)
			die("openat %s: %s", path, strerror(errno));
		if (fstat(fd, &st))
			die("fstat %s: %s", path, strerror(errno));
		if ((uint64_t)st.st_size >= size) {
			(*skipped)++;
			close(fd);
			continue;
		}
		if (st.st_size && ftruncate(fd, 0))
			die("ftruncate %s: %s", path, strerror(errno));
		while (off < size) {
			uint64_t len = size - off < c->bs ? size - off : c->bs;
			ssize_t n;

			/* the engine's content: pool bytes made unique per file and offset */
			content_fill(&pool, &content, c->seed, i, off, wbuf, len);
			n = write(fd, wbuf, len);

			if (n < 0) {
				if (errno == EINTR)
					continue;
				die("write %s: %s", path, strerror(errno));
			}
			if (n == 0)
				die("write %s: wrote nothing", path);
			off += n;
		}
		bytes += off;
		if (close(fd))
			die("close %s: %s", path, strerror(errno));
	}
	return bytes;
}

static uint64_t xorshift64s(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint64_t do_read(const struct cfg *c)
{
	const int fl = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
	char path[PATH_MAX];
	uint64_t k, bytes = 0, rng = mix64(c->rand_seed) | 1;
	unsigned char *buf;

	if (posix_memalign((void **)&buf, 4096, c->bs))
		die("out of memory");
	for (k = 0; k < c->ios; k++) {
		uint64_t i = xorshift64s(&rng) % c->files;
		int fd;

		if (tree_file_path(&shape, i, path, sizeof(path)) < 0)
			die("path of file %llu too long", (unsigned long long)i);
		fd = open_beneath(path, fl, 0);
		if (fd < 0)
			die("openat %s: %s (lay the tree out first)", path, strerror(errno));
		for (;;) {
			ssize_t n = read(fd, buf, c->bs);

			if (n < 0) {
				if (errno == EINTR)
					continue;
				die("read %s: %s", path, strerror(errno));
			}
			bytes += n;
			if ((uint64_t)n < c->bs)
				break;
		}
		close(fd);
	}
	free(buf);
	return bytes;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: minloop layout|read --dir DIR [options]\n"
		"  --files N          files in the tree (tree_files, 10000)\n"
		"  --fanout N         tree_fanout (32)\n"
		"  --depth N          tree_depth (2)\n"
		"  --files-per-dir N  tree_files_per_dir (0: use --depth)\n"
		"  --maildir          tree_maildir=1\n"
		"  --size-dist SPEC   file_size_dist (fixed:4k)\n"
		"  --bs SIZE          read/write chunk (4k)\n"
		"  --tree-seed N      tree_seed (1)\n"
		"  --ios N            read: file operations (100000)\n"
		"  --rand-seed N      read: seed of the file choice (1)\n");
}

static uint64_t num(const char *opt, const char *s)
{
	uint64_t v;

	if (parse_size(s, &v))
		die("%s: bad number '%s'", opt, s);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "files", required_argument, NULL, 'n' },
		{ "fanout", required_argument, NULL, 'f' },
		{ "depth", required_argument, NULL, 'D' },
		{ "files-per-dir", required_argument, NULL, 'p' },
		{ "maildir", no_argument, NULL, 'm' },
		{ "size-dist", required_argument, NULL, 's' },
		{ "bs", required_argument, NULL, 'b' },
		{ "tree-seed", required_argument, NULL, 'S' },
		{ "ios", required_argument, NULL, 'i' },
		{ "rand-seed", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cfg c = { .files = 10000, .fanout = 32, .depth = 2, .size_dist = "fixed:4k",
			 .bs = 4096, .seed = 1, .ios = 100000, .rand_seed = 1 };
	content.kind = CONTENT_RANDOM;
	char err[512];
	uint64_t bytes, skipped = 0;
	double t0, t1;
	int ch;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'd': c.dir = optarg; break;
		case 'n': c.files = num("--files", optarg); break;
		case 'f': c.fanout = (uint32_t)num("--fanout", optarg); break;
		case 'D': c.depth = (uint32_t)num("--depth", optarg); break;
		case 'p': c.files_per_dir = num("--files-per-dir", optarg); break;
		case 'm': c.maildir = 1; break;
		case 's': c.size_dist = optarg; break;
		case 'b': c.bs = num("--bs", optarg); break;
		case 'S': c.seed = num("--tree-seed", optarg); break;
		case 'i': c.ios = num("--ios", optarg); break;
		case 'r': c.rand_seed = num("--rand-seed", optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || !c.dir) {
		usage(stderr);
		return 2;
	}
	c.mode = argv[optind];
	if (strcmp(c.mode, "layout") && strcmp(c.mode, "read"))
		die("mode must be layout or read, not '%s'", c.mode);
	if (!c.bs)
		die("--bs must be at least 1");
	if (tree_shape_init(&shape, c.files, c.fanout, c.depth, c.files_per_dir, c.maildir,
			    err, sizeof(err)))
		die("%s", err);
	if (size_dist_parse(&sizes, c.size_dist, "--size-dist", err, sizeof(err)))
		die("%s", err);
	wbuf = aligned_alloc(4096, (c.bs + 4095) / 4096 * 4096);
	if (!wbuf || content_pool_init(&pool, &content, c.seed, c.bs))
		die("out of memory for the content pool");
	rootfd = open(c.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		die("%s: %s", c.dir, strerror(errno));

	t0 = now_s();
	if (!strcmp(c.mode, "layout"))
		bytes = do_layout(&c, &skipped);
	else
		bytes = do_read(&c);
	t1 = now_s();

	{
		uint64_t ops = !strcmp(c.mode, "layout") ? c.files : c.ios;
		double s = t1 - t0;

		printf("{\"mode\":\"%s\",\"files\":%llu,\"tree_files\":%llu,\"seconds\":%.6f,"
		       "\"files_per_s\":%.1f,\"bytes\":%llu,\"skipped\":%llu}\n",
		       c.mode, (unsigned long long)ops, (unsigned long long)c.files, s,
		       s > 0 ? (double)ops / s : 0.0, (unsigned long long)bytes,
		       (unsigned long long)skipped);
	}
	close(rootfd);
	content_pool_free(&pool);
	size_dist_free(&sizes);
	return 0;
}
