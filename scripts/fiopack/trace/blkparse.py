"""blkparse text output (blktrace's events of a block device) as a dbtrace
trace: `fio-pack trace import-blkparse`."""
import re
import sys
from typing import Dict

from fiopack import outputs
from fiopack.trace.dbtrace import (Error, FileDecl, Header, MAX_FILES, MAX_IO, MAX_OFFSET,
                                   MAX_STREAMS, Notes, PROG, Spool, StreamDecl, _counts,
                                   decoded_chunks, open_input, safe_name, source_text,
                                   text_lines, unique, write_trace)
from fiopack.trace.iolog import in_fail, check_pagesize


# ---------------------------------------------------------------------------
# import-blkparse
# ---------------------------------------------------------------------------

MANUAL = {}
MANUAL["import-blkparse"] = dict(description="""\
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
""", epilog="""\
EXAMPLE
    blktrace -d /dev/sdb -w 30 -o - | blkparse -i - > sdb.txt
    fio-pack trace import-blkparse sdb.txt --event D -o sdb.trace.gz
""")

_EVENT = re.compile(r"[ \t]*(\d+),(\d+)[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+)\.(\d+)[ \t]+(\d+)"
                    r"[ \t]+(\S+)[ \t]+(\S+)(?:[ \t]+(.*))?$")
_LOOKS_LIKE_EVENT = re.compile(r"[ \t]*\d+,\d+[ \t]")
_SUMMARY = re.compile(r"(CPU\d+|Total) \(")
_RWBS = re.compile(r"(F?)([DWRN])([A-Z]*)$")
# DETAILS: an optional "(pdu)" or "(elapsed)", then "SECTOR + N" or "SECTOR" or nothing
_SECTORS = re.compile(r"(?:\([^)]*\)[ \t]*)*(\d+)[ \t]+\+[ \t]+(\d+)(?:[ \t]|$)")
_SECTOR_ONLY = re.compile(r"(?:\([^)]*\)[ \t]*)*(\d+)[ \t]*(?:[\[(]|$)")
_COMM = re.compile(r".*?\[(.*)\]")


def parse_event(name, lineno, line, event):
    """One line of blkparse output: None for a line that is not an event
    (blank, the closing summary, "Input file ... added"), else (dev, pid,
    action, preflush, kind, fua, sector, nsect, sec, nsec, rest). An event
    neither Q nor @event is returned with kind None: only a Q's pid is kept."""
    m = _EVENT.match(line)
    if not m:
        if _SUMMARY.match(line):
            return "summary"
        if _LOOKS_LIKE_EVENT.match(line):
            in_fail(name, lineno, "malformed event line (expected MAJ,MIN CPU SEQ "
                                   "SECONDS.NANOSECONDS PID ACTION RWBS ...)")
        if line.startswith("Input file ") and line.endswith(" added"):
            return None
        in_fail(name, lineno, "not a blkparse event line (blkparse's default output "
                               "format: MAJ,MIN CPU SEQ SECONDS.NANOSECONDS PID "
                               "ACTION RWBS ...)")
    maj, mnr, _cpu, _seq, sec, nsec, pid, act, rwbs, rest = m.groups()
    rest = rest or ""
    if len(nsec) != 9:
        in_fail(name, lineno, f"bad time '{sec}.{nsec}' (SECONDS.NANOSECONDS, 9 digits)")
    if act not in ("Q", event):
        return None
    r = _RWBS.match(rwbs)
    if not r:
        if act == "Q" and event != "Q":
            return None         # only the pid is wanted from Q events
        in_fail(name, lineno, f"unknown RWBS field '{rwbs[:20]}' "
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
            in_fail(name, lineno, f"cannot read the sectors of '{rest[:40]}' "
                                   "(SECTOR + COUNT [...])")
    return (f"{maj},{mnr}", int(pid), act, preflush, kind, fua, sector, nsect, sec, nsec, rest)


class BlkparseImport:
    """The state of one import: devices as files, processes as streams,
    the pid of each queued request (a D or C event runs in whatever
    process the block layer is in, the Q in the one that asked)."""

    def __init__(self, a, name):
        self.a, self.name = a, name
        self.files: Dict[str, FileDecl] = {}           # "maj,min" -> declaration
        self.streams: Dict[int, StreamDecl] = {}       # pid (or -1) -> declaration
        self.comm: Dict[int, str] = {}
        self.snames: set = set()
        self.q_pid: Dict[tuple, int] = {}       # (dev, sector) -> pid of the latest Q
        self.flush_pid: Dict[str, int] = {}     # dev -> pid of the latest Q with a flush/FUA
        self.last_time: Dict[int, tuple] = {}
        self.skipped = {"skipped (no data)": 0, "FUA flags dropped": 0,
                        "failed (error != 0), kept": 0}
        self.kept = 0
        self.spool = Spool()

    def queued(self, dev, pidn, preflush, fua, sector, rest):
        """A Q event: remember which process asked for the request."""
        if sector is not None:
            self.q_pid[(dev, sector)] = pidn
        if preflush or fua:
            self.flush_pid[dev] = pidn
        cm = _COMM.match(rest)
        if cm and pidn not in self.comm:
            self.comm[pidn] = cm.group(1)

    def owner(self, dev, pidn, act, preflush, sector, nsect):
        """The process a kept event is credited to (its Q's, when known)."""
        owner = pidn
        if self.a.event != "Q":
            if nsect and (dev, sector) in self.q_pid:
                owner = self.q_pid[(dev, sector)]
                if act == "C":
                    del self.q_pid[(dev, sector)]
            elif not nsect and preflush and dev in self.flush_pid:
                owner = self.flush_pid[dev]
        return -1 if self.a.streams == "single" else owner

    def stream(self, owner, lineno):
        st = self.streams.get(owner)
        if st is None:
            if owner == -1:
                sname = "device"
            else:
                c = self.comm.get(owner, "")
                sname = f"{safe_name(c, 200)}-{owner}" if c and c != "(null)" \
                    else f"pid-{owner}"
            st = self.streams[owner] = StreamDecl(len(self.streams), unique(sname, self.snames))
            if len(self.streams) > MAX_STREAMS:
                in_fail(self.name, lineno, f"more than {MAX_STREAMS} processes: use "
                                            "--streams single")
        return st

    def feed(self, lineno, ev):
        """One event, as parse_event returns it."""
        dev, pidn, act, preflush, kind, fua, sector, nsect, sec, nsec, rest = ev
        name = self.name
        if act == "Q":
            self.queued(dev, pidn, preflush, fua, sector, rest)
            if self.a.event != "Q":
                return
        # a kept event
        if act == "C":
            em = re.search(r"\[(-?\d+)\][ \t]*$", rest)
            if em and int(em.group(1)) != 0:
                self.skipped["failed (error != 0), kept"] += 1
        owner = self.owner(dev, pidn, act, preflush, sector, nsect)
        ops = []
        if preflush:
            ops.append(("fsync", 0, 0))
        if nsect and kind in "RWD":
            ops.append(({"R": "read", "W": "write", "D": "trim"}[kind],
                        sector * 512, nsect * 512))
        if fua and kind == "W":
            self.skipped["FUA flags dropped"] += 1
        if not ops:
            self.skipped["skipped (no data)"] += 1
            return
        time = int(sec) * 1000000000 + int(nsec)
        if time > MAX_OFFSET:
            in_fail(name, lineno, f"time {sec}.{nsec} is beyond 2^63-1 ns")
        fd = self.files.get(dev)
        if fd is None:
            maj, mnr = dev.split(",")
            fd = self.files[dev] = FileDecl(len(self.files), "data", 0, 0, f"dev-{maj}-{mnr}")
        st = self.stream(owner, lineno)
        prev = self.last_time.get(st.id)
        if prev and time < prev[0]:
            in_fail(name, lineno, f"time {sec}.{nsec} goes back from the stream's "
                                   f"event on line {prev[1]} (blkparse output is sorted "
                                   "by time)")
        self.last_time[st.id] = (time, lineno)
        for op, off, length in ops:
            if op in ("read", "write") and length > MAX_IO:
                in_fail(name, lineno, f"{op} of {length} bytes, over the trace format's "
                                       f"limit of {MAX_IO}")
            if off + length > MAX_OFFSET:
                in_fail(name, lineno, "sector range beyond 2^63-1 bytes")
            if off + length > fd.max_size:
                fd.max_size = fd.size = off + length
            self.spool.add(time, st.id, fd.id, op, off, length)
            self.kept += 1


def cmd_import_blkparse(a) -> int:
    pagesize = check_pagesize(a.pagesize)
    outputs.check(a.output, "-o", [a.input])       # before the input is read
    name = "<stdin>" if a.input == "-" else a.input
    imp = BlkparseImport(a, name)
    notes = Notes(a.quiet)
    f = open_input(a.input)
    try:
        lineno = 0
        summary = False
        for line, err in text_lines(decoded_chunks(f), 1 << 20):
            lineno += 1
            if err is not None:
                in_fail(name, lineno, err)
            line = line.rstrip("\r")
            if summary or not line.strip(" \t"):
                continue
            ev = parse_event(name, lineno, line, a.event)
            if ev == "summary":
                summary = True
            elif ev is not None:
                imp.feed(lineno, ev)
        if len(imp.files) > MAX_FILES:
            raise Error(f"{name}: more than {MAX_FILES} devices")
        h = Header(pagesize=pagesize, timeunit="ns",
                   source=source_text(a.source, f"blkparse output {name} (event {a.event}, "
                                      f"streams per {a.streams}) imported by {PROG} "
                                      "import-blkparse"),
                   files=list(imp.files.values()), streams=list(imp.streams.values()))
        n = write_trace(a.output, h, imp.spool)
    finally:
        imp.spool.close()
        if f is not sys.stdin.buffer:
            f.close()
    if any(imp.skipped.values()):
        notes(f"{a.event} events: {_counts(imp.skipped)}")
    notes(f"{n} records, {len(imp.files)} device(s), {len(imp.streams)} stream(s)")
    return 0
