"""The postmark engine against the real PostMark 1.53 (Debian's `postmark`).

For each configuration both run under strace on fresh directories, and:
- the counters and byte totals of the two reports are equal (and, for runs
  under a second with pm_whole_seconds=1, the reports are identical);
- every system call either makes on the files (open with its flags, fstat,
  lseek, each read and write with its requested size, close, unlink) and on
  the subdirectories (mkdir, rmdir) is listed per file operation; the two
  lists must be equal, which implies equal per-syscall counts and equal
  request-size histograms (also compared, for readable failures).
The engine's calls are the *at() forms relative to a directory it opened
(openat(dirfd, "17"), unlinkat, mkdirat) where PostMark names whole paths
(openat(AT_FDCWD, "/loc/17"), unlink, mkdir); the comparison maps both to the
file's path. Open flags are compared without the engine's additions
O_EXCL|O_NOFOLLOW|O_CLOEXEC.
"""
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import FIO, PM_ENGINE, REPO, fio_env, run_fio

POSTMARK = shutil.which("postmark") or "/usr/bin/postmark"
TIMEOUT = 120
STRACE_CALLS = ("openat,unlink,unlinkat,read,write,lseek,close,newfstatat,fstat,"
                "mkdir,mkdirat,rmdir")
ENGINE_FLAGS = {"O_EXCL", "O_NOFOLLOW", "O_CLOEXEC", "O_LARGEFILE"}


def _env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


@pytest.fixture(scope="module", autouse=True)
def _tools():
    for tool, pkg in ((POSTMARK, "postmark"), (shutil.which("strace") or "/usr/bin/strace", "strace")):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            pytest.fail(f"{tool} is not installed: apt-get install {pkg} "
                        "(or scripts/install-deps.sh --test)", pytrace=False)


@pytest.fixture
def pmdir():
    """Short paths: postmark keeps file names in an 81-byte buffer."""
    d = Path(tempfile.mkdtemp(prefix="pm-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------
# Configurations: PostMark settings and the same as engine options
# ---------------------------------------------------------------------------

DEFAULTS = {"size": (500, 10000), "number": 500, "transactions": 500, "seed": 42,
            "read": 512, "write": 512, "buffering": True, "bias_read": 5,
            "bias_create": 5, "subdirs": 0, "report": "verbose", "locations": [(0, 1)]}


def pmrc(cfg, dirs):
    c = dict(DEFAULTS, **cfg)
    lines = [f"set size {c['size'][0]} {c['size'][1]}", f"set number {c['number']}",
             f"set transactions {c['transactions']}", f"set seed {c['seed']}",
             f"set read {c['read']}", f"set write {c['write']}",
             f"set buffering {'true' if c['buffering'] else 'false'}",
             f"set bias read {c['bias_read']}", f"set bias create {c['bias_create']}",
             f"set report {c['report']}"]
    if c["subdirs"]:
        lines.append(f"set subdirectories {c['subdirs']}")  # postmark refuses 0
    for i, (d, w) in enumerate(c["locations"]):
        lines.append(f"set location {'+' if i else ''}{dirs[d]} {w}")
    return "\n".join(lines) + "\nrun\nquit\n"


def engine_args(cfg, dirs, report_file, **extra):
    c = dict(DEFAULTS, **cfg)
    args = ["--name=pm", f"--ioengine=external:{PM_ENGINE}",
            f"--pm_size_low={c['size'][0]}", f"--pm_size_high={c['size'][1]}",
            f"--pm_number={c['number']}", f"--pm_transactions={c['transactions']}",
            f"--pm_seed={c['seed']}", f"--pm_read_block={c['read']}",
            f"--pm_write_block={c['write']}", f"--pm_buffering={int(c['buffering'])}",
            f"--pm_bias_read={c['bias_read']}", f"--pm_bias_create={c['bias_create']}",
            f"--pm_subdirectories={c['subdirs']}", f"--pm_report={c['report']}",
            "--pm_location=" + ":".join(f"{dirs[d]}@{w}" for d, w in c["locations"]),
            f"--pm_report_file={report_file}"]
    args += [f"--{k}={v}" for k, v in extra.items()]
    return args


CONFIGS = {
    "defaults": {},
    "article_000": {"read": 4096, "write": 4096, "transactions": 1500,
                    "size": (500, 500000), "number": 300},
    "raw_small_blocks": {"buffering": False, "read": 100, "write": 300, "size": (10, 5000),
                         "number": 200, "transactions": 1500, "seed": 7},
    "buffered_odd_blocks": {"read": 4097, "write": 1, "size": (1, 9000), "number": 64,
                            "transactions": 600, "seed": 12345},
    "buffered_large_blocks": {"read": 10000, "write": 65536, "size": (5000, 300000),
                              "number": 40, "transactions": 200},
    "raw_large_blocks_exact": {"buffering": False, "read": 4096, "write": 4096,
                               "size": (4096, 4097), "number": 50, "transactions": 300},
    "no_read_append": {"bias_read": -1, "bias_create": 7, "number": 100, "transactions": 500},
    "no_create_delete": {"bias_create": -1, "bias_read": 9, "number": 100,
                         "transactions": 500, "size": (100, 900)},
    "locations_subdirs_terse": {"locations": [(0, 2), (1, 1), (2, 4)], "subdirs": 3,
                                "number": 150, "transactions": 600, "seed": 99,
                                "report": "terse", "read": 700, "write": 300},
    "raw_subdirs": {"buffering": False, "subdirs": 5, "number": 80, "transactions": 400,
                    "locations": [(0, 1), (1, 3)]},
    "table_full": {"bias_create": 10, "number": 20, "transactions": 200, "size": (10, 100)},
    "fixed_size_file_full": {"size": (1000, 1000), "number": 100, "transactions": 500},
    "appends_until_full": {"bias_read": 0, "bias_create": 10, "number": 10,
                           "transactions": 400, "size": (100, 150), "buffering": False},
}


# ---------------------------------------------------------------------------
# strace parsing
# ---------------------------------------------------------------------------

LINE = re.compile(r"^(\w+)\((.*)\) += (-?\d+)")
FD = re.compile(r"^(-?\d+|AT_FDCWD)(?:<([^>]*)>)?")


def _args(s):
    """Top-level comma-separated arguments of a syscall (strings are -s 0)."""
    out, depth, cur, q = [], 0, "", False
    for ch in s:
        if q:
            cur += ch
            if ch == '"':
                q = False
            continue
        if ch == '"':
            q = True
        elif ch in "{[(<":
            depth += 1
        elif ch in "}])>":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    out.append(cur.strip())
    return out


def _unquote(a):
    return a[1:-1] if a.startswith('"') else a


def _fd_path(a):
    m = FD.match(a)
    return m.group(2) if m else None


def trace_calls(log, roots):
    """[(call, path relative to its location root, detail)] for every call
    on a numbered file or an s<N> subdirectory under @roots."""
    calls = []

    def rel(path):
        for i, r in enumerate(roots):
            if path == r or path.startswith(r + "/"):
                return f"L{i}" + path[len(r):]
        return None

    def numbered(p):
        return p is not None and re.fullmatch(r"L\d+(/s\d+)?/\d+", p)

    def ours(p):
        return numbered(p) or (p is not None and re.fullmatch(r"L\d+/s\d+", p))

    for line in log.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        call, argstr, rc = m.group(1), m.group(2), int(m.group(3))
        a = _args(argstr)
        if call == "openat":
            base = _fd_path(a[0])
            name = _unquote(a[1])
            path = name if name.startswith("/") else f"{base}/{name}"
            p = rel(path)
            if numbered(p):
                flags = set(a[2].split("|")) - ENGINE_FLAGS
                calls.append(("open", p, "|".join(sorted(flags)) + (" ok" if rc >= 0 else " fail")))
        elif call in ("unlink", "rmdir", "mkdir"):
            p = rel(_unquote(a[0]))
            if ours(p):
                calls.append((call, p, rc >= 0))
        elif call in ("unlinkat", "mkdirat"):
            p = rel(f"{_fd_path(a[0])}/{_unquote(a[1])}")
            if ours(p):
                if call == "mkdirat":
                    calls.append(("mkdir", p, rc >= 0))
                else:
                    calls.append(("rmdir" if "AT_REMOVEDIR" in a[2] else "unlink", p, rc >= 0))
        elif call in ("read", "write", "lseek", "close", "newfstatat", "fstat"):
            p = rel(_fd_path(a[0]) or "")
            if not numbered(p):
                continue
            if call in ("read", "write"):
                calls.append((call, p, int(a[2])))
            elif call == "lseek":
                calls.append((call, p, a[2]))
            elif call == "close":
                calls.append((call, p, None))
            else:
                calls.append(("fstat", p, None))
    return calls


def summary(calls):
    counts = collections.Counter(c[0] for c in calls)
    sizes = collections.Counter((c[0], c[2]) for c in calls if c[0] in ("read", "write"))
    return counts, sizes


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------

def postmark_report(stdout):
    i = stdout.rfind("Done\n")
    assert i >= 0, stdout
    return stdout[i + len("Done\n"):]


def verbose_counts(report):
    s = re.sub(r"\t\d+ seconds total", "\tT seconds total", report)
    s = re.sub(r"\t\d+ seconds of transactions", "\tT seconds of transactions", s)
    s = re.sub(r"\(\d+ per second\)", "(R per second)", s)
    s = re.sub(r"\([\d.]+ (megabytes|kilobytes|bytes) per second\)", "(R per second)", s)
    assert s.startswith("Time:\n") and "written (R per second)\n" in s, report
    return s


def terse_numbers(report):
    f = [float(x) for x in report.split()]
    assert len(f) == 13, report
    return f


def terse_counts(report):
    f = terse_numbers(report)
    el, tx = f[0], f[1]
    return {"created": round(f[3] * el), "created_mixed": round(f[5] * tx),
            "read": round(f[6] * tx), "appended": round(f[7] * tx),
            "deleted": round(f[8] * el), "deleted_mixed": round(f[10] * tx),
            "bytes_read": round(f[11] * el), "bytes_written": round(f[12] * el)}


# ---------------------------------------------------------------------------
# Running both
# ---------------------------------------------------------------------------

def make_dirs(pmdir, who, n=3):
    dirs = []
    for i in range(n):
        d = pmdir / f"{who}{i}"
        d.mkdir()
        dirs.append(str(d))
    return dirs


def strace_prefix(log):
    """One log per process (-ff): no call is split by another process's."""
    return ["strace", "-ff", "-y", "-s", "0", "-o", str(log), "-e", f"trace={STRACE_CALLS}"]


def read_logs(log):
    """The per-process logs, the one with the most lines (the process that
    did the file operations) last so that it is parsed in order."""
    logs = sorted(log.parent.glob(log.name + ".*"), key=lambda p: p.stat().st_size)
    return "\n".join(p.read_text() for p in logs)


def run_real(pmdir, cfg, strace=True):
    dirs = make_dirs(pmdir, "p")
    rc_file = pmdir / "pmrc"
    rc_file.write_text(pmrc(cfg, dirs))
    log = pmdir / "pm.strace"
    cmd = [POSTMARK, str(rc_file)]
    if strace:
        cmd = strace_prefix(log) + cmd
    r = subprocess.run(cmd, cwd=pmdir, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=TIMEOUT, env=_env())
    return r, dirs, (read_logs(log) if strace else "")


def run_engine(pmdir, cfg, strace=True, **extra):
    dirs = make_dirs(pmdir, "e")
    report = pmdir / "engine.report"
    args = engine_args(cfg, dirs, report, **extra)
    log = pmdir / "fio.strace"
    prefix = strace_prefix(log) if strace else None
    res = run_fio(args, prefix=prefix, timeout=TIMEOUT)
    return res, dirs, (read_logs(log) if strace else ""), \
        (report.read_text() if report.exists() else "")


def split_ops(calls):
    """Calls grouped per file operation (each starts with an open or unlink)."""
    ops = []
    for c in calls:
        if c[0] in ("open", "unlink", "mkdir", "rmdir") or not ops:
            ops.append([c])
        else:
            ops[-1].append(c)
    return ops


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_same_operations_and_syscalls_as_postmark(pmdir, name):
    cfg = CONFIGS[name]
    real, pdirs, plog = run_real(pmdir, cfg)
    assert real.returncode == 0, real.stderr
    assert "Error" not in real.stderr, real.stderr
    res, edirs, elog, ereport = run_engine(pmdir, cfg, pm_whole_seconds=1)
    res.ok()
    preport = postmark_report(real.stdout)

    # counters and byte totals
    if cfg.get("report") == "terse":
        assert terse_counts(ereport) == terse_counts(preport)
        if preport.startswith("1 1 ") and ereport.startswith("1 1 "):
            assert ereport == preport
    else:
        assert verbose_counts(ereport) == verbose_counts(preport)
        one = "Time:\n\t1 seconds total\n"
        if preport.startswith(one) and ereport.startswith(one):
            assert ereport == preport

    # system calls
    pcalls = trace_calls(plog, pdirs)
    ecalls = trace_calls(elog, edirs)
    assert len(pcalls) > 100
    assert summary(ecalls) == summary(pcalls)
    pops, eops = split_ops(pcalls), split_ops(ecalls)
    assert len(eops) == len(pops)
    for i, (p, e) in enumerate(zip(pops, eops)):
        assert e == p, f"file operation {i} differs"

    # both leave the locations as they found them
    for d in pdirs + edirs:
        assert os.listdir(d) == [], d


def test_out_of_files(pmdir):
    """Deleting in every transaction empties the pool: PostMark prints "out
    of files!" and stops, leaving its files and printing no report. The
    engine makes the same calls up to that point, says so, then deletes what
    is left and reports."""
    cfg = {"bias_create": 0, "number": 20, "transactions": 1000}
    real, pdirs, plog = run_real(pmdir, cfg)
    assert "out of files!" in real.stdout
    res, edirs, elog, ereport = run_engine(pmdir, cfg)
    res.ok()
    assert "postmark: out of files after 20 transactions" in res.stderr
    pcalls, ecalls = trace_calls(plog, pdirs), trace_calls(elog, edirs)
    assert ecalls[:len(pcalls)] == pcalls
    assert [c[0] for c in ecalls[len(pcalls):]] == ["unlink"] * 0 or \
        all(c[0] == "unlink" for c in ecalls[len(pcalls):])
    assert "\t20 created" in ereport and "\t20 deleted" in ereport
    assert os.listdir(edirs[0]) == []
    op = res.job("pm")
    assert op["sync"]["total_ios"] == 20


def test_reference_run_counts(pmdir):
    """The 000 article's configuration in full (no strace): PostMark's
    reference figures."""
    cfg = {"read": 4096, "write": 4096, "transactions": 10000, "size": (500, 500000),
           "number": 5000}
    res, edirs, _, report = run_engine(pmdir, cfg, strace=False)
    res.ok()
    for want in ("\t9950 created", "Creation alone: 5000 files",
                 "Mixed with transactions: 4950 files", "\t5026 read", "\t4974 appended",
                 "\t9950 deleted", "Deletion alone: 4900 files",
                 "Mixed with transactions: 5050 files", "\t1396.61 megabytes read",
                 "\t2861.03 megabytes written"):
        assert want in report
    j = res.job("pm")
    assert j["read"]["total_ios"] == 5026
    assert j["write"]["total_ios"] == 9950 + 4974
    assert j["trim"]["total_ios"] == 9950
    assert j["sync"]["total_ios"] == 10000
    # fio's byte counts are the exact sums; PostMark's (and the report's)
    # are 32-bit float sums, a few hundredths of a megabyte off at 3 GB
    assert abs(j["read"]["io_bytes"] / 1048576 - 1396.61) < 0.05
    assert abs(j["write"]["io_bytes"] / 1048576 - 2861.03) < 0.05
