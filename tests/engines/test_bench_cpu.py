"""fio-pack bench's CPU per operation, run for real: the engine,
its peer and fio's null engine with the engine job's shape, and the
differences the report prints, checked against the measurements it saved.

Needs root (the benchmark mounts its tmpfs) and Debian's postmark. Asserts
what was measured and printed, never how fast anything was."""
import json
import os
import re
import statistics
import subprocess
import sys

import pytest

import shutil

from helpers.fio import DBR_ENGINE, ENGINE, FIO, IS_ROOT, PM_ENGINE, REPO

FIO_PACK = [sys.executable, str(REPO / "scripts" / "fio-pack")]

pytestmark = pytest.mark.skipif(not IS_ROOT, reason="fio-pack bench mounts a tmpfs")


def cpu_rows(report, config):
    """{row label: median us} of the CPU table of @config in @report."""
    part = report[report.index("CPU per transaction"):]
    part = part[part.index("*%s*" % config):]
    rows = {}
    for line in part.splitlines()[2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if re.fullmatch(r"\**-?[0-9.]+\**", cells[1]):
            rows[cells[0]] = float(cells[1].strip("*"))
    return rows


def test_bench_postmark_prints_cpu_per_transaction(tmp_path):
    """The engine's job, both whole processes and fio's null engine doing
    the engine job's I/Os, per transaction; the differences are those of
    the medians; the null job's I/Os are the engine job's, reads apart."""
    out, raw = tmp_path / "bpm.md", tmp_path / "bpm.json"
    p = subprocess.run([*FIO_PACK, "bench", "postmark", "--quick", "--filesystems", "tmpfs",
                        "--configs", "defaults", "--transactions", "3000", "--repeats", "2",
                        "--quiet-wait", "0", "--fio", str(FIO), "--engine", str(PM_ENGINE),
                        "--pm-sim", str(REPO / "build" / "pm-sim"),
                        "--output", str(out), "--raw", str(raw)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    (res,) = json.loads(raw.read_text())["fs"]["tmpfs"]["configs"]
    en = [x for x in res["runs"] if x["prog"] == "engine"]
    pm = [x for x in res["runs"] if x["prog"] == "postmark"]
    assert len(en) == len(pm) == 2 and len(res["pairs"]) == 2
    for x in en:
        # fio counted every operation of the run: what the null job repeats
        ios = x["fio_ios"]
        assert ios["read"] == int(x["counters"]["read"])
        assert ios["sync"] == x["transactions"] == 3000
        assert ios["trim"] == int(x["counters"]["deleted"])
        assert ios["write"] >= int(x["counters"]["created"]) + int(x["counters"]["appended"])
    nulls = [pair["null_us"] for pair in res["pairs"]]
    assert all(0 < n < 100 for n in nulls), nulls

    def med(xs):
        return statistics.median(xs)
    engine = med([x["job_cpu"] * 1e6 / 3000 for x in en])
    whole = med([(x["utime"] + x["stime"]) * 1e6 / 3000 for x in en])
    peer = med([(x["utime"] + x["stime"]) * 1e6 / 3000 for x in pm])
    null = med(nulls)
    rows = cpu_rows(out.read_text(), "defaults")
    want = {"engine, job": engine, "engine, whole process": whole,
            "PostMark, whole process": peer, "fio null engine, job": null,
            "the engine's own, job": engine - null,
            "engine beyond PostMark, job": engine - peer,
            "engine beyond PostMark, whole process": whole - peer,
            "the engine's own beyond PostMark's": engine - null - peer}
    assert set(rows) == set(want), rows
    for label, v in want.items():
        assert rows[label] == pytest.approx(v, abs=0.0015), label


def test_bench_smallfile_takes_a_relative_fio(tmp_path):
    """--fio and --engine relative to the directory the command runs in:
    fio's filecreate and filestat runs start in their tree's directory,
    where a relative --fio named nothing (B1 stopped with a
    FileNotFoundError after its layouts)."""
    raw = tmp_path / "bsf.json"
    p = subprocess.run([*FIO_PACK, "bench", "smallfile", "--sections", "B1", "--files", "1000",
                        "--repeats", "1", "--filecreate-sizes", "100",
                        "--fio", os.path.relpath(FIO, REPO),
                        "--engine", os.path.relpath(ENGINE, REPO),
                        "--output", str(tmp_path / "bsf.md"), "--raw", str(raw)],
                       capture_output=True, text=True, timeout=600, cwd=REPO)
    assert p.returncode == 0, p.stderr[-3000:]
    (fc,) = json.loads(raw.read_text())["B1_filecreate"]
    assert fc["files"] == 100 and fc["rate"] > 0, fc


def test_a_stale_engine_is_not_reported_as_the_checkouts_commit(tmp_path):
    """An engine built before engines/ last changed was reported as
    "source: commit X" of the checkout: a run after a pull or a merge
    without make measured older code under the new commit's name. The
    report's engine row and a line on stderr now say it; a build newer
    than its sources is the commit's."""
    eng = tmp_path / "eng"
    eng.mkdir()
    copy = eng / "dbreplay.so"
    rows = {}
    for case, mtime in (("stale", 1_000_000_000), ("fresh", None)):
        shutil.copy(DBR_ENGINE, copy)
        if mtime:
            os.utime(copy, (mtime, mtime))
        out = tmp_path / f"{case}.md"
        p = subprocess.run([*FIO_PACK, "bench", "dbreplay", "--records", "1000", "--sections", "A",
                            "--pairs", "sync", "--repeats", "1", "--quiet-wait", "0",
                            "--fio", str(FIO), "--engine", str(copy), "--output", str(out)],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        rows[case] = (next(l for l in out.read_text().splitlines() if l.startswith("| engine |")),
                      p.stderr)
    row, err = rows["stale"]
    assert "source: **not commit " in row and "changed (" in row and "run make" in row, row
    assert "warning: the engine" in err and "run make" in err, err
    row, err = rows["fresh"]
    assert "source: commit " in row and "not commit" not in row, row
    assert "warning: the engine" not in err, err
