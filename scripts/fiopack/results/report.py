"""fioreport - a study's results beside the published figures it reproduces.

The reproduction report of scripts/fio-pack analyze ("fio-pack analyze report",
docs/analysis.md): for each catalogue metric that a published figure of
reference/figures.json pairs with, a table with a row per published sweep
point and, for each --map DEVICE=TARGET, the measured median beside the
published value and their ratio; the article's ratio columns beside the same
ratio measured; and the published results that have no number. The data
model, metrics and figure pairing are fiopack/results/data.py's.
"""
import csv
import html
import io
import re
from types import SimpleNamespace
from fiopack.results.data import AnalysisError, sort_key, text_of
from fiopack.results.tables import (HTML_STYLE, column_decimals, csv_val, order, order_keys,
                                     fmt_num,
                                    provenance_html, provenance_line)
from fiopack.results.metrics import (Stats, check_homogeneous, check_names, parse_metric,
                                     per_run_values, select)
from fiopack.results.figures import devices, pair_metrics, resolve_maps, unit_factor



def _fig_point(f, keys):
    p = f.get("params") or {}
    pt = []
    for k in keys:
        v = p.get(k)
        if isinstance(v, str):
            if not re.fullmatch(r"-?\d+", v):
                return None
            v = int(v)
        pt.append(v)
    return tuple(pt)


def _fig_value(f, factor):
    if f.get("value") is not None:
        return f["value"] * factor, None
    if f.get("range"):
        lo, hi = f["range"]
        return None, (lo * factor, hi * factor)
    return None, None


def pub_text(f, factor, precision) -> str:
    v, rng = _fig_value(f, factor)
    pre = "~" if f.get("approximate") else ""
    q = (f.get("qualifier") + " ") if f.get("qualifier") else ""
    if v is not None:
        return f"{q}{pre}{fmt_num(v, precision)}"
    if rng:
        return f"{q}{pre}{fmt_num(rng[0], precision)}-{fmt_num(rng[1], precision)}"
    return "n/a"


class Cell:
    """A table cell's numbers (a value, or a published range) and what goes
    before them, written once its column's number of decimals is known:
    one per column (column_decimals), as analyze table writes its own."""
    def __init__(self, values, pre=""):
        self.values, self.pre = values, pre

    def text(self, decimals) -> str:
        return self.pre + "-".join(fmt_num(v, decimals=decimals) for v in self.values)


def num_cell(v):
    return "-" if v is None else Cell([v])


def pub_cell(f, factor):
    """The published value or range of @f as a Cell ("~" and a qualifier
    before it), "n/a" when it has no number."""
    v, rng = _fig_value(f, factor)
    pre = ((f.get("qualifier") + " ") if f.get("qualifier") else "") + \
        ("~" if f.get("approximate") else "")
    if v is not None:
        return Cell([v], pre)
    if rng:
        return Cell(list(rng), pre)
    return "n/a"


def format_columns(body, precision) -> list:
    """@body with each column's Cells written with one number of decimals."""
    width = max((len(line) for line in body), default=0)
    dec = [column_decimals([v for line in body if j < len(line) and isinstance(line[j], Cell)
                            for v in line[j].values if isinstance(v, float)], precision)
           for j in range(width)]
    return [[c.text(dec[j]) if isinstance(c, Cell) else c for j, c in enumerate(line)]
            for line in body]


class ReportSection:
    def __init__(self, metric, unit, keys, header, body, csv_rows, notes):
        self.metric, self.unit, self.keys = metric, unit, keys
        self.header, self.body, self.csv_rows, self.notes = header, body, csv_rows, notes


def _col_label(target, ck, cols, names) -> str:
    """A measured column: the target, then its --cols values (hosts by name)."""
    if not ck:
        return str(target)
    shown = [names.get(v, v) if d == "host" else v for d, v in zip(cols, ck)]
    return f"{target}, " + ", ".join(text_of(v) for v in shown)


def _over(label) -> str:
    return f"({label})" if ", " in label else label


def reproduction(ds, figures_doc, maps, pairs=None, where=None, precision=2,
                 all_published=True, cols=(), names=None):
    """Sections of the reproduction report: measured beside published, per metric.

    cols: dimensions besides the target that split a target's measured column
    (host, when the results hold several; --cols); names: what to call hosts.
    """
    cols = [c for c in cols if c != "target"]
    names = names or {}
    rows = select(ds.rows, where)
    check_names(rows, cols, "--cols")
    sids = sorted({r["scenario"] for r in rows if r["scenario"]})
    if not sids:
        raise AnalysisError("the results have no scenario (plain fio JSON that matches no "
                            "catalogue scenario): give --scenario ID")
    if len(sids) > 1:
        raise AnalysisError(f"the results hold several scenarios ({', '.join(sids)}): "
                            f"choose one with --where scenario=ID")
    sid = sids[0]
    sc = ds.scenarios[sid]
    figs = [f for f in figures_doc["figures"] if f.get("scenario") == sid]
    if not figs:
        raise AnalysisError(f"{figures_doc['_path']}: no published figure for scenario {sid}")
    targets = sorted({r["target"] for r in rows if r["target"]})
    mapping = resolve_maps(maps, figs, set(targets))
    pairing = pair_metrics(sc, figs, dict(pairs or {}))
    byid = {f["id"]: f for f in figures_doc["figures"]}
    ctx = SimpleNamespace(ds=ds, rows=rows, figs=figs, pairing=pairing, mapping=mapping,
                          byid=byid, cols=cols, names=names, precision=precision,
                          all_published=all_published)
    sections = [sec for sec in (_metric_section(ctx, m) for m in sc.get("metrics") or [])
                if sec is not None]
    if not sections:
        raise AnalysisError(f"no published figure of scenario {sid} pairs with its metrics "
                            f"({', '.join(m['name'] for m in sc.get('metrics') or [])}); "
                            f"pair them with --pair METRIC=PUBLISHED_METRIC")
    unavailable = [f for f in figs if f.get("value") is None and not f.get("range")]
    unpaired = [f for f in figs if f.get("kind") == "measured" and f["metric"] not in pairing
                and f not in unavailable]
    return {"scenario": sc, "source": figures_doc.get("sources", {}).get(sc.get("source"), {}),
            "source_id": sc.get("source"), "mapping": mapping, "devices": devices(figs),
            "sections": sections, "unavailable": unavailable, "unpaired": unpaired,
            "targets": targets, "modeled": modeled_targets(ds, targets), "cols": cols,
            "hosts": [names.get(h, h) for h in order([r["host"] for r in rows
                                                       if not r.get("aggregate")])],
            "runs_used": set().union(*(s.runs for s in sections))}


def _metric_section(ctx, m):
    """The section of catalogue metric @m: its measured values beside the
    published ones, or None when no published figure pairs with it."""
    ds, rows, figs, pairing, mapping = ctx.ds, ctx.rows, ctx.figs, ctx.pairing, ctx.mapping
    cols, names, precision = ctx.cols, ctx.names, ctx.precision
    mname, unit = m["name"], m.get("unit", "")
    fms = [fm for fm, cm in pairing.items() if cm == mname]
    pfigs = [f for f in figs if f["metric"] in fms and f.get("kind") == "measured"]
    if not pfigs:
        return None
    factors = {}
    for f in pfigs:
        factors[f["id"]] = unit_factor(f.get("unit_normalised"), unit)
    pfigs = [f for f in pfigs if factors[f["id"]] is not None]
    if not pfigs:
        return None
    keys = sorted({k for f in pfigs for k in (f.get("params") or {})})
    check_names(rows, keys, "published parameter")
    metric = parse_metric(mname, ds, rows)
    dims = keys + ["target"] + cols
    per = per_run_values(metric, rows, dims)
    check_homogeneous(per, dims, metric)
    meas, nk = {}, len(keys)
    for key, runs in per.items():
        meas[(tuple(key[:nk]), key[nk], tuple(key[nk + 1:]))] = Stats(
            [v for v, _ in runs.values()], list(runs))
    col_keys = order_keys([ck for _, _, ck in meas]) or [()]
    pub = {}
    for f in pfigs:
        pt = _fig_point(f, keys)
        if pt is None:
            continue
        pub[(pt, f.get("device_id"))] = f
    points = sorted({pt for pt, _, _ in meas} | {pt for pt, _ in pub},
                    key=lambda t: tuple(sort_key(v) for v in t))
    devs = devices(figs, among=pfigs)
    header, body, csv_rows = _section_table(ctx, m, keys, points, pub, meas, col_keys,
                                             factors, devs)
    notes = []
    conv = sorted({(f.get("unit_normalised"), factors[f["id"]]) for f in pfigs})
    for u, fac in conv:
        if fac != 1.0:
            notes.append(f"published values in {u} converted to {unit} (x{fac:.6g})")
    unote = next((f.get("unit_note") for f in pfigs if f.get("unit_note")), None)
    sec = ReportSection(mname, unit, keys, header, body, csv_rows, notes)
    sec.expr = m["expr"]
    sec.job = m.get("job")
    sec.pub_metric = ", ".join(sorted({f["metric"] for f in pfigs}))
    sec.unit_note = unote
    sec.max_n = max((s.n for s in meas.values()), default=0)
    sec.ratios = _ratio_section(figs, ctx.byid, pfigs, mapping, meas, keys, precision, mname,
                                unit, col_keys, cols, names)
    shown = {t for _, t in mapping}
    sec.runs = {i for (_, t, _), st in meas.items() if t in shown for i in st.runs}
    return sec


def _section_table(ctx, m, keys, points, pub, meas, col_keys, factors, devs):
    """The table of one section (header, rows) and its CSV rows: per point,
    each mapped target's measured columns, the published value and ratios."""
    mname, unit = m["name"], m.get("unit", "")
    mapping, cols, names, precision = ctx.mapping, ctx.cols, ctx.names, ctx.precision
    mapped_devs = [d for d, _ in mapping]
    header = list(keys) or [""]
    for d, t in mapping:
        labels = [_col_label(t, ck, cols, names) for ck in col_keys]
        header += labels + [f"{devs.get(d, d)} (published)"]
        header += [f"{_over(lab)} / published" for lab in labels]
    extra_devs = [d for d in devs if d not in mapped_devs] if ctx.all_published else []
    header += [f"{devs[d]} (published)" for d in extra_devs]
    body, csv_rows = [], []
    for pt in points:
        line = [text_of(v) for v in pt] or [mname]
        first_csv = len(csv_rows)
        for d, t in mapping:
            f = pub.get((pt, d))
            fac = factors.get(f["id"], 1.0) if f else 1.0
            pv = _fig_value(f, fac)[0] if f else None
            sts = [meas.get((pt, t, ck)) for ck in col_keys]
            ratios = [st.median / pv if st is not None and pv else None for st in sts]
            line += [num_cell(st.median if st else None) for st in sts]
            line.append(pub_cell(f, fac) if f else "-")
            line += [num_cell(r) for r in ratios]
            for ck, st, ratio in zip(col_keys, sts, ratios):
                csv_rows.append({"metric": mname, "unit": unit,
                                 **{k: v for k, v in zip(keys, pt)},
                                 **_col_fields(cols, ck, names), "kind": "value",
                                 "measured_target": t,
                                 "measured": st.median if st else None,
                                 "repeats": st.n if st else 0,
                                 "published_device": devs.get(d, d),
                                 "published": pv, "published_id": f["id"] if f else None,
                                 "measured_over_published": ratio})
        for d in extra_devs:
            f = pub.get((pt, d))
            line.append(pub_cell(f, factors.get(f["id"], 1.0)) if f else "-")
        if all(c == "-" for c in line[max(1, len(pt)):]):
            # a point only a device left out (--no-unmapped) has: no row
            del csv_rows[first_csv:]
            continue
        body.append(line)
    return header, format_columns(body, precision), csv_rows


def _col_fields(cols, ck, names) -> dict:
    """The --cols values of a measured column for the CSV (a host: its address and name)."""
    out = {}
    for d, v in zip(cols, ck):
        out[d] = v
        if d == "host":
            out["host_name"] = names.get(v, v)
    return out


def _ratio_section(figs, byid, pfigs, mapping, meas, keys, precision, mname, unit,
                   col_keys=((),), dims=(), names=None):
    """Published ratio columns (derived figures) beside the same ratio measured."""
    pids = {f["id"] for f in pfigs}
    tmap = dict(mapping)
    derived = []
    for f in figs:
        if f.get("kind") != "derived" or not f.get("derived_from"):
            continue
        parts = [p.strip() for p in f["derived_from"].split("/")]
        if len(parts) != 2 or not all(p in pids for p in parts):
            continue
        num, den = byid[parts[0]], byid[parts[1]]
        derived.append((f, num, den))
    if not derived:
        return None
    groups = {}
    for f, num, den in derived:
        groups.setdefault((num.get("device_id"), den.get("device_id")), []).append(f)
    header = list(keys) or [""]
    cols = []
    for (nd, dd), fs in groups.items():
        if nd in tmap and dd in tmap:
            cols.append((nd, dd, fs))
    if not cols:
        return {"header": None, "body": [], "csv": [], "summaries": [],
                "note": "the published ratio columns need both of their devices mapped "
                        "(--map)"}
    devs = devices(figs)
    def label(nd, dd, ck):
        tail = _col_label("", ck, dims, names or {})[2:]
        # spaced: "dir-a//tmp/x" read as one path
        return f"{tmap[nd]} / {tmap[dd]}" + (f" ({tail})" if tail else "")

    for nd, dd, fs in cols:
        header += [label(nd, dd, ck) for ck in col_keys]
        header.append(f"{devs.get(nd, nd)} / {devs.get(dd, dd)} (published)")
        header += ["measured/published" + (f" ({label(nd, dd, ck)})" if ck else "")
                   for ck in col_keys]
    points = sorted({_fig_point(f, keys) for _, _, fs in cols for f in fs
                     if _fig_point(f, keys) is not None}
                    | {pt for pt, _, _ in meas}, key=lambda t: tuple(sort_key(v) for v in t))
    body, csv_rows, measured_ratios = [], [], {}
    for pt in points:
        line = [text_of(v) for v in pt] or [mname]
        for nd, dd, fs in cols:
            f = next((f for f in fs if _fig_point(f, keys) == pt), None)
            pr = f.get("value") if f else None
            mrs, qs = [], []
            for ck in col_keys:
                a, b = meas.get((pt, tmap[nd], ck)), meas.get((pt, tmap[dd], ck))
                mr = a.median / b.median if a and b and b.median else None
                if mr is not None:
                    measured_ratios.setdefault((nd, dd), []).append(mr)
                q = mr / pr if mr is not None and pr else None
                mrs.append(mr)
                qs.append(q)
                csv_rows.append({"metric": mname, "unit": "ratio", **dict(zip(keys, pt)),
                                 **_col_fields(dims, ck, names or {}),
                                 "kind": "ratio", "measured_target": f"{tmap[nd]} / {tmap[dd]}",
                                 "measured": mr, "repeats": None,
                                 "published_device": f"{devs.get(nd, nd)} / {devs.get(dd, dd)}",
                                 "published": pr, "published_id": f["id"] if f else None,
                                 "measured_over_published": q})
            line += [num_cell(mr) for mr in mrs]
            line.append(pub_cell(f, 1.0) if f else "-")
            line += [num_cell(q) for q in qs]
        body.append(line)
    summaries = []
    dmetrics = {(f.get("metric"), f.get("device_id")) for f, _, _ in derived}
    for f in figs:
        if f.get("kind") != "summary" or (f.get("metric"), f.get("device_id")) not in dmetrics:
            continue
        pair = next(((nd, dd) for nd, dd, fs in cols
                     if any(x.get("metric") == f["metric"] and x.get("device_id") == f["device_id"]
                            for x in fs)), None)
        mr = measured_ratios.get(pair) if pair else None
        summaries.append({"figure": f, "measured_range": (min(mr), max(mr)) if mr else None,
                          "pair": pair})
    return {"header": header, "body": format_columns(body, precision), "csv": csv_rows,
            "summaries": summaries,
            "note": None}


def _md_table(header, body) -> list:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    for line in body:
        out.append("| " + " | ".join(line) + " |")
    return out


def modeled_targets(ds, targets) -> dict:
    """The targets that were modeled devices (fio-pack device, as the study
    runner recorded them): label -> the model's spec. A target measured on
    several models says them all."""
    out = {}
    for r in ds.runs:
        model = ((r.device or {}).get("modeled") or {}).get("model")
        if r.target in targets and model and model not in out.setdefault(r.target, []):
            out[r.target].append(model)
    return {t: " + ".join(ms) for t, ms in out.items() if ms}


def measured_line(rep, prov) -> str:
    """"Measured: 3 of 9 runs (6 left out by --where ...); fio-3.33; targets ...; hosts ..."."""
    runs = prov.get("runs_text") or f"{prov['runs']} runs"
    hosts = [h for h in rep.get("hosts") or [] if h != "local"]
    modeled = rep.get("modeled") or {}
    targets = [t + (f" (modeled device {modeled[t]})" if t in modeled else "")
               for t in rep["targets"]]
    return (f"Measured: {runs}; {', '.join(prov.get('fio_versions') or [])}; "
            f"targets {', '.join(targets)}"
            + (f"; hosts {', '.join(hosts)}" if hosts else ""))


def render_report_md(rep, prov, precision=2) -> str:
    sc, src = rep["scenario"], rep["source"]
    out = [f"# Reproduction report: {sc['id']}", ""]
    out.append(f"Scenario: {sc.get('title', '')}")
    out.append(f"Published: source {rep['source_id']}: \"{src.get('title', '?')}\""
               + (f" ({src.get('author')}, {src.get('date') or src.get('year')})"
                  if src.get("author") else "")
               + f"; figures from {prov.get('reference', '?')}")
    out.append(measured_line(rep, prov))
    if rep["mapping"]:
        out.append("Mapping: " + "; ".join(f"{t} = {rep['devices'].get(d, d)} ({d})"
                                           for d, t in rep["mapping"]))
    else:
        out.append("Mapping: none (give --map DEVICE=TARGET to put a target beside a "
                   "published device)")
    out.append("")
    for s in rep["sections"]:
        out.append(f"## {s.metric} ({s.unit})")
        out.append("")
        out.append(f"Measured: `{s.expr}`" + (f" on job {s.job}" if s.job else "")
                   + (f", median of up to {s.max_n} repeats" if s.max_n > 1 else "")
                   + f". Published: \"{s.pub_metric}\"."
                   + (f" Unit: {s.unit_note}." if s.unit_note else ""))
        for n in s.notes:
            out.append(f"Note: {n}.")
        out.append("")
        out += _md_table(s.header, s.body)
        out.append("")
        r = s.ratios
        if r and r.get("header"):
            out.append(f"### {s.metric}: ratios between devices")
            out.append("")
            out += _md_table(r["header"], r["body"])
            out.append("")
            for sm in r["summaries"]:
                f = sm["figure"]
                mr = sm["measured_range"]
                out.append(f"Published summary ({f['locator']}): \"{f.get('quote', '')}\" -> "
                           f"{pub_text(f, 1.0, precision)} for {f['device']}; measured "
                           + (f"{fmt_num(mr[0], precision)}-{fmt_num(mr[1], precision)}"
                              if mr else "n/a") + ".")
            if r["summaries"]:
                out.append("")
        elif r and r.get("note"):
            out.append(f"Published ratios not compared: {r['note']}.")
            out.append("")
    if rep["unavailable"]:
        out.append("## Published results without numbers")
        out.append("")
        for f in rep["unavailable"]:
            out.append(f"- {f['device']}: {f['metric']} ({f.get('unavailable', 'no value')})")
        out.append("")
    if rep["unpaired"]:
        out.append("## Published figures no measured metric pairs with")
        out.append("")
        for f in rep["unpaired"]:
            out.append(f"- {f['id']}: {f['metric']} = {pub_text(f, 1.0, precision)} "
                       f"{f.get('unit', '')}")
        out.append("")
    out.append(f"_{provenance_line(prov)}_")
    out.append("")
    return "\n".join(out)


def render_report_csv(rep) -> str:
    rows = []
    for s in rep["sections"]:
        rows += s.csv_rows
        if s.ratios and s.ratios.get("csv"):
            rows += s.ratios["csv"]
    keys = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: csv_val(v) if v is not None else "" for k, v in r.items()})
    return buf.getvalue()


def render_report_html(rep, prov, precision=2) -> str:
    sc, src = rep["scenario"], rep["source"]
    e = html.escape
    maptext = "; ".join(f"{t} = {rep['devices'].get(d, d)}" for d, t in rep["mapping"]) or "none"
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
             f"<title>Reproduction report: {e(sc['id'])}</title><style>{HTML_STYLE}</style>"
             f"</head><body>", f"<h1>Reproduction report: {e(sc['id'])}</h1>",
             f"<p>{e(sc.get('title', ''))}<br/>Published: source {e(str(rep['source_id']))}: "
             f"“{e(src.get('title', '?'))}” {e(str(src.get('author') or ''))}<br/>"
             f"{e(measured_line(rep, prov))}<br/>Mapping: {e(maptext)}</p>"]

    def tab(header, body, caption):
        s = [f"<table><caption>{e(caption)}</caption><thead><tr>"
             + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr></thead><tbody>"]
        for line in body:
            s.append("<tr>" + "".join(
                (f"<th>{e(c)}</th>" if i == 0 else f"<td class=\"num\">{e(c)}</td>")
                for i, c in enumerate(line)) + "</tr>")
        s.append("</tbody></table>")
        return "\n".join(s)

    for s in rep["sections"]:
        parts.append(f"<h2>{e(s.metric)} ({e(s.unit)})</h2><p>Measured: <code>{e(s.expr)}</code>. "
                     f"Published: “{e(s.pub_metric)}”. {e(s.unit_note or '')}</p>")
        for n in s.notes:
            parts.append(f"<p>Note: {e(n)}.</p>")
        parts.append(tab(s.header, s.body, f"{s.metric}: measured beside published"))
        if s.ratios and s.ratios.get("header"):
            parts.append(tab(s.ratios["header"], s.ratios["body"], f"{s.metric}: ratios"))
            for sm in s.ratios["summaries"]:
                f, mr = sm["figure"], sm["measured_range"]
                parts.append(f"<p>Published summary: “{e(f.get('quote', ''))}” "
                             f"→ {e(pub_text(f, 1.0, precision))} for {e(f['device'])}; "
                             f"measured {e(fmt_num(mr[0], precision) + '-' + fmt_num(mr[1], precision)) if mr else 'n/a'}.</p>")
    if rep["unavailable"]:
        parts.append("<h2>Published results without numbers</h2><ul>" + "".join(
            f"<li>{e(f['device'])}: {e(f['metric'])} ({e(f.get('unavailable', 'no value'))})</li>"
            for f in rep["unavailable"]) + "</ul>")
    parts.append(provenance_html(prov))
    parts.append("</body></html>\n")
    return "\n".join(parts)
