"""fio's iologs (versions 2 and 3) and dbtrace traces, both ways:
`fio-pack trace import-iolog` and `fio-pack trace export-iolog`."""
import os
import re
import sys
from typing import Dict

from fiopack import outputs
from fiopack.trace.dbtrace import (Error, FileDecl, Header, MAX_FILES, MAX_IO, MAX_OFFSET,
                                   MAX_PAGE, MAX_PATH, MAX_STREAMS, MIN_PAGE, Notes, Output,
                                   PROG, Spool, StreamDecl, TraceError, UNIT_NS, _blank_split,
                                   _counts, decoded_chunks, open_input, read_trace, safe_name,
                                   source_text, text_lines, unique, write_trace)


# ---------------------------------------------------------------------------
# import-iolog
# ---------------------------------------------------------------------------

MANUAL = {}

MANUAL["import-iolog"] = dict(description="""\
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
""", epilog="""\
EXAMPLE
    fio --name=x --filename=/tmp/db --size=64m --rw=randrw --write_iolog=x.iolog
    fio-pack trace import-iolog x.iolog -o x.trace.gz
""")


class InputError(Error):
    pass


def in_fail(name, line, msg):
    raise InputError(f"{name} line {line}: {msg}")


def _u64(name, line, s, what, bits=63):
    if not re.fullmatch(r"[0-9]+", s):
        in_fail(name, line, f"bad {what} '{s[:40]}' (a plain decimal number)")
    v = int(s)
    if v >= 1 << bits:
        in_fail(name, line, f"{what} {s[:40]} is beyond 2^{bits}-1")
    return v


IOLOG_IO = ("read", "write", "trim", "sync", "datasync", "sync_file_range", "wait")
IOLOG_FILE = ("add", "open", "close")


def cmd_import_iolog(a) -> int:
    notes = Notes(a.quiet)
    if not a.inputs:
        raise Error("import-iolog: no IOLOG given (see fio-pack trace import-iolog --help)")
    pagesize = check_pagesize(a.pagesize)
    outputs.check(a.output, "-o", a.inputs)       # before the input is read
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
                    in_fail(name, 1, first[1])
                head = (first[0] or "").rstrip("\r").rstrip(" \t")
                if head == "fio version 2 iolog":
                    v = 2
                elif head == "fio version 3 iolog":
                    v = 3
                elif first[0] is None:
                    in_fail(name, 1, "empty file: not a fio iolog")
                else:
                    in_fail(name, 1, "not a fio version 2 or 3 iolog (the first line must be "
                                      "'fio version 2 iolog' or 'fio version 3 iolog')")
                if version is None:
                    version = v
                elif v != version:
                    in_fail(name, 1, f"a version {v} iolog after version {version} ones: the "
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
                        in_fail(name, lineno, err)
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


# long: one iolog line, field by field, each refusal with its own message
def _iolog_line(name, lineno, line, v, unit, per, files, paths, streams, snames, last_time,
                dropped, spool):
    tok = _blank_split(line.strip(" \t"))
    if not tok:
        return
    for c in line:
        if (c < " " and c != "\t") or c == "\x7f":
            in_fail(name, lineno, f"control character 0x{ord(c):02x} in the line")
    time = None
    if v == 3:
        if not re.fullmatch(r"[0-9]+", tok[0]):
            if tok[0].startswith("fio"):
                in_fail(name, lineno, "a second iolog header: several runs appended to one "
                                       "log? (split it)")
            in_fail(name, lineno, f"bad time '{tok[0][:40]}' (version 3 lines start with a "
                                   "time: TIME FILE ACTION [OFFSET LENGTH])")
        time = _u64(name, lineno, tok[0], "time")
        tok = tok[1:]
    if len(tok) < 2:
        in_fail(name, lineno, "expected FILE ACTION [OFFSET LENGTH]")
    if tok[0] == "fio" and tok[1] == "version":
        in_fail(name, lineno, "a second iolog header: several runs appended to one log? "
                               "(split it)")
    fname, act = tok[0], tok[1]
    if len(fname) > 256:
        in_fail(name, lineno, "file name longer than 256 bytes (fio reads at most 256)")
    if act in IOLOG_FILE:
        if len(tok) != 2:
            in_fail(name, lineno, f"'{act}' takes no OFFSET LENGTH"
                                   + (" (expected TIME FILE ACTION)" if v == 3 else ""))
    elif act in IOLOG_IO:
        if len(tok) != 4:
            in_fail(name, lineno, f"'{act}' needs OFFSET and LENGTH (fio's grammar: "
                                   f"{'TIME ' if v == 3 else ''}FILE {act} OFFSET LENGTH)")
        if act == "wait" and v == 3:
            in_fail(name, lineno, "'wait' is not allowed in a version 3 iolog")
    else:
        in_fail(name, lineno, f"unknown action '{act[:40]}' (add, open, close, read, write, "
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
            in_fail(name, lineno, f"time {time} goes back from {prev[0]} (line {prev[1]})"
                     + (f" in the operations on {fname[:60]}" if per != "log" else ""))
        last_time[sid] = (time, lineno)
    if act in ("sync", "datasync"):
        spool.add(time, sid, f.id, "fsync" if act == "sync" else "fdatasync")
        return
    if length == 0 and act != "sync_file_range":
        in_fail(name, lineno, f"{act} of 0 bytes (no trace equivalent)")
    if act in ("read", "write") and length > MAX_IO:
        in_fail(name, lineno, f"{act} of {length} bytes, over the trace format's limit of "
                               f"{MAX_IO} (64 MiB)")
    end = off + length
    if end > MAX_OFFSET:
        in_fail(name, lineno, f"offset {off} + length {length} is beyond 2^63-1")
    if end > f.max_size:
        f.max_size = f.size = end
    spool.add(time, sid, f.id, act, off, length)


def check_pagesize(v) -> int:
    if v < MIN_PAGE or v > MAX_PAGE or v & (v - 1):
        raise Error(f"--pagesize {v}: a power of two from {MIN_PAGE} to {MAX_PAGE}")
    return v


# ---------------------------------------------------------------------------
# export-iolog
# ---------------------------------------------------------------------------

MANUAL["export-iolog"] = dict(description="""\
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
""", epilog="""\
EXAMPLE
    fio-pack trace export-iolog pgbench.trace.gz --prefix /mnt/ssd/pg -o pgbench.iolog
    fio --name=replay --read_iolog=pgbench.iolog --ioengine=psync
""")


# long: one pass over the trace writing the iolog; its state is local to it
def cmd_export_iolog(a) -> int:
    notes = Notes(a.quiet)
    if not a.output:
        raise Error("export-iolog: -o OUT.iolog is required (see fio-pack trace export-iolog --help)")
    outputs.check(a.output, "-o", [a.input])
    # before the output is opened: a refusal leaves nothing beside -o
    if a.prefix and any(c <= " " for c in a.prefix):
        raise Error(f"--prefix {a.prefix!r}: fio's iolog names cannot hold blanks")
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
                if any(c <= " " for c in fname):   # the trace's path: --prefix was checked
                    raise Error(f"{p.name} line {rec.line}: file name {fname!r}: fio's iolog "
                                "names cannot hold blanks")
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
