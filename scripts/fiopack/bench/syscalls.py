"""Run a benchmark tool and the pack's fio job for it under strace; compare their system calls.

For the scenario jobs whose original tool is in Debian (hdparm -t/-T, dd,
sysbench fileio prepare/rndrd, bonnie++ -s and -n), this runs the tool and
the job (jobs/0*/...) on the same kind of small target - a file under a
scratch directory, or for hdparm a loop device made on a file there (needs
root; detached afterwards) - under

  strace -f -c -o SUMMARY CMD                     (whole-run counts)
  strace -f -ff -ttt -s 0 -e trace=SET -o DIR/t CMD  (every call, per thread)

and prints, as Markdown, per test phase: how the target is opened (O_DIRECT or
buffered), which calls touch it, their request sizes, calls per MiB moved,
lseek/fsync/fdatasync/fadvise/ioctl use; and for the file-creation tests the
metadata calls per file. A "session" is one open() of the target until its
close(), in one thread; sessions that move no data (fio sizing the file,
bonnie++'s seek coordinator) are listed but not compared.

Usage (from the repository root, after `make`; root for the loop device):

  scripts/fio-pack syscalls > /tmp/syscalls.md
  scripts/fio-pack syscalls --only dd,hdparm --size-mib 8

The job files are run as copies with their sizes shrunk to --size-mib and
their run times to 1-2 s; FIO_DIR points into the scratch directory (the
IOzone-style generated jobs, bonnie-seq, are generated there with
scripts/fio-pack gen bonnie-seq --data-dir). Nothing outside the
scratch directory is written; a --work directory must be new or empty, as
the comparisons replace and remove the files they find there. Tools missing from PATH are reported and
skipped (install: apt-get install hdparm sysbench bonnie++ strace).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import fiopack
from fiopack import REPO, fiobin, outputs
from fiopack.capture.strace import summary_counts
from fiopack.options import Parser, number

MIB = 1024 * 1024
TRACE_SET = ("clone,clone3,fork,vfork,open,openat,openat2,creat,close,read,write,pread64,pwrite64,readv,writev,"
             "lseek,fsync,fdatasync,sync,syncfs,fadvise64,ioctl,ftruncate,fallocate,"
             "unlink,unlinkat,rename,renameat,renameat2,stat,lstat,newfstatat,statx,"
             "getdents64,mkdir,mkdirat,dup,dup2,dup3,fcntl")
DATA_CALLS = ("read", "write", "pread64", "pwrite64", "readv", "writev")
FD_CALLS = DATA_CALLS + ("lseek", "fsync", "fdatasync", "fadvise64", "ioctl", "ftruncate",
                         "fallocate", "close", "syncfs")
LINE_RE = re.compile(r"^(?P<ts>\d+\.\d+) (?P<name>\w+)\((?P<args>.*)\)\s+= (?P<ret>-?\d+|\?|0x[0-9a-f]+)(?P<rest>.*)$")


# ---------------------------------------------------------------------------
# Running things
# ---------------------------------------------------------------------------

def run(cmd, cwd=None, env=None, check=True, quiet=True):
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                       errors="replace")
    if check and p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(map(str, cmd))}\n"
                           f"{p.stderr[-2000:]}")
    return p


def traced_summary(cmd, workdir: Path, label: str, cwd=None, env=None) -> Path:
    """Runs cmd under strace -f -c; returns the summary file."""
    summary = workdir / f"strace-{label}.summary"
    run(["strace", "-f", "-c", "-o", summary] + list(cmd), cwd=cwd, env=env)
    return summary


def traced_calls(cmd, tdir: Path, cwd=None, env=None):
    run(["strace", "-f", "-ff", "-ttt", "-s", "0", "-e", f"trace={TRACE_SET}", "-o", tdir / "t"]
        + list(cmd), cwd=cwd, env=env)


# ---------------------------------------------------------------------------
# Parsing strace -ff output into sessions
# ---------------------------------------------------------------------------

def split_args(args: str) -> list:
    out, depth, cur, quote = [], 0, "", False
    i = 0
    while i < len(args):
        c = args[i]
        if quote:
            cur += c
            if c == "\\":
                cur += args[i + 1]
                i += 1
            elif c == '"':
                quote = False
        elif c == '"':
            quote = True
            cur += c
        elif c in "[{(":
            depth += 1
            cur += c
        elif c in "]})":
            depth -= 1
            cur += c
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return out


def unquote(s: str) -> str:
    s = s.strip()
    if s.startswith('"'):
        s = s[1:]
        if s.endswith('"...'):
            s = s[:-4]
        elif s.endswith('"'):
            s = s[:-1]
    return s


class Session:
    def __init__(self, tid, fd, path, flags, t0):
        self.tid, self.fd, self.path, self.flags, self.t0 = tid, fd, path, flags, t0
        self.calls = collections.Counter()
        self.sizes = collections.Counter()     # (call, request size) -> n
        self.bytes = 0
        self.lseek_whence = collections.Counter()
        self.fadvise = collections.Counter()
        self.ioctls = collections.Counter()
        self.global_sync = 0
        self.label = ""

    @property
    def data_calls(self) -> int:
        return sum(self.calls[c] for c in DATA_CALLS)


# long: one pass over strace's output, following each descriptor to its file
def parse_traces(tdir: Path, target) -> tuple:
    """Sessions on paths matching target (a callable), and per-tid call counts.

    strace -ff writes one file per thread; descriptors belong to processes, so
    the files are merged in time order and each thread is mapped to its
    process through the clone() calls that made it (CLONE_THREAD or not).
    Returns (sessions sorted by open time, {tid: Counter}, main process id).
    """
    events = []
    parent = {}          # child tid -> (parent tid, is_thread)
    root = None
    meta = {}
    for f in sorted(tdir.glob("t.*")):
        tid = int(f.suffix[1:])
        counter = collections.Counter()
        for line in f.read_text(errors="replace").splitlines():
            m = LINE_RE.match(line)
            if not m:
                if "execve(" in line and root is None:
                    root = tid
                continue
            name = m["name"]
            counter[name] += 1
            if name in ("clone", "clone3", "fork", "vfork"):
                if m["ret"].isdigit():
                    parent[int(m["ret"])] = (tid, "CLONE_THREAD" in m["args"])
                continue
            events.append((float(m["ts"]), tid, name, m["args"], m["ret"]))
        meta[tid] = counter

    def tgid(tid):
        seen = 0
        while tid in parent and parent[tid][1] and seen < 1000:
            tid = parent[tid][0]
            seen += 1
        return tid

    if root is None and meta:
        root = min(meta)
    events.sort(key=lambda e: e[0])
    fds = collections.defaultdict(dict)      # tgid -> {fd: Session}
    sessions = []
    for ts, tid, name, rawargs, ret in events:
        proc = tgid(tid)
        open_fds = fds[proc]
        args = split_args(rawargs)
        if name in ("open", "openat", "openat2", "creat"):
            path = unquote(args[1] if name in ("openat", "openat2") else args[0])
            if ret.lstrip("-").isdigit() and int(ret) >= 0:
                fd = int(ret)
                open_fds.pop(fd, None)
                if target(path):
                    flags = args[2] if name in ("openat", "openat2") and len(args) > 2 else \
                        (args[1] if len(args) > 1 else "")
                    if name == "openat2":
                        fm = re.search(r"flags=([A-Z_0-9|]+)", rawargs)
                        flags = fm.group(1) if fm else flags
                    if name == "creat":
                        flags = "O_CREAT|O_WRONLY|O_TRUNC"
                    s = Session(proc, fd, path, flags, ts)
                    open_fds[fd] = s
                    sessions.append(s)
            continue
        if name == "sync":
            for s in set(open_fds.values()):
                s.global_sync += 1
            continue
        if name in ("dup", "dup2", "dup3") or (name == "fcntl" and len(args) > 1
                                              and args[1].startswith("F_DUPFD")):
            try:
                old, new = int(args[0]), int(ret)
            except ValueError:
                continue
            if old in open_fds and new >= 0:
                open_fds[new] = open_fds[old]
            continue
        if name not in FD_CALLS or not args:
            continue
        try:
            fd = int(args[0])
        except ValueError:
            continue
        s = open_fds.get(fd)
        if s is None:
            continue
        s.calls[name] += 1
        if name in DATA_CALLS:
            req = args[2] if len(args) > 2 else "?"
            s.sizes[(name, req)] += 1
            if ret.isdigit():
                s.bytes += int(ret)
        elif name == "lseek":
            s.lseek_whence[args[2] if len(args) > 2 else "?"] += 1
        elif name == "fadvise64":
            s.fadvise[args[-1]] += 1
        elif name == "ioctl":
            s.ioctls[args[1].split()[0] if len(args) > 1 else "?"] += 1
        if name == "close":
            del open_fds[fd]
    sessions.sort(key=lambda s: s.t0)
    main_procs = {t for t in meta if tgid(t) == root}
    return sessions, meta, main_procs


# ---------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------

def human(n: int) -> str:
    for unit, m in (("MiB", MIB), ("KiB", 1024)):
        if n >= m and n % m == 0:
            return f"{n // m} {unit}"
    return f"{n} B"


def fmt_sizes(s: Session) -> str:
    parts = []
    for (call, req), n in s.sizes.most_common(4):
        try:
            size = human(int(req))
        except ValueError:
            size = req
        parts.append(f"{call} {size} x{n}")
    return "; ".join(parts) or "-"


def fmt_counter(c: collections.Counter) -> str:
    return ", ".join(f"{k} x{v}" for k, v in c.most_common()) or "-"


def merge(sessions: list) -> Session:
    m = Session(sessions[0].tid, sessions[0].fd, sessions[0].path, sessions[0].flags, sessions[0].t0)
    flags = collections.Counter(s.flags for s in sessions)
    m.flags = " / ".join(flags)
    for s in sessions:
        m.calls.update(s.calls)
        m.sizes.update(s.sizes)
        m.bytes += s.bytes
        m.lseek_whence.update(s.lseek_whence)
        m.fadvise.update(s.fadvise)
        m.ioctls.update(s.ioctls)
        m.global_sync += s.global_sync
    m.count = len(sessions)
    return m


def session_rows(s: Session) -> list:
    mib = s.bytes / MIB if s.bytes else 0
    per_mib = (f"{s.data_calls / mib:.0f}" if s.data_calls / mib >= 10 else
               f"{s.data_calls / mib:.2f}") if mib else "-"
    return [
        ("sessions (open..close)", str(getattr(s, "count", 1))),
        ("open flags", s.flags.replace("|", "\\|")),
        ("data calls", fmt_counter(collections.Counter({c: s.calls[c] for c in DATA_CALLS if s.calls[c]}))),
        ("request sizes", fmt_sizes(s)),
        ("bytes moved", f"{s.bytes} ({mib:.2f} MiB)"),
        ("data calls per MiB", per_mib),
        ("lseek", f"{s.calls['lseek']} ({fmt_counter(s.lseek_whence)})" if s.calls['lseek'] else "0"),
        ("fsync / fdatasync", f"{s.calls['fsync']} / {s.calls['fdatasync']}"),
        ("fadvise", fmt_counter(s.fadvise)),
        ("ioctl", fmt_counter(s.ioctls)),
        ("sync() while open", str(s.global_sync)),
    ]


def table(tool_s: Session, job_s: Session, tool_name: str) -> str:
    lines = [f"| | {tool_name} | fio job |", "|---|---|---|"]
    for (k, a), (_, b) in zip(session_rows(tool_s), session_rows(job_s)):
        lines.append(f"| {k} | {a} | {b} |")
    return "\n".join(lines)


def summary_line(counts: dict, names) -> str:
    return ", ".join(f"{n} {counts[n]}" for n in names if counts.get(n)) or "-"


# ---------------------------------------------------------------------------
# Job files: shrunken copies
# ---------------------------------------------------------------------------

def job_copy(src: Path, dst: Path, replace: dict = None, keep=None, drop=None) -> Path:
    """Copy of a job file with option lines replaced and sections kept/dropped."""
    text = src.read_text()
    for old, new in (replace or {}).items():
        text = re.sub(rf"(?m)^{re.escape(old)}$", new, text)
    text = text.replace("external:${FIO_PACK_ENGINES}/", f"external:{REPO}/build/")
    if keep or drop:
        out, cur = [], None
        for line in text.splitlines():
            m = re.match(r"^\[(.+)\]\s*$", line)
            if m:
                cur = m.group(1)
            if cur is None or cur == "global" or \
                    ((keep is None or cur in keep) and (drop is None or cur not in drop)):
                out.append(line)
        text = "\n".join(out) + "\n"
    dst.write_text(text)
    return dst


# ---------------------------------------------------------------------------
# The comparisons
# ---------------------------------------------------------------------------

class Ctx:
    def __init__(self, work: Path, fio: Path, size_mib: int):
        self.work, self.fio, self.size_mib = work, fio, size_mib
        self.out = []

    def env(self, **kv):
        e = dict(os.environ)
        e.pop("FIO_DIR", None)
        e.update({k: str(v) for k, v in kv.items()})
        return e

    def fio_cmd(self, job: Path):
        return [self.fio, "--output-format=json", f"--output={self.work / 'fio-out.json'}", job]

    def emit(self, text=""):
        self.out.append(text)


def compare(ctx: Ctx, title: str, tool_cmd, tool_cwd, tool_target, tool_labels,
            job_cmd, job_env, job_target, job_labels, notes="", tool_name="tool",
            prepare_tool=None, prepare_job=None, tool_results=None):
    """Traces tool and job, pairs their data sessions by label, emits Markdown.

    tool_results: the "tool" entry of an earlier compare() of the same tool
    run, to compare other phases of it without tracing it again.
    """
    label = re.sub(r"\W+", "-", title.lower()).strip("-")
    results = {}
    if tool_results is not None:
        results["tool"] = tool_results
    for side, cmd, cwd, env, target, prep in (
            ("tool", tool_cmd, tool_cwd, None, tool_target, prepare_tool),
            ("job", job_cmd, REPO, job_env, job_target, prepare_job)):
        if side in results:
            continue
        if prep:
            prep()
        summary = traced_summary(cmd, ctx.work, f"{label}-{side}", cwd=cwd, env=env)
        if prep:
            prep()
        tdir = ctx.work / f"strace-{label}-{side}"
        if tdir.exists():
            shutil.rmtree(tdir)
        tdir.mkdir()
        traced_calls(cmd, tdir, cwd=cwd, env=env)
        sessions, meta, main = parse_traces(tdir, target)
        results[side] = (summary_counts(summary), sessions, meta, main)

    ctx.emit(f"### {title}\n")
    ctx.emit("```")
    ctx.emit("tool: " + " ".join(map(str, tool_cmd)) + (f"   (in {tool_cwd})" if tool_cwd else ""))
    envs = " ".join(f"{k}={v}" for k, v in (job_env or {}).items() if k == "FIO_DIR")
    ctx.emit("job:  " + (envs + " " if envs else "") + " ".join(map(str, job_cmd)))
    ctx.emit("```\n")
    if notes:
        ctx.emit(notes + "\n")

    paired = {}
    for side, labels in (("tool", tool_labels), ("job", job_labels)):
        _, sessions, _, main = results[side]
        data = [s for s in sessions if s.data_calls]
        skipped = len(sessions) - len(data)
        groups = collections.OrderedDict()
        if len(labels) == 1 and labels[0].endswith("*"):
            groups[labels[0][:-1]] = data
        else:
            for i, s in enumerate(data):
                lab = labels[i] if i < len(labels) else labels[-1]
                groups.setdefault(lab.rstrip("*"), []).append(s)
        paired[side] = (groups, skipped)
    one_sided = []
    for lab in paired["tool"][0]:
        ts = paired["tool"][0].get(lab)
        js = paired["job"][0].get(lab)
        if not ts or not js:
            one_sided.append(f"{lab} (tool only)")
            continue
        ctx.emit(f"**{lab}**\n")
        ctx.emit(table(merge(ts), merge(js), tool_name) + "\n")
    one_sided += [f"{lab} (job only)" for lab in paired["job"][0] if lab not in paired["tool"][0]]
    if one_sided:
        ctx.emit("Not paired here: " + ", ".join(one_sided) + ".\n")
    ctx.emit(f"Sessions without data: tool {paired['tool'][1]}, job {paired['job'][1]} "
             "(opens that only size, flush or coordinate).\n")
    io = ("read", "write", "pread64", "pwrite64", "lseek", "fsync", "fdatasync", "fadvise64",
          "openat", "close", "ioctl", "sync")
    ctx.emit(f"`strace -c` totals (whole run, all files): tool: {summary_line(results['tool'][0], io)}; "
             f"job: {summary_line(results['job'][0], io)}.\n")
    return results


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def cmp_hdparm(ctx: Ctx):
    if not have("hdparm"):
        ctx.emit("### hdparm\n\nhdparm not installed: skipped.\n")
        return
    if os.geteuid() != 0:
        ctx.emit("### hdparm\n\nneeds root for a loop device: skipped.\n")
        return
    img = ctx.work / "hdparm.img"
    with open(img, "wb") as f:
        f.truncate(ctx.size_mib * MIB)
    loop = run(["losetup", "-f", "--show", img]).stdout.strip()
    try:
        run(["dd", "if=/dev/urandom", f"of={loop}", "bs=1M", f"count={ctx.size_mib}", "oflag=direct"])
        devdir = ctx.work / "hdparm-dev"
        devdir.mkdir(exist_ok=True)
        for name in ("fio-pack.hdparm-t.dat", "fio-pack.hdparm-T.dat"):
            link = devdir / name
            if link.is_symlink():
                link.unlink()
            link.symlink_to(loop)
        env = ctx.env(FIO_DIR=devdir)
        job = job_copy(REPO / "jobs/000-mtron-isp/hdparm-t-buffered.fio", ctx.work / "hdparm-t.fio",
                       {"size=64m": f"size={ctx.size_mib}m"}, drop={"precondition"})
        compare(ctx, "hdparm -t (buffered disk reads)", ["hdparm", "-t", loop], None,
                lambda p: p == loop, ["hdparm -t read"],
                ctx.fio_cmd(job), env, lambda p: p.endswith("fio-pack.hdparm-t.dat"), ["hdparm -t read"],
                notes=f"Target: loop device {loop} on a {ctx.size_mib} MiB file (hdparm reads it "
                      "to the end before its 3 s are up). The job's [precondition] (a write) "
                      "is left out: the device was filled once with random data for both.",
                tool_name="hdparm")
        job = job_copy(REPO / "jobs/000-mtron-isp/hdparm-T-cached.fio", ctx.work / "hdparm-T.fio")
        compare(ctx, "hdparm -T (cached reads)", ["hdparm", "-T", loop], None,
                lambda p: p == loop, ["hdparm -T reads*"],
                ctx.fio_cmd(job), env, lambda p: p.endswith("fio-pack.hdparm-T.dat"), ["hdparm -T reads*"],
                notes="Same loop device. hdparm's first read (before its timing) and its "
                      "lseek-only calibration loop are part of its session.",
                tool_name="hdparm")
    finally:
        run(["losetup", "-d", loop], check=False)
        img.unlink(missing_ok=True)


def cmp_dd(ctx: Ctx):
    d = ctx.work / "dd"
    d.mkdir(exist_ok=True)
    bin_ = d / "10GB.bin"
    fiofile = d / "fio-pack.dd-10g.bin"
    env = ctx.env(FIO_DIR=d)

    def rm_tool():
        bin_.unlink(missing_ok=True)

    def rm_job():
        fiofile.unlink(missing_ok=True)

    job = job_copy(REPO / "jobs/000-mtron-isp/dd-write-10g.fio", ctx.work / "dd-write.fio",
                   {"size=64m": f"size={ctx.size_mib}m"})
    compare(ctx, "dd write (bs=1024k)",
            ["dd", "if=/dev/zero", f"of={bin_}", "bs=1024k", f"count={ctx.size_mib}"], None,
            lambda p: p == str(bin_), ["dd write"],
            ctx.fio_cmd(job), env, lambda p: p == str(fiofile), ["dd write"],
            notes=f"{ctx.size_mib} MiB instead of 10 GB; both start from no file.",
            tool_name="dd", prepare_tool=rm_tool, prepare_job=rm_job)

    def make_tool_file():
        run(["dd", "if=/dev/zero", f"of={bin_}", "bs=1024k", f"count={ctx.size_mib}", "conv=fsync"])

    pre = job_copy(REPO / "jobs/000-mtron-isp/dd-read-10g.fio", ctx.work / "dd-read-pre.fio",
                   {"size=64m": f"size={ctx.size_mib}m"}, keep={"precondition"})

    def make_job_file():
        run([ctx.fio, pre], env=env)

    job = job_copy(REPO / "jobs/000-mtron-isp/dd-read-10g.fio", ctx.work / "dd-read.fio",
                   {"size=64m": f"size={ctx.size_mib}m", "unlink=1": "unlink=0"}, drop={"precondition"})
    compare(ctx, "dd read (default bs=512)",
            ["dd", f"if={bin_}", "of=/dev/null"], None,
            lambda p: p == str(bin_), ["dd read"],
            ctx.fio_cmd(job), env, lambda p: p == str(fiofile), ["dd read"],
            notes="The file is written first (dd with conv=fsync for the tool, the job's "
                  "[precondition] for the job, both untraced); the job's invalidate=1 then drops "
                  "its pages; dd reads with whatever is cached (run `echo 1 > "
                  "/proc/sys/vm/drop_caches` for a cold dd).",
            tool_name="dd", prepare_tool=make_tool_file, prepare_job=make_job_file)
    rm_tool()
    rm_job()


def cmp_sysbench(ctx: Ctx):
    if not have("sysbench"):
        ctx.emit("### sysbench\n\nsysbench not installed: skipped.\n")
        return
    d = ctx.work / "sysbench"
    d.mkdir(exist_ok=True)
    total = f"{ctx.size_mib}M"
    base = ["sysbench", "fileio", "--file-num=128", f"--file-total-size={total}",
            "--file-block-size=16384", "--file-test-mode=rndrd", "--file-extra-flags=direct"]
    env = ctx.env(FIO_DIR=d)
    tool_t = lambda p: re.fullmatch(r"test_file\.\d+", os.path.basename(p)) is not None
    job_t = lambda p: re.fullmatch(r"fio-pack\.sysbench\.\d+", os.path.basename(p)) is not None

    def cleanup():
        for f in d.glob("*"):
            f.unlink()

    pre = job_copy(REPO / "jobs/002-intel320-sysbench/sysbench-rndrd.fio", ctx.work / "sb-pre.fio",
                   {"size=64m": f"size={ctx.size_mib}m"}, keep={"precondition"})
    compare(ctx, "sysbench fileio prepare",
            base + ["prepare"], d, tool_t, ["prepare*"],
            ctx.fio_cmd(pre), env, job_t, ["prepare*"],
            notes=f"128 files, {ctx.size_mib} MiB in all (sysbench --file-total-size).",
            tool_name="sysbench", prepare_tool=cleanup, prepare_job=cleanup)
    run(base + ["prepare"], cwd=d)
    run([ctx.fio, pre], env=env)
    job = job_copy(REPO / "jobs/002-intel320-sysbench/sysbench-rndrd.fio", ctx.work / "sb-run.fio",
                   {"size=64m": f"size={ctx.size_mib}m", "runtime=10": "runtime=1",
                    "numjobs=4": "numjobs=1"}, drop={"precondition"})
    compare(ctx, "sysbench fileio rndrd run (1 thread)",
            base + ["--threads=1", "--time=1", "run"], d, tool_t, ["rndrd*"],
            ctx.fio_cmd(job), env, job_t, ["rndrd*"],
            notes="1 thread, 1 s each. sysbench opens all 128 files once in its main thread; "
                  "each fio process opens them itself.",
            tool_name="sysbench")
    run(base + ["cleanup"], cwd=d)
    cleanup()


def cmp_bonnie(ctx: Ctx):
    if not have("bonnie++"):
        ctx.emit("### bonnie++\n\nbonnie++ not installed: skipped.\n")
        return
    d = ctx.work / "bonnie"
    d.mkdir(exist_ok=True)
    size = ctx.size_mib
    tool = ["bonnie++", "-d", d, "-s", f"{size}:8192", "-r", str(max(1, size // 2)), "-n", "0",
            "-f1", "-u", "root", "-q", "-x", "1", "-z", "1"]
    tool_t = lambda p: os.path.basename(p).startswith("Bonnie.")
    gen = ctx.work / "bonnie-job"
    run(fiopack.command("gen", "bonnie-seq", "--size", f"{size}m",
                        "--byte-io", "1m", "--data-dir", d, "--out", str(gen)))
    job_t = lambda p: os.path.basename(p) == "fio-pack.bonnie.dat"

    def cleanup():
        for f in d.glob("*"):
            if f.is_file():
                f.unlink()

    first = compare(ctx, "bonnie++ -s (sequential tests)",
            tool, None, tool_t,
            ["per-char write", "block write", "rewrite", "per-char read", "block read", "seeks*"],
            ctx.fio_cmd(gen / "bonnie-seq.fio"), ctx.env(), job_t,
            ["per-char write", "block write", "rewrite", "per-char read", "block read"],
            notes=f"bonnie++ -s {size}:8192 -r {max(1, size // 2)} -f1 (1 MiB per-char tests "
                  "instead of 3 MiB, to keep strace quick; the job was generated with "
                  "--byte-io 1m to match). bonnie++'s seeks are compared below.",
            tool_name="bonnie++", prepare_tool=cleanup, prepare_job=cleanup)
    env = ctx.env(FIO_DIR=d)
    job = job_copy(REPO / "jobs/004-phoronix-raid/bonnie-seeks.fio", ctx.work / "bonnie-seeks.fio",
                   {"size=64m": f"size={size}m"})
    compare(ctx, "bonnie++ random seeks",
            tool, None, tool_t,
            ["per-char write", "block write", "rewrite", "per-char read", "block read", "seeks*"],
            ctx.fio_cmd(job), env, lambda p: os.path.basename(p) == "fio-pack.bonnie-seeks.dat",
            ["block write", "seeks*"],
            notes="The same bonnie++ run; here its 5 seeker threads are compared with the job's "
                  "5 processes (and its block write with the job's precondition).",
            tool_name="bonnie++", prepare_job=cleanup, tool_results=first["tool"])
    cleanup()


def cmp_bonnie_files(ctx: Ctx):
    if not have("bonnie++"):
        return
    d = ctx.work / "bonnie-n"
    d.mkdir(exist_ok=True)
    tree = ctx.work / "bonnie-n-tree"
    n = 1
    tool = ["bonnie++", "-d", d, "-s", "0", "-n", str(n), "-u", "root", "-q", "-x", "1", "-z", "1"]
    job = job_copy(REPO / "jobs/004-phoronix-raid/bonnie-files.fio", ctx.work / "bonnie-files.fio",
                   {"tree_files=16384": f"tree_files={n * 1024}"})
    out = {}
    for side, cmd, env in (("tool", tool, None), ("job", ctx.fio_cmd(job), None)):
        if tree.exists():
            shutil.rmtree(tree)
        tree.mkdir()
        env = ctx.env(FIO_DIR=tree)
        tdir = ctx.work / f"strace-files-{side}"
        if tdir.exists():
            shutil.rmtree(tdir)
        tdir.mkdir()
        summary = ctx.work / f"strace-files-{side}.summary"
        run(["strace", "-f", "-c", "-o", summary] + list(cmd), env=env, cwd=REPO)
        if tree.exists():
            shutil.rmtree(tree)
        tree.mkdir()
        traced_calls(cmd, tdir, cwd=REPO, env=env)
        _, meta, main = parse_traces(tdir, lambda p: False)
        total = collections.Counter()
        for tid, c in meta.items():
            if side == "job" and tid in main:
                continue          # fio's parent: option parsing, engine loading
            total.update(c)
        out[side] = (total, summary_counts(summary))
    files = n * 1024 * 2          # sequential and random rounds
    names = ("open", "openat", "openat2", "close", "write", "stat", "newfstatat", "statx", "lstat",
             "unlink", "unlinkat", "getdents64", "fsync", "mkdir", "mkdirat")
    ctx.emit("### bonnie++ -n (file creation tests)\n")
    ctx.emit("```")
    ctx.emit("tool: " + " ".join(map(str, tool)))
    ctx.emit(f"job:  FIO_DIR={tree} " + " ".join(map(str, ctx.fio_cmd(job))))
    ctx.emit("```\n")
    ctx.emit(f"{n * 1024} empty files, created/stat'ed/deleted in order and then at random: "
             f"calls per file over both rounds ({files} file lifetimes; for the job, fio's own "
             "start-up process left out).\n")
    ctx.emit("| call | bonnie++ | fio job |\n|---|---|---|")
    for nm in names:
        a, b = out["tool"][0].get(nm, 0), out["job"][0].get(nm, 0)
        if a or b:
            ctx.emit(f"| {nm} | {a / files:.3f} | {b / files:.3f} |")
    ctx.emit("")
    shutil.rmtree(tree, ignore_errors=True)


COMPARISONS = {"hdparm": cmp_hdparm, "dd": cmp_dd, "sysbench": cmp_sysbench,
               "bonnie": cmp_bonnie, "bonnie-files": cmp_bonnie_files}


def check_work(path: str) -> None:
    """--work is the command's own scratch directory: the comparisons write
    their images, data files and job copies there by fixed names, empty
    their subdirectories (sysbench/, bonnie/) and remove trees in it."""
    outputs.check_new_or_empty_dir(path, "--work", "the comparisons write, replace and "
                                   "remove files in it")


def main(argv=None) -> int:
    ap = Parser(prog="fio-pack syscalls", description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fio", default=str(REPO / "build" / "fio"), help="fio binary (default build/fio)")
    ap.add_argument("--only", default=",".join(COMPARISONS),
                    help=f"comma-separated subset of {','.join(COMPARISONS)}")
    ap.add_argument("--size-mib", type=number(int, low=1), default=16, help="target size in MiB (default 16)")
    ap.add_argument("--work", help="scratch directory, new or empty: the comparisons write, "
                    "replace and remove files in it (default: a new one under $TMPDIR, "
                    "removed after)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory and traces")
    args = ap.parse_args(argv)
    unknown = [n for n in args.only.split(",") if n not in COMPARISONS]
    if unknown:
        ap.error(f"--only: unknown comparison {unknown[0]!r} (one of {','.join(COMPARISONS)})")
    fiobin.check(args.fio, "--fio")
    if args.work:
        check_work(args.work)
    if not have("strace"):
        print("strace not installed (apt-get install strace)", file=sys.stderr)
        return 2
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="fio-pack-syscalls."))
    work.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(work, Path(args.fio), args.size_mib)
    ctx.emit(f"<!-- scripts/fio-pack syscalls --only {args.only} --size-mib {args.size_mib} -->\n")
    try:
        for name in args.only.split(","):
            COMPARISONS[name](ctx)
    finally:
        print("\n".join(ctx.out))
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0

