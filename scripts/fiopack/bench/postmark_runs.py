"""fio-pack bench postmark's runs: PostMark and the engine side by side
with the same settings (PostMark's report read, the machine's other work
waited out, the counts pm-sim says would run PostMark out of files capped),
the transaction count calibrated on PostMark, and a configuration's
measured pairs with their counters compared. bench/postmark.py is the
command: its manual, options, file systems and report."""

import json
import math
import os
import re
import resource
import subprocess
import sys

from fiopack.bench import harness
from fiopack.bench.harness import log, run

SEED = 42
MAX_LOCATION = 60  # PostMark: file names in an 81-byte buffer


class CounterMismatch(Exception):
    pass


# ---------------------------------------------------------------- reports

COUNTER_RES = [
    ("created", r"^\t(\d+) created \("),
    ("created_alone", r"^\t\tCreation alone: (\d+) files"),
    ("read", r"^\t(\d+) read \("),
    ("appended", r"^\t(\d+) appended \("),
    ("deleted", r"^\t(\d+) deleted \("),
    ("deleted_alone", r"^\t\tDeletion alone: (\d+) files"),
    ("data_read", r"^\t([0-9.]+ (?:megabytes|kilobytes|bytes)) read \("),
    ("data_written", r"^\t([0-9.]+ (?:megabytes|kilobytes|bytes)) written \("),
]
MIXED_RE = r"^\t\tMixed with transactions: (\d+) files"
TIME_RE = r"^\t(\d+) seconds total\n\t(\d+) seconds of transactions \((-?\d+) per second\)"


def parse_report(text, who):
    """PostMark's verbose report -> counters (strings as printed) and times."""
    out = {}
    for key, rx in COUNTER_RES:
        m = re.search(rx, text, re.M)
        if not m:
            raise RuntimeError("%s: no '%s' line in the report:\n%s" % (who, key, text[-3000:]))
        out[key] = m.group(1)
    mixed = re.findall(MIXED_RE, text, re.M)
    if len(mixed) != 2:
        raise RuntimeError("%s: expected 2 'Mixed with transactions' lines:\n%s" % (who, text))
    out["created_mixed"], out["deleted_mixed"] = mixed
    m = re.search(TIME_RE, text, re.M)
    if not m:
        raise RuntimeError("%s: no Time: section in the report:\n%s" % (who, text[-3000:]))
    times = {"total_s": int(m.group(1)), "tx_s": int(m.group(2)),
             "tx_rate_printed": int(m.group(3))}
    return out, times


COUNTER_KEYS = ["created", "created_alone", "created_mixed", "read", "appended",
                "deleted", "deleted_alone", "deleted_mixed", "data_read", "data_written"]


# ---------------------------------------------------------------- runners

def rusage_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime, r.ru_stime


def pmrc(c, transactions, location):
    return "\n".join([
        "set location %s" % location,
        "set number %d" % c["number"],
        "set transactions %d" % transactions,
        "set size %d %d" % c["size"],
        "set read %d" % c["read"],
        "set write %d" % c["write"],
        "set buffering %s" % ("true" if c["buffering"] else "false"),
        "set seed %d" % SEED,
        "set bias read 5",
        "set bias create 5",
        "set report verbose",
        "run", "quit", ""])


def wait_quiet(a):
    """`sync`, then harness.wait_quiet. Returns seconds waited (the last
    1 s sample included: wait_quiet.total counts them)."""
    subprocess.run(["sync"], check=True)
    waited = harness.wait_quiet(a, " before the next run")
    wait_quiet.total += waited
    return waited


wait_quiet.total = 0.0


_sim_cache = {}


def out_of_files_cap(a, workdir, cfg, n):
    """PostMark's file count is a random walk from `number` (bounded by the
    2 x number table); when it reaches 0 PostMark prints "out of files!" and
    no report. With the fixed seed that happens at a fixed transaction, which
    pm-sim finds without a file system. Returns (n or the largest safe count
    below it, 3 significant digits, the transaction that ran out or None)."""
    key = (json.dumps(cfg, sort_keys=True), n)
    if key in _sim_cache:
        return _sim_cache[key]
    path = os.path.join(workdir, "sim.cfg")
    with open(path, "w") as f:
        f.write(pmrc(cfg, n, "/nonexistent"))
    out = run([a.pm_sim, path])[0]
    if "out of files" not in out:
        _sim_cache[key] = (n, None)
        return n, None
    p = subprocess.Popen([a.pm_sim, "--ops", path], stdout=subprocess.PIPE, text=True)
    last = 0
    for line in p.stdout:
        if line.startswith("tx-end "):
            last = int(line.split()[1])
        elif line.startswith("out-of-files"):
            break
    p.stdout.close()
    p.kill()
    p.wait()
    if last < 100:
        raise RuntimeError("pm-sim: this configuration runs out of files after %d "
                           "transactions" % last)
    e = int(math.floor(math.log10(last))) - 2
    cap = int(last // 10 ** e * 10 ** e)
    with open(path, "w") as f:
        f.write(pmrc(cfg, cap, "/nonexistent"))
    if "out of files" in run([a.pm_sim, path])[0]:
        raise RuntimeError("pm-sim: %d transactions still run out of files" % cap)
    _sim_cache[key] = (cap, last + 1)
    return cap, last + 1


class Runner:
    def __init__(self, a, workdir, remake=None):
        self.a = a
        self.workdir = workdir   # configs, reports, opstats (not on the fs under test)
        self.seq = 0
        self.remake = remake or {}   # base -> makes a fresh file system there

    def _fresh_dir(self, base):
        self.seq += 1
        if base in self.remake:
            self.remake[base]()
        d = os.path.join(base, "r%03d" % self.seq)
        os.mkdir(d)
        if len(d) > MAX_LOCATION:
            raise RuntimeError("location %s is too long for PostMark (%d > %d characters)"
                               % (d, len(d), MAX_LOCATION))
        return d

    @staticmethod
    def _done_with(d, who):
        left = os.listdir(d)
        if left:
            raise RuntimeError("%s left %d entries in %s (e.g. %s)" % (who, len(left), d, left[:5]))
        os.rmdir(d)

    def postmark(self, cfg, transactions, base):
        d = self._fresh_dir(base)
        text = pmrc(cfg, transactions, d)
        cfgfile = os.path.join(self.workdir, "pm-%03d.cfg" % self.seq)
        with open(cfgfile, "w") as f:
            f.write(text)
        wait_quiet(self.a)
        u0, s0 = rusage_children()
        b0 = harness.cpu_busy_s()
        out, err, wall = run([self.a.postmark, cfgfile], cwd=self.workdir)
        b1 = harness.cpu_busy_s()
        u1, s1 = rusage_children()
        self._done_with(d, "postmark")
        counters, times = parse_report(out, "postmark")
        tx_s = times["tx_s"]
        return {"prog": "postmark", "transactions": transactions, "counters": counters,
                "tx_s": tx_s, "total_s": times["total_s"],
                "tx_rate": transactions / tx_s, "tx_rate_printed": times["tx_rate_printed"],
                "wall": wall, "utime": u1 - u0, "stime": s1 - s0, "config_text": text,
                "other_cpus": max(0.0, (b1 - b0 - (u1 - u0) - (s1 - s0)) / wall),
                "report": out[out.find("Time:"):]}

    def null_per_tx(self, cfg, e):
        """fio's own CPU us a transaction: its null engine doing the engine
        run @e's I/Os (reads as reads; writes, deletes and syncs as writes),
        per I/O, times the run's I/Os per transaction."""
        ios = e["fio_ios"]
        writes = ios["write"] + ios["trim"] + ios["sync"]
        us = harness.fio_null_us(self.a.fio, ios["read"], writes, cfg["write"],
                                 cfg["number"] * cfg["size"][1])
        return us * (ios["read"] + writes) / e["transactions"]

    def engine(self, cfg, transactions, base):
        d = self._fresh_dir(base)
        c = cfg
        rep = os.path.join(self.workdir, "eng-%03d.report" % self.seq)
        ops = os.path.join(self.workdir, "eng-%03d.opstats" % self.seq)
        cmd = [self.a.fio, "--output-format=json", "--name=pm",
               "--ioengine=external:%s" % self.a.engine,
               "--pm_location=%s" % d,
               "--pm_number=%d" % c["number"],
               "--pm_transactions=%d" % transactions,
               "--pm_size_low=%d" % c["size"][0], "--pm_size_high=%d" % c["size"][1],
               "--pm_read_block=%d" % c["read"], "--pm_write_block=%d" % c["write"],
               "--pm_buffering=%d" % (1 if c["buffering"] else 0),
               "--pm_seed=%d" % SEED, "--pm_bias_read=5", "--pm_bias_create=5",
               "--pm_report=verbose", "--pm_whole_seconds=1",
               "--pm_report_file=%s" % rep, "--pm_opstats_file=%s" % ops]
        wait_quiet(self.a)
        u0, s0 = rusage_children()
        b0 = harness.cpu_busy_s()
        out, err, wall = run(cmd, cwd=self.workdir)
        b1 = harness.cpu_busy_s()
        u1, s1 = rusage_children()
        self._done_with(d, "engine")
        job = harness.fio_json(out)["jobs"][0]
        with open(rep) as f:
            report = f.read()
        with open(ops) as f:
            lines = [json.loads(x) for x in f.read().splitlines() if x.strip()]
        if len(lines) != 1:
            raise RuntimeError("engine: %d opstats lines in %s" % (len(lines), ops))
        st = lines[0]
        pm = st["postmark"]
        counters, times = parse_report(report, "engine")
        if not st.get("finished") or pm["transactions"] != transactions:
            raise RuntimeError("engine: run not finished or %s transactions instead of %d"
                               % (pm["transactions"], transactions))
        # the engine's own counters must be its report's
        for k in ("created", "created_alone", "read", "appended", "deleted", "deleted_alone"):
            if str(pm[k]) != counters[k]:
                raise CounterMismatch("engine: opstats %s=%s but its report says %s"
                                      % (k, pm[k], counters[k]))
        ph = pm["phase_ns"]
        txo = st["ops"].get("transaction", {})
        in_tx_ns = txo.get("lat_mean_ns", 0) * txo.get("ops", 0)
        return {"prog": "engine", "transactions": transactions, "counters": counters,
                "tx_ns": ph["transactions"], "create_ns": ph["create"], "delete_ns": ph["delete"],
                "tx_rate": transactions / (ph["transactions"] / 1e9),
                "tx_s_whole": times["tx_s"], "total_s_whole": times["total_s"],
                "tx_rate_whole": transactions / times["tx_s"],
                "in_tx_share": in_tx_ns / ph["transactions"] if ph["transactions"] else None,
                "tx_lat_mean_ns": txo.get("lat_mean_ns"),
                "tx_lat_p99_ns": txo.get("lat_p99_ns"),
                "fio_job_runtime_ms": job.get("job_runtime"),
                "fio_usr_cpu": job.get("usr_cpu"), "fio_sys_cpu": job.get("sys_cpu"),
                "fio_sync_ios": job.get("sync", {}).get("total_ios"),
                "fio_ios": {d: job.get(d, {}).get("total_ios", 0)
                            for d in ("read", "write", "trim", "sync")},
                "job_cpu": harness.job_cpu_s(job),
                "wall": wall, "utime": u1 - u0, "stime": s1 - s0,
                "other_cpus": max(0.0, (b1 - b0 - (u1 - u0) - (s1 - s0)) / wall),
                "opstats": st, "report": report, "cmd": cmd}


def compare_counters(p, e):
    diffs = [(k, p["counters"][k], e["counters"][k]) for k in COUNTER_KEYS
             if p["counters"][k] != e["counters"][k]]
    return diffs


# ---------------------------------------------------------------- calibration

def round_sig(x, digits=2):
    if x <= 0:
        return 0
    e = int(math.floor(math.log10(x))) - (digits - 1)
    return int(round(x / 10 ** e) * 10 ** e)


def capped(rn, a, cfg, t, label, res):
    cap, oof = out_of_files_cap(a, rn.workdir, cfg, t)
    if oof:
        log("%s: %d transactions would run PostMark out of files (at transaction %d): "
            "capped at %d" % (label, t, oof, cap))
        res["cap"] = {"out_of_files_at": oof, "cap": cap}
    return cap


def calibrate(rn, a, cfg, base, label, res):
    """PostMark probes until its phase shows >= a.probe_seconds; returns the
    transaction count for a.target_seconds and the probe records."""
    t = a.probe_start
    probes = []
    while True:
        t = capped(rn, a, cfg, t, label, res)
        r = rn.postmark(cfg, t, base)
        probes.append({"transactions": t, "tx_s": r["tx_s"], "wall": r["wall"]})
        log("%s: probe %d transactions: PostMark %d s of transactions (wall %.1f s)"
            % (label, t, r["tx_s"], r["wall"]))
        if r["tx_s"] >= a.probe_seconds or len(probes) >= 6 or res.get("cap"):
            break
        factor = 10 if r["tx_s"] <= 1 else min(10, math.ceil(a.probe_seconds * 1.5 / r["tx_s"]))
        t *= max(3, factor)
    rate = t / r["tx_s"]
    chosen = capped(rn, a, cfg, max(1000, round_sig(rate * a.target_seconds, 2)), label, res)
    log("%s: PostMark ~%.0f tx/s -> %d transactions (~%d s)"
        % (label, rate, chosen, a.target_seconds))
    return chosen, probes, rate


# ---------------------------------------------------------------- measuring

def measure(rn, a, name, cfg, base, fsname, repeats, tx_fixed):
    label = "%s/%s" % (fsname, name)
    res = {"config": name, "fs": fsname, "settings": cfg, "runs": [], "pairs": [],
           "mismatches": []}
    if tx_fixed:
        res["transactions"] = capped(rn, a, cfg, tx_fixed, label, res)
        res["calibrated"] = False
    else:
        t, probes, rate = calibrate(rn, a, cfg, base, label, res)
        res.update(transactions=t, calibrated=True, probes=probes, probe_rate=rate)
    t = res["transactions"]
    r = 0
    while r < repeats:
        order = ["postmark", "engine"] if r % 2 == 0 else ["engine", "postmark"]
        pair = {}
        for prog in order:
            x = getattr(rn, prog)(cfg, t, base)
            x["repeat"] = r
            if (r == 0 and prog == "postmark" and res["calibrated"] and
                    x["tx_s"] < a.min_seconds and not res.get("recalibrated") and
                    not res.get("cap")):
                # the probe's estimate was off: scale from this run, start again
                t = round_sig(t / x["tx_s"] * max(a.target_seconds, a.min_seconds * 1.15), 2)
                t = capped(rn, a, cfg, t, label, res)
                log("%s: PostMark's phase was %d s < %d s: recalibrated to %d transactions, "
                    "starting the repeats again" % (label, x["tx_s"], a.min_seconds, t))
                res["probes"].append({"transactions": x["transactions"], "tx_s": x["tx_s"],
                                      "wall": x["wall"], "recalibration": True})
                res.update(transactions=t, recalibrated=True)
                break
            res["runs"].append(x)
            pair[prog] = x
            if prog == "postmark":
                log("%s #%d postmark: %d s of transactions, %.0f tx/s (wall %.1f s, usr %.1f "
                    "sys %.1f, other CPUs %.2f)" % (label, r + 1, x["tx_s"], x["tx_rate"],
                                                    x["wall"], x["utime"], x["stime"],
                                                    x["other_cpus"]))
            else:
                log("%s #%d engine:   %.2f s of transactions, %.0f tx/s (wall %.1f s, usr %.1f "
                    "sys %.1f, other CPUs %.2f)" % (label, r + 1, x["tx_ns"] / 1e9, x["tx_rate"],
                                                    x["wall"], x["utime"], x["stime"],
                                                    x["other_cpus"]))
        if len(pair) < 2:
            continue
        diffs = compare_counters(pair["postmark"], pair["engine"])
        if diffs:
            msg = "%s repeat %d: COUNTER MISMATCH postmark vs engine: %s" % (
                label, r + 1, "; ".join("%s %s vs %s" % d for d in diffs))
            log(msg)
            sys.stderr.write("\n*** %s ***\n\n" % msg)
            res["mismatches"].append(msg)
        ratio = pair["engine"]["tx_rate"] / pair["postmark"]["tx_rate"]
        ratio_whole = pair["engine"]["tx_rate_whole"] / pair["postmark"]["tx_rate"]
        disturbed = max(pair["postmark"]["other_cpus"], pair["engine"]["other_cpus"]) \
            > a.quiet_cpus
        res["pairs"].append({"ratio": ratio, "ratio_whole": ratio_whole,
                             "counters_identical": not diffs, "disturbed": disturbed,
                             "null_us": rn.null_per_tx(cfg, pair["engine"])})
        log("%s #%d ratio engine/PostMark %.3f%s%s" % (
            label, r + 1, ratio, "" if not diffs else "  (COUNTERS DIFFER)",
            "  (disturbed: other work kept more than %.2f CPUs busy)" % a.quiet_cpus
            if disturbed else ""))
        r += 1
    # the counters of every run, not only within pairs
    first = res["runs"][0]["counters"]
    for x in res["runs"][1:]:
        d = [k for k in COUNTER_KEYS if x["counters"][k] != first[k]]
        if d:
            msg = "%s: counters differ between runs (%s)" % (label, ", ".join(d))
            if msg not in res["mismatches"]:
                res["mismatches"].append(msg)
                log(msg)
    res["counters"] = first
    return res
