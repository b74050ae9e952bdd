"""The analysis (fiopack.results, fio-pack analyze) on stored fio outputs:
tests/fixtures/fio-json, made by the real fio 3.33 and the pack's engines
(each file's NAME.cmd is the command that produced it; make.sh remakes them
all). No fio runs here (marked nofio).

The checks are those of test_analysis.py, which runs the same jobs through
fio first: each compares what the analysis says with what the stored JSON
holds, read here directly, so both the live and the stored outputs go
through the same assertions and no value is written into a test."""
import inspect
import json
import re
from pathlib import Path

import pytest

import test_analysis as live
from conftest import REPO
from fiopack.catalogue import split_json

STORED = REPO / "tests" / "fixtures" / "fio-json"

pytestmark = [pytest.mark.nofio, pytest.mark.nosan]


def doc_of(path: Path) -> dict:
    text = path.read_text()
    return json.loads(split_json(text)[1])


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    """The dictionary test_analysis.py's `out` fixture builds by running fio,
    here of the stored outputs; the directories the jobs ran in are read
    back from their JSON (the analysis reports them as targets)."""
    multi = STORED / "local-multi.out"
    qd = [STORED / "qd" / "first.json", STORED / "qd" / "second.json"]
    dirs = {}
    for j in doc_of(qd[0])["jobs"]:
        label = re.fullmatch(r"qd-(\w)-\d", j["jobname"]).group(1)
        dirs[label] = Path(j["job options"]["directory"])
    return {"base": tmp_path_factory.mktemp("stored"),
            "data": Path(doc_of(multi)["global options"]["directory"]),
            "multi": multi, "multi_json": STORED / "local-multi-plain.out",
            "qd": qd, "qd_dirs": dirs, "qd_slow": STORED / "qd-slow.json",
            "postmark": STORED / "postmark.json", "smallfile": STORED / "smallfile.json",
            "opstats": STORED / "smallfile-ops.jsonl"}


@pytest.fixture(scope="module")
def client_server():
    """The output of one fio client run against two `fio --server`s on
    loopback, and the servers' ports as the JSON names them."""
    path = STORED / "client-server.out"
    ports = sorted({e["port"] for e in doc_of(path)["client_stats"]
                    if e["jobname"] != "All clients"})
    return path, ports


CHECKS = [live.test_local_multi_job_groups_clones_json_plus,
          live.test_client_server_all_clients,
          live.test_engine_operations,
          live.test_rows_output,
          live.test_identity_by_content_and_repeats,
          live.test_table_repeats_median_min_max_cv,
          live.test_table_refuses_pooling_non_repeats,
          live.test_table_compact_cells,
          live.test_plot_iops_against_queue_depth,
          live.test_plot_axes_read_back_from_svg,
          live.test_plot_latency_percentiles_from_json_plus,
          live.test_bad_input,
          live.test_compare]


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__[5:] for c in CHECKS])
def test_stored(check, out, client_server, tmp_path):
    given = {"out": out, "client_server": client_server, "tmp_path": tmp_path}
    check(**{name: given[name] for name in inspect.signature(check).parameters})


def test_every_stored_output_has_its_command():
    """Each stored output names the command (and the fio version) that made it."""
    outputs = [p for p in STORED.rglob("*") if p.suffix in (".json", ".out", ".jsonl")]
    assert len(outputs) >= 9
    for p in outputs:
        cmd = p.with_name(p.name + ".cmd")
        assert cmd.is_file(), f"{p}: no {cmd.name}"
        text = cmd.read_text()
        assert re.search(r"^# fio-\d+\.\d+", text, re.M), f"{cmd}: no fio version"
        assert f"> tests/fixtures/fio-json/{p.relative_to(STORED)}" in text or \
            p.suffix == ".jsonl", f"{cmd}: does not say it wrote {p.name}"


def test_rows_sum_to_fio_totals():
    """An invariant of the normalisation: a job's direction row counts the
    I/Os fio counted for that direction over all of its clones, and each
    run's rows name the fio version of its JSON."""
    from fiopack.results.data import load
    for p in [STORED / "qd" / "first.json", STORED / "local-multi-plain.out",
              STORED / "postmark.json"]:
        doc = doc_of(p)
        ds = load([p])
        assert [r.fio_version for r in ds.runs] == [doc["fio version"]]
        for name in {j["jobname"] for j in doc["jobs"]}:
            for d in ("read", "write", "trim"):
                want = sum(j[d]["total_ios"] for j in doc["jobs"] if j["jobname"] == name)
                rows = [r for r in ds.rows if r["job"] == name and r["direction"] == d
                        and r["op"] == ""]
                if want:
                    assert [r["ios"] for r in rows] == [want], (p.name, name, d)


SUMMARY = [live.sys.executable, str(REPO / "scripts" / "fio-pack"), "summary"]


@pytest.mark.parametrize("name", ["local-multi-plain.out", "qd/first.json", "postmark.json",
                                  "smallfile.json", "client-server.out"])
def test_summary_lists_every_job_and_direction(name):
    """fio-pack summary: a line per job (per host, with several; its clones
    merged, the "All clients" sum left out), then one per direction that
    did work, with its count of I/Os over the clones."""
    path = STORED / name
    doc = doc_of(path)
    jobs = {}
    for e in doc.get("jobs") or doc["client_stats"]:
        if e["jobname"] != "All clients":
            jobs.setdefault((e.get("port"), e["jobname"]), []).append(e)
    p = live.subprocess.run(SUMMARY + [str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stderr, p.stderr
    want = []
    for (_, name), es in jobs.items():
        want.append(name + (f" ({len(es)} clones merged)" if len(es) > 1 else ""))
        want += [f"({sum(e[d]['total_ios'] for e in es)} ops" for d in ("read", "write", "trim")
                 if any(e[d]["total_ios"] for e in es)]
    lines = [l for l in p.stdout.splitlines() if not l.startswith("    ")]
    lines = [l for l in lines if l.startswith("  ") and "(" in l and " ops" in l
             or not l.startswith(" ")]
    assert len(lines) == len(want), (lines, want)
    for line, w in zip(lines, want):
        assert re.sub(r" on \S+", "", line) == w or (line.startswith("  ") and w in line), \
            (line, w)


def test_summary_adds_the_opstats_totals():
    ops = {}
    for line in (STORED / "smallfile-ops.jsonl").read_text().splitlines():
        for op, s in json.loads(line)["ops"].items():
            ops[op] = ops.get(op, 0) + s["ops"]
    p = live.subprocess.run(SUMMARY + [str(STORED / "smallfile.json"),
                                       str(STORED / "smallfile-ops.jsonl")],
                            capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    tail = p.stdout.split("per operation (all jobs):\n", 1)[1].splitlines()
    got = {l.split()[0]: int(l.split()[1]) for l in tail if l.startswith("  ")}
    assert got == ops and got
