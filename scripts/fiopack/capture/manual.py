"""The manual pages of fio-pack capture's commands: each one's --help,
the description and the epilog of its parser (cli.py)."""
from fiopack.capture.rules import RULES

RULES_TEXT = "\n".join(
    f"    {db}:\n" + "\n".join(f"        {pat:26} {role}" for pat, role in RULES[db])
    for db in ("postgresql", "mariadb", "sqlite", "generic"))

MANUAL = {}
MANUAL["run"] = dict(description="""\
NAME
    fio-pack capture run - start a command captured and convert its file I/O

SYNOPSIS
    fio-pack capture run --datadir DIR --db DB -o OUT.trace[.gz] [OPTIONS] -- COMMAND...

DESCRIPTION
    Lists DIR (the sizes the trace declares), then starts COMMAND held until
    the BPF capture (build/iocap, the default where it can run) has attached
    to it, and lets it run captured from the kernel, with every thread and
    process it starts; when COMMAND ends, the capture is converted (see
    convert). Where BPF cannot run (or with --tracer strace) it runs

      strace -f -ttt -yy -qq -s 0 -T --seccomp-bpf -e trace=CALLS -o strace.out -- COMMAND...

    instead (CALLS: the calls "fio-pack capture help convert" lists).
    COMMAND's standard input, output and error are fio-pack capture's own;
    SIGINT (Ctrl-C) goes to COMMAND only. A COMMAND that exits with a
    non-zero status is an error: no trace is written.

    Streams are named after the threads' names (comm) or, for PostgreSQL, the
    process titles, sampled from /proc while the capture runs, plus the
    thread id: "sqlite3-4242", "checkpointer-4250", "backend-4262".
""", epilog="""\
EXAMPLE
    fio-pack capture run --datadir /tmp/db --db sqlite -o load.trace.gz \\
        --source "SQLite 3.40.1 bulk load" -- sqlite3 /tmp/db/app.db < dump.sql
""")

MANUAL["attach"] = dict(description="""\
NAME
    fio-pack capture attach - capture the file I/O of running processes

SYNOPSIS
    fio-pack capture attach --datadir DIR --db DB -o OUT.trace[.gz] --pid PID [--pid PID]...
                        | --cgroup CGROUP
                        [--duration SECONDS] [--no-children] [--ready FILE] [OPTIONS]

DESCRIPTION
    Lists DIR (the sizes the trace declares), then captures each PID and
    (unless --no-children) every process descending from it at that moment:
    a PostgreSQL postmaster's checkpointer, WAL writer, I/O workers and
    backends; MariaDB's mariadbd has threads only, all captured through its
    PID. Threads and processes started later are followed. The tracer is
    the BPF capture, build/iocap (the default where it can run): it follows
    the processes from the kernel (eBPF on tracepoints) and sees their
    system calls, io_uring and libaio requests; what it could not see goes
    into the trace's header as "incomplete" lines. Where it cannot run (or
    with --tracer strace) strace takes its place,

      strace -f -ttt -yy -qq -s 0 -T -e trace=CALLS -o strace.out -p PID -p CHILD...

    which sees system calls only. Once the tracer sees every thread, a line
    "attached to ..." goes to stderr and --ready FILE is written; the
    capture then lasts --duration SECONDS, or until fio-pack capture gets
    SIGINT (Ctrl-C) or SIGTERM, or (with --pid) the processes end. The
    tracer then stops (the database keeps running) and its output is
    converted (see convert). Calls still in progress at the start and the
    end are dropped. A PostgreSQL server whose data directory is not DIR is
    refused, as is io_method=io_uring under strace (it cannot see it).

    --cgroup CGROUP (BPF only) captures every process of the cgroup v2
    directory CGROUP instead, for instance a systemd service's
    /sys/fs/cgroup/system.slice/mariadb.service: the kernel filters by the
    cgroup, so processes that join it later are captured from their first
    call, and those of its sub-cgroups are not.

    strace's ptrace stops every traced thread twice per traced system call:
    under strace the database runs slower while attached (docs/dbcapture.md has
    numbers). --seccomp-bpf, which makes run cheaper, cannot be used when
    attaching.
""", epilog="""\
EXAMPLE
    fio-pack capture attach --datadir /var/lib/postgresql/15/main --db postgresql \\
        --pid $(head -1 /var/lib/postgresql/15/main/postmaster.pid) --duration 10 \\
        --source "PostgreSQL 15 pgbench -c 4 -T 10" -o pgbench.trace.gz
""")

MANUAL["convert"] = dict(description=f"""\
NAME
    fio-pack capture convert - strace output as a dbtrace trace

SYNOPSIS
    fio-pack capture convert STRACE_OUT --datadir DIR --db DB -o OUT.trace[.gz]
                         [--listing FILE] [--procinfo FILE] [--cwd DIR]
                         [--capture TEXT] [OPTIONS]

DESCRIPTION
    Reads what strace -f -ttt -yy -o STRACE_OUT wrote (plain or gzip; lines
    "PID SECONDS.MICROS CALL(ARGS) = RESULT"; -tt times, -T durations, lines
    without a pid (no -f) and "[pid N]" prefixes are read too; without
    timestamps the trace is order-only) and writes the file I/O on DIR as a
    trace: one stream per thread or process, records in the order the calls
    were issued, times in microseconds from the first record (timeunit us).
    With -T durations (run and attach pass -T; iocap always writes them) each
    record keeps its latency ("+LATENCY", dbtrace 2); files read or written
    through O_DIRECT descriptors are declared "direct" (dbtrace 2).

    --listing FILE is the data directory as it was when the capture started,
    in the form of find DIR -printf '%y %s %P\\n' (run and attach make it
    themselves): files in it are declared with its sizes, files the capture
    creates as absent ('-'). Without it, a file is taken to exist before the
    capture unless the capture creates it after unlinking its name or with
    O_EXCL, and its size is estimated from the furthest read (or
    lseek(SEEK_END)) before it shrinks.

MAPPING
    Descriptors  -y paths (fd</path>) name the file of every call; open,
                 openat, openat2, creat, close, close_range, dup, dup2, dup3,
                 fcntl(F_DUPFD, F_DUPFD_CLOEXEC), clone/clone3/fork/vfork
                 (CLONE_FILES shares the table) are tracked as well, for the
                 file positions of read/write and for captures without -y.
                 Sockets, pipes, eventfds, /dev, /proc and /sys are skipped.
    Paths        relative to DIR (and to its real path if it is a symbolic
                 link); relative call arguments are resolved with the
                 AT_FDCWD</dir> and dirfd</dir> paths strace prints, chdir and
                 fchdir, the directories sampled by run/attach (--procinfo),
                 --cwd, or else DIR. Files outside DIR are dropped with a
                 count (--outside). A path the format cannot hold (blanks,
                 control characters, over 1024 bytes) is dropped with a count.
    Names        open with O_CREAT of an absent name -> create; O_TRUNC of a
                 non-empty file -> truncate 0; open(DIR, O_TMPFILE), a file
                 with no name (sort files) -> a file DIR/#tmpfile.N of role
                 temp, created and unlinked at once, its I/O recorded on
                 it; unlink, unlinkat -> unlink;
                 mkdir, mkdirat -> create of a directory; rmdir,
                 unlinkat(AT_REMOVEDIR) -> unlink of a directory. rename,
                 renameat, renameat2 have no equivalent: a renamed file is
                 named by its new name in the trace (a WAL segment made as
                 pg_wal/xlogtemp.PID is its segment), unless another file of
                 the trace has that name (then it keeps its first), and the
                 name it replaced (if any) gets an unlink; a name used again
                 after an unlink is the same trace file (a journal made anew
                 each transaction: create, writes, unlink, create, ...).
    I/O          pread64, preadv, preadv2 -> read; pwrite64, pwritev,
                 pwritev2 -> write (at their offset); read, readv, write,
                 writev -> read/write at the file position (tracked through
                 opens, lseek and O_APPEND; unknown for a descriptor opened
                 before an attach: dropped with a count). The LENGTH is the
                 result (bytes really transferred): a short read at the end of
                 a file is replayed as short; 0 bytes is dropped. Over 64 MiB
                 is split.
    Sizes        ftruncate, truncate -> truncate; fallocate PUNCH_HOLE ->
                 trim (clipped to the file's size); fallocate mode 0 growing
                 the file -> truncate to its new size (the format has no
                 allocation); other fallocate modes dropped.
    Durability   fsync, fdatasync -> fsync, fdatasync (an fdatasync of a
                 directory -> fsync); sync_file_range -> sync_file_range (any
                 flags; clipped to the file's size).
    Async I/O    iocap's output has each io_uring and libaio request with
                 its completion, as a call. In strace's, io_submit: its
                 requests are recorded at submission with their requested
                 lengths when strace prints them (a warning: completion is
                 not visible); io_uring_enter: a warning, its I/O is
                 invisible. Both make the trace incomplete (below): capture
                 with the BPF tracer, which sees them.
    Incomplete   I/O of the data directory that the trace cannot hold is
                 counted, and each class becomes an "incomplete" line of the
                 trace's header, "incomplete N WHAT": io_uring_enter calls,
                 io_submit requests not printed, or of an unmapped opcode, or
                 recorded without their completion; calls on descriptors
                 opened before the capture with no path, or at an unknown
                 file position; paths a trace cannot hold; copy_file_range,
                 sendfile, syncfs and unmapped fallocate modes. Exit status
                 3 unless --accept-incomplete. Calls cut by the capture's
                 start and end, failed calls and files outside DIR are not
                 holes: they are dropped with a note only.
    Dropped      (counted in notes) failed calls (result -1: a failed call
                 changed no file, and replaying it would fail again or do
                 what the database did not), calls interrupted or never
                 resumed, syncfs, copy_file_range, sendfile. mmap'ed I/O
                 (SQLite's -shm, msync) is not a system call strace sees.
    Files        SIZE from --listing (raised when the capture reads past it:
                 the file grew between the listing and the attach); MAXSIZE
                 the furthest any record reaches; roles by the rules below,
                 first match wins, --role rules before them; a path with
                 another below it (or fsynced with O_DIRECTORY, mkdir'ed) is
                 a directory, the data directory itself is '.'.
    Unfinished   with strace -f, a call another thread interrupts is printed
                 as "CALL(ARGS <unfinished ...>" and later "<... CALL
                 resumed>REST": the two are joined; the record has the time
                 the call was issued, and is written in issue order.

ROLE RULES
{RULES_TEXT}
""", epilog="""\
EXAMPLE
    strace -f -ttt -yy -qq -s 0 -e trace=%file,%desc -o pg.strace -p 4242
    fio-pack capture convert pg.strace --datadir /srv/pg --db postgresql \\
        --capture "strace -f -ttt -yy -p 4242" -o pg.trace.gz
""")
