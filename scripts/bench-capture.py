#!/usr/bin/python3
"""bench-capture.py - what a strace capture costs a running database

SYNOPSIS
    sudo scripts/bench-capture.py [--pairs N] [--seconds S] [--scale K]
                                  [--clients C] [--output FILE.md]

DESCRIPTION
    Starts a private PostgreSQL 15 cluster (initdb in a temporary directory,
    no TCP listener), loads pgbench's tables at scale K, then runs N pairs,
    interleaved: pgbench -c C -j C -T S alone, then the same while
    scripts/dbcapture.py attach traces the postmaster (strace -f), as a DBA
    would capture production. Reports each run's tps, each pair's ratio
    (captured / alone) and the median, with the command lines used, as
    Markdown (stdout, and --output). The cluster is removed at the end.

    A benchmark, not a test: the machine is shared; run it on a quiet one.
    Needs root (runs PostgreSQL as user postgres) and Debian's postgresql-15.
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


def pgbench(base, seconds, clients):
    cmd = [*AS_PG, "pgbench", "-h", str(base), "-c", str(clients), "-j", str(clients),
           "-T", str(seconds), "postgres"]
    out = run(cmd, base).stdout
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out) or \
        re.search(r"tps = ([\d.]+)", out)
    if not m:
        sys.exit(f"bench-capture: no tps in pgbench's output:\n{out}")
    return float(m.group(1)), cmd


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].split(" - ")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3, help="alone/captured pairs (default 3)")
    ap.add_argument("--seconds", type=int, default=20, help="pgbench -T (default 20)")
    ap.add_argument("--scale", type=int, default=10, help="pgbench -i -s (default 10)")
    ap.add_argument("--clients", type=int, default=2, help="pgbench -c and -j (default 2)")
    ap.add_argument("--output", help="also write the Markdown report here")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("bench-capture: run as root (PostgreSQL runs as user postgres)")
    if not (PG_BIN / "initdb").exists():
        sys.exit("bench-capture: no PostgreSQL 15 (apt-get install postgresql)")
    base = Path(tempfile.mkdtemp(prefix="bench-capture.", dir="/tmp"))
    os.chmod(base, 0o755)
    shutil.chown(base, "postgres")
    data = base / "data"
    opts = f"-k {base} -c listen_addresses= -c shared_buffers=128MB"
    ctl = [*AS_PG, str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(base / "log")]
    rows = []
    try:
        run([*AS_PG, str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
            base)
        run([*ctl, "-w", "start"], base)
        run([*AS_PG, "pgbench", "-h", str(base), "-i", "-s", str(a.scale), "-q", "postgres"],
            base)
        pid = int((data / "postmaster.pid").read_text().split()[0])
        capture_cmd = [sys.executable, str(REPO / "scripts" / "dbcapture.py"), "attach",
                       "--datadir", str(data), "--db", "postgresql", "--pid", str(pid),
                       "--source", "bench-capture.py", "-o", str(base / "pg.trace.gz")]
        for k in range(a.pairs):
            alone, bench_cmd = pgbench(base, a.seconds, a.clients)
            ready = base / "ready"
            if ready.exists():
                ready.unlink()
            cap = subprocess.Popen(capture_cmd + ["--ready", str(ready)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, cwd=base)
            t0 = time.monotonic()
            while not ready.exists():
                if cap.poll() is not None or time.monotonic() - t0 > 60:
                    sys.exit(f"bench-capture: strace did not attach: {cap.communicate()[1]}")
                time.sleep(0.05)
            captured, _ = pgbench(base, a.seconds, a.clients)
            cap.send_signal(signal.SIGINT)
            cap.communicate(timeout=600)
            rows.append((alone, captured))
            print(f"pair {k + 1}: alone {alone:.0f} tps, captured {captured:.0f} tps",
                  file=sys.stderr)
    finally:
        run([*ctl, "-m", "immediate", "-w", "stop"], base, check=False)
        shutil.rmtree(base, ignore_errors=True)
    ratios = [c / s for s, c in rows]
    out = ["| pair | alone (tps) | under strace capture (tps) | captured / alone |",
           "|---|---|---|---|"]
    out += [f"| {i + 1} | {s:.0f} | {c:.0f} | {c / s:.2f} |" for i, (s, c) in enumerate(rows)]
    out += ["", f"Median captured / alone: **{statistics.median(ratios):.2f}** "
                f"({1 / statistics.median(ratios):.1f}x slower).", "",
            "Commands: " + f"`{shlex.join(map(str, bench_cmd))}` (PostgreSQL 15, initdb "
            f"defaults but shared_buffers=128MB, pgbench -i -s {a.scale}); the capture: "
            "`scripts/dbcapture.py attach --datadir DATA --db postgresql --pid POSTMASTER`; "
            f"this report: `{shlex.join(['scripts/bench-capture.py'] + (argv or sys.argv[1:]))}`."]
    text = "\n".join(out) + "\n"
    print(text)
    if a.output:
        Path(a.output).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
