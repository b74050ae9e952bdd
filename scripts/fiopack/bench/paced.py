"""fio-pack bench dbreplay --paced: the shipped traces (jobs/dbreplay-*.fio)
at their captured pace (dbr_timing=original) on a tmpfs and on a loop
device: how late each record was issued, and how far behind the trace's end
the replay finished. Its manual is DESCRIPTION below, the PACED MODE
section of `fio-pack bench dbreplay --help`; the options are
bench/dbreplay.py's."""

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from fiopack import REPO
from fiopack.bench import harness
from fiopack.bench.harness import Report, fs_of, log, machine_info, run


DESCRIPTION = """\
    --paced: the shipped traces at their captured pace, instead of parts A-C.
    Each jobs/dbreplay-NAME.fio (its trace in jobs/dbreplay/traces/) runs
    as shipped except dbr_timing=original (the pgbench file's own
    [original] job; in the others dbr_timing=asap becomes original), from
    the repository root, with DBR_DIR on each target and DBR_REPORT a
    private file:
      tmpfs      a fresh tmpfs mounted by this script;
      loop-ext4  fio-pack bench cold's loop device: an image of --image-mib below
                 --image-dir written in full from /dev/urandom, `losetup
                 --direct-io=on`, and a fresh mkfs.ext4 + mount before every
                 run.
    --repeats rounds, the targets alternating (tmpfs first in odd rounds,
    the loop device first in even ones). From the engine's report line:
    lag p50 / p99 / max (how late each record was issued against its
    captured time), behind_at_end_ns (how far behind the trace's end the
    replay finished), replay and trace durations. A target keeps up with a
    trace when it ends near the schedule; the report prints the figures and
    judges nothing.
"""


def paced_jobfile(name, src, dst):
    """The shipped job file with dbr_timing=original; returns fio's extra args."""
    with open(src) as f:
        text = f.read()
    if "[original]" in text:
        with open(dst, "w") as f:
            f.write(text)
        return ["--section=original"]
    if "dbr_timing=asap" not in text:
        raise RuntimeError("%s: no dbr_timing=asap to turn into original" % src)
    with open(dst, "w") as f:
        f.write(text.replace("dbr_timing=asap", "dbr_timing=original"))
    return []


def paced_run(a, work, name, job, extra, target, label):
    repfile = os.path.join(work, "%s-%s.report" % (name, label))
    if os.path.exists(repfile):
        os.unlink(repfile)
    subprocess.run(["sync"], check=True)
    out, err, wall = run(["env", "DBR_DIR=" + target, "DBR_REPORT=" + repfile, a.fio,
                          "--output-format=json", job] + extra, cwd=REPO)
    with open(repfile) as f:
        lines = [json.loads(x) for x in f.read().splitlines() if x.strip()]
    if len(lines) != 1:
        raise RuntimeError("%s on %s: %d report lines" % (name, label, len(lines)))
    r = lines[0]
    if r["timing"] != "original" or r["errors"] or r["replayed"] != r["trace_records"]:
        raise RuntimeError("%s on %s: timing %s, %s errors, %s of %s records" % (
            name, label, r["timing"], r["errors"], r["replayed"], r["trace_records"]))
    x = {"trace": name, "target": label, "records": r["replayed"],
         "trace_ms": r["trace_duration_ns"] / 1e6, "replay_ms": r["replay_duration_ns"] / 1e6,
         "behind_ms": r["behind_at_end_ns"] / 1e6, "lag_p50_ms": r["lag"]["p50_ns"] / 1e6,
         "lag_p99_ms": r["lag"]["p99_ns"] / 1e6, "lag_max_ms": r["lag"]["max_ns"] / 1e6,
         "wall": wall, "stderr_summary": [ln for ln in err.splitlines()
                                          if ln.startswith("dbreplay: ") and "lag" in ln]}
    log("%s on %s: lag p50 %.3f ms p99 %.3f ms max %.3f ms, behind at end %.3f ms "
        "(trace %.0f ms, replay %.0f ms)" % (name, label, x["lag_p50_ms"], x["lag_p99_ms"],
                                            x["lag_max_ms"], x["behind_ms"], x["trace_ms"],
                                            x["replay_ms"]))
    return x


def paced_table(rep, names, runs):
    """The lag of each trace on each target: median (min-max) over runs."""
    rows = []
    for n in names:
        for t in ("tmpfs", "loop-ext4"):
            xs = [x for x in runs if x["trace"] == n and x["target"] == t]
            if not xs:
                continue

            def tr(key):
                v = [x[key] for x in xs]
                return "%.3f (%.3f–%.3f)" % (statistics.median(v), min(v), max(v))
            rows.append([n, t, "{:,}".format(xs[0]["records"]), "%.0f" % xs[0]["trace_ms"],
                         tr("lag_p50_ms"), tr("lag_p99_ms"), tr("lag_max_ms"),
                         tr("behind_ms"), "%d" % len(xs)])
    rep.table(["trace", "target", "records", "trace ms", "lag p50 ms median (min–max)",
               "lag p99 ms", "lag max ms", "behind at end ms", "runs"], rows)


def main(a, argv):
    harness.unwind_on_signals()
    t_start = time.monotonic()
    work = tempfile.mkdtemp(prefix="bdr-paced.", dir="/tmp")
    names = sorted(f[len("dbreplay-"):-len(".fio")] for f in os.listdir(os.path.join(REPO, "jobs"))
                   if f.startswith("dbreplay-") and f.endswith(".fio"))
    if a.traces:
        names = [n for n in names if n in a.traces.split(",")]
    rep = Report()
    cmdline = "sudo scripts/fio-pack bench dbreplay" + (
        " " + " ".join(argv) if argv else "")
    results = {"command": cmdline, "runs": []}
    rep.add("### Paced replays (dbr_timing=original), run of %s" % time.strftime(
        "%Y-%m-%d %H:%M %Z"))
    rep.add()
    rep.add("Command: `%s`" % cmdline)
    rep.add()
    fio_version = run([a.fio, "--version"])[0].strip()
    git = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    mi = [row for row in machine_info(a, fio_version) if row[0] not in ("engine",)]
    mi.append(("engine", "build/dbreplay.so as the job files name it, commit %s" % (git or "?")))
    rep.table(["machine", ""], mi)
    places = harness.Places("bdr.", 256)
    dev = None
    error = None
    try:
        mp = places.mount_tmpfs(1 << 30)
        dev = harness.LoopDevice(a.image_dir, a.image_mib)
        dev.setup()
        rep.add("Targets: **tmpfs** mounted at %s by this script; **loop-ext4**: %s over a "
                "%d MiB image in %s (%s) written in full from /dev/urandom, `losetup "
                "--direct-io=on`, a fresh mkfs.ext4 + mount before every run."
                % (mp, dev.dev, a.image_mib, a.image_dir, fs_of(a.image_dir)))
        rep.add()
        jobs = {}
        for n in names:
            dst = os.path.join(work, "dbreplay-%s.fio" % n)
            jobs[n] = (dst, paced_jobfile(n, os.path.join(REPO, "jobs", "dbreplay-%s.fio" % n),
                                          dst))
        for r in range(a.repeats):
            targets = ["tmpfs", "loop-ext4"] if r % 2 == 0 else ["loop-ext4", "tmpfs"]
            for n in names:
                for t in targets:
                    if t == "tmpfs":
                        d = os.path.join(mp, "r")
                        shutil.rmtree(d, ignore_errors=True)
                        os.mkdir(d)
                    else:
                        d = dev.mkfs_mount("ext4")
                    x = paced_run(a, work, n, jobs[n][0], jobs[n][1], d, t)
                    x["repeat"] = r + 1
                    results["runs"].append(x)
        dev.umount()
        paced_table(rep, names, results["runs"])
    except BaseException as e:
        error = "%s: %s" % (type(e).__name__, e)
        log("error: " + error)
    finally:
        if dev:
            dev.cleanup()
        places.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    rep.add("Total time of the run: %.0f s; load average at the end: %s." % (
        time.monotonic() - t_start, " ".join("%.2f" % x for x in os.getloadavg())))
    harness.save_report(a, rep, results, error)
    return 1 if error else 0
