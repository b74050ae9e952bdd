/*
 * iocap-convert's model: what each call of iocap's output does to the
 * names, objects and descriptors of the capture, and the records it makes.
 * It is scripts/fiopack/capture/convert.py's Converter, handler for
 * handler, for the calls iocap writes (absolute paths, an offset on every
 * read and write, no unfinished calls): the trace must be the one that
 * converter writes, byte for byte (the capture tests run both). Anything
 * it would refuse, or that this port does not hold, goes back to it
 * (conv_fallback): the Python converter stays the reference, this is its
 * speed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"

const char *const op_name[OP_NR] = { "read", "write",	 "fsync",  "fdatasync", "sync_file_range",
				     "trim", "truncate", "create", "unlink" };

void count(struct smap *m, const char *key, long long n)
{
	smap_put(m, key)->n += n;
}

void countf(struct smap *m, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	count(m, buf, 1);
}

/* I/O of the data directory the trace cannot hold: a note and an "incomplete" line */
void lost(struct conv *c, const char *key)
{
	count(&c->dropped, key, 1);
	count(&c->unseen, key, 1);
}

void lostf(struct conv *c, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	lost(c, buf);
}

static int starts(const char *s, const char *pre)
{
	return !strncmp(s, pre, strlen(pre));
}

/* os.path.normpath of an absolute path */
char *normpath(const char *p)
{
	size_t n = strlen(p), o = 0;
	char *out = xmalloc(n + 3);
	const char *s = p;
	int lead = 0;

	while (*s == '/') {
		lead++;
		s++;
	}
	if (lead == 2)
		out[o++] = '/';
	if (lead)
		out[o++] = '/';
	size_t base = o;

	while (*s) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len == 0 || (len == 1 && s[0] == '.')) {
			/* nothing */
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			if (o > base) {
				while (o > base && out[o - 1] != '/')
					o--;
				if (o > base)
					o--;
			} else if (!lead) {
				conv_fallback(NULL, "a relative path climbing out");
			}
		} else {
			if (o > base)
				out[o++] = '/';
			memcpy(out + o, s, len);
			o += len;
		}
		s += len;
		while (*s == '/')
			s++;
	}
	if (!o)
		out[o++] = '.';
	out[o] = '\0';
	return out;
}

/* dbtrace.py path_check: NULL if @path may name a file of the trace */
static const char *path_check(const char *path, int dir)
{
	const char *s;

	if (!*path)
		return "is empty";
	if (strlen(path) > CONV_MAX_PATH)
		return "is longer than 1024 bytes";
	for (s = path; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return "has a blank or control character";
	if (path[0] == '/')
		return "is absolute";
	if (!strcmp(path, "."))
		return dir ? NULL : "is the target directory itself, only a directory may be '.'";
	for (s = path;;) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (!len)
			return "has an empty component";
		if (len == 2 && !strncmp(s, "..", 2))
			return "has a '..' component";
		if (len == 1 && *s == '.')
			return "has a '.' component";
		if (!e)
			return NULL;
		s = e + 1;
	}
}

/* the path relative to the data directory, NULL if outside (static buffer: copy it) */
static const char *rel(struct conv *c, const char *path)
{
	for (int i = 0; i < c->nroots; i++) {
		const char *r = c->roots[i];
		size_t n = strlen(r);

		if (!strcmp(path, r))
			return ".";
		if (strcmp(r, "/") && !strncmp(path, r, n) && path[n] == '/')
			return path + n + 1;
		if (!strcmp(r, "/") && path[0] == '/')
			return path + 1;
	}
	return NULL;
}

static int is_root(struct conv *c, const char *path)
{
	for (int i = 0; i < c->nroots; i++)
		if (!strcmp(path, c->roots[i]))
			return 1;
	return 0;
}

/* the name a path outside the data directory has under --outside keep */
static char *outside_name(struct conv *c, const char *path)
{
	char *r;

	while (*path == '/')
		path++;
	if (!*c->outside_prefix)
		return xstrdup(path);
	r = xmalloc(strlen(c->outside_prefix) + strlen(path) + 2);
	sprintf(r, "%s/%s", c->outside_prefix, path);
	return r;
}

char *tilde(const char *p, int n)
{
	char *r = xmalloc(strlen(p) + 24);

	sprintf(r, "%s~%d", p, n);
	return r;
}

static struct obj *new_obj(struct conv *c, const char *path, int existed, long long size,
			   int is_dir, int in_ns)
{
	struct obj *o = xcalloc(1, sizeof(*o));
	struct tfile *tf;
	struct sent *e;
	const char *rr;
	char *r;

	o->path = xstrdup(path);
	o->is_dir = is_dir;
	o->cur = size;
	o->bumpable = existed;
	if (in_ns)
		smap_put(&c->ns, path)->v = o;
	rr = rel(c, path);
	if (!rr) {
		if (c->outside == 2)
			conv_fallback(c, "a path outside the data directory (--outside error)");
		if (c->outside == 0) {
			o->outside = 1;
			return o;
		}
		r = outside_name(c, path);
	} else {
		r = xstrdup(rr);
	}
	e = smap_get(&c->tfiles, r);
	tf = e ? e->v : NULL;
	if (tf && tf->is_dir == is_dir && (!tf->owner || tf->owner->dead)) {
		tf->shared = tf->shared || tf->owner;
		tf->owner = o;
		free(r);
	} else {
		if (tf) {
			int n = 1;
			char *cand;

			for (;; n++) {
				cand = tilde(r, n);
				if (!smap_get(&c->tfiles, cand))
					break;
				free(cand);
			}
			free(r);
			r = cand;
		}
		c->ntfiles_order++;
		tf = xcalloc(1, sizeof(*tf));
		tf->path = r;
		tf->existed = existed;
		tf->size0 = existed ? size : -1;
		tf->is_dir = is_dir;
		tf->owner = o;
		tf->id = -1;
		tf->bad = path_check(r, is_dir);
		smap_put(&c->tfiles, r)->v = tf;
	}
	o->tf = tf;
	return o;
}

struct obj *lookup(struct conv *c, const char *path)
{
	struct sent *e = smap_get(&c->ns, path);

	if (e)
		return e->v;
	if (c->has_listing && !smap_get(&c->touched, path)) {
		struct sent *l = smap_get(&c->listing, path);

		if (l)
			return new_obj(c, path, 1, l->n, l->v == (void *)'d', 1);
		if (is_root(c, path))
			return new_obj(c, path, 1, 0, 1, 1);
		if (rel(c, path))
			count(&c->mapped,
			      "files missing from the listing, taken as existing before "
			      "the capture (size from the reads that reach furthest)",
			      1);
	}
	return new_obj(c, path, 1, 0, is_root(c, path), 1);
}

/* -- records -- */

static void spool(struct conv *c, int64_t t, long long pid, struct tfile *tf, enum cop op,
		  long long a, long long b)
{
	struct rec r = { 0 };
	long long sid = (long long)(intptr_t)imap_get(&c->streams, pid) - 1;
	int64_t lat = c->lat;
	long long end;

	if (sid < 0) {
		sid = c->nstreams;
		if (sid >= CONV_MAX_STREAMS)
			conv_fallback(c, "more streams than the format holds");
		c->stream_pid = realloc(c->stream_pid, (sid + 1) * sizeof(long long));
		c->stream_last = realloc(c->stream_last, (sid + 1) * sizeof(long long));
		if (!c->stream_pid || !c->stream_last)
			conv_fallback(c, "out of memory");
		c->stream_pid[sid] = pid;
		c->stream_last[sid] = -1;
		c->nstreams++;
		imap_set(&c->streams, pid, (void *)(intptr_t)(sid + 1));
	}
	if (tf->id < 0) {
		if (c->nfiles >= CONV_MAX_FILES)
			conv_fallback(c, "more files than the format holds");
		tf->id = c->nfiles;
		c->files = realloc(c->files, (c->nfiles + 1) * sizeof(*c->files));
		if (!c->files)
			conv_fallback(c, "out of memory");
		c->files[c->nfiles++] = tf;
	}
	if (c->stream_last[sid] >= 0 && t < c->stream_last[sid]) {
		count(&c->mapped,
		      "times raised to the previous time of their stream (the clock "
		      "went back)",
		      1);
		if (lat >= 0) {
			lat -= c->stream_last[sid] - t;
			if (lat < 0)
				lat = 0;
		}
		t = c->stream_last[sid];
	}
	c->stream_last[sid] = t;
	if (!c->have_t0 || t < c->t0)
		c->t0 = t;
	if (!c->have_t0 || t > c->tmax)
		c->tmax = t;
	c->have_t0 = 1;
	end = op == OP_READ || op == OP_WRITE || op == OP_TRIM || op == OP_SFR ? a + b
	      : op == OP_TRUNCATE					       ? a
									       : 0;
	if (end > tf->extent)
		tf->extent = end;
	tf->ops |= 1u << op;
	r.t = t;
	r.lat = lat;
	r.a = a;
	r.b = b;
	r.sid = (int32_t)sid;
	r.fid = tf->id;
	r.op = op;
	if (fwrite(&r, sizeof(r), 1, c->spool) != 1)
		conv_fallback(c, "cannot write the spool");
	if (lat >= 0)
		c->nlat++;
	c->nrec++;
}

void emit(struct conv *c, int64_t t, long long pid, struct obj *o, enum cop op, long long a,
	  long long b)
{
	if (!o || !o->tf) {
		countf(&c->dropped,
		       o && o->outside ? "%ss of files outside the data directory"
				       : "%ss of unknown files",
		       op_name[op]);
		return;
	}
	if (o->tf->bad) {
		lostf(c, "%ss of files whose path a trace cannot hold (%s)", op_name[op],
		      o->tf->bad);
		return;
	}
	if (!strcmp(o->tf->path, ".") && (op == OP_CREATE || op == OP_UNLINK)) {
		countf(&c->dropped, "%ss of the data directory itself", op_name[op]);
		return;
	}
	spool(c, t, pid, o->tf, op, a, b);
}

/* -- descriptors -- */

struct imap *table(struct conv *c, long long pid)
{
	struct imap *t = imap_get(&c->tables, pid);

	if (!t) {
		t = xcalloc(1, sizeof(*t));
		imap_set(&c->tables, pid, t);
	}
	return t;
}

static struct ofd *new_ofd(struct obj *o, int append, int direct)
{
	struct ofd *f = xcalloc(1, sizeof(*f));

	f->obj = o;
	f->append = append;
	f->direct = direct;
	return f;
}

static int in_odirect(struct conv *c, long long pid, long long fd)
{
	const char *s = imap_get(&c->odirect, pid);
	char num[32];
	size_t n;

	if (!s)
		return 0;
	n = (size_t)snprintf(num, sizeof(num), "%lld", fd);
	for (;;) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len == n && !strncmp(s, num, n))
			return 1;
		if (!e)
			return 0;
		s = e + 1;
	}
}

static int nonfile(const char *p)
{
	return starts(p, "/dev/") || starts(p, "/proc/") || starts(p, "/sys/");
}

/* fd_obj: the open file behind a descriptor argument, NULL if not a regular file or unknown */
struct ofd *fd_obj(struct conv *c, long long pid, const struct fdarg *fd, const char *what,
		   int counted)
{
	struct imap *tab = table(c, pid);
	struct ofd *f = imap_get(tab, fd->num);
	struct obj *o;
	int direct;

	if (fd->kind == 0) {
		if (!f) {
			if (counted)
				lostf(c,
				      "%ss on descriptors opened before the capture (no -y path)",
				      what);
		} else if (!f->obj) {
			if (counted)
				countf(&c->ignored, "%s on sockets, pipes and devices", what);
			return NULL;
		}
		return f;
	}
	if (fd->kind == 2 || nonfile(fd->path)) {
		if (!f || f->obj) {
			f = new_ofd(NULL, 0, 0);
			imap_set(tab, fd->num, f);
		}
		if (counted) {
			countf(&c->ignored, "%s on sockets, pipes and devices", what);
			return NULL;
		}
		return f;
	}
	if (f && f->obj &&
	    (f->obj->unnamed || (!strcmp(f->obj->path, fd->path) && f->obj->dead == fd->deleted)))
		return f;
	if (fd->deleted) {
		struct sent *e = smap_get(&c->gone, fd->path);

		o = e ? e->v : NULL;
		if (!o) {
			o = new_obj(c, fd->path, 1, 0, 0, 0);
			o->dead = 1;
			smap_put(&c->gone, fd->path)->v = o;
		}
	} else {
		o = lookup(c, fd->path);
	}
	direct = in_odirect(c, pid, fd->num);
	if (!direct) {
		size_t i = 0;
		struct ient *e;

		while ((e = imap_next(tab, &i)))
			if (((struct ofd *)e->v)->obj == o && ((struct ofd *)e->v)->direct)
				direct = 1;
	}
	f = new_ofd(o, 0, direct);
	imap_set(tab, fd->num, f);
	return f;
}

/* -- sizes -- */

void saw_end(struct conv *c, struct obj *o, long long end, int by_read)
{
	if (end <= o->cur || !o->tf) {
		if (end > o->cur)
			o->cur = end;
		return;
	}
	if (by_read) {
		if (o->bumpable && o->tf) {
			if (end > (o->tf->size0 > 0 ? o->tf->size0 : 0)) {
				o->tf->size0 = end;
				count(&c->mapped,
				      "reads past the file's listed size (size raised to "
				      "cover them: the file grew before strace attached, or no "
				      "listing)",
				      1);
			}
		} else {
			count(&c->mapped, "reads past the size the trace accounts for", 1);
		}
	}
	o->cur = end;
}

void truncate_obj(struct conv *c, int64_t t, long long pid, struct obj *o, long long size)
{
	if (!o || size < 0)
		return;
	if (size < o->cur)
		o->bumpable = 0;
	o->cur = size;
	emit(c, t, pid, o, OP_TRUNCATE, size, 0);
}

/* -- the calls -- */

void need(struct conv *c, int nargs, int n, const char *name)
{
	if (nargs < n)
		conv_fallback(c, "%s: unexpected arguments", name);
}

void arg_fd(struct conv *c, char **args, int i, struct fdarg *f)
{
	if (!parse_fd(args[i], f))
		conv_fallback(c, "expected a descriptor");
}

long long arg_int(struct conv *c, char **args, int i)
{
	long long v;

	if (!parse_int(args[i], &v))
		conv_fallback(c, "expected a number");
	return v;
}

/* a quoted absolute path, normalized as the Python converter's resolve() does */
char *arg_path(struct conv *c, char **args, int i)
{
	const char *s = args[i], *e;

	if (s[0] != '"' || !(e = strrchr(s, '"')) || e == s)
		conv_fallback(c, "expected a quoted path");
	char *raw = unescape(s + 1, (size_t)(e - s - 1)), *p;

	if (raw[0] != '/')
		conv_fallback(c, "a relative path");
	p = normpath(raw);
	free(raw);
	return p;
}

void io_call(struct conv *c, int64_t t, long long pid, const struct fdarg *fd, enum cop op,
	     long long off, long long n, const char *what)
{
	struct ofd *f = fd_obj(c, pid, fd, what, 1);
	struct obj *o;

	if (!f)
		return;
	o = f->obj;
	if (o->is_dir) {
		lostf(c,
		      "%s calls on descriptors that name a directory (files made with O_TMPFILE "
		      "before the capture)",
		      what);
		return;
	}
	if (n > (1LL << 32))
		conv_fallback(c, "a transfer longer than a call makes");
	if (n <= 0) {
		countf(&c->dropped,
		       op == OP_READ ? "%s calls at the end of the file (0 bytes)"
				     : "%s calls of 0 bytes",
		       what);
		return;
	}
	if (off < 0 || off > CONV_MAX_OFFSET - n)
		conv_fallback(c, "an offset beyond the largest file offset");
	if (o->tf) {
		if (f->direct)
			o->tf->direct++;
		else
			o->tf->buffered++;
	}
	saw_end(c, o, off + n, op == OP_READ);
	while (n > 0) {
		long long k = n < CONV_MAX_IO ? n : CONV_MAX_IO;

		emit(c, t, pid, o, op, off, k);
		off += k;
		n -= k;
	}
}

void sync_call(struct conv *c, int64_t t, long long pid, const struct fdarg *fd, enum cop op)
{
	struct ofd *f = fd_obj(c, pid, fd, op_name[op], 1);
	struct obj *o;

	if (!f)
		return;
	o = f->obj;
	if (op == OP_FDATASYNC && (o->is_dir || (o->tf && o->tf->is_dir))) {
		op = OP_FSYNC;
		count(&c->mapped, "fdatasyncs of directories, recorded as fsync", 1);
	}
	emit(c, t, pid, o, op, 0, 0);
}

static int has_flag(const char *flags, const char *name)
{
	size_t n = strlen(name);

	for (const char *s = flags;;) {
		const char *e = strchr(s, '|');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len == n && !strncmp(s, name, n))
			return 1;
		if (!e)
			return 0;
		s = e + 1;
	}
}

static void open_unnamed(struct conv *c, int64_t t, long long pid, const char *d, long long fd,
			 const char *flags)
{
	char *p = xmalloc(strlen(d) + 40);
	struct obj *o;

	c->ntmpfiles++;
	sprintf(p, "%s%s#tmpfile.%d", d, d[strlen(d) - 1] == '/' ? "" : "/", c->ntmpfiles);
	o = new_obj(c, p, 0, 0, 0, 0);
	free(p);
	o->unnamed = 1;
	if (o->tf)
		o->tf->temp = 1;
	emit(c, t, pid, o, OP_CREATE, 0, 0);
	emit(c, t, pid, o, OP_UNLINK, 0, 0);
	o->dead = 1;
	imap_set(table(c, pid), fd,
		 new_ofd(o, has_flag(flags, "O_APPEND"), has_flag(flags, "O_DIRECT")));
}

void open_call(struct conv *c, int64_t t, long long pid, char **args, long long value,
	       const struct fdarg *resfd)
{
	struct imap *tab = table(c, pid);
	const char *flags = args[2];
	struct fdarg dirfd;
	struct obj *o;
	int created = 0, creat, excl, listed;
	char *ab, *argp;
	struct sent *e;

	arg_fd(c, args, 0, &dirfd);
	free(dirfd.path);
	argp = arg_path(c, args, 1);
	if (value < 0)
		conv_fallback(c, "the result of an open is not a descriptor");
	if (resfd && resfd->kind == 2) {
		imap_set(tab, value, new_ofd(NULL, 0, 0));
		free(argp);
		return;
	}
	ab = resfd && resfd->kind == 1 ? xstrdup(resfd->path) : xstrdup(argp);
	if (nonfile(ab)) {
		imap_set(tab, value, new_ofd(NULL, 0, 0));
		count(&c->ignored, "opens of devices and /proc, /sys files", 1);
		goto out;
	}
	if (has_flag(flags, "O_TMPFILE")) {
		open_unnamed(c, t, pid, argp, value, flags);
		goto out;
	}
	creat = has_flag(flags, "O_CREAT");
	excl = has_flag(flags, "O_EXCL");
	e = smap_get(&c->ns, ab);
	o = e ? e->v : NULL;
	if (!o) {
		int touched = smap_get(&c->touched, ab) != NULL;

		listed =
			c->has_listing && !touched && (smap_get(&c->listing, ab) || is_root(c, ab));
		if (listed || (!creat && !(c->has_listing && touched))) {
			o = lookup(c, ab);
		} else if (!c->has_listing && creat && !excl && !touched) {
			o = lookup(c, ab);
			count(&c->mapped,
			      "files opened with O_CREAT and no listing to tell whether "
			      "they existed, taken as existing",
			      1);
		} else {
			o = new_obj(c, ab, 0, 0, 0, 1);
			created = creat;
			smap_put(&c->touched, ab);
		}
	} else if (o->dead) {
		o = new_obj(c, ab, 0, 0, 0, 1);
		created = creat;
	}
	if (has_flag(flags, "O_DIRECTORY")) {
		o->is_dir = 1;
		if (o->tf)
			o->tf->is_dir = 1;
	}
	if (created)
		emit(c, t, pid, o, OP_CREATE, 0, 0);
	if (has_flag(flags, "O_TRUNC") && !created && o->cur && !o->is_dir &&
	    (has_flag(flags, "O_WRONLY") || has_flag(flags, "O_RDWR"))) {
		o->bumpable = 0;
		o->cur = 0;
		emit(c, t, pid, o, OP_TRUNCATE, 0, 0);
	}
	imap_set(tab, value, new_ofd(o, has_flag(flags, "O_APPEND"), has_flag(flags, "O_DIRECT")));
out:
	free(ab);
	free(argp);
}

void unlink_obj(struct conv *c, int64_t t, long long pid, const char *path, int is_dir)
{
	struct obj *o = smap_del(&c->ns, path);

	if (!o) {
		o = lookup(c, path);
		smap_del(&c->ns, path);
	}
	if (is_dir) {
		o->is_dir = 1;
		if (o->tf)
			o->tf->is_dir = 1;
	}
	emit(c, t, pid, o, OP_UNLINK, 0, 0);
	o->dead = 1;
	smap_put(&c->gone, path)->v = o;
	smap_put(&c->touched, path);
}

/* take_name: a renamed file is named in the trace by its new name (convert.py says when not) */
static void take_name(struct conv *c, struct obj *o)
{
	struct tfile *tf = o->tf;
	const char *rr;
	char *r;

	if (!tf || tf->owner != o || tf->shared || tf->is_dir || o->is_dir)
		return;
	rr = rel(c, o->path);
	if (!rr) {
		if (c->outside != 1)
			return;
		r = outside_name(c, o->path);
	} else {
		r = xstrdup(rr);
	}
	if (smap_get(&c->tfiles, r) || path_check(r, 0)) {
		free(r);
		return;
	}
	smap_del(&c->tfiles, tf->path);
	free(tf->path);
	tf->path = r;
	tf->bad = NULL;
	smap_put(&c->tfiles, r)->v = tf;
}

static void set_path(struct obj *o, const char *p)
{
	free(o->path);
	o->path = xstrdup(p);
}

void rename_call(struct conv *c, int64_t t, long long pid, const char *old, const char *new,
		 const char *flags)
{
	struct obj *src, *dst, *victim;
	struct sent *e;

	count(&c->mapped,
	      "renames (a renamed file has its new name in the trace, unless another "
	      "file of the trace has it)",
	      1);
	smap_put(&c->touched, old);
	smap_put(&c->touched, new);
	src = smap_del(&c->ns, old);
	if (!src) {
		src = lookup(c, old);
		smap_del(&c->ns, old);
	}
	if (strstr(flags, "RENAME_EXCHANGE")) {
		e = smap_get(&c->ns, new);
		dst = e ? e->v : lookup(c, new);
		smap_put(&c->ns, old)->v = dst;
		set_path(dst, old);
		smap_put(&c->ns, new)->v = src;
		set_path(src, new);
		return;
	}
	e = smap_get(&c->ns, new);
	victim = e ? e->v : NULL;
	if (!victim && c->has_listing && smap_get(&c->listing, new))
		victim = lookup(c, new);
	if (victim && victim != src) {
		emit(c, t, pid, victim, OP_UNLINK, 0, 0);
		victim->dead = 1;
		smap_put(&c->gone, new)->v = victim;
	}
	smap_put(&c->ns, new)->v = src;
	set_path(src, new);
	take_name(c, src);
	/* a directory renamed: the names below it move with it */
	size_t n = strlen(old), i = 0, nm = 0;
	char **moved = NULL;

	while ((e = smap_next(&c->ns, &i)))
		if (!strncmp(e->k, old, n) && e->k[n] == '/') {
			moved = realloc(moved, (nm + 1) * sizeof(*moved));
			if (!moved)
				conv_fallback(c, "out of memory");
			moved[nm++] = xstrdup(e->k);
		}
	for (size_t k = 0; k < nm; k++) {
		struct obj *o = smap_del(&c->ns, moved[k]);
		char *np = xmalloc(strlen(new) + strlen(moved[k]) + 1);

		sprintf(np, "%s%s", new, moved[k] + n);
		set_path(o, np);
		smap_put(&c->ns, np)->v = o;
		smap_put(&c->touched, moved[k]);
		smap_put(&c->touched, np);
		free(np);
		free(moved[k]);
	}
	free(moved);
}

void mkdir_call(struct conv *c, int64_t t, long long pid, const char *path)
{
	struct sent *e = smap_get(&c->ns, path);
	struct obj *o = e ? e->v : NULL;

	if (o && !o->dead) {
		o->is_dir = 1;
		return;
	}
	smap_put(&c->touched, path);
	o = new_obj(c, path, 0, 0, 1, 1);
	emit(c, t, pid, o, OP_CREATE, 0, 0);
}
