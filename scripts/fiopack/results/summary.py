"""fio-pack summary - a short human-readable summary of an fio JSON result.

Prints, for every job in fio's --output-format=json result, the operations
per second, bandwidth and latency percentiles of each direction that did
work, and its fsyncs. A job of a catalogue scenario (jobs/catalogue.json,
recognised as fio-pack analyze recognises it) starts with the scenario's
metrics, the figures its article published (sysbench-rndrd: throughput in
MiB/s and the 95th percentile response time). A PostMark job (the pack's
postmark engine) starts with PostMark's own headline: transactions per
second, the elapsed time, and the files created, appended to, read and
deleted. A job's clones (numjobs= without group_reporting) are one entry,
merged as group_reporting merges them (percentiles from json+ histograms;
without them the mean and maximum latency); with several fio servers, one
entry per job and host. For jobs of the pack's small-file engine the
directions are named by the file operations they hold (read = whole-file
reads and stats, write = creates/deliveries/appends/layout, trim =
deletes); if an opstats file (the engine's tree_opstats_file, JSON lines)
is given, the per-operation counts are printed too, and one note per job
that read its tree more than once where a cold test was asked for
(tree_drop_cache=1, an exec_prerun that drops the caches, or a
description that says cold), never on tmpfs. Exit status 1 if a job
reported an error; 2 (one line naming the file) for a file that is not
fio's JSON or the engine's opstats lines, as fio-pack analyze reads them.
"""
import argparse
import json
import re

from fiopack import UserError, documents, engines, inputs, mounts
from fiopack.options import Parser
from fiopack.results import data as results
from fiopack.results.data import parse_fio_text
from fiopack.results.hosts import host_names

SMALLFILE_NAMES = {"read": "read/stat", "write": "write (create/deliver/append/layout)",
                   "trim": "delete"}
# file systems in memory: nothing read there comes from a device
MEMORY_FS = ("tmpfs", "ramfs")
POSTMARK_NAMES = {"read": "read (file reads)", "write": "write (creates, appends)",
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
    text = inputs.read_whole(path, UserError, "fio's JSON output").decode("utf-8",
                                                                         errors="replace")
    try:
        return parse_fio_text(text, path)[0]
    except UserError:
        m = engines.FIO_BAD_PATH_RE.search(text)
        if m:   # fio's output of a job file that did not find its engine
            raise UserError(engines.fix(f"{path}: fio found no engine at {m.group(1)}"))
        raise


def opstats_lines(path):
    """The records of the smallfile engine's opstats file @path, each of
    the engine's shape."""
    text = inputs.read_whole(path, UserError, "an opstats file").decode("utf-8",
                                                                        errors="replace")
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


def job_errors(doc) -> dict:
    """{(host, job name): fio's error code} of the entries that report one."""
    out = {}
    for e in doc.get("jobs") or doc.get("client_stats") or []:
        if e.get("error"):
            host = f"{e['hostname']}:{e['port']}" if "port" in e else "local"
            out.setdefault((host, e.get("jobname", "?")), e["error"])
    return out


def entries(ds) -> list:
    """[(host, job, [its rows])] in fio's order: one per job and host, its
    clones merged as group_reporting merges them (fiopack.results.data), the
    "All clients" sum left out."""
    out = {}
    for r in ds.rows:
        if r.get("aggregate"):
            continue
        out.setdefault((r["host"], r["job"], r["groupid"]), []).append(r)
    return [(h, j, rows) for (h, j, _), rows in out.items()]


def latency_text(r) -> str:
    """p50 and p99 where fio (or the merged json+ histograms) gave them, else
    the mean and the maximum (clones merged from fio's coarse list)."""
    kind = "clat" if r.get("clat_N") else "lat"
    if r.get(f"{kind}_p50_ns") is not None:
        return "lat p50 %8.1f us  p99 %8.1f us" % (r[f"{kind}_p50_ns"] / 1000.0,
                                                 r.get(f"{kind}_p99_ns", float("nan")) / 1000.0)
    return "lat mean %7.1f us  max %8.1f us" % (r.get(f"{kind}_mean_ns", float("nan")) / 1000.0,
                                                r.get(f"{kind}_max_ns", float("nan")) / 1000.0)


def job_options(doc) -> dict:
    """{job name: its options, the global ones under its own}."""
    glob = doc.get("global options") or {}
    return {e.get("jobname"): dict(glob, **(e.get("job options") or {}))
            for e in doc.get("jobs") or doc.get("client_stats") or []}


def declared_cold(opts) -> bool:
    """A job that asks for a cold test: it drops the caches before it runs
    (exec_prerun ... drop_caches, as the job files' headers say), or its
    description says cold."""
    return "drop_caches" in str(opts.get("exec_prerun", "")) or \
        bool(re.search(r"\bcold\b", str(opts.get("description", "")), re.I))


def reread_notes(records, options) -> list:
    """One note per smallfile job that read its tree more than once where
    the user asked for a cold test (tree_drop_cache, or a job declared
    cold): the mail and web jobs re-read a hot spool on purpose, and on
    tmpfs every read is from memory anyway. The figure is the job's: its
    clones' passes averaged, printed once."""
    jobs = {}
    for rec in records:
        jobs.setdefault(rec.get("job"), []).append(rec)
    out = []
    for job, recs in jobs.items():
        passes = sum(r.get("read_passes", 0) for r in recs) / len(recs)
        dropped = any(r.get("file_drop_cache") for r in recs)
        if passes <= 1 or not (dropped or declared_cold(options.get(job, {}))):
            continue
        if any(mounts.fs_type(r["tree_dir"]) in MEMORY_FS for r in recs if r.get("tree_dir")):
            continue
        what = ("each file's data was dropped once read, but the inodes, dentries and "
                "directory blocks of later passes may come from the cache" if dropped else
                "reads after the first pass may come from the page cache (for a cold test: "
                "number_ios= at most tree_files, or tree_drop_cache=1)")
        out.append("note: %s: %.2f passes over the tree: %s" % (job, passes, what))
    return out


def figure_text(v) -> str:
    """A headline figure as a person reads it: 1214, 96.31, 0.322."""
    if v is None:
        return "-"
    return "%.0f" % v if abs(v) >= 1000 else "%.2f" % v if abs(v) >= 1 else "%.3g" % v


def scenario_headline(ds, rows):
    """"sysbench-rndrd: throughput 96.31 MiB/s, response time p95 0.322 ms":
    the catalogue metrics of the result's scenario (jobs/catalogue.json) that
    this job gives, the figures its article published; None for other jobs."""
    total = next((r for r in rows if r["direction"] == "total"), None)
    sid = total and total.get("scenario")
    if not sid or sid not in ds.scenarios:
        return None
    shown = ["%s %s %s" % (m["name"], figure_text(total.get("m:" + m["name"])),
                           m.get("unit", "")) for m in ds.scenarios[sid].get("metrics") or []
             if "m:" + m["name"] in total]
    return f"{sid}: " + ", ".join(s.strip() for s in shown) if shown else None


def elapsed_text(ms) -> str:
    return "%.3f s" % (ms / 1000.0) if ms < 10000 else "%.1f s" % (ms / 1000.0)


def postmark_headline(rows) -> str:
    """PostMark's own figures: its transactions per second over the job's
    elapsed time, and the files it created, appended to, read and deleted
    (the engine's operations: write.prios, sync)."""
    ops = {r["op"]: r for r in rows if r["op"]}
    tx = ops["transaction"]
    ms = max(r.get("runtime_ms") or 0 for r in rows)
    counts = ", ".join("%d %s" % (ops[op]["ios"], word) for op, word in
                       (("create", "creates"), ("append", "appends"), ("read", "reads"),
                        ("delete", "deletes")) if op in ops)
    return "PostMark: %d transactions in %s: %.0f transactions/s; %s" % (
        tx["ios"], elapsed_text(ms), tx.get("iops") or 0.0, counts or "no file operations")


def main(argv=None):
    a = parser().parse_args(argv)
    doc = load(a.result)
    # every input is read and checked before a line is printed: a refusal is
    # one line, not a summary cut short
    ops_records = opstats_lines(a.opstats) if a.opstats else None
    ds = results.load([a.result], include_failed=True, preconditions=True)
    errors = job_errors(doc)
    engine_of = {}
    for e in doc.get("jobs") or doc.get("client_stats") or []:
        engine_of[e.get("jobname")] = e.get("job options", {}).get(
            "ioengine", doc.get("global options", {}).get("ioengine", ""))
    jobs = entries(ds)
    several_hosts = len({h for h, _, _ in jobs}) > 1
    names = host_names(ds.rows)
    failed = bool(errors)
    for host, name, rows in jobs:
        small = "smallfile" in str(engine_of.get(name, ""))
        clones = max(r.get("clones") or 1 for r in rows)
        err = errors.get((host, name))
        print(name + (f" on {names.get(host) or host}" if several_hosts else "")
              + (f" ({clones} clones merged)" if clones > 1 else "")
              + (f" (error {err})" if err else ""))
        headline = scenario_headline(ds, rows)
        if headline:
            print("  " + headline)
        postmark = any(r["op"] == "transaction" for r in rows)
        if postmark:
            print("  " + postmark_headline(rows))
        for d in ("read", "write", "trim", "sync"):
            st = next((r for r in rows if r["direction"] == d and not r["op"]), None)
            if not st or not st.get("ios"):
                continue
            if d == "sync":
                # fsyncs; the PostMark engine's transactions (docs/postmark.md)
                label = "transactions" if postmark else "sync (fsync)"
                print("  %-38s %10.0f %-7s  %12s  %s  (%d %s)" % (
                    label, st.get("iops") or 0.0, "/s", "", latency_text(st), st["ios"],
                    "transactions" if postmark else "syncs"))
                continue
            label = SMALLFILE_NAMES[d] if small else POSTMARK_NAMES[d] if postmark else d
            unit = "files/s" if small else "IOPS"
            print("  %-38s %10.0f %s  %10s/s  %s  (%d ops, %s)" % (
                label, st.get("iops") or 0.0, unit, human_bytes(st.get("bw_bytes") or 0),
                latency_text(st), st["ios"], human_bytes(st.get("io_bytes") or 0)))
    if ops_records is not None:
        totals = {}
        for rec in ops_records:
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
        for note in reread_notes(ops_records, job_options(doc)):
            print(note)
    return 1 if failed else 0
