"""NAME
    fio-pack trace - import fio iologs and blkparse output as dbtrace traces, export
    traces as fio iologs, check traces

SYNOPSIS
    fio-pack trace import-iolog    IOLOG... [-o OUT.trace[.gz]] [--streams log|file]
                               [--iolog-unit us|ms|ns] [--pagesize BYTES]
                               [--source TEXT] [--quiet]
    fio-pack trace import-blkparse IN [-o OUT.trace[.gz]] [--event Q|D|C]
                               [--streams pid|single] [--pagesize BYTES]
                               [--source TEXT] [--quiet]
    fio-pack trace export-iolog    TRACE -o OUT.iolog [--prefix DIR] [--stream ID]...
                               [--iolog-unit us|ms|ns]
                               [--sync-file-range drop|datasync] [--quiet]
    fio-pack trace check           TRACE...
    fio-pack trace help [COMMAND]

DESCRIPTION
    Converts between the dbtrace trace format of the page-replay engine
    (docs/dbtrace-format.md; the C parser and writer are engines/lib/dbtrace.h)
    and what other tools capture or replay:

      import-iolog     fio iologs, versions 2 and 3 (fio --write_iolog)
      import-blkparse  blkparse's default text output (blktrace | blkparse)
      export-iolog     a trace as a fio iolog (version 3; version 2 for an
                       order-only trace), for fio --read_iolog
      check            read traces with this tool's parser and print what
                       they hold (the same checks as the C parser)

    Traces are written and read exactly as docs/dbtrace-format.md says. Every
    line written is first run through the reader's own checks, so the tool
    cannot write a trace the parser refuses. A trace output whose name ends in
    .gz is gzip-compressed; trace input is decompressed when it starts with the
    gzip magic bytes, whatever its name ("-" reads standard input).

    Output files are written to a temporary file beside them and renamed into
    place when complete: on any error no output file is left behind (nor a
    partial one over an existing file). Without -o an import writes the trace
    to standard output, after the whole input has been read and checked.

    Notes about what a conversion dropped or changed go to standard error, one
    line each, starting with "fio-pack trace: note:" (--quiet: none).

COMMANDS
    Each command's --help (or fio-pack trace help COMMAND) is its manual page.

EXIT STATUS
    0 success; 2 bad input (a malformed line, named as "FILE line N: reason"),
    a bad option, or a file that cannot be read or written.
"""
import argparse
import os
import re
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional

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


class Error(Exception):
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
    """An output file written to a temporary file beside it and renamed into
    place by commit(); gzip-compressed when the name ends in .gz. "-" or None:
    standard output (the caller writes only after checking everything)."""

    def __init__(self, path: Optional[str], gz_by_name=True):
        self.path = path
        self.tmp = None
        if path in (None, "-"):
            self.raw = sys.stdout.buffer
            self.f = self.raw
            return
        d = os.path.dirname(os.path.abspath(path))
        try:
            fd, self.tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=d)
        except OSError as e:
            raise Error(f"cannot write {path}: {e.strerror}")
        self.raw = os.fdopen(fd, "wb")
        self.f = self.raw
        if gz_by_name and path.endswith(".gz"):
            import gzip
            self.f = gzip.GzipFile(filename="", mode="wb", fileobj=self.raw, mtime=0)

    def write(self, text: str):
        try:
            self.f.write(text.encode(ENC))
        except OSError as e:
            raise Error(f"cannot write {self.path}: {e.strerror}")

    def commit(self):
        try:
            if self.f is not self.raw:
                self.f.close()
            self.raw.flush()
            if self.tmp:
                os.fsync(self.raw.fileno())
                self.raw.close()
                os.chmod(self.tmp, 0o666 & ~_umask())
                os.replace(self.tmp, self.path)
                self.tmp = None
        except OSError as e:
            raise Error(f"cannot write {self.path}: {e.strerror}")

    def abort(self):
        if self.tmp:
            try:
                self.raw.close()
            except OSError:
                pass
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


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


# ---------------------------------------------------------------------------
# import-iolog
# ---------------------------------------------------------------------------

HELP = {}

HELP["import-iolog"] = """\
NAME
    fio-pack trace import-iolog - fio iologs (versions 2 and 3) as a dbtrace trace

SYNOPSIS
    fio-pack trace import-iolog IOLOG... [-o OUT.trace[.gz]] [--streams log|file]
                            [--iolog-unit us|ms|ns] [--pagesize BYTES]
                            [--source TEXT] [--quiet]

DESCRIPTION
    Reads fio iologs (fio --write_iolog=FILE; the grammar of fio 3.33's
    iolog.c read_iolog()) and writes one trace. The version is the first line:
    "fio version 2 iolog" or "fio version 3 iolog". Several IOLOGs (as fio's
    read_iolog=a:b gives several jobs) make one trace with a stream each; they
    must all be version 2 or all version 3.

    Version 2 lines:  FILE add|open|close
                      FILE read|write|trim|sync|datasync|wait OFFSET LENGTH
    Version 3 lines:  TIME FILE add|open|close
                      TIME FILE read|write|trim|sync|datasync OFFSET LENGTH
    Fields are separated by blanks; numbers are plain decimal; LENGTH fits 32
    bits (fio reads it with %u). Blank lines are skipped. Anything else is an
    error ("fio-pack trace: IOLOG line N: reason", exit status 2, no output).

MAPPING
    Files      each file name becomes a file declaration, ids in order of first
               appearance: role data; path its basename (relative, no '..': a
               basename of '', '.' or '..' becomes "file"; two names with the
               same basename get ".2", ".3", ... appended); SIZE and MAXSIZE
               both the highest OFFSET + LENGTH any read, write or trim of it
               reaches (fio's add/open carry no size). The file exists before
               the first record (fio replays on existing files).
    Streams    --streams log (default): one stream per IOLOG, named after its
               basename: fio replays an iolog as one ordered sequence, so its
               order is kept whole. --streams file: one stream per file name,
               named after its path (each file's operations in order, files
               independent); with several IOLOGs, one per IOLOG and file name,
               named LOG:PATH.
    Operations read, write, trim -> read, write, trim (OFFSET LENGTH);
               sync -> fsync, datasync -> fdatasync (fio writes an OFFSET and
               LENGTH 0 on them: ignored); sync_file_range OFFSET LENGTH
               (fio --write_iolog writes it, fio's replay refuses it) ->
               sync_file_range. A read or write of 0 bytes or over 64 MiB is
               an error (no trace equivalent).
    Dropped    add, open, close (the declarations say which files exist; the
               replay engine opens files itself) and version 2's wait (an
               order-only trace has no time): counted in a note on stderr.
    Time       version 3: TIME is copied as is, in --iolog-unit (default us:
               fio 3.33 writes microseconds since the job started,
               utime_since_now(), and its replay sleeps that many
               microseconds); the trace's timeunit is that unit. A TIME going
               back within a stream is an error. Version 2 has no times: the
               trace is order-only (timeunit none).
    Header     pagesize --pagesize (default 4096: it only decides which
               offsets are written as pN); source "fio iolog vN IOLOG...
               imported by fio-pack trace import-iolog", or --source TEXT.

OPTIONS
    -o, --output FILE   the trace (.gz: compressed); default standard output
    --streams log|file  see Streams above
    --iolog-unit U      unit of version 3 times: us (default), ms, ns
    --pagesize BYTES    power of two from 512 to 1048576 (default 4096)
    --source TEXT       the trace's source line
    --quiet             no notes on stderr

EXAMPLE
    fio --name=x --filename=/tmp/db --size=64m --rw=randrw --write_iolog=x.iolog
    fio-pack trace import-iolog x.iolog -o x.trace.gz
"""


class InputError(Error):
    pass


def _in_fail(name, line, msg):
    raise InputError(f"{name} line {line}: {msg}")


def _u64(name, line, s, what, bits=63):
    if not re.fullmatch(r"[0-9]+", s):
        _in_fail(name, line, f"bad {what} '{s[:40]}' (a plain decimal number)")
    v = int(s)
    if v >= 1 << bits:
        _in_fail(name, line, f"{what} {s[:40]} is beyond 2^{bits}-1")
    return v


IOLOG_IO = ("read", "write", "trim", "sync", "datasync", "sync_file_range", "wait")
IOLOG_FILE = ("add", "open", "close")


def cmd_import_iolog(a) -> int:
    notes = Notes(a.quiet)
    if not a.inputs:
        raise Error("import-iolog: no IOLOG given (see fio-pack trace import-iolog --help)")
    pagesize = _pagesize(a.pagesize)
    unit = a.iolog_unit
    files: Dict[str, FileDecl] = {}          # iolog file name -> declaration
    paths: set = set()
    streams: Dict[str, StreamDecl] = {}      # stream key -> declaration
    snames: set = set()
    lognames: set = set()
    seen: set = set()
    last_time: Dict[int, tuple] = {}         # stream id -> (time, line)
    dropped = {"add": 0, "open": 0, "close": 0, "wait": 0}
    version = None
    spool = Spool()
    try:
        for path in a.inputs:
            name = "<stdin>" if path == "-" else path
            f = open_input(path)
            try:
                lines = text_lines(decoded_chunks(f), 1 << 20)
                first = next(lines, (None, None))
                if first[1] is not None:
                    _in_fail(name, 1, first[1])
                head = (first[0] or "").rstrip("\r").rstrip(" \t")
                if head == "fio version 2 iolog":
                    v = 2
                elif head == "fio version 3 iolog":
                    v = 3
                elif first[0] is None:
                    _in_fail(name, 1, "empty file: not a fio iolog")
                else:
                    _in_fail(name, 1, "not a fio version 2 or 3 iolog (the first line must be "
                                      "'fio version 2 iolog' or 'fio version 3 iolog')")
                if version is None:
                    version = v
                elif v != version:
                    _in_fail(name, 1, f"a version {v} iolog after version {version} ones: the "
                                      "trace is timed or order-only, not both")
                if name in seen:
                    raise Error(f"{name} given twice")
                seen.add(name)
                logbase = unique(safe_name(os.path.basename(name.rstrip("/")) or "iolog", 200),
                                 lognames)
                if a.streams == "log":
                    per = "log"
                    streams["log:" + name] = StreamDecl(len(streams), unique(logbase, snames))
                else:
                    per = "file" if len(a.inputs) == 1 else "file:" + logbase
                lineno = 1
                for line, err in lines:
                    lineno += 1
                    if err is not None:
                        _in_fail(name, lineno, err)
                    _iolog_line(name, lineno, line.rstrip("\r"), v, unit, per, files,
                                paths, streams, snames, last_time, dropped, spool)
            finally:
                if f is not sys.stdin.buffer:
                    f.close()
        if len(files) > MAX_FILES:
            raise Error(f"more than {MAX_FILES} files: a trace holds at most {MAX_FILES}")
        if len(streams) > MAX_STREAMS:
            raise Error(f"more than {MAX_STREAMS} streams: use --streams log")
        h = Header(pagesize=pagesize, timeunit=unit if version == 3 else "none",
                   source=source_text(a.source, f"fio iolog v{version} {' '.join(a.inputs)} "
                                      f"imported by {PROG} import-iolog (streams per {a.streams})"),
                   files=list(files.values()), streams=list(streams.values()))
        n = write_trace(a.output, h, spool)
    finally:
        spool.close()
    if any(dropped.values()):
        notes(f"dropped {_counts(dropped)} action(s): no trace equivalent")
    notes(f"{n} records, {len(files)} file(s), {len(streams)} stream(s)"
          + (", order-only (version 2 iolog)" if version == 2 else f", times in {unit}"))
    return 0


def _iolog_line(name, lineno, line, v, unit, per, files, paths, streams, snames, last_time,
                dropped, spool):
    tok = _blank_split(line.strip(" \t"))
    if not tok:
        return
    for c in line:
        if (c < " " and c != "\t") or c == "\x7f":
            _in_fail(name, lineno, f"control character 0x{ord(c):02x} in the line")
    time = None
    if v == 3:
        if not re.fullmatch(r"[0-9]+", tok[0]):
            if tok[0].startswith("fio"):
                _in_fail(name, lineno, "a second iolog header: several runs appended to one "
                                       "log? (split it)")
            _in_fail(name, lineno, f"bad time '{tok[0][:40]}' (version 3 lines start with a "
                                   "time: TIME FILE ACTION [OFFSET LENGTH])")
        time = _u64(name, lineno, tok[0], "time")
        tok = tok[1:]
    if len(tok) < 2:
        _in_fail(name, lineno, "expected FILE ACTION [OFFSET LENGTH]")
    if tok[0] == "fio" and tok[1] == "version":
        _in_fail(name, lineno, "a second iolog header: several runs appended to one log? "
                               "(split it)")
    fname, act = tok[0], tok[1]
    if len(fname) > 256:
        _in_fail(name, lineno, "file name longer than 256 bytes (fio reads at most 256)")
    if act in IOLOG_FILE:
        if len(tok) != 2:
            _in_fail(name, lineno, f"'{act}' takes no OFFSET LENGTH"
                                   + (" (expected TIME FILE ACTION)" if v == 3 else ""))
    elif act in IOLOG_IO:
        if len(tok) != 4:
            _in_fail(name, lineno, f"'{act}' needs OFFSET and LENGTH (fio's grammar: "
                                   f"{'TIME ' if v == 3 else ''}FILE {act} OFFSET LENGTH)")
        if act == "wait" and v == 3:
            _in_fail(name, lineno, "'wait' is not allowed in a version 3 iolog")
    else:
        _in_fail(name, lineno, f"unknown action '{act[:40]}' (add, open, close, read, write, "
                               "trim, sync, datasync" + (", wait)" if v == 2 else ")"))
    # the file
    f = files.get(fname)
    if f is None:
        base = fname.rstrip("/").rsplit("/", 1)[-1]
        if base in ("", ".", ".."):
            base = "file"
        f = FileDecl(len(files), "data", 0, 0, unique(safe_name(base, MAX_PATH), paths, MAX_PATH))
        files[fname] = f
    if per != "log":
        # per file; with several logs, per log and file ("LOG:PATH")
        key = per + "\0" + fname
        if key not in streams:
            sname = f.path if per == "file" else per[5:] + ":" + f.path
            streams[key] = StreamDecl(len(streams), unique(safe_name(sname), snames))
        sid = streams[key].id
    else:
        sid = len(streams) - 1
    if act in IOLOG_FILE:
        dropped[act] += 1
        return
    off = _u64(name, lineno, tok[2], "offset")
    length = _u64(name, lineno, tok[3], "length", 32)
    if act == "wait":
        dropped["wait"] += 1
        return
    if time is not None:
        prev = last_time.get(sid)
        if prev and time < prev[0]:
            _in_fail(name, lineno, f"time {time} goes back from {prev[0]} (line {prev[1]})"
                     + (f" in the operations on {fname[:60]}" if per != "log" else ""))
        last_time[sid] = (time, lineno)
    if act in ("sync", "datasync"):
        spool.add(time, sid, f.id, "fsync" if act == "sync" else "fdatasync")
        return
    if length == 0 and act != "sync_file_range":
        _in_fail(name, lineno, f"{act} of 0 bytes (no trace equivalent)")
    if act in ("read", "write") and length > MAX_IO:
        _in_fail(name, lineno, f"{act} of {length} bytes, over the trace format's limit of "
                               f"{MAX_IO} (64 MiB)")
    end = off + length
    if end > MAX_OFFSET:
        _in_fail(name, lineno, f"offset {off} + length {length} is beyond 2^63-1")
    if end > f.max_size:
        f.max_size = f.size = end
    spool.add(time, sid, f.id, act, off, length)


def _pagesize(v) -> int:
    if v < MIN_PAGE or v > MAX_PAGE or v & (v - 1):
        raise Error(f"--pagesize {v}: a power of two from {MIN_PAGE} to {MAX_PAGE}")
    return v


# ---------------------------------------------------------------------------
# import-blkparse
# ---------------------------------------------------------------------------

HELP["import-blkparse"] = """\
NAME
    fio-pack trace import-blkparse - blkparse text output as a dbtrace trace

SYNOPSIS
    fio-pack trace import-blkparse IN [-o OUT.trace[.gz]] [--event Q|D|C]
                               [--streams pid|single] [--pagesize BYTES]
                               [--source TEXT] [--quiet]

DESCRIPTION
    Reads the default text output of blkparse ("blkparse -i TRACE", or
    "blktrace -d DEV -o - | blkparse -i -"; "-" reads standard input), whose
    event lines are

      MAJ,MIN CPU SEQ SECONDS.NANOSECONDS PID ACTION RWBS DETAILS

    for example
      8,0    3        1     0.000000000  4162  Q  WS 3437824 + 8 [jbd2/sda1-8]
      8,0    1        3     0.000230212     0  C  WS 3437824 + 8 [0]
      7,0    1        0     0.004172842    78  D  FN [kworker/1:1H]

    and writes one trace of the events of one ACTION (--event): Q, queued by a
    process; D (default), issued to the device driver; C, completed. The
    per-CPU and total statistics blkparse prints at the end are skipped; any
    other line that is not an event line is an error ("fio-pack trace: IN line N:
    reason", exit status 2, no output). Custom formats (blkparse -f/-F) are
    not read.

MAPPING
    Files      one file per device, path "dev-MAJ-MIN", role data, SIZE and
               MAXSIZE the highest end (sector + sectors) x 512 of any event
               kept.
    RWBS       [F]X[F][A][S][M]: a leading F is a cache flush before the
               request (preflush); X is R read, W write, D discard, N no data;
               a trailing F is FUA; A, S, M (readahead, sync, meta) are not
               kept. The leading F becomes an fsync of the device (before the
               request's data operation, if it has data); R, W with sectors
               become read, write of sector x 512 + sectors x 512 bytes; D
               with sectors becomes trim. FUA has no trace equivalent: the
               write is kept, the flag is counted in a note. Events without
               sectors and without a flush (N, or a W completing a flush
               sequence) are skipped, counted in a note.
    Streams    --streams pid (default): one stream per process, the one that
               queued the request: D and C events run in the dispatching or
               completing context (a kworker, an interrupt), so they are given
               to the pid of the latest Q event at the same device and sector
               (for a flush without a sector: the latest Q with a flush or
               FUA on that device), else their own pid. Streams are named
               COMM-PID after the [COMM] of the process's first Q event
               ("pid-PID" if blkparse knows no name). --streams single: one
               stream, "device".
    Time       the SECONDS.NANOSECONDS column, as nanoseconds (timeunit ns).
               Within a stream times must not go back (blkparse sorts its
               output by time; an error otherwise).
    Header     pagesize --pagesize (default 4096); source "blkparse output IN
               (event D) imported by fio-pack trace import-blkparse", or --source.

OPTIONS
    -o, --output FILE     the trace (.gz: compressed); default standard output
    --event Q|D|C         which events become records (default D)
    --streams pid|single  see Streams above
    --pagesize BYTES      power of two from 512 to 1048576 (default 4096)
    --source TEXT         the trace's source line
    --quiet               no notes on stderr

EXAMPLE
    blktrace -d /dev/sdb -w 30 -o - | blkparse -i - > sdb.txt
    fio-pack trace import-blkparse sdb.txt --event D -o sdb.trace.gz
"""

_EVENT = re.compile(r"[ \t]*(\d+),(\d+)[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+)\.(\d+)[ \t]+(\d+)"
                    r"[ \t]+(\S+)[ \t]+(\S+)(?:[ \t]+(.*))?$")
_LOOKS_LIKE_EVENT = re.compile(r"[ \t]*\d+,\d+[ \t]")
_SUMMARY = re.compile(r"(CPU\d+|Total) \(")
_RWBS = re.compile(r"(F?)([DWRN])([A-Z]*)$")
# DETAILS: an optional "(pdu)" or "(elapsed)", then "SECTOR + N" or "SECTOR" or nothing
_SECTORS = re.compile(r"(?:\([^)]*\)[ \t]*)*(\d+)[ \t]+\+[ \t]+(\d+)(?:[ \t]|$)")
_SECTOR_ONLY = re.compile(r"(?:\([^)]*\)[ \t]*)*(\d+)[ \t]*(?:[\[(]|$)")
_COMM = re.compile(r".*?\[(.*)\]")


def cmd_import_blkparse(a) -> int:
    notes = Notes(a.quiet)
    pagesize = _pagesize(a.pagesize)
    name = "<stdin>" if a.input == "-" else a.input
    files: Dict[str, FileDecl] = {}           # "maj,min" -> declaration
    streams: Dict[int, StreamDecl] = {}       # pid (or -1) -> declaration
    comm: Dict[int, str] = {}
    snames: set = set()
    q_pid: Dict[tuple, int] = {}               # (dev, sector) -> pid of the latest Q
    flush_pid: Dict[str, int] = {}             # dev -> pid of the latest Q with a flush/FUA
    last_time: Dict[int, tuple] = {}
    skipped = {"skipped (no data)": 0, "FUA flags dropped": 0, "failed (error != 0), kept": 0}
    kept = 0
    spool = Spool()
    f = open_input(a.input)
    try:
        lineno = 0
        summary = False
        for line, err in text_lines(decoded_chunks(f), 1 << 20):
            lineno += 1
            if err is not None:
                _in_fail(name, lineno, err)
            line = line.rstrip("\r")
            if summary or not line.strip(" \t"):
                continue
            m = _EVENT.match(line)
            if not m:
                if _SUMMARY.match(line):
                    summary = True
                    continue
                if _LOOKS_LIKE_EVENT.match(line):
                    _in_fail(name, lineno, "malformed event line (expected MAJ,MIN CPU SEQ "
                                           "SECONDS.NANOSECONDS PID ACTION RWBS ...)")
                if line.startswith("Input file ") and line.endswith(" added"):
                    continue
                _in_fail(name, lineno, "not a blkparse event line (blkparse's default output "
                                       "format: MAJ,MIN CPU SEQ SECONDS.NANOSECONDS PID "
                                       "ACTION RWBS ...)")
            maj, mnr, _cpu, _seq, sec, nsec, pid, act, rwbs, rest = m.groups()
            rest = rest or ""
            if len(nsec) != 9:
                _in_fail(name, lineno, f"bad time '{sec}.{nsec}' (SECONDS.NANOSECONDS, 9 digits)")
            if act not in ("Q", a.event):
                continue
            r = _RWBS.match(rwbs)
            if not r:
                if act == "Q" and a.event != "Q":
                    continue        # only the pid is wanted from Q events
                _in_fail(name, lineno, f"unknown RWBS field '{rwbs[:20]}' "
                                       "(expected [F]R|W|D|N[F][A][S][M])")
            preflush, kind, flags = r.group(1) == "F", r.group(2), r.group(3)
            fua = flags.startswith("F")
            sm = _SECTORS.match(rest)
            if sm:
                sector, nsect = int(sm.group(1)), int(sm.group(2))
            else:
                sector, nsect = None, 0
                s1 = _SECTOR_ONLY.match(rest)
                if s1:
                    sector = int(s1.group(1))
                elif not rest.lstrip(" \t").startswith(("[", "(")) and act in "QDC":
                    _in_fail(name, lineno, f"cannot read the sectors of '{rest[:40]}' "
                                           "(SECTOR + COUNT [...])")
            dev = f"{maj},{mnr}"
            pidn = int(pid)
            if act == "Q":
                if sector is not None:
                    q_pid[(dev, sector)] = pidn
                if preflush or fua:
                    flush_pid[dev] = pidn
                cm = _COMM.match(rest)
                if cm and pidn not in comm:
                    comm[pidn] = cm.group(1)
                if a.event != "Q":
                    continue
            # a kept event
            if act == "C":
                em = re.search(r"\[(-?\d+)\][ \t]*$", rest)
                if em and int(em.group(1)) != 0:
                    skipped["failed (error != 0), kept"] += 1
            owner = pidn
            if a.event != "Q":
                if nsect and (dev, sector) in q_pid:
                    owner = q_pid[(dev, sector)]
                    if act == "C":
                        del q_pid[(dev, sector)]
                elif not nsect and preflush and dev in flush_pid:
                    owner = flush_pid[dev]
            if a.streams == "single":
                owner = -1
            ops = []
            if preflush:
                ops.append(("fsync", 0, 0))
            if nsect and kind in "RWD":
                ops.append(({"R": "read", "W": "write", "D": "trim"}[kind],
                            sector * 512, nsect * 512))
            if fua and kind == "W":
                skipped["FUA flags dropped"] += 1
            if not ops:
                skipped["skipped (no data)"] += 1
                continue
            time = int(sec) * 1000000000 + int(nsec)
            if time > MAX_OFFSET:
                _in_fail(name, lineno, f"time {sec}.{nsec} is beyond 2^63-1 ns")
            fd = files.get(dev)
            if fd is None:
                fd = files[dev] = FileDecl(len(files), "data", 0, 0, f"dev-{maj}-{mnr}")
            st = streams.get(owner)
            if st is None:
                if owner == -1:
                    sname = "device"
                else:
                    c = comm.get(owner, "")
                    sname = f"{safe_name(c, 200)}-{owner}" if c and c != "(null)" \
                        else f"pid-{owner}"
                st = streams[owner] = StreamDecl(len(streams), unique(sname, snames))
                if len(streams) > MAX_STREAMS:
                    _in_fail(name, lineno, f"more than {MAX_STREAMS} processes: use "
                                           "--streams single")
            prev = last_time.get(st.id)
            if prev and time < prev[0]:
                _in_fail(name, lineno, f"time {sec}.{nsec} goes back from the stream's "
                                       f"event on line {prev[1]} (blkparse output is sorted "
                                       "by time)")
            last_time[st.id] = (time, lineno)
            for op, off, length in ops:
                if op in ("read", "write") and length > MAX_IO:
                    _in_fail(name, lineno, f"{op} of {length} bytes, over the trace format's "
                                           f"limit of {MAX_IO}")
                if off + length > MAX_OFFSET:
                    _in_fail(name, lineno, "sector range beyond 2^63-1 bytes")
                if off + length > fd.max_size:
                    fd.max_size = fd.size = off + length
                spool.add(time, st.id, fd.id, op, off, length)
                kept += 1
        if len(files) > MAX_FILES:
            raise Error(f"{name}: more than {MAX_FILES} devices")
        h = Header(pagesize=pagesize, timeunit="ns",
                   source=source_text(a.source, f"blkparse output {name} (event {a.event}, "
                                      f"streams per {a.streams}) imported by {PROG} "
                                      "import-blkparse"),
                   files=list(files.values()), streams=list(streams.values()))
        n = write_trace(a.output, h, spool)
    finally:
        spool.close()
        if f is not sys.stdin.buffer:
            f.close()
    if any(skipped.values()):
        notes(f"{a.event} events: {_counts(skipped)}")
    notes(f"{n} records, {len(files)} device(s), {len(streams)} stream(s)")
    return 0


# ---------------------------------------------------------------------------
# export-iolog
# ---------------------------------------------------------------------------

HELP["export-iolog"] = """\
NAME
    fio-pack trace export-iolog - a dbtrace trace as a fio iolog

SYNOPSIS
    fio-pack trace export-iolog TRACE -o OUT.iolog [--prefix DIR] [--stream ID]...
                            [--iolog-unit us|ms|ns]
                            [--sync-file-range drop|datasync] [--quiet]

DESCRIPTION
    Writes the trace's records as an iolog fio replays with
    fio --read_iolog=OUT.iolog: version 3 ("fio version 3 iolog", a time on
    every line) for a timed trace, version 2 for an order-only one. The trace
    is read with the same checks as the C parser; an invalid trace is an
    error ("fio-pack trace: TRACE line N: reason", exit status 2, no output).

MAPPING
    Records    all streams, in the order of the trace's lines (an iolog is one
               sequence; --stream ID, repeatable, keeps only those streams,
               e.g. one iolog per stream for fio's read_iolog=a:b).
    Files      fio file name: the trace's PATH, or DIR/PATH with --prefix DIR
               (relative names are relative to fio's working directory, or to
               its directory= option). Before a file's first operation the log
               says "add" and "open"; at the end, "close" for each. fio does
               not create or size the files: they must exist with the trace's
               SIZE (a missing file is created empty by fio and the job ends
               early). A name over 256 bytes is an error (fio reads 256).
    Operations read, write, trim -> read, write, trim (a trim longer than
               2 GiB is split in 2 GiB pieces: fio's LENGTH is 32-bit); fsync -> sync;
               fdatasync -> datasync (fio's replay issues them as fsync,
               fdatasync: both with OFFSET and LENGTH 0).
    Dropped    (counted in a note on stderr) create, unlink, truncate, the
               fsync of a directory (fio's iolog has no such actions), and
               sync_file_range: fio's replay does not take its own
               "sync_file_range" action, and datasync would add a cache flush
               the original never did; --sync-file-range datasync maps it to
               datasync instead.
    Time       version 3 times are the trace's times minus the first record's
               time, converted to --iolog-unit (default us: fio 3.33's replay
               waits TIME differences in microseconds) and rounded down. A time
               below the previous line's (records of different streams
               interleave) is raised to it, counted in a note.

OPTIONS
    -o, --output FILE              the iolog (required)
    --prefix DIR                   directory put before each path
    --stream ID                    export only stream ID (repeatable)
    --iolog-unit us|ms|ns          unit of version 3 times (default us)
    --sync-file-range drop|datasync  (default drop)
    --quiet                        no notes on stderr

EXAMPLE
    fio-pack trace export-iolog pgbench.trace.gz --prefix /mnt/ssd/pg -o pgbench.iolog
    fio --name=replay --read_iolog=pgbench.iolog --ioengine=psync
"""


def cmd_export_iolog(a) -> int:
    notes = Notes(a.quiet)
    if not a.output:
        raise Error("export-iolog: -o OUT.iolog is required (see fio-pack trace export-iolog --help)")
    unit_ns = UNIT_NS[a.iolog_unit]
    gen = read_trace(a.input)
    p = next(gen)
    out = Output(a.output, gz_by_name=False)
    dropped = {"create": 0, "unlink": 0, "truncate": 0, "directory fsync": 0,
               "sync_file_range": 0, "records of other streams": 0}
    done = {"read": 0, "write": 0, "trim": 0, "sync": 0, "datasync": 0}
    raised = 0
    opened: Dict[int, str] = {}
    want = set(a.stream or [])
    v = None
    t0 = None
    last = 0
    try:
        for rec in gen:
            if v is None:
                v = 2 if p.h.timeunit == "none" else 3
                tu = UNIT_NS[p.h.timeunit]
                out.write(f"fio version {v} iolog\n")
                for sid in want:
                    if sid not in p.streams:
                        raise Error(f"--stream {sid}: {p.name} has no stream {sid}")
            if want and rec.stream not in want:
                dropped["records of other streams"] += 1
                continue
            f = p.files[rec.file]
            op = rec.op
            if op == "fsync" and f.role == "directory":
                dropped["directory fsync"] += 1
                continue
            if op == "sync_file_range":
                if a.sync_file_range == "drop":
                    dropped["sync_file_range"] += 1
                    continue
                op = "fdatasync"
            if op in ("create", "unlink", "truncate"):
                dropped[op] += 1
                continue
            ts = ""
            if v == 3:
                if t0 is None:
                    t0 = rec.time
                t = (rec.time - t0) * tu // unit_ns if rec.time >= t0 else 0
                if t < last:
                    raised += 1
                    t = last
                last = t
                ts = f"{t} "
            fname = opened.get(rec.file)
            if fname is None:
                fname = f"{a.prefix.rstrip('/')}/{f.path}" if a.prefix else f.path
                if len(fname) > 256:
                    raise Error(f"{p.name} line {rec.line}: file name '{fname[:60]}...' is longer "
                                "than the 256 bytes fio reads")
                if any(c <= " " for c in fname):
                    raise Error(f"--prefix {a.prefix!r}: fio's iolog names cannot hold blanks")
                opened[rec.file] = fname
                out.write(f"{ts}{fname} add\n{ts}{fname} open\n")
            if op in ("read", "write"):
                out.write(f"{ts}{fname} {op} {rec.off} {rec.len}\n")
                done[op] += 1
            elif op == "trim":
                off, left = rec.off, rec.len
                while left:
                    n = min(left, 1 << 31)
                    out.write(f"{ts}{fname} trim {off} {n}\n")
                    off += n
                    left -= n
                    done["trim"] += 1
            else:
                act = "sync" if op == "fsync" else "datasync"
                out.write(f"{ts}{fname} {act} 0 0\n")
                done[act] += 1
        if v is None:           # no record at all: still a valid, empty log
            v = 2 if p.h.timeunit == "none" else 3
            out.write(f"fio version {v} iolog\n")
        ts = f"{last} " if v == 3 else ""
        for fname in opened.values():
            out.write(f"{ts}{fname} close\n")
        out.commit()
    except TraceError as e:
        raise Error(str(e))
    finally:
        out.abort()
    lat = p.nlat
    for text in p.h.incomplete:
        # an iolog has no place for it: said whatever --quiet says
        print(f"{PROG}: warning: {p.name} is incomplete, and so is the iolog: {text}",
              file=sys.stderr)
    if any(dropped.values()):
        notes(f"dropped {_counts(dropped)} (no fio iolog equivalent)")
    direct = [f.path for f in p.h.files if f.direct]
    if direct:
        # an iolog has no per-file O_DIRECT: said whatever --quiet says
        print(f"{PROG}: warning: {len(direct)} file(s) of {p.name} were opened with O_DIRECT "
              f"({', '.join(direct[:3])}{', ...' if len(direct) > 3 else ''}); fio's iolog "
              "cannot say so: replay it with direct=1 to match", file=sys.stderr)
    if lat:
        notes(f"{lat} completion time(s) dropped (fio's iolog has none: its replay's depth is "
              "its iodepth, not the trace's)")
    if raised:
        notes(f"{raised} time(s) raised to the previous line's (streams interleaved out of "
              "time order)")
    notes(f"iolog version {v}: {_counts(done) or 'no operations'}; {len(opened)} file(s)")
    return 0


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------

HELP["check"] = """\
NAME
    fio-pack trace check - read traces and say what they hold

SYNOPSIS
    fio-pack trace check TRACE...

DESCRIPTION
    Reads each TRACE (plain or gzip; "-" standard input) with this tool's
    reader, which makes every check docs/dbtrace-format.md lists (the same as
    the C parser, engines/lib/dbtrace.c), and prints one line per trace:

      TRACE: N records, F files, S streams, timeunit U, pagesize P, ops read=R write=W ...

    A trace whose capture could not see some of the I/O (its header's
    "incomplete" lines, written by fio-pack capture) gets one more line for each,
    after its summary:

      TRACE: incomplete: TEXT

    The first invalid trace stops the command: "fio-pack trace: TRACE line N:
    reason", exit status 2.

EXIT STATUS
    0 every trace is valid and complete; 3 every trace is valid, and at least
    one is incomplete; 2 an invalid trace or a bad option.
"""


def cmd_check(a) -> int:
    if not a.inputs:
        raise Error("check: no TRACE given (see fio-pack trace check --help)")
    incomplete = False
    for path in a.inputs:
        gen = read_trace(path)
        p = next(gen)
        ops: Dict[str, int] = {}
        for rec in gen:
            ops[rec.op] = ops.get(rec.op, 0) + 1
        print(f"{p.name}: {p.nrec} records, {len(p.h.files)} files, {len(p.h.streams)} streams, "
              f"timeunit {p.h.timeunit}, pagesize {p.h.pagesize}, ops "
              + " ".join(f"{k}={v}" for k, v in sorted(ops.items())))
        for text in p.h.incomplete:
            print(f"{p.name}: incomplete: {text}")
        incomplete = incomplete or bool(p.h.incomplete)
    return 3 if incomplete else 0


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Error(f"{self.prog}: {message} (see {PROG} {self.prog.split()[-1]} --help)")


def parser(cmd: str) -> argparse.ArgumentParser:
    ap = _Parser(prog=f"{PROG} {cmd}", add_help=False, usage=argparse.SUPPRESS)
    if cmd in ("import-iolog", "check"):
        ap.add_argument("inputs", nargs="*")
    else:
        ap.add_argument("input")
    if cmd == "check":
        return ap
    ap.add_argument("-o", "--output")
    ap.add_argument("--quiet", action="store_true")
    if cmd.startswith("import"):
        ap.add_argument("--pagesize", type=int, default=4096)
        ap.add_argument("--source")
    if cmd == "import-iolog":
        ap.add_argument("--streams", choices=("log", "file"), default="log")
    if cmd in ("import-iolog", "export-iolog"):
        ap.add_argument("--iolog-unit", choices=("us", "ms", "ns"), default="us")
    if cmd == "import-blkparse":
        ap.add_argument("--event", choices=("Q", "D", "C"), default="D")
        ap.add_argument("--streams", choices=("pid", "single"), default="pid")
    if cmd == "export-iolog":
        ap.add_argument("--prefix")
        ap.add_argument("--stream", type=int, action="append")
        ap.add_argument("--sync-file-range", choices=("drop", "datasync"), default="drop")
    return ap


COMMANDS = {"import-iolog": cmd_import_iolog, "import-blkparse": cmd_import_blkparse,
            "export-iolog": cmd_export_iolog, "check": cmd_check}


def pick_command(argv, doc, prog, commands):
    """The command of a `PROG COMMAND [OPTIONS]` tool (this one and
    fio-pack capture): (command, its arguments), or the exit status once the
    usage is printed (no command: on stderr, status 2; -h, --help, `help`:
    on stdout, 0; `help COMMAND` is `COMMAND --help`) or an unknown command
    is said (2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(doc.strip(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "help":
        if not rest:
            print(doc.strip())
            return 0
        cmd, rest = rest[0], ["--help"]
    if cmd not in commands:
        print(f"{prog}: unknown command {cmd!r}; commands: {', '.join(commands)} "
              f"(see {prog} --help)", file=sys.stderr)
        return 2
    return cmd, rest


def main(argv=None) -> int:
    got = pick_command(argv, __doc__, PROG, COMMANDS)
    if isinstance(got, int):
        return got
    cmd, rest = got
    if "-h" in rest or "--help" in rest:
        print(HELP[cmd].rstrip())
        return 0
    try:
        return COMMANDS[cmd](parser(cmd).parse_args(rest))
    except Error as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0

