"""The database page replay engine (engines/dbreplay/), run by the real fio.

Every test replays a trace written for it (docs/dbtrace-format.md;
tests/helpers/dbreplay.py) and checks what fio reported, the engine's
per-class report (dbr_report_file), its per-record log (dbr_record_log:
issue and completion times, which prove the ordering rules) and what is on
disk. What the engine refuses and never touches is in
test_dbreplay_refusals.py, version 2 traces in test_dbreplay_v2.py.
"""
import gzip
import os
import subprocess
from pathlib import Path

import pytest

from helpers.dbreplay import (DOC_TRACE, PAGE, dbr_args, err_lines, gen_trace, record_log, report,
                              sha, write)
from helpers.fio import DBR_ENGINE, fio_has, needs_root, run_fio
from helpers.trees import snapshot


# ---------------------------------------------------------------------------
# What is replayed, and how fio and the engine report it
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("api", ["sync", "io_uring"])
def test_doc_trace_counts_report_and_disk(tmp_path, api):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "target"
    target.mkdir()
    rep = tmp_path / "rep.jsonl"
    extra = {"dbr_io_api": api, "iodepth": 4} if api == "io_uring" else {}
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_keep=1, dbr_report_file=rep,
                           **extra)).ok()
    j = res.job()
    assert j["error"] == 0
    # every counter of fio's JSON, on every fio: reads, writes, and in trim the
    # trim, truncate, create and unlink (bytes: the trim's); no short or
    # dropped I/O (fio up to 3.42 wrote fdatasync and sync_file_range
    # io_us past total_io_u[] into short_io_u[]: they are DDIR_SYNC now)
    for ddir, ios, nbytes in (("read", 2, 2 * PAGE), ("write", 3, 2 * PAGE + 131072),
                              ("trim", 4, 24 * PAGE)):
        d = j[ddir]
        assert (d["total_ios"], d["io_bytes"], d["short_ios"], d["drop_ios"]) == \
            (ios, nbytes, 0, 0), (ddir, d)
        assert d["clat_ns"]["N"] == d["lat_ns"]["N"] == ios, ddir
    # sync: fsync x3 (a file's, two directories'), fdatasync, sync_file_range
    assert j["sync"]["total_ios"] == 5 and j["sync"]["lat_ns"]["N"] == 5
    if fio_has("CLAT_PRIO"):
        assert sorted(p["prio"] for p in j["trim"]["prios"]) == [1, 2, 3, 4]
        # write prios: one per role (data=1, log=2, temp=5)
        assert {p["prio"]: p["clat_ns"]["N"] for p in j["write"]["prios"]} == {1: 1, 2: 1, 5: 1}
    else:   # said once at init, and the rest is the same
        assert "prios" not in j["write"] and "prios" not in j["trim"]
        assert res.lacks == [
            f"dbreplay: {res.json['fio version']} has no per-priority statistics (fio 3.30 "
            "and later): fio's JSON has no \"prios\" split by file role and trim kind; "
            "the engine's report has them"]

    r = report(rep)[0]
    assert r["replayed"] == r["trace_records"] == 14
    assert r["loops"] == 1 and r["mapping"] == "files"
    cls = r["classes"]
    assert cls["data read"]["n"] == 2 and cls["data read"]["bytes"] == 2 * PAGE
    assert cls["log fdatasync"]["n"] == 1
    assert cls["directory fsync"]["n"] == 2
    assert cls["temp create"]["n"] == cls["temp unlink"]["n"] == 1
    assert all(c["errors"] == 0 for c in cls.values())
    assert r["trace_duration_ns"] == 1300 * 1000

    # on disk: the state after the trace (dbr_keep=1)
    assert (target / "base/16384/16397").stat().st_size == 1000 * PAGE
    assert (target / "pg_wal/000000010000000000000001").stat().st_size == PAGE
    assert not (target / "base/pgsql_tmp/pgsql_tmp4242.0").exists()
    # the punched hole: p1000.. was beyond the truncate, and the file was laid out with data
    st = (target / "base/16384/16397").stat()
    assert st.st_blocks * 512 >= 10 * PAGE
    manifest = (target / ".fio-dbreplay").read_text().splitlines()
    assert "base/16384/16397" in manifest and "pg_wal" in manifest

    # the next run starts from the trace's starting state again, then removes everything
    res = run_fio(dbr_args(trace, dbr_target=target, **extra)).ok()
    assert res.job()["write"]["total_ios"] == 3
    assert list(target.iterdir()) == []


def test_report_line_is_whole_with_a_long_job_name(tmp_path):
    """The report line is built by engines/lib/jsonl: a job name longer
    than the old fixed buffer (512 bytes, escaped) is written whole, quotes
    and backslashes escaped, and the line stays one JSON object."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "target"
    target.mkdir()
    rep = tmp_path / "rep.jsonl"
    name = 'a "quoted" \\ name ' + "x" * 900
    run_fio(dbr_args(trace, name=name, dbr_target=target, dbr_report_file=rep)).ok()
    [r] = report(rep)
    assert r["engine"] == "dbreplay" and r["job"] == name and r["subjob"] == 0
    assert r["replayed"] == r["trace_records"] == 14
    assert r["classes"]["data read"]["n"] == 2 and "p99.9_ns" in r["lag"]


def test_io_uring_replays_the_same_as_sync(tmp_path):
    trace = tmp_path / "g.trace"
    counts = gen_trace(trace, records=3000, streams=6, seed=7)
    outs = {}
    for api in ("sync", "io_uring"):
        target = tmp_path / api
        target.mkdir()
        extra = {"dbr_io_api": "io_uring", "iodepth": 16, "dbr_stream_depth": 4} \
            if api == "io_uring" else {}
        res = run_fio(dbr_args(trace, dbr_target=target, dbr_keep=1,
                               dbr_report_file=tmp_path / f"{api}.jsonl", **extra)).ok()
        j = res.job()
        outs[api] = (j["read"]["total_ios"], j["read"]["io_bytes"], j["write"]["total_ios"],
                     j["write"]["io_bytes"], j["sync"]["lat_ns"]["N"])
        assert j["read"]["total_ios"] == counts["read"]
        assert j["write"]["io_bytes"] == counts["write"] * PAGE
        assert j["sync"]["lat_ns"]["N"] == counts["fsync"] + counts["fdatasync"]
        # fio's submit histogram counts the engine's submissions: none is empty
        assert j["iodepth_submit"]["0"] == 0, (api, j["iodepth_submit"])
        r = report(tmp_path / f"{api}.jsonl")[0]
        assert r["replayed"] == 3000
    assert outs["sync"] == outs["io_uring"]
    for f in ("base/1/1000", "pg_wal/000000010000000000000001"):
        assert sha(tmp_path / "sync" / f) == sha(tmp_path / "io_uring" / f)


def test_streams_run_concurrently_and_fsync_is_a_barrier(tmp_path):
    """io_uring: different streams overlap, a stream's reads overlap up to
    dbr_stream_depth, and no fsync/fdatasync is issued before every earlier
    record of its stream completed, nor any later one before it completed."""
    trace = tmp_path / "g.trace"
    gen_trace(trace, records=4000, streams=8, seed=3, fsync_every=4)
    log = tmp_path / "records.log"
    run_fio(dbr_args(trace, dbr_io_api="io_uring", iodepth=32, dbr_stream_depth=4,
                     dbr_record_log=log)).ok()
    recs = record_log(log)
    assert len(recs) == 4000
    by_stream = {}
    for r in sorted(recs, key=lambda r: r["line"]):
        by_stream.setdefault(r["stream"], []).append(r)
    barriers = 0
    for s, rs in by_stream.items():
        for i, r in enumerate(rs):
            if r["op"] in ("fsync", "fdatasync"):
                barriers += 1
                assert all(p["done"] <= r["issue"] for p in rs[:i]), \
                    f"stream {s}: line {r['line']} issued before an earlier record completed"
                assert all(n["issue"] >= r["done"] for n in rs[i + 1:]), \
                    f"stream {s}: a record after line {r['line']} issued before it completed"
            # a stream issues in its own order
            if i:
                assert rs[i - 1]["issue"] <= r["issue"]
    assert barriers > 50
    # concurrency happened: some record was issued while another stream's was in flight
    events = sorted(recs, key=lambda r: r["issue"])
    overlap_streams = sum(1 for a, b in zip(events, events[1:])
                          if b["issue"] < a["done"] and a["stream"] != b["stream"])
    assert overlap_streams > 100
    # and within a backend (depth 4) reads overlapped
    same = 0
    for rs in by_stream.values():
        for a, b in zip(rs, rs[1:]):
            if a["op"] == b["op"] == "read" and b["issue"] < a["done"]:
                same += 1
    assert same > 10


def test_namespace_operations_are_ordered_across_streams(tmp_path):
    """A file created by one stream and written by another: the write waits for
    the create, the unlink for the write, at any depth."""
    lines = ["dbtrace 1", "pagesize 4096", "timeunit none", "source test",
             "file 0 data 0 p64 d/busy", "file 1 temp - p4 d/tmp1", "file 2 directory - 0 sub",
             "file 3 temp - p4 sub/t"]
    for i in range(4):
        lines.append(f"stream {i} s{i}")
    n = 0
    for k in range(40):
        # stream 0 keeps the ring busy; 1 creates, 2 writes, 3 unlinks
        for j in range(4):
            lines.append(f"- 0 0 write p{(k * 4 + j) % 64} 4096")
            n += 1
        lines += ["- 1 1 create", "- 2 1 write 0 4096", "- 3 1 read 0 4096", "- 1 1 unlink",
                  "- 1 2 create", "- 2 3 create", "- 3 3 write 0 4096", "- 3 3 unlink",
                  "- 1 2 unlink"]
        n += 9
    lines.append(f"end {n}")
    trace = write(tmp_path / "ns.trace", "\n".join(lines) + "\n")
    log = tmp_path / "records.log"
    res = run_fio(dbr_args(trace, dbr_io_api="io_uring", iodepth=16, dbr_stream_depth=4,
                           dbr_record_log=log, dbr_report_file=tmp_path / "r.jsonl")).ok()
    assert res.job()["error"] == 0
    r = report(tmp_path / "r.jsonl")[0]
    assert r["implicit_creates"] == 0
    assert all(c["errors"] == 0 for c in r["classes"].values())
    recs = sorted(record_log(log), key=lambda r: r["line"])
    assert all(r["err"] == 0 for r in recs)
    for i, r in enumerate(recs):
        if r["op"] in ("create", "unlink"):
            for p in recs[:i]:
                if p["file"] == r["file"] or r["file"] == 2:
                    assert p["done"] <= r["issue"], (p, r)
            for q in recs[i + 1:]:
                if q["file"] == r["file"] or r["file"] == 2:
                    assert q["issue"] >= r["done"], (r, q)


def test_original_and_scaled_timing(tmp_path):
    """Records are never issued before their time; the replay lasts as long as
    the trace (scaled by dbr_speed), and lag is reported."""
    lines = ["dbtrace 1", "pagesize 4096", "timeunit ms", "source test",
             "file 0 data p16 p16 db", "stream 0 a", "stream 1 b"]
    for i in range(31):
        lines.append(f"{5000 + 10 * i} {i % 2} 0 {'read' if i % 3 else 'write'} p{i % 16} 4096")
    lines.append("end 31")
    trace = write(tmp_path / "t.trace", "\n".join(lines) + "\n")
    for timing, speed, span in (("original", None, 0.300), ("scaled", 3, 0.100)):
        log = tmp_path / f"{timing}.log"
        rep = tmp_path / f"{timing}.jsonl"
        opts = {"dbr_timing": timing, "dbr_record_log": log, "dbr_report_file": rep}
        if speed:
            opts["dbr_speed"] = speed
        run_fio(dbr_args(trace, **opts)).ok()
        recs = record_log(log)
        assert len(recs) == 31
        for r in recs:
            assert r["issue"] >= r["due"], r
        assert max(r["due"] for r in recs) == round(span * 1e9)
        r = report(rep)[0]
        assert r["trace_duration_ns"] == round(span * 1e9)
        assert r["replay_duration_ns"] >= span * 1e9
        assert r["lag"]["n"] == 31
        assert r["timing"] == timing


def test_asap_ignores_times(tmp_path):
    lines = ["dbtrace 1", "pagesize 4096", "timeunit ms", "source test",
             "file 0 data p16 p16 db", "stream 0 a", "0 0 0 read p1 4096",
             "100000 0 0 read p2 4096", "end 2"]   # 100 s apart
    trace = write(tmp_path / "t.trace", "\n".join(lines) + "\n")
    res = run_fio(dbr_args(trace), timeout=30).ok()
    assert res.job()["read"]["total_ios"] == 2
    assert res.elapsed < 20


@pytest.mark.parametrize("api", ["sync", "io_uring"])
def test_reader_thread_replays_what_the_replaying_thread_would(tmp_path, api):
    """dbr_reader_thread=1 (a thread parses ahead) and 0 (the replaying
    thread parses): the same records in the same order, over loops and a
    filter, from a gzip trace longer than the reader's ring, and the same
    bytes on disk."""
    trace = tmp_path / "g.trace"
    counts = gen_trace(trace, records=9000, streams=5, seed=11)
    subprocess.run(["gzip", "-k", str(trace)], check=True)
    logs = {}
    for rt in (0, 1):
        target = tmp_path / f"t{rt}"
        target.mkdir()
        extra = {"dbr_io_api": "io_uring", "iodepth": 8} if api == "io_uring" else {}
        res = run_fio(dbr_args(f"{trace}.gz", dbr_target=target, dbr_keep=1, dbr_loops=2,
                               dbr_streams="!checkpointer", dbr_reader_thread=rt,
                               dbr_record_log=tmp_path / f"{rt}.log",
                               dbr_report_file=tmp_path / f"{rt}.jsonl", **extra)).ok()
        j = res.job()
        assert j["error"] == 0
        recs = record_log(tmp_path / f"{rt}.log")
        r = report(tmp_path / f"{rt}.jsonl")[0]
        assert r["loops"] == 2 and r["replayed"] == len(recs) and r["filtered"] > 0
        assert all(x["err"] == 0 for x in recs)
        assert j["read"]["total_ios"] == 2 * counts["read"]
        # in sync mode the issue order is the trace's; with io_uring compare per stream
        key = (lambda x: (x["loop"], x["line"])) if api == "io_uring" else None
        logs[rt] = [(x["loop"], x["line"], x["stream"], x["op"], x["bytes"])
                    for x in (sorted(recs, key=key) if key else recs)]
    assert logs[0] == logs[1]
    for f in ("base/1/1000", "pg_wal/000000010000000000000001"):
        assert sha(tmp_path / "t0" / f) == sha(tmp_path / "t1" / f)


def test_loops_reset_the_files(tmp_path):
    """A file the trace creates (size '-') and never removes: each loop starts
    with it absent again, so every create really creates."""
    lines = ["dbtrace 1", "pagesize 4096", "timeunit none", "source test",
             "file 0 data p4 p8 db", "file 1 log - p4 newlog", "file 2 directory - 0 newdir",
             "stream 0 a",
             "- 0 2 create", "- 0 1 create", "- 0 1 write 0 4096", "- 0 0 write p6 4096",
             "- 0 0 truncate p5", "end 5"]
    trace = write(tmp_path / "l.trace", "\n".join(lines) + "\n")
    target = tmp_path / "t"
    target.mkdir()
    rep = tmp_path / "r.jsonl"
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_loops=3, dbr_keep=1,
                           dbr_report_file=rep)).ok()
    j = res.job()
    assert j["error"] == 0 and j["write"]["total_ios"] == 6
    r = report(rep)[0]
    assert r["loops"] == 3 and r["replayed"] == 15 and r["implicit_creates"] == 0
    assert all(c["errors"] == 0 for c in r["classes"].values())
    assert (target / "db").stat().st_size == 5 * 4096
    assert (target / "newlog").stat().st_size == 4096


def test_time_based_loops_until_runtime(tmp_path):
    trace = tmp_path / "g.trace"
    gen_trace(trace, records=500, streams=3)
    rep = tmp_path / "r.jsonl"
    res = run_fio(dbr_args(trace, dbr_loops=0, time_based=1, runtime=1,
                           dbr_report_file=rep)).ok()
    r = report(rep)[0]
    assert r["loops"] >= 2
    assert r["replayed"] >= 1000
    assert res.job()["read"]["total_ios"] + res.job()["write"]["total_ios"] > 0


def test_filters(tmp_path):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    cases = [({"dbr_ops": "read"}, 2), ({"dbr_ops": "!read,!trim"}, 11),
             ({"dbr_ops": "sync"}, 4), ({"dbr_streams": "walwriter"}, 2),
             ({"dbr_streams": "0-1"}, 7), ({"dbr_files": "log,temp"}, 5),
             ({"dbr_files": "!directory", "dbr_ops": "namespace"}, 3)]
    for opts, n in cases:
        rep = tmp_path / "r.jsonl"
        if rep.exists():
            rep.unlink()
        run_fio(dbr_args(trace, dbr_report_file=rep, **opts)).ok()
        r = report(rep)[0]
        assert r["replayed"] == n, opts
        assert r["filtered"] == 14 - n, opts


def test_numjobs_each_job_its_own_directory(tmp_path):
    trace = tmp_path / "g.trace"
    gen_trace(trace, records=400, streams=3)
    target = tmp_path / "t"
    target.mkdir()
    res = run_fio(dbr_args(trace, dbr_target=target, numjobs=3, dbr_keep=1,
                           group_reporting=1)).ok()
    assert res.job()["error"] == 0
    dirs = sorted(p.name for p in target.iterdir())
    assert dirs == ["r.0", "r.1", "r.2"]
    for d in dirs:
        assert (target / d / "base/1/1000").stat().st_size == 256 * PAGE
    # without dbr_keep the run removes what it made, its job directories too,
    # but not a job directory holding a user's file
    (target / "r.1" / "mine").write_text("user data")
    run_fio(dbr_args(trace, dbr_target=target, numjobs=3, group_reporting=1)).ok()
    assert sorted(p.name for p in target.iterdir()) == ["r.1"]
    assert [p.name for p in (target / "r.1").iterdir()] == ["mine"]
    (target / "r.1" / "mine").unlink()
    (target / "r.1").rmdir()
    run_fio(dbr_args(trace, dbr_target=target, numjobs=2, group_reporting=1)).ok()
    assert list(target.iterdir()) == []
    # a job directory the user made (empty) stays, through a kept run and a
    # removing one; the one the engine made goes
    (target / "r.0").mkdir()
    run_fio(dbr_args(trace, dbr_target=target, numjobs=2, dbr_keep=1, group_reporting=1)).ok()
    run_fio(dbr_args(trace, dbr_target=target, numjobs=2, group_reporting=1)).ok()
    assert [p.name for p in target.iterdir()] == ["r.0"]
    assert list((target / "r.0").iterdir()) == []


# ---------------------------------------------------------------------------
# Packed mapping: one file or block device
# ---------------------------------------------------------------------------

def test_packed_file_regions(tmp_path):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    dev = tmp_path / "packed.img"
    rep = tmp_path / "r.jsonl"
    res = run_fio(dbr_args(trace, dbr_device=dev, dbr_keep=1, dbr_report_file=rep,
                           dbr_align="1m")).ok()
    r = report(rep)[0]
    assert r["mapping"] == "packed"
    # create, unlink, truncate and the directory fsyncs have no place on a device
    assert r["skipped"] == 5
    assert res.job()["write"]["io_bytes"] == 2 * PAGE + 131072
    # regions: data p1024 = 8 MiB, log 16 MiB, temp p16 -> 1 MiB: 25 MiB
    assert dev.stat().st_size == 25 << 20
    assert Path(str(dev) + ".fio-dbreplay").exists()
    # without dbr_keep the next run removes the file and its sidecar
    run_fio(dbr_args(trace, dbr_device=dev)).ok()
    assert not dev.exists() and not Path(str(dev) + ".fio-dbreplay").exists()


def test_packed_refuses_a_foreign_file(tmp_path):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    dev = tmp_path / "users.img"
    dev.write_bytes(b"precious" * 1000)
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_device=dev))
    assert res.rc != 0
    assert "was not created by dbreplay" in res.stderr
    assert snapshot(tmp_path, content=True) == before


@needs_root
def test_packed_block_device_needs_confirmation_and_room(tmp_path):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    img = tmp_path / "loop.img"
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    p = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True)
    if p.returncode:
        pytest.skip(f"no loop device: {p.stderr.strip()}")
    loop = p.stdout.strip()
    try:
        res = run_fio(dbr_args(trace, dbr_device=loop))
        assert res.rc != 0 and "dbr_overwrite_device=1" in res.stderr
        assert len(err_lines(res)) == 1
        rep = tmp_path / "r.jsonl"
        run_fio(dbr_args(trace, dbr_device=loop, dbr_overwrite_device=1,
                         dbr_report_file=rep)).ok()
        assert report(rep)[0]["replayed"] == 14
        # 1 MiB alignment: 25 MiB fit in 32; 64 MiB alignment does not
        res = run_fio(dbr_args(trace, dbr_device=loop, dbr_overwrite_device=1,
                               dbr_align="64m"))
        assert res.rc != 0 and "the trace needs" in res.stderr
    finally:
        subprocess.run(["losetup", "-d", loop])


# ---------------------------------------------------------------------------
# The shipped jobs replay the shipped traces
# ---------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
DBR_JOBS = sorted(REPO.glob("jobs/dbreplay-*.fio")) + \
    [REPO / "jobs/000-mtron-isp/mysql-load.fio", REPO / "jobs/000-mtron-isp/mysql-dump.fio"]


def trace_records(path):
    opener = gzip.open if Path(path).read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        for line in f:
            if line.startswith("end "):
                return int(line.split()[1])
    raise AssertionError(f"{path}: no end line")


@pytest.mark.parametrize("job", DBR_JOBS, ids=[p.name for p in DBR_JOBS])
def test_shipped_job_replays_its_trace(job, tmp_path):
    text = job.read_text().replace("external:${FIO_PACK_ENGINES}/",
                                   f"external:{DBR_ENGINE.parent}/")
    traces = [l.split("=", 1)[1] for l in text.splitlines() if l.startswith("dbr_trace=")]
    assert len(traces) == 1 and (REPO / traces[0]).is_file(), traces
    n = trace_records(REPO / traces[0])
    copy = tmp_path / job.name
    copy.write_text(text)
    target = tmp_path / "target"
    target.mkdir()
    rep = tmp_path / "r.jsonl"
    env = {"DBR_DIR": str(target), "FIO_DIR": str(target), "DBR_REPORT": str(rep),
           "TMPDIR": str(tmp_path)}
    res = run_fio(jobfile=copy, cwd=REPO, env=env, timeout=300).ok()
    for j in res.jobs:
        assert j["error"] == 0, j["jobname"]
    lines = report(rep)
    assert len(lines) == len(res.jobs)
    for r in lines:
        assert r["replayed"] == r["trace_records"] == n
        assert r["errors"] == 0 and r["implicit_creates"] == 0
    assert list(target.iterdir()) == [], "the job left files behind"


def test_direct_io_aligned_records_direct_others_buffered(tmp_path):
    """direct=1: aligned reads and writes go through an O_DIRECT descriptor,
    unaligned ones (a database's small header reads) through a buffered one of
    the same file, as InnoDB with O_DIRECT does."""
    trace = write(tmp_path / "d.trace", "dbtrace 1\npagesize 16384\ntimeunit none\nsource t\n"
                  "file 0 data p64 p64 t.ibd\nstream 0 a\n"
                  "- 0 0 read 0 24\n- 0 0 read p1 16384\n- 0 0 write p2 16384\n"
                  "- 0 0 write 100 7\n- 0 0 fdatasync\nend 5\n")
    target = tmp_path / "t"
    target.mkdir()
    rep = tmp_path / "r.jsonl"
    log = tmp_path / "strace.txt"
    res = run_fio(dbr_args(trace, dbr_target=target, direct=1, dbr_report_file=rep),
                  prefix=["strace", "-f", "-qq", "-e", "trace=openat,pread64,pwrite64",
                          "-o", str(log)]).ok()
    r = report(rep)[0]
    if r["direct"] == 0:
        pytest.skip("the file system under the test's tmp_path has no O_DIRECT")
    assert r["buffered_records"] == 2 and r["errors"] == 0
    assert res.job()["read"]["io_bytes"] == 24 + 16384
    text = log.read_text()
    assert "O_DIRECT" in text
    # the page-sized transfers were issued on the O_DIRECT descriptor, the small ones
    # not (descriptor numbers are reused, after the target's O_DIRECT probe too:
    # follow the opens in order)
    direct, big, small = {}, [], []
    for l in text.splitlines():
        if "openat(" in l and "= " in l and not l.rstrip().endswith(")"):
            direct[l.split("= ")[-1].split()[0]] = "O_DIRECT" in l
        elif "pread64(" in l or "pwrite64(" in l:
            on_direct = direct.get(l.split("(", 1)[1].split(",", 1)[0])
            if ", 16384, " in l:
                big.append(on_direct)
            elif ", 24, " in l or ", 7, " in l:
                small.append(on_direct)
    assert big == [True, True] and small == [False, False], text


def test_fresh_file_system_root_is_a_target(tmp_path, fresh_ext4):
    """A new disk's mount point (mkfs's empty lost+found at its root) is a
    usable replay target; lost+found is never touched."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    lf = fresh_ext4 / "lost+found"
    before = (lf.stat().st_ino, lf.stat().st_mtime_ns, os.listdir(lf))
    rep = tmp_path / "rep.jsonl"
    run_fio(dbr_args(trace, dbr_target=fresh_ext4, dbr_report_file=rep)).ok()
    assert report(rep)[0]["replayed"] == 14
    assert sorted(os.listdir(fresh_ext4)) == ["lost+found"]
    assert (lf.stat().st_ino, lf.stat().st_mtime_ns, os.listdir(lf)) == before
