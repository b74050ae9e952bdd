"""Benchmark the dbreplay fio engine against fio's own read_iolog replay.

Run as root (it mounts a tmpfs), from anywhere:

    sudo scripts/fio-pack bench dbreplay --output /tmp/bdr.md

See --help for the full description (it reads like a man page).
Only the Python standard library is used; the generic helpers (process
runner, Markdown tables, machine description) are fio-pack bench smallfile's.
"""

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import fiopack
from fiopack import REPO
from fiopack.bench import harness, ondevice, paced
from fiopack.options import number
from fiopack.bench.harness import Report, fs_of, log, run, run_peak_rss, stats
from fiopack.device.state import Error

DESCRIPTION = """\
NAME
    fio-pack bench dbreplay - records per second of the dbreplay fio engine against
    fio's read_iolog replay of the same trace; the trace parser's rate on its
    own; peak memory of the parser and the engine at 1M and 10M records

SYNOPSIS
    sudo scripts/fio-pack bench dbreplay [--records N] [--repeats R]
         [--big] [--target-dir DIR] [--output FILE] [--raw FILE] [more below]

DESCRIPTION
    The trace. bench/dbtrace-bench.c (built by make into
    build/bench/dbtrace-bench, with engines/lib/dbtrace*.c's objects)
    writes a synthetic database-like trace through the C writer
    (dbtrace_write_header/record/end, which runs every line through the
    parser's own checks): page size 8 KiB, time unit us; file 0
    base/16384/16397, a data file of 64 MiB, and file 1
    pg_wal/000000010000000000000001, a log file of 16 MiB, both existing at
    their full size; 4 backend streams and a walwriter stream. Each step is,
    with probability 20 %, an 8 KiB log write by the walwriter at the log's
    next offset (sequential, wrapping at 16 MiB like a circular redo log),
    followed by an fdatasync of the log after every 8th log write; otherwise
    an 8 KiB read (70 %) or write (30 %) of a uniformly random page of the
    data file by a random backend. Times grow by 1..100 us a step (asap
    replay ignores them). Exactly --records records (seed 1). The generator's
    own counts are checked against scripts/fio-pack trace check (the independent
    Python reader) and against what both replays did.

    A. Replay rate. The trace is replayed as fast as possible on the same
    target, interleaved, --repeats times each, in pairs:
      sync      dbreplay: --dbr_io_api=sync --iodepth=1 (one record at a time,
                trace order), against fio --read_iolog=EXPORT
                --ioengine=psync --iodepth=1 --replay_no_stall=1
      sync-rt0  the same dbreplay run with --dbr_reader_thread=0: the
                replaying thread parses the trace as it goes, as before the
                reader thread (its own read_iolog psync run)
      io_uring  dbreplay: --dbr_io_api=io_uring --iodepth=16 (streams
                concurrently, each in its order, dbr_stream_depth=1: one
                record of a stream in flight, as a database thread doing
                synchronous calls), against fio --read_iolog=EXPORT
                --ioengine=io_uring --iodepth=16 --replay_no_stall=1
      io_uring-qd1  dbreplay --dbr_io_api=io_uring --iodepth=1 against
                read_iolog --ioengine=io_uring --iodepth=1: both one record
                at a time in trace order, the same semantics, through
                io_uring (slow on tmpfs: its buffered writes go through an
                io-wq worker thread, a round trip a record)
      io_uring-sd16  the same dbreplay run with --dbr_stream_depth=16 (16
                records of a stream in flight; fdatasync still a barrier of
                its stream), against its own read_iolog io_uring run: nearer
                to what read_iolog does, which ignores streams
    dbreplay runs with --dbr_timing=asap --dbr_fill=data --dbr_keep=1 on its
    own directory of the target (an untimed warm-up run lays the files out
    first, so every measured run finds them at their sizes, as fio's do);
    EXPORT is `scripts/fio-pack trace export-iolog TRACE -o EXPORT --prefix DIR`
    (iolog v3; fsync -> sync, fdatasync -> datasync; nothing is dropped from
    this trace), DIR dbreplay's own directory: both sides replay the same two
    files, the ones dbreplay's warm-up run laid out (fio does not create or
    size the files of a replay; files written at another time replay at
    another speed on tmpfs, up to 60 % apart, docs/benchmarks-dbreplay.md).
    The order
    alternates, A B  B A  A B ..., pair kind by pair kind; every pair is the
    two runs next to each other. One untimed warm-up run of each side comes
    first.

    Records/s = records replayed / job_runtime, the same way for both sides:
      records replayed  the trace's record count, once the run's counts are
                checked to be the trace's (below). fio's JSON gives the same
                number as read.total_ios + write.total_ios + trim.total_ios +
                sync.lat_ns.N: both engines complete every record as one fio
                I/O (fsync and fdatasync in fio's sync directions).
                sync.lat_ns.N (sync-direction latency samples) is the count
                of syncs: fio 3.33 reports only fsyncs in sync.total_ios (its
                fdatasync count is written one past the end of total_io_u[]
                and shows up as read.short_ios, on both sides alike).
      job_runtime  milliseconds from fio's job epoch (after the engine's init
                and file setup) to the end of the job's I/O loop, from fio's
                JSON. `elapsed` is whole seconds (too coarse for runs of about
                a second); the per-direction `runtime` values are the same
                span rounded per direction. It excludes fio's reading of the
                iolog (fio loads the whole iolog into memory before the
                epoch) and dbreplay's check pass and layout (at init), but
                includes dbreplay's second, streaming read of the trace
                during the replay. Each run's wall time (the whole fio
                process) is reported too.
    Counts: after every run the reads, writes, syncs, bytes read and bytes
    written of both sides (fio's JSON) must equal the trace's, and dbreplay's
    dbr_report_file must say every record was replayed and none failed; a
    difference is printed on stderr as COUNT MISMATCH, marked in the report,
    and makes the exit status 1. One exception, reported as a note: fio
    3.33's read_iolog with an async engine (io_uring here) never reaps the
    I/Os still in flight when the log ends (read_iolog_get() sets td->done,
    and td_io_getevents() returns 0 once td->done is set), so up to
    iodepth - 1 records are issued (in total_ios) but have no bytes and no
    latency sample, and the job's clock stops before they complete. There,
    the issued reads and writes must match and at most iodepth - 1
    completions may be missing; the rate still counts every record (which
    favours fio by at most 15 records of the trace).
    The ratio is dbreplay records/s / read_iolog records/s of each pair; the
    report gives min / median / max of the rates and of the pairwise ratios.
    Goal: >= 1.0 (printed, not asserted).
    After each pair, fio's null engine runs a job of the same shape
    (--ioengine=null --rw=randrw, 8 KiB, the trace's share of reads, syncs
    counted as I/Os, the pair's iodepth, at least 5M I/Os so that its CPU
    figures are more than rounding): fio's own CPU an I/O. The CPU tables
    give microseconds per record of each side's job (the replaying thread,
    fio's usr_cpu + sys_cpu), of each whole fio process (getrusage), of the
    null job, and the differences: what each replay costs beyond fio.

    B. Parse rate. build/bench/dbtrace-bench parse TRACE: dbtrace_open and
    dbtrace_next over the whole trace, nothing else; CLOCK_MONOTONIC around
    it, VmHWM (the peak RSS of the driver's own image: ru_maxrss is carried
    over execve and would include this Python script) at the end. On the trace of part A and on 1M-record traces
    (10M with --big), plain and gzip (gzip -6), --repeats times each, the
    traces on the tmpfs (reads come from memory).

    C. Peak memory. Max RSS (/usr/bin/time -f %M, fio with --thread so that
    the job is in the measured process) of: fio with the null engine (fio's
    own baseline); dbreplay replaying (asap, sync, dbr_fill=data, tmpfs) a
    1,000-record, a 1M-record (and with --big a 10M-record) trace of the same
    kind, keeping its files (dbr_keep=1); fio read_iolog (psync,
    replay_no_stall) on the 1,000 and 1M exports (10M with --big: the export
    alone takes about 2 minutes), replaying the files dbreplay's run left;
    and the parser driver (its VmHWM) on the same traces. Once each.

    Before every run of A: `sync` (untimed), so that no run pays for the
    previous run's writeback on a disk target.

    Other work on the machine: before every run of A the script waits, up
    to --quiet-wait seconds, until the rest of the machine keeps fewer than
    --quiet-cpus CPUs busy (1 s samples of /proc/stat), and records "other
    CPUs busy" during the run (the machine's busy time minus the run's own
    CPU time, per second). A pair with a run above --quiet-cpus is marked
    disturbed; the ratio is given over all pairs and the undisturbed ones.

    The target: a fresh tmpfs mounted by this script under a private
    /tmp/bdr.XXXXXX and unmounted at the end (also on errors, Ctrl-C,
    SIGTERM, SIGHUP). --target-dir DIR adds the same part A on a private
    directory below DIR (a real disk; fio's default invalidate=1 applies to
    both sides: dbreplay drops its files' pages after the layout, fio at
    open), removed at the end.

    What is measured: copies of --fio and --engine made at the start in a
    private /tmp/bdr-work.XXXXXX, so that a rebuild of build/ during the run
    cannot mix two engines in one report; the report gives their md5 sums,
    build times and the git state of engines/.

    The report (Markdown) goes to stdout or --output FILE; progress goes to
    stderr; --raw FILE gets every measurement as JSON.
"""

EPILOG = """\
FILES
    build/fio                      the fio the engine is built for (--fio)
    build/dbreplay.so              the engine (--engine)
    build/bench/dbtrace-bench      built here by make from bench/dbtrace-bench.c
    scripts/fio-pack trace             export-iolog and check
    /tmp/bdr-work.XXXXXX           copies of fio and the engine (removed at exit)
    /tmp/bdr.XXXXXX                private mount point (removed at exit)

EXIT STATUS
    0 report written, counts identical everywhere (the known read_iolog
    tail, above, is a note, not a difference); 1 a run failed or the
    counts differed (the report is still written, with the error); 2 usage
    error, not root, or a binary missing.

EXAMPLES
    sudo scripts/fio-pack bench dbreplay
    sudo scripts/fio-pack bench dbreplay --big --output /tmp/bdr.md --raw /tmp/bdr.json
    sudo scripts/fio-pack bench dbreplay --records 1000000 --repeats 5 --sections A
    sudo scripts/fio-pack bench dbreplay --target-dir /var/tmp --no-tmpfs-a --sections A
"""

GEN_ARGS = ["--seed", "1", "--streams", "4", "--io", "8192", "--data-mib", "64",
            "--log-mib", "16", "--log-share", "20", "--read-pct", "70", "--sync-every", "8"]
FILES = [("base/16384/16397", 64 << 20), ("pg_wal/000000010000000000000001", 16 << 20)]
DEPTH = 16
PAIRS = [
    ("sync", "dbreplay sync, iodepth 1 vs read_iolog psync, iodepth 1",
     ["--dbr_io_api=sync", "--iodepth=1"], ["--ioengine=psync", "--iodepth=1"]),
    ("sync-rt0", "dbreplay sync, iodepth 1, dbr_reader_thread=0 vs read_iolog psync, iodepth 1",
     ["--dbr_io_api=sync", "--iodepth=1", "--dbr_reader_thread=0"],
     ["--ioengine=psync", "--iodepth=1"]),
    ("io_uring", "dbreplay io_uring, iodepth %d vs read_iolog io_uring, iodepth %d" % (DEPTH, DEPTH),
     ["--dbr_io_api=io_uring", "--iodepth=%d" % DEPTH],
     ["--ioengine=io_uring", "--iodepth=%d" % DEPTH]),
    ("io_uring-qd1", "dbreplay io_uring, iodepth 1 vs read_iolog io_uring, iodepth 1",
     ["--dbr_io_api=io_uring", "--iodepth=1"], ["--ioengine=io_uring", "--iodepth=1"]),
    ("io_uring-sd16", "dbreplay io_uring, iodepth %d, dbr_stream_depth=16 vs read_iolog "
     "io_uring, iodepth %d" % (DEPTH, DEPTH),
     ["--dbr_io_api=io_uring", "--iodepth=%d" % DEPTH, "--dbr_stream_depth=16"],
     ["--ioengine=io_uring", "--iodepth=%d" % DEPTH]),
]
PAIR_BY_NAME = {p[0]: p for p in PAIRS}


# ---------------------------------------------------------------- machine load

def wait_quiet(a):
    """harness.wait_quiet; wait_quiet.total counts the seconds waited
    beyond the one 1 s sample every run takes."""
    wait_quiet.total += harness.wait_quiet(a) - 1.0


wait_quiet.total = 0.0


# ---------------------------------------------------------------- traces

def build_driver():
    """bench/dbtrace-bench.c, built by make with the engines' own flags and objects."""
    cmd = ["make", "-s", "--no-print-directory", "build/bench/dbtrace-bench"]
    subprocess.run(cmd, cwd=REPO, check=True)
    return os.path.join(REPO, "build", "bench", "dbtrace-bench"), " ".join(cmd)


def make_trace(a, records, path, gz=False):
    """Writes a trace of @records records to @path (and PATH.gz); returns the
    generator's counts and the seconds it took."""
    t0 = time.monotonic()
    with open(path, "wb") as f:
        p = subprocess.run([a.driver, "gen", "--records", str(records)] + GEN_ARGS,
                           stdout=f, stderr=subprocess.PIPE, text=False)
    if p.returncode:
        raise RuntimeError("dbtrace-bench gen failed: %s" % p.stderr.decode(errors="replace"))
    counts = json.loads(p.stderr.decode().strip().splitlines()[-1])
    if counts["records"] != records:
        raise RuntimeError("dbtrace-bench gen wrote %d records, not %d" % (counts["records"], records))
    if gz:
        with open(path + ".gz", "wb") as f:
            subprocess.run(["gzip", "-6", "-c", path], stdout=f, check=True)
    counts["seconds"] = time.monotonic() - t0
    return counts


def expected(counts):
    io = counts["io"]
    writes = counts["data_write"] + counts["log_write"]
    return {"read": counts["data_read"], "write": writes, "trim": 0,
            "sync": counts["log_fdatasync"], "read_bytes": counts["data_read"] * io,
            "write_bytes": writes * io}


def python_check(a, path, counts):
    out = run(fiopack.command("trace", "check", path),
              timeout=3600)[0]
    want = "%d records, 2 files, 5 streams, timeunit us, pagesize 8192, ops fdatasync=%d read=%d " \
           "write=%d" % (counts["records"], counts["log_fdatasync"], counts["data_read"],
                         counts["data_write"] + counts["log_write"])
    if want not in out:
        raise RuntimeError("scripts/fio-pack trace check disagrees with the generator:\n%s\nwanted: %s"
                           % (out, want))


def export_iolog(path, iolog, prefix):
    t0 = time.monotonic()
    run(fiopack.command("trace", "export-iolog", path,
                        "-o", iolog, "--prefix", prefix, "--quiet"), timeout=3600)
    return time.monotonic() - t0


# ---------------------------------------------------------------- runs

def fio_json(out):
    return harness.fio_json(out)["jobs"][0]


def job_counts(job):
    return {"read": job["read"]["total_ios"], "write": job["write"]["total_ios"],
            "trim": job["trim"]["total_ios"], "sync": job["sync"]["lat_ns"].get("N", 0),
            "read_bytes": job["read"]["io_bytes"], "write_bytes": job["write"]["io_bytes"]}


def unreaped_tail(c, want, depth):
    """Records an async read_iolog run issued but did not complete: 0, or
    1..depth-1 if the issued counts match and only completions are missing."""
    if depth <= 1 or (c["read"], c["write"], c["trim"]) != (want["read"], want["write"],
                                                             want["trim"]):
        return 0
    io = want["read_bytes"] // want["read"] if want["read"] else 8192
    miss = [want["read_bytes"] - c["read_bytes"], want["write_bytes"] - c["write_bytes"],
            want["sync"] - c["sync"]]
    if min(miss) < 0 or miss[0] % io or miss[1] % io:
        return 0
    n = miss[0] // io + miss[1] // io + miss[2]
    return n if 0 < n < depth else 0


class Runner:
    def __init__(self, a, work):
        self.a = a
        self.work = work
        self.seq = 0
        self.mismatches = []
        self.notes = []

    def _run(self, cmd, quiet=True, timeout=None):
        os.sync()   # untimed: no run pays for the previous run's writeback
        if quiet:
            wait_quiet(self.a)
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        b0 = harness.cpu_busy_s()
        out, err, wall = run(cmd, timeout=timeout or self.a.timeout, cwd=self.work)
        b1 = harness.cpu_busy_s()
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        return out, err, wall, cpu, max(0.0, (b1 - b0 - cpu) / wall)

    def check(self, what, got, want):
        if got != want:
            msg = "COUNT MISMATCH %s: %s, the trace has %s" % (what, got, want)
            sys.stderr.write("\n*** %s ***\n\n" % msg)
            self.mismatches.append(msg)
            return False
        return True

    def dbreplay(self, trace, target, extra, want, label, quiet=True):
        self.seq += 1
        rep = os.path.join(self.work, "dbr-%03d.json" % self.seq)
        cmd = [self.a.fio, "--output-format=json", "--name=dbreplay",
               "--ioengine=external:%s" % self.a.engine, "--dbr_trace=%s" % trace,
               "--dbr_target=%s" % target, "--dbr_timing=asap", "--dbr_fill=data",
               "--dbr_keep=1", "--dbr_report=none", "--dbr_report_file=%s" % rep] + extra
        out, err, wall, cpu, other = self._run(cmd, quiet)
        job = fio_json(out)
        with open(rep) as f:
            report = json.loads(f.read().strip().splitlines()[-1])
        os.unlink(rep)
        c = job_counts(job)
        ok = self.check("%s (dbreplay)" % label, c, want)
        n = sum(want[k] for k in ("read", "write", "trim", "sync"))
        errors = sum(v.get("errors", 0) for v in report.get("classes", {}).values())
        ok &= self.check("%s (dbreplay's report: replayed, errors)" % label,
                         (report["replayed"], errors), (n, 0))
        if job["error"]:
            raise RuntimeError("dbreplay run failed: error %d\n%s" % (job["error"], err[-2000:]))
        return self._result("dbreplay", job, c, wall, cpu, other, ok, cmd, want,
                            replay_ns=report.get("replay_duration_ns"))

    def read_iolog(self, iolog, extra, want, label, quiet=True, depth=1):
        self.seq += 1
        cmd = [self.a.fio, "--output-format=json", "--name=read_iolog",
               "--read_iolog=%s" % iolog, "--replay_no_stall=1"] + extra
        out, err, wall, cpu, other = self._run(cmd, quiet)
        job = fio_json(out)
        c = job_counts(job)
        if job["error"]:
            raise RuntimeError("read_iolog run failed: error %d\n%s" % (job["error"], err[-2000:]))
        tail = unreaped_tail(c, want, depth)
        if tail:
            # fio 3.33: read_iolog_get() sets td->done at the end of the log
            # and td_io_getevents() returns 0 once td->done is set, so the
            # last I/Os still in flight are issued (total_ios) but never reaped
            # (no bytes, no latency sample). Issued counts must still match.
            msg = ("%s (read_iolog): %d I/O(s) issued but not reaped at the end of the log "
                   "(fio 3.33 read_iolog with an async engine)" % (label, tail))
            log("note: " + msg)
            self.notes.append(msg)
            ok = self.check("%s (read_iolog, issued)" % label,
                            (c["read"], c["write"], c["trim"]),
                            (want["read"], want["write"], want["trim"]))
        else:
            ok = self.check("%s (read_iolog)" % label, c, want)
        return self._result("read_iolog", job, c, wall, cpu, other, ok, cmd, want, tail=tail)

    def null(self, want, depth):
        """fio's null engine with the replay's shape: the trace's records as
        8 KiB I/Os (syncs counted as I/Os), its share of reads, random offsets
        over its two files, @depth in flight. CPU us per I/O of the job."""
        reads, writes = want["read"], want["write"] + want["sync"]
        n = max(reads + writes + want["trim"], harness.NULL_MIN_OPS)
        cmd = harness.fio_null_cmd(self.a.fio, "randrw", 8192, sum(s for _, s in FILES), n,
                                   ["--rwmixread=%d" % round(100.0 * reads / (reads + writes)),
                                    "--norandommap=1", "--iodepth=%d" % depth])
        out, _, _, _, _ = self._run(cmd, quiet=False)
        job = fio_json(out)
        done = job["read"]["total_ios"] + job["write"]["total_ios"]
        if done != n:
            raise RuntimeError("null engine did %d I/Os, not %d" % (done, n))
        return harness.job_cpu_s(job) * 1e6 / n

    @staticmethod
    def _result(prog, job, c, wall, cpu, other, ok, cmd, want, replay_ns=None, tail=0):
        # every record of the trace, once the counts are checked (see --help)
        n = want["read"] + want["write"] + want["trim"] + want["sync"]
        ms = job["job_runtime"]
        return {"prog": prog, "records": n, "job_runtime_ms": ms, "unreaped": tail,
                "json_sum": c["read"] + c["write"] + c["trim"] + c["sync"],
                "rate": n / (ms / 1000.0) if ms else None, "wall": wall, "cpu": cpu,
                "job_cpu": (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * ms / 1000.0,
                "other_cpus": other, "counts": c, "counts_ok": ok,
                "replay_ns": replay_ns, "cmd": " ".join(cmd)}


def fio_depth(args):
    d = [int(x.split("=", 1)[1]) for x in args if x.startswith("--iodepth=")]
    return d[-1] if d else 1


def part_a(a, rn, where, trace, counts, target, iolog):
    """Interleaved pairs on one target; returns ({pair: [(dbr, fio), ...]},
    seconds of the iolog's export)."""
    want = expected(counts)
    dbr_dir = os.path.join(target, "dbr")
    os.mkdir(dbr_dir)
    log("%s: warm-up runs (dbreplay lays its files out, fio replays the same files once)"
        % where)
    rn.dbreplay(trace, dbr_dir, PAIRS[0][2], want, where + " warm-up", quiet=False)
    # read_iolog replays dbreplay's files: the same pages on both sides
    secs = export_iolog(trace, iolog, dbr_dir)
    log("%s: exported the iolog in %.1f s" % (where, secs))
    rn.read_iolog(iolog, PAIRS[0][3], want, where + " warm-up", quiet=False)
    res = {}
    for r in range(a.repeats):
        for name, title, dargs, fargs in [PAIR_BY_NAME[p] for p in a.pairs]:
            order = ("dbreplay", "read_iolog") if r % 2 == 0 else ("read_iolog", "dbreplay")
            got = {}
            for prog in order:
                label = "%s %s repeat %d" % (where, name, r + 1)
                if prog == "dbreplay":
                    got[prog] = rn.dbreplay(trace, dbr_dir, dargs, want, label)
                else:
                    got[prog] = rn.read_iolog(iolog, fargs, want, label, depth=fio_depth(fargs))
                x = got[prog]
                log("%s %-13s %-10s %9.0f records/s (%d ms, wall %.2f s, other CPUs %.2f)%s%s" % (
                    where, name, prog, x["rate"] or 0, x["job_runtime_ms"], x["wall"],
                    x["other_cpus"], "" if x["counts_ok"] else "  COUNT MISMATCH",
                    "  (%d unreaped)" % x["unreaped"] if x["unreaped"] else ""))
            got["first"] = order[0]
            got["null_us"] = rn.null(want, fio_depth(dargs))
            res.setdefault(name, []).append(got)
    return res, secs


def part_b(a, traces):
    """Parse rate: {label: [result, ...]}."""
    res = {}
    for label, path, records in traces:
        for r in range(a.repeats):
            out = run([a.driver, "parse", path], timeout=a.timeout)[0]
            x = json.loads(out.strip().splitlines()[-1])
            if x["records"] != records:
                raise RuntimeError("parser read %d records of %s, not %d" % (x["records"], path,
                                                                             records))
            res.setdefault(label, []).append(x)
            log("parse %-28s %11.0f records/s  %7.1f MB/s  peak RSS %d KiB" % (
                label, x["records_per_s"], x["bytes"] / x["seconds"] / 1e6, x["vmhwm_kib"]))
    return res


def part_c(a, rn, mp, traces, iologs):
    """Peak memory: {key: {...}}."""
    res = {}
    out, _, wall, kib = run_peak_rss([a.fio, "--output-format=json", "--thread", "--name=null",
                                      "--ioengine=null", "--size=4k", "--rw=read"],
                                     a.timeout, rn.work)
    rss = kib * 1024
    res["null"] = {"rss": rss, "wall": wall}
    log("memory: fio null engine %.1f MiB" % (rss / 1048576))
    for records, path, counts in traces:
        d = os.path.join(mp, "mem-dbr-%d" % records)
        os.mkdir(d)
        cmd = [a.fio, "--output-format=json", "--thread", "--name=dbreplay",
               "--ioengine=external:%s" % a.engine, "--dbr_trace=%s" % path,
               "--dbr_target=%s" % d, "--dbr_timing=asap", "--dbr_io_api=sync",
               "--dbr_fill=data", "--dbr_keep=1", "--dbr_report=none"]
        out, _, wall, kib = run_peak_rss(cmd, a.timeout, rn.work)
        rss = kib * 1024
        job = fio_json(out)
        rn.check("memory run, dbreplay %d records" % records, job_counts(job), expected(counts))
        res["dbreplay-%d" % records] = {"rss": rss, "wall": wall,
                                        "job_runtime_ms": job["job_runtime"]}
        log("memory: dbreplay %d records %.1f MiB (wall %.1f s)" % (records, rss / 1048576, wall))
    for records, trace, iolog, counts in iologs:
        # read_iolog replays the files dbreplay's run laid out and kept
        secs = export_iolog(trace, iolog, os.path.join(mp, "mem-dbr-%d" % records))
        log("exported the %d-record iolog in %.1f s" % (records, secs))
        cmd = [a.fio, "--output-format=json", "--thread", "--name=read_iolog",
               "--read_iolog=%s" % iolog, "--replay_no_stall=1", "--ioengine=psync"]
        out, _, wall, kib = run_peak_rss(cmd, a.timeout, rn.work)
        rss = kib * 1024
        job = fio_json(out)
        rn.check("memory run, read_iolog %d records" % records, job_counts(job),
                 expected(counts))
        res["read_iolog-%d" % records] = {"rss": rss, "wall": wall,
                                          "job_runtime_ms": job["job_runtime"]}
        log("memory: read_iolog %d records %.1f MiB (wall %.1f s)" % (records, rss / 1048576,
                                                                       wall))
    return res


# ---------------------------------------------------------------- report

def fmt_n(x):
    return "-" if x is None else "{:,.0f}".format(x)


def triplet(xs, f=fmt_n):
    s = stats(xs)
    if not s:
        return "-"
    return "%s / %s / %s" % tuple(f(v) for v in s)


def ratio_rows(res, quiet_cpus):
    rows = []
    for name, title, _, _ in PAIRS:
        pairs = res.get(name)
        if not pairs:
            continue
        d = [p["dbreplay"]["rate"] for p in pairs]
        f = [p["read_iolog"]["rate"] for p in pairs]
        ratios = [x / y for x, y in zip(d, f)]
        calm = [x / y for x, y, p in zip(d, f, pairs)
                if max(p["dbreplay"]["other_cpus"], p["read_iolog"]["other_cpus"]) <= quiet_cpus]
        walls = [p["read_iolog"]["wall"] / p["dbreplay"]["wall"] for p in pairs]
        rows.append([title, triplet(d), triplet(f),
                     triplet(ratios, f=lambda v: "%.2f" % v),
                     "%s (%d of %d pairs)" % (triplet(calm, f=lambda v: "%.2f" % v), len(calm),
                                              len(pairs)) if calm else "- (0 of %d)" % len(pairs),
                     "%.2f" % (statistics.median(d) / statistics.median(f)),
                     triplet(walls, f=lambda v: "%.2f" % v)])
    return rows


def secondary_rows(res):
    rows = []
    for name, title, _, _ in PAIRS:
        pairs = res.get(name)
        if not pairs:
            continue
        for prog in ("dbreplay", "read_iolog"):
            xs = [p[prog] for p in pairs]
            n = xs[0]["records"]
            rows.append([name, prog, "%.0f" % statistics.median(x["job_runtime_ms"] for x in xs),
                         "%.2f" % statistics.median(x["wall"] for x in xs),
                         "%.2f" % statistics.median(x["job_cpu"] for x in xs),
                         "%.2f" % (statistics.median(x["job_cpu"] for x in xs) * 1e6 / n),
                         "%.2f" % statistics.median(x["cpu"] for x in xs),
                         "%.2f" % max(x["other_cpus"] for x in xs)])
    return rows


def cpu_tables(rep, res):
    """Per pair kind: CPU us per record of each side and of fio's null engine."""
    rep.add("CPU per record, per pair kind. *Job*: fio's usr_cpu + sys_cpu of the job "
            "(getrusage of the replaying thread over job_runtime; dbreplay's reader "
            "thread, which parses the trace ahead, is not in it: part B's CPU "
            "ns/record is what it does). *Whole process*: every thread and process of "
            "the fio run (dbreplay's check pass and reader thread, read_iolog's loading "
            "of its log). *fio null engine*: a job of the same shape with "
            "--ioengine=null (8 KiB I/Os, the trace's read share, syncs as I/Os, the "
            "pair's iodepth): fio's own cost an I/O, no system call. What is left of "
            "a side once the null engine is taken away is the replay's: its system "
            "calls and its engine.")
    rep.add()
    for name, title, _, _ in PAIRS:
        pairs = res.get(name)
        if not pairs:
            continue
        rep.add("*%s*" % title)
        rep.add()

        def us(prog, key):
            return [p[prog][key] * 1e6 / p[prog]["records"] for p in pairs]
        harness.cpu_per_op_table(rep, [
            ("dbreplay, job", us("dbreplay", "job_cpu")),
            ("read_iolog, job", us("read_iolog", "job_cpu")),
            ("fio null engine, job", [p.get("null_us") for p in pairs]),
            ("dbreplay, whole process", us("dbreplay", "cpu")),
            ("read_iolog, whole process", us("read_iolog", "cpu"))], [
            ("dbreplay's own, job", [(1, "dbreplay, job"), (-1, "fio null engine, job")]),
            ("read_iolog's own, job", [(1, "read_iolog, job"), (-1, "fio null engine, job")]),
            ("dbreplay beyond read_iolog, job", [(1, "dbreplay, job"),
                                                 (-1, "read_iolog, job")]),
            ("dbreplay beyond read_iolog, whole process",
             [(1, "dbreplay, whole process"), (-1, "read_iolog, whole process")])])


def runs_rows(res):
    rows = []
    for name, _, _, _ in PAIRS:
        for i, p in enumerate(res.get(name, [])):
            for prog in (p["first"], "read_iolog" if p["first"] == "dbreplay" else "dbreplay"):
                x = p[prog]
                rows.append([name, i + 1, prog, fmt_n(x["records"]), x["job_runtime_ms"],
                             fmt_n(x["rate"]), "%.2f" % x["wall"], "%.2f" % x["job_cpu"],
                             "%.2f" % x["other_cpus"],
                             ("ok" if x["counts_ok"] else "MISMATCH") +
                             (", %d unreaped" % x["unreaped"] if x["unreaped"] else "")])
    return rows


def parse_rows(res):
    rows = []
    for label, xs in res.items():
        rec = xs[0]["records"]
        rows.append([label, fmt_n(rec), "%.1f" % (xs[0]["bytes"] / 1048576.0),
                     fmt_n(statistics.median(x["records_per_s"] for x in xs)),
                     triplet([x["records_per_s"] for x in xs]),
                     "%.0f" % statistics.median(x["bytes"] / x["seconds"] / 1e6 for x in xs),
                     "%.1f" % statistics.median(x["cpu_s"] * 1e9 / rec for x in xs),
                     "%d" % max(x["vmhwm_kib"] for x in xs)])
    return rows


def parser():
    """The parser of `fio-pack bench dbreplay` (its options are the manual's)."""
    p = harness.parser("dbreplay", DESCRIPTION,
                       "PACED MODE\n" + paced.DESCRIPTION + "\n" + EPILOG)
    p.add_argument("--records", type=number(int, low=1), default=200000,
                   help="records of the part A trace (default 200000)")
    p.add_argument("--repeats", type=number(int, low=1), default=3, help="pairs per kind, parse runs (default 3)")
    p.add_argument("--big", action="store_true",
                   help="also the 10M-record cases of parts B and C (a few minutes more)")
    p.add_argument("--mem-records", type=number(int, low=1), default=1000000,
                   help="the large trace of parts B and C (default 1000000)")
    p.add_argument("--big-records", type=number(int, low=1), default=10000000,
                   help="the trace --big adds to parts B and C (default 10000000)")
    p.add_argument("--sections", default="A,B,C", help="which parts: A,B,C (default all)")
    p.add_argument("--pairs", default=",".join(x[0] for x in PAIRS),
                   help="pair kinds of part A (default %s)" % ",".join(x[0] for x in PAIRS))
    p.add_argument("--target-dir", help="also run part A in a private directory below DIR")
    p.add_argument("--no-tmpfs-a", action="store_true",
                   help="with --target-dir: part A on DIR only, not on the tmpfs")
    harness.add_build_options(p, "dbreplay")
    p.add_argument("--quiet-cpus", type=number(float, low=0), default=0.25,
                   help="CPUs the rest of the machine may keep busy: before each run of A\n"
                        "wait for fewer, mark a pair above it disturbed (default 0.25)")
    p.add_argument("--quiet-wait", type=number(int, low=0), default=60,
                   help="seconds to wait for a quiet machine before a run of A (default 60)")
    p.add_argument("--timeout", type=number(int, low=1), default=1800, help="seconds per run (default 1800)")
    harness.add_output_options(p)
    p.add_argument("--paced", action="store_true",
                   help="instead of parts A-C: the shipped traces at their captured pace "
                        "on a tmpfs and on a loop device (see PACED MODE)")
    p.add_argument("--traces", help="--paced: which shipped traces (default all)")
    p.add_argument("--device", metavar="MODEL",
                   help="--paced: on a modeled device (fio-pack device up MODEL) instead of "
                        "the tmpfs and the loop device")
    p.add_argument("--image-dir", default="/var/tmp",
                   help="--paced: where the loop device's image goes (default /var/tmp)")
    p.add_argument("--image-mib", type=number(int, low=1), default=1024,
                   help="--paced: the image's size (default 1024, at most 8192)")
    return p


def snapshot_build(a, work):
    """harness.snapshot_build, then the parser driver built: ({key: (source,
    md5, build time)}, fio's version, the driver's make command)."""
    snap, fio_version = harness.snapshot_build(a, work, stamp="%Y-%m-%d %H:%M:%S %Z")
    try:
        a.driver, driver_cmd = build_driver()
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return snap, fio_version, driver_cmd


def machine_rows(a, fio_version, snap, driver_cmd):
    """The machine table: the snapshots, the commit, the parser driver."""
    mi = harness.snapshot_machine_rows(a, fio_version, snap)
    mi.append(("parser driver", "`%s`" % driver_cmd))
    return mi


def part_a_trace(a, places, mem_n, rep, results):
    """The tmpfs and part A's trace, generated and checked: (mountpoint,
    trace directory, trace, its counts)."""
    need = 2 * sum(s for _, s in FILES) + 2 * (a.records * 100)
    if "B" in a.sections or "C" in a.sections:
        need += sum(n * 130 for n in mem_n)
    mp = places.mount_tmpfs(need + (256 << 20))
    tdir = os.path.join(mp, "traces")
    os.mkdir(tdir)
    rep.add("Target and traces: a fresh tmpfs mounted at %s by this script (%s)."
            % (mp, fs_of(mp)))
    rep.add()
    trace = os.path.join(tdir, "a.trace")
    log("generating the %d-record trace" % a.records)
    counts = make_trace(a, a.records, trace, gz="B" in a.sections)
    python_check(a, trace, counts)
    results["trace"] = counts
    rep.add("Trace of part A: %s records (%s), %.1f MiB: %s data reads, %s data writes, "
            "%s log writes, %s log fdatasyncs; checked by `scripts/fio-pack trace check`."
            % (fmt_n(a.records), " ".join(["gen", "--records", str(a.records)] + GEN_ARGS),
               os.path.getsize(trace) / 1048576.0, fmt_n(counts["data_read"]),
               fmt_n(counts["data_write"]), fmt_n(counts["log_write"]),
               fmt_n(counts["log_fdatasync"])))
    rep.add()
    return mp, tdir, trace, counts


def section_a(a, rn, places, mp, tdir, trace, counts, rep, results):
    """Part A on the tmpfs and (--target-dir) on disk."""
    targets = []
    if not (a.target_dir and a.no_tmpfs_a):
        targets.append(("tmpfs", os.path.join(mp, "a")))
        os.mkdir(targets[0][1])
    if a.target_dir:
        targets.append(("disk", places.make_disk(a.target_dir)))
    results["A"] = {}
    for where, target in targets:
        iolog = os.path.join(tdir, "a-%s.iolog" % where)
        res, secs = part_a(a, rn, where, trace, counts, target, iolog)
        results["A"][where] = {"where": "%s (%s)" % (target, fs_of(target)),
                               "pairs": res, "export_s": secs}
        part_a_report(rep, a, where, target, res)
    for where, target in targets:
        if where == "disk":
            shutil.rmtree(target, ignore_errors=True)


def part_a_report(rep, a, where, target, res):
    """The tables of part A on one target."""
    rep.add("#### A. Replay rate, %s (%s, %s)" % (where, target, fs_of(target)))
    rep.add()
    rep.add("Records/s = the trace's records (every run's read, write, sync and "
            "byte counts checked against the trace's; fio's JSON sum read + write + "
            "trim total_ios + sync.lat_ns.N gives the same number) / fio's "
            "job_runtime; %d pair(s) per kind, order alternating; ratio = dbreplay "
            "/ read_iolog of each pair. **Goal: >= 1.0.**" % a.repeats)
    rep.add()
    rep.table(["pair", "dbreplay records/s min / median / max",
               "read_iolog records/s min / median / max",
               "ratio min / median / max", "undisturbed pairs",
               "ratio of medians", "whole-process ratio (wall) min / median / max"],
              ratio_rows(res, a.quiet_cpus))
    rep.add("The last column compares the wall time of the whole fio process "
            "instead (start-up, fio's loading of the iolog or dbreplay's check "
            "pass and layout of existing files, the replay, teardown): "
            "read_iolog wall / dbreplay wall.")
    rep.add()
    rep.add("Medians per side: job_runtime, wall time of the whole fio process, "
            "the job's CPU time (fio's usr_cpu + sys_cpu x job_runtime) and per "
            "record, CPU of all processes of the run (getrusage of the children), "
            "and the most other work seen during a run (CPUs):")
    rep.add()
    rep.table(["pair", "side", "job_runtime ms", "wall s", "job CPU s",
               "job CPU us/record", "process CPU s", "other CPUs (max)"],
              secondary_rows(res))
    cpu_tables(rep, res)
    rep.add("<details><summary>Every run</summary>")
    rep.add()
    rep.table(["pair", "#", "side (in order)", "records", "job_runtime ms",
               "records/s", "wall s", "job CPU s", "other CPUs", "counts"],
              runs_rows(res))
    rep.add("</details>")
    rep.add()


def section_b(a, trace, mem_traces, rep, results):
    """Part B: the parser's rate on the part A trace and the large ones."""
    plist = [("part A trace, plain", trace, a.records),
             ("part A trace, gzip", trace + ".gz", a.records)]
    for n, path, c in mem_traces:
        if n >= a.mem_records:
            plist += [("%s records, plain" % fmt_n(n), path, n),
                      ("%s records, gzip" % fmt_n(n), path + ".gz", n)]
    rb = part_b(a, plist)
    results["B"] = rb
    rep.add("#### B. Parse rate (the C parser alone: dbtrace_open + dbtrace_next)")
    rep.add()
    rep.add("`build/bench/dbtrace-bench parse TRACE`, %d run(s) each, traces on the "
            "tmpfs; gzip made with `gzip -6`. CPU ns/record is user + system time of "
            "the driver (process start included) per record; peak RSS is the "
            "driver's VmHWM." % a.repeats)
    rep.add()
    rep.table(["trace", "records", "size MiB", "records/s (median)",
               "min / median / max", "MB/s of input (median)", "CPU ns/record",
               "peak RSS KiB"], parse_rows(rb))


def section_c(a, rn, mp, tdir, mem_traces, rep, results):
    """Part C: peak memory of fio with each engine and of the parser alone."""
    mem_iologs = []
    for n, path, c in mem_traces:
        if n <= a.mem_records or a.big:
            # exported by part_c, once dbreplay has laid out the files
            mem_iologs.append((n, path, os.path.join(tdir, "m%d.iolog" % n), c))
    rc = part_c(a, rn, mp, mem_traces, mem_iologs)
    pc = {}
    for n, path, c in mem_traces:
        x = json.loads(run([a.driver, "parse", path])[0].strip().splitlines()[-1])
        pc[n] = x["vmhwm_kib"] * 1024
    results["C"] = {"rss": rc, "parser": pc}
    rep.add("#### C. Peak memory")
    rep.add()
    rep.add("Max RSS of fio with `--thread` (`/usr/bin/time -f %M`), one run each; "
            "dbreplay: asap, sync, dbr_fill=data, on the tmpfs; read_iolog: psync, "
            "replay_no_stall=1, on the exported iolog. Parser: VmHWM of "
            "`dbtrace-bench parse` (plain trace).")
    rep.add()
    rows = [["fio, null engine, size=4k (fio's own baseline)", "-",
             "%.1f" % (rc["null"]["rss"] / 1048576.0), "-", "-"]]
    for n, _, _ in mem_traces:
        rows.append(["parser alone (dbtrace-bench parse, VmHWM)", fmt_n(n),
                     "%.2f" % (pc[n] / 1048576.0), "-", "-"])
    for prog in ("dbreplay", "read_iolog"):
        for n, _, _ in mem_traces:
            x = rc.get("%s-%d" % (prog, n))
            if x:
                rows.append(["fio + %s" % prog, fmt_n(n), "%.1f" % (x["rss"] / 1048576.0),
                             "%.1f" % x["wall"], fmt_n(n / (x["job_runtime_ms"] / 1000.0))
                             if x["job_runtime_ms"] else "-"])
    rep.table(["what", "records", "max RSS MiB", "wall s", "records/s"], rows)
    diff = []
    for prog in ("dbreplay", "read_iolog"):
        ns = sorted(n for n, _, _ in mem_traces if "%s-%d" % (prog, n) in rc)
        if len(ns) >= 2:
            lo, hi = ns[0], ns[-1]
            d = rc["%s-%d" % (prog, hi)]["rss"] - rc["%s-%d" % (prog, lo)]["rss"]
            diff.append(["fio + %s, %s - %s records" % (prog, fmt_n(hi), fmt_n(lo)),
                         "%.2f MiB (%.1f bytes/record)" % (d / 1048576.0, d / (hi - lo))])
    ns = sorted(pc)
    d = pc[ns[-1]] - pc[ns[0]]
    diff.append(["parser, %s - %s records" % (fmt_n(ns[-1]), fmt_n(ns[0])),
                 "%+d KiB" % (d // 1024)])
    rep.table(["difference", "value"], diff)


def report_end(rep, rn, t_start):
    """The run's time, the runner's notes and any count that differed."""
    rep.add("Total time of the run: %.0f s (of which %.0f s waiting for other work on the "
            "machine to stop); load average at the end: %s." % (
                time.monotonic() - t_start, wait_quiet.total,
                " ".join("%.2f" % x for x in os.getloadavg())))
    if rn.notes:
        rep.add()
        rep.add("Notes:")
        rep.add()
        for m in rn.notes:
            rep.add("* %s" % m)
    if rn.mismatches:
        rep.add()
        rep.add("**COUNTS DIFFERED:**")
        rep.add()
        for m in rn.mismatches:
            rep.add("* `%s`" % m)


def main(argv):
    p = parser()
    a = p.parse_args(argv)
    harness.check_outputs(a)
    harness.check_fio(p, a)
    if a.device and not a.paced:
        p.error("--device applies to --paced (parts A-C run on a tmpfs or --target-dir)")
    if a.paced:
        if os.geteuid() != 0:
            sys.stderr.write("fio-pack bench dbreplay: must run as root (losetup, mkfs, mount)\n")
            return 2
        if a.image_mib > 8192 or a.repeats < 1:
            p.error("--image-mib at most 8192, --repeats at least 1")
        if a.device:
            try:
                ondevice.check(a.device, a.image_mib)
            except Error as e:
                return ondevice.refuse("dbreplay", e)
        return paced.main(a, argv)
    a.sections = set(s.strip().upper() for s in a.sections.split(",") if s.strip())
    a.pairs = [x.strip() for x in a.pairs.split(",") if x.strip()]
    if not a.sections <= {"A", "B", "C"} or any(x not in PAIR_BY_NAME for x in a.pairs):
        p.error("--sections takes A, B, C; --pairs %s" % ",".join(PAIR_BY_NAME))
    if a.records < 1000 or a.repeats < 1:
        p.error("--records >= 1000, --repeats >= 1")
    if os.geteuid() != 0:
        sys.stderr.write("fio-pack bench dbreplay: must run as root (it mounts a tmpfs)\n")
        return 2
    a.fio, a.engine = os.path.abspath(a.fio), os.path.abspath(a.engine)
    for path in (a.fio, a.engine, "/usr/bin/time"):
        if not os.path.exists(path):
            sys.stderr.write("fio-pack bench dbreplay: %s not found (make; apt-get install time)\n"
                             % path)
            return 2
    t_start = time.monotonic()

    harness.unwind_on_signals()

    work = tempfile.mkdtemp(prefix="bdr-work.", dir="/tmp")
    snap, fio_version, driver_cmd = snapshot_build(a, work)
    rep = Report()
    cmdline = "sudo scripts/fio-pack bench dbreplay" + (
        " " + " ".join(argv) if argv else "")
    results = {"command": cmdline, "args": {k: (sorted(v) if isinstance(v, set) else v)
                                            for k, v in vars(a).items()}}
    rep.add("### Run of %s" % time.strftime("%Y-%m-%d %H:%M %Z"))
    rep.add()
    rep.add("Command: `%s`" % cmdline)
    rep.add()
    mi = machine_rows(a, fio_version, snap, driver_cmd)
    rep.table(["machine", ""], mi)
    results["machine"] = mi

    places = harness.Places("bdr.", 256)
    rn = Runner(a, work)
    error = None
    mem_n = [1000, a.mem_records] + ([a.big_records] if a.big else [])
    try:
        mp, tdir, trace, counts = part_a_trace(a, places, mem_n, rep, results)
        if "A" in a.sections:
            section_a(a, rn, places, mp, tdir, trace, counts, rep, results)

        mem_traces = []
        if "B" in a.sections or "C" in a.sections:
            for n in mem_n:
                path = os.path.join(tdir, "m%d.trace" % n)
                log("generating the %d-record trace" % n)
                c = make_trace(a, n, path, gz=("B" in a.sections and n >= a.mem_records))
                mem_traces.append((n, path, c))
                log("  %.1f s (with gzip)" % c["seconds"])
        if "B" in a.sections:
            section_b(a, trace, mem_traces, rep, results)
        if "C" in a.sections:
            section_c(a, rn, mp, tdir, mem_traces, rep, results)
    except BaseException as e:
        error = "%s: %s" % (type(e).__name__, e)
        log("error: " + error)
    finally:
        places.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    report_end(rep, rn, t_start)
    results["mismatches"] = rn.mismatches
    results["error"] = error
    harness.save_report(a, rep, results, error, json_default=str)
    return 1 if (error or rn.mismatches) else 0

