"""What every benchmark of the pack shares: running a command with its CPU
time and a timeout (and its peak RSS), the loop device the cold-cache
benchmarks build, the tmpfs mounts and private disk directory the others
work in, the snapshots of fio and the engine a run measures, the
Markdown report and its machine table, the end of a run (report, raw
measurements, unwinding on signals) and the options every benchmark has."""

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from fiopack import REPO, catalogue, fiobin, outputs
from fiopack.options import Parser

def log(msg):
    sys.stderr.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


class Timeout(Exception):
    pass


def run(cmd, timeout=None, cwd=None, check=True):
    """Runs @cmd in its own process group; kills that group on timeout.
    Returns (stdout, stderr, wall seconds); run.cpu is the user+system CPU
    seconds of the command and every process it waited for, run.returncode
    its exit status: a failure raises RuntimeError, unless @check is false."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise Timeout("%s: timed out after %s s" % (cmd[0], timeout))
    except BaseException:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()
        raise
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    run.cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    run.returncode = p.returncode
    if check and p.returncode != 0:
        raise RuntimeError("command failed (%d): %s\n%s%s" % (
            p.returncode, " ".join(cmd), out[-2000:], err[-2000:]))
    return out, err, wall


def run_peak_rss(cmd, timeout=None, cwd=None):
    """run() under `/usr/bin/time -f %M`: (stdout, stderr, wall seconds,
    peak RSS in KiB). The RSS is the getrusage ru_maxrss time reads when
    the command exits: the largest of the command's and of the processes
    it reaped (fio's job processes, unless it runs them as threads)."""
    fd, path = tempfile.mkstemp(prefix="bench-rss.")
    os.close(fd)
    try:
        out, err, wall = run(["/usr/bin/time", "-f", "%M", "-o", path] + cmd,
                             timeout=timeout, cwd=cwd)
        with open(path) as f:
            kib = int(f.read().strip().splitlines()[-1])
        return out, err, wall, kib
    finally:
        os.unlink(path)


def sh(cmd, **kw):
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout


class LoopDevice:
    """An image written in full, a loop device with direct I/O over it and
    a mount point; cleanup() undoes whatever was done."""

    # more mkfs options per file system (a subclass's)
    MKFS_OPTIONS = {}

    def __init__(self, image_dir, size_mib, fill="urandom"):
        self.fill = fill
        self.base = tempfile.mkdtemp(prefix="bench-cold.", dir="/tmp")
        self.image = os.path.join(image_dir, "bench-cold-%d.img" % os.getpid())
        self.mnt = os.path.join(self.base, "mnt")
        os.mkdir(self.mnt)
        self.dev = None
        self.mounted = False
        self.created = False
        self.size_mib = size_mib

    def setup(self):
        if os.path.exists(self.image):
            raise RuntimeError("%s exists" % self.image)
        self.created = True
        sh(["dd", "if=/dev/" + self.fill, "of=" + self.image, "bs=1M", "count=%d" % self.size_mib,
            "oflag=direct", "status=none"])
        self.dev = sh(["losetup", "--direct-io=on", "--show", "-f", self.image]).strip()
        self.stat = "/sys/block/%s/stat" % os.path.basename(self.dev)

    def reads(self):
        with open(self.stat) as f:
            return int(f.read().split()[0])

    def mkfs_mount(self, fs):
        self.umount()
        more = self.MKFS_OPTIONS.get(fs, [])
        if fs == "xfs":
            sh(["mkfs.xfs", "-q", "-f"] + more + [self.dev])
        else:
            sh(["mkfs." + fs, "-q", "-F"] + more + [self.dev])
        sh(["mount", self.dev, self.mnt])
        self.mounted = True
        tree = os.path.join(self.mnt, "tree")
        os.mkdir(tree)
        return tree

    def umount(self):
        if self.mounted:
            for attempt in range(5):
                if subprocess.run(["umount", self.mnt]).returncode == 0:
                    break
                time.sleep(0.5 * (attempt + 1))
            else:
                subprocess.run(["umount", "-l", self.mnt])
            self.mounted = False

    def cleanup(self):
        self.umount()
        if self.dev:
            subprocess.run(["losetup", "-d", self.dev])
            self.dev = None
        if self.created and os.path.exists(self.image):
            os.unlink(self.image)
        try:
            os.rmdir(self.mnt)
            os.rmdir(self.base)
        except OSError as e:
            log("cannot remove %s: %s" % (self.base, e))


def mount_tmpfs(mnt, size_bytes, min_mib):
    """Mounts a tmpfs on the directory @mnt: @size_bytes rounded up to
    whole MiB, at least @min_mib MiB."""
    size_m = max(min_mib, (size_bytes + (1 << 20) - 1) >> 20)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0755" % size_m,
                    "tmpfs", mnt], check=True)


def umount_retrying(mnt):
    """Unmounts @mnt, retrying while it is busy (a process the benchmark
    killed may not have let go of it yet); detaches it lazily at the end."""
    for attempt in range(5):
        r = subprocess.run(["umount", mnt], stderr=subprocess.PIPE, text=True)
        if r.returncode == 0:
            return
        time.sleep(0.5 * (attempt + 1))
    log("umount %s failed, detaching lazily: %s" % (mnt, r.stderr.strip()))
    subprocess.run(["umount", "-l", mnt])


class Places:
    """A benchmark's work places, each made on first use: a tmpfs of at
    least @tmpfs_min_mib MiB mounted at t in a new directory /tmp/@prefix*,
    and a private directory @prefix* on the disk under test. cleanup()
    unmounts and removes whatever was made."""

    def __init__(self, prefix, tmpfs_min_mib):
        self.prefix = prefix
        self.tmpfs_min_mib = tmpfs_min_mib
        self.base = None
        self.mnt = None
        self.disk = None

    def make_base(self):
        self.base = tempfile.mkdtemp(prefix=self.prefix, dir="/tmp")

    def mount_tmpfs(self, size_bytes):
        if self.base is None:
            self.make_base()
        mp = os.path.join(self.base, "t")
        os.mkdir(mp)
        mount_tmpfs(mp, size_bytes, self.tmpfs_min_mib)
        self.mnt = mp
        return mp

    def make_disk(self, parent):
        self.disk = tempfile.mkdtemp(prefix=self.prefix, dir=parent)
        return self.disk

    def remove_tmpfs_and_disk(self):
        if self.mnt:
            umount_retrying(self.mnt)
            try:
                os.rmdir(self.mnt)
            except OSError as e:
                log("cannot remove %s: %s" % (self.mnt, e))
            self.mnt = None
        if self.disk:
            shutil.rmtree(self.disk, ignore_errors=True)
            self.disk = None

    def cleanup(self):
        self.remove_tmpfs_and_disk()
        if self.base:
            try:
                os.rmdir(self.base)
            except OSError as e:
                log("cannot remove %s: %s" % (self.base, e))
            self.base = None


def fio_json(out):
    """fio's JSON document from its output (notes may come first)."""
    text = catalogue.split_json(out)[1]
    if text is None:
        raise RuntimeError("fio printed no JSON: %s" % out[:200])
    return json.loads(text)


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return min(xs), statistics.median(xs), max(xs)


def fmt_rate(x):
    if x is None:
        return "-"
    return "{:,.0f}".format(x)


# ---------------------------------------------------------------- the machine's other work

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_busy_s():
    """Busy CPU seconds of the whole machine so far (all but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / CLK_TCK


def other_load(seconds):
    """CPUs kept busy by everything on the machine during @seconds (this
    script sleeps meanwhile)."""
    b0, t0 = cpu_busy_s(), time.monotonic()
    time.sleep(seconds)
    return (cpu_busy_s() - b0) / (time.monotonic() - t0)


def wait_quiet(a, before=""):
    """Waits, in 1 s samples, until other work on the machine keeps fewer
    than a.quiet_cpus CPUs busy, or a.quiet_wait seconds have passed (the
    --quiet-cpus and --quiet-wait of the benchmarks that measure pairs);
    @before ends the line that says it waits. Returns the seconds waited,
    the last sample's included."""
    t0 = time.monotonic()
    said = False
    while True:
        load = other_load(1.0)
        waited = time.monotonic() - t0
        if load < a.quiet_cpus or waited >= a.quiet_wait:
            if said:
                log("  ... machine %s after %.0f s (%.2f CPUs busy)" % (
                    "quiet" if load < a.quiet_cpus else "still busy, going on", waited, load))
            return waited
        if not said:
            log("  other work keeps %.2f CPUs busy: waiting (up to %d s)%s"
                % (load, a.quiet_wait, before))
            said = True


# ---------------------------------------------------------------- CPU per operation

def job_cpu_s(job):
    """CPU seconds of a fio job: its usr_cpu + sys_cpu, percentages of its
    job_runtime (getrusage of the job's process, all of its threads)."""
    return (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * job["job_runtime"] / 1000.0


# fio's null engine costs about 0.15 us an I/O: 5M I/Os are a job of most of a
# second, whose usr_cpu and sys_cpu mean something (a job of milliseconds shows 0)
NULL_MIN_OPS = 5000000


def fio_null_cmd(fio, rw, bs, span, ops, extra=()):
    """fio's null engine with a job's shape (its rw=, bs=, the span of its
    offsets, its operation count): what fio itself costs an I/O, without a
    system call. The floor under every fio engine's figure."""
    return [fio, "--output-format=json", "--name=null", "--ioengine=null", "--rw=" + rw,
            "--bs=%d" % bs, "--size=%d" % span, "--io_size=%d" % (ops * bs),
            "--number_ios=%d" % ops] + list(extra)


def fio_null_us(fio, reads, writes, bs, span, extra=()):
    """fio's null engine doing @reads and @writes I/Os of @bs in random
    order over @span (at least NULL_MIN_OPS in all, in the same proportion):
    CPU microseconds of the job an I/O."""
    n = max(reads + writes, NULL_MIN_OPS)
    cmd = fio_null_cmd(fio, "randrw", bs, span, n, [
        "--rwmixread=%d" % round(100.0 * reads / (reads + writes)),
        "--norandommap=1"] + list(extra))
    out = run(cmd)[0]
    job = fio_json(out)["jobs"][0]
    done = job["read"]["total_ios"] + job["write"]["total_ios"]
    if done != n:
        raise RuntimeError("null engine did %d I/Os, not %d" % (done, n))
    return job_cpu_s(job) * 1e6 / n


def cpu_per_op_table(rep, sides, diffs):
    """CPU microseconds per operation: @sides [(label, [us per op of each
    run])], then @diffs [(label, [(sign, side label), ...])], each a sum of
    the sides' medians: what is left of one side once the others are taken
    away."""
    med = {}
    rows = []
    for label, xs in sides:
        s = stats(xs)
        if s:
            med[label] = s[1]
        rows.append([label, "%.3f" % s[1] if s else "-",
                     "%.3f / %.3f / %.3f" % s if s else "-",
                     len([x for x in xs if x is not None])])
    for label, terms in diffs:
        if all(t in med for _, t in terms):
            v = sum(sign * med[t] for sign, t in terms)
            rows.append([label, "**%.3f**" % v, " ".join(
                ("" if i == 0 and sign > 0 else "+ " if sign > 0 else "- ") + t
                for i, (sign, t) in enumerate(terms)), "-"])
    rep.table(["CPU per operation", "us (median)", "min / median / max, or what it is", "runs"],
              rows)


# ---------------------------------------------------------------- report

class Report:
    def __init__(self):
        self.parts = []

    def add(self, text=""):
        self.parts.append(text)

    def table(self, header, rows):
        self.add("| " + " | ".join(header) + " |")
        self.add("|" + "|".join("---" for _ in header) + "|")
        for r in rows:
            self.add("| " + " | ".join(str(c) for c in r) + " |")
        self.add()

    def text(self):
        return "\n".join(self.parts) + "\n"


def machine_info(args, fio_version):
    def sh(cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True).stdout.strip()
        except OSError:
            return "?"
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = "%.1f GiB" % (int(line.split()[1]) / 1048576.0)
    except OSError:
        pass
    rows = [("nproc", sh(["nproc"])), ("CPU", cpu), ("memory", mem),
            ("kernel (uname -r)", platform.release()),
            ("fio", "%s (%s)" % (fio_version, args.fio)),
            ("engine", args.engine),
            ("load average at start", " ".join("%.2f" % x for x in os.getloadavg()))]
    return rows


def engine_build(fio, engine):
    """The engine .so to snapshot for @fio. build/NAME.so is a loader that
    opens fio-VERSION/NAME.so beside itself, which a copy of it in a work
    directory cannot find; the per-version build, when there is one, is
    the engine itself."""
    version = run([fio, "--version"])[0].strip()
    real = os.path.join(os.path.dirname(engine), version, os.path.basename(engine))
    return real if os.path.exists(real) else engine


def snapshot_build(a, work, keys=(), stamp="%Y-%m-%d %H:%M:%S"):
    """Copies fio, the engine and the programs a.KEY of @keys into @work
    and points @a at the copies, so that a rebuild of build/ during the run
    cannot mix two engines (or two fios) in one report: ({key: (source,
    md5, build time as @stamp)}, fio's version). @work is removed on error."""
    snap = {}
    try:
        # a snapshot of build/NAME.so (a loader) could not find its engine
        a.engine = engine_build(a.fio, a.engine)
        for key in ("fio", "engine") + tuple(keys):
            src = getattr(a, key)
            dst = os.path.join(work, os.path.basename(src))
            shutil.copy2(src, dst)
            with open(dst, "rb") as f:
                snap[key] = (src, hashlib.md5(f.read()).hexdigest(),
                             time.strftime(stamp, time.localtime(os.stat(dst).st_mtime)))
            setattr(a, key, dst)
        fio_version = run([a.fio, "--version"])[0].strip()
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return snap, fio_version


def newer_source(built: float, *directories: str):
    """The file git tracks under @directories of the checkout that changed
    last, when it changed after @built (a build's mtime): (path, mtime),
    else None."""
    r = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--", *directories],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    newest = None
    for rel in filter(None, r.stdout.decode(errors="replace").split("\0")):
        try:
            m = os.stat(os.path.join(REPO, rel)).st_mtime
        except OSError:
            continue
        if newest is None or m > newest[1]:
            newest = (rel, m)
    return newest if newest and newest[1] > built else None


def build_source(path, built, *directories):
    """What @path (a build, its mtime @built) was built from: "commit X",
    with ", DIRECTORY/ modified in the work tree" when one of
    @directories is, or, when a file git tracks under them changed after
    the build, that it is not that commit's (also said on stderr)."""
    git = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    stale = newer_source(built, *directories)
    if stale:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stale[1]))
        log("warning: %s was built before %s changed (%s): it is not the source "
            "of commit %s (run make)" % (path, stale[0], when, git or "?"))
        return ("**not commit %s**: built before %s changed (%s); run make" %
                (git or "?", stale[0], when))
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", *directories],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return "commit %s%s" % (git or "?", ", %s modified in the work tree" % " or ".join(
        d + "/" for d in directories) if dirty.strip() else "")


def build_row(label, path, *directories):
    """A machine-table row for a program a benchmark runs from the checkout
    without copying it (bench device's moddev), built from @directories:
    its path, md5, build time and build_source()."""
    try:
        with open(path, "rb") as f:
            md5 = hashlib.md5(f.read()).hexdigest()
        built = os.stat(path).st_mtime
    except OSError as e:
        return (label, "%s: %s" % (path, e.strerror))
    return (label, "%s (md5 %s, built %s); source: %s" % (
        path, md5, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(built)),
        build_source(path, built, *directories)))


def snapshot_machine_rows(a, fio_version, snap):
    """machine_info() with fio and the engine as snapshot_build() took them:
    md5, build time, the commit and whether engines/ was modified. An
    engine built before its sources last changed is not that commit's:
    the row says so, and so does a line on stderr (a report that named
    the checkout's commit for a stale build measured the wrong code
    without a word)."""
    mi = [row for row in machine_info(a, fio_version) if row[0] not in ("fio", "engine")]
    mi.append(("fio", "%s (%s, md5 %s, built %s)" % ((fio_version,) + snap["fio"])))
    source = build_source("the engine " + snap["engine"][0], os.stat(a.engine).st_mtime,
                          "engines")
    mi.append(("engine", "%s (md5 %s, built %s), a copy taken at the start; source: %s" %
               (snap["engine"] + (source,))))
    return mi


def fs_of(path):
    r = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE,OPTIONS", "-T", path],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() or "?"


def unwind_on_signals():
    """SIGTERM and SIGHUP unwind like Ctrl-C, so that a benchmark's finally
    clauses unmount its tmpfs and remove its work directories."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)


def save_report(a, rep, results, error, json_default=None):
    """The end of every benchmark's report (this one's, fio-pack bench postmark's,
    fio-pack bench dbreplay's): the error the run stopped with, if any; the
    Markdown to --output (or stdout); the measurements to --raw."""
    if error:
        rep.add()
        rep.add("**The run stopped with an error:** `%s`" % error.replace("\n", " ")[:1500])
    text = rep.text()
    if a.output:
        outputs.write_output(a.output, text, "--output")
        log("report written to %s" % a.output)
    else:
        sys.stdout.write(text)
    if a.raw:
        outputs.write_output(a.raw, json.dumps(results, indent=1, default=json_default), "--raw")
        log("raw measurements written to %s" % a.raw)


def parser(name, description, epilog):
    """The parser of `fio-pack bench NAME`: its man page is the description
    and the epilog, as written."""
    return Parser(
        prog="fio-pack bench " + name, description=description, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="sudo scripts/fio-pack bench %s [options]" % name)


def add_output_options(p):
    """--output and --raw: where the report and the measurements go."""
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the Markdown report to FILE (default: stdout; %s)"
                   % outputs.POLICY_HELP)
    p.add_argument("--raw", metavar="FILE",
                   help="also write every measurement as JSON to FILE (%s)" % outputs.POLICY_HELP)


def check_outputs(a, *names):
    """The benchmark's output options (--output, --raw and @names), checked
    as soon as they are parsed: a report refused after an hour of runs is
    an hour lost."""
    for name in ("output", "raw") + names:
        outputs.check(getattr(a, name, None), "--" + name)


def add_build_options(p, engine):
    """--fio and --engine: the build the benchmark measures."""
    p.add_argument("--fio", default=os.path.join(REPO, "build/fio"),
                   help="fio binary (default build/fio)")
    p.add_argument("--engine", default=os.path.join(REPO, "build/%s.so" % engine),
                   help="engine shared object (default build/%s.so)" % engine)


def program_problem(path):
    """Why @path (--fio) cannot be run, or None (fiobin.problem)."""
    return fiobin.problem(path)


def check_fio(p, a) -> None:
    """--fio, as soon as it is parsed: one line (the parser's error) if it
    cannot be run."""
    why = program_problem(a.fio)
    if why:
        p.error(f"--fio {a.fio}: {why}")


def preflight(name, a, why_root, peak_rss=False):
    """The refusals every benchmark of a built engine starts with: not root
    (@why_root says what needs it), fio or the engine not built, or (with
    @peak_rss, for a benchmark that measures it with run_peak_rss)
    /usr/bin/time not installed. The exit status: 0 to go on, 2 refused
    (said in one line)."""
    if os.geteuid() != 0:
        sys.stderr.write("fio-pack bench %s: must run as root (%s)\n" % (name, why_root))
        return 2
    for path, why in ((a.fio, program_problem(a.fio)),
                      (a.engine, None if os.path.isfile(a.engine) else
                       "not found (run make)" if not os.path.exists(a.engine) else
                       "not a regular file")):
        if why:
            sys.stderr.write("fio-pack bench %s: %s %s\n" % (name, path, why))
            return 2
    if peak_rss and not os.path.exists("/usr/bin/time"):
        sys.stderr.write("fio-pack bench %s: /usr/bin/time not found (apt-get install time)\n"
                         % name)
        return 2
    return 0


def command_line(name, argv):
    """The command that reproduces this run, for the report."""
    return "sudo scripts/fio-pack bench %s%s" % (name, " " + " ".join(argv) if argv else "")


def report_header(rep, name, a, argv, machine):
    """The run's title (its date, quick or full mode), the command line of
    `fio-pack bench @name` and the @machine table."""
    rep.add("### Run of %s (%s)" % (time.strftime("%Y-%m-%d %H:%M %Z"),
                                    "quick mode" if a.quick else "full mode"))
    rep.add()
    rep.add("Command: `%s`" % command_line(name, argv))
    rep.add()
    rep.table(["machine", ""], machine)


# ---------------------------------------------------------------- A/B mode

def add_ab_option(p, engine):
    """--ab-engines: the A/B mode of a benchmark of the engine @engine."""
    p.add_argument("--ab-engines", metavar="A,B",
                   help="A/B mode: two builds of the engine, each a directory holding "
                        "%s.so (build/, a copy of it, build/fio-VERSION/) or the .so "
                        "itself, measured in rotating order (see A/B MODE)" % engine)


def ab_engines(p, a, engine):
    """--ab-engines, checked as it is parsed: [A, B], the two engines' paths
    (None without the option); one line (the parser's error) if it does not
    name two builds of @engine."""
    if a.ab_engines is None:
        return None
    builds = a.ab_engines.split(",")
    if len(builds) != 2 or not all(builds):
        p.error(f"--ab-engines {a.ab_engines}: two builds, A,B")
    paths = []
    for d in builds:
        so = os.path.join(d, engine + ".so") if os.path.isdir(d) else d
        if not os.path.isfile(so):
            p.error(f"--ab-engines: {so}: no such file")
        paths.append(os.path.abspath(so))
    return paths


def ab_machine_rows(rows, fio, engines):
    """The machine table of an A/B run: its engine row replaced by one per
    build (the engine fio loads for it, engine_build's, and its md5)."""
    out = [row for row in rows if row[0] != "engine"]
    for label, so in zip("AB", engines):
        real = engine_build(fio, so)
        with open(real, "rb") as f:
            md5 = hashlib.md5(f.read()).hexdigest()
        out.append(("engine " + label, "%s (md5 %s)" % (real, md5)))
    return out


def parse_ab_and_build(p, argv, engine):
    """The options a benchmark of the A/B mode ends with (--ab-engines,
    --fio, --engine), the parse, and the checks made as soon as it is
    parsed: the output options, the A/B mode's builds (a.ab)."""
    add_ab_option(p, engine)
    add_build_options(p, engine)
    a = p.parse_args(argv)
    check_outputs(a)
    a.ab = ab_engines(p, a, engine)
    return a


def rotated(xs, k):
    """@xs rotated left by @k: the order of round @k, so that nothing
    always runs first."""
    k %= len(xs)
    return xs[k:] + xs[:k]


def ab_facts(job, ddir="read"):
    """One A/B run: files/s (the direction's total_ios / runtime), the job's
    CPU microseconds and context switches per file."""
    d = job[ddir]
    n = d["total_ios"]
    return {"files": n, "files_s": n / (d["runtime"] / 1000.0) if d["runtime"] else None,
            "cpu_us": job_cpu_s(job) * 1e6 / n if n else None,
            "ctx": job["ctx"] / n if n else None}


def med_min_max(xs, f):
    """median (min / max) of @xs, each formatted by @f."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return "%s (%s / %s)" % (f(statistics.median(xs)), f(min(xs)), f(max(xs)))


def ab_tables(rep, runs, modes, more=None):
    """The report of an A/B run: @runs {"A"|"B": {mode: [ab_facts of each
    round]}} over @modes (names), a row per build and mode (files/s median
    (min / max), CPU us and context switches per file, medians; @more
    (header, cell(build, mode)) a column more), then B / A per mode: of
    each round's pair, and of the medians."""
    rows = []
    for b in "AB":
        for m in modes:
            xs = runs[b][m]
            rows.append(["%s, %s" % (b, m), med_min_max([x["files_s"] for x in xs], fmt_rate)]
                        + ([more[1](b, m)] if more else [])
                        + [med_min_max([x["cpu_us"] for x in xs], "{:.1f}".format),
                           med_min_max([x["ctx"] for x in xs], "{:.2f}".format)])
    rep.table(["build, mode", "files/s median (min / max)"] + ([more[0]] if more else [])
              + ["CPU us per file (job)", "context switches per file"], rows)
    rows = []
    for m in modes:
        pairs = [(x["files_s"], y["files_s"]) for x, y in zip(runs["A"][m], runs["B"][m])]
        meds = [stats([p[i] for p in pairs]) for i in (0, 1)]
        rows.append([m, med_min_max([b / a for a, b in pairs if a and b], "{:.3f}".format),
                     "%.3f" % (meds[1][1] / meds[0][1]) if all(meds) and meds[0][1] else "-"])
    rep.table(["mode", "B / A per round, median (min / max)", "B / A of the medians"], rows)
