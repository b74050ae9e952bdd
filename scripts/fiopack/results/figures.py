"""Published figures (reference/figures.json): loading them, pairing a
figure's metric with the measured one, and mapping the articles' devices
to the targets of a study. The report itself is report.py's."""
import json
import re
from pathlib import Path

from fiopack import documents
from fiopack.results.data import AnalysisError, check_document, sha256_bytes


# Published figures (the report itself: fiopack/results/report.py)
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
        doc = json.loads(p.read_bytes())
    except OSError as e:
        raise AnalysisError(f"--reference {p}: {e.strerror}")
    except (ValueError, RecursionError) as e:
        raise AnalysisError(f"--reference {p}: not valid JSON: {e}")
    if not isinstance(doc, dict) or "figures" not in doc:
        raise AnalysisError(f"--reference {p}: not a figures file (no \"figures\"; see "
                            f"reference/README.md)")
    check_document(doc, documents.FIGURES, f"--reference {p}",
                   "not a figures file (reference/README.md)")
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


def devices(figs, among=None) -> dict:
    """device_id -> display name: the first name the article gives it in any
    measured figure of @figs (a scenario's figures, all of them: an article
    that says "RAID10" in one chart and "RAID" in the next names one device,
    and every plot and table shows it by one name). among: only the devices
    of these figures (one metric's), still named from all of @figs."""
    out = {}
    for f in figs:
        did = f.get("device_id") or f.get("device")
        if did and did not in out and f.get("kind") == "measured":
            out[did] = f.get("device")
    if among is not None:
        ids = {f.get("device_id") or f.get("device") for f in among}
        out = {k: v for k, v in out.items() if k in ids}
    return out


def resolve_maps(maps, figs, targets) -> list:
    """[(device_id, target label)] from --map DEVICE=TARGET (either order)."""
    devs = devices(figs)
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
