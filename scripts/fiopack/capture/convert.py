"""The converter: strace's record of a database's system calls, call by
call, into dbtrace records (files, streams, offsets, barriers), with what
it could not map counted for the notes."""
import heapq
import os
import re
import sys
import tempfile
from fnmatch import fnmatchcase
from typing import Dict, List, Optional

from fiopack.capture.rules import MAX_IO, NONFILE_PREFIXES, PROG, Error
from fiopack.capture.strace import (Fd, LineError, Result, _CALL, _DURATION, _PREFIX,
                                    _RESUMED, _UNFINISHED, parse_fd, parse_int, parse_result,
                                    parse_str, split_args)
from fiopack.trace import dbtrace as dt  # the format's reader/writer

# the most one read or write call (or one AIO or io_uring request, a 32-bit
# length) can transfer
MAX_CALL = 1 << 32
# a capture's trace.gz: gzip's default level, a third of level 9's time
# (most of converting a capture at level 9) for a file 2% larger
GZ_LEVEL = 6


# ---------------------------------------------------------------------------
# The converter
# ---------------------------------------------------------------------------

class TFile:
    """A file of the trace: one path, one declaration; successive files of
    the same name (a journal created and removed per transaction) share it."""
    __slots__ = ("path", "existed", "size0", "extent", "is_dir", "owner", "id", "ops", "bad",
                 "order", "direct", "buffered", "shared", "temp")

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
        self.shared = False         # held by more than one object (a name made anew)
        self.temp = False           # a file without a name (O_TMPFILE): role temp


class Obj:
    """A file or directory of the capture (follows renames)."""
    __slots__ = ("path", "tf", "dead", "cur", "bumpable", "is_dir", "why", "unnamed")

    def __init__(self, path):
        self.path = path            # current absolute path
        self.tf: Optional[TFile] = None
        self.dead = False           # unlinked (may still be open)
        self.cur = 0                # size as far as the trace tells
        self.bumpable = False       # existed before the capture and never shrunk
        self.is_dir = False
        self.why = None             # why it is not in the trace (outside, ...)
        self.unnamed = False        # made by open(DIR, O_TMPFILE): no name ever


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
        self.ntmpfiles = 0                # files made with O_TMPFILE
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
            tf.shared = tf.shared or tf.owner is not None
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
        if ofd is not None and ofd.obj is not None and (ofd.obj.unnamed or (
                ofd.obj.path == fd.path and ofd.obj.dead == fd.deleted)):
            # (a file made with O_TMPFILE has no path: iocap shows its
            # directory's, strace "DIR/#INODE (deleted)")
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
        # a system call's arguments are 64-bit; offsets and sizes beyond are
        # a corrupt line, and would make a trace no reader takes
        if not -(1 << 63) <= v <= dt.MAX_OFFSET:
            raise LineError(f"a number of {len(args[i].strip())} digits: beyond 64 bits")
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
        if "O_TMPFILE" in fl:
            self._open_unnamed(seq, pid, t, self.resolve(pid, dirfd, path), res.value, fl)
            return
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

    def _open_unnamed(self, seq, pid, t, d: str, fd: int, fl: set):
        """open(DIR, O_TMPFILE): a file with no name in DIR, gone at its last
        close (MariaDB's and InnoDB's sort and temporary files). A file of
        its own in the trace, role temp, named DIR/#tmpfile.N (N counts them),
        created and unlinked at once: the replay does its I/O on the open
        file, as the database did."""
        self.ntmpfiles += 1
        o = self.new_obj(os.path.join(d, f"#tmpfile.{self.ntmpfiles}"), False, 0, in_ns=False)
        o.unnamed = True
        if o.tf is not None:
            o.tf.temp = True
        self.emit(seq, t, pid, o, "create")
        self.emit(seq, t, pid, o, "unlink")
        o.dead = True
        self.table(pid)[fd] = Ofd(o, 0, "O_APPEND" in fl, "O_DIRECT" in fl)

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
        self.mapped.add("renames (a renamed file has its new name in the trace, unless another "
                        "file of the trace has it)")
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
        self.take_name(src)
        # a directory renamed: the names below it move with it
        pre = old + "/"
        moved = [p for p in self.ns if p.startswith(pre)]
        for p in moved:
            o = self.ns.pop(p)
            o.path = new + p[len(old):]
            self.ns[o.path] = o
            self.touched.add(p)
            self.touched.add(o.path)

    def take_name(self, o: Obj):
        """A renamed file is named in the trace by its new name: what a
        database makes under a temporary name and renames into place (a
        PostgreSQL WAL segment made as pg_wal/xlogtemp.PID) is known by the
        name it then has. Not when another file of the trace has that name
        (a file renamed over another, as PostgreSQL 15's statistics file
        each time): the two stay apart, and a name made anew each time does
        not become a new file each time; nor for a name several files had in
        turn, or a directory (the names below it keep theirs)."""
        tf = o.tf
        if tf is None or tf.owner is not o or tf.shared or tf.is_dir or o.is_dir:
            return
        r = self.rel(o.path)
        if r is None:
            if self.outside != "keep":
                return
            r = f"{self.outside_prefix}/{o.path.lstrip('/')}" if self.outside_prefix else \
                o.path.lstrip("/")
        if r in self.tfiles or dt.path_check(r, "data"):
            return
        del self.tfiles[tf.path]
        tf.path, tf.bad = r, None
        self.tfiles[r] = tf

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
            # a descriptor that names a directory and reads or writes data: a
            # file made with O_TMPFILE before the capture (iocap names it by
            # its directory), whose I/O has no file to go to
            self.lost(f"{what} calls on descriptors that name a directory (files made "
                      "with O_TMPFILE before the capture)")
            return
        if n > MAX_CALL:
            # the record is split into MAX_IO pieces below: a corrupt length
            # would make billions of them
            raise LineError(f"{what} of {n} bytes: more than one call transfers "
                            f"({MAX_CALL})")
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
        if off < 0 or off > dt.MAX_OFFSET - n:
            raise LineError(f"{what} at offset {off}: beyond the largest file offset")
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
                   "lost. The BPF capture (--tracer bpf) sees each request and its "
                   "completion.")
        if res.value is None or res.value < 0:
            self.lost("io_submit calls that failed or whose result strace did not see")
            return
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
            self.lost("io_submit requests strace did not print (the BPF capture, "
                      "--tracer bpf, sees them)", res.value - done)

    def c_io_uring_enter(self, seq, pid, t, args, res):
        self._warn("io_uring", "io_uring_enter: the I/O submitted through io_uring is "
                   "invisible to strace and missing from the trace (the BPF capture, "
                   "--tracer bpf, sees it)")
        self.lost("io_uring_enter calls: the reads, writes and syncs submitted through "
                  "io_uring are invisible to strace and none is in the trace (capture with "
                  "--tracer bpf)")

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
        self.fix_paths()
        return self.declare(rules)

    def fix_paths(self):
        """Final paths and directory-ness of the files with records."""
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

    def declare(self, rules):
        """The files' declarations, each with its role."""
        decls = []
        for tf in self.files:
            if tf.is_dir:
                role, size0, mx = "directory", (0 if tf.existed else None), 0
            else:
                role = "temp" if tf.temp else role_of(tf.path, rules)
                size0 = tf.size0 if tf.existed else None
                mx = max(tf.extent, size0 or 0)
            direct = bool(tf.direct) and not tf.is_dir
            if direct and tf.buffered:
                self.mapped.add("files read or written both with and without O_DIRECT, "
                                "declared direct")
            decls.append(dt.FileDecl(tf.id, role, size0, mx, tf.path, direct=direct))
        return decls

    def header(self, decls, pagesize, source, stream_names):
        streams = []
        used = set()
        for pid, sid in sorted(self.streams.items(), key=lambda kv: kv[1]):
            nm = self.procinfo.get(pid, {}).get("name") or stream_names.get(pid) or f"pid-{pid}"
            streams.append(dt.StreamDecl(sid, dt.unique(dt.safe_name(nm, 200), used)))
        # version 2 only when it says more than version 1 could
        v2 = bool(self.nlat) or any(d.direct for d in decls)
        return dt.Header(version=2 if v2 else 1, pagesize=pagesize,
                         timeunit="us" if self.timed else "none",
                         source=source, incomplete=self.incomplete_lines(), files=decls,
                         streams=streams)

    def result(self, h, nrec, ops) -> dict:
        dur = (self.tmax - self.t0) / 1e6 if self.timed and self.t0 is not None else 0.0
        return {"records": nrec, "files": len(h.files), "streams": len(h.streams),
                "duration": dur, "ops": dict(ops), "decls": h.files,
                "incomplete": h.incomplete}

    def write(self, out_path, pagesize, source, rules, stream_names):
        decls = self.build_files(rules)
        h = self.header(decls, pagesize, source, stream_names)
        isdir = {d.id: d.role == "directory" for d in decls}
        out = dt.Output(out_path, gz_level=GZ_LEVEL)
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
        return self.result(h, w.p.nrec, ops)

    def incomplete_lines(self) -> List[str]:
        lines = [f"{v} {k}" if v else k for k, v in sorted(self.unseen.items())]
        lines = ["".join("?" if c < " " or c == "\x7f" else c for c in ln)[:dt.MAX_LINE - 11]
                 for ln in lines]
        if len(lines) > dt.MAX_INCOMPLETE:
            rest = len(lines) - dt.MAX_INCOMPLETE + 1
            lines = lines[:dt.MAX_INCOMPLETE - 1] + [f"{rest} more classes of I/O not seen "
                                                     "(fio-pack capture's notes list them)"]
        return lines


def role_of(path: str, rules) -> str:
    for pat, role in rules:
        if fnmatchcase(path, pat):
            return role
    return "other"
