#!/usr/bin/python3
"""NAME
    dbcapture.py - capture the file I/O of a real database with strace and
    write it as a dbtrace trace for the page-replay engine

SYNOPSIS
    dbcapture.py run     --datadir DIR --db DB -o OUT.trace[.gz] [OPTIONS] -- COMMAND...
    dbcapture.py attach  --datadir DIR --db DB -o OUT.trace[.gz] --pid PID [--pid PID]...
                         | --cgroup CGROUP
                         [--duration SECONDS] [--no-children] [--ready FILE] [OPTIONS]
    dbcapture.py convert STRACE_OUT --datadir DIR --db DB -o OUT.trace[.gz]
                         [--listing FILE] [--procinfo FILE] [--cwd DIR] [OPTIONS]
    dbcapture.py help [COMMAND]

DESCRIPTION
    Turns what a database process really did to its files into a trace in the
    dbtrace format (docs/dbtrace-format.md), which the page-replay engine
    replays on the device under test. docs/dbcapture.md says how to capture
    from PostgreSQL, MariaDB/InnoDB and SQLite, and what strace costs.

      run      start COMMAND under strace -f (the database server, or a
               program embedding the database such as sqlite3), wait for it to
               end, convert what it did
      attach   attach strace to running processes (a server's main process
               and, by default, its existing child processes; new threads and
               processes are followed), capture for --duration seconds or
               until SIGINT (Ctrl-C) or SIGTERM, detach, convert
      convert  convert the output of an earlier strace run (written with
               strace -f -ttt -yy -o FILE, one file in time order, not -ff)

    run and attach list the data directory (every regular file with its size,
    every directory) just before strace starts: the files that exist then are
    declared with those sizes; files the capture creates are declared as
    absent ('-'). The trace's source line holds the --source text, the strace
    command line used and the conversion options.

    Output is written to a temporary file beside OUT and renamed into place
    when complete: on any error no output file is left. Notes about what was
    dropped go to standard error, one line each, "dbcapture.py: note: ..."
    (--quiet: none).

COMMANDS
    Each command's --help (or dbcapture.py help COMMAND) is its manual page;
    "dbcapture.py help convert" also says exactly what is mapped and dropped.

EXIT STATUS
    0 success; 2 bad input (named as "FILE line N: reason"), a bad option, a
    failed capture (strace or COMMAND failing), a file that cannot be read or
    written; 3 the trace is written but incomplete: the capture could not see
    some of the database's I/O (one "incomplete" line per class in the
    trace's header and on standard error; --accept-incomplete makes it 0).
"""
import argparse
import heapq
import os
import re
import shlex
import shutil
import signal
import stat as _st
import subprocess
import sys
import tempfile
import time
from fnmatch import fnmatchcase
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dbtrace as dt  # noqa: E402  (the format's reader/writer, beside this script)

PROG = "dbcapture.py"


class Error(Exception):
    """A one-line error; main() prints it after "dbcapture.py: "."""


# ---------------------------------------------------------------------------
# Databases: page sizes and file roles
# ---------------------------------------------------------------------------

# Rules are (pattern, role), matched in order with fnmatch on the path
# relative to the data directory ('*' also matches '/'); the first match wins.
# Directories are always role directory.
RULES = {
    "postgresql": [
        ("pg_wal/archive_status/*", "other"),
        ("pg_wal/*", "log"),
        ("pg_xlog/*", "log"),
        ("*pgsql_tmp*", "temp"),
        ("pg_stat_tmp/*", "temp"),
        ("global/pg_control", "other"),
        ("*pg_filenode.map", "other"),
        ("*pg_internal.init*", "other"),
        ("base/*", "data"),
        ("global/*", "data"),
        ("pg_tblspc/*", "data"),
        ("pg_xact/*", "data"),
        ("pg_multixact/*", "data"),
        ("pg_subtrans/*", "data"),
        ("pg_commit_ts/*", "data"),
        ("pg_serial/*", "data"),
        ("*", "other"),
    ],
    "mariadb": [
        ("ib_logfile*", "log"),
        ("#innodb_redo/*", "log"),
        ("aria_log.[0-9]*", "log"),
        ("*-bin.[0-9]*", "log"),
        ("*-relay-bin.[0-9]*", "log"),
        ("ib_doublewrite", "journal"),
        ("#ib_*.dblwr", "journal"),
        ("ibtmp*", "temp"),
        ("#innodb_temp/*", "temp"),
        ("*#sql*", "temp"),
        ("tmp/*", "temp"),
        ("ibdata*", "data"),
        ("undo[0-9]*", "data"),
        ("*.ibd", "data"),
        ("*.MYD", "data"),
        ("*.MYI", "data"),
        ("*.MAD", "data"),
        ("*.MAI", "data"),
        ("*.CSV", "data"),
        ("*", "other"),
    ],
    "sqlite": [
        ("*-journal", "journal"),
        ("*-wal", "log"),
        ("*-shm", "other"),
        ("*etilqs_*", "temp"),
        ("*", "data"),
    ],
    "generic": [
        ("*", "other"),
    ],
}
PAGESIZE = {"postgresql": 8192, "mariadb": 16384, "sqlite": 4096, "generic": 4096}
DB_NAMES = {"postgresql": "PostgreSQL", "mariadb": "MariaDB", "sqlite": "SQLite",
            "generic": "generic"}
DB_ALIASES = {"postgres": "postgresql", "pg": "postgresql", "mysql": "mariadb",
              "innodb": "mariadb", "sqlite3": "sqlite"}

# What run and attach ask strace to trace: the calls the converter reads.
TRACE_SET = ("open,openat,openat2,creat,close,close_range,dup,dup2,dup3,fcntl,"
             "rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,rmdir,"
             "truncate,ftruncate,fallocate,fsync,fdatasync,sync_file_range,syncfs,"
             "pread64,pwrite64,read,write,readv,writev,preadv,pwritev,preadv2,pwritev2,"
             "lseek,io_submit,io_uring_enter,copy_file_range,sendfile,"
             "chdir,fchdir,clone,clone3,fork,vfork")

MAX_IO = dt.MAX_IO
NONFILE_PREFIXES = ("/dev/", "/proc/", "/sys/")


# ---------------------------------------------------------------------------
# strace's text
# ---------------------------------------------------------------------------

class LineError(Exception):
    """A malformed strace line: the converter adds the file and line."""


_PREFIX = re.compile(r"(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?"
                     r"(?:(\d+)\.(\d{6})\s+|(\d\d):(\d\d):(\d\d)\.(\d{6})\s+)?")
_DURATION = re.compile(r"<(\d+)\.(\d{1,9})>\s*$")     # strace -T, iocap: the call's duration
_RESUMED = re.compile(r"<\.\.\. ([A-Za-z0-9_]+) resumed>\s?")
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")
_SPECIAL = re.compile(r'["(){}\[\]<,]')
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?')
_UNFINISHED = " <unfinished ...>"
_ESC = re.compile(r"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "\a", "b": "\b",
            "e": "\x1b"}


def unescape(s: str) -> str:
    """strace's C-style escapes (\\n, \\xHH, \\NNN octal, \\\\, \\") as latin-1 text."""
    def rep(m):
        e = m.group(1)
        if e[0] == "x" and len(e) == 3:
            return chr(int(e[1:], 16))
        if e[0] in "01234567":
            return chr(int(e, 8) & 0xff)
        return _ESCAPES.get(e, e)
    return _ESC.sub(rep, s) if "\\" in s else s


def _skip_annotation(s: str, i: int) -> int:
    """S[i] is the '<' of an -y/-yy annotation: the index after its '>'.
    Paths escape '<' and '>'; a socket's "[123->456]" has a '>' after '-';
    devices nest one more: </dev/null<char 1:3>>."""
    depth = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "<":
            depth += 1
        elif c == ">" and s[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise LineError("an unterminated <...> annotation")


def split_args(s: str, i: int):
    """S[i:] follows a call's '(': its top-level arguments (text) and the
    index after the closing ')', or None for the index if the text ends first
    (an unfinished call)."""
    args: List[str] = []
    depth = 0
    start = i
    n = len(s)
    while True:
        m = _SPECIAL.search(s, i)
        if not m:
            tail = s[start:].strip()
            if tail:
                args.append(tail)
            return args, None
        j = m.start()
        c = s[j]
        if c == '"':
            q = _QUOTED.match(s, j)
            if not q:
                raise LineError("an unterminated string")
            i = q.end()
        elif c in "({[":
            depth += 1
            i = j + 1
        elif c in ")}]":
            if depth == 0:
                if c != ")":
                    raise LineError(f"unbalanced '{c}'")
                tail = s[start:j].strip()
                if tail or args:
                    args.append(tail)
                return args, j + 1
            depth -= 1
            i = j + 1
        elif c == "<":
            if j > 0 and (s[j - 1].isalnum() or s[j - 1] == "_"):
                i = _skip_annotation(s, j)
            else:
                i = j + 1
        else:  # ','
            if depth == 0:
                args.append(s[start:j].strip())
                start = j + 1
            i = j + 1
        if i > n:
            raise LineError("a line cut short")


_FD = re.compile(r"(-?\d+|AT_FDCWD)(<.*>)?(\(deleted\))?\Z", re.S)


class Fd:
    """A descriptor argument or result: number (or AT_FDCWD) and its -y path."""
    __slots__ = ("num", "kind", "path", "deleted")

    def __init__(self, num, kind, path, deleted):
        self.num = num          # int, or -100 for AT_FDCWD
        self.kind = kind        # None (no annotation), "path", "other" (socket, pipe, ...)
        self.path = path        # absolute path for kind "path"
        self.deleted = deleted


def parse_fd(text: str) -> Optional[Fd]:
    m = _FD.match(text)
    if not m:
        return None
    num = -100 if m.group(1) == "AT_FDCWD" else int(m.group(1))
    ann = m.group(2)
    if not ann:
        return Fd(num, None, None, False)
    inner = ann[1:-1]
    deleted = bool(m.group(3))
    if not inner.startswith("/"):
        return Fd(num, "other", inner, deleted)
    k = 0                    # the path ends at the first unescaped '<' (-yy device details)
    while True:
        k = inner.find("<", k)
        if k < 0 or inner[k - 1] != "\\":
            break
        k += 1
    path = unescape(inner if k < 0 else inner[:k])
    if path.endswith(" (deleted)"):       # older strace puts it inside
        path, deleted = path[:-10], True
    return Fd(num, "path", path, deleted)


def parse_str(text: str) -> Optional[str]:
    if len(text) >= 2 and text[0] == '"':
        end = text.rfind('"')
        if end > 0:
            return unescape(text[1:end])
    return None


def parse_int(text: str) -> Optional[int]:
    t = text.strip()
    try:
        if t.startswith(("0x", "-0x")):
            return int(t, 16)
        return int(t)
    except ValueError:
        return None


class Result:
    __slots__ = ("value", "fd", "error")

    def __init__(self, value, fd, error):
        self.value = value      # int, or None for '?'
        self.fd = fd            # Fd if the result carries an annotation
        self.error = error      # errno name when the call failed, "?" if unknown


_RET = re.compile(r"\s*=\s*(\?|-?\d+|0x[0-9a-fA-F]+)")
_ERRNO = re.compile(r"\s+([A-Z][A-Z0-9_]+)\b")


def parse_result(text: str) -> Result:
    """' = 5</path> <0.000010>', ' = -1 ENOENT (...)', ' = 0x2 (flags O_RDWR)', ' = ?'"""
    m = _RET.match(text)
    if not m:
        raise LineError(f"cannot read the call's result '{text.strip()[:40]}'")
    v = m.group(1)
    i = m.end()
    if v == "?":
        e = _ERRNO.match(text, i)
        return Result(None, None, e.group(1) if e else "?")
    value = int(v, 16) if v.startswith("0x") else int(v)
    fd = None
    if i < len(text) and text[i] == "<":
        j = _skip_annotation(text, i)
        if text.startswith("(deleted)", j):
            j += 9
        fd = parse_fd(f"{value}{text[i:j]}")
        i = j
    err = None
    if value == -1:
        e = _ERRNO.match(text, i)
        err = e.group(1) if e else "?"
    return Result(value, fd, err)


# ---------------------------------------------------------------------------
# The converter
# ---------------------------------------------------------------------------

class TFile:
    """A file of the trace: one path, one declaration; successive files of
    the same name (a journal created and removed per transaction) share it."""
    __slots__ = ("path", "existed", "size0", "extent", "is_dir", "owner", "id", "ops", "bad",
                 "order", "direct", "buffered")

    def __init__(self, path, existed, size0, is_dir, order):
        self.path = path
        self.existed = existed      # exists before the first record
        self.size0 = size0          # its size then (None if it does not exist)
        self.extent = 0
        self.is_dir = is_dir
        self.owner = None           # the object now using this name
        self.id = None              # assigned at its first record
        self.ops = set()
        self.bad = None             # why the format cannot hold its path
        self.order = order
        self.direct = 0             # reads and writes through O_DIRECT descriptors
        self.buffered = 0           # and through others


class Obj:
    """A file or directory of the capture (follows renames)."""
    __slots__ = ("path", "tf", "dead", "cur", "bumpable", "is_dir", "why")

    def __init__(self, path):
        self.path = path            # current absolute path
        self.tf: Optional[TFile] = None
        self.dead = False           # unlinked (may still be open)
        self.cur = 0                # size as far as the trace tells
        self.bumpable = False       # existed before the capture and never shrunk
        self.is_dir = False
        self.why = None             # why it is not in the trace (outside, ...)


class Ofd:
    """An open file description: shared by dup'ed and inherited descriptors."""
    __slots__ = ("obj", "pos", "append", "direct")

    def __init__(self, obj, pos, append=False, direct=False):
        self.obj = obj              # None: not a regular file (socket, pipe, device)
        self.pos = pos              # None: unknown (opened before the capture)
        self.append = append
        self.direct = direct        # opened with O_DIRECT (or set by fcntl F_SETFL)


class Counts(dict):
    def add(self, key, n=1):
        self[key] = self.get(key, 0) + n


class Converter:
    def __init__(self, db, datadir, listing=None, procinfo=None, cwd=None, outside="drop",
                 outside_prefix="outside", name="strace output"):
        self.db = db
        self.name = name
        d = os.path.normpath(datadir)
        if not d.startswith("/"):
            d = os.path.normpath(os.path.join(os.getcwd(), d))
        self.roots = [d]
        if os.path.exists(d):
            r = os.path.realpath(d)
            if r != d:
                self.roots.append(r)
        self.datadir = d
        self.outside = outside
        self.outside_prefix = outside_prefix.strip("/")
        self.listing = listing            # abs path -> (type, size), None: no listing
        self.procinfo = procinfo or {}    # tid -> {"name":..., "cwd":..., "odirect":...}
        self.default_cwd = cwd
        self.ns: Dict[str, Obj] = {}      # current names -> objects
        self.gone: Dict[str, Obj] = {}    # last object unlinked under a name
        self.touched = set()              # names whose listing entry no longer holds
        self.tfiles: Dict[str, TFile] = {}
        self.tf_order = 0
        self.tables: Dict[int, dict] = {}  # pid -> fd table (shared by CLONE_FILES)
        self.cwd: Dict[int, str] = {}
        self.pending: Dict[int, tuple] = {}  # pid -> (seq, time, text) of an unfinished call
        self.ready = []                   # heap of completed records waiting for earlier ones
        self.sub = 0
        self.timed = None
        self.tt_last = None
        self.tt_days = 0
        self.spool = tempfile.TemporaryFile(mode="w+", encoding="latin-1")
        self.nrec = 0
        self.streams: Dict[int, int] = {}  # pid -> stream id
        self.stream_last: Dict[int, int] = {}
        self.files: List[TFile] = []       # by id
        self.t0 = None
        self.tmax = None
        self.dropped = Counts()            # reason -> calls
        # I/O of the data directory the trace does not hold: reason -> count.
        # Each becomes an "incomplete" header line (docs/dbtrace-format.md).
        self.unseen = Counts()
        self.ignored = Counts()            # harmless calls seen and not recorded
        self.mapped = Counts()             # notes on conversions
        self.warned = set()
        self.line = 0
        self.first_pid = None
        # the current call's duration in us (strace -T, iocap: issue to
        # completion), None if not known: becomes its records' +LATENCY
        self.lat = None
        self.nlat = 0

    # -- input --

    def feed(self, lineno: int, line: str):
        self.line = lineno
        try:
            self._feed(lineno, line)
        except LineError as e:
            raise Error(f"{self.name} line {lineno}: {e}")

    def _time(self, m) -> Optional[int]:
        if m.group(3) is not None:
            return int(m.group(3)) * 1000000 + int(m.group(4))
        if m.group(5) is not None:
            t = ((int(m.group(5)) * 60 + int(m.group(6))) * 60 + int(m.group(7))) * 1000000 \
                + int(m.group(8))
            if self.tt_last is not None and t + self.tt_days < self.tt_last - 43200 * 1000000:
                self.tt_days += 86400 * 1000000     # -tt times wrap at midnight
            t += self.tt_days
            self.tt_last = t
            return t
        return None

    def _feed(self, lineno: int, line: str):
        line = line.rstrip("\r\n")
        if not line.strip() or line.startswith("strace: "):
            return
        m = _PREFIX.match(line)
        pid = int(m.group(1) or m.group(2) or 0)
        if self.first_pid is None:
            self.first_pid = pid
        t = self._time(m)
        body = line[m.end():]
        if body.startswith(("+++ ", "--- ")):
            return                                   # exits and signals
        rm = _RESUMED.match(body)
        if not rm and not _CALL.match(body):
            raise LineError(f"not an strace line: '{body[:40]}' (expected 'PID TIME "
                            "SYSCALL(ARGS) = RESULT', as strace -f -ttt -yy writes)")
        if self.timed is None:
            self.timed = t is not None
        elif self.timed != (t is not None):
            raise LineError("a line without a timestamp among timed lines (use strace -ttt)"
                            if self.timed else "a timestamp among lines without one")
        seq = lineno
        if rm:
            p = self.pending.pop(pid, None)
            if p is None:
                # strace started (or the file was cut) in the middle of the call
                self.dropped.add("resumed calls whose start is not in the capture")
                return
            seq, t0, head, pname = p
            if pname != rm.group(1):
                raise LineError(f"'{rm.group(1)}' resumed while pid {pid}'s unfinished call "
                                f"is '{pname}'")
            text = head + body[rm.end():]
            t = t0
        else:
            text = body
            if pid in self.pending:
                # a new call while one is unfinished: strace lost the resumption
                self.pending.pop(pid)
                self.dropped.add("unfinished calls never resumed")
        if text.endswith("<detached ...>"):
            # strace let go of the thread (the capture ended) in the middle of
            # this call: its result is not known, as for a call still
            # unfinished at the end
            self.dropped.add("calls still unfinished at the end of the capture")
            return
        if text.endswith(_UNFINISHED) or text.endswith("<unfinished ...>"):
            head = text[:text.rindex("<unfinished ...>")].rstrip(" ")
            cm = _CALL.match(head)
            if not cm:
                raise LineError("an unfinished call without its name")
            if head.endswith(","):
                head += " "
            self.pending[pid] = (seq, t, head, cm.group(1))
            return
        cm = _CALL.match(text)
        if not cm:
            raise LineError(f"not an strace call: '{text[:40]}'")
        name = cm.group(1)
        args, end = split_args(text, cm.end())
        if end is None:
            raise LineError(f"{name}: the argument list does not end")
        rest = text[end:]
        if not rest.strip():
            raise LineError(f"{name}: no result (expected ' = RESULT')")
        res = parse_result(rest)
        dm = _DURATION.search(rest)
        self.lat = None if dm is None or t is None else \
            int(dm.group(1)) * 1000000 + int(dm.group(2).ljust(9, "0")[:6])
        self.call(seq, pid, t, name, args, res)
        self._release()

    # -- records: held back until every earlier-issued call has completed --

    def emit(self, seq, t, pid, obj: Obj, op, a=0, b=0):
        if obj is None or obj.tf is None:
            self.dropped.add(f"{op}s of files outside the data directory"
                             if obj is not None and obj.why == "outside"
                             else f"{op}s of unknown files")
            return
        tf = obj.tf
        if tf.bad:
            self.lost(f"{op}s of files whose path a trace cannot hold ({tf.bad})")
            return
        if tf.path == "." and op in ("create", "unlink"):
            self.dropped.add(f"{op}s of the data directory itself")
            return
        self.sub += 1
        heapq.heappush(self.ready, (seq, self.sub, t, pid, tf, op, a, b, self.lat))

    def _release(self, final=False):
        if not self.ready:
            return
        lim = min(p[0] for p in self.pending.values()) if self.pending and not final else None
        while self.ready and (lim is None or self.ready[0][0] < lim):
            _, _, t, pid, tf, op, a, b, lat = heapq.heappop(self.ready)
            self._spool(t, pid, tf, op, a, b, lat)

    def _spool(self, t, pid, tf, op, a, b, lat=None):
        sid = self.streams.get(pid)
        if sid is None:
            sid = self.streams[pid] = len(self.streams)
            if sid >= dt.MAX_STREAMS:
                raise Error(f"{self.name} line {self.line}: more than {dt.MAX_STREAMS} "
                            "threads and processes did I/O (the format's limit)")
        if tf.id is None:
            tf.id = len(self.files)
            if tf.id >= dt.MAX_FILES:
                raise Error(f"{self.name} line {self.line}: more than {dt.MAX_FILES} files "
                            "(the format's limit)")
            self.files.append(tf)
        if t is not None:
            last = self.stream_last.get(sid)
            if last is not None and t < last:
                self.mapped.add("times raised to the previous time of their stream "
                                "(the clock went back)")
                if lat is not None:
                    lat = max(0, lat - (last - t))     # the completion stays where it was
                t = last
            self.stream_last[sid] = t
            if self.t0 is None or t < self.t0:
                self.t0 = t
            if self.tmax is None or t > self.tmax:
                self.tmax = t
        if op in ("read", "write", "trim", "sync_file_range"):
            end = a + b
        elif op == "truncate":
            end = a
        else:
            end = 0
        if end > tf.extent:
            tf.extent = end
        tf.ops.add(op)
        self.spool.write(f"{'-' if t is None else t} {sid} {tf.id} {op} {a} {b} "
                         f"{'-' if lat is None or t is None else lat}\n")
        if lat is not None and t is not None:
            self.nlat += 1
        self.nrec += 1

    # -- names and objects --

    def rel(self, path: str) -> Optional[str]:
        for r in self.roots:
            if path == r:
                return "."
            if path.startswith(r) and path[len(r)] == "/" and r != "/":
                return path[len(r) + 1:]
            if r == "/" and path.startswith("/"):
                return path[1:]
        return None

    def new_obj(self, path: str, existed: bool, size: int = 0, is_dir=False,
                in_ns=True) -> Obj:
        o = Obj(path)
        o.is_dir = is_dir
        o.cur = size
        o.bumpable = existed
        if in_ns:
            self.ns[path] = o
        r = self.rel(path)
        if r is None:
            if self.outside == "error":
                raise LineError(f"'{path[:200]}' is outside the data directory {self.datadir} "
                                "(--outside error)")
            if self.outside == "drop":
                o.why = "outside"
                return o
            r = f"{self.outside_prefix}/{path.lstrip('/')}" if self.outside_prefix else \
                path.lstrip("/")
        tf = self.tfiles.get(r)
        if tf is not None and tf.is_dir == is_dir and (tf.owner is None or tf.owner.dead):
            tf.owner = o                  # the same name again (a journal made anew)
        else:
            if tf is not None:
                n = 1
                while f"{r}~{n}" in self.tfiles:
                    n += 1
                r = f"{r}~{n}"
            self.tf_order += 1
            tf = TFile(r, existed, size if existed else None, is_dir, self.tf_order)
            tf.owner = o
            why = dt.path_check(r, "directory" if is_dir else "data")
            if why:
                tf.bad = why
            self.tfiles[r] = tf
        o.tf = tf
        return o

    def lookup(self, path: str, what: str = "file") -> Obj:
        """The object a name refers to now (made on first sight)."""
        o = self.ns.get(path)
        if o is not None:
            return o
        if self.listing is not None and path not in self.touched:
            ent = self.listing.get(path)
            if ent is not None:
                return self.new_obj(path, True, ent[1], is_dir=ent[0] == "d")
            if path in self.roots:
                return self.new_obj(path, True, 0, is_dir=True)
            if self.rel(path) is not None:
                self.mapped.add("files missing from the listing, taken as existing before "
                                "the capture (size from the reads that reach furthest)")
        return self.new_obj(path, True, 0, is_dir=path in self.roots)

    def resolve(self, pid: int, dirfd: Optional[Fd], path: str) -> str:
        if path.startswith("/"):
            return os.path.normpath(path)
        base = None
        if dirfd is not None and dirfd.num != -100:
            if dirfd.kind == "path":
                base = dirfd.path
            else:
                ofd = self.table(pid).get(dirfd.num)
                if ofd is not None and ofd.obj is not None:
                    base = ofd.obj.path
        elif dirfd is not None and dirfd.kind == "path":
            base = dirfd.path
            self.cwd[pid] = base
        if base is None:
            base = self.cwd.get(pid)
            if base is None:
                base = self.procinfo.get(pid, {}).get("cwd") or self.default_cwd
                if base is None:
                    base = self.datadir
                    self.mapped.add("relative paths of processes with an unknown working "
                                    "directory, taken relative to the data directory")
                self.cwd[pid] = base
        return os.path.normpath(os.path.join(base, path))

    def table(self, pid: int) -> dict:
        t = self.tables.get(pid)
        if t is None:
            t = self.tables[pid] = {}
        return t

    def fd_obj(self, pid: int, fd: Fd, what: str, count=True) -> Optional[Ofd]:
        """The open file behind a descriptor argument, None if it is not a
        regular file (counted as ignored) or unknown (counted as dropped)."""
        if fd is None:
            raise LineError(f"{what}: expected a descriptor")
        tab = self.table(pid)
        ofd = tab.get(fd.num)
        if fd.kind is None:
            if ofd is None:
                if count:
                    self.lost(f"{what}s on descriptors opened before the capture (no "
                              "-y path)")
            elif ofd.obj is None:
                if count:
                    self.ignored.add(f"{what} on sockets, pipes and devices")
                return None
            return ofd
        if fd.kind == "other" or fd.path.startswith(NONFILE_PREFIXES):
            if ofd is None or ofd.obj is not None:
                ofd = tab[fd.num] = Ofd(None, None)
            if count:
                self.ignored.add(f"{what} on sockets, pipes and devices")
                return None
            return ofd
        if ofd is not None and ofd.obj is not None and ofd.obj.path == fd.path \
                and ofd.obj.dead == fd.deleted:
            return ofd
        if fd.deleted:
            obj = self.gone.get(fd.path)
            if obj is None:
                obj = self.new_obj(fd.path, True, 0, in_ns=False)
                obj.dead = True
                self.gone[fd.path] = obj
        else:
            obj = self.lookup(fd.path)
        # opened before the capture: O_DIRECT as /proc/PID/fdinfo said then; a
        # number no open gave (an io_uring registered file, iocap numbers them
        # from 2^30): as the process's other descriptors of the same file
        odirect = self.procinfo.get(pid, {}).get("odirect", "")
        direct = str(fd.num) in odirect.split(",") or \
            any(o.direct for o in tab.values() if o.obj is obj)
        ofd = Ofd(obj, None, direct=direct)
        tab[fd.num] = ofd
        return ofd

    def unlink_obj(self, seq, t, pid, path: str, is_dir: bool):
        o = self.ns.pop(path, None)
        if o is None:
            o = self.lookup(path)
            self.ns.pop(path, None)
        if is_dir:
            o.is_dir = True
            if o.tf is not None:
                o.tf.is_dir = True
        self.emit(seq, t, pid, o, "unlink")
        o.dead = True
        self.gone[path] = o
        self.touched.add(path)

    # -- sizes as the trace tells them --

    def saw_end(self, obj: Obj, end: int, by_read: bool):
        if end <= obj.cur or obj.tf is None:
            obj.cur = max(obj.cur, end)
            return
        if by_read:
            if obj.bumpable and obj.tf is not None:
                if end > (obj.tf.size0 or 0):
                    obj.tf.size0 = end
                    self.mapped.add("reads past the file's listed size (size raised to cover "
                                    "them: the file grew before strace attached, or no "
                                    "listing)")
            else:
                self.mapped.add("reads past the size the trace accounts for")
        obj.cur = end

    # -- calls --

    def call(self, seq, pid, t, name, args, res: Result):
        h = getattr(self, "c_" + name, None)
        if h is None:
            self.ignored.add(f"{name} calls")
            return
        if res.error is not None or res.value is None:
            why = res.error if res.error else "?"
            if why in ("?", "ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND",
                       "ERESTART_RESTARTBLOCK"):
                self.dropped.add(f"{name} calls interrupted or without a result")
            else:
                self.dropped.add(f"failed {name} calls (-1 {why})")
            return
        try:
            h(seq, pid, t, args, res)
        except (IndexError, TypeError, ValueError) as e:
            raise LineError(f"{name}: unexpected arguments ({type(e).__name__}: {e})")

    def _fd(self, args, i) -> Fd:
        f = parse_fd(args[i])
        if f is None:
            raise LineError(f"expected a descriptor, found '{args[i][:40]}'")
        return f

    def _str(self, args, i) -> str:
        s = parse_str(args[i])
        if s is None:
            raise LineError(f"expected a quoted path, found '{args[i][:40]}'")
        return s

    def _int(self, args, i) -> int:
        v = parse_int(args[i])
        if v is None:
            raise LineError(f"expected a number, found '{args[i][:40]}'")
        return v

    # open, openat, creat: a new open file description
    def _open(self, seq, pid, t, dirfd, path, flags, res):
        if res.value is None or res.value < 0:
            raise LineError("the result of an open is not a descriptor")
        tab = self.table(pid)
        if res.fd is not None and res.fd.kind == "other":
            tab[res.value] = Ofd(None, None)
            return
        ab = res.fd.path if res.fd is not None and res.fd.kind == "path" else \
            self.resolve(pid, dirfd, path)
        if ab.startswith(NONFILE_PREFIXES):
            tab[res.value] = Ofd(None, None)
            self.ignored.add("opens of devices and /proc, /sys files")
            return
        fl = set(flags.split("|"))
        creat = "O_CREAT" in fl
        excl = "O_EXCL" in fl
        obj = self.ns.get(ab)
        created = False
        if obj is None:
            listed = self.listing is not None and ab not in self.touched and \
                (ab in self.listing or ab in self.roots)
            if listed or (not creat and not (self.listing is not None and ab in self.touched)):
                obj = self.lookup(ab)
            elif self.listing is None and creat and not excl and ab not in self.touched:
                obj = self.lookup(ab)       # no listing: cannot tell, take it as existing
                self.mapped.add("files opened with O_CREAT and no listing to tell whether "
                                "they existed, taken as existing")
            else:
                obj = self.new_obj(ab, False, 0)
                created = creat
                self.touched.add(ab)
        elif obj.dead:
            obj = self.new_obj(ab, False, 0)
            created = creat
        if "O_DIRECTORY" in fl:
            obj.is_dir = True
            if obj.tf is not None:
                obj.tf.is_dir = True
        if created:
            self.emit(seq, t, pid, obj, "create")
        if "O_TRUNC" in fl and not created and obj.cur != 0 and not obj.is_dir \
                and ("O_WRONLY" in fl or "O_RDWR" in fl):
            obj.bumpable = False
            obj.cur = 0
            self.emit(seq, t, pid, obj, "truncate", 0)
        tab[res.value] = Ofd(obj, 0, "O_APPEND" in fl, "O_DIRECT" in fl)

    def c_open(self, seq, pid, t, args, res):
        self._open(seq, pid, t, None, self._str(args, 0), args[1], res)

    def c_openat(self, seq, pid, t, args, res):
        self._open(seq, pid, t, self._fd(args, 0), self._str(args, 1), args[2], res)

    def c_openat2(self, seq, pid, t, args, res):
        m = re.search(r"flags=([A-Z0-9_|]+)", args[2])
        self._open(seq, pid, t, self._fd(args, 0), self._str(args, 1),
                   m.group(1) if m else "", res)

    def c_creat(self, seq, pid, t, args, res):
        self._open(seq, pid, t, None, self._str(args, 0), "O_CREAT|O_WRONLY|O_TRUNC", res)

    def c_close(self, seq, pid, t, args, res):
        self.table(pid).pop(self._fd(args, 0).num, None)

    def c_close_range(self, seq, pid, t, args, res):
        lo, hi = self._int(args, 0), parse_int(args[1])
        hi = (1 << 32) if hi is None else hi
        if "CLOSE_RANGE_CLOEXEC" in args[2]:
            return
        tab = self.table(pid)
        for fd in [k for k in tab if lo <= k <= hi]:
            del tab[fd]

    def _dup(self, pid, old: Fd, res: Result):
        src = self.fd_obj(pid, old, "dup", count=False)
        if src is not None and res.value is not None and res.value >= 0:
            self.table(pid)[res.value] = src

    def c_dup(self, seq, pid, t, args, res):
        self._dup(pid, self._fd(args, 0), res)

    c_dup2 = c_dup
    c_dup3 = c_dup

    def c_fcntl(self, seq, pid, t, args, res):
        if args[1] in ("F_DUPFD", "F_DUPFD_CLOEXEC"):
            self._dup(pid, self._fd(args, 0), res)
        elif args[1] == "F_SETFL" and len(args) > 2:
            ofd = self.fd_obj(pid, self._fd(args, 0), "fcntl", count=False)
            if ofd is not None:
                ofd.direct = "O_DIRECT" in args[2].split("|")
        else:
            self.ignored.add("fcntl calls other than F_DUPFD (locks, flags)")

    def c_chdir(self, seq, pid, t, args, res):
        self.cwd[pid] = self.resolve(pid, None, self._str(args, 0))

    def c_fchdir(self, seq, pid, t, args, res):
        fd = self._fd(args, 0)
        if fd.kind == "path":
            self.cwd[pid] = fd.path
        else:
            ofd = self.table(pid).get(fd.num)
            if ofd is not None and ofd.obj is not None:
                self.cwd[pid] = ofd.obj.path

    def _clone(self, pid, child, share_files):
        if child is None or child <= 0:
            return
        parent = self.table(pid)
        mine = self.tables.get(child)
        if share_files:
            if mine:
                parent.update(mine)
            self.tables[child] = parent
        else:
            t = dict(parent)
            if mine:
                t.update(mine)
            self.tables[child] = t
        cwd = self.cwd.get(pid) or self.procinfo.get(pid, {}).get("cwd")
        if child not in self.cwd and cwd:
            self.cwd[child] = cwd

    def c_clone(self, seq, pid, t, args, res):
        self._clone(pid, res.value, any("CLONE_FILES" in a for a in args))

    def c_clone3(self, seq, pid, t, args, res):
        self._clone(pid, res.value, "CLONE_FILES" in args[0])

    def c_fork(self, seq, pid, t, args, res):
        self._clone(pid, res.value, False)

    c_vfork = c_fork

    # names
    def _rename(self, seq, pid, t, old, new, flags=""):
        self.mapped.add("renames (a renamed file keeps its first name in the trace)")
        self.touched.add(old)
        self.touched.add(new)
        src = self.ns.pop(old, None)
        if src is None:
            src = self.lookup(old)
            self.ns.pop(old, None)
        if "RENAME_EXCHANGE" in flags:
            dst = self.ns.get(new)
            if dst is None:
                dst = self.lookup(new)
            self.ns[old] = dst
            dst.path = old
            self.ns[new] = src
            src.path = new
            return
        victim = self.ns.get(new)
        if victim is None and self.listing is not None and new in self.listing:
            victim = self.lookup(new)
        if victim is not None and victim is not src:
            if victim.is_dir:
                self.emit(seq, t, pid, victim, "unlink")
            else:
                self.emit(seq, t, pid, victim, "unlink")
            victim.dead = True
            self.gone[new] = victim
        self.ns[new] = src
        src.path = new
        # a directory renamed: the names below it move with it
        pre = old + "/"
        moved = [p for p in self.ns if p.startswith(pre)]
        for p in moved:
            o = self.ns.pop(p)
            o.path = new + p[len(old):]
            self.ns[o.path] = o
            self.touched.add(p)
            self.touched.add(o.path)

    def c_rename(self, seq, pid, t, args, res):
        self._rename(seq, pid, t, self.resolve(pid, None, self._str(args, 0)),
                     self.resolve(pid, None, self._str(args, 1)))

    def c_renameat(self, seq, pid, t, args, res):
        self._rename(seq, pid, t, self.resolve(pid, self._fd(args, 0), self._str(args, 1)),
                     self.resolve(pid, self._fd(args, 2), self._str(args, 3)))

    def c_renameat2(self, seq, pid, t, args, res):
        self._rename(seq, pid, t, self.resolve(pid, self._fd(args, 0), self._str(args, 1)),
                     self.resolve(pid, self._fd(args, 2), self._str(args, 3)),
                     args[4] if len(args) > 4 else "")

    def c_unlink(self, seq, pid, t, args, res):
        self.unlink_obj(seq, t, pid, self.resolve(pid, None, self._str(args, 0)), False)

    def c_unlinkat(self, seq, pid, t, args, res):
        self.unlink_obj(seq, t, pid, self.resolve(pid, self._fd(args, 0), self._str(args, 1)),
                        "AT_REMOVEDIR" in args[2])

    def c_rmdir(self, seq, pid, t, args, res):
        self.unlink_obj(seq, t, pid, self.resolve(pid, None, self._str(args, 0)), True)

    def _mkdir(self, seq, pid, t, path):
        o = self.ns.get(path)
        if o is not None and not o.dead:
            o.is_dir = True
            return
        self.touched.add(path)
        o = self.new_obj(path, False, 0, is_dir=True)
        self.emit(seq, t, pid, o, "create")

    def c_mkdir(self, seq, pid, t, args, res):
        self._mkdir(seq, pid, t, self.resolve(pid, None, self._str(args, 0)))

    def c_mkdirat(self, seq, pid, t, args, res):
        self._mkdir(seq, pid, t, self.resolve(pid, self._fd(args, 0), self._str(args, 1)))

    # sizes
    def _truncate(self, seq, pid, t, obj, size):
        if obj is None or size < 0:
            return
        if size < obj.cur:
            obj.bumpable = False
        obj.cur = size
        self.emit(seq, t, pid, obj, "truncate", size)

    def c_ftruncate(self, seq, pid, t, args, res):
        ofd = self.fd_obj(pid, self._fd(args, 0), "ftruncate")
        if ofd is not None:
            self._truncate(seq, pid, t, ofd.obj, self._int(args, 1))

    def c_truncate(self, seq, pid, t, args, res):
        ab = self.resolve(pid, None, self._str(args, 0))
        self._truncate(seq, pid, t, self.lookup(ab), self._int(args, 1))

    def c_fallocate(self, seq, pid, t, args, res):
        ofd = self.fd_obj(pid, self._fd(args, 0), "fallocate")
        if ofd is None:
            return
        mode, off, n = args[1], self._int(args, 2), self._int(args, 3)
        obj = ofd.obj
        if "FALLOC_FL_PUNCH_HOLE" in mode:
            if off >= obj.cur or n <= 0:
                self.dropped.add("fallocate punch holes beyond the end of the file")
                return
            self.emit(seq, t, pid, obj, "trim", off, min(n, obj.cur - off))
            return
        if mode.strip() == "0" and off + n > obj.cur:
            self.mapped.add("fallocate calls that extend a file, recorded as a truncate to "
                            "the new size (no allocation in the format)")
            self._truncate(seq, pid, t, obj, off + n)
            return
        self.lost(f"fallocate calls with mode {mode} (no equivalent in the format)")

    # durability
    def _sync(self, seq, pid, t, args, op):
        ofd = self.fd_obj(pid, self._fd(args, 0), op)
        if ofd is None:
            return
        obj = ofd.obj
        if op == "fdatasync" and (obj.is_dir or (obj.tf is not None and obj.tf.is_dir)):
            op = "fsync"
            self.mapped.add("fdatasyncs of directories, recorded as fsync")
        self.emit(seq, t, pid, obj, op)

    def c_fsync(self, seq, pid, t, args, res):
        self._sync(seq, pid, t, args, "fsync")

    def c_fdatasync(self, seq, pid, t, args, res):
        self._sync(seq, pid, t, args, "fdatasync")

    def c_sync_file_range(self, seq, pid, t, args, res):
        ofd = self.fd_obj(pid, self._fd(args, 0), "sync_file_range")
        if ofd is None:
            return
        obj = ofd.obj
        off, n = self._int(args, 1), self._int(args, 2)
        if off >= obj.cur and not (off == 0 and n == 0):
            self.dropped.add("sync_file_ranges beyond the end of the file")
            return
        if n and off + n > obj.cur:
            n = obj.cur - off
        self.emit(seq, t, pid, obj, "sync_file_range", off, n)

    def c_syncfs(self, seq, pid, t, args, res):
        self.lost("syncfs calls (no equivalent in the format)")

    # data
    def _io(self, seq, pid, t, fd: Fd, op, off, n, what):
        ofd = self.fd_obj(pid, fd, what)
        if ofd is None:
            return
        obj = ofd.obj
        if obj.is_dir:
            return
        if n <= 0:
            if op == "read":
                self.dropped.add(f"{what} calls at the end of the file (0 bytes)")
            else:
                self.dropped.add(f"{what} calls of 0 bytes")
            return
        if off is None:                    # read, write, readv, writev: the file position
            if op == "write" and ofd.append:
                ofd.pos = obj.cur
            if ofd.pos is None:
                if obj.tf is None:
                    self.emit(seq, t, pid, obj, op)     # counted as outside
                    return
                self.lost(f"{what} calls at an unknown file position (a descriptor "
                          "opened before the capture)")
                return
            off = ofd.pos
            ofd.pos += n
        if obj.tf is not None:
            if ofd.direct:
                obj.tf.direct += 1
            else:
                obj.tf.buffered += 1
        self.saw_end(obj, off + n, op == "read")
        while n > 0:
            k = min(n, MAX_IO)
            self.emit(seq, t, pid, obj, op, off, k)
            off += k
            n -= k

    def c_pread64(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "read", self._int(args, 3), res.value, "pread64")

    def c_pwrite64(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "write", self._int(args, 3), res.value,
                 "pwrite64")

    def c_read(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "read", None, res.value, "read")

    def c_write(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "write", None, res.value, "write")

    c_readv = c_read
    c_writev = c_write

    def c_preadv(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "read", self._int(args, 3), res.value, "preadv")

    def c_pwritev(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "write", self._int(args, 3), res.value,
                 "pwritev")

    def c_preadv2(self, seq, pid, t, args, res):
        off = self._int(args, 3)
        self._io(seq, pid, t, self._fd(args, 0), "read", None if off == -1 else off, res.value,
                 "preadv2")

    def c_pwritev2(self, seq, pid, t, args, res):
        off = self._int(args, 3)
        self._io(seq, pid, t, self._fd(args, 0), "write", None if off == -1 else off,
                 res.value, "pwritev2")

    def c_lseek(self, seq, pid, t, args, res):
        ofd = self.fd_obj(pid, self._fd(args, 0), "lseek")
        if ofd is None:
            return
        ofd.pos = res.value
        self.ignored.add("lseek calls (file positions tracked)")
        if args[2] == "SEEK_END" and parse_int(args[1]) == 0:
            self.saw_end(ofd.obj, res.value, True)    # the file's size, as seen then

    _IOCB = re.compile(r"\{[^{}]*\}")

    def c_io_submit(self, seq, pid, t, args, res):
        """Linux native AIO: strace shows the requests (with -s large enough
        to print the array) at submission, never their completion."""
        self._warn("io_submit", "io_submit (Linux native AIO): requests are recorded when "
                   "submitted, with their requested length; strace cannot see their "
                   "completion, and requests it does not print (strace -s too small) are "
                   "lost. Turn native AIO off in the database for a faithful capture "
                   "(InnoDB: innodb_use_native_aio=0).")
        done = 0
        self.lat = None         # io_submit's own duration, not its requests' completion
        for m in self._IOCB.finditer(args[2] if len(args) > 2 else ""):
            if done >= res.value:
                break
            body = m.group(0)
            op = re.search(r"aio_lio_opcode=IOCB_CMD_([A-Z]+)", body)
            fdm = re.search(r"aio_fildes=(\d+(?:<.*?>)?)(?:,|\})", body)
            if not op or not fdm:
                continue
            done += 1
            fd = parse_fd(fdm.group(1))
            kind = op.group(1)
            nb = re.search(r"aio_nbytes=(\d+)", body)
            of = re.search(r"aio_offset=(\d+)", body)
            if kind in ("PREAD", "PWRITE") and nb and of:
                before = self.sub
                self._io(seq, pid, t, fd, "read" if kind == "PREAD" else "write",
                         int(of.group(1)), int(nb.group(1)), "io_submit")
                if self.sub > before:
                    self.unseen.add("io_submit requests recorded at submission with their "
                                    "requested length: their completion (time, short "
                                    "transfer, error) is invisible to strace")
            elif kind in ("FSYNC", "FDSYNC"):
                self._sync(seq, pid, t, [fdm.group(1)], "fsync" if kind == "FSYNC"
                           else "fdatasync")
            else:
                self.lost(f"io_submit requests IOCB_CMD_{kind}")
        if res.value > done:
            self.lost("io_submit requests strace did not print (native AIO: "
                      "innodb_use_native_aio=0 for a full capture)", res.value - done)

    def c_io_uring_enter(self, seq, pid, t, args, res):
        self._warn("io_uring", "io_uring_enter: the I/O submitted through io_uring is "
                   "invisible to strace and missing from the trace (configure the database "
                   "without io_uring)")
        self.lost("io_uring_enter calls: the reads, writes and syncs submitted through "
                  "io_uring are invisible to strace and none is in the trace (InnoDB: "
                  "innodb_use_native_aio=0; PostgreSQL 18: io_method=worker)")

    def c_copy_file_range(self, seq, pid, t, args, res):
        self.lost("copy_file_range calls (no equivalent in the format)")

    def c_sendfile(self, seq, pid, t, args, res):
        self.lost("sendfile calls (no equivalent in the format)")

    def lost(self, reason, n=1):
        """I/O that happened to the data directory and that the trace cannot
        hold: a note like any drop, and an "incomplete" line in the header."""
        self.dropped.add(reason, n)
        self.unseen.add(reason, n)

    def _warn(self, key, msg):
        if key not in self.warned:
            self.warned.add(key)
            print(f"{PROG}: warning: {msg}", file=sys.stderr)

    # -- output --

    def finish(self):
        if self.pending:
            self.dropped.add("calls still unfinished at the end of the capture",
                             len(self.pending))
            self.pending.clear()
        self._release(final=True)

    def build_files(self, rules):
        """Final paths, directory-ness and roles of the files with records."""
        used = [tf for tf in self.files]
        paths = {tf.path: tf for tf in used}
        # a path below another: the upper one must be a directory
        for tf in used:
            p = tf.path
            while "/" in p:
                p = p.rsplit("/", 1)[0]
                up = paths.get(p)
                if up is not None and not up.is_dir:
                    if up.ops <= {"fsync", "fdatasync", "create", "unlink"}:
                        up.is_dir = True
                    else:
                        n = 1
                        while f"{up.path}~{n}" in paths or f"{up.path}~{n}" in self.tfiles:
                            n += 1
                        del paths[up.path]
                        up.path = f"{up.path}~{n}"
                        paths[up.path] = up
        for tf in used:
            if tf.path == ".":
                tf.is_dir = True
            if tf.is_dir and tf.ops - {"fsync", "fdatasync", "create", "unlink"}:
                tf.is_dir = False   # cannot happen with a real capture
        decls = []
        for tf in used:
            if tf.is_dir:
                role, size0, mx = "directory", (0 if tf.existed else None), 0
            else:
                role = role_of(tf.path, rules)
                size0 = tf.size0 if tf.existed else None
                mx = max(tf.extent, size0 or 0)
            direct = bool(tf.direct) and not tf.is_dir
            if direct and tf.buffered:
                self.mapped.add("files read or written both with and without O_DIRECT, "
                                "declared direct")
            decls.append(dt.FileDecl(tf.id, role, size0, mx, tf.path, direct=direct))
        return decls

    def write(self, out_path, pagesize, source, rules, stream_names):
        decls = self.build_files(rules)
        streams = []
        used = set()
        for pid, sid in sorted(self.streams.items(), key=lambda kv: kv[1]):
            nm = self.procinfo.get(pid, {}).get("name") or stream_names.get(pid) or f"pid-{pid}"
            streams.append(dt.StreamDecl(sid, dt.unique(dt.safe_name(nm, 200), used)))
        # version 2 only when it says more than version 1 could
        v2 = bool(self.nlat) or any(d.direct for d in decls)
        h = dt.Header(version=2 if v2 else 1, pagesize=pagesize,
                      timeunit="us" if self.timed else "none",
                      source=source, incomplete=self.incomplete_lines(), files=decls,
                      streams=streams)
        isdir = {d.id: d.role == "directory" for d in decls}
        out = dt.Output(out_path)
        ops = Counts()
        try:
            w = dt.TraceWriter(out, h)
            self.spool.seek(0)
            t0 = self.t0 or 0
            for ln in self.spool:
                ts, sid, fid, op, a, b, lat = ln.split()
                fid = int(fid)
                if isdir[fid]:
                    if op == "fdatasync":
                        op = "fsync"
                    elif op not in ("fsync", "create", "unlink"):
                        continue
                t = None if ts == "-" else int(ts) - t0
                lat = None if lat == "-" else int(lat)
                if op == "truncate":
                    w.record(t, int(sid), fid, op, size=int(a), lat=lat)
                else:
                    w.record(t, int(sid), fid, op, int(a), int(b), lat=lat)
                ops.add(op)
            w.end()
            out.commit()
        except dt.TraceError as e:
            raise Error(f"internal error, the trace written would not parse: {e}")
        finally:
            out.abort()
            self.spool.close()
        dur = (self.tmax - self.t0) / 1e6 if self.timed and self.t0 is not None else 0.0
        return {"records": w.p.nrec, "files": len(decls), "streams": len(streams),
                "duration": dur, "ops": dict(ops), "decls": decls,
                "incomplete": h.incomplete}

    def incomplete_lines(self) -> List[str]:
        lines = [f"{v} {k}" if v else k for k, v in sorted(self.unseen.items())]
        lines = ["".join("?" if c < " " or c == "\x7f" else c for c in ln)[:dt.MAX_LINE - 11]
                 for ln in lines]
        if len(lines) > dt.MAX_INCOMPLETE:
            rest = len(lines) - dt.MAX_INCOMPLETE + 1
            lines = lines[:dt.MAX_INCOMPLETE - 1] + [f"{rest} more classes of I/O not seen "
                                                     "(dbcapture.py's notes list them)"]
        return lines


def role_of(path: str, rules) -> str:
    for pat, role in rules:
        if fnmatchcase(path, pat):
            return role
    return "other"


# ---------------------------------------------------------------------------
# Listing and process information
# ---------------------------------------------------------------------------

def take_listing(datadir: str) -> List[str]:
    """The data directory now, as find DIR -printf '%y %s %P\\n' prints it."""
    lines = []
    for top, dirs, files in os.walk(datadir):
        for name in dirs + files:
            p = os.path.join(top, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            y = "d" if _st.S_ISDIR(st.st_mode) else "f" if _st.S_ISREG(st.st_mode) else \
                "l" if _st.S_ISLNK(st.st_mode) else "o"
            lines.append(f"{y} {st.st_size if y == 'f' else 0} {os.path.relpath(p, datadir)}")
    return lines


def data_lines(path: str):
    """(line number, fields split on the first two spaces) of each line of the
    side file @path (a listing, process names) that is not blank or a comment."""
    try:
        f = open(path, encoding="latin-1")
    except OSError as e:
        raise Error(f"cannot open {path}: {e.strerror}")
    with f:
        for n, ln in enumerate(f, 1):
            ln = ln.rstrip("\n")
            if ln.strip() and not ln.startswith("#"):
                yield n, ln.split(" ", 2)


def read_listing(path: str, datadir: str) -> Dict[str, tuple]:
    roots = [os.path.normpath(os.path.abspath(datadir))]
    out: Dict[str, tuple] = {}
    for n, parts in data_lines(path):
        if len(parts) < 2 or len(parts[0]) != 1 or not parts[1].isdigit():
            raise Error(f"{path} line {n}: expected 'TYPE SIZE PATH' (find DIR -printf "
                        "'%y %s %P\\n')")
        rel = parts[2] if len(parts) > 2 else ""
        if rel.startswith("/") or ".." in rel.split("/"):
            raise Error(f"{path} line {n}: path '{rel[:60]}' is not relative to the data "
                        "directory")
        if parts[0] not in "fd":
            continue
        for r in roots:
            out[os.path.normpath(os.path.join(r, rel)) if rel else r] = \
                (parts[0], int(parts[1]))
    return out


def read_procinfo(path: str) -> Dict[int, dict]:
    out: Dict[int, dict] = {}
    for n, parts in data_lines(path):
        if len(parts) != 3 or not parts[0].isdigit() or \
                parts[1] not in ("name", "cwd", "odirect"):
            raise Error(f"{path} line {n}: expected 'TID name NAME', 'TID cwd PATH' or "
                        "'TID odirect FD,FD...'")
        out.setdefault(int(parts[0]), {})[parts[1]] = parts[2]
    return out


def write_procinfo(path: str, info: Dict[int, dict]):
    with open(path, "w", encoding="latin-1") as f:
        for tid in sorted(info):
            for k in ("name", "cwd", "odirect"):
                if info[tid].get(k):
                    f.write(f"{tid} {k} {info[tid][k]}\n")


PG_AUX = ("checkpointer", "background writer", "walwriter", "autovacuum launcher",
          "autovacuum worker", "logical replication launcher", "startup", "archiver",
          "walreceiver", "walsender", "logical replication worker", "parallel worker",
          "stats collector", "bgworker")


def task_label(pid: int, tid: int) -> Optional[str]:
    """A name for a thread or process: its ps title (PostgreSQL sets one per
    process) or its comm (thread name)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/comm", encoding="latin-1") as f:
            comm = f.read().strip()
    except OSError:
        return None
    if tid == pid:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("latin-1").strip()
        except OSError:
            cmd = ""
        if ": " in cmd and not cmd.startswith("/"):
            title = cmd.split(": ", 1)[1].strip()
            # "postgres: [CLUSTER_NAME: ]ACTIVITY": Debian sets cluster_name
            # ("15/main"), so the role may follow a second ": "
            rest = title.split(": ", 1)[1] if ": " in title else ""
            for aux in PG_AUX:
                if title.startswith(aux) or rest.startswith(aux):
                    return aux.replace(" ", "-")
            return "backend" if comm == "postgres" else title.split(" ")[0]
    return comm


class Watcher:
    """Names and working directories of the tasks a strace process traces,
    sampled from /proc while the capture runs."""

    def __init__(self):
        self.info: Dict[int, dict] = {}
        # pid -> its descriptors open with O_DIRECT ("3,7") when first seen:
        # attach takes them before the capture starts (a slow first sample
        # would also delay --ready, letting the capture start before it)
        self.odirect: Dict[int, str] = {}

    def traced_by(self, tracer: int) -> List[tuple]:
        tasks = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                tids = os.listdir(f"/proc/{d}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{d}/task/{tid}/status", encoding="latin-1") as f:
                        st = f.read()
                except OSError:
                    continue
                m = re.search(r"^TracerPid:\s*(\d+)", st, re.M)
                if m and int(m.group(1)) == tracer:
                    tasks.append((int(d), int(tid)))
        return tasks

    def sample(self, tracer: int = 0, roots: Optional[List[int]] = None) -> int:
        """The tasks traced by strace process @tracer, or @roots' threads and
        their descendants' (the BPF capture)."""
        tasks = self.traced_by(tracer) if roots is None else tasks_of(roots)
        for pid, tid in tasks:
            lab = task_label(pid, tid)
            ent = self.info.setdefault(tid, {})
            if lab:
                ent["name"] = f"{lab}-{tid}"
            if "cwd" not in ent:
                try:
                    ent["cwd"] = os.readlink(f"/proc/{tid}/cwd")
                except OSError:
                    pass
            if "odirect" not in ent:
                if pid not in self.odirect:
                    self.odirect[pid] = direct_fds(pid)
                ent["odirect"] = self.odirect[pid]
        return len(tasks)


def direct_fds(pid: int) -> str:
    """The descriptors of process @pid opened with O_DIRECT, "3,7" (from the
    octal flags: line of /proc/PID/fdinfo/FD)."""
    out = []
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ""
    for fd in fds:
        try:
            # regular files only: an io_uring's fdinfo takes the ring's lock
            # and walks its queues, which a capture must not do to a database
            if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/"):
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}", encoding="latin-1") as f:
                m = re.search(r"^flags:\s*([0-7]+)", f.read(), re.M)
        except OSError:
            continue
        if m and int(m.group(1), 8) & os.O_DIRECT:
            out.append(int(fd))
    return ",".join(map(str, sorted(out)))


def tasks_of(pids: List[int]) -> List[tuple]:
    """(pid, tid) of every thread of @pids and of their descendants.

    Sampled every 200 ms for the whole capture, on the database's host: it
    follows each thread's /proc/PID/task/TID/children down from @pids, and
    so reads only the files of the traced tasks, not those of every process
    on the host (descendants(), the fallback for a kernel without
    CONFIG_PROC_CHILDREN)."""
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        return _tasks_of_walk(pids)
    out, seen, todo = [], set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for t in tids:
            out.append((pid, int(t)))
            try:
                with open(f"/proc/{pid}/task/{t}/children", encoding="latin-1") as f:
                    todo += [int(c) for c in f.read().split()]
            except OSError:
                pass
    return out


def _tasks_of_walk(pids: List[int]) -> List[tuple]:
    """tasks_of() from the parent of every process in /proc."""
    out = []
    for pid in list(pids) + descendants(pids):
        try:
            out += [(pid, int(t)) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            pass
    return out


# ---------------------------------------------------------------------------
# The BPF capture (build/iocap, tools/iocap)
# ---------------------------------------------------------------------------

IOCAP = os.environ.get("IOCAP") or os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "build", "iocap")
URING_OPS = {6: "POLL_ADD", 7: "POLL_REMOVE", 9: "SENDMSG", 10: "RECVMSG", 11: "TIMEOUT",
             13: "ACCEPT", 16: "CONNECT", 17: "FALLOCATE", 18: "OPENAT", 19: "CLOSE",
             21: "STATX", 24: "FADVISE", 25: "MADVISE", 26: "SEND", 27: "RECV",
             28: "OPENAT2", 30: "SPLICE", 35: "RENAMEAT", 36: "UNLINKAT", 37: "MKDIRAT",
             40: "MSG_RING", 46: "URING_CMD", 48: "SENDMSG_ZC", 49: "READ_MULTISHOT"}
# What iocap could not see (its --stats): each a class of lost I/O
BPF_LOST = {
    "ringbuf_full": "events lost by the BPF capture: its ring buffer was full",
    "inflight_no_slot": "system calls not captured: the BPF table of calls in flight was full",
    "uring_no_slot": "io_uring requests not captured: the BPF table of requests in flight "
                     "was full",
    "aio_no_slot": "libaio requests not captured: the table of requests in flight was full",
    "aio_cut": "io_submit calls of more than 64 iocbs: those past the 64th not captured",
    "aio_unmapped": "libaio requests of an opcode the trace has no operation for",
    "unresolved": "calls on descriptors whose file the BPF capture could not name",
    "uring_nofile": "io_uring requests without a file",
}
# The capture's edges: notes only, as strace's unfinished calls are
BPF_EDGE = {
    "uring_in_flight_at_end": "io_uring requests still in flight when the capture stopped",
    "aio_in_flight_at_end": "libaio requests still in flight when the capture stopped",
    "aio_done_without_submit": "libaio completions of requests submitted before the capture",
}


def bpf_unusable() -> Optional[str]:
    """Why the BPF capture cannot run here, or None."""
    if not os.access(IOCAP, os.X_OK):
        return f"{IOCAP} is not built (make builds it where the kernel has BTF)"
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return "this kernel has no BTF (/sys/kernel/btf/vmlinux)"
    if os.geteuid() != 0:
        return "not root (the BPF capture needs CAP_BPF and CAP_PERFMON)"
    return None


def pick_tracer(a) -> str:
    if a.tracer == "strace":
        return "strace"
    why = bpf_unusable()
    if why is None:
        return "bpf"
    if a.tracer == "bpf":
        raise Error(f"--tracer bpf: {why}")
    if not a.quiet:
        print(f"{PROG}: note: capturing with strace, not BPF: {why}", file=sys.stderr)
    return "strace"


def read_stats(path: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    try:
        with open(path) as f:
            for ln in f:
                tok = ln.split()
                if len(tok) == 3 and tok[0] == "uring_unmapped":
                    out[f"uring_op_{tok[1]}"] = int(tok[2])
                elif len(tok) == 3 and tok[0] == "syscall_unseen":
                    out[f"syscall_unseen_{tok[1]}"] = int(tok[2])
                elif len(tok) == 2:
                    out[tok[0]] = float(tok[1]) if tok[0].startswith("cpu") else int(tok[1])
    except (OSError, ValueError) as e:
        raise Error(f"cannot read the BPF capture's statistics {path}: {e}")
    return out


def bpf_losses(conv, st: Dict[str, int]):
    for k, why in BPF_LOST.items():
        if st.get(k):
            conv.lost(why, st[k])
    for k, v in st.items():
        if k.startswith("uring_op_") and v:
            op = int(k[9:])
            conv.lost(f"io_uring requests IORING_OP_{URING_OPS.get(op, op)} (no operation of the "
                      "trace for them)", v)
    for k, why in BPF_EDGE.items():
        if st.get(k):
            conv.dropped.add(why, st[k])
    for k, v in st.items():
        if k.startswith("syscall_unseen_") and v:
            # how many calls were missed is unknown: the line has no count
            conv.unseen.add(f"{k[15:]} calls, if any: this kernel has no tracepoint "
                            f"syscalls:sys_enter_{k[15:]}, so the BPF capture could not see them",
                            0)


def last_words(proc) -> str:
    """The last line a failed iocap wrote (its one-line error)."""
    return (proc.stderr.read().decode("latin-1").strip().splitlines() or ["?"])[-1]


def iocap_args(pids: List[int], out: str, stats: str, ready: str, children: bool,
               cgroup: Optional[str] = None) -> List[str]:
    argv = [IOCAP]
    if cgroup:
        argv += ["--cgroup", cgroup]
    for pid in pids:
        argv += ["-p", str(pid)]
    if not children:
        argv.append("--no-children")
    return argv + ["-o", out, "--stats", stats, "--ready", ready]


# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

def db_of(name: str) -> str:
    db = DB_ALIASES.get(name, name)
    if db not in RULES:
        raise Error(f"--db: unknown database '{name}' (postgresql, mariadb, sqlite, generic)")
    return db


def rules_of(db: str, extra: List[str]) -> list:
    rules = []
    for r in extra or []:
        if "=" not in r:
            raise Error(f"--role '{r}': expected PATTERN=ROLE")
        pat, role = r.rsplit("=", 1)
        if role not in dt.ROLES or role == "directory":
            raise Error(f"--role '{r}': unknown role '{role}' (data, log, journal, temp, other)")
        if not pat:
            raise Error(f"--role '{r}': empty pattern")
        rules.append((pat, role))
    return rules + RULES[db]


def pagesize_of(a, db) -> int:
    p = a.pagesize or PAGESIZE[db]
    if p < dt.MIN_PAGE or p > dt.MAX_PAGE or p & (p - 1):
        raise Error(f"--pagesize {p}: must be a power of two from {dt.MIN_PAGE} to {dt.MAX_PAGE}")
    return p


def check_output(path: str):
    if not path:
        raise Error("-o OUT.trace[.gz] is required")
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise Error(f"cannot write {path}: no directory {d}")


def compose_source(a, db, capture: str) -> str:
    what = a.source if a.source else f"{DB_NAMES[db]} database"
    if any((c < " " and c != "\t") or c == "\x7f" for c in what):
        raise Error("--source: no control characters (the source is one line)")
    if DB_NAMES[db].lower() not in what.lower() and db not in what.lower():
        what = f"{DB_NAMES[db]}: {what}"
    conv = f"dbcapture.py convert --db {db}"
    text = f"{what}; capture: {capture}; {conv}"
    text = "".join("?" if c < " " or c == "\x7f" else c for c in text)
    return text[:dt.MAX_LINE - 8]


def convert_file(a, db, strace_out, listing, procinfo, capture, cwd, name=None,
                 root_name=None, tracer_stats=None) -> dict:
    conv = Converter(db, a.datadir, listing=listing, procinfo=procinfo, cwd=cwd,
                     outside=a.outside, outside_prefix=a.outside_prefix,
                     name=name or strace_out)
    try:
        f = open(strace_out, "rb")
    except OSError as e:
        raise Error(f"cannot open {strace_out}: {e.strerror}")
    with f:
        first = f.read(2)
        f.seek(0)
        if first == b"\x1f\x8b":
            import gzip
            f = gzip.GzipFile(fileobj=f)
        try:
            for n, raw in enumerate(f, 1):
                conv.feed(n, raw.decode("latin-1"))
        except (OSError, EOFError) as e:
            raise Error(f"{name or strace_out}: cannot read: {e}")
    conv.finish()
    if tracer_stats:
        bpf_losses(conv, tracer_stats)
    if conv.nrec == 0:
        raise Error(f"{name or strace_out}: no file I/O of the data directory {conv.datadir} "
                    "in the capture (wrong --datadir?)")
    names = {}
    if root_name and conv.first_pid is not None:
        names[conv.first_pid] = f"{root_name}-{conv.first_pid}"
    res = conv.write(a.output, pagesize_of(a, db), compose_source(a, db, capture),
                     rules_of(db, a.role), names)
    notes(a, conv, res)
    return res


def capture_status(a, res: dict) -> int:
    """0, or 3 for a trace that lacks I/O its capture could not see (its
    "incomplete" header lines), unless --accept-incomplete: such a trace is
    written all the same, and says so to whoever replays it."""
    lines = res.get("incomplete") or []
    for text in lines:
        print(f"{PROG}: {a.output}: incomplete capture"
              f"{' (accepted)' if a.accept_incomplete else ''}: {text}", file=sys.stderr)
    if not lines or a.accept_incomplete:
        return 0
    print(f"{PROG}: {a.output}: written, but incomplete: {len(lines)} class(es) of I/O not "
          "seen, listed above and in its header (dbtrace.py check shows them); pass "
          "--accept-incomplete to accept such a trace", file=sys.stderr)
    return 3


def notes(a, conv: Converter, res: dict):
    if a.quiet:
        return
    say = lambda m: print(f"{PROG}: note: {m}", file=sys.stderr)  # noqa: E731
    for k, v in sorted(conv.dropped.items()):
        say(f"dropped {v} {k}")
    for k, v in sorted(conv.mapped.items()):
        say(f"{v} {k}")
    ops = " ".join(f"{k}={v}" for k, v in sorted(res["ops"].items()))
    roles = Counts()
    for d in res["decls"]:
        roles.add(d.role)
    say(f"{a.output}: {res['records']} records, {res['files']} files "
        f"({', '.join(f'{v} {k}' for k, v in sorted(roles.items()))}), {res['streams']} "
        f"streams, {res['duration']:.3f} s; {ops}")


def strace_binary(a) -> str:
    s = shutil.which(a.strace)
    if not s:
        raise Error(f"strace not found ('{a.strace}'): install it (apt-get install strace)")
    return s


def strace_args(out_name: str, seccomp: bool) -> List[str]:
    args = ["strace", "-f", "-ttt", "-yy", "-qq", "-s", "0", "-T"]
    if seccomp:
        args.append("--seccomp-bpf")
    return args + ["-e", f"trace={TRACE_SET}", "-o", out_name]


def keep_files(a, work: str):
    if not a.keep:
        return
    os.makedirs(a.keep, exist_ok=True)
    for n in ("strace.out", "listing", "procinfo"):
        p = os.path.join(work, n)
        if os.path.exists(p):
            shutil.copy(p, os.path.join(a.keep, n))


def prepare(a):
    db = db_of(a.db)
    check_output(a.output)
    pagesize_of(a, db)
    rules_of(db, a.role)
    if not a.datadir:
        raise Error("--datadir DIR is required")
    return db


def run_bpf(a, db, work: str, raw: str) -> dict:
    """run with the BPF capture: the command starts held at a pipe, iocap
    attaches to it, then it goes; the capture ends with it."""
    stats, ready = os.path.join(work, "iocap.stats"), os.path.join(work, "iocap.ready")
    if not shutil.which(a.command[0]):
        raise Error(f"run: '{a.command[0]}' not found")
    r, wfd = os.pipe()
    # a shell that waits for a word on the pipe, then becomes COMMAND (same
    # pid, stdin untouched)
    hold = ["sh", "-c", f'read go <&{r}; exec {r}<&-; exec "$@"', "sh", *a.command]
    try:
        cmd = subprocess.Popen(hold, pass_fds=(r,))
    except OSError as e:
        raise Error(f"run: cannot start '{a.command[0]}': {e.strerror}")
    os.close(r)
    argv = iocap_args([cmd.pid], raw, stats, ready, True)
    cap = subprocess.Popen(argv, start_new_session=True, stderr=subprocess.PIPE)
    w = Watcher()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the command
    try:
        while cap.poll() is None and not os.path.exists(ready):
            time.sleep(0.02)
        if cap.poll() is not None:
            cmd.kill()
            cmd.wait()
            why = last_words(cap)
            raise Error(f"run: the BPF capture failed: {why}")
        os.write(wfd, b"go\n")
        os.close(wfd)
        wfd = -1
        while True:
            try:
                rc = cmd.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                w.sample(roots=[cmd.pid])
        cap.wait(timeout=600)       # it ends once the command has
    finally:
        signal.signal(signal.SIGINT, old)
        if wfd >= 0:
            os.close(wfd)
        if cap.poll() is None:
            cap.send_signal(signal.SIGINT)
            cap.wait(timeout=60)
    write_procinfo(os.path.join(work, "procinfo"), w.info)
    keep_files(a, work)
    if cap.returncode != 0:
        why = last_words(cap)
        raise Error(f"run: the BPF capture failed: {why}")
    if rc != 0:
        raise Error(f"run: '{' '.join(a.command)[:80]}' exited with status {rc}")
    shown = ["iocap", "-p", "PID", "-o", "strace.out", "(the command held until attached)"]
    return convert_file(a, db, raw, read_listing(os.path.join(work, "listing"), a.datadir),
                        w.info, " ".join(shown), os.getcwd(), name="BPF capture",
                        root_name=os.path.basename(a.command[0]),
                        tracer_stats=read_stats(stats))


def cmd_run(a) -> int:
    db = prepare(a)
    if not a.command:
        raise Error("run: no COMMAND given after '--' (see dbcapture.py run --help)")
    if not os.path.isdir(a.datadir):
        raise Error(f"--datadir {a.datadir}: not a directory")
    a.datadir = os.path.realpath(a.datadir)
    if pick_tracer(a) == "bpf":
        work = tempfile.mkdtemp(prefix="dbcapture.")
        try:
            with open(os.path.join(work, "listing"), "w", encoding="latin-1") as f:
                f.write("".join(ln + "\n" for ln in take_listing(a.datadir)))
            res = run_bpf(a, db, work, os.path.join(work, "strace.out"))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return capture_status(a, res)
    st = strace_binary(a)
    work = tempfile.mkdtemp(prefix="dbcapture.")
    try:
        raw = os.path.join(work, "strace.out")
        lst = take_listing(a.datadir)
        with open(os.path.join(work, "listing"), "w", encoding="latin-1") as f:
            f.write("".join(ln + "\n" for ln in lst))
        argv = strace_args(raw, not a.no_seccomp)
        shown = argv[:-1] + ["strace.out", "--"] + a.command
        argv = [st] + argv[1:] + ["--"] + a.command
        w = Watcher()
        try:
            p = subprocess.Popen(argv)
        except OSError as e:
            raise Error(f"cannot start strace: {e.strerror}")
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the command
        try:
            while True:
                try:
                    rc = p.wait(timeout=0.05)
                    break
                except subprocess.TimeoutExpired:
                    w.sample(p.pid)
        finally:
            signal.signal(signal.SIGINT, old)
        write_procinfo(os.path.join(work, "procinfo"), w.info)
        keep_files(a, work)
        if rc != 0:
            raise Error(f"run: '{' '.join(a.command)[:80]}' under strace exited with status {rc}")
        capture = " ".join(shlex.quote(x) for x in shown)
        res = convert_file(a, db, raw, read_listing(os.path.join(work, "listing"), a.datadir),
                           w.info, capture, os.getcwd(), name="strace output",
                           root_name=os.path.basename(a.command[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return capture_status(a, res)


def descendants(pids: List[int]) -> List[int]:
    kids: Dict[int, List[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", encoding="latin-1") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], list(pids)
    while todo:
        p = todo.pop()
        for c in sorted(kids.get(p, [])):
            if c not in out and c not in pids:
                out.append(c)
                todo.append(c)
    return out


def cgroup_procs(cgroup: str) -> List[int]:
    """The processes of cgroup v2 directory @cgroup (itself, not below)."""
    try:
        with open(os.path.join(cgroup, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def cgroup_tracer(a) -> str:
    """--cgroup: only the BPF capture filters by cgroup (strace follows pids)."""
    if not os.path.isdir(a.cgroup):
        raise Error(f"--cgroup {a.cgroup}: not a directory")
    if not os.path.exists(os.path.join(a.cgroup, "cgroup.controllers")):
        raise Error(f"--cgroup {a.cgroup}: not a cgroup v2 directory")
    if a.tracer == "strace":
        raise Error("--cgroup: needs --tracer bpf (strace follows processes, not cgroups)")
    why = bpf_unusable()
    if why is not None:
        raise Error(f"--cgroup: needs the BPF capture, which cannot run: {why}")
    return "bpf"


def cmd_attach(a) -> int:
    db = prepare(a)
    if bool(a.pid) == bool(a.cgroup):
        raise Error("attach: give the processes: --pid PID (repeatable) or --cgroup CGROUP")
    for pid in a.pid or []:
        if not os.path.isdir(f"/proc/{pid}"):
            raise Error(f"--pid {pid}: no such process")
    if not os.path.isdir(a.datadir):
        raise Error(f"--datadir {a.datadir}: not a directory")
    a.datadir = os.path.realpath(a.datadir)
    if a.duration is not None and a.duration <= 0:
        raise Error("--duration: must be a positive number of seconds")
    if a.cgroup and a.no_children:
        raise Error("--no-children: a cgroup's processes are captured, children or not")
    if a.cgroup:
        a.cgroup = os.path.realpath(a.cgroup)
    tracer = cgroup_tracer(a) if a.cgroup else pick_tracer(a)
    st = strace_binary(a) if tracer == "strace" else None
    # a cgroup's processes are whatever is in it at each moment
    roots = cgroup_procs(a.cgroup) if a.cgroup else list(dict.fromkeys(a.pid))
    pids = list(roots)
    if not a.no_children and not a.cgroup:
        pids += descendants(pids)
    work = tempfile.mkdtemp(prefix="dbcapture.")
    stop = []

    def on_signal(signum, frame):
        stop.append(signum)

    old_int = signal.signal(signal.SIGINT, on_signal)
    old_term = signal.signal(signal.SIGTERM, on_signal)
    try:
        raw = os.path.join(work, "strace.out")
        w = Watcher()
        for pid in pids:            # names, directories, O_DIRECT before the capture starts
            w.odirect[pid] = direct_fds(pid)
            try:
                for tid in os.listdir(f"/proc/{pid}/task"):
                    lab = task_label(pid, int(tid))
                    if lab:
                        w.info.setdefault(int(tid), {})["name"] = f"{lab}-{tid}"
                    try:
                        w.info[int(tid)]["cwd"] = os.readlink(f"/proc/{tid}/cwd")
                    except (OSError, KeyError):
                        pass
            except OSError:
                pass
        lst = take_listing(a.datadir)
        with open(os.path.join(work, "listing"), "w", encoding="latin-1") as f:
            f.write("".join(ln + "\n" for ln in lst))
        if tracer == "bpf":
            stats, ready = os.path.join(work, "iocap.stats"), os.path.join(work, "iocap.ready")
            argv = iocap_args([] if a.cgroup else roots, raw, stats, ready, not a.no_children,
                              a.cgroup)
            shown = ["iocap"] + [x if x != raw else "strace.out" for x in argv[1:-4]]
        else:
            argv = strace_args(raw, False)
            for pid in pids:
                argv += ["-p", str(pid)]
            shown = [x if x != raw else "strace.out" for x in argv]
            argv[0] = st
        try:
            p = subprocess.Popen(argv, start_new_session=True,
                                 stderr=subprocess.PIPE if tracer == "bpf" else None)
        except OSError as e:
            raise Error(f"cannot start {argv[0]}: {e.strerror}")
        t_start = time.monotonic()
        if tracer == "bpf":
            while p.poll() is None and not os.path.exists(ready) and not stop:
                time.sleep(0.02)
            if p.poll() is not None:
                why = last_words(p)
                raise Error(f"attach: the BPF capture failed: {why}")
        else:
            # attached when every task of the processes has strace as its tracer
            want = set()
            for pid in pids:
                try:
                    want.update(int(t) for t in os.listdir(f"/proc/{pid}/task"))
                except OSError:
                    pass
            while p.poll() is None and time.monotonic() - t_start < 60 and not stop:
                have = {tid for _, tid in w.traced_by(p.pid)}
                if want <= have or not want:
                    break
                time.sleep(0.05)
            if p.poll() is not None:
                raise Error(f"attach: strace exited with status {p.returncode} before "
                            "attaching (permissions? ptrace_scope?)")
        if a.cgroup:
            sample = lambda: w.sample(roots=cgroup_procs(a.cgroup))  # noqa: E731
        elif tracer == "bpf":
            sample = lambda: w.sample(roots=roots)  # noqa: E731
        else:
            sample = lambda: w.sample(p.pid)  # noqa: E731
        n = sample()
        if not a.quiet:
            what = f"cgroup {a.cgroup}: " if a.cgroup else ""
            print(f"{PROG}: attached to {what}{len(pids)} process(es), {n} thread(s); capturing "
                  + (f"for {a.duration:g} s" if a.duration else "until SIGINT/SIGTERM"),
                  file=sys.stderr)
        if a.ready:
            with open(a.ready, "w") as f:
                f.write(f"{p.pid}\n")
        t_attached = time.monotonic()
        while not stop and p.poll() is None:
            if a.duration and time.monotonic() - t_attached >= a.duration:
                break
            time.sleep(0.2)
            sample()
        if p.poll() is None:
            p.send_signal(signal.SIGINT)       # the tracer detaches and ends
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                raise Error(f"attach: {shown[0]} did not detach within 60 s")
        if tracer == "bpf" and p.returncode != 0:
            why = last_words(p)
            raise Error(f"attach: the BPF capture failed: {why}")
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
        write_procinfo(os.path.join(work, "procinfo"), w.info)
        keep_files(a, work)
        capture = " ".join(shlex.quote(x) for x in shown)
        tstats = read_stats(stats) if tracer == "bpf" else None
        res = convert_file(a, db, raw, read_listing(os.path.join(work, "listing"), a.datadir),
                           w.info, capture, None,
                           name="BPF capture" if tracer == "bpf" else "strace output",
                           tracer_stats=tstats)
        if tstats and not a.quiet:
            secs = time.monotonic() - t_attached
            print(f"{PROG}: note: the BPF capture: {tstats.get('events', 0)} events in "
                  f"{secs:.1f} s, {tstats.get('cpu_user_s', 0) + tstats.get('cpu_sys_s', 0):.2f} "
                  "s of CPU in user space", file=sys.stderr)
            if tstats.get("syscalls_on_raw_tp"):
                print(f"{PROG}: note: the BPF capture ran on every system call of the machine: "
                      "this kernel has no syscalls:* tracepoints", file=sys.stderr)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
        shutil.rmtree(work, ignore_errors=True)
    return capture_status(a, res)


def cmd_convert(a) -> int:
    db = prepare(a)
    if not a.input:
        raise Error("convert: no STRACE_OUT given (see dbcapture.py convert --help)")
    listing = read_listing(a.listing, a.datadir) if a.listing else None
    procinfo = read_procinfo(a.procinfo) if a.procinfo else None
    capture = a.capture or f"strace output {os.path.basename(a.input)}"
    cwd = os.path.normpath(os.path.abspath(a.cwd)) if a.cwd else None
    return capture_status(a, convert_file(a, db, a.input, listing, procinfo, capture, cwd))


# ---------------------------------------------------------------------------
# Manual pages
# ---------------------------------------------------------------------------

COMMON_OPTIONS = """\
    --datadir DIR          the database's data directory: traced files are
                           named relative to it (required)
    --db DB                postgresql, mariadb, sqlite or generic: the page
                           size and the file role rules (required)
    -o, --output FILE      the trace (.gz: gzip-compressed; required)
    --pagesize BYTES       the database's page size (default: 8192
                           postgresql, 16384 mariadb, 4096 sqlite, generic)
    --role PATTERN=ROLE    a file role rule checked before the built-in
                           ones (repeatable; first match wins); PATTERN is an
                           fnmatch pattern on the path relative to DIR ('*'
                           also matches '/'), ROLE data, log, journal, temp
                           or other
    --outside drop|keep|error
                           files outside DIR: dropped with a count (default),
                           kept under --outside-prefix, or an error
    --outside-prefix P     where kept outside files go (default "outside":
                           /tmp/x becomes outside/tmp/x)
    --source TEXT          what was captured (database, version, workload),
                           put first on the trace's source line
    --accept-incomplete    exit 0 even when the capture could not see part
                           of the I/O (io_uring, unprinted io_submit
                           requests, descriptors of unknown files): the
                           trace is written either way, with one
                           "incomplete" line in its header per class of I/O
                           it lacks, which dbtrace.py check and the replay
                           repeat (the replay refuses it unless
                           dbr_accept_incomplete=1)
    --quiet                no notes on stderr
"""

TRACER_OPTION = """\
    --tracer auto|bpf|strace
                           the BPF capture (build/iocap: system calls,
                           io_uring and libaio requests, a few percent of
                           the database's speed) or strace (system calls
                           only, a third to a fifth of its speed). auto
                           (default): BPF where it can run (built, a kernel
                           with BTF, root), else strace with a note saying
                           why; bpf: an error where it cannot
"""

RULES_TEXT = "\n".join(
    f"    {db}:\n" + "\n".join(f"        {pat:26} {role}" for pat, role in RULES[db])
    for db in ("postgresql", "mariadb", "sqlite", "generic"))

HELP = {}
HELP["run"] = f"""\
NAME
    dbcapture.py run - start a command under strace and convert its file I/O

SYNOPSIS
    dbcapture.py run --datadir DIR --db DB -o OUT.trace[.gz] [OPTIONS] -- COMMAND...

DESCRIPTION
    Lists DIR (the sizes the trace declares), then runs

      strace -f -ttt -yy -qq -s 0 -T --seccomp-bpf -e trace=CALLS -o strace.out -- COMMAND...

    (CALLS: the calls "dbcapture.py help convert" lists), follows every
    thread and process COMMAND starts, and when COMMAND ends converts the
    output (see convert). COMMAND's standard input, output and error are
    dbcapture.py's own; SIGINT (Ctrl-C) goes to COMMAND only. A COMMAND that
    exits with a non-zero status is an error: no trace is written. With
    --tracer bpf (the default where it can run), COMMAND starts held until
    build/iocap has attached to it, then runs captured from the kernel.

    Streams are named after the threads' names (comm) or, for PostgreSQL, the
    process titles, sampled from /proc while the capture runs, plus the
    thread id: "sqlite3-4242", "checkpointer-4250", "backend-4262".

OPTIONS
{COMMON_OPTIONS}\
{TRACER_OPTION}\
    --keep DIR             keep strace's output, the listing and the process
                           names in DIR (for dbcapture.py convert)
    --strace PATH          the strace binary (default strace)
    --no-seccomp           trace without --seccomp-bpf (slower: every system
                           call stops the database, not only the traced ones)

EXAMPLE
    dbcapture.py run --datadir /tmp/db --db sqlite -o load.trace.gz \\
        --source "SQLite 3.40.1 bulk load" -- sqlite3 /tmp/db/app.db < dump.sql
"""

HELP["attach"] = f"""\
NAME
    dbcapture.py attach - capture the file I/O of running processes

SYNOPSIS
    dbcapture.py attach --datadir DIR --db DB -o OUT.trace[.gz] --pid PID [--pid PID]...
                        | --cgroup CGROUP
                        [--duration SECONDS] [--no-children] [--ready FILE] [OPTIONS]

DESCRIPTION
    Lists DIR (the sizes the trace declares), then attaches

      strace -f -ttt -yy -qq -s 0 -T -e trace=CALLS -o strace.out -p PID -p CHILD...

    to each PID and (unless --no-children) every process descending from it
    at that moment: a PostgreSQL postmaster's checkpointer, WAL writer and
    backends; MariaDB's mariadbd has threads only, all attached through its
    PID. Threads and processes started later are followed (-f). Once strace
    has attached to every thread, a line "attached to ..." goes to stderr and
    --ready FILE is written; the capture then lasts --duration SECONDS, or
    until dbcapture.py gets SIGINT (Ctrl-C) or SIGTERM, or (with --pid) the
    processes end.
    strace then detaches (the database keeps running) and the output is
    converted (see convert). Calls still in progress when strace detaches are
    dropped.

    With --tracer bpf (the default where it can run) build/iocap takes
    strace's place: it follows the same processes from the kernel (eBPF on
    tracepoints), also sees io_uring and libaio requests, and writes the same
    text, converted the same way; what it could not see goes into the
    trace's header as "incomplete" lines.

    --cgroup CGROUP (BPF only) captures every process of the cgroup v2
    directory CGROUP instead, for instance a systemd service's
    /sys/fs/cgroup/system.slice/mariadb.service: the kernel filters by the
    cgroup, so processes that join it later are captured from their first
    call, and those of its sub-cgroups are not.

    ptrace stops every traced thread twice per traced system call: under
    strace the database runs slower while attached (docs/dbcapture.md has
    numbers). --seccomp-bpf, which makes run cheaper, cannot be used when
    attaching.

OPTIONS
{COMMON_OPTIONS}\
    --pid PID              a process to attach to (repeatable)
    --cgroup CGROUP        or: every process of this cgroup v2 directory
                           (--tracer bpf)
    --duration SECONDS     capture this long (default: until SIGINT/SIGTERM)
    --no-children          do not attach to the existing child processes
    --ready FILE           written (the tracer's pid) once attached: a script
                           can wait for it before starting the workload
{TRACER_OPTION}\
    --keep DIR             keep strace's output, the listing and the process
                           names in DIR
    --strace PATH          the strace binary (default strace)

EXAMPLE
    dbcapture.py attach --datadir /var/lib/postgresql/15/main --db postgresql \\
        --pid $(head -1 /var/lib/postgresql/15/main/postmaster.pid) --duration 10 \\
        --source "PostgreSQL 15 pgbench -c 4 -T 10" -o pgbench.trace.gz
"""

HELP["convert"] = f"""\
NAME
    dbcapture.py convert - strace output as a dbtrace trace

SYNOPSIS
    dbcapture.py convert STRACE_OUT --datadir DIR --db DB -o OUT.trace[.gz]
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
                 non-empty file -> truncate 0; unlink, unlinkat -> unlink;
                 mkdir, mkdirat -> create of a directory; rmdir,
                 unlinkat(AT_REMOVEDIR) -> unlink of a directory. rename,
                 renameat, renameat2 have no equivalent: a renamed file keeps
                 its first name in the trace and the name it replaced (if
                 any) gets an unlink; a name used again after an unlink is
                 the same trace file (a journal made anew each transaction:
                 create, writes, unlink, create, ...).
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
    Async I/O    io_submit: its requests are recorded at submission with
                 their requested lengths when strace prints them (a warning:
                 completion is not visible; InnoDB must run with
                 innodb_use_native_aio=0 for a faithful capture);
                 io_uring_enter: a warning, its I/O is invisible. Both make
                 the trace incomplete (below).
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

OPTIONS
    STRACE_OUT             strace's output file (plain or gzip)
{COMMON_OPTIONS}\
    --listing FILE         the data directory at capture start: 'TYPE SIZE
                           PATH' lines (find DIR -printf '%y %s %P\\n')
    --procinfo FILE        'TID name NAME', 'TID cwd PATH' and 'TID odirect
                           FD,FD...' lines: stream names, working directories
                           and the descriptors open with O_DIRECT when the task
                           was first seen (run/attach --keep write one);
                           default stream names are pid-TID
    --cwd DIR              working directory of processes whose directory the
                           capture does not tell (default DIR)
    --capture TEXT         the strace command line, for the source line
                           (default "strace output FILE")

EXAMPLE
    strace -f -ttt -yy -qq -s 0 -e trace=%file,%desc -o pg.strace -p 4242
    dbcapture.py convert pg.strace --datadir /srv/pg --db postgresql \\
        --capture "strace -f -ttt -yy -p 4242" -o pg.trace.gz
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Error(f"{self.prog}: {message} (see {PROG} {self.prog.split()[-1]} --help)")


def parser(cmd: str) -> argparse.ArgumentParser:
    ap = _Parser(prog=f"{PROG} {cmd}", add_help=False, usage=argparse.SUPPRESS)
    if cmd == "convert":
        ap.add_argument("input", nargs="?")
        ap.add_argument("--listing")
        ap.add_argument("--procinfo")
        ap.add_argument("--cwd")
        ap.add_argument("--capture")
    ap.add_argument("--datadir")
    ap.add_argument("--db")
    ap.add_argument("-o", "--output")
    ap.add_argument("--pagesize", type=int)
    ap.add_argument("--role", action="append")
    ap.add_argument("--outside", choices=("drop", "keep", "error"), default="drop")
    ap.add_argument("--outside-prefix", default="outside")
    ap.add_argument("--source")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--accept-incomplete", action="store_true")
    if cmd in ("run", "attach"):
        ap.add_argument("--tracer", choices=("auto", "bpf", "strace"), default="auto")
    if cmd in ("run", "attach"):
        ap.add_argument("--keep")
        ap.add_argument("--strace", default="strace")
    if cmd == "run":
        ap.add_argument("--no-seccomp", action="store_true")
        ap.add_argument("command", nargs=argparse.REMAINDER)
    if cmd == "attach":
        ap.add_argument("--pid", type=int, action="append")
        ap.add_argument("--cgroup")
        ap.add_argument("--duration", type=float)
        ap.add_argument("--no-children", action="store_true")
        ap.add_argument("--ready")
    return ap


COMMANDS = {"run": cmd_run, "attach": cmd_attach, "convert": cmd_convert}


def main(argv=None) -> int:
    got = dt.pick_command(argv, __doc__, PROG, COMMANDS)
    if isinstance(got, int):
        return got
    cmd, rest = got
    opts = rest
    if cmd == "run" and "--" in rest:
        k = rest.index("--")
        opts = rest[:k]
    if "-h" in opts or "--help" in opts:
        print(HELP[cmd].rstrip())
        return 0
    try:
        if cmd == "run":
            if "--" not in rest:
                raise Error("run: put the COMMAND after '--' (see dbcapture.py run --help)")
            k = rest.index("--")
            a = parser(cmd).parse_args(rest[:k])
            if a.command:
                raise Error(f"run: unexpected '{a.command[0]}' before '--'")
            a.command = rest[k + 1:]
        else:
            a = parser(cmd).parse_args(rest)
        return COMMANDS[cmd](a)
    except dt.Error as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except Error as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
