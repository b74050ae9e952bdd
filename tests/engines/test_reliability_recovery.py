"""Reliability of every engine when interrupted or surrounded:
SIGKILL and resume, foreign files and symlinks in the target. The engine
profiles and helpers are in tests/helpers/reliability.py;
docs/RELIABILITY.md has the table of cases.
"""
import os
import re
import time
from pathlib import Path

import pytest

from helpers.fio import run_fio, start_fio_background
from helpers.procs import descendants, kill_group
from helpers.reliability import (DBREPLAY, ENGINE_IDS, PM_RUN, POSTMARK, SMALLFILE, content_tree,
                                 dbr, dbr_report, dbr_trace, outside, pm, pm_run, sf, sf_layout,
                                 sf_mix, sf_thin)
from helpers.trees import read_opstats, snapshot, tree_files

# ---------------------------------------------------------------------------
# 4. SIGKILL and resume
# ---------------------------------------------------------------------------

def make_parent(tmp_path):
    """parent/target (the engine's) next to a user's directory with a file,
    a subdirectory and a symlink out of the parent."""
    parent = tmp_path / "parent"
    (parent / "target").mkdir(parents=True)
    user = parent / "user"
    (user / "sub").mkdir(parents=True)
    (user / "mail.txt").write_text("a user's mail\n")
    (user / "sub" / "data.bin").write_bytes(os.urandom(3000))
    far = tmp_path / "far"
    far.mkdir()
    (far / "precious").write_text("far away\n")
    (user / "to-far").symlink_to(far)
    return parent, parent / "target", far


def wait_for_files(root, n, p, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        if sum(len(fs) for _, _, fs in os.walk(root)) >= n:
            return True
        time.sleep(0.02)
    return False


def uring_in_flight(pid) -> int:
    """Requests the process's io_uring has taken and not completed: its
    fdinfo's SqHead - CqTail (0 if it has no ring or /proc says nothing)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0
    best = 0
    for fd in fds:
        try:
            if "io_uring" not in os.readlink(f"/proc/{pid}/fd/{fd}"):
                continue
            info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        head, tail = re.search(r"SqHead:\s+(\d+)", info), re.search(r"CqTail:\s+(\d+)", info)
        if head and tail:
            best = max(best, (int(head[1]) - int(tail[1])) & 0xffffffff)
    return best


def has_uring(pid) -> bool:
    try:
        return any("io_uring" in os.readlink(f"/proc/{pid}/fd/{fd}")
                   for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def dbreplay_sigkill_then_resume(tmp_path, variant):
    """dbreplay looping over a 20,000-record trace (dbr_loops=0) killed with
    SIGKILL: io_uring at iodepth 32 (dbr_stream_depth=4, 16 streams) at a
    moment its ring has at least 4 records in flight (the ring's fdinfo:
    taken, not completed), or four sync jobs replaying at once into
    target/r.K. The next run on the same dbr_target resets what the killed
    one left (the manifest), replays the whole trace and removes every file;
    nothing outside the target changed. (The sync single-job case is
    tests/engines/test_dbreplay.py::test_killed_replay_is_cleaned_by_the_next_run.)"""
    parent, target, far = make_parent(tmp_path)
    before = outside(snapshot(parent, content=True), "target")
    far_before = snapshot(far, content=True)
    trace = tmp_path / "db.trace"
    dbr_trace(trace, records=20000, streams=16)
    if variant == "io_uring":
        extra, njobs = dict(dbr_io_api="io_uring", iodepth=32, dbr_stream_depth=4), 1
    else:
        extra, njobs = dict(numjobs=4), 4
    p = start_fio_background(dbr(trace, target, dbr_loops=0, time_based=1, runtime=60, **extra))
    deadline = time.monotonic() + 30
    in_flight, job = 0, None
    try:
        while time.monotonic() < deadline and p.poll() is None:
            if variant == "io_uring":
                if job is None:
                    job = next((c for c in descendants(p.pid) if has_uring(c)), None)
                elif (in_flight := uring_in_flight(job)) >= 4:
                    break                           # kill now, with those in flight
            elif all((target / f"r.{k}" / "base/1/1000").exists() for k in range(njobs)):
                time.sleep(0.3)                     # all four replaying
                break
            time.sleep(0.001)
        still_running = p.poll() is None
    finally:
        kill_group(p)
    assert still_running, "the replay ended before it could be killed"
    if variant == "io_uring":
        assert in_flight >= 4, f"never saw 4 records in flight (job process {job})"
    roots = [target] if njobs == 1 else [target / f"r.{k}" for k in range(njobs)]
    for root in roots:
        assert (root / ".fio-dbreplay").is_file() and (root / "base/1/1000").is_file()
    assert outside(snapshot(parent, content=True), "target") == before
    assert snapshot(far, content=True) == far_before

    rep = tmp_path / "report.jsonl"
    r = run_fio(dbr(trace, target, dbr_report_file=rep, **extra)).ok()
    assert not DBREPLAY.errors(r), r.stderr
    lines = dbr_report(rep)
    assert len(lines) == njobs
    for l in lines:
        assert l["replayed"] == 20000 and l["errors"] == 0 and l["last_loop_complete"]
        assert l["implicit_creates"] == 0
    # nothing is left: with numjobs the job directories r.K go too (the
    # killed run made them; the resumed run found its manifests in them)
    rest = [str(Path(d, f).relative_to(target)) for d, ds, fs in os.walk(target) for f in fs + ds]
    assert rest == [], rest
    assert outside(snapshot(parent, content=True), "target") == before
    assert snapshot(far, content=True) == far_before


@pytest.mark.parametrize("variant", ["io_uring", "numjobs4"])
@pytest.mark.parametrize("engine", ENGINE_IDS)
def test_sigkill_then_resume(tmp_path, engine, variant):
    """SIGKILL in the middle (smallfile: during the layout; postmark: in the
    transaction phase), with io_uring requests in flight or four job
    processes at once; the next run recognises what is there and completes
    correctly; nothing outside the target is created, changed or removed.
    (The sync single-job cases are tests/engines/test_smallfile.py::
    test_layout_killed_with_sigkill_is_completed and tests/engines/test_postmark.py::
    test_resumes_after_kill.)"""
    if engine == "dbreplay":
        return dbreplay_sigkill_then_resume(tmp_path, variant)
    parent, target, far = make_parent(tmp_path)
    before = outside(snapshot(parent, content=True), "target")
    far_before = snapshot(far, content=True)
    extra = dict(iodepth=16) if variant == "io_uring" else dict(numjobs=4)
    if engine == "smallfile":
        tree = dict(tree_files=6000, tree_fanout=8, tree_depth=2, tree_file_size_dist="uniform:1k:30k")
        api = dict(tree_io_api="io_uring") if variant == "io_uring" else {}
        # rate_iops: the layout lasts seconds even where fsync costs nothing (tmpfs)
        p = start_fio_background(sf(target, tree_file_op="layout", rw="write", tree_file_sync="fsync",
                                    rate_iops=400, **tree, **api, **extra))
        mid = 200
    else:
        api = dict(pm_io_api="io_uring") if variant == "io_uring" else {}
        p = start_fio_background(pm(target, pm_number=300, pm_transactions=10_000_000,
                                    pm_subdirectories=4, pm_fsync="write", **api, **extra))
        mid = 300 if variant == "io_uring" else 4 * 300
    try:
        started = wait_for_files(target, mid, p)
        if engine == "postmark":
            time.sleep(0.5)      # well into the transactions
        still_running = p.poll() is None
    finally:
        kill_group(p)
    assert started and still_running, "the run ended before it could be killed"
    left = tree_files(target)
    assert left, "nothing on disk after the kill"
    assert outside(snapshot(parent, content=True), "target") == before
    assert snapshot(far, content=True) == far_before

    if engine == "smallfile":
        assert len(left) < 6000
        r = run_fio(sf(target, tree_file_op="layout", rw="write", **tree, **api, **extra)).ok()
        assert r.total("write", "total_ios") == 6000
        ref = tmp_path / "ref"
        ref.mkdir()
        run_fio(sf(ref, tree_file_op="layout", rw="write", **tree)).ok()
        assert content_tree(target) == content_tree(ref), "resumed layout differs from a clean one"
    else:
        ops = tmp_path / "ops.jsonl"
        r = run_fio(pm(target, pm_number=300, pm_transactions=500, pm_subdirectories=4,
                       pm_opstats_file=ops, **api, **extra)).ok()
        assert re.search(r"removed \d+ files an interrupted run left", r.stderr), r.stderr
        njobs = extra.get("numjobs", 1)
        assert r.total("sync", "total_ios") == 500 * njobs
        lines = read_opstats(ops)
        assert len(lines) == njobs and all(l["finished"] for l in lines)
        # numjobs: the job directories pm.K the killed run made go too (its
        # markers say it made them)
        rest = [str(Path(d, f).relative_to(target)) for d, ds, fs in os.walk(target)
                for f in fs + ds]
        assert rest == [], rest
    assert outside(snapshot(parent, content=True), "target") == before
    assert snapshot(far, content=True) == far_before


# ---------------------------------------------------------------------------
# 5. Foreign files and symlinks
# ---------------------------------------------------------------------------

def dbreplay_foreign_files_and_symlinks(tmp_path):
    """dbreplay: a target holding a user's files, a directory of the user's
    that the trace's paths go through (base/), and symlinks out of it: the
    whole trace replays (sync, then io_uring) and nothing of the user's
    changes. Then symlinks planted where the engine would follow them, each
    refused with one line naming it, and nothing changed, here or behind
    the symlink: a trace path's last component (in a fresh target; and in
    place of a file of the engine's, one the trace starts with and one it
    creates, after a dbr_keep=1 run); a numjobs job directory (target/r.1);
    a packed dbr_device that is a symlink to a user's file, or dangling.
    (A symlinked parent directory, a user's file at a trace path, a forged
    manifest and a packed file without the engine's sidecar are
    tests/engines/test_dbreplay_refusals.py's
    test_symlinked_parent_is_not_followed,
    test_refuses_a_users_file_at_a_trace_path, test_forged_manifest_is_refused
    and tests/engines/test_dbreplay.py's test_packed_refuses_a_foreign_file.)"""
    parent, target, far = make_parent(tmp_path)
    far_before = snapshot(far, content=True)
    trace = tmp_path / "db.trace"
    dbr_trace(trace, records=1500)
    (target / "notes.txt").write_text("the user's notes\n")
    (target / "to-far").symlink_to(far)
    (target / "far-file").symlink_to(far / "precious")
    (target / "archive").mkdir()
    (target / "archive" / "keep").write_text("user\n")
    (target / "base").mkdir()
    (target / "base" / "README").write_text("user\n")
    users = ["notes.txt", "to-far", "far-file", "archive", "archive/keep", "base/README"]
    user_before = {k: v for k, v in snapshot(target, content=True).items() if k in users}
    rep = tmp_path / "report.jsonl"
    for extra in ({}, dict(dbr_io_api="io_uring", iodepth=16, dbr_stream_depth=4)):
        r = run_fio(dbr(trace, target, dbr_report_file=rep, **extra)).ok()
        assert not DBREPLAY.errors(r), r.stderr
        assert dbr_report(rep)[-1]["replayed"] == 1500 and dbr_report(rep)[-1]["errors"] == 0
        after = snapshot(target, content=True)
        assert {k: after.get(k) for k in users} == user_before, "a user's file changed"
        # the user's base/ stays, with only the user's file in it
        assert sorted(after) == sorted(users + ["base"]), sorted(after)
    assert snapshot(far, content=True) == far_before

    def refused(args, want):
        before = snapshot(tmp_path, content=True)
        r = run_fio(args)
        assert r.rc != 0 and len(DBREPLAY.errors(r)) == 1, r.describe()
        assert want in DBREPLAY.errors(r)[0], r.stderr
        assert snapshot(tmp_path, content=True) == before, "a refused run changed something"

    # a trace path's last component, planted in a fresh target
    fresh = parent / "fresh"
    (fresh / "base" / "1").mkdir(parents=True)
    (fresh / "base" / "1" / "1001").symlink_to(far / "precious")
    refused(dbr(trace, fresh), "base/1/1001 exists and was not created by dbreplay")
    # ... in place of the engine's own files (they are in its manifest)
    run_fio(dbr(trace, target, dbr_keep=1)).ok()
    for path in ("base/1/1001", "pg_wal/000000010000000000000002"):
        saved = target / (path + ".saved")
        (target / path).rename(saved)
        (target / path).symlink_to(far / "precious")
        refused(dbr(trace, target), f"{path} is not a regular file")
        (target / path).unlink()
        saved.rename(target / path)
    run_fio(dbr(trace, target)).ok()              # and the files are still the engine's
    assert sorted(snapshot(target)) == sorted(users + ["base"])
    # a numjobs job directory planted as a symlink: that job is refused
    jobs = parent / "jobs"
    jobs.mkdir()
    (jobs / "r.1").symlink_to(far)
    r = run_fio(dbr(trace, jobs, numjobs=2))
    assert r.rc != 0 and any(re.search(r"dbr_target \S+/r\.1: a symlink or not a directory; "
                                       r"refusing to follow it", l)
                             for l in DBREPLAY.errors(r)), r.describe()
    assert os.readlink(jobs / "r.1") == str(far)
    # packed: dbr_device a symlink to a user's file, or a dangling one
    for name, dest in (("dev.img", far / "precious"), ("dangling.img", far / "new.img")):
        (parent / name).symlink_to(dest)
        refused(dbr(trace, None, dbr_device=parent / name),
                f"dbr_device {parent / name} is neither a regular file nor a block device")
        assert not Path(str(parent / name) + ".fio-dbreplay").exists()
    assert snapshot(far, content=True) == far_before, "the directory behind a symlink changed"
    assert (parent / "user" / "mail.txt").read_text() == "a user's mail\n"


@pytest.mark.parametrize("engine", ENGINE_IDS)
def test_foreign_files_and_symlinks_untouched(tmp_path, engine):
    """A target holding a user's files and symlinks to a directory outside
    it: every operation of the engine runs, and nothing but the engine's own
    files changes, here or in the directory the symlinks point to.
    (Refusals of foreign directories, planted symlinks in place of tree
    files and directories, and PostMark-named user files are in
    tests/engines/test_smallfile.py and tests/engines/test_postmark.py.)"""
    if engine == "dbreplay":
        return dbreplay_foreign_files_and_symlinks(tmp_path)
    parent, target, far = make_parent(tmp_path)
    far_before = snapshot(far, content=True)
    if engine == "smallfile":
        run_fio(sf_layout(target)).ok()          # a tree may only be shared once it is ours
        run_fio(sf_thin(target)).ok()
    (target / "notes.txt").write_text("the user's notes\n")
    (target / "to-far").symlink_to(far)
    (target / "far-file").symlink_to(far / "precious")
    (target / "archive").mkdir()
    (target / "archive" / "keep").write_text("user\n")
    if engine == "smallfile":
        # a directory named like the tree's (hex digits) that is not one of its
        (target / "0000").mkdir()
        # a leaf directory of the tree is "0/1": plant user files in the tree's
        # directories too, with names that are not the tree's
        (target / "0" / "1" / "new" / "README").write_text("user\n")
        (target / "0" / "1" / "tmp" / "f0000000010.user").write_text("user\n")
    user_before = {k: v for k, v in snapshot(target, content=True).items()
                   if k in ("notes.txt", "to-far", "far-file", "archive", "archive/keep", "0000",
                            "0/1/new/README", "0/1/tmp/f0000000010.user")}
    ops = tmp_path / "ops.jsonl"
    if engine == "smallfile":
        for api in ("sync", "io_uring"):
            r = run_fio(sf_mix(target, ops, tree_io_api=api, iodepth=8, number_ios=1500)).ok()
            assert not SMALLFILE.errors(r), r.stderr
    else:
        # one job in the location itself, then two jobs in their pm.K directories
        for api, depth, jobs in (("sync", 1, 1), ("io_uring", 8, 1), ("io_uring", 8, 2)):
            r = run_fio(pm_run(target, ops, pm_io_api=api, iodepth=depth, numjobs=jobs)).ok()
            assert not POSTMARK.errors(r), r.stderr
            assert r.total("sync", "total_ios") == jobs * PM_RUN["pm_transactions"]
        # a job directory planted as a symlink out of the target: refused, not followed
        (target / "pm.1").symlink_to(far)
        r = run_fio(pm_run(target, ops, numjobs=2))
        assert r.rc != 0 and re.search(r"pm\.1: (Not a directory|Too many levels of symbolic "
                                       r"links)", r.stderr), r.describe()
        (target / "pm.1").unlink()
        # a subdirectory s1 planted as a symlink: refused, not followed or cleaned
        (target / "s1").symlink_to(far)
        r = run_fio(pm_run(target, ops))
        assert r.rc != 0 and "holds 's1', named like PostMark's files but not the engine's" \
            in r.stderr, r.describe()
        (target / "s1").unlink()
        assert sorted(os.listdir(target)) == sorted(["notes.txt", "to-far", "far-file", "archive"])
    after = snapshot(target, content=True)
    assert {k: after.get(k) for k in user_before} == user_before, "a user's file changed"
    assert snapshot(far, content=True) == far_before, "the directory behind a symlink changed"
    assert (parent / "user" / "mail.txt").read_text() == "a user's mail\n"


@pytest.mark.parametrize("engine", ENGINE_IDS)
def test_sections_override_and_inherit_global_strings(tmp_path, engine):
    """A job file whose [global] sets the engine's string options, a section
    that overrides them and a later one that inherits them: each runs with
    its own values. (Found by the valgrind case below: overriding a string
    option freed [global]'s copy, which the next section still used: a use
    after free, caught here by the sanitizer run.)"""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    ops_g, ops_1 = tmp_path / "ops-global.jsonl", tmp_path / "ops-1.jsonl"
    if engine == "smallfile":
        text = (f"[global]\nioengine=external:{SMALLFILE.so}\ntree_dir={a}\ntree_files=30\n"
                f"tree_file_op=layout\nrw=write\ntree_opstats_file={ops_g}\n\n"
                f"[one]\ntree_dir={b}\ntree_files=20\ntree_opstats_file={ops_1}\n\n"
                f"[two]\nstonewall\n")
    elif engine == "postmark":
        text = (f"[global]\nioengine=external:{POSTMARK.so}\npm_location={a}\npm_number=30\n"
                f"pm_transactions=40\npm_report=none\npm_opstats_file={ops_g}\n\n"
                f"[one]\npm_location={b}\npm_number=20\npm_transactions=50\n"
                f"pm_opstats_file={ops_1}\n\n[two]\nstonewall\n")
    else:
        ta, tb = tmp_path / "a.trace", tmp_path / "b.trace"
        dbr_trace(ta, records=300, seed=1)
        dbr_trace(tb, records=200, seed=2)
        text = (f"[global]\nioengine=external:{DBREPLAY.so}\ndbr_trace={ta}\ndbr_target={a}\n"
                f"dbr_timing=asap\ndbr_report=none\ndbr_report_file={ops_g}\ndbr_keep=1\n\n"
                f"[one]\ndbr_trace={tb}\ndbr_target={b}\ndbr_report_file={ops_1}\n"
                f"dbr_io_api=io_uring\niodepth=4\n\n[two]\nstonewall\n")
    job = tmp_path / "j.fio"
    job.write_text(text)
    r = run_fio(jobfile=job).ok()
    one, two = read_opstats(ops_1), read_opstats(ops_g)
    assert [l["job"] for l in one] == ["one"] and [l["job"] for l in two] == ["two"]
    if engine == "smallfile":
        assert one[0]["tree_dir"] == str(b) and two[0]["tree_dir"] == str(a)
        assert r.job("one")["write"]["total_ios"] == 20 and r.job("two")["write"]["total_ios"] == 30
    elif engine == "dbreplay":
        assert (one[0]["trace"], one[0]["replayed"], one[0]["io_api"]) == (str(tb), 200, "io_uring")
        assert (two[0]["trace"], two[0]["replayed"], two[0]["io_api"]) == (str(ta), 300, "sync")
        assert (a / ".fio-dbreplay").is_file() and (b / ".fio-dbreplay").is_file()
    else:
        assert one[0]["locations"] == [str(b)] and two[0]["locations"] == [str(a)]
        assert r.job("one")["sync"]["total_ios"] == 50 and r.job("two")["sync"]["total_ios"] == 40
