"""The database page replay engine (engines/dbreplay/): what it refuses,
with one line, a non-zero exit and nothing written, and what it never
touches: a user's files, a symlinked parent, a forged manifest, a target
too small. The replay itself is tested in test_dbreplay.py.
"""
import gzip
import os
import subprocess
import time

import pytest

from helpers.dbreplay import DOC_TRACE, dbr_args, err_lines, report, write
from helpers.fio import DBR_ENGINE, needs_root, run_fio, start_fio_background
from helpers.procs import kill_group
from helpers.trees import snapshot


# ---------------------------------------------------------------------------
# Bad input: one line, non-zero exit, nothing written
# ---------------------------------------------------------------------------

def _bad_traces():
    good = DOC_TRACE
    return {
        "malformed": (good.replace("1012 0 0 read p7 8192", "1012 0 0 read p7"),
                      "line 14"),
        "unknown-op": (good.replace("1012 0 0 read p7 8192", "1012 0 0 frobnicate p7 8192"),
                       "line 14"),
        "undeclared-file": (good.replace("1012 0 0 read", "1012 0 9 read"), "undeclared file 9"),
        "undeclared-stream": (good.replace("1012 0 0 read", "1012 7 0 read"), "line 14"),
        "escape": (good.replace("base/pgsql_tmp/pgsql_tmp4242.0", "../../etc/x"), ".."),
        "negative": (good.replace("read p7 8192", "read -8192 8192"), "line 14"),
        "overflow": (good.replace("read p7 8192", "read 9223372036854775807 8192"), "line 14"),
        "no-end": (good.replace("end 14\n", ""), "end"),
    }


@pytest.mark.parametrize("case", sorted(_bad_traces()))
def test_bad_trace_one_line_nothing_written(tmp_path, case):
    text, want = _bad_traces()[case]
    trace = write(tmp_path / "bad.trace", text)
    target = tmp_path / "t"
    target.mkdir()
    (target / "users-file").write_text("keep me")
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_target=target))
    assert res.rc != 0
    lines = err_lines(res)
    assert len(lines) == 1, res.stderr
    assert want in lines[0] and "bad.trace" in lines[0]
    assert snapshot(tmp_path, content=True) == before


def test_truncated_gzip(tmp_path):
    data = gzip.compress(DOC_TRACE.encode())
    trace = tmp_path / "cut.trace.gz"
    trace.write_bytes(data[:len(data) - 12])
    target = tmp_path / "t"
    target.mkdir()
    res = run_fio(dbr_args(trace, dbr_target=target))
    assert res.rc != 0
    assert "gzip" in " ".join(err_lines(res))
    assert list(target.iterdir()) == []
    # the whole gzip replays
    trace.write_bytes(data)
    run_fio(dbr_args(trace, dbr_target=target)).ok()


@pytest.mark.parametrize("opts,want", [
    ({}, "dbr_trace= is required"),
    ({"dbr_trace": "/nonexistent/x.trace"}, "/nonexistent/x.trace"),
    ({"dbr_timing": "scaled", "dbr_speed": "0"}, "dbr_speed=0"),
    ({"dbr_speed": "2"}, "dbr_speed= needs dbr_timing=scaled"),
    ({"iodepth": "4"}, "iodepth must be 1"),
    ({"size": "1m"}, "size= and io_size="),
    ({"dbr_device": "/tmp/x.img", "dbr_target": "/tmp"}, "exclude each other"),
    ({"dbr_ops": "read,frob"}, "dbr_ops: no operation 'frob'"),
    ({"dbr_streams": "nosuch"}, "dbr_streams: no stream 'nosuch'"),
    ({"dbr_files": "42"}, "dbr_files: no file '42'"),
    ({"dbr_ops": "truncate", "dbr_files": "log"}, "no record is left"),
    ({"dbr_stream_depth": "0"}, "dbr_stream_depth=0 is out of range"),
    ({"dbr_stream_depth": "capturd"}, "dbr_stream_depth=capturd is not 'captured' or a whole number"),
    ({"dbr_loops": "0"}, "needs time_based"),
    ({"loops": "2"}, "use dbr_loops="),
    ({"dbr_timing": "fast"}, "dbr_timing=fast is not asap, original or scaled"),
    ({"dbr_io_api": "aio"}, "dbr_io_api=aio is not sync or io_uring"),
    ({"dbr_overwrite_device": "yes"}, "dbr_overwrite_device=yes is not a whole number (0..1)"),
    ({"dbr_align": "3k", "dbr_device": "/tmp/fio-pack-never.img"}, "dbr_align=3k"),
    ({"dbr_target": "NOTDIR"}, "not a directory"),
    ({"dbr_target": "MISSING"}, "No such file"),
])
def test_bad_options(tmp_path, opts, want):
    trace = write(tmp_path / "doc.trace", DOC_TRACE.replace("1040 1 1 write 0 8192",
                                                           "1040 1 1 write 100 8192"))
    (tmp_path / "file").write_text("x")
    opts = dict(opts)
    if "dbr_trace" not in opts and opts != {}:
        opts["dbr_trace"] = trace
    if opts.get("dbr_target") == "NOTDIR":
        opts["dbr_target"] = tmp_path / "file"
    if opts.get("dbr_target") == "MISSING":
        opts["dbr_target"] = tmp_path / "missing"
    before = snapshot(tmp_path, content=True)
    args = ["--name=r", f"--ioengine=external:{DBR_ENGINE}"] + \
        [f"--{k}={v}" for k, v in opts.items()]
    res = run_fio(args)
    assert res.rc != 0
    lines = err_lines(res)
    assert len(lines) == 1, res.stderr
    assert want in lines[0], lines
    assert snapshot(tmp_path, content=True) == before


def test_order_only_trace_needs_asap(tmp_path):
    trace = write(tmp_path / "o.trace", "dbtrace 1\npagesize 4096\ntimeunit none\nsource t\n"
                  "file 0 data p1 p1 db\nstream 0 a\n- 0 0 read 0 4096\nend 1\n")
    res = run_fio(dbr_args(trace, dbr_timing="original"))
    assert res.rc != 0 and "order-only" in res.stderr
    run_fio(dbr_args(trace)).ok()


# ---------------------------------------------------------------------------
# Never touch what is not the engine's
# ---------------------------------------------------------------------------

def test_refuses_a_users_file_at_a_trace_path(tmp_path):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    (target / "pg_wal").mkdir(parents=True)
    (target / "pg_wal/000000010000000000000001").write_text("the user's WAL")
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_target=target))
    assert res.rc != 0
    assert "pg_wal/000000010000000000000001 exists and was not created by dbreplay" in res.stderr
    assert snapshot(tmp_path, content=True) == before


def test_users_files_beside_the_trace_are_left_alone(tmp_path):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    (target / "base").mkdir(parents=True)
    (target / "base/README").write_text("the user's")
    (target / "notes.txt").write_text("also the user's")
    before = snapshot(target, content=True)
    run_fio(dbr_args(trace, dbr_target=target)).ok()
    # base/ holds a user's file: the engine's subdirectories went, base/ and the user's stayed
    # (base/'s own mtime changed: the engine made and removed base/16384 in it)
    after = snapshot(target, content=True)
    assert sorted(after) == sorted(before) == ["base", "base/README", "notes.txt"]
    assert after["base/README"] == before["base/README"]
    assert after["notes.txt"] == before["notes.txt"]


def test_symlinked_parent_is_not_followed(tmp_path):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "16384").mkdir()
    target = tmp_path / "t"
    target.mkdir()
    os.symlink(outside, target / "base")
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_target=target))
    assert res.rc != 0
    assert "symlink" in res.stderr
    assert snapshot(tmp_path, content=True) == before


def test_forged_manifest_is_refused(tmp_path):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    # the engine's head line, so that the path is what is refused
    (target / ".fio-dbreplay").write_text("# fio dbreplay engine: it created the paths below "
                                          "(one a line) and removes only those\n../victim\n")
    (tmp_path / "victim").write_text("x")
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_target=target))
    assert res.rc != 0 and ".fio-dbreplay line 2" in res.stderr
    assert snapshot(tmp_path, content=True) == before


@needs_root
def test_target_too_small(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], check=True)
    try:
        trace = write(tmp_path / "doc.trace", DOC_TRACE)   # needs 8 + 16 + 0.1 MiB
        res = run_fio(dbr_args(trace, dbr_target=mnt))
        assert res.rc != 0
        lines = err_lines(res)
        assert len(lines) == 1 and "need" in lines[0]
        assert list(mnt.iterdir()) == []
        # sparse layout does not need the room up front and replays this trace
        run_fio(dbr_args(trace, dbr_target=mnt, dbr_fill="sparse")).ok()
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)])


@pytest.mark.nosan
def test_killed_replay_is_cleaned_by_the_next_run(tmp_path):
    lines = ["dbtrace 1", "pagesize 4096", "timeunit ms", "source test",
             "file 0 data p64 p64 a/db", "file 1 temp - p4 a/tmp", "stream 0 s"]
    n = 0
    for i in range(200):
        lines.append(f"{i * 50} 0 1 create")
        lines.append(f"{i * 50 + 1} 0 1 write 0 4096")
        lines.append(f"{i * 50 + 2} 0 0 read p{i % 64} 4096")
        n += 3
    lines.append(f"end {n}")
    trace = write(tmp_path / "k.trace", "\n".join(lines) + "\n")
    target = tmp_path / "t"
    target.mkdir()
    (target / "mine").write_text("user")
    p = start_fio_background(dbr_args(trace, dbr_target=target, dbr_timing="original"))
    deadline = time.monotonic() + 20
    while not (target / "a/tmp").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    kill_group(p)
    assert (target / ".fio-dbreplay").exists()
    assert (target / "a/tmp").exists()
    # the next run recognises its files: the temp file exists, the trace creates it: it is reset
    res = run_fio(dbr_args(trace, dbr_target=target))
    res.ok()
    assert res.job()["error"] == 0
    assert sorted(p.name for p in target.iterdir()) == ["mine"]
    assert (target / "mine").read_text() == "user"


@needs_root
def test_out_of_space_error_path_and_continue_on_error(tmp_path):
    """A target that fills up mid-replay: fio's error path (exit 1, the error
    in the JSON, the trace line named); with continue_on_error and ENOSPC in
    ignore_error the replay goes on and counts; bytes are never miscounted;
    the next run recognises the files."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        lines = ["dbtrace 1", "pagesize 4096", "timeunit none", "source t",
                 "file 0 data 0 p1024 db", "stream 0 a"]
        lines += [f"- 0 0 write p{i} 4096" for i in range(600)] + ["- 0 0 fsync", "end 601"]
        trace = write(tmp_path / "enospc.trace", "\n".join(lines) + "\n")
        rep = tmp_path / "r.jsonl"
        res = run_fio(dbr_args(trace, dbr_target=mnt, dbr_fill="sparse", dbr_keep=1,
                               dbr_report_file=rep))
        assert res.rc != 0
        j = res.job()
        assert j["error"] == 28
        ok_writes = (1 << 20) // 4096 - 1        # the file system's own block or so is gone
        assert abs(j["write"]["io_bytes"] // 4096 - ok_writes) <= 2
        assert "line" in err_lines(res)[0] and "No space left" in err_lines(res)[0]
        r = report(rep)[-1]
        assert r["last_loop_complete"] is False and r["errors"] == 1
        assert r["classes"]["data write"]["bytes"] == j["write"]["io_bytes"]
        assert (mnt / "db").stat().st_size == j["write"]["io_bytes"]

        res = run_fio(dbr_args(trace, dbr_target=mnt, dbr_fill="sparse", dbr_report_file=rep,
                               continue_on_error="all", ignore_error="EIO,EIO:ENOSPC"))
        res.ok()
        j = res.job()
        r = report(rep)[-1]
        assert r["replayed"] == 601 and r["last_loop_complete"] is True
        assert r["errors"] == j["total_err"] > 300
        assert r["classes"]["data write"]["bytes"] == j["write"]["io_bytes"]
        assert j["write"]["io_bytes"] % 4096 == 0
        assert len(err_lines(res)) < 30              # errors are not printed 345 times
        assert list(mnt.iterdir()) == []             # and the run cleaned up after itself
    finally:
        subprocess.run(["umount", str(mnt)])
