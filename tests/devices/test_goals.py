"""The device goals' tooling on modeled devices (docs/devices.md
"The device goals"): `fio-pack bench cold`, `bench postmark` and `bench
dbreplay --paced` with --device MODEL, and the study runner with a modeled
device as its target, each run for a few seconds on a fixed model.

What they hold: the benchmarks bring their device up and take it down
(nothing left: no loop device, mount, daemon or directory of theirs), the
figures they take from `fio-pack device stats` are the device's own (a
fixed model's utilisation is its requests times its latency over its
channels), a bad model is one line and nothing made, and a study's record
and `analyze report` name the model a target was. The long measurements
are benchmarks (docs/devices.md), not tests.
"""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers.device import describe
from helpers.fio import ENGINE_DIR, FIO, REPO, fio_env

pytestmark = [pytest.mark.mounts]

FIO_PACK = [sys.executable, str(REPO / "scripts" / "fio-pack")]
# 4 channels of 200 us: at most 20,000 requests a second, a few seconds a run
MODEL = "fixed:channels=4,latency_us=200"


def bench_dirs() -> set:
    """The benchmarks' modeled-device directories (bench/ondevice.py)."""
    return set(glob.glob("/tmp/bench-moddev.*"))


def bench(lab, *args, timeout=300) -> subprocess.CompletedProcess:
    """`fio-pack bench ARGS` with the lab's own device state directory."""
    return subprocess.run([*FIO_PACK, "bench", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=fio_env(lab.env), cwd=lab.tmp)


def assert_left_nothing(lab, before: set):
    assert lab.leftovers() == [] and lab.devices_dir_empty(), lab.leftovers()
    new = bench_dirs() - before
    assert not new, f"the benchmark left {sorted(new)}"
    mounts = [ln.split()[4] for ln in open("/proc/self/mountinfo")
              if "/bench-moddev." in ln.split()[4]]
    assert not [m for m in mounts if any(m.startswith(d) for d in new)], mounts


def test_bench_cold_on_a_modeled_device_takes_its_figures_from_the_device(lab):
    before = bench_dirs()
    raw = lab.tmp / "cold.json"
    # 2 servers of 1 ms: every pass lasts long enough (0.3 s and more) for
    # fio's whole-millisecond runtime to be a fine denominator
    slow = "fixed:channels=2,latency_us=1000"
    p = bench(lab, "cold", "--device", slow, "--fs", "ext4", "--files", "600", "--ios", "300",
              "--repeats", "1", "--depths", "1,8", "--sync-jobs", "1", "--dev-depths", "1,8",
              "--dev-runtime", "1", "--image-mib", "64", "--raw", raw, "--output",
              lab.tmp / "cold.md", "--fio", FIO, "--engine", ENGINE_DIR / "smallfile.so")
    assert p.returncode == 0, describe(p)
    res = json.loads(raw.read_text())["ext4"]
    for d, runs in res["device"].items():
        for r in runs:
            dev = r["device"]
            # a fixed model's servers are busy 1 ms a request: what fio
            # counted, at the model's latency, over its 2 channels
            expect = r["iops"] * 1e-3 / 2
            assert dev["utilisation"] == pytest.approx(expect, rel=0.1), (d, r)
            assert dev["read"] > 0
    for mode, passes in res["passes"].items():
        for x in passes:
            assert x["reads_per_file"] == pytest.approx(x["device"]["read"] / x["files"]), mode
            # the stats bracket the fio process, whose runtime is a little
            # shorter than the device's work (the tree's directories are
            # read before fio's clock starts): a saturated pass may show
            # a little over 1
            assert x["reads_per_file"] >= 1 and 0 < x["device"]["utilisation"] <= 1.05, (mode, x)
    assert max(x["device"]["utilisation"] for x in res["passes"]["io_uring, iodepth 8"]) > 0.5
    text = (lab.tmp / "cold.md").read_text()
    assert f"the modeled device `{slow}`" in text
    assert "| device utilisation, io_uring iodepth 32 |" not in text  # not run here
    assert "device utilisation" in text
    assert_left_nothing(lab, before)


# the report's row is Python's: the sanitizer pass would rerun a whole bench for nothing
@pytest.mark.nosan
def test_bench_device_names_the_moddev_it_ran_and_a_stale_one(lab):
    """bench device named fio but not the daemon it measured: a moddev
    built before tools/moddev or engines/lib last changed was reported
    like any other. Its machine table now has the daemon's path, md5 and
    build time, and says (also on stderr) that a stale build is not the
    checkout's commit."""
    before = bench_dirs()
    stale = lab.tmp / "moddev"
    shutil.copy2(lab.env["FIO_PACK_MODDEV"], stale)
    os.utime(stale, (1_000_000_000, 1_000_000_000))
    out = lab.tmp / "device.md"
    p = subprocess.run([*FIO_PACK, "bench", "device", "--quick", "--repeats", "1", "--fio", FIO,
                        "--dir", lab.tmp, "--output", out], capture_output=True, text=True,
                       timeout=300, cwd=lab.tmp,
                       env=fio_env({**lab.env, "FIO_PACK_MODDEV": str(stale)}))
    assert p.returncode == 0, p.stderr[-3000:]
    (row,) = [ln for ln in out.read_text().splitlines() if ln.startswith("| moddev |")]
    md5 = hashlib.md5(stale.read_bytes()).hexdigest()
    assert f"| moddev | {stale} (md5 {md5}, built 2001-09-0" in row, row
    assert "source: **not commit " in row and "run make" in row, row
    assert f"warning: {stale} was built before " in p.stderr, p.stderr
    assert_left_nothing(lab, before)


@pytest.mark.parametrize("args", [
    ["cold", "--fs", "ext4", "--files", "10", "--ios", "10"],
    ["postmark", "--configs", "defaults"],
    ["dbreplay", "--paced"],
], ids=["cold", "postmark", "dbreplay-paced"])
def test_bench_refuses_a_bad_device_model_in_one_line(lab, args):
    before = bench_dirs()
    p = bench(lab, *args, "--device", "fixed:channels=0,latency_us=100")
    assert p.returncode == 2 and p.stdout == "", describe(p)
    assert p.stderr == f"fio-pack bench {args[0]}: fixed: channels=0: must be at least 1\n", \
        describe(p)
    assert_left_nothing(lab, before)


def test_bench_postmark_refuses_a_device_beside_a_file_system_it_does_not_use(lab):
    before = bench_dirs()
    p = bench(lab, "postmark", "--device", MODEL, "--filesystems", "tmpfs,loop-ext4")
    assert p.returncode == 2 and p.stdout == "", describe(p)
    assert p.stderr == (
        "fio-pack bench postmark: --device MODEL applies to loop-ext4 and loop-xfs only "
        "(--filesystems tmpfs,loop-ext4) (see fio-pack bench postmark --help)\n"), describe(p)
    assert_left_nothing(lab, before)


@pytest.mark.nosan   # Debian's PostMark beside the engine: the plain build's comparison
def test_bench_postmark_on_a_modeled_device_compares_the_counters(lab):
    before = bench_dirs()
    raw = lab.tmp / "pm.json"
    p = bench(lab, "postmark", "--device", MODEL, "--configs", "defaults", "--transactions",
              "2000", "--repeats", "1", "--quiet-wait", "0", "--image-mib", "64", "--raw", raw,
              "--output", lab.tmp / "pm.md", "--fio", FIO, "--engine", ENGINE_DIR / "postmark.so")
    assert p.returncode == 0, describe(p)
    fs = json.loads(raw.read_text())["fs"]
    assert list(fs) == ["loop-ext4"]
    assert f"the modeled device `{MODEL}`" in fs["loop-ext4"]["where"]
    cfg = fs["loop-ext4"]["configs"][0]
    assert not cfg["mismatches"] and [x["prog"] for x in cfg["runs"]] == ["postmark", "engine"]
    assert cfg["runs"][0]["counters"] == cfg["runs"][1]["counters"]
    assert_left_nothing(lab, before)


@pytest.mark.nosan   # the shipped job files name build/dbreplay.so, the plain build
def test_bench_dbreplay_paced_on_a_modeled_device_says_what_the_device_did(lab):
    before = bench_dirs()
    raw = lab.tmp / "paced.json"
    # one server of 1 ms: the files the engine lays out before the replay
    # keep it busy too, and its utilisation must still be a share of time
    slow = "fixed:channels=1,latency_us=1000"
    p = bench(lab, "dbreplay", "--paced", "--device", slow, "--traces", "mariadb-dump",
              "--repeats", "1", "--image-mib", "128", "--raw", raw, "--output",
              lab.tmp / "paced.md", "--fio", FIO)
    assert p.returncode == 0, describe(p)
    runs = json.loads(raw.read_text())["runs"]
    assert [(x["trace"], x["target"]) for x in runs] == [("mariadb-dump", slow)]
    x = runs[0]
    assert x["records"] == 872 and x["lag_p99_ms"] >= x["lag_p50_ms"] >= 0
    # the replay's reads and writes reached the model (and ext4's journal with them)
    assert x["device"]["read"] + x["device"]["write"] > 0
    dev = x["device"]
    assert 0 < dev["utilisation"] <= 1.0, dev
    # every read and write holds the one server 1 ms (a flush nothing):
    # the busy time is theirs
    assert dev["utilisation"] * x["wall"] == pytest.approx(
        (dev["read"] + dev["write"]) * 1e-3, rel=0.1), (dev, x["wall"])
    assert "| device requests | device utilisation |" in (lab.tmp / "paced.md").read_text()
    assert_left_nothing(lab, before)


def test_study_on_a_modeled_device_records_its_model_and_the_report_names_it(lab):
    dev = lab.up(MODEL, size="64m")
    out = lab.tmp / "study"
    p = subprocess.run([*FIO_PACK, "study", "seeker", "--target", f"m={dev}",
                        "--confirm-overwrite", dev, "--set", "runtime=1", "--set", "size=8m",
                        "--out", out, "--fio", FIO, "--quiet"],
                       capture_output=True, text=True, timeout=120, env=fio_env(lab.env))
    assert p.returncode == 0, describe(p)
    meta = json.loads((out / "runs" / "0001.meta.json").read_text())
    device = meta["target"]["device"]
    assert device["model"] == MODEL and device["vendor"] == "fio-pack device"
    assert device["modeled"] == {"model": MODEL, "size_bytes": 64 << 20, "backdate_us": 0,
                                 "realtime": False}
    p = subprocess.run([*FIO_PACK, "analyze", "report", out, "--map", "raptor-raid5x8=m"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, describe(p)
    assert f"targets m (modeled device {MODEL})" in p.stdout, p.stdout
    # a directory target on a file system on the device: the same model
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True)
    subprocess.run(["mount", dev, lab.mnt], check=True)
    try:
        sys.path.insert(0, str(REPO / "scripts"))
        from fiopack.study.targets import device_info
        assert device_info(str(lab.mnt))["modeled"]["model"] == MODEL
    finally:
        subprocess.run(["umount", lab.mnt], check=True)
    lab.down(dev)
