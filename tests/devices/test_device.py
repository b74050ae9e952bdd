"""fio-pack device: modeled block devices (tools/moddev, docs/devices.md).

Each test brings real devices up on this machine (a FUSE daemon, a loop
device with direct I/O) with a fixed model fast enough to take a few
seconds, runs the real fio, mkfs and fsck on them, and checks what fio
reported, what the device's statistics say and what is on disk. Every test
ends by checking that no loop device, FUSE mount or daemon of its own is
left (leftovers()); the exit-path and bad-input tests check it after each
refusal or interruption.

Needs root (loop devices, mounts), /dev/fuse and build/moddev.
"""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.device import FIO_PACK, LOSETUP, MODDEV, QUICK, describe, one_line, raw_fio, wait_for
from helpers.fio import ENGINE_DIR, FIO, REPO, fio_env, run_fio
from helpers.trees import snapshot

pytestmark = [pytest.mark.mounts]


# ---------------------------------------------------------------------------
# up, list, stats, down
# ---------------------------------------------------------------------------

def test_up_list_stats_down(lab):
    dev = lab.up("fixed:channels=4,latency_us=200", "--backdate-us", "30", size="16m",
                 name="small")
    name = os.path.basename(dev)
    assert Path(f"/sys/block/{name}/loop/dio").read_text().strip() == "1"
    assert int(Path(f"/sys/block/{name}/size").read_text()) * 512 == 16 << 20
    backing = lab.data / "small.img"
    assert backing.stat().st_size == 16 << 20
    # written in full: every block allocated, none a hole
    assert backing.stat().st_blocks * 512 >= 16 << 20
    assert (lab.data / "small.img.fio-pack-device").is_file()

    rec = lab.record(dev)
    assert rec["state"] == "up" and rec["name"] == "small"
    assert rec["model"] == "fixed:channels=4,latency_us=200" and rec["size"] == 16 << 20
    assert rec["backing"] == str(backing) and rec["backdate_us"] == 30

    s = lab.stats(dev)
    assert s["device"] == dev and s["model"] == rec["model"] and s["size_bytes"] == 16 << 20
    assert s["servers"] == 4 and s["pid"] == rec["pid"] and s["backdate_ns"] == 30000
    assert s["realtime"] is False and thread_policies(s["pid"]) == {0}
    for k in ("read", "write", "flush"):
        assert set(s[k]) == {"requests", "bytes", "latency"}
    assert {"busy_ns", "service_ns", "utilisation", "in_flight", "elapsed_ns", "reply_lag",
            "daemon_cpu_ns", "refused"} <= set(s)

    # a device a process has open is refused, changing nothing
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time; "
                               f"os.open({dev!r}, os.O_RDONLY); print(flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        holder.stdout.readline()
        assert f"is open by pid {holder.pid} " in one_line(lab.cmd("down", dev))
        assert lab.record(dev)["state"] == "up"
    finally:
        holder.kill()
        holder.wait()

    lab.down(dev)
    assert lab.list() == [] and lab.leftovers() == []
    assert backing.stat().st_size == 16 << 20, "down removed the data"


def test_up_measures_the_round_trip_and_back_dates_by_it_by_default(lab):
    """Without --backdate-us, up measures what a request costs beyond its
    model on a device of its own, takes that down, and back-dates by the
    median: the record and the daemon say the same figure, and nothing of
    the measuring device is left (loop device, mount, daemon, files)."""
    p = lab.cmd("up", QUICK, "--dir", lab.data, "--size", "16m")
    assert p.returncode == 0 and not p.stderr, describe(p)
    dev = p.stdout.strip()
    lab.back_devs.add(lab.record(dev)["back_dev"])
    rec, s = lab.record(dev), lab.stats(dev)
    # more than nothing (the kernel and FUSE are in every request), less than
    # the measuring device's own 1 ms service time
    assert 0 < rec["backdate_us"] < 1000, rec
    assert s["backdate_ns"] == rec["backdate_us"] * 1000
    # only this device's loop device, mount and daemon
    assert len([x for x in lab.leftovers() if x.startswith("loop device")]) == 1, lab.leftovers()
    assert len([x for x in lab.leftovers() if x.startswith("daemon")]) == 1, lab.leftovers()
    assert sorted(e.name for e in (lab.run / "devices" / rec["name"]).iterdir()) == \
        ["daemon.log", "mnt", "state.json"]
    # its requests: none yet but the kernel's own (the measuring reads went elsewhere)
    assert s["read"]["requests"] < 10, s["read"]
    # auto says the same; a number is taken as it is
    lab.down(dev)
    dev = lab.up(QUICK, "--backdate-us", "auto", size=None)
    assert 0 < lab.record(dev)["backdate_us"] < 1000
    lab.down(dev)
    assert lab.leftovers() == [] and lab.devices_dir_empty()


def test_a_state_directory_of_that_name_is_not_touched(lab):
    """A directory of the device's name in the state directory that no
    device record owns (a user's, or a leftover) ended up in a traceback
    (FileExistsError): one line naming it, exit 2, its files and --dir as
    they were. up's own directories, the round trip's included, are only
    ever made inside a state directory it has just created."""
    theirs = lab.run / "devices" / "fixed"
    theirs.mkdir(parents=True)
    (theirs / "keep").write_text("mine\n")
    p = lab.cmd("up", QUICK, "--dir", lab.data, "--size", "16m")
    assert p.returncode == 2 and "Traceback" not in p.stderr, describe(p)
    assert f"{theirs} exists but fixed is not up: not touched" in one_line(p)
    assert sorted(x.name for x in theirs.iterdir()) == ["keep"]
    assert (theirs / "keep").read_text() == "mine\n"
    assert not list(lab.data.iterdir()) and lab.leftovers() == []


def thread_policies(pid) -> set:
    """The scheduling policies of @pid's threads (0 normal, 1 SCHED_FIFO)."""
    return {int(Path(f"/proc/{pid}/task/{t}/stat").read_text().rsplit(")", 1)[1].split()[38])
            for t in os.listdir(f"/proc/{pid}/task")}


def test_realtime_runs_every_thread_of_the_daemon_fifo(lab):
    dev = lab.up(QUICK, "--realtime", size="16m")
    run_fio(raw_fio(dev, "r", rw="randread", bs="4k", number_ios=100, ioengine="io_uring",
                    iodepth=8)).ok()
    s = lab.stats(dev)
    assert s["realtime"] is True and lab.record(dev)["realtime"] is True
    assert thread_policies(s["pid"]) == {1}, "a thread of the daemon is not SCHED_FIFO"
    lab.down(dev)


def test_stats_count_exactly_what_fio_did(lab):
    """The device's counts are fio's, request for request: sync reads and
    writes one at a time, io_uring reads 16 at a time, each fsync one flush.
    (Only the kernel's own flush when loop turns direct I/O on comes before:
    the counts are taken after up.) A 1 MiB O_DIRECT read is one request,
    or two when fio's buffer is in scattered pages: loop's queue takes 128
    segments (a segment is up to 64 KiB of contiguous memory)."""
    dev = lab.up()
    s0 = lab.stats(dev)
    w = run_fio(raw_fio(dev, "w", rw="randwrite", bs="4k", number_ios=200, fsync=50,
                        ioengine="psync")).ok().job()
    r = run_fio(raw_fio(dev, "r", rw="randread", bs="16k", number_ios=300, ioengine="io_uring",
                        iodepth=16)).ok().job()
    s1 = lab.stats(dev)
    big = run_fio(raw_fio(dev, "big", rw="read", bs="1m", number_ios=8,
                          ioengine="psync")).ok().job()
    s2 = lab.stats(dev)

    def delta(a, b, k, f):
        return b[k][f] - a[k][f]
    assert w["write"]["total_ios"] == 200
    assert delta(s0, s1, "write", "requests") == 200
    assert delta(s0, s1, "write", "bytes") == w["write"]["io_bytes"] == 200 * 4096
    # fio syncs after every 50 writes but the last: 3 fsyncs, 3 flushes
    assert delta(s0, s1, "flush", "requests") == w["sync"]["total_ios"] == 3
    assert delta(s0, s1, "read", "requests") == r["read"]["total_ios"] == 300
    assert delta(s0, s1, "read", "bytes") == r["read"]["io_bytes"]
    assert big["read"]["total_ios"] <= delta(s1, s2, "read", "requests") \
        <= 2 * big["read"]["total_ios"]
    assert delta(s1, s2, "read", "bytes") == big["read"]["io_bytes"] == 8 << 20
    # concurrent, not one at a time (as loop without direct I/O would send them)
    assert s2["in_flight"]["max"] >= 2, "io_uring's reads were never in the device together"
    # no request refused, none in the device once fio is done
    assert s2["refused"] == 0 and s2["in_flight"]["now"] == 0
    lab.down(dev)


def test_stats_read_and_closed_by_many_readers_at_once(lab):
    """Readers that open, read and close the stats file at once, while the
    device serves I/O: each reads one whole snapshot, and the daemon goes
    on (its snapshot is freed when a reader closes, which may be before the
    thread that answered the reader's read has returned from writev)."""
    import threading
    dev = lab.up("fixed:channels=2,latency_us=100")
    path = Path(lab.record(dev)["mount"]) / "stats"
    bad = []

    def reader():
        for _ in range(300):
            try:
                with open(path) as f:
                    json.load(f)
            except (OSError, ValueError) as e:
                bad.append(repr(e))
                return

    fio = subprocess.Popen([FIO, *raw_fio(dev, "r", rw="randread", bs="4k", runtime=3,
                                          time_based=1, ioengine="io_uring", iodepth=4)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out, err = fio.communicate(timeout=60)
    log = (path.parent.parent / "daemon.log").read_text()
    assert fio.returncode == 0 and not bad and "Sanitizer" not in log, (err, bad, log[:3000])
    assert lab.stats(dev)["read"]["requests"] > 0
    lab.down(dev)


def test_models_lists_each_model_with_its_sources_and_parameters(lab):
    p = lab.cmd("models")
    assert p.returncode == 0 and not p.stderr, describe(p)
    assert p.stdout.startswith("fixed: ")
    assert "source: " in p.stdout
    for key in ("channels", "latency_us", "write_latency_us", "mbps"):
        assert f"    {key} " in p.stdout
    models = json.loads(lab.cmd("models", "--json").stdout)["models"]
    fixed = next(m for m in models if m["name"] == "fixed")
    assert [q["key"] for q in fixed["params"] if q["required"]] == ["channels", "latency_us"]
    assert fixed["sources"]


def faulty_backing(lab, rules: str) -> dict:
    """The environment of an `up` whose daemon's backing file misbehaves
    (tests/faultinject: its calls under the data directory only)."""
    fi = REPO / "build" / "faultinject.so"
    assert fi.is_file(), f"{fi} is missing: run `make build/faultinject.so` in {REPO}"
    return {"LD_PRELOAD": f"{os.environ.get('LD_PRELOAD', '')} {fi}".strip(),
            "FAULTINJECT_DIR": str(lab.data), "FAULTINJECT": rules}


def test_a_failing_backing_file_fails_the_request_and_says_why(lab):
    """The backing file's own errors are not the model's: the request fails
    with EIO (as loop says every error) at the model's time, is counted as
    failed, and the daemon's log is where the reason is."""
    dev = lab.up(env=faulty_backing(lab, "pwrite:eio"))
    res = run_fio(raw_fio(dev, "w", rw="write", bs="4k", number_ios=10, ioengine="psync"))
    assert res.rc != 0 and "Input/output error" in res.stdout + res.stderr, res.describe()
    log = (Path(lab.record(dev)["mount"]).parent / "daemon.log").read_text()
    assert log.splitlines() == ["moddev: write of 4096 bytes at 0: Input/output error"], log
    s = lab.stats(dev)
    assert s["failed"] == 1 and s["write"]["requests"] == 1, \
        "the failed write is not the one request the model served"
    lab.down(dev)


def test_backing_io_overlaps_the_model_and_a_write_waits_for_both(lab):
    """A request reaches the model when the daemon reads it, and its
    backing I/O runs while the model serves it: a 20 ms model over a
    backing file that takes 20 ms answers in 20 ms, not 40 (the backing
    I/O first would also have kept the two halves of a split read from the
    model, in either order). A write is still answered only once it is in
    the backing file: a 1 ms model over a 20 ms pwrite answers in 20 ms."""
    slow = "pread:delay:us=20000,pwrite:delay:us=20000"
    dev = lab.up("fixed:channels=4,latency_us=20000", env=faulty_backing(lab, slow))
    for rw in ("randread", "randwrite"):
        job = run_fio(raw_fio(dev, rw, rw=rw, bs="16k", number_ios=20, ioengine="psync",
                              lat_percentiles=1)).ok().job()
        lat = job["read" if rw == "randread" else "write"]["lat_ns"]
        assert lat["min"] >= 20e6, f"{rw}: a request answered before the model or the file"
        assert lat["percentile"]["50.000000"] < 30e6, \
            f"{rw}: the backing I/O and the model took turns: p50 {lat['percentile']}"
    s = lab.stats(dev)
    assert s["read"]["requests"] == 20 and s["write"]["requests"] == 20 and s["failed"] == 0
    lab.down(dev)
    dev = lab.up("fixed:channels=4,latency_us=1000", size=None,
                 env=faulty_backing(lab, "pwrite:delay:us=20000"))
    job = run_fio(raw_fio(dev, "w", rw="randwrite", bs="4k", number_ios=10, ioengine="psync")
                  ).ok().job()
    assert job["write"]["lat_ns"]["min"] >= 20e6, "a write answered before it was written"
    lab.down(dev)


def test_the_daemon_allocates_nothing_per_request(lab):
    """Requests come 10,000s a second: the daemon keeps what a request
    needs (its record, a read's buffer) for the next one instead of a
    calloc and a malloc each. What is left is libfuse's own (one struct
    fuse_req per request). Counted from outside, by build/alloccount.so."""
    if ENGINE_DIR.name == "asan":
        pytest.skip("the sanitizer's allocator takes the calls alloccount.so counts")
    so = REPO / "build" / "alloccount.so"
    assert so.is_file(), f"{so} is missing: run `make build/alloccount.so` in {REPO}"
    report = lab.tmp / "allocs"
    dev = lab.up(env={"LD_PRELOAD": f"{os.environ.get('LD_PRELOAD', '')} {so}".strip(),
                      "ALLOCCOUNT_REPORT": str(report)})
    pid = lab.record(dev)["pid"]
    s0 = lab.stats(dev)
    for rw, bs in (("randread", "16k"), ("randwrite", "4k"), ("read", "1m")):
        run_fio(raw_fio(dev, rw, rw=rw, bs=bs, number_ios=1000 if bs != "1m" else 64,
                        ioengine="io_uring", iodepth=16)).ok()
    s1 = lab.stats(dev)
    lab.down(dev)

    def counts_now() -> dict:
        text = report.read_text() if report.exists() else ""
        return dict(map(int, line.split()) for line in text.splitlines() if line.count(" ") == 1)
    # down returns once the device is gone; the daemon writes its count as
    # it exits, a moment later (2 runs in 14 read the report before that)
    wait_for(lambda: pid in counts_now(), what=f"the daemon {pid}'s count")
    counts = counts_now()
    requests = sum(s1[k]["requests"] - s0[k]["requests"] for k in ("read", "write", "flush"))
    assert requests >= 2064 and counts[pid] > 0
    per = counts[pid] / requests
    assert per <= 1.2, f"{counts[pid]} allocations for {requests} requests ({per:.2f} each)"


# ---------------------------------------------------------------------------
# The fixed model's truth, on a machine that may be busy: other work on 2
# CPUs delays fio, loop's worker and the daemon, never speeds them up, so
# what a test can hold is the sharp side (never faster than the model) and
# the daemon's own punctuality at the median. How close to the model a
# device comes is measured by fio-pack bench device (docs/devices.md).
# ---------------------------------------------------------------------------

def rate(dev, depth, seconds=2) -> dict:
    return run_fio(raw_fio(dev, "truth", rw="randread", bs="16k", ioengine="io_uring",
                           iodepth=depth, runtime=seconds, time_based=1,
                           lat_percentiles=1)).ok().job()["read"]


def test_fixed_model_is_never_faster_than_its_truth(lab):
    """At most C/D requests a second, none served in under its latency; and
    the daemon answers each at its time (a median lag of under 2 ms even
    on a machine busy enough to stall fio for 100 ms)."""
    dev = lab.up("fixed:channels=4,latency_us=1000")
    saturated = rate(dev, 32)
    assert saturated["iops"] <= 1.02 * 4000, saturated["iops"]
    assert saturated["lat_ns"]["min"] >= 1e6, "a request served before its time"
    alone = rate(dev, 1)
    assert alone["lat_ns"]["min"] >= 1e6, "a request served before its time"
    assert alone["lat_ns"]["percentile"]["50.000000"] >= 0.98e6
    s = lab.stats(dev)
    assert s["read"]["latency"]["min_ns"] >= 1e6
    assert s["reply_lag"]["p50_ns"] < 2e6, s["reply_lag"]
    lab.down(dev)
    dev = lab.up("fixed:channels=1,latency_us=8000", size=None)
    for depth in (1, 4):
        r = rate(dev, depth)
        assert r["iops"] <= 1.02 * 125, f"{r['iops']} IOPS at depth {depth}"
        assert r["lat_ns"]["min"] >= 8e6, "a request served before its time"
    assert lab.stats(dev)["reply_lag"]["p50_ns"] < 2e6
    lab.down(dev)


# ---------------------------------------------------------------------------
# Integrity
# ---------------------------------------------------------------------------

def test_ext4_verify_fsck_and_data_kept_across_down_and_up(lab):
    dev = lab.up(name="disk1")
    r = subprocess.run(["mkfs.ext4", "-q", "-F", dev], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    subprocess.run(["mount", dev, lab.mnt], check=True)
    res = run_fio(["--name=v", f"--directory={lab.mnt}", "--size=8m", "--bs=4k",
                   "--rw=randwrite", "--verify=crc32c", "--do_verify=1", "--direct=1",
                   "--ioengine=io_uring", "--iodepth=8"], cwd=lab.tmp).ok()
    job = res.job()
    assert job["write"]["io_bytes"] == 8 << 20 and job["read"]["io_bytes"] == 8 << 20, \
        "fio's verify pass did not read back what it wrote"
    content = os.urandom(300000)
    (lab.mnt / "kept").write_bytes(content)
    # a mounted device is the user's: down refuses, changing nothing
    p = lab.cmd("down", dev)
    assert f"is mounted on {lab.mnt}" in one_line(p)
    assert lab.record(dev)["state"] == "up"
    subprocess.run(["umount", lab.mnt], check=True)
    r = subprocess.run(["fsck.ext4", "-n", "-f", dev], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    lab.down(dev)

    dev = lab.up(name="disk1", size=None)
    subprocess.run(["mount", dev, lab.mnt], check=True)
    assert hashlib.sha256((lab.mnt / "kept").read_bytes()).digest() == \
        hashlib.sha256(content).digest()
    subprocess.run(["umount", lab.mnt], check=True)
    lab.down(dev)


def test_killed_daemon_fails_io_with_eio_and_down_cleans_up(lab):
    dev = lab.up()
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
    subprocess.run(["mount", dev, lab.mnt], check=True)
    (lab.mnt / "file").write_bytes(os.urandom(1 << 20))
    subprocess.run(["sync"], check=True)
    fio = subprocess.Popen([str(FIO),
                            *raw_fio(dev, "r", rw="randread", bs="4k", ioengine="io_uring",
                                     iodepth=16, runtime=60, time_based=1)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: lab.stats(dev)["read"]["requests"] > 100, what="fio's reads")
        os.kill(lab.record(dev)["pid"], signal.SIGKILL)
        t0 = time.monotonic()
        out, err = fio.communicate(timeout=10)
    finally:
        if fio.poll() is None:
            fio.kill()
            fio.wait()
    assert time.monotonic() - t0 < 10
    assert fio.returncode != 0 and "Input/output error" in out + err, (out, err)
    # the file system on it fails too, at once
    r = subprocess.run(["dd", f"if={lab.mnt}/file", "of=/dev/null", "iflag=direct", "bs=64k"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode != 0 and "Input/output error" in r.stderr
    assert lab.record(dev)["state"] == "daemon died"
    assert "its daemon" in one_line(lab.cmd("stats", dev))
    assert f"is mounted on {lab.mnt}" in one_line(lab.cmd("down", dev))
    subprocess.run(["umount", lab.mnt], check=True, timeout=30)
    lab.down(dev)
    assert lab.list() == [] and lab.leftovers() == []


# ---------------------------------------------------------------------------
# Every exit path of up leaves nothing behind
# ---------------------------------------------------------------------------

def shim_losetup(lab, body: str) -> dict:
    """A losetup that does @body when asked to attach (--show), the real one
    otherwise: the environment that puts it first on PATH."""
    d = lab.tmp / "shim"
    d.mkdir(exist_ok=True)
    f = d / "losetup"
    f.write_text(f'#!/bin/sh\ncase "$*" in *--show*) {body} ;; esac\nexec {LOSETUP} "$@"\n')
    f.chmod(0o755)
    return {"PATH": f"{d}:{os.environ['PATH']}"}


def assert_nothing_left(lab):
    assert lab.leftovers() == []
    assert lab.devices_dir_empty()
    assert not list(lab.data.iterdir()), f"left in --dir: {list(lab.data.iterdir())}"


@pytest.mark.parametrize("body,needle", [
    (f'{LOSETUP} "$@" >/dev/null; echo "losetup: simulated failure after attaching" >&2; exit 1',
     "losetup: simulated failure after attaching"),
    (f'shift; exec {LOSETUP} --direct-io=off "$@"', "refused direct I/O"),
], ids=["losetup-fails-after-attaching", "direct-io-refused"])
def test_a_failing_up_leaves_nothing(lab, body, needle):
    p = lab.cmd("up", QUICK, "--dir", lab.data, "--size", "16m", env=shim_losetup(lab, body))
    assert needle in one_line(p)
    assert p.stdout == ""
    assert_nothing_left(lab)


def start_up(lab, env=None, size="16m"):
    return subprocess.Popen([*FIO_PACK, "device", "up", QUICK, "--dir", str(lab.data),
                             "--size", size], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=fio_env({**lab.env, **(env or {})}))


def assert_interrupted(p, interrupt):
    """`up` @p, interrupted by @interrupt(), says so in one line, exit 130."""
    try:
        interrupt()
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130 and out == "" and err.strip() == "fio-pack device: interrupted"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_while_attaching_leaves_nothing(lab, sig):
    """The loop device is attached and the daemon runs when the signal comes:
    the loop device is found by its file and detached, the daemon stopped."""
    ready = lab.tmp / "attached"
    p = start_up(lab, shim_losetup(lab, f'{LOSETUP} "$@"; touch {ready}; exec sleep 30'))

    def interrupt():
        wait_for(ready.exists, what="losetup to attach")
        assert lab.leftovers(), "nothing was up when interrupted: the test tests nothing"
        p.send_signal(sig)
    assert_interrupted(p, interrupt)
    assert_nothing_left(lab)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_while_writing_the_backing_file_leaves_nothing(lab, sig):
    p = start_up(lab, size="512m")

    def interrupt():
        wait_for(lambda: any(e.name.startswith(".fixed.img.tmp-") for e in lab.data.iterdir()),
                 what="the backing file's temporary")
        # stopped while it writes, the signal is there when it goes on
        p.send_signal(signal.SIGSTOP)
        assert not (lab.data / "fixed.img").exists(), "written before the test could stop it"
        p.send_signal(sig)
        p.send_signal(signal.SIGCONT)
    assert_interrupted(p, interrupt)
    assert_nothing_left(lab)


# ---------------------------------------------------------------------------
# Bad input: one line, exit 2, nothing touched or left
# ---------------------------------------------------------------------------

def libfuse_path() -> str:
    out = subprocess.run(["ldd", str(MODDEV)], capture_output=True, text=True).stdout
    return next(l.split("=>")[1].split()[0] for l in out.splitlines() if "libfuse3" in l)


BAD_UP = [
    ("unknown-model", ["nosuch"], {}, (), "model: unknown model 'nosuch' (models: fixed, "),
    ("channels-zero", ["fixed:channels=0,latency_us=100"], {}, (),
     "fixed: channels=0: must be at least 1"),
    ("negative-latency", ["fixed:channels=4,latency_us=-5"], {}, (),
     "fixed: latency_us=-5: must be at least 0"),
    ("unknown-key", ["fixed:channels=4,latency_us=5,depth=3"], {}, (),
     "fixed: unknown key 'depth' (keys: channels, latency_us, write_latency_us, mbps)"),
    ("bad-size", [QUICK, "--size", "12q"], {}, (), "--size 12q: not a size"),
    ("small-size", [QUICK, "--size", "100k"], {}, (), "--size 100k: must be at least 1m"),
    ("bad-name", [QUICK, "--name", "../x"], {}, (), "--name ../x: letters, digits"),
    ("bad-backdate", [QUICK, "--backdate-us", "-1"], {}, (), "--backdate-us: '-1': must be at least 0"),
    ("word-backdate", [QUICK, "--backdate-us", "soon"], {}, (),
     "--backdate-us: 'soon': not a whole number or auto"),
    ("not-built", [QUICK], {"FIO_PACK_MODDEV": "/nonexistent/moddev"}, (),
     "/nonexistent/moddev is not built: install fuse3 libfuse3-dev"),
    ("not-root", [QUICK], {}, ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"),
     "must run as root"),
    ("no-dev-fuse", [QUICK], {}, ("unshare", "-m", "sh", "-c",
                                   'mount -t tmpfs none /dev && exec "$@"', "sh"),
     "no /dev/fuse"),
    ("no-libfuse3", [QUICK], {}, "LIBFUSE", "(install fuse3 libfuse3-dev"),
]


@pytest.mark.parametrize("args,env,prefix,needle", [b[1:] for b in BAD_UP],
                         ids=[b[0] for b in BAD_UP])
def test_bad_up_is_one_line_and_touches_nothing(lab, args, env, prefix, needle):
    if prefix == "LIBFUSE":
        # as on a machine without the library: the daemon cannot load it
        prefix = ("unshare", "-m", "sh", "-c", f'mount --bind /dev/null {libfuse_path()} && '
                  'exec "$@"', "sh")
    before = snapshot(lab.data)
    p = lab.cmd("up", *args[:1], "--dir", lab.data, *args[1:], env=env, prefix=prefix)
    assert needle in one_line(p)
    assert p.stdout == ""
    assert snapshot(lab.data) == before
    assert not (lab.run / "devices").exists() or lab.devices_dir_empty()
    assert lab.leftovers() == []


def test_up_refusals_that_find_something_there(lab, tmpfs_dir):
    # a file of the backing file's name that fio-pack did not make is never touched
    foreign = lab.data / "fixed.img"
    foreign.write_bytes(b"mine" * 1024)
    before = snapshot(lab.data, content=True)
    assert "was not made by fio-pack device" in one_line(
        lab.cmd("up", QUICK, "--dir", lab.data))
    assert snapshot(lab.data, content=True) == before
    foreign.unlink()
    # nor a sidecar of that name without its backing file
    sidecar = lab.data / "fixed.img.fio-pack-device"
    sidecar.write_text("mine\n")
    before = snapshot(lab.data, content=True)
    assert "fixed.img.fio-pack-device exists without fixed.img" in one_line(
        lab.cmd("up", QUICK, "--dir", lab.data, "--size", "4m"))
    assert snapshot(lab.data, content=True) == before
    sidecar.unlink()

    # more than the free space under --dir
    before = snapshot(tmpfs_dir)
    assert "--size 1g: only" in one_line(lab.cmd("up", QUICK, "--dir", tmpfs_dir, "--size", "1g"))
    assert snapshot(tmpfs_dir) == before

    # a name already up; an existing backing file of another size
    dev = lab.up(size="16m")
    assert f"fixed is up as {dev}" in one_line(lab.cmd("up", QUICK, "--dir", lab.data))
    lab.down(dev)
    assert "holds 16m" in one_line(lab.cmd("up", QUICK, "--dir", lab.data, "--size", "32m"))
    assert lab.list() == [] and lab.leftovers() == []


def test_down_and_stats_refuse_what_is_not_ours(lab):
    # a loop device of someone else's, attached to a plain file
    img = lab.tmp / "plain.img"
    img.write_bytes(bytes(1 << 20))
    other = subprocess.run([LOSETUP, "--show", "-f", str(img)], capture_output=True, text=True,
                           check=True).stdout.strip()
    try:
        for dev in (other, "/dev/null", "/nonexistent/loop9"):
            for cmd in ("down", "stats"):
                assert "not a device of fio-pack device" in one_line(lab.cmd(cmd, dev))
        assert str(img) in subprocess.run([LOSETUP, other], capture_output=True,
                                          text=True).stdout, "the other loop device was detached"
        p = lab.cmd("down", other, prefix=("setpriv", "--reuid=65534", "--regid=65534",
                                           "--clear-groups"))
        assert "must run as root" in one_line(p)
    finally:
        subprocess.run([LOSETUP, "-d", other])
