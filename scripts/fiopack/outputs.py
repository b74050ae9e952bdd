"""Where the pack writes what a user names as an output (-o, --output, --raw,
--ready, the files of an --out or --keep directory): one policy for every
command, written here once (pmrc2fio applies the same one in C).

  * "-", where a command takes it: standard output.
  * A regular file, or a path where nothing is: written to a temporary file
    in the same directory and renamed over the path once complete, so that a
    command that fails or is interrupted leaves the old file whole and no
    partial one.
  * A character device or a FIFO (/dev/null, /dev/stdout, a named pipe):
    opened and written in place, never replaced. Renaming over it would put
    a regular file in its place: as root, -o /dev/null made /dev/null a file.
  * A symbolic link: followed on purpose, as the shell's > follows it: the
    rules apply to what it points to (a regular file there is replaced in its
    own directory; the link stays a link).
  * A block device, a directory, a socket: refused, naming the path. Nothing
    the pack writes belongs on a disk's raw device or in place of a
    directory, and writing to a socket is not writing a file.

check() and check_dir() apply the rules without writing: a command that
works for long (a capture, a benchmark, a study) checks its outputs before
it starts, rather than refusing them once the work is done.
Output writes by them."""
import os
import stat
import sys
import tempfile

from fiopack import UserError

# how the manuals say it, beside each command's output options
POLICY_HELP = "a file is replaced whole, a device or FIFO written in place, a symlink followed"


class OutputError(UserError):
    """An output path the rules refuse, or that cannot be written."""


def _name(path, what) -> str:
    return f"{what} {path}" if what else str(path)


def target(path, what=None) -> tuple:
    """How @path is written: ("stdout", None), ("replace", the real path of
    the regular file, or of where it will be) or ("in place", the real path
    of the device or FIFO). Refuses what the rules refuse (@what, e.g.
    "-o", names the option in the message)."""
    path = str(path)
    if path == "-":
        return "stdout", None
    name = _name(path, what)
    if not path:
        raise OutputError(f"{what or 'output'}: an empty path")
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputError(f"{name}: {e.strerror}")
    if st is None:
        parent = os.path.dirname(real)
        if not os.path.isdir(parent):
            raise OutputError(f"{name}: no directory {parent}")
        return "replace", real
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return "replace", real
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "in place", real
    kind = ("a block device" if stat.S_ISBLK(mode) else "a directory" if stat.S_ISDIR(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    link = f" ({path} -> {real})" if real != os.path.abspath(path) else ""
    raise OutputError(f"{name}: {kind}{link}: an output is written to a regular file, "
                      f"a character device or a FIFO")


def check(path, what=None, inputs=()) -> None:
    """Refuses, before any work, an output the rules refuse or that cannot be
    written: the directory a replaced file goes to must be writable, a device
    or FIFO writable itself; and an output that is one of the command's
    @inputs (the same file, through links): `trace export-iolog T -o T`
    replaced the user's trace. None (no such option given) passes."""
    if path is None:
        return
    try:
        out = os.stat(path)
    except OSError:
        out = None
    for i in inputs if out and stat.S_ISREG(out.st_mode) else ():
        try:
            st = os.stat(i)
        except (OSError, TypeError, ValueError):
            continue    # "-", or missing: the reader says so
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            raise OutputError(f"{_name(path, what)}: is the input {i}; name another output")
    how, real = target(path, what)
    if how == "replace":
        d = os.path.dirname(real)
        if not os.access(d, os.W_OK | os.X_OK):
            raise OutputError(f"{_name(path, what)}: directory {d} is not writable")
    elif how == "in place" and not os.access(real, os.W_OK):
        raise OutputError(f"{_name(path, what)}: not writable")


def check_dir(path, what=None) -> None:
    """Refuses, before any work, an output directory (a study's --out, a
    generator's --out, capture --keep) that is not a directory, or that
    cannot be made or written in: its nearest existing ancestor must be a
    writable directory."""
    if path is None:
        return
    name = _name(path, what)
    # a dangling link on the way: where it points was checked, but no
    # makedirs() can go through it (a FileNotFoundError traceback)
    q = os.path.abspath(str(path))
    while not os.path.lexists(q):
        q = os.path.dirname(q)
    if os.path.islink(q) and not os.path.exists(q):
        raise OutputError(f"{name}: {q} is a symbolic link to {os.readlink(q)}, "
                          "which does not exist")
    p = os.path.realpath(str(path))
    while not os.path.lexists(p):
        p = os.path.dirname(p)
    if not os.path.isdir(p):
        raise OutputError(f"{name}: {p} is not a directory")
    if not os.access(p, os.W_OK | os.X_OK):
        raise OutputError(f"{name}: {p} is not writable")


def check_new_or_empty_dir(path, what, why) -> None:
    """Refuses, before any work, a directory option (syscalls --work,
    capture --keep) that the command fills by fixed names, unless it is a
    path to be made or an empty directory (a link to one is followed, as
    for outputs): a user's directory given there lost the files of those
    names. @why says what the command does in it."""
    if path is None:
        return
    check_dir(path, what)
    if os.path.lexists(path):
        if not os.path.isdir(path):
            raise OutputError(f"{what} {path}: not a directory")
        if os.listdir(path):
            raise OutputError(f"{what} {path}: not empty: {why} (name a new or empty "
                              "directory)")


class Output:
    """One output being written by the rules: write() bytes (or text, as
    UTF-8), then commit(). Until commit() nothing new is at the path (a
    replaced file is a temporary file beside it); abort() removes that
    temporary file (what was written in place to a device or FIFO stays
    written). As a context manager: commit() at the end of the block,
    abort() on an exception."""

    def __init__(self, path, what=None):
        self.path = str(path)
        self.what = what
        self.tmp = None
        self.how, self.real = target(self.path, what)
        try:
            if self.how == "stdout":
                self.file = sys.stdout.buffer
            elif self.how == "in place":
                self.file = open(os.open(self.real, os.O_WRONLY | os.O_NOCTTY), "wb")
            else:
                d, base = os.path.split(self.real)
                fd, self.tmp = tempfile.mkstemp(prefix="." + base + ".", dir=d)
                self.file = os.fdopen(fd, "wb")
        except OSError as e:
            raise self._error(e)

    def _error(self, e: OSError) -> OutputError:
        return OutputError(f"cannot write {_name(self.path, self.what)}: {e.strerror or e}")

    def write(self, data) -> None:
        if isinstance(data, str):
            data = data.encode()
        try:
            self.file.write(data)
        except OSError as e:
            raise self._error(e)

    def commit(self) -> None:
        try:
            self.file.flush()
            if self.how == "in place":
                self.file.close()
            elif self.how == "replace" and self.tmp:
                os.fsync(self.file.fileno())
                self.file.close()
                try:
                    mode = stat.S_IMODE(os.stat(self.real).st_mode)
                except FileNotFoundError:
                    mode = 0o666 & ~_umask()
                os.chmod(self.tmp, mode)
                os.replace(self.tmp, self.real)
                self.tmp = None
        except OSError as e:
            raise self._error(e)

    def abort(self) -> None:
        if self.how == "in place" and not self.file.closed:
            try:
                self.file.close()
            except OSError:
                pass
        if self.tmp:
            try:
                self.file.close()
            except OSError:
                pass
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.commit()
        else:
            self.abort()
        return False


def write_output(path, data, what=None) -> None:
    """Writes all of @data (bytes or text) to @path by the rules."""
    with Output(path, what) as out:
        out.write(data)


def copy_to_output(src, path, what=None) -> None:
    """Copies the file @src to the output @path by the rules."""
    with open(src, "rb") as f, Output(path, what) as out:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m
