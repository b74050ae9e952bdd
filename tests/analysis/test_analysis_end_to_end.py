"""The analysis end to end, as the 002 article's reader does it: the
sysbench-rndrd study of jobs/catalogue.json run by scripts/fio-pack study
on a tmpfs and on an ext4 file system on a loop device (root only), then
fio-pack analyze's rows, table, report and plot of the two studies,
checked against the runs' own JSON and reference/figures.json. Runs are
tiny (4 MiB files, runtime=1)."""
import csv
import io
import json
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from analysis_common import TIMEOUT, analyze, md_tables, ok
from helpers.fio import IS_ROOT, REPO

STUDY = [sys.executable, str(REPO / "scripts" / "fio-pack"), "study"]
FIGURES = REPO / "reference" / "figures.json"

# Python analysis code: the sanitizer run (engines built with ASan) adds nothing here
pytestmark = pytest.mark.nosan


# ---------------------------------------------------------------------------
# End to end: the 002 article's study on two real targets
# ---------------------------------------------------------------------------

@pytest.fixture
def two_targets(tmp_path):
    if not IS_ROOT:
        pytest.skip("needs root to mount tmpfs and a loop device")
    tmpfs, ext4 = tmp_path / "tmpfs", tmp_path / "ext4"
    tmpfs.mkdir()
    ext4.mkdir()
    img = tmp_path / "ext4.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    mounts, loop = [], None
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(tmpfs)],
                           capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"cannot mount tmpfs: {r.stderr.strip()}")
        mounts.append(tmpfs)
        r = subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"mkfs.ext4: {r.stderr.strip()}")
        r = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"no loop device: {r.stderr.strip()}")
        loop = r.stdout.strip()
        r = subprocess.run(["mount", loop, str(ext4)], capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"mount {loop}: {r.stderr.strip()}")
        mounts.append(ext4)
        yield tmpfs, ext4
    finally:
        for m in reversed(mounts):
            for _ in range(50):
                if subprocess.run(["umount", str(m)], capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True)


def run_study(target, out_dir, *extra):
    p = subprocess.run([*STUDY, "sysbench-rndrd", "--sweep", "threads=1,2,4",
                        "--target", target, "--set", "runtime=1", "--set", "size=4m",
                        "--out", str(out_dir), "--quiet", *extra],
                       capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO)
    assert p.returncode == 0, p.stderr
    return out_dir


def measured(study_dirs):
    """{(label, threads): (MiB/s, p95 ms)} computed here from the runs' JSON and meta files."""
    out = {}
    for d in study_dirs:
        for mp in sorted((d / "runs").glob("*.meta.json")):
            meta = json.loads(mp.read_text())
            doc = json.loads((d / "runs" / ("%04d.json" % meta["run"])).read_text())
            (job,) = [j for j in doc["jobs"] if j["jobname"] == "sysbench-rndrd"]
            out[(meta["target"]["label"], meta["params"]["threads"])] = (
                job["read"]["bw_bytes"] / 1048576,
                job["read"]["clat_ns"]["percentile"]["95.000000"] / 1e6)
    return out


def test_end_to_end_sysbench_study_002_table(two_targets, tmp_path):
    tmpfs, ext4 = two_targets
    # tmpfs buffered, ext4 with the job's O_DIRECT: --set is per study, so two studies
    s1 = run_study(f"tmpfs={tmpfs}", tmp_path / "r-tmpfs", "--set", "direct=0")
    s2 = run_study(f"ext4={ext4}", tmp_path / "r-ext4")
    truth = measured([s1, s2])
    assert len(truth) == 6
    # a copy of a study's run, given first under another name, is the same run: the
    # study's metadata (target label, sweep point) is what counts
    copy = tmp_path / "copied-result"
    shutil.copy(s2 / "runs" / "0001.json", copy)
    p = ok(analyze("rows", copy, s1, s2, "--format", "json", "--where", "direction=total"))
    rows = json.loads(p.stdout)["rows"]
    assert len({r["run"] for r in rows}) == 6 and "counted once" in p.stderr
    assert {r["target"] for r in rows} == {"tmpfs", "ext4"}

    p = ok(analyze("table", s1, s2, "--rows", "threads", "--metric", "throughput",
                   "--metric", "response time p95", "--baseline", "ext4"))
    (tp, rt) = md_tables(p.stdout)
    assert tp[0].startswith("throughput (MiB/s)") and rt[0].startswith("response time p95 (ms)")
    assert tp[1] == ["threads", "tmpfs", "ext4", "tmpfs / ext4"]
    assert rt[1] == ["threads", "tmpfs", "ext4", "ext4 / tmpfs"]
    assert [r[0] for r in tp[2]] == ["1", "2", "4"] == [r[0] for r in rt[2]]
    for (title, head, rows), k in ((tp, 0), (rt, 1)):
        for r in rows:
            t = int(r[0])
            a, b = truth[("tmpfs", t)][k], truth[("ext4", t)][k]
            assert float(r[1]) == pytest.approx(a, abs=0.006 if a >= 0.1 else a * 0.02)
            assert float(r[2]) == pytest.approx(b, abs=0.006 if b >= 0.1 else b * 0.02)
            ratio = a / b if k == 0 else b / a
            assert float(r[3]) == pytest.approx(ratio, abs=0.006)

    p = ok(analyze("table", s1, s2, "--rows", "threads", "--metric", "throughput",
                   "--metric", "response time p95", "--baseline", "ext4", "--format", "csv"))
    lines = [l for l in csv.reader(io.StringIO(p.stdout)) if l]
    for l in lines:
        if l[0] == "metric":
            continue
        k = 0 if l[0] == "throughput" else 1
        t = int(l[2])
        assert float(l[3]) == truth[("tmpfs", t)][k]
        assert float(l[4]) == truth[("ext4", t)][k]

    # our devices beside the published Intel 320 and RAID10
    p = ok(analyze("report", s1, s2, "--map", "intel320=tmpfs", "--map", "raid10-8sas=ext4"))
    tables = md_tables(p.stdout)
    tput = next(t for t in tables if t[0].startswith("throughput (MiB/s)"))
    assert tput[1][:7] == ["threads", "tmpfs", "Intel 320 (published)", "tmpfs / published",
                           "ext4", "RAID10 (published)", "ext4 / published"]
    figs = {f["id"]: f for f in json.loads(FIGURES.read_text())["figures"]}
    row1 = next(r for r in tput[2] if r[0] == "1")
    assert float(row1[2]) == figs["002-throughput-intel320-t1"]["value"]
    assert float(row1[5]) == figs["002-throughput-raid10-8sas-t1"]["value"]
    assert float(row1[3]) == pytest.approx(truth[("tmpfs", 1)][0] / 30.27, rel=0.01)
    row32 = next(r for r in tput[2] if r[0] == "32")
    assert row32[1] == "-" and float(row32[2]) == figs["002-throughput-intel320-t32"]["value"]
    ratios = next(t for t in tables if t[0].startswith("throughput: ratios"))
    assert ratios[1][1:3] == ["tmpfs / ext4", "Intel 320 / RAID10 (published)"]
    r1 = next(r for r in ratios[2] if r[0] == "1")
    assert float(r1[2]) == figs["002-throughput-ratio-intel320-over-raid10-t1"]["value"]
    assert float(r1[1]) == pytest.approx(truth[("tmpfs", 1)][0] / truth[("ext4", 1)][0], abs=0.006)
    assert "5.00-8.00" in p.stdout      # the article's "5-8x" summary beside the measured range
    p = ok(analyze("report", s1, s2, "--map", "tmpfs=Intel 320", "--format", "csv"))
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    r = next(r for r in rows if r["metric"] == "response time p95" and r["threads"] == "2")
    assert float(r["published"]) == figs["002-response-intel320-t2"]["value"]
    assert float(r["measured"]) == truth[("tmpfs", 2)][1]
    html_out = tmp_path / "report.html"
    ok(analyze("report", s1, s2, "--map", "intel320=tmpfs", "-o", html_out))
    h = html_out.read_text()
    ET.fromstring(re.sub(r"^<!DOCTYPE html>", "", h))
    assert "Intel 320 (published)" in h and not re.search(r"(src|href)\s*=", h)
    p = analyze("report", s1, s2, "--map", "intel321=tmpfs")
    assert p.returncode == 2 and "intel321" in p.stderr

    # measured against published in a plot
    png = tmp_path / "sb.png"
    ok(analyze("plot", s1, s2, "--metric", "throughput", "--x", "threads",
               "--reference", FIGURES, "--map", "intel320=tmpfs", "--map", "raid10-8sas=ext4",
               "-o", png))
    side = json.loads((tmp_path / "sb.png.json").read_text())
    pub = {p["device_id"]: p for p in side["data"]["published"]}
    assert [pt["value"] for pt in pub["intel320"]["points"]][:3] == [30.27, 55.18, 95.13]
    meas = {s["label"]: s for s in side["data"]["series"]}
    assert meas["ext4"]["points"][0]["median"] == truth[("ext4", 1)][0]
    assert side["runs"] == 6 and len(side["studies"]) == 2
