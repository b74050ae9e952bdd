#!/usr/bin/python3
"""bench-capture.py - what a capture costs a running database: strace and BPF

SYNOPSIS
    sudo scripts/bench-capture.py [--db postgresql|mariadb] [--rounds N]
                                  [--seconds S] [--scale K] [--clients C]
                                  [--tracers strace,bpf] [--output FILE.md]

DESCRIPTION
    Starts a private database server (PostgreSQL 15: initdb in a temporary
    directory; MariaDB: mariadb-install-db, Debian's defaults, so io_uring
    on), no TCP listener, loads a benchmark's tables, then runs N rounds.
    Each round runs the benchmark alone and under each tracer's capture
    (scripts/dbcapture.py attach --tracer T on the server's process), in an
    order that rotates from round to round, as a DBA would capture
    production. The benchmark is pgbench -c C -j C -T S (scale K) for
    PostgreSQL, sysbench oltp_read_write --threads=C --time=S (K tables of
    10,000 rows) for MariaDB.

    Reports each run's tps, the ratio of each captured run to the round's
    run alone and their medians, the BPF capture's events per second and
    its user-space CPU time, and whether the trace is complete, with the
    command lines used, as Markdown (stdout, and --output). The server is
    removed at the end.

    A benchmark, not a test: the machine is shared; run it on a quiet one.
    Needs root, and Debian's postgresql-15 or mariadb-server and sysbench.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PG_BIN = Path("/usr/lib/postgresql/15/bin")
AS_PG = ["runuser", "-u", "postgres", "--"]


def run(cmd, cwd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=3600)
    if check and r.returncode:
        sys.exit(f"bench-capture: {shlex.join(map(str, cmd))} failed: {r.stderr.strip()}")
    return r


class PostgreSQL:
    name = "PostgreSQL 15"

    def __init__(self, base: Path, a):
        self.base, self.a = base, a
        os.chmod(base, 0o755)
        shutil.chown(base, "postgres")
        self.data = base / "data"
        opts = f"-k {base} -c listen_addresses= -c shared_buffers=128MB"
        self.ctl = [*AS_PG, str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l",
                    str(base / "log")]
        if not (PG_BIN / "initdb").exists():
            sys.exit("bench-capture: no PostgreSQL 15 (apt-get install postgresql)")

    def start(self):
        run([*AS_PG, str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U",
             "postgres"], self.base)
        run([*self.ctl, "-w", "start"], self.base)
        run([*AS_PG, "pgbench", "-h", str(self.base), "-i", "-s", str(self.a.scale), "-q",
             "postgres"], self.base)
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def bench(self):
        cmd = [*AS_PG, "pgbench", "-h", str(self.base), "-c", str(self.a.clients), "-j",
               str(self.a.clients), "-T", str(self.a.seconds), "postgres"]
        out = run(cmd, self.base).stdout
        m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out) or \
            re.search(r"tps = ([\d.]+)", out)
        if not m:
            sys.exit(f"bench-capture: no tps in pgbench's output:\n{out}")
        return float(m.group(1)), cmd

    def stop(self):
        run([*self.ctl, "-m", "immediate", "-w", "stop"], self.base, check=False)

    def setup_text(self):
        return (f"PostgreSQL 15, initdb defaults but shared_buffers=128MB, pgbench -i -s "
                f"{self.a.scale}; the benchmark `pgbench -c {self.a.clients} -j "
                f"{self.a.clients} -T {self.a.seconds}`")


class MariaDB:
    name = "MariaDB"

    def __init__(self, base: Path, a):
        self.base, self.a = base, a
        self.data, self.sock = base / "data", base / "sock"
        self.proc = None
        if not shutil.which("mariadbd") or not shutil.which("sysbench"):
            sys.exit("bench-capture: no MariaDB or sysbench (apt-get install mariadb-server "
                     "sysbench)")

    def sql(self, q, check=True):
        return run(["mariadb", f"--socket={self.sock}", "-uroot", "-e", q], self.base, check)

    def start(self):
        run(["mariadb-install-db", "--no-defaults", "--user=root", f"--datadir={self.data}",
             "--auth-root-authentication-method=normal", "--skip-test-db"], self.base)
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", "--user=root", f"--datadir={self.data}",
             f"--socket={self.sock}", "--skip-networking", f"--log-error={self.base}/error.log",
             "--innodb-buffer-pool-size=128M"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while self.sql("SELECT 1", check=False).returncode:
            if self.proc.poll() is not None or time.monotonic() - t0 > 120:
                sys.exit("bench-capture: mariadbd did not start: "
                         + (self.base / "error.log").read_text()[-2000:])
            time.sleep(0.2)
        self.sql("CREATE DATABASE sbtest")
        run(["sysbench", "oltp_read_write", *self.sb(), "prepare"], self.base)
        self.version = (self.base / "error.log").read_text()
        return self.proc.pid

    def sb(self):
        return ["--db-driver=mysql", f"--mysql-socket={self.sock}", "--mysql-user=root",
                f"--tables={self.a.scale}", "--table-size=10000"]

    def bench(self):
        cmd = ["sysbench", "oltp_read_write", *self.sb(), f"--threads={self.a.clients}",
               f"--time={self.a.seconds}", "run"]
        out = run(cmd, self.base).stdout
        m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out)
        if not m:
            sys.exit(f"bench-capture: no tps in sysbench's output:\n{out}")
        return float(m.group(1)), cmd

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.sql("SHUTDOWN", check=False)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def setup_text(self):
        aio = "io_uring" if "Using io_uring" in self.version else "native AIO"
        return (f"MariaDB as Debian configures it ({aio}), innodb_buffer_pool_size=128M, "
                f"sysbench prepare of {self.a.scale} tables of 10,000 rows; the benchmark "
                f"`sysbench oltp_read_write --threads={self.a.clients} --time={self.a.seconds}`")


def captured(db, pid, tracer, base):
    """The benchmark under `dbcapture.py attach --tracer TRACER`: (tps, notes)."""
    ready = base / "ready"
    ready.unlink(missing_ok=True)
    cmd = [sys.executable, str(REPO / "scripts" / "dbcapture.py"), "attach", "--datadir",
           str(db.data), "--db", "postgresql" if isinstance(db, PostgreSQL) else "mariadb",
           "--pid", str(pid), "--tracer", tracer, "--source", "bench-capture.py",
           "-o", str(base / "bench.trace.gz"), "--ready", str(ready)]
    cap = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           cwd=base)
    t0 = time.monotonic()
    while not ready.exists():
        if cap.poll() is not None or time.monotonic() - t0 > 60:
            sys.exit(f"bench-capture: the {tracer} capture did not attach: "
                     f"{cap.communicate()[1]}")
        time.sleep(0.05)
    tps, _ = db.bench()
    cap.send_signal(signal.SIGINT)
    _, err = cap.communicate(timeout=1800)
    info = {"complete": cap.returncode == 0, "rc": cap.returncode}
    m = re.search(r"the BPF capture: (\d+) events in ([\d.]+) s, ([\d.]+) s of CPU", err)
    if m:
        info["events_per_s"] = int(m.group(1)) / float(m.group(2))
        info["cpu_s"] = float(m.group(3))
        info["span_s"] = float(m.group(2))
    if cap.returncode not in (0, 3):
        sys.exit(f"bench-capture: the {tracer} capture failed: {err.strip()[-2000:]}")
    return tps, info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].split(" - ")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__[__doc__.index("DESCRIPTION"):])
    ap.add_argument("--db", choices=("postgresql", "mariadb"), default="postgresql")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--seconds", type=int, default=20, help="benchmark seconds (default 20)")
    ap.add_argument("--scale", type=int, default=10,
                    help="pgbench scale, or sysbench tables (default 10)")
    ap.add_argument("--clients", type=int, default=2, help="clients (default 2)")
    ap.add_argument("--tracers", default="strace,bpf",
                    help="comma-separated: strace, bpf (default both)")
    ap.add_argument("--output", help="also write the Markdown report here")
    a = ap.parse_args(argv)
    tracers = [t for t in a.tracers.split(",") if t]
    if not tracers or any(t not in ("strace", "bpf") for t in tracers):
        sys.exit("bench-capture: --tracers: strace and/or bpf, comma-separated")
    if os.geteuid() != 0:
        sys.exit("bench-capture: run as root")
    base = Path(tempfile.mkdtemp(prefix="bench-capture.", dir="/tmp"))
    db = (PostgreSQL if a.db == "postgresql" else MariaDB)(base, a)
    kinds = ["alone"] + tracers
    rounds = []
    try:
        pid = db.start()
        for k in range(a.rounds):
            order = kinds[k % len(kinds):] + kinds[:k % len(kinds)]
            got = {}
            for kind in order:
                if kind == "alone":
                    got[kind] = (db.bench()[0], {})
                else:
                    got[kind] = captured(db, pid, kind, base)
                print(f"round {k + 1}: {kind} {got[kind][0]:.0f} tps", file=sys.stderr)
            rounds.append(got)
    finally:
        db.stop()
        shutil.rmtree(base, ignore_errors=True)
    head = "| round | alone (tps) | " + " | ".join(
        f"{t} capture (tps) | {t} / alone" for t in tracers) + " |"
    out = [head, "|" + "---|" * (2 + 2 * len(tracers))]
    for i, r in enumerate(rounds):
        cells = [f"{r[t][0]:.0f} | {r[t][0] / r['alone'][0]:.2f}" for t in tracers]
        out.append(f"| {i + 1} | {r['alone'][0]:.0f} | " + " | ".join(cells) + " |")
    out.append("")
    for t in tracers:
        med = statistics.median(r[t][0] / r["alone"][0] for r in rounds)
        line = f"- {t}: median captured / alone **{med:.2f}** (costs {100 * (1 - med):.0f}% of tps)"
        if t == "bpf":
            eps = [r[t][1]["events_per_s"] for r in rounds if "events_per_s" in r[t][1]]
            cpu = [r[t][1]["cpu_s"] / r[t][1]["span_s"] for r in rounds if "cpu_s" in r[t][1]]
            if eps:
                line += (f"; {statistics.median(eps):,.0f} events/s captured, the tool's user-space"
                         f" CPU {100 * statistics.median(cpu):.1f}% of one core")
        incomplete = sum(1 for r in rounds if not r[t][1].get("complete"))
        line += f"; traces incomplete: {incomplete} of {len(rounds)}"
        out.append(line)
    out += ["", f"Set-up: {db.setup_text()}; each round runs alone and each capture in a "
                "rotating order. Captures: `scripts/dbcapture.py attach --datadir DATA --db "
                f"{a.db} --pid SERVER --tracer T`. This report: "
                f"`{shlex.join(['scripts/bench-capture.py'] + (argv or sys.argv[1:]))}`."]
    text = "\n".join(out) + "\n"
    print(text)
    if a.output:
        Path(a.output).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
