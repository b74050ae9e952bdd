"""What the capture's commands share: their options checked before
anything runs, the tracer's output converted into the trace (by
iocap-convert or the Python converter), the notes and the exit status;
and strace's command line, which run and attach both build."""
import os
import shutil
import sys
import tempfile
from typing import List, Optional

from fiopack.capture.bpf import bpf_losses
from fiopack.capture import native
from fiopack.capture.convert import Converter
from fiopack.capture.model import Counts
from fiopack.capture.native import NativeConverter
from fiopack.capture.rules import DB_ALIASES, DB_NAMES, PAGESIZE, PROG, RULES, TRACE_SET, Error
from fiopack import inputs, outputs
from fiopack.trace import dbtrace as dt  # the format's reader/writer

# strace's longest line: a call's strings at -s 65535, escaped (4 bytes a byte)
STRACE_LINE_MAX = 16 << 20

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


def check_outputs(a):
    """Every output of the command, checked before anything runs (a capture
    is long: its trace refused at the end would lose it)."""
    if not a.output:
        raise Error("-o OUT.trace[.gz] is required")
    # convert's strace output, --listing and --procinfo are its inputs
    outputs.check(a.output, "-o", [x for x in (getattr(a, "input", None), getattr(a, "listing", None),
                                               getattr(a, "procinfo", None)) if x])
    outputs.check(getattr(a, "ready", None), "--ready")
    # the capture writes strace.out, listing and procinfo there: a user's
    # files of those names were replaced
    outputs.check_new_or_empty_dir(getattr(a, "keep", None), "--keep",
                                   "the capture writes strace.out, listing and procinfo in it")


def compose_source(a, db, capture: str) -> str:
    what = a.source if a.source else f"{DB_NAMES[db]} database"
    if any((c < " " and c != "\t") or c == "\x7f" for c in what):
        raise Error("--source: no control characters (the source is one line)")
    if DB_NAMES[db].lower() not in what.lower() and db not in what.lower():
        what = f"{DB_NAMES[db]}: {what}"
    conv = f"fio-pack capture convert --db {db}"
    text = f"{what}; capture: {capture}; {conv}"
    text = "".join("?" if c < " " or c == "\x7f" else c for c in text)
    return text[:dt.MAX_LINE - 8]


def convert_file(a, db, strace_out, listing, procinfo, capture, cwd, name=None,
                 root_name=None, tracer_stats=None) -> dict:
    kw = dict(listing=listing, procinfo=procinfo, cwd=cwd, outside=a.outside,
              outside_prefix=a.outside_prefix, name=name or strace_out)
    # the input's rules (fiopack.inputs) before either converter reads it
    inputs.open_regular(strace_out, Error, "strace's output").close()
    # iocap-convert makes the records when it holds every line (native.py):
    # iocap's output always; strace's goes to the Python converter
    conv = NativeConverter(db, a.datadir, **kw)
    if not conv.run(strace_out, pagesize_of(a, db), bpf=tracer_stats is not None):
        conv = None
    if conv is None:
        conv = Converter(db, a.datadir, **kw)
        feed_file(conv, strace_out, name)
    try:
        res = write_trace(a, db, conv, a.output, capture, root_name, tracer_stats)
    finally:
        if isinstance(conv, NativeConverter):
            conv.close()
    if isinstance(conv, NativeConverter) and native.crosscheck():
        ref = Converter(db, a.datadir, **kw)
        feed_file(ref, strace_out, name)
        work = tempfile.mkdtemp(prefix="convert-check.")
        try:
            out = os.path.join(work, "python.trace")
            write_trace(a, db, ref, out, capture, root_name, tracer_stats)
            native.compare(conv, ref, a.output, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    notes(a, conv, res)
    return res


def feed_file(conv: Converter, strace_out: str, name: Optional[str]):
    f = inputs.open_regular(strace_out, Error, "strace's output")
    with f:
        first = f.read(2)
        f.seek(0)
        if first == b"\x1f\x8b":
            import gzip
            f = gzip.GzipFile(fileobj=f)
        try:
            # a line at most STRACE_LINE_MAX: /dev/zero's bytes or a sparse
            # file are one line without end, read until the memory ran out
            for n, raw in enumerate(iter(lambda: f.readline(STRACE_LINE_MAX + 1), b""), 1):
                if len(raw) > STRACE_LINE_MAX:
                    raise Error(f"{name or strace_out} line {n}: longer than "
                                f"{STRACE_LINE_MAX >> 20} MiB: not strace's output")
                conv.feed(n, raw.decode("latin-1"))
        except (OSError, EOFError) as e:
            raise Error(f"{name or strace_out}: cannot read: {e}")
    conv.finish()


def write_trace(a, db, conv: Converter, output, capture, root_name, tracer_stats) -> dict:
    if tracer_stats:
        bpf_losses(conv, tracer_stats)
    if conv.nrec == 0:
        raise Error(f"{conv.name}: no file I/O of the data directory {conv.datadir} "
                    "in the capture (wrong --datadir?)")
    names = {}
    if root_name and conv.first_pid is not None:
        names[conv.first_pid] = f"{root_name}-{conv.first_pid}"
    return conv.write(output, pagesize_of(a, db), compose_source(a, db, capture),
                      rules_of(db, a.role), names)


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
          "seen, listed above and in its header (fio-pack trace check shows them); pass "
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
    try:
        os.makedirs(a.keep, exist_ok=True)
    except OSError as e:
        raise Error(f"--keep {a.keep}: {e.strerror}")
    for n in ("strace.out", "listing", "procinfo"):
        p = os.path.join(work, n)
        if os.path.exists(p):
            outputs.copy_to_output(p, os.path.join(a.keep, n), "--keep")


def prepare(a):
    db = db_of(a.db)
    check_outputs(a)
    pagesize_of(a, db)
    rules_of(db, a.role)
    if not a.datadir:
        raise Error("--datadir DIR is required")
    return db
