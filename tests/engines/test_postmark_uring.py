"""The postmark engine's pm_io_api=io_uring mode against its sync mode.

io_uring mode issues each file operation's system calls as io_uring requests
and keeps up to iodepth operations in flight, in stream order, an operation
waiting for earlier ones on the same file and each phase for the previous
one. It is not PostMark-identical in system calls (test_postmark.py checks
the sync mode against the real postmark), but the operations, files, bytes
and counters must be exactly the sync mode's:
- PostMark's report and the opstats counters and per-class bytes are equal
  at iodepth 1, 4 and 16, and so are fio's total_ios and io_bytes;
- under strace no file is opened, read, written or unlinked by a system call
  of the engine's process (all of it goes through io_uring_enter);
- at iodepth 16 operations really overlap;
- a full file system stops the run with one message and leaves nothing.
"""
import json
import os
import re
import subprocess

import pytest

from helpers.fio import (FIO_REFUSES_BAD_CMDLINE_ENGINE_OPTIONS, IS_ROOT, PM_ENGINE, run_fio,
                         start_fio_background)
from helpers.mounts import _mount, _umount
from helpers.postmark import CONFIGS, engine_args, trace_calls, verbose_counts
from helpers.procs import kill_group
from helpers.trees import snapshot

DEPTHS = (1, 4, 16)

# sync-vs-io_uring configurations: buffered and raw, odd stdio sizes,
# several locations with subdirectories, a full file table, fixed sizes,
# files that reach pm_size_high, a pool that runs out of files
URING_CONFIGS = {
    "defaults": CONFIGS["defaults"],
    "raw_small_blocks": CONFIGS["raw_small_blocks"],
    "buffered_odd_blocks": CONFIGS["buffered_odd_blocks"],
    "buffered_large_blocks": CONFIGS["buffered_large_blocks"],
    "locations_subdirs": dict(CONFIGS["locations_subdirs_terse"], report="verbose"),
    "raw_subdirs": CONFIGS["raw_subdirs"],
    "table_full": CONFIGS["table_full"],
    "fixed_size_file_full": CONFIGS["fixed_size_file_full"],
    "appends_until_full": CONFIGS["appends_until_full"],
    "same_files_often": {"number": 10, "transactions": 600, "size": (100, 3000),
                         "bias_create": 5, "bias_read": 5, "seed": 3},
    "out_of_files": {"bias_create": 0, "number": 20, "transactions": 1000},
}


def make_dirs(base, n=3):
    dirs = []
    for i in range(n):
        d = base / f"l{i}"
        d.mkdir(parents=True)
        dirs.append(str(d))
    return dirs


def run_mode(base, cfg, api, depth, prefix=None, **extra):
    """One run on fresh locations under @base: (fio result, report, opstats line, dirs)."""
    base.mkdir(parents=True)
    dirs = make_dirs(base)
    report, ops = base / "report", base / "ops"
    args = engine_args(cfg, dirs, report, pm_io_api=api, iodepth=depth,
                       pm_opstats_file=ops, **extra)
    res = run_fio(args, prefix=prefix)
    res.ok()
    for d in dirs:
        assert os.listdir(d) == [], (d, res.describe())
    line = json.loads(ops.read_text())
    return res, report.read_text(), line, dirs


def comparable(res, report, line):
    """Everything that must not depend on how the operations were issued."""
    j = res.job("pm")
    pm = dict(line["postmark"])
    pm.pop("phase_ns")
    return {
        "report": verbose_counts(report),
        "postmark": pm,
        "finished": line["finished"],
        "classes": {k: (v["ops"], v["bytes"], v["errors"]) for k, v in line["ops"].items()},
        "fio": {d: j[d]["total_ios"] for d in ("read", "write", "trim", "sync")},
        "fio_bytes": {d: j[d]["io_bytes"] for d in ("read", "write", "trim")},
        "prios": sorted((p["prio"], p["clat_ns"]["N"]) for p in j["write"].get("prios", [])),
    }


@pytest.mark.parametrize("name", sorted(URING_CONFIGS))
def test_io_uring_counts_equal_sync(tmp_path, name):
    cfg = URING_CONFIGS[name]
    res, report, line, _ = run_mode(tmp_path / "sync", cfg, "sync", 1)
    want = comparable(res, report, line)
    assert line["io_api"] == "sync" and line["max_in_flight"] == 1
    assert want["finished"] and want["fio"]["sync"] == want["postmark"]["transactions"]
    for depth in DEPTHS:
        res, report, line, _ = run_mode(tmp_path / f"uring{depth}", cfg, "io_uring", depth)
        assert line["io_api"] == "io_uring"
        assert 1 <= line["max_in_flight"] <= depth
        assert comparable(res, report, line) == want, f"iodepth={depth}"
        if name == "out_of_files":
            assert "postmark: out of files after 20 transactions" in res.stderr
        # the sync direction's latency is the transaction's (not ~0)
        assert res.job("pm")["sync"]["lat_ns"]["min"] > 0
        # fio's submit histogram counts the engine's submissions: none is empty
        assert res.job("pm")["iodepth_submit"]["0"] == 0, res.job("pm")["iodepth_submit"]


@pytest.mark.parametrize("policy", ["create", "append", "write", "transaction",
                                    "transaction-many-dirs"])
def test_io_uring_fsync_policies(tmp_path, policy):
    cfg = {"number": 100, "transactions": 300, "size": (100, 5000), "subdirs": 2}
    if policy == "transaction-many-dirs":
        # over 512 subdirectories: opened per operation, kept for the
        # transaction's directory fsync
        policy, cfg = "transaction", dict(cfg, subdirs=600)
    res, report, line, _ = run_mode(tmp_path / "sync", cfg, "sync", 1, pm_fsync=policy)
    want = comparable(res, report, line)
    res, report, line, _ = run_mode(tmp_path / "uring", cfg, "io_uring", 8, pm_fsync=policy)
    got = comparable(res, report, line)
    assert got == want
    assert not any(v[2] for v in got["classes"].values())
    # no error line; the notice that paths reach PostMark's 81-byte buffer
    # depends on the length of pytest's temporary directory, not the engine
    assert not [l for l in res.stderr.splitlines() if l.startswith("postmark:")
                and "keeps them in an 81-byte buffer" not in l], res.stderr


def strace_run(base, cfg, api, depth):
    log = base / "strace"
    prefix = ["strace", "-ff", "-y", "-s", "0", "-o", str(log),
              "-e", "trace=io_uring_enter,openat,unlinkat,read,write"]
    res, report, line, dirs = run_mode(base, cfg, api, depth, prefix=prefix)
    text = "\n".join(p.read_text() for p in sorted(base.glob("strace.*")))
    return res, line, dirs, text


def test_io_uring_makes_no_file_syscalls(tmp_path):
    """The files are opened, read, written and unlinked through io_uring:
    strace sees none of these calls on them, only io_uring_enter; the sync
    mode's run of the same configuration makes them all."""
    if subprocess.run(["which", "strace"], capture_output=True).returncode:
        pytest.fail("strace is not installed (apt-get install strace)")
    cfg = {"number": 60, "transactions": 200, "subdirs": 2,
           "locations": [(0, 1), (1, 2)]}
    res, line, dirs, log = strace_run(tmp_path / "sync", cfg, "sync", 1)
    kinds = {c[0] for c in trace_calls(log, dirs)}
    assert {"open", "read", "write", "unlink"} <= kinds, kinds

    res, line, dirs, log = strace_run(tmp_path / "uring", cfg, "io_uring", 4)
    # (the subdirectories are made and removed with plain system calls)
    calls = [c for c in trace_calls(log, dirs) if re.fullmatch(r"L\d+(/s\d+)?/\d+", c[1])]
    assert calls == [], calls[:10]
    # nor any openat of a numbered name relative to some directory descriptor
    assert not re.search(r'openat\([^)]*, "\d+"', log)
    assert not re.search(r'unlinkat\([^)]*, "\d+"', log)
    enters = len(re.findall(r"^io_uring_enter\(", log, re.M))
    assert enters >= line["postmark"]["created"], enters


def files_after_creation(loc, api, number, **opts):
    """{name: bytes} of the pool once the creation phase is over (the
    transactions only read, forever), then fio is killed."""
    import time
    args = ["--name=pm", f"--ioengine=external:{PM_ENGINE}", f"--pm_location={loc}",
            "--pm_report=none", f"--pm_io_api={api}", f"--iodepth={16 if api == 'io_uring' else 1}",
            f"--pm_number={number}", "--pm_transactions=100000000", "--pm_bias_read=10",
            "--pm_bias_create=-1"] + [f"--{k}={v}" for k, v in opts.items()]
    p = start_fio_background(args)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if sum(1 for f in os.listdir(loc) if f.isdigit()) == number:
                break
            time.sleep(0.05)
        # the transactions begin once every create has completed
        time.sleep(1.0)
    finally:
        kill_group(p)
    return {f: (loc / f).read_bytes() for f in os.listdir(loc) if f.isdigit()}


@pytest.mark.parametrize("buffering,content", [(1, "postmark"), (0, "random")])
def test_io_uring_writes_the_same_bytes(tmp_path, buffering, content):
    """What reaches the files is the sync mode's, byte for byte."""
    got = {}
    for api in ("sync", "io_uring"):
        loc = tmp_path / api
        loc.mkdir()
        got[api] = files_after_creation(loc, api, 300, pm_buffering=buffering,
                                        pm_file_content=content, pm_size_low=1,
                                        pm_size_high=20000, pm_write_block=1000)
    assert len(got["sync"]) == 300
    assert sorted(got["io_uring"]) == sorted(got["sync"])
    for name, data in got["sync"].items():
        assert got["io_uring"][name] == data, name


def test_io_uring_overlaps_operations(tmp_path):
    """Creations and deletions of distinct files are independent: at
    iodepth 16 many are in flight at once, in the engine and in fio's view."""
    cfg = {"number": 2000, "transactions": 100, "size": (500, 4000)}
    res, report, line, _ = run_mode(tmp_path / "u", cfg, "io_uring", 16)
    assert line["max_in_flight"] > 1
    levels = res.job("pm")["iodepth_level"]
    assert any(float(v) > 0 for k, v in levels.items() if k != "1"), levels


def test_io_uring_time_based(tmp_path):
    """runtime= bounds the transaction phase in io_uring mode too; every
    file is still deleted and the phases are stamped."""
    base = tmp_path / "u"
    base.mkdir()
    (d,) = make_dirs(base, 1)
    ops = base / "ops"
    r = run_fio(["--name=pm", f"--ioengine=external:{PM_ENGINE}", f"--pm_location={d}",
                 "--pm_report=none", "--pm_io_api=io_uring", "--iodepth=8",
                 "--time_based=1", "--runtime=1", f"--pm_opstats_file={ops}"]).ok()
    line = json.loads(ops.read_text())
    pm = line["postmark"]
    assert line["finished"]
    assert 1.0e9 <= pm["phase_ns"]["transactions"] < 3.0e9
    assert pm["transactions"] == r.job("pm")["sync"]["total_ios"] > 100
    assert pm["deleted"] == pm["created"] == r.job("pm")["trim"]["total_ios"]
    assert os.listdir(d) == []


def test_io_uring_option_checks(tmp_path):
    loc = tmp_path / "loc"
    loc.mkdir()
    base = ["--name=pm", f"--ioengine=external:{PM_ENGINE}", f"--pm_location={loc}",
            "--pm_report=none"]
    r = run_fio(base + ["--iodepth=4"])
    assert r.rc != 0
    errs = [l for l in r.stderr.splitlines() if l.startswith("postmark:")]
    assert len(errs) == 1 and "iodepth must be 1" in errs[0] and "pm_io_api=io_uring" in errs[0]
    # a bad value: fio refuses it from a job file on every version, from the
    # command line from 3.31 on (helpers.fio.FIO_REFUSES_BAD_CMDLINE_ENGINE_OPTIONS)
    job = tmp_path / "bad.fio"
    job.write_text(f"[pm]\nioengine=external:{PM_ENGINE}\npm_location={loc}\npm_io_api=aio\n")
    r = run_fio(jobfile=job)
    assert r.rc != 0 and "pm_io_api" in r.stderr
    if FIO_REFUSES_BAD_CMDLINE_ENGINE_OPTIONS:
        r = run_fio(base + ["--pm_io_api=aio"])
        assert r.rc != 0
    assert os.listdir(loc) == []


@pytest.mark.mounts
@pytest.mark.skipif(not IS_ROOT, reason="needs root to mount a tmpfs")
@pytest.mark.parametrize("depth", [1, 16])
def test_io_uring_enospc(tmp_path, depth):
    """A full file system mid-run: one message naming the create and the
    error, a failed job (no crash), and the location left empty."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    _mount("tmpfs", mnt, "size=2m")
    try:
        loc = mnt / "loc"
        loc.mkdir()
        r = run_fio(["--name=pm", f"--ioengine=external:{PM_ENGINE}", f"--pm_location={loc}",
                     "--pm_report=none", "--pm_io_api=io_uring", f"--iodepth={depth}",
                     "--pm_number=2000", "--pm_size_low=500", "--pm_size_high=10000",
                     "--pm_space_check=0"])     # ENOSPC mid-run: no check of the room first
        assert r.rc != 0, r.describe()
        errs = [l for l in r.stderr.splitlines() if l.startswith("postmark:")]
        fails = [l for l in errs if "No space left on device" in l]
        assert len(fails) == 1, r.describe()
        assert re.fullmatch(rf"postmark: create {loc}/\d+: No space left on device", fails[0])
        assert all(l in fails or "the run did not finish; removed its" in l for l in errs), errs
        assert os.listdir(loc) == []
        assert snapshot(mnt) == {"loc": snapshot(mnt)["loc"]}
    finally:
        _umount(mnt)
