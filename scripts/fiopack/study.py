"""fio-pack study - run a scenario of the job library over a parameter sweep

SYNOPSIS
    fio-pack study [run] SCENARIO --target LABEL=PATH [--target LABEL=PATH ...]
             [--sweep PARAM=V1,V2,...]... [--set OPTION=VALUE]... [--repeats N]
             [--order interleaved|grouped] [--server HOST[:PORT]]...
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
      * each sweep parameter and each --set option becomes OPTION=VALUE in
        every job section (an existing line for it is replaced; [global]
        lines for it are replaced too), except that nothing shortens a
        precondition: a section named precondition* (the job that writes
        what the measured jobs read) keeps no runtime, time_based,
        number_ios or io_size from a --set, a sweep or [global];
      * ioengine=external:build/NAME.so becomes the absolute path of the
        engine (--engine-dir; with --server, --remote-engine-dir);
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

RUN OPTIONS
    SCENARIO              scenario id from the catalogue (`fio-pack study list`)
    --target LABEL=PATH   a directory, file or device to run on, labelled
                          LABEL in the results (letters, digits, . _ -).
                          Repeatable. With --server the path is the path on
                          each server. Not used by scenarios whose target
                          kind is "none".
    --sweep PARAM=V1,V2   values of one of the scenario's sweep parameters
                          (`fio-pack study list` shows them, e.g. threads ->
                          numjobs). Repeatable: several sweeps make a grid,
                          the first given varying slowest.
    --set OPTION=VALUE    a fixed fio option for every run (runtime=60,
                          size=4g, ...), set in every job section. Repeatable.
    --repeats N           runs of every sweep point on every target (default 1).
    --order interleaved   (default) for each repeat, for each server, for each
                          target, for each sweep point: slow drift (drive
                          garbage collection, temperature, other tenants)
                          spreads over all points instead of biasing whichever
                          point ran first, and an interrupted study still has
                          complete sweeps for the repeats it finished.
    --order grouped       for each server, target and point, all repeats back
                          to back: one target's runs stay together (a device
                          that must be swapped or prepared once).
    --server HOST[:PORT]  run on a host where `fio --server` listens (default
                          port 8765) through fio's client/server mode instead
                          of locally. Repeatable: the runs go to each server
                          in turn, one fio client invocation per run and
                          server, so every result, exit code and time belongs
                          to one host. Before any run each server is checked:
                          reachable, speaks to this fio, can load every engine
                          the scenario uses, has each "dir" target.
    --confirm-overwrite DEVICE
                          allow a scenario that writes to run on block device
                          DEVICE (its whole content may be destroyed). Must
                          name the target's device exactly.
    --out DIR             results directory (default
                          results/SCENARIO-YYYYMMDDTHHMMSSZ under the
                          repository). Must not exist.
    --resume DIR          continue an interrupted study: the plan, targets,
                          variables and job files are taken from
                          DIR/study.json; runs already complete and successful
                          are skipped, failed or missing runs are run again.
    --catalogue FILE      scenario catalogue (default jobs/catalogue.json in
                          the repository). Relative job paths in it are
                          relative to the repository root.
    --fio PATH            fio binary (default build/fio in the repository,
                          else fio in PATH). With --server it is the client.
    --engine-dir DIR      where external:build/NAME.so engines are for local
                          runs (default the repository's build/).
    --remote-engine-dir DIR
                          where the engines are on the servers (default the
                          absolute local engine directory).
    --remote-repo DIR     where this repository is on the servers, for files
                          that job files name relative to it (read_iolog,
                          dbr_trace);
                          default the local repository's path.
    --dry-run             check everything, print the plan and the first
                          derived job file, run and write nothing.
    --quiet               no per-run progress lines.

RESULTS
    DIR/study.json         the command, the scenario entry, sweep, --set
                           options, targets, servers, repeats, order, plan,
                           pack version (git describe), start and end.
    DIR/runs/NNNN.fio      the derived job file of run NNNN.
    DIR/runs/NNNN.json     fio's JSON output exactly as printed (from its
                           first line "{"), absent if fio printed none.
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
    fio-pack study fio-randread-64 --target sdb=/dev/sdb --repeats 5
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
import difflib
import hashlib
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fiopack import REPO
from fiopack.catalogue import eval_metric, split_json

DEFAULT_CATALOGUE = REPO / "jobs" / "catalogue.json"
DEFAULT_PORT = 8765
PROBE_TIMEOUT = 60
CONNECT_TIMEOUT = 5
STDERR_TAIL = 4000
LABEL_RE = re.compile(r"^[A-Za-z0-9._-]+$")
VAR_RE = re.compile(r"\$\{([^}]*)\}")
ENGINE_RE = re.compile(r"^(\s*ioengine\s*=\s*external:)build/")
ENGINE_NAME_RE = re.compile(r"^\s*ioengine\s*=\s*external:build/([A-Za-z0-9_.-]+)\.so\s*$")
IOLOG_RE = re.compile(r"^(\s*(?:read_iolog|dbr_trace)\s*=\s*)(\S.*?)\s*$")
KEY_RE = re.compile(r"^\s*([^=\s]+)\s*(=|$)")

# One probe job per engine: the smallest run that loads the engine and does
# one operation in a private directory the engine makes on the server.
ENGINE_PROBES = {
    "smallfile": ["file_op=layout", "tree_files=1", "number_ios=1"],
    "postmark": ["pm_number=1", "pm_transactions=10", "pm_report=none"],
    # {repo}: the repository on the server, whose traces the jobs replay
    "dbreplay": ["dbr_trace={repo}/jobs/dbreplay/probe.trace", "dbr_report=none"],
}


class StudyError(Exception):
    """Bad input or a refusal: one line for the user, exit status 2."""


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def hms(seconds: float) -> str:
    seconds = int(round(seconds))
    return "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


def sha256_file(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_atomic(path: Path, data) -> None:
    """Writes a file under a temporary name and renames it into place."""
    if isinstance(data, str):
        data = data.encode()
    fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix="." + path.name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json_atomic(path: Path, obj) -> None:
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def repo_relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path.resolve())


def pack_version() -> str:
    try:
        p = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else "unknown"


def value_of(text: str):
    """A sweep value as stored in params: an int when it is one, else the string."""
    return int(text) if re.fullmatch(r"-?\d+", text) else text


# ---------------------------------------------------------------------------
# Catalogue
# ---------------------------------------------------------------------------

def load_catalogue(path: Path) -> dict:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise StudyError(f"catalogue {path}: not found (give --catalogue FILE)")
    except OSError as e:
        raise StudyError(f"catalogue {path}: {e.strerror}")
    try:
        cat = json.loads(text)
    except ValueError as e:
        raise StudyError(f"catalogue {path}: not valid JSON: {e}")
    if not isinstance(cat, dict) or not isinstance(cat.get("scenarios"), list):
        raise StudyError(f"catalogue {path}: no \"scenarios\" list")
    for i, sc in enumerate(cat["scenarios"]):
        if not isinstance(sc, dict) or not isinstance(sc.get("id"), str):
            raise StudyError(f"catalogue {path}: scenario #{i + 1} has no id")
    return cat


def find_scenario(cat: dict, sid: str, path: Path) -> dict:
    ids = [sc["id"] for sc in cat["scenarios"]]
    for sc in cat["scenarios"]:
        if sc["id"] == sid:
            return sc
    close = difflib.get_close_matches(sid, ids, n=5, cutoff=0.5)
    close += [i for i in ids if sid.lower() in i.lower() and i not in close]
    hint = f"; close matches: {', '.join(close[:6])}" if close else \
        f"; `fio-pack study list` shows all {len(ids)}"
    raise StudyError(f"unknown scenario {sid!r} in {path}{hint}")


def scenario_params(sc: dict) -> dict:
    """Sweep name -> list of fio options it sets."""
    out = {}
    for name, opt in (sc.get("params") or {}).items():
        out[name] = [opt] if isinstance(opt, str) else list(opt)
    return out


def scenario_target(sc: dict) -> dict:
    t = sc.get("target") or {}
    kind = t.get("kind", "none")
    if kind not in ("dir", "file-or-device", "none"):
        raise StudyError(f"scenario {sc['id']}: unknown target kind {kind!r}")
    return {"env": t.get("env"), "kind": kind}


def target_envs(tspec: dict) -> list:
    """The variables the target is given in: one name, or a list when the
    scenario's job files name it differently (FIO_DIR and PM_LOCATION)."""
    env = tspec.get("env")
    if not env:
        return []
    return [env] if isinstance(env, str) else list(env)


def job_paths(sc: dict) -> list:
    jobs = sc.get("jobs") or []
    if not jobs:
        raise StudyError(f"scenario {sc['id']}: no job files in the catalogue")
    paths = []
    for j in jobs:
        p = Path(j)
        if not p.is_absolute():
            p = REPO / p
        if not p.is_file():
            raise StudyError(f"scenario {sc['id']}: job file {j} not found")
        paths.append(p)
    return paths


# ---------------------------------------------------------------------------
# Job files: reading, rewriting
# ---------------------------------------------------------------------------

def is_comment(line: str) -> bool:
    """fio's is_empty_or_comment(): blank, or first non-blank is ; or #."""
    s = line.strip()
    return not s or s[0] in ";#"


def read_job_lines(path: Path, nested=False) -> list:
    """The job file's lines with include directives replaced by the file's lines."""
    out = []
    for line in path.read_text().splitlines():
        s = line.strip()
        if not is_comment(line) and s.startswith("include") and not s.startswith("["):
            name = s[len("include") + 1:].strip()
            inc = Path(name)
            if not inc.is_absolute():
                # fio: as given (from its working directory, the repository
                # root here) if it exists, else beside the including file
                inc = REPO / name if (REPO / name).exists() else path.parent / name
            if not inc.is_file():
                raise StudyError(f"job file {path}: include {name}: not found")
            out.append(f"; fio-pack study: inlined include {name}")
            out += read_job_lines(inc, nested=True)
            continue
        out.append(line)
    return out


def parse_sections(lines: list) -> tuple:
    """(preamble lines, [[name, header line, [lines]]])."""
    pre, sections = [], []
    for line in lines:
        s = line.strip()
        if not is_comment(line) and s.startswith("["):
            sections.append([s[1:s.find("]")] if "]" in s else s[1:], line, []])
        elif sections:
            sections[-1][2].append(line)
        else:
            pre.append(line)
    return pre, sections


def line_key(line: str):
    if is_comment(line):
        return None
    m = KEY_RE.match(line)
    return m.group(1) if m else None


def set_options(body: list, overrides: list, add: bool) -> list:
    """Sets OPTION=VALUE in a section body.

    overrides: [(names, "option=value")], names the option and its aliases.
    An existing line for the option is replaced in place; if there is none
    and add is true, the line is added after the section's last option.
    """
    body = list(body)
    for names, text in overrides:
        found = False
        for i, line in enumerate(body):
            if line_key(line) in names:
                body[i] = text
                found = True
        if not found and add:
            last = max((i for i, l in enumerate(body) if not is_comment(l)), default=-1)
            body.insert(last + 1, text)
    return body


# Options that cut a job short. A precondition must write all it is sized
# for: a measured job that reads space never written reads preallocated
# extents or holes, which no disk serves (a sysbench-rndrd precondition cut
# to 492 MiB of 2 GiB by --set runtime=2 gave 910 MiB/s, fully written files
# 180-240 MiB/s on the same device).
SHORTENING = {"runtime": "runtime=0", "timeout": "runtime=0", "time_based": "time_based=0",
              "number_ios": "number_ios=0", "io_size": "io_size=0", "io_limit": "io_size=0"}


def is_precondition(section: str) -> bool:
    return section.lower().startswith("precondition")


def precondition_body(body: list, glob: list, overrides: list) -> list:
    """A precondition section's body: the overrides that do not shorten it,
    and the neutral value of every shortening option it would otherwise
    have or inherit from [global]."""
    keep = [(names, text) for names, text in overrides if not (set(names) & set(SHORTENING))]
    inherited = {line_key(l) for l in glob + body} | \
        {n for names, _ in overrides for n in names}
    body = [l for l in body if line_key(l) not in SHORTENING]
    neutral = []
    for key, text in SHORTENING.items():
        if key in inherited and text not in neutral:
            neutral.append(text)
    return set_options(body + neutral, keep, add=True)


SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?b?)\s*$", re.I)


def fio_size(text: str):
    """fio's size value in bytes (kb_base=1024), or None for what is not an
    absolute size (a percentage, a range, a variable left empty)."""
    m = SIZE_RE.match(text or "")
    if not m:
        return None
    return int(m.group(1)) * 1024 ** " kmgtp".index(m.group(2).lower() or " ")


def precondition_sizes(jobtext: str) -> dict:
    """{precondition section: the bytes it must write, or None if its size is
    not a plain number (a device's whole size, a percentage)}."""
    _, sections = parse_sections(jobtext.splitlines())
    glob, out = {}, {}
    for name, _, body in sections:
        opts = {}
        for line in body:
            key = line_key(line)
            if key:
                opts[key] = line.split("=", 1)[1].strip() if "=" in line else ""
        if name == "global":
            glob.update(opts)
        elif is_precondition(name):
            merged = dict(glob, **opts)
            size = fio_size(merged.get("size", ""))
            io_size = fio_size(merged.get("io_size", merged.get("io_limit", "")))
            out[name] = io_size if io_size else size
    return out


def precondition_problem(jobtext: str, entries: list):
    """What is wrong with a run whose precondition did not write all it is
    sized for (an error, or fewer bytes), or None."""
    want = precondition_sizes(jobtext)
    for e in entries:
        name = e.get("jobname", "")
        if name not in want:
            continue
        done = (e.get("write") or {}).get("io_bytes", 0)
        if e.get("error"):
            return (f"precondition {name} ended with error {e['error']} after {done} bytes: "
                    "the measured jobs would read space never written")
        if want[name] and done < want[name]:
            return (f"precondition {name} wrote {done} of {want[name]} bytes: the measured "
                    "jobs would read space never written")
    return None


def derive_job(paths: list, overrides: list, variables: dict, engine_dir: str,
               header: list, repo_dir: str = None) -> str:
    """The fully resolved job text of one run (see the module doc)."""
    files = [(p, parse_sections(read_job_lines(p))) for p in paths]
    out = ["; " + h if h else ";" for h in header]
    if len(files) == 1:
        pre, sections = files[0][1]
        out += pre
        glob = [l for name, _, body in sections if name == "global" for l in body]
        for name, head, body in sections:
            out.append(head)
            if is_precondition(name):
                out += precondition_body(body, glob, overrides)
            else:
                out += set_options(body, overrides, add=(name != "global"))
    else:
        # fio resets [global] defaults between job files and puts a stonewall
        # before each later file's first job: copy each file's global options
        # into its own job sections so one file keeps that meaning.
        for k, (p, (pre, sections)) in enumerate(files):
            out.append(f"; ---- {repo_relative(p)} ----")
            out += pre
            glob, first = [], True
            for name, head, body in sections:
                if name == "global":
                    glob += [l for l in body if not is_comment(l)]
                    continue
                out.append(head)
                extra = ["stonewall"] if k > 0 and first else []
                first = False
                if is_precondition(name):
                    out += precondition_body(extra + glob + body, [], overrides)
                else:
                    out += set_options(extra + glob + body, overrides, add=True)
    resolved = []
    for line in out:
        if not is_comment(line) and not line.strip().startswith("["):
            line = VAR_RE.sub(lambda m: variables.get(m.group(1), ""), line)
            line = ENGINE_RE.sub(lambda m: m.group(1) + engine_dir.rstrip("/") + "/", line)
            m = IOLOG_RE.match(line)
            if m and not m.group(2).startswith("/") and (REPO / m.group(2)).exists():
                # the replay log is read by the fio that runs the job (a
                # server's, whose working directory is not the repository)
                line = m.group(1) + (repo_dir or str(REPO)).rstrip("/") + "/" + m.group(2)
        resolved.append(line)
    return "\n".join(resolved) + "\n"


def job_variables(paths: list) -> list:
    names = []
    for p in paths:
        for line in read_job_lines(p):
            if not is_comment(line):
                for m in VAR_RE.finditer(line):
                    if m.group(1) not in names:
                        names.append(m.group(1))
    return names


def job_engines(paths: list) -> list:
    names = []
    for p in paths:
        for line in read_job_lines(p):
            m = ENGINE_NAME_RE.match(line) if not is_comment(line) else None
            if m and m.group(1) not in names:
                names.append(m.group(1))
    return names


_alias_cache = {}


def option_names(fio: str, option: str) -> set:
    """The option's name and its alias as fio's --cmdhelp knows them."""
    if option not in _alias_cache:
        names = {option}
        try:
            p = subprocess.run([fio, f"--cmdhelp={option}"], capture_output=True,
                               text=True, timeout=30)
            lines = [l for l in p.stdout.splitlines() if l.strip()]
            # "  rw: IO direction" / "  alias: readwrite" / "  type: ..."
            m = re.match(r"^\s*(\S+): ", lines[0]) if lines else None
            if m:
                names.add(m.group(1))
                for line in lines[1:]:
                    m = re.match(r"^\s*alias:\s*(\S+)", line)
                    if m:
                        names.add(m.group(1))
        except (OSError, subprocess.TimeoutExpired):
            pass
        _alias_cache[option] = names
    return _alias_cache[option]


# ---------------------------------------------------------------------------
# Devices (sysfs)
# ---------------------------------------------------------------------------

def _read(path: Path):
    try:
        s = path.read_text().strip()
    except OSError:
        return None
    return s or None


def _disk_info(disk: Path, depth=0) -> dict:
    info = {"name": disk.name, "model": _read(disk / "device" / "model"),
            "vendor": _read(disk / "device" / "vendor"), "rotational": None}
    rot = _read(disk / "queue" / "rotational")
    if rot is not None:
        info["rotational"] = rot == "1"
    dm = _read(disk / "dm" / "name")
    if dm:
        info["dm_name"] = dm
    backing = _read(disk / "loop" / "backing_file")
    if backing:
        info["backing_file"] = backing
    try:
        slaves = sorted(os.listdir(disk / "slaves"))
    except OSError:
        slaves = []
    if slaves and depth < 4:
        # LVM, md RAID, dm-crypt: the devices underneath are what was bought
        info["slaves"] = []
        for s in slaves:
            real = (disk / "slaves" / s).resolve()
            if (real / "partition").exists():
                real = real.parent
            info["slaves"].append(_disk_info(real, depth + 1))
    return info


def device_info(path) -> dict:
    """What sysfs says about the block device holding path (or being path)."""
    empty = {"name": None, "model": None, "vendor": None, "rotational": None,
             "size_bytes": None}
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent        # a file still to be created: its directory's device
    try:
        st = os.stat(p)
    except OSError:
        return empty
    dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
    sysdev = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sysdev.exists():
        return empty        # tmpfs, overlayfs, btrfs subvolumes, NFS...
    real = sysdev.resolve()
    disk, part = real, None
    if (real / "partition").exists():
        disk, part = real.parent, real.name
    info = dict(empty)
    info.update(_disk_info(disk))
    size = _read(real / "size")
    info["size_bytes"] = int(size) * 512 if size and size.isdigit() else None
    if part:
        info["partition"] = part
    return info


def device_users(dev_path: str) -> list:
    """Why a block device is in use: mounts, swap, holders (its partitions too)."""
    st = os.stat(dev_path)
    real = Path(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}").resolve()
    nodes = [real] + [c for c in real.iterdir() if (c / "partition").exists()] \
        if real.exists() else []
    devnums = {}
    for n in nodes:
        d = _read(n / "dev")
        if d:
            devnums[d] = n.name
    users = []
    try:
        names = set(devnums.values())
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            f = line.split()
            # btrfs reports an anonymous device number: match the source too
            src = line.split(" - ", 1)[1].split()[1:2] if " - " in line else []
            src_name = os.path.basename(os.path.realpath(src[0])) \
                if src and src[0].startswith("/dev/") else None
            if len(f) > 4 and (f[2] in devnums or src_name in names):
                what = f"{devnums.get(f[2], src_name)} is mounted on {f[4]}"
                if what not in users:
                    users.append(what)
    except OSError:
        pass
    try:
        for line in Path("/proc/swaps").read_text().splitlines()[1:]:
            f = line.split()
            if f and os.path.exists(f[0]) and stat.S_ISBLK(os.stat(f[0]).st_mode) \
                    and "%d:%d" % (os.major(os.stat(f[0]).st_rdev),
                                   os.minor(os.stat(f[0]).st_rdev)) in devnums:
                users.append(f"{f[0]} is in use as swap")
    except OSError:
        pass
    for n in nodes:
        try:
            holders = os.listdir(n / "holders")
        except OSError:
            holders = []
        if holders:
            users.append(f"{n.name} is held by {', '.join(sorted(holders))}")
    return users


# ---------------------------------------------------------------------------
# Targets and servers
# ---------------------------------------------------------------------------

def parse_target(text: str) -> dict:
    label, sep, path = text.partition("=")
    if not sep or not path:
        raise StudyError(f"--target {text!r}: expected LABEL=PATH")
    if not LABEL_RE.match(label):
        raise StudyError(f"--target {text!r}: label {label!r} must be letters, digits, . _ -")
    return {"label": label, "path": path}


def check_local_target(t: dict, sc: dict, kind: str, confirm: str) -> None:
    """Refuses a local target the scenario cannot or must not use."""
    label, path = t["label"], t["path"]
    writes = bool(sc.get("writes_target"))
    what = f"target {label}: {path}"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise StudyError(f"{what}: {e.strerror}")
    if kind == "dir":
        if st is None:
            raise StudyError(f"{what}: no such directory")
        if not stat.S_ISDIR(st.st_mode):
            raise StudyError(f"{what}: not a directory (scenario {sc['id']} runs in a directory)")
        need = os.W_OK | os.X_OK if writes else os.R_OK | os.X_OK
        if not os.access(path, need):
            raise StudyError(f"{what}: not {'writable' if writes else 'readable'}")
        return
    # file-or-device
    if st is None:
        parent = os.path.dirname(path) or "."
        if not writes:
            raise StudyError(f"{what}: no such file or device")
        if not os.path.isdir(parent):
            raise StudyError(f"{what}: no such file, and no directory {parent} to create it in")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise StudyError(f"{what}: no such file, and {parent} is not writable")
        return
    if stat.S_ISDIR(st.st_mode):
        raise StudyError(f"{what}: is a directory (scenario {sc['id']} needs a file or device)")
    if stat.S_ISBLK(st.st_mode):
        if writes:
            if not confirm or os.path.realpath(confirm) != os.path.realpath(path):
                raise StudyError(
                    f"{what}: block device, and scenario {sc['id']} writes to its target "
                    f"(data on it is destroyed): add --confirm-overwrite {path} to proceed")
            users = device_users(path)
            if users:
                raise StudyError(f"{what}: in use ({'; '.join(users)}): refusing to overwrite it")
            ro = _read(Path(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}/ro"))
            if ro == "1":
                raise StudyError(f"{what}: the device is read-only")
    if not os.access(path, os.R_OK | (os.W_OK if writes else 0)):
        raise StudyError(f"{what}: not {'writable' if writes else 'readable'}")


def check_remote_target(t: dict, sc: dict, kind: str, confirm: str) -> None:
    """What can be checked of a server's target path without the server."""
    label, path = t["label"], t["path"]
    if not path.startswith("/"):
        raise StudyError(f"target {label}: {path}: must be an absolute path with --server "
                         f"(the servers' working directories are unknown)")
    if kind == "file-or-device" and sc.get("writes_target") and path.startswith("/dev/") \
            and confirm != path:
        raise StudyError(f"target {label}: {path}: a device on the servers, and scenario "
                         f"{sc['id']} writes to its target: add --confirm-overwrite {path} "
                         f"to proceed")


def parse_server(text: str) -> dict:
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](?::(\d+))?", text)
    if m:
        host, port, v6 = m.group(1), m.group(2), True
    else:
        host, _, port = text.partition(":") if text.count(":") <= 1 else (text, "", "")
        v6 = text.count(":") > 1
    if not host:
        raise StudyError(f"--server {text!r}: expected HOST[:PORT]")
    try:
        port = int(port) if port else DEFAULT_PORT
        if not 0 < port < 65536:
            raise ValueError
    except ValueError:
        raise StudyError(f"--server {text!r}: bad port")
    label = f"[{host}]:{port}" if v6 else f"{host}:{port}"
    client = f"ip6:{host},{port}" if v6 else f"{host},{port}"
    return {"host": host, "port": port, "label": label, "client": client}


def fio_messages(text: str) -> list:
    """fio's (and the engines') error lines, without the servers' <host> prefix."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"^<[^>]*> ", "", line).strip()
        if not line or re.match(r"^fio: (job .* dropped|failed parsing)", line) \
                or line.startswith(("Correct format", "client <")):
            continue
        if re.match(r"^(fio|[a-z_]+): ", line):
            out.append(line)
    return out


def run_probe(fio: str, server: dict, lines: list, extra_args=()):
    """Runs a one-job probe on a server: (ok, problem text)."""
    with tempfile.NamedTemporaryFile("w", suffix=".fio", prefix="study-probe-") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        cmd = [fio, "--output-format=json", f"--client={server['client']}", *extra_args, f.name]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                               timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return False, f"no answer within {PROBE_TIMEOUT} s"
    pre, js = split_json(p.stdout)
    stats = []
    if js is not None:
        try:
            stats = [c for c in json.loads(js).get("client_stats", [])
                     if c.get("jobname") != "All clients"]
        except ValueError:
            pass
    if p.returncode == 0 and stats and not any(c.get("error") for c in stats):
        return True, ""
    msgs = fio_messages(pre + "\n" + p.stderr)
    msg = msgs[0] if msgs else (p.stderr.strip().splitlines() or ["fio exit %d" % p.returncode])[-1]
    m = re.search(r"error=(.*)$", msg)
    if m:
        msg = m.group(1)
    return False, re.sub(r"^fio: ", "", msg)


def check_server(fio: str, server: dict, engines: list, engine_dir: str,
                 dir_targets: list, repo_dir: str = "") -> list:
    """Problems with one server, one line each (empty: ready)."""
    name = f"server {server['label']}"
    try:
        with socket.create_connection((server["host"], server["port"]), CONNECT_TIMEOUT):
            pass
    except socket.gaierror as e:
        return [f"{name}: unreachable: cannot resolve {server['host']}: {e.strerror}"]
    except OSError as e:
        return [f"{name}: unreachable: {e.strerror or e}"]
    ok, why = run_probe(fio, server, ["[study-probe]", "ioengine=null", "size=4k", "rw=read"])
    if not ok:
        return [f"{name}: fio on the server does not run a job for us: {why}"]
    problems = []
    for eng in engines:
        so = f"{engine_dir.rstrip('/')}/{eng}.so"
        probe = [o.replace("{repo}", (repo_dir or str(REPO)).rstrip("/"))
                 for o in ENGINE_PROBES.get(eng, ["size=4k", "rw=read"])]
        ok, why = run_probe(fio, server, [f"[study-probe-{eng}]", f"ioengine=external:{so}"]
                            + probe)
        if not ok:
            if why.startswith("invalid external ioengine path"):
                why = "no such file on the server"
            problems.append(f"{name}: cannot load {so}: {why}")
    for t in dir_targets:
        # the null engine does no I/O and creates no file; fio still checks
        # that directory= exists on the server
        ok, why = run_probe(fio, server, ["[study-probe-target]", "ioengine=null",
                                          f"directory={t['path']}", "size=4k", "rw=read"])
        if not ok:
            problems.append(f"{name}: target {t['label']}: {t['path']}: not a directory "
                            f"on the server ({why})")
    return problems


# ---------------------------------------------------------------------------
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
        values = [v.strip() for v in vals.split(",")]
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
        out.append((opt, val))
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
        text = derive_job(self.paths, self.overrides(run), variables, engine_dir, header,
                          repo_dir)
        return text, variables

    def command(self, run: dict, jobfile: Path) -> list:
        cmd = [self.fio, "--output-format=json"]
        if run["host"] != "local":
            cmd.append(f"--client={self.servers[run['host']]['client']}")
        if not self.sc.get("writes_target"):
            cmd.append("--readonly")    # after --client=: sent to the server
        return cmd + [str(jobfile)]

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
            stdout = so.read().decode(errors="replace")
            stderr = se.read().decode(errors="replace")
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
            if not entries:
                problem = "fio ran no job"
            elif precondition_problem(text, entries):
                problem = precondition_problem(text, entries)
            elif any(e.get("error") for e in entries):
                bad = [e for e in entries if e.get("error")]
                problem = f"job {bad[0].get('jobname')} ended with error {bad[0]['error']}"
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
            "started": started,
            "ended": ended,
            "elapsed_s": round(elapsed, 3),
            "stderr_tail": stderr[-STDERR_TAIL:],
            "stdout_text": pre[-STDERR_TAIL:],
        }
        if remote:
            srv = self.servers[run["host"]]
            m = re.search(r"^<([^>]*)> ", pre, re.M)
            meta["remote"] = {
                "host": srv["host"], "port": srv["port"],
                "server_name": m.group(1) if m else None,
                "client_stats": [{"jobname": e.get("jobname"), "hostname": e.get("hostname"),
                                  "port": e.get("port"), "error": e.get("error")}
                                 for e in entries],
            }
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
                    if json.loads(mp.read_text()).get("ok"):
                        continue
                except ValueError:
                    pass
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
# Command line
# ---------------------------------------------------------------------------

def find_fio(given) -> str:
    if given:
        p = shutil.which(given) if os.sep not in given else given
        if not p or not os.access(p, os.X_OK):
            raise StudyError(f"--fio {given}: not an executable")
        return os.path.abspath(p)
    local = REPO / "build" / "fio"
    if os.access(local, os.X_OK):
        return str(local)
    p = shutil.which("fio")
    if not p:
        raise StudyError("no fio: build/fio does not exist and there is no fio in PATH "
                         "(run `make`, or give --fio PATH)")
    return p


def fio_version(fio: str) -> str:
    try:
        return subprocess.run([fio, "--version"], capture_output=True, text=True,
                              timeout=30).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise StudyError(message)


def run_parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="fio-pack study", description=__doc__, add_help=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage=argparse.SUPPRESS)
    ap.add_argument("-h", "--help", action="store_true")
    ap.add_argument("scenario", nargs="?")
    ap.add_argument("--target", action="append", default=[])
    ap.add_argument("--sweep", action="append", default=[])
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("--repeats", type=int)
    ap.add_argument("--order", choices=("interleaved", "grouped"))
    ap.add_argument("--server", action="append", default=[])
    ap.add_argument("--confirm-overwrite")
    ap.add_argument("--out")
    ap.add_argument("--resume")
    ap.add_argument("--catalogue")
    ap.add_argument("--fio")
    ap.add_argument("--engine-dir")
    ap.add_argument("--remote-engine-dir")
    ap.add_argument("--remote-repo")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    return ap


def cmd_list(argv: list) -> int:
    ap = _Parser(prog="fio-pack study list", formatter_class=argparse.RawDescriptionHelpFormatter,
                 description="Lists the scenarios of the catalogue: id, source article, "
                 "status,\nsweep parameters (name -> fio option), target kind and title.")
    ap.add_argument("--catalogue", default=str(DEFAULT_CATALOGUE),
                    help="scenario catalogue (default: jobs/catalogue.json)")
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


def prepare(a, argv) -> tuple:
    """Checks everything and returns (config, out dir). Writes nothing."""
    fio = find_fio(a.fio)
    if a.resume:
        given = [n for n in ("scenario", "target", "sweep", "sets", "server", "out", "catalogue",
                             "repeats", "order", "confirm_overwrite", "engine_dir",
                             "remote_engine_dir", "remote_repo") if getattr(a, n)]
        if given:
            raise StudyError(f"--resume takes the study from DIR/study.json; do not give "
                             f"{', '.join('--' + g.replace('_', '-') if g != 'scenario' else 'SCENARIO' for g in given)}")
        out = Path(a.resume)
        try:
            cfg = json.loads((out / "study.json").read_text())
        except (OSError, ValueError) as e:
            raise StudyError(f"--resume {out}: no readable study.json ({e})")
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
    if not a.scenario:
        raise StudyError("no scenario given (fio-pack study list shows them; fio-pack study --help)")
    cat_path = Path(a.catalogue) if a.catalogue else DEFAULT_CATALOGUE
    cat = load_catalogue(cat_path)
    sc = find_scenario(cat, a.scenario, cat_path)
    if sc.get("status", "ok") != "ok":
        raise StudyError(f"scenario {sc['id']} cannot run: {sc['status']}")
    tspec = scenario_target(sc)
    paths = job_paths(sc)
    sweeps = parse_sweeps(a.sweep, sc)
    sets = parse_sets(a.sets, sweeps, sc)
    repeats = a.repeats if a.repeats is not None else 1
    if repeats < 1:
        raise StudyError(f"--repeats {repeats}: must be at least 1")
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
                           "size_bytes": None}
        else:
            t["path"] = os.path.abspath(t["path"])
            check_local_target(t, sc, tspec["kind"], a.confirm_overwrite)
            t["device"] = device_info(t["path"])
    engines = list(sc.get("engines") or [])
    engines += [e for e in job_engines(paths) if e not in engines]
    engine_dir = os.path.abspath(a.engine_dir) if a.engine_dir else str(REPO / "build")
    remote_engine_dir = a.remote_engine_dir or engine_dir
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
    if a.out:
        out = Path(a.out)
    else:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        out = REPO / "results" / f"{sc['id']}-{stamp}"
    if out.exists():
        raise StudyError(f"results directory {out} exists (continue it with --resume {out}, "
                         f"or give another --out)")
    tenvs = target_envs(tspec)
    variables = {v: os.environ.get(v, "") for v in job_variables(paths) if v not in tenvs}
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
            print(__doc__.strip())
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
            (out / "runs").mkdir(parents=True)
        return study.execute(resume=bool(a.resume))
    except StudyError as e:
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
