"""Tables: pivoting the rows into a grid with baseline and ratio columns,
rendered as Markdown, CSV or HTML, each with its provenance; the
normalised rows as CSV or JSON."""
import csv
import html
import io
import math

from fiopack.results.data import (AnalysisError, Dataset, FIELDS, LAT_KINDS, NOT_WORKLOAD,
                                  pack_version, sort_key, text_of)
from fiopack.results.metrics import (Stats, check_homogeneous, check_names, parse_metric,
                                     per_run_values, select)


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
        """"dev-b / dev-a": the two columns by their short names (a path
        by its last components, enough to tell the columns apart), apart
        from the division's slash; "dir-a//tmp/x/dev-b" read as one path."""
        short = short_keys(self.col_keys)
        a, b = short[ck], short[self.baseline]
        return f"{a} / {b}" if self.ratio_mode == "col/base" else f"{b} / {a}"

    def max_n(self) -> int:
        return max((s.n for s in self.cells.values()), default=0)


def key_text(key) -> str:
    return ", ".join(text_of(v) if v is not None else "-" for v in key)


def short_keys(keys) -> dict:
    """{key: its text, each absolute path in it cut to the fewest last
    components that still tell the keys' paths at that place apart}."""
    cols = list(zip(*keys)) if keys and keys[0] else []
    cut = []
    for vals in cols:
        paths = {text_of(v) for v in vals if isinstance(v, str) and v.startswith("/")}
        parts = {v: [x for x in v.split("/") if x] for v in paths}
        n = 1
        while n < max((len(x) for x in parts.values()), default=1) and \
                len({"/".join(x[-n:]) for x in parts.values()}) < len(parts):
            n += 1
        cut.append({v: "/".join(x[-n:]) or v for v, x in parts.items()})
    return {k: ", ".join(cut[i].get(text_of(v), text_of(v)) if v is not None else "-"
                         for i, v in enumerate(k)) for k in keys}


def order(values) -> list:
    """Numbers and sizes by magnitude; other text in order of first appearance."""
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    if all(sort_key(v)[0] == 0 for v in seen if v is not None):
        return sorted(seen, key=sort_key)
    return seen


def build_table(ds, metric_text, rows_dims, cols_dims, where=None, baseline=None,
                ratio="auto", stats="auto", combine=None, shown=None) -> Table:
    """shown: (the --baseline as the user gave it, a function showing a column
    key as the table will: hosts by name), for the refusal of a baseline
    that is no column."""
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
    row_keys = order_keys([k[:nr] for k in per])
    col_keys = order_keys([k[nr:] for k in per])
    base = None
    if baseline is not None:
        want = [b.strip() for b in baseline.split(",")]
        for ck in col_keys:
            if [text_of(v) for v in ck] == want:
                base = ck
        if base is None:
            given, show = shown or (baseline, key_text)
            raise AnalysisError(f"--baseline {given}: not a column; columns: "
                                + "; ".join(show(c) for c in col_keys))
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


def order_keys(keys) -> list:
    uniq = []
    for k in keys:
        if k not in uniq:
            uniq.append(k)
    if not uniq or not uniq[0]:
        return uniq[:1]
    n = len(uniq[0])
    orders = [order([k[i] for k in uniq]) for i in range(n)]
    return sorted(uniq, key=lambda k: tuple(orders[i].index(k[i]) for i in range(n)))


def column_decimals(values, precision=2) -> int:
    """One number of decimals for a whole column: @precision, or more when
    its smallest non-zero value is below 0.1 (a fast device's latency in
    ms), enough for that value to keep precision+1 significant digits. A
    column never mixes 0.12 with 0.0896."""
    small = [abs(v) for v in values if isinstance(v, float) and math.isfinite(v)
             and v and abs(v) < 0.1]
    return precision - math.floor(math.log10(min(small))) if small else precision


def fmt_num(v, precision=2, decimals=None) -> str:
    """A table's number: @decimals (a column's, column_decimals) when given."""
    if v is None:
        return "-"
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if not math.isfinite(v):
        return str(v)
    if decimals is not None:
        return f"{v:.{decimals}f}"
    if v and abs(v) < 0.1:
        # small values (latencies in ms of a fast device) keep precision+1 significant digits
        return f"{v:.{precision - math.floor(math.log10(abs(v)))}f}"
    return f"{v:.{precision}f}"


def compact_cell(st, form, max_n, precision=2, decimals=None) -> str:
    """"412.35 (405.10–420.20)" (form range) or "412.35 ±1.8%" (cv: sample stdev /
    mean); "(n=2)" after a cell with fewer repeats than the table's most."""
    if st is None:
        return "-"
    s = fmt_num(st.median, precision, decimals)
    if st.n > 1 and form == "range":
        s += (f" ({fmt_num(st.min, precision, decimals)}–"
              f"{fmt_num(st.max, precision, decimals)})")
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
        dec = {ck: column_decimals([x for rk in t.row_keys if t.cells.get((rk, ck))
                                    for x in (t.cells[(rk, ck)].median, t.cells[(rk, ck)].min,
                                              t.cells[(rk, ck)].max)], precision)
               for ck in t.col_keys}
        rdec = {ck: column_decimals([t.ratio(rk, ck) for rk in t.row_keys], precision)
                for ck in t.ratio_cols()}
        body = []
        for rk in t.row_keys:
            line = [text_of(v) if v is not None else "-" for v in rk] if rk else [t.metric.text]
            line += [compact_cell(t.cells.get((rk, ck)), t.form, t.max_n(), precision, dec[ck])
                     for ck in t.col_keys]
            line += [fmt_num(t.ratio(rk, ck), precision, rdec[ck]) for ck in t.ratio_cols()]
            body.append(line)
        return head, body
    for ck in t.col_keys:
        for s in t.stats:
            name = key_text(ck) if ck else t.metric.text
            head.append(name if len(t.stats) == 1 else
                        f"{name} {'CV' if s == 'cv' else s}")
    for ck in t.ratio_cols():
        head.append(t.ratio_label(ck))
    dec = {(ck, s): column_decimals([t.cells[(rk, ck)].get(s) for rk in t.row_keys
                                     if t.cells.get((rk, ck))], precision)
           for ck in t.col_keys for s in t.stats}
    rdec = {ck: column_decimals([t.ratio(rk, ck) for rk in t.row_keys], precision)
            for ck in t.ratio_cols()}
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
                    line.append(fmt_num(v, precision, dec[(ck, s)]))
        for ck in t.ratio_cols():
            v = t.ratio(rk, ck)
            line.append(("" if v is None else v) if raw else fmt_num(v, precision, rdec[ck]))
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
            b = short_keys(t.col_keys)[t.baseline]
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
            w.writerow([t.metric.text, t.metric.unit] + [csv_val(v) for v in line])
    return buf.getvalue()


def csv_val(v):
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
    p = {"tool": "fio-pack analyze",
         # a shell command a reader pastes: the tool's words apart, each
         # argument quoted as the shell needs it
         "command": shlex.join(argv),
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
