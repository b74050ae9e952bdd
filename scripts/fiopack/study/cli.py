"""fio-pack study - run a scenario of the job library over a parameter sweep

SYNOPSIS
    fio-pack study [run] SCENARIO --target LABEL=PATH [--target LABEL=PATH ...]
             [--sweep PARAM=V1,V2,...]... [--set OPTION=VALUE]... [--repeats N]
             [--order interleaved|grouped] [--output-format json|json+]
             [--server HOST[:PORT]]...
             [--confirm-overwrite DEVICE] [--out DIR] [--catalogue FILE]
             [--fio PATH] [--engine-dir DIR] [--remote-engine-dir DIR]
             [--remote-repo DIR] [--dry-run] [--quiet]
    fio-pack study run --resume DIR [--fio PATH] [--quiet]
    fio-pack study list [--catalogue FILE]

DESCRIPTION
    A study is one scenario of jobs/catalogue.json (e.g. sysbench-rndrd, the
    002 article's sysbench random reads) run at every point of a parameter
    sweep (e.g. threads 1,2,4,8,16,32), on one or more targets (directories or
    devices, each with a label such as "ssd" or "raid10"), N times over. Every
    fio run's JSON result is stored with the exact job file that produced it
    and what is known about the run (device model, kernel, fio version, times,
    exit code) in a results directory that the analysis scripts read.

    For every run the scenario's job file is rewritten into a fully resolved
    copy, stored beside the result:
      * every ${VAR} is replaced as fio would replace it: the scenario's target
        variable (e.g. ${FIO_DIR}) by the target's path, any other variable by
        its value in this command's environment, or by nothing when unset;
      * a file or device target (target kind file-or-device) replaces the
        job's own file: no directory=, filename= the target;
      * each sweep parameter and each --set option becomes OPTION=VALUE in
        every job section (an existing line for it is replaced; [global]
        lines for it are replaced too), except that nothing shortens a
        precondition: a section named precondition* (the job that writes
        what the measured jobs read) keeps no runtime, time_based,
        number_ios or io_size from a --set, a sweep or [global], and is
        written once whatever the sweep: numjobs=1, its own iodepth (a
        sweep or --set of numjobs or iodepth is the measured jobs');
      * ioengine=external:${FIO_PACK_ENGINES}/NAME.so becomes the absolute
        path of the engine (--engine-dir; with --server, --remote-engine-dir);
      * read_iolog=PATH and dbr_trace=PATH relative to the repository (the
        replay logs of the IOzone jobs, the database traces) become absolute
        (with --server, under --remote-repo);
      * include directives are inlined; several job files of one scenario are
        merged into one file with the same meaning (each file's [global]
        options copied into its job sections, a stonewall between files).
    Nothing in the derived file depends on the environment of the host that
    parses it: with fio's client/server mode the client sends the job text
    and the server would otherwise expand ${VAR} in its own environment.

    Scenarios that do not only read their target (writes_target in the
    catalogue) are refused on a block device unless --confirm-overwrite names
    that exact device; a mounted or otherwise used device is refused always.
    Scenarios that only read are run with fio --readonly, so fio itself
    refuses any job that would write.

RESULTS
    DIR/study.json         the command, the scenario entry, sweep, --set
                           options, targets, servers, repeats, order, fio's
                           output format (json or json+), plan,
                           pack version (git describe), start and end.
    DIR/runs/NNNN.fio      the derived job file of run NNNN.
    DIR/runs/NNNN.json     fio's JSON (or json+) output exactly as printed
                           (from its first line "{"), absent if fio printed
                           none.
    DIR/runs/NNNN.stdout   fio's whole standard output, only when it held
                           no JSON document.
    DIR/runs/NNNN.meta.json  run number, scenario, job file and hashes,
                           params, target (label, path, kind, device from
                           sysfs), repeat, host, fio version, kernel, exit
                           code, ok, times, stderr tail. Written last: a run
                           is complete when its meta file exists.
    Every file is written to a temporary name and renamed, so an interrupted
    study holds complete runs only. docs/study.md describes every field.

EXAMPLES
    fio-pack study list
    fio-pack study sysbench-rndrd --sweep threads=1,2,4,8,16,32 --repeats 3 \\
        --target intel320=/mnt/ssd/sb --target raid10=/mnt/raid/sb \\
        --set runtime=60 --set size=8g
    fio-pack study fio-randread-64 --target sdb=/dev/sdb --confirm-overwrite /dev/sdb \\
        --repeats 5
    fio-pack study sysbench-rndrd --sweep threads=1,8 --target ssd=/srv/sb \\
        --server db1 --server db2:8766 --remote-engine-dir /opt/fio-pack/lib
    fio-pack study run --resume results/sysbench-rndrd-20240101T120000Z

EXIT STATUS
    0 every run succeeded; 1 at least one run failed (the study went on and
    recorded it); 2 bad input or a refused target, server or scenario
    (nothing was run or written); 130 interrupted.
"""
import argparse
import datetime
import os
import shlex
import signal
import socket
import sys
from pathlib import Path

from fiopack import REPO, UserError, documents, outputs
from fiopack.catalogue import DEFAULT as DEFAULT_CATALOGUE
from fiopack.manpage import ManParser, sections
from fiopack.options import number
from fiopack.study.common import (StudyError, find_scenario, job_paths,
                                  check_job_text, load_catalogue, pack_version, read_document,
                                  repo_relative,
                                  scenario_params, scenario_target, sha256_file, target_envs,
                                  utc_now, value_of)
from fiopack.study.runner import Study, build_plan, parse_sets, parse_sweeps
from fiopack.study.targets import (check_local_target, check_remote_target, check_server,
                                   device_info, parse_server, parse_target)
from fiopack.study.jobfile import job_engines, job_variables
from fiopack.engines import engine_dir as engines_dir
from fiopack.study.common import find_fio, fio_version

# Command line
# ---------------------------------------------------------------------------

class _Parser(ManParser):
    def error(self, message):
        raise StudyError(message)


def _add_plan_options(g):
    """What is run: the scenario, its targets, the sweep and the order."""
    g.add_argument("scenario", nargs="?", metavar="SCENARIO",
                   help="scenario id from the catalogue (`fio-pack study list`)")
    g.add_argument("--target", action="append", default=[], metavar="LABEL=PATH", help="""\
a directory, file or device to run on, labelled
LABEL in the results (letters, digits, . _ -).
Repeatable. With --server the path is the path on
each server. Not used by scenarios whose target
kind is "none".""")
    g.add_argument("--sweep", action="append", default=[], metavar="PARAM=V1,V2", help="""\
values of one of the scenario's sweep parameters
(`fio-pack study list` shows them, e.g. threads ->
numjobs). Repeatable: several sweeps make a grid,
the first given varying slowest.""")
    g.add_argument("--set", action="append", default=[], dest="sets", metavar="OPTION=VALUE",
                   help="""\
a fixed fio option for every run (runtime=60,
size=4g, ...), set in every job section. Repeatable.""")
    g.add_argument("--repeats", type=number(int, low=1), metavar="N",
                   help="runs of every sweep point on every target (default 1).")
    g.add_argument("--output-format", choices=("json", "json+"), metavar="json|json+",
                   help="""\
fio's output format for every run (default json).
json+ adds each job's full latency histogram
(clat_ns.bins), so that `fio-pack analyze plot
--percentiles` draws the real curve, pooled over
repeats, instead of fio's list of 17 percentiles.
Recorded in study.json.""")
    g.add_argument("--order", choices=("interleaved", "grouped"), metavar="interleaved|grouped",
                   help="""\
interleaved (default): for each repeat, for each
server, for each target, for each sweep point: slow
drift (drive garbage collection, temperature, other
tenants) spreads over all points instead of biasing
whichever point ran first, and an interrupted study
still has complete sweeps for the repeats it finished.
grouped: for each server, target and point, all
repeats back to back: one target's runs stay together
(a device that must be swapped or prepared once).""")


def _add_where_options(g):
    """Where and with what it runs: servers, devices, files, binaries."""
    g.add_argument("--server", action="append", default=[], metavar="HOST[:PORT]", help="""\
run on a host where `fio --server` listens (default
port 8765) through fio's client/server mode instead
of locally. Repeatable: the runs go to each server
in turn, one fio client invocation per run and
server, so every result, exit code and time belongs
to one host. Before any run each server is checked:
reachable, speaks to this fio, can load every engine
the scenario uses, has each "dir" target.""")
    g.add_argument("--confirm-overwrite", metavar="DEVICE", help="""\
allow a scenario that writes to run on block device
DEVICE (its whole content may be destroyed). Must
name the target's device exactly.""")
    g.add_argument("--out", metavar="DIR", help="""\
results directory (default
results/SCENARIO-YYYYMMDDTHHMMSSZ in the current
directory). Must not exist.""")
    g.add_argument("--resume", metavar="DIR", help="""\
continue an interrupted study: the plan, targets,
variables and job files are taken from
DIR/study.json; runs already complete and successful
are skipped, failed or missing runs are run again.""")
    g.add_argument("--catalogue", metavar="FILE", help="""\
scenario catalogue (default jobs/catalogue.json in
the repository). Relative job paths in it are
relative to the repository root.""")
    g.add_argument("--fio", metavar="PATH", help="""\
fio binary (default build/fio in the repository,
else fio in PATH). With --server it is the client.""")
    g.add_argument("--engine-dir", metavar="DIR", help="""\
where the jobs' ${FIO_PACK_ENGINES}/NAME.so engines
are for local runs (default $FIO_PACK_ENGINES, else
the installed pack's, else the repository's build/).""")
    g.add_argument("--remote-engine-dir", metavar="DIR", help="""\
where the engines are on the servers (default the
absolute local engine directory).""")
    g.add_argument("--remote-repo", metavar="DIR", help="""\
where this repository is on the servers, for files
that job files name relative to it (read_iolog,
dbr_trace); default the local repository's path.""")
    g.add_argument("--dry-run", action="store_true", help="""\
check everything, print the plan and the first
derived job file, run and write nothing.""")
    g.add_argument("--quiet", action="store_true", help="no per-run progress lines.")


def run_parser() -> argparse.ArgumentParser:
    """`fio-pack study [run]`'s parser, its manual the --help."""
    ap = _Parser(prog="fio-pack study", add_help=False,
                 description=sections(__doc__, "SYNOPSIS", "DESCRIPTION"),
                 epilog=sections(__doc__, "RESULTS", "EXAMPLES", "EXIT STATUS"))
    ap.add_argument("-h", "--help", action="store_true", help="print this manual.")
    g = ap.add_argument_group("RUN OPTIONS")
    _add_plan_options(g)
    _add_where_options(g)
    return ap


def manual() -> str:
    """The manual: the first line of the module's text, then the parser's page."""
    return __doc__.split("\n", 1)[0] + "\n\n" + run_parser().format_help().strip()


def cmd_list(argv: list) -> int:
    ap = _Parser(prog="fio-pack study list", description="""\
NAME
    fio-pack study list - the scenarios a study can run

SYNOPSIS
    fio-pack study list [--catalogue FILE]

DESCRIPTION
    Prints one line per scenario of the catalogue: its id (the SCENARIO of
    fio-pack study run), the source article, the sweep parameters it takes
    (name -> the fio option each sets), the kind of target it needs ("(writes)":
    it writes to the target, so a device needs --confirm-overwrite) and its
    title, with "[not runnable: WHY]" where it cannot run.""")
    ap.add_argument("--catalogue", default=str(DEFAULT_CATALOGUE), metavar="FILE",
                    help="the scenario catalogue (default: jobs/catalogue.json).")
    a = ap.parse_args(argv)
    path = Path(a.catalogue)
    cat = load_catalogue(path)
    rows = []
    for sc in cat["scenarios"]:
        params = ", ".join(f"{p}->{'/'.join(o)}" for p, o in scenario_params(sc).items()) or "-"
        st = sc.get("status", "ok")
        kind = (sc.get("target") or {}).get("kind", "none")
        if sc.get("writes_target"):
            kind += " (writes)"
        rows.append((sc["id"], str(sc.get("source", "")), params, kind,
                     sc.get("title", "") + ("" if st == "ok" else f"  [not runnable: {st}]")))
    head = ("SCENARIO", "SOURCE", "PARAMS", "TARGET", "TITLE")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
    for r in [head] + rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    return 0


def check_resumed_plan(cfg: dict, path: Path) -> None:
    """The parts of a study.json that name one another agree: each run's
    target, host and sweep parameters are the study's."""
    what = f"--resume {path}"
    params = scenario_params(cfg["scenario"])
    labels = {t["label"] for t in cfg["targets"]}
    hosts = {s["label"] for s in cfg["servers"]} | {"local"}
    for i, run in enumerate(cfg["plan"]):
        if run["target"] not in labels:
            raise StudyError(f"{what}: plan[{i}]: target {run['target']!r} is not in targets")
        if run["host"] not in hosts:
            raise StudyError(f"{what}: plan[{i}]: host {run['host']!r} is not in servers")
        extra = set(run["values"]) - set(params)
        if extra:
            raise StudyError(f"{what}: plan[{i}]: {sorted(extra)[0]!r} is not a parameter of "
                             f"scenario {cfg['scenario']['id']}")


def prepare_resume(a, argv, fio) -> tuple:
    """prepare() for --resume DIR: the study of DIR/study.json, refused when
    a job file changed since or a server cannot run it now."""
    given = [n for n in ("scenario", "target", "sweep", "sets", "server", "out", "catalogue",
                         "repeats", "order", "output_format", "confirm_overwrite", "engine_dir",
                         "remote_engine_dir", "remote_repo") if getattr(a, n)]
    if given:
        raise StudyError(f"--resume takes the study from DIR/study.json; do not give "
                         f"{', '.join('--' + g.replace('_', '-') if g != 'scenario' else 'SCENARIO' for g in given)}")
    out = Path(a.resume)
    outputs.check_dir(out, "--resume")
    cfg = read_document(out / "study.json", documents.STUDY, "--resume")
    check_resumed_plan(cfg, out / "study.json")
    # what the study.json gives the job files, as for a new study
    for label, path in [(t["label"], t["path"]) for t in cfg["targets"] if t["path"]]:
        check_job_text(path, f"--resume: target {label}", path=True)
    for opt, val in cfg["set"]:
        check_job_text(val, f"--resume: --set {opt}")
    for v, text in cfg["variables"].items():
        check_job_text(text, f"--resume: variable {v}")
    for run in cfg["plan"]:
        for name, val in run["values"].items():
            check_job_text(str(val), f"--resume: sweep {name}")
    for key in ("engine_dir", "remote_engine_dir", "remote_repo"):
        check_job_text(cfg.get(key) or "", f"--resume: {key}")
    for j in cfg["job_files"]:
        p = REPO / j["path"] if not Path(j["path"]).is_absolute() else Path(j["path"])
        if not p.is_file() or sha256_file(p) != j["sha256"]:
            raise StudyError(f"--resume {out}: job file {j['path']} changed since the study "
                             f"began (its results would mix two versions)")
    # the servers are checked as for a new study: runs on a server that
    # is still down would only fail again
    problems = []
    dir_targets = [t for t in cfg["targets"] if t.get("kind") == "dir"]
    for srv in cfg.get("servers") or []:
        problems += check_server(fio, srv, cfg.get("engines") or [],
                                 cfg.get("remote_engine_dir") or cfg["engine_dir"],
                                 dir_targets, cfg.get("remote_repo") or "")
    if problems:
        raise StudyError("\n".join(problems))
    cfg.setdefault("resumed", []).append({"command": argv, "at": utc_now()})
    return cfg, out, fio


def servers_and_targets(a, sc, tspec) -> tuple:
    """The --server and --target options, each checked ("none" is the one
    target of a scenario that takes none): (servers, targets)."""
    servers = []
    for s in a.server:
        srv = parse_server(s)
        if srv["label"] in [x["label"] for x in servers]:
            raise StudyError(f"--server {s}: given twice")
        servers.append(srv)
    targets = [parse_target(t) for t in a.target]
    labels = [t["label"] for t in targets]
    dup = [l for l in labels if labels.count(l) > 1]
    if dup:
        raise StudyError(f"--target {dup[0]}: label given twice")
    if tspec["kind"] == "none":
        if targets:
            raise StudyError(f"scenario {sc['id']} takes no target (its target kind is none)")
        targets = [{"label": "none", "path": None}]
    elif not targets:
        raise StudyError(f"scenario {sc['id']} needs --target LABEL=PATH "
                         f"(a {tspec['kind']}, given to the job as ${{{tspec['env']}}})")
    for t in targets:
        t["kind"] = tspec["kind"]
        if tspec["kind"] == "none":
            t["device"] = None
            continue
        if servers:
            check_remote_target(t, sc, tspec["kind"], a.confirm_overwrite)
            t["device"] = {"name": None, "model": None, "vendor": None, "rotational": None,
                           "size_bytes": None, "fs_type": None}
        else:
            t["path"] = os.path.abspath(t["path"])
            check_local_target(t, sc, tspec["kind"], a.confirm_overwrite)
            t["device"] = device_info(t["path"])
    return servers, targets


def check_engines(a, sc, paths, servers, targets, fio) -> tuple:
    """The engines the scenario's jobs load, checked where they will run:
    (engines, engine dir, engine dir on the servers)."""
    engines = list(sc.get("engines") or [])
    engines += [e for e in job_engines(paths) if e not in engines]
    engine_dir = os.path.abspath(a.engine_dir or engines_dir())
    remote_engine_dir = a.remote_engine_dir or engine_dir
    # both become the jobs' ioengine=external:DIR/NAME.so
    check_job_text(engine_dir, "--engine-dir")
    check_job_text(remote_engine_dir, "--remote-engine-dir")
    if not servers:
        for e in engines:
            so = Path(engine_dir) / f"{e}.so"
            if not so.is_file():
                raise StudyError(f"engine {so} not found (scenario {sc['id']} needs {e}; "
                                 f"run `make`, or give --engine-dir DIR)")
    else:
        problems = []
        dir_targets = [t for t in targets if t["kind"] == "dir"]
        for srv in servers:
            problems += check_server(fio, srv, engines, remote_engine_dir, dir_targets,
                                     a.remote_repo or "")
        if problems:
            raise StudyError("\n".join(problems))
    return engines, engine_dir, remote_engine_dir


def prepare(a, argv) -> tuple:
    """Checks everything and returns (config, out dir). Writes nothing."""
    fio = find_fio(a.fio)
    if a.resume:
        return prepare_resume(a, argv, fio)
    if not a.scenario:
        raise StudyError("no scenario given (fio-pack study list shows them; fio-pack study --help)")
    cat_path = Path(a.catalogue) if a.catalogue else DEFAULT_CATALOGUE
    cat = load_catalogue(cat_path)
    sc = find_scenario(cat, a.scenario, cat_path)
    if sc.get("status", "ok") != "ok":
        raise StudyError(f"scenario {sc['id']} cannot run: {sc['status']}")
    tspec = scenario_target(sc)
    paths = job_paths(sc, cat_path)
    sweeps = parse_sweeps(a.sweep, sc)
    sets = parse_sets(a.sets, sweeps, sc)
    repeats = a.repeats if a.repeats is not None else 1
    if repeats < 1:
        raise StudyError(f"--repeats {repeats}: must be at least 1")
    servers, targets = servers_and_targets(a, sc, tspec)
    engines, engine_dir, remote_engine_dir = check_engines(a, sc, paths, servers, targets, fio)
    if a.out:
        out = Path(a.out)
    else:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        # where the user is, as fio's own output: an installed pack's
        # share/ is no place for results, nor a checkout's tree
        out = Path.cwd() / "results" / f"{sc['id']}-{stamp}"
    if out.exists():
        raise StudyError(f"results directory {out} exists (continue it with --resume {out}, "
                         f"or give another --out)")
    outputs.check_dir(out, "--out")
    tenvs = target_envs(tspec)
    variables = {v: os.environ.get(v, "") for v in job_variables(paths) if v not in tenvs}
    for v, text in variables.items():
        check_job_text(text, f"environment variable {v} (the job files use ${{{v}}})")
    # the replay logs' and traces' directory on the servers
    check_job_text(a.remote_repo or str(REPO), "--remote-repo")
    cfg = {
        "format": 1,
        "command": argv,
        "command_line": shlex.join(["scripts/fio-pack", "study"] + argv),
        "cwd": os.getcwd(),
        "catalogue": repo_relative(cat_path),
        "scenario": sc,
        "target_spec": tspec,
        "job_files": [{"path": repo_relative(p), "sha256": sha256_file(p)} for p in paths],
        "sweep": {n: [value_of(v) for v in vals] for n, vals in sweeps},
        "set": sets,
        "targets": targets,
        "servers": servers,
        "repeats": repeats,
        "order": a.order or "interleaved",
        "output_format": a.output_format or "json",
        "engines": engines,
        "engine_dir": engine_dir,
        "remote_engine_dir": remote_engine_dir,
        "remote_repo": a.remote_repo or str(REPO),
        "variables": variables,
        "pack_version": pack_version(),
        "fio": {"path": fio, "version": fio_version(fio)},
        "local": {"hostname": socket.gethostname(), "kernel": os.uname().release},
        "started": None,
        "ended": None,
        "status": "planned",
        "plan": build_plan(sweeps, targets, servers, repeats, a.order or "interleaved"),
    }
    return cfg, out, fio


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["list"]:
            return cmd_list(argv[1:])
        rest = argv[1:] if argv[:1] == ["run"] else argv
        a = run_parser().parse_args(rest)
        if a.help or not rest:
            print(manual())
            return 0 if a.help else 2
        cfg, out, fio = prepare(a, argv)
        study = Study(cfg, out, fio, a.quiet)
        if a.dry_run:
            for run in cfg["plan"]:
                desc = " ".join(f"{k}={v}" for k, v in run["values"].items())
                print(f"run {run['run']:4d}: {desc} target={run['target']} host={run['host']} "
                      f"repeat {run['repeat']}/{cfg['repeats']}")
            text, _ = study.derived(cfg["plan"][0])
            print(f"\n--- derived job file of run 1 ---\n{text}", end="")
            print(f"dry run: {len(cfg['plan'])} runs; nothing run, {out} not created",
                  file=sys.stderr)
            return 0
        if not a.resume:
            cfg["started"] = utc_now()
            try:
                (out / "runs").mkdir(parents=True)
            except OSError as e:
                raise StudyError(f"--out {out}: {e.strerror}")
        return study.execute(resume=bool(a.resume))
    except UserError as e:      # StudyError, an output refused
        for line in str(e).splitlines():
            print(f"fio-pack study: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fio-pack study: interrupted", file=sys.stderr)
        return 130


def _terminate(signum, frame):
    # SIGTERM ends a study like Ctrl-C: the running fio is stopped and its
    # incomplete run is not recorded
    raise KeyboardInterrupt


def on_signals() -> None:
    """SIGTERM stops a study as Ctrl-C does (the running fio is stopped, its
    run not recorded)."""
    signal.signal(signal.SIGTERM, _terminate)
