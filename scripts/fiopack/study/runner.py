"""The study itself: the plan of runs (sweep points x targets x hosts x
repeats, interleaved or grouped), running each with its resolved job file
and metadata, resuming, and the progress line."""
import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fiopack import REPO
from fiopack.catalogue import eval_metric, is_precondition, split_json
from fiopack.study.common import (STDERR_TAIL, StudyError, check_job_text, find_fio, hms,
                                  scenario_params,
                                  sha256_text, target_envs, utc_now, value_of, write_atomic,
                                  write_json_atomic)
from fiopack.study.jobfile import (derive_job, option_names, precondition_problem,
                                   precondition_sizes)
from fiopack.study.targets import fio_messages


# Metrics for the progress line
# ---------------------------------------------------------------------------

def headline(sc: dict, result: dict) -> str:
    entries = [e for e in (result.get("jobs") or result.get("client_stats") or [])
               if e.get("jobname") != "All clients"]
    parts = []
    for m in sc.get("metrics") or []:
        pick = [e for e in entries if e.get("jobname") == m.get("job")] if m.get("job") \
            else entries
        if len(pick) != 1:
            continue
        try:
            v = eval_metric(m["expr"], pick[0])
        except Exception:
            continue
        if isinstance(v, (int, float)):
            parts.append("%s %.4g %s" % (m.get("name", "?"), v, m.get("unit", "")))
    return ", ".join(p.strip() for p in parts)


def phases(text: str, entries: list) -> dict:
    """The run's jobs in two parts, the precondition and the measured
    jobs: {"precondition": [...], "measured": [...]}, each job with its
    clones, the bytes it read and wrote, and its time (the longest of its
    clones' directions, fio's runtime in ms). A precondition also gives
    the bytes it is sized for: a reader sees that it wrote them once."""
    sizes = precondition_sizes(text)
    jobs = {}
    for e in entries:
        j = jobs.setdefault(e.get("jobname"), {"job": e.get("jobname"), "clones": 0,
                                              "read_bytes": 0, "write_bytes": 0,
                                              "runtime_ms": 0})
        j["clones"] += 1
        for d in ("read", "write", "trim"):
            st = e.get(d) or {}
            if d != "trim":
                j[d + "_bytes"] += st.get("io_bytes", 0) or 0
            j["runtime_ms"] = max(j["runtime_ms"], st.get("runtime", 0) or 0)
    out = {"precondition": [], "measured": []}
    for name, j in jobs.items():
        if is_precondition(name):
            j["size_bytes"] = sizes.get(name)
            out["precondition"].append(j)
        else:
            out["measured"].append(j)
    return out


# ---------------------------------------------------------------------------
# The study
# ---------------------------------------------------------------------------

def parse_sweeps(sweeps: list, sc: dict) -> list:
    params = scenario_params(sc)
    out = []
    for text in sweeps:
        name, sep, vals = text.partition("=")
        if not sep:
            raise StudyError(f"--sweep {text!r}: expected PARAM=V1,V2,...")
        if name not in params:
            alias = [p for p, opts in params.items() if name in opts]
            hint = f" (the fio option {name} is swept as {alias[0]})" if alias else ""
            avail = ", ".join(f"{p} ({'/'.join(o)})" for p, o in params.items()) or "none"
            raise StudyError(f"--sweep {name}: not a parameter of scenario {sc['id']}{hint}; "
                             f"its parameters: {avail}")
        if any(name == n for n, _ in out):
            raise StudyError(f"--sweep {name}: given twice")
        values = [check_job_text(v.strip(), f"--sweep {name}") for v in vals.split(",")]
        if not values or any(not v for v in values):
            raise StudyError(f"--sweep {text!r}: empty value")
        out.append((name, values))
    return out


def parse_sets(sets: list, sweeps: list, sc: dict) -> list:
    params = scenario_params(sc)
    swept = {o: n for n, _ in sweeps for o in params[n]}
    out = []
    for text in sets:
        opt, sep, val = text.partition("=")
        opt = opt.strip()
        if not sep or not opt or not re.fullmatch(r"[A-Za-z0-9_:.-]+", opt):
            raise StudyError(f"--set {text!r}: expected OPTION=VALUE")
        if opt in swept:
            raise StudyError(f"--set {opt}: also swept as {swept[opt]}")
        out.append((opt, check_job_text(val, f"--set {opt}")))
    return out


def build_plan(sweeps, targets, servers, repeats, order) -> list:
    points = [dict(zip([n for n, _ in sweeps], combo))
              for combo in itertools.product(*[v for _, v in sweeps])]
    hosts = servers or [None]
    if order == "interleaved":
        combos = [(r, h, t, p) for r in range(1, repeats + 1) for h in hosts
                  for t in targets for p in points]
    else:
        combos = [(r, h, t, p) for h in hosts for t in targets for p in points
                  for r in range(1, repeats + 1)]
    return [{"run": i + 1, "repeat": r, "host": h["label"] if h else "local",
             "target": t["label"], "params": {k: value_of(v) for k, v in p.items()},
             "values": p}
            for i, (r, h, t, p) in enumerate(combos)]


class Study:
    def __init__(self, cfg: dict, out: Path, fio: str, quiet: bool):
        self.cfg, self.out, self.fio, self.quiet = cfg, out, fio, quiet
        self.sc = cfg["scenario"]
        self.servers = {s["label"]: s for s in cfg["servers"]}
        self.targets = {t["label"]: t for t in cfg["targets"]}
        self.paths = [REPO / j["path"] if not Path(j["path"]).is_absolute() else Path(j["path"])
                      for j in cfg["job_files"]]
        self.interrupted = False

    def log(self, msg: str):
        if not self.quiet:
            print(msg, file=sys.stderr, flush=True)

    def overrides(self, run: dict) -> list:
        params = scenario_params(self.sc)
        ov = []
        for name, val in run["values"].items():
            for opt in params[name]:
                ov.append((option_names(self.fio, opt), f"{opt}={val}"))
        for opt, val in self.cfg["set"]:
            ov.append((option_names(self.fio, opt), f"{opt}={val}"))
        return ov

    def derived(self, run: dict) -> tuple:
        t = self.targets[run["target"]]
        variables = dict(self.cfg["variables"])
        if t["path"] is not None:
            for tenv in target_envs(self.cfg["target_spec"]):
                variables[tenv] = t["path"]
        remote = run["host"] != "local"
        engine_dir = self.cfg["remote_engine_dir"] if remote else self.cfg["engine_dir"]
        desc = " ".join(f"{k}={v}" for k, v in run["values"].items())
        header = [f"derived by scripts/fio-pack study: run {run['run']} of study "
                  f"{self.sc['id']}, repeat {run['repeat']}, host {run['host']}",
                  f"target {t['label']}={t['path']}" + (f"  sweep {desc}" if desc else ""),
                  "from " + ", ".join(f"{j['path']} (sha256 {j['sha256'][:16]})"
                                      for j in self.cfg["job_files"]),
                  ""]
        repo_dir = self.cfg.get("remote_repo") if remote else str(REPO)
        tspec = self.cfg["target_spec"]
        text = derive_job(self.paths, self.overrides(run), variables, engine_dir, header,
                          repo_dir, file_target=t["path"] if tspec["kind"] == "file-or-device"
                          else None, target_vars=target_envs(tspec))
        return text, variables

    def command(self, run: dict, jobfile: Path) -> list:
        # json+ (--output-format): the histograms the percentile plots draw
        cmd = [self.fio, f"--output-format={self.cfg.get('output_format', 'json')}"]
        if run["host"] != "local":
            cmd.append(f"--client={self.servers[run['host']]['client']}")
        if not self.sc.get("writes_target"):
            cmd.append("--readonly")    # after --client=: sent to the server
        return cmd + [str(jobfile)]

    def run_fio(self, cmd, runs) -> tuple:
        """Runs fio (@cmd) to its end: (exit status, stdout, stderr); on
        Ctrl-C it is stopped and the study marked interrupted."""
        with tempfile.TemporaryFile(dir=str(runs)) as so, \
                tempfile.TemporaryFile(dir=str(runs)) as se:
            proc = subprocess.Popen(cmd, cwd=str(REPO), stdout=so, stderr=se,
                                    stdin=subprocess.DEVNULL)
            try:
                rc = proc.wait()
            except KeyboardInterrupt:
                self.interrupted = True
                stop_fio(proc)
                raise
            so.seek(0)
            se.seek(0)
            return rc, so.read().decode(errors="replace"), se.read().decode(errors="replace")

    @staticmethod
    def job_problem(text, entries):
        """What went wrong in the jobs fio reported (None: nothing)."""
        if not entries:
            return "fio ran no job"
        if precondition_problem(text, entries):
            return precondition_problem(text, entries)
        if any(e.get("error") for e in entries):
            bad = [e for e in entries if e.get("error")]
            return f"job {bad[0].get('jobname')} ended with error {bad[0]['error']}"
        return None

    def remote_meta(self, run, pre, entries) -> dict:
        """Where a client/server run ran: the server, and what fio's client
        says of each job's host."""
        srv = self.servers[run["host"]]
        m = re.search(r"^<([^>]*)> ", pre, re.M)
        return {
            "host": srv["host"], "port": srv["port"],
            "server_name": m.group(1) if m else None,
            "client_stats": [{"jobname": e.get("jobname"), "hostname": e.get("hostname"),
                              "port": e.get("port"), "error": e.get("error")}
                             for e in entries],
        }

    def run_one(self, run: dict) -> dict:
        n = "%04d" % run["run"]
        runs = self.out / "runs"
        text, variables = self.derived(run)
        jobfile = runs / f"{n}.fio"
        write_atomic(jobfile, text)
        for stale in (runs / f"{n}.json", runs / f"{n}.stdout"):
            if stale.exists():
                stale.unlink()
        cmd = self.command(run, jobfile)
        started = utc_now()
        t0 = time.monotonic()
        rc, stdout, stderr = self.run_fio(cmd, runs)
        ended = utc_now()
        elapsed = time.monotonic() - t0
        pre, js = split_json(stdout)
        result, problem = None, None
        if js is not None:
            try:
                result = json.loads(js)
            except ValueError as e:
                problem = f"fio's JSON does not parse: {e}"
        if result is not None:
            write_atomic(runs / f"{n}.json", js)
        else:
            write_atomic(runs / f"{n}.stdout", stdout)
            problem = problem or "fio printed no JSON"
        remote = run["host"] != "local"
        entries = []
        if result is not None:
            entries = [e for e in (result.get("client_stats" if remote else "jobs") or [])
                       if e.get("jobname") != "All clients"]
            problem = self.job_problem(text, entries)
        if rc != 0:
            problem = f"fio exit {rc}" + (f": {problem}" if problem else "")
        if problem:
            msgs = fio_messages(pre + "\n" + stderr)
            if msgs:
                problem += f" ({msgs[-1]})"
        t = self.targets[run["target"]]
        meta = {
            "run": run["run"],
            "scenario": self.sc["id"],
            "job_file": self.cfg["job_files"][0]["path"],
            "job_sha256": self.cfg["job_files"][0]["sha256"],
            "job_files": self.cfg["job_files"],
            "derived_sha256": sha256_text(text),
            "params": run["params"],
            "set": dict(self.cfg["set"]),
            "target": {"label": t["label"], "path": t["path"], "kind": t["kind"],
                       "device": t["device"]},
            "repeat": run["repeat"],
            "repeats": self.cfg["repeats"],
            "host": run["host"],
            "remote": None,
            "fio_version": result.get("fio version") if result else None,
            "kernel": None if remote else os.uname().release,
            "command": cmd,
            "variables": variables,
            "exit_code": rc,
            "ok": problem is None,
            "problem": problem,
            **phases(text, entries),
            "started": started,
            "ended": ended,
            "elapsed_s": round(elapsed, 3),
            "stderr_tail": stderr[-STDERR_TAIL:],
            "stdout_text": pre[-STDERR_TAIL:],
        }
        if remote:
            meta["remote"] = self.remote_meta(run, pre, entries)
        write_json_atomic(runs / f"{n}.meta.json", meta)
        meta["_result"] = result
        return meta

    def execute(self, resume: bool) -> int:
        plan = self.cfg["plan"]
        total = len(plan)
        (self.out / "runs").mkdir(parents=True, exist_ok=True)
        todo = []
        for run in plan:
            mp = self.out / "runs" / ("%04d.meta.json" % run["run"])
            if resume and mp.exists():
                try:
                    m = json.loads(mp.read_bytes())
                except (ValueError, RecursionError):
                    m = None        # an unreadable meta file: the run is done again
                if isinstance(m, dict) and m.get("ok") is True:
                    continue
            todo.append(run)
        skipped = total - len(todo)
        if skipped:
            self.log(f"resuming: {skipped} of {total} runs already complete")
        t_start = time.monotonic()
        durations, failed = [], []
        self.cfg["status"] = "running"
        write_json_atomic(self.out / "study.json", self.cfg)
        try:
            for i, run in enumerate(todo):
                elapsed = time.monotonic() - t_start
                left = ("about %s left" % hms(sum(durations) / len(durations) * (len(todo) - i))
                        if durations else "time left unknown")
                desc = " ".join(f"{k}={v}" for k, v in run["values"].items())
                host = f" host={run['host']}" if run["host"] != "local" else ""
                self.log(f"[{run['run']}/{total}] {desc + ' ' if desc else ''}target={run['target']}"
                         f"{host} repeat {run['repeat']}/{self.cfg['repeats']} ... "
                         f"elapsed {hms(elapsed)}, {left}")
                t0 = time.monotonic()
                meta = self.run_one(run)
                durations.append(time.monotonic() - t0)
                if meta["ok"]:
                    h = headline(self.sc, meta["_result"])
                    self.log(f"    ok in {meta['elapsed_s']:.1f} s" + (f": {h}" if h else ""))
                else:
                    failed.append(run["run"])
                    self.log(f"    FAILED: {meta['problem']}")
        except KeyboardInterrupt:
            self.cfg["status"] = "interrupted"
            self.cfg["ended"] = utc_now()
            write_json_atomic(self.out / "study.json", self.cfg)
            print(f"fio-pack study: interrupted; complete runs are kept: continue with "
                  f"{resume_command(self.out, self.fio)}", file=sys.stderr)
            return 130
        self.cfg["status"] = "complete" if not failed else "complete with failures"
        self.cfg["ended"] = utc_now()
        self.cfg["failed_runs"] = failed
        write_json_atomic(self.out / "study.json", self.cfg)
        ran = len(todo)
        counts = f"{ran - len(failed)} ok, {len(failed)} failed"
        if skipped:
            counts = f"{ran} run now ({counts}), {skipped} already complete"
        print(f"study {self.sc['id']}: {total} runs: {counts} in "
              f"{hms(time.monotonic() - t_start)}; results in {self.out}", file=sys.stderr)
        if failed:
            print("failed runs: " + ", ".join("%04d" % r for r in failed)
                  + f" (see {self.out}/runs/NNNN.meta.json)", file=sys.stderr)
            print(f"run them again, once fixed, with: {resume_command(self.out, self.fio)}",
                  file=sys.stderr)
        return 1 if failed else 0


def resume_command(out: Path, fio: str) -> str:
    """The exact command that resumes the study in @out with this fio."""
    cmd = [str(REPO / "scripts" / "fio-pack"), "study", "run", "--resume", str(Path(out).resolve())]
    try:
        default = find_fio(None)
    except StudyError:
        default = None
    if fio != default:
        cmd += ["--fio", fio]
    return shlex.join(cmd)


def stop_fio(proc: subprocess.Popen) -> None:
    """fio got the terminal's SIGINT too; make sure it ends either way."""
    for sig, wait in ((signal.SIGINT, 30), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass


# ---------------------------------------------------------------------------
