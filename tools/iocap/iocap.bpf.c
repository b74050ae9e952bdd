// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: the kernel side of a database I/O capture. It stands on tracepoints
 * only (syscalls, io_uring, sched), so it needs no kprobes, and reads
 * kernel structures through BTF (CO-RE): the file behind a descriptor, an
 * io_uring request's file, offset and length.
 *
 * - System calls: at entry the arguments and the file behind the descriptor
 *   are kept per thread; at exit the event goes to the ring buffer with its
 *   result. Each system call iocap maps has its own pair of programs on its
 *   syscalls:sys_enter_NAME/sys_exit_NAME tracepoints, so nothing runs on
 *   the others. A kernel without those tracepoints (CONFIG_FTRACE_SYSCALLS
 *   off) gets the raw_syscalls pair instead, which runs on every call and
 *   looks the number up in a table user space fills (so nothing here
 *   depends on the architecture's numbering).
 * - io_uring: a request is noted at io_uring_submit_req (after its prep, so
 *   its offset and length are set) and sent at io_uring_complete, with the
 *   file the kernel resolved for it (registered files too).
 * - libaio: each iocb of an io_submit is read from user memory and sent at
 *   once; each io_event of an io_getevents at its exit. User space pairs them.
 *
 * Only the traced processes (a set of tgids, followed across fork) or one
 * cgroup are looked at; everything else costs one map lookup per mapped
 * syscall (per syscall with the raw_syscalls pair).
 * Nothing of the data is read: offsets, lengths, paths and results only.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "iocap.h"

char LICENSE[] SEC("license") = "GPL";

#define S_IFMT		00170000
#define S_IFREG		0100000
#define S_IFDIR		0040000
#define F_DUPFD		0
#define F_DUPFD_CLOEXEC	1030

const volatile __u64 target_cgroup = 0;	/* 0: the tgids in "targets" */
const volatile int follow_children = 1;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, IOCAP_MAX_NR);
	__type(key, __u32);
	__type(value, __u32);	/* enum iocap_op */
} sysops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);	/* tid */
	__type(value, struct iocap_event);
} inflight SEC(".maps");

struct uring_req {
	__u64 ts;
	__u32 tid, tgid;
	__u32 opcode, fixed;
	__s64 fd;
	__u64 off, len, flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);	/* struct io_kiocb * */
	__type(value, struct uring_req);
} urings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iocap_event);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, IOC_ST_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);	/* IORING_OP_ */
	__type(value, __u64);
} uring_unmapped SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20);
} events SEC(".maps");

static __always_inline void count(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &what);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline int traced(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (target_cgroup)
		return bpf_get_current_cgroup_id() == target_cgroup;
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/*
 * Set by user space once every program is attached. Attaching the ~90
 * per-call programs takes a while, and a process started meanwhile (a
 * `sleep` of a shell's wait loop) could have its openat missed and its
 * pread64 seen. So the capture starts in two steps:
 * - ARMED_NAMING: only the calls that name files (opens, dups, directory
 *   changes, renames, unlinks) are sent, flagged early. User space learns
 *   names from them and writes none of them, as strace leaves out the
 *   calls in progress at its start. These calls are kept from their entry
 *   even before this step, so one in progress as it begins is sent too.
 * - user space then reads every traced process's /proc/PID/fd: a file
 *   opened before it is named there, or was closed before the next step,
 *   and one opened after is named by its open.
 * - ARMED_ALL: every call, from here on in the trace.
 * Fork tracking is not gated, so no child is lost in between.
 */
#define ARMED_NAMING 1
#define ARMED_ALL    2
volatile int armed = 0;

static __always_inline int names_files(unsigned int op)
{
	switch (op) {
	case IOC_OPEN:
	case IOC_OPENAT:
	case IOC_OPENAT2:
	case IOC_CREAT:
	case IOC_DUP:
	case IOC_DUP2:
	case IOC_DUP3:
	case IOC_FCNTL:
	case IOC_CHDIR:
	case IOC_FCHDIR:
	case IOC_UNLINK:
	case IOC_UNLINKAT:
	case IOC_RMDIR:
	case IOC_RENAME:
	case IOC_RENAMEAT:
	case IOC_RENAMEAT2:
		return 1;
	}
	return 0;
}

static __always_inline int capturing(void)
{
	return armed == ARMED_ALL && traced();
}

/*
 * Whether system call @op is kept from its entry now: a call that names
 * files always (sent at its exit once armed), any other once ARMED_ALL.
 */
static __always_inline int capturing_call(unsigned int op)
{
	return (armed == ARMED_ALL || names_files(op)) && traced();
}

static __always_inline struct iocap_event *new_event(unsigned int kind)
{
	__u32 zero = 0;
	__u64 id = bpf_get_current_pid_tgid();
	struct iocap_event *ev = bpf_map_lookup_elem(&scratch, &zero);

	if (!ev)
		return NULL;
	/* not the path buffers (512 of its 736 bytes): a path call fills its own */
	__builtin_memset(ev, 0, offsetof(struct iocap_event, path));
	ev->path[0] = ev->path2[0] = 0;
	ev->kind = kind;
	ev->tid = (__u32)id;
	ev->tgid = id >> 32;
	ev->ts = bpf_ktime_get_ns();
	ev->fd = ev->fd2 = -1;
	return ev;
}

/*
 * Events without a path argument leave the path buffers out of the ring.
 * User space is woken only once the ring is a quarter full (it also reads
 * it every 100 ms): a wake-up per event would cost the database a context
 * switch per system call.
 */
static __always_inline void send(struct iocap_event *ev)
{
	__u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > (16 << 20) ?
		      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	long err;

	if (ev->path[0])
		err = bpf_ringbuf_output(&events, ev, sizeof(*ev), flags);
	else
		err = bpf_ringbuf_output(&events, ev, offsetof(struct iocap_event, path), flags);
	if (err)
		count(IOC_ST_RINGBUF_FULL);
}

/* The current task's file for @fd, or NULL. */
static __always_inline struct file *fd_file(long fd)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *f = NULL;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_core_read(&f, sizeof(f), &fds[fd]);
	return f;
}

static __always_inline void file_info(struct file *f, struct iocap_file *out)
{
	struct inode *inode;

	if (!f)
		return;
	inode = BPF_CORE_READ(f, f_inode);
	out->ino = BPF_CORE_READ(inode, i_ino);
	out->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	out->size = BPF_CORE_READ(inode, i_size);
	out->mode = BPF_CORE_READ(inode, i_mode);
	out->flags = BPF_CORE_READ(f, f_flags);
	out->pos = BPF_CORE_READ(f, f_pos);
}

/*
 * Reading the process's memory fails where the page is not in memory (the
 * program cannot fault it in): that call's path or request is then
 * unknown, and counted.
 */
static __always_inline long read_user(void *dst, __u32 len, const void *src)
{
	long err = bpf_probe_read_user(dst, len, src);

	if (err)
		count(IOC_ST_USER_UNREADABLE);
	return err;
}

/* (a path not read is said in ev->cut: user space counts it if the call succeeded) */
static __always_inline void user_path(char *dst, unsigned long src, struct iocap_event *ev)
{
	long n = bpf_probe_read_user_str(dst, IOCAP_PATH, (const void *)src);

	if (n == IOCAP_PATH) {
		char next = 0;

		/* a full buffer: cut, unless the string ended exactly there */
		if (bpf_probe_read_user(&next, 1, (const char *)src + IOCAP_PATH - 1) || next)
			ev->cut |= IOCAP_PATH_CUT;
	}
	if (n < 0)
		ev->cut |= IOCAP_PATH_UNREAD;
}

/* Each iocb of an io_submit: sent now, paired with its io_event by user space. */
static __always_inline void aio_submit(unsigned long ctx, long nr, unsigned long iocbpp)
{
	int i;

	if (nr > IOCAP_MAX_AIO)
		count(IOC_ST_AIO_CUT);
	for (i = 0; i < IOCAP_MAX_AIO; i++) {
		struct iocap_event *ev;
		struct iocb *cb = NULL;
		struct iocb io;

		if (i >= nr)
			break;
		if (read_user(&cb, sizeof(cb), (void *)(iocbpp + i * sizeof(cb))) ||
		    read_user(&io, sizeof(io), cb))
			break;
		ev = new_event(IOC_EV_AIO_SUBMIT);
		if (!ev)
			return;
		ev->op = io.aio_lio_opcode;
		ev->fd = io.aio_fildes;
		ev->a[0] = io.aio_nbytes;
		ev->a[1] = io.aio_offset;
		ev->a[2] = (unsigned long)cb;
		ev->a[3] = ctx;
		file_info(fd_file(io.aio_fildes), &ev->f);
		send(ev);
	}
}

/*
 * A traced thread (the caller checked) enters system call @op (enum
 * iocap_op) with arguments @p[0..4]: what its exit needs is kept per
 * thread in "inflight".
 */
static __always_inline int sys_enter(unsigned int op, const unsigned long *p)
{
	unsigned long p1 = p[0], p2 = p[1], p3 = p[2], p4 = p[3], p5 = p[4];
	struct iocap_event *ev;
	__u32 tid;

	if (op == IOC_IO_SUBMIT) {
		aio_submit(p1, p2, p3);
		return 0;
	}
	ev = new_event(IOC_EV_SYSCALL);
	if (!ev)
		return 0;
	ev->op = op;
	switch (op) {
	case IOC_READ: case IOC_WRITE: case IOC_PREAD: case IOC_PWRITE:
	case IOC_READV: case IOC_WRITEV: case IOC_PREADV: case IOC_PWRITEV:
	case IOC_FSYNC: case IOC_FDATASYNC: case IOC_SYNC_FILE_RANGE: case IOC_SYNCFS:
	case IOC_CLOSE: case IOC_DUP: case IOC_DUP2: case IOC_DUP3: case IOC_FCNTL:
	case IOC_LSEEK: case IOC_FTRUNCATE: case IOC_FALLOCATE: case IOC_FCHDIR:
	case IOC_COPY_FILE_RANGE: case IOC_SENDFILE:
		if (op == IOC_FCNTL && p2 != F_DUPFD && p2 != F_DUPFD_CLOEXEC)
			return 0;	/* locks and flags: nothing a trace holds */
		ev->fd = (int)p1;
		ev->fd2 = (int)p2;
		ev->a[0] = p2;
		ev->a[1] = p3;
		ev->a[2] = p4;
		ev->a[3] = p5;
		file_info(fd_file((int)p1), &ev->f);
		/*
		 * Sockets, pipes, eventfds and devices are most of a server's
		 * calls and none of its file I/O: they stay in the kernel.
		 */
		if ((ev->f.mode & S_IFMT) != S_IFREG && (ev->f.mode & S_IFMT) != S_IFDIR)
			return 0;
		break;
	case IOC_OPEN: case IOC_CREAT: case IOC_TRUNCATE: case IOC_UNLINK: case IOC_MKDIR:
	case IOC_RMDIR: case IOC_CHDIR:
		user_path(ev->path, p1, ev);
		ev->a[0] = p2;
		ev->a[2] = p1;
		break;
	case IOC_RENAME:
		user_path(ev->path, p1, ev);
		user_path(ev->path2, p2, ev);
		ev->a[2] = p1;
		ev->a[3] = p2;
		break;
	case IOC_OPENAT: case IOC_OPENAT2: case IOC_UNLINKAT: case IOC_MKDIRAT:
	case IOC_RENAMEAT: case IOC_RENAMEAT2:
		ev->fd = (int)p1;
		user_path(ev->path, p2, ev);
		ev->a[0] = p3;
		ev->a[2] = p2;
		if (op == IOC_OPENAT2)
			read_user(&ev->a[0], sizeof(ev->a[0]), (void *)p3); /* how->flags */
		if (op == IOC_RENAMEAT || op == IOC_RENAMEAT2) {
			ev->fd2 = (int)p3;
			user_path(ev->path2, p4, ev);
			ev->a[3] = p4;
			ev->a[0] = op == IOC_RENAMEAT2 ? p5 : 0;
			file_info(fd_file((int)p3), &ev->dir2);
		}
		file_info(fd_file((int)p1), &ev->dir);
		break;
	case IOC_CLONE:
		ev->a[0] = p1;
		break;
	case IOC_CLONE3:
		read_user(&ev->a[0], sizeof(ev->a[0]), (void *)p1); /* cl_args->flags */
		break;
	case IOC_IO_GETEVENTS:
		ev->a[0] = p4;	/* struct io_event * */
		ev->a[3] = p1;
		break;
	default:
		return 0;
	}
	tid = ev->tid;
	if (bpf_map_update_elem(&inflight, &tid, ev, BPF_ANY))
		count(IOC_ST_INFLIGHT_NO_SLOT);
	return 0;
}

SEC("raw_tp/sys_enter")
int iocap_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	__u32 nr = ctx->args[1], *opp;
	unsigned long p[5];

	if (nr >= IOCAP_MAX_NR)
		return 0;
	opp = bpf_map_lookup_elem(&sysops, &nr);
	if (!opp || !*opp)
		return 0;
	if (!capturing_call(*opp))
		return 0;
	p[0] = PT_REGS_PARM1_CORE_SYSCALL(regs);
	p[1] = PT_REGS_PARM2_CORE_SYSCALL(regs);
	p[2] = PT_REGS_PARM3_CORE_SYSCALL(regs);
	p[3] = PT_REGS_PARM4_CORE_SYSCALL(regs);
	p[4] = PT_REGS_PARM5_CORE_SYSCALL(regs);
	return sys_enter(*opp, p);
}

static __always_inline void aio_done(struct iocap_event *call, long n)
{
	int i;

	for (i = 0; i < IOCAP_MAX_AIO; i++) {
		struct iocap_event *ev;
		struct io_event e;

		if (i >= n)
			break;
		if (read_user(&e, sizeof(e), (void *)(call->a[0] + i * sizeof(e))))
			break;
		ev = new_event(IOC_EV_AIO_DONE);
		if (!ev)
			return;
		ev->ts = call->ts;
		ev->te = bpf_ktime_get_ns();
		ev->a[2] = e.obj;
		ev->a[3] = call->a[3];
		ev->ret = e.res;
		send(ev);
	}
}

/*
 * A thread leaves system call @op (IOC_NONE: whichever it entered) with
 * @ret: the call kept at its entry is sent. A call kept for another op is
 * one whose exit never came (a restart through restart_syscall): dropped.
 */
static __always_inline int sys_exit(unsigned int op, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct iocap_event *ev = bpf_map_lookup_elem(&inflight, &tid);

	if (!ev)
		return 0;
	if (op == IOC_NONE) {
		op = ev->op;
	} else if (ev->op != op) {
		bpf_map_delete_elem(&inflight, &tid);
		return 0;
	}
	/* a call that names files, kept before the capture was armed (armed) */
	if (!armed) {
		bpf_map_delete_elem(&inflight, &tid);
		return 0;
	}
	ev->early = armed != ARMED_ALL;
	/* from here on @op, not ev->op: a per-call program keeps only its case */
	ev->ret = ret;
	ev->te = bpf_ktime_get_ns();
	/*
	 * A path the entry could not read (its page not yet in the process's
	 * memory: a program can read, not fault in) is read again: the call
	 * itself has brought the page in (a[2], a[3]: where the paths are).
	 */
	if (ev->cut & IOCAP_PATH_UNREAD) {
		ev->cut &= ~IOCAP_PATH_UNREAD;
		if (ev->a[2])
			user_path(ev->path, ev->a[2], ev);
		if (ev->a[3])
			user_path(ev->path2, ev->a[3], ev);
	}
	switch (op) {
	case IOC_IO_GETEVENTS:
		if (ret > 0)
			aio_done(ev, ret);
		bpf_map_delete_elem(&inflight, &tid);
		return 0;
	case IOC_OPEN: case IOC_OPENAT: case IOC_OPENAT2: case IOC_CREAT:
	case IOC_DUP: case IOC_DUP2: case IOC_DUP3: case IOC_FCNTL:
		/* the file of the new descriptor (opens: the one they opened) */
		if (ret >= 0) {
			__builtin_memset(&ev->f, 0, sizeof(ev->f));
			file_info(fd_file(ret), &ev->f);
		}
		break;
	}
	if (op == IOC_CLONE || op == IOC_CLONE3) {
		if (ret > 0)	/* the parent's side; the child's returns 0 */
			send(ev);
	} else {
		send(ev);
	}
	bpf_map_delete_elem(&inflight, &tid);
	return 0;
}

SEC("raw_tp/sys_exit")
int iocap_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	return sys_exit(IOC_NONE, ctx->args[1]);
}

/*
 * The same, one program per system call on its own tracepoint
 * (syscalls:sys_enter_NAME, sys_exit_NAME): these run only on the calls
 * iocap maps, where the raw_tp pair runs on every call of every process.
 * @nargs is the number of arguments the tracepoint records: a program may
 * not read past its tracepoint's record (the attach refuses it).
 * User space loads either these or the raw_tp pair (iocap.c,
 * pick_syscall_hooks), and leaves out those whose tracepoint this kernel
 * lacks.
 */
/* argument @i of the tracepoint's record, 0 past its @nargs (constants: no ctx arithmetic) */
#define ARG(ctx, i, nargs) ((i) < (nargs) ? (ctx)->args[i] : 0)
/* clang-format off */
#define SYSCALL_TRACEPOINTS(name, op, nargs)					\
SEC("tracepoint/syscalls/sys_enter_" #name)					\
int iocap_enter_##name(struct trace_event_raw_sys_enter *ctx)			\
{										\
	unsigned long p[5] = {							\
		ARG(ctx, 0, nargs), ARG(ctx, 1, nargs), ARG(ctx, 2, nargs),	\
		ARG(ctx, 3, nargs), ARG(ctx, 4, nargs),				\
	};									\
										\
	if (!capturing_call(op))						\
		return 0;							\
	return sys_enter(op, p);						\
}										\
SEC("tracepoint/syscalls/sys_exit_" #name)					\
int iocap_exit_##name(struct trace_event_raw_sys_exit *ctx)			\
{										\
	return sys_exit(op, ctx->ret);						\
}
/* clang-format on */

SYSCALL_TRACEPOINTS(read, IOC_READ, 3)
SYSCALL_TRACEPOINTS(write, IOC_WRITE, 3)
SYSCALL_TRACEPOINTS(pread64, IOC_PREAD, 4)
SYSCALL_TRACEPOINTS(pwrite64, IOC_PWRITE, 4)
SYSCALL_TRACEPOINTS(readv, IOC_READV, 3)
SYSCALL_TRACEPOINTS(writev, IOC_WRITEV, 3)
SYSCALL_TRACEPOINTS(preadv, IOC_PREADV, 5)
SYSCALL_TRACEPOINTS(pwritev, IOC_PWRITEV, 5)
SYSCALL_TRACEPOINTS(preadv2, IOC_PREADV, 6)
SYSCALL_TRACEPOINTS(pwritev2, IOC_PWRITEV, 6)
SYSCALL_TRACEPOINTS(fsync, IOC_FSYNC, 1)
SYSCALL_TRACEPOINTS(fdatasync, IOC_FDATASYNC, 1)
SYSCALL_TRACEPOINTS(sync_file_range, IOC_SYNC_FILE_RANGE, 4)
SYSCALL_TRACEPOINTS(syncfs, IOC_SYNCFS, 1)
SYSCALL_TRACEPOINTS(open, IOC_OPEN, 3)
SYSCALL_TRACEPOINTS(creat, IOC_CREAT, 2)
SYSCALL_TRACEPOINTS(openat, IOC_OPENAT, 4)
SYSCALL_TRACEPOINTS(openat2, IOC_OPENAT2, 4)
SYSCALL_TRACEPOINTS(close, IOC_CLOSE, 1)
SYSCALL_TRACEPOINTS(dup, IOC_DUP, 1)
SYSCALL_TRACEPOINTS(dup2, IOC_DUP2, 2)
SYSCALL_TRACEPOINTS(dup3, IOC_DUP3, 3)
SYSCALL_TRACEPOINTS(fcntl, IOC_FCNTL, 3)
SYSCALL_TRACEPOINTS(lseek, IOC_LSEEK, 3)
SYSCALL_TRACEPOINTS(ftruncate, IOC_FTRUNCATE, 2)
SYSCALL_TRACEPOINTS(truncate, IOC_TRUNCATE, 2)
SYSCALL_TRACEPOINTS(fallocate, IOC_FALLOCATE, 4)
SYSCALL_TRACEPOINTS(unlink, IOC_UNLINK, 1)
SYSCALL_TRACEPOINTS(unlinkat, IOC_UNLINKAT, 3)
SYSCALL_TRACEPOINTS(rename, IOC_RENAME, 2)
SYSCALL_TRACEPOINTS(renameat, IOC_RENAMEAT, 4)
SYSCALL_TRACEPOINTS(renameat2, IOC_RENAMEAT2, 5)
SYSCALL_TRACEPOINTS(mkdir, IOC_MKDIR, 2)
SYSCALL_TRACEPOINTS(mkdirat, IOC_MKDIRAT, 3)
SYSCALL_TRACEPOINTS(rmdir, IOC_RMDIR, 1)
SYSCALL_TRACEPOINTS(chdir, IOC_CHDIR, 1)
SYSCALL_TRACEPOINTS(fchdir, IOC_FCHDIR, 1)
SYSCALL_TRACEPOINTS(clone, IOC_CLONE, 5)
SYSCALL_TRACEPOINTS(clone3, IOC_CLONE3, 2)
SYSCALL_TRACEPOINTS(io_submit, IOC_IO_SUBMIT, 3)
SYSCALL_TRACEPOINTS(io_getevents, IOC_IO_GETEVENTS, 5)
SYSCALL_TRACEPOINTS(io_pgetevents, IOC_IO_GETEVENTS, 6)
SYSCALL_TRACEPOINTS(copy_file_range, IOC_COPY_FILE_RANGE, 6)
SYSCALL_TRACEPOINTS(sendfile64, IOC_SENDFILE, 4)

SEC("raw_tp/io_uring_submit_req")
int iocap_uring_submit(struct bpf_raw_tracepoint_args *ctx)
{
	struct io_kiocb *req = (struct io_kiocb *)ctx->args[0];
	__u64 key = (unsigned long)req, id = bpf_get_current_pid_tgid();
	struct uring_req r = {};
	__u32 opcode;

	if (!capturing())
		return 0;
	opcode = BPF_CORE_READ(req, opcode);
	switch (opcode) {
	case IORING_OP_READV: case IORING_OP_WRITEV: case IORING_OP_READ_FIXED:
	case IORING_OP_WRITE_FIXED: case IORING_OP_READ: case IORING_OP_WRITE: {
		struct io_rw *rw = (struct io_rw *)&req->cmd;

		r.off = BPF_CORE_READ(rw, kiocb.ki_pos);
		r.len = BPF_CORE_READ(rw, len);
		break;
	}
	case IORING_OP_FSYNC: case IORING_OP_SYNC_FILE_RANGE: {
		struct io_sync *s = (struct io_sync *)&req->cmd;

		r.off = BPF_CORE_READ(s, off);
		r.len = BPF_CORE_READ(s, len);
		r.flags = BPF_CORE_READ(s, flags);
		break;
	}
	default: {
		__u64 *v = bpf_map_lookup_elem(&uring_unmapped, &opcode);

		if (v)
			__sync_fetch_and_add(v, 1);
		count(IOC_ST_URING_UNMAPPED);
		return 0;
	}
	}
	r.ts = bpf_ktime_get_ns();
	r.tid = (__u32)id;
	r.tgid = id >> 32;
	r.opcode = opcode;
	r.fd = BPF_CORE_READ(req, cqe.fd);
	r.fixed = BPF_CORE_READ(req, flags) & 1;	/* REQ_F_FIXED_FILE mirrors IOSQE_FIXED_FILE, bit 0 */
	if (bpf_map_update_elem(&urings, &key, &r, BPF_ANY))
		count(IOC_ST_URING_NO_SLOT);
	return 0;
}

SEC("raw_tp/io_uring_complete")
int iocap_uring_complete(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 key = ctx->args[1];
	struct io_kiocb *req = (struct io_kiocb *)key;
	struct uring_req *r = bpf_map_lookup_elem(&urings, &key);
	struct iocap_event *ev;

	if (!r)
		return 0;
	ev = new_event(IOC_EV_URING);
	if (ev) {
		ev->tid = r->tid;
		ev->tgid = r->tgid;
		ev->ts = r->ts;
		ev->te = bpf_ktime_get_ns();
		ev->op = r->opcode;
		ev->fd = r->fd;
		ev->fixed = r->fixed;
		ev->a[0] = r->len;
		ev->a[1] = r->off;
		ev->a[2] = r->flags;
		ev->ret = BPF_CORE_READ(req, cqe.res);
		file_info(BPF_CORE_READ(req, file), &ev->f);
		send(ev);
	}
	bpf_map_delete_elem(&urings, &key);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int iocap_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	struct iocap_event *ev;
	__u32 ptgid, ctgid;
	__u8 one = 1;

	ptgid = BPF_CORE_READ(parent, tgid);
	ctgid = BPF_CORE_READ(child, tgid);
	if (ptgid == ctgid || !traced())
		return 0;
	if (!target_cgroup && !follow_children)
		return 0;	/* the child is not traced */
	if (!target_cgroup && bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY))
		count(IOC_ST_TARGETS_FULL); /* the child is not traced */
	/*
	 * User space learns of the child before any of its events (this runs
	 * in the parent, before the child is first woken), so the child starts
	 * with its parent's working directory: a short-lived child may be gone
	 * from /proc by the time its relative opens are read.
	 */
	ev = new_event(IOC_EV_FORK);
	if (ev) {
		ev->a[0] = ctgid;
		send(ev);
	}
	return 0;
}
