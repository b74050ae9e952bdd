"""The converter: strace's record of a database's system calls, call by
call, into dbtrace records (files, streams, offsets, barriers), with what
it could not map counted for the notes. Here: the lines read, the
records ordered and spooled, the names resolved, the trace written;
each call's handler is in calls.py, the objects they act on in model.py."""
import heapq
import os
import sys
import tempfile
from fnmatch import fnmatchcase
from typing import Dict, List, Optional

from fiopack.capture.calls import Calls
from fiopack.capture.model import Counts, Obj, Ofd, TFile
from fiopack.capture.rules import NONFILE_PREFIXES, PROG, Error
from fiopack.capture.strace import (Fd, LineError, _CALL, _DURATION, _PREFIX, _RESUMED,
                                    _UNFINISHED, parse_result, split_args)
from fiopack.trace import dbtrace as dt  # the format's reader/writer

# a capture's trace.gz: gzip's default level, a third of level 9's time
# (most of converting a capture at level 9) for a file 2% larger
GZ_LEVEL = 6


class Converter(Calls):
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
