/*
 * iocap-convert's calls: each call iocap writes, its arguments read and
 * handed to the model (convert.c), and the files' final paths at the end
 * (build_files in convert.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"

#define DIR_OPS ((1u << OP_FSYNC) | (1u << OP_FDATASYNC) | (1u << OP_CREATE) | (1u << OP_UNLINK))

/* One call as iocap wrote it: its thread, time, name, arguments and result. */
struct call {
	long long pid;
	int64_t t;
	const char *name;
	char **args;
	int nargs;
	long long value;
	const struct fdarg *resfd;
};

/*
 * The open file of the call's first argument, a descriptor, or NULL (not a
 * file, or not known: counted as the call's when @counted).
 */
static struct ofd *fd_arg(struct conv *c, const struct call *k, int counted)
{
	struct fdarg fd;
	struct ofd *f;

	arg_fd(c, k->args, 0, &fd);
	f = fd_obj(c, k->pid, &fd, k->name, counted);
	free(fd.path);
	return f;
}

/* dup, dup2, dup3, fcntl's F_DUPFD: the new descriptor is the old one's file */
static void dup_call(struct conv *c, const struct call *k)
{
	struct ofd *src = fd_arg(c, k, 0);

	if (src && k->value >= 0)
		imap_set(table(c, k->pid), k->value, src);
}

static void fcntl_call(struct conv *c, const struct call *k)
{
	if (strcmp(k->args[1], "F_DUPFD") && strcmp(k->args[1], "F_DUPFD_CLOEXEC"))
		conv_fallback(c, "an fcntl iocap does not write");
	dup_call(c, k);
}

/* clone3: the child shares its parent's descriptors (CLONE_FILES) or has a copy */
static void clone_call(struct conv *c, const struct call *k)
{
	struct imap *parent, *mine, *t;
	long long child = k->value;
	struct ient *e;
	size_t i = 0;

	if (child <= 0)
		return;
	parent = table(c, k->pid);
	mine = imap_get(&c->tables, child);
	if (strstr(k->args[0], "CLONE_FILES")) {
		if (mine && mine != parent)
			while ((e = imap_next(mine, &i)))
				imap_set(parent, e->k, e->v);
		imap_set(&c->tables, child, parent);
		return;
	}
	t = xcalloc(1, sizeof(*t));
	while ((e = imap_next(parent, &i)))
		imap_set(t, e->k, e->v);
	if (mine) {
		i = 0;
		while ((e = imap_next(mine, &i)))
			imap_set(t, e->k, e->v);
	}
	imap_set(&c->tables, child, t);
}

static void fallocate_call(struct conv *c, const struct call *k)
{
	struct ofd *f = fd_arg(c, k, 1);
	const char *mode = k->args[1];
	long long off, n;
	struct obj *o;

	if (!f)
		return;
	off = arg_int(c, k->args, 2);
	n = arg_int(c, k->args, 3);
	o = f->obj;
	if (strstr(mode, "FALLOC_FL_PUNCH_HOLE")) {
		if (off >= o->cur || n <= 0) {
			count(&c->dropped, "fallocate punch holes beyond the end of the file", 1);
			return;
		}
		emit(c, k->t, k->pid, o, OP_TRIM, off, n < o->cur - off ? n : o->cur - off);
		return;
	}
	if (!strcmp(mode, "0") && off + n > o->cur) {
		count(&c->mapped,
		      "fallocate calls that extend a file, recorded as a truncate to the "
		      "new size (no allocation in the format)",
		      1);
		truncate_obj(c, k->t, k->pid, o, off + n);
		return;
	}
	lostf(c, "fallocate calls with mode %s (no equivalent in the format)", mode);
}

static void sfr_call(struct conv *c, const struct call *k)
{
	struct ofd *f = fd_arg(c, k, 1);
	long long off, n;

	if (!f)
		return;
	off = arg_int(c, k->args, 1);
	n = arg_int(c, k->args, 2);
	if (off >= f->obj->cur && !(off == 0 && n == 0)) {
		count(&c->dropped, "sync_file_ranges beyond the end of the file", 1);
		return;
	}
	if (n && off + n > f->obj->cur)
		n = f->obj->cur - off;
	emit(c, k->t, k->pid, f->obj, OP_SFR, off, n);
}

/* pread64, pwrite64 */
static void rw_call(struct conv *c, const struct call *k)
{
	struct fdarg fd;

	arg_fd(c, k->args, 0, &fd);
	io_call(c, k->t, k->pid, &fd, k->name[1] == 'r' ? OP_READ : OP_WRITE,
		arg_int(c, k->args, 3), k->value, k->name);
	free(fd.path);
}

/* fsync, fdatasync */
static void fsync_call(struct conv *c, const struct call *k)
{
	struct fdarg fd;

	arg_fd(c, k->args, 0, &fd);
	sync_call(c, k->t, k->pid, &fd, k->name[1] == 's' ? OP_FSYNC : OP_FDATASYNC);
	free(fd.path);
}

/* syncfs, copy_file_range, sendfile */
static void unmapped_call(struct conv *c, const struct call *k)
{
	lostf(c, "%s calls (no equivalent in the format)", k->name);
}

static void close_call(struct conv *c, const struct call *k)
{
	struct fdarg fd;

	arg_fd(c, k->args, 0, &fd);
	imap_del(table(c, k->pid), fd.num);
	free(fd.path);
}

static void ftruncate_call(struct conv *c, const struct call *k)
{
	struct ofd *f = fd_arg(c, k, 1);

	if (f)
		truncate_obj(c, k->t, k->pid, f->obj, arg_int(c, k->args, 1));
}

static void lseek_call(struct conv *c, const struct call *k)
{
	struct ofd *f = fd_arg(c, k, 1);
	long long v;

	if (!f)
		return;
	count(&c->ignored, "lseek calls (file positions tracked)", 1);
	if (!strcmp(k->args[2], "SEEK_END") && parse_int(k->args[1], &v) && v == 0)
		saw_end(c, f->obj, k->value, 1);
}

/* fchdir: its descriptor read, nothing recorded */
static void fchdir_call(struct conv *c, const struct call *k)
{
	struct fdarg fd;

	arg_fd(c, k->args, 0, &fd);
	free(fd.path);
}

/* chdir: its path read, nothing recorded */
static void chdir_call(struct conv *c, const struct call *k)
{
	free(arg_path(c, k->args, 0));
}

static void openat_call(struct conv *c, const struct call *k)
{
	if (strcmp(k->args[0], "AT_FDCWD"))
		conv_fallback(c, "an openat against a descriptor");
	open_call(c, k->t, k->pid, k->args, k->value, k->resfd);
}

static void truncate_call(struct conv *c, const struct call *k)
{
	char *p = arg_path(c, k->args, 0);

	truncate_obj(c, k->t, k->pid, lookup(c, p), arg_int(c, k->args, 1));
	free(p);
}

static void mkdir_path_call(struct conv *c, const struct call *k)
{
	char *p = arg_path(c, k->args, 0);

	mkdir_call(c, k->t, k->pid, p);
	free(p);
}

/* rmdir, unlink */
static void unlink_call(struct conv *c, const struct call *k)
{
	char *p = arg_path(c, k->args, 0);

	unlink_obj(c, k->t, k->pid, p, k->name[0] == 'r');
	free(p);
}

static void renameat2_call(struct conv *c, const struct call *k)
{
	char *p1, *p2;

	if (strcmp(k->args[0], "AT_FDCWD") || strcmp(k->args[2], "AT_FDCWD"))
		conv_fallback(c, "a renameat2 against a descriptor");
	p1 = arg_path(c, k->args, 1);
	p2 = arg_path(c, k->args, 3);
	rename_call(c, k->t, k->pid, p1, p2, k->nargs > 4 ? k->args[4] : "");
	free(p1);
	free(p2);
}

/* Each call iocap writes: the arguments it has at least, and what reads them. */
/* clang-format off */
static const struct handler {
	const char *name;
	int nargs;
	void (*fn)(struct conv *c, const struct call *k);
} handlers[] = {
	{ "pread64", 4, rw_call },		{ "pwrite64", 4, rw_call },
	{ "fsync", 1, fsync_call },		{ "fdatasync", 1, fsync_call },
	{ "syncfs", 0, unmapped_call },		{ "sync_file_range", 3, sfr_call },
	{ "close", 1, close_call },		{ "ftruncate", 2, ftruncate_call },
	{ "fallocate", 4, fallocate_call },	{ "lseek", 3, lseek_call },
	{ "fchdir", 1, fchdir_call },		{ "copy_file_range", 0, unmapped_call },
	{ "sendfile", 0, unmapped_call },	{ "dup", 1, dup_call },
	{ "dup2", 1, dup_call },		{ "dup3", 1, dup_call },
	{ "fcntl", 2, fcntl_call },		{ "openat", 3, openat_call },
	{ "truncate", 2, truncate_call },	{ "mkdir", 1, mkdir_path_call },
	{ "chdir", 1, chdir_call },		{ "rmdir", 1, unlink_call },
	{ "unlink", 1, unlink_call },		{ "renameat2", 4, renameat2_call },
	{ "clone3", 1, clone_call },
};
/* clang-format on */

void conv_call(struct conv *c, long long pid, int64_t t, const char *name, char **args, int nargs,
	       long long value, const struct fdarg *resfd, const char *err)
{
	const struct call k = { pid, t, name, args, nargs, value, resfd };
	const struct handler *h = NULL;
	unsigned i;

	for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]) && !h; i++)
		if (!strcmp(name, handlers[i].name))
			h = &handlers[i];
	if (!h)
		conv_fallback(c, "a call iocap does not write (%s)", name);
	if (err) {
		if (!strcmp(err, "?") || !strcmp(err, "ERESTARTSYS") ||
		    !strcmp(err, "ERESTARTNOINTR") || !strcmp(err, "ERESTARTNOHAND") ||
		    !strcmp(err, "ERESTART_RESTARTBLOCK"))
			countf(&c->dropped, "%s calls interrupted or without a result", name);
		else
			countf(&c->dropped, "failed %s calls (-1 %s)", name, err);
		return;
	}
	need(c, nargs, h->nargs, name);
	h->fn(c, &k);
}

/* build_files without the roles: final paths and directory-ness of the files with records */
void conv_build_files(struct conv *c)
{
	struct smap paths = { 0 };
	int i;

	for (i = 0; i < c->nfiles; i++)
		smap_put(&paths, c->files[i]->path)->v = c->files[i];
	for (i = 0; i < c->nfiles; i++) {
		char *p = xstrdup(c->files[i]->path), *s;

		while ((s = strrchr(p, '/'))) {
			struct sent *e;
			struct tfile *up;

			*s = '\0';
			e = smap_get(&paths, p);
			up = e ? e->v : NULL;
			if (!up || up->is_dir)
				continue;
			if (!(up->ops & ~DIR_OPS)) {
				up->is_dir = 1;
				continue;
			}
			int n = 1;
			char *cand;

			for (;; n++) {
				cand = tilde(up->path, n);
				if (!smap_get(&paths, cand) && !smap_get(&c->tfiles, cand))
					break;
				free(cand);
			}
			smap_del(&paths, up->path);
			free(up->path);
			up->path = cand;
			smap_put(&paths, cand)->v = up;
		}
		free(p);
	}
	for (i = 0; i < c->nfiles; i++) {
		struct tfile *tf = c->files[i];

		if (!strcmp(tf->path, "."))
			tf->is_dir = 1;
		if (tf->is_dir && (tf->ops & ~DIR_OPS))
			tf->is_dir = 0;
	}
}
