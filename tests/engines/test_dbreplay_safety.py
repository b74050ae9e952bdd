"""dbreplay: nothing outside the target, run by the real fio.

A device the kernel holds (mounted, or open O_EXCL), the engine's own files
(manifest, sidecar, record log, report file) named after its inputs or
after each other, inputs that are not regular files, waits that must end
when fio stops the job, replays cut short, and durations past 64 bits.
Each refusal is one line, a non-zero exit, and nothing changed on disk
(docs/RELIABILITY.md, "Devices, markers and manifests: dbreplay").
"""
import contextlib
import hashlib
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from helpers.dbreplay import DOC_TRACE, dbr_args, err_lines, report, write
from helpers.fio import DBR_ENGINE, needs_root, run_fio, start_fio_background
from helpers.procs import descendants, kill_group
from helpers.trees import snapshot


def assert_refused(res, needle, *snaps):
    """One 'dbreplay:' line naming @needle, a non-zero exit (not a crash),
    and each (path, snapshot) in @snaps unchanged."""
    lines = err_lines(res)
    assert res.rc > 0, "fio must exit non-zero, not crash\n" + res.describe()
    assert len(lines) == 1, "expected a one-line error\n" + res.describe()
    assert needle in lines[0], f"no 'dbreplay:' line names {needle!r}\n" + res.describe()
    for path, snap in snaps:
        assert snapshot(path, content=True) == snap, f"the refused job changed {path}"


def not_a_regular_file(path, kind):
    """@path made a FIFO or a directory (@kind "fifo", "directory"), or
    /dev/zero for "chardev"."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        return Path("/dev/zero")
    return path


def tree_sha(root):
    """{relative path: sha256} of every regular file below @root."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath, f)
            if p.is_file() and not p.is_symlink():
                out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# ---------------------------------------------------------------------------
# A block device the kernel holds
# ---------------------------------------------------------------------------

@contextlib.contextmanager
def loop_device(img, size=64 << 20):
    """A loop device over the file @img (created, @size bytes); detached after."""
    with open(img, "wb") as f:
        f.truncate(size)
    p = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True)
    if p.returncode:
        pytest.skip(f"no loop device: {p.stderr.strip()}")
    loop = p.stdout.strip()
    try:
        yield loop
    finally:
        subprocess.run(["losetup", "-d", loop])


@needs_root
def test_mounted_device_is_refused(tmp_path):
    """dbr_overwrite_device=1 confirms overwriting a device, not a mounted
    file system: the replay is refused in one line naming the mount point,
    the file system's files are intact and fsck finds it clean."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with loop_device(tmp_path / "fs.img") as loop:
        subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True, capture_output=True)
        subprocess.run(["mount", loop, str(mnt)], check=True)
        try:
            (mnt / "data").mkdir()
            for i in range(20):
                (mnt / "data" / f"f{i}").write_bytes(os.urandom(64 << 10))
            os.sync()
            before = tree_sha(mnt)
            for extra in ({}, {"allow_mounted_write": 1}):
                res = run_fio(dbr_args(trace, dbr_device=loop, dbr_overwrite_device=1,
                                       **extra))
                assert_refused(res, f"dbr_device {loop} is mounted on {mnt}")
            assert tree_sha(mnt) == before
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
        fsck = subprocess.run(["e2fsck", "-fn", loop], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr


@needs_root
def test_device_held_exclusively_is_refused(tmp_path):
    """A device another program holds open O_EXCL (as mkfs, a RAID or LVM
    does) is refused, its content untouched; once released it replays."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    with loop_device(tmp_path / "dev.img", 32 << 20) as loop:
        with open(loop, "r+b") as f:
            f.write(b"the other program's" * 1000)
        before = hashlib.sha256(Path(loop).read_bytes()).hexdigest()
        fd = os.open(loop, os.O_RDONLY | os.O_EXCL)
        try:
            res = run_fio(dbr_args(trace, dbr_device=loop, dbr_overwrite_device=1))
            assert_refused(res, f"dbr_device {loop} is in use")
        finally:
            os.close(fd)
        assert hashlib.sha256(Path(loop).read_bytes()).hexdigest() == before
        run_fio(dbr_args(trace, dbr_device=loop, dbr_overwrite_device=1)).ok()


# ---------------------------------------------------------------------------
# The report file: checked at the start, its loss a failure
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["missing-dir", "fifo", "directory", "read-only"])
def test_report_file_is_checked_before_the_replay(tmp_path, case, request):
    """A dbr_report_file that cannot take the line is refused at the start,
    before the target is touched; it was found only at the end, with exit 0
    (and a FIFO blocked the job's end)."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    if case == "missing-dir":
        rep = tmp_path / "nodir" / "r.jsonl"
    elif case == "read-only":
        rep = request.getfixturevalue("ro_dir") / "r.jsonl"
    else:
        rep = not_a_regular_file(tmp_path / "r", case)
    before = snapshot(tmp_path, content=False)
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_report_file=rep), timeout=60)
    assert_refused(res, f"dbr_report_file {rep}")
    assert snapshot(tmp_path, content=False) == before


@needs_root
@pytest.mark.parametrize("option", ["dbr_report_file", "dbr_record_log"])
def test_report_file_that_cannot_be_written_fails_the_job(tmp_path, option):
    """The report file's line is the replay's figures, the record log its
    records: a full file system at the end fails the job (one line,
    non-zero exit), as fio's own errors do. Both exited 0."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], check=True)
    try:
        rep = full / "r.out"
        rep.touch()
        fd = os.open(full / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            with pytest.raises(OSError):
                while True:
                    os.write(fd, b"x" * 4096)
        finally:
            os.close(fd)
        res = run_fio(dbr_args(trace, **{option: rep}))
        assert res.rc != 0
        lines = err_lines(res)
        assert [l for l in lines if option in l] == \
            [f"dbreplay: {option} {rep}: No space left on device"], res.stderr
        assert res.json["jobs"][0]["error"] != 0
        assert rep.stat().st_size == 0
    finally:
        subprocess.run(["umount", str(full)], check=True)


def test_refused_job_leaves_no_report_file(tmp_path):
    """A job refused after its report file was opened (here: a user's file
    at a trace path) removes the empty report file it created."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    (target / "pg_wal").mkdir(parents=True)
    (target / "pg_wal/000000010000000000000001").write_text("the user's WAL")
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_report_file=tmp_path / "r.jsonl"))
    assert_refused(res, "exists and was not created by dbreplay", (tmp_path, before))


# ---------------------------------------------------------------------------
# The engine's own files: never its inputs, never each other
# ---------------------------------------------------------------------------

def contents(root):
    """{relative path: sha256 or 'dir'} below @root: what a refused job must
    leave as it was (a file it made and removed again changes only a
    directory's mtime)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for d in dirs:
            out[Path(dirpath, d).relative_to(root).as_posix()] = "dir"
        for f in files:
            p = Path(dirpath, f)
            st = os.lstat(p)
            out[p.relative_to(root).as_posix()] = (
                hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode)
                else stat.S_IFMT(st.st_mode))      # a FIFO is not read: that would block
    return out


OWN_FILES = {
    # case: (options, the refusal's first words), paths relative to tmp_path
    "record-log-is-the-trace": ({"dbr_record_log": "doc.trace"},
                                "dbr_record_log {d}/doc.trace is the same file as dbr_trace"),
    "report-file-is-the-trace": ({"dbr_report_file": "doc.trace"},
                                 "dbr_report_file {d}/doc.trace is the same file as dbr_trace"),
    "report-file-is-a-link-to-the-trace": ({"dbr_report_file": "link.jsonl"},
                                           "dbr_report_file {d}/link.jsonl is the same file as dbr_trace"),
    "trace-is-the-manifest": ({"dbr_trace": "t/.fio-dbreplay"},
                              "dbr_target's manifest {d}/t/.fio-dbreplay is the same file as dbr_trace"),
    "record-log-is-the-manifest": ({"dbr_record_log": "kept/.fio-dbreplay", "dbr_target": "kept"},
                                   "dbr_target's manifest {d}/kept/.fio-dbreplay is the same file as dbr_record_log"),
    "report-file-is-a-new-manifest": ({"dbr_report_file": "t/.fio-dbreplay"},
                                      "dbr_target's manifest {d}/t/.fio-dbreplay is the same file as dbr_report_file"),
    "record-log-is-the-report-file": ({"dbr_record_log": "r.out", "dbr_report_file": "r.out"},
                                      "dbr_record_log {d}/r.out is the same file as dbr_report_file"),
    "record-log-at-a-trace-path": ({"dbr_record_log": "t/base/16384/16397"},
                                   "base/16384/16397 is the same file as dbr_record_log"),
    "device-is-the-record-log": ({"dbr_device": "packed.img", "dbr_record_log": "packed.img",
                                  "dbr_target": None},
                                 "dbr_device {d}/packed.img is the same file as dbr_record_log"),
    "device-is-the-report-file": ({"dbr_device": "r.jsonl", "dbr_report_file": "r.jsonl",
                                   "dbr_target": None},
                                  "dbr_device {d}/r.jsonl is the same file as dbr_report_file"),
}


@pytest.mark.parametrize("case", sorted(OWN_FILES))
def test_engine_files_are_never_its_inputs_or_each_other(tmp_path, case):
    """The record log, the report file, the manifest and the packed device
    are each a file of their own, and none is the trace: checked by identity
    (a hard link counts) before anything is written. A record log named
    after the trace truncated it; a report file that was the manifest
    filled it with JSON."""
    opts, want = OWN_FILES[case]
    d = tmp_path
    write(d / "doc.trace", DOC_TRACE)
    os.link(d / "doc.trace", d / "link.jsonl")
    (d / "t" / "base" / "16384").mkdir(parents=True)   # the user's: not a trace path
    if case == "trace-is-the-manifest":
        (d / "t" / ".fio-dbreplay").write_text(DOC_TRACE)
    (d / "kept").mkdir()
    run_fio(dbr_args(d / "doc.trace", dbr_target=d / "kept", dbr_keep=1)).ok()
    args = {"dbr_trace": "doc.trace", "dbr_target": "t"}
    args.update(opts)
    args = {k: d / v for k, v in args.items() if v is not None}
    before = contents(d)
    res = run_fio(dbr_args(args.pop("dbr_trace"), **args))
    assert_refused(res, want.format(d=d))
    assert contents(d) == before



# ---------------------------------------------------------------------------
# A replay cut short
# ---------------------------------------------------------------------------

def timed_trace(path, seconds, step_ms=10):
    """A timed trace (timeunit ms) of reads every @step_ms for @seconds."""
    n = int(seconds * 1000 / step_ms)
    lines = ["dbtrace 1", "pagesize 4096", "timeunit ms", "source test", "file 0 data p16 p16 db",
             "stream 0 s"] + [f"{i * step_ms} 0 0 read p{i % 16} 4096" for i in range(n)]
    return write(path, "\n".join(lines + [f"end {n}"]) + "\n")


@pytest.mark.parametrize("api", ["sync", "io_uring"])
def test_replay_cut_short_by_runtime_fails_unless_accepted(tmp_path, api):
    """runtime= (without time_based) ending a replay before its last record
    measured part of the workload: one line, non-zero exit, and the report
    says so. dbr_accept_partial=1 or time_based=1 accepts it (exit 0, said
    in the report). It exited 0 with only "last_loop_complete": false."""
    trace = timed_trace(tmp_path / "t.trace", 4)
    extra = {"dbr_io_api": "io_uring", "iodepth": 4} if api == "io_uring" else {}
    target = tmp_path / "t"
    target.mkdir()
    rep = tmp_path / "r.jsonl"
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_timing="original", runtime=1,
                           dbr_report_file=rep, **extra))
    assert res.rc != 0
    assert err_lines(res)[0].startswith(
        "dbreplay: r: the replay was cut short by runtime= in loop 1 of 1 ("), res.stderr
    assert len([l for l in err_lines(res) if "a partial replay fails" in l]) == 1
    assert "(the last cut short by runtime=)" in res.stderr     # the summary
    assert res.json["jobs"][0]["error"] != 0
    r = report(rep)[-1]
    assert (r["last_loop_complete"], r["cut_short_by"], r["partial_accepted"]) == \
        (False, "runtime", False)
    assert 0 < r["replayed"] < 400
    assert list(target.iterdir()) == []
    for accept in ({"dbr_accept_partial": 1}, {"time_based": 1}):
        res = run_fio(dbr_args(trace, dbr_target=target, dbr_timing="original", runtime=1,
                               dbr_report_file=rep, **accept, **extra)).ok()
        assert "a partial replay fails" not in res.stderr
        r = report(rep)[-1]
        assert (r["last_loop_complete"], r["cut_short_by"], r["partial_accepted"]) == \
            (False, "runtime", True)
    # a whole replay within runtime= is complete
    short = timed_trace(tmp_path / "s.trace", 0.2)
    run_fio(dbr_args(short, dbr_timing="original", runtime=30, dbr_report_file=rep, **extra)).ok()
    r = report(rep)[-1]
    assert (r["last_loop_complete"], r["cut_short_by"], r["partial_accepted"]) == (True, None, False)


# ---------------------------------------------------------------------------
# Waits for a record's due time end when fio stops the job
# ---------------------------------------------------------------------------

HOUR_GAP = """dbtrace 1
pagesize 4096
timeunit ms
source test: an hour between two records
file 0 data p16 p16 db
stream 0 s
0 0 0 read 0 4096
3600000 0 0 read p1 4096
end 2
"""


def test_long_wait_ends_at_runtime(tmp_path):
    """runtime=2 ends a timed replay waiting an hour for its next record:
    fio checks runtime between I/Os only, the engine's wait did not, and
    the job ran for the hour."""
    trace = write(tmp_path / "gap.trace", HOUR_GAP)
    target = tmp_path / "t"
    target.mkdir()
    rep = tmp_path / "r.jsonl"
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_timing="original", runtime=2,
                           dbr_accept_partial=1, dbr_report_file=rep), timeout=60).ok()
    assert res.elapsed < 15
    r = report(rep)[0]
    assert (r["replayed"], r["cut_short_by"]) == (1, "runtime")
    assert list(target.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_a_wait_ends_the_job(tmp_path, sig):
    """SIGINT or SIGTERM to fio while the replay waits an hour for its next
    record: the job ends within seconds with fio's exit status for a
    signal (128), its process gone and the target cleaned. fio waited 300 s
    for the job, then left its process running and exited with "free():
    double free detected" (rc 134): fio frees a job's engine options after
    the fork and again at exit unless the job's own exit cleared them."""
    trace = write(tmp_path / "gap.trace", HOUR_GAP)
    target = tmp_path / "t"
    target.mkdir()
    rep = tmp_path / "r.jsonl"
    p = start_fio_background(dbr_args(trace, dbr_target=target, dbr_timing="original",
                                      dbr_accept_partial=1, dbr_report_file=rep))
    try:
        deadline = time.monotonic() + 30
        while not (target / "db").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1)      # the first record replayed, the wait begun
        jobs = descendants(p.pid)
        assert jobs, "no job process"
        t0 = time.monotonic()
        os.kill(p.pid, sig)
        out, err = p.communicate(timeout=30)
        assert time.monotonic() - t0 < 15
    finally:
        if p.poll() is None:
            kill_group(p)
    err = err.decode(errors="replace")
    assert p.returncode == 128, err
    assert "double free" not in err and "stuck" not in err, err
    assert not [pid for pid in jobs if Path(f"/proc/{pid}").exists()
                and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
    assert list(target.iterdir()) == []
    r = report(rep)[0]
    assert (r["replayed"], r["cut_short_by"], r["partial_accepted"]) == (1, "stopped", True)


@pytest.mark.parametrize("speed", ["1e-300", "0.0009", "1001", "1e9", "-1", "inf"])
def test_absurd_speed_is_refused(tmp_path, speed):
    trace = write(tmp_path / "gap.trace", HOUR_GAP)
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_timing="scaled", dbr_speed=speed), timeout=30)
    assert_refused(res, f"dbr_speed={speed} is out of range 0.001..1000", (tmp_path, before))


# ---------------------------------------------------------------------------
# Packed mode: only the engine's sidecar makes a file the engine's
# ---------------------------------------------------------------------------

OLD_HEAD = ("# fio dbreplay engine: it created the paths below (one a line) and removes "
            "only those\n")


@pytest.mark.parametrize("case", ["users-note", "a-trace", "old-head", "other-identity",
                                  "symlink", "fifo"])
def test_packed_file_needs_a_sidecar_that_is_provably_ours(tmp_path, case):
    """dbr_device=FILE over a user's FILE is refused unless FILE.fio-dbreplay
    is the engine's sidecar for that very file (its head and FILE's device
    and inode). A user's FILE.fio-dbreplay made the engine overwrite FILE
    and then delete both."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    dev = tmp_path / "users.img"
    side = tmp_path / "users.img.fio-dbreplay"
    dev.write_bytes(b"precious" * 1000)
    if case == "users-note":
        side.write_text("my notes about users.img\n")
    elif case == "a-trace":
        side.write_text(DOC_TRACE)
    elif case == "old-head":
        side.write_text(OLD_HEAD)
    elif case == "other-identity":
        # a real sidecar, of another file
        other = tmp_path / "other.img"
        run_fio(dbr_args(trace, dbr_device=other, dbr_keep=1)).ok()
        os.rename(tmp_path / "other.img.fio-dbreplay", side)
        os.unlink(other)
    elif case == "symlink":
        (tmp_path / "elsewhere").write_text(OLD_HEAD)
        os.symlink(tmp_path / "elsewhere", side)
    else:
        os.mkfifo(side)
    before = contents(tmp_path)
    res = run_fio(dbr_args(trace, dbr_device=dev, dbr_overwrite_device=1), timeout=60)
    assert_refused(res, f"dbr_device {dev}: {side} is not dbreplay's sidecar for it")
    assert contents(tmp_path) == before


def test_packed_file_made_and_kept_is_reused_then_removed(tmp_path):
    """The engine's own packed file and sidecar (dbr_keep=1) are reused by
    the next run, which removes both; a sidecar whose file is gone is
    refused, never taken for a new file's."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    dev = tmp_path / "packed.img"
    side = tmp_path / "packed.img.fio-dbreplay"
    run_fio(dbr_args(trace, dbr_device=dev, dbr_keep=1)).ok()
    st = dev.stat()
    assert side.read_text().splitlines()[1] == f"device {st.st_dev} {st.st_ino}"
    run_fio(dbr_args(trace, dbr_device=dev)).ok()
    assert not dev.exists() and not side.exists()
    run_fio(dbr_args(trace, dbr_device=dev, dbr_keep=1)).ok()
    os.unlink(dev)
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_device=dev))
    assert_refused(res, f"cannot create {side}: File exists", (tmp_path, before))


# ---------------------------------------------------------------------------
# Inputs: regular files only, read to their end
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "directory", "chardev"])
def test_trace_must_be_a_regular_file(tmp_path, kind):
    """A FIFO as dbr_trace blocked the job for ever (the trace is opened
    more than once: checked, then replayed); a directory or a device is no
    trace either. Refused at once, in one line."""
    trace = not_a_regular_file(tmp_path / "trace", kind)
    target = tmp_path / "t"
    target.mkdir()
    before = contents(tmp_path)
    res = run_fio(dbr_args(trace, dbr_target=target), timeout=30)
    word = {"fifo": "a FIFO", "directory": "a directory", "chardev": "a character device"}[kind]
    assert_refused(res, f"dbr_trace {trace} is {word}, not a regular file")
    assert contents(tmp_path) == before


@pytest.mark.parametrize("case", ["fifo", "directory", "long-line"])
def test_manifest_must_be_a_regular_file_of_paths(tmp_path, case):
    """The target's manifest is read before anything is written: a FIFO
    there blocked the job for ever; a directory, or a line longer than any
    path, is refused in one line naming it."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    manifest = target / ".fio-dbreplay"
    if case == "fifo":
        os.mkfifo(manifest)
        want = ".fio-dbreplay is not a regular file"
    elif case == "directory":
        manifest.mkdir()
        want = ".fio-dbreplay is not a regular file"
    else:
        manifest.write_text(OLD_HEAD + "a/" * 600 + "victim\n")
        (target / "victim").write_text("the user's")
        want = ".fio-dbreplay line 2 is longer than a path"
    before = contents(tmp_path)
    res = run_fio(dbr_args(trace, dbr_target=target), timeout=30)
    assert_refused(res, f"dbr_target {target}: {want}")
    assert contents(tmp_path) == before


@pytest.mark.parametrize("case", ["no-head", "older-than-it", "trace-path-older",
                                  "deeper-path-older", "hard-linked", "other-owner"])
def test_a_manifest_must_prove_the_paths_it_lists(tmp_path, case):
    """Any .fio-dbreplay in the target was taken as the engine's manifest,
    and every path it listed as the engine's: a forged or copied-in
    manifest naming a user's file had the replay write over it (a trace
    path) or remove it at the end (any path), exit 0. The manifest must be
    a regular file with one link, of the engine's user, beginning with the
    engine's head line, and no path it lists may be older than it (the
    engine writes a path's line before it makes the path). Of several
    listed paths older than it, the refusal names the deepest, whatever
    order the engine's hash set holds them in."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    manifest = target / ".fio-dbreplay"
    nested = {"trace-path-older": ["base", "base/16384", "base/16384/16397"],
              "deeper-path-older": ["data", "data/f"]}.get(case, ["mine.txt"])
    mine = target / nested[-1]
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("the user's")
    time.sleep(0.01)
    want = {"no-head": ".fio-dbreplay does not begin with dbreplay's head line",
            "older-than-it": ".fio-dbreplay lists mine.txt, which is older than it",
            "trace-path-older": ".fio-dbreplay lists base/16384/16397, which is older than it",
            "deeper-path-older": ".fio-dbreplay lists data/f, which is older than it",
            "hard-linked": ".fio-dbreplay has more than one link",
            "other-owner": ".fio-dbreplay belongs to another user"}[case]
    listed = "".join(p + "\n" for p in nested)
    manifest.write_text(("# dbreplay\n" if case == "no-head" else OLD_HEAD) + listed)
    if case == "hard-linked":
        os.link(manifest, tmp_path / "copy")
    if case == "other-owner":
        os.chown(manifest, 65534, 65534)
    before = contents(tmp_path)
    res = run_fio(dbr_args(trace, dbr_target=target), timeout=30)
    assert_refused(res, f"dbr_target {target}: {want}")
    assert contents(tmp_path) == before
    assert mine.read_text() == "the user's"


def test_a_kept_target_is_replayed_again_and_cleaned(tmp_path):
    """What the proof keeps working: a target kept by dbr_keep=1 (its
    manifest older than the files it lists) is replayed again, and the
    next run without dbr_keep removes what the engine made, and only
    that."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    (target / "notes").write_text("the user's")
    run_fio(dbr_args(trace, dbr_target=target, dbr_keep=1)).ok()
    assert (target / ".fio-dbreplay").read_text().startswith(OLD_HEAD)
    run_fio(dbr_args(trace, dbr_target=target, dbr_keep=1)).ok()
    run_fio(dbr_args(trace, dbr_target=target)).ok()
    assert sorted(p.name for p in target.iterdir()) == ["notes"]
    assert (target / "notes").read_text() == "the user's"


def test_unfinished_manifest_line_is_never_a_path_of_the_engine(tmp_path):
    """A run killed while writing a path to its manifest (the engine writes
    a path whole before creating it) leaves an unfinished last line: that
    path was never created, and a user's file of that name is not removed;
    the next path goes on a line of its own."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    (target / ".fio-dbreplay").write_text(OLD_HEAD + "base/16384/16397\nnotes")
    (target / "notes").write_text("the user's")
    run_fio(dbr_args(trace, dbr_target=target, dbr_keep=1)).ok()
    lines = (target / ".fio-dbreplay").read_text().splitlines()
    assert not [l for l in lines if l.startswith("notes")], lines
    run_fio(dbr_args(trace, dbr_target=target)).ok()
    assert sorted(p.name for p in target.iterdir()) == ["notes"]
    assert (target / "notes").read_text() == "the user's"


# ---------------------------------------------------------------------------
# Durations past 64 bits of nanoseconds
# ---------------------------------------------------------------------------

NS_MAX = 2**64 - 2      # engines/lib/dbsched.h DBSCHED_NS_MAX


def test_trace_spanning_2_62_ms_reports_the_most_not_zero(tmp_path):
    """A trace whose records are 2^62 ms apart spans 4.6e24 ns: its
    trace_duration_ns was 0 (the conversion wrapped). It is the most a
    64-bit count holds, as in timed replay the due time of its last record
    is (engines/lib/dbsched.h; tests/unit dbsched_scaled_ns_saturates)."""
    trace = write(tmp_path / "far.trace", HOUR_GAP.replace("3600000 0 0", f"{2**62} 0 0")
                  .replace("an hour", "2^62 ms"))
    rep = tmp_path / "r.jsonl"
    run_fio(dbr_args(trace, dbr_report_file=rep)).ok()
    r = report(rep)[0]
    assert (r["replayed"], r["trace_duration_ns"]) == (2, NS_MAX)
    for timing in ({"dbr_timing": "original"}, {"dbr_timing": "scaled", "dbr_speed": "0.001"}):
        res = run_fio(dbr_args(trace, runtime=1, dbr_accept_partial=1, dbr_report_file=rep,
                               dbr_record_log=tmp_path / "rec.log", **timing), timeout=60).ok()
        assert res.elapsed < 15
        r = report(rep)[-1]
        assert (r["replayed"], r["cut_short_by"]) == (1, "runtime")


# ---------------------------------------------------------------------------
# A file made by someone else during the replay is never the engine's
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("keep", [0, 1], ids=["removed", "kept"])
@pytest.mark.parametrize("how", ["create", "implicit"])
def test_file_made_by_someone_else_during_the_replay_is_left_alone(tmp_path, how, keep):
    """A user's file that appears at a trace path while the replay runs:
    the trace's create (or a write on a file the trace never created) finds
    it there and fails with EEXIST, and the file is neither written nor
    removed, now or by the next run. The engine listed the path as its own
    before creating it and then removed the user's file at the end; a
    write without create opened the user's file and wrote into it."""
    first = "3000 0 1 create\n3001 0 1 write 0 4096\n" if how == "create" else \
        "3000 0 1 write 0 4096\n"
    n = 3 if how == "create" else 2
    trace = write(tmp_path / "t.trace",
                  "dbtrace 1\npagesize 4096\ntimeunit ms\nsource test\n"
                  "file 0 data p16 p16 db\nfile 1 temp - p4 x\nstream 0 s\n"
                  f"0 0 0 read 0 4096\n{first}end {n}\n")
    target = tmp_path / "t"
    target.mkdir()
    p = start_fio_background(dbr_args(trace, dbr_target=target, dbr_timing="original",
                                      dbr_keep=keep))
    try:
        deadline = time.monotonic() + 20
        while not (target / "db").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        # after the layout (which refuses a user's x too), well before the record at 3 s
        time.sleep(1)
        (target / "x").write_text("the user's")
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            kill_group(p)
    err = err.decode(errors="replace")
    assert p.returncode != 0, err
    assert " x: File exists" in err, err
    assert (target / "x").read_text() == "the user's"
    if not keep:
        assert sorted(p.name for p in target.iterdir()) == ["x"]
        return
    assert "# not created by dbreplay (it was there): x" in \
        (target / ".fio-dbreplay").read_text().splitlines()
    # the next run does not take it for the engine's: refused, the file kept
    res = run_fio(dbr_args(trace, dbr_target=target))
    assert_refused(res, "x exists and was not created by dbreplay")
    assert (target / "x").read_text() == "the user's"


# ---------------------------------------------------------------------------
# A control character in a value the user gave keeps the error one line
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["dbr_trace", "dbr_report_file", "dbr_record_log"])
def test_newline_in_a_path_keeps_the_error_one_line(tmp_path, option):
    """A missing path with a newline in it is printed with '?' for the
    newline: the refusal is one line, and no line of stderr is its tail."""
    trace = write(tmp_path / "db.trace", DOC_TRACE)
    bad = tmp_path / "no\nsuch" / "x"
    target = tmp_path / "target"
    before = snapshot(tmp_path, content=True)
    opts = {} if option == "dbr_trace" else {option: bad}
    r = run_fio(dbr_args(bad if option == "dbr_trace" else trace, dbr_target=target, **opts))
    assert_refused(r, f"{tmp_path}/no?such/x", (tmp_path, before))
    assert not [l for l in r.stderr.splitlines() if l.startswith("such")], r.describe()


# ---------------------------------------------------------------------------
# Numeric and 0/1 options never wrap
# ---------------------------------------------------------------------------

# fio's FIO_OPT_BOOL took dbr_accept_partial=-1 or dbr_keep=-1 as 1 (any
# number but 0 is true): a partial replay accepted without a word. Each is
# read at init within its range.
DBR_BOOLS = ["dbr_overwrite_device", "dbr_keep", "dbr_accept_incomplete", "dbr_accept_partial",
             "dbr_accept_serial", "dbr_reader_thread"]
DBR_RANGES = {  # option: (lowest, highest)
    "dbr_loops": (0, 2**32 - 1), "dbr_window": (1, 1 << 22), "dbr_stream_depth": (1, 65536),
    "dbr_align": (1, 1 << 30), **{b: (0, 1) for b in DBR_BOOLS},
}
DBR_OUT = ([(o, "-1") for o in DBR_RANGES]
           + [(o, str(hi + 1)) for o, (_, hi) in DBR_RANGES.items() if o != "dbr_align"]
           + [(o, str(2**64 + 1)) for o in DBR_RANGES]
           + [(o, str(lo - 1)) for o, (lo, _) in DBR_RANGES.items() if lo > 0]
           + [("dbr_align", "2g"), ("dbr_align", "3")])


@pytest.mark.parametrize("opt,val", DBR_OUT, ids=[f"{o}={v}" for o, v in DBR_OUT])
def test_a_numeric_option_out_of_its_range_is_refused(tmp_path, opt, val):
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    where = {"dbr_device": tmp_path / "packed.img"} if opt == "dbr_align" else \
        {"dbr_target": tmp_path / "t"}
    (tmp_path / "t").mkdir()
    before = snapshot(tmp_path, content=True)
    res = run_fio(dbr_args(trace, dbr_io_api="io_uring", **where, **{opt: val}), timeout=30)
    assert_refused(res, f"{opt}={val} is ", (tmp_path, before))


@pytest.mark.parametrize("opt", DBR_BOOLS)
def test_a_bare_zero_one_option_is_refused(tmp_path, opt):
    """In a job file a bare `dbr_keep` (no value) is not silently 1."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    (tmp_path / "t").mkdir()
    job = write(tmp_path / "bare.fio", f"[r]\nioengine=external:{DBR_ENGINE}\ndbr_trace={trace}\n"
                f"dbr_target={tmp_path / 't'}\n{opt}\n")
    before = snapshot(tmp_path, content=True)
    assert_refused(run_fio(jobfile=job), f"{opt} needs a value (0..1)", (tmp_path, before))


@pytest.mark.parametrize("opt", DBR_BOOLS)
@pytest.mark.parametrize("val", ["0", "1", ""])
def test_a_zero_one_option_in_range_runs(tmp_path, opt, val):
    """0, 1, and empty (an unset ${VAR}: the default --enghelp shows)."""
    trace = write(tmp_path / "doc.trace", DOC_TRACE)
    target = tmp_path / "t"
    target.mkdir()
    res = run_fio(dbr_args(trace, dbr_target=target, dbr_report="none", **{opt: val}), timeout=60)
    assert res.rc == 0 and not err_lines(res), res.describe()
    assert res.job("r")["write"]["total_ios"] > 0
    kept = opt == "dbr_keep" and val == "1"
    assert bool(list(target.iterdir())) == kept


def test_zero_one_options_keep_their_help():
    h = run_fio([f"--enghelp={DBR_ENGINE}"], json_output=False)
    for opt in DBR_BOOLS:
        assert re.search(rf"^{opt}\s*: \S", h.stdout, re.M), h.stdout
