"""Benchmark the smallfile fio engine against its practical limit and its peers.

Run as root (it mounts tmpfs file systems), from anywhere:

    sudo scripts/fio-pack bench smallfile --output docs/benchmarks.md

See --help for the full description (it reads like a man page).
Only the Python standard library is used.
"""

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from fiopack import REPO
from fiopack.bench import harness
from fiopack.options import number, number_list
from fiopack.bench.harness import (Report, Timeout, fmt_rate, fs_of, log, machine_info,
                                     run, run_peak_rss, save_report, stats,
                                     unwind_on_signals)

DESCRIPTION = """\
NAME
    fio-pack bench smallfile - measure the smallfile fio engine against a minimal
    C loop ("the practical limit") and against fio's own file engines

SYNOPSIS
    sudo scripts/fio-pack bench smallfile [--quick] [--output FILE]
         [--disk-dir DIR] [--sections B1,B2,B3] [more options below]

DESCRIPTION
    Every number is a rate (files per second) or a size (max RSS) of the
    project and of a peer measured in the same run, interleaved (A B B A A B,
    so slow drift of a shared machine hits both sides alike), repeated, and
    reported as min/median/max with the ratio of the two. There are no timed
    pass/fail assertions: the goals below are printed next to the ratios.

    The minimal loop is bench/minloop.c, built by `make build/bench/minloop`
    (with the flags of the engines' own objects, -O2, and the same
    engines/lib units: tree, sizedist, content, units, errmsg).
    It issues exactly the engine's system calls for a file operation (same
    paths from engines/lib/tree.c, same flags, same sizes and contents) and
    nothing else.

    Every tree lives on a tmpfs mounted by this script (mount -t tmpfs -o
    size=...) below a private directory /tmp/bench-smallfile.XXXXXX; each
    layout run gets a fresh mount, so every run starts from an empty file
    system and unmounting is the clean-up. All mounts are unmounted and the
    private directory removed at the end, also on errors, Ctrl-C, SIGTERM
    and SIGHUP.

    B1  Layout. The engine (tree_file_op=layout rw=write, tree_files=N,
        tree_file_size_dist=fixed:4k, bs=4k, default tree shape fanout 32
        depth 2) against `minloop layout` of the same tree, 4 KiB files,
        interleaved, --repeats each. Engine files/s = write.total_ios /
        write.runtime from fio's JSON (the job's run time, without fio
        start-up); minloop files/s = files / the loop's own clock. Wall-clock
        rates of both whole processes are shown too, and files per CPU-second
        (fio's usr_cpu+sys_cpu of the job; getrusage of the minloop process),
        which a busy shared machine disturbs much less than elapsed time.
        Goal: engine/minloop
        >= 0.8.
        Each engine run is followed by fio's null engine with the same job
        shape (rw=write, bs=4k, the tree's span, one operation a file): what
        fio itself costs an I/O. The CPU table gives CPU microseconds per file
        of the engine's job, of minloop's process and of the null job, and the
        engine's own: engine - null - minloop (minloop makes the engine's
        system calls and builds its paths, nothing else).
        For contrast, fio's builtin filecreate engine (--ioengine=filecreate
        --create_on_open=1 --openfiles=1 --nrfiles=N --filesize=4k, all files
        in one directory) at --filecreate-sizes, each run capped by
        --filecreate-timeout seconds ("timeout" is recorded when hit).
        Note that filecreate only creates empty files (open O_CREAT, close;
        it writes nothing), so it does less per file than the engine.

    B2  Random whole-file reads on the warm tree left by the last engine
        layout of B1: the engine (tree_file_op=read rw=randread norandommap=1
        number_ios=M) against `minloop read` (same count, uniform xorshift
        choice), interleaved, --repeats each, and fio's null engine with the
        same job shape (rw=randread norandommap=1 bs=4k, M operations), with
        the CPU table of B1. Goal: engine/minloop >= 0.9.
        Then the engine's tree_io_api=io_uring at iodepth 1, 4, 8, 16 and 32
        against tree_io_api=sync, interleaved, files/s each, the job's CPU
        microseconds per file and both ratios to sync.

    B3  Peak memory: max RSS of fio running a read job with fio's `thread`
        option, so the job runs inside the one fio process and
        /usr/bin/time -f %M (getrusage max RSS of that process) covers it.
        Engine read jobs (rw=randread, number_ios=--mem-ios) on a 1,000-file
        tree and on the B1 tree, with norandommap=1 and with fio's default
        random map (1 bit per file). For contrast fio's builtin filestat
        engine with nrfiles=1,000 and nrfiles=--filestat-files (fio lays the
        files out itself first), whose per-file cost is the RSS difference
        divided by the difference in files. A null-engine fio run shows
        fio's own baseline.

    With --disk-dir DIR, B1 (engine and minloop, no filecreate) and B2 (the
    engine/minloop pair and the io_uring depths) are also run in a private directory made below DIR
    with --disk-files files (page cache warm, nothing is dropped; a `sync`
    runs before each layout, untimed). Everything created there is removed.

    The report (Markdown) goes to stdout or --output FILE: the machine
    (nproc, CPU, memory, kernel, fio version, file systems), the exact
    command, one table per measurement with min/median/max and the ratios.
    Progress goes to stderr.

GOALS
    B1 engine/minloop >= 0.8, B2 engine/minloop >= 0.9, B3 engine RSS on
    the big tree no more than a few MiB above the 1,000-file tree.
"""

EPILOG = """\
QUICK MODE
    --quick: B1 with 100,000 files and filecreate at 10,000 only, B2 with
    100,000 reads, B3 on the 100,000-file tree with 50,000 operations and
    filestat with 10,000 files, 3 repeats. Takes about a minute.

A/B MODE
    --ab-engines A,B: two builds of the engine compared, instead of the
    sections. A tree of --files files of 4 KiB on a tmpfs, laid out by B;
    then warm random whole-file reads of it (tree_file_op=read
    rw=randread norandommap=1 number_ios=--read-ios, tree_io_api=io_uring)
    at iodepth 1 and 16, --repeats rounds of each, the builds' order
    alternating (A B, B A, ...). The report gives per build and iodepth
    files/s (read.total_ios / read.runtime) median (min / max), the job's
    CPU microseconds and context switches per file, and per iodepth B / A
    of each round's pair and of the medians. A build is a directory
    holding smallfile.so (build/, a copy of it, build/fio-VERSION/) or the
    .so itself; both run in the fio of --fio. Defaults: 100,000 files,
    200,000 reads a run, 5 rounds; --quick: 20,000 files, 50,000 reads, 2
    rounds.

FILES
    build/fio              the fio the engine is built for (--fio)
    build/smallfile.so     the engine (--engine)
    build/bench/minloop    built from bench/minloop.c by make, on every run
    /tmp/bench-smallfile.* private mount points (removed at exit)

EXIT STATUS
    0 report written; 1 a benchmark failed (the report written so far is
    still printed, with the error); 2 usage error or not root.

EXAMPLES
    sudo scripts/fio-pack bench smallfile --quick
    sudo scripts/fio-pack bench smallfile --output docs/benchmarks.md
    sudo scripts/fio-pack bench smallfile --sections B2 --files 200000
    sudo scripts/fio-pack bench smallfile --disk-dir /srv/scratch
    sudo scripts/fio-pack bench smallfile --ab-engines /tmp/before/build,build
"""

MINLOOP_CMD = ["make", "-s", "--no-print-directory", "build/bench/minloop"]


# ---------------------------------------------------------------- mounts

class Scratch:
    """A private directory under /tmp holding tmpfs mount points."""

    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="bench-smallfile.", dir="/tmp")
        self.mounts = []
        self.seq = 0

    def mount(self, name, size_bytes):
        self.seq += 1
        mp = os.path.join(self.base, "%02d-%s" % (self.seq, name))
        os.mkdir(mp)
        harness.mount_tmpfs(mp, size_bytes, 64)
        self.mounts.append(mp)
        tree = os.path.join(mp, "tree")
        os.mkdir(tree)
        return mp, tree

    def umount(self, mp):
        harness.umount_retrying(mp)
        if mp in self.mounts:
            self.mounts.remove(mp)
        try:
            os.rmdir(mp)
        except OSError as e:
            log("cannot remove %s: %s" % (mp, e))

    def cleanup(self):
        for mp in list(reversed(self.mounts)):
            self.umount(mp)
        try:
            os.rmdir(self.base)
        except OSError as e:
            log("cannot remove %s: %s" % (self.base, e))


class DiskScratch:
    """A private directory below a user-given directory on disk."""

    def __init__(self, parent):
        self.base = tempfile.mkdtemp(prefix="bench-smallfile.", dir=parent)
        self.seq = 0

    def tree(self, name):
        self.seq += 1
        d = os.path.join(self.base, "%02d-%s" % (self.seq, name))
        os.mkdir(d)
        return d

    def remove(self, d):
        shutil.rmtree(d, ignore_errors=True)

    def cleanup(self):
        shutil.rmtree(self.base, ignore_errors=True)


# ---------------------------------------------------------------- runners

class Bench:
    def __init__(self, args):
        self.a = args
        self.fio = args.fio
        self.engine = args.engine
        self.minloop = os.path.join(REPO, "build/bench/minloop")

    # fio with the engine; returns parsed JSON job and wall seconds
    def fio_engine(self, tree, files, extra, timeout=None, thread=False, time_rss=False,
                   engine=None):
        cmd = [self.fio, "--output-format=json", "--name=bench",
               "--ioengine=external:%s" % (engine or self.engine), "--tree_dir=%s" % tree,
               "--tree_files=%d" % files, "--tree_file_size_dist=fixed:4k", "--bs=4k"]
        if thread:
            cmd.append("--thread")
        cmd += extra
        return self._fio(cmd, timeout, time_rss)

    def _fio(self, cmd, timeout=None, time_rss=False, cwd=None):
        rss = None
        if time_rss:
            out, err, wall, kib = run_peak_rss(cmd, timeout=timeout, cwd=cwd)
            rss = kib * 1024
        else:
            out, err, wall = run(cmd, timeout=timeout, cwd=cwd)
        # fio may print warnings before the JSON
        j = harness.fio_json(out)
        return j["jobs"][0], wall, rss

    def null_run(self, files, ops, rw, extra=()):
        """fio's null engine with the engine job's shape (rw=, bs=4k, a span
        of files x 4 KiB): CPU microseconds per operation. At least
        harness.NULL_MIN_OPS operations, @ops if more: fio's CPU figures of
        a job of a few milliseconds are 0."""
        ops = max(ops, harness.NULL_MIN_OPS)
        job, _, _ = self._fio(harness.fio_null_cmd(self.fio, rw, 4096, files * 4096, ops,
                                                   extra))
        done = job["read" if "read" in rw else "write"]["total_ios"]
        if done != ops:
            raise RuntimeError("null engine did %d operations, not %d" % (done, ops))
        return harness.job_cpu_s(job) * 1e6 / ops

    def minloop_run(self, mode, tree, files, ios=None, seed=1):
        cmd = [self.minloop, mode, "--dir", tree, "--files", str(files)]
        if ios is not None:
            cmd += ["--ios", str(ios), "--rand-seed", str(seed)]
        out, _, wall = run(cmd)
        res = json.loads(out.strip().splitlines()[-1])
        res["cpu_s"] = run.cpu
        return res, wall


def rate(job, ddir):
    d = job[ddir]
    ms = d["runtime"]
    return d["total_ios"] / (ms / 1000.0) if ms else float("nan")


def cpu_rate(job, ddir):
    """Operations per CPU second of the job process during the job: fio
    reports usr_cpu and sys_cpu as percentages of the job's run time."""
    cpu = (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * job["job_runtime"] / 1000.0
    return job[ddir]["total_ios"] / cpu if cpu > 0 else None


def us_per_op(job, ddir):
    """CPU microseconds per file operation of the job (its usr_cpu + sys_cpu)."""
    n = job[ddir]["total_ios"]
    return harness.job_cpu_s(job) * 1e6 / n if n else None


def fmt_triplet(xs, f=fmt_rate):
    s = stats(xs)
    if not s:
        return "-", "-"
    lo, med, hi = s
    spread = (hi - lo) / med * 100 if med else 0
    return f(med), "%s / %s / %s (±%.0f%%)" % (f(lo), f(med), f(hi), spread / 2)


def fmt_ratio(x):
    return "-" if x is None else "%.2f" % x


def ratio_cell(num, den):
    """median(num)/median(den), and min/median/max of the pairwise ratios."""
    if not num or not den:
        return "-", "-"
    pairs = [a / b for a, b in zip(num, den) if a and b]
    rm = statistics.median(num) / statistics.median(den)
    s = stats(pairs)
    return fmt_ratio(rm), "%.2f / %.2f / %.2f" % s if s else "-"


def mib(b):
    return "-" if b is None else "%.1f" % (b / 1048576.0)


# ---------------------------------------------------------------- B1

def b1_layout(b, rep, sc, disk=None):
    """Engine vs minloop layout; returns dict and the path of the kept tree."""
    a = b.a
    files = a.disk_files if disk else a.files
    tmpfs_size = files * 4096 * 3 // 2 + (512 << 20)
    res = {"engine": [], "engine_wall": [], "minloop": [], "minloop_wall": [],
           "engine_cpu": [], "minloop_cpu": [], "engine_us": [], "minloop_us": [],
           "null_us": [], "files": files}
    # M E | E M | M E ... : ends with an engine run whose tree B2 reuses.
    order = []
    for r in range(a.repeats):
        order += ["minloop", "engine"] if r % 2 == 0 else ["engine", "minloop"]
    if order[-1] != "engine":
        order = order[::-1]
    kept = None
    for k, tool in enumerate(order):
        last = k == len(order) - 1
        if disk:
            tree = disk.tree("b1-%s" % tool)
            mp = None
            subprocess.run(["sync"])
        else:
            mp, tree = sc.mount("b1-%s" % tool, tmpfs_size)
        try:
            if tool == "engine":
                job, wall, _ = b.fio_engine(tree, files, ["--tree_file_op=layout", "--rw=write"])
                if job["error"]:
                    raise RuntimeError("engine layout error %d" % job["error"])
                res["engine"].append(rate(job, "write"))
                res["engine_wall"].append(files / wall)
                res["engine_cpu"].append(cpu_rate(job, "write"))
                res["engine_us"].append(us_per_op(job, "write"))
                res["null_us"].append(b.null_run(files, files, "write"))
                log("B1%s layout engine  %d files: %s files/s (wall %s)" % (
                    " disk" if disk else "", files, fmt_rate(res["engine"][-1]),
                    fmt_rate(res["engine_wall"][-1])))
            else:
                out, wall = b.minloop_run("layout", tree, files)
                res["minloop"].append(out["files_per_s"])
                res["minloop_wall"].append(files / wall)
                res["minloop_cpu"].append(files / out["cpu_s"] if out["cpu_s"] else None)
                res["minloop_us"].append(out["cpu_s"] * 1e6 / files)
                log("B1%s layout minloop %d files: %s files/s (wall %s)" % (
                    " disk" if disk else "", files, fmt_rate(res["minloop"][-1]),
                    fmt_rate(res["minloop_wall"][-1])))
        finally:
            if last and tool == "engine":
                kept = (mp, tree)
            elif disk:
                disk.remove(tree)
            else:
                sc.umount(mp)
    return res, kept


def b1_filecreate(b, sc):
    a = b.a
    res = []
    for n in a.filecreate_sizes:
        mp, tree = sc.mount("b1-filecreate-%d" % n, n * 8192 + (256 << 20))
        cmd = [b.fio, "--output-format=json", "--name=fc", "--ioengine=filecreate",
               "--nrfiles=%d" % n, "--filesize=4k", "--directory=%s" % tree,
               "--create_on_open=1", "--openfiles=1", "--fallocate=none", "--rw=write"]
        try:
            job, wall, _ = b._fio(cmd, timeout=a.filecreate_timeout, cwd=tree)
            r = rate(job, "write")
            res.append({"files": n, "rate": r, "wall_rate": n / wall, "wall": wall})
            log("B1 filecreate %d files: %s files/s (wall %.1f s)" % (n, fmt_rate(r), wall))
        except Timeout:
            res.append({"files": n, "rate": None, "wall_rate": None, "wall": None,
                        "timeout": True})
            log("B1 filecreate %d files: timeout after %d s" % (n, a.filecreate_timeout))
        finally:
            sc.umount(mp)
    return res


# ---------------------------------------------------------------- B2

def b2_reads(b, tree, files, ios, repeats, label=""):
    res = {"engine": [], "minloop": [], "engine_wall": [], "minloop_wall": [],
           "engine_cpu": [], "minloop_cpu": [], "engine_us": [], "minloop_us": [],
           "null_us": []}
    # warm-up pass (dentries, page cache), untimed
    b.minloop_run("read", tree, files, ios=min(ios, files), seed=99)
    for r in range(repeats):
        order = ["minloop", "engine"] if r % 2 == 0 else ["engine", "minloop"]
        for tool in order + ["null"]:
            if tool == "null":
                res["null_us"].append(b.null_run(files, ios, "randread", ["--norandommap=1"]))
                continue
            if tool == "engine":
                job, wall, _ = b.fio_engine(tree, files, [
                    "--tree_file_op=read", "--rw=randread", "--norandommap=1",
                    "--number_ios=%d" % ios, "--randseed=%d" % (r + 1)])
                if job["error"]:
                    raise RuntimeError("engine read error %d" % job["error"])
                res["engine"].append(rate(job, "read"))
                res["engine_wall"].append(ios / wall)
                res["engine_cpu"].append(cpu_rate(job, "read"))
                res["engine_us"].append(us_per_op(job, "read"))
            else:
                out, wall = b.minloop_run("read", tree, files, ios=ios, seed=r + 1)
                res["minloop"].append(out["files_per_s"])
                res["minloop_wall"].append(ios / wall)
                res["minloop_cpu"].append(ios / out["cpu_s"] if out["cpu_s"] else None)
                res["minloop_us"].append(out["cpu_s"] * 1e6 / ios)
            log("B2%s read %-7s %d ios: %s files/s" % (label, tool, ios, fmt_rate(res[tool][-1])))
    return res


URING_DEPTHS = [1, 4, 8, 16, 32]


def b2_uring(b, tree, files, ios, repeats, label=""):
    """files/s of each tree_io_api (res[c]) and the job's CPU us per file (res[c + "_us"])."""
    configs = ["sync"] + ["uring%d" % d for d in URING_DEPTHS]
    res = {c: [] for c in configs}
    res.update({c + "_us": [] for c in configs})
    for r in range(repeats):
        # rotate the order each repeat so no config always runs first
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for c in order:
            extra = ["--tree_file_op=read", "--rw=randread", "--norandommap=1",
                     "--number_ios=%d" % ios, "--randseed=%d" % (r + 1)]
            if c == "sync":
                extra.append("--tree_io_api=sync")
            else:
                extra += ["--tree_io_api=io_uring", "--iodepth=%s" % c[5:]]
            job, wall, _ = b.fio_engine(tree, files, extra)
            if job["error"]:
                raise RuntimeError("engine read (%s) error %d" % (c, job["error"]))
            res[c].append(rate(job, "read"))
            res[c + "_us"].append(us_per_op(job, "read"))
            log("B2%s %-7s %d ios: %s files/s" % (label, c, ios, fmt_rate(res[c][-1])))
    return res


# ---------------------------------------------------------------- B3

def b3_memory(b, sc, big_tree, big_files):
    a = b.a
    res = {}
    repeats = a.repeats
    mp, small_tree = sc.mount("b3-small", 64 << 20)
    try:
        b.fio_engine(small_tree, 1000, ["--tree_file_op=layout", "--rw=write"])
        trees = [("1k", small_tree, 1000), ("big", big_tree, big_files)]
        for r in range(repeats):
            for name, tree, n in (trees if r % 2 == 0 else trees[::-1]):
                for nrm in (1, 0):
                    key = "%s-nrm%d" % (name, nrm)
                    _, _, rss = b.fio_engine(tree, n, [
                        "--tree_file_op=read", "--rw=randread", "--norandommap=%d" % nrm,
                        "--number_ios=%d" % a.mem_ios], thread=True, time_rss=True)
                    res.setdefault(key, []).append(rss)
                    log("B3 engine %s files norandommap=%d: max RSS %s MiB" % (n, nrm, mib(rss)))
            _, _, rss = b._fio([b.fio, "--output-format=json", "--thread", "--name=null",
                                "--ioengine=null", "--size=4k", "--rw=read"], time_rss=True)
            res.setdefault("null", []).append(rss)
    finally:
        sc.umount(mp)
    for n in (1000, a.filestat_files):
        mp, tree = sc.mount("b3-filestat-%d" % n, n * 8192 + (256 << 20))
        try:
            for r in range(repeats):
                job, wall, rss = b._fio([
                    b.fio, "--output-format=json", "--thread", "--name=fs",
                    "--ioengine=filestat", "--nrfiles=%d" % n, "--filesize=4k",
                    "--directory=%s" % tree, "--rw=read"], time_rss=True,
                    timeout=a.filecreate_timeout, cwd=tree)
                res.setdefault("filestat-%d" % n, []).append(rss)
                log("B3 filestat nrfiles=%d: max RSS %s MiB (wall %.1f s)" % (n, mib(rss), wall))
        finally:
            sc.umount(mp)
    return res


# ---------------------------------------------------------------- A/B mode

AB_DEPTHS = [1, 16]


def ab_reads(b, tree, engines):
    """The A/B mode: warm random whole-file reads of the tree by builds A and
    B, tree_io_api=io_uring at each of AB_DEPTHS, --repeats rounds of each
    depth, the builds' order alternating (A B, B A, ...): {"A"|"B":
    {mode: [harness.ab_facts of each round]}}."""
    a = b.a
    runs = {x: {ab_mode(d): [] for d in AB_DEPTHS} for x in "AB"}
    for d in AB_DEPTHS:
        for r in range(a.repeats):
            for x in harness.rotated(["A", "B"], r):
                job, _, _ = b.fio_engine(tree, a.files, [
                    "--tree_file_op=read", "--rw=randread", "--norandommap=1",
                    "--number_ios=%d" % a.read_ios, "--randseed=%d" % (r + 1),
                    "--tree_io_api=io_uring", "--iodepth=%d" % d], engine=engines[x == "B"])
                if job["error"]:
                    raise RuntimeError("engine %s read error %d" % (x, job["error"]))
                f = harness.ab_facts(job)
                runs[x][ab_mode(d)].append(f)
                log("A/B iodepth=%d round %d %s: %s files/s" % (d, r + 1, x,
                                                               fmt_rate(f["files_s"])))
    return runs


def ab_mode(depth):
    return "io_uring, iodepth %d" % depth


def ab_run(b, a, engines, sc, rep, results):
    """The A/B mode's tree (laid out by B, as the scripts before it did),
    its reads and its tables."""
    mp, tree = sc.mount("ab", a.files * 4096 * 3 // 2 + (512 << 20))
    log("A/B: layout of %d files by B" % a.files)
    b.fio_engine(tree, a.files, ["--tree_file_op=layout", "--rw=write"], engine=engines[1])
    rep.add("### A/B: warm random whole-file reads of %s files of 4 KiB, %s reads a run"
            % ("{:,}".format(a.files), "{:,}".format(a.read_ios)))
    rep.add()
    rep.add("tree_io_api=io_uring, rw=randread norandommap=1, the tree on a tmpfs laid "
            "out by B; %d round(s) per iodepth, the builds' order alternating. files/s = "
            "read.total_ios / read.runtime." % a.repeats)
    rep.add()
    runs = ab_reads(b, tree, engines)
    results["AB"] = runs
    harness.ab_tables(rep, runs, [ab_mode(d) for d in AB_DEPTHS])
    sc.umount(mp)


# ---------------------------------------------------------------- main

def parse_args(argv):
    p = harness.parser("smallfile", DESCRIPTION, EPILOG)
    p.add_argument("--quick", action="store_true",
                   help="fast smoke run: smaller counts (see QUICK MODE)")
    harness.add_output_options(p)
    p.add_argument("--sections", default="B1,B2,B3", metavar="LIST",
                   help="which of B1,B2,B3 to run (default all; B2 and B3 "
                        "lay out their own tree if B1 is not run)")
    p.add_argument("--files", type=number(int, low=1), metavar="N",
                   help="files in the B1 layout and B2/B3 tree "
                        "(default 1000000, quick 100000; A/B mode 100000, quick 20000)")
    p.add_argument("--read-ios", type=number(int, low=1), metavar="M",
                   help="file operations per B2 run (default 500000, quick 100000; "
                        "A/B mode 200000, quick 50000)")
    p.add_argument("--repeats", type=number(int, low=1), metavar="R",
                   help="runs of each side of each comparison (default 3; A/B mode 5, "
                        "quick 2)")
    p.add_argument("--filecreate-sizes", type=number_list(int, low=1), metavar="LIST",
                   help="comma-separated nrfiles for fio's filecreate "
                        "(default 10000,40000,100000; quick 10000; empty: skip)")
    p.add_argument("--filecreate-timeout", type=number(int, low=1), default=600, metavar="S",
                   help="seconds before a filecreate or filestat run is killed "
                        "and recorded as timeout (default 600)")
    p.add_argument("--mem-ios", type=number(int, low=1), metavar="M",
                   help="operations per B3 engine run (default 200000, quick 50000)")
    p.add_argument("--filestat-files", type=number(int, low=1), metavar="N",
                   help="nrfiles of the big filestat run (default 100000, quick 10000)")
    p.add_argument("--disk-dir", metavar="DIR",
                   help="also run B1 and B2 in a private directory below DIR")
    p.add_argument("--disk-files", type=number(int, low=1), default=100000, metavar="N",
                   help="files for the --disk-dir runs (default 100000)")
    a = harness.parse_ab_and_build(p, argv, "smallfile")
    q = a.quick
    if a.files is None:
        a.files = (20000 if q else 100000) if a.ab else (100000 if q else 1000000)
    if a.read_ios is None:
        a.read_ios = (50000 if q else 200000) if a.ab else (100000 if q else 500000)
    if a.repeats is None:
        a.repeats = (2 if q else 5) if a.ab else 3
    if a.mem_ios is None:
        a.mem_ios = 50000 if q else 200000
    if a.filestat_files is None:
        a.filestat_files = 10000 if q else 100000
    if a.filecreate_sizes is None:
        a.filecreate_sizes = [10000] if q else [10000, 40000, 100000]
    a.sections = {s.strip().upper() for s in a.sections.split(",") if s.strip()}
    if not a.sections <= {"B1", "B2", "B3"} or a.repeats < 1:
        p.error("--sections takes B1,B2,B3 and --repeats at least 1")
    if a.filestat_files <= 1000:
        # B3 reports the memory per file from the difference with nrfiles=1,000
        p.error(f"--filestat-files {a.filestat_files}: more than 1000")
    # fio's filecreate and filestat runs start in their tree's directory
    a.fio, a.engine = os.path.abspath(a.fio), os.path.abspath(a.engine)
    if a.ab:
        if a.disk_dir:
            p.error("--ab-engines runs on a tmpfs: not with --disk-dir")
        # the A/B mode instead of the sections; preflight checks B's engine
        a.sections = set()
        a.engine = a.ab[1]
    return a


def build_minloop():
    os.makedirs(os.path.join(REPO, "build/bench"), exist_ok=True)
    log("building minloop: " + " ".join(MINLOOP_CMD))
    subprocess.run(MINLOOP_CMD, cwd=REPO, check=True)


def write_report(a, rep, results, error, t_start):
    rep.add()
    rep.add("Total time of the run: %.0f s; load average at the end: %s." % (
        time.monotonic() - t_start, " ".join("%.2f" % x for x in os.getloadavg())))
    save_report(a, rep, results, error)


def vs_minloop_tables(rep, r, goal):
    """The rate and ratio tables of an engine-vs-minloop comparison (B1, B2)."""
    e_med, e_s = fmt_triplet(r["engine"])
    m_med, m_s = fmt_triplet(r["minloop"])
    ew_med, ew_s = fmt_triplet(r["engine_wall"])
    mw_med, mw_s = fmt_triplet(r["minloop_wall"])
    rr, rs = ratio_cell(r["engine"], r["minloop"])
    wr, ws = ratio_cell(r["engine_wall"], r["minloop_wall"])
    ec_med, ec_s = fmt_triplet(r["engine_cpu"])
    mc_med, mc_s = fmt_triplet(r["minloop_cpu"])
    cr, cs = ratio_cell(r["engine_cpu"], r["minloop_cpu"])
    rep.table(["", "files/s median", "min / median / max (±half-spread)"], [
        ["engine (fio job runtime)", e_med, e_s],
        ["minloop (loop clock)", m_med, m_s],
        ["engine (wall clock of fio)", ew_med, ew_s],
        ["minloop (wall clock of process)", mw_med, mw_s],
        ["engine, files per CPU-second of the job", ec_med, ec_s],
        ["minloop, files per CPU-second of the process", mc_med, mc_s],
    ])
    rep.table(["ratio", "of medians", "pairwise min / median / max", "goal"], [
        ["engine/minloop (job runtime / loop clock)", rr, rs, goal],
        ["engine/minloop (wall clock)", wr, ws, "-"],
        ["engine/minloop (per CPU-second)", cr, cs, "-"],
    ])
    cpu_table(rep, r)


def cpu_table(rep, r):
    """CPU us per file: the engine, minloop, fio's null engine, and what is the engine's."""
    rep.add("CPU per file: the engine's job (fio's usr_cpu + sys_cpu), minloop's process "
            "(getrusage), fio's null engine with the engine job's shape (rw=, bs=4k, the "
            "same span and count; fio's own cost an I/O, no system call). minloop makes the "
            "engine's system calls and builds its paths, nothing more, so what is left of "
            "the engine once fio's null engine and minloop are taken away is the engine's "
            "own.")
    rep.add()
    harness.cpu_per_op_table(rep, [
        ("engine", r["engine_us"]), ("minloop", r["minloop_us"]),
        ("fio null engine", r["null_us"])], [
        ("the engine's own", [(1, "engine"), (-1, "fio null engine"), (-1, "minloop")]),
        ("fio's and the engine's", [(1, "engine"), (-1, "minloop")])])


def b1_report(rep, r, fc, where):
    rep.add("#### Engine vs minloop, %s, %s files of 4 KiB" % (where, "{:,}".format(r["files"])))
    rep.add()
    vs_minloop_tables(rep, r, ">= 0.8")
    if fc:
        rep.add("#### fio's builtin filecreate (empty files, one directory), %s" % where)
        rep.add()
        e = statistics.median(r["engine"])
        rows = []
        for x in fc:
            if x.get("timeout"):
                rows.append(["{:,}".format(x["files"]), "timeout", "-", "-", "-"])
            else:
                rows.append(["{:,}".format(x["files"]), fmt_rate(x["rate"]),
                             "%.1f" % x["wall"], fmt_rate(x["wall_rate"]),
                             "%.1f" % (e / x["rate"])])
        rep.table(["nrfiles", "files/s (job runtime)", "wall s", "files/s (wall)",
                   "engine/filecreate (engine at %s files)" % "{:,}".format(r["files"])],
                  rows)


def b2_report(rep, r, ios, files, where):
    rep.add("#### Engine vs minloop random whole-file reads, %s, %s reads over %s files" % (
        where, "{:,}".format(ios), "{:,}".format(files)))
    rep.add()
    vs_minloop_tables(rep, r, ">= 0.9")


def b2_uring_report(rep, ru, where="tmpfs"):
    """The io_uring table of B2: each depth against the sync reads."""
    rep.add("#### tree_io_api=io_uring vs tree_io_api=sync (same job otherwise), %s" % where)
    rep.add()
    rows = []
    for c in ["sync"] + ["uring%d" % d for d in URING_DEPTHS]:
        med, s = fmt_triplet(ru[c])
        name = "sync" if c == "sync" else "io_uring iodepth=%s" % c[5:]
        rr, rs = ratio_cell(ru[c], ru["sync"])
        us = stats(ru.get(c + "_us", []))
        cr, _ = ratio_cell(ru.get("sync_us", []), ru.get(c + "_us", []))
        rows.append([name, med, s, rr, rs, "%.3f" % us[1] if us else "-", cr])
    rep.table(["tree_io_api", "files/s median", "min / median / max",
               "ratio to sync (medians)", "pairwise min / median / max",
               "job CPU us/file (median)", "files per CPU-second, ratio to sync"], rows)


def b3_report(rep, r3, a):
    """The tables of B3: peak memory per job, then what grows with the tree."""
    n = "{:,}".format(a.files)
    rows = []

    def row(label, key, note=""):
        med, s = fmt_triplet(r3.get(key, []), f=mib)
        rows.append([label, med, s, note])
    row("fio, null engine, size=4k (fio's own baseline)", "null")
    row("engine read, 1,000 files, norandommap=1", "1k-nrm1")
    row("engine read, %s files, norandommap=1" % n, "big-nrm1")
    row("engine read, 1,000 files, random map", "1k-nrm0")
    row("engine read, %s files, random map" % n, "big-nrm0")
    row("filestat, nrfiles=1,000", "filestat-1000")
    row("filestat, nrfiles=%s" % "{:,}".format(a.filestat_files),
        "filestat-%d" % a.filestat_files)
    rep.table(["job", "max RSS MiB (median)", "min / median / max", ""], rows)

    def med(key):
        v = r3.get(key)
        return statistics.median(v) if v else None
    d1 = med("big-nrm1") - med("1k-nrm1")
    d0 = med("big-nrm0") - med("1k-nrm0")
    fs = (med("filestat-%d" % a.filestat_files) - med("filestat-1000")) / \
        (a.filestat_files - 1000)
    rep.table(["difference", "value"], [
        ["engine %s files - 1,000 files, norandommap=1" % n, "%.2f MiB" % (d1 / 1048576)],
        ["engine %s files - 1,000 files, random map" % n, "%.2f MiB" % (d0 / 1048576)],
        ["engine per file (random map)", "%.2f bytes" % (d0 / (a.files - 1000))],
        ["filestat per file", "%.0f bytes" % fs],
        ["filestat extrapolated to %s files" % n,
         "%.0f MiB" % (fs * a.files / 1048576)],
    ])


def disk_runs(b, a, sc, disk, rep, results):
    """B1 and B2 again in the --disk-dir directory (B2 with the page cache warm)."""
    rep.add("### On disk: %s (%s)" % (a.disk_dir, fs_of(a.disk_dir)))
    rep.add()
    rd, kept = b1_layout(b, None, sc, disk=disk)
    results["disk_B1"] = rd
    b1_report(rep, rd, [], "disk")
    rr = b2_reads(b, kept[1], a.disk_files, a.read_ios, a.repeats, label=" disk")
    results["disk_B2"] = rr
    b2_report(rep, rr, a.read_ios, a.disk_files, "disk (page cache warm)")
    ru = b2_uring(b, kept[1], a.disk_files, a.read_ios, a.repeats, label=" disk")
    results["disk_B2_uring"] = ru
    b2_uring_report(rep, ru, "disk (page cache warm)")
    disk.remove(kept[1])


def main(argv):
    a = parse_args(argv)
    refused = harness.preflight("smallfile", a, "it mounts tmpfs")
    if refused:
        return refused
    t_start = time.monotonic()

    unwind_on_signals()

    if not a.ab:
        build_minloop()
    fio_version = run([a.fio, "--version"])[0].strip()
    b = Bench(a)
    rep = Report()
    results = {"args": {k: (sorted(v) if isinstance(v, set) else v)
                        for k, v in vars(a).items()}}
    machine = machine_info(a, fio_version)
    if a.ab:
        machine = harness.ab_machine_rows(machine, a.fio, a.ab)
    harness.report_header(rep, "smallfile", a, argv, machine)

    sc = Scratch()
    disk = DiskScratch(a.disk_dir) if a.disk_dir else None
    error = None
    try:
        probe_mp, _ = sc.mount("probe", 64 << 20)
        tmpfs_desc = ",".join(o for o in fs_of(probe_mp).split()[-1].split(",")
                              if not o.startswith("size="))
        sc.umount(probe_mp)
        rep.add("File system of every tree: a fresh `tmpfs` per layout run (options %s, "
                "size= 1.5 x the data + 512 MiB), mounted below %s by this script."
                % (tmpfs_desc, sc.base))
        if disk:
            rep.add("Disk directory: %s, file system: %s." % (a.disk_dir, fs_of(a.disk_dir)))
        rep.add()

        if a.ab:
            ab_run(b, a, a.ab, sc, rep, results)
        big = None  # (mountpoint, tree) of the warm tree
        if "B1" in a.sections:
            rep.add("### B1. Layout of 4 KiB files")
            rep.add()
            log("B1: layout, %d files, %d repeats" % (a.files, a.repeats))
            r1, big = b1_layout(b, None, sc)
            results["B1"] = r1
            fc = b1_filecreate(b, sc) if a.filecreate_sizes else []
            results["B1_filecreate"] = fc
            b1_report(rep, r1, fc, "tmpfs")
        if ("B2" in a.sections or "B3" in a.sections) and big is None:
            log("laying out the %d-file tree for B2/B3" % a.files)
            mp, tree = sc.mount("tree", a.files * 4096 * 3 // 2 + (512 << 20))
            b.fio_engine(tree, a.files, ["--tree_file_op=layout", "--rw=write"])
            big = (mp, tree)
        if "B2" in a.sections:
            rep.add("### B2. Random whole-file reads of 4 KiB files (warm tree)")
            rep.add()
            log("B2: reads, %d ios, %d repeats" % (a.read_ios, a.repeats))
            r2 = b2_reads(b, big[1], a.files, a.read_ios, a.repeats)
            results["B2"] = r2
            b2_report(rep, r2, a.read_ios, a.files, "tmpfs")
            ru = b2_uring(b, big[1], a.files, a.read_ios, a.repeats)
            results["B2_uring"] = ru
            b2_uring_report(rep, ru)
        if "B3" in a.sections:
            rep.add("### B3. Peak memory (max RSS of fio with `thread`)")
            rep.add()
            log("B3: memory")
            r3 = b3_memory(b, sc, big[1], a.files)
            results["B3"] = r3
            b3_report(rep, r3, a)
        if big:
            sc.umount(big[0])
            big = None
        if disk:
            disk_runs(b, a, sc, disk, rep, results)
    except BaseException as e:  # report what we have, then clean up
        error = "%s: %s" % (type(e).__name__, e)
        log("error: " + error)
    finally:
        sc.cleanup()
        if disk:
            disk.cleanup()
    write_report(a, rep, results, error, t_start)
    return 1 if error else 0

