"""The engine profiles and helpers of the reliability tests
(test_reliability*.py): how to run each engine on a directory, the
traces dbreplay replays, faults injected by build/faultinject.so, and
what a run left behind read back."""
import hashlib
import json
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

from helpers.fio import DBR_ENGINE, ENGINE, MARKER, PM_ENGINE, REPO, run_fio
from helpers.trees import marker_params, read_opstats

FAULTINJECT = REPO / "build" / "faultinject.so"
VALGRIND_SUPP = REPO / "tests" / "valgrind" / "fio.supp"


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
# the database page replay engine (its summary is silenced: dbr_report=none).
# dbr_trace's reads past the end of a file are recorded at the length asked
# (a capture records what was read): the engine says they read fewer bytes
# than the trace's, a notice of what the trace holds, not an error.
DBREPLAY = Engine("dbreplay", DBR_ENGINE, "dbreplay:",
                  notice=r"further errors are counted|^dbreplay: \d+ reads returned fewer "
                         r"bytes than the trace's .*: their file was shorter than in the "
                         r"capture when they ran$")
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
    times or inode numbers, so two runs' trees compare equal (smallfile's
    marker without the inode of its directory, which it records)."""
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
            elif n == MARKER:
                data = marker_params(p).encode()
                out[rel] = ("file", len(data), digest(data).hexdigest())
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
