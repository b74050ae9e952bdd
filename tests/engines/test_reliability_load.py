"""Reliability of every engine under load: 64 jobs, io_uring at
iodepth 128, memory over hundreds of thousands of operations, and a
valgrind memcheck run. The engine profiles and helpers are in
tests/helpers/reliability.py; docs/RELIABILITY.md has the table of cases.
"""
import json
import os
import re
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers.fio import FIO, REPO, fio_env, run_fio
from helpers.mounts import mounted
from helpers.reliability import (DBREPLAY, ENGINE_IDS, SF_MIX, SMALLFILE, VALGRIND_SUPP, dbr,
                                 dbr_report, dbr_trace, json_totals, pm, sf)
from helpers.trees import read_opstats, tree_files

# ---------------------------------------------------------------------------
# 6. Load: 64 jobs, io_uring at iodepth 128, memory over many loops
# ---------------------------------------------------------------------------

@pytest.fixture
def big_tmpfs(tmp_path):
    yield from mounted(tmp_path, "tmpfs", "tmpfs", "size=256m")


@pytest.mark.mounts
@pytest.mark.parametrize("engine", ENGINE_IDS)
def test_64_jobs_at_once(big_tmpfs, tmp_path, engine):
    """numjobs=64: no deadlock (fio's timeout), correct totals, no errors."""
    target = big_tmpfs / "t"
    target.mkdir()
    ops = tmp_path / "ops.jsonl"
    if engine == "dbreplay":
        # each job replays into its own target/r.K (~1 MiB of files each)
        trace = tmp_path / "db.trace"
        _, counts = dbr_trace(trace, records=1000, streams=4, full=False)
        r = run_fio(dbr(trace, target, numjobs=64, dbr_report_file=ops), timeout=120).ok()
        dbr_totals_ok(r, counts, 64)
        lines = dbr_report(ops)
        assert sorted(l["subjob"] for l in lines) == list(range(64))
        assert all(l["replayed"] == 1000 and l["errors"] == 0 and l["last_loop_complete"]
                   for l in lines)
        assert len(r.jobs) == 64 and not DBREPLAY.errors(r)
        # each job removed its files and the job directory it made
        assert os.listdir(target) == []
    elif engine == "smallfile":
        tree = dict(tree_files=1280, tree_fanout=8, tree_depth=1, tree_file_size_dist="fixed:4k")
        r = run_fio(sf(target, tree_file_op="layout", rw="write", numjobs=64, tree_opstats_file=ops,
                       **tree), timeout=120).ok()
        assert r.total("write", "total_ios") == 1280 and r.total("write", "io_bytes") == 1280 * 4096
        assert len(tree_files(target)) == 1280
        r = run_fio(sf(target, tree_file_op="read:80,stat:10,append:10", rw="randread",
                       numjobs=64, number_ios=100, tree_append_size="fixed:100", **tree),
                    timeout=120).ok()
        t = json_totals(r)
        assert t["read"][0] + t["write"][0] == 6400 and t["total_err"] == 0
        assert t["write"][1] == 100 * t["write"][0]
        assert len(r.jobs) == 64 and not SMALLFILE.errors(r)
    else:
        r = run_fio(pm(target, numjobs=64, pm_number=40, pm_transactions=80, pm_size_low=500,
                       pm_size_high=3000, pm_opstats_file=ops), timeout=120).ok()
        lines = read_opstats(ops)
        assert len(lines) == 64 and all(l["finished"] for l in lines)
        assert sorted(l["postmark"]["seed"] for l in lines) == list(range(42, 42 + 64))
        assert r.total("sync", "total_ios") == 64 * 80
        assert r.total("trim", "total_ios") == sum(l["postmark"]["deleted"] for l in lines)
        assert r.total("read", "io_bytes") == sum(l["postmark"]["bytes_read"] for l in lines)
        assert sorted(os.listdir(target)) == [], os.listdir(target)[:5]


def dbr_totals_ok(res, counts, njobs=1):
    """fio's totals over all jobs are exactly njobs times the trace's records
    and bytes (a trace without reads past the end of a file)."""
    c = lambda op: counts.get(op, [0, 0])
    for ddir, ops in (("read", ["read"]), ("write", ["write"]), ("trim", ["trim"])):
        want = (njobs * sum(c(o)[0] for o in ops), njobs * sum(c(o)[1] for o in ops))
        got = (res.total(ddir, "total_ios"), sum(j[ddir]["io_bytes"] for j in res.jobs))
        assert got == want, (ddir, got, want)
    syncs = sum(c(o)[0] for o in ("fsync", "fdatasync", "sync_file_range"))
    assert sum(j["sync"]["lat_ns"]["N"] for j in res.jobs) == njobs * syncs
    # every sync kind is fio's DDIR_SYNC (docs/compat.md), and nothing is short
    assert res.total("sync", "total_ios") == njobs * syncs
    assert all(j[d]["short_ios"] == 0 and j[d]["drop_ios"] == 0
               for j in res.jobs for d in ("read", "write", "trim"))
    assert all(j["error"] == 0 for j in res.jobs)


def max_in_flight(log) -> tuple:
    """The most records in flight at once in a dbr_record_log (issue to
    completion as the engine saw them), in all and in any one stream."""
    events = []
    for line in Path(log).read_text().splitlines():
        if not line.startswith("#"):
            f = line.split()
            events += [(int(f[6]), 1, f[2]), (int(f[7]), -1, f[2])]
    now, best, per, best_per = 0, 0, {}, 0
    for _, d, stream in sorted(events, key=lambda e: (e[0], e[1])):   # completions first
        now += d
        per[stream] = per.get(stream, 0) + d
        best, best_per = max(best, now), max(best_per, per[stream])
    return best, best_per


def dbreplay_io_uring_iodepth_128(target, tmp_path):
    """dbreplay, iodepth=128 on a 20,000-record trace of 64 streams, with
    dbr_stream_depth 1, 8 and 32: no deadlock, fio's totals exactly the
    trace's; then the full trace (creates, unlinks, truncates, reads past
    the end of file) at stream depth 32: every record replayed, no error,
    the same as the sync mode."""
    trace = tmp_path / "db.trace"
    _, counts = dbr_trace(trace, records=20000, streams=64, full=False)
    rep = tmp_path / "report.jsonl"
    for depth in (1, 8, 32):
        log = tmp_path / f"records-{depth}.log"
        r = run_fio(dbr(trace, target, dbr_io_api="io_uring", iodepth=128, dbr_stream_depth=depth,
                        dbr_report_file=rep, dbr_record_log=log), timeout=120).ok()
        dbr_totals_ok(r, counts)
        l = dbr_report(rep)[-1]
        assert l["replayed"] == 20000 and l["errors"] == 0 and l["stream_depth"] == depth
        most, stream_most = max_in_flight(log)
        print(f"dbr_stream_depth={depth}: at most {most} records in flight, {stream_most} "
              "in one stream")
        assert most <= 128 and stream_most <= depth
        # 64 streams: depth 1 fills 64 of the 128, deeper streams fill them all
        assert most > (64 if depth > 1 else 32), f"only {most} records in flight"
        assert os.listdir(target) == []
    full = tmp_path / "full.trace"
    dbr_trace(full, records=20000, streams=64, full=True)
    got = {}
    for api, extra in (("sync", {}), ("io_uring", dict(iodepth=128, dbr_stream_depth=32))):
        r = run_fio(dbr(full, target, dbr_io_api=api, dbr_report_file=rep, **extra),
                    timeout=120).ok()
        l = dbr_report(rep)[-1]
        assert l["replayed"] == 20000 and l["errors"] == 0 and l["implicit_creates"] == 0
        assert not DBREPLAY.errors(r) and os.listdir(target) == []
        # the records per class; bytes differ where a read past the end of a
        # file meets a write to it in another stream, in another order
        got[api] = {c: v["n"] for c, v in l["classes"].items()}
        got[api + " writes"] = json_totals(r)["write"]
    assert got["sync"] == got["io_uring"]
    assert got["sync writes"] == got["io_uring writes"]


@pytest.mark.mounts
@pytest.mark.parametrize("engine", ENGINE_IDS)
def test_io_uring_iodepth_128(big_tmpfs, tmp_path, engine):
    """io_uring with 128 operations in flight: the same totals as the sync mode."""
    target = big_tmpfs / "t"
    target.mkdir()
    if engine == "dbreplay":
        return dbreplay_io_uring_iodepth_128(target, tmp_path)
    if engine == "smallfile":
        tree = dict(tree_files=3000, tree_fanout=16, tree_depth=1, tree_file_size_dist="uniform:1:9000",
                    bs="4k")
        run_fio(sf(target, tree_file_op="layout", rw="write", tree_io_api="io_uring", iodepth=128,
                   **tree), timeout=120).ok()
        sizes = sum(tree_files(target).values())
        r = run_fio(sf(target, tree_file_op="read", rw="randread", tree_io_api="io_uring", iodepth=128,
                       **tree), timeout=120).ok()
        assert r.job()["read"]["total_ios"] == 3000 and r.job()["read"]["io_bytes"] == sizes
        # a third absent, so that creates find room at once (probe_limit)
        r = run_fio(sf(target, tree_file_op="delete", rw="randread", tree_io_api="io_uring", iodepth=128,
                       number_ios=1000, **tree), timeout=120).ok()
        assert len(tree_files(target)) == 2000
        ops = tmp_path / "ops.jsonl"
        r = run_fio(sf(target, tree_file_op="read:40,stat:10,create:15,append:10,delete:25",
                       rw="randread", tree_io_api="io_uring", iodepth=128, number_ios=6000,
                       tree_opstats_file=ops, **tree), timeout=120).ok()
        assert json_totals(r)["total_err"] == 0 and not SMALLFILE.errors(r)
        st = read_opstats(ops)[0]["ops"]
        assert sum(v["ops"] for v in st.values()) == 6000
        files = tree_files(target)
        assert len(files) == 2000 + st["create"]["ops"] - st["delete"]["ops"]
    else:
        got = {}
        for api, depth in (("sync", 1), ("io_uring", 128)):
            ops = tmp_path / f"ops-{api}.jsonl"
            loc = target / api
            loc.mkdir()
            r = run_fio(pm(loc, pm_io_api=api, iodepth=depth, pm_number=500,
                           pm_transactions=3000, pm_opstats_file=ops), timeout=120).ok()
            line = read_opstats(ops)[0]
            assert line["max_in_flight"] <= depth
            got[api] = (json_totals(r), {k: v for k, v in line["postmark"].items()
                                         if k != "phase_ns"})
            assert os.listdir(loc) == []
        assert read_opstats(tmp_path / "ops-io_uring.jsonl")[0]["max_in_flight"] > 16
        assert got["io_uring"] == got["sync"]


def rss_during(args, out_dir) -> tuple:
    """Runs fio with --thread (the job is a thread of fio's one process) and
    samples its VmRSS every 10 ms. Returns ([(seconds since start, KiB)],
    fio's JSON)."""
    out, err = out_dir / "fio.json", out_dir / "fio.err"
    cmd = [str(FIO), "--output-format=json", "--thread"] + [str(a) for a in args]
    with open(out, "w") as o, open(err, "w") as e:
        p = subprocess.Popen(cmd, stdout=o, stderr=e, env=fio_env())
        t0, samples = time.monotonic(), []
        try:
            while p.poll() is None:
                try:
                    status = Path(f"/proc/{p.pid}/status").read_text()
                    samples.append((time.monotonic() - t0,
                                    int(re.search(r"VmRSS:\s+(\d+)", status).group(1))))
                except (OSError, AttributeError):
                    pass
                time.sleep(0.01)
                assert time.monotonic() - t0 < 120, "fio did not finish in 120 s"
        finally:
            if p.poll() is None:
                p.kill()
            p.wait()
    assert p.returncode == 0, err.read_text()
    return samples, json.loads(out.read_text())


@pytest.mark.mounts
@pytest.mark.nosan      # ASan's quarantine holds freed memory: RSS says nothing there
@pytest.mark.parametrize("io_api", ["sync", "io_uring"])
@pytest.mark.parametrize("engine", ENGINE_IDS)
def test_memory_does_not_grow_with_operations(big_tmpfs, tmp_path, engine, io_api):
    """fio's resident memory, sampled during a 3-second time-based run, is
    the same in its last third as in its first (within 256 KiB). fio
    allocates its io_us, buffers and latency histograms up front, the
    engines their per-job state at init (no per-file or per-operation
    state), so nothing should grow; a leak of 8 bytes per operation over the
    tens of thousands of operations between the two windows would exceed
    the bound (the run's operation count is checked)."""
    target = big_tmpfs / "t"
    target.mkdir()
    uring = dict(iodepth=32) if io_api == "io_uring" else {}
    if engine == "smallfile":
        tree = dict(tree_files=2000, tree_fanout=8, tree_depth=1, tree_file_size_dist="uniform:1:6000",
                    tree_maildir=1, tree_io_api=io_api, **uring)
        run_fio(sf(target, tree_file_op="layout", rw="write", **tree)).ok()
        run_fio(sf(target, tree_file_op="delete", rw="randread", number_ios=600, **tree)).ok()
        # deliveries replace present files, so the share of present files
        # settles (here near 1 - (10 - 5) / 20): creates and reads always
        # find a slot, where creates against deletes alone would drift
        args = sf(target, tree_file_op="read:50,stat:10,create:5,deliver:20,delete:10,append:5",
                  rw="randread", time_based=1, runtime=3, tree_append_size="uniform:1:3000", **tree)
        count = lambda j: sum(j["jobs"][0][d]["total_ios"] for d in ("read", "write", "trim"))
    elif engine == "dbreplay":
        # the trace over and over (dbr_loops=0): every loop resets the files
        # (the trace's creates undone, sizes restored) and reopens the trace
        trace = tmp_path / "db.trace"
        dbr_trace(trace, records=1000, streams=8)
        uring = dict(dbr_io_api="io_uring", iodepth=32, dbr_stream_depth=4) if uring else {}
        args = dbr(trace, target, dbr_loops=0, time_based=1, runtime=3,
                   dbr_report_file=tmp_path / "report.jsonl", **uring)
        count = lambda j: sum(j["jobs"][0][d]["total_ios"] for d in ("read", "write", "trim")) \
            + j["jobs"][0]["sync"]["lat_ns"]["N"]
    else:
        args = pm(target, pm_number=300, time_based=1, runtime=3, pm_size_low=100,
                  pm_size_high=6000, pm_io_api=io_api, **uring)
        count = lambda j: 2 * j["jobs"][0]["sync"]["total_ios"]  # 2 operations each
    samples, js = rss_during(args, tmp_path)
    ops = count(js)
    end = samples[-1][0]
    early = [kib for t, kib in samples if 0.25 * end <= t <= 0.4 * end]
    late = [kib for t, kib in samples if 0.75 * end <= t <= 0.9 * end]
    assert len(early) > 5 and len(late) > 5, samples
    between = ops * 0.45      # operations between the windows' middles, about
    growth = max(late) - max(early)
    print(f"{engine} {io_api}: {ops} operations, RSS early {max(early)} KiB, late {max(late)} KiB")
    assert between * 8 > 256 * 1024, f"only {ops} operations: too few to see a leak"
    assert growth < 256, (f"fio's RSS grew by {growth} KiB between the windows, over about "
                          f"{between:.0f} operations ({growth * 1024 / between:.1f} bytes each)")
    if engine == "dbreplay":
        loops = dbr_report(tmp_path / "report.jsonl")[0]["loops"]
        print(f"  {loops} loops")
        assert loops >= 10, f"only {loops} loops: too few to see a leak per loop"


# ---------------------------------------------------------------------------
# 7. valgrind memcheck
# ---------------------------------------------------------------------------

def valgrind_errors(xml_path) -> list:
    """[(kind, [object:function of each frame])] of every error valgrind reported."""
    root = ET.parse(xml_path).getroot()
    out = []
    for err in root.iter("error"):
        frames = [f"{(fr.findtext('obj') or '')}:{fr.findtext('fn') or '?'}"
                  for st in err.iter("stack") for fr in st.iter("frame")]
        out.append((err.findtext("kind"), frames))
    return out


@pytest.mark.nosan      # the plain engines under valgrind; the ASan build cannot run there
@pytest.mark.parametrize("engine", ENGINE_IDS)
def test_valgrind_memcheck_clean(tmp_path, engine):
    """A small job file per engine ([global] options, a section overriding
    some, a later one inheriting them; a few hundred operations) under
    valgrind's memcheck: no memory error anywhere, with the suppressions of
    tests/valgrind/fio.supp (fio and glibc only). Leaks: memcheck's XML mode
    always checks them; the only definite leaks with an engine frame allowed
    are the engines' string option values (engines/glue pack_store_str,
    called by fio's option parser: one per option given, kept until exit
    like fio's own option strings, which fio.supp suppresses). Growth during
    a run is the RSS test's business."""
    target = tmp_path / "t"
    target.mkdir()
    so = REPO / "build" / f"{engine}.so"     # the plain build, whatever PACK_ENGINE_DIR says
    ops = tmp_path / "ops"
    if engine == "smallfile":
        text = (f"[global]\nioengine=external:{so}\ntree_dir={target}\ntree_files=150\n"
                "tree_fanout=4\ntree_depth=1\ntree_maildir=1\ntree_file_size_dist=uniform:1:9000\n"
                f"tree_file_sync=fsync\ntree_dir_sync=1\ntree_opstats_file={ops}\n\n"
                f"[layout]\ntree_file_op=layout\nrw=write\ntree_dir={target}\ntree_files=150\n\n"
                "[thin]\nstonewall\ntree_file_op=delete\nrw=randread\nnumber_ios=50\n\n"
                f"[mix]\nstonewall\ntree_file_op={SF_MIX}\nrw=randread\nnumber_ios=300\n")
    elif engine == "dbreplay":
        # sync then io_uring (valgrind 3.19 knows io_uring_setup/enter), two
        # loops each (the files reset and the trace reopened in between)
        trace = tmp_path / "db.trace"
        dbr_trace(trace, records=600)
        text = (f"[global]\nioengine=external:{so}\ndbr_trace={trace}\ndbr_target={target}\n"
                f"dbr_report_file={ops}\ndbr_loops=2\n\n"
                f"[sync]\ndbr_target={target}\n\n"
                "[uring]\nstonewall\ndbr_io_api=io_uring\niodepth=16\ndbr_stream_depth=4\n")
    else:
        text = (f"[global]\nioengine=external:{so}\npm_location={target}\npm_number=60\n"
                "pm_transactions=200\npm_subdirectories=2\npm_fsync=transaction\n"
                f"pm_opstats_file={ops}\npm_report_file={tmp_path / 'report'}\n\n"
                f"[buffered]\npm_location={target}\npm_number=60\n\n"
                "[raw]\nstonewall\npm_buffering=0\npm_read_block=1000\npm_write_block=300\n")
    job = tmp_path / "j.fio"
    job.write_text(text)
    xml = tmp_path / "vg.xml"
    res = run_fio(["--thread"], jobfile=job, env={"LD_PRELOAD": None}, timeout=600,
                  prefix=["valgrind", "--tool=memcheck", "--error-exitcode=99",
                          "--leak-check=full", "--show-leak-kinds=definite",
                          "--errors-for-leak-kinds=definite", "--xml=yes",
                          f"--xml-file={xml}", f"--suppressions={VALGRIND_SUPP}"])
    errors = valgrind_errors(xml)
    memory = [e for e in errors if not e[0].startswith("Leak_")]
    assert not memory, f"memcheck errors: {memory[:3]}"
    leaks = [e for e in errors if e[0].startswith("Leak_")]
    ours = [e for e in leaks if any(f"/{engine}.so:" in f for f in e[1])]
    assert all(f"/{engine}.so:pack_store_str" in e[1][2] and "parse" in " ".join(e[1][3:])
               for e in ours), f"leaks in {engine}.so: {ours[:3]}"
    others = [e for e in leaks if e not in ours]
    assert not others, f"leaks to suppress in fio.supp if they are fio's or glibc's: {others[:3]}"
    # valgrind's exit status replaces fio's when it counted errors: look at the JSON too
    assert res.rc == (99 if ours else 0), res.describe()
    assert res.json is not None and all(j["error"] == 0 for j in res.jobs), res.describe()
    if engine == "dbreplay":
        st = dbr_report(ops)
        assert [(l["job"], l["io_api"], l["replayed"], l["errors"]) for l in st] == \
            [("sync", "sync", 1200, 0), ("uring", "io_uring", 1200, 0)], st
        assert os.listdir(target) == []
        return
    st = read_opstats(ops)
    assert len(st) == len(res.jobs) and all(v["errors"] == 0 for l in st
                                            for v in l["ops"].values()), st
    assert sum(v["ops"] for l in st for v in l["ops"].values()) >= 300
