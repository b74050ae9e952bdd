"""fioresults - fio results as one normalised table, and what is computed from it.

Library behind scripts/fio-pack analyze (docs/analysis.md). It reads:

  * study results directories written by scripts/fio-pack study (study.json,
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
import hashlib
import json
import math
import os
import re
import statistics
import subprocess
from pathlib import Path

from fiopack import REPO, UserError, documents, inputs
from fiopack import catalogue  # the catalogue, its metric expressions
from fiopack.catalogue import DEFAULT as DEFAULT_CATALOGUE

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


class AnalysisError(UserError):
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
    try:
        # a number kept as text (a key's value, "0.5"): by magnitude too
        f = float(value)
        if math.isfinite(f):
            return (0, f, str(value))
    except ValueError:
        pass
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
    and, in client mode, the servers' lines before the document; where the
    document starts is catalogue.split_json's to say, as for the study runner.
    """
    pre, js = catalogue.split_json(text)
    if js is None:
        raise AnalysisError(f"{where}: not fio JSON output: there is no JSON document in it")
    try:
        doc, end = _DECODER.raw_decode(js)
    except RecursionError:
        raise AnalysisError(f"{where}: not fio JSON output: nested too deep to be fio's")
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
    check_document(doc, documents.FIO_OUTPUT, where, "not fio JSON output as fio writes it")
    return doc, pre, js[:end]


def check_document(doc, shape, where: str, what: str) -> None:
    """@doc (read from @where) of the shape documents.py describes, else one
    line: "WHERE: WHAT: jobs[0].read: a string, not an object"."""
    try:
        documents.check(doc, shape)
    except documents.ShapeError as e:
        raise AnalysisError(f"{where}: {what}: {e}")


def read_json(path: Path, what: str):
    """The JSON document of a file the analysis reads whole (study.json, a
    meta file; the catalogue is catalogue.load's), or one line naming the
    file."""
    data = inputs.read_whole(path, AnalysisError, what)
    try:
        return json.loads(data)
    except RecursionError:
        raise AnalysisError(f"{path}: not {what}: nested too deep")
    except ValueError as e:
        raise AnalysisError(f"{path}: not {what}: not valid JSON ({e})")


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
            v = catalogue.eval_metric(m["expr"], entry)
        except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
            continue
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            total["m:" + m["name"]] = v
    for ex in exprs:
        try:
            v = catalogue.eval_metric(ex, entry)
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
                 exprs=(), keep_bins=False, warn=None, preconditions=False):
        self.catalogue_path = Path(catalogue) if catalogue else DEFAULT_CATALOGUE
        self.catalogue_given = bool(catalogue)
        self.catalogue = None
        self.forced_scenario = scenario
        self.include_failed = include_failed
        self.labels = dict(labels or {})
        self.exprs = list(exprs)
        self.keep_bins = keep_bins
        # fio-pack summary shows one run's precondition (once); the
        # analysis leaves it out of the measured figures
        self.preconditions = preconditions
        self.warn = warn or (lambda msg: None)
        self.ds = Dataset()
        self._plain = []

    # -- catalogue -----------------------------------------------------------
    def _cat(self) -> dict:
        if self.catalogue is None:
            if not self.catalogue_path.exists():
                self.catalogue = {"scenarios": []}
                if self.forced_scenario or self.catalogue_given:
                    raise AnalysisError(f"--catalogue {self.catalogue_path}: no such file")
                return self.catalogue
            self.catalogue = catalogue.load(self.catalogue_path, AnalysisError)
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
                    v = catalogue.eval_metric(m["expr"], e[0])
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
        if not explicit and not p.is_file():
            return      # a FIFO or device found in a directory: not a result
        data = inputs.read_whole(p, AnalysisError, "fio's JSON output")
        if not explicit and not looks_like_fio(data):
            return
        text = data.decode("utf-8", errors="replace")
        doc, pre, js = parse_fio_text(text, str(p))
        h = sha256_bytes(js.encode())
        self._plain.append((p, doc, pre, h))
        self.ds.inputs.append({"path": str(p), "kind": "fio JSON", "sha256": h, "runs": 1})

    def _add_study(self, d: Path, only=None) -> None:
        st = read_json(d / "study.json", "a study's study.json")
        check_document(st, documents.STUDY_RESULTS, str(d / "study.json"),
                       "not a study's study.json")
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
                data = inputs.read_whole(f, AnalysisError, "a study run's meta file")
                try:
                    m = json.loads(data)
                except (ValueError, RecursionError):
                    raise AnalysisError(f"{f}: a study run's meta file that is not valid JSON "
                                        f"(truncated?)")
                if isinstance(m, dict) and {"run", "scenario", "ok"} <= m.keys():
                    check_document(m, documents.RUN_META, str(f), "not a study run's meta file")
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
            data = inputs.read_whole(rp, AnalysisError, "fio's JSON output")
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
                (r["host"], r["target"], r["job"], workload(r["params"]))
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
            if catalogue.is_precondition(job) and not self.preconditions:
                # what the measured jobs read, laid out first: its bytes and
                # time are the run's record (meta.json "precondition"), not
                # a figure of the measured jobs beside theirs
                continue
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
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                if line.strip():
                    rec = json.loads(line)
                    documents.check(rec, documents.OPSTATS_LINE, f"line {n}")
                    if rec.get("job") == job:
                        lines.append(rec)
        except (ValueError, RecursionError, documents.ShapeError) as e:
            self.ds.notes.append(f"{f}: not the engine's JSON lines ({e}); no per-operation "
                                 f"rows for job {job}")
            return []
        subjobs = sorted(r.get("subjob", -1) for r in lines)
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
    st = read_json(f, "a study's study.json (truncated?)")
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


def workload(params: dict) -> tuple:
    return tuple(sorted((k, text_of(v)) for k, v in params.items() if k not in NOT_WORKLOAD))


def load(paths, **kw) -> Dataset:
    if not paths:
        raise AnalysisError("no results given")
    ld = Loader(**kw)
    for p in paths:
        ld.add(p)
    return ld.finish()


# ---------------------------------------------------------------------------
