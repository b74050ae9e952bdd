"""The postmark engine against the real PostMark 1.53 (Debian's `postmark`).

For each configuration both run under strace on fresh directories, and:
- the counters and byte totals of the two reports are equal (and, for runs
  under a second with pm_whole_seconds=1, the reports are identical);
- every system call either makes on the files (open with its flags, fstat,
  lseek, each read and write with its requested size, close, unlink) and on
  the subdirectories (mkdir, rmdir) is listed per file operation; the two
  lists must be equal, which implies equal per-syscall counts and equal
  request-size histograms (also compared, for readable failures).
The engine's calls are the *at() forms relative to a directory it opened
(openat(dirfd, "17"), unlinkat, mkdirat) where PostMark names whole paths
(openat(AT_FDCWD, "/loc/17"), unlink, mkdir); the comparison maps both to the
file's path. Open flags are compared without the engine's additions
O_EXCL|O_NOFOLLOW|O_CLOEXEC.
"""
import collections
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from helpers.fio import FIO, PM_ENGINE, REPO, fio_env, fio_has, run_fio
from helpers.jobs import JOBS, prepared_copy
from helpers.postmark import (CONFIGS, DEFAULTS, engine_args, postmark_report, terse_counts,
                              trace_calls, verbose_counts)

POSTMARK = shutil.which("postmark") or "/usr/bin/postmark"
TIMEOUT = 120
STRACE_CALLS = ("openat,unlink,unlinkat,read,write,lseek,close,newfstatat,fstat,"
                "mkdir,mkdirat,rmdir")


def _env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


@pytest.fixture(scope="module", autouse=True)
def _tools():
    for tool, pkg in ((POSTMARK, "postmark"), (shutil.which("strace") or "/usr/bin/strace", "strace")):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            pytest.fail(f"{tool} is not installed: apt-get install {pkg} "
                        "(or scripts/install-deps.sh --test)", pytrace=False)


@pytest.fixture
def pmdir():
    """Short paths: postmark keeps file names in an 81-byte buffer."""
    d = Path(tempfile.mkdtemp(prefix="pm-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------
# Configurations: PostMark settings and the same as engine options
# ---------------------------------------------------------------------------

def pmrc(cfg, dirs):
    c = dict(DEFAULTS, **cfg)
    lines = [f"set size {c['size'][0]} {c['size'][1]}", f"set number {c['number']}",
             f"set transactions {c['transactions']}", f"set seed {c['seed']}",
             f"set read {c['read']}", f"set write {c['write']}",
             f"set buffering {'true' if c['buffering'] else 'false'}",
             f"set bias read {c['bias_read']}", f"set bias create {c['bias_create']}",
             f"set report {c['report']}"]
    if c["subdirs"]:
        lines.append(f"set subdirectories {c['subdirs']}")  # postmark refuses 0
    for i, (d, w) in enumerate(c["locations"]):
        lines.append(f"set location {'+' if i else ''}{dirs[d]} {w}")
    return "\n".join(lines) + "\nrun\nquit\n"


# ---------------------------------------------------------------------------
# strace parsing
# ---------------------------------------------------------------------------

def summary(calls):
    counts = collections.Counter(c[0] for c in calls)
    sizes = collections.Counter((c[0], c[2]) for c in calls if c[0] in ("read", "write"))
    return counts, sizes


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------

def terse_numbers(report):
    f = [float(x) for x in report.split()]
    assert len(f) == 13, report
    return f


# ---------------------------------------------------------------------------
# Running both
# ---------------------------------------------------------------------------

def make_dirs(pmdir, who, n=3):
    dirs = []
    for i in range(n):
        d = pmdir / f"{who}{i}"
        d.mkdir()
        dirs.append(str(d))
    return dirs


def strace_prefix(log):
    """One log per process (-ff): no call is split by another process's."""
    return ["strace", "-ff", "-y", "-s", "0", "-o", str(log), "-e", f"trace={STRACE_CALLS}"]


def read_logs(log):
    """The per-process logs, the one with the most lines (the process that
    did the file operations) last so that it is parsed in order."""
    logs = sorted(log.parent.glob(log.name + ".*"), key=lambda p: p.stat().st_size)
    return "\n".join(p.read_text() for p in logs)


def run_real(pmdir, cfg, strace=True):
    dirs = make_dirs(pmdir, "p")
    rc_file = pmdir / "pmrc"
    rc_file.write_text(pmrc(cfg, dirs))
    log = pmdir / "pm.strace"
    cmd = [POSTMARK, str(rc_file)]
    if strace:
        cmd = strace_prefix(log) + cmd
    r = subprocess.run(cmd, cwd=pmdir, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=TIMEOUT, env=_env())
    return r, dirs, (read_logs(log) if strace else "")


def run_engine(pmdir, cfg, strace=True, **extra):
    dirs = make_dirs(pmdir, "e")
    report = pmdir / "engine.report"
    args = engine_args(cfg, dirs, report, **extra)
    log = pmdir / "fio.strace"
    prefix = strace_prefix(log) if strace else None
    res = run_fio(args, prefix=prefix, timeout=TIMEOUT)
    return res, dirs, (read_logs(log) if strace else ""), \
        (report.read_text() if report.exists() else "")


def split_ops(calls):
    """Calls grouped per file operation (each starts with an open or unlink)."""
    ops = []
    for c in calls:
        if c[0] in ("open", "unlink", "mkdir", "rmdir") or not ops:
            ops.append([c])
        else:
            ops[-1].append(c)
    return ops


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_same_operations_and_syscalls_as_postmark(pmdir, name):
    cfg = CONFIGS[name]
    real, pdirs, plog = run_real(pmdir, cfg)
    assert real.returncode == 0, real.stderr
    assert "Error" not in real.stderr, real.stderr
    res, edirs, elog, ereport = run_engine(pmdir, cfg, pm_whole_seconds=1)
    res.ok()
    preport = postmark_report(real.stdout)

    # counters and byte totals
    if cfg.get("report") == "terse":
        assert terse_counts(ereport) == terse_counts(preport)
        if preport.startswith("1 1 ") and ereport.startswith("1 1 "):
            assert ereport == preport
    else:
        assert verbose_counts(ereport) == verbose_counts(preport)
        one = "Time:\n\t1 seconds total\n"
        if preport.startswith(one) and ereport.startswith(one):
            assert ereport == preport

    # system calls
    pcalls = trace_calls(plog, pdirs)
    ecalls = trace_calls(elog, edirs)
    assert len(pcalls) > 100
    assert summary(ecalls) == summary(pcalls)
    pops, eops = split_ops(pcalls), split_ops(ecalls)
    assert len(eops) == len(pops)
    for i, (p, e) in enumerate(zip(pops, eops)):
        assert e == p, f"file operation {i} differs"

    # both leave the locations as they found them
    for d in pdirs + edirs:
        assert os.listdir(d) == [], d


def test_out_of_files(pmdir):
    """Deleting in every transaction empties the pool: PostMark prints "out
    of files!" and stops, leaving its files and printing no report. The
    engine makes the same calls up to that point, says so, then deletes what
    is left and reports."""
    cfg = {"bias_create": 0, "number": 20, "transactions": 1000}
    real, pdirs, plog = run_real(pmdir, cfg)
    assert "out of files!" in real.stdout
    res, edirs, elog, ereport = run_engine(pmdir, cfg)
    res.ok()
    assert "postmark: out of files after 20 transactions" in res.stderr
    pcalls, ecalls = trace_calls(plog, pdirs), trace_calls(elog, edirs)
    assert ecalls[:len(pcalls)] == pcalls
    assert [c[0] for c in ecalls[len(pcalls):]] == ["unlink"] * 0 or \
        all(c[0] == "unlink" for c in ecalls[len(pcalls):])
    assert "\t20 created" in ereport and "\t20 deleted" in ereport
    assert os.listdir(edirs[0]) == []
    op = res.job("pm")
    assert op["sync"]["total_ios"] == 20


def test_reference_run_counts(pmdir):
    """The 000 article's configuration in full (no strace): PostMark's
    reference figures."""
    cfg = {"read": 4096, "write": 4096, "transactions": 10000, "size": (500, 500000),
           "number": 5000}
    res, edirs, _, report = run_engine(pmdir, cfg, strace=False)
    res.ok()
    for want in ("\t9950 created", "Creation alone: 5000 files",
                 "Mixed with transactions: 4950 files", "\t5026 read", "\t4974 appended",
                 "\t9950 deleted", "Deletion alone: 4900 files",
                 "Mixed with transactions: 5050 files", "\t1396.61 megabytes read",
                 "\t2861.03 megabytes written"):
        assert want in report
    j = res.job("pm")
    assert j["read"]["total_ios"] == 5026
    assert j["write"]["total_ios"] == 9950 + 4974
    assert j["trim"]["total_ios"] == 9950
    assert j["sync"]["total_ios"] == 10000
    # fio's byte counts are the exact sums; PostMark's (and the report's)
    # are 32-bit float sums, a few hundredths of a megabyte off at 3 GB
    assert abs(j["read"]["io_bytes"] / 1048576 - 1396.61) < 0.05
    assert abs(j["write"]["io_bytes"] / 1048576 - 2861.03) < 0.05


# ---------------------------------------------------------------------------
# The shipped job files
# ---------------------------------------------------------------------------

# Each job run smaller (its PostMark settings otherwise as shipped), then the
# same settings through pm-sim give the counters the report must show.
JOB_RUNS = {
    "postmark-isp.fio": ({"pm_transactions=10000": "pm_transactions=300",
                          "pm_number=5000": "pm_number=200"},
                         "set read 4096\nset write 4096\nset transactions 300\n"
                         "set size 500 500000\nset number 200\n"),
    "postmark-pts.fio": ({"pm_transactions=25000": "pm_transactions=400"},
                         "set transactions 400\nset size 5120 524288\nset number 500\n"),
    "postmark-default.fio": ({}, ""),
}


def pm_sim(cfg_text, tmp_path):
    rc = tmp_path / "sim.pmrc"
    rc.write_text(cfg_text + "run\nquit\n")
    r = subprocess.run([str(REPO / "build" / "pm-sim"), str(rc)], capture_output=True,
                       text=True, timeout=TIMEOUT, env=_env())
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("name", sorted(JOB_RUNS))
def test_job_file_runs_postmarks_workload(name, tmp_path):
    replace, pmrc_text = JOB_RUNS[name]
    job = prepared_copy(JOBS / name, tmp_path, replace)
    loc = tmp_path / "loc"
    loc.mkdir()
    report, opstats = tmp_path / "report", tmp_path / "ops.jsonl"
    r = run_fio(jobfile=job, cwd=REPO, env={"PM_LOCATION": str(loc),
                                            "PM_REPORT_FILE": str(report),
                                            "PM_OPSTATS": str(opstats)}).ok()
    j = r.job(name[:-4])
    assert verbose_counts(report.read_text()) == verbose_counts(pm_sim(pmrc_text, tmp_path))
    line = json.loads(opstats.read_text())
    pm = line["postmark"]
    assert j["read"]["total_ios"] == pm["read"] == line["ops"]["read"]["ops"]
    assert j["write"]["total_ios"] == pm["created"] + pm["appended"]
    assert j["trim"]["total_ios"] == pm["deleted"] == pm["created"]
    assert j["sync"]["total_ios"] == pm["transactions"] == line["ops"]["transaction"]["ops"]
    if fio_has("CLAT_PRIO"):
        prios = {p["prio"]: p["clat_ns"]["N"] for p in j["write"]["prios"]}
        assert prios == {1: pm["created"], 2: pm["appended"]}
    else:   # said once at init (fio before 3.30)
        assert "prios" not in j["write"]
        assert len(r.lacks) == 1 and "has no per-priority statistics" in r.lacks[0]
    assert j["read"]["io_bytes"] == line["ops"]["read"]["bytes"]
    assert j["write"]["io_bytes"] == line["ops"]["create"]["bytes"] + line["ops"]["append"]["bytes"]
    assert os.listdir(loc) == []


def test_job_file_default_location(tmp_path):
    """PM_LOCATION unset: a private directory under $TMPDIR, gone afterwards;
    the report goes to stderr."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    job = prepared_copy(JOBS / "postmark-default.fio", tmp_path)
    r = run_fio(jobfile=job, cwd=REPO, env={"PM_LOCATION": None, "PM_REPORT_FILE": None,
                                            "PM_OPSTATS": None, "TMPDIR": str(tmpdir)}).ok()
    assert "\tDeletion alone:" in r.stderr and "Time:\n" in r.stderr
    assert r.job("postmark-default")["sync"]["total_ios"] == 500
    assert os.listdir(tmpdir) == []


# ---------------------------------------------------------------------------
# Bad input: one line naming the option, non-zero exit, nothing touched
# ---------------------------------------------------------------------------

from helpers.fio import start_fio_background  # noqa: E402
from helpers.procs import kill_group  # noqa: E402
from helpers.trees import snapshot  # noqa: E402


def pm(loc=None, **opts):
    args = ["--name=pm", f"--ioengine=external:{PM_ENGINE}", "--pm_report=none"]
    if loc is not None:
        args.append(f"--pm_location={loc}")
    return args + [f"--{k}={v}" for k, v in opts.items()]


def engine_errors(res):
    return [l for l in res.stderr.splitlines() if l.startswith("postmark:")]


BAD = [
    ({"pm_size_low": 0}, "pm_size_low=0"),
    ({"pm_size_low": 900, "pm_size_high": 500}, "pm_size_high=500 is below pm_size_low=900"),
    ({"pm_number": 0}, "pm_number=0"),
    ({"pm_number": "many"}, "pm_number=many is not a whole number"),
    ({"pm_transactions": 0}, "pm_transactions=0"),
    ({"pm_transactions": -5}, "pm_transactions=-5"),
    ({"pm_read_block": 0}, "pm_read_block=0"),
    ({"pm_write_block": "4x"}, "pm_write_block=4x is not a whole number"),
    ({"pm_bias_read": 11}, "pm_bias_read=11"),
    ({"pm_bias_create": -2}, "pm_bias_create=-2"),
    ({"pm_seed": 0}, "pm_seed=0"),
    ({"pm_file_content": "bogus"}, "pm_file_content: unknown content 'bogus' (postmark,"),
    ({"pm_file_size_dist": "gauss:1"}, "pm_file_size_dist: unknown distribution"),
    ({"size": "1m"}, "size= and io_size= do not apply"),
    ({"iodepth": 4}, "iodepth must be 1"),
    ({"direct": 1}, "direct=1 is not supported"),
]


@pytest.mark.parametrize("opts,msg", BAD, ids=[m.split()[0] for _, m in BAD])
def test_bad_option_values(tmp_path, opts, msg):
    loc = tmp_path / "loc"
    loc.mkdir()
    before = snapshot(tmp_path)
    r = run_fio(pm(loc, **opts))
    assert r.rc != 0, r.describe()
    errs = engine_errors(r)
    assert len(errs) == 1 and msg in errs[0], r.describe()
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("spec,msg", [
    ("{d}@0", "weight 0 of {d} is out of range"),
    ("{d}@abc", "weight 'abc' of {d} is not a number"),
    ("{d}@", "'@' without a weight"),
    ("{d}:{d}x@3000000", "out of range 1..1000000"),
    ("@5", "a weight without a directory"),
])
def test_bad_location_weights(tmp_path, spec, msg):
    d = tmp_path / "loc"
    d.mkdir()
    before = snapshot(tmp_path)
    r = run_fio(pm(spec.format(d=d)))
    assert r.rc != 0
    errs = engine_errors(r)
    assert len(errs) == 1 and msg.format(d=d) in errs[0], r.describe()
    assert snapshot(tmp_path) == before


def test_missing_and_non_directory_locations(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    f = tmp_path / "file"
    f.write_text("user data\n")
    before = snapshot(tmp_path, content=True)
    r = run_fio(pm(f"{good}:{tmp_path}/missing"))
    assert r.rc != 0 and engine_errors(r) == [
        f"postmark: pm_location {tmp_path}/missing: No such file or directory"]
    r = run_fio(pm(str(f)))
    assert r.rc != 0 and engine_errors(r) == [f"postmark: pm_location {f} is not a directory"]
    # the first location was claimed, then released: left as it was
    assert snapshot(tmp_path, content=True) == before


@pytest.mark.mounts
def test_read_only_location(ro_dir):
    r = run_fio(pm(ro_dir))
    assert r.rc != 0
    assert engine_errors(r) == [f"postmark: pm_location {ro_dir} is on a read-only file system"]


def test_unwritable_location_as_user(pmdir):
    """As a user without write permission (root writes anywhere)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    d = pmdir / "locked"
    d.mkdir(mode=0o555)
    os.chmod(pmdir, 0o755)
    # The user gets its own copies of fio and the engine: the checkout may
    # sit where it cannot look (Debian's /root is 0700)
    tools = pmdir / "bin"
    tools.mkdir(mode=0o755)
    fio, engine = tools / "fio", tools / "postmark.so"
    shutil.copy(FIO, fio)
    shutil.copy(PM_ENGINE, engine)
    args = [a.replace(f"external:{PM_ENGINE}", f"external:{engine}") for a in pm(d)]
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        str(fio), *args], capture_output=True, text=True, timeout=TIMEOUT,
                       env=fio_env(), cwd="/")
    assert r.returncode != 0
    assert f"postmark: pm_location {d} is not writable: Permission denied" in r.stderr, r.stderr
    assert os.listdir(d) == []


def test_refuses_files_named_like_its_own(tmp_path):
    """A user's file named like one of PostMark's makes the engine refuse the
    directory; nothing in it changes."""
    for name in ("17", "s2"):
        d = tmp_path / f"loc-{name}"
        d.mkdir()
        (d / name).write_text("a user's file named like PostMark's")
        (d / "notes.txt").write_text("mine")
        before = snapshot(d, content=True)
        r = run_fio(pm(d))
        assert r.rc != 0
        (err,) = engine_errors(r)
        assert "no .fio-postmark marker" in err or "named like PostMark's files" in err, err
        assert snapshot(d, content=True) == before


def test_other_files_are_left_alone(tmp_path):
    """Files not named like PostMark's (another engine's marker, a user's
    notes) may share the location; the run never touches them."""
    d = tmp_path / "loc"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    (d / ".fio-smallfile-tree").write_text("another engine's marker")
    (d / "subdir").mkdir()
    (d / "subdir" / "1").write_text("not in PostMark's namespace")
    before = snapshot(d, content=True)
    r = run_fio(pm(d, pm_subdirectories=3)).ok()
    assert r.job("pm")["sync"]["total_ios"] == 500
    after = snapshot(d, content=True)
    assert {k: v for k, v in after.items()} == before


def test_symlink_in_location_is_never_followed(tmp_path):
    """A symlink named like one of the engine's files, in a directory that
    carries the engine's marker (a killed run's, as if planted after it):
    the marker does not list it, so the engine refuses rather than follow
    or remove it; the target is untouched. (A listed file replaced by a
    symlink, and forged markers: tests/engines/test_postmark_safety.py.)"""
    d = tmp_path / "loc"
    d.mkdir()
    p = start_fio_background(pm(d, pm_transactions=10_000_000, pm_number=100))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(os.listdir(d)) < 50:
        time.sleep(0.02)
    kill_group(p)
    assert (d / ".fio-postmark").is_file()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, d / "999999")
    before = snapshot(tmp_path, content=True)
    r = run_fio(pm(d))
    assert r.rc != 0
    assert "holds '999999', named like PostMark's files but not the engine's" in engine_errors(r)[0]
    assert snapshot(tmp_path, content=True) == before


def test_two_jobs_in_one_location(tmp_path):
    """Two concurrent jobs would trip over each other's file names: the
    second is refused (the first completes)."""
    d = tmp_path / "loc"
    d.mkdir()
    r = run_fio(["--name=a", f"--ioengine=external:{PM_ENGINE}", f"--pm_location={d}",
                 "--pm_report=none", "--pm_transactions=20000",
                 "--name=b", f"--ioengine=external:{PM_ENGINE}", f"--pm_location={d}",
                 "--pm_report=none", "--startdelay=0"])
    assert r.rc != 0
    assert f"postmark: pm_location {d} is in use by another postmark job" in r.stderr
    assert os.listdir(d) == []


def test_resumes_after_kill(tmp_path):
    """SIGKILL mid-run leaves PostMark's numbered files and the marker; the
    next run recognises them as its own, removes them, and runs normally."""
    d = tmp_path / "loc"
    d.mkdir()
    keep = tmp_path / "keep"
    keep.write_text("outside\n")
    p = start_fio_background(pm(d, pm_transactions=10_000_000, pm_subdirectories=3,
                                pm_number=2000))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        n = sum(len(files) for _, _, files in os.walk(d))
        if n > 500:
            break
        time.sleep(0.05)
    kill_group(p)
    left = [f for _, _, files in os.walk(d) for f in files]
    assert len(left) > 100 and ".fio-postmark" in left
    r = run_fio(pm(d, pm_subdirectories=3)).ok()
    assert re.search(r"postmark: pm_location .* removed \d+ files an interrupted run left",
                     r.stderr), r.stderr
    assert r.job("pm")["sync"]["total_ios"] == 500
    assert os.listdir(d) == []
    assert keep.read_text() == "outside\n"


def test_interrupted_run_cleans_up(tmp_path):
    """fio stopped early (here by an error: the location vanishes from under
    a subdirectory... simplest: a short runtime cap that is not time_based
    ends the transactions early, then the deletion phase still runs)."""
    d = tmp_path / "loc"
    d.mkdir()
    r = run_fio(pm(d, pm_transactions=10_000_000, runtime=1, pm_report="verbose",
                   pm_report_file=tmp_path / "rep")).ok()
    j = r.job("pm")
    assert 0 < j["sync"]["total_ios"] < 10_000_000
    if fio_has("CLAT_PRIO"):
        assert j["trim"]["total_ios"] == j["write"]["prios"][0]["clat_ns"]["N"]  # all deleted
    assert os.listdir(d) == []
    assert f"\t{j['sync']['total_ios']} seconds" not in (tmp_path / "rep").read_text()


# ---------------------------------------------------------------------------
# Beyond PostMark
# ---------------------------------------------------------------------------

def opstats_lines(path):
    return [json.loads(l) for l in Path(path).read_text().splitlines()]


def test_numjobs_own_pools_and_seeds(tmp_path):
    d = tmp_path / "loc"
    d.mkdir()
    ops = tmp_path / "ops"
    r = run_fio(pm(d, numjobs=3, pm_opstats_file=ops, group_reporting=1)).ok()
    lines = sorted(opstats_lines(ops), key=lambda l: l["subjob"])
    assert [l["locations"] for l in lines] == [[f"{d}/pm.{k}"] for k in range(3)]
    assert [l["postmark"]["seed"] for l in lines] == [42, 43, 44]
    # a different seed, a different stream
    assert len({l["postmark"]["created"] for l in lines}) > 1
    assert r.job("pm")["sync"]["total_ios"] == 1500
    assert r.job("pm")["trim"]["total_ios"] == sum(l["postmark"]["deleted"] for l in lines)
    assert os.listdir(d) == []


def test_opstats_line_is_whole_with_long_location_lists(tmp_path):
    """The report line is built to its full size: 24 locations with 150-byte
    names (over 3.6 KiB of names, past the old fixed 2 KiB list buffer) all
    appear, escaped, with the counters after them."""
    dirs = []
    for k in range(24):
        d = tmp_path / (f"loc{k:02d}-" + "x" * 140 + '"q')
        d.mkdir()
        dirs.append(d)
    ops = tmp_path / "ops"
    spec = ":".join(str(d) for d in dirs)
    run_fio(pm(spec, pm_opstats_file=ops, pm_number=100, pm_transactions=200)).ok()
    (line,) = opstats_lines(ops)
    assert line["engine"] == "postmark" and line["job"] == "pm"
    assert line["locations"] == [str(d) for d in dirs]
    assert line["postmark"]["transactions"] == 200
    assert line["postmark"]["created"] >= 100
    assert sum(c["ops"] for c in line["ops"].values()) > 0


def test_time_based_transaction_phase(tmp_path):
    d = tmp_path / "loc"
    d.mkdir()
    ops = tmp_path / "ops"
    r = run_fio(pm(d, time_based=1, runtime=2, pm_opstats_file=ops)).ok()
    (line,) = opstats_lines(ops)
    tx_ns = line["postmark"]["phase_ns"]["transactions"]
    assert 2.0e9 <= tx_ns < 4.0e9
    assert line["postmark"]["transactions"] == r.job("pm")["sync"]["total_ios"] > 500
    assert line["postmark"]["deleted"] == line["postmark"]["created"]
    assert os.listdir(d) == []


def test_time_based_needs_runtime(tmp_path):
    r = run_fio(pm(tmp_path, time_based=1, runtime=0))
    # fio itself refuses time_based without runtime before the engine sees it,
    # or the engine does: either way a clear message and no run
    assert "runtime" in r.stderr, r.describe()


@pytest.mark.parametrize("policy", ["none", "create", "append", "write", "transaction"])
def test_fsync_policies(tmp_path, policy):
    d = tmp_path / "loc"
    d.mkdir()
    log = tmp_path / "st"
    ops = tmp_path / "ops"
    run_fio(pm(d, pm_fsync=policy, pm_opstats_file=ops),
            prefix=["strace", "-f", "-y", "-o", str(log), "-e", "trace=fsync"]).ok()
    # the workload's fsyncs: not the one that publishes the marker (.fio-postmark.PID)
    n = sum(1 for l in log.read_text().splitlines()
            if "fsync(" in l and "= 0" in l and ".fio-postmark" not in l)
    pmc = opstats_lines(ops)[0]["postmark"]
    mixed_creates = pmc["created"] - pmc["created_alone"]
    mixed_deletes = pmc["deleted"] - pmc["deleted_alone"]
    want = {"none": 0, "create": pmc["created"], "append": pmc["appended"],
            "write": pmc["created"] + pmc["appended"],
            # per transaction: the files it wrote, and the directory once if
            # it created or deleted (every transaction does one of the two)
            "transaction": mixed_creates + pmc["appended"] + pmc["transactions"]}[policy]
    assert mixed_creates + mixed_deletes == pmc["transactions"]
    assert n == want


def test_size_distribution_and_content(tmp_path):
    """Sizes from a distribution and random content: every created file has
    its distribution size (checked by reading sizes while the files exist is
    not possible after deletion, so check the bytes written instead)."""
    d = tmp_path / "loc"
    d.mkdir()
    ops = tmp_path / "ops"
    r = run_fio(pm(d, pm_file_size_dist="fixed:3000", pm_size_high=5000, pm_bias_read=10,
                   pm_file_content="zero", pm_opstats_file=ops)).ok()
    line = opstats_lines(ops)[0]
    assert line["ops"]["create"]["bytes"] == 3000 * line["postmark"]["created"]
    assert "append" not in line["ops"]          # bias read 10: reads only
    assert line["ops"]["read"]["bytes"] == 3000 * line["postmark"]["read"]
    assert r.job("pm")["read"]["io_bytes"] == line["ops"]["read"]["bytes"]


def test_content_reaches_the_files(tmp_path):
    """pm_file_content decides what is on disk: a run stopped mid-way leaves
    files whose bytes are the chosen content (zeros here; PostMark's text is
    printable ASCII)."""
    for content, check in (("zero", lambda b: b.count(0) == len(b)),
                           ("postmark", lambda b: all(32 <= c < 127 for c in b))):
        d = tmp_path / content
        d.mkdir()
        p = start_fio_background(pm(d, pm_transactions=10_000_000, pm_file_content=content))
        deadline = time.monotonic() + 30
        files = []
        while time.monotonic() < deadline and len(files) < 50:
            files = [f for f in os.listdir(d) if f.isdigit()]
            time.sleep(0.05)
        kill_group(p)
        # listed again: the transactions delete files until the kill
        files = sorted(f for f in os.listdir(d) if f.isdigit())
        assert files, f"{content}: no file was left to look at"
        data = b"".join((d / f).read_bytes()[:4096] for f in files[:20])
        assert data and check(data), content


def test_fresh_file_system_root_is_a_location(fresh_ext4):
    """A new disk's mount point (mkfs's empty lost+found at its root) is a
    usable location; lost+found is never touched."""
    lf = fresh_ext4 / "lost+found"
    before = (lf.stat().st_ino, lf.stat().st_mtime_ns, os.listdir(lf))
    res = run_fio(pm(fresh_ext4, pm_number=50, pm_transactions=200)).ok()
    assert res.job("pm")["sync"]["total_ios"] == 200
    assert sorted(os.listdir(fresh_ext4)) == ["lost+found"]
    assert (lf.stat().st_ino, lf.stat().st_mtime_ns, os.listdir(lf)) == before


def test_pool_that_does_not_fit_is_refused_before_any_file(fresh_ext4):
    """The run's model gives the pool at its fullest (files in whole blocks,
    inodes), checked against the location's free space before the first
    file: one line with need and have, nothing made. The peak counts the
    transactions' creates, not just the initial pool."""
    st = os.statvfs(fresh_ext4)
    free = st.f_bavail * st.f_frsize     # df's Avail
    # 16 KiB files (pm_size_low = pm_size_high: fixed), a few more than fit
    n = free // 16384 + 100
    res = run_fio(pm(fresh_ext4, pm_number=n, pm_size_low=16384, pm_size_high=16384))
    assert res.rc != 0
    (line,) = engine_errors(res)
    m = re.match(rf"postmark: pm_location {re.escape(str(fresh_ext4))}: the pool needs "
                 r"[\d.]+ MB \((\d+) bytes\) at its fullest for (\d+) files, the file system "
                 r"has [\d.]+ MB \((\d+) bytes\) free; ", line)
    assert m, line
    need, files, have = map(int, m.groups())
    assert files >= n and have == free   # transactions add a few
    # and the marker that lists them: its head, a 64-byte line a file (up to twice as many)
    assert 4096 + 64 * files <= need - files * 16384 <= 4096 + 128 * (files + 64)
    assert sorted(os.listdir(fresh_ext4)) == ["lost+found"]
    # an initial pool that fits (0.6 of the disk), grown past it by the
    # transactions' creates (up to PostMark's table of 2 x pm_number files)
    half = free // 16384 * 6 // 10
    res = run_fio(pm(fresh_ext4, pm_number=half, pm_size_low=16384, pm_size_high=16384,
                     pm_transactions=3 * half, pm_bias_create=10, pm_bias_read=10))
    assert res.rc != 0
    (line,) = engine_errors(res)
    assert "at its fullest for" in line and sorted(os.listdir(fresh_ext4)) == ["lost+found"]
    files = int(re.search(r"at its fullest for (\d+) files", line).group(1))
    assert files > free // 16384
    # and one that fits runs
    res = run_fio(pm(fresh_ext4, pm_number=half, pm_size_low=16384, pm_size_high=16384,
                     pm_transactions=200)).ok()
    assert res.job("pm")["sync"]["total_ios"] == 200
