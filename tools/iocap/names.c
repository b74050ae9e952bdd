// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: what the traced processes' descriptors and relative paths name
 * (names.h): the files seen so far by device and inode, with the path each
 * was opened, renamed or found under in /proc; the processes' working
 * directories; paths made absolute.
 */
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "iocap.h"
#include "names.h"
#include "user.h"

/* ------------------------------------------------------------------ */
/* Files by device and inode                                          */
/* ------------------------------------------------------------------ */

static struct fent *ftab;
static size_t fcap, fcount;

static size_t fhash(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4fULL;

	return (size_t)(h ^ (h >> 29));
}

static struct fent *fslot(dev_t dev, ino_t ino)
{
	size_t i = fhash(dev, ino) & (fcap - 1);

	while (ftab[i].path && !(ftab[i].dev == dev && ftab[i].ino == ino))
		i = (i + 1) & (fcap - 1);
	return &ftab[i];
}

void fput(dev_t dev, ino_t ino, const char *path, int deleted)
{
	struct fent *e;

	if (fcount * 2 >= fcap) {
		struct fent *old = ftab;
		size_t i, n = fcap;

		fcap = fcap ? fcap * 2 : 4096;
		ftab = xmalloc(fcap * sizeof(*ftab));
		for (i = 0; i < n; i++)
			if (old[i].path)
				*fslot(old[i].dev, old[i].ino) = old[i];
		free(old);
	}
	e = fslot(dev, ino);
	if (!e->path)
		fcount++;
	else
		free(e->path);
	e->dev = dev;
	e->ino = ino;
	e->path = strdup(path);
	if (!e->path)
		die("out of memory");
	e->deleted = deleted;
}

struct fent *fget(dev_t dev, ino_t ino)
{
	struct fent *e;

	if (!fcap)
		return NULL;
	e = fslot(dev, ino);
	return e->path ? e : NULL;
}

/* A name changed: @old (and what is below it) is now @new (NULL: unlinked). */
void frename(const char *old, const char *new)
{
	size_t i, n = strlen(old);

	for (i = 0; i < fcap; i++) {
		struct fent *e = &ftab[i];
		char buf[PATH_MAX * 2];

		if (!e->path || e->deleted || strncmp(e->path, old, n) ||
		    (e->path[n] && e->path[n] != '/'))
			continue;
		if (!new) {
			if (!e->path[n])
				e->deleted = 1;
			continue;
		}
		snprintf(buf, sizeof(buf), "%s%s", new, e->path + n);
		free(e->path);
		e->path = strdup(buf);
		if (!e->path)
			die("out of memory");
	}
}

dev_t kdev(unsigned long long d)
{
	return makedev((unsigned)(d >> 20), (unsigned)(d & 0xfffff));
}

/* ------------------------------------------------------------------ */
/* Paths                                                               */
/* ------------------------------------------------------------------ */

/* @path made absolute against @base and normalised (".", "..", "//"). */
void join(const char *base, const char *path, char *out, size_t len)
{
	char tmp[PATH_MAX * 2], *save, *tok;
	size_t n = 0;

	if (path[0] == '/')
		snprintf(tmp, sizeof(tmp), "%s", path);
	else
		snprintf(tmp, sizeof(tmp), "%s/%s", base, path);
	out[0] = '\0';
	for (tok = strtok_r(tmp, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "."))
			continue;
		if (!strcmp(tok, "..")) {
			char *s = strrchr(out, '/');

			n = s ? (size_t)(s - out) : 0;
			out[n] = '\0';
			continue;
		}
		n += snprintf(out + n, n < len ? len - n : 0, "/%s", tok);
		if (n >= len)
			n = len - 1;
	}
	if (!out[0])
		snprintf(out, len, "/");
}

struct cwd {
	unsigned tgid;
	char path[PATH_MAX]; /* "": unknown (/proc could not tell, or a chdir's path was cut) */
};
static struct cwd cwds[1024];
static unsigned ncwd;

const char *cwd_of(unsigned tgid)
{
	char link[64];
	unsigned i;
	ssize_t n;

	for (i = 0; i < ncwd; i++)
		if (cwds[i].tgid == tgid)
			return cwds[i].path;
	i = ncwd < 1024 ? ncwd++ : tgid % 1024;
	cwds[i].tgid = tgid;
	snprintf(link, sizeof(link), "/proc/%u/cwd", tgid);
	n = readlink(link, cwds[i].path, sizeof(cwds[i].path) - 1);
	cwds[i].path[n > 0 ? n : 0] = '\0';
	return cwds[i].path;
}

void set_cwd(unsigned tgid, const char *path)
{
	cwd_of(tgid);
	for (unsigned i = 0; i < ncwd; i++)
		if (cwds[i].tgid == tgid)
			snprintf(cwds[i].path, sizeof(cwds[i].path), "%s", path);
}

/* The path of a descriptor's file: known by inode, else read from /proc now. */
const struct fent *path_of(unsigned tgid, long long fd, const struct iocap_file *f)
{
	char link[64], buf[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (!f->mode)
		return NULL;
	struct fent *e = fget(kdev(f->dev), f->ino);
	if (e)
		return e;
	if (fd < 0)
		return NULL;
	snprintf(link, sizeof(link), "/proc/%u/fd/%lld", tgid, fd);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '/')
		return NULL;
	buf[n] = '\0';
	if (stat(link, &st) || st.st_dev != kdev(f->dev) || st.st_ino != f->ino)
		return NULL;
	if (n > 10 && !strcmp(buf + n - 10, " (deleted)")) {
		buf[n - 10] = '\0';
		fput(st.st_dev, st.st_ino, buf, 1);
	} else {
		fput(st.st_dev, st.st_ino, buf, 0);
	}
	return fget(st.st_dev, st.st_ino);
}

/* The files the traced processes have open now. */
void scan_fds(unsigned tgid)
{
	char dir[64];
	struct dirent *d;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%u/fd", tgid);
	dp = opendir(dir);
	if (!dp)
		return;
	while ((d = readdir(dp))) {
		struct iocap_file f = { 0 };
		char link[PATH_MAX];
		struct stat st;

		if (d->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, d->d_name);
		if (stat(link, &st) || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
			continue;
		f.dev = ((unsigned long long)major(st.st_dev) << 20) | minor(st.st_dev);
		f.ino = st.st_ino;
		f.mode = st.st_mode;
		path_of(tgid, atoll(d->d_name), &f);
	}
	closedir(dp);
}
