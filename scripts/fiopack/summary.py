"""fio-pack summary - a short human-readable summary of an fio JSON result.

Prints, for every job in fio's --output-format=json result, the operations
per second, bandwidth and latency percentiles of each direction that did
work. For jobs of the pack's small-file engine the directions are named by
the file operations they hold (read = whole-file reads and stats, write =
creates/deliveries/appends/layout, trim = deletes); if an opstats file
(the engine's tree_opstats_file, JSON lines) is given, the per-operation counts
are printed too. Exit status 1 if a job reported an error; 2 (one line
naming the file) for a file that is not fio's JSON or the engine's opstats
lines, as fio-pack analyze reads them.
"""
import argparse
import json

from fiopack import UserError, documents
from fiopack.options import Parser
from fiopack.results.data import parse_fio_text

SMALLFILE_NAMES = {"read": "read/stat", "write": "write (create/deliver/append/layout)",
                   "trim": "delete"}


def pct(clat, p):
    v = clat.get("percentile", {}).get(p)
    return v / 1000.0 if v is not None else float("nan")


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return "%.1f %s" % (n, unit) if unit != "B" else "%d B" % n
        n /= 1024.0
    return str(n)


def load(path):
    """The fio JSON document of @path, checked as the analysis checks it
    (notes before the document skipped; its shape fio's)."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}")
    return parse_fio_text(text, path)[0]


def opstats_lines(path):
    """The records of the smallfile engine's opstats file @path, each of
    the engine's shape."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}")
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            documents.check(rec, documents.OPSTATS_LINE)
        except (ValueError, RecursionError) as e:
            raise UserError(f"{path} line {n}: not a JSON line ({e})")
        except documents.ShapeError as e:
            raise UserError(f"{path} line {n}: not the engine's opstats line: {e}")
        out.append(rec)
    return out


def parser():
    title, text = __doc__.split("\n\n", 1)
    ap = Parser(prog="fio-pack summary", description=text,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("result", metavar="RESULT.json",
                    help="fio's --output-format=json result (notes before the JSON are skipped)")
    ap.add_argument("opstats", metavar="OPSTATS.jsonl", nargs="?",
                    help="the smallfile engine's tree_opstats_file: adds the per-operation counts")
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    result = load(a.result)
    # every input is read and checked before a line is printed: a refusal is
    # one line, not a summary cut short
    ops_records = opstats_lines(a.opstats) if a.opstats else None
    jobs = result.get("jobs") or result.get("client_stats") or []
    global_engine = result.get("global options", {}).get("ioengine", "")
    failed = False
    for job in jobs:
        name = job.get("jobname", "?")
        if name == "All clients":
            continue
        opts = job.get("job options", {})
        engine = opts.get("ioengine", global_engine)
        small = "smallfile" in str(engine)
        err = job.get("error", 0)
        failed |= bool(err)
        line = "%s%s" % (name, " (error %d)" % err if err else "")
        print(line)
        for d in ("read", "write", "trim"):
            st = job.get(d, {})
            if not st.get("total_ios"):
                continue
            clat = st.get("clat_ns", {})
            label = SMALLFILE_NAMES[d] if small else d
            unit = "files/s" if small else "IOPS"
            print("  %-38s %10.0f %s  %10s/s  lat p50 %8.1f us  p99 %8.1f us  (%d ops, %s)" % (
                label, st.get("iops", 0.0), unit, human_bytes(st.get("bw_bytes", 0)),
                pct(clat, "50.000000"), pct(clat, "99.000000"),
                st.get("total_ios", 0), human_bytes(st.get("io_bytes", 0))))
    if ops_records is not None:
        totals = {}
        warm = []
        for rec in ops_records:
            if rec.get("read_passes", 0) > 1 and not rec.get("file_drop_cache"):
                warm.append("%s: %.2f passes over the tree" % (rec.get("job"),
                                                              rec["read_passes"]))
            for op, s in rec.get("ops", {}).items():
                t = totals.setdefault(op, {"ops": 0, "bytes": 0, "probes": 0, "skipped": 0})
                for k in t:
                    t[k] += s.get(k, 0)
        if totals:
            print("per operation (all jobs):")
            for op, t in sorted(totals.items()):
                extra = []
                if t["probes"]:
                    extra.append("%d retries on absent files" % t["probes"])
                if t["skipped"]:
                    extra.append("%d already complete" % t["skipped"])
                print("  %-8s %10d ops  %12s%s" % (op, t["ops"], human_bytes(t["bytes"]),
                                                   ("  (" + ", ".join(extra) + ")") if extra else ""))
        for w in warm:
            print("note: %s: reads after the first pass may come from the page cache" % w)
    return 1 if failed else 0

