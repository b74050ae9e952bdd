"""Benchmark the postmark fio engine against the real PostMark.

Run as root (it mounts a tmpfs), from anywhere:

    sudo scripts/fio-pack bench postmark --output /tmp/bpm.md

See --help for the full description (it reads like a man page).
Only the Python standard library is used; the generic helpers (process
runner, Markdown tables, machine description, the loop device of the
loop-ext4/loop-xfs file systems) are bench/harness.py's, the runs and
their measurements bench/postmark_runs.py's.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from fiopack import REPO
from fiopack.bench import harness, ondevice
from fiopack.options import number
from fiopack.bench.harness import Report, fs_of, log
from fiopack.bench.postmark_runs import SEED, Runner, measure, wait_quiet
from fiopack.device.state import Error

DESCRIPTION = """\
NAME
    fio-pack bench postmark - transactions per second of the postmark fio engine
    against the real PostMark 1.53, same configuration, same file system

SYNOPSIS
    sudo scripts/fio-pack bench postmark [--quick] [--output FILE]
         [--raw FILE] [--disk-dir DIR] [--repeats N] [more options below]

DESCRIPTION
    For each file system and each configuration, PostMark (/usr/bin/postmark
    CONFIG </dev/null) and the engine (build/fio --ioengine=external:
    build/postmark.so with the same pm_* settings) run alternately, A B B A
    A B ..., --repeats times each, every run in a fresh empty directory.
    Every pair (one PostMark run, one engine run next to it) gives a ratio
    engine tx/s / PostMark tx/s; the report gives min/median/max of the
    rates and of the pairwise ratios. There are no timed pass/fail
    assertions: the goal (>= 1.0) is printed next to the ratios.

    Transactions per second:
      PostMark  transactions / the whole seconds PostMark prints for its
                transaction phase ("N seconds of transactions"), i.e. a
                difference of two time() readings. The true duration d of a
                phase printed as S seconds satisfies S-1 < d < S+1, so the
                rate is known to within 1/S: under 1.7 % for S >= 60 s. The
                phase cannot be timed from outside the process.
      engine    transactions / phase_ns.transactions of the engine's
                pm_opstats_file line: CLOCK_MONOTONIC nanoseconds from the
                end of the last create to the end of the last transaction,
                the same two points PostMark reads its clock at. The engine
                runs with pm_whole_seconds=1, so its report also shows
                PostMark's whole-second arithmetic; that rate is kept as a
                second column ("both whole seconds").

    Counters: after every run the report's counters (files created, created
    alone / mixed, read, appended, deleted, deleted alone / mixed, and the
    data read and written exactly as printed, e.g. "653.76 megabytes") must be
    IDENTICAL between PostMark and the engine (and the engine's opstats
    counters equal to its report). A difference is printed at once on stderr
    as COUNTER MISMATCH, marked in the report, and makes the exit status 1.

    Transaction counts: PostMark's transaction phase must last >= 60 s (so
    that its whole-second timing error stays small). Unless --transactions
    fixes the count, each configuration on each file system is calibrated
    first: PostMark runs with 20,000 transactions, then with more (x3 to x10)
    until its transaction phase is printed as >= 10 s; the count for the
    measured runs is rate x --target-seconds (default 70), rounded to two
    significant digits. The chosen number is logged and reported. If the
    first measured PostMark run of a configuration still prints less than
    --min-seconds (60), that run is discarded, the count is scaled from it
    (count / its seconds x --target-seconds) and the repeats start again
    (once). A measured PostMark run under 60 s after that is flagged in the
    report.

    Configurations (seed 42, biases 5/5, no subdirectories, one location, as
    PostMark's defaults):
      article       the 000 article's (ISP, "Mtron SSD benchmark"): read
                    4096, write 4096, size 500 500000, number 5000, buffered
      pts           the Phoronix Test Suite profile: size 5120 524288,
                    number 500, read/write 512, buffered
      defaults      PostMark's defaults: size 500 10000, number 500,
                    read/write 512, buffered: small files, metadata heavy,
                    where fio's per-operation overhead shows most
      defaults-raw  the same with `set buffering false` / pm_buffering=0
    In each the transaction count is the calibrated one, not the original.

    File systems:
      tmpfs  a fresh tmpfs (size = 2 x number x size_high of the largest
             configuration + 512 MiB, at most 60 % of RAM) mounted by this
             script at /tmp/bpm.XXXXXX/t (short: PostMark keeps paths in an
             81-byte buffer) and unmounted at the end, also on errors,
             Ctrl-C, SIGTERM and SIGHUP.
      disk   a private directory below --disk-dir (default /var/tmp), made
             and removed by this script.
      loop-ext4, loop-xfs
             a block device of its own, made once: an image of --image-mib
             below --image-dir written in full from /dev/urandom, attached
             with `losetup --direct-io=on` (fio-pack bench cold's LoopDevice); then
             before EVERY single run (calibration probes included) of either
             program: umount, mkfs.ext4 -F / mkfs.xfs -f, mount. Each run
             starts on a fresh file system, so what one run left behind
             (writeback, journal, fragmented free space, an aged directory)
             cannot slow the next: the variance that made the `disk` ratios
             unreadable. Unmounted, detached and removed at exit, also on
             errors, Ctrl-C, SIGTERM and SIGHUP. Repeats: --disk-repeats.
             --device MODEL: on a modeled device instead (fio-pack device
             up MODEL, bench/ondevice.py); --filesystems then loop-ext4.
    `sync` runs (untimed) before every run on every file system, so a run
    does not pay for the previous run's writeback; the page cache is not
    dropped (PostMark never reads a file it did not just write).

    Also recorded per run: the process's user and system CPU seconds
    (getrusage of the children: fio's job process is fio's child), its wall
    time, PostMark's printed total seconds, and for the engine the sum of
    per-transaction latencies (opstats "transaction": lat_mean_ns x ops) as
    a share of the transaction phase (~100 %: a transaction's latency
    includes fio's work between its operations). "Other CPUs busy" is the busy time of the
    whole machine (/proc/stat, all but idle and iowait) minus the run's own
    CPU time, per second of the run: kernel threads (writeback, RCU) and any
    other tenant's work. A shared machine shows up there.

    CPU per transaction: after every pair, fio's null engine runs the
    engine job's I/Os (reads as reads; creates, appends, deletes and the
    transactions' syncs as writes; at least 5M I/Os, so that its CPU figures
    are more than rounding): fio's own CPU an I/O, times the engine's I/Os
    per transaction. The CPU table gives microseconds per transaction of the
    engine's job, of each whole process, of the null engine, and the
    differences: the engine's own (job - null), the engine beyond PostMark,
    and the engine's own beyond PostMark's (job - null - PostMark).

    Other work: before every run (after the `sync`) the script waits, up to
    --quiet-wait seconds, until the rest of the machine keeps fewer than
    --quiet-cpus CPUs busy (1 s samples of /proc/stat). A pair in which
    either run saw more than --quiet-cpus other CPUs busy is marked
    "disturbed"; the ratio is reported over all pairs and over the
    undisturbed ones. Nothing is discarded or rerun.

    Out of files: PostMark's file count is a random walk that starts at
    `number` (creates are skipped while the 2 x number table is full); when
    it reaches 0 PostMark stops with "out of files!" and prints no report.
    With the fixed seed this happens at a fixed transaction, so every count
    is first checked with build/pm-sim (the project's PostMark model, no file
    system); a count that would run out is capped below that transaction
    (3 significant digits), which is reported. This limits PostMark's
    defaults (number 500) to 3.56 million transactions with seed 42.

    What is measured: copies of --fio, --engine and --pm-sim made at the
    start in a private /tmp/bpm-work.XXXXXX, so that a rebuild of build/
    during the run cannot mix two engines in one report; the report gives
    their md5 sums, build times and the git commit of the work tree.

    The report (Markdown) goes to stdout or --output FILE; progress goes to
    stderr; --raw FILE gets every measurement as JSON.
"""

EPILOG = """\
QUICK MODE
    --quick: transaction phases of about 5 s (probe from 5,000 transactions
    until PostMark prints >= 2 s), 1 repeat. A smoke test of the script, not
    a measurement: whole-second timing makes PostMark's rate +-20 % there.

FILES
    /usr/bin/postmark       the real PostMark (--postmark; Debian: postmark)
    build/fio               the fio the engine is built for (--fio)
    build/postmark.so       the engine (--engine)
    build/pm-sim            the PostMark model, for the out-of-files check (--pm-sim)
    /tmp/bpm-work.XXXXXX    copies of the three, configurations, reports (removed at exit)
    /tmp/bpm.XXXXXX         private mount point directory (removed at exit)
    /var/tmp/bpm.XXXXXX     private disk directory (removed at exit)

EXIT STATUS
    0 report written, counters identical everywhere; 1 a run failed or the
    counters differed somewhere (the report is still written, with the
    error); 2 usage error, not root, or a binary missing.

EXAMPLES
    sudo scripts/fio-pack bench postmark --quick
    sudo scripts/fio-pack bench postmark --output /tmp/bpm.md --raw /tmp/bpm.json
    sudo scripts/fio-pack bench postmark --filesystems tmpfs --configs defaults \\
         --transactions 2000000
    sudo scripts/fio-pack bench postmark --disk-dir /srv/scratch --disk-repeats 2
    sudo scripts/fio-pack bench postmark --filesystems loop-ext4,loop-xfs \\
         --configs defaults,pts --disk-repeats 3
"""

CONFIGS = [
    ("article", "000 article (ISP): read/write 4096, size 500-500000, number 5000",
     {"size": (500, 500000), "number": 5000, "read": 4096, "write": 4096, "buffering": True}),
    ("pts", "Phoronix (PTS) profile: size 5120-524288, number 500, read/write 512",
     {"size": (5120, 524288), "number": 500, "read": 512, "write": 512, "buffering": True}),
    ("defaults", "PostMark defaults: size 500-10000, number 500, read/write 512",
     {"size": (500, 10000), "number": 500, "read": 512, "write": 512, "buffering": True}),
    ("defaults-raw", "PostMark defaults, raw I/O (buffering false)",
     {"size": (500, 10000), "number": 500, "read": 512, "write": 512, "buffering": False}),
]
CONFIG_BY_NAME = {c[0]: c for c in CONFIGS}


# ---------------------------------------------------------------- file systems

class Places(harness.Places):
    """harness.Places (a tmpfs of at least 64 MiB) and the loop device;
    its /tmp directory made at once and removed whole at exit."""

    def __init__(self):
        super().__init__("bpm.", 64)
        self.make_base()
        self.loop = None

    def make_loop(self, a, fs):
        """The loop device, or with --device the modeled device (made on
        first use, shared by the file systems) and a function that puts a
        fresh `fs` on it: (base, remake, desc)."""
        if self.loop is None:
            if a.device:
                dev = ondevice.ModeledDevice(a.device, a.image_mib)
            else:
                dev = harness.LoopDevice(a.image_dir, a.image_mib)
            self.loop = dev
            dev.setup()
        dev = self.loop
        base = os.path.join(dev.mnt, "tree")

        def remake():
            if dev.mkfs_mount(fs) != base:
                raise RuntimeError("loop device mounted elsewhere than %s" % base)
        remake()
        if a.device:
            desc = "%s on the modeled device %s; umount, mkfs.%s, mount before every run" % (
                fs, dev.describe(), fs)
        else:
            desc = ("%s on %s: a %d MiB image in %s (%s) written in full from /dev/urandom, "
                    "`losetup --direct-io=on`; umount, mkfs.%s, mount before every run"
                    % (fs, dev.dev, a.image_mib, a.image_dir, fs_of(a.image_dir), fs))
        return base, remake, desc

    def cleanup(self):
        self.remove_tmpfs_and_disk()
        if self.loop:
            self.loop.cleanup()
            self.loop = None
        shutil.rmtree(self.base, ignore_errors=True)


def mem_total():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                return int(line.split()[1]) * 1024
    return 8 << 30


# ---------------------------------------------------------------- report

def trip(xs, fmt="{:,.0f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return " / ".join(fmt.format(v) for v in (min(xs), statistics.median(xs), max(xs)))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def results_table(rep, rows_res):
    rows = []
    for r in rows_res:
        pm = [x for x in r["runs"] if x["prog"] == "postmark"]
        en = [x for x in r["runs"] if x["prog"] == "engine"]
        ratios = [p["ratio"] for p in r["pairs"]]
        calm = [p["ratio"] for p in r["pairs"] if not p["disturbed"]]
        ident = all(p["counters_identical"] for p in r["pairs"]) and not r["mismatches"]
        secs = [x["tx_s"] for x in pm]
        rows.append([
            r["config"], "{:,}".format(r["transactions"]),
            "%d-%d" % (min(secs), max(secs)),
            trip([x["tx_rate"] for x in pm]), trip([x["tx_rate"] for x in en]),
            "**%s**" % trip(ratios, "{:.3f}"),
            "%s (%d of %d pairs)" % (trip(calm, "{:.3f}"), len(calm), len(ratios)),
            "±%.1f%%" % (100.0 / min(secs)),
            ("yes (%d/%d runs)" % (len(r["runs"]), len(r["runs"]))) if ident else "**NO**"])
    rep.table(["config", "transactions", "PostMark tx phase s", "PostMark tx/s min / med / max",
               "engine tx/s min / med / max", "engine/PostMark pairwise min / med / max",
               "same, undisturbed pairs only",
               "PostMark timing bound", "counters identical"], rows)


def detail_table(rep, rows_res):
    rows = []
    for r in rows_res:
        pm = [x for x in r["runs"] if x["prog"] == "postmark"]
        en = [x for x in r["runs"] if x["prog"] == "engine"]
        rows.append([
            r["config"],
            trip([p["ratio_whole"] for p in r["pairs"]], "{:.3f}"),
            "%.2f / %.2f" % (med([x["utime"] for x in pm]), med([x["stime"] for x in pm])),
            "%.2f / %.2f" % (med([x["utime"] for x in en]), med([x["stime"] for x in en])),
            "%.3f" % (med([x["utime"] + x["stime"] for x in en]) /
                      med([x["utime"] + x["stime"] for x in pm])),
            "%.1f%%" % (100 * med([x["in_tx_share"] for x in en])),
            "%.0f / %.0f" % (med([x["total_s"] for x in pm]),
                             med([(x["create_ns"] + x["tx_ns"] + x["delete_ns"]) / 1e9
                                  for x in en])),
            "%.1f / %.1f" % (med([x["wall"] for x in pm]), med([x["wall"] for x in en])),
            "%.2f / %.2f" % (max(x["other_cpus"] for x in pm), max(x["other_cpus"] for x in en)),
        ])
    rep.table(["config", "ratio, both whole seconds", "PostMark CPU usr / sys s",
               "engine CPU usr / sys s", "CPU engine/PostMark",
               "engine tx phase inside transactions", "total s PostMark (printed) / engine",
               "wall s PostMark / fio", "other CPUs busy, max PostMark / engine"], rows)


def cpu_table(rep, rows_res):
    """CPU us per transaction of the engine, PostMark and fio's null engine."""
    rep.add("CPU per transaction (the create and delete phases included: both programs "
            "have them). *engine, job*: fio's usr_cpu + sys_cpu of the job; *whole "
            "process*: getrusage of the program, fio's start-up included. *fio null "
            "engine*: fio's null engine doing the engine job's I/Os (reads; writes, "
            "deletes and syncs as writes; about three a transaction): fio's own cost, "
            "no system call. PostMark makes the engine's system calls and its own "
            "buffered copies, so what is left of the engine once fio and PostMark are "
            "taken away is the engine's own beyond PostMark's (negative: cheaper).")
    rep.add()
    for r in rows_res:
        en = [x for x in r["runs"] if x["prog"] == "engine"]
        pm = [x for x in r["runs"] if x["prog"] == "postmark"]
        rep.add("*%s*" % r["config"])
        rep.add()

        def us(runs, cpu):
            return [cpu(x) * 1e6 / x["transactions"] for x in runs]
        harness.cpu_per_op_table(rep, [
            ("engine, job", us(en, lambda x: x["job_cpu"])),
            ("engine, whole process", us(en, lambda x: x["utime"] + x["stime"])),
            ("PostMark, whole process", us(pm, lambda x: x["utime"] + x["stime"])),
            ("fio null engine, job", [p["null_us"] for p in r["pairs"]])], [
            ("the engine's own, job", [(1, "engine, job"), (-1, "fio null engine, job")]),
            ("engine beyond PostMark, job", [(1, "engine, job"),
                                             (-1, "PostMark, whole process")]),
            ("engine beyond PostMark, whole process", [(1, "engine, whole process"),
                                                       (-1, "PostMark, whole process")]),
            ("the engine's own beyond PostMark's", [(1, "engine, job"),
                                                    (-1, "fio null engine, job"),
                                                    (-1, "PostMark, whole process")])])


def counters_table(rep, rows_res):
    rows = []
    for r in rows_res:
        c = r["counters"]
        rows.append([r["config"], "{:,}".format(r["transactions"]), c["created"],
                     "%s + %s" % (c["created_alone"], c["created_mixed"]), c["read"],
                     c["appended"], c["deleted"], "%s + %s" % (c["deleted_alone"],
                                                               c["deleted_mixed"]),
                     c["data_read"], c["data_written"],
                     "identical" if not r["mismatches"] else "**DIFFER**"])
    rep.table(["config", "transactions", "created", "alone + mixed", "read", "appended",
               "deleted", "alone + mixed", "data read", "data written", "PostMark vs engine"],
              rows)


def runs_table(rep, rows_res):
    rows = []
    for r in rows_res:
        for x in r["runs"]:
            if x["prog"] == "postmark":
                phase = "%d (printed)" % x["tx_s"]
            else:
                phase = "%.2f" % (x["tx_ns"] / 1e9)
            rows.append([r["config"], x["repeat"] + 1, x["prog"], phase,
                         "{:,.0f}".format(x["tx_rate"]), "%.1f" % x["wall"],
                         "%.2f" % x["utime"], "%.2f" % x["stime"], "%.2f" % x["other_cpus"]])
    rep.table(["config", "repeat", "program", "tx phase s", "tx/s", "wall s", "usr s", "sys s",
               "other CPUs busy"], rows)


# ---------------------------------------------------------------- main

# a --transactions count (the option's text is NAME=N pairs, parsed below)
TRANSACTIONS = number(int, low=1)


def parse_args(argv):  # long: one add_argument per option, the manual's OPTIONS
    p = harness.parser("postmark", DESCRIPTION, EPILOG)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: ~5 s transaction phases, 1 repeat (see QUICK MODE)")
    harness.add_output_options(p)
    p.add_argument("--filesystems", metavar="LIST",
                   help="which of tmpfs,disk,loop-ext4,loop-xfs to run (default tmpfs,disk; "
                        "with --device, loop-ext4)")
    p.add_argument("--device", metavar="MODEL",
                   help="loop-*: a modeled device (fio-pack device up MODEL) instead of the "
                        "plain loop device, its backing file of --image-mib in a tmpfs")
    p.add_argument("--configs", default=",".join(c[0] for c in CONFIGS), metavar="LIST",
                   help="which configurations (default %s)" % ",".join(c[0] for c in CONFIGS))
    p.add_argument("--disk-dir", default="/var/tmp", metavar="DIR",
                   help="the disk runs use a private directory made below DIR "
                        "(default /var/tmp); keep DIR short")
    p.add_argument("--repeats", type=number(int, low=1), metavar="N",
                   help="runs of each program per configuration on tmpfs (default 3, quick 1)")
    p.add_argument("--disk-repeats", type=number(int, low=1), metavar="N",
                   help="the same on the disk and the loop device (default: --repeats)")
    p.add_argument("--image-dir", default="/var/tmp", metavar="DIR",
                   help="loop-*: where the image file goes (default /var/tmp); removed at exit")
    p.add_argument("--image-mib", type=number(int, low=1), metavar="MIB",
                   help="loop-*: image size (default 2 x number x size_high of the largest "
                        "configuration + 1 GiB, at most 8192)")
    p.add_argument("--transactions", metavar="N|NAME=N,...",
                   help="fix the transaction count (for all configurations, or per "
                        "configuration as article=N,pts=N,...) instead of calibrating")
    p.add_argument("--target-seconds", type=number(int, low=1), metavar="S",
                   help="PostMark transaction phase to calibrate for (default 70, quick 5)")
    p.add_argument("--min-seconds", type=number(int, low=1), metavar="S",
                   help="if the first measured PostMark run of a calibrated configuration "
                        "prints a shorter transaction phase, scale the count from that run "
                        "and start the repeats again, once (default 60, quick 2)")
    p.add_argument("--probe-start", type=number(int, low=1), metavar="N",
                   help="transactions of the first calibration probe (default 20000, quick 5000)")
    p.add_argument("--probe-seconds", type=number(int, low=1), metavar="S",
                   help="probe until PostMark prints at least S s (default 10, quick 2)")
    p.add_argument("--quiet-cpus", type=number(float, low=0), default=0.25, metavar="C",
                   help="before each run wait until other work keeps fewer than C CPUs "
                        "busy; a pair where other work kept more than C CPUs busy during "
                        "either run is marked disturbed (default 0.25)")
    p.add_argument("--quiet-wait", type=number(int, low=0), default=300, metavar="S",
                   help="wait at most S seconds for a quiet machine, then run anyway "
                        "(default 300)")
    p.add_argument("--pm-sim", default=os.path.join(REPO, "build/pm-sim"),
                   help="PostMark model used to avoid counts that run out of files "
                        "(default build/pm-sim)")
    p.add_argument("--postmark", default="/usr/bin/postmark",
                   help="PostMark binary (default /usr/bin/postmark)")
    harness.add_build_options(p, "postmark")
    a = p.parse_args(argv)
    harness.check_outputs(a)
    q = a.quick
    a.repeats = a.repeats or (1 if q else 3)
    a.disk_repeats = a.disk_repeats or a.repeats
    a.target_seconds = a.target_seconds or (5 if q else 70)
    a.probe_start = a.probe_start or (5000 if q else 20000)
    a.probe_seconds = a.probe_seconds or (2 if q else 10)
    a.min_seconds = a.min_seconds or (2 if q else 60)
    a.filesystems = [x.strip() for x in (a.filesystems or (
        "loop-ext4" if a.device else "tmpfs,disk")).split(",") if x.strip()]
    a.configs = [x.strip() for x in a.configs.split(",") if x.strip()]
    if not set(a.filesystems) <= {"tmpfs", "disk", "loop-ext4", "loop-xfs"} \
            or not a.filesystems:
        p.error("--filesystems takes tmpfs,disk,loop-ext4,loop-xfs")
    if a.device and not all(f.startswith("loop-") for f in a.filesystems):
        p.error("--device MODEL applies to loop-ext4 and loop-xfs only (--filesystems %s)"
                % ",".join(a.filesystems))
    bad = [c for c in a.configs if c not in CONFIG_BY_NAME]
    if bad or not a.configs:
        p.error("unknown configuration(s) %s; known: %s" % (
            ",".join(bad), ",".join(CONFIG_BY_NAME)))
    if a.repeats < 1 or a.disk_repeats < 1:
        p.error("--repeats and --disk-repeats take at least 1")
    a.tx_fixed = {}
    # no --transactions: every configuration calibrated, nothing to parse
    for part in (a.transactions or "").split(",") if a.transactions else []:
        k, _, v = part.rpartition("=")
        if k and k.strip() not in CONFIG_BY_NAME:
            p.error("--transactions: unknown configuration %s" % k)
        try:
            n = TRANSACTIONS(v)
        except argparse.ArgumentTypeError as e:
            p.error("--transactions: %s" % e)
        for name in [k.strip()] if k else CONFIG_BY_NAME:
            a.tx_fixed[name] = n
    if not a.image_mib:
        big = max(2 * CONFIG_BY_NAME[c][2]["number"] * CONFIG_BY_NAME[c][2]["size"][1]
                  for c in a.configs)
        a.image_mib = min(8192, (big >> 20) + 1024)
    if a.image_mib > 8192:
        p.error("--image-mib at most 8192")
    a.engine = os.path.abspath(a.engine)
    a.fio = os.path.abspath(a.fio)
    return a


def write_out(a, rep, results, error, t_start, mismatches):
    rep.add()
    rep.add("Total time of the run: %.0f s (of which %.0f s waiting for other work on the "
            "machine to stop); load average at the end: %s." % (
                time.monotonic() - t_start, wait_quiet.total,
                " ".join("%.2f" % x for x in os.getloadavg())))
    if mismatches:
        rep.add()
        rep.add("**COUNTERS DIFFERED:**")
        rep.add()
        for m in mismatches:
            rep.add("* `%s`" % m)
    harness.save_report(a, rep, results, error)


def machine_rows(a, fio_version, snap):
    """The machine table: what the snapshots are (md5, build time, the
    commit and whether engines/ was modified) and which PostMark ran."""
    mi = harness.snapshot_machine_rows(a, fio_version, snap)
    pkg = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "postmark"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    mi.append(("PostMark", "%s (Debian package postmark %s)" % (a.postmark, pkg or "?")))
    return mi


def file_systems(a, places, cfgs):
    """(name, base, description, repeats) of each --filesystems entry; a
    loop-* one has no base yet: its file system is made before each run."""
    fss = []
    for fsname in a.filesystems:
        if fsname == "tmpfs":
            need = max(2 * c[2]["number"] * c[2]["size"][1] for c in cfgs) + (512 << 20)
            need = min(need, int(mem_total() * 0.6))
            base = places.mount_tmpfs(need)
            desc = "tmpfs mounted at %s by this script (%s)" % (base, fs_of(base))
            repeats = a.repeats
        elif fsname == "disk":
            base = places.make_disk(a.disk_dir)
            desc = "private directory %s (%s)" % (base, fs_of(base))
            repeats = a.disk_repeats
        else:
            fss.append((fsname, None, "a fresh %s on a loop device before every run "
                        "(below)" % fsname[len("loop-"):], a.disk_repeats))  # made in turn
            continue
        fss.append((fsname, base, desc, repeats))
    return fss


def fs_report(rep, a, fsname, desc, fs_res):
    """The report of one file system: results, calibration, caps, short
    PostMark runs, secondary measurements, counters and every run."""
    rep.add("#### %s" % fsname)
    rep.add()
    rep.add("Where: %s." % desc)
    rep.add()
    results_table(rep, fs_res)
    cal = [r for r in fs_res if r.get("calibrated")]
    if cal:
        rep.add("Calibration (PostMark probes: transactions -> printed seconds): " +
                "; ".join("%s: %s -> %d tx" % (
                    r["config"], ", ".join("%d->%d s%s" % (
                        p["transactions"], p["tx_s"],
                        " (first measured run, discarded)"
                        if p.get("recalibration") else "") for p in r["probes"]),
                    r["transactions"])
                          for r in cal) + ".")
        rep.add()
    for r in fs_res:
        if r.get("cap"):
            rep.add("%s: with seed %d PostMark runs out of files at transaction %s "
                    "(pm-sim; its file count is a random walk from `number` that "
                    "reaches 0, and PostMark then prints no report), so the count is "
                    "capped at %s." % (r["config"], SEED,
                                       "{:,}".format(r["cap"]["out_of_files_at"]),
                                       "{:,}".format(r["cap"]["cap"])))
            rep.add()
    short = [(r["config"], x["tx_s"]) for r in fs_res for x in r["runs"]
             if x["prog"] == "postmark" and x["tx_s"] < 60]
    if short and not a.quick:
        rep.add("**PostMark transaction phases under 60 s:** %s." % ", ".join(
            "%s %d s" % s for s in short))
        rep.add()
    rep.add("Secondary measurements (medians):")
    rep.add()
    detail_table(rep, fs_res)
    cpu_table(rep, fs_res)
    rep.add("Counters (every run of each configuration; PostMark's report as printed):")
    rep.add()
    counters_table(rep, fs_res)
    rep.add("<details><summary>Every run</summary>")
    rep.add()
    runs_table(rep, fs_res)
    rep.add("</details>")
    rep.add()


def main(argv):
    a = parse_args(argv)
    if os.geteuid() != 0:
        sys.stderr.write("fio-pack bench postmark: must run as root (it mounts a tmpfs)\n")
        return 2
    for path in (a.fio, a.engine, a.postmark, a.pm_sim):
        if not os.path.exists(path):
            sys.stderr.write("fio-pack bench postmark: %s not found (make; apt-get install postmark)\n"
                             % path)
            return 2
    if a.device:
        try:
            ondevice.check(a.device, a.image_mib)
        except Error as e:
            return ondevice.refuse("postmark", e)
    t_start = time.monotonic()
    # PostMark must read nothing from a terminal: every child gets /dev/null
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)

    harness.unwind_on_signals()

    work = tempfile.mkdtemp(prefix="bpm-work.", dir="/tmp")
    snap, fio_version = harness.snapshot_build(a, work, ("pm_sim",))
    rep = Report()
    cmdline = "sudo scripts/fio-pack bench postmark" + (
        " " + " ".join(argv) if argv else "")
    results = {"args": {k: v for k, v in vars(a).items()}, "command": cmdline, "fs": {}}
    rep.add("### Run of %s (%s)" % (time.strftime("%Y-%m-%d %H:%M %Z"),
                                    "quick mode" if a.quick else "full mode"))
    rep.add()
    rep.add("Command: `%s`" % cmdline)
    rep.add()
    mi = machine_rows(a, fio_version, snap)
    rep.table(["machine", ""], mi)
    results["machine"] = mi

    places = Places()
    error = None
    mismatches = []
    try:
        remake = {}
        cfgs = [CONFIG_BY_NAME[n] for n in a.configs]
        fss = file_systems(a, places, cfgs)
        rep.add("File systems: " + "; ".join("**%s**: %s, %d repeat(s)" % (f, d, r)
                                            for f, _, d, r in fss) + ".")
        rep.add("`sync` (untimed) before every run; the page cache is not dropped.")
        rep.add()
        rn = Runner(a, work, remake)
        for fsname, base, desc, repeats in fss:
            if fsname.startswith("loop-"):
                # one device, one file system on it at a time
                base, remake_fn, desc = places.make_loop(a, fsname[len("loop-"):])
                remake.clear()
                remake[base] = remake_fn
            fs_res = []
            results["fs"][fsname] = {"where": desc, "configs": fs_res}
            for name, title, cfg in cfgs:
                log("%s: %s (%s), %d repeat(s)" % (fsname, name, title, repeats))
                r = measure(rn, a, name, cfg, base, fsname, repeats, a.tx_fixed.get(name))
                r["title"] = title
                fs_res.append(r)
                mismatches += r["mismatches"]
            fs_report(rep, a, fsname, desc, fs_res)
    except BaseException as e:
        error = "%s: %s" % (type(e).__name__, e)
        log("error: " + error)
    finally:
        places.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    write_out(a, rep, results, error, t_start, mismatches)
    return 1 if (error or mismatches) else 0

