/*
 * moddev: a block device with the service times of a model, built in user
 * space. The daemon serves a FUSE file system holding one file, "disk",
 * backed by a regular file; `losetup --direct-io=on` over that file makes
 * it a real block device (/dev/loopN) whose every request reaches this
 * daemon, which answers it when the model says the device would have.
 * `fio-pack device up|down|list|stats|models` (scripts/fiopack/device/)
 * drives it; docs/devices.md is its manual and design.
 *
 * The pipeline, per request:
 *   fio -> block layer -> loop (direct I/O, up to 128 requests at once)
 *   -> FUSE (async direct I/O, max_background 128) -> a worker thread of
 *   libfuse's multi-threaded loop, here: it hands the request to the model
 *   at once (devsched.h, under one lock), its arrival the time the daemon
 *   read it, then does the backing pread/pwrite while the model serves it,
 *   and returns to read the next one. A request is answered at the later
 *   of the two: when the model completes it and its backing I/O is done
 *   (so the data is in the backing file before a write is acknowledged,
 *   and a SIGKILL of the daemon loses nothing it answered). The backing
 *   I/O is never in the model's way: a request reaches the model when it
 *   reaches the daemon, so the two halves of a split read arrive together
 *   and in order, however long one's copy takes on a busy machine. No
 *   thread sleeps per request: one completion thread sleeps until the
 *   model's next event (dev_sched_next), advances the model to the time it
 *   wakes, and replies to every request that has completed by then and
 *   whose backing I/O is done; the worker answers one whose backing I/O
 *   ends after the model completed it. A worker whose request arrives
 *   after others completed replies to those itself.
 *
 * The model (devmodel.h) is a discrete-event simulation the daemon
 * advances in real time: a request enters it at its arrival time, waits
 * inside it until the model decides to serve it (so a model sees its whole
 * queue, as an HDD with NCQ reorders it), and completes at a time the
 * model computes from its own state (channels, head position, caches).
 * Models compose: an array calls its members, a controller cache the
 * model behind it. The model's units are fio- and FUSE-independent and
 * unit-tested (tests/unit/test_moddev*.c) and the spec parser is fuzzed
 * (tests/fuzz/fuzz_modelspec.c).
 *
 * The kernel's part of a round trip (loop, FUSE, the context switches:
 * 25-50 us here) is not part of the model: arrivals may be back-dated by
 * --backdate-us so that a request's latency as fio sees it is the model's
 * at depth 1, never earlier than the model's clock. The daemon's own cost
 * (its CPU per request, how late the completion thread replied) is in its
 * statistics, the "stats" file beside "disk".
 *
 * --realtime runs every thread of the daemon SCHED_FIFO: on a machine busy
 * with other work the device then keeps its pace (its threads are not kept
 * waiting for a CPU), at the price of preempting the workload at each
 * request (docs/devices.md measures both).
 *
 *   moddev --model SPEC --backing FILE [--backdate-us N] [--realtime]
 *          [--threads N] [--ready-fd FD] MOUNTPOINT
 *   moddev --check SPEC      (the spec's one-line error, or nothing)
 *   moddev --models          (the models and their parameters, as JSON)
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "devmodel.h"
#include "devsched.h"
#include "freelist.h"
#include "jsonl.h"
#include "lathist.h"
#include "sysutil.h"

#define PROG "moddev"
/*
 * Requests the kernel sends at once: loop's own queue depth (its
 * hw_queue_depth, 128), so that FUSE's default of 12 is never what limits
 * the device (the model decides how many it serves at once).
 */
#define MAX_BACKGROUND 128
/*
 * The read buffers the daemon keeps for the next requests, at most: loop's
 * 128 requests of 512 KiB. Beyond it a buffer is given back after its
 * request (a burst of 1 MiB reads at depth 128 would otherwise stay in the
 * daemon's memory for good).
 */
#define KEPT_BUFFERS_MAX (64ULL << 20)

enum { INO_ROOT = 1, INO_DISK, INO_STATS };

/*
 * One request to the disk file, from its FUSE request to its reply. It is
 * answered by whoever ends second of the model (model_done) and the
 * backing I/O (io_done), both set under d.lock.
 */
struct io {
	struct dev_req r; /* first: the model's requests are these */
	fuse_req_t req;
	char *buf;  /* a read's data; kept with the io for its next read */
	size_t cap; /* of buf */
	size_t result;
	int err; /* the backing file's errno: answered with it */
	unsigned char model_done, io_done;
};

/* A list of completed requests, in completion order. */
struct done_list {
	struct dev_req *head, **tail;
};

static struct moddev {
	const char *spec, *backing_path;
	int backing_fd;
	struct timespec up_time; /* the files' times */
	uint64_t size;
	struct dev_model *model;

	pthread_mutex_t lock; /* the model, the statistics and what follows */
	int timer;	      /* timerfd the completion thread sleeps on */
	struct dev_sched sched;
	uint64_t wake_at; /* when the completion thread sleeps until; 0 while it runs */
	int stopping;
	int realtime;		  /* every thread SCHED_FIFO */
	struct lathist reply_lag; /* from a completion to the completion thread seeing it */
	uint64_t failed;	  /* requests whose backing I/O failed */
	struct free_list ios;	  /* every struct io, kept from one request to the next */
	uint64_t kept_bytes;	  /* of their buffers (atomic) */
	pthread_t completer;
} d;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* ---- replies --------------------------------------------------------- */

/*
 * A request of the disk that fails outside the model is said in the
 * daemon's log, since loop turns every error into EIO and the reason is
 * only here. One the model cannot take (no memory, past the end) is
 * answered at once (fail_io); one whose backing I/O fails has been in the
 * model since it arrived, and is answered with the error when the model
 * completes it, as a device answers a failed request at its own time.
 */
static void log_failure(int err, const char *what, size_t len, off_t off)
{
	fprintf(stderr, PROG ": %s of %zu bytes at %jd: %s\n", what, len, (intmax_t)off,
		strerror(err));
}

static void fail_io(fuse_req_t req, int err, const char *what, size_t len, off_t off)
{
	log_failure(err, what, len, off);
	fuse_reply_err(req, err);
}

/*
 * A request the model completed (under the lock): answered now if its
 * backing I/O is done, else by its worker when that ends. How late the
 * daemon saw the completion (@now) is the daemon's lag either way.
 */
static void collect(struct done_list *l, struct dev_req *r, uint64_t now)
{
	struct io *io = (struct io *)r;

	lathist_add(&d.reply_lag, now - r->done_ns);
	io->model_done = 1;
	if (!io->io_done)
		return;
	r->next = NULL;
	*l->tail = r;
	l->tail = &r->next;
}

struct collector {
	struct done_list l;
	uint64_t now;
};

static void collect_done(void *arg, struct dev_req *r)
{
	struct collector *c = arg;

	collect(&c->l, r, c->now);
}

/* ---- the requests' records: no allocation per request ---------------- */

/* A request's record, its buffer kept from its last use (under the lock). */
static struct io *take_io(fuse_req_t req, enum dev_op op, uint64_t offset, size_t len)
{
	struct io *io = free_list_take(&d.ios);

	if (!io)
		return NULL;
	io->req = req;
	io->r.op = op;
	io->r.offset = offset;
	io->r.len = len;
	io->r.owner = io;
	io->result = 0;
	io->err = 0;
	io->model_done = io->io_done = 0;
	return io;
}

/* Back on the list for the next request (under the lock). */
static void put_io(struct io *io)
{
	if (io->buf && __atomic_load_n(&d.kept_bytes, __ATOMIC_RELAXED) > KEPT_BUFFERS_MAX) {
		__atomic_fetch_sub(&d.kept_bytes, io->cap, __ATOMIC_RELAXED);
		free(io->buf);
		io->buf = NULL;
		io->cap = 0;
	}
	free_list_put(&d.ios, io);
}

/* A read's buffer of at least @size bytes: 0, or -1 out of memory. */
static int io_buffer(struct io *io, size_t size)
{
	char *buf;

	if (size <= io->cap && io->buf)
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return -1;
	free(io->buf);
	__atomic_fetch_add(&d.kept_bytes, (size ? size : 1) - io->cap, __ATOMIC_RELAXED);
	io->buf = buf;
	io->cap = size ? size : 1;
	return 0;
}

/* At the end, every request answered: every record is on the list, with its buffer. */
static void free_ios(void)
{
	void *item;

	for (item = d.ios.free; item; item = *(void **)item)
		free(((struct io *)item)->buf);
	free_list_destroy(&d.ios);
}

/* ---- replies, continued ------------------------------------------------ */

static void reply(struct io *io)
{
	if (io->err) {
		fuse_reply_err(io->req, io->err);
		return;
	}
	switch (io->r.op) {
	case DEV_READ:
		fuse_reply_buf(io->req, io->buf, io->result);
		break;
	case DEV_WRITE:
		fuse_reply_write(io->req, io->result);
		break;
	default:
		fuse_reply_err(io->req, 0);
		break;
	}
}

/* Answers the requests of @r (outside the lock): their records are the caller's to put back. */
static void reply_all(struct dev_req *r)
{
	for (; r; r = r->next)
		reply((struct io *)r);
}

/* Puts back the records of @r (under the lock). */
static void put_all(struct dev_req *r)
{
	struct dev_req *next;

	for (; r; r = next) {
		next = r->next;
		put_io((struct io *)r);
	}
}

/*
 * Sets the completion thread's alarm to @at (CLOCK_MONOTONIC ns; 0 disarms
 * it, 1 fires it now). A timerfd, not a condition variable: a worker
 * whose request brings the next event earlier re-arms the alarm with one
 * system call and goes on, where a signalled condition woke the thread
 * only for it to go back to sleep until the new deadline. At depth 1 that
 * was a wake-up and a lock hand-over more per request than the two a
 * request needs (its arrival, its reply), on a VM ~15 us of CPU each.
 */
static void set_alarm(uint64_t at)
{
	struct itimerspec its = { .it_value = { (time_t)(at / 1000000000ULL),
						(long)(at % 1000000000ULL) } };

	if (timerfd_settime(d.timer, TFD_TIMER_ABSTIME, &its, NULL))
		die("cannot set the completion thread's timer: %s", strerror(errno));
}

/*
 * The completion thread: sleeps until the model's next event (or a new
 * request with an earlier one), then replies to what has completed.
 */
static void *completer(void *unused)
{
	struct collector c;
	uint64_t next, fired;

	pthread_mutex_lock(&d.lock);
	for (;;) {
		c.l.head = NULL;
		c.l.tail = &c.l.head;
		c.now = now_ns();
		dev_sched_advance(&d.sched, c.now, collect_done, &c);
		if (c.l.head) {
			pthread_mutex_unlock(&d.lock);
			reply_all(c.l.head);
			pthread_mutex_lock(&d.lock);
			put_all(c.l.head);
			continue;
		}
		next = dev_sched_next(&d.sched);
		if (next == DEV_NEVER && d.stopping)
			break;
		d.wake_at = next;
		set_alarm(next == DEV_NEVER ? 0 : next > 1 ? next : 1);
		pthread_mutex_unlock(&d.lock);
		/* an alarm re-armed earlier by a worker, or fired already, ends it too */
		if (read(d.timer, &fired, sizeof(fired)) < 0 && errno != EINTR && errno != EAGAIN)
			die("cannot wait on the completion thread's timer: %s", strerror(errno));
		pthread_mutex_lock(&d.lock);
		d.wake_at = 0;
	}
	pthread_mutex_unlock(&d.lock);
	return unused;
}

/*
 * A request of @op enters the model, arrived at @arrival (when the daemon
 * read it); what completed before it is answered here. Its record, or
 * NULL when there was no memory for it or the model could not hold it
 * (then it has been failed).
 */
static struct io *dispatch(fuse_req_t req, enum dev_op op, uint64_t offset, size_t len,
			   uint64_t arrival)
{
	struct collector c = { { NULL, &c.l.head }, 0 };
	struct io *io;
	int rc = -1;

	pthread_mutex_lock(&d.lock);
	io = take_io(req, op, offset, len);
	if (io) {
		/* a flush has no backing I/O */
		io->io_done = op == DEV_FLUSH;
		c.now = now_ns();
		rc = dev_sched_submit(&d.sched, &io->r, arrival, collect_done, &c);
		/*
		 * What is due already (a model with no latency, or back-dated
		 * past its service time) completes here: arming the alarm for a
		 * time gone would cost a timer interrupt and a wake-up of the
		 * completion thread for each such request.
		 */
		if (!rc)
			dev_sched_advance(&d.sched, c.now, collect_done, &c);
		if (!rc && dev_sched_next(&d.sched) < d.wake_at) {
			d.wake_at = dev_sched_next(&d.sched);
			set_alarm(d.wake_at > 1 ? d.wake_at : 1);
		}
		if (rc)
			put_io(io);
	}
	pthread_mutex_unlock(&d.lock);
	if (c.l.head) {
		reply_all(c.l.head);
		pthread_mutex_lock(&d.lock);
		put_all(c.l.head);
		pthread_mutex_unlock(&d.lock);
	}
	if (rc) {
		fail_io(req, ENOMEM, dev_op_names[op], len, offset);
		return NULL;
	}
	return io;
}

/*
 * The backing I/O of @io is over (@err its errno, or 0): answered here if
 * the model has completed it, else by the completion thread when it does.
 */
static void backing_done(struct io *io, int err)
{
	int now_ours;

	pthread_mutex_lock(&d.lock);
	io->err = err;
	if (err)
		d.failed++;
	io->io_done = 1;
	now_ours = io->model_done;
	pthread_mutex_unlock(&d.lock);
	if (!now_ours)
		return;
	reply(io);
	pthread_mutex_lock(&d.lock);
	put_io(io);
	pthread_mutex_unlock(&d.lock);
}

/* ---- the statistics file --------------------------------------------- */

static char *stats_json(void)
{
	struct timespec cpu;
	struct jsonl w = { 0 };

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	jsonl_begin(&w);
	jsonl_str(&w, "model", d.spec);
	jsonl_u64(&w, "size_bytes", d.size);
	jsonl_str(&w, "backing", d.backing_path);
	jsonl_u64(&w, "pid", getpid());
	jsonl_bool(&w, "realtime", d.realtime);
	pthread_mutex_lock(&d.lock);
	jsonl_u64(&w, "backdate_ns", d.sched.backdate_ns);
	dev_sched_json(&d.sched, now_ns(), &w);
	jsonl_u64(&w, "failed", d.failed);
	jsonl_lat(&w, "reply_lag", &d.reply_lag);
	pthread_mutex_unlock(&d.lock);
	jsonl_u64(&w, "daemon_cpu_ns", (uint64_t)cpu.tv_sec * 1000000000ULL + cpu.tv_nsec);
	if (jsonl_end(&w)) {
		jsonl_free(&w);
		return NULL;
	}
	return w.buf;
}

/* ---- the file system: a root holding "disk" and "stats" --------------- */

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_atim = st->st_mtim = st->st_ctim = d.up_time;
	st->st_nlink = 1;
	if (ino == INO_ROOT) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (ino == INO_DISK) {
		st->st_mode = S_IFREG | 0600;
		st->st_size = d.size;
		st->st_blocks = d.size / 512;
	} else {
		st->st_mode = S_IFREG | 0444;
	}
}

static fuse_ino_t ino_of(fuse_ino_t parent, const char *name)
{
	if (parent != INO_ROOT)
		return 0;
	if (!strcmp(name, "disk"))
		return INO_DISK;
	if (!strcmp(name, "stats"))
		return INO_STATS;
	return 0;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* loop's reads and writes reach us concurrently, not one at a time */
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	conn->max_background = MAX_BACKGROUND;
	conn->congestion_threshold = MAX_BACKGROUND;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	fuse_ino_t ino = ino_of(parent, name);

	if (!ino) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	/* nothing here ever changes but the stats' content, read direct */
	e.attr_timeout = e.entry_timeout = 3600;
	fill_attr(ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	if (ino < INO_ROOT || ino > INO_STATS) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const char *const names[] = { ".", "..", "disk", "stats" };
	static const fuse_ino_t inos[] = { INO_ROOT, INO_ROOT, INO_DISK, INO_STATS };
	char buf[512];
	size_t used = 0, n;
	struct stat st;
	off_t i;

	if (ino != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	for (i = off; i < 4; i++) {
		fill_attr(inos[i], &st);
		n = fuse_add_direntry(req, buf + used, sizeof(buf) - used, names[i], &st, i + 1);
		if (used + n > size || used + n > sizeof(buf))
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char *text;

	if (ino == INO_ROOT) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* no page cache: every read and write of the disk reaches the model */
	fi->direct_io = 1;
	if (ino == INO_STATS) {
		if ((fi->flags & O_ACCMODE) != O_RDONLY) {
			fuse_reply_err(req, EACCES);
			return;
		}
		/* one snapshot per open, so that a reader sees one consistent object */
		text = stats_json();
		if (!text) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		fi->fh = (uintptr_t)text;
	}
	fuse_reply_open(req, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == INO_STATS)
		free((char *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	uint64_t arrival = now_ns();
	struct io *io;
	ssize_t n;
	int err;

	if (ino == INO_STATS) {
		const char *text = (const char *)(uintptr_t)fi->fh;
		size_t len = strlen(text);
		size_t n = off < (off_t)len ? (len - off < size ? len - off : size) : 0;
		/*
		 * Replied from a copy: once the kernel has the reply the reader
		 * may close, and op_release free @text, before writev has returned
		 * here (a sanitizer's writev reads the buffer after the call: the
		 * ASan daemon aborted, and every request after it failed with EIO).
		 */
		char *copy = malloc(n ? n : 1);

		if (!copy) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		memcpy(copy, text + (n ? off : 0), n);
		fuse_reply_buf(req, copy, n);
		free(copy);
		return;
	}
	if (off < 0 || (uint64_t)off >= d.size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > d.size - off)
		size = d.size - off;
	io = dispatch(req, DEV_READ, off, size, arrival);
	if (!io)
		return;
	/* the record is ours until backing_done(): its buffer, outside the lock */
	n = io_buffer(io, size) ? (errno = ENOMEM, -1)
				: NOINTR(pread(d.backing_fd, io->buf, size, off));
	err = n < 0 ? errno : 0;
	if (err)
		/* the backing file's own failure, not the model's: said in the log */
		log_failure(err, "read", size, off);
	else
		io->result = n;
	backing_done(io, err);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	uint64_t arrival = now_ns();
	struct io *io;
	ssize_t n;
	int err;

	if (ino != INO_DISK) {
		fail_io(req, EACCES, "write of a file other than disk", size, off);
		return;
	}
	if (off < 0 || (uint64_t)off + size > d.size) {
		/* a block device has no room past its end */
		fail_io(req, ENOSPC, "write past the device's end", size, off);
		return;
	}
	io = dispatch(req, DEV_WRITE, off, size, arrival);
	if (!io)
		return;
	/* @buf is FUSE's only until we return: written now, answered when both are done */
	n = NOINTR(pwrite(d.backing_fd, buf, size, off));
	err = n < 0 ? errno : 0;
	if (err)
		log_failure(err, "write", size, off);
	else
		io->result = n;
	backing_done(io, err);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	uint64_t arrival = now_ns();

	if (ino != INO_DISK) {
		fuse_reply_err(req, 0);
		return;
	}
	/*
	 * The data is in the backing file already (written before each write
	 * was answered); what a flush costs is the model's (a cache to empty).
	 */
	dispatch(req, DEV_FLUSH, 0, 0, arrival);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

/* clang-format off */
static const struct fuse_lowlevel_ops ops = {
	.init		= op_init,
	.lookup		= op_lookup,
	.getattr	= op_getattr,
	.readdir	= op_readdir,
	.open		= op_open,
	.release	= op_release,
	.read		= op_read,
	.write		= op_write,
	.fsync		= op_fsync,
	.flush		= op_flush,
};
/* clang-format on */

/* ---- the models, for `fio-pack device models` ------------------------- */

static int print_models(void)
{
	const struct dev_model_type *const *t;
	const char *const *src;
	struct jsonl w = { 0 };
	unsigned i;

	jsonl_begin(&w);
	jsonl_arr(&w, "models");
	for (t = dev_model_types; *t; t++) {
		jsonl_obj(&w, NULL);
		jsonl_str(&w, "name", (*t)->name);
		jsonl_str(&w, "summary", (*t)->summary);
		if ((*t)->alias_of)
			jsonl_str(&w, "spec", (*t)->alias_of);
		jsonl_arr(&w, "sources");
		for (src = (*t)->sources; src && *src; src++)
			jsonl_str(&w, NULL, *src);
		jsonl_close(&w);
		jsonl_arr(&w, "params");
		for (i = 0; i < (*t)->nparams; i++) {
			const struct dev_param *p = &(*t)->params[i];

			jsonl_obj(&w, NULL);
			jsonl_str(&w, "key", p->key);
			jsonl_str(&w, "help", p->help);
			jsonl_bool(&w, "required", p->required);
			if (p->model) {
				jsonl_bool(&w, "model", 1);
			} else {
				jsonl_dbl(&w, "min", p->min);
				jsonl_dbl(&w, "max", p->max);
				jsonl_bool(&w, "integer", p->integer);
			}
			jsonl_close(&w);
		}
		jsonl_close(&w);
		jsonl_close(&w);
	}
	jsonl_close(&w);
	if (jsonl_end(&w) || fwrite(w.buf, 1, w.len, stdout) != w.len || fflush(stdout))
		die("cannot write the list of models");
	jsonl_free(&w);
	return 0;
}

/* ---- main -------------------------------------------------------------- */

static unsigned long number(const char *opt, const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-')
		die("%s=%s: not a whole number from 0 to %lu", opt, s, max);
	return v;
}

static void open_backing(void)
{
	struct stat st;

	d.backing_fd = open(d.backing_path, O_RDWR | O_CLOEXEC);
	if (d.backing_fd < 0)
		die("backing file %s: %s", d.backing_path, strerror(errno));
	if (fstat(d.backing_fd, &st))
		die("backing file %s: %s", d.backing_path, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size < 4096 || st.st_size % 4096)
		die("backing file %s: not a regular file of a whole number of 4 KiB blocks",
		    d.backing_path);
	d.size = st.st_size;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "backing", required_argument, NULL, 'b' },
		{ "backdate-us", required_argument, NULL, 'B' },
		{ "realtime", no_argument, NULL, 'R' },
		{ "threads", required_argument, NULL, 't' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "check", required_argument, NULL, 'c' },
		{ "models", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	char *fuse_argv[] = { PROG, "-o", "fsname=fio-pack-moddev,subtype=moddev", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
	unsigned long backdate_us = 0, threads = 4;
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	int ready_fd = -1, c, rc;
	const char *mnt;
	char err[512];

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			d.spec = optarg;
			break;
		case 'b':
			d.backing_path = optarg;
			break;
		case 'B':
			backdate_us = number("--backdate-us", optarg, 1000000);
			break;
		case 'R':
			d.realtime = 1;
			break;
		case 't':
			threads = number("--threads", optarg, 64);
			break;
		case 'r':
			ready_fd = (int)number("--ready-fd", optarg, 1 << 20);
			break;
		case 'c':
			/* a nominal size: the spec's own errors, before anything is made */
			d.model = dev_model_create(optarg, 1ULL << 30, err, sizeof(err));
			if (!d.model) {
				fprintf(stderr, "%s\n", err);
				return 2;
			}
			dev_model_destroy(d.model);
			return 0;
		case 'M':
			return print_models();
		default:
			die("usage: moddev --model SPEC --backing FILE [--backdate-us N] "
			    "[--realtime] [--threads N] [--ready-fd FD] MOUNTPOINT");
		}
	}
	if (optind != argc - 1 || !d.spec || !d.backing_path)
		die("usage: moddev --model SPEC --backing FILE [--backdate-us N] "
		    "[--realtime] [--threads N] [--ready-fd FD] MOUNTPOINT");
	if (threads < 1)
		die("--threads=0: at least one worker thread");
	mnt = argv[optind];
	clock_gettime(CLOCK_REALTIME, &d.up_time);
	open_backing();
	d.model = dev_model_create(d.spec, d.size, err, sizeof(err));
	if (!d.model)
		die("%s", err);

	if (d.realtime) {
		/* before any thread starts: they inherit it */
		struct sched_param sp = { .sched_priority = 1 };

		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			die("--realtime: cannot run SCHED_FIFO: %s", strerror(errno));
	}
	pthread_mutex_init(&d.lock, NULL);
	d.timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (d.timer < 0)
		die("cannot make the completion thread's timer: %s", strerror(errno));
	dev_sched_init(&d.sched, d.model, now_ns(), backdate_us * 1000);
	free_list_init(&d.ios, sizeof(struct io));

	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		die("cannot start a FUSE session");
	if (fuse_set_signal_handlers(se))
		die("cannot install the signal handlers");
	if (fuse_session_mount(se, mnt))
		die("cannot mount the FUSE file system on %s", mnt);
	if (pthread_create(&d.completer, NULL, completer, NULL))
		die("cannot start the completion thread");
	if (ready_fd >= 0) {
		/* `device up` waits for this line before it attaches the loop device */
		if (write(ready_fd, "ready\n", 6) != 6)
			die("cannot say it is ready (fd %d): %s", ready_fd, strerror(errno));
		close(ready_fd);
	}

	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(cfg, threads);
	fuse_loop_cfg_set_idle_threads(cfg, threads);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);

	/* answer what is still in the device, at its time, then leave */
	pthread_mutex_lock(&d.lock);
	d.stopping = 1;
	set_alarm(1);
	pthread_mutex_unlock(&d.lock);
	pthread_join(d.completer, NULL);
	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	dev_model_destroy(d.model);
	free_ios();
	close(d.backing_fd);
	fuse_opt_free_args(&args);
	return rc < 0 ? 1 : 0;
}
