#!/usr/bin/python3
"""fioresults - fio results as one normalised table, and what is computed from it.

Library behind scripts/analyze.py (docs/analysis.md). It reads:

  * study results directories written by scripts/study.py (study.json,
    runs/NNNN.json with runs/NNNN.meta.json: the runner's metadata gives the
    scenario, target label, sweep point, repeat and host of every run);
  * any fio --output-format=json or json+ output: local jobs[], client/server
    client_stats[] (with its "All clients" entry), group_reporting or not,
    several groups, fio 3.x (and 2.x usec) field names, text lines before the
    JSON document (fio's notes, the servers' output) and after it.

Runs are identified by their content (a hash of the JSON document, fio's
timestamp, the job options) and the runner's metadata, never by file names:
a directory is searched by looking into every file, the same result given
twice is counted once, and repeats of plain fio results are recognised as
runs with the same jobs, options, host and target.

The normalised view has one row per (run, host, job, direction, operation):
direction is total, read, write, trim or sync; operation is "" or, for the
pack's engines, one operation class (PostMark: create, append from
write.prios, read, delete, transaction; smallfile: the opstats_file's
classes). Clones of a job (numjobs without group_reporting) are merged the
way group_reporting merges them (percentiles from the json+ histograms
when there are any).
"""
import csv
import hashlib
import html
import io
import json
import math
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import study as _study  # noqa: E402  (the catalogue's metric-expression evaluator)

DEFAULT_CATALOGUE = REPO / "jobs" / "catalogue.json"
DEFAULT_FIGURES = REPO / "reference" / "figures.json"

DIRECTIONS = ("read", "write", "trim")
ALL_DIRECTIONS = ("total", "read", "write", "trim", "sync")
LAT_KINDS = ("lat", "clat", "slat")
FIO_PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0,
                   99.0, 99.5, 99.9, 99.95, 99.99)

# fio option defaults that a job's options leave out (fio 3.33, Linux)
OPTION_DEFAULTS = {"numjobs": 1, "iodepth": 1, "bs": "4k", "direct": 0, "rw": "read",
                   "ioengine": "psync"}
# options that name where a job ran or where it writes side files: not part
# of a run's workload identity (the target is its own field)
NOT_WORKLOAD = {"directory", "filename", "filename_format", "tree_dir", "pm_location",
                "tree_opstats_file", "opstats_file", "pm_opstats_file", "pm_report_file", "description", "name",
                "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log",
                "write_iolog", "per_job_logs", "log_avg_msec", "output", "exec_prerun",
                "exec_postrun", "ioscheduler", "group_reporting", "new_group", "stonewall",
                "wait_for_previous", "cpus_allowed", "cpumask"}
SIZE_OPTIONS = {"bs", "blocksize", "size", "filesize", "io_size", "io_limit", "bs_unaligned",
                "ba", "blockalign"}
FIELDS = ("run", "study", "scenario", "host", "hostname", "target", "target_path", "job",
          "groupid", "direction", "op", "repeat", "clones", "fio_version", "timestamp",
          "device_name", "device_model", "rotational", "source")
# fields that identify what a row measured (with the workload parameters)
IDENTITY_FIELDS = ("scenario", "host", "target", "job", "direction", "op")

SMALLFILE_DIRECTION = {"read": "read", "stat": "read", "create": "write", "append": "write",
                       "deliver": "write", "layout": "write", "delete": "trim"}


class AnalysisError(Exception):
    """Bad input or an impossible request: one message for the user, exit status 2."""


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

def size_bytes(text):
    """fio size text ("16k", "1m", "4096", "2MiB") -> bytes (k = 1024, fio's default), or None."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)(i?b?)\s*", str(text), re.I)
    if not m:
        return None
    unit = m.group(2).lower()
    return int(m.group(1)) * (1024 ** ("kmgtp".index(unit) + 1) if unit else 1)


def canonical_size(text):
    """"16384" and "16K" -> "16k": sizes compare and group as fio means them."""
    b = size_bytes(text)
    if b is None or b == 0:
        return text
    for unit, div in (("p", 1 << 50), ("t", 1 << 40), ("g", 1 << 30), ("m", 1 << 20),
                      ("k", 1 << 10)):
        if b % div == 0:
            return f"{b // div}{unit}"
    return str(b)


def param_value(name, text):
    """A job option's value as a row parameter: ints as ints, sizes canonical."""
    if isinstance(text, (int, float)):
        return text
    s = str(text)
    if name in SIZE_OPTIONS:
        return canonical_size(s)
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    return s


def sort_key(value):
    """Orders parameter values: numbers and sizes by magnitude, then text."""
    if value is None:
        return (2, 0, "")
    if isinstance(value, bool):
        return (0, int(value), "")
    if isinstance(value, (int, float)):
        return (0, value, "")
    b = size_bytes(value)
    if b is not None:
        return (0, b, str(value))
    return (1, 0, str(value))


def pct_name(p: float) -> str:
    """95.0 -> "95", 99.9 -> "99.9" (the pNN of metric names)."""
    return format(p, "g")


def text_of(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pack_version() -> str:
    try:
        p = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=30)
        return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


# ---------------------------------------------------------------------------
# Reading fio's JSON
# ---------------------------------------------------------------------------

_DECODER = json.JSONDecoder()


def _unclosed(text: str, start: int) -> bool:
    """True when the JSON text from start ends inside a string or an open bracket."""
    depth, in_str, esc = 0, False, False
    for ch in text[start:]:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_str or depth > 0


def parse_fio_text(text: str, where: str):
    """(document, text before it, the JSON text) of an fio JSON output.

    fio prints notes ("note: both iodepth >= 1 and synchronous I/O engine...")
    and, in client mode, the servers' lines before the document; the document
    starts at the first line that is "{" (or the first line starting with "{").
    """
    pre, js = _study.split_json(text)
    if js is None or not js.lstrip().startswith("{"):
        m = re.search(r"^\{", text, re.M)
        if not m:
            raise AnalysisError(f"{where}: not fio JSON output: there is no JSON document in it")
        pre, js = text[:m.start()], text[m.start():]
    try:
        doc, end = _DECODER.raw_decode(js)
    except json.JSONDecodeError as e:
        if _unclosed(js, 0):
            line = pre.count("\n") + 1
            raise AnalysisError(
                f"{where}: truncated fio JSON: the document starting at line {line} ends "
                f"after {len(js.rstrip())} characters without being closed (was fio killed, "
                f"the disk full, or the file copied while fio was still writing?)")
        raise AnalysisError(f"{where}: not valid JSON: {e.msg} at line "
                            f"{e.lineno + pre.count(chr(10))} column {e.colno}")
    if not isinstance(doc, dict) or not ("jobs" in doc or "client_stats" in doc):
        raise AnalysisError(f"{where}: not fio JSON output: a JSON document without fio's "
                            f"\"jobs\" or \"client_stats\"")
    return doc, pre, js[:end]


def looks_like_fio(data: bytes) -> bool:
    return b'"fio version"' in data or b'"client_stats"' in data or b'"job options"' in data


# ---------------------------------------------------------------------------
# Merging clones of a job the way group_reporting does
# ---------------------------------------------------------------------------

def _merge_latency(stats: list) -> dict:
    stats = [s for s in stats if s and s.get("N")]
    if not stats:
        return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    if len(stats) == 1:
        return stats[0]
    n = sum(s["N"] for s in stats)
    mean = sum(s["mean"] * s["N"] for s in stats) / n
    ss = sum((s["N"] - 1) * s.get("stddev", 0.0) ** 2 + s["N"] * (s["mean"] - mean) ** 2
             for s in stats)
    out = {"min": min(s["min"] for s in stats), "max": max(s["max"] for s in stats),
           "mean": mean, "stddev": math.sqrt(ss / (n - 1)) if n > 1 else 0.0, "N": n}
    if all("bins" in s for s in stats):
        bins = {}
        for s in stats:
            for k, c in s["bins"].items():
                bins[k] = bins.get(k, 0) + c
        out["bins"] = bins
        out["percentile"] = percentiles_from_bins(bins, FIO_PERCENTILES)
    elif any("percentile" in s for s in stats):
        out["percentile_note"] = ("percentiles of merged job clones need json+ histograms "
                                  "(fio --output-format=json+) or group_reporting")
    return out


def percentiles_from_bins(bins: dict, wanted) -> dict:
    """fio's way: the first bin whose cumulative count reaches p% of all samples."""
    items = sorted((int(k), c) for k, c in bins.items())
    total = sum(c for _, c in items)
    out = {}
    if not total:
        return out
    for p in wanted:
        need = p / 100.0 * total
        cum = 0
        for v, c in items:
            cum += c
            if cum >= need:
                out["%f" % p] = v
                break
    return out


def _merge_direction(sts: list) -> dict:
    sts = [s for s in sts if s]
    if len(sts) == 1:
        return sts[0]
    out = {}
    for k in ("io_bytes", "io_kbytes", "total_ios", "short_ios", "drop_ios"):
        out[k] = sum(s.get(k, 0) for s in sts)
    rt = max(s.get("runtime", 0) for s in sts)
    out["runtime"] = rt
    out["bw_bytes"] = out["io_bytes"] * 1000 / rt if rt else 0.0
    out["bw"] = out["bw_bytes"] / 1024
    out["iops"] = out["total_ios"] * 1000 / rt if rt else 0.0
    for k in ("slat_ns", "clat_ns", "lat_ns"):
        if any(k in s for s in sts):
            out[k] = _merge_latency([s.get(k) for s in sts])
    prios = {}
    for s in sts:
        for p in s.get("prios") or []:
            prios.setdefault((p.get("prioclass"), p.get("prio")), []).append(p)
    if prios:
        out["prios"] = [{"prioclass": pc, "prio": pr,
                         "clat_ns": _merge_latency([p.get("clat_ns") for p in ps])}
                        for (pc, pr), ps in sorted(prios.items())]
    return out


def merge_clones(entries: list) -> dict:
    """One fio job entry in fio's own shape from several clones of the job."""
    if len(entries) == 1:
        return entries[0]
    first = entries[0]
    out = {k: v for k, v in first.items() if not isinstance(v, dict) or k == "job options"}
    for d in DIRECTIONS:
        out[d] = _merge_direction([e.get(d) for e in entries])
    if any(e.get("sync") for e in entries):
        syncs = [e.get("sync") or {} for e in entries]
        out["sync"] = {"total_ios": sum(s.get("total_ios", 0) for s in syncs),
                       "lat_ns": _merge_latency([s.get("lat_ns") for s in syncs])}
    out["job_runtime"] = sum(e.get("job_runtime", 0) for e in entries)
    out["elapsed"] = max(e.get("elapsed", 0) for e in entries)
    for k in ("usr_cpu", "sys_cpu"):
        out[k] = statistics.fmean(e.get(k, 0.0) for e in entries)
    for k in ("ctx", "majf", "minf"):
        out[k] = sum(e.get(k, 0) for e in entries)
    out["error"] = next((e.get("error") for e in entries if e.get("error")), 0)
    return out


# ---------------------------------------------------------------------------
# Normalising one job entry into rows
# ---------------------------------------------------------------------------

def _lat_fields(row: dict, kind: str, st: dict, scale: float = 1.0) -> None:
    if not st or not st.get("N"):
        return
    for k in ("mean", "min", "max", "stddev"):
        if k in st:
            row[f"{kind}_{k}_ns"] = st[k] * scale
    row[f"{kind}_N"] = st["N"]
    for p, v in (st.get("percentile") or {}).items():
        try:
            row[f"{kind}_p{pct_name(float(p))}_ns"] = v * scale
        except ValueError:
            continue


def _direction_stats(st: dict) -> dict:
    """fio 3.x direction stats in ns; fio 2.x ("clat" etc. in usec) converted."""
    row = {}
    ios = st.get("total_ios", 0)
    row["ios"] = ios
    row["io_bytes"] = st.get("io_bytes", st.get("io_kbytes", 0) * 1024)
    row["runtime_ms"] = st.get("runtime", 0)
    row["iops"] = st.get("iops", 0.0)
    row["bw_bytes"] = st.get("bw_bytes", st.get("bw", 0) * 1024)
    for kind in LAT_KINDS:
        if kind + "_ns" in st:
            _lat_fields(row, kind, st[kind + "_ns"])
        elif kind in st:
            _lat_fields(row, kind, st[kind], 1000.0)
    for k in ("short_ios", "drop_ios"):
        if st.get(k):
            row[k] = st[k]
    return row


def _ops_from_opstats(lines: list, runtime_ms: float) -> dict:
    ops = {}
    for rec in lines:
        for name, s in (rec.get("ops") or {}).items():
            o = ops.setdefault(name, {"ops": 0, "bytes": 0, "probes": 0, "skipped": 0,
                                      "errors": 0, "lat_sum": 0.0, "min": None, "max": None})
            n = s.get("ops", 0)
            o["ops"] += n
            o["bytes"] += s.get("bytes", 0)
            for k in ("probes", "skipped", "errors"):
                o[k] += s.get(k, 0)
            o["lat_sum"] += s.get("lat_mean_ns", 0) * n
            if n:
                mn, mx = s.get("lat_min_ns"), s.get("lat_max_ns")
                o["min"] = mn if o["min"] is None else min(o["min"], mn)
                o["max"] = mx if o["max"] is None else max(o["max"], mx)
    out = {}
    for name, o in ops.items():
        r = {"ios": o["ops"], "io_bytes": o["bytes"], "runtime_ms": runtime_ms,
             "iops": o["ops"] * 1000.0 / runtime_ms if runtime_ms else None,
             "bw_bytes": o["bytes"] * 1000.0 / runtime_ms if runtime_ms else None,
             "probes": o["probes"], "skipped": o["skipped"], "errors": o["errors"]}
        if o["ops"]:
            r.update({"clat_mean_ns": o["lat_sum"] / o["ops"], "clat_min_ns": o["min"],
                      "clat_max_ns": o["max"], "clat_N": o["ops"]})
        out[name] = r
    return out


def engine_of(params: dict) -> str:
    eng = str(params.get("ioengine", ""))
    base = os.path.basename(eng.split(":", 1)[1] if eng.startswith("external:") else eng)
    if base.endswith(".so"):
        base = base[:-3]
    return base


def entry_rows(entry: dict, base: dict, params: dict, cat_metrics: list, exprs: list,
               opstats: list, keep_bins: bool) -> list:
    """Rows of one (merged) job entry: total, each direction with I/O, operations."""
    rows = []
    engine = engine_of(params)
    total = dict(base, direction="total", op="")
    total["params"] = params
    sums = {"ios": 0, "io_bytes": 0, "iops": 0.0, "bw_bytes": 0.0}
    runtime = 0
    for d in DIRECTIONS:
        st = entry.get(d)
        if not st:
            continue
        runtime = max(runtime, st.get("runtime", 0) or 0)
        if not (st.get("total_ios") or st.get("io_bytes")):
            continue
        r = dict(base, direction=d, op="")
        r["params"] = params
        r.update(_direction_stats(st))
        for k in sums:
            sums[k] += r.get(k) or 0
        if keep_bins and "bins" in (st.get("clat_ns") or {}):
            r["clat_bins"] = st["clat_ns"]["bins"]
        rows.append(r)
        if engine == "postmark":
            rows.extend(_postmark_ops(base, params, d, st, r))
    sync = entry.get("sync")
    if sync and (sync.get("total_ios") or (sync.get("lat_ns") or {}).get("N")):
        r = dict(base, direction="sync", op="")
        r["params"] = params
        n = max(sync.get("total_ios", 0), (sync.get("lat_ns") or {}).get("N", 0))
        r["ios"] = n
        r["runtime_ms"] = runtime
        r["iops"] = n * 1000.0 / runtime if runtime else None
        _lat_fields(r, "lat", sync.get("lat_ns"))
        if keep_bins and "bins" in (sync.get("lat_ns") or {}):
            r["lat_bins"] = sync["lat_ns"]["bins"]
        rows.append(r)
        if engine == "postmark":
            t = dict(r, op="transaction")
            t.pop("lat_bins", None)
            rows.append(t)
    total.update(sums)
    total["runtime_ms"] = runtime
    for k in ("usr_cpu", "sys_cpu", "ctx", "majf", "minf"):
        if k in entry:
            total[k] = entry[k]
    if "usr_cpu" in entry and "sys_cpu" in entry:
        total["cpu"] = entry["usr_cpu"] + entry["sys_cpu"]
    if "job_runtime" in entry:
        total["job_runtime_ms"] = entry["job_runtime"]
    if "elapsed" in entry:
        total["elapsed_s"] = entry["elapsed"]
    total["error"] = entry.get("error", 0)
    for m in cat_metrics:
        if m.get("job") and m["job"] != entry.get("jobname"):
            continue
        try:
            v = _study.eval_metric(m["expr"], entry)
        except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
            continue
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            total["m:" + m["name"]] = v
    for ex in exprs:
        try:
            v = _study.eval_metric(ex, entry)
        except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
            continue
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            total["x:" + ex] = v
    if opstats:
        for name, s in _ops_from_opstats(opstats, runtime).items():
            d = SMALLFILE_DIRECTION.get(name, "read")
            r = dict(base, direction=d, op=name)
            r["params"] = params
            r.update(s)
            rows.append(r)
    return [total] + rows


def _postmark_ops(base, params, d, st, drow) -> list:
    """PostMark's operation classes: write.prios prio 1 = create, 2 = append."""
    out = []
    if d == "write":
        for p in st.get("prios") or []:
            name = {1: "create", 2: "append"}.get(p.get("prio"))
            lat = p.get("clat_ns") or {}
            if not name or not lat.get("N"):
                continue
            r = dict(base, direction="write", op=name)
            r["params"] = params
            r["ios"] = lat["N"]
            r["runtime_ms"] = st.get("runtime", 0)
            r["iops"] = lat["N"] * 1000.0 / r["runtime_ms"] if r["runtime_ms"] else None
            _lat_fields(r, "clat", lat)
            out.append(r)
    else:
        name = {"read": "read", "trim": "delete"}[d]
        r = dict(drow, op=name)
        r.pop("clat_bins", None)
        out.append(r)
    return out


# ---------------------------------------------------------------------------
# Runs and the data set
# ---------------------------------------------------------------------------

class Run:
    """One fio invocation's result and what is known about it."""
    __slots__ = ("id", "study", "scenario", "source", "host", "target", "target_path",
                 "repeat", "fio_version", "timestamp", "sha256", "params", "meta", "identity",
                 "device")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


class Dataset:
    def __init__(self):
        self.runs = []
        self.rows = []
        self.scenarios = {}      # id -> catalogue entry
        self.inputs = []         # {"path", "kind", "runs", ...}
        self.notes = []          # things left out, with the reason
        self.by_hash = {}
        self.args = []           # the inputs as given

    # -- what is in it -----------------------------------------------------
    def fio_versions(self) -> list:
        return sorted({r.fio_version for r in self.runs if r.fio_version})

    def param_names(self, rows=None) -> list:
        names = set()
        for r in rows if rows is not None else self.rows:
            names.update(r["params"])
        return sorted(names)

    def provenance(self) -> dict:
        return {"arguments": self.args, "inputs": self.inputs, "runs": len(self.runs),
                "studies": sorted({r.study for r in self.runs if r.study}),
                "scenarios": sorted({r.scenario for r in self.runs if r.scenario}),
                "fio_versions": self.fio_versions(), "left_out": self.notes}


class Loader:
    """Reads inputs into a Dataset. exprs: extra metric expressions to evaluate."""

    def __init__(self, catalogue=None, scenario=None, include_failed=False, labels=None,
                 exprs=(), keep_bins=False, warn=None):
        self.catalogue_path = Path(catalogue) if catalogue else DEFAULT_CATALOGUE
        self.catalogue_given = bool(catalogue)
        self.catalogue = None
        self.forced_scenario = scenario
        self.include_failed = include_failed
        self.labels = dict(labels or {})
        self.exprs = list(exprs)
        self.keep_bins = keep_bins
        self.warn = warn or (lambda msg: None)
        self.ds = Dataset()
        self._plain = []

    # -- catalogue -----------------------------------------------------------
    def _cat(self) -> dict:
        if self.catalogue is None:
            try:
                self.catalogue = json.loads(self.catalogue_path.read_text())
            except FileNotFoundError:
                self.catalogue = {"scenarios": []}
                if self.forced_scenario or self.catalogue_given:
                    raise AnalysisError(f"--catalogue {self.catalogue_path}: no such file")
            except ValueError as e:
                raise AnalysisError(f"{self.catalogue_path}: not a readable catalogue: {e}")
        return self.catalogue

    def _scenario_entry(self, sid):
        for sc in self._cat().get("scenarios", []):
            if sc.get("id") == sid:
                return sc
        ids = [sc.get("id") for sc in self._cat().get("scenarios", [])]
        import difflib
        close = difflib.get_close_matches(sid, ids, 3)
        raise AnalysisError(f"--scenario {sid}: not in {self.catalogue_path}"
                            + (f" (did you mean {', '.join(close)}?)" if close else ""))

    def _infer_scenario(self, entries: list):
        """The catalogue scenario whose metric jobs are all here and all give numbers."""
        names = {e.get("jobname") for e in entries}
        found = []
        for sc in self._cat().get("scenarios", []):
            ms = sc.get("metrics") or []
            jobs = {m.get("job") for m in ms}
            if not ms or None in jobs or not jobs <= names:
                continue
            good = True
            for m in ms:
                e = [x for x in entries if x.get("jobname") == m["job"]]
                try:
                    v = _study.eval_metric(m["expr"], e[0])
                except Exception:
                    good = False
                    break
                if not isinstance(v, (int, float)) or not v or not math.isfinite(v):
                    good = False
                    break
            if good:
                found.append(sc)
        return found[0] if len(found) == 1 else None

    # -- inputs --------------------------------------------------------------
    def add(self, path) -> None:
        p = Path(path)
        self.ds.args.append(str(p))
        if not p.exists():
            raise AnalysisError(f"{p}: no such file or directory")
        if p.is_dir():
            if _is_study_dir(p):
                self._add_study(p)
                return
            before = len(self.ds.runs) + len(self._plain)
            looked = self._add_dir(p)
            if len(self.ds.runs) + len(self._plain) == before:
                raise AnalysisError(f"{p}: no fio results in this directory ({looked} files "
                                    f"looked at; a study results directory has study.json "
                                    f"and runs/)")
            return
        study_dir = p.parent.parent if p.parent.name == "runs" else None
        if study_dir is not None and _is_study_dir(study_dir):
            with open(p, "rb") as fh:
                if b'"fio version"' in fh.read(256):
                    # one run of a study: its meta file says what it is
                    self._add_study(study_dir, only={p.resolve()})
                    return
        self._add_file(p, explicit=True)

    def _add_dir(self, d: Path) -> int:
        looked = 0
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames.sort()
            sub = Path(dirpath)
            if sub != d and _is_study_dir(sub):
                self._add_study(sub)
                dirnames[:] = []
                continue
            for fn in sorted(filenames):
                looked += 1
                self._add_file(sub / fn, explicit=False)
        return looked

    def _add_file(self, p: Path, explicit: bool) -> None:
        try:
            data = p.read_bytes()
        except OSError as e:
            raise AnalysisError(f"{p}: cannot read: {e.strerror}")
        if not explicit and not looks_like_fio(data):
            return
        text = data.decode("utf-8", errors="replace")
        doc, pre, js = parse_fio_text(text, str(p))
        h = sha256_bytes(js.encode())
        self._plain.append((p, doc, pre, h))
        self.ds.inputs.append({"path": str(p), "kind": "fio JSON", "sha256": h, "runs": 1})

    def _add_study(self, d: Path, only=None) -> None:
        try:
            st = json.loads((d / "study.json").read_text())
        except ValueError as e:
            raise AnalysisError(f"{d / 'study.json'}: not valid JSON: {e}")
        sc = st.get("scenario") or {}
        sid = sc.get("id") or "?"
        started = re.sub(r"[-:]|\.\d+", "", st.get("started") or "") or "unstarted"
        study_id = f"{sid}@{started}"
        if sid not in self.ds.scenarios and sc:
            self.ds.scenarios[sid] = sc
        runs_dir = d / "runs"
        metas = {}
        if runs_dir.is_dir():
            for f in sorted(runs_dir.iterdir()):
                if not f.is_file():
                    continue
                with open(f, "rb") as fh:
                    head = fh.read(256)
                if not head.lstrip().startswith(b"{") or b'"fio version"' in head:
                    continue      # job files, fio's stdout; results: reached from their meta
                data = f.read_bytes()
                try:
                    m = json.loads(data)
                except ValueError:
                    raise AnalysisError(f"{f}: a study run's meta file that is not valid JSON "
                                        f"(truncated?)")
                if isinstance(m, dict) and {"run", "scenario", "ok"} <= m.keys():
                    metas[m["run"]] = m
        local = st.get("local") or {}
        n_used = n_found = 0
        for run_no, meta in sorted(metas.items()):
            rp = runs_dir / ("%04d.json" % run_no)
            if only is not None and rp.resolve() not in only:
                continue
            if not meta.get("ok") and not self.include_failed:
                self.ds.notes.append(f"{d}: run {run_no} failed ({meta.get('problem')}); left out")
                self.warn(f"{d}: run {run_no:04d} failed ({meta.get('problem')}); left out")
                continue
            if not rp.is_file():
                self.ds.notes.append(f"{d}: run {run_no} has no fio JSON; left out")
                continue
            data = rp.read_bytes()
            doc, pre, js = parse_fio_text(data.decode("utf-8", errors="replace"), str(rp))
            _check_meta(rp, doc, meta)
            h = sha256_bytes(js.encode())
            tgt = meta.get("target") or {}
            dev = tgt.get("device") or {}
            host = meta.get("host") or "local"
            hostname = ((meta.get("remote") or {}).get("server_name") if host != "local"
                        else local.get("hostname"))
            run = Run(id=f"{study_id}#{run_no:04d}", study=study_id, scenario=sid, source=str(rp),
                      host=host, target=self.labels.get(tgt.get("label"), tgt.get("label")),
                      target_path=tgt.get("path"), repeat=meta.get("repeat"),
                      fio_version=doc.get("fio version"), timestamp=_timestamp(doc),
                      sha256=h, params=dict(meta.get("params") or {}), meta=meta,
                      device=dev)
            n_found += 1
            if self._register(run, rp):
                self._normalise(run, doc, sc, hostname, remote=host != "local",
                                result_dir=rp.parent)
                n_used += 1
        self.ds.inputs.append({"path": str(d), "kind": "study", "study": study_id,
                               "runs": n_used, "status": st.get("status"),
                               "sha256": sha256_bytes((d / "study.json").read_bytes())})
        if not n_found:
            raise AnalysisError(f"{d}: study results directory without a complete, "
                                f"successful run (status {st.get('status')!r})")

    def _register(self, run: Run, path) -> bool:
        prev = self.ds.by_hash.get(run.sha256)
        if prev is not None:
            msg = f"{path}: the same fio result as {prev.source}; counted once"
            self.ds.notes.append(msg)
            self.warn(msg)
            return False
        self.ds.by_hash[run.sha256] = run
        self.ds.runs.append(run)
        return True

    def finish(self) -> Dataset:
        """Plain fio results: scenario, target, repeats from their content."""
        ds = self.ds
        plain = []
        for p, doc, pre, h in self._plain:
            entries = doc.get("jobs") or doc.get("client_stats") or []
            if self.forced_scenario:
                sc = self._scenario_entry(self.forced_scenario)
            else:
                sc = self._infer_scenario([e for e in entries
                                           if e.get("jobname") != "All clients"])
            sid = sc["id"] if sc else None
            if sc and sid not in ds.scenarios:
                ds.scenarios[sid] = sc
            run = Run(id=f"fio@{_timestamp(doc) or 0}-{h[:10]}", study=None, scenario=sid,
                      source=str(p), host=None, target=None, target_path=None, repeat=None,
                      fio_version=doc.get("fio version"), timestamp=_timestamp(doc), sha256=h,
                      params={}, meta=None, device={})
            if self._register(run, p):
                plain.append((run, doc, sc, p, _server_name(pre, doc)))
        first_rows = {}
        for run, doc, sc, p, name in plain:
            start = len(ds.rows)
            self._normalise(run, doc, sc, name, remote="client_stats" in doc,
                            result_dir=Path(p).parent)
            first_rows[run.id] = ds.rows[start:]
            ident = (run.scenario, tuple(sorted(
                (r["host"], r["target"], r["job"], _workload(r["params"]))
                for r in ds.rows[start:] if r["direction"] == "total")))
            run.identity = ident
        groups = {}
        for run, *_ in plain:
            groups.setdefault(run.identity, []).append(run)
        for runs in groups.values():
            runs.sort(key=lambda r: (r.timestamp or 0, r.sha256))
            for i, run in enumerate(runs, 1):
                run.repeat = i
                for r in first_rows[run.id]:
                    r["repeat"] = i
        self._plain = []
        if not ds.runs:
            raise AnalysisError("no fio results in the inputs")
        return ds

    # -- one result ----------------------------------------------------------
    def _normalise(self, run: Run, doc: dict, sc: dict, hostname, remote: bool,
                   result_dir: Path) -> None:
        client = "client_stats" in doc
        entries = doc.get("client_stats") if client else doc.get("jobs")
        entries = entries or []
        gopts = doc.get("global options") or {}
        cat_metrics = (sc or {}).get("metrics") or []
        aliases = {}
        for name, opts in ((sc or {}).get("params") or {}).items():
            for o in ([opts] if isinstance(opts, str) else opts):
                aliases[name] = o
        groups = {}
        for e in entries:
            if not isinstance(e, dict):
                continue
            if e.get("error") and not self.include_failed:
                msg = (f"{run.source}: job {e.get('jobname')} ended with error {e['error']}; "
                       f"left out")
                self.ds.notes.append(msg)
                self.warn(msg)
                continue
            key = (e.get("jobname"), e.get("hostname"), e.get("port"), e.get("groupid"))
            groups.setdefault(key, []).append(e)
        for (job, ehost, eport, gid), es in groups.items():
            entry = merge_clones(es)
            if not self.keep_bins:
                _drop_bins(entry)
            aggregate = job == "All clients"
            opts = {} if aggregate else dict(gopts, **(entry.get("job options") or {}))
            params = {k: param_value(k, v) for k, v in opts.items()}
            for k, v in OPTION_DEFAULTS.items():
                params.setdefault(k, v)
            for name, opt in aliases.items():
                if opt in params and name not in params:
                    params[name] = params[opt]
            params.update(run.params or {})
            if aggregate:
                host = "all"
            elif run.meta is not None:
                host = run.host
            elif ehost is not None:
                host = f"{ehost}:{eport}" if eport else str(ehost)
            else:
                host = "local"
            target, tpath = run.target, run.target_path
            if run.meta is None:
                tpath = _target_path(opts)
                target = self.labels.get(tpath, tpath) if tpath else "-"
            hn = hostname if hostname else (ehost if ehost is not None else "local")
            base = {"run": run.id, "study": run.study, "scenario": run.scenario,
                    "host": host, "hostname": hn, "target": target, "target_path": tpath,
                    "job": job, "groupid": gid, "repeat": run.repeat, "clones": len(es),
                    "fio_version": run.fio_version, "timestamp": run.timestamp,
                    "device_name": (run.device or {}).get("name"),
                    "device_model": (run.device or {}).get("model"),
                    "rotational": (run.device or {}).get("rotational"),
                    "source": run.source, "aggregate": aggregate}
            opstats = []
            # opstats_file: the option's name before tree_opstats_file (an alias until the next release)
            ops_path = opts.get("tree_opstats_file") or opts.get("opstats_file")
            if engine_of(params) == "smallfile" and ops_path and not remote:
                opstats = self._opstats(run, ops_path, job, len(es),
                                        int(params.get("numjobs") or 1), result_dir)
            self.ds.rows.extend(entry_rows(entry, base, params, cat_metrics, self.exprs,
                                           opstats, self.keep_bins))
        if run.host is None:
            run.host = next((r["host"] for r in self.ds.rows[-1:]), "local")

    def _opstats(self, run, path, job, clones, numjobs, result_dir) -> list:
        """The smallfile engine's opstats_file lines of this job, when unambiguous."""
        cands = [Path(path)] if os.path.isabs(path) else [result_dir / path, REPO / path,
                                                          Path.cwd() / path]
        f = next((c for c in cands if c.is_file()), None)
        if f is None:
            self.ds.notes.append(f"{run.source}: job {job}: opstats_file {path} not found; "
                                 f"no per-operation rows")
            return []
        lines = []
        try:
            for line in f.read_text().splitlines():
                if line.strip():
                    rec = json.loads(line)
                    if rec.get("job") == job:
                        lines.append(rec)
        except ValueError:
            self.ds.notes.append(f"{f}: not JSON lines; no per-operation rows for job {job}")
            return []
        subjobs = sorted(r.get("subjob") for r in lines)
        if subjobs != list(range(numjobs)):
            self.ds.notes.append(f"{f}: {len(lines)} lines for job {job} where {numjobs} "
                                 f"belong to one run (the file is shared by several runs?); "
                                 f"no per-operation rows")
            return []
        return lines


def _drop_bins(entry: dict) -> None:
    for d in DIRECTIONS + ("sync",):
        st = entry.get(d)
        if not isinstance(st, dict):
            continue
        for k in ("clat_ns", "lat_ns", "slat_ns"):
            if isinstance(st.get(k), dict):
                st[k].pop("bins", None)


def _server_name(pre: str, doc: dict):
    """The server's own hostname in a client's output of one server: fio's client
    puts it before each of the server's lines ("<db1> Starting 1 process");
    its JSON "hostname" is only the address the client was given."""
    servers = {(e.get("hostname"), e.get("port")) for e in doc.get("client_stats") or []
               if e.get("jobname") != "All clients"}
    names = set(re.findall(r"^<([^>\n]+)> ", pre, re.M))
    return names.pop() if len(servers) == 1 and len(names) == 1 else None


def _is_study_dir(d: Path) -> bool:
    f = d / "study.json"
    if not f.is_file() or not (d / "runs").is_dir():
        return False
    try:
        st = json.loads(f.read_text())
    except ValueError:
        raise AnalysisError(f"{f}: not valid JSON (truncated?)")
    return isinstance(st, dict) and "plan" in st and "scenario" in st


def _timestamp(doc):
    if "timestamp_ms" in doc:
        return doc["timestamp_ms"] / 1000.0
    return doc.get("timestamp")


def _iso_epoch(text):
    import datetime
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except (TypeError, ValueError):
        return None


def _check_meta(path, doc, meta) -> None:
    """The result next to a meta file must be the run the meta file describes."""
    fv = meta.get("fio_version")
    if fv and doc.get("fio version") and fv != doc["fio version"]:
        raise AnalysisError(f"{path}: fio version {doc['fio version']} but its meta file says "
                            f"{fv}: not the result of run {meta['run']}")
    ts, t0, t1 = doc.get("timestamp"), _iso_epoch(meta.get("started")), _iso_epoch(meta.get("ended"))
    if ts and t0 and t1 and not (t0 - 5 <= ts <= t1 + 5):
        raise AnalysisError(f"{path}: fio's timestamp {ts} is outside run {meta['run']}'s "
                            f"start..end ({meta.get('started')} .. {meta.get('ended')}): "
                            f"not the result of that run")


def _target_path(opts: dict):
    fn = str(opts.get("filename") or "")
    if fn.startswith("/dev/"):
        return fn
    for k in ("directory", "tree_dir", "pm_location", "filename"):
        if opts.get(k):
            return str(opts[k])
    return None


def _workload(params: dict) -> tuple:
    return tuple(sorted((k, text_of(v)) for k, v in params.items() if k not in NOT_WORKLOAD))


def load(paths, **kw) -> Dataset:
    if not paths:
        raise AnalysisError("no results given")
    ld = Loader(**kw)
    for p in paths:
        ld.add(p)
    return ld.finish()


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------

LAT_RE = re.compile(r"^(lat|clat|slat)_(mean|min|max|stddev|p\d+(?:\.\d+)?)_(ns|us|ms|s)$")
UNIT_DIV = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
SIMPLE = {
    # name: (row key, divisor, unit, level) ; level "total" = whole job entry
    "iops": ("iops", 1, "IOPS", "any"),
    "bw_bytes": ("bw_bytes", 1, "B/s", "any"),
    "bw_kib": ("bw_bytes", 1024, "KiB/s", "any"),
    "bw": ("bw_bytes", 1024, "KiB/s", "any"),
    "bw_mib": ("bw_bytes", 1 << 20, "MiB/s", "any"),
    "bw_gib": ("bw_bytes", 1 << 30, "GiB/s", "any"),
    "bw_kb": ("bw_bytes", 1e3, "kB/s", "any"),
    "bw_mb": ("bw_bytes", 1e6, "MB/s", "any"),
    "bw_gb": ("bw_bytes", 1e9, "GB/s", "any"),
    "io_bytes": ("io_bytes", 1, "B", "any"),
    "io_mib": ("io_bytes", 1 << 20, "MiB", "any"),
    "io_gib": ("io_bytes", 1 << 30, "GiB", "any"),
    "ios": ("ios", 1, "", "any"),
    "runtime_s": ("runtime_ms", 1e3, "s", "any"),
    "usr_cpu": ("usr_cpu", 1, "%", "total"),
    "sys_cpu": ("sys_cpu", 1, "%", "total"),
    "cpu": ("cpu", 1, "%", "total"),
    "ctx": ("ctx", 1, "", "total"),
    "majf": ("majf", 1, "", "total"),
    "minf": ("minf", 1, "", "total"),
    "job_runtime_s": ("job_runtime_ms", 1e3, "s", "total"),
    "elapsed_s": ("elapsed_s", 1, "s", "total"),
    "errors": ("errors", 1, "", "op"),
    "probes": ("probes", 1, "", "op"),
    "skipped": ("skipped", 1, "", "op"),
}
LOWER_IS_BETTER_UNITS = {"ns", "us", "ms", "s", "%"}
TIME_UNITS = {"ns", "us", "ms", "s"}


class Metric:
    """A metric name resolved against a data set.

    kind "cat": a catalogue metric (expression on the scenario's job entry);
    "expr": an expression given as expr:...; "gen": a generic name with an
    optional qualifier (direction, operation, or DIRECTION:OPERATION).
    """

    def __init__(self, text, kind, name, unit, key=None, div=1.0, qual=None, level="any",
                 expr=None, job=None):
        self.text, self.kind, self.name, self.unit = text, kind, name, unit
        self.key, self.div, self.qual, self.level = key, div, qual, level
        self.expr, self.job = expr, job

    @property
    def label(self) -> str:
        return f"{self.text} ({self.unit})" if self.unit else self.text

    @property
    def lower_is_better(self) -> bool:
        if self.kind == "gen" and self.key in ("ctx", "majf", "minf", "errors"):
            return True
        return self.unit in LOWER_IS_BETTER_UNITS

    def describe(self) -> str:
        if self.kind == "cat":
            return f"{self.expr}" + (f" on job {self.job}" if self.job else "")
        if self.kind == "expr":
            return self.expr
        q = self.qual or "(total, or the one direction with I/O)"
        return f"{self.name} of {q}"

    def rows_of(self, rows, any_op=False):
        """(row, value) for every row that has this metric.

        A direction qualifier means the whole direction (op ""), unless any_op
        (the table pivots or filters on op): then each operation of it too.
        """
        if self.kind in ("cat", "expr"):
            k = ("m:" if self.kind == "cat" else "x:") + self.name
            for r in rows:
                if r["direction"] == "total" and k in r:
                    yield r, r[k]
            return
        q = self.qual
        for r in rows:
            if q is None:
                if self.level == "total" or self.level == "any":
                    if r["direction"] != "total":
                        continue
                elif self.level == "lat":
                    if r["direction"] == "total" or r["op"]:
                        continue
                elif self.level == "op" and not r["op"]:
                    continue
            else:
                d, _, op = q.partition(":")
                if op:
                    if r["direction"] != d or r["op"] != op:
                        continue
                elif d in ALL_DIRECTIONS:
                    if r["direction"] != d or (r["op"] and not any_op):
                        continue
                elif r["op"] != d:
                    continue
            v = r.get(self.key)
            if v is None:
                continue
            yield r, (v / self.div if self.div != 1 else v)


def parse_metric(text: str, ds: Dataset, rows=None) -> Metric:
    text = text.strip()
    if not text:
        raise AnalysisError("empty metric name")
    cat = {}
    for sid, sc in ds.scenarios.items():
        for m in sc.get("metrics") or []:
            cat.setdefault(m["name"], []).append((sid, m))
    if text in cat:
        sid, m = cat[text][0]
        units = {mm.get("unit") for _, mm in cat[text]}
        return Metric(text, "cat", text, m.get("unit", "") if len(units) == 1 else "",
                      expr=m["expr"], job=m.get("job"))
    if text.startswith("expr:"):
        return Metric(text, "expr", text[5:].strip(), "", expr=text[5:].strip())
    qual, name = None, text
    if "." in text:
        head, rest = text.split(".", 1)
        if head in ALL_DIRECTIONS or ":" in head or head in _ops_in(ds):
            qual, name = head, rest
        if qual and ":" in qual and qual.split(":")[0] not in ALL_DIRECTIONS:
            raise AnalysisError(f"metric {text}: {qual.split(':')[0]} is not a direction "
                                f"(total, read, write, trim, sync)")
    m = LAT_RE.match(name)
    if m:
        kind, stat, unit = m.groups()
        return Metric(text, "gen", name, unit, key=f"{kind}_{stat}_ns", div=UNIT_DIV[unit],
                      qual=qual, level="lat")
    if name in SIMPLE:
        key, div, unit, level = SIMPLE[name]
        if unit == "IOPS" and _engine_rows(ds, "smallfile", "postmark"):
            unit = "ops/s"
        return Metric(text, "gen", name, unit, key=key, div=div, qual=qual, level=level)
    known = sorted(cat)
    raise AnalysisError(
        f"unknown metric {text!r}: use a catalogue metric of the results' scenarios"
        + (f" ({', '.join(repr(k) for k in known)})" if known else " (none known)")
        + ", expr:EXPRESSION, or a generic name [DIRECTION[:OP].]NAME with NAME one of "
        + ", ".join(sorted(SIMPLE)) + ", {lat,clat,slat}_{mean,min,max,stddev,pNN}_{ns,us,ms,s}"
        + " (docs/analysis.md)")


def _ops_in(ds: Dataset) -> set:
    return {r["op"] for r in ds.rows if r["op"]}


def _engine_rows(ds, *engines) -> bool:
    return any(engine_of(r["params"]) in engines for r in ds.rows[:200])


# ---------------------------------------------------------------------------
# Selecting rows
# ---------------------------------------------------------------------------

def parse_where(items) -> list:
    out = []
    for it in items or []:
        m = re.match(r"^\s*([^=!<>\s]+)\s*(!=|=)\s*(.*)$", it)
        if not m:
            raise AnalysisError(f"--where {it!r}: expected NAME=VALUE[,VALUE...] or NAME!=VALUE")
        out.append((m.group(1), m.group(2), [v.strip() for v in m.group(3).split(",")]))
    return out


def field_of(row: dict, name: str):
    if name in FIELDS or name == "aggregate":
        return row.get(name)
    return row["params"].get(name, _MISSING)


_MISSING = object()


def check_names(rows, names, what) -> None:
    """Every name must be a field or a parameter of some row."""
    params = set()
    for r in rows:
        params.update(r["params"])
    for n in names:
        if n in FIELDS or n == "aggregate" or n in params:
            continue
        import difflib
        close = difflib.get_close_matches(n, sorted(params) + list(FIELDS), 3)
        raise AnalysisError(
            f"{what} {n}: no such parameter in the results"
            + (f" (did you mean {', '.join(close)}?)" if close else "")
            + f"; fields: {', '.join(FIELDS[:12])}; parameters: "
            + ", ".join(sorted(params)[:60]) + (" ..." if len(params) > 60 else ""))


def select(rows, where) -> list:
    """Rows matching every --where; the "All clients" aggregate only when asked for."""
    where = where or []
    check_names(rows, [w[0] for w in where], "--where")
    want_agg = any(w[0] in ("job", "host", "aggregate") for w in where)
    out = []
    for r in rows:
        if r.get("aggregate") and not want_agg:
            continue
        ok = True
        for name, op, vals in where:
            v = field_of(r, name)
            s = "" if v is _MISSING or v is None else text_of(v)
            hit = s in vals or (name in SIZE_OPTIONS and any(canonical_size(x) == s for x in vals))
            if (op == "=") != hit:
                ok = False
                break
        if ok:
            out.append(r)
    return out


# ---------------------------------------------------------------------------
# Statistics over repeats
# ---------------------------------------------------------------------------

class Stats:
    __slots__ = ("values", "runs", "n", "median", "min", "max", "mean", "stdev", "cv")

    def __init__(self, values, runs=()):
        self.values = list(values)
        self.runs = list(runs)
        self.n = len(self.values)
        self.median = statistics.median(self.values)
        self.min, self.max = min(self.values), max(self.values)
        self.mean = statistics.fmean(self.values)
        self.stdev = statistics.stdev(self.values) if self.n > 1 else None
        self.cv = (self.stdev / self.mean if self.stdev is not None and self.mean else None)

    def get(self, stat):
        return getattr(self, stat)


COMBINE = {"sum": sum, "mean": statistics.fmean, "min": min, "max": max}


def per_run_values(metric: Metric, rows, dims, combine=None, any_op=False) -> dict:
    """{key tuple: {run id: (value, [rows])}} for the metric, one value per run."""
    cells = {}
    for r, v in metric.rows_of(rows, any_op or "op" in dims):
        key = tuple(_dim_value(r, d) for d in dims)
        cells.setdefault(key, {}).setdefault(r["run"], []).append((r, v))
    out = {}
    for key, runs in cells.items():
        out[key] = {}
        for run, items in runs.items():
            if len(items) > 1:
                if not combine:
                    raise AnalysisError(_ambiguity(metric, key, dims, run, items))
                v = COMBINE[combine]([v for _, v in items])
            else:
                v = items[0][1]
            out[key][run] = (v, [r for r, _ in items])
    return out


def _dim_value(r, d):
    v = field_of(r, d)
    return None if v is _MISSING else v


def _ambiguity(metric, key, dims, run, items) -> str:
    diff = {}
    for f in IDENTITY_FIELDS + ("groupid",):
        vals = sorted({text_of(r.get(f)) for r, _ in items})
        if len(vals) > 1:
            diff[f] = vals
    if not diff:
        ws = [_workload(r["params"]) for r, _ in items]
        names = sorted({k for w in ws for k, _ in w if len({dict(x).get(k) for x in ws}) > 1})
        if names:
            diff[names[0]] = sorted({text_of(r["params"].get(names[0])) for r, _ in items})
    cell = ", ".join(f"{d}={text_of(v)}" for d, v in zip(dims, key)) or "the table"
    which = "; ".join(f"{f} ({', '.join(v)})" for f, v in diff.items()) or "nothing: duplicates"
    if metric.kind == "gen" and metric.qual is None and ("direction" in diff or "op" in diff):
        quals = [r["direction"] + (":" + r["op"] if r["op"] else "") for r, _ in items]
        hint = "qualify the metric: " + " or ".join(f"{q}.{metric.name}" for q in quals)
    else:
        f = next(iter(diff), "job")
        hint = (f"choose one with --where {f}=VALUE, add {f} to --rows/--cols, or combine "
                f"them with --combine sum|mean|min|max")
    return (f"metric {metric.text}: run {run} has {len(items)} values for {cell}; they "
            f"differ in {which}: {hint}")


def check_homogeneous(cell_runs: dict, dims, metric) -> None:
    """Runs pooled in one cell must be repeats: same identity apart from the dims."""
    for key, runs in cell_runs.items():
        idents = {}
        for run, (v, rows) in runs.items():
            r = rows[0]
            ident = {f: text_of(r.get(f)) for f in IDENTITY_FIELDS if f not in dims}
            ident.update({k: v for k, v in _workload(r["params"]) if k not in dims})
            idents[run] = ident
        if len(idents) < 2:
            continue
        names = set().union(*idents.values())
        differ = sorted(n for n in names if len({i.get(n) for i in idents.values()}) > 1)
        if differ:
            cell = ", ".join(f"{d}={text_of(v)}" for d, v in zip(dims, key)) or "the table"
            show = []
            for n in differ[:3]:
                vals = sorted({"unset" if i.get(n) is None else str(i.get(n))
                               for i in idents.values()}, key=sort_key)
                show.append(f"{n} ({', '.join(vals[:4])}{', ...' if len(vals) > 4 else ''})")
            raise AnalysisError(
                f"metric {metric.text}: the runs pooled in {cell} are not repeats of one "
                f"another: they differ in {'; '.join(show)}: add "
                f"{differ[0]} to --rows/--cols (or --series/--x), or keep one value with "
                f"--where {differ[0]}=VALUE")


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

class Table:
    def __init__(self, metric, row_dims, col_dims, row_keys, col_keys, cells, baseline,
                 ratio_mode, stats, runs):
        self.metric, self.row_dims, self.col_dims = metric, row_dims, col_dims
        self.row_keys, self.col_keys, self.cells = row_keys, col_keys, cells
        self.baseline, self.ratio_mode, self.stats, self.runs = baseline, ratio_mode, stats, runs
        self.form = "columns"    # or "range", "cv": the median and its spread in one cell

    def ratio(self, rk, ck):
        if self.baseline is None or ck == self.baseline:
            return None
        a, b = self.cells.get((rk, ck)), self.cells.get((rk, self.baseline))
        if a is None or b is None:
            return None
        num, den = (a.median, b.median) if self.ratio_mode == "col/base" else (b.median, a.median)
        return num / den if den else None

    def ratio_cols(self):
        if self.baseline is None:
            return []
        return [ck for ck in self.col_keys if ck != self.baseline]

    def ratio_label(self, ck) -> str:
        a, b = key_text(ck), key_text(self.baseline)
        return f"{a}/{b}" if self.ratio_mode == "col/base" else f"{b}/{a}"

    def max_n(self) -> int:
        return max((s.n for s in self.cells.values()), default=0)


def key_text(key) -> str:
    return ", ".join(text_of(v) if v is not None else "-" for v in key)


def _order(values) -> list:
    """Numbers and sizes by magnitude; other text in order of first appearance."""
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    if all(sort_key(v)[0] == 0 for v in seen if v is not None):
        return sorted(seen, key=sort_key)
    return seen


def build_table(ds, metric_text, rows_dims, cols_dims, where=None, baseline=None,
                ratio="auto", stats="auto", combine=None) -> Table:
    rows = select(ds.rows, where)
    check_names(ds.rows, rows_dims + cols_dims, "pivot on")
    if not rows:
        raise AnalysisError("no rows left after --where " + " ".join(
            f"{n}{op}{','.join(v)}" for n, op, v in where or []))
    metric = parse_metric(metric_text, ds, rows)
    dims = list(rows_dims) + list(cols_dims)
    per = per_run_values(metric, rows, dims, combine,
                         any_op=any(w[0] == "op" for w in where or []))
    if not per:
        raise AnalysisError(f"metric {metric.text}: no row of the selected results has it "
                            f"({metric.describe()})")
    check_homogeneous(per, dims, metric)
    nr = len(rows_dims)
    cells, run_ids = {}, set()
    for key, runs in per.items():
        vals = [v for v, _ in runs.values()]
        cells[(key[:nr], key[nr:])] = Stats(vals, list(runs))
        run_ids.update(runs)
    row_keys = _order_keys([k[:nr] for k in per])
    col_keys = _order_keys([k[nr:] for k in per])
    base = None
    if baseline is not None:
        want = [b.strip() for b in baseline.split(",")]
        for ck in col_keys:
            if [text_of(v) for v in ck] == want:
                base = ck
        if base is None:
            raise AnalysisError(f"--baseline {baseline}: not a column; columns: "
                                + "; ".join(key_text(c) for c in col_keys))
    if ratio == "auto":
        ratio = "base/col" if metric.lower_is_better else "col/base"
    if stats == "auto":
        stats_l = ["median"] if max(s.n for s in cells.values()) <= 1 else \
            ["median", "min", "max", "cv", "n"]
    else:
        stats_l = [s.strip() for s in stats.split(",") if s.strip()]
        bad = [s for s in stats_l if s not in ("median", "min", "max", "mean", "cv", "n", "stdev")]
        if bad:
            raise AnalysisError(f"--stats {bad[0]}: not one of median, mean, min, max, "
                                f"stdev, cv, n")
    return Table(metric, list(rows_dims), list(cols_dims), row_keys, col_keys, cells, base,
                 ratio, stats_l, run_ids)


def _order_keys(keys) -> list:
    uniq = []
    for k in keys:
        if k not in uniq:
            uniq.append(k)
    if not uniq or not uniq[0]:
        return uniq[:1]
    n = len(uniq[0])
    orders = [_order([k[i] for k in uniq]) for i in range(n)]
    return sorted(uniq, key=lambda k: tuple(orders[i].index(k[i]) for i in range(n)))


def fmt_num(v, precision=2) -> str:
    if v is None:
        return "-"
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if not math.isfinite(v):
        return str(v)
    if v and abs(v) < 0.1:
        # small values (latencies in ms of a fast device) keep precision+1 significant digits
        return f"{v:.{precision - math.floor(math.log10(abs(v)))}f}"
    return f"{v:.{precision}f}"


def compact_cell(st, form, max_n, precision=2) -> str:
    """"412.35 (405.10–420.20)" (form range) or "412.35 ±1.8%" (cv: sample stdev /
    mean); "(n=2)" after a cell with fewer repeats than the table's most."""
    if st is None:
        return "-"
    s = fmt_num(st.median, precision)
    if st.n > 1 and form == "range":
        s += f" ({fmt_num(st.min, precision)}–{fmt_num(st.max, precision)})"
    elif st.n > 1 and st.cv is not None:
        s += f" ±{st.cv * 100:.1f}%"
    return s + (f" (n={st.n})" if st.n < max_n else "")


def table_grid(t: Table, precision=2, raw=False):
    """(header, body rows) of a table; raw: numbers unformatted (CSV)."""
    head = [*t.row_dims] if t.row_dims else [""]
    if t.form != "columns" and not raw and t.max_n() > 1:
        for ck in t.col_keys:
            head.append(key_text(ck) if ck else t.metric.text)
        head += [t.ratio_label(ck) for ck in t.ratio_cols()]
        body = []
        for rk in t.row_keys:
            line = [text_of(v) if v is not None else "-" for v in rk] if rk else [t.metric.text]
            line += [compact_cell(t.cells.get((rk, ck)), t.form, t.max_n(), precision)
                     for ck in t.col_keys]
            line += [fmt_num(t.ratio(rk, ck), precision) for ck in t.ratio_cols()]
            body.append(line)
        return head, body
    for ck in t.col_keys:
        for s in t.stats:
            name = key_text(ck) if ck else t.metric.text
            head.append(name if len(t.stats) == 1 else
                        f"{name} {'CV' if s == 'cv' else s}")
    for ck in t.ratio_cols():
        head.append(t.ratio_label(ck))
    body = []
    for rk in t.row_keys:
        line = [text_of(v) if v is not None else "-" for v in rk] if rk else [t.metric.text]
        for ck in t.col_keys:
            st = t.cells.get((rk, ck))
            for s in t.stats:
                v = None if st is None else st.get(s)
                if raw:
                    line.append("" if v is None else v)
                elif s == "cv":
                    line.append("-" if v is None else f"{v * 100:.1f}%")
                elif s == "n":
                    line.append("-" if v is None else str(v))
                else:
                    line.append(fmt_num(v, precision))
        for ck in t.ratio_cols():
            v = t.ratio(rk, ck)
            line.append(("" if v is None else v) if raw else fmt_num(v, precision))
        body.append(line)
    return head, body


def table_title(t: Table) -> str:
    n = t.max_n()
    what = "median over repeats" if n > 1 else "one run per cell"
    if n > 1 and t.form != "columns":
        lo = min(s.n for s in t.cells.values())
        what = ("median (min–max)" if t.form == "range" else "median ±CV") + \
            f" of {n if lo == n else f'{lo}-{n}'} repeats"
    return f"{t.metric.label}: {what}"


def render_markdown(tables, prov_line=None, precision=2) -> str:
    out = []
    for t in tables:
        head, body = table_grid(t, precision)
        out.append(f"### {table_title(t)}\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join("---" if i < max(1, len(t.row_dims)) else "---:"
                                  for i in range(len(head))) + "|")
        for line in body:
            out.append("| " + " | ".join(line) + " |")
        if t.baseline is not None:
            out.append("")
            b = key_text(t.baseline)
            how = f"column / {b}" if t.ratio_mode == "col/base" else f"{b} / column"
            good = (t.ratio_mode == "col/base") != t.metric.lower_is_better
            out.append(f"Ratio columns: {how}, of the medians"
                       + ("; above 1 the column is better." if good else "."))
        out.append("")
    if prov_line:
        out.append(f"_{prov_line}_")
        out.append("")
    return "\n".join(out)


def render_csv(tables) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for i, t in enumerate(tables):
        head, body = table_grid(t, raw=True)
        if i:
            w.writerow([])
        w.writerow(["metric", "unit"] + head)
        for line in body:
            w.writerow([t.metric.text, t.metric.unit] + [_csv_val(v) for v in line])
    return buf.getvalue()


def _csv_val(v):
    if isinstance(v, float):
        return repr(v)
    return v


HTML_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #bbb;padding:.3em .6em}
th{background:#eee}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.ratio{text-align:right;background:#f6f6ff}
caption{font-weight:bold;text-align:left;padding:.3em 0}
.prov{font-size:.85em;color:#555}
"""


def render_html(tables, title, prov: dict, precision=2, extra_html="") -> str:
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
             f"<title>{html.escape(title)}</title><style>{HTML_STYLE}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    for t in tables:
        head, body = table_grid(t, precision)
        nr = max(1, len(t.row_dims))
        nratio = len(t.ratio_cols())
        parts.append(f"<table><caption>{html.escape(table_title(t))}</caption><thead><tr>"
                     + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>")
        for line in body:
            cells = []
            for i, c in enumerate(line):
                cls = "" if i < nr else (' class="ratio"' if i >= len(line) - nratio
                                         else ' class="num"')
                tag = "th" if i < nr else "td"
                cells.append(f"<{tag}{cls}>{html.escape(c)}</{tag}>")
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</tbody></table>")
    parts.append(extra_html)
    parts.append(provenance_html(prov))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def provenance_html(prov: dict) -> str:
    items = [f"<li>command: <code>{html.escape(prov.get('command', ''))}</code></li>",
             f"<li>fio: {html.escape(', '.join(prov.get('fio_versions') or []) or 'unknown')}; "
             f"fio-pack {html.escape(prov.get('pack_version', ''))}; generated "
             f"{html.escape(prov.get('generated', ''))}</li>"]
    if prov.get("runs_text"):
        items.append(f"<li>runs used: {html.escape(prov['runs_text'])}</li>")
    inputs = prov.get("inputs") or []
    for i in inputs[:50]:
        items.append(f"<li>input {html.escape(i['path'])} ({html.escape(i['kind'])}, "
                     f"{i.get('runs')} runs, sha256 {html.escape(str(i.get('sha256', ''))[:16])})</li>")
    if len(inputs) > 50:
        items.append(f"<li>... and {len(inputs) - 50} more inputs</li>")
    for n in prov.get("left_out") or []:
        items.append(f"<li>left out: {html.escape(n)}</li>")
    return "<div class=\"prov\"><h2>Provenance</h2><ul>" + "".join(items) + "</ul></div>"


def provenance(ds: Dataset, argv, extra=None) -> dict:
    import datetime
    import shlex
    p = {"tool": "fio-pack scripts/analyze.py",
         "command": " ".join(shlex.quote(a) for a in argv),
         "generated": datetime.datetime.now(datetime.timezone.utc).strftime(
             "%Y-%m-%dT%H:%M:%SZ"),
         "pack_version": pack_version()}
    p.update(ds.provenance())
    if extra:
        p.update(extra)
    return p


def provenance_line(prov: dict) -> str:
    ins = ", ".join(prov.get("arguments") or [i["path"] for i in prov.get("inputs") or []])
    runs = prov.get("runs_text") or f"{prov['runs']} runs"     # runs_text: what a table used
    return (f"{runs} from {ins}; {', '.join(prov.get('fio_versions') or ['fio ?'])}; "
            f"fio-pack {prov['pack_version']}; {prov['command']}")


# ---------------------------------------------------------------------------
# The normalised rows as CSV / JSON
# ---------------------------------------------------------------------------

CSV_PARAMS = ("rw", "bs", "iodepth", "numjobs", "ioengine", "direct", "size", "runtime")


def metric_columns(rows) -> list:
    keys = set()
    for r in rows:
        keys.update(k for k in r if k not in FIELDS and k not in ("params", "aggregate")
                    and not k.endswith("_bins"))
    lat = sorted((k for k in keys if k.split("_")[0] in LAT_KINDS),
                 key=lambda k: (LAT_KINDS.index(k.split("_")[0]), _lat_order(k)))
    first = [k for k in ("ios", "io_bytes", "runtime_ms", "iops", "bw_bytes", "usr_cpu",
                         "sys_cpu", "cpu", "ctx", "majf", "minf", "job_runtime_ms", "elapsed_s",
                         "error", "probes", "skipped", "errors", "short_ios", "drop_ios")
             if k in keys]
    cat = sorted(k for k in keys if k.startswith(("m:", "x:")))
    return first + lat + cat


def _lat_order(k):
    stat = k.split("_")[1]
    order = ["mean", "min", "max", "stddev", "N"]
    if stat in order:
        return (0, order.index(stat))
    try:
        return (1, float(stat[1:]))
    except ValueError:
        return (2, 0)


def rows_table(ds, rows):
    """(header, list of lists) of the normalised rows."""
    params = [p for p in CSV_PARAMS if any(p in r["params"] for r in rows)]
    varying = sorted(n for n in ds.param_names(rows) if n not in params and n not in NOT_WORKLOAD
                     and len({text_of(r["params"].get(n)) for r in rows}) > 1)
    sweep = sorted({k for run in ds.runs for k in (run.params or {})} - set(params) - set(varying))
    pcols = params + sweep + varying
    mcols = metric_columns(rows)
    head = list(FIELDS) + pcols + mcols
    body = []
    for r in rows:
        body.append([r.get(f) for f in FIELDS] + [r["params"].get(p) for p in pcols]
                    + [r.get(m) for m in mcols])
    return head, body


def rows_json(rows) -> list:
    out = []
    for r in rows:
        d = {k: v for k, v in r.items() if not k.endswith("_bins")}
        out.append(d)
    return out


# ---------------------------------------------------------------------------
# Published figures (the report itself: fioreport.py)
# ---------------------------------------------------------------------------

UNITS = {"B/s": ("bw", 1), "KiB/s": ("bw", 1024), "MiB/s": ("bw", 1 << 20),
         "GiB/s": ("bw", 1 << 30), "kB/s": ("bw", 1e3), "KB/s": ("bw", 1e3),
         "MB/s": ("bw", 1e6), "GB/s": ("bw", 1e9),
         "ns": ("time", 1e-9), "us": ("time", 1e-6), "ms": ("time", 1e-3), "s": ("time", 1.0),
         "ratio": ("ratio", 1), "%": ("percent", 1)}


def unit_factor(src, dst):
    """Multiplier taking a value in unit src to unit dst, or None when not convertible."""
    if src == dst:
        return 1.0
    a, b = UNITS.get(src), UNITS.get(dst)
    if a and b and a[0] == b[0]:
        return a[1] / b[1]
    return None


def load_figures(path) -> dict:
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except OSError as e:
        raise AnalysisError(f"--reference {p}: {e.strerror}")
    except ValueError as e:
        raise AnalysisError(f"--reference {p}: not valid JSON: {e}")
    if not isinstance(doc, dict) or "figures" not in doc:
        raise AnalysisError(f"--reference {p}: not a figures file (no \"figures\"; see "
                            f"reference/README.md)")
    doc["_path"] = str(p)
    doc["_sha256"] = sha256_bytes(p.read_bytes())
    return doc


def _tokens(text) -> set:
    return {t for t in re.split(r"[^a-z0-9-]+", text.lower()) if t}


def pair_metrics(sc: dict, figs: list, pairs: dict) -> dict:
    """{figure metric: catalogue metric name} for the scenario's measured figures."""
    cat = sc.get("metrics") or []
    out = {}
    names = {m["name"] for m in cat}
    for fm, cm in pairs.items():
        if cm not in names:
            raise AnalysisError(f"--pair {cm}={fm}: {cm!r} is not a metric of scenario "
                                f"{sc['id']} ({', '.join(sorted(names))})")
        if fm not in {f["metric"] for f in figs}:
            raise AnalysisError(f"--pair {cm}={fm}: no published figure of scenario {sc['id']} "
                                f"has metric {fm!r} ({', '.join(sorted({f['metric'] for f in figs}))})")
        out[fm] = cm
    for f in figs:
        fm = f["metric"]
        if fm in out or f.get("kind") not in ("measured",):
            continue
        fu = f.get("unit_normalised")
        cands = [m for m in cat if fu and (unit_factor(fu, m.get("unit")) is not None
                                           or fu == m.get("unit"))]
        if len(cands) > 1:
            ft = _tokens(fm)
            scored = sorted(((len(ft & _tokens(m["name"])) / len(ft | _tokens(m["name"])), m["name"])
                             for m in cands), reverse=True)
            if scored[0][0] > 0 and (len(scored) == 1 or scored[0][0] > scored[1][0]):
                out[fm] = scored[0][1]
        elif len(cands) == 1:
            out[fm] = cands[0]["name"]
    return out


def _devices(figs) -> dict:
    """device_id -> display name (the first name the article gives it)."""
    out = {}
    for f in figs:
        did = f.get("device_id") or f.get("device")
        if did and did not in out and f.get("kind") == "measured":
            out[did] = f.get("device")
    return out


def resolve_maps(maps, figs, targets) -> list:
    """[(device_id, target label)] from --map DEVICE=TARGET (either order)."""
    devs = _devices(figs)
    by_name = {}
    for f in figs:
        for k in (f.get("device_id"), f.get("device")):
            if k and f.get("device_id"):
                by_name.setdefault(k.lower(), f["device_id"])
    out = []
    for m in maps or []:
        a, sep, b = m.partition("=")
        if not sep:
            raise AnalysisError(f"--map {m!r}: expected DEVICE=TARGET (a published device id "
                                f"and a measured target label)")
        a, b = a.strip(), b.strip()
        if a.lower() in by_name and b in targets:
            out.append((by_name[a.lower()], b))
        elif b.lower() in by_name and a in targets:
            out.append((by_name[b.lower()], a))
        else:
            which = []
            if a.lower() not in by_name and b.lower() not in by_name:
                which.append(f"neither {a!r} nor {b!r} is a published device "
                             f"({', '.join(f'{k} ({v})' for k, v in devs.items())})")
            if a not in targets and b not in targets:
                which.append(f"neither {a!r} nor {b!r} is a measured target "
                             f"({', '.join(sorted(targets))})")
            raise AnalysisError(f"--map {m}: " + "; ".join(which or ["ambiguous"]))
    return out



# ---------------------------------------------------------------------------
# Regression check
# ---------------------------------------------------------------------------

def parse_threshold(text: str):
    m = re.fullmatch(r"\s*(.+?)\s*=\s*([+-]?\d+(?:\.\d+)?)\s*(%?)\s*", text)
    if not m:
        raise AnalysisError(f"--threshold {text!r}: expected METRIC=PCT% (relative) or "
                            f"METRIC=NUMBER (absolute, in the metric's unit)")
    return m.group(1), float(m.group(2)), bool(m.group(3))


def compare(old, new, thresholds, where=None, ignore=(), sense=None):
    """Comparisons of medians per aligned key; returns (results, problems)."""
    ignore = set(ignore or ())
    sense = sense or {}
    results = []
    for text, limit, rel in thresholds:
        mo = parse_metric(text, old, old.rows)
        mn = parse_metric(text, new, new.rows)
        lower = sense.get(text, "lower" if mo.lower_is_better else "higher") == "lower"
        vo = _aligned(mo, select(old.rows, where), ignore)
        vn = _aligned(mn, select(new.rows, where), ignore)
        if not vo and not vn:
            raise AnalysisError(f"--threshold {text}: neither result set has metric {text} "
                                f"({mo.describe()})")
        for key in sorted(set(vo) | set(vn), key=lambda k: str(k)):
            a, b = vo.get(key), vn.get(key)
            res = {"metric": text, "unit": mo.unit, "key": key, "limit": limit, "relative": rel,
                   "lower_is_better": lower,
                   "old": Stats(a) if a else None, "new": Stats(b) if b else None}
            if a is None or b is None:
                res["verdict"] = "missing in new" if b is None else "new only"
                res["change"] = None
            else:
                o, n = res["old"].median, res["new"].median
                change = (n - o) / o if rel and o else (n - o) if not rel else None
                res["change"] = change
                if change is None:
                    res["verdict"] = "REGRESSION" if n != o else "ok"   # old value 0
                else:
                    lim = limit / 100.0 if rel else limit
                    worse = (change > lim) if lower else (change < -lim)
                    better = (change < -lim) if lower else (change > lim)
                    res["verdict"] = "REGRESSION" if worse else "improved" if better else "ok"
            results.append(res)
    return results


def _aligned(metric, rows, ignore) -> dict:
    out = {}
    for r, v in metric.rows_of(rows):
        key = tuple((f, text_of(r.get(f))) for f in IDENTITY_FIELDS if f not in ignore) + \
            tuple((k, v2) for k, v2 in _workload(r["params"]) if k not in ignore)
        out.setdefault(key, []).append(v)
    return out


def key_label(key, varying) -> str:
    return " ".join(f"{k}={v}" for k, v in key if k in varying) or "(all)"


def varying_keys(results) -> set:
    vals = {}
    for r in results:
        for k, v in r["key"]:
            vals.setdefault(k, set()).add(v)
    always = {"target", "job"}
    return {k for k, vs in vals.items() if len(vs) > 1 or k in always}
