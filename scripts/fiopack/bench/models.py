"""How well the named hard disks keep to their datasheets on a real
modeled device: random 4k reads at depth 1 and 32 and sequential 1m reads
through fio against the datasheet's seek, rotation and outer media rate,
with the daemon's CPU per request.

Run as root (it brings modeled devices up):

    sudo scripts/fio-pack bench models --quick

See --help. Only the Python standard library is used.
"""
import os
import statistics
import subprocess

from fiopack.bench import harness
from fiopack.bench.device import bench_args, device_stats, med_range, run_bench
from fiopack.bench.harness import log
from fiopack.device import lifecycle

DESCRIPTION = """\
NAME
    fio-pack bench models - the named hard disks of fio-pack device against
    their datasheets, through fio on the real modeled device

SYNOPSIS
    sudo scripts/fio-pack bench models [--quick] [--output FILE] [--raw FILE]
         [--repeats N] [--runtime S] [--size SIZE] [--dir DIR]

DESCRIPTION
    Brings each named hard disk up (fio-pack device up NAME --size SIZE, a
    backing file in a private directory under --dir, removed at the end)
    and runs fio's own io_uring engine on the raw device (--direct=1,
    --runtime seconds), reading the device's statistics before and after
    each run:

      random 4k, depth 1    --rw=randread --bs=4k --iodepth=1: expected
                            1 / (average seek + half a revolution + 4 KiB
                            at the outer rate), within 10%
      random 4k, depth 32   the same at depth 32: at least 1.4x depth 1
                            (the drive reorders its queue)
      sequential 1m         --rw=read --bs=1m --iodepth=1 --size=10%: the
                            first tenth of the device, read over and over
                            (the outer zones): the outer media rate, within
                            10%

    The models and their datasheet figures (docs/devices.md):

      wd740adfd   WD Raptor: average seek 4.5 ms, 10,000 rpm, 90 MB/s outer
      mba3147rc   Fujitsu 15k SAS: 3.1 ms, 15,000 rpm, 171 MB/s outer

    The device is the whole drive (its tracks over the full stroke), so
    random I/O over it sees the datasheet's average seek whatever SIZE is.
    The column "model" is what the model itself gives at depth 1: the
    datasheet's figure with the drives' command overhead (0.2 ms) added.
    The same truths are held exactly, in simulated time, by the unit tests
    (tests/unit/test_moddev_named.c); this measures what the kernel's round
    trip, the daemon and a shared machine add. The daemon's CPU per request
    is the change of its CPU time over the change of its requests.

    --repeats rounds are run, each in the reverse order of the one before;
    the report gives the median and, in parentheses, the range.
"""
EPILOG = """\
EXIT STATUS
    0 the runs were made (whatever they measured); 1 a run failed (the
    report says which); 2 refused before anything was done.
"""

# name, average seek (ms), rpm, outer media rate (MB/s): the datasheets' figures
DRIVES = [("wd740adfd", 4.5, 10000, 90.0), ("mba3147rc", 3.1, 15000, 171.0)]
RUNS = [("random 4k, depth 1", "randread", "4k", 1, "100%"),
        ("random 4k, depth 32", "randread", "4k", 32, "100%"),
        ("sequential 1m", "read", "1m", 1, "10%")]
# the named drives' command overhead (ms), which the model adds at depth 1
OVERHEAD_MS = 0.2


def parse_args(argv):
    def more(p):
        p.add_argument("--size", default="1g", help="each device's size (default 1g)")
    return bench_args("models", DESCRIPTION, EPILOG, argv, runtime=5, quick_runtime=2, more=more)


def measure(a, rec, rw, bs, depth, size) -> dict:
    s0 = device_stats(rec)
    out = subprocess.run(
        [a.fio, "--name=m", f"--filename={rec.loop}", "--direct=1", f"--rw={rw}", f"--bs={bs}",
         "--ioengine=io_uring", f"--iodepth={depth}", f"--size={size}",
         f"--runtime={a.runtime}", "--time_based", "--output-format=json"],
        capture_output=True, text=True, check=True).stdout
    s1 = device_stats(rec)
    job = harness.fio_json(out)["jobs"][0]
    r = job["read"]
    n = s1["read"]["requests"] - s0["read"]["requests"]
    runtime_ns = job["job_runtime"] * 1e6
    return {"iops": r["iops"], "mbps": r["bw_bytes"] / 1e6,
            "mean_ms": r["lat_ns"]["mean"] / 1e6, "requests": n,
            "cpu_us_per_request": (s1["daemon_cpu_ns"] - s0["daemon_cpu_ns"]) / max(n, 1) / 1e3,
            "utilisation": (s1["service_ns"] - s0["service_ns"]) / (s1["servers"] * runtime_ns),
            "reply_lag_p99_us": s1["reply_lag"]["p99_ns"] / 1e3}


def one_round(a, work, reverse, results):
    for name, *_ in (DRIVES[::-1] if reverse else DRIVES):
        rec = lifecycle.up(name, a.size, work, f"bench-{os.getpid()}-{name}", 0, False)
        try:
            for label, rw, bs, depth, size in (RUNS[::-1] if reverse else RUNS):
                log(f"{name}: {label}")
                results.setdefault(name, {}).setdefault(label, []).append(
                    measure(a, rec, rw, bs, depth, size))
        finally:
            lifecycle.down(rec.loop)


def report(rep, results):
    rows = []
    for name, avg_ms, rpm, outer in DRIVES:
        runs = results.get(name, {})
        bound = 1e3 / (avg_ms + 30e3 / rpm + 4096 / (outer * 1e3))
        model = 1e3 / (avg_ms + 30e3 / rpm + 4096 / (outer * 1e3) + OVERHEAD_MS)
        one = statistics.median(m["iops"] for m in runs.get(RUNS[0][0], [{"iops": 0}]))
        for label, *_ in RUNS:
            ms = runs.get(label)
            if not ms:
                continue
            if label == RUNS[1][0]:
                got = statistics.median(m["iops"] for m in ms)
                measured, expected = med_range([m["iops"] for m in ms]), "≥ 1.4 × depth 1"
                ratio = got / one if one else 0
                check = "" if ratio >= 1.4 else " ✗"
                vs_model = ""
            elif label == RUNS[2][0]:
                got = statistics.median(m["mbps"] for m in ms)
                measured, expected = med_range([m["mbps"] for m in ms], "{:.1f}") + " MB/s", \
                    f"{outer:g} MB/s"
                ratio = got / outer
                check = "" if abs(ratio - 1) <= 0.10 else " ✗"
                vs_model = ""
            else:
                measured, expected = med_range([m["iops"] for m in ms]), f"{bound:.1f}"
                ratio = one / bound
                check = "" if abs(ratio - 1) <= 0.10 else " ✗"
                vs_model = f"{model:.1f} ({one / model:.3f})"
            rows.append([name, label, measured, expected, f"{ratio:.3f}{check}", vs_model,
                         med_range([m["mean_ms"] for m in ms], "{:.2f}"),
                         med_range([m["utilisation"] for m in ms], "{:.2f}"),
                         med_range([m["cpu_us_per_request"] for m in ms], "{:.1f}"),
                         med_range([m["reply_lag_p99_us"] for m in ms])])
    rep.table(["model", "run", "measured (IOPS)", "datasheet", "ratio", "model (ratio)",
               "mean latency (ms)",
               "utilisation", "daemon CPU/request (us)", "reply lag p99 (us)"], rows)
    rep.add("✗: outside the datasheet bound (depth 1 and sequential within 10%, depth 32 at "
            "least 1.4× depth 1; the ratio of depth 32 is to depth 1). Medians, the range of "
            "the rounds in parentheses.")
    rep.add()


def main(argv):
    return run_bench("models", argv, parse_args, one_round, report)
