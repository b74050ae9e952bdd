/* engines/lib/target: claiming an engine's directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "target.h"
#include "test.h"

/* A fresh empty directory under $TMPDIR (or /tmp); free and remove by the caller. */
static char *scratch_dir(void)
{
	char *p = malloc(4096);

	if (!p)
		return NULL;
	snprintf(p, 4096, "%s/unit-target.XXXXXX", target_tmpdir());
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

static void rm_scratch(char *dir, const char *const *names)
{
	char p[4096];

	for (; names && *names; names++) {
		snprintf(p, sizeof(p), "%s/%s", dir, *names);
		if (unlink(p))
			rmdir(p);
	}
	rmdir(dir);
	free(dir);
}

TEST(target_tmpdir_default_and_env)
{
	char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;

	setenv("TMPDIR", "", 1);
	CHECK_STREQ(target_tmpdir(), "/tmp");
	unsetenv("TMPDIR");
	CHECK_STREQ(target_tmpdir(), "/tmp");
	setenv("TMPDIR", "/var/tmp", 1);
	CHECK_STREQ(target_tmpdir(), "/var/tmp");
	if (old)
		setenv("TMPDIR", old, 1);
	else
		unsetenv("TMPDIR");
	free(old);
}

TEST(target_mkdtemp_names_the_engine_and_job)
{
	char *dir = scratch_dir(), *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	char out[4096], err[256], want[4096];
	struct stat st;

	CHECK(dir != NULL);
	if (!dir)
		return;
	setenv("TMPDIR", dir, 1);
	CHECK(target_mkdtemp("postmark", "job.0", out, sizeof(out), err, sizeof(err)) == 0);
	snprintf(want, sizeof(want), "%s/fio-postmark.job.0.", dir);
	CHECK(!strncmp(out, want, strlen(want)) && strlen(out) == strlen(want) + 6);
	CHECK(stat(out, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	rmdir(out);

	/* an unusable $TMPDIR: one reason naming it, and no path left in @out */
	setenv("TMPDIR", "/nonexistent-pack-unit", 1);
	CHECK(target_mkdtemp("dbreplay", "r.0", out, sizeof(out), err, sizeof(err)) == -1);
	CHECK_STREQ(err, "cannot create a directory under /nonexistent-pack-unit: No such file or "
			 "directory");
	CHECK_STREQ(out, "");
	if (old)
		setenv("TMPDIR", old, 1);
	else
		unsetenv("TMPDIR");
	free(old);
	rm_scratch(dir, NULL);
}

TEST(target_mkdir_creates_once)
{
	char *dir = scratch_dir();
	const char *names[] = {"job.1", "file", NULL};
	int fd, made = 0;

	CHECK(dir != NULL);
	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(target_mkdir(fd, "job.1", &made) == 0 && made == 1);
	made = 0;
	CHECK(target_mkdir(fd, "job.1", &made) == 0 && made == 0); /* an earlier run's */
	close(openat(fd, "file", O_WRONLY | O_CREAT, 0644));
	CHECK(target_mkdir(fd, "file/x", &made) == -ENOTDIR);
	close(fd);
	rm_scratch(dir, names);
}

TEST(target_claim_lock_is_exclusive)
{
	char *dir = scratch_dir();
	char err[256] = "";
	int a, b;

	CHECK(dir != NULL);
	if (!dir)
		return;
	a = open(dir, O_RDONLY | O_DIRECTORY);
	b = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(target_claim(a, dir, "dbreplay", TARGET_WRITABLE | TARGET_LOCK, err, sizeof(err)) ==
	      0);
	/* a second job (another open file description) is refused, with the engine named */
	CHECK(target_claim(b, dir, "dbreplay", TARGET_LOCK, err, sizeof(err)) == -1);
	CHECK_STREQ(err, "is in use by another dbreplay job");
	/* the writable check alone takes no lock */
	CHECK(target_claim(b, dir, "dbreplay", TARGET_WRITABLE, err, sizeof(err)) == 0);
	close(a);
	CHECK(target_claim(b, dir, "dbreplay", TARGET_LOCK, err, sizeof(err)) == 0);
	close(b);
	rm_scratch(dir, NULL);
}

TEST(target_claim_not_writable)
{
	char *dir = scratch_dir(), err[256] = "";
	int fd, r;

	CHECK(dir != NULL);
	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(chmod(dir, 0500) == 0);
	r = target_claim(fd, dir, "smallfile", TARGET_WRITABLE, err, sizeof(err));
	/* access(2) with the effective ids: root may write to a 0500 directory */
	if (geteuid() == 0) {
		CHECK(r == 0);
	} else {
		CHECK(r == -1);
		CHECK_STREQ(err, "is not writable: Permission denied");
	}
	close(fd);
	chmod(dir, 0700);
	rm_scratch(dir, NULL);
}

TEST(target_publish_read_back_and_race)
{
	char *dir = scratch_dir();
	const char *names[] = {".m", NULL};
	char buf[64];
	int fd;

	CHECK(dir != NULL);
	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(target_dir_is_empty(fd, ".m") == 1);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), NULL) == -ENOENT);
	CHECK(target_publish(fd, ".m", "tree v1\nfiles 10\n") == 0);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), NULL) == 0);
	CHECK_STREQ(buf, "tree v1\nfiles 10\n");
	/* the loser of a race is told, and the winner's text stays */
	CHECK(target_publish(fd, ".m", "other\n") == -EEXIST);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), NULL) == 0);
	CHECK_STREQ(buf, "tree v1\nfiles 10\n");
	/* longer than the buffer: not a marker, not read */
	CHECK(target_read_file(fd, ".m", buf, 5, NULL) == -EFBIG);
	CHECK(target_dir_is_empty(fd, ".m") == 0);
	close(fd);
	rm_scratch(dir, names);
}

/* A marker is a small text file: nothing after its text. */
TEST(target_read_file_refuses_tails)
{
	const char *names[] = { ".m", NULL };
	char *dir = scratch_dir();
	char buf[64];
	int fd, mfd;

	CHECK(dir != NULL);
	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(target_publish(fd, ".m", "tree v1\n") == 0);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), NULL) == 0);
	/* zeros after the text, within the buffer or far past it (sparse) */
	mfd = openat(fd, ".m", O_WRONLY);
	CHECK(mfd >= 0 && ftruncate(mfd, 20) == 0);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), NULL) == -EFBIG);
	CHECK(ftruncate(mfd, 1LL << 40) == 0);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), NULL) == -EFBIG);
	close(mfd);
	close(fd);
	rm_scratch(dir, names);
}

/* The pid of a process that has ended. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

/* A scratch directory, opened: its descriptor, or -1 (a failed check). */
static int scratch_open(char **dirp)
{
	*dirp = scratch_dir();
	CHECK(*dirp != NULL);
	return *dirp ? open(*dirp, O_RDONLY | O_DIRECTORY) : -1;
}

TEST(target_dir_is_empty_ignores_a_marker_in_progress)
{
	char *dir = scratch_dir();
	char live[32];
	const char *names[] = { live, ".mx", NULL };
	int fd;

	CHECK(dir != NULL);
	if (!dir)
		return;
	snprintf(live, sizeof(live), ".m.%d", (int)getpid());
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	close(openat(fd, live, O_WRONLY | O_CREAT, 0644));
	CHECK(target_dir_is_empty(fd, ".m") == 1);
	close(openat(fd, ".mx", O_WRONLY | O_CREAT, 0644));
	CHECK(target_dir_is_empty(fd, ".m") == 0);
	/* twice on one descriptor: the scan starts from the top each time */
	CHECK(target_dir_is_empty(fd, ".m") == 0);
	close(fd);
	rm_scratch(dir, names);
}

/* A name that only looks like a marker being published is a user's file. */
TEST(target_dir_is_empty_a_marker_like_name_is_data)
{
	static const char *const like[] = { ".m.orig", ".m.",	".m.0",
					    ".m.12x",  ".m.-5", ".m.99999999999999999999",
					    NULL };
	char *dir, dead[32];
	const char *names[2] = { NULL, NULL };
	int fd = scratch_open(&dir), i;

	if (fd < 0)
		return;
	for (i = 0; like[i]; i++) {
		close(openat(fd, like[i], O_WRONLY | O_CREAT, 0644));
		CHECK(target_dir_is_empty(fd, ".m") == 0);
		unlinkat(fd, like[i], 0);
	}
	/* the private name of a publisher that died (a SIGKILL mid-publish) */
	snprintf(dead, sizeof(dead), ".m.%d", (int)dead_pid());
	close(openat(fd, dead, O_WRONLY | O_CREAT, 0644));
	CHECK(target_dir_is_empty(fd, ".m") == 0);
	names[0] = dead;
	close(fd);
	rm_scratch(dir, names);
}

/*
 * The link count is told, not judged: a cp -al copy of a tree gives its
 * marker a second name, and only the engine knows whose marker it is.
 */
TEST(target_read_file_reports_links)
{
	const char *names[] = { ".m", ".l", NULL };
	char *dir = scratch_dir();
	char buf[64];
	nlink_t links = 0;
	int fd;

	CHECK(dir != NULL);
	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(target_publish(fd, ".m", "tree v1\n") == 0);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), &links) == 0);
	CHECK(links == 1);
	CHECK(linkat(fd, ".m", fd, ".l", 0) == 0);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), &links) == 0);
	CHECK(links == 2);
	CHECK_STREQ(buf, "tree v1\n");
	CHECK(unlinkat(fd, ".l", 0) == 0);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), &links) == 0);
	CHECK(links == 1);
	close(fd);
	rm_scratch(dir, names);
}

/* Only a regular file is a marker; a FIFO is never opened (it would block). */
TEST(target_read_file_only_a_regular_file)
{
	const char *names[] = { ".fifo", ".link", ".dir", ".m", NULL };
	char *dir, buf[64];
	int fd = scratch_open(&dir);

	if (fd < 0)
		return;
	CHECK(mkfifoat(fd, ".fifo", 0644) == 0);
	CHECK(target_read_file(fd, ".fifo", buf, sizeof(buf), NULL) == -EINVAL);
	CHECK(target_publish(fd, ".m", "tree v1\n") == 0);
	CHECK(symlinkat(".m", fd, ".link") == 0);
	CHECK(target_read_file(fd, ".link", buf, sizeof(buf), NULL) == -EINVAL);
	CHECK(mkdirat(fd, ".dir", 0755) == 0);
	CHECK(target_read_file(fd, ".dir", buf, sizeof(buf), NULL) == -EINVAL);
	CHECK(target_read_file(fd, ".m", buf, sizeof(buf), NULL) == 0);
	CHECK_STREQ(buf, "tree v1\n");
	close(fd);
	rm_scratch(dir, names);
}

TEST(target_write_all_whole)
{
	char *path = test_tmpfile("", 0), buf[8192];
	static char big[6000];
	int fd;
	FILE *f;
	size_t n;

	memset(big, 'x', sizeof(big));
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(target_write_all(fd, big, sizeof(big)) == 0);
	close(fd);
	f = fopen(path, "r");
	n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	CHECK(n == sizeof(big));
	CHECK(target_write_all(-1, "x", 1) == -1 && errno == EBADF);
	test_rm(path);
}
