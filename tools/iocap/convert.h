/*
 * iocap-convert: what its parts share. convert.c holds the model of the
 * capture (names, objects, descriptors; the Python converter's rules,
 * scripts/fiopack/capture/convert.py, call for call), convert_calls.c each
 * call's arguments and the files' final paths; convert_io.c reads iocap's
 * lines and writes what the model made (the records, the files, the notes).
 */
#ifndef IOCAP_CONVERT_H
#define IOCAP_CONVERT_H

#include <stdint.h>
#include <stdio.h>

#include "capmap.h"

#define CONV_MAX_IO	 (64LL << 20) /* dt.MAX_IO: a record's longest range */
#define CONV_MAX_OFFSET	 INT64_MAX
#define CONV_MAX_FILES	 16384
#define CONV_MAX_STREAMS 4096
#define CONV_MAX_PATH	 1024

/* the trace's operations, in the Python converter's words */
enum cop {
	OP_READ,
	OP_WRITE,
	OP_FSYNC,
	OP_FDATASYNC,
	OP_SFR,
	OP_TRIM,
	OP_TRUNCATE,
	OP_CREATE,
	OP_UNLINK,
	OP_NR
};
extern const char *const op_name[OP_NR];

struct tfile {
	char *path;
	int existed, is_dir, shared, temp;
	long long size0; /* -1: none (created by the trace) */
	long long extent;
	struct obj *owner;
	int id;		 /* -1 until its first record */
	unsigned ops;	 /* 1 << enum cop */
	const char *bad; /* why the format cannot hold its path */
	long long direct, buffered;
};

struct obj {
	char *path;
	struct tfile *tf;
	int dead, bumpable, is_dir, outside, unnamed;
	long long cur;
};

struct ofd {
	struct obj *obj; /* NULL: not a regular file */
	int append, direct;
};

/* one record as spooled: the final times and directories are known at the end */
struct rec {
	int64_t t, lat; /* lat -1: none */
	int64_t a, b;
	int32_t sid, fid;
	int32_t op, pad;
};

/* a descriptor argument or result: "N", "N</path>", "N</path>(deleted)", "N<other:...>" */
struct fdarg {
	long long num;
	int kind; /* 0 none, 1 path, 2 other */
	int deleted;
	char *path; /* kind path: unescaped; other: the annotation's text */
};

struct conv {
	/* options */
	char **roots;
	int nroots;
	char *datadir;
	int outside; /* 0 drop, 1 keep, 2 error */
	char *outside_prefix;
	int has_listing;
	struct smap listing; /* abs path -> v: (void *)'d' or 'f', n: size */
	struct imap odirect; /* tid -> the procinfo's "3,5,7" */
	/* the model */
	struct smap ns, gone, touched, tfiles;
	struct imap tables;  /* tid -> struct imap * (fd -> struct ofd *) */
	struct imap streams; /* tid -> sid + 1 */
	long long *stream_pid, *stream_last;
	int nstreams, ntfiles_order, ntmpfiles;
	struct tfile **files;
	int nfiles;
	int64_t t0, tmax;
	int have_t0;
	long long nrec, nlat;
	int64_t lat; /* the current call's, -1: none */
	long long line;
	long long first_pid;
	int have_first;
	struct smap dropped, unseen, ignored, mapped;
	FILE *spool;
};

/*
 * A line or a state the model does not hold as the Python converter would
 * (an strace line, a refusal with its message): iocap-convert leaves the
 * whole capture to it (exit status 2).
 */
_Noreturn void conv_fallback(struct conv *c, const char *why, ...)
	__attribute__((format(printf, 2, 3)));

void count(struct smap *m, const char *key, long long n);
void countf(struct smap *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lost(struct conv *c, const char *key);

/* convert.c: the model */
void lostf(struct conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *tilde(const char *p, int n);
struct imap *table(struct conv *c, long long pid);
struct ofd *fd_obj(struct conv *c, long long pid, const struct fdarg *fd, const char *what,
		   int counted);
void emit(struct conv *c, int64_t t, long long pid, struct obj *o, enum cop op, long long a,
	  long long b);
void saw_end(struct conv *c, struct obj *o, long long end, int by_read);
void truncate_obj(struct conv *c, int64_t t, long long pid, struct obj *o, long long size);
void io_call(struct conv *c, int64_t t, long long pid, const struct fdarg *fd, enum cop op,
	     long long off, long long n, const char *what);
void sync_call(struct conv *c, int64_t t, long long pid, const struct fdarg *fd, enum cop op);
void open_call(struct conv *c, int64_t t, long long pid, char **args, long long value,
	       const struct fdarg *resfd);
void unlink_obj(struct conv *c, int64_t t, long long pid, const char *path, int is_dir);
void rename_call(struct conv *c, int64_t t, long long pid, const char *old, const char *new,
		 const char *flags);
void mkdir_call(struct conv *c, int64_t t, long long pid, const char *path);
void need(struct conv *c, int nargs, int n, const char *name);
void arg_fd(struct conv *c, char **args, int i, struct fdarg *f);
long long arg_int(struct conv *c, char **args, int i);
char *arg_path(struct conv *c, char **args, int i);

/* convert_calls.c: one call, its arguments split as strace's text has them */
void conv_call(struct conv *c, long long pid, int64_t t, const char *name, char **args, int nargs,
	       long long value, const struct fdarg *resfd, const char *err);
void conv_build_files(struct conv *c);
char *normpath(const char *p);
struct obj *lookup(struct conv *c, const char *path);

/* convert_io.c */
int parse_fd(const char *s, struct fdarg *f);
int parse_int(const char *s, long long *v);
char *unescape(const char *s, size_t n);

#endif
