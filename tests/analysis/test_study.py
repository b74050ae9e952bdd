"""scripts/fio-pack study, the study runner, and reference/figures.json.

Every study here runs the real fio (build/fio) on real directories, a real
loop device and real fio servers on loopback ports; job files and the
catalogue are written under tmp_path, so the tests do not depend on
jobs/catalogue.json. Runs are tiny (1 MiB files, runtime=1).
"""
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fiopack.study import jobfile

from helpers.fio import ENGINE_DIR, FIO, IS_ROOT, REPO, needs_root
from helpers.procs import fio_servers, free_port, kill_group
from helpers.trees import snapshot

STUDY = [sys.executable, str(REPO / "scripts" / "fio-pack"), "study"]
FIGURES = REPO / "reference" / "figures.json"
TIMEOUT = 180

# The scenario ids of SCENARIOS.md's catalogue table (tests must not read
# the shared folder).
SCENARIO_IDS = [
    "hdparm-t", "hdparm-T", "seeker", "dd-write-10g", "dd-read-10g", "mysql-load", "mysql-dump",
    "postmark-isp", "iozone-auto", "iozone-raid0-stripe", "sysbench-rndrd",
    "storagemark-service", "bonnie-seq", "bonnie-seeks", "bonnie-files", "fio-randread-64",
    "fio-randwrite-64", "phoronix-disk-2010",
]

RANDREAD_JOB = """\
; study test job: tiny random reads in ${STUDY_TEST_DIR}
[global]
ioengine=psync
directory=${STUDY_TEST_DIR}
description=x${STUDY_TEST_UNSET}y${STUDY_TEST_OTHER}
size=1m
bs=4k
time_based
runtime=5

[randread]
rw=randread
"""

DEV_WRITE_JOB = """\
[devwrite]
ioengine=psync
filename=${STUDY_TEST_DEV}
rw=write
bs=64k
size=1m
direct=1
"""

DEV_READ_JOB = DEV_WRITE_JOB.replace("[devwrite]", "[devread]").replace("rw=write", "rw=read")

POSTMARK_JOB = """\
[pm]
ioengine=external:build/postmark.so
pm_location=${STUDY_TEST_DIR}
pm_number=10
pm_transactions=20
pm_size_high=8192
pm_report=none
"""


# a precondition that takes ~2 s (rate=2m for 4 MiB), then reads of what it wrote
PRECOND_JOB = """\
[global]
ioengine=psync
directory=${STUDY_TEST_DIR}
filename=study-test.pre
size=4m
bs=64k

[precondition]
rw=write
rate=2m

[readback]
stonewall
rw=randread
time_based
runtime=3
"""


DBREPLAY_JOB = """\
[replay]
ioengine=external:build/dbreplay.so
dbr_trace=jobs/dbreplay/probe.trace
dbr_target=${STUDY_TEST_DIR}
dbr_report=none
"""



def scenario(sid, job, env="STUDY_TEST_DIR", kind="dir", writes=True, params=None,
             engines=(), status="ok"):
    return {"id": sid, "source": "test", "title": f"test scenario {sid}", "jobs": [str(job)],
            "target": {"env": env, "kind": kind}, "writes_target": writes,
            "engines": list(engines),
            "params": {"threads": "numjobs"} if params is None else params,
            "metrics": [{"name": "throughput", "expr": "read.bw_bytes / 1048576",
                         "unit": "MiB/s", "job": None}],
            "status": status}


@pytest.fixture
def lab(tmp_path):
    """A catalogue with test scenarios, two target directories and a work dir."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "randread.fio").write_text(RANDREAD_JOB)
    (jobs / "devwrite.fio").write_text(DEV_WRITE_JOB)
    (jobs / "devread.fio").write_text(DEV_READ_JOB)
    (jobs / "postmark.fio").write_text(POSTMARK_JOB)
    (jobs / "dbreplay.fio").write_text(DBREPLAY_JOB)
    (jobs / "precond.fio").write_text(PRECOND_JOB)
    bad_read = DEV_WRITE_JOB.replace("[devwrite]", "[mislabelled]")
    (jobs / "mislabelled.fio").write_text(bad_read)
    cat = {"version": 1, "scenarios": [
        scenario("tiny-randread", jobs / "randread.fio"),
        scenario("tiny-postmark", jobs / "postmark.fio", params={}, engines=["postmark"]),
        scenario("tiny-noengine", jobs / "randread.fio", engines=["nothere"]),
        scenario("tiny-dbreplay", jobs / "dbreplay.fio", params={}, engines=["dbreplay"]),
        scenario("tiny-blocked", jobs / "randread.fio", status="needs the dbreplay engine"),
        scenario("tiny-precond", jobs / "precond.fio", params={}),
        scenario("dev-write", jobs / "devwrite.fio", env="STUDY_TEST_DEV",
                 kind="file-or-device", params={}),
        scenario("dev-read", jobs / "devread.fio", env="STUDY_TEST_DEV",
                 kind="file-or-device", writes=False, params={}),
        # declared read-only but writes: fio --readonly must stop it
        scenario("dev-mislabelled", jobs / "mislabelled.fio", env="STUDY_TEST_DEV",
                 kind="file-or-device", writes=False, params={}),
    ]}
    (tmp_path / "catalogue.json").write_text(json.dumps(cat))
    for d in ("ssd", "hdd", "work"):
        (tmp_path / d).mkdir()

    class Lab:
        root = tmp_path
        catalogue = tmp_path / "catalogue.json"
        ssd = tmp_path / "ssd"
        hdd = tmp_path / "hdd"
        work = tmp_path / "work"        # the runner's working directory
        out = tmp_path / "results"

        def run(self, *args, env=None, timeout=TIMEOUT):
            full = dict(os.environ)
            full.update(env or {})
            cmd = [*STUDY, *map(str, args)]
            if args and args[0] != "list" and "--resume" not in args:
                cmd += ["--catalogue", str(self.catalogue), "--fio", str(FIO),
                        "--engine-dir", str(ENGINE_DIR)]
            if args and args[0] == "list":
                cmd += ["--catalogue", str(self.catalogue)]
            if "--resume" in args:
                cmd += ["--fio", str(FIO)]
            p = subprocess.run(cmd, cwd=self.work, env=full, capture_output=True, text=True,
                               timeout=timeout)
            p.cmd = cmd
            return p

    return Lab()


def describe(p) -> str:
    return f"command: {' '.join(p.cmd)}\nrc={p.returncode}\n--- stderr ---\n{p.stderr[-4000:]}" \
           f"\n--- stdout ---\n{p.stdout[-2000:]}"


def option_lines(jobtext: str) -> str:
    return "\n".join(l for l in jobtext.splitlines() if not l.lstrip().startswith((";", "#")))


def runs_of(out: Path) -> dict:
    """{run number: (meta, fio JSON or None, derived job text)}."""
    res = {}
    for mp in sorted((out / "runs").glob("*.meta.json")):
        n = mp.name.split(".")[0]
        meta = json.loads(mp.read_text())
        jp = out / "runs" / f"{n}.json"
        res[int(n)] = (meta, json.loads(jp.read_text()) if jp.exists() else None,
                       (out / "runs" / f"{n}.fio").read_text())
    return res


def assert_refused(p, message, lab, watched=()):
    """Exit 2, one line naming the problem, no results directory."""
    assert p.returncode == 2, describe(p)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, describe(p)
    assert lines[0].startswith("fio-pack study: "), describe(p)
    if isinstance(message, str):
        assert message in lines[0], describe(p)
    else:
        assert message.search(lines[0]), describe(p)
    assert not lab.out.exists(), "results directory created\n" + describe(p)
    assert not list(lab.work.iterdir()), "files in the working directory\n" + describe(p)


# ---------------------------------------------------------------------------
# Local studies
# ---------------------------------------------------------------------------

def test_local_study_two_targets(lab):
    """threads=1,2 x two directories x 2 repeats: 8 complete, labelled runs."""
    outside = snapshot(lab.root / "jobs"), lab.catalogue.read_text()
    repo_top = sorted(os.listdir(REPO))
    p = lab.run("tiny-randread", "--target", f"ssd={lab.ssd}", "--target", f"hdd={lab.hdd}",
                "--sweep", "threads=1,2", "--repeats", "2", "--set", "runtime=1",
                "--out", lab.out, env={"STUDY_TEST_OTHER": "hello"})
    assert p.returncode == 0, describe(p)
    runs = runs_of(lab.out)
    assert sorted(runs) == list(range(1, 9))
    # interleaved: for each repeat, for each target, for each sweep point
    expect = [(r, t, n) for r in (1, 2) for t in ("ssd", "hdd") for n in (1, 2)]
    job_sha = hashlib.sha256((lab.root / "jobs" / "randread.fio").read_bytes()).hexdigest()
    for i, (repeat, label, threads) in enumerate(expect, 1):
        meta, result, derived = runs[i]
        target = lab.ssd if label == "ssd" else lab.hdd
        assert meta["run"] == i
        assert meta["scenario"] == "tiny-randread"
        assert meta["params"] == {"threads": threads}
        assert meta["repeat"] == repeat
        assert meta["target"]["label"] == label
        assert meta["target"]["path"] == str(target)
        assert meta["target"]["kind"] == "dir"
        assert set(meta["target"]["device"]) >= {"name", "model", "vendor", "rotational",
                                                 "size_bytes"}
        assert meta["host"] == "local"
        assert meta["kernel"] == os.uname().release
        assert meta["fio_version"] == result["fio version"] == "fio-3.33"
        assert meta["exit_code"] == 0 and meta["ok"] is True and meta["problem"] is None
        assert meta["job_file"] == str(lab.root / "jobs" / "randread.fio")
        assert meta["job_sha256"] == job_sha
        assert meta["derived_sha256"] == hashlib.sha256(derived.encode()).hexdigest()
        assert meta["started"] <= meta["ended"]
        assert isinstance(meta["stderr_tail"], str)
        # the derived job file: fully resolved (comments stay as written)
        assert "${" not in option_lines(derived)
        assert f"directory={target}" in derived
        assert "description=xyhello" in derived      # unset -> empty, set -> its value
        assert f"numjobs={threads}" in derived and "runtime=1" in derived
        assert "runtime=5" not in derived
        # what fio ran
        jobs = result["jobs"]
        assert len(jobs) == threads
        assert result["global options"]["directory"] == str(target)
        assert result["global options"]["runtime"] == "1"
        for j in jobs:
            assert j["job options"]["numjobs"] == str(threads)
            assert j["job options"]["runtime"] == "1"
            assert j["error"] == 0 and j["read"]["total_ios"] > 0
    # nothing but complete runs, no temporary files
    names = sorted(os.listdir(lab.out / "runs"))
    assert names == sorted(f"{i:04d}.{ext}" for i in range(1, 9) for ext in ("fio", "json", "meta.json"))
    st = json.loads((lab.out / "study.json").read_text())
    assert st["scenario"]["id"] == "tiny-randread"
    assert st["sweep"] == {"threads": [1, 2]}
    assert st["repeats"] == 2 and st["order"] == "interleaved"
    assert [t["label"] for t in st["targets"]] == ["ssd", "hdd"]
    assert st["status"] == "complete" and st["started"] and st["ended"]
    assert st["pack_version"]
    assert "tiny-randread" in st["command"]
    # progress and summary on stderr
    assert "[7/8] threads=1 target=hdd repeat 2/2 ... elapsed" in p.stderr
    assert "8 runs: 8 ok, 0 failed" in p.stderr
    # nothing written outside the targets and the results directory
    assert (snapshot(lab.root / "jobs"), lab.catalogue.read_text()) == outside
    assert not list(lab.work.iterdir())
    assert sorted(os.listdir(REPO)) == repo_top
    for target in (lab.ssd, lab.hdd):
        assert sorted(os.listdir(target)) == ["randread.0.0", "randread.1.0"]


def test_grouped_order_and_grid(lab):
    p = lab.run("tiny-randread", "--target", f"ssd={lab.ssd}", "--sweep", "threads=1,2",
                "--repeats", "2", "--order", "grouped", "--dry-run")
    assert p.returncode == 0, describe(p)
    plan = re.findall(r"run +(\d+): threads=(\d) target=(\w+) host=local repeat (\d)/2", p.stdout)
    assert [(t, r) for _, t, _, r in plan] == [("1", "1"), ("1", "2"), ("2", "1"), ("2", "2")]
    assert not lab.out.exists() and not list(lab.work.iterdir())
    assert not list(lab.ssd.iterdir())


def test_interrupt_and_resume(lab):
    """Ctrl-C keeps complete runs only; --resume runs what is missing."""
    cmd = [*STUDY, "tiny-randread", "--catalogue", str(lab.catalogue),
           "--fio", str(FIO), "--target", f"ssd={lab.ssd}", "--sweep", "threads=1,2",
           "--set", "runtime=3", "--out", str(lab.out)]
    p = subprocess.Popen(cmd, cwd=lab.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (lab.out / "runs" / "0001.fio").exists():
            assert time.monotonic() < deadline, "the study never started a run"
            time.sleep(0.05)
        time.sleep(1.0)
        os.killpg(p.pid, signal.SIGINT)         # what a terminal's Ctrl-C does
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            kill_group(p)
    assert p.returncode == 130, err
    assert "--resume" in err
    assert not (lab.out / "runs" / "0001.meta.json").exists()
    assert not [n for n in os.listdir(lab.out / "runs") if n.startswith(".")]
    assert json.loads((lab.out / "study.json").read_text())["status"] == "interrupted"

    r = lab.run("run", "--resume", lab.out)
    assert r.returncode == 0, describe(r)
    runs = runs_of(lab.out)
    assert sorted(runs) == [1, 2] and all(m["ok"] for m, _, _ in runs.values())
    st = json.loads((lab.out / "study.json").read_text())
    assert st["status"] == "complete" and len(st["resumed"]) == 1

    # a lost run is run again, complete ones are not
    keep = (lab.out / "runs" / "0001.json").stat().st_mtime_ns
    (lab.out / "runs" / "0002.meta.json").unlink()
    r = lab.run("run", "--resume", lab.out)
    assert r.returncode == 0, describe(r)
    assert "1 of 2 runs already complete" in r.stderr
    assert (lab.out / "runs" / "0001.json").stat().st_mtime_ns == keep
    assert (lab.out / "runs" / "0002.meta.json").exists()

    r = lab.run("run", "--resume", lab.out, "--sweep", "threads=4")
    assert r.returncode == 2 and "--resume takes the study from DIR/study.json" in r.stderr


# ---------------------------------------------------------------------------
# Bad input: refused before anything is written
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", [
    "unknown-scenario", "status", "sweep-param", "sweep-option-name", "target-missing",
    "target-not-dir", "target-syntax", "set-conflict", "out-exists", "no-target",
])
def test_bad_input_refused(lab, case):
    before = snapshot(lab.root)
    target = ["--target", f"ssd={lab.ssd}"]
    args, msg = {
        "unknown-scenario": (["tiny-randred", *target],
                             "unknown scenario 'tiny-randred' in "),
        "status": (["tiny-blocked", *target],
                   "scenario tiny-blocked cannot run: needs the dbreplay engine"),
        "sweep-param": (["tiny-randread", *target, "--sweep", "depth=1,2"],
                        "--sweep depth: not a parameter of scenario tiny-randread; "
                        "its parameters: threads (numjobs)"),
        "sweep-option-name": (["tiny-randread", *target, "--sweep", "numjobs=1,2"],
                              "(the fio option numjobs is swept as threads)"),
        "target-missing": (["tiny-randread", "--target", f"ssd={lab.root / 'nope'}"],
                           f"target ssd: {lab.root / 'nope'}: no such directory"),
        "target-not-dir": (["tiny-randread", "--target", f"ssd={lab.catalogue}"],
                           f"target ssd: {lab.catalogue}: not a directory"),
        "target-syntax": (["tiny-randread", "--target", str(lab.ssd)],
                          "expected LABEL=PATH"),
        "set-conflict": (["tiny-randread", *target, "--sweep", "threads=1,2",
                          "--set", "numjobs=4"], "--set numjobs: also swept as threads"),
        "out-exists": (["tiny-randread", *target, "--out", lab.hdd],
                       f"results directory {lab.hdd} exists"),
        "no-target": (["tiny-randread"], "scenario tiny-randread needs --target LABEL=PATH"),
    }[case]
    if case != "out-exists":
        args += ["--out", lab.out]
    p = lab.run(*args)
    assert_refused(p, msg, lab)
    if case == "unknown-scenario":
        assert "close matches: tiny-randread" in p.stderr
    assert snapshot(lab.root) == before


# What the study writes into a job file must read back as it was given. A
# line break made a job section of its own (--set
# $'runtime=1\n[evil]\nioengine=null'); fio cuts a value at ';' and '#'.
JOB_TEXT_CASES = {
    "set-newline": (["--set", "runtime=1\n[evil]\nioengine=null"], {},
                    "--set runtime: '1\\n[evil]\\nioengine=null' holds a line break"),
    "set-semicolon": (["--set", "size=1m;4m"], {}, "--set size: '1m;4m' holds a ';'"),
    "set-hash": (["--set", "size=1m#4m"], {}, "--set size: '1m#4m' holds a '#'"),
    "set-control": (["--set", "size=1m\x1b"], {}, "--set size: '1m\\x1b' holds a control"),
    "sweep-newline": (["--sweep", "threads=1,2\n[evil]"], {},
                      "--sweep threads: '2\\n[evil]' holds a line break"),
    "sweep-semicolon": (["--sweep", "threads=1;2"], {}, "--sweep threads: '1;2' holds a ';'"),
    "target-newline": ("newline-dir", {}, "holds a line break"),
    "target-colon": ("colon-dir", {}, "holds a ':' (fio's directory= and filename= read it"),
    "label-newline": ("newline-label", {}, "label 'ssd\\n' must be letters"),
    "environment": ([], {"STUDY_TEST_OTHER": "x\n[evil]\nioengine=null"},
                    "environment variable STUDY_TEST_OTHER (the job files use "
                    "${STUDY_TEST_OTHER}): 'x\\n[evil]\\nioengine=null' holds a line break"),
    "engine-dir": (["--remote-engine-dir", "/opt/x;y"], {},
                   "--remote-engine-dir: '/opt/x;y' holds a ';'"),
    "server": (["--server", "db1\n[evil]"], {}, "--server: 'db1\\n[evil]' holds a line break"),
}


@pytest.mark.parametrize("case", list(JOB_TEXT_CASES))
def test_job_file_text_refused(lab, case):
    args, env, msg = JOB_TEXT_CASES[case]
    target = ["--target", f"ssd={lab.ssd}"]
    if args == "newline-dir" or args == "colon-dir":
        d = lab.root / ("a\nb" if args == "newline-dir" else "a:b")
        d.mkdir()
        target, args = ["--target", f"ssd={d}"], []
    elif args == "newline-label":
        target, args = ["--target", f"ssd\n={lab.ssd}"], []
    before = snapshot(lab.root)
    p = lab.run("tiny-randread", *target, *args, "--out", lab.out, env=env)
    assert_refused(p, msg, lab)
    assert snapshot(lab.root) == before


@needs_root
def test_target_not_writable(lab, ro_dir):
    before = snapshot(ro_dir)
    p = lab.run("tiny-randread", "--target", f"ro={ro_dir}", "--out", lab.out)
    assert_refused(p, f"target ro: {ro_dir}: not writable", lab)
    assert snapshot(ro_dir) == before


@needs_root
def test_out_not_writable(lab, ro_dir):
    """A results directory that cannot be made is refused in
    one line with the other checks, before any run (it was a traceback
    from mkdir once everything was checked)."""
    before = snapshot(lab.ssd), snapshot(ro_dir)
    p = lab.run("tiny-randread", "--target", f"ssd={lab.ssd}", "--set", "runtime=1",
                "--out", ro_dir / "results")
    assert_refused(p, f"--out {ro_dir / 'results'}: {ro_dir} is not writable", lab)
    assert (snapshot(lab.ssd), snapshot(ro_dir)) == before


# ---------------------------------------------------------------------------
# Block devices: a scratch loop device
# ---------------------------------------------------------------------------

@pytest.fixture
def loop_dev(tmp_path):
    if not IS_ROOT:
        pytest.skip("needs root for losetup")
    backing = tmp_path / "loop.img"
    with open(backing, "wb") as f:
        f.truncate(16 << 20)
    r = subprocess.run(["losetup", "-f", "--show", str(backing)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"no loop device: {r.stderr.strip()}")
    dev = r.stdout.strip()
    try:
        yield dev, backing
    finally:
        subprocess.run(["umount", dev], capture_output=True)
        subprocess.run(["losetup", "-d", dev], capture_output=True)


def digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_device_needs_confirmation(lab, loop_dev):
    dev, backing = loop_dev
    zeros = digest(backing)
    p = lab.run("dev-write", "--target", f"scratch={dev}", "--out", lab.out)
    assert_refused(p, f"target scratch: {dev}: block device, and scenario dev-write writes to "
                      f"its target (data on it is destroyed): add --confirm-overwrite {dev} "
                      f"to proceed", lab)
    p = lab.run("dev-write", "--target", f"scratch={dev}", "--confirm-overwrite", "/dev/null",
                "--out", lab.out)
    assert_refused(p, f"add --confirm-overwrite {dev} to proceed", lab)
    subprocess.run(["sync"])
    assert digest(backing) == zeros

    p = lab.run("dev-write", "--target", f"scratch={dev}", "--confirm-overwrite", dev,
                "--out", lab.out)
    assert p.returncode == 0, describe(p)
    meta, result, derived = runs_of(lab.out)[1]
    assert meta["ok"] and f"filename={dev}" in derived
    assert meta["target"]["device"]["name"] == os.path.basename(dev)
    assert meta["target"]["device"]["size_bytes"] == 16 << 20
    assert meta["target"]["device"]["backing_file"] == str(backing)
    assert result["jobs"][0]["write"]["io_bytes"] == 1 << 20
    assert digest(backing) != zeros


def test_read_only_scenario_on_device(lab, loop_dev):
    """No confirmation for a reading scenario, and fio --readonly guards it."""
    dev, backing = loop_dev
    zeros = digest(backing)
    p = lab.run("dev-read", "--target", f"scratch={dev}", "--out", lab.out)
    assert p.returncode == 0, describe(p)
    meta, result, _ = runs_of(lab.out)[1]
    assert "--readonly" in meta["command"]
    assert result["jobs"][0]["read"]["io_bytes"] == 1 << 20
    out2 = lab.root / "results2"
    p = lab.run("dev-mislabelled", "--target", f"scratch={dev}", "--out", out2)
    assert p.returncode == 1, describe(p)
    meta, _, _ = runs_of(out2)[1]
    assert meta["ok"] is False and meta["exit_code"] != 0
    assert "read-only" in meta["stderr_tail"] + meta["stdout_text"] + meta["problem"]
    subprocess.run(["sync"])
    assert digest(backing) == zeros


def test_mounted_device_refused(lab, loop_dev, tmp_path):
    dev, backing = loop_dev
    r = subprocess.run(["mkfs.ext2", "-q", "-F", dev], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"mkfs.ext2: {r.stderr.strip()}")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", dev, str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"mount: {r.stderr.strip()}")
    try:
        # (no content check: mounting and unmounting write the superblock)
        p = lab.run("dev-write", "--target", f"scratch={dev}", "--confirm-overwrite", dev,
                    "--out", lab.out)
        assert_refused(p, f"{os.path.basename(dev)} is mounted on {mnt}): refusing to "
                          f"overwrite it", lab)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


# ---------------------------------------------------------------------------
# Client/server
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """Two fio servers on free loopback ports; killed afterwards."""
    with fio_servers(tmp_path_factory.mktemp("fio-servers")) as ports:
        yield ports


def test_client_server_study(lab, servers):
    p1, p2 = servers
    p = lab.run("tiny-randread", "--target", f"ssd={lab.ssd}", "--sweep", "threads=1,2",
                "--set", "runtime=1", "--server", f"127.0.0.1:{p1}", "--server",
                f"127.0.0.1:{p2}", "--out", lab.out, env={"STUDY_TEST_OTHER": "client-side"})
    assert p.returncode == 0, describe(p)
    runs = runs_of(lab.out)
    assert sorted(runs) == [1, 2, 3, 4]
    for n, (port, threads) in enumerate([(p1, 1), (p1, 2), (p2, 1), (p2, 2)], 1):
        meta, result, derived = runs[n]
        assert meta["host"] == f"127.0.0.1:{port}"
        assert meta["kernel"] is None
        assert meta["params"] == {"threads": threads}
        assert meta["remote"]["port"] == port
        assert meta["ok"], meta
        # resolved on the client: the servers never see ${...}
        assert "${" not in option_lines(derived)
        assert "description=xyclient-side" in derived
        assert "jobs" not in result
        stats = [c for c in result["client_stats"] if c["jobname"] != "All clients"]
        assert len(stats) == threads
        for c in stats:
            assert c["hostname"] == "127.0.0.1" and c["port"] == port
            assert c["job options"]["numjobs"] == str(threads)
            assert c["read"]["total_ios"] > 0
        assert [(c["hostname"], c["port"]) for c in meta["remote"]["client_stats"]] == \
            [("127.0.0.1", port)] * threads
    st = json.loads((lab.out / "study.json").read_text())
    assert [s["label"] for s in st["servers"]] == [f"127.0.0.1:{p1}", f"127.0.0.1:{p2}"]
    assert "host=127.0.0.1:%d" % p2 in p.stderr


def test_server_engine_check_passes(lab, servers):
    """postmark.so loads on both servers; then a real PostMark run on one."""
    p1, p2 = servers
    p = lab.run("tiny-postmark", "--target", f"pm={lab.ssd}", "--server", f"127.0.0.1:{p1}",
                "--server", f"127.0.0.1:{p2}", "--remote-engine-dir", ENGINE_DIR,
                "--out", lab.out, "--dry-run")
    assert p.returncode == 0, describe(p)
    assert f"ioengine=external:{ENGINE_DIR}/postmark.so" in p.stdout
    assert not lab.out.exists()
    p = lab.run("tiny-postmark", "--target", f"pm={lab.ssd}", "--server", f"127.0.0.1:{p1}",
                "--remote-engine-dir", ENGINE_DIR, "--out", lab.out)
    assert p.returncode == 0, describe(p)
    meta, result, _ = runs_of(lab.out)[1]
    assert meta["ok"] and result["client_stats"][0]["sync"]["total_ios"] == 20


def test_server_dbreplay_trace_from_the_remote_repository(lab, servers):
    """dbr_trace= names a file of the repository: the server reads it under
    --remote-repo, and the engine probe says when it is not there."""
    p1, _ = servers
    p = lab.run("tiny-dbreplay", "--target", f"db={lab.ssd}", "--server", f"127.0.0.1:{p1}",
                "--remote-engine-dir", ENGINE_DIR, "--out", lab.out)
    assert p.returncode == 0, describe(p)
    meta, result, derived = runs_of(lab.out)[1]
    assert f"dbr_trace={REPO}/jobs/dbreplay/probe.trace" in derived
    assert meta["ok"] and result["client_stats"][0]["read"]["total_ios"] == 1
    assert list(lab.ssd.iterdir()) == []            # the engine removed what it created
    p = lab.run("tiny-dbreplay", "--target", f"db={lab.ssd}", "--server", f"127.0.0.1:{p1}",
                "--remote-engine-dir", ENGINE_DIR, "--remote-repo", "/nonexistent/repo",
                "--out", lab.root / "results2")
    assert p.returncode == 2, describe(p)
    assert f"server 127.0.0.1:{p1}: cannot load {ENGINE_DIR}/dbreplay.so" in p.stderr
    assert "/nonexistent/repo/jobs/dbreplay/probe.trace" in p.stderr
    assert not (lab.root / "results2").exists()


def test_server_missing_engine(lab, servers):
    p1, p2 = servers
    before = snapshot(lab.ssd)
    p = lab.run("tiny-noengine", "--target", f"ssd={lab.ssd}", "--server", f"127.0.0.1:{p1}",
                "--server", f"127.0.0.1:{p2}", "--remote-engine-dir", ENGINE_DIR,
                "--out", lab.out)
    assert p.returncode == 2, describe(p)
    assert p.stderr.strip().splitlines() == [
        f"fio-pack study: server 127.0.0.1:{port}: cannot load {ENGINE_DIR}/nothere.so: "
        f"no such file on the server" for port in (p1, p2)]
    assert not lab.out.exists() and snapshot(lab.ssd) == before


def test_server_unreachable_and_missing_target(lab, servers):
    p1, _ = servers
    dead = free_port()
    p = lab.run("tiny-randread", "--target", f"ssd={lab.ssd}", "--server", f"127.0.0.1:{dead}",
                "--out", lab.out)
    assert_refused(p, f"server 127.0.0.1:{dead}: unreachable: Connection refused", lab)
    missing = lab.root / "not-there"
    p = lab.run("tiny-randread", "--target", f"ssd={missing}", "--server", f"127.0.0.1:{p1}",
                "--out", lab.out)
    assert_refused(p, f"server 127.0.0.1:{p1}: target ssd: {missing}: not a directory on the "
                      f"server", lab)
    assert not missing.exists()


# ---------------------------------------------------------------------------
# Job file derivation
# ---------------------------------------------------------------------------

def test_derive_semantics(tmp_path):
    """Several job files merged into one keep fio's meaning (globals per file)."""
    a = tmp_path / "a.fio"
    b = tmp_path / "b.fio"
    inc = tmp_path / "common.inc"
    inc.write_text("size=64k\n")
    a.write_text("[global]\nioengine=null\nbs=8k\ninclude common.inc\n[a]\nrw=read\n")
    b.write_text("[b]\nioengine=null\nsize=64k\nrw=read\n")

    def ios(cmd_files):
        r = subprocess.run([str(FIO), "--output-format=json", *map(str, cmd_files)],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert r.returncode == 0, r.stderr
        return {j["jobname"]: j["read"]["total_ios"] for j in json.loads(r.stdout)["jobs"]}

    text = jobfile.derive_job([a, b], [], {}, "/eng", ["header"])
    assert "include" not in text.replace("inlined include", "")
    derived = tmp_path / "derived.fio"
    derived.write_text(text)
    assert ios([a, b]) == ios([derived]) == {"a": 8, "b": 16}


def test_derive_overrides_and_engines(tmp_path):
    job = tmp_path / "j.fio"
    job.write_text("; comment ${NOT_TOUCHED}\n[global]\nnumjobs=3\nrw=read\n"
                   "ioengine=external:build/smallfile.so\n[one]\ntree_dir=${T}\n"
                   "; trailing comment\n\n[two]\nreadwrite=write\nnumjobs=5\n")
    ov = [({"numjobs"}, "numjobs=2"), (jobfile.option_names(str(FIO), "rw"), "rw=randread")]
    text = jobfile.derive_job([job], ov, {"T": "/data"}, "/opt/eng/", [])
    sections = re.split(r"^\[", text, flags=re.M)
    glob, one, two = sections[1], sections[2], sections[3]
    assert "numjobs=2" in glob and "numjobs=3" not in glob and "rw=randread" in glob
    assert "ioengine=external:/opt/eng/smallfile.so" in glob
    assert "tree_dir=/data" in one and one.count("numjobs=2") == 1 and "rw=randread" in one
    assert one.index("rw=randread") < one.index("; trailing comment")
    assert "readwrite=" not in two and two.count("rw=randread") == 1 and "numjobs=5" not in two
    assert "${NOT_TOUCHED}" in text        # comments are left alone, as fio does

    # replay logs named relative to the repository: absolute, for the fio
    # that reads them (a server's working directory is not the repository)
    job.write_text("[r]\nread_iolog=README.md\n[s]\nread_iolog=not/in/the/repo.log\n")
    text = jobfile.derive_job([job], [], {}, "/eng", [])
    assert f"read_iolog={REPO}/README.md" in text and "read_iolog=not/in/the/repo.log" in text
    text = jobfile.derive_job([job], [], {}, "/eng", [], "/srv/fio-pack")
    assert "read_iolog=/srv/fio-pack/README.md" in text


# ---------------------------------------------------------------------------
# Help and listing
# ---------------------------------------------------------------------------

def test_help_and_list(lab):
    p = lab.run("--help")
    assert p.returncode == 0
    for section in ("SYNOPSIS", "DESCRIPTION", "RUN OPTIONS", "RESULTS", "EXAMPLES",
                    "EXIT STATUS", "--confirm-overwrite", "--resume", "--server"):
        assert section in p.stdout
    p = lab.run("list")
    assert p.returncode == 0, describe(p)
    assert re.search(r"^tiny-randread +test +threads->numjobs +dir \(writes\)", p.stdout, re.M)
    assert "[not runnable: needs the dbreplay engine]" in p.stdout


# ---------------------------------------------------------------------------
# reference/figures.json
# ---------------------------------------------------------------------------

REQUIRED = ("id", "source", "source_file", "scenario", "device", "test", "params", "metric",
            "value", "approximate", "unit", "kind", "locator")


@pytest.fixture(scope="module")
def figures():
    return json.loads(FIGURES.read_text())


@pytest.mark.nofio
def test_figures_fields(figures):
    assert figures["format"] == 1
    for sid, src in figures["sources"].items():
        assert re.fullmatch(r"00\d", sid)
        assert src["file"].startswith(sid + "_") and src["title"] and src["year"]
    ids = set()
    for f in figures["figures"]:
        missing = [k for k in REQUIRED if k not in f]
        assert not missing, (f.get("id"), missing)
        assert f["id"] not in ids, f["id"]
        ids.add(f["id"])
        assert f["source"] in figures["sources"]
        assert f["source_file"] == figures["sources"][f["source"]]["file"]
        if f["scenario"] is None:
            assert f.get("scenario_note"), f["id"]
        else:
            assert f["scenario"] in SCENARIO_IDS, f["id"]
        if f["value"] is None:
            assert ("range" in f) != bool(f.get("unavailable")), f["id"]
        else:
            assert isinstance(f["value"], (int, float)) and "unavailable" not in f, f["id"]
        if "range" in f:
            lo, hi = f["range"]
            assert lo < hi, f["id"]
        for ref in (f.get("duplicate_of"),):
            assert ref is None or ref in {g["id"] for g in figures["figures"]}
    # every article is represented
    assert {f["source"] for f in figures["figures"]} == {"000", "001", "002", "003", "004"}


@pytest.mark.nofio
def test_figures_scenarios_in_catalogue(figures):
    """The figures join on the ids of the job library's catalogue, which
    the pack ships: without it, this fails."""
    cat = REPO / "jobs" / "catalogue.json"
    assert cat.is_file(), f"{cat}: missing (the pack ships it)"
    ids = {sc["id"] for sc in json.loads(cat.read_text())["scenarios"]}
    missing = sorted({f["scenario"] for f in figures["figures"] if f["scenario"]} - ids)
    assert not missing, f"scenario ids of reference/figures.json not in the catalogue: {missing}"


@pytest.mark.nofio
def test_figures_002_table_complete(figures):
    f002 = [f for f in figures["figures"] if f["source"] == "002"]
    threads = [1, 2, 4, 8, 16, 32]
    for metric, unit in (("throughput", "MiB/s"), ("response time", "ms")):
        for dev in ("intel320", "intel320-raid0x2", "raid10-8sas"):
            got = {f["params"]["threads"]: f["value"] for f in f002
                   if f["metric"] == metric and f.get("device_id") == dev and f["kind"] == "measured"}
            assert sorted(got) == threads, (metric, dev)
            assert all(isinstance(v, float) for v in got.values())
            assert all(f["unit_normalised"] == unit for f in f002
                       if f["metric"] == metric and f.get("device_id") == dev)
    for metric in ("throughput ratio to RAID10", "response time ratio of RAID10 to the SSD"):
        for dev in ("intel320", "intel320-raid0x2"):
            got = [f["params"]["threads"] for f in f002
                   if f["metric"] == metric and f["device_id"] == dev and f["kind"] == "derived"]
            assert sorted(got) == threads, (metric, dev)
    by_id = {f["id"]: f["value"] for f in f002}
    assert by_id["002-throughput-intel320-t1"] == 30.27
    assert by_id["002-throughput-intel320-raid0x2-t32"] == 351.84
    assert by_id["002-throughput-raid10-8sas-t16"] == 26.70
    assert by_id["002-response-raid10-8sas-t32"] == 47.35
    assert by_id["002-response-ratio-raid10-over-intel320-raid0x2-t32"] == 22.02
    assert by_id["002-throughput-ratio-intel320-over-raid10-t8"] == 7.54
    # the published ratios agree with the published values (to the table's rounding)
    for t in threads:
        for dev in ("intel320", "intel320-raid0x2"):
            r = by_id[f"002-throughput-{dev}-t{t}"] / by_id[f"002-throughput-raid10-8sas-t{t}"]
            assert abs(r - by_id[f"002-throughput-ratio-{dev}-over-raid10-t{t}"]) < 0.02
            r = by_id[f"002-response-raid10-8sas-t{t}"] / by_id[f"002-response-{dev}-t{t}"]
            assert abs(r - by_id[f"002-response-ratio-raid10-over-{dev}-t{t}"]) < 0.05 * r


@pytest.mark.nofio
def test_figures_charts_have_no_numbers(figures):
    charts = [f for f in figures["figures"] if f.get("unavailable")]
    assert charts and all(f["value"] is None and "range" not in f for f in charts)
    assert any(f["scenario"] == "postmark-isp" for f in charts)     # 000 shows it as a chart


# ---------------------------------------------------------------------------
# Preconditions are never cut short, and a run whose precondition is
# incomplete fails
# ---------------------------------------------------------------------------

def test_set_runtime_does_not_shorten_the_precondition(lab):
    """--set runtime=1 (and number_ios, io_size) applies to the measured job
    only: the precondition writes its whole size, so the reads never see
    space that was not written."""
    p = lab.run("tiny-precond", "--target", f"ssd={lab.ssd}", "--set", "runtime=1",
                "--set", "number_ios=100", "--set", "io_size=1m", "--out", lab.out)
    assert p.returncode == 0, describe(p)
    ((meta, res, text),) = runs_of(lab.out).values()
    assert meta["ok"], meta
    jobs = {j["jobname"]: j for j in res["jobs"]}
    assert jobs["precondition"]["write"]["io_bytes"] == 4 << 20
    assert jobs["precondition"]["job options"].get("runtime") == "0"
    # the measured job got them
    assert jobs["readback"]["job options"]["runtime"] == "1"
    assert jobs["readback"]["job options"]["number_ios"] == "100"
    assert jobs["readback"]["read"]["runtime"] <= 1500      # ms: time_based, runtime=1


def test_precondition_written_once_at_every_sweep_point(lab):
    """sysbench-rndrd swept over threads (and --set iodepth): the
    precondition writes its size once at every point, as `sysbench
    prepare` does, and the run's record and the analysis keep it apart
    from the measured job."""
    cat = json.loads(lab.catalogue.read_text())
    cat["scenarios"].append(scenario(
        "sysbench", REPO / "jobs" / "002-intel320-sysbench" / "sysbench-rndrd.fio",
        env="FIO_DIR"))
    lab.catalogue.write_text(json.dumps(cat))
    size = 2 << 20
    p = lab.run("sysbench", "--target", f"ssd={lab.ssd}", "--sweep", "threads=1,4,8",
                "--set", "size=2m", "--set", "runtime=1", "--set", "iodepth=4",
                "--out", lab.out)
    assert p.returncode == 0, describe(p)
    runs = runs_of(lab.out)
    assert len(runs) == 3
    for meta, res, text in runs.values():
        threads = meta["params"]["threads"]
        pre = [j for j in res["jobs"] if j["jobname"] == "precondition"]
        assert [j["write"]["io_bytes"] for j in pre] == [size], (threads, pre)
        assert pre[0]["job options"]["numjobs"] == "1"
        assert "iodepth" not in pre[0]["job options"]
        (measured,) = [j for j in res["jobs"] if j["jobname"] == "sysbench-rndrd"]
        assert measured["job options"]["numjobs"] == str(threads)
        assert measured["job options"]["iodepth"] == "4"
        assert [(j["job"], j["clones"], j["write_bytes"], j["size_bytes"])
                for j in meta["precondition"]] == [("precondition", 1, size, size)]
        assert meta["precondition"][0]["runtime_ms"] == pre[0]["write"]["runtime"]
        assert [(j["job"], j["write_bytes"]) for j in meta["measured"]] == \
            [("sysbench-rndrd", 0)]
        assert meta["measured"][0]["read_bytes"] == measured["read"]["io_bytes"] > 0
    files = sorted(lab.ssd.iterdir())
    assert len(files) == 128 and {f.stat().st_size for f in files} == {size // 128}
    # the analysis shows the measured job alone: one figure per sweep point
    analyze = [sys.executable, str(REPO / "scripts" / "fio-pack"), "analyze"]
    r = subprocess.run([*analyze, "rows", str(lab.out), "--format", "json"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert {row["job"] for row in json.loads(r.stdout)["rows"]} == {"sysbench-rndrd"}
    r = subprocess.run([*analyze, "table", str(lab.out), "--metric", "iops", "--rows",
                        "threads"], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert re.findall(r"^\| (\d+) \| [\d.]+ \|$", r.stdout, re.M) == ["1", "4", "8"], r.stdout


@pytest.mark.nofio
def test_precondition_keeps_one_writer_and_its_own_queue_depth():
    """numjobs and iodepth from [global], swept or set: the derived
    precondition has one writer at the job file's own queue depth, the
    measured job what the command said."""
    text = PRECOND_JOB.replace("bs=64k", "bs=64k\nnumjobs=4\niodepth=8")
    with tempfile.TemporaryDirectory() as d:
        job = Path(d) / "pre.fio"
        job.write_text(text)
        out = jobfile.derive_job([job], [({"numjobs"}, "numjobs=16"),
                                         ({"iodepth"}, "iodepth=32")], {}, "/eng", [])
    _, sections = jobfile.parse_sections(out.splitlines())
    opts = {name: {jobfile.line_key(l): l.split("=", 1)[1] for l in body
                   if jobfile.line_key(l) and "=" in l} for name, _, body in sections}
    assert (opts["precondition"]["numjobs"], opts["precondition"]["iodepth"]) == ("1", "8")
    assert (opts["global"]["numjobs"], opts["global"]["iodepth"]) == ("16", "32")
    assert (opts["readback"]["numjobs"], opts["readback"]["iodepth"]) == ("16", "32")


@needs_root
def test_incomplete_precondition_fails_the_run(lab, tmp_path):
    """A precondition that could not write all of its size (here a 2 MiB
    tmpfs for 4 MiB) makes the run fail with a message that says so."""
    small = tmp_path / "small"
    small.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    try:
        p = lab.run("tiny-precond", "--target", f"small={small}", "--set", "rate=0",
                    "--out", lab.out)
        assert p.returncode != 0, describe(p)
        ((meta, _, _),) = runs_of(lab.out).values()
        assert not meta["ok"]
        assert re.match(r"(fio exit \d+: )?precondition precondition ended with error 28 after "
                        r"\d+ bytes: the measured jobs would read space never written",
                        meta["problem"]), meta["problem"]
        assert "precondition" in p.stdout + p.stderr
        # the summary ends with the exact command that runs the failed run again
        last = p.stderr.strip().splitlines()[-1]
        assert last.startswith("run them again, once fixed, with: "), describe(p)
        cmd = shlex.split(last.split(": ", 1)[1])
        assert cmd[1:5] == ["study", "run", "--resume", str(lab.out.resolve())], cmd
        again = subprocess.run([sys.executable, *cmd], capture_output=True, text=True,
                               timeout=TIMEOUT, cwd=lab.work)
        assert again.returncode == 1 and "1 runs: 0 ok, 1 failed" in again.stderr, \
            again.stderr
    finally:
        subprocess.run(["umount", str(small)])


@pytest.mark.nofio
def test_incomplete_precondition_is_found_from_its_bytes():
    """The check itself: fewer bytes than the precondition's size, without
    any error, is a failed run too (a precondition cut short by a job
    file's own limits)."""
    text = PRECOND_JOB.replace("${STUDY_TEST_DIR}", "/x")
    ok = [{"jobname": "precondition", "error": 0, "write": {"io_bytes": 4 << 20}},
          {"jobname": "readback", "error": 0, "write": {"io_bytes": 0}}]
    assert jobfile.precondition_problem(text, ok) is None
    short = [dict(ok[0], write={"io_bytes": 492 << 10}), ok[1]]
    assert jobfile.precondition_problem(text, short) == (
        f"precondition precondition wrote {492 << 10} of {4 << 20} bytes: the measured jobs "
        "would read space never written")
    assert jobfile.precondition_sizes(text.replace("size=4m", "size=2g")) == \
        {"precondition": 2 << 30}
    assert jobfile.precondition_sizes(text.replace("size=4m", "size=50%")) == \
        {"precondition": None}


@pytest.mark.nofio
def test_no_catalogue_precondition_is_shortened():
    """Every scenario of jobs/catalogue.json with a precondition job, derived
    with every shortening option set: its preconditions keep none of them."""
    cat = json.loads((REPO / "jobs" / "catalogue.json").read_text())
    shortening = [({"runtime", "timeout"}, "runtime=2"), ({"time_based"}, "time_based=1"),
                  ({"number_ios"}, "number_ios=5"), ({"io_size", "io_limit"}, "io_size=1m")]
    seen = []
    for sc in cat["scenarios"]:
        paths = [REPO / j for j in sc["jobs"]]
        text = jobfile.derive_job(paths, shortening, {}, "/eng", [])
        _, sections = jobfile.parse_sections(text.splitlines())
        glob = {}
        for name, _, body in sections:
            opts = {jobfile.line_key(l): l.split("=", 1)[1].strip() if "=" in l else "1"
                    for l in body if jobfile.line_key(l)}
            if name == "global":
                glob = opts
                continue
            if not jobfile.is_precondition(name):
                continue
            merged = dict(glob, **opts)
            seen.append(sc["id"])
            for key in ("runtime", "time_based", "number_ios", "io_size"):
                assert merged.get(key, "0") == "0", (sc["id"], name, key, merged)
    assert {"sysbench-rndrd", "seeker", "dd-read-10g", "hdparm-t"} <= set(seen), seen


def test_resume_checks_the_servers_first(lab, tmp_path):
    """--resume checks its servers as a new study does: with the server gone
    it refuses in one line, instead of running the runs to fail again."""
    with fio_servers(tmp_path, n=1) as (port,):
        p = lab.run("tiny-randread", "--target", f"ssd={lab.ssd}", "--set", "runtime=1",
                    "--server", f"127.0.0.1:{port}", "--out", lab.out)
        assert p.returncode == 0, describe(p)
    # a run to do again, and its server down
    mp = lab.out / "runs" / "0001.meta.json"
    meta = json.loads(mp.read_text())
    meta["ok"] = False
    mp.write_text(json.dumps(meta))
    before = mp.read_text()
    p = lab.run("run", "--resume", lab.out)
    assert p.returncode == 2, describe(p)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and re.match(rf"fio-pack study: server 127\.0\.0\.1:{port}: unreachable",
                                        lines[0]), describe(p)
    assert mp.read_text() == before        # nothing was run
