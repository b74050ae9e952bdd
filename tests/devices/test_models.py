"""fio-pack device with the models of the field (tools/moddev/model_*.c,
docs/devices.md "The models"): each kind brought up as a real device and
run by the real fio for a few seconds.

The models' own truths are held exactly by the unit tests, in simulated
time (tests/unit/test_moddev_*.c). On this shared machine a device can only
be slower than its model (other work delays fio, loop's worker and the
daemon, never speeds them up), so what these tests hold is what a busy
machine cannot fake: a device never faster than its model, and effects
that only grow when requests wait longer (an HDD's queue reordering).
"""
import json
import os
import signal
import time

import pytest

from helpers.device import describe, one_line, raw_fio, wait_for
from helpers.fio import run_fio

pytestmark = [pytest.mark.mounts]


# a 10k rpm drive of the Raptor's class: a revolution is 6 ms
DRIVE = ("hdd:rpm=10000,seek_track_ms=0.6,seek_avg_ms=4.5,seek_full_ms=10,outer_mbps=90,"
         "inner_mbps=54,cache_segments=8")


def rate(dev, seconds=2, **opts) -> dict:
    return run_fio(raw_fio(dev, "m", ioengine="io_uring", runtime=seconds, time_based=1,
                           **opts)).ok().job()


def test_hdd_reorders_its_queue_and_is_never_faster_than_its_platter(lab):
    dev = lab.up(DRIVE, size="256m", name="hdd")
    one = rate(dev, rw="randread", bs="4k", iodepth=1)["read"]
    deep = rate(dev, rw="randread", bs="4k", iodepth=32)["read"]
    # average seek + half a revolution + 4 KiB at 90 MB/s: 132.5 a second
    assert one["iops"] <= 1.15 * 132.5, one["iops"]
    assert one["total_ios"] > 50, "the drive served almost nothing: the test tests nothing"
    # reordering 32 requests by positioning time: as on NCQ drives
    assert deep["iops"] >= 1.4 * one["iops"], (one["iops"], deep["iops"])
    s = lab.stats(dev)
    assert s["servers"] == 1 and s["in_flight"]["max"] >= 32
    assert 0 < s["utilisation"] <= 1.0
    lab.down(dev)


def test_ssd_is_never_faster_than_its_flash_and_a_flush_waits_for_its_buffer(lab):
    # 2 units of 400 us: 5,000 reads a second at most; a page program takes 2 ms
    dev = lab.up("ssd:channels=2,read_us=400,program_us=2000,buffer_kb=1024", size="64m",
                 name="ssd")
    r = rate(dev, rw="randread", bs="4k", iodepth=16)["read"]
    assert r["iops"] <= 1.02 * 5000, r["iops"]
    assert r["lat_ns"]["min"] >= 400e3, "a read served before the flash could"
    assert r["total_ios"] > 500, "the device served almost nothing: the test tests nothing"
    # each write is done in the buffer; each fsync waits for its page to be programmed
    w = run_fio(raw_fio(dev, "w", rw="randwrite", bs="4k", number_ios=40, fsync=1,
                        ioengine="psync")).ok().job()
    # (fio syncs after every write but the last)
    assert w["sync"]["total_ios"] == 39
    # a write and its fsync take the program's 2 ms between them, however late the fsync
    # came (on a busy machine it can come long after its write)
    assert w["write"]["lat_ns"]["mean"] + w["sync"]["lat_ns"]["mean"] >= 2e6, w
    assert w["write"]["lat_ns"]["min"] < 2e6, "every write waited for its page's program"
    s = lab.stats(dev)
    assert s["servers"] == 2 and s["flush"]["requests"] >= 39
    lab.down(dev)


def test_raid5_small_writes_read_before_they_write(lab):
    # 4 members of 500 us: a 4 KiB write reads its data and parity, then writes them
    dev = lab.up("raid5:members=4,stripe_kb=64,member=(fixed:channels=1,latency_us=500)",
                 size="64m", name="raid5")
    w = rate(dev, rw="randwrite", bs="4k", iodepth=1)["write"]
    assert w["lat_ns"]["min"] >= 1e6, "a small write did not read its row first"
    assert w["iops"] <= 1.02 * 1000 and w["total_ios"] > 100, w["iops"]
    r = rate(dev, rw="randread", bs="4k", iodepth=1)["read"]
    assert r["lat_ns"]["min"] >= 500e3 and r["iops"] <= 1.02 * 2000
    s = lab.stats(dev)
    assert s["servers"] == 4 and s["refused"] == 0 and s["in_flight"]["now"] == 0
    lab.down(dev)


def test_write_back_cache_keeps_what_was_synced_across_a_sigkill(lab):
    """A controller cache in front of a 2 ms member: fsync waits for the
    destage, and what was synced is there after the daemon is killed, the
    device taken down and brought up again."""
    spec = "wbcache:size_mb=64,member=(fixed:channels=1,latency_us=2000)"
    dev = lab.up(spec, size="64m", name="cached")
    data = os.urandom(3 << 20)
    fd = os.open(dev, os.O_WRONLY)
    try:
        os.pwrite(fd, data, 5 << 20)
        t0 = time.monotonic()
        os.fsync(fd)
        synced = time.monotonic() - t0
    finally:
        os.close(fd)
    assert synced >= 2e-3, "fsync returned before the cache could destage"
    s = lab.stats(dev)
    assert s["flush"]["requests"] >= 1 and s["write"]["bytes"] >= len(data)
    os.kill(s["pid"], signal.SIGKILL)
    wait_for(lambda: lab.record(dev)["state"] == "daemon died",
                         what="the daemon to die")
    lab.down(dev)
    dev = lab.up(spec, size=None, name="cached")
    with open(dev, "rb") as f:
        f.seek(5 << 20)
        assert f.read(len(data)) == data, "synced data lost across the SIGKILL"
    lab.down(dev)


# the named hard disks and what their datasheets give (docs/devices.md)
DATASHEET_DRIVES = [("wd740adfd", 4.5, 10000, 90), ("mba3147rc", 3.1, 15000, 171)]


@pytest.mark.parametrize("name,avg_seek_ms,rpm,outer_mbps", DATASHEET_DRIVES,
                         ids=[d[0] for d in DATASHEET_DRIVES])
def test_named_drive_is_never_faster_than_its_datasheet(lab, name, avg_seek_ms, rpm,
                                                        outer_mbps):
    dev = lab.up(name, size="256m", name=name)
    bound = 1e3 / (avg_seek_ms + 30e3 / rpm + 4096 / (outer_mbps * 1e3))
    one = rate(dev, rw="randread", bs="4k", iodepth=1)["read"]
    assert one["iops"] <= 1.15 * bound, (one["iops"], bound)
    assert one["total_ios"] > 50
    deep = rate(dev, rw="randread", bs="4k", iodepth=32)["read"]
    assert deep["iops"] >= 1.4 * one["iops"], (one["iops"], deep["iops"])
    seq = rate(dev, rw="read", bs="1m", iodepth=1)["read"]
    assert seq["bw_bytes"] <= 1.05 * outer_mbps * 1e6, seq["bw_bytes"]
    lab.down(dev)


def test_models_lists_the_named_models_with_their_sources(lab):
    models = {m["name"]: m for m in json.loads(lab.cmd("models", "--json").stdout)["models"]}
    for name in ("mtron-7035", "mtron-7025", "mtron-mobi3000", "wd740adfd", "raptor-raid5x8",
                 "mtron-raid5x4-arc1220", "mba3147rc", "sas-raid10x8", "intel320",
                 "intel320-raid0x2", "raptor-arc1280ml", "mobi3000-arc1280ml"):
        assert models[name]["spec"] and models[name]["sources"], name
    assert models["raptor-raid5x8"]["spec"] == "raid5:members=8,stripe_kb=64,member=(wd740adfd)"
    p = lab.cmd("models")
    assert "wd740adfd: WD Raptor WD740ADFD" in p.stdout and "    is hdd:rpm=10000," in p.stdout
    # a named model takes no parameters: its spec is what to copy and change
    p = lab.cmd("up", "wd740adfd:rpm=7200", "--dir", lab.data, "--size", "64m")
    assert "wd740adfd: a named model takes no parameters (it is hdd:rpm=10000," in one_line(p)
    assert lab.list() == [] and lab.leftovers() == []


def test_a_model_it_cannot_draw_is_refused_in_one_line(lab):
    p = lab.cmd("up", DRIVE.replace("seek_avg_ms=4.5", "seek_avg_ms=3"), "--dir", lab.data,
                "--size", "64m")
    assert one_line(p).endswith("hdd: seek_avg_ms=3: must be from 3.74 to 5.53 with "
                                "seek_track_ms=0.6 and seek_full_ms=10"), describe(p)
    assert lab.list() == [] and lab.leftovers() == []
    models = json.loads(lab.cmd("models", "--json").stdout)["models"]
    hdd = next(m for m in models if m["name"] == "hdd")
    assert [q["key"] for q in hdd["params"] if q["required"]] == [
        "rpm", "seek_track_ms", "seek_avg_ms", "seek_full_ms", "outer_mbps"]
