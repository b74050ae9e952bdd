"""The plots of `fio-pack analyze plot`: a metric against a parameter, with
the published figures beside it, and latency percentile curves; each saved
with the provenance of what produced it. The axes are axes.py's; the command
line is cli.py's."""
import json
import math
import os
import re
import shlex
import sys
import textwrap
from pathlib import Path

from fiopack import outputs
from fiopack.results import axes as fioaxes
from fiopack.results import hosts as fiohosts
from fiopack.results.data import AnalysisError, sort_key, text_of
from fiopack.results.figures import devices, load_figures, pair_metrics, resolve_maps, unit_factor
from fiopack.results.metrics import (Metric, Stats, ambiguity, check_homogeneous, check_names,
                                     dim_value, parse_metric, parse_where, per_run_values,
                                     select, split_dims)
from fiopack.results.tables import key_text, order, order_keys

PROG = "fio-pack analyze"


def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        # SVG text stays text: labels can be searched, edited and read back
        matplotlib.rcParams["svg.fonttype"] = "none"
        import matplotlib.pyplot as plt
    except ImportError:
        raise AnalysisError(matplotlib_hint())
    return plt


def matplotlib_hint() -> str:
    """What to install, for the interpreter running: Debian's package serves
    /usr/bin/python3 alone, not a pyenv, a venv or another build."""
    py = sys.executable or "python3"
    version = "%d.%d" % sys.version_info[:2]
    system = sys.prefix == sys.base_prefix == "/usr" and \
        os.path.realpath(py) == os.path.realpath("/usr/bin/python3")
    if system:
        return (f"plot needs matplotlib, which {py} (Python {version}) cannot import: "
                f"apt-get install python3-matplotlib (scripts/install-deps.sh --test "
                f"installs it)")
    return (f"plot needs matplotlib, which {py} (Python {version}) cannot import: "
            f"{shlex.quote(py)} -m pip install matplotlib, or run fio-pack with "
            f"/usr/bin/python3 and apt-get install python3-matplotlib")


def _x_positions(values):
    """(numeric?, {value: position}, tick labels)."""
    vals = order(values)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return True, {v: v for v in vals}, None
    return False, {v: i for i, v in enumerate(vals)}, [text_of(v) for v in vals]


def series_label(dims, key, names=None) -> str:
    """A legend entry: the target alone, "target, host" by default with several
    hosts (hosts by name), else NAME=VALUE pairs."""
    key = fiohosts.show(dims, key, names or {})
    if set(dims) <= {"target", "host"}:
        return key_text(key)
    return ", ".join(f"{d}={text_of(v)}" for d, v in zip(dims, key))


# a host's lines: solid, dashed, dash-dot, then a long dash; the published
# figures are dotted with open markers, apart from all of them
HOST_STYLES = ("-", "--", "-.", (0, (8, 2)))
PUBLISHED_STYLE = ":"


class SeriesStyles:
    """Colour by target, line style by host: the same device keeps its colour
    on every host and beside its published figures, and one host's lines
    share a style. Series split further (target and threads) take a line
    style per further value on one host, a marker per value across hosts;
    series without a target dimension take a colour each."""

    MARKERS = ("o", "s", "^", "D", "v", "P")

    def __init__(self, dims, keys):
        import matplotlib
        self.palette = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
        self.dims = list(dims)
        self.rest = [i for i, d in enumerate(self.dims) if d not in ("target", "host")] \
            if "target" in self.dims else []
        self.colours, self.styles, self.markers = {}, {}, {}
        for k in keys:
            self.colours.setdefault(self._colour_key(k), None)
            self.styles.setdefault(self._style_key(k), None)
            self.markers.setdefault(self._marker_key(k), None)
        for i, c in enumerate(self.colours):
            self.colours[c] = self.palette[i % len(self.palette)]
        for i, h in enumerate(self.styles):
            self.styles[h] = HOST_STYLES[i % len(HOST_STYLES)]
        for i, m in enumerate(self.markers):
            self.markers[m] = self.MARKERS[i % len(self.MARKERS)]

    def _colour_key(self, key):
        if "target" in self.dims:
            return key[self.dims.index("target")]
        return tuple(v for d, v in zip(self.dims, key) if d != "host")

    def _style_key(self, key):
        if "host" in self.dims:
            return key[self.dims.index("host")]
        return tuple(key[i] for i in self.rest)

    def _marker_key(self, key):
        return tuple(key[i] for i in self.rest) if "host" in self.dims else ()

    def of(self, key) -> dict:
        """matplotlib's color and linestyle of series @key."""
        return {"color": self.colours[self._colour_key(key)],
                "linestyle": self.styles[self._style_key(key)]}

    def marker(self, key) -> str:
        return self.markers[self._marker_key(key)]

    def of_target(self, target):
        return self.colours.get(target) if "target" in self.dims else None


# the conditions a reader needs to judge a plotted figure, when the results
# give them; each is left out of the caption when it is a plotted dimension
CONDITIONS = ("size", "bs", "runtime", "direct")


def _condition(name, vals) -> str:
    shown = [text_of(v) for v in order(vals)]
    text = "/".join(shown)
    if name == "runtime":
        return f"runtime {text} s" if all(re.fullmatch(r"\d+", t) for t in shown) \
            else f"runtime {text}"
    if name == "direct":
        return f"direct={text}"
    return f"{name} {text}"


def caption(rows, dims, where, point=None) -> str:
    """The subtitle under a plot's title: the conditions of the rows drawn
    (size, bs, runtime, direct; several values joined by /), what a point
    and a bar are, and the --where filter, so that the picture sent on
    alone still says what was measured."""
    parts = []
    for name in CONDITIONS:
        if name in dims:
            continue
        vals = {r["params"].get(name) for r in rows} - {None, ""}
        if name == "runtime":
            vals -= {0, "0"}
        if vals:
            parts.append(_condition(name, vals))
    text = ", ".join(parts)
    if point:
        text += ("; " if text else "") + point
    if where:
        text += ("; " if text else "") + "where " + " ".join(where)
    return textwrap.fill(text, 110)


def repeats_text(stats) -> str:
    """"point: median of 3 repeats, bar: min-max", from the points' Stats."""
    ns = sorted({st.n for st in stats})
    if not ns or ns[-1] == 1:
        return "point: one run"
    n = str(ns[-1]) if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
    return f"point: median of {n} repeats, bar: min–max"


def finish(fig, ax, title, subtitle) -> None:
    """Title above, the conditions under it, the legend to the right of the
    data (never over a line)."""
    fig.suptitle(title)
    ax.set_title(subtitle, fontsize="small")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0),
              borderaxespad=0.0)


def save_plot(fig, paths, prov, data) -> None:
    meta_json = json.dumps(prov, separators=(",", ":"), default=str)
    title = prov["plot"].get("title", "fio-pack plot")
    software = f"fio-pack analyze {prov['pack_version']}"
    summary = (f"{title}; {prov['runs']} runs; fio {', '.join(prov['fio_versions']) or '?'}; "
               f"inputs: {', '.join(prov['arguments'])}; command: {prov['command']}")
    for o in paths:
        if o.lower().endswith(".png"):
            md = {"Title": title, "Software": software, "Description": summary,
                  "Source": ", ".join(prov["arguments"]), "fio-pack provenance": meta_json}
            md = {k: v.encode("latin-1", "replace").decode("latin-1") for k, v in md.items()}
        else:
            md = {"Title": title, "Creator": software, "Description": meta_json,
                  "Source": ", ".join(prov["arguments"]),
                  "Keywords": ["fio"] + prov["fio_versions"]}
        with outputs.Output(o, "-o") as out:
            fig.savefig(out.file, format=Path(o).suffix.lower()[1:], metadata=md)
        side = dict(prov, output=str(o), data=data)
        outputs.write_output(str(o) + ".json", json.dumps(side, indent=1, default=str) + "\n",
                             "-o")


def plot_metric(plt, ds, a):
    where = parse_where(a.where)
    rows = select(ds.rows, where)
    names = fiohosts.host_names(rows)
    series_d = split_dims(a.series) if a.series is not None else \
        fiohosts.default_dims(rows, ["target"], [a.x])
    check_names(ds.rows, series_d + [a.x], "plot by")
    if not rows:
        raise AnalysisError("no rows left after --where")
    metric = parse_metric(a.metric[0], ds, rows)
    dims = series_d + [a.x]
    per = per_run_values(metric, rows, dims, a.combine,
                            any_op=any(w[0] == "op" for w in where))
    if not per:
        raise AnalysisError(f"metric {metric.text}: no row of the selected results has it")
    check_homogeneous(per, dims, metric)
    ns = len(series_d)
    series = {}
    for key, runs in per.items():
        series.setdefault(key[:ns], {})[key[ns]] = Stats([v for v, _ in runs.values()],
                                                            list(runs))
    numeric, pos, labels = _x_positions([k[ns] for k in per])
    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=100, layout="constrained")
    data = {"x": a.x, "metric": metric.text, "unit": metric.unit,
            "definition": metric.describe(), "series": [], "published": []}
    styles = SeriesStyles(series_d, order_keys(list(series)))
    for skey in order_keys(list(series)):
        pts = series[skey]
        xs = sorted(pts, key=sort_key)
        med = [pts[x].median for x in xs]
        lo = [pts[x].median - pts[x].min for x in xs]
        hi = [pts[x].max - pts[x].median for x in xs]
        label = series_label(series_d, skey, names) or metric.text
        px = [pos[x] for x in xs]
        if any(pts[x].n > 1 for x in xs):
            ax.errorbar(px, med, yerr=[lo, hi], marker=styles.marker(skey), capsize=3,
                        label=label, **styles.of(skey))
        else:
            ax.plot(px, med, marker=styles.marker(skey), label=label, **styles.of(skey))
        data["series"].append({"label": label, "key": dict(zip(series_d, skey)), "points": [
            {"x": x, "median": pts[x].median, "min": pts[x].min, "max": pts[x].max,
             "n": pts[x].n, "cv": pts[x].cv, "runs": pts[x].runs} for x in xs]})
    if a.reference:
        _plot_reference(ax, ds, rows, metric, a, pos, numeric, styles, data)
    elif a.map or a.all_published:
        raise AnalysisError("--map and --all-published need --reference FIGURES")
    xscale = "log2" if a.logx else a.xscale
    if not numeric:
        if xscale != "auto":
            raise AnalysisError(f"--xscale {xscale}: {a.x} is not numeric (its values are placed "
                        f"in order)")
        ax.set_xticks(list(range(len(labels))))
        ax.set_xticklabels(labels)
    else:
        xscale = fioaxes.set_x_axis(ax, list(pos.values()) + [
            pt["x"] for pub in data["published"] for pt in pub["points"]], xscale, a.x)
    yscale = fioaxes.set_y_axis(ax, [v for s in data["series"] for pt in s["points"]
                                     for v in (pt["min"], pt["max"])]
                                + [pt["value"] for pub in data["published"]
                                   for pt in pub["points"]],
                                "log" if a.logy else a.yscale)
    sc = sorted({r["scenario"] for r in rows if r["scenario"]})
    title = a.title or ((" / ".join(sc) + ": ") if sc else "") + f"{metric.text} vs {a.x}"
    drawn = [r for runs in per.values() for _, rs in runs.values() for r in rs]
    subtitle = caption(drawn, dims, a.where,
                       repeats_text([st for pts in series.values() for st in pts.values()]))
    ax.set_xlabel(a.x)
    ax.set_ylabel(metric.label)
    ax.grid(True, alpha=0.3)
    finish(fig, ax, title, subtitle)
    desc = {"kind": "metric", "title": title, "caption": subtitle, "metric": metric.text, "unit": metric.unit,
            "definition": metric.describe(), "x": a.x, "xscale": xscale if numeric else "order",
            "yscale": yscale,
            "series": series_d, "where": a.where, "reference": a.reference, "map": a.map}
    return fig, data, desc


def _plot_reference(ax, ds, rows, metric, a, pos, numeric, styles, data):
    doc = load_figures(a.reference)
    sids = sorted({r["scenario"] for r in rows if r["scenario"]})
    if len(sids) != 1:
        raise AnalysisError("--reference: the results must hold one scenario "
                               f"(they hold {', '.join(sids) or 'none'}); use --where or "
                               f"--scenario")
    if metric.kind != "cat":
        raise AnalysisError(f"--reference: {metric.text} is not a catalogue metric of "
                               f"{sids[0]}; published figures pair with those "
                               f"({', '.join(m['name'] for m in ds.scenarios[sids[0]].get('metrics') or [])})")
    sc = ds.scenarios[sids[0]]
    figs = [f for f in doc["figures"] if f.get("scenario") == sids[0]]
    pairing = pair_metrics(sc, figs, {})
    fms = [fm for fm, cm in pairing.items() if cm == metric.text]
    figs_m = [f for f in figs if f["metric"] in fms and f.get("kind") == "measured"
              and a.x in (f.get("params") or {})]
    if not figs_m:
        raise AnalysisError(f"{a.reference}: no published {metric.text} of {sids[0]} "
                               f"against {a.x}")
    targets = {r["target"] for r in rows}
    mapping = resolve_maps(a.map, figs, targets)
    devs = devices(figs, among=figs_m)
    chosen = [(d, t) for d, t in mapping if d in devs]
    if a.all_published:
        chosen += [(d, None) for d in devs if d not in dict(chosen)]
    if not chosen:
        raise AnalysisError("--reference: say which published devices to draw with "
                               "--map DEVICE=TARGET or --all-published (devices: "
                               + ", ".join(f"{k} ({v})" for k, v in devs.items()) + ")")
    src = doc.get("sources", {}).get(sc.get("source"), {})
    for d, t in chosen:
        pts = []
        for f in figs_m:
            if f.get("device_id") != d or f.get("value") is None:
                continue
            x = f["params"][a.x]
            if isinstance(x, str) and re.fullmatch(r"-?\d+", x):
                x = int(x)
            if x not in pos and not numeric:
                continue
            fac = unit_factor(f.get("unit_normalised"), metric.unit)
            if fac is None:
                continue
            pts.append((x, f["value"] * fac, f["id"]))
        pts.sort(key=lambda p: sort_key(p[0]))
        if not pts:
            continue
        colour = styles.of_target(t) if t is not None else None
        label = f"{devs[d]} (published {sc.get('source')}" + (f", vs {t})" if t else ")")
        ax.plot([pos.get(x, x) for x, _, _ in pts], [v for _, v, _ in pts], linestyle=PUBLISHED_STYLE,
                marker="o", markerfacecolor="none", color=colour, label=label)
        data["published"].append({"device_id": d, "device": devs[d], "target": t,
                                  "source": sc.get("source"), "title": src.get("title"),
                                  "points": [{"x": x, "value": v, "figure": i}
                                             for x, v, i in pts]})


NINES = (50, 90, 99, 99.9, 99.99, 99.999, 99.9999)


def _nines(p):
    return -math.log10(max(1e-12, 1 - p / 100.0))


# long: one figure, its axes, series, reference lines and provenance in order
def plot_percentiles(plt, ds, a):
    where = parse_where(a.where)
    rows = select(ds.rows, where)
    names = fiohosts.host_names(rows)
    series_d = split_dims(a.series) if a.series is not None else \
        fiohosts.default_dims(rows, ["target"])
    check_names(ds.rows, series_d, "plot by")
    cand = [r for r in rows if r["direction"] not in ("total",) and not r["op"]]
    if a.direction:
        cand = [r for r in cand if r["direction"] == a.direction]
    else:
        dirs = sorted({r["direction"] for r in cand})
        if len(dirs) > 1:
            raise AnalysisError(f"the results have latencies for {', '.join(dirs)}: "
                                   f"choose with --direction")
    if not cand:
        raise AnalysisError("no latency in the selected results"
                               + (f" for direction {a.direction}" if a.direction else ""))
    kind = "lat" if cand[0]["direction"] == "sync" else "clat"
    groups = {}
    for r in cand:
        skey = tuple(dim_value(r, d) for d in series_d)
        groups.setdefault(skey, {}).setdefault(r["run"], []).append(r)
    fake = Metric(f"{cand[0]['direction']}.{kind} percentiles", "gen", f"{kind}_percentiles",
                     "ms", qual=cand[0]["direction"])
    for skey, runs in groups.items():
        for run, rs in runs.items():
            if len(rs) > 1:
                raise AnalysisError(ambiguity(fake, skey, series_d, run,
                                                     [(r, 0) for r in rs]))
    check_homogeneous({k: {run: (0, rs) for run, rs in v.items()} for k, v in groups.items()},
                         series_d, fake)
    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=100, layout="constrained")
    data = {"direction": cand[0]["direction"], "latency": kind, "unit": "ms", "series": []}
    fallback = False
    styles = SeriesStyles(series_d, order_keys(list(groups)))
    for skey in order_keys(list(groups)):
        runs = groups[skey]
        bins = {}
        have_bins = all(r.get(f"{kind}_bins") for rs in runs.values() for r in rs)
        if have_bins:
            for rs in runs.values():
                for k, c in rs[0][f"{kind}_bins"].items():
                    bins[int(k)] = bins.get(int(k), 0) + c
            items = sorted(bins.items())
            total = sum(c for _, c in items)
            xs, ys, cum = [], [], 0
            for v, c in items:
                cum += c
                p = 100.0 * cum / total
                if p > a.x_max and xs:
                    break
                xs.append(p)
                ys.append(v / 1e6)
            source = "json+ histogram (clat_ns.bins)" if kind == "clat" else \
                "json+ histogram (lat_ns.bins)"
        else:
            fallback = True
            if len(runs) > 1:
                raise AnalysisError(
                    f"series {key_text(skey)}: {len(runs)} runs without json+ histograms "
                    f"cannot be pooled: run fio with --output-format=json+ or pick one run "
                    f"with --where run=ID")
            r = next(iter(runs.values()))[0]
            pts = sorted((float(k.split("_p")[1][:-3]), v) for k, v in r.items()
                         if k.startswith(f"{kind}_p") and k.endswith("_ns"))
            if not pts:
                raise AnalysisError(f"series {key_text(skey)}: no {kind} percentiles "
                                       f"in {r['source']}")
            xs = [p for p, _ in pts if p <= a.x_max]
            ys = [v / 1e6 for p, v in pts if p <= a.x_max]
            total = r.get(f"{kind}_N")
            source = "fio's percentile list (no json+ histogram)"
        label = series_label(series_d, skey, names) or data["direction"]
        ax.plot([_nines(p) for p in xs], ys, marker="." if not have_bins else None,
                label=f"{label} ({total} I/Os)", **styles.of(skey))
        data["series"].append({"label": label, "key": dict(zip(series_d, skey)),
                               "runs": sorted(runs), "samples": total, "source": source,
                               "points": [{"percentile": p, "latency_ms": y}
                                          for p, y in zip(xs, ys)]})
    ticks = [n for n in NINES if n <= a.x_max]
    ax.set_xticks([_nines(n) for n in ticks])
    ax.set_xticklabels([text_of(n) for n in ticks])
    fioaxes.set_log_y(ax, [pt["latency_ms"] for s in data["series"] for pt in s["points"]])
    ax.set_xlabel("percentile")
    ax.set_ylabel(f"{data['direction']} {'completion ' if kind == 'clat' else ''}latency (ms)")
    sc = sorted({r["scenario"] for r in rows if r["scenario"]})
    title = a.title or ((" / ".join(sc) + ": ") if sc else "") + \
        f"{data['direction']} latency percentiles"
    nruns = sorted({len(s["runs"]) for s in data["series"]})
    subtitle = caption(cand, series_d, a.where,
                       ("curve: fio's percentile list of one run" if fallback else
                        f"curve: json+ histogram of {'/'.join(map(str, nruns))} "
                        f"run{'s' if nruns[-1] > 1 else ''} pooled"))
    ax.grid(True, which="both", alpha=0.3)
    finish(fig, ax, title, subtitle)
    if fallback:
        print(f"{PROG}: note: no json+ histograms: drew fio's percentile list "
              f"(run fio with --output-format=json+ for full curves)", file=sys.stderr)
    desc = {"kind": "percentiles", "title": title, "caption": subtitle, "direction": data["direction"],
            "latency": kind, "series": series_d, "where": a.where,
            "from": "json+ histograms" if not fallback else "fio percentile list"}
    return fig, data, desc
