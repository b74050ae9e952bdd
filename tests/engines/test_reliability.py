"""Reliability of every engine: injected I/O errors, EINTR and
short transfers, out of space. test_reliability_recovery.py (SIGKILL and
resume, foreign files and symlinks) and test_reliability_load.py (64 jobs,
io_uring at iodepth 128, memory over hundreds of thousands of operations,
valgrind) share its engine profiles and helpers, in
tests/helpers/reliability.py.
docs/RELIABILITY.md has the table of cases and what each showed.

Faults are injected by build/faultinject.so (tests/faultinject/faultinject.c,
`make build/faultinject.so`), loaded into the real fio with LD_PRELOAD and
limited to the job's directory, so fio's own files are never hit. Its
libc wrappers reach the engines' sync modes only: io_uring requests do not
go through read(2)/write(2) (the io_uring modes are covered here by the
out-of-space, kill, load and memory cases, and their submissions, which it
also wraps, by test_reliability_uring.py).

Tests are parametrized by engine (ENGINES, helpers/reliability.py); an
engine added later gets a profile there and joins every case. dbreplay,
the third, replays traces written by dbr_trace(); where its checks differ
from the file-tree engines' a dbreplay_* function does them (every
dbreplay case has "dbreplay" in its pytest ID).
"""
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers.fio import IS_ROOT, REPO, fio_env, run_fio
from helpers.mounts import mounted
from helpers.reliability import (DBREPLAY, ENGINE_BY_ID, ENGINE_IDS, FAULTINJECT, PM_RUN, POSTMARK,
                                 SF_TREE, SMALLFILE, content_tree, dbr, dbr_counts, dbr_report,
                                 dbr_trace, faulty_env, injected, json_totals, opstats_counts, pm,
                                 pm_run, run_faulty, sf, sf_layout, sf_mix, sf_thin)
from helpers.trees import read_opstats

EIO, ENOSPC = 5, 28

needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root to mount tmpfs")


@pytest.fixture(scope="module", autouse=True)
def _faultinject_built():
    if not FAULTINJECT.is_file():
        pytest.fail(f"{FAULTINJECT} is missing: run `make build/faultinject.so` in {REPO}",
                    pytrace=False)


# ---------------------------------------------------------------------------
# 0. The injection library itself
# ---------------------------------------------------------------------------

def test_faultinject_injects_only_under_its_directory(tmp_path):
    """The library does what the other tests rely on: chosen calls fail or
    transfer less, only under FAULTINJECT_DIR, and it reports what it did.
    Checked with a small Python program (its os.* calls are libc's)."""
    inside, elsewhere = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    elsewhere.mkdir()
    report = tmp_path / "rep.json"
    prog = (
        "import os, sys, errno\n"
        "res = []\n"
        "for d in sys.argv[1:]:\n"
        "    fd = os.open(d + '/f', os.O_CREAT | os.O_WRONLY, 0o644)\n"
        "    res.append(os.write(fd, b'x' * 1000))\n"
        "    res.append(os.write(fd, b'y' * 1000))\n"
        "    try:\n"
        "        os.fsync(fd); res.append('ok')\n"
        "    except OSError as e:\n"
        "        res.append(errno.errorcode[e.errno])\n"
        "    os.close(fd)\n"
        "    try:\n"
        "        os.mkdir(d + '/sub'); res.append('ok')\n"
        "    except OSError as e:\n"
        "        res.append(errno.errorcode[e.errno])\n"
        "print(res)\n")
    env = faulty_env(inside, "write:short:nth=1,fsync:eio,mkdir:eintr:every=1", report)
    env["LD_PRELOAD"] = str(FAULTINJECT)     # not libasan: python is not instrumented
    p = subprocess.run(["/usr/bin/python3", "-c", prog, str(inside), str(elsewhere)],
                       env=fio_env(env), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str([500, 1000, "EIO", "EINTR", 1000, 1000, "ok", "ok"])
    assert (inside / "f").stat().st_size == 1500 and (elsewhere / "f").stat().st_size == 2000
    assert not (inside / "sub").exists() and (elsewhere / "sub").is_dir()
    rep = json.loads(report.read_text())
    assert rep["dir"] == str(inside.resolve())
    assert [(r["call"], r["kind"], r["matched"], r["injected"]) for r in rep["rules"]] == \
        [("write", "short", 2, 1), ("fsync", "eio", 1, 1), ("mkdir", "eintr", 1, 1)]
    assert rep["calls"]["write"] == 2 and rep["calls"]["open"] == 1

    bad = subprocess.run(["/usr/bin/python3", "-c", "pass"], capture_output=True, text=True,
                         env=fio_env(dict(env, FAULTINJECT="fsync:short"))).stderr
    assert "short applies to read, pread, write, pwrite only" in bad


# ---------------------------------------------------------------------------
# 1. EINTR and short transfers change nothing
# ---------------------------------------------------------------------------

# Every call the engines make on their files, interrupted or cut short
# often. Rules are tried in order; the first that fires decides.
SHORT_EINTR = ",".join([
    "read:short:nth=1", "write:short:nth=1",     # the first: smallfile's tree marker
    "read:short:every=2", "write:short:every=2", "read:eintr:every=3", "write:eintr:every=3",
    "openat:eintr:every=4", "openat2:eintr:every=4", "fsync:eintr:every=2",
    "fdatasync:eintr:every=2", "unlinkat:eintr:every=2", "renameat:eintr:every=2",
    "mkdirat:eintr:every=2", "ftruncate:eintr:every=2",
])

# calls each case must have hit at least once, so that no case passes vacuously
MUST_FIRE = {
    "smallfile": {("read", "short"), ("write", "short"), ("read", "eintr"), ("write", "eintr"),
                  ("openat2", "eintr"), ("fsync", "eintr"), ("fdatasync", "eintr"),
                  ("unlinkat", "eintr"), ("renameat", "eintr"), ("mkdirat", "eintr")},
    "postmark": {("read", "short"), ("write", "short"), ("read", "eintr"), ("write", "eintr"),
                 ("openat", "eintr"), ("fsync", "eintr"), ("unlinkat", "eintr"),
                 ("mkdirat", "eintr")},
    # write: the head of the manifest (.fio-dbreplay); open: the target
    "dbreplay": {("pread", "short"), ("pwrite", "short"), ("pread", "eintr"), ("pwrite", "eintr"),
                 ("write", "short"), ("write", "eintr"), ("open", "eintr"), ("openat", "eintr"),
                 ("fsync", "eintr"), ("fdatasync", "eintr"), ("unlinkat", "eintr"),
                 ("mkdirat", "eintr"), ("ftruncate", "eintr")},
}

# dbreplay's sync mode replays with pread/pwrite (the injection library's
# "pread"/"pwrite", distinct from read/write); its target is opened with
# open() and its manifest's head written with write(): both are interrupted
# at once, then the head is cut short. (The manifest is read with stdio,
# whose read(2) is glibc's internal one: out of the preload's reach.)
DBR_SHORT_EINTR = ",".join(["open:eintr:nth=1", "write:eintr:nth=1", SHORT_EINTR,
                            "pread:short:every=2", "pwrite:short:every=2",
                            "pread:eintr:every=3", "pwrite:eintr:every=3"])


def fired(rep) -> set:
    return {(r["call"], r["kind"]) for r in rep["rules"] if r["injected"]}


def smallfile_short_eintr(base: Path, spec):
    """Layout, then the mix, on base/tree; everything comparable."""
    tree = base / "tree"
    tree.mkdir(parents=True)
    ops = base / "ops.jsonl"
    reps, results = [], []
    for args in (sf_layout(tree), sf_thin(tree), sf_mix(tree, ops)):
        if spec is None:
            results.append(run_fio(args).ok())
        else:
            r, rep = run_faulty(args, tree, spec, base / f"rep{len(reps)}.json")
            results.append(r.ok())
            reps.append(rep)
    return {"json": [json_totals(r) for r in results], "opstats": opstats_counts(ops),
            "tree": content_tree(tree),
            "errors": [l.replace(str(tree), "TREE") for r in results for l in SMALLFILE.errors(r)]}, reps


def postmark_short_eintr(base: Path, spec, buffering, keep):
    """One PostMark run on base/loc. keep: every unlinkat fails with EIO in
    both runs (continue_on_error), so the files stay to be compared."""
    loc = base / "loc"
    loc.mkdir(parents=True)
    ops = base / "ops.jsonl"
    extra = {"continue_on_error": "all"} if keep else {}
    args = pm_run(loc, ops, pm_buffering=buffering, **extra)
    if keep:
        spec = ("unlinkat:eio" if spec is None else spec + ",unlinkat:eio")
    if spec is None:
        res, reps = run_fio(args), []
    else:
        res, rep = run_faulty(args, loc, spec, base / "rep.json")
        reps = [rep]
    if not keep:
        res.ok()
    tree = content_tree(loc)
    if ".fio-postmark" in tree:
        # what it lists; its inodes and times are the run's own
        lines = (loc / ".fio-postmark").read_bytes()[4096:]
        tree[".fio-postmark"] = sorted(tuple(lines[k:k + 64].split()[:3])
                                       for k in range(0, len(lines), 64) if lines[k:k + 1] in b"fd")
    return {"json": json_totals(res), "opstats": opstats_counts(ops), "tree": tree,
            "errors": [l.replace(str(loc), "LOC") for l in POSTMARK.errors(res)]}, reps


def dbreplay_short_eintr(base: Path, trace, spec):
    """Two sync replays of the trace into base/target with dbr_keep=1: the
    first lays the files out in an empty directory, the second (two loops)
    finds them through the manifest and resets them between loops. The
    files stay for comparison (sha256 of every file's bytes)."""
    target = base / "target"
    target.mkdir(parents=True)
    rep = base / "report.jsonl"
    reps, results = [], []
    for i, extra in enumerate(({}, {"dbr_loops": 2})):
        args = dbr(trace, target, dbr_keep=1, dbr_report_file=rep, **extra)
        if spec is None:
            results.append(run_fio(args).ok())
        else:
            r, fi = run_faulty(args, target, spec, base / f"fi{i}.json")
            results.append(r.ok())
            reps.append(fi)
    return {"json": [json_totals(r) for r in results], "opstats": dbr_counts(rep),
            "tree": content_tree(target, hashlib.sha256),
            "errors": [l for r in results for l in DBREPLAY.errors(r)]}, reps


@pytest.mark.parametrize("case", ["smallfile", "postmark-buffered", "postmark-raw",
                                  "postmark-buffered-keep", "dbreplay"])
def test_short_transfers_and_eintr_change_nothing(tmp_path, case):
    """With only EINTR and short reads/writes injected, fio's byte and
    operation counts, the engine's own statistics and the files on disk
    (sizes and bytes) equal a fault-free run of the same job."""
    if case == "smallfile":
        want, _ = smallfile_short_eintr(tmp_path / "clean", None)
        got, reps = smallfile_short_eintr(tmp_path / "faulty", SHORT_EINTR)
        engine = SMALLFILE
    elif case == "dbreplay":
        trace = tmp_path / "db.trace"
        dbr_trace(trace, records=1500)
        want, _ = dbreplay_short_eintr(tmp_path / "clean", trace, None)
        got, reps = dbreplay_short_eintr(tmp_path / "faulty", trace, DBR_SHORT_EINTR)
        engine = DBREPLAY
        # the replay itself, not only the layout: 1,500 records and 2 loops
        assert [l[2]["replayed"] for l in got["opstats"]] == [1500, 3000]
    else:
        buffering = int("buffered" in case)
        keep = case.endswith("-keep")
        want, _ = postmark_short_eintr(tmp_path / "clean", None, buffering, keep)
        got, reps = postmark_short_eintr(tmp_path / "faulty", SHORT_EINTR, buffering, keep)
        engine = POSTMARK
    hit = set().union(*(fired(r) for r in reps))
    missing = MUST_FIRE[engine.name] - hit
    assert not missing, f"these faults were never injected, the case tests nothing: {missing}"
    assert injected(reps[-1], kind="short") > 20 and injected(reps[-1], kind="eintr") > 20
    if "keep" in case:
        # the clean run's errors are the injected unlinkat EIOs; the faulty
        # run must have retried every EINTR in front of them
        deletes = [l for l in want["errors"] if l.startswith("postmark: delete ")]
        assert deletes and all(l.endswith(": Input/output error") for l in deletes)
        assert want["tree"], "keep: files should have stayed"
    else:
        assert not got["errors"], f"errors under EINTR/short only: {got['errors'][:5]}"
    assert not any("Interrupted system call" in l for l in got["errors"])
    assert got["json"] == want["json"], "fio's counts differ from the fault-free run"
    assert got["opstats"] == want["opstats"], "the engine's statistics differ"
    assert got["tree"].keys() == want["tree"].keys(), \
        f"different files: {sorted(set(got['tree']) ^ set(want['tree']))[:10]}"
    differ = [k for k in want["tree"] if got["tree"][k] != want["tree"][k]]
    assert not differ, f"{len(differ)} files differ in size or bytes, e.g. " + \
        ", ".join(f"{k}: {got['tree'][k][:2]} vs {want['tree'][k][:2]}" for k in differ[:3])
    assert got["errors"] == want["errors"]


@pytest.mark.parametrize("io_api", ["sync", "io_uring"])
def test_smallfile_layout_rerun_retries_an_interrupted_truncate(tmp_path, io_api):
    """A layout rerun truncates each file it finds shorter than its model
    size before writing it again (the sync and the io_uring path alike); an
    EINTR from that ftruncate is retried, and the tree comes back whole."""
    tree = tmp_path / "tree"
    tree.mkdir()
    run_fio(sf_layout(tree)).ok()
    whole = content_tree(tree)
    cut = sorted(p for p in tree.rglob("*")
                 if p.is_file() and not p.name.startswith(".") and p.stat().st_size > 1)[::10]
    assert len(cut) >= 10
    for p in cut:
        os.truncate(p, p.stat().st_size // 2)    # not 0: an empty file needs no ftruncate
    res, rep = run_faulty(sf_layout(tree, tree_io_api=io_api), tree, "ftruncate:eintr:every=2",
                          tmp_path / "rep.json")
    # every second call fails: each cut file's truncate but the first is
    # interrupted once and its retry succeeds
    assert injected(rep, "ftruncate", "eintr") == len(cut) - 1, rep
    assert not SMALLFILE.errors(res), SMALLFILE.errors(res)[:3]
    res.ok()
    assert content_tree(tree) == whole


# ---------------------------------------------------------------------------
# 2. I/O errors
# ---------------------------------------------------------------------------

# (engine, case, fault). Each fault hits one call once: the
# job stops with EIO, one line names the operation and the file, and the
# directory is usable by the next run.
EIO_STOP = [
    ("smallfile", "layout-write", "write:eio:nth=40"),
    ("smallfile", "layout-mkdirat", "mkdirat:eio:nth=3"),
    ("smallfile", "layout-fsync", "fsync:eio:nth=30"),
    ("smallfile", "layout-fstat", "fstat:eio:nth=40"),     # the resume check of each file
    ("smallfile", "mix-openat2", "openat2:eio:nth=60"),
    ("smallfile", "mix-read", "read:eio:nth=40"),
    ("smallfile", "mix-renameat", "renameat:eio:nth=10"),
    ("smallfile", "mix-unlinkat", "unlinkat:eio:nth=10"),
    ("postmark", "create-write", "write:eio:nth=100"),
    ("postmark", "tx-read", "read:eio:nth=150"),
    ("postmark", "tx-openat", "openat:eio:nth=400"),
    ("postmark", "tx-fsync", "fsync:eio:nth=20"),
    ("postmark", "tx-unlinkat", "unlinkat:eio:nth=30"),
    ("postmark", "end-unlinkat", "unlinkat:eio:nth=400"),   # 295 deletes in the transactions
    # dbreplay, sync mode, dbr_trace(records=1500): the first word of the case
    # is the record the fault must hit (the layout before the replay makes 3
    # pwrite, 3 fdatasync, 3 ftruncate, 3 mkdirat and ~25 openat calls)
    ("dbreplay", "read-pread", "pread:eio:nth=100"),
    ("dbreplay", "write-pwrite", "pwrite:eio:nth=200"),
    ("dbreplay", "fsync-file", "fsync:eio:nth=10"),
    ("dbreplay", "fsync-directory", "fsync:eio:nth=3"),
    ("dbreplay", "fdatasync", "fdatasync:eio:nth=20"),
    ("dbreplay", "create-openat", "openat:eio:nth=60"),
    ("dbreplay", "create-mkdirat", "mkdirat:eio:nth=4"),
    ("dbreplay", "unlink-unlinkat", "unlinkat:eio:nth=5"),
    ("dbreplay", "truncate-ftruncate", "ftruncate:eio:nth=6"),
]
OP_WORDS = r"(layout|read|stat|create|append|delete|deliver|transaction \d+)"


def dbr_error_line(line, trace, lines, reason="Input/output error"):
    """A dbreplay error line, `dbreplay: TRACE line N: OP PATH: REASON`, whose
    line N of the trace is an OP record on the file PATH. Returns (N, OP)."""
    m = re.fullmatch(rf"dbreplay: {re.escape(str(trace))} line (\d+): (\w+) (\S+): {reason}", line)
    assert m, line
    n, op, path = int(m[1]), m[2], m[3]
    paths = {f[1]: f[5] for f in (l.split() for l in lines) if f and f[0] == "file"}
    rec = lines[n - 1].split()
    assert rec[3] == op and paths[rec[2]] == path, (line, lines[n - 1])
    return n, op


@pytest.mark.parametrize("engine,case,fault", EIO_STOP, ids=[f"{e}-{c}" for e, c, _ in EIO_STOP])
def test_eio_fails_the_job_cleanly(tmp_path, engine, case, fault):
    target = tmp_path / "target"
    target.mkdir()
    user = tmp_path / "user-file"
    user.write_text("not the engine's\n")
    ops = tmp_path / "ops.jsonl"
    if engine == "smallfile":
        if case.startswith("mix"):
            run_fio(sf_layout(target)).ok()
            run_fio(sf_thin(target)).ok()
            args = sf_mix(target, ops)
        else:
            args = sf_layout(target, tree_opstats_file=ops)
    elif engine == "postmark":
        args = pm_run(target, ops, pm_fsync="write" if "fsync" in case else "none")
    else:
        trace = tmp_path / "db.trace"
        trace_lines, _ = dbr_trace(trace, records=1500)
        # dbr_keep=1: what the failed run leaves is the next run's to reset
        args = dbr(trace, target, dbr_keep=1, dbr_report_file=ops)
    res, rep = run_faulty(args, target, fault, tmp_path / "rep.json")
    assert injected(rep) == 1, rep
    assert res.rc != 0, "an I/O error must fail the job\n" + res.describe()
    assert res.json is not None and res.jobs[0]["error"] == EIO, res.describe()
    eng = ENGINE_BY_ID[engine]
    lines = [l for l in eng.errors(res) if "Input/output error" in l]
    assert len(lines) == 1, "one line per error\n" + res.describe()
    if engine == "dbreplay":
        # the trace line, its operation and file
        _, op = dbr_error_line(lines[0], trace, trace_lines)
        assert op == case.split("-")[0], lines[0]
        r = dbr_report(ops)[0]
        assert r["errors"] == 1 and r["last_loop_complete"] is False, r
        assert sum(c["errors"] for c in r["classes"].values()) == 1
        assert r["replayed"] < 1500
    else:
        # the operation and the file (for a failed fsync, the create or append it belonged to)
        assert re.fullmatch(rf"{eng.prefix} {OP_WORDS} {re.escape(str(target))}/\S+: "
                            r"Input/output error", lines[0]), lines[0]
        st = read_opstats(ops)
        assert sum(v["errors"] for l in st for v in l["ops"].values()) == 1, st
    assert user.read_text() == "not the engine's\n"

    # the next run, without faults, on the same directory
    if engine == "smallfile":
        run_fio(sf_layout(target)).ok()
        r = run_fio(sf(target, tree_file_op="read", rw="read", **SF_TREE)).ok()
        assert r.job()["read"]["total_ios"] == SF_TREE["tree_files"]
        assert not SMALLFILE.errors(r)
    elif engine == "dbreplay":
        # it takes the files back to the trace's start, replays all, removes them
        assert (target / ".fio-dbreplay").is_file() and len(os.listdir(target)) > 1
        r = run_fio(dbr(trace, target, dbr_report_file=tmp_path / "ops2.jsonl")).ok()
        r2 = dbr_report(tmp_path / "ops2.jsonl")[0]
        assert r2["replayed"] == 1500 and r2["errors"] == 0 and not DBREPLAY.errors(r)
        assert os.listdir(target) == [], f"left behind: {os.listdir(target)}"
    else:
        r = run_fio(pm_run(target, tmp_path / "ops2.jsonl")).ok()
        assert r.job()["sync"]["total_ios"] == PM_RUN["pm_transactions"]
        assert os.listdir(target) == [], f"left behind: {os.listdir(target)}"


def dbreplay_eio_continue(tmp_path, target, ops):
    """dbreplay: random EIOs on the replay's reads, writes, fsyncs,
    fdatasyncs and truncates. after=3: the layout before the replay writes
    the three files that exist before the trace (pwrite), sizes them
    (ftruncate) and flushes them (fdatasync); a fault there would fail the
    job before the replay. Namespace calls are left alone: a failed create
    makes the file's later unlink fail too (a second, uninjected error)."""
    trace = tmp_path / "db.trace"
    trace_lines, _ = dbr_trace(trace, records=1500)
    spec = ("pread:eio:rate=0.03:seed=2,pwrite:eio:rate=0.02:after=3:seed=3,"
            "fsync:eio:rate=0.05:seed=4,fdatasync:eio:rate=0.05:after=3:seed=5,"
            "ftruncate:eio:rate=0.2:after=3:seed=6")
    res, rep = run_faulty(dbr(trace, target, dbr_report_file=ops, continue_on_error="all"),
                          target, spec, tmp_path / "rep.json")
    assert res.rc == 0, res.describe()
    n = injected(rep)
    assert n > 20 and {r["call"] for r in rep["rules"] if r["injected"]} == \
        {"pread", "pwrite", "fsync", "fdatasync", "ftruncate"}, rep
    r = dbr_report(ops)[0]
    assert r["replayed"] == 1500 and r["last_loop_complete"] is True
    assert json_totals(res)["total_err"] == n == r["errors"] == \
        sum(c["errors"] for c in r["classes"].values()), (json_totals(res), n, r["errors"])
    assert res.jobs[0]["first_error"] == EIO
    # the first ten errors are said, one line each, then that the rest are counted
    lines = [l for l in DBREPLAY.errors(res) if "Input/output error" in l]
    assert len(lines) == 10 == len(DBREPLAY.errors(res)), res.stderr
    said = [dbr_error_line(l, trace, trace_lines)[0] for l in lines]
    assert said == sorted(said)
    assert res.stderr.count("dbreplay: further errors are counted, not shown") == 1
    # the failed records' bytes are not counted as done
    assert r["classes"]["data write"]["bytes"] + r["classes"]["log write"]["bytes"] + \
        r["classes"]["temp write"]["bytes"] == res.job()["write"]["io_bytes"]
    assert os.listdir(target) == [], "the run did not remove its files after the errors"


def sf_errors_ok(res, tree):
    for l in SMALLFILE.errors(res):
        assert re.fullmatch(rf"smallfile: {OP_WORDS} {re.escape(str(tree))}/\S+: "
                            r"Input/output error", l), l


@pytest.mark.parametrize("engine", ENGINE_IDS)
def test_eio_with_continue_on_error_counts_every_error(tmp_path, engine):
    """continue_on_error=all: the run goes on; every injected EIO is one
    failed operation, counted by fio (total_err), by the engine's
    statistics, and said in one line; then the directory is usable."""
    target = tmp_path / "target"
    target.mkdir()
    ops = tmp_path / "ops.jsonl"
    if engine == "smallfile":
        run_fio(sf_layout(target)).ok()
        run_fio(sf_thin(target)).ok()
        # read's first call is the tree marker's, at job start: after=1
        spec = ("openat2:eio:rate=0.03:seed=2,read:eio:rate=0.05:after=1:seed=3,"
                "write:eio:rate=0.02:seed=4,fdatasync:eio:rate=0.03:seed=5,"
                "fsync:eio:rate=0.05:seed=6,renameat:eio:rate=0.05:seed=7,"
                "unlinkat:eio:rate=0.05:seed=8")
        args = sf_mix(target, ops, continue_on_error="all", number_ios=1500)
    elif engine == "postmark":
        spec = ("read:eio:rate=0.05:seed=2,write:eio:rate=0.01:seed=3,"
                "fsync:eio:rate=0.05:seed=4,unlinkat:eio:rate=0.05:seed=5")
        args = pm_run(target, ops, pm_fsync="write", continue_on_error="all")
    else:
        return dbreplay_eio_continue(tmp_path, target, ops)
    res, rep = run_faulty(args, target, spec, tmp_path / "rep.json")
    assert res.rc == 0, res.describe()
    n = injected(rep)
    assert n >= 20, rep
    j = json_totals(res)
    lines = [l for l in ENGINE_BY_ID[engine].errors(res) if "Input/output error" in l]
    st = read_opstats(ops)
    errs = sum(v["errors"] for l in st for v in l["ops"].values())
    assert j["total_err"] == n == len(lines) == errs, (j["total_err"], n, len(lines), errs)
    assert res.jobs[0]["first_error"] == EIO
    if engine == "smallfile":
        sf_errors_ok(res, target)
        assert res.job()["read"]["total_ios"] + res.job()["write"]["total_ios"] + \
            res.job()["trim"]["total_ios"] == 1500
        # a layout over the damaged tree repairs it; then every file reads
        run_fio(sf_layout(target)).ok()
        r = run_fio(sf(target, tree_file_op="read", rw="read", **SF_TREE)).ok()
        assert r.job()["read"]["total_ios"] == SF_TREE["tree_files"]
    else:
        pmc = st[0]["postmark"]
        assert pmc["transactions"] == PM_RUN["pm_transactions"]
        # the deletes that failed left their files; the marker stays with them
        left = [f for _, _, fs in os.walk(target) for f in fs if f != ".fio-postmark"]
        assert len(left) == injected(rep, "unlinkat") > 0
        assert (target / ".fio-postmark").is_file(), \
            "files of the engine's were left without its marker: the next run would refuse them"
        assert f"{len(left)} files could not be removed; .fio-postmark stays" in res.stderr
        r = run_fio(pm_run(target, tmp_path / "ops2.jsonl")).ok()
        assert f"removed {len(left)} files an interrupted run left" in r.stderr, r.stderr
        assert os.listdir(target) == []


# ---------------------------------------------------------------------------
# 3. Out of space
# ---------------------------------------------------------------------------

@pytest.fixture
def small_tmpfs(tmp_path):
    """A 3 MiB tmpfs, grown by remount when a test says so."""
    yield from mounted(tmp_path, "small", "tmpfs", "size=3m")


def remount(d, size):
    r = subprocess.run(["mount", "-o", f"remount,size={size}", str(d)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


ENOSPC_CASES = [("sync", "none"), ("sync", "all"), ("sync", "all+ignore"),
                ("io_uring", "none"), ("io_uring", "all+ignore")]


def dbreplay_out_of_space(tmp_path, small_tmpfs, io_api, coe):
    """dbreplay: 4.6 MiB of 8 KiB writes from four streams, with fsyncs, on
    the 3 MiB tmpfs (dbr_fill=sparse: the engine refuses a target without
    room for the files' full sizes before writing anything otherwise,
    tests/engines/test_dbreplay.py::test_target_too_small). The failed run keeps its
    files (dbr_keep=1); with more room the next run resets them, replays
    every record and removes them. (tests/engines/test_dbreplay.py::
    test_out_of_space_error_path_and_continue_on_error checks the sync
    mode's bytes and report in more detail.)"""
    target = small_tmpfs / "t"
    target.mkdir()
    lines = ["dbtrace 1", "pagesize 8192", "timeunit none", "source tests/engines/test_reliability.py",
             "file 0 data 0 p1024 base/1/1000", "file 1 log 0 p64 pg_wal/0001"]
    lines += [f"stream {i} s{i}" for i in range(4)]
    for i in range(600):
        lines.append(f"- {i % 4} 0 write p{i} 8192")
        lines += [f"- {i % 4} 0 fsync"] if i % 8 == 7 else []
        lines += [f"- {i % 4} 1 write p{i // 4} 8192"] if i % 4 == 0 and i < 256 else []
    n = sum(l.startswith("- ") for l in lines)
    lines.append(f"end {n}")
    trace = tmp_path / "enospc.trace"
    trace.write_text("\n".join(lines) + "\n")
    rep = tmp_path / "report.jsonl"
    extra = dict(dbr_io_api="io_uring", iodepth=8, dbr_stream_depth=2) if io_api == "io_uring" \
        else {}
    if coe.startswith("all"):
        extra["continue_on_error"] = "all"
    if coe == "all+ignore":
        extra["ignore_error"] = "ENOSPC,ENOSPC"
    res = run_fio(dbr(trace, target, dbr_fill="sparse", dbr_keep=1, dbr_report_file=rep,
                      **extra), timeout=120)
    full = [l for l in DBREPLAY.errors(res) if "No space left on device" in l]
    assert full, "the file system never filled up\n" + res.describe()
    for l in full:
        dbr_error_line(l, trace, lines, "No space left on device")
    r = dbr_report(rep)[0]
    assert res.json is not None, res.describe()
    if coe != "all+ignore":
        assert res.rc != 0 and res.jobs[0]["error"] == ENOSPC, res.describe()
        assert r["last_loop_complete"] is False and r["replayed"] < n
        # the records in flight when the job stops fail too, each said
        assert len(full) == r["errors"] <= extra.get("iodepth", 1), (len(full), r["errors"])
    else:
        assert res.rc == 0 and res.jobs[0]["first_error"] == ENOSPC, res.describe()
        assert r["replayed"] == n and r["last_loop_complete"] is True
        assert json_totals(res)["total_err"] == r["errors"] > 10
        assert len(full) == 10 and "further errors are counted" in res.stderr
    assert r["errors"] == sum(c["errors"] for c in r["classes"].values())
    # a record that failed part way counts no bytes, as in fio
    assert sum(c["bytes"] for k, c in r["classes"].items() if k.endswith(" write")) == \
        sum(j["write"]["io_bytes"] for j in res.jobs)
    assert (target / ".fio-dbreplay").is_file()
    remount(small_tmpfs, "16m")
    res = run_fio(dbr(trace, target, dbr_fill="sparse", dbr_report_file=rep, **extra),
                  timeout=120).ok()
    r = dbr_report(rep)[-1]
    assert r["replayed"] == n and r["errors"] == 0 and not DBREPLAY.errors(res)
    assert res.job()["write"]["io_bytes"] == (600 + 64) * 8192
    assert os.listdir(target) == []


@pytest.mark.mounts
@needs_root
@pytest.mark.parametrize("io_api,coe", ENOSPC_CASES, ids=[f"{a}-{c}" for a, c in ENOSPC_CASES])
@pytest.mark.parametrize("engine", ENGINE_IDS)
def test_out_of_space_then_more_space(tmp_path, small_tmpfs, engine, io_api, coe):
    """The file system fills up mid-run: fio fails the job, the engine says
    which file, nothing crashes; with more space the next run on the same
    directory succeeds (smallfile: the layout completes and equals one made
    with room to spare; postmark: the run completes, nothing left).
    continue_on_error=all goes on only past errors fio deems non-fatal: EIO
    and EILSEQ unless ignore_error= lists others (fio's td_error.c), so
    "all" alone stops at ENOSPC like "none", and "all+ignore" (with
    ignore_error=ENOSPC,ENOSPC) runs to the end and counts every error.
    (tests/engines/test_smallfile_safety.py::test_out_of_space_is_a_clear_error and
    tests/engines/test_postmark_uring.py::test_io_uring_enospc check the first
    message in more detail.)"""
    if engine == "dbreplay":
        return dbreplay_out_of_space(tmp_path, small_tmpfs, io_api, coe)
    target = small_tmpfs / "t"
    target.mkdir()
    ops = tmp_path / "ops.jsonl"
    extra = dict(iodepth=8) if io_api == "io_uring" else {}
    if coe.startswith("all"):
        extra["continue_on_error"] = "all"
    if coe == "all+ignore":
        extra["ignore_error"] = "ENOSPC,ENOSPC"   # fio 3.33: read,write lists
    if engine == "smallfile":
        # ~6.6 MiB: ENOSPC mid-layout, so without the check of the room first
        tree = dict(tree_files=300, tree_fanout=4, tree_depth=1,
                    tree_file_size_dist="uniform:4k:40k", tree_space_check=0)
        args = sf(target, tree_file_op="layout", rw="write", tree_io_api=io_api, tree_opstats_file=ops,
                  **tree, **extra)
    else:
        args = pm(target, pm_number=600, pm_transactions=300, pm_size_low=500,
                  pm_size_high=20000, pm_io_api=io_api, pm_opstats_file=ops,
                  pm_space_check=0, **extra)
    res = run_fio(args, timeout=120)
    eng = SMALLFILE if engine == "smallfile" else POSTMARK
    full = [l for l in eng.errors(res) if "No space left on device" in l]
    assert full, "the file system never filled up\n" + res.describe()
    for l in full:
        assert re.fullmatch(rf"{eng.prefix} {OP_WORDS} {re.escape(str(target))}/\S+: "
                            r"No space left on device", l), l
    st = read_opstats(ops)
    errs = sum(v["errors"] for l in st for v in l["ops"].values())
    assert res.json is not None, res.describe()
    if coe != "all+ignore":
        assert res.rc != 0 and res.jobs[0]["error"] == ENOSPC, res.describe()
        # the operations in flight when the job stops fail too (postmark
        # names only the first of them, smallfile each)
        assert len(full) <= errs <= extra.get("iodepth", 1), (len(full), errs)
    else:
        assert res.rc == 0, res.describe()
        assert res.jobs[0]["first_error"] == ENOSPC
        assert json_totals(res)["total_err"] == len(full) == errs > 0
    if engine == "smallfile":
        if coe == "all+ignore":
            assert res.job()["write"]["total_ios"] == 300, "every file was tried"
        remount(small_tmpfs, "16m")
        r = run_fio(args, timeout=120).ok()
        assert not eng.errors(r)
        ref = tmp_path / "ref"
        ref.mkdir()
        run_fio(sf(ref, tree_file_op="layout", rw="write", **tree)).ok()
        assert content_tree(target) == content_tree(ref), \
            "the layout resumed after ENOSPC differs from a clean one"
    else:
        if coe == "all+ignore":
            # the run went on to its end and removed its files
            assert st[0]["finished"] and st[0]["postmark"]["transactions"] == 300
        assert os.listdir(target) == [], f"left behind: {os.listdir(target)[:10]}"
        remount(small_tmpfs, "32m")
        r = run_fio(args, timeout=120).ok()
        assert r.job()["sync"]["total_ios"] == 300 and not eng.errors(r)
        assert os.listdir(target) == []
