"""The stored fio outputs themselves: tests/fixtures/fio-json, made by the
real fio 3.33 and the pack's engines (each file's NAME.cmd is the command
that produced it; make.sh remakes them all), and what holds of them alone:
their commands, the rows' sums against fio's totals, fio-pack summary's
lines. No fio runs here (marked nofio). test_analysis.py runs its checks
on these outputs too, as its "stored" outputs beside the "live" ones."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fio import REPO
from fiopack.catalogue import split_json

STORED = REPO / "tests" / "fixtures" / "fio-json"

pytestmark = [pytest.mark.nofio, pytest.mark.nosan]


def doc_of(path: Path) -> dict:
    text = path.read_text()
    return json.loads(split_json(text)[1])


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


SUMMARY = [sys.executable, str(REPO / "scripts" / "fio-pack"), "summary"]


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
    p = subprocess.run(SUMMARY + [str(path)], capture_output=True, text=True, timeout=60)
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
    p = subprocess.run(SUMMARY + [str(STORED / "smallfile.json"),
                                       str(STORED / "smallfile-ops.jsonl")],
                            capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    tail = p.stdout.split("per operation (all jobs):\n", 1)[1].splitlines()
    got = {l.split()[0]: int(l.split()[1]) for l in tail if l.startswith("  ")}
    assert got == ops and got
