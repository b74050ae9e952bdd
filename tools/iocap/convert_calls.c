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

static void dup_call(struct conv *c, long long pid, char **args, long long value)
{
	struct fdarg old;
	struct ofd *src;

	arg_fd(c, args, 0, &old);
	src = fd_obj(c, pid, &old, "dup", 0);
	free(old.path);
	if (src && value >= 0)
		imap_set(table(c, pid), value, src);
}

static void clone_call(struct conv *c, long long pid, long long child, int share)
{
	struct imap *parent, *mine, *t;
	struct ient *e;
	size_t i = 0;

	if (child <= 0)
		return;
	parent = table(c, pid);
	mine = imap_get(&c->tables, child);
	if (share) {
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

static void fallocate_call(struct conv *c, int64_t t, long long pid, char **args)
{
	struct fdarg fd;
	struct ofd *f;
	struct obj *o;
	const char *mode = args[1];
	long long off, n;

	arg_fd(c, args, 0, &fd);
	f = fd_obj(c, pid, &fd, "fallocate", 1);
	free(fd.path);
	if (!f)
		return;
	off = arg_int(c, args, 2);
	n = arg_int(c, args, 3);
	o = f->obj;
	if (strstr(mode, "FALLOC_FL_PUNCH_HOLE")) {
		if (off >= o->cur || n <= 0) {
			count(&c->dropped, "fallocate punch holes beyond the end of the file", 1);
			return;
		}
		emit(c, t, pid, o, OP_TRIM, off, n < o->cur - off ? n : o->cur - off);
		return;
	}
	if (!strcmp(mode, "0") && off + n > o->cur) {
		count(&c->mapped,
		      "fallocate calls that extend a file, recorded as a truncate to the "
		      "new size (no allocation in the format)",
		      1);
		truncate_obj(c, t, pid, o, off + n);
		return;
	}
	lostf(c, "fallocate calls with mode %s (no equivalent in the format)", mode);
}

static void sfr_call(struct conv *c, int64_t t, long long pid, char **args)
{
	struct fdarg fd;
	struct ofd *f;
	long long off, n;

	arg_fd(c, args, 0, &fd);
	f = fd_obj(c, pid, &fd, "sync_file_range", 1);
	free(fd.path);
	if (!f)
		return;
	off = arg_int(c, args, 1);
	n = arg_int(c, args, 2);
	if (off >= f->obj->cur && !(off == 0 && n == 0)) {
		count(&c->dropped, "sync_file_ranges beyond the end of the file", 1);
		return;
	}
	if (n && off + n > f->obj->cur)
		n = f->obj->cur - off;
	emit(c, t, pid, f->obj, OP_SFR, off, n);
}

static const char *const known[] = {
	"pread64",  "pwrite64",	 "fsync",     "fdatasync", "syncfs", "sync_file_range",
	"close",    "ftruncate", "fallocate", "lseek",	   "fchdir", "copy_file_range",
	"sendfile", "dup",	 "dup2",      "dup3",	   "fcntl",  "openat",
	"truncate", "mkdir",	 "chdir",     "rmdir",	   "unlink", "renameat2",
	"clone3"
};

void conv_call(struct conv *c, long long pid, int64_t t, const char *name, char **args, int nargs,
	       long long value, const struct fdarg *resfd, const char *err)
{
	struct fdarg fd = { 0 };
	unsigned i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(name, known[i]))
			break;
	if (i == sizeof(known) / sizeof(known[0]))
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
	if (!strcmp(name, "pread64") || !strcmp(name, "pwrite64")) {
		need(c, nargs, 4, name);
		arg_fd(c, args, 0, &fd);
		io_call(c, t, pid, &fd, name[1] == 'r' ? OP_READ : OP_WRITE, arg_int(c, args, 3),
			value, name);
	} else if (!strcmp(name, "fsync") || !strcmp(name, "fdatasync")) {
		need(c, nargs, 1, name);
		arg_fd(c, args, 0, &fd);
		sync_call(c, t, pid, &fd, name[1] == 's' ? OP_FSYNC : OP_FDATASYNC);
	} else if (!strcmp(name, "syncfs")) {
		lost(c, "syncfs calls (no equivalent in the format)");
	} else if (!strcmp(name, "copy_file_range")) {
		lost(c, "copy_file_range calls (no equivalent in the format)");
	} else if (!strcmp(name, "sendfile")) {
		lost(c, "sendfile calls (no equivalent in the format)");
	} else if (!strcmp(name, "sync_file_range")) {
		need(c, nargs, 3, name);
		sfr_call(c, t, pid, args);
	} else if (!strcmp(name, "close")) {
		need(c, nargs, 1, name);
		arg_fd(c, args, 0, &fd);
		imap_del(table(c, pid), fd.num);
	} else if (!strcmp(name, "ftruncate")) {
		struct ofd *f;

		need(c, nargs, 2, name);
		arg_fd(c, args, 0, &fd);
		f = fd_obj(c, pid, &fd, "ftruncate", 1);
		if (f)
			truncate_obj(c, t, pid, f->obj, arg_int(c, args, 1));
	} else if (!strcmp(name, "fallocate")) {
		need(c, nargs, 4, name);
		fallocate_call(c, t, pid, args);
	} else if (!strcmp(name, "lseek")) {
		struct ofd *f;
		long long v;

		need(c, nargs, 3, name);
		arg_fd(c, args, 0, &fd);
		f = fd_obj(c, pid, &fd, "lseek", 1);
		if (f) {
			count(&c->ignored, "lseek calls (file positions tracked)", 1);
			if (!strcmp(args[2], "SEEK_END") && parse_int(args[1], &v) && v == 0)
				saw_end(c, f->obj, value, 1);
		}
	} else if (!strcmp(name, "fchdir")) {
		need(c, nargs, 1, name);
		arg_fd(c, args, 0, &fd);
	} else if (!strcmp(name, "chdir")) {
		need(c, nargs, 1, name);
		free(arg_path(c, args, 0));
	} else if (!strcmp(name, "dup") || !strcmp(name, "dup2") || !strcmp(name, "dup3")) {
		need(c, nargs, 1, name);
		dup_call(c, pid, args, value);
	} else if (!strcmp(name, "fcntl")) {
		need(c, nargs, 2, name);
		if (strcmp(args[1], "F_DUPFD") && strcmp(args[1], "F_DUPFD_CLOEXEC"))
			conv_fallback(c, "an fcntl iocap does not write");
		dup_call(c, pid, args, value);
	} else if (!strcmp(name, "openat")) {
		need(c, nargs, 3, name);
		if (strcmp(args[0], "AT_FDCWD"))
			conv_fallback(c, "an openat against a descriptor");
		open_call(c, t, pid, args, value, resfd);
	} else if (!strcmp(name, "truncate")) {
		char *p;

		need(c, nargs, 2, name);
		p = arg_path(c, args, 0);
		truncate_obj(c, t, pid, lookup(c, p), arg_int(c, args, 1));
		free(p);
	} else if (!strcmp(name, "mkdir")) {
		char *p;

		need(c, nargs, 1, name);
		p = arg_path(c, args, 0);
		mkdir_call(c, t, pid, p);
		free(p);
	} else if (!strcmp(name, "rmdir") || !strcmp(name, "unlink")) {
		char *p;

		need(c, nargs, 1, name);
		p = arg_path(c, args, 0);
		unlink_obj(c, t, pid, p, name[0] == 'r');
		free(p);
	} else if (!strcmp(name, "renameat2")) {
		char *p1, *p2;

		need(c, nargs, 4, name);
		if (strcmp(args[0], "AT_FDCWD") || strcmp(args[2], "AT_FDCWD"))
			conv_fallback(c, "a renameat2 against a descriptor");
		p1 = arg_path(c, args, 1);
		p2 = arg_path(c, args, 3);
		rename_call(c, t, pid, p1, p2, nargs > 4 ? args[4] : "");
		free(p1);
		free(p2);
	} else if (!strcmp(name, "clone3")) {
		need(c, nargs, 1, name);
		clone_call(c, pid, value, strstr(args[0], "CLONE_FILES") != NULL);
	}
	free(fd.path);
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
