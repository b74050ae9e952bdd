"""The replay's concurrency against the capture's: a read
waits for another stream's earlier write of its bytes, in every timing
mode, and a read that comes up short is said; io_uring's queue is as deep
as the capture's was unless the user sets iodepth; PostgreSQL 18's I/O
workers are streams of their own beside the backends, a serial replay of
them refused unless accepted, their missing link to the backends said."""
import pytest

from helpers.dbreplay import (DEPTH_TRACE, DOC_TRACE, _sorted_by_time, dbr_args, err_lines,
                              gen_trace, record_log, report, sha, write)
from helpers.fio import run_fio
from helpers.trees import snapshot


# PostgreSQL's relation cache file: written by one backend, read by another
# 0.6 ms later; the writer's write behind its own fsync of another file.
READ_AFTER_WRITE = """dbtrace 2
pagesize 4096
timeunit us
source hand-written: a file written by one stream, read 0.6 ms later by another
file 0 other - p2 global/pg_internal.init
file 1 log - p1 pg_wal/000000010000000000000001
stream 0 backend-1
stream 1 backend-2
0 0 0 create
0 0 1 create
10 0 1 write p0 4096 +5
20 0 1 fsync +5
30 0 0 write p0 8192 +10
630 1 0 read p0 8192 +3
end 6
"""


@pytest.mark.parametrize("api,timing", [("io_uring", "asap"), ("io_uring", "original"),
                                        ("sync", "asap")])
def test_a_read_waits_for_another_streams_earlier_write(tmp_path, api, timing):
    """A read of bytes another stream wrote earlier in the trace waits for
    that write, in every timing mode: it returns the bytes written. An asap
    io_uring replay let the reader go while the writer waited for its
    fsync: the read returned 0 bytes and counted as a success (7 reads of
    pg_internal.init in a PostgreSQL replay). Reads that do come up short
    are counted and said, NOT AS CAPTURED, never a silent success."""
    trace = write(tmp_path / "raw.trace", READ_AFTER_WRITE)
    rep, log = tmp_path / "r.jsonl", tmp_path / "rec.log"
    depth = {"iodepth": 8} if api == "io_uring" else {}
    res = run_fio(dbr_args(trace, dbr_io_api=api, dbr_timing=timing, dbr_report_file=rep,
                           dbr_record_log=log, **depth)).ok()
    recs = {r["line"]: r for r in record_log(log)}
    write_, read = recs[13], recs[14]
    assert (write_["op"], read["op"]) == ("write", "read")
    assert read["issue"] >= write_["done"] and read["bytes"] == 8192, (write_, read)
    assert res.json["jobs"][0]["read"]["io_bytes"] == 8192
    r = report(rep)[-1]
    assert r["short_reads"] == 0 and r["fidelity"] == [], r
    assert not any("NOT AS CAPTURED" in ln for ln in err_lines(res))


def test_short_reads_are_counted_and_said(tmp_path):
    """A read that returns fewer bytes than its record's (its file shorter in
    the replay than in the capture: here a read past what the trace ever
    wrote, which no ordering can fill) is counted in the report and said
    NOT AS CAPTURED with its trace line."""
    text = READ_AFTER_WRITE.replace("630 1 0 read p0 8192 +3", "630 1 0 read p1 8192 +3") \
        .replace("file 0 other - p2", "file 0 other - p3")
    trace = write(tmp_path / "short.trace", text)
    rep = tmp_path / "r.jsonl"
    res = run_fio(dbr_args(trace, dbr_io_api="io_uring", iodepth=8, dbr_report_file=rep)).ok()
    r = report(rep)[-1]
    note = ("1 reads returned fewer bytes than the trace's (4096 bytes fewer; the first: "
            "trace line 14): their file was shorter than in the capture when they ran")
    assert r["short_reads"] == 1 and r["fidelity"] == [note], r
    assert f"dbreplay: r: NOT AS CAPTURED: {note}" in err_lines(res)


def test_iodepth_defaults_to_what_the_capture_had_in_flight(tmp_path):
    """dbr_io_api=io_uring without iodepth: the replay's queue is as deep as
    the capture's was at its deepest, all streams together (5: the queued
    stream's 4 reads and the other's write), said in the report; fio's
    default of 1 held every such replay to one request (NOT AS CAPTURED),
    and the README's iodepth=32 a MariaDB capture's 1,024. An iodepth the
    user sets is kept, and said when it is too shallow."""
    text = _sorted_by_time(DEPTH_TRACE)
    trace = write(tmp_path / "d.trace", text)
    target = tmp_path / "t"
    target.mkdir()
    rep = tmp_path / "r.jsonl"
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_io_api="io_uring",
                           dbr_report_file=rep)).ok()
    r = report(rep)[0]
    assert (r["iodepth"], r["iodepth_from_trace"], r["captured_total_depth"]) == (5, True, 5), r
    assert r["replay_stream_depth"] == 4 and r["replayed"] == 150
    assert r["fidelity"] == [] and not any("NOT AS CAPTURED" in ln for ln in err_lines(res))
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_io_api="io_uring", iodepth=2,
                           dbr_report_file=rep)).ok()
    r = report(rep)[-1]
    assert (r["iodepth"], r["iodepth_from_trace"]) == (2, False), r
    note = "a stream of the trace had 4 requests in flight; iodepth=2 keeps the replay below that"
    assert r["fidelity"] == [note] and f"dbreplay: r: NOT AS CAPTURED: {note}" in err_lines(res)


# PostgreSQL 18, io_method=worker: a backend's own reads, and a scan's reads
# combined up to io_combine_limit (128 KiB) and issued by two I/O workers,
# the two in flight at once.
IOWORKER_TRACE = """dbtrace 2
pagesize 8192
timeunit us
source hand-written: PostgreSQL 18 io_method=worker, a scan read by two I/O workers
file 0 data p256 p256 base/5/16397
stream 0 backend-100
stream 1 ioworker-200
stream 2 ioworker-201
0 0 0 read p0 8192 +20
30 1 0 read p16 131072 +200
35 2 0 read p32 131072 +200
240 1 0 read p48 131072 +200
245 2 0 read p64 131072 +200
460 0 0 read p1 8192 +20
end 6
"""
IOWORKER_NOTE = ("the backends that waited for the 2 I/O-worker stream(s)' reads do not wait "
                 "for them: the capture does not link a worker's read to the backend that "
                 "asked for it")


def test_an_io_worker_trace_is_replayed_beside_the_backends(tmp_path):
    """io_uring: each I/O worker is a stream of its own, a combined read one
    request (128 KiB), the two workers' reads in flight together as in the
    capture (iodepth from the trace: 2); the replay says in one line, and in
    its report, that the backends do not wait for the workers' reads (the
    capture does not see which backend asked for one)."""
    trace = write(tmp_path / "w.trace", IOWORKER_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    rep, log = tmp_path / "r.jsonl", tmp_path / "rec.log"
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_io_api="io_uring",
                           dbr_report_file=rep, dbr_record_log=log)).ok()
    r = report(rep)[0]
    assert (r["ioworker_streams"], r["ioworker_reads_linked"], r["iodepth"]) == (2, False, 2), r
    assert r["fidelity"] == [IOWORKER_NOTE], r
    assert f"dbreplay: r: NOT AS CAPTURED: {IOWORKER_NOTE}" in err_lines(res)
    recs = record_log(log)
    assert sorted(x["bytes"] for x in recs if x["stream"] in (1, 2)) == [131072] * 4
    assert res.json["jobs"][0]["read"]["total_ios"] == 6


@pytest.mark.parametrize("opts,what", [({}, "dbr_io_api=sync"),
                                       ({"dbr_io_api": "io_uring", "iodepth": "1"}, "iodepth=1")])
def test_an_io_worker_trace_serialised_is_refused_unless_accepted(tmp_path, opts, what):
    """Options that replay one request at a time would put every backend
    behind every worker's read, which never happened: refused in one line,
    nothing written; dbr_accept_serial=1 takes it, said."""
    trace = write(tmp_path / "w.trace", IOWORKER_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_target=target, **opts))
    assert res.rc != 0
    lines = err_lines(res)
    assert len(lines) == 1 and "its 2 PostgreSQL I/O-worker stream(s) (ioworker-TID) read " \
        f"beside the backends; {what} replays one request at a time" in lines[0], lines
    assert snapshot(tmp_path, content=True) == before
    rep = tmp_path / "r.jsonl"
    run_fio(dbr_args(trace, dbr_target=target, dbr_accept_serial=1, dbr_report_file=rep,
                     **opts)).ok()
    assert report(rep)[0]["fidelity"] == [
        f"the trace's 2 I/O-worker stream(s) replayed one request at a time with the backends "
        f"({what}, dbr_accept_serial=1)", IOWORKER_NOTE]


@pytest.mark.parametrize("trace_kind,opts", [("gen", {}), ("doc", {}),
                                             ("gen", {"dbr_streams": "0,2,3"})])
def test_sync_asap_in_order_replays_what_the_scheduler_does(tmp_path, trace_kind, opts):
    """A sync asap replay with its window of one record hands records to
    the I/O in trace order without the scheduler (dbr_next_in_order); a
    wider window goes through it. Both replay the same records in the same
    order with the same results, loops and filters included: the record
    log but for its times, the report's counts, fio's JSON, the files."""
    trace = tmp_path / "t.trace"
    if trace_kind == "gen":
        gen_trace(trace, records=1500, streams=5, seed=11, fsync_every=3)
        files = ("base/1/1000", "pg_wal/000000010000000000000001")
    else:
        write(trace, DOC_TRACE)
        files = ("base/16384/16397", "pg_wal/000000010000000000000001")
    outs = {}
    for window in (None, 8):
        name = f"w{window}"
        target = tmp_path / name
        target.mkdir()
        extra = dict(opts, dbr_window=window) if window else dict(opts)
        res = run_fio(dbr_args(trace, dbr_target=target, dbr_keep=1, dbr_loops=2,
                               dbr_record_log=tmp_path / f"{name}.log",
                               dbr_report_file=tmp_path / f"{name}.jsonl", **extra)).ok()
        j = res.job()
        r = report(tmp_path / f"{name}.jsonl")[0]
        outs[window] = dict(
            log=[(x["loop"], x["line"], x["stream"], x["file"], x["op"], x["due"], x["bytes"],
                  x["err"]) for x in record_log(tmp_path / f"{name}.log")],
            fio={d: (j[d].get("total_ios"), j[d].get("io_bytes"), j[d]["lat_ns"]["N"])
                 for d in ("read", "write", "trim", "sync")},
            report={k: r[k] for k in ("replayed", "trace_records", "filtered", "skipped",
                                      "implicit_creates", "errors", "replay_stream_depth")
                    if k in r},
            classes={c: (v["n"], v.get("bytes"), v.get("errors"))
                     for c, v in r["classes"].items()},
            files=[sha(target / f) for f in files])
    assert outs[None]["log"] == sorted(outs[None]["log"], key=lambda x: (x[0], x[1]))
    assert len(outs[None]["log"]) > 10
    assert outs[None] == outs[8]
