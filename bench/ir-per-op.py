#!/usr/bin/env python3
"""User-space instructions per operation of a command, under callgrind.

The command runs twice under `valgrind --tool=callgrind --trace-children=yes`,
with N and with 2N operations (every @N@ in its arguments replaced by the
count), and the report is (Ir(2N) - Ir(N)) / N: start-up, option parsing,
a trace's check pass and fio's clock calibration cancel out, what is left
is what one more operation costs. Instruction counts do not depend on the
machine's load, so this is the measure to work with on a busy machine
(docs/benchmarks-cpu.md). The kernel's side of a
system call is not counted (callgrind sees user space only).

    bench/ir-per-op.py [--top K] [--fresh BASE] [--before-clock FUNCTION]
        N COMMAND ARGS...

@DIR@ in ARGS is a new empty directory below BASE (--fresh) for each of
the two runs (a layout that must start from nothing), removed afterwards.
--top K also lists the instructions per operation of each program and
library (fio's own share beside the engine's and libc's) and the K
functions whose instructions grow most per operation. --before-clock
FUNCTION (repeatable) also prints the total without FUNCTION and all it
calls: what runs before fio's job clock starts (dbreplay's check pass in
dbr_init, fio's loading of an iolog in init_iolog), so that the figure
is the job clock's. valgrind 3.19 does not know openat2: the engines and minloop
then open with openat (their path for kernels before 5.6), which changes
no instruction count of their own that matters here.

Example (smallfile's warm reads, fio's null engine with the same job shape,
and minloop, on a laid-out 100,000-file tree):

    bench/ir-per-op.py 50000 build/fio-3.33/fio --name=b \\
        --ioengine=external:build/fio-3.33/smallfile.so --tree_dir=/srv/t \\
        --tree_files=100000 --bs=4k --tree_file_op=read --rw=randread \\
        --norandommap=1 --number_ios=@N@
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

LINE = re.compile(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)$")


def annotate(f, inclusive):
    """(Ir, 'file:function [object]') of one callgrind output file."""
    txt = subprocess.run(["callgrind_annotate", "--auto=no",
                          "--inclusive=" + ("yes" if inclusive else "no"),
                          "--threshold=100", f], check=True, capture_output=True,
                         text=True).stdout
    for line in txt.splitlines():
        m = LINE.match(line)
        if m and "PROGRAM TOTALS" not in line:
            yield int(m.group(1).replace(",", "")), m.group(2)


def functions(out_files):
    """Ir by 'file:function [object]' over callgrind output files."""
    ir = {}
    for f in out_files:
        for v, k in annotate(f, False):
            ir[k] = ir.get(k, 0) + v
    return ir


def inclusive(out_files, names):
    """The instructions of each function of @names with all it calls, over
    the output files. A function appears more than once where its code came
    from several files (its inlined parts; the same source named by a
    relative and an absolute path): the largest entry holds the others."""
    total = dict.fromkeys(names, 0)
    for f in out_files:
        entries = list(annotate(f, True))
        for name in names:
            pat = re.compile(r"(.*:)?%s( \[.*\])?$" % re.escape(name))
            total[name] += max((v for v, k in entries if pat.match(k)), default=0)
    return total


def run(cmd, n, work, fresh, tag, before_clock):
    """The command with @N@ = n under callgrind: Ir by function, and the
    inclusive Ir of the functions of @before_clock."""
    d = tempfile.mkdtemp(prefix="ir-per-op.", dir=fresh) if fresh else None
    args = [a.replace("@N@", str(n)).replace("@DIR@", d or "@DIR@") for a in cmd]
    prefix = os.path.join(work, tag)
    try:
        res = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                              "--callgrind-out-file=%s.%%p" % prefix] + args,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if res.returncode:
            sys.exit("ir-per-op: %s exited with %d: %s" % (
                args[0], res.returncode, res.stderr.strip().splitlines()[-1:]))
    finally:
        if d:
            shutil.rmtree(d, ignore_errors=True)
    outs = glob.glob(prefix + ".*")
    return functions(outs), inclusive(outs, before_clock)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=0, metavar="K")
    ap.add_argument("--fresh", metavar="BASE", help="where @DIR@ directories are made")
    ap.add_argument("--before-clock", action="append", default=[], metavar="FUNCTION",
                    help="work done before fio's job clock starts: FUNCTION's instructions, "
                    "with all it calls, are also left out of a second total (dbreplay's "
                    "check pass: dbr_init; fio's loading of an iolog: init_iolog)")
    ap.add_argument("n", type=int, metavar="N")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if a.n < 1 or not a.cmd:
        ap.error("give N >= 1 and a command")
    if not any("@N@" in c for c in a.cmd):
        ap.error("the command must contain @N@ (the operation count)")
    if any("@DIR@" in c for c in a.cmd) and not a.fresh:
        ap.error("@DIR@ needs --fresh BASE")
    work = tempfile.mkdtemp(prefix="ir-per-op.")
    try:
        small, small_incl = run(a.cmd, a.n, work, a.fresh, "n1", a.before_clock)
        big, big_incl = run(a.cmd, 2 * a.n, work, a.fresh, "n2", a.before_clock)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per = {k: (big.get(k, 0) - small.get(k, 0)) / a.n for k in set(small) | set(big)}
    print("%.0f instructions per operation (N=%d)" % (sum(per.values()), a.n))
    if a.before_clock:
        before = sum((big_incl[f] - small_incl[f]) / a.n for f in a.before_clock)
        print("%.0f instructions per operation on the job clock (less %s: %.0f)"
              % (sum(per.values()) - before, " + ".join(a.before_clock), before))
    if a.top:
        # by program or library: fio's own share beside the engine's and libc's
        objs = {}
        for k, v in per.items():
            m = re.search(r"\[([^\]]+)\]\s*$", k)
            o = os.path.basename(m.group(1)) if m else "(inlined, object not named)"
            objs[o] = objs.get(o, 0) + v
        for o, v in sorted(objs.items(), key=lambda kv: -abs(kv[1])):
            if abs(v) >= 1:
                print("%9.1f  [%s]" % (v, o))
    for k, v in sorted(per.items(), key=lambda kv: -abs(kv[1]))[:a.top]:
        print("%9.1f  %s" % (v, k))


if __name__ == "__main__":
    main()
