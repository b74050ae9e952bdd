"""Cold whole-file reads of the smallfile engine on a real block device.

Run as root (it makes a loop device, file systems and mounts):

    sudo scripts/fio-pack bench cold --quick

See --help. The helpers (command runner, Markdown tables, machine
description, signal unwinding) are fio-pack bench smallfile's, imported.
Only the Python standard library is used.
"""

import os
import statistics
import subprocess
import sys
import time

from fiopack.bench import harness, ondevice
from fiopack.options import number, number_list, size
from fiopack.bench.harness import (LoopDevice, Report, fio_json, fmt_rate, log, machine_info,
                                     run, run_peak_rss, stats)
from fiopack.device.state import Error

DESCRIPTION = """\
NAME
    fio-pack bench cold - cold whole-file reads of the smallfile engine (sync and
    io_uring) against what the block device under them can serve

SYNOPSIS
    sudo scripts/fio-pack bench cold [--quick] [--output FILE]
         [--fs ext4,xfs] [--files N] [--ios M] [--device MODEL]
         [more options below]

DESCRIPTION
    Builds its own device: an image file below --image-dir written in full
    first (dd oflag=direct from /dev/urandom, or /dev/zero with --fill
    zero: reads of holes would never reach the disk, and zero blocks may be
    served without it by thin or deduplicating storage under a VM, which
    would inflate the device's limit), attached with `losetup
    --direct-io=on`, so every read the file system makes goes to the disk
    under the image and not to a second page cache.

    Per file system of --fs (a fresh mkfs of the loop device per series,
    mounted below a private /tmp/bench-cold.XXXXXX): the engine lays out
    --files files of SIZE bytes (tree_file_op=layout, tree_file_size_dist=fixed:SIZE,
    bs=SIZE; --size-dist for other sizes, --tree-opts for the tree's
    shape), `sync`; then --repeats rounds, each in the order of the
    round before reversed (so a shared machine's drift hits everything
    alike), of these runs, alternating:

    * the device's limit: fio's own io_uring engine on the raw loop device
      (--readonly --direct=1 --rw=randread --bs=SIZE, the engine's request
      size) at each of --dev-depths, --dev-runtime seconds each: IOPS;

    * single cold passes of the engine: before each one `sync` and
      `echo 3 > /proc/sys/vm/drop_caches`, then one fio run of
      tree_file_op=read rw=randread randrepeat=0 number_ios=--ios (fewer than
      the files: each file is read at most once per job), in each mode:
      sync iodepth 1; io_uring at each of --depths; sync with numjobs at
      each of --sync-jobs (number_ios split between the jobs,
      group_reporting; the jobs pick their files independently, so a few
      files are read by two jobs, the second time from the page cache: the
      reads/file column shows it).

    Per pass: files/s (read.total_ios / read.runtime), clat p50 and p99 of
    the whole-file operation, device reads per file (the delta of
    /sys/block/loopN/stat's reads completed over the pass, divided by the
    files read), and the limit for it: the series' median device IOPS at
    the mode's number of requests in flight (iodepth, or numjobs; the
    nearest depth measured) divided by the reads per file, and the ratio
    of files/s to that limit.

    --device MODEL: the device is a modeled one instead (fio-pack device up
    MODEL --size --image-mib, docs/devices.md), its backing file in a tmpfs
    of its own (so drop_caches never sends the daemon to the host's disk,
    and the host's disk never adds to the model's time): a device whose
    limit is the model's, well under the CPU's. The reads per file and the
    device's utilisation then come from `fio-pack device stats` taken
    before and after each run: the model's read requests, and its servers'
    busy share over the run (service time / (servers x fio's runtime)),
    for the passes and for the device runs alike.

    Everything is undone on every exit path (errors, Ctrl-C, SIGTERM,
    SIGHUP): unmount, losetup -d (or fio-pack device down), the image
    removed, the private directory removed.

GOALS (docs/benchmarks.md, docs/devices.md)
    io_uring iodepth 32 >= 0.8 x the limit at depth 32 and >= sync with 32
    jobs; io_uring iodepth 1 >= sync iodepth 1; with --device, the device's
    utilisation during the io_uring iodepth 32 passes >= 0.9.
"""

EPILOG = """\
QUICK MODE
    --quick: 20,000 files, 4,000 reads a pass, one repeat, device depths
    1,8,32,64 for 1 s, io_uring depths 1,8,32, sync jobs 1,8,32; both file
    systems. About 30 s on a 2-core VM (the full run: about 3 minutes).

A/B MODE
    --ab-engines A,B: two builds of the engine compared, instead of the
    device runs and the comparison of modes. Per file system: the tree
    laid out by B, `sync`; then --repeats rounds, in each every build and
    mode once (sync with 1 job, io_uring at each of --depths, sync with
    each of --sync-jobs above 1: by default sync and io_uring at iodepth
    1), each a single cold pass as above, the order rotated by one from
    the round before. The report gives per build and mode files/s median
    (min / max), its ratio to sync with 1 job of the same build per round,
    the job's CPU microseconds and context switches per file, and per mode
    B / A of each round's pair and of the medians. A build is a directory
    holding smallfile.so (build/, a copy of it, build/fio-VERSION/) or the
    .so itself; both run in the fio of --fio. Defaults: 30,000 files,
    3,000 reads a pass, 6 rounds; --quick: 10,000 files, 1,000 reads, 2
    rounds.

EXIT STATUS
    0 report written; 1 a benchmark failed (the report so far is written,
    with the error); 2 usage error, not root, or a tool missing (fio, the
    engine, mkfs.FS, /usr/bin/time) or --image-dir not a directory.

EXAMPLES
    sudo scripts/fio-pack bench cold --quick
    sudo scripts/fio-pack bench cold --fs ext4 --repeats 5 --output /tmp/cold.md
    sudo scripts/fio-pack bench cold --device fixed:channels=8,latency_us=500 \
         --depths 1,32 --sync-jobs 1,32 --dev-depths 1,32
    sudo scripts/fio-pack bench cold --ab-engines /tmp/before/build,build --fs ext4
"""


# a 10M-file tree of 0-4 KiB files on xfs takes ~45 GiB (the ISP's scale, the
# largest docs/benchmarks.md records)
IMAGE_MIB_MAX = 64 * 1024


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def device_run(a, dev, d):
    """fio's io_uring engine on the raw loop device (read-only: the file
    system on it stays mounted), O_DIRECT random reads of the engine's size."""
    s0 = device_stats(dev)
    out, _, _ = run([a.fio, "--output-format=json", "--name=dev", "--filename=" + dev.dev,
                     "--readonly", "--ioengine=io_uring", "--direct=1", "--rw=randread",
                     "--bs=%d" % a.size, "--iodepth=%d" % d, "--time_based",
                     "--runtime=%d" % a.dev_runtime, "--randrepeat=0"])
    r = fio_json(out)["jobs"][0]["read"]
    out = {"iops": r["iops"], "p50_us": r["clat_ns"]["percentile"]["50.000000"] / 1000}
    if s0 is not None:
        out["device"] = ondevice.stats_delta(s0, device_stats(dev), r["runtime"] / 1000.0)
    return out


def device_stats(dev):
    """A modeled device's statistics (None for the plain loop device)."""
    return dev.stats() if hasattr(dev, "stats") else None


def modes(a):
    m = [("sync", 1, 1)]
    m += [("io_uring", d, 1) for d in a.depths]
    m += [("sync", 1, j) for j in a.sync_jobs if j > 1]
    return m


def mode_name(m):
    api, d, j = m
    if api == "sync":
        return "sync, 1 job" if j == 1 else "sync, %d jobs" % j
    return "io_uring, iodepth %d" % d


def engine_cmd(a, tree, extra, files=None, engine=None):
    return [a.fio, "--output-format=json", "--name=cold",
            "--ioengine=external:%s" % (engine or a.engine), "--tree_dir=%s" % tree,
            "--tree_files=%d" % (files or a.files), "--tree_file_size_dist=%s" % a.size_dist,
            "--bs=%d" % a.size] + ["--" + o for o in a.tree_opts] + extra


def layout(a, tree, files, engine=None):
    """The engine's layout of @files files, one job as a thread of fio (so
    fio's peak RSS is the job's); files/s on the job's clock and on the wall."""
    out, _, wall, rss = run_peak_rss(engine_cmd(
        a, tree, ["--tree_file_op=layout", "--rw=write", "--thread"], files, engine))
    w = fio_json(out)["jobs"][0]["write"]
    return {"files": w["total_ios"], "runtime_s": w["runtime"] / 1000.0, "wall": wall,
            "files_s": w["total_ios"] / (w["runtime"] / 1000.0),
            "files_s_wall": w["total_ios"] / wall, "rss_kib": rss}


def cold_pass(a, dev, tree, m, files=None, engine=None):
    """One cold pass of mode @m; with @engine (a build of the A/B mode)
    also the job's CPU and context switches per file (harness.ab_facts)."""
    api, d, j = m
    ios = min(a.ios, files or a.files)
    extra = ["--tree_file_op=read", "--rw=randread", "--randrepeat=0",
             "--number_ios=%d" % (ios // j), "--tree_io_api=%s" % api, "--iodepth=%d" % d]
    if j > 1:
        extra += ["--numjobs=%d" % j, "--group_reporting"]
    drop_caches()
    s0 = device_stats(dev)
    r0 = dev.reads()
    out, _, wall, rss = run_peak_rss(engine_cmd(a, tree, extra, files, engine))
    r1 = dev.reads()
    s1 = device_stats(dev)
    job = fio_json(out)["jobs"][0]
    r = job["read"]
    pct = r["clat_ns"]["percentile"]
    files = r["total_ios"]
    p = {"files_s": files / (r["runtime"] / 1000.0), "p50_us": pct["50.000000"] / 1000,
         "p99_us": pct["99.000000"] / 1000, "reads_per_file": (r1 - r0) / files,
         "files": files, "wall": wall, "rss_kib": rss}
    if s0 is not None:
        p["device"] = ondevice.stats_delta(s0, s1, r["runtime"] / 1000.0)
    if engine:
        p.update(harness.ab_facts(job))
    return p


def series(a, dev, fs):
    """One file system: layout, then the device's limit and the cold passes
    interleaved, --repeats rounds. Returns (device IOPS per depth, passes
    per mode)."""
    tree = dev.mkfs_mount(fs)
    log("%s: layout of %d files (%s)" % (fs, a.files, a.size_dist))
    lay = {"big": layout(a, tree, a.files)}
    t0 = time.monotonic()
    subprocess.run(["sync"], check=True)
    lay["big"]["sync_s"] = time.monotonic() - t0
    log("%s layout: %.0f files/s (job), %.0f s wall + %.0f s sync, peak RSS %.1f MiB" % (
        fs, lay["big"]["files_s"], lay["big"]["wall"], lay["big"]["sync_s"],
        lay["big"]["rss_kib"] / 1024))
    res = {mode_name(m): [] for m in modes(a)}
    devres = {d: [] for d in a.dev_depths}
    # device runs and engine passes alternate: a shared machine's drift hits both
    items = interleave([("dev", d) for d in a.dev_depths], modes(a))
    for rep in range(a.repeats):
        for m in (items if rep % 2 == 0 else list(reversed(items))):
            if m[0] == "dev":
                r = device_run(a, dev, m[1])
                devres[m[1]].append(r)
                log("%s device iodepth %d: %.0f IOPS, p50 %.0f us%s" % (
                    fs, m[1], r["iops"], r["p50_us"], util_text(r)))
                continue
            p = cold_pass(a, dev, tree, m)
            res[mode_name(m)].append(p)
            log("%s %s: %.0f files/s p50 %.0f us p99 %.0f us, %.2f reads/file%s"
                % (fs, mode_name(m), p["files_s"], p["p50_us"], p["p99_us"], p["reads_per_file"],
                   util_text(p)))
    if a.rss_files:
        # the same runs on a small tree of the same shape beside it: the
        # engine's memory must not grow with the tree (it is arithmetic)
        small = os.path.join(os.path.dirname(tree), "tree-small")
        os.mkdir(small)
        lay["small"] = layout(a, small, a.rss_files)
        subprocess.run(["sync"], check=True)
        lay["small_passes"] = {mode_name(m): cold_pass(a, dev, small, m, a.rss_files)
                               for m in modes(a)}
    dev.umount()
    # the limit of a mode: median device IOPS of this series at the mode's
    # requests in flight (the nearest depth measured) / its reads per file
    for m in modes(a):
        inflight = m[1] * m[2]
        d = min(a.dev_depths, key=lambda k: (abs(k - inflight), k))
        iops = med([r["iops"] for r in devres[d]])
        for p in res[mode_name(m)]:
            p["limit_depth"] = d
            p["limit_files_s"] = iops / max(p["reads_per_file"], 1e-9)
            p["ratio"] = p["files_s"] / p["limit_files_s"]
    return devres, res, lay


def ab_series(a, dev, fs):
    """The A/B mode on one file system: the tree laid out by B, `sync`,
    then --repeats rounds of every build and mode, each a cold pass, each
    round's order the one before rotated by one. Returns ({"A"|"B": {mode:
    [pass of each round]}}, the layout)."""
    tree = dev.mkfs_mount(fs)
    log("%s: layout of %d files (%s) by B" % (fs, a.files, a.size_dist))
    lay = {"big": layout(a, tree, a.files, a.ab[1])}
    subprocess.run(["sync"], check=True)
    runs = {x: {mode_name(m): [] for m in modes(a)} for x in "AB"}
    items = [(x, m) for x in "AB" for m in modes(a)]
    for r in range(a.repeats):
        for x, m in harness.rotated(items, r):
            p = cold_pass(a, dev, tree, m, engine=a.ab[x == "B"])
            runs[x][mode_name(m)].append(p)
            log("%s round %d %s %s: %.0f files/s, %.1f CPU us and %.2f context switches a file"
                % (fs, r + 1, x, mode_name(m), p["files_s"], p["cpu_us"], p["ctx"]))
    dev.umount()
    return runs, lay


def ab_report(rep, a, fs, runs):
    """The tables of the A/B mode on one file system."""
    rep.add("#### %s, A/B: %s files of %s, %s cold reads a pass" % (
        fs, "{:,}".format(a.files), human(a.size) if a.size_dist == "fixed:%d" % a.size
        else a.size_dist, "{:,}".format(a.ios)))
    rep.add()
    rep.add("The tree laid out by B; %d round(s), in each every build and mode once, a "
            "single cold pass (`sync`, drop_caches) each, the order rotated by one from the "
            "round before. files/s = read.total_ios / read.runtime." % a.repeats)
    rep.add()
    base = mode_name(("sync", 1, 1))

    def to_sync(b, m):
        xs = runs[b][m]
        return "1" if m == base else harness.med_min_max(
            [x["files_s"] / y["files_s"] for x, y in zip(xs, runs[b][base])],
            "{:.2f}".format)
    harness.ab_tables(rep, runs, [mode_name(m) for m in modes(a)],
                      ("÷ %s, per round" % base, to_sync))


def util_text(r):
    return ", utilisation %.2f" % r["device"]["utilisation"] if "device" in r else ""


def util(rs):
    """The median utilisation of a modeled device over runs @rs, as text."""
    us = [r["device"]["utilisation"] for r in rs if "device" in r]
    return "%.2f" % med(us) if us else "-"


def interleave(xs, ys):
    """x0 y0 x1 y1 ... and the rest of the longer list."""
    out = []
    for i in range(max(len(xs), len(ys))):
        out += xs[i:i + 1] + ys[i:i + 1]
    return out


def med(xs):
    return statistics.median(xs) if xs else None


def report_layout(rep, a, lay):
    rows = []
    for key, files in (("big", a.files), ("small", a.rss_files)):
        if key not in lay:
            continue
        x = lay[key]
        rows.append(["{:,}".format(files), fmt_rate(x["files_s"]), fmt_rate(x["files_s_wall"]),
                     "%.0f" % x["wall"], "%.0f" % x["sync_s"] if "sync_s" in x else "-",
                     "%.1f" % (x["rss_kib"] / 1024)])
    rep.add("Layout (one job, `--thread`: fio's peak RSS is the job's):")
    rep.add()
    rep.table(["files", "files/s (job runtime)", "files/s (wall)", "wall s", "sync after, s",
               "fio peak RSS MiB"], rows)
    if "small_passes" in lay:
        rows = [[n, "%.1f" % (lay["small_passes"][n]["rss_kib"] / 1024),
                 "%.1f" % (med([p["rss_kib"] for p in ps]) / 1024)]
                for n, ps in lay["passes"].items()]
        rep.add("Peak RSS of the cold passes (fio and its job process, `/usr/bin/time %%M`), "
                "the same command on the %s-file tree and on the %s-file tree:"
                % ("{:,}".format(a.rss_files), "{:,}".format(a.files)))
        rep.add()
        rep.table(["mode", "%s files, MiB" % "{:,}".format(a.rss_files),
                   "%s files, MiB (median)" % "{:,}".format(a.files)], rows)


def report_series(rep, a, fs, devres, res, lay):
    sizes = human(a.size) if a.size_dist == "fixed:%d" % a.size else a.size_dist
    rep.add("#### %s: %s files of %s, %s cold reads a pass" % (
        fs, "{:,}".format(a.files), sizes, "{:,}".format(a.ios)))
    if a.tree_opts:
        rep.add()
        rep.add("Tree: `%s`, bs=%s." % (" ".join(a.tree_opts), human(a.size)))
    rep.add()
    rep.add("Device limit in this series: fio io_uring, direct=1, randread, bs=%s, raw loop "
            "device, %d s a run, interleaved with the passes:" % (human(a.size), a.dev_runtime))
    rep.add()
    rows = []
    modeled = any("device" in r for rs in devres.values() for r in rs)
    for d, rs in devres.items():
        s = stats([r["iops"] for r in rs])
        rows.append([d, fmt_rate(s[1]), "%s / %s" % (fmt_rate(s[0]), fmt_rate(s[2])),
                     "%.0f" % med([r["p50_us"] for r in rs])] + ([util(rs)] if modeled else []))
    rep.table(["iodepth", "IOPS median", "min / max", "p50 µs"]
              + (["device utilisation"] if modeled else []), rows)
    lay["passes"] = res
    report_layout(rep, a, lay)
    lay.pop("passes")
    rows = []
    for name, ps in res.items():
        fsv = [p["files_s"] for p in ps]
        s = stats(fsv)
        rows.append([name, fmt_rate(s[1]), "%s / %s" % (fmt_rate(s[0]), fmt_rate(s[2])),
                     "%.0f" % med([p["p50_us"] for p in ps]),
                     "%.0f" % med([p["p99_us"] for p in ps]),
                     "%.2f" % med([p["reads_per_file"] for p in ps]),
                     "%s (depth %d)" % (fmt_rate(med([p["limit_files_s"] for p in ps])),
                                        ps[0]["limit_depth"]),
                     "%.2f" % med([p["ratio"] for p in ps])] + ([util(ps)] if modeled else []))
    rep.table(["mode", "files/s median", "min / max", "p50 µs", "p99 µs",
               "device reads/file", "limit files/s", "ratio to limit"]
              + (["device utilisation"] if modeled else []), rows)

    def pair(n, d):
        if n not in res or d not in res:
            return None
        xs = [x["files_s"] / y["files_s"] for x, y in zip(res[n], res[d])]
        s = stats(xs)
        return [n + " ÷ " + d, "%.2f" % (med([x["files_s"] for x in res[n]]) /
                                         med([x["files_s"] for x in res[d]])),
                "%.2f / %.2f / %.2f" % s]
    goals = [("io_uring, iodepth 1", "sync, 1 job", ">= 1"),
             ("io_uring, iodepth 32", "sync, 32 jobs", ">= 1")]
    rows = []
    for n, d, g in goals:
        r = pair(n, d)
        if r:
            rows.append(r + [g])
    if "io_uring, iodepth 32" in res:
        rows.append(["io_uring, iodepth 32 ÷ limit at depth 32", "%.2f" % med(
            [p["ratio"] for p in res["io_uring, iodepth 32"]]), "-", ">= 0.8"])
        if modeled:
            rows.append(["device utilisation, io_uring iodepth 32",
                         util(res["io_uring, iodepth 32"]), "-", ">= 0.9"])
    rep.table(["ratio", "of medians", "pairwise min / median / max", "goal"], rows)


def human(n):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % f == 0:
            return "%d %s" % (n // f, unit)
    return "%d B" % n


def free_space_mib(image_dir):
    """The free space of --image-dir in MiB; a directory that is not there
    is refused in one line (exit 2) before anything is written."""
    why = None
    if not os.path.exists(image_dir):
        why = "no such directory"
    elif not os.path.isdir(image_dir):
        why = "not a directory"
    else:
        try:
            st = os.statvfs(image_dir)
        except OSError as e:
            why = e.strerror
    if why:
        sys.stderr.write("fio-pack bench cold: --image-dir %s: %s\n" % (image_dir, why))
        sys.exit(2)
    return st.f_bavail * st.f_frsize // (1 << 20)


def parse_args(argv):
    p = harness.parser("cold", DESCRIPTION, EPILOG)
    p.add_argument("--quick", action="store_true", help="a few minutes (see QUICK MODE)")
    harness.add_output_options(p)
    p.add_argument("--fs", default="ext4,xfs", help="file systems, one series each (ext4,xfs)")
    p.add_argument("--files", type=number(int, low=1),
                   help="files in the tree (60000; quick 20000; A/B mode 30000, quick 10000)")
    p.add_argument("--size", type=size(), default="16k", help="file size = the engine's bs (16k)")
    p.add_argument("--size-dist", metavar="SPEC",
                   help="tree_file_size_dist of the tree instead of fixed:SIZE, e.g. uniform:0:4k "
                        "(bs stays --size)")
    p.add_argument("--tree-opts", default="", metavar="'OPT=V ...'",
                   help="more engine options for the tree's shape, every run, e.g. "
                        "'tree_maildir=1 tree_files_per_dir=1000 tree_fanout=64' (jobs/smallfile-mail.fio's)")
    p.add_argument("--ios", type=number(int, low=1),
                   help="files read per pass (10000; quick 4000; A/B mode 3000, quick 1000)")
    p.add_argument("--repeats", type=number(int, low=1),
                   help="passes per mode (3; quick 1; A/B mode 6, quick 2)")
    p.add_argument("--depths", type=number_list(int, low=1),
                   help="io_uring iodepths (1,4,8,16,32,64; quick 1,8,32; A/B mode 1)")
    p.add_argument("--sync-jobs", type=number_list(int, low=1),
                   help="sync numjobs (1,2,4,8,16,32; quick 1,8,32; A/B mode 1)")
    p.add_argument("--dev-depths", type=number_list(int, low=1), help="device limit depths (1,2,4,8,16,32,64; quick 1,8,32,64)")
    p.add_argument("--dev-runtime", type=number(int, low=1), help="seconds per device run (2; quick 1)")
    p.add_argument("--rss-files", type=number(int, low=0), default=0, metavar="N",
                   help="also lay out a tree of N files beside the big one and run each mode "
                        "once on it, for the peak RSS at both sizes (0: not)")
    p.add_argument("--device", metavar="MODEL",
                   help="a modeled device instead of the plain loop device (fio-pack device "
                        "up MODEL: a spec or a named model); its backing file of --image-mib "
                        "in a tmpfs of its own")
    p.add_argument("--image-dir", default="/var/tmp",
                   help="where the image file goes (/var/tmp); removed at exit")
    p.add_argument("--fill", choices=("random", "zero"), default="random",
                   help="what the image is written with first (random)")
    p.add_argument("--image-mib", type=number(int, low=1),
                   help="image size (default: 2 x the data + 1 GiB, at most 8 GiB; "
                        "given: at most %d MiB and the image directory's free space less 1 GiB)"
                        % IMAGE_MIB_MAX)
    a = harness.parse_ab_and_build(p, argv, "smallfile")
    q = a.quick
    a.size_dist = a.size_dist or "fixed:%d" % a.size
    a.tree_opts = a.tree_opts.split()
    if a.ab:
        # the defaults of the A/B mode: bench/ab-cold.sh's, which it replaces
        a.files = a.files or (10000 if q else 30000)
        a.ios = a.ios or (1000 if q else 3000)
        a.repeats = a.repeats or (2 if q else 6)
        a.depths = a.depths or [1]
        a.sync_jobs = a.sync_jobs or [1]
        if a.rss_files:
            p.error("--rss-files does not apply to --ab-engines")
        a.engine = a.ab[1]   # preflight checks B's engine
    a.files = a.files or (20000 if q else 60000)
    a.ios = a.ios or (4000 if q else 10000)
    a.repeats = a.repeats or (1 if q else 3)
    a.depths = a.depths or ([1, 8, 32] if q else [1, 4, 8, 16, 32, 64])
    a.sync_jobs = a.sync_jobs or ([1, 8, 32] if q else [1, 2, 4, 8, 16, 32])
    a.dev_depths = a.dev_depths or ([1, 8, 32, 64] if q else [1, 2, 4, 8, 16, 32, 64])
    a.dev_runtime = a.dev_runtime or (1 if q else 2)
    a.fs = [x.strip() for x in a.fs.split(",") if x.strip()]
    if not a.image_mib:
        a.image_mib = min(8192, 2 * a.files * a.size // (1 << 20) + 1024)
    if a.image_mib > IMAGE_MIB_MAX or a.ios > a.files or a.repeats < 1:
        p.error("--image-mib at most %d, --ios at most --files, --repeats at least 1"
                % IMAGE_MIB_MAX)
    if a.device:
        return a    # in memory: ondevice.check() at the start of main
    free_mib = free_space_mib(a.image_dir)
    if a.image_mib > free_mib - 1024:
        p.error("--image-mib %d does not fit in %s (%d MiB free, 1 GiB kept free)"
                % (a.image_mib, a.image_dir, free_mib))
    return a


def main(argv):
    a = parse_args(argv)
    refused = harness.preflight("cold", a, "losetup, mkfs, mount", peak_rss=True)
    if refused:
        return refused
    if a.device:
        try:
            ondevice.check(a.device, a.image_mib)
        except Error as e:
            return ondevice.refuse("cold", e)
    for fs in a.fs:
        if not any(os.access(os.path.join(d, "mkfs." + fs), os.X_OK)
                   for d in os.environ.get("PATH", "/usr/sbin:/sbin").split(":") + ["/usr/sbin", "/sbin"]):
            sys.stderr.write("fio-pack bench cold: mkfs.%s not found\n" % fs)
            return 2
    t_start = time.monotonic()
    harness.unwind_on_signals()
    fio_version = run([a.fio, "--version"])[0].strip()
    rep = Report()
    results = {"args": vars(a)}
    machine = machine_info(a, fio_version)
    if a.ab:
        machine = harness.ab_machine_rows(machine, a.fio, a.ab)
    harness.report_header(rep, "cold", a, argv, machine)
    error = None
    dev = None
    try:
        if a.device:
            dev = ondevice.ModeledDevice(a.device, a.image_mib)
            dev.setup()
            rep.add("Device: the modeled device %s; a fresh file system per series."
                    % dev.describe())
        else:
            dev = LoopDevice(a.image_dir, a.image_mib, "zero" if a.fill == "zero" else "urandom")
            dev.setup()
            fsdesc = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", a.image_dir],
                                    stdout=subprocess.PIPE, text=True).stdout.strip()
            rep.add("Device: a %d MiB image in %s (%s), written in full from /dev/%s, "
                    "`losetup --direct-io=on` (%s); a fresh file system per series."
                    % (a.image_mib, a.image_dir, fsdesc, dev.fill, dev.dev))
        rep.add()
        for fs in a.fs:
            if a.ab:
                runs, lay = ab_series(a, dev, fs)
                results[fs] = {"ab": runs, "layout": lay}
                ab_report(rep, a, fs, runs)
                continue
            devres, res, lay = series(a, dev, fs)
            results[fs] = {"device": devres, "passes": res, "layout": lay}
            report_series(rep, a, fs, devres, res, lay)
    except BaseException as e:  # report what we have, then clean up
        error = "%s: %s" % (type(e).__name__, e)
        log("error: " + error)
    finally:
        if dev:
            dev.cleanup()
    rep.add("Total time of the run: %.0f s; load average at the end: %s." % (
        time.monotonic() - t_start, " ".join("%.2f" % x for x in os.getloadavg())))
    harness.save_report(a, rep, results, error)
    return 1 if error else 0

