"""fio-pack bench capture - what a capture costs a running database: strace and BPF

SYNOPSIS
    sudo scripts/fio-pack bench capture [--db postgresql|mariadb] [--rounds N]
                                  [--seconds S] [--scale K] [--clients C]
                                  [--tracers strace,bpf] [--output FILE.md]
                                  [--json FILE.json] [--bpf-stats]
    scripts/fio-pack bench capture --combine FILE.json... [--output FILE.md]

DESCRIPTION
    Starts a private database server (PostgreSQL, whichever major Debian
    installed: initdb in a temporary directory; MariaDB: mariadb-install-db,
    Debian's defaults, so io_uring on), no TCP listener, loads a benchmark's tables, then runs N rounds.
    Each round runs the benchmark alone and under each tracer's capture
    (scripts/fio-pack capture attach --tracer T on the server's process), in an
    order that rotates from round to round, as a DBA would capture
    production. With bpf-hooks among the tracers, a round also runs the
    benchmark while iocap captures an idle process beside the server: its
    programs are on the host's system calls, the database's are not
    captured, which separates what the hooks cost from what capturing the
    database costs. The benchmark is pgbench -c C -j C -T S (scale K) for
    PostgreSQL, sysbench oltp_read_write --threads=C --time=S (K tables of
    10,000 rows) for MariaDB.

    Reports each run's tps, the ratio of each captured run to the round's
    run alone, their medians and range; the CPU time per transaction of
    the server and the benchmark's client, captured / alone (less swayed by
    other load on the machine than tps); for each capture the trace records
    per second of the benchmark (and, for BPF, the events iocap saw), the
    CPU time (user+sys) of the capture's processes while the benchmark ran
    (fio-pack capture and its tracer, iocap or strace, per second: the cost on
    the database's host beyond what the tracing costs the database's own
    threads) and their whole CPU time including stopping and converting,
    with --bpf-stats the time iocap's BPF programs ran in the kernel (on
    every task's system calls; those of untraced tasks return at once;
    kernel.bpf_stats_enabled on for the run, then put back); the events the BPF capture lost (its ring buffer full: the trace's
    "incomplete" lines) and whether each trace is complete; the machine's
    CPUs and load average before and after; and the command lines used, as
    Markdown (stdout, and --output), and each run's figures as JSON (--json)
    to combine several invocations: --combine A.json B.json... runs nothing
    and reports their rounds together. The server is removed at the end.

    A benchmark, not a test: the machine is shared; run it on a quiet one.
    Needs root, and Debian's postgresql (any major) or mariadb-server and sysbench.
"""
import argparse
import gzip
import json
import os
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fiopack
from fiopack import UserError, documents, inputs, outputs
from fiopack.bench import harness
from fiopack.capture import postgres
from fiopack.capture.bpf import IOCAP
from fiopack.capture.databases import DatabaseError, PrivateMariaDB, PrivatePostgres
from fiopack.capture.procs import tasks_of
from fiopack.options import Parser, number

AS_PG = ["runuser", "-u", "postgres", "--"]


def run(cmd, cwd, check=True):
    """harness.run with an hour's timeout: a failure (with @check) ends the
    benchmark in one line; the result as subprocess.run's."""
    out, err, _ = harness.run(cmd, timeout=3600, cwd=cwd, check=False)
    if check and harness.run.returncode:
        sys.exit(f"fio-pack bench capture: {shlex.join(map(str, cmd))} failed: {err.strip()}")
    return subprocess.CompletedProcess(cmd, harness.run.returncode, out, err)


class PostgreSQL:
    name = "PostgreSQL"

    def __init__(self, base: Path, a):
        self.base, self.a = base, a
        self.pg = postgres.installed()
        if self.pg is None:
            sys.exit("fio-pack bench capture: no PostgreSQL (apt-get install postgresql)")
        self.name = f"PostgreSQL {self.pg.major}"
        os.chmod(base, 0o755)
        shutil.chown(base, "postgres")
        self.server = PrivatePostgres(base, self.pg, "-c shared_buffers=128MB", timeout=3600)
        self.data = self.server.data

    def start(self):
        try:
            self.server.start()
        except DatabaseError as e:
            sys.exit(f"fio-pack bench capture: {e}")
        run([*AS_PG, "pgbench", "-h", str(self.base), "-i", "-s", str(self.a.scale), "-q",
             "postgres"], self.base)
        return self.server.pid

    def bench(self):
        cmd = [*AS_PG, "pgbench", "-h", str(self.base), "-c", str(self.a.clients), "-j",
               str(self.a.clients), "-T", str(self.a.seconds), "postgres"]
        out = run(cmd, self.base).stdout
        m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out) or \
            re.search(r"tps = ([\d.]+)", out)
        if not m:
            sys.exit(f"fio-pack bench capture: no tps in pgbench's output:\n{out}")
        return float(m.group(1)), cmd

    def stop(self):
        self.server.stop()

    def setup_text(self):
        return (f"PostgreSQL {self.pg.version}, initdb defaults but shared_buffers=128MB, pgbench -i -s "
                f"{self.a.scale}; the benchmark `pgbench -c {self.a.clients} -j "
                f"{self.a.clients} -T {self.a.seconds}`")


class MariaDB:
    name = "MariaDB"

    def __init__(self, base: Path, a):
        self.base, self.a = base, a
        self.data, self.sock = base / "data", base / "sock"
        self.server = None
        if not shutil.which("mariadbd") or not shutil.which("sysbench"):
            sys.exit("fio-pack bench capture: no MariaDB or sysbench (apt-get install mariadb-server "
                     "sysbench)")

    def start(self):
        try:
            self.server = PrivateMariaDB(self.base, timeout=3600)
            self.server.start("--innodb-buffer-pool-size=128M")
            self.server.sql("CREATE DATABASE sbtest")
        except DatabaseError as e:
            sys.exit(f"fio-pack bench capture: {e}")
        run(["sysbench", "oltp_read_write", *self.sb(), "prepare"], self.base)
        self.version = self.server.log.read_text()
        return self.server.proc.pid

    def sb(self):
        return ["--db-driver=mysql", f"--mysql-socket={self.sock}", "--mysql-user=root",
                f"--tables={self.a.scale}", "--table-size=10000"]

    def bench(self):
        cmd = ["sysbench", "oltp_read_write", *self.sb(), f"--threads={self.a.clients}",
               f"--time={self.a.seconds}", "run"]
        out = run(cmd, self.base).stdout
        m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out)
        if not m:
            sys.exit(f"fio-pack bench capture: no tps in sysbench's output:\n{out}")
        return float(m.group(1)), cmd

    def stop(self):
        if self.server is not None:
            self.server.stop()

    def setup_text(self):
        aio = "io_uring" if "Using io_uring" in self.version else "native AIO"
        return (f"MariaDB as Debian configures it ({aio}), innodb_buffer_pool_size=128M, "
                f"sysbench prepare of {self.a.scale} tables of 10,000 rows; the benchmark "
                f"`sysbench oltp_read_write --threads={self.a.clients} --time={self.a.seconds}`")


TICK = os.sysconf("SC_CLK_TCK")


def tree_stats(pid):
    """/proc/P/stat of PID and each live descendant P (capture's own walk of
    the process tree, the one its attach follows), as {P: text}."""
    out = {}
    for p in dict.fromkeys(p for p, _ in tasks_of([pid])):
        try:
            out[p] = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
    return out


def tree_cpu(pid):
    """{pid: (comm, user+sys CPU seconds)} of PID and its live descendants."""
    out = {}
    for p, stat in tree_stats(pid).items():
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        f = stat[stat.rindex(")") + 2:].split()
        out[p] = (comm, (int(f[11]) + int(f[12])) / TICK)
    return out


def bpf_prog_time():
    """(ns, runs) of iocap's BPF programs so far: kernel.bpf_stats_enabled's
    counters (zero while it is off)."""
    r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    try:
        progs = json.loads(r.stdout or "[]")
    except ValueError:
        progs = []
    progs = [p for p in progs if p.get("name", "").startswith("iocap")]
    return (sum(p.get("run_time_ns", 0) for p in progs), sum(p.get("run_cnt", 0) for p in progs))


def server_cpu(pid):
    """User+sys CPU seconds of the server: its live processes' and those they
    have reaped (PostgreSQL's backends end with their connection)."""
    total = 0.0
    for stat in tree_stats(pid).values():
        f = stat[stat.rindex(")") + 2:].split()
        total += sum(int(x) for x in f[11:15]) / TICK
    return total


def bench_cpu(db, pid):
    """db.bench() and the CPU per transaction of the server and the client."""
    s0, c0 = server_cpu(pid), children_cpu()
    tps, _ = db.bench()
    cpu = server_cpu(pid) - s0 + children_cpu() - c0
    return tps, {"db_cpu_s": cpu, "db_cpu_per_tx_ms": 1e3 * cpu / (tps * db.a.seconds)}


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def trace_facts(path):
    """(records, [(count, what)] of the header's incomplete lines) of a trace."""
    records, incomplete = None, []
    try:
        with gzip.open(path, "rt", errors="replace") as f:
            for ln in f:
                if ln.startswith("incomplete "):
                    n, _, what = ln[11:].strip().partition(" ")
                    incomplete.append((int(n) if n.isdigit() else 0, what))
                elif ln.startswith("end "):
                    records = int(ln.split()[1])
    except (OSError, EOFError, ValueError):
        pass
    return records, incomplete


def capture_cpu(info, before, during, prog0, prog1):
    """Into @info: the CPU the capture's processes used while the benchmark
    ran (tree_cpu() @before and @during it), in all and by command, and the
    BPF programs' own time between the bpf_prog_time() readings @prog0 and
    @prog1, if they ran."""
    if prog1[1] > prog0[1]:
        # the BPF programs' own time, in the kernel, on the tasks they trace
        info["bpf_prog_s"], info["bpf_prog_runs"] = (prog1[0] - prog0[0]) / 1e9, \
            prog1[1] - prog0[1]
    info["cpu_capture_s"] = sum(c - before.get(p, ("", 0))[1] for p, (_, c) in during.items())
    info["cpu_by_comm"] = {}
    for p, (comm, c) in during.items():
        info["cpu_by_comm"][comm] = info["cpu_by_comm"].get(comm, 0) + \
            c - before.get(p, ("", 0))[1]


def captured(db, pid, tracer, base):
    """The benchmark under `fio-pack capture attach --tracer TRACER`: (tps, facts)."""
    ready, trace = base / "ready", base / "bench.trace.gz"
    ready.unlink(missing_ok=True)
    trace.unlink(missing_ok=True)
    cmd = fiopack.command(
        "capture", "attach", "--datadir",
        str(db.data), "--db", "postgresql" if isinstance(db, PostgreSQL) else "mariadb",
        "--pid", str(pid), "--tracer", tracer, "--source", "fio-pack bench capture",
        "-o", str(trace), "--ready", str(ready))
    cap = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           cwd=base)
    t0 = time.monotonic()
    while not ready.exists():
        if cap.poll() is not None or time.monotonic() - t0 > 60:
            sys.exit(f"fio-pack bench capture: the {tracer} capture did not attach: "
                     f"{cap.communicate()[1]}")
        time.sleep(0.05)
    # the CPU the capture's processes used while attaching: not the capture's cost
    before = tree_cpu(cap.pid)
    prog0 = bpf_prog_time() if tracer == "bpf" else (0, 0)
    t_ready = time.monotonic()
    tps, dbcpu = bench_cpu(db, pid)
    # the capture's processes (fio-pack capture and its tracer) while the benchmark ran
    during = tree_cpu(cap.pid)
    span = time.monotonic() - t_ready
    prog1 = bpf_prog_time() if tracer == "bpf" else (0, 0)
    cpu0 = children_cpu()
    t_stop = time.monotonic()
    cap.send_signal(signal.SIGINT)
    _, err = cap.communicate(timeout=1800)
    info = {**dbcpu, "complete": cap.returncode == 0, "rc": cap.returncode, "span_s": span,
            "stop_s": time.monotonic() - t_stop,
            # everything the capture's process tree used, from start to its exit
            "cpu_total_s": children_cpu() - cpu0}
    capture_cpu(info, before, during, prog0, prog1)
    m = re.search(r"the BPF capture: (\d+) events in ([\d.]+) s, ([\d.]+) s of CPU", err)
    if m:
        info["tool_events"] = int(m.group(1))
        info["tool_cpu_s"] = float(m.group(3))
    if cap.returncode not in (0, 3):
        # the benchmark ran under the capture all the same: its tps counts
        info["failed"] = (err.strip().splitlines() or ["?"])[-1]
        print(f"fio-pack bench capture: the {tracer} capture failed: {info['failed']}", file=sys.stderr)
    info["records"], info["incomplete"] = trace_facts(trace)
    info["ringbuf_lost"] = sum(n for n, what in info["incomplete"] if "ring buffer" in what)
    trace.unlink(missing_ok=True)
    return tps, info


def hooks_only(db, pid, base):
    """The benchmark while iocap captures an idle process beside the server
    (its programs on every system call of the host, the database's not
    captured): (tps, facts). Set against "bpf", it tells the cost of the
    hooks being there from the cost of capturing the database."""
    ready = base / "ready"
    ready.unlink(missing_ok=True)
    idle = subprocess.Popen(["sleep", "1000000"])
    cap = subprocess.Popen([IOCAP, "-p", str(idle.pid), "-o", os.devnull, "--ready", str(ready)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        while not ready.exists():
            if cap.poll() is not None or time.monotonic() - t0 > 60:
                sys.exit(f"fio-pack bench capture: iocap did not attach: {cap.communicate()[1]}")
            time.sleep(0.05)
        before = tree_cpu(cap.pid)
        prog0 = bpf_prog_time()
        t_ready = time.monotonic()
        tps, dbcpu = bench_cpu(db, pid)
        during = tree_cpu(cap.pid)
        span = time.monotonic() - t_ready
        prog1 = bpf_prog_time()
        cpu0 = children_cpu()
        t_stop = time.monotonic()
        cap.send_signal(signal.SIGINT)
        _, err = cap.communicate(timeout=600)
    finally:
        idle.kill()
        idle.wait()
    if cap.returncode != 0:
        sys.exit(f"fio-pack bench capture: iocap failed: {err.strip()}")
    info = {**dbcpu, "complete": True, "rc": 0, "span_s": span,
            "stop_s": time.monotonic() - t_stop, "cpu_total_s": children_cpu() - cpu0,
            "records": None, "incomplete": [], "ringbuf_lost": 0}
    capture_cpu(info, before, during, prog0, prog1)
    return tps, info


def load_now():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def report(runs):
    """The Markdown report of one or more invocations' runs (their JSON)."""
    tracers = [t for t in runs[0]["tracers"]]
    rounds = [(n + 1, r) for n, run in enumerate(runs) for r in run["rounds"]]
    many = len(runs) > 1
    head = "| round | " + ("invocation | " if many else "") + "alone (tps) | " + " | ".join(
        f"{t} capture (tps) | {t} / alone" for t in tracers) + " |"
    out = [head, "|" + "---|" * (2 + many + 2 * len(tracers))]
    for i, (n, r) in enumerate(rounds):
        cells = [f"{r[t]['tps']:.0f} | {r[t]['tps'] / r['alone']['tps']:.2f}" for t in tracers]
        out.append(f"| {i + 1} | " + (f"{n} | " if many else "") + f"{r['alone']['tps']:.0f} | "
                   + " | ".join(cells) + " |")
    out.append("")
    for t in tracers:
        ratios = [r[t]["tps"] / r["alone"]["tps"] for _, r in rounds]
        med = statistics.median(ratios)
        line = (f"- {t}: median captured / alone **{med:.2f}** (costs {100 * (1 - med):.0f}% of "
                f"tps; range {min(ratios):.2f} to {max(ratios):.2f}, {len(ratios)} rounds)")
        facts = [r[t] for _, r in rounds]
        both = [r for _, r in rounds if "db_cpu_per_tx_ms" in r[t] and
                "db_cpu_per_tx_ms" in r["alone"]]
        if both:
            per = [r[t]["db_cpu_per_tx_ms"] / r["alone"]["db_cpu_per_tx_ms"] for r in both]
            full = [(r[t]["db_cpu_s"] + r[t]["cpu_capture_s"]) / r[t]["tps"] /
                    (r["alone"]["db_cpu_s"] / r["alone"]["tps"]) for r in both]
            line += (f"; CPU per transaction (server and client) captured / alone: median "
                     f"{statistics.median(per):.2f} (range {min(per):.2f} to {max(per):.2f}), "
                     f"{statistics.median(full):.2f} with the capture's processes "
                     f"({len(both)} rounds)")
        eps = [f["records"] / f["span_s"] for f in facts if f.get("records") is not None]
        if eps:
            line += f"; {statistics.median(eps):,.0f} trace records/s"
        if t == "bpf":
            tev = [f["tool_events"] / f["span_s"] for f in facts if "tool_events" in f]
            if tev:
                line += f" ({statistics.median(tev):,.0f} events/s seen by iocap)"
        cpu = statistics.median(f["cpu_capture_s"] / f["span_s"] for f in facts)
        by = {}
        for f in facts:
            for comm, c in f["cpu_by_comm"].items():
                by.setdefault(comm, []).append(c / f["span_s"])
        parts = ", ".join(f"{comm} {100 * statistics.median(v):.1f}%" for comm, v in
                          sorted(by.items()))
        line += (f"; the capture's CPU (user+sys) while the benchmark ran {100 * cpu:.1f}% of "
                 f"one core ({parts}); its whole CPU, stopping and converting included, "
                 f"{statistics.median(f['cpu_total_s'] for f in facts):.1f} s per run")
        prog = [f for f in facts if "bpf_prog_s" in f]
        if prog:
            line += (f"; the BPF programs' time in the kernel (kernel.bpf_stats_enabled) "
                     f"{100 * statistics.median(f['bpf_prog_s'] / f['span_s'] for f in prog):.1f}"
                     "% of one core, "
                     f"{statistics.median(f['bpf_prog_runs'] / f['span_s'] for f in prog):,.0f} "
                     "runs/s, "
                     f"{statistics.median(1e9 * f['bpf_prog_s'] / f['bpf_prog_runs'] for f in prog):.0f}"
                     " ns a run")
        if t == "bpf":
            line += f"; events lost (ring buffer full): {sum(f['ringbuf_lost'] for f in facts)}"
        failed = [f["failed"] for f in facts if "failed" in f]
        if failed:
            line += (f"; captures that failed after the benchmark (no trace; their tps kept): "
                     f"{len(failed)} of {len(rounds)} ({'; '.join(sorted(set(failed)))})")
        incomplete = sum(1 for f in facts if not f.get("complete") and "failed" not in f)
        line += f"; traces incomplete: {incomplete} of {len(rounds) - len(failed)}"
        whats = sorted({w for f in facts for _, w in f["incomplete"]})
        if whats:
            line += " (" + "; ".join(whats) + ")"
        out.append(line)
    out.append("")
    for n, run in enumerate(runs):
        out.append(("- " if many else "") + (f"Invocation {n + 1}: " if many else "") +
                   f"{run['start']} to {run['end']}; {run['nproc']} CPUs (nproc); load average "
                   f"(1, 5, 15 min) {run['load_before']} before, {run['load_after']} after. "
                   f"`{shlex.join(['scripts/fio-pack', 'bench', 'capture'] + run['argv'])}`")
    out += ["", f"Set-up: {runs[0]['setup']}; each round runs alone and each capture in a "
                "rotating order. Captures: `scripts/fio-pack capture attach --datadir DATA --db "
                f"{runs[0]['db']} --pid SERVER --tracer T`."]
    return "\n".join(out) + "\n"


def combined_run(path) -> dict:
    """One --json file for --combine, of the shape this benchmark writes:
    every round has the figures of "alone" and of each tracer."""
    try:
        run = json.loads(inputs.read_whole(path, UserError, "a --combine file"))
        documents.check(run, documents.BENCH_CAPTURE)
    except OSError as e:
        raise UserError(f"--combine {path}: {e.strerror}")
    except (ValueError, RecursionError) as e:
        raise UserError(f"--combine {path}: not valid JSON: {e}")
    except documents.ShapeError as e:
        raise UserError(f"--combine {path}: not this benchmark's --json: {e}")
    for i, r in enumerate(run["rounds"]):
        for kind in ["alone"] + run["tracers"]:
            need = ("tps",) if kind == "alone" else ("tps", "span_s", "cpu_capture_s",
                                                      "cpu_by_comm", "cpu_total_s",
                                                      "incomplete")
            missing = [k for k in need if k not in r.get(kind, {})]
            if missing:
                raise UserError(f"--combine {path}: rounds[{i}]: no {kind} {missing[0]}")
    return run


def main(argv=None) -> int:
    ap = Parser(prog="fio-pack bench capture", description=__doc__.split("\n\n")[0].split(" - ")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__[__doc__.index("DESCRIPTION"):])
    ap.add_argument("--db", choices=("postgresql", "mariadb"), default="postgresql",
                    help="the database loaded and captured: postgresql (pgbench) or\n"
                         "mariadb (sysbench) (default postgresql)")
    ap.add_argument("--rounds", type=number(int, low=1), default=3, help="rounds (default 3)")
    ap.add_argument("--seconds", type=number(int, low=1), default=20, help="benchmark seconds (default 20)")
    ap.add_argument("--scale", type=number(int, low=1), default=10,
                    help="pgbench scale, or sysbench tables (default 10)")
    ap.add_argument("--clients", type=number(int, low=1), default=2, help="clients (default 2)")
    ap.add_argument("--tracers", default="strace,bpf",
                    help="comma-separated: strace, bpf, bpf-hooks (iocap capturing an idle\n"
                         "process beside the server: what its programs being on the host\n"
                         "costs, nothing of the database captured) (default strace,bpf)")
    ap.add_argument("--output", help="also write the Markdown report here (%s)"
                    % outputs.POLICY_HELP)
    ap.add_argument("--json", help="also write each run's figures here, as JSON")
    ap.add_argument("--bpf-stats", action="store_true",
                    help="turn kernel.bpf_stats_enabled on during the run to measure the BPF "
                         "programs' time (it costs a little itself)")
    ap.add_argument("--combine", nargs="+", metavar="JSON",
                    help="run nothing: one report of the rounds of these --json files")
    a = ap.parse_args(argv)
    for name in ("output", "json"):     # before the databases start
        outputs.check(getattr(a, name), "--" + name)
    if a.combine:
        runs = [combined_run(f) for f in a.combine]
        if len({(r["db"], tuple(r["tracers"])) for r in runs}) != 1:
            sys.exit("fio-pack bench capture: --combine: the files are of different databases or tracers")
        text = report(runs)
        print(text)
        if a.output:
            outputs.write_output(a.output, text, "--output")
        return 0
    tracers = [t for t in a.tracers.split(",") if t]
    if not tracers or any(t not in ("strace", "bpf", "bpf-hooks") for t in tracers):
        sys.exit("fio-pack bench capture: --tracers: strace, bpf and/or bpf-hooks, "
                 "comma-separated")
    if os.geteuid() != 0:
        sys.exit("fio-pack bench capture: run as root")
    run = {"db": a.db, "argv": sys.argv[1:] if argv is None else argv, "tracers": tracers,
           "nproc": os.cpu_count(), "load_before": load_now(),
           "start": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rounds": []}
    base = Path(tempfile.mkdtemp(prefix="bench-capture.", dir="/tmp"))
    db = (PostgreSQL if a.db == "postgresql" else MariaDB)(base, a)
    kinds = ["alone"] + tracers
    stats_knob = Path("/proc/sys/kernel/bpf_stats_enabled")
    stats_was = stats_knob.read_text().strip() if a.bpf_stats else None
    try:
        if a.bpf_stats:
            stats_knob.write_text("1\n")
        pid = db.start()
        run["setup"] = db.setup_text()
        for k in range(a.rounds):
            order = kinds[k % len(kinds):] + kinds[:k % len(kinds)]
            got = {}
            for kind in order:
                if kind == "alone":
                    tps, dbcpu = bench_cpu(db, pid)
                    got[kind] = {"tps": tps, **dbcpu}
                else:
                    tps, facts = (hooks_only(db, pid, base) if kind == "bpf-hooks" else
                                  captured(db, pid, kind, base))
                    got[kind] = {"tps": tps, **facts}
                print(f"round {k + 1}: {kind} {got[kind]['tps']:.0f} tps", file=sys.stderr)
            run["rounds"].append(got)
    finally:
        if stats_was is not None:
            stats_knob.write_text(stats_was + "\n")
        db.stop()
        shutil.rmtree(base, ignore_errors=True)
    run["end"] = time.strftime("%H:%M UTC", time.gmtime())
    run["load_after"] = load_now()
    if a.json:
        outputs.write_output(a.json, json.dumps(run, indent=1) + "\n", "--json")
    text = report([run])
    print(text)
    if a.output:
        outputs.write_output(a.output, text, "--output")
    return 0

