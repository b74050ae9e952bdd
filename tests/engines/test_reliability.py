"""Reliability of every engine (issue 7): out of space, injected I/O errors,
EINTR and short transfers, SIGKILL and resume, foreign files and symlinks,
load (64 jobs, io_uring at iodepth 128, memory over hundreds of thousands
of operations) and a valgrind run. docs/RELIABILITY.md has the table of cases and what each showed.

Faults are injected by build/faultinject.so (tests/faultinject/faultinject.c,
`make build/faultinject.so`), loaded into the real fio with LD_PRELOAD and
limited to the job's directory, so fio's own files are never hit. It wraps
libc's entry points, so it reaches the engines' sync modes only: io_uring
requests do not go through read(2)/write(2) (the io_uring modes are
covered here by the out-of-space, kill, load and memory cases).

Tests are parametrized by engine (ENGINES below); an engine added later
gets a profile here and joins every case. dbreplay, the third, replays
traces written by dbr_trace(); where its checks differ from the file-tree
engines' a dbreplay_* function does them (every dbreplay case has
"dbreplay" in its pytest ID).
"""
import hashlib
import json
import os
import random
import re
import subprocess
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import (DBR_ENGINE, ENGINE, FIO, IS_ROOT, PM_ENGINE, REPO,
                      descendants, fio_env, kill_group, mounted, read_opstats, run_fio, snapshot,
                      start_fio_background, tree_files)

FAULTINJECT = REPO / "build" / "faultinject.so"
VALGRIND_SUPP = REPO / "tests" / "valgrind" / "fio.supp"
EIO, ENOSPC = 5, 28

needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root to mount tmpfs")


@pytest.fixture(scope="module", autouse=True)
def _faultinject_built():
    if not FAULTINJECT.is_file():
        pytest.fail(f"{FAULTINJECT} is missing: run `make build/faultinject.so` in {REPO}",
                    pytrace=False)


# ---------------------------------------------------------------------------
# Engine profiles: how to run each engine on a directory
# ---------------------------------------------------------------------------

@dataclass
class Engine:
    name: str
    so: Path
    prefix: str         # its stderr lines start with this
    notice: str = "$^"  # regex of its lines that are notices, not errors

    def errors(self, res) -> list:
        return [l for l in res.stderr.splitlines()
                if l.startswith(self.prefix) and not re.search(self.notice, l)]


# a read job past one pass over its tree says so: a notice, not an error
SMALLFILE = Engine("smallfile", ENGINE, "smallfile:",
                   notice=r"^smallfile: job \S+ read \d+ files of a \d+-file tree: ")
# what PostMark 1.53 would do differently (docs/postmark.md)
POSTMARK = Engine("postmark", PM_ENGINE, "postmark:", notice=r"PostMark 1\.53 |as PostMark does")
# the database page replay engine (its summary is silenced: dbr_report=none)
DBREPLAY = Engine("dbreplay", DBR_ENGINE, "dbreplay:", notice=r"further errors are counted")
ENGINES = [SMALLFILE, POSTMARK, DBREPLAY]
ENGINE_IDS = [e.name for e in ENGINES]
ENGINE_BY_ID = {e.name: e for e in ENGINES}


def sf(tree, name="job", **opts) -> list:
    args = [f"--name={name}", f"--ioengine=external:{SMALLFILE.so}", f"--tree_dir={tree}"]
    return args + [f"--{k}={v}" for k, v in opts.items()]


def pm(loc, name="pm", **opts) -> list:
    args = [f"--name={name}", f"--ioengine=external:{POSTMARK.so}", f"--pm_location={loc}",
            "--pm_report=none"]
    return args + [f"--{k}={v}" for k, v in opts.items()]


# smallfile: a maildir tree, sizes that are not multiples of bs, syncs on
# files and directories, and a mix of every operation (each libc call the
# engine makes: openat2, read, write, fsync, fdatasync, unlinkat, renameat,
# mkdirat).
SF_TREE = dict(tree_files=240, tree_fanout=4, tree_depth=2, tree_maildir=1,
               tree_file_size_dist="uniform:100:20000", bs="4k")
SF_MIX = "read:25,stat:5,create:10,append:15,deliver:25,delete:20"


def sf_layout(tree, **extra):
    return sf(tree, name="layout", tree_file_op="layout", rw="write", tree_file_sync="fsync",
              tree_dir_sync=1, **SF_TREE, **extra)


def sf_thin(tree, **extra):
    """Deletes a third of the tree, so that creates find absent files."""
    return sf(tree, name="thin", tree_file_op="delete", rw="randread", number_ios=80,
              tree_dir_sync=1, **SF_TREE, **extra)


def sf_mix(tree, opstats, **extra):
    opts = dict(name="mix", tree_file_op=SF_MIX, rw="randread", number_ios=500, tree_file_sync="fdatasync",
                tree_dir_sync=1, tree_opstats_file=opstats, **SF_TREE)
    return sf(tree, **dict(opts, **extra))


# postmark: PostMark's syscall pattern, buffered (stdio's calls) or raw
# (PostMark's chunks), with subdirectories (mkdirat) and transaction fsyncs.
PM_RUN = dict(pm_number=150, pm_transactions=600, pm_size_low=100, pm_size_high=12000,
              pm_read_block=700, pm_write_block=300, pm_subdirectories=3,
              pm_fsync="transaction")


def pm_run(loc, opstats, **extra):
    return pm(loc, pm_opstats_file=opstats, **dict(PM_RUN, **extra))


# dbreplay: a PostgreSQL-like trace (tests/engines/test_dbreplay.py has the format's
# own cases) with every operation the engine replays: page reads (some past
# the end of file: short reads that end the record), writes that extend a
# file, fsync, fdatasync, sync_file_range, trim, truncate, a WAL segment and
# a directory the trace creates, a temporary file created, written, read
# and unlinked again and again, fsyncs of directories and of the target.
DBR_PAGE = 8192
DBR_FILES = [
    # id, role, size, maxsize, path
    (0, "data", "p48", "p64", "base/1/1000"),
    (1, "data", "p16", "p16", "base/1/1001"),
    (2, "log", "p32", "p32", "pg_wal/000000010000000000000001"),
    (3, "log", "-", "p32", "pg_wal/000000010000000000000002"),
    (4, "directory", "0", "0", "pg_wal"),
    (5, "directory", "0", "0", "."),
    (6, "temp", "-", "p8", "base/pgsql_tmp/pgsql_tmp42.0"),
    (7, "directory", "-", "0", "pg_wal/archive_status"),
]


def dbr_trace(path, records=1500, streams=4, seed=1, step_us=20, full=True):
    """Writes a trace of `records` records over `streams` streams (0: the
    WAL writer, 1: the checkpointer, 2 and up: backends; stream 2 also
    spills to the temporary file). full=False: no truncate, no read past
    the end of a file, no namespace operation, so that the bytes of every
    record are known in any order of replay (the load cases). Returns
    (the trace's lines, {op: [records, bytes]}); line N of the trace is
    lines[N - 1]."""
    rnd = random.Random(seed)
    lines = ["dbtrace 1", f"pagesize {DBR_PAGE}", "timeunit us",
             f"source tests/engines/test_reliability.py dbr_trace seed {seed}"]
    lines += [f"file {i} {role} {size} {mx} {p}" for i, role, size, mx, p in DBR_FILES]
    names = ["walwriter", "checkpointer"] + [f"backend-{i}" for i in range(2, streams)]
    lines += [f"stream {i} {n}" for i, n in enumerate(names)]
    counts = {}
    t = 1000
    wal = {"file": 2, "page": 0, "since_sync": 0, "switched": not full}
    tmp = {"present": False, "pages": 0, "read": 0}
    archive = False
    n = 0

    def rec(s, f, op, args="", nbytes=0):
        nonlocal n
        lines.append(f"{t} {s} {f} {op} {args}".rstrip())
        c = counts.setdefault(op, [0, 0])
        c[0] += 1
        c[1] += nbytes
        n += 1

    while n < records:
        t += step_us
        s = rnd.randrange(streams)
        if s == 0:                      # WAL: sequential pages, fdatasync every 4
            if not wal["switched"] and wal["page"] >= 24:
                rec(0, 3, "create")
                rec(0, 4, "fsync")
                wal.update(file=3, page=0, switched=True)
            elif wal["since_sync"] >= 4:
                rec(0, wal["file"], "fdatasync")
                wal["since_sync"] = 0
            else:
                # a WAL record is not a page: 8 KiB or a part of one
                ln = DBR_PAGE if rnd.random() < 0.7 else rnd.randrange(512, DBR_PAGE, 512)
                rec(0, wal["file"], "write", f"p{wal['page'] % 32} {ln}", ln)
                wal["page"] += 1
                wal["since_sync"] += 1
        elif s == 1:                    # checkpointer
            x = rnd.random()
            if x < 0.55:
                f = rnd.choice((0, 1))
                rec(1, f, "write", f"p{rnd.randrange(64 if f == 0 else 16)} {DBR_PAGE}", DBR_PAGE)
            elif x < 0.65:
                rec(1, 1, "sync_file_range", f"p{rnd.randrange(14)} p2")
            elif x < 0.75:
                rec(1, rnd.choice((0, 1)), "fsync")
            elif x < 0.82:
                rec(1, rnd.choice((4, 5)), "fsync")
            elif x < 0.9:
                rec(1, 1, "trim", f"p{rnd.randrange(15)} p1", DBR_PAGE)
            elif full and x < 0.95:
                rec(1, 0, "truncate", f"p{rnd.randrange(40, 64)}")
            elif full:
                rec(1, 7, "unlink" if archive else "create")
                archive = not archive
            else:
                rec(1, 0, "fdatasync")
        else:                           # backends
            if s == 2 and rnd.random() < 0.25 and full:
                if not tmp["present"]:
                    rec(2, 6, "create")
                    tmp.update(present=True, pages=0, read=0)
                elif tmp["pages"] < 6:
                    rec(2, 6, "write", f"p{tmp['pages']} {DBR_PAGE}", DBR_PAGE)
                    tmp["pages"] += 1
                elif tmp["read"] < 3:
                    # the last read reaches past the end: a short read
                    rec(2, 6, "read", f"p{tmp['read'] * 2} p3", -1)
                    tmp["read"] += 1
                else:
                    rec(2, 6, "unlink")
                    tmp["present"] = False
            elif rnd.random() < 0.8:
                # full: some reads past the (truncated) end of file 0
                pg = rnd.randrange(64 if full else 48)
                rec(s, 0, "read", f"p{pg} {DBR_PAGE}", -1 if full else DBR_PAGE)
            else:
                rec(s, 0, "write", f"p{rnd.randrange(64 if full else 48)} {DBR_PAGE}", DBR_PAGE)
    lines.append(f"end {n}")
    Path(path).write_text("\n".join(lines) + "\n")
    return lines, counts


def dbr(trace, target=None, name="r", **opts) -> list:
    args = [f"--name={name}", f"--ioengine=external:{DBREPLAY.so}", f"--dbr_trace={trace}",
            "--dbr_report=none"]
    if target is not None:
        args.append(f"--dbr_target={target}")
    return args + [f"--{k}={v}" for k, v in opts.items()]


def dbr_report(path) -> list:
    """The engine's report lines (dbr_report_file), one per job."""
    return read_opstats(path)


def dbr_counts(path) -> list:
    """The report's counters without times: per job, the classes' records,
    bytes and errors, and the replay's counters (runs in the file's order)."""
    keep = ("trace_records", "replayed", "filtered", "loops", "last_loop_complete", "errors",
            "implicit_creates", "skipped", "unsupported")
    out = [(l["job"], l["subjob"], {k: l[k] for k in keep},
            {c: (v["n"], v["bytes"], v["errors"]) for c, v in l["classes"].items()})
           for l in dbr_report(path)]
    return sorted(out, key=lambda x: (x[0], x[1]))     # stable


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def faulty_env(target, spec, report) -> dict:
    """LD_PRELOAD faultinject.so after whatever is preloaded already (libasan
    in the sanitizer run must stay first)."""
    pre = os.environ.get("LD_PRELOAD", "").strip()
    return {"LD_PRELOAD": f"{pre} {FAULTINJECT}".strip(), "FAULTINJECT": spec,
            "FAULTINJECT_DIR": str(target), "FAULTINJECT_REPORT": str(report)}


def run_faulty(args, target, spec, report, **kw):
    """fio under faultinject.so; returns (result, the library's report)."""
    res = run_fio(args, env=faulty_env(target, spec, report), **kw)
    assert report.is_file(), "faultinject.so wrote no report\n" + res.describe()
    return res, json.loads(report.read_text())


def injected(rep, call=None, kind=None) -> int:
    return sum(r["injected"] for r in rep["rules"]
               if (call is None or r["call"] == call) and (kind is None or r["kind"] == kind))


def content_tree(root, digest=hashlib.sha1) -> dict:
    """{relpath: (kind, size, digest of a file's bytes or a link's target)}: no
    times or inode numbers, so two runs' trees compare equal."""
    root = Path(root)
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath, n)
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = ("link", 0, os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", 0, "")
            else:
                out[rel] = ("file", p.stat().st_size, digest(p.read_bytes()).hexdigest())
    return out


def outside(snap: dict, target: str) -> dict:
    """A parent directory's snapshot without the target's own subtree."""
    return {k: v for k, v in snap.items() if k != target and not k.startswith(target + "/")}


def json_totals(res) -> dict:
    """Per direction: operations, bytes, errors, summed over all jobs."""
    out = {}
    for d in ("read", "write", "trim", "sync"):
        out[d] = (res.total(d, "total_ios"), sum(j[d].get("io_bytes", 0) for j in res.jobs))
    out["total_err"] = sum(j.get("total_err", 0) for j in res.jobs)
    out["write_prios"] = sorted((p["prio"], p["clat_ns"]["N"]) for j in res.jobs
                                for p in j["write"].get("prios", []))
    return out


def opstats_counts(path) -> list:
    """The engine's own counters from its opstats lines, without times."""
    out = []
    for line in read_opstats(path):
        ops = {k: {f: v[f] for f in v if not f.startswith("lat_")}
               for k, v in line["ops"].items()}
        pmc = {k: v for k, v in line.get("postmark", {}).items() if k != "phase_ns"}
        out.append((line["job"], line["subjob"], ops, pmc))
    return sorted(out, key=lambda x: (x[0], x[1]))


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
    return {"json": json_totals(res), "opstats": opstats_counts(ops), "tree": content_tree(loc),
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
        # numjobs: the job directories pm.K the killed run made stay (empty):
        # the engine removes only directories it made in this run
        rest = [str(Path(d, f).relative_to(target)) for d, ds, fs in os.walk(target)
                for f in fs + ds]
        assert sorted(rest) == sorted(f"pm.{k}" for k in range(njobs) if njobs > 1), rest
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
    tests/engines/test_dbreplay.py's test_symlinked_parent_is_not_followed,
    test_refuses_a_users_file_at_a_trace_path, test_forged_manifest_is_refused
    and test_packed_refuses_a_foreign_file.)"""
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
