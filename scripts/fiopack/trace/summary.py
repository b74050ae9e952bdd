"""fio-pack trace summary: what a trace holds per file role and operation,
counts and bytes (and per stream on request), in the terms a database's own
counters use, so that a capture can be held against them without a parser
of one's own; and how much of the reading PostgreSQL 18's I/O workers did."""
import json
import re
from typing import Dict

from fiopack.trace.dbtrace import Error, read_trace

MANUAL = {}
MANUAL["summary"] = dict(description="""\
NAME
    fio-pack trace summary - counts and bytes per file role and operation

SYNOPSIS
    fio-pack trace summary TRACE... [--streams] [--json]

DESCRIPTION
    Reads each TRACE (plain or gzip; "-" standard input), checked as check
    does, and prints what it holds per file role (data, log, journal,
    directory, temp, other) and operation: how many records and how many
    bytes (reads, writes, trims; the other operations move none):

      TRACE: N records, F files, S streams, D s
        ROLE       OPERATION          RECORDS         BYTES
        data       read                 17005     161947648
        ...

    A database's own counters are kept the same way (pg_stat_io per object
    and operation, InnoDB's Innodb_data_reads and Innodb_data_read): which
    of its files each counts is in docs/dbcapture.md.

    --streams adds the same per stream, by the stream's name. A capture
    names its streams ROLE-TID (backend-4262, checkpointer-4250,
    ioworker-4255): where a trace has PostgreSQL 18's I/O workers
    (io_method=worker), a line says how much of the reading of data files
    they did, which pg_stat_io credits to the backends that asked for it:

      TRACE: I/O workers: R of the data reads (P%), B of the bytes (Q%)

    A trace whose capture could not see some of the I/O gets its
    "incomplete" lines after the summary, as check prints them.

    --json prints one JSON object per trace instead, one line each:
    {"trace", "records", "files", "streams", "duration_s", "roles":
    {ROLE: {OP: {"records", "bytes"}}}, "ioworkers": {"reads", "read_bytes",
    "data_reads", "data_read_bytes"} or null, "incomplete": [...], and with
    --streams "by_stream": {NAME: {ROLE: {OP: {...}}}}}.
""", epilog="""\
EXIT STATUS
    0 every trace is valid and complete; 3 every trace is valid, and at least
    one is incomplete; 2 an invalid trace or a bad option.
""")

MOVES_BYTES = ("read", "write", "trim")
# a capture's stream names: ROLE-TID
_ROLE_TID = re.compile(r"^(.*)-\d+$")


def stream_role(name: str) -> str:
    m = _ROLE_TID.match(name)
    return m.group(1) if m else name


def summarize(path: str, streams: bool) -> dict:
    gen = read_trace(path)
    p = next(gen)
    role = sname = workers = None   # the header is whole at the first record
    roles: Dict[str, Dict[str, list]] = {}
    by_stream: Dict[str, Dict[str, Dict[str, list]]] = {}
    reads = [0, 0, 0, 0]        # the I/O workers' data reads, bytes; everyone's
    tmin = tmax = None
    for rec in gen:
        if role is None:
            role = {f.id: f.role for f in p.h.files}
            sname = {s.id: s.name for s in p.h.streams}
            workers = {s.id for s in p.h.streams if stream_role(s.name) == "ioworker"}
        r = role[rec.file]
        n = rec.len if rec.op in MOVES_BYTES else 0
        c = roles.setdefault(r, {}).setdefault(rec.op, [0, 0])
        c[0] += 1
        c[1] += n
        if streams:
            c = by_stream.setdefault(sname[rec.stream], {}).setdefault(r, {}) \
                .setdefault(rec.op, [0, 0])
            c[0] += 1
            c[1] += n
        if rec.op == "read" and r == "data":
            reads[2] += 1
            reads[3] += n
            if rec.stream in workers:
                reads[0] += 1
                reads[1] += n
        if rec.time is not None:
            tmin = rec.time if tmin is None else min(tmin, rec.time)
            tmax = rec.time if tmax is None else max(tmax, rec.time)
    scale = {"us": 1e-6, "ms": 1e-3, "ns": 1e-9}.get(p.h.timeunit)
    dur = (tmax - tmin) * scale if scale and tmin is not None else None

    def table(t):
        return {r: {op: {"records": v[0], "bytes": v[1]} for op, v in sorted(ops.items())}
                for r, ops in sorted(t.items())}
    out = {"trace": p.name, "records": p.nrec, "files": len(p.h.files),
           "streams": len(p.h.streams), "duration_s": dur, "roles": table(roles),
           "ioworkers": None if not workers else
           {"reads": reads[0], "read_bytes": reads[1], "data_reads": reads[2],
            "data_read_bytes": reads[3]},
           "incomplete": list(p.h.incomplete)}
    if streams:
        out["by_stream"] = {s: table(t) for s, t in sorted(by_stream.items())}
    return out


def _pct(a, b) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "-"


def _rows(t: dict, indent: str):
    for r, ops in t.items():
        for op, v in ops.items():
            yield f"{indent}{r:<10} {op:<16} {v['records']:>10} {v['bytes']:>13}"


def text(s: dict, streams: bool) -> str:
    dur = "order only" if s["duration_s"] is None else f"{s['duration_s']:.3f} s"
    lines = [f"{s['trace']}: {s['records']} records, {s['files']} files, {s['streams']} "
             f"streams, {dur}",
             f"  {'ROLE':<10} {'OPERATION':<16} {'RECORDS':>10} {'BYTES':>13}"]
    lines += _rows(s["roles"], "  ")
    if streams:
        for name, t in s["by_stream"].items():
            lines.append(f"  stream {name}")
            lines += _rows(t, "    ")
    w = s["ioworkers"]
    if w is not None:
        lines.append(f"{s['trace']}: I/O workers: {w['reads']} of the {w['data_reads']} data "
                     f"reads ({_pct(w['reads'], w['data_reads'])}), {w['read_bytes']} of the "
                     f"{w['data_read_bytes']} bytes ({_pct(w['read_bytes'], w['data_read_bytes'])})")
    lines += [f"{s['trace']}: incomplete: {t}" for t in s["incomplete"]]
    return "\n".join(lines)


def cmd_summary(a) -> int:
    if not a.inputs:
        raise Error("summary: no TRACE given (see fio-pack trace summary --help)")
    incomplete = False
    for path in a.inputs:
        s = summarize(path, a.streams)
        print(json.dumps(s, sort_keys=True) if a.json else text(s, a.streams))
        incomplete = incomplete or bool(s["incomplete"])
    return 3 if incomplete else 0
