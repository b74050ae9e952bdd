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
from fiopack.bench import harness, ondevice
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
    With --device MODEL the one target is a modeled device instead
    (fio-pack device up MODEL, its backing file of --image-mib in a tmpfs of
    its own: bench/ondevice.py), a fresh mkfs.ext4 + mount before every
    run, and each run also says what the device did over the replay (from
    `fio-pack device stats` before and after): its requests and the model's
    utilisation over the whole fio run (the files the engine lays out
    before the replay included), which is near 1 where the device is what
    held the replay back.
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


def paced_run(a, work, name, job, extra, target, label, dev=None):
    repfile = os.path.join(work, "%s-%s.report" % (name, label.replace("/", "_")))
    if os.path.exists(repfile):
        os.unlink(repfile)
    subprocess.run(["sync"], check=True)
    s0 = dev.stats() if dev is not None else None
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
    if s0 is not None:
        # over the whole fio run: the device also serves what the engine
        # lays out before the replay (the files a trace reads), which the
        # replay's own duration leaves out
        x["device"] = ondevice.stats_delta(s0, dev.stats(), wall)
    log("%s on %s: lag p50 %.3f ms p99 %.3f ms max %.3f ms, behind at end %.3f ms "
        "(trace %.0f ms, replay %.0f ms)" % (name, label, x["lag_p50_ms"], x["lag_p99_ms"],
                                            x["lag_max_ms"], x["behind_ms"], x["trace_ms"],
                                            x["replay_ms"]))
    return x


def paced_table(rep, names, runs, targets):
    """The lag of each trace on each target: median (min-max) over runs;
    on a modeled device, what the device did too."""
    rows = []
    modeled = any("device" in x for x in runs)
    for n in names:
        for t in targets:
            xs = [x for x in runs if x["trace"] == n and x["target"] == t]
            if not xs:
                continue

            def tr(key, f=lambda x, key: x[key], fmt="%.3f"):
                v = [f(x, key) for x in xs]
                return ("%s (%s–%s)" % (fmt, fmt, fmt)) % (statistics.median(v), min(v), max(v))
            dev = [tr("read", lambda x, k: x["device"][k] + x["device"]["write"]
                      + x["device"]["flush"], "%.0f"),
                   tr("utilisation", lambda x, k: x["device"][k], "%.2f")] if modeled else []
            rows.append([n, t, "{:,}".format(xs[0]["records"]), "%.0f" % xs[0]["trace_ms"],
                         tr("lag_p50_ms"), tr("lag_p99_ms"), tr("lag_max_ms"),
                         tr("behind_ms"), "%d" % len(xs)] + dev)
    rep.table(["trace", "target", "records", "trace ms", "lag p50 ms median (min–max)",
               "lag p99 ms", "lag max ms", "behind at end ms", "runs"]
              + (["device requests", "device utilisation"] if modeled else []), rows)


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
    target_names = [a.device] if a.device else ["tmpfs", "loop-ext4"]
    try:
        if a.device:
            dev = ondevice.ModeledDevice(a.device, a.image_mib)
            dev.setup()
            rep.add("Target: **%s**, the modeled device %s, a fresh mkfs.ext4 + mount before "
                    "every run." % (a.device, dev.describe()))
        else:
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
            targets = target_names if r % 2 == 0 else target_names[::-1]
            for n in names:
                for t in targets:
                    if t == "tmpfs":
                        d = os.path.join(mp, "r")
                        shutil.rmtree(d, ignore_errors=True)
                        os.mkdir(d)
                    else:
                        d = dev.mkfs_mount("ext4")
                    x = paced_run(a, work, n, jobs[n][0], jobs[n][1], d, t,
                                  dev if a.device else None)
                    x["repeat"] = r + 1
                    results["runs"].append(x)
        dev.umount()
        paced_table(rep, names, results["runs"], target_names)
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
