"""fiohosts - the host as a dimension of tables, reports and plots, and which
runs a table used.

Results of several fio servers (a study over --server, or one fio client
driving several servers) have rows that differ in host. A table that pooled
them would mix machines, so by default tables, reports and plots give each
target a column (or line) per host; runs of one host alone show no host.

A host is identified by its address, as the study or fio's client_stats
give it ("10.0.0.2:8765", "local"), and shown by its name where one is
known: the server's own hostname, which a study records in each run's meta
file (remote.server_name: the "<name>" prefix fio's client puts on a
server's lines) and which a plain client output of one server has in those
lines too. fio's client_stats "hostname" is only the address the client was
given, so without a name the address is shown. Two servers on one machine
share a name and are shown as NAME:PORT.
"""
import re
from fiopack.results.tables import order
from fiopack.results.metrics import select



def hosts_of(rows) -> list:
    """The hosts of the rows in order, without the "All clients" aggregate."""
    return order([r["host"] for r in rows if not r.get("aggregate")])


def _address(host: str) -> str:
    m = re.fullmatch(r"\[?(.*?)\]?:(\d+)", host or "")
    return m.group(1) if m else host


def host_names(rows) -> dict:
    """{host: the name tables, reports and plots show for it}."""
    known = {}
    for r in rows:
        h = r.get("host")
        if h is None or h == "all" or known.get(h):
            continue
        hn = r.get("hostname")
        known[h] = hn if hn and hn not in (h, _address(h), "local") else None
    count = {}
    for n in known.values():
        if n:
            count[n] = count.get(n, 0) + 1
    out = {}
    for h, n in known.items():
        if not n:
            out[h] = h
        elif count[n] > 1:
            port = re.search(r":(\d+)$", h)
            out[h] = f"{n}:{port.group(1)}" if port else f"{n} ({h})"
        else:
            out[h] = n
    shown = list(out.values())
    if len(set(shown)) != len(shown) or any(v in out and v != h for h, v in out.items()):
        return {h: h for h in out}      # a name that is another host's address: addresses
    out.setdefault("all", "all")
    return out


def default_dims(rows, base, taken=()) -> list:
    """base (["target"]) plus host when the rows hold several hosts and host is
    not already a dimension (taken: the other dimensions of the table)."""
    dims = list(base)
    if "host" not in dims and "host" not in taken and len(hosts_of(rows)) > 1:
        dims.append("host")
    return dims


def show(dims, key, names) -> tuple:
    """A key with its host values replaced by their names."""
    return tuple(names.get(v, v) if d == "host" else v for d, v in zip(dims, key))


def relabel_table(t, names) -> None:
    """Shows a table's hosts by name (names are one-to-one, so cells stay apart)."""
    rd, cd = t.row_dims, t.col_dims
    t.cells = {(show(rd, rk, names), show(cd, ck, names)): st for (rk, ck), st in t.cells.items()}
    t.row_keys = [show(rd, k, names) for k in t.row_keys]
    t.col_keys = [show(cd, k, names) for k in t.col_keys]
    if t.baseline is not None:
        t.baseline = show(cd, t.baseline, names)


def baseline_address(baseline, cols, names):
    """--baseline as the table's raw column values: a host given by name is
    turned back into its address."""
    if baseline is None or "host" not in cols:
        return baseline
    parts = [p.strip() for p in baseline.split(",")]
    back = {v: k for k, v in names.items()}
    if len(parts) == len(cols):
        i = cols.index("host")
        parts[i] = back.get(parts[i], parts[i])
    return ",".join(parts)


# ---------------------------------------------------------------------------
# Which runs a table or report used
# ---------------------------------------------------------------------------

def runs_used(ds, used, where, where_text, targets=None, what="the metrics") -> dict:
    """How many of the runs found a table used, and why the others were not.

    used: the run ids in the table; where/where_text: the parsed and given
    --where; targets: the targets the report shows (its --map), or None.
    """
    found = [r.id for r in ds.runs]
    kept = {r["run"] for r in select(ds.rows, where)}
    left, rest = [], [i for i in found if i not in used]
    by_where = [i for i in rest if i not in kept]
    if by_where:
        left.append((f"by --where {' '.join(where_text)}", by_where))
    rest = [i for i in rest if i in kept]
    if targets is not None:
        tgt = {}
        for r in ds.rows:
            tgt.setdefault(r["run"], set()).add(r["target"])
        unmapped = [i for i in rest if not tgt.get(i, set()) & set(targets)]
        if unmapped:
            names = sorted({t for i in unmapped for t in tgt.get(i, ()) if t})
            left.append((f"as no --map names their target ({', '.join(names)})", unmapped))
        rest = [i for i in rest if i not in unmapped]
    if rest:
        left.append((f"for want of a value of {what}", rest))
    failed = sum(1 for n in ds.notes if re.search(r": run \d+ failed \(", n))
    return {"found": len(found), "used": len(used), "failed": failed,
            "left_out": [{"why": why, "runs": ids} for why, ids in left]}


def runs_text(acc) -> str:
    """"3 of 9 runs (6 left out by --where host=...)"."""
    text = f"{acc['used']} of {acc['found']} runs"
    why = [f"{len(x['runs'])} left out {x['why']}" for x in acc["left_out"]]
    if acc["failed"]:
        why.append(f"{acc['failed']} failed run{'s' if acc['failed'] > 1 else ''} "
                   f"left out before")
    return text + (f" ({'; '.join(why)})" if why else "")
