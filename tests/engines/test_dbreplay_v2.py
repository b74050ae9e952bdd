"""The database page replay engine (engines/dbreplay/) on version 2
traces: each stream replayed at the depth it had in the capture, and the
files the capture saw opened with O_DIRECT opened so again. The replay
itself is tested in test_dbreplay.py.
"""
import os
import re

import pytest

from helpers.dbreplay import (DEPTH_TRACE, _sorted_by_time, dbr_args, err_lines, record_log,
                              report, write)
from helpers.fio import run_fio


# ---------------------------------------------------------------------------
# Version 2: captured depth and O_DIRECT files
# ---------------------------------------------------------------------------

def _captured_depths(text):
    """Per record (in trace order), the in-flight count its stream had in the
    trace when it was issued: written here independently of dbdepth.c."""
    recs = [ln.split() for ln in text.splitlines() if ln[:1].isdigit()]
    out = []
    for i, r in enumerate(recs):
        if not r[-1].startswith("+"):
            out.append(0)
            continue
        t = int(r[0])
        out.append(1 + sum(1 for q in recs[:i] if q[1] == r[1] and q[-1].startswith("+")
                           and int(q[0]) + int(q[-1][1:]) > t))
    return out


def test_captured_depth_replayed(tmp_path):
    """With completion times each stream is replayed at the depth it had: the
    queueing stream reaches 4 in flight and never more than the trace had at
    each record's issue, the synchronous one stays at 1; sync replay and a
    fixed dbr_stream_depth say in one line that they do not follow it."""
    text = _sorted_by_time(DEPTH_TRACE)
    trace = write(tmp_path / "d.trace", text)
    want = _captured_depths(text)
    assert max(want) == 4
    target = tmp_path / "t"
    target.mkdir()
    rep, log = tmp_path / "r.jsonl", tmp_path / "rec.log"
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_io_api="io_uring", iodepth=16,
                           dbr_report_file=rep, dbr_record_log=log)).ok()
    r = report(rep)[0]
    assert r["depth"] == "captured" and r["captured_depth"] == 4
    assert r["records_with_completion"] == 150 and r["replay_stream_depth"] == 4
    assert r["fidelity"] == [] and not any("NOT AS CAPTURED" in ln for ln in err_lines(res))
    # from the per-record log: at each issue, the stream's records in flight
    recs = record_log(log)
    lines = [ln for ln in text.splitlines()]
    first = next(i for i, ln in enumerate(lines) if ln[:1].isdigit()) + 1
    depth_of = {first + i: d for i, d in enumerate(want)}
    reached = {0: 0, 1: 0}
    for x in recs:
        inflight = sum(1 for y in recs if y["stream"] == x["stream"] and
                       y["issue"] <= x["issue"] < y["done"] and y is not x) + 1
        assert inflight <= depth_of[x["line"]], (x, inflight)
        reached[x["stream"]] = max(reached[x["stream"]], inflight)
    assert reached == {0: 4, 1: 1}
    # sync replay: one line, in the report too
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_report_file=rep)).ok()
    note = ("the trace's streams had up to 4 requests in flight (its completion times); "
            "dbr_io_api=sync replays one record at a time: use dbr_io_api=io_uring with "
            "iodepth>=4")
    assert report(rep)[-1]["fidelity"] == [note]
    assert f"dbreplay: {note}" in err_lines(res)
    assert f"dbreplay: r: NOT AS CAPTURED: {note}" in err_lines(res)
    # a fixed depth replaces it, said so
    run_fio(dbr_args(trace, dbr_target=target, dbr_io_api="io_uring", iodepth=16,
                     dbr_stream_depth=1, dbr_report_file=rep)).ok()
    r = report(rep)[-1]
    assert r["depth"] == "fixed" and r["replay_stream_depth"] == 1
    assert r["fidelity"] == ["dbr_stream_depth=1 replaces the depths the trace's completion "
                             "times give (1 to 4)"]
    # a version-1 trace (no completion times): dbr_stream_depth's default 1, as before
    v1 = write(tmp_path / "v1.trace", re.sub(r" \+\d+$", "", text, flags=re.M)
               .replace("dbtrace 2", "dbtrace 1"))
    run_fio(dbr_args(v1, dbr_target=target, dbr_io_api="io_uring", iodepth=16,
                     dbr_report_file=rep)).ok()
    r = report(rep)[-1]
    assert r["depth"] == "fixed" and r["captured_depth"] == 0 and r["replay_stream_depth"] == 1
    assert r["fidelity"] == []


DIRECT_TRACE = """dbtrace 2
pagesize 16384
timeunit none
source hand-written: an O_DIRECT tablespace with a small header read, a buffered log
file 0 data p64 p64 t.ibd direct
file 1 log p4 p4 log
stream 0 a
- 0 0 read 0 24
- 0 0 read p1 16384
- 0 0 write p2 16384
- 0 1 write 0 512
- 0 1 fdatasync
- 0 0 fdatasync
end 6
"""


def test_trace_direct_files_opened_with_o_direct(tmp_path):
    """A file the trace marks direct gets an O_DIRECT descriptor for its
    aligned reads and writes (its unaligned ones go buffered, counted); the
    other files stay buffered; direct=1 is not needed."""
    trace = write(tmp_path / "d.trace", DIRECT_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    rep, log = tmp_path / "r.jsonl", tmp_path / "strace.txt"
    run_fio(dbr_args(trace, dbr_target=target, dbr_report_file=rep),
            prefix=["strace", "-f", "-qq", "-e", "trace=openat,pread64,pwrite64",
                    "-o", str(log)]).ok()
    r = report(rep)[0]
    if not r["direct_files_replayed_direct"]:
        pytest.skip("the file system under the test's tmp_path has no O_DIRECT")
    assert r["dbr_direct"] == "trace" and r["direct_files"] == 1 and r["direct"] == 0
    assert r["direct_align"] in (512, 1024, 2048, 4096)
    assert r["buffered_records"] == 1 and r["errors"] == 0 and r["fidelity"] == []
    text = log.read_text()
    # each transfer, and whether its descriptor was opened with O_DIRECT
    # (descriptor numbers are reused: follow the opens in order)
    direct, io = {}, []
    for ln in text.splitlines():
        if "openat(" in ln and "= " in ln and not ln.rstrip().endswith(")"):
            direct[ln.split("= ")[-1].split()[0]] = "O_DIRECT" in ln
        elif "pread64(" in ln or "pwrite64(" in ln:
            fd = ln.split("(", 1)[1].split(",", 1)[0]
            size = int(ln.split('..., ')[1].split(",")[0]) if '..., ' in ln else \
                int(ln.rsplit(", ", 2)[1])
            io.append((ln.split()[1].split("(")[0], size, direct.get(fd)))
    # the layout's writes first, then the records: t.ibd's header read buffered,
    # its page read and write O_DIRECT, the log's write buffered
    assert io[-4:] == [("pread64", 24, False), ("pread64", 16384, True),
                       ("pwrite64", 16384, True), ("pwrite64", 512, False)], text
    # dbr_direct=off: no O_DIRECT, said in one line and in the report
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_report_file=rep, dbr_direct="off"),
                  prefix=["strace", "-f", "-qq", "-e", "trace=openat", "-o", str(log)]).ok()
    assert not re.search(r"O_DIRECT\b", log.read_text())
    note = ("1 file(s) the database opened with O_DIRECT are replayed through the page cache "
            "(dbr_direct=off)")
    assert report(rep)[-1]["fidelity"] == [note] and f"dbreplay: {note}" in err_lines(res)


def test_trace_direct_on_a_target_without_o_direct(tmp_path, ramfs_dir):
    """ramfs has no O_DIRECT: by default the replay is refused in one line
    before anything is written; dbr_direct=try replays through the page cache
    and says so in one line, the summary and the report."""
    trace = write(tmp_path / "d.trace", DIRECT_TRACE)
    rep = tmp_path / "r.jsonl"
    res = run_fio(dbr_args(trace, dbr_target=ramfs_dir, dbr_fill="sparse",
                           dbr_report_file=rep))
    assert res.rc != 0
    assert err_lines(res) == [
        f"dbreplay: {ramfs_dir} refuses O_DIRECT, which 1 file(s) of {trace} were captured "
        "with; replay on a file system that has it, or set dbr_direct=try (page cache, said "
        "in the report) or dbr_direct=off"], res.stderr
    assert os.listdir(ramfs_dir) == []
    res = run_fio(dbr_args(trace, dbr_target=ramfs_dir, dbr_fill="sparse",
                           dbr_report_file=rep, dbr_direct="try")).ok()
    note = (f"1 file(s) the database opened with O_DIRECT are replayed through the page cache: "
            f"{ramfs_dir} refuses O_DIRECT (dbr_direct=try)")
    r = report(rep)[-1]
    assert r["fidelity"] == [note] and not r["direct_files_replayed_direct"]
    assert r["replayed"] == 6 and r["errors"] == 0 and r["buffered_records"] == 0
    assert f"dbreplay: {note}" in err_lines(res)
    assert f"dbreplay: r: NOT AS CAPTURED: {note}" in err_lines(res)
    assert os.listdir(ramfs_dir) == []
