"""How well a modeled device keeps to its model: the fixed model's truth,
the kernel's round trip, and the daemon's CPU per request and ceiling.

Run as root (it brings modeled devices up):

    sudo scripts/fio-pack bench device --quick

See --help. Only the Python standard library is used.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from fiopack import REPO
from fiopack.bench import harness
from fiopack.bench.harness import Report, log, machine_info
from fiopack.options import number
from fiopack.device import lifecycle, state
from fiopack.device.state import Error

DESCRIPTION = """\
NAME
    fio-pack bench device - how well a modeled device (fio-pack device) keeps to
    its model: the fixed model's truth, the kernel's round trip, the daemon's
    CPU per request and the highest rate it sustains

SYNOPSIS
    sudo scripts/fio-pack bench device [--quick] [--output FILE] [--raw FILE]
         [--repeats N] [--runtime S] [--dir DIR]

DESCRIPTION
    Brings modeled devices up (fio-pack device up, 256 MiB backing files in a
    private directory under --dir, removed at the end) and runs fio's own
    io_uring engine on each raw device (--direct=1 --rw=randread --bs=16k
    --lat_percentiles=1, --runtime seconds), reading the device's statistics
    before and after each run (fio-pack device stats):

      round trip   fixed:channels=1,latency_us=0 at depth 1: what a request
                   costs beyond the model (the kernel, FUSE, the daemon, fio)
      truth 4x1ms  fixed:channels=4,latency_us=1000 at depths 1, 8, 16, 32:
                   expected min(depth, 4) / 1 ms (4,000 IOPS from depth 4
                   up) and a latency of max(1, depth / 4) ms; run without
                   back-dating (--backdate-us 0) and with up's default,
                   the round trip up measures (its figure in the row's
                   name)
      truth 1x8ms  fixed:channels=1,latency_us=8000 at depths 1, 4, 16, 32:
                   125 IOPS at every depth
      ceiling      fixed:channels=64,latency_us=0 at depths 32 and 64: the
                   highest rate the pipeline sustains on this machine

    The truths and the ceiling are also run with up --realtime (the daemon
    SCHED_FIFO), which keeps the device's pace on a machine busy with other
    work at the price of preempting fio at each request.

    Each run's daemon CPU per request is the change of the daemon's CPU
    time (daemon_cpu_ns) over the change of its requests, and its wake-ups
    per request the change of its threads' context switches (voluntary and
    not, /proc/PID/task/*/status) over the same; the utilisation
    and the mean number of requests in the device are over fio's runtime;
    the reply lag p99 is over the runs of the device's configuration (one
    device is brought up per configuration and round). --repeats rounds
    are run, each in the order of the round before reversed, so that a
    shared machine's drift hits every configuration alike; the report gives
    the median and the range, the expected value, and the ratio.

    The report says what a run is checked against: IOPS within 5% of the
    expected, p50 latency within 10% (docs/devices.md's tolerances).

    The machine's floor for the CPU per request at low rates is measured in
    every round too: build/bench/wakeup (bench/wakeup.c, built by make), one
    thread woken by a timerfd every 8 ms and every 1 ms, nothing else: the
    CPU one wake-up costs here. A request at depth 1 needs two (the daemon
    reads it, and replies at the model's time).
"""
EPILOG = """\
EXIT STATUS
    0 the runs were made (whatever they measured); 1 a run failed (the
    report says which); 2 refused before anything was done.
"""

BS = 16384
ROUND_TRIP = "fixed:channels=1,latency_us=0"
TRUTH_4 = "fixed:channels=4,latency_us=1000"
TRUTH_1 = "fixed:channels=1,latency_us=8000"
CEILING = "fixed:channels=64,latency_us=0"
NO_BACKDATE = "truth 4x1ms"
BACKDATED = "truth 4x1ms, back-dated as up does by default"
REALTIME = "truth 4x1ms, realtime"
TRUTH_1_LABEL = "truth 1x8ms"


def parse_args(argv):
    return bench_args("device", DESCRIPTION, EPILOG, argv, runtime=3, quick_runtime=1)


def bench_args(name, description, epilog, argv, runtime, quick_runtime, more=None):
    """The options of a modeled-device benchmark (device, models): rounds,
    runtime (@runtime seconds, @quick_runtime with --quick), the backing
    files' directory, fio, the outputs; @more(parser) adds its own."""
    p = harness.parser(name, description, epilog)
    p.add_argument("--quick", action="store_true",
                   help=f"one round of {quick_runtime}-second runs (default: 3 rounds of "
                        f"{runtime} s)")
    p.add_argument("--repeats", type=number(int, low=1), help="rounds (default 3, --quick 1)")
    p.add_argument("--runtime", type=number(int, low=1),
                   help=f"seconds per fio run (default {runtime}, --quick {quick_runtime})")
    if more:
        more(p)
    p.add_argument("--dir", default="/var/tmp",
                   help="where the private directory of backing files goes (default /var/tmp)")
    p.add_argument("--fio", default=os.path.join(REPO, "build", "fio"),
                   help="fio binary (default build/fio)")
    harness.add_output_options(p)
    a = p.parse_args(argv)
    harness.check_outputs(a)    # before the devices come up and the runs begin
    harness.check_fio(p, a)
    a.repeats = a.repeats or (1 if a.quick else 3)
    a.runtime = a.runtime or (quick_runtime if a.quick else runtime)
    a.engine = "fio's own io_uring engine (no pack engine)"
    return a


def device_stats(rec) -> dict:
    with open(os.path.join(rec.mount, "stats")) as f:
        return json.load(f)


def fio_run(a, dev, depth) -> dict:
    out = subprocess.run(
        [a.fio, "--name=r", f"--filename={dev}", "--direct=1", "--rw=randread", f"--bs={BS}",
         "--ioengine=io_uring", f"--iodepth={depth}", f"--runtime={a.runtime}", "--time_based",
         "--lat_percentiles=1", "--output-format=json"],
        capture_output=True, text=True, check=True).stdout
    return harness.fio_json(out)["jobs"][0]


def switches(pid) -> int:
    """Context switches of every thread of @pid so far."""
    n = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                # voluntary_ctxt_switches and nonvoluntary_ctxt_switches
                n += sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
        except FileNotFoundError:  # a thread that ended in between
            pass
    return n


def measure(a, rec, depth) -> dict:
    """One fio run on @rec's device: fio's view and the device's."""
    s0 = device_stats(rec)
    w0 = switches(s0["pid"])
    job = fio_run(a, rec.loop, depth)
    w1 = switches(s0["pid"])
    s1 = device_stats(rec)
    r = job["read"]
    n = s1["read"]["requests"] - s0["read"]["requests"]
    runtime_ns = job["job_runtime"] * 1e6
    return {
        "iops": r["iops"],
        "p50_us": r["lat_ns"]["percentile"]["50.000000"] / 1e3,
        "mean_us": r["lat_ns"]["mean"] / 1e3,
        "requests": n,
        "fio_ios": r["total_ios"],
        "cpu_us_per_request": (s1["daemon_cpu_ns"] - s0["daemon_cpu_ns"]) / max(n, 1) / 1e3,
        "wakeups_per_request": (w1 - w0) / max(n, 1),
        # over fio's own runtime, not the whole interval between the snapshots
        "utilisation": (s1["service_ns"] - s0["service_ns"]) / (s1["servers"] * runtime_ns),
        "in_flight_mean": in_flight_mean(s0, s1, runtime_ns),
        "reply_lag_p99_us": s1["reply_lag"]["p99_ns"] / 1e3,
    }


def in_flight_mean(s0, s1, runtime_ns) -> float:
    """The mean number of requests in the device over fio's runtime (the
    time before and after it, with none, does not count)."""
    t0, t1 = s0["in_flight"]["time_ns"], s1["in_flight"]["time_ns"]
    weighted = sum(k * (b - (t0[k] if k < len(t0) else 0)) for k, b in enumerate(t1))
    return weighted / runtime_ns


FLOOR = "wake-up floor"
WAKEUP = os.path.join(REPO, "build", "bench", "wakeup")


def wakeup_floor(period_us, count) -> dict:
    """CPU us of one timer wake-up of an otherwise idle thread (bench/wakeup.c)."""
    subprocess.run(["make", "-s", "--no-print-directory", "build/bench/wakeup"], cwd=REPO,
                   check=True)
    out = subprocess.run([WAKEUP, str(period_us), str(count)], capture_output=True,
                         text=True, check=True).stdout
    w = json.loads(out)
    return {"cpu_us": w["cpu_ns"] / w["wakeups"] / 1e3,
            "switches_per_wakeup": w["switches"] / w["wakeups"]}


def one_round(a, work, reverse, results):
    """Every configuration once, the round trip first; @reverse: the others
    in the reverse order; the machine's wake-up floor last."""
    rt = run_config(a, work, ROUND_TRIP, 0, [1])[1]
    results.setdefault("round trip", {}).setdefault(1, []).append(rt)
    plan = [(NO_BACKDATE, TRUTH_4, 0, False, [1, 8, 16, 32]),
            (BACKDATED, TRUTH_4, None, False, [1, 8, 16, 32]),
            (REALTIME, TRUTH_4, 0, True, [1, 8, 16, 32]),
            (TRUTH_1_LABEL, TRUTH_1, 0, False, [1, 4, 16, 32]),
            (TRUTH_1_LABEL + ", realtime", TRUTH_1, 0, True, [1, 4]),
            ("ceiling", CEILING, 0, False, [32, 64]),
            ("ceiling, realtime", CEILING, 0, True, [32, 64])]
    for label, spec, backdate, realtime, depths in (plan[::-1] if reverse else plan):
        got = run_config(a, work, spec, backdate, depths[::-1] if reverse else depths,
                         realtime)
        for d, m in got.items():
            results.setdefault(label, {}).setdefault(d, []).append(m)
    for period, count in ((8000, 300), (1000, 1000)):
        results.setdefault(FLOOR, {}).setdefault(period, []).append(wakeup_floor(period, count))


def run_config(a, work, spec, backdate_us, depths, realtime=False) -> dict:
    """@spec up on the run's backing file, fio at each of @depths, down.
    @backdate_us None: up's default (the round trip it measures)."""
    name = f"bench-{os.getpid()}"
    new = not os.path.exists(os.path.join(work, name + ".img"))
    rec = lifecycle.up(spec, "256m" if new else None, work, name, backdate_us, realtime)
    try:
        out = {}
        for d in depths:
            log(f"{spec} backdate {rec.backdate_us} us depth {d}")
            out[d] = measure(a, rec, d)
            out[d]["backdate_us"] = rec.backdate_us
        return out
    finally:
        lifecycle.down(rec.loop)


def expect_4x1ms(d):
    """C=4, D=1 ms, a closed loop of @d: IOPS and latency (us)."""
    return min(d, 4) / 1e-3, max(1.0, d / 4) * 1e3


EXPECT = {NO_BACKDATE: expect_4x1ms, BACKDATED: expect_4x1ms, REALTIME: expect_4x1ms,
          TRUTH_1_LABEL: lambda d: (125.0, d * 8000.0),
          TRUTH_1_LABEL + ", realtime": lambda d: (125.0, d * 8000.0)}


def med_range(xs, fmt="{:,.0f}"):
    xs = sorted(xs)
    if len(xs) == 1:
        return fmt.format(xs[0])
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(xs[0])}–{fmt.format(xs[-1])})"


def report(rep, results):
    rows = []
    for key, by_depth in results.items():
        if key == FLOOR:
            continue
        exp = EXPECT.get(key)
        for d in sorted(by_depth):
            ms = by_depth[d]
            iops = [m["iops"] for m in ms]
            p50 = [m["p50_us"] for m in ms]
            label = key
            if key == BACKDATED:
                label += f" ({med_range([m['backdate_us'] for m in ms])} us)"
            row = [label, d, med_range(iops)]
            if exp:
                ei, ep = exp(d)
                ri, rp = statistics.median(iops) / ei, statistics.median(p50) / ep
                row += [f"{ei:,.0f}", f"{ri:.3f}" + ("" if abs(ri - 1) <= 0.05 else " ✗"),
                        med_range(p50), f"{ep:,.0f}",
                        f"{rp:.3f}" + ("" if abs(rp - 1) <= 0.10 else " ✗")]
            else:
                row += ["", "", med_range(p50), "", ""]
            row += [med_range([m["utilisation"] for m in ms], "{:.2f}"),
                    med_range([m["in_flight_mean"] for m in ms], "{:.1f}"),
                    med_range([m["cpu_us_per_request"] for m in ms], "{:.1f}"),
                    med_range([m["wakeups_per_request"] for m in ms], "{:.2f}"),
                    med_range([m["reply_lag_p99_us"] for m in ms])]
            rows.append(row)
    rep.table(["configuration", "depth", "IOPS", "expected", "ratio", "p50 latency (us)",
               "expected", "ratio", "utilisation", "in flight (mean)",
               "daemon CPU/request (us)", "daemon wake-ups/request", "reply lag p99 (us)"], rows)
    rep.add("✗: outside the tolerance (IOPS 5%, p50 10%). Medians, the range of the "
            "rounds in parentheses.")
    rep.add()
    floor = results.get(FLOOR, {})
    if floor:
        rep.add("The machine's floor: one thread woken by a timerfd, nothing else "
                "(build/bench/wakeup PERIOD_US COUNT); a request at depth 1 needs two "
                "wake-ups of the daemon.")
        rep.add()
        rep.table(["timer period (us)", "CPU a wake-up (us)", "context switches a wake-up"],
                  [[p, med_range([m["cpu_us"] for m in floor[p]], "{:.1f}"),
                    med_range([m["switches_per_wakeup"] for m in floor[p]], "{:.2f}")]
                   for p in sorted(floor)])
        rep.add()


def run_bench(name, argv, parse_args, one_round, report) -> int:
    """fio-pack bench NAME for a modeled-device benchmark (device, models):
    the checks, the report's head, the rounds in alternating order, the
    report saved; 1 if a round failed."""
    a = parse_args(argv)
    try:
        lifecycle.check_root()
        lifecycle.check_fuse()
    except Error as e:
        print(f"fio-pack bench {name}: {e}", file=sys.stderr)
        return 2
    harness.unwind_on_signals()
    t_start = time.monotonic()
    fio_version = subprocess.run([a.fio, "--version"], capture_output=True,
                                 text=True).stdout.strip()
    rep = Report()
    rep.add("### Run of %s (%s)" % (time.strftime("%Y-%m-%d %H:%M %Z"),
                                    "quick mode" if a.quick else "full mode"))
    rep.add()
    rep.add("Command: `%s`" % harness.command_line(name, argv))
    rep.add()
    rep.table(["machine", ""], machine_info(a, fio_version) + [
        harness.build_row("moddev", state.moddev_path(), "tools/moddev", "engines/lib")])
    results, error = {}, None
    work = tempfile.mkdtemp(prefix=f"bench-{name}.", dir=a.dir)
    try:
        for rnd in range(a.repeats):
            one_round(a, work, rnd % 2 == 1, results)
        report(rep, results)
    except BaseException as e:
        error = "%s: %s" % (type(e).__name__, e)
        log("error: " + error)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rep.add("Total time of the run: %.0f s; load average at the end: %s." % (
        time.monotonic() - t_start, " ".join("%.2f" % x for x in os.getloadavg())))
    harness.save_report(a, rep, results, error)
    return 1 if error else 0



def main(argv):
    return run_bench("device", argv, parse_args, one_round, report)
