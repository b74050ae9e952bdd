"""The dbtrace format (docs/dbtrace-format.md) in Python: the trace's
header and records, a reader that refuses what the C parser refuses with
the same message, and a writer (spooled, written atomically, gzip when
the name ends in .gz); what the importers, the capture and the checks
share."""
import re
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from fiopack import UserError, outputs

PROG = "fio-pack trace"

# ---------------------------------------------------------------------------
# The dbtrace format (docs/dbtrace-format.md), versions 1 and 2
# ---------------------------------------------------------------------------

VERSION = 2                 # the highest version read; 2 adds "direct" and "+LATENCY"
VERSIONS = ("1", "2")
MAX_LINE = 4096
MAX_FILES = 16384
MAX_STREAMS = 4096
MAX_PATH = 1024
MAX_NAME = 256
MAX_INCOMPLETE = 64
MAX_IO = 64 << 20
MAX_OFFSET = (1 << 63) - 1
MIN_PAGE = 512
MAX_PAGE = 1 << 20
MAX_TOKENS = 8

ROLES = ("data", "log", "journal", "directory", "temp", "other")
UNITS = ("none", "ns", "us", "ms")
UNIT_NS = {"none": 0, "ns": 1, "us": 1000, "ms": 1000000}
OPS = ("read", "write", "fsync", "fdatasync", "sync_file_range", "trim", "truncate",
       "create", "unlink")
NARGS = {"read": 2, "write": 2, "sync_file_range": 2, "trim": 2, "truncate": 1}

# Trace text is handled as latin-1: one character per byte, so lengths are
# byte counts and any byte of a path goes back out unchanged.
ENC = "latin-1"


class Error(UserError):
    """A one-line error; main() prints it after "fio-pack trace: "."""


class TraceError(Error):
    pass


@dataclass
class FileDecl:
    id: int
    role: str
    size: Optional[int]      # None: "-", the trace creates the file
    max_size: int
    path: str
    line: int = 0
    extent: int = 0          # reader: highest range end or truncate size so far
    direct: bool = False     # version 2: read and written with O_DIRECT


@dataclass
class StreamDecl:
    id: int
    name: str
    line: int = 0
    last_time: int = 0
    records: int = 0


@dataclass
class Header:
    version: int = 1         # 2 for "direct" files and latencies
    pagesize: int = 4096
    timeunit: str = "none"
    source: str = ""
    # what the capture could not see, one class of I/O a line ("incomplete" lines)
    incomplete: List[str] = field(default_factory=list)
    files: List[FileDecl] = field(default_factory=list)
    streams: List[StreamDecl] = field(default_factory=list)


@dataclass
class Record:
    time: Optional[int]      # None in an order-only trace
    stream: int
    file: int
    op: str
    off: int = 0
    len: int = 0
    size: int = 0            # truncate
    line: int = 0
    lat: Optional[int] = None  # version 2: completed LAT time units after time


def path_check(path: str, role: str) -> Optional[str]:
    """None if PATH may name a file of ROLE below a target directory, else why not."""
    if not path:
        return "is empty"
    if len(path) > MAX_PATH:
        return f"is longer than {MAX_PATH} bytes"
    if any(c <= " " or c == "\x7f" for c in path):
        return "has a blank or control character"
    if path[0] == "/":
        return "is absolute"
    if path == ".":
        return None if role == "directory" else \
            "is the target directory itself, only a directory may be '.'"
    for comp in path.split("/"):
        if comp == "":
            return "has an empty component"
        if comp == "..":
            return "has a '..' component"
        if comp == ".":
            return "has a '.' component"
    return None


def _dec(s: str) -> Optional[int]:
    """Plain decimal: the value, None if not a number, -1 if beyond 2^63-1."""
    if not s or not all("0" <= c <= "9" for c in s):
        return None
    v = int(s)
    return -1 if v > MAX_OFFSET else v


def _path_key(path: str):
    # '/' before every other byte, the end of a path before '/' (dbtrace.c path_cmp)
    return tuple(1 if c == "/" else ord(c) + 1 for c in path)


def _blank_split(s: str) -> List[str]:
    # blanks are spaces and tabs only (str.split() would also split at \x85, \xa0)
    return [t for t in re.split(r"[ \t]+", s) if t]


class Parser:
    """The format's state machine: feed() one line at a time (without its
    newline), eof() at the end. Raises TraceError("NAME line N: reason")."""

    def __init__(self, name: str):
        self.name = name
        self.state = "magic"
        self.line = 0
        self.nrec = 0
        self.nlat = 0              # records with a latency
        self.h = Header(pagesize=0, timeunit="")
        self.files: Dict[int, FileDecl] = {}
        self.streams: Dict[int, StreamDecl] = {}
        self.stream_names: Dict[str, StreamDecl] = {}
        self.page_line = self.unit_line = self.source_line = 0

    def fail(self, msg: str, line: Optional[int] = None):
        text = f"{self.name} line {self.line if line is None else line}: {msg}"
        # one line, no terminal escapes: control characters as '?' (errmsg.c)
        raise TraceError(re.sub(r"[\x00-\x1f\x7f]", "?", text))

    # -- numbers --
    def qty(self, s: str, what: str) -> int:
        if s[0] == "-" and len(s) > 1:
            self.fail(f"negative {what} '{s[:40]}'")
        if s[0] == "p":
            n = _dec(s[1:])
            if n is not None and n >= 0:
                n = -1 if n > MAX_OFFSET // self.h.pagesize else n * self.h.pagesize
        else:
            n = _dec(s)
        if n is None:
            self.fail(f"bad {what} '{s[:40]}' (bytes, or pN for N pages)")
        if n < 0:
            self.fail(f"{what} '{s[:40]}' is beyond 2^63-1 bytes")
        return n

    def ident(self, s: str, what: str, limit: int) -> int:
        v = _dec(s)
        if v is None or v < 0 or v >= limit:
            self.fail(f"{what} id '{s[:40]}' must be an integer from 0 to {limit - 1}")
        return v

    # -- header --
    def keys_done(self, what: str):
        if not self.page_line:
            self.fail(f"{what} before the header's pagesize line")
        if not self.unit_line:
            self.fail(f"{what} before the header's timeunit line")
        if not self.source_line:
            self.fail(f"{what} before the header's source line")

    def file_decl(self, tok):
        if len(tok) not in (6, 7):
            self.fail("expected 'file ID ROLE SIZE MAXSIZE PATH [direct]'")
        fid = self.ident(tok[1], "file", MAX_FILES)
        if fid in self.files:
            self.fail(f"file {fid} already declared on line {self.files[fid].line}")
        role = tok[2]
        if role not in ROLES:
            self.fail(f"file {fid}: unknown role '{role[:40]}' "
                      "(data, log, journal, directory, temp, other)")
        size = None if tok[3] == "-" else self.qty(tok[3], "file size")
        max_size = self.qty(tok[4], "file max size")
        if max_size < (size or 0):
            self.fail(f"file {fid}: max size {max_size} is below its size {size}")
        if role == "directory" and max_size:
            self.fail(f"file {fid}: a directory has size and max size 0")
        why = path_check(tok[5], role)
        if why:
            self.fail(f"file {fid}: path '{tok[5][:60]}' {why}")
        if size is None and tok[5] == ".":
            self.fail(f"file {fid}: the target directory '.' always exists (size 0, not '-')")
        direct = len(tok) == 7
        if direct:
            if tok[6] != "direct":
                self.fail(f"file {fid}: unknown flag '{tok[6][:40]}' (direct)")
            if self.h.version < 2:
                self.fail(f"file {fid}: 'direct' needs 'dbtrace 2' (this trace is version 1)")
            if role == "directory":
                self.fail(f"file {fid}: a directory is not read or written: no 'direct'")
        f = FileDecl(fid, role, size, max_size, tok[5], self.line, direct=direct)
        self.files[fid] = f
        self.h.files.append(f)

    def stream_decl(self, tok):
        if len(tok) != 3:
            self.fail("expected 'stream ID NAME'")
        sid = self.ident(tok[1], "stream", MAX_STREAMS)
        if sid in self.streams:
            self.fail(f"stream {sid} already declared on line {self.streams[sid].line}")
        if len(tok[2]) > MAX_NAME:
            self.fail(f"stream {sid}: name longer than {MAX_NAME} bytes")
        other = self.stream_names.get(tok[2])
        if other:
            self.fail(f"stream {sid}: name '{tok[2][:60]}' already used by stream {other.id} "
                      f"on line {other.line}")
        s = StreamDecl(sid, tok[2], self.line)
        self.streams[sid] = s
        self.stream_names[s.name] = s
        self.h.streams.append(s)

    def check_paths(self):
        fs = sorted(self.h.files, key=lambda f: _path_key(f.path))
        best = None
        for a, b in zip(fs, fs[1:]):
            n = len(a.path)
            if a.path != b.path and (a.role == "directory" or not b.path.startswith(a.path)
                                     or b.path[n:n + 1] != "/"):
                continue
            later = max(a.line, b.line)
            if best is None or later < max(best[0].line, best[1].line):
                best = (a, b)
        if not best:
            return
        a, b = best
        if a.path == b.path:
            if b.line < a.line:
                a, b = b, a
            self.fail(f"file {b.id}: path '{b.path[:60]}' already declared by file {a.id} "
                      f"on line {a.line}", b.line)
        if b.line > a.line:
            self.fail(f"file {b.id}: path '{b.path[:60]}' is below '{a.path[:60]}', file {a.id} "
                      f"(line {a.line}) of role {a.role}, not a directory", b.line)
        self.fail(f"file {a.id}: path '{a.path[:60]}' of role {a.role} has file {b.id} "
                  f"'{b.path[:60]}' (line {b.line}) below it", a.line)

    def finish_header(self, what: str):
        self.keys_done(what)
        self.check_paths()

    def header_key(self, tok):
        if tok[0] == "pagesize":
            if self.page_line:
                self.fail(f"duplicate pagesize (first on line {self.page_line})")
            if len(tok) != 2:
                self.fail("expected 'pagesize BYTES'")
            v = _dec(tok[1])
            if v is None or v < MIN_PAGE or v > MAX_PAGE or v & (v - 1):
                self.fail(f"pagesize '{tok[1][:40]}' must be a power of two from "
                          f"{MIN_PAGE} to {MAX_PAGE}")
            self.h.pagesize = v
            self.page_line = self.line
            return
        if self.unit_line:
            self.fail(f"duplicate timeunit (first on line {self.unit_line})")
        if len(tok) != 2:
            self.fail("expected 'timeunit ns|us|ms|none'")
        if tok[1] not in UNITS:
            self.fail(f"unknown time unit '{tok[1][:40]}' (ns, us, ms, none)")
        self.h.timeunit = tok[1]
        self.unit_line = self.line

    def source(self, text: str):
        if self.source_line:
            self.fail(f"duplicate source (first on line {self.source_line})")
        text = text.strip(" \t")
        if not text:
            self.fail("source needs a description of what was captured and how")
        self.h.source = text
        self.source_line = self.line

    def incomplete(self, text: str):
        if len(self.h.incomplete) == MAX_INCOMPLETE:
            self.fail(f"more than {MAX_INCOMPLETE} incomplete lines")
        text = text.strip(" \t")
        if not text:
            self.fail("incomplete needs a description of what the capture could not see")
        self.h.incomplete.append(text)

    # -- records --
    # long: a record line field by field, each refusal the C parser's own message
    def record(self, tok) -> Record:
        if len(tok) < 4:
            self.fail("expected 'TIME STREAM FILE OPERATION [ARGUMENTS] [+LATENCY]'")
        lat = None
        if tok[-1][0] == "+":
            if self.h.version < 2:
                self.fail(f"a latency '{tok[-1][:40]}' needs 'dbtrace 2' (this trace is version 1)")
            if self.h.timeunit == "none":
                self.fail(f"a latency '{tok[-1][:40]}' in an untimed trace (timeunit none)")
            lat = _dec(tok[-1][1:])
            if lat is None:
                self.fail(f"bad latency '{tok[-1][:40]}'")
            if lat < 0:
                self.fail(f"latency '{tok[-1][:40]}' is beyond 2^63-1")
            tok = tok[:-1]
            if len(tok) < 4:
                self.fail("expected 'TIME STREAM FILE OPERATION [ARGUMENTS] [+LATENCY]'")
        time = None
        if tok[0] == "-":
            if self.h.timeunit != "none":
                self.fail(f"time '-' in a timed trace (timeunit {self.h.timeunit})")
        else:
            if tok[0][0] == "-":
                self.fail(f"negative time '{tok[0][:40]}'")
            time = _dec(tok[0])
            if time is None:
                self.fail(f"bad time '{tok[0][:40]}'")
            if time < 0:
                self.fail(f"time '{tok[0][:40]}' is beyond 2^63-1")
            if self.h.timeunit == "none":
                self.fail(f"time '{tok[0][:40]}' in an untimed trace (timeunit none): use '-'")
        sid = self.ident(tok[1], "stream", MAX_STREAMS)
        s = self.streams.get(sid)
        if s is None:
            self.fail(f"undeclared stream {sid}")
        fid = self.ident(tok[2], "file", MAX_FILES)
        f = self.files.get(fid)
        if f is None:
            self.fail(f"undeclared file {fid}")
        op = tok[3]
        if op not in OPS:
            self.fail(f"unknown operation '{op[:40]}' (read, write, fsync, fdatasync, "
                      "sync_file_range, trim, truncate, create, unlink)")
        nargs = NARGS.get(op, 0)
        if len(tok) - 4 != nargs:
            self.fail(f"{op} takes OFFSET LENGTH" if nargs == 2 else
                      f"{op} takes SIZE" if nargs == 1 else f"{op} takes no arguments")
        if f.role == "directory" and op not in ("fsync", "create", "unlink"):
            self.fail(f"{op} on file {fid}, a directory (a directory takes fsync, create, unlink)")
        if op in ("create", "unlink") and f.path == ".":
            self.fail(f"{op} of file {fid} '.', the target directory itself")
        if time is not None and s.records and time < s.last_time:
            self.fail(f"time {time} goes back from {s.last_time} in stream {sid}")
        if lat is not None and lat > MAX_OFFSET - time:
            self.fail(f"time {time} + latency {lat} is beyond 2^63-1")
        rec = Record(time, sid, fid, op, line=self.line, lat=lat)
        if lat is not None:
            self.nlat += 1
        end = 0
        if nargs == 2:
            rec.off = self.qty(tok[4], "offset")
            rec.len = self.qty(tok[5], "length")
            if rec.len == 0 and op != "sync_file_range":
                self.fail(f"{op} of 0 bytes")
            if op in ("read", "write") and rec.len > MAX_IO:
                self.fail(f"{op} of {rec.len} bytes, over the limit of {MAX_IO}")
            if rec.off > MAX_OFFSET - rec.len:
                self.fail(f"offset {rec.off} + length {rec.len} is beyond 2^63-1")
            end = rec.off + rec.len
            if end > f.max_size:
                self.fail(f"{op} {rec.off}+{rec.len} ends at {end}, beyond file {fid}'s "
                          f"max size {f.max_size}")
        elif nargs == 1:
            rec.size = self.qty(tok[4], "size")
            if rec.size > f.max_size:
                self.fail(f"truncate to {rec.size} is beyond file {fid}'s max size {f.max_size}")
            end = rec.size
        if time is not None:
            s.last_time = time
        s.records += 1
        if end > f.extent:
            f.extent = end
        self.nrec += 1
        return rec

    def end(self, tok):
        if len(tok) > 2:
            self.fail("expected 'end [RECORDS]'")
        if len(tok) == 2:
            n = _dec(tok[1])
            if n is None or n < 0:
                self.fail(f"end: bad record count '{tok[1][:40]}'")
            if n != self.nrec:
                self.fail(f"end says {n} records, the trace has {self.nrec}")
        self.state = "end"

    # -- lines --
    def feed(self, line: str) -> Optional[Record]:
        self.line += 1
        for c in line:
            if (c < " " and c != "\t") or c == "\x7f":
                self.fail(f"control character 0x{ord(c):02x} in the line")
        if self.state == "magic":
            if not line.startswith("dbtrace "):
                self.fail("not a dbtrace trace: the first line must be 'dbtrace 1' or "
                          "'dbtrace 2'")
            if line[8:] not in VERSIONS:
                self.fail(f"unsupported dbtrace version '{line[8:48]}' "
                          "(this parser reads versions 1 and 2)")
            self.h.version = int(line[8:])
            self.state = "header"
            return None
        p = line.lstrip(" \t")
        if not p or p[0] == "#":
            return None
        if self.state == "end":
            self.fail(f"'{p[:40]}' after the 'end' line")
        if p.startswith("source") and (len(p) == 6 or p[6] in " \t"):
            if self.state == "records":
                self.fail("'source' after the first record (the header comes first)")
            self.source(p[6:])
            return None
        if p.startswith("incomplete") and (len(p) == 10 or p[10] in " \t"):
            if self.state == "records":
                self.fail("'incomplete' after the first record (the header comes first)")
            self.incomplete(p[10:])
            return None
        tok = _blank_split(p)
        if len(tok) > MAX_TOKENS:
            self.fail("too many fields")
        if "0" <= tok[0][0] <= "9" or tok[0][0] == "-":
            if self.state == "header":
                self.finish_header("record")
                self.state = "records"
            return self.record(tok)
        if tok[0] == "end":
            if self.state == "header":
                self.finish_header("'end'")
            self.end(tok)
            return None
        if tok[0] in ("pagesize", "timeunit", "file", "stream"):
            if self.state == "records":
                self.fail(f"'{tok[0]}' after the first record (the header comes first)")
            if tok[0] in ("file", "stream"):
                self.keys_done(tok[0])
                (self.file_decl if tok[0] == "file" else self.stream_decl)(tok)
                return None
            self.header_key(tok)
            return None
        self.fail(f"unknown line '{tok[0][:40]}' (expected a header line, a record, 'end', "
                  "'#' or blank)")

    def eof(self):
        if self.state == "end":
            self.state = "done"
            return
        if self.state == "magic":
            self.fail("empty input: not a dbtrace trace", 1)
        self.fail("the trace ends without its 'end' line (truncated?)", self.line + 1)


# -- reading --

class _DecodeError(Exception):
    pass


def _raw_chunks(f, size=1 << 16):
    while True:
        b = f.read(size)
        if not b:
            return
        yield b


def _gunzip(chunks):
    """Decompressed bytes of concatenated gzip members, as dbtrace.c reads them."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    member_done = False
    for data in chunks:
        while data:
            if member_done:
                if data[0] != 0x1f:
                    raise _DecodeError("data after the end of the gzip stream")
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                member_done = False
            try:
                out = d.decompress(data)
            except zlib.error as e:
                raise _DecodeError(f"corrupt gzip stream ({e})")
            if out:
                yield out
            if d.eof:
                member_done = True
                data = d.unused_data
            else:
                data = b""
    if not member_done:
        raise _DecodeError("truncated gzip stream (the compressed data ends early)")


def open_input(path: str):
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as e:
        raise Error(f"cannot open {path}: {e.strerror}")


def decoded_chunks(f):
    """Bytes of F, gunzipped if they start with the gzip magic."""
    first = f.read(1 << 16)
    if first[:2] == b"\x1f\x8b":
        def raw():
            yield first
            yield from _raw_chunks(f)
        return _gunzip(raw())

    def plain():
        if first:
            yield first
        yield from _raw_chunks(f)
    return plain()


def text_lines(chunks, max_len=None):
    """(line, error) pairs: lines without '\\n' and one '\\r' before it, as
    latin-1 text; a decoding error as (None, message) and then the end."""
    buf = b""
    try:
        for chunk in chunks:
            buf += chunk
            start = 0
            while True:
                nl = buf.find(b"\n", start)
                if nl < 0:
                    break
                yield buf[start:nl].decode(ENC), None
                start = nl + 1
            buf = buf[start:]
            if max_len is not None and len(buf) > max_len + 1:
                yield None, f"line longer than {max_len} bytes"
                return
    except _DecodeError as e:
        yield None, str(e)
        return
    if buf:
        yield buf.decode(ENC), None


def read_trace(path: str):
    """Generator: the Parser first (header not yet complete), then each Record."""
    name = "<stdin>" if path == "-" else path
    p = Parser(name)
    f = open_input(path)
    try:
        yield p
        for line, err in text_lines(decoded_chunks(f), MAX_LINE):
            if err is not None:
                p.fail(err, p.line + 1)
            if line.endswith("\r"):
                line = line[:-1]
            if len(line) > MAX_LINE:
                p.fail(f"line longer than {MAX_LINE} bytes", p.line + 1)
            rec = p.feed(line)
            if rec is not None:
                yield rec
        p.eof()
    finally:
        if f is not sys.stdin.buffer:
            f.close()


# -- writing --

class Output:
    """A trace or iolog output, written by the pack's rules for outputs
    (fiopack/outputs.py: a regular file is replaced whole once complete, a
    device or FIFO written in place, a symlink followed); gzip-compressed
    when the name ends in .gz. "-" or None: standard output (the caller
    writes only after checking everything)."""

    def __init__(self, path: Optional[str], gz_by_name=True, gz_level=9):
        self.path = path
        self.out = outputs.Output("-" if path is None else path)
        self.raw = self.out.file
        self.f = self.raw
        if gz_by_name and path not in (None, "-") and path.endswith(".gz"):
            import gzip
            self.f = gzip.GzipFile(filename="", mode="wb", fileobj=self.raw, mtime=0,
                                   compresslevel=gz_level)

    def write(self, text: str):
        try:
            self.f.write(text.encode(ENC))
        except OSError as e:
            raise Error(f"cannot write {self.path}: {e.strerror}")

    def commit(self):
        try:
            if self.f is not self.raw:
                self.f.close()
        except OSError as e:
            raise Error(f"cannot write {self.path}: {e.strerror}")
        self.out.commit()

    def abort(self):
        self.out.abort()


def fmt_off(v: int, page: int) -> str:
    return f"p{v // page}" if v % page == 0 else str(v)


class TraceWriter:
    """Writes a trace to an Output; every line is run through a Parser first."""

    def __init__(self, out: Output, h: Header):
        self.out = out
        self.p = Parser("output")
        self.page = h.pagesize
        lines = [f"dbtrace {h.version}", f"pagesize {h.pagesize}", f"timeunit {h.timeunit}",
                 f"source {h.source}"]
        lines += [f"incomplete {text}" for text in h.incomplete]
        lines += [f"file {f.id} {f.role} {'-' if f.size is None else f.size} {f.max_size} {f.path}"
                  + (" direct" if f.direct else "") for f in h.files]
        lines += [f"stream {s.id} {s.name}" for s in h.streams]
        for ln in lines:
            if len(ln) > MAX_LINE:
                self.p.fail(f"header line longer than {MAX_LINE} bytes", self.p.line + 1)
            self.p.feed(ln)
        self.p.finish_header("record")
        self.p.state = "records"
        out.write("".join(ln + "\n" for ln in lines))

    def record(self, time: Optional[int], stream: int, file: int, op: str,
               off: int = 0, length: int = 0, size: int = 0, lat: Optional[int] = None):
        tm = "-" if time is None else str(time)
        n = NARGS.get(op, 0)
        if n == 2:
            ln = f"{tm} {stream} {file} {op} {fmt_off(off, self.page)} {length}"
        elif n == 1:
            ln = f"{tm} {stream} {file} {op} {size}"
        else:
            ln = f"{tm} {stream} {file} {op}"
        if lat is not None:
            ln += f" +{lat}"
        self.p.feed(ln)
        self.out.write(ln + "\n")

    def end(self):
        self.p.feed(f"end {self.p.nrec}")
        self.out.write(f"end {self.p.nrec}\n")


def safe_name(s: str, limit: int = MAX_NAME) -> str:
    """One field of printable non-blank characters."""
    s = "".join(c if " " < c != "\x7f" else "_" for c in s)
    return s[:limit] or "_"


def unique(name: str, used: set, limit: int = MAX_NAME) -> str:
    """NAME, or NAME.2, NAME.3, ... if taken (shortened to stay within LIMIT)."""
    cand, n = name, 1
    while cand in used:
        n += 1
        cand = f"{name[:limit - len(str(n)) - 1]}.{n}"
    used.add(cand)
    return cand


def source_text(given: Optional[str], default: str) -> str:
    """The header's source: --source as given (checked), or DEFAULT made fit."""
    if given is not None:
        if any((c < " " and c != "\t") or c == "\x7f" for c in given):
            raise Error("--source: no control characters (the source is one line)")
        if not given.strip(" \t"):
            raise Error("--source: must not be empty")
        if len(given.encode(ENC, "replace")) > MAX_LINE - 7:
            raise Error(f"--source: longer than {MAX_LINE - 7} bytes")
        return given
    return "".join("?" if c < " " or c == "\x7f" else c for c in default)[:MAX_LINE - 7]


class Spool:
    """Records collected while an importer reads its input (the header, which
    needs every file's size, comes first in the trace): kept in a temporary
    file, read back in order."""

    def __init__(self):
        self.f = tempfile.TemporaryFile(mode="w+", encoding="ascii")
        self.n = 0

    def add(self, time, stream, file, op, off=0, length=0):
        self.f.write(f"{'-' if time is None else time} {stream} {file} {op} {off} {length}\n")
        self.n += 1

    def __iter__(self):
        self.f.seek(0)
        for ln in self.f:
            t, s, fi, op, off, length = ln.split()
            yield (None if t == "-" else int(t)), int(s), int(fi), op, int(off), int(length)

    def close(self):
        self.f.close()


def write_trace(path: Optional[str], h: Header, spool: Spool) -> int:
    out = Output(path)
    try:
        w = TraceWriter(out, h)
        for t, s, f, op, off, length in spool:
            if NARGS.get(op) == 1:
                w.record(t, s, f, op, size=off)
            else:
                w.record(t, s, f, op, off, length)
        w.end()
        out.commit()
    except TraceError as e:
        raise Error(f"internal error, the trace written would not parse: {e}")
    finally:
        out.abort()
    return spool.n


class Notes:
    def __init__(self, quiet: bool):
        self.quiet = quiet

    def __call__(self, msg: str):
        if not self.quiet:
            print(f"{PROG}: note: {msg}", file=sys.stderr)


def _counts(d: Dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in d.items() if v)
