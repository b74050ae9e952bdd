"""Benchmark the postmark fio engine against the real PostMark.

Run as root (it mounts a tmpfs), from anywhere:

    sudo scripts/fio-pack bench postmark --output /tmp/bpm.md

See --help for the full description (it reads like a man page).
Only the Python standard library is used; the generic helpers (process
runner, Markdown tables, machine description) are fio-pack bench smallfile's, the
loop device of the loop-ext4/loop-xfs file systems is fio-pack bench cold's.
"""

import argparse
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from fiopack import REPO
from fiopack.bench import harness, ondevice
from fiopack.options import number
from fiopack.bench.harness import Report, fs_of, log, run
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

SEED = 42
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
MAX_LOCATION = 60  # PostMark: file names in an 81-byte buffer


class CounterMismatch(Exception):
    pass


# ---------------------------------------------------------------- reports

COUNTER_RES = [
    ("created", r"^\t(\d+) created \("),
    ("created_alone", r"^\t\tCreation alone: (\d+) files"),
    ("read", r"^\t(\d+) read \("),
    ("appended", r"^\t(\d+) appended \("),
    ("deleted", r"^\t(\d+) deleted \("),
    ("deleted_alone", r"^\t\tDeletion alone: (\d+) files"),
    ("data_read", r"^\t([0-9.]+ (?:megabytes|kilobytes|bytes)) read \("),
    ("data_written", r"^\t([0-9.]+ (?:megabytes|kilobytes|bytes)) written \("),
]
MIXED_RE = r"^\t\tMixed with transactions: (\d+) files"
TIME_RE = r"^\t(\d+) seconds total\n\t(\d+) seconds of transactions \((-?\d+) per second\)"


def parse_report(text, who):
    """PostMark's verbose report -> counters (strings as printed) and times."""
    out = {}
    for key, rx in COUNTER_RES:
        m = re.search(rx, text, re.M)
        if not m:
            raise RuntimeError("%s: no '%s' line in the report:\n%s" % (who, key, text[-3000:]))
        out[key] = m.group(1)
    mixed = re.findall(MIXED_RE, text, re.M)
    if len(mixed) != 2:
        raise RuntimeError("%s: expected 2 'Mixed with transactions' lines:\n%s" % (who, text))
    out["created_mixed"], out["deleted_mixed"] = mixed
    m = re.search(TIME_RE, text, re.M)
    if not m:
        raise RuntimeError("%s: no Time: section in the report:\n%s" % (who, text[-3000:]))
    times = {"total_s": int(m.group(1)), "tx_s": int(m.group(2)),
             "tx_rate_printed": int(m.group(3))}
    return out, times


COUNTER_KEYS = ["created", "created_alone", "created_mixed", "read", "appended",
                "deleted", "deleted_alone", "deleted_mixed", "data_read", "data_written"]


# ---------------------------------------------------------------- runners

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_busy_s():
    """Busy CPU seconds of the whole machine so far (all but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / CLK_TCK


def rusage_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime, r.ru_stime


def pmrc(c, transactions, location):
    return "\n".join([
        "set location %s" % location,
        "set number %d" % c["number"],
        "set transactions %d" % transactions,
        "set size %d %d" % c["size"],
        "set read %d" % c["read"],
        "set write %d" % c["write"],
        "set buffering %s" % ("true" if c["buffering"] else "false"),
        "set seed %d" % SEED,
        "set bias read 5",
        "set bias create 5",
        "set report verbose",
        "run", "quit", ""])


def other_load(seconds):
    """CPUs kept busy by everything on the machine during @seconds (this
    script sleeps meanwhile)."""
    b0, t0 = cpu_busy_s(), time.monotonic()
    time.sleep(seconds)
    return (cpu_busy_s() - b0) / (time.monotonic() - t0)


def wait_quiet(a):
    """`sync`, then wait (up to --quiet-wait s) until other work on the
    machine keeps less than --quiet-cpus CPUs busy. Returns seconds waited."""
    subprocess.run(["sync"], check=True)
    t0 = time.monotonic()
    said = False
    while True:
        load = other_load(1.0)
        waited = time.monotonic() - t0
        if load < a.quiet_cpus or waited >= a.quiet_wait:
            if said:
                log("  ... machine %s after %.0f s (%.2f CPUs busy)" % (
                    "quiet" if load < a.quiet_cpus else "still busy, going on", waited, load))
            wait_quiet.total += waited
            return waited
        if not said:
            log("  other work keeps %.2f CPUs busy: waiting (up to %d s) before the next run"
                % (load, a.quiet_wait))
            said = True


wait_quiet.total = 0.0


_sim_cache = {}


def out_of_files_cap(a, workdir, cfg, n):
    """PostMark's file count is a random walk from `number` (bounded by the
    2 x number table); when it reaches 0 PostMark prints "out of files!" and
    no report. With the fixed seed that happens at a fixed transaction, which
    pm-sim finds without a file system. Returns (n or the largest safe count
    below it, 3 significant digits, the transaction that ran out or None)."""
    key = (json.dumps(cfg, sort_keys=True), n)
    if key in _sim_cache:
        return _sim_cache[key]
    path = os.path.join(workdir, "sim.cfg")
    with open(path, "w") as f:
        f.write(pmrc(cfg, n, "/nonexistent"))
    out = run([a.pm_sim, path])[0]
    if "out of files" not in out:
        _sim_cache[key] = (n, None)
        return n, None
    p = subprocess.Popen([a.pm_sim, "--ops", path], stdout=subprocess.PIPE, text=True)
    last = 0
    for line in p.stdout:
        if line.startswith("tx-end "):
            last = int(line.split()[1])
        elif line.startswith("out-of-files"):
            break
    p.stdout.close()
    p.kill()
    p.wait()
    if last < 100:
        raise RuntimeError("pm-sim: this configuration runs out of files after %d "
                           "transactions" % last)
    e = int(math.floor(math.log10(last))) - 2
    cap = int(last // 10 ** e * 10 ** e)
    with open(path, "w") as f:
        f.write(pmrc(cfg, cap, "/nonexistent"))
    if "out of files" in run([a.pm_sim, path])[0]:
        raise RuntimeError("pm-sim: %d transactions still run out of files" % cap)
    _sim_cache[key] = (cap, last + 1)
    return cap, last + 1


class Runner:
    def __init__(self, a, workdir, remake=None):
        self.a = a
        self.workdir = workdir   # configs, reports, opstats (not on the fs under test)
        self.seq = 0
        self.remake = remake or {}   # base -> makes a fresh file system there

    def _fresh_dir(self, base):
        self.seq += 1
        if base in self.remake:
            self.remake[base]()
        d = os.path.join(base, "r%03d" % self.seq)
        os.mkdir(d)
        if len(d) > MAX_LOCATION:
            raise RuntimeError("location %s is too long for PostMark (%d > %d characters)"
                               % (d, len(d), MAX_LOCATION))
        return d

    @staticmethod
    def _done_with(d, who):
        left = os.listdir(d)
        if left:
            raise RuntimeError("%s left %d entries in %s (e.g. %s)" % (who, len(left), d, left[:5]))
        os.rmdir(d)

    def postmark(self, cfg, transactions, base):
        d = self._fresh_dir(base)
        text = pmrc(cfg, transactions, d)
        cfgfile = os.path.join(self.workdir, "pm-%03d.cfg" % self.seq)
        with open(cfgfile, "w") as f:
            f.write(text)
        wait_quiet(self.a)
        u0, s0 = rusage_children()
        b0 = cpu_busy_s()
        out, err, wall = run([self.a.postmark, cfgfile], cwd=self.workdir)
        b1 = cpu_busy_s()
        u1, s1 = rusage_children()
        self._done_with(d, "postmark")
        counters, times = parse_report(out, "postmark")
        tx_s = times["tx_s"]
        return {"prog": "postmark", "transactions": transactions, "counters": counters,
                "tx_s": tx_s, "total_s": times["total_s"],
                "tx_rate": transactions / tx_s, "tx_rate_printed": times["tx_rate_printed"],
                "wall": wall, "utime": u1 - u0, "stime": s1 - s0, "config_text": text,
                "other_cpus": max(0.0, (b1 - b0 - (u1 - u0) - (s1 - s0)) / wall),
                "report": out[out.find("Time:"):]}

    def null_per_tx(self, cfg, e):
        """fio's own CPU us a transaction: its null engine doing the engine
        run @e's I/Os (reads as reads; writes, deletes and syncs as writes),
        per I/O, times the run's I/Os per transaction."""
        ios = e["fio_ios"]
        writes = ios["write"] + ios["trim"] + ios["sync"]
        us = harness.fio_null_us(self.a.fio, ios["read"], writes, cfg["write"],
                                 cfg["number"] * cfg["size"][1])
        return us * (ios["read"] + writes) / e["transactions"]

    def engine(self, cfg, transactions, base):
        d = self._fresh_dir(base)
        c = cfg
        rep = os.path.join(self.workdir, "eng-%03d.report" % self.seq)
        ops = os.path.join(self.workdir, "eng-%03d.opstats" % self.seq)
        cmd = [self.a.fio, "--output-format=json", "--name=pm",
               "--ioengine=external:%s" % self.a.engine,
               "--pm_location=%s" % d,
               "--pm_number=%d" % c["number"],
               "--pm_transactions=%d" % transactions,
               "--pm_size_low=%d" % c["size"][0], "--pm_size_high=%d" % c["size"][1],
               "--pm_read_block=%d" % c["read"], "--pm_write_block=%d" % c["write"],
               "--pm_buffering=%d" % (1 if c["buffering"] else 0),
               "--pm_seed=%d" % SEED, "--pm_bias_read=5", "--pm_bias_create=5",
               "--pm_report=verbose", "--pm_whole_seconds=1",
               "--pm_report_file=%s" % rep, "--pm_opstats_file=%s" % ops]
        wait_quiet(self.a)
        u0, s0 = rusage_children()
        b0 = cpu_busy_s()
        out, err, wall = run(cmd, cwd=self.workdir)
        b1 = cpu_busy_s()
        u1, s1 = rusage_children()
        self._done_with(d, "engine")
        job = json.loads(out[out.index("{"):])["jobs"][0]
        with open(rep) as f:
            report = f.read()
        with open(ops) as f:
            lines = [json.loads(x) for x in f.read().splitlines() if x.strip()]
        if len(lines) != 1:
            raise RuntimeError("engine: %d opstats lines in %s" % (len(lines), ops))
        st = lines[0]
        pm = st["postmark"]
        counters, times = parse_report(report, "engine")
        if not st.get("finished") or pm["transactions"] != transactions:
            raise RuntimeError("engine: run not finished or %s transactions instead of %d"
                               % (pm["transactions"], transactions))
        # the engine's own counters must be its report's
        for k in ("created", "created_alone", "read", "appended", "deleted", "deleted_alone"):
            if str(pm[k]) != counters[k]:
                raise CounterMismatch("engine: opstats %s=%s but its report says %s"
                                      % (k, pm[k], counters[k]))
        ph = pm["phase_ns"]
        txo = st["ops"].get("transaction", {})
        in_tx_ns = txo.get("lat_mean_ns", 0) * txo.get("ops", 0)
        return {"prog": "engine", "transactions": transactions, "counters": counters,
                "tx_ns": ph["transactions"], "create_ns": ph["create"], "delete_ns": ph["delete"],
                "tx_rate": transactions / (ph["transactions"] / 1e9),
                "tx_s_whole": times["tx_s"], "total_s_whole": times["total_s"],
                "tx_rate_whole": transactions / times["tx_s"],
                "in_tx_share": in_tx_ns / ph["transactions"] if ph["transactions"] else None,
                "tx_lat_mean_ns": txo.get("lat_mean_ns"),
                "tx_lat_p99_ns": txo.get("lat_p99_ns"),
                "fio_job_runtime_ms": job.get("job_runtime"),
                "fio_usr_cpu": job.get("usr_cpu"), "fio_sys_cpu": job.get("sys_cpu"),
                "fio_sync_ios": job.get("sync", {}).get("total_ios"),
                "fio_ios": {d: job.get(d, {}).get("total_ios", 0)
                            for d in ("read", "write", "trim", "sync")},
                "job_cpu": harness.job_cpu_s(job),
                "wall": wall, "utime": u1 - u0, "stime": s1 - s0,
                "other_cpus": max(0.0, (b1 - b0 - (u1 - u0) - (s1 - s0)) / wall),
                "opstats": st, "report": report, "cmd": cmd}


def compare_counters(p, e):
    diffs = [(k, p["counters"][k], e["counters"][k]) for k in COUNTER_KEYS
             if p["counters"][k] != e["counters"][k]]
    return diffs


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


# ---------------------------------------------------------------- calibration

def round_sig(x, digits=2):
    if x <= 0:
        return 0
    e = int(math.floor(math.log10(x))) - (digits - 1)
    return int(round(x / 10 ** e) * 10 ** e)


def capped(rn, a, cfg, t, label, res):
    cap, oof = out_of_files_cap(a, rn.workdir, cfg, t)
    if oof:
        log("%s: %d transactions would run PostMark out of files (at transaction %d): "
            "capped at %d" % (label, t, oof, cap))
        res["cap"] = {"out_of_files_at": oof, "cap": cap}
    return cap


def calibrate(rn, a, cfg, base, label, res):
    """PostMark probes until its phase shows >= a.probe_seconds; returns the
    transaction count for a.target_seconds and the probe records."""
    t = a.probe_start
    probes = []
    while True:
        t = capped(rn, a, cfg, t, label, res)
        r = rn.postmark(cfg, t, base)
        probes.append({"transactions": t, "tx_s": r["tx_s"], "wall": r["wall"]})
        log("%s: probe %d transactions: PostMark %d s of transactions (wall %.1f s)"
            % (label, t, r["tx_s"], r["wall"]))
        if r["tx_s"] >= a.probe_seconds or len(probes) >= 6 or res.get("cap"):
            break
        factor = 10 if r["tx_s"] <= 1 else min(10, math.ceil(a.probe_seconds * 1.5 / r["tx_s"]))
        t *= max(3, factor)
    rate = t / r["tx_s"]
    chosen = capped(rn, a, cfg, max(1000, round_sig(rate * a.target_seconds, 2)), label, res)
    log("%s: PostMark ~%.0f tx/s -> %d transactions (~%d s)"
        % (label, rate, chosen, a.target_seconds))
    return chosen, probes, rate


# ---------------------------------------------------------------- measuring

def measure(rn, a, name, cfg, base, fsname, repeats, tx_fixed):
    label = "%s/%s" % (fsname, name)
    res = {"config": name, "fs": fsname, "settings": cfg, "runs": [], "pairs": [],
           "mismatches": []}
    if tx_fixed:
        res["transactions"] = capped(rn, a, cfg, tx_fixed, label, res)
        res["calibrated"] = False
    else:
        t, probes, rate = calibrate(rn, a, cfg, base, label, res)
        res.update(transactions=t, calibrated=True, probes=probes, probe_rate=rate)
    t = res["transactions"]
    r = 0
    while r < repeats:
        order = ["postmark", "engine"] if r % 2 == 0 else ["engine", "postmark"]
        pair = {}
        for prog in order:
            x = getattr(rn, prog)(cfg, t, base)
            x["repeat"] = r
            if (r == 0 and prog == "postmark" and res["calibrated"] and
                    x["tx_s"] < a.min_seconds and not res.get("recalibrated") and
                    not res.get("cap")):
                # the probe's estimate was off: scale from this run, start again
                t = round_sig(t / x["tx_s"] * max(a.target_seconds, a.min_seconds * 1.15), 2)
                t = capped(rn, a, cfg, t, label, res)
                log("%s: PostMark's phase was %d s < %d s: recalibrated to %d transactions, "
                    "starting the repeats again" % (label, x["tx_s"], a.min_seconds, t))
                res["probes"].append({"transactions": x["transactions"], "tx_s": x["tx_s"],
                                      "wall": x["wall"], "recalibration": True})
                res.update(transactions=t, recalibrated=True)
                break
            res["runs"].append(x)
            pair[prog] = x
            if prog == "postmark":
                log("%s #%d postmark: %d s of transactions, %.0f tx/s (wall %.1f s, usr %.1f "
                    "sys %.1f, other CPUs %.2f)" % (label, r + 1, x["tx_s"], x["tx_rate"],
                                                    x["wall"], x["utime"], x["stime"],
                                                    x["other_cpus"]))
            else:
                log("%s #%d engine:   %.2f s of transactions, %.0f tx/s (wall %.1f s, usr %.1f "
                    "sys %.1f, other CPUs %.2f)" % (label, r + 1, x["tx_ns"] / 1e9, x["tx_rate"],
                                                    x["wall"], x["utime"], x["stime"],
                                                    x["other_cpus"]))
        if len(pair) < 2:
            continue
        diffs = compare_counters(pair["postmark"], pair["engine"])
        if diffs:
            msg = "%s repeat %d: COUNTER MISMATCH postmark vs engine: %s" % (
                label, r + 1, "; ".join("%s %s vs %s" % d for d in diffs))
            log(msg)
            sys.stderr.write("\n*** %s ***\n\n" % msg)
            res["mismatches"].append(msg)
        ratio = pair["engine"]["tx_rate"] / pair["postmark"]["tx_rate"]
        ratio_whole = pair["engine"]["tx_rate_whole"] / pair["postmark"]["tx_rate"]
        disturbed = max(pair["postmark"]["other_cpus"], pair["engine"]["other_cpus"]) \
            > a.quiet_cpus
        res["pairs"].append({"ratio": ratio, "ratio_whole": ratio_whole,
                             "counters_identical": not diffs, "disturbed": disturbed,
                             "null_us": rn.null_per_tx(cfg, pair["engine"])})
        log("%s #%d ratio engine/PostMark %.3f%s%s" % (
            label, r + 1, ratio, "" if not diffs else "  (COUNTERS DIFFER)",
            "  (disturbed: other work kept more than %.2f CPUs busy)" % a.quiet_cpus
            if disturbed else ""))
        r += 1
    # the counters of every run, not only within pairs
    first = res["runs"][0]["counters"]
    for x in res["runs"][1:]:
        d = [k for k in COUNTER_KEYS if x["counters"][k] != first[k]]
        if d:
            msg = "%s: counters differ between runs (%s)" % (label, ", ".join(d))
            if msg not in res["mismatches"]:
                res["mismatches"].append(msg)
                log(msg)
    res["counters"] = first
    return res


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

