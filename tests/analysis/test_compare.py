"""fio-pack analyze compare knows noise: the old and new
min-max beside the medians, a change within the old runs' own spread not
called a regression, a hint when the result sets align only once a
parameter is ignored, and no key said twice.

On the stored queue-depth sweep of tests/fixtures/fio-json (qd/first.json
and qd/second.json: the same job file run twice, so the directory is two
repeats of every point; qd-slow.json: the same with rate_iops=200), and on
the 002 study run here."""
import json
import re
import subprocess
import sys

import pytest

from helpers.fio import REPO

STORED = REPO / "tests" / "fixtures" / "fio-json"
ANALYZE = [sys.executable, str(REPO / "scripts" / "fio-pack"), "analyze"]

pytestmark = pytest.mark.nosan


def compare(*args):
    return subprocess.run(ANALYZE + ["compare"] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=120)


def iops_of(path) -> dict:
    """{job name: read IOPS} of a stored fio JSON file."""
    return {j["jobname"]: j["read"]["iops"] for j in json.loads(path.read_text())["jobs"]}


@pytest.mark.nofio
def test_old_and_new_min_max():
    first, second = STORED / "qd" / "first.json", STORED / "qd" / "second.json"
    a, b = iops_of(first), iops_of(second)
    p = compare(STORED / "qd", STORED / "qd", "--threshold", "read.iops=5%", "--format", "json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["comparisons"]
    assert len(rows) == len(a) == 9
    for r in rows:
        job = re.search(r"job=(\S+)", r["key"]).group(1)
        for side in ("old", "new"):
            assert (r[side + "_min"], r[side + "_max"], r[side + "_n"]) == \
                (min(a[job], b[job]), max(a[job], b[job]), 2)
    p = compare(STORED / "qd", second, "--threshold", "read.iops=5%")
    head, rule, *body = p.stdout.splitlines()
    assert "| old (min–max) | new (min–max) |" in head
    for line in body:
        job = re.search(r"job=(\S+)", line).group(1)
        lo, hi = min(a[job], b[job]), max(a[job], b[job])
        old, new = line.split(" | ")[2:4]
        assert re.fullmatch(rf"[\d.]+ \({lo:.2f}–{hi:.2f}, n=2\)", old), old
        assert new == f"{b[job]:.2f}"        # one run: its value alone


@pytest.mark.nofio
def test_change_within_the_old_spread_is_not_a_regression():
    """NEW is one of OLD's own runs: every change stays within OLD's
    min-max, and none is a regression however tight the limit."""
    second = STORED / "qd" / "second.json"
    p = compare(STORED / "qd", second, "--threshold", "read.iops=1%", "--format", "json")
    assert p.returncode == 0, p.stdout + p.stderr
    rows = json.loads(p.stdout)["comparisons"]
    past = [r for r in rows if abs(r["change"]) > 0.01]
    assert past, "the stored runs differ: some change passes 1%"
    assert all(r["verdict"] == "within old spread" for r in past)
    assert all(r["old_min"] <= r["new"] <= r["old_max"] for r in rows)
    assert f"0 regression(s), 0 missing in NEW, {len(past)} past the limit but within " \
        "the old runs' spread" in p.stderr
    # one old run has no spread: the same change is a regression
    p = compare(STORED / "qd" / "first.json", second, "--threshold", "read.iops=1%",
                "--format", "json")
    assert p.returncode == 1
    assert "within old spread" not in {r["verdict"] for r in json.loads(p.stdout)["comparisons"]}


@pytest.mark.nofio
def test_suggests_the_parameter_to_ignore():
    """qd-slow.json is the qd sweep with rate_iops=200: nothing aligns, and
    the summary line says which --ignore aligns it; a result set of other
    jobs altogether gets no such hint."""
    p = compare(STORED / "qd", STORED / "qd-slow.json", "--threshold", "read.iops=5%")
    assert p.returncode == 1
    (line,) = p.stderr.splitlines()
    assert "9 missing in NEW; OLD and NEW differ in rate_iops alone: --ignore rate_iops " \
        "compares them;" in line
    # and it does
    p = compare(STORED / "qd", STORED / "qd-slow.json", "--threshold", "read.iops=5%",
                "--ignore", "rate_iops")
    assert "0 missing in NEW" in p.stderr and "--ignore" not in p.stderr
    p = compare(STORED / "qd", STORED / "local-multi-plain.out", "--threshold", "read.iops=5%")
    assert "missing in NEW" in p.stderr and "--ignore" not in p.stderr


def test_no_key_said_twice(tmp_path):
    """A study's threads sweep sets numjobs: the label said "numjobs=4
    threads=4". One name for one value, the study's."""
    from helpers.fio import ENGINE_DIR, FIO
    (tmp_path / "t").mkdir()
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "fio-pack"), "study",
                        "sysbench-rndrd", "--sweep", "threads=1,2", "--target",
                        f"t={tmp_path / 't'}", "--set", "runtime=1", "--set", "size=2m",
                        "--fio", FIO, "--engine-dir", ENGINE_DIR, "--out", tmp_path / "s",
                        "--quiet"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    p = compare(tmp_path / "s", tmp_path / "s", "--threshold", "throughput=5%",
                "--format", "json")
    assert p.returncode == 0, p.stderr
    keys = [r["key"] for r in json.loads(p.stdout)["comparisons"]]
    assert sorted(keys) == ["target=t job=sysbench-rndrd threads=1",
                            "target=t job=sysbench-rndrd threads=2"]


def test_numbers_sorted_as_numbers(tmp_path):
    """A sweep of iodepth 1, 4, 16 came out as text sorts it: 1, 16, 4.
    The measurements are in the order of their numbers."""
    from helpers.fio import FIO
    (tmp_path / "runs").mkdir()
    for qd in (16, 1, 4):
        p = subprocess.run([str(FIO), "--name=qd", "--ioengine=null", "--rw=randread",
                            "--size=4m", f"--iodepth={qd}", "--output-format=json",
                            f"--output={tmp_path / 'runs' / f'qd{qd}.json'}"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
    for fmt in ("json", "md"):
        p = compare(tmp_path / "runs", tmp_path / "runs", "--threshold", "read.iops=5%",
                    "--format", fmt)
        assert p.returncode == 0, p.stderr
        keys = [r["key"] for r in json.loads(p.stdout)["comparisons"]] if fmt == "json" else \
            [l.split(" | ")[1] for l in p.stdout.splitlines()[2:]]
        assert [re.search(r"iodepth=(\S+)", k).group(1) for k in keys] == ["1", "4", "16"], keys
