"""fio and the pack's engines as the tests run them.

  FIO              fio binary (default <repo>/build/fio, the last one built;
                   make check sets build/fio-X.Y/fio)
  PACK_ENGINE_DIR  directory holding smallfile.so (default <repo>/build,
                   whose engines load the build for the fio running them);
                   make check sets build/fio-X.Y, and the sanitizer run
                   build/fio-X.Y/asan with libasan in LD_PRELOAD, which fio
                   inherits from us.
"""
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
FIO = Path(os.environ.get("FIO", str(REPO / "build" / "fio")))
ENGINE_DIR = Path(os.environ.get("PACK_ENGINE_DIR", str(REPO / "build")))
ENGINE = ENGINE_DIR / "smallfile.so"
PM_ENGINE = ENGINE_DIR / "postmark.so"
DBR_ENGINE = ENGINE_DIR / "dbreplay.so"
MARKER = ".fio-smallfile-tree"
FIO_TIMEOUT = 120


def _fio_version() -> str:
    try:
        return subprocess.run([str(FIO), "--version"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except OSError:
        return ""


FIO_VERSION = _fio_version()


def _fio_features() -> dict:
    """The PACK_FIO_HAVE_* probes of the engines' build (scripts/fio-features.sh):
    what this fio has that not every supported fio has."""
    for d in (ENGINE_DIR, ENGINE_DIR.parent, REPO / "build" / FIO_VERSION):
        h = d / "pack-fio-features.h"
        if h.is_file():
            return {m.group(1): m.group(2) == "1" for m in
                    re.finditer(r"#define PACK_FIO_HAVE_(\w+) ([01])", h.read_text())}
    return {}


FIO_FEATURES = _fio_features()


def fio_has(feature: str) -> bool:
    """Whether the fio the engines were built for has @feature (CLAT_PRIO,
    ASYNCIO_SETS_ISSUE_TIME); a build without the probes is a failure."""
    assert FIO_FEATURES, (f"no pack-fio-features.h for {FIO_VERSION} near {ENGINE_DIR}: "
                          "run make")
    return FIO_FEATURES[feature]


def fio_version_tuple() -> tuple:
    m = re.match(r"fio-(\d+)\.(\d+)", FIO_VERSION)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


# fio before 3.31 ignores a bad value of an engine option given on the
# command line (fixed by fio commit f43aab59, "init: return error incase an
# invalid value is passed as option"), then runs the job without it, and
# with an external engine crashes in its own cleanup. In a job file the job
# is dropped with an error on every version.
FIO_REFUSES_BAD_CMDLINE_ENGINE_OPTIONS = fio_version_tuple() >= (3, 31)

# fio's JSON "prios" (per-priority statistics) exist from fio 3.30 on
needs_prios = pytest.mark.skipif(not FIO_FEATURES.get("CLAT_PRIO", True),
                                 reason=f"{FIO_VERSION} has no per-priority statistics (3.30+)")

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root to mount tmpfs/ramfs")


def _binaries_missing():
    """Why fio or an engine cannot run (None: both are there)."""
    if not (FIO.is_file() and os.access(FIO, os.X_OK)):
        return (f"fio binary not found or not executable: {FIO} "
                f"(set FIO=..., or run `make` in {REPO})")
    for eng in (ENGINE, PM_ENGINE, DBR_ENGINE):
        if not eng.is_file():
            return (f"engine not found: {eng} "
                    f"(set PACK_ENGINE_DIR=..., or run `make engines` / `make asan` in {REPO})")
    return None


BINARIES_MISSING = _binaries_missing()


@dataclass
class FioResult:
    cmd: list
    rc: int
    stdout: str
    stderr: str
    json: Optional[dict] = None
    elapsed: float = 0.0
    # an engine's one line at init about what this fio lacks (pack_fio_lacks),
    # kept out of stderr so that tests of an engine's messages hold on every fio
    lacks: list = field(default_factory=list)

    def describe(self) -> str:
        return (f"command: {' '.join(map(str, self.cmd))}\nrc={self.rc}\n"
                f"--- stderr ---\n{self.stderr[-4000:]}\n"
                f"--- stdout (head) ---\n{self.stdout[:1500]}")

    @property
    def jobs(self) -> list:
        assert self.json is not None, "fio produced no JSON\n" + self.describe()
        return self.json["jobs"]

    def job(self, name: Optional[str] = None) -> dict:
        jobs = self.jobs if name is None else [j for j in self.jobs if j["jobname"] == name]
        assert len(jobs) == 1, (f"expected exactly one job entry named {name!r}, got "
                                f"{[j['jobname'] for j in self.jobs]}\n" + self.describe())
        return jobs[0]

    def total(self, ddir: str, key: str, name: Optional[str] = None) -> int:
        """Sum of jobs[].<ddir>.<key> over all job entries (optionally one job name)."""
        return sum(j[ddir][key] for j in self.jobs if name is None or j["jobname"] == name)

    def smallfile_lines(self) -> list:
        return [l for l in self.stderr.splitlines() if l.startswith("smallfile:")]

    def ok(self) -> "FioResult":
        assert self.rc == 0, "fio failed\n" + self.describe()
        return self


def engine_arg() -> str:
    return f"--ioengine=external:{ENGINE}"


def fio_env(env: Optional[dict] = None) -> dict:
    """os.environ plus env; a value of None removes the variable. The job
    files' ${FIO_PACK_ENGINES} is the engines under test, as a user sets
    it once (the job file headers)."""
    full = dict(os.environ)
    full["FIO_PACK_ENGINES"] = str(ENGINE_DIR)
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = str(v)
    return full


LACKS_RE = re.compile(r"^(smallfile|postmark|dbreplay): fio-\S+ has no .+ "
                      r"\(fio \d+\.\d+ and later\): ")


def split_lacks(stderr: str):
    """stderr without the engines' lines about what this fio lacks, and those lines."""
    keep, lacks = [], []
    for line in stderr.splitlines(keepends=True):
        (lacks if LACKS_RE.match(line) else keep).append(line)
    return "".join(keep), [l.rstrip("\n") for l in lacks]


def run_fio(args=None, jobfile=None, cwd=None, env=None, timeout=FIO_TIMEOUT,
            prefix=None, json_output=True) -> FioResult:
    """Runs fio with --output-format=json.

    args: list of fio arguments (e.g. from sf_args), or jobfile: path of a job
    file (extra args may still be given). prefix: a command to wrap fio in
    (e.g. strace). On success stdout must be exactly one JSON document:
    the engine must never write to stdout.
    """
    cmd = list(prefix or []) + [str(FIO)]
    if json_output:
        cmd.append("--output-format=json")
    cmd += [str(a) for a in (args or [])]
    if jobfile is not None:
        cmd.append(str(jobfile))
    t0 = time.monotonic()
    # fio forks a process per job: a timeout kills the whole session, or the
    # jobs of a hung run outlive the test (and spin on, loading the machine)
    with subprocess.Popen(cmd, cwd=cwd, env=fio_env(env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, errors="replace",
                          start_new_session=True) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            pytest.fail(f"fio timed out after {timeout}s: {' '.join(cmd)}\n"
                        f"stderr: {err!r}")
    p = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    stderr, lacks = split_lacks(p.stderr)
    res = FioResult(cmd=cmd, rc=p.returncode, stdout=p.stdout, stderr=stderr, lacks=lacks,
                    elapsed=time.monotonic() - t0)
    assert res.rc >= 0, f"fio killed by signal {-res.rc}\n" + res.describe()
    for bad in ("AddressSanitizer", "runtime error:", "Assertion", "LeakSanitizer"):
        assert bad not in res.stderr, f"{bad!r} in fio's stderr\n" + res.describe()
    assert not any(l.startswith(("smallfile:", "postmark:", "dbreplay:")) for l in res.stdout.splitlines()), \
        "the engine wrote to stdout\n" + res.describe()
    if json_output:
        try:
            res.json = json.loads(res.stdout)
        except ValueError:
            res.json = None
            # on errors fio itself prints "fio: pid=..., err=..." before the JSON
            start = res.stdout.find("\n{")
            if res.rc != 0 and start >= 0:
                try:
                    res.json = json.loads(res.stdout[start:])
                except ValueError:
                    pass
        if res.rc == 0:
            assert res.json is not None, "fio succeeded but stdout is not one JSON document\n" \
                + res.describe()
    return res


def sf_args(tree_dir=None, name="job", **opts) -> list:
    """fio command-line arguments for one smallfile job.

    tree_dir None leaves the option out (the engine's default target).
    Keyword options become --key=value (True -> 1).
    """
    args = [f"--name={name}", engine_arg()]
    if tree_dir is not None:
        args.append(f"--tree_dir={tree_dir}")
    for k, v in opts.items():
        if v is True:
            v = 1
        args.append(f"--{k}={v}")
    return args


def layout(tree_dir, nfiles, **opts) -> FioResult:
    """Lays out a tree (one sequential pass of tree_file_op=layout) and checks success."""
    opts.setdefault("rw", "write")
    return run_fio(sf_args(tree_dir, name="layout", tree_files=nfiles,
                           tree_file_op="layout", **opts)).ok()


def start_fio_background(args, env=None) -> subprocess.Popen:
    """Starts fio in its own process group (so the whole group can be killed)."""
    cmd = [str(FIO), "--output-format=json"] + [str(a) for a in args]
    return subprocess.Popen(cmd, env=fio_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


