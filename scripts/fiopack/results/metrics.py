"""Metrics over the normalised rows: the metric names (generic, qualified and
the catalogue's), selecting rows with --where, and statistics over
repeats."""
import re
import statistics

from fiopack.results.data import (ALL_DIRECTIONS, AnalysisError, Dataset, FIELDS,
                                  IDENTITY_FIELDS, SIZE_OPTIONS, workload, canonical_size,
                                  engine_of, sort_key, text_of)


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
        key = tuple(dim_value(r, d) for d in dims)
        cells.setdefault(key, {}).setdefault(r["run"], []).append((r, v))
    out = {}
    for key, runs in cells.items():
        out[key] = {}
        for run, items in runs.items():
            if len(items) > 1:
                if not combine:
                    raise AnalysisError(ambiguity(metric, key, dims, run, items))
                v = COMBINE[combine]([v for _, v in items])
            else:
                v = items[0][1]
            out[key][run] = (v, [r for r, _ in items])
    return out


def dim_value(r, d):
    v = field_of(r, d)
    return None if v is _MISSING else v


def ambiguity(metric, key, dims, run, items) -> str:
    diff = {}
    for f in IDENTITY_FIELDS + ("groupid",):
        vals = sorted({text_of(r.get(f)) for r, _ in items})
        if len(vals) > 1:
            diff[f] = vals
    if not diff:
        ws = [workload(r["params"]) for r, _ in items]
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
            ident.update({k: v for k, v in workload(r["params"]) if k not in dims})
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


def split_dims(text) -> list:
    """"target,host" -> ["target", "host"]: the names of --rows, --cols, --series."""
    return [d.strip() for d in text.split(",") if d.strip()] if text else []
