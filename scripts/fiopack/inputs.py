"""How the pack reads a file a user names as an input (fio's JSON output,
an opstats file, a study's files, a capture's strace output): one policy,
written here once (the engines and pmrc2fio apply the same in C).

  * It must be a regular file, or a symbolic link to one: a FIFO blocked
    the command for ever in open(), and /dev/zero or /dev/urandom were read
    until the memory ran out (a MemoryError traceback). Looked at before it
    is opened, and opened O_NONBLOCK, so that a FIFO put in its place
    between the two does not block either.
  * A file read whole is read up to a bound: a 1 TB sparse file was read
    into memory the same way. The bound is far above what fio or the
    engines write.
Each refusal is one line naming the file (the caller's Error class)."""
import os
import stat

from fiopack import UserError

# fio's JSON of hundreds of jobs with latency histograms is a few MB
WHOLE_LIMIT = 256 << 20

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFDIR: "a directory",
          stat.S_IFSOCK: "a socket"}


def open_regular(path, error=UserError, what="an input"):
    """@path opened for reading in binary, if it is a regular file (or a
    symlink to one), else @error naming it."""
    def refuse(st):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        return error(f"{path}: {kind}, not a regular file: {what} is read from a file")
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise refuse(st)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror}")
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):    # replaced between the look and the open
        os.close(fd)
        raise refuse(st)
    return os.fdopen(fd, "rb")


def read_whole(path, error=UserError, what="an input", limit=WHOLE_LIMIT) -> bytes:
    """The bytes of @path (open_regular's rules), at most @limit of them,
    else @error naming the file."""
    with open_regular(path, error, what) as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise error(f"{path}: cannot read: {e.strerror}")
    if len(data) > limit:
        raise error(f"{path}: more than {limit >> 20} MiB: too large for {what}")
    return data
