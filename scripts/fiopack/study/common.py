"""What every part of the study runner shares: the constants, StudyError,
small helpers (times, hashes, atomic writes) and the catalogue."""
import datetime
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from fiopack import (REPO, UserError, catalogue, documents, engines, fiobin, inputs, jobtext,
                     outputs)


DEFAULT_PORT = 8765
PROBE_TIMEOUT = 60
CONNECT_TIMEOUT = 5
STDERR_TAIL = 4000
LABEL_RE = re.compile(r"^[A-Za-z0-9._-]+$")
VAR_RE = re.compile(r"\$\{([^}]*)\}")
# ioengine=external:${FIO_PACK_ENGINES}/NAME.so (or build/NAME.so): fiopack.engines
ENGINE_RE = engines.JOB_ENGINE_RE
ENGINE_NAME_RE = engines.JOB_ENGINE_NAME_RE
IOLOG_RE = re.compile(r"^(\s*(?:read_iolog|dbr_trace)\s*=\s*)(\S.*?)\s*$")
KEY_RE = re.compile(r"^\s*([^=\s]+)\s*(=|$)")

# One probe job per engine: the smallest run that loads the engine and does
# one operation in a private directory the engine makes on the server.
ENGINE_PROBES = {
    "smallfile": ["tree_file_op=layout", "tree_files=1", "number_ios=1"],
    "postmark": ["pm_number=1", "pm_transactions=10", "pm_report=none"],
    # {repo}: the repository on the server, whose traces the jobs replay
    "dbreplay": ["dbr_trace={repo}/jobs/dbreplay/probe.trace", "dbr_report=none"],
}


class StudyError(UserError):
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
    """Writes a file of the results directory by the pack's rules for
    outputs (a regular file under a temporary name, renamed into place)."""
    outputs.write_output(path, data)


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


def check_job_text(text: str, what: str, path: bool = False) -> str:
    """jobtext.check() with the study's error class."""
    return jobtext.check(text, what, path, error=StudyError)


def value_of(text: str):
    """A sweep value as stored in params: an int when it is one, else the string."""
    return int(text) if re.fullmatch(r"-?\d+", text) else text


# ---------------------------------------------------------------------------
# Catalogue
# ---------------------------------------------------------------------------

def read_document(path: Path, shape, what: str, missing: str = ""):
    """The JSON document of @path, of the shape documents.py gives it, or
    one line naming the file (@what: "catalogue", "--resume DIR: study.json").
    Read as every input is (fiopack/inputs.py): a FIFO, a device or a file
    without end is refused, not read for ever."""
    if not os.path.exists(path):
        raise StudyError(f"{what} {path}: not found{missing}")
    text = inputs.read_whole(path, StudyError, "a document the study reads")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise StudyError(f"{what} {path}: not valid JSON: {e}")
    try:
        documents.check(doc, shape)
    except documents.ShapeError as e:
        raise StudyError(f"{what} {path}: {e}")
    return doc


def load_catalogue(path: Path) -> dict:
    """catalogue.load(), which the analysis calls too; the study needs one,
    so a missing file is said first, with the option that gives another."""
    if not os.path.exists(path):
        raise StudyError(f"catalogue {path}: not found (give --catalogue FILE)")
    return catalogue.load(path, StudyError)


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


def job_paths(sc: dict, cat_path: Path) -> list:
    jobs = sc.get("jobs") or []
    if not jobs:
        raise StudyError(f"scenario {sc['id']}: no job files in the catalogue {cat_path}")
    paths = []
    for j in jobs:
        p = Path(j)
        if not p.is_absolute():
            p = REPO / p
        if not p.is_file():
            raise StudyError(f"scenario {sc['id']}: job file {j} not found (catalogue "
                             f"{cat_path})")
        paths.append(p)
    return paths


# ---------------------------------------------------------------------------


def find_fio(given) -> str:
    if given:
        p = shutil.which(given) if os.sep not in given else given
        if not p:
            raise StudyError(f"--fio {given}: not found in PATH")
        # not run here: a dry run, or a resume that refuses its study.json,
        # runs no fio
        return fiobin.check(p, "--fio", StudyError, version=False)
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
