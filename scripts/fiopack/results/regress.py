"""The regression check of `fio-pack analyze compare`: two result sets, their
metrics matched by workload, and the limits a change may not pass."""
import re

from fiopack.results.data import (AnalysisError, IDENTITY_FIELDS, sort_key, text_of,
                                  workload)
from fiopack.results.metrics import Stats, parse_metric, select


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
        for key in sorted(set(vo) | set(vn), key=key_order):
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
                    if (worse or better) and within_spread(res["old"], n):
                        # the old runs already spanned this median: noise, not a change
                        res["verdict"] = NOISE
            results.append(res)
    return results


# the verdict of a change past the limit whose new median the old repeats
# already reached: an unchanged rerun is not a regression
NOISE = "within old spread"


def within_spread(old, median) -> bool:
    """Whether @median lies within the old repeats' min-max (two or more)."""
    return old.n > 1 and old.min <= median <= old.max


def key_order(key) -> tuple:
    """A measurement's place: its names in turn, numbers and sizes by
    magnitude (threads=1, 4, 16, not 1, 16, 4), as tables order them."""
    return tuple((k, sort_key(v)) for k, v in key)


def _aligned(metric, rows, ignore) -> dict:
    out = {}
    for r, v in metric.rows_of(rows):
        key = tuple((f, text_of(r.get(f))) for f in IDENTITY_FIELDS if f not in ignore) + \
            tuple((k, v2) for k, v2 in workload(r["params"]) if k not in ignore)
        out.setdefault(key, []).append(v)
    return out


MEASURED = {"scenario", "target", "job", "direction", "op"}


def ignore_hint(results) -> list:
    """The names whose --ignore would align what OLD has and NEW lacks with
    what NEW alone has, the one side's keys all found in the other's (a
    runtime or a size changed between the two result sets, a rate limit
    added): one name when one does, else the (at most three) names whose
    values differ between the two sides; [] when nothing aligns, or when
    only what was measured (target, job, ...) would."""
    missing = {(r["metric"], r["key"]) for r in results if r["verdict"] == "missing in new"}
    extra = {(r["metric"], r["key"]) for r in results if r["verdict"] == "new only"}
    if not missing or not extra:
        return []

    def aligns(names) -> bool:
        strip = lambda keys: {(m, tuple(kv for kv in k if kv[0] not in names))  # noqa: E731
                              for m, k in keys}
        # one side may hold more (a target or a point NEW did not run)
        a, b = strip(missing), strip(extra)
        return a <= b or b <= a

    names = sorted({k for _, key in missing | extra for k, _ in key} - MEASURED)
    for n in names:
        if aligns({n}):
            return [n]

    def values(keys, n):
        return {dict(k).get(n) for _, k in keys}
    differ = [n for n in names if values(missing, n) != values(extra, n)]
    # what was measured (another target, job or direction) is no setting to ignore
    if not differ or len(differ) > 3 or set(differ) & MEASURED:
        return []
    return differ if aligns(set(differ)) else []


def key_label(key, varying) -> str:
    return " ".join(f"{k}={v}" for k, v in key if k in varying) or "(all)"


def varying_keys(results, prefer=()) -> set:
    """The key names a measurement's label shows: target and job, and the
    names whose values vary; of names that always hold the same value (a
    study's threads and the numjobs it sets), one, @prefer's first (the
    study's own sweep names)."""
    vals = {}
    for r in results:
        for k, v in r["key"]:
            vals.setdefault(k, set()).add(v)
    always = {"target", "job"}
    varying = [k for k, vs in vals.items() if len(vs) > 1 or k in always]
    keys = [dict(r["key"]) for r in results]
    kept = []
    for k in sorted(varying, key=lambda k: (k not in always, k not in prefer, k)):
        if k not in always and any(all(str(d.get(k)) == str(d.get(j)) for d in keys)
                                   for j in kept):
            continue
        kept.append(k)
    return set(kept)
