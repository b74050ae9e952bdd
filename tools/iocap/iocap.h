/*
 * iocap: what the kernel-side capture (iocap.bpf.c) hands to user space
 * (iocap.c reads its ring buffer, events.c writes each event). Shared by
 * both sides, so only fixed-size types.
 */
#ifndef IOCAP_H
#define IOCAP_H

#define IOCAP_PATH	256	/* bytes of a path argument kept (longer: cut, flagged) */
#define IOCAP_MAX_NR	512	/* syscall numbers below this can be traced */
#define IOCAP_MAX_AIO	64	/* iocbs read per io_submit / events per io_getevents */
#define IOCAP_PATH_CUT	  1	  /* a path did not fit IOCAP_PATH */
#define IOCAP_PATH_UNREAD 2	  /* a path could not be read from the process */

/* What a traced syscall is, set per syscall number by user space (so the BPF
 * side needs no per-architecture syscall table). */
enum iocap_op {
	IOC_NONE = 0,
	IOC_READ, IOC_WRITE,		/* fd, count; position from the file */
	IOC_PREAD, IOC_PWRITE,		/* fd, count, offset */
	IOC_READV, IOC_WRITEV,		/* fd; position from the file; length = result */
	IOC_PREADV, IOC_PWRITEV,		/* fd, offset (preadv2/pwritev2 too) */
	IOC_FSYNC, IOC_FDATASYNC,
	IOC_SYNC_FILE_RANGE,		/* fd, offset, nbytes, flags */
	IOC_SYNCFS,
	IOC_OPEN,			/* path, flags */
	IOC_OPENAT,			/* dirfd, path, flags */
	IOC_OPENAT2,			/* dirfd, path, struct open_how * */
	IOC_CREAT,			/* path */
	IOC_CLOSE,
	IOC_DUP, IOC_DUP2, IOC_DUP3,
	IOC_FCNTL,			/* fd, cmd, arg */
	IOC_LSEEK,			/* fd, offset, whence */
	IOC_FTRUNCATE,			/* fd, length */
	IOC_TRUNCATE,			/* path, length */
	IOC_FALLOCATE,			/* fd, mode, offset, len */
	IOC_UNLINK, IOC_UNLINKAT,		/* (dirfd,) path (, flags) */
	IOC_RENAME, IOC_RENAMEAT, IOC_RENAMEAT2,
	IOC_MKDIR, IOC_MKDIRAT, IOC_RMDIR,
	IOC_CHDIR, IOC_FCHDIR,
	IOC_CLONE, IOC_CLONE3,
	IOC_IO_SUBMIT,			/* ctx, nr, iocb ** */
	IOC_IO_GETEVENTS,		/* ctx, min, nr, events * (io_pgetevents too) */
	IOC_COPY_FILE_RANGE, IOC_SENDFILE,
	IOC_NR,
};

enum iocap_kind {
	IOC_EV_SYSCALL = 1,		/* one completed system call */
	IOC_EV_URING,		/* one completed io_uring request */
	IOC_EV_AIO_SUBMIT,		/* one iocb of an io_submit */
	IOC_EV_AIO_DONE,		/* one io_event of an io_getevents */
	IOC_EV_FORK,		/* a traced process forked: a[0] is the child */
};

/* The file behind a descriptor, read in the kernel. */
struct iocap_file {
	unsigned long long dev;	/* the kernel's s_dev: MAJOR << 20 | MINOR */
	unsigned long long ino;
	long long size;		/* i_size */
	long long pos;		/* f_pos */
	unsigned int flags;	/* f_flags (O_DIRECT, O_APPEND, ...) */
	unsigned int mode;	/* i_mode: 0 if no file */
};

struct iocap_event {
	unsigned int kind;
	unsigned int tid, tgid;
	unsigned int op;	/* enum iocap_op; IOC_EV_URING: the IORING_OP_ opcode */
	unsigned long long ts;	/* issue (syscall entry, SQE submission), CLOCK_MONOTONIC ns */
	unsigned long long te;	/* completion */
	long long ret;		/* the result: bytes, a descriptor, -errno */
	long long fd, fd2;	/* descriptor arguments (fd2: second dirfd, dup target) */
	unsigned long long a[4];	/* the other arguments, per op */
	struct iocap_file f;	/* the file behind fd (opens, dups: behind the result) */
	struct iocap_file dir, dir2;	/* *at calls: the directories behind fd, fd2 */
	unsigned int fixed;	/* IOC_EV_URING: fd is a registered-file index */
	unsigned int cut;	/* IOCAP_PATH_CUT, IOCAP_PATH_UNREAD: a path is not whole */
	unsigned int early;	/* sent before the capture's start, for the names only */
	char path[IOCAP_PATH];
	char path2[IOCAP_PATH];
};

/* Counters of what the capture could not see, in the "stats" array. */
enum iocap_stat {
	IOC_ST_RINGBUF_FULL,	 /* events lost: the ring buffer was full */
	IOC_ST_URING_UNMAPPED,	 /* io_uring requests of an opcode not mapped */
	IOC_ST_URING_NO_SLOT,	 /* io_uring requests not tracked: the table was full */
	IOC_ST_AIO_NO_SLOT,	 /* iocbs not tracked: the table was full */
	IOC_ST_AIO_CUT,		 /* iocbs past IOCAP_MAX_AIO in one call */
	IOC_ST_INFLIGHT_NO_SLOT, /* syscalls not tracked: the table was full */
	IOC_ST_TARGETS_FULL,	 /* forked processes not traced: the "targets" table was full */
	IOC_ST_USER_UNREADABLE,	 /* arguments (paths, iocbs, io_events) not readable */
	IOC_ST_NR,
};

#endif
