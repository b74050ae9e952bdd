"""Shared helpers for the fio tests of the smallfile engine.

Conventions:
  FIO              fio binary (default <repo>/build/fio, the last one built;
                   make check sets build/fio-X.Y/fio)
  PACK_ENGINE_DIR  directory holding smallfile.so (default <repo>/build,
                   whose engines load the build for the fio running them);
                   make check sets build/fio-X.Y, and the sanitizer run
                   build/fio-X.Y/asan with libasan in LD_PRELOAD, which fio
                   inherits from us.

Every test runs the real fio with the real engine on real directories.
"""
import contextlib
import json
import os
import re
import signal
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

REPO = Path(__file__).resolve().parent.parent
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


@pytest.fixture(autouse=True)
def _binaries_present(request):
    """No skipping: a test that runs fio fails with a clear message when fio
    or an engine is missing. Tests marked nofio (pure Python: the analysis
    of stored results, the trace format, the generators) need neither."""
    if BINARIES_MISSING and not request.node.get_closest_marker("nofio"):
        pytest.fail(BINARIES_MISSING, pytrace=False)


@pytest.fixture(autouse=True)
def _both_converters(request, monkeypatch):
    """Every BPF capture of the capture tests is converted twice: by the C
    converter (build/iocap-convert, capture/native.py) and by the Python one
    it follows; fio-pack capture fails if the two traces or their notes
    differ, or if the C one leaves a capture to the Python one. Under the
    ASan engines the C converter is its ASan build; PACK_IOCAP_CONVERT=asan
    takes that build with the normal engines (the capture tests are too
    slow under the ASan engines, not under the ASan converter)."""
    if Path(str(request.node.fspath)).parent.name != "capture":
        return
    asan = ENGINE_DIR.name == "asan" or os.environ.get("PACK_IOCAP_CONVERT") == "asan"
    name = "iocap-convert-asan" if asan else "iocap-convert"
    monkeypatch.setenv("FIO_PACK_CONVERT_CHECK", "1")
    monkeypatch.setenv("FIO_PACK_IOCAP_CONVERT", str(REPO / "build" / name))
    if asan:    # it exits at its end without freeing its tables
        monkeypatch.setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1")


# ---------------------------------------------------------------------------
# Running fio
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# The documented tree shape, computed independently of the engine
# ---------------------------------------------------------------------------

@dataclass
class Shape:
    nfiles: int
    fanout: int = 32
    depth: int = 2
    files_per_dir: int = 0
    maildir: bool = False
    files_per_leaf: int = field(init=False)
    nleaves: int = field(init=False)

    def __post_init__(self):
        if self.files_per_dir:
            need = -(-self.nfiles // self.files_per_dir)
            depth, leaves = 0, 1
            while leaves < need:
                leaves *= self.fanout
                depth += 1
            self.depth, self.nleaves = depth, leaves
            self.files_per_leaf = self.files_per_dir
        else:
            self.nleaves = self.fanout ** self.depth
            self.files_per_leaf = -(-self.nfiles // self.nleaves)

    @property
    def digit_width(self) -> int:
        return len(format(self.fanout - 1, "x"))

    def leaf_path(self, leaf: int) -> str:
        digits = []
        for _ in range(self.depth):
            digits.append(format(leaf % self.fanout, "0%dx" % self.digit_width))
            leaf //= self.fanout
        return "/".join(reversed(digits))

    def name(self, i: int) -> str:
        width = max(10, len(str(self.nfiles - 1)))
        return "f%0*d" % (width, i)

    def path(self, i: int) -> str:
        parts = [self.leaf_path(i // self.files_per_leaf)]
        if self.maildir:
            parts.append("new")
        parts.append(self.name(i))
        return "/".join(p for p in parts if p)

    def all_paths(self) -> list:
        return [self.path(i) for i in range(self.nfiles)]


# ---------------------------------------------------------------------------
# Looking at what is on disk
# ---------------------------------------------------------------------------

FILE_RE = re.compile(r"^f\d{10,}$")


def marker_params(marker) -> str:
    """A smallfile marker's text without the inode of its directory
    (tree_dir_inode=: where the tree was laid out, not how), to compare the
    markers of two trees."""
    return "".join(l for l in Path(marker).read_text().splitlines(True)
                   if not l.startswith("tree_dir_inode="))


def tree_files(root) -> dict:
    """{relative path: size} of every regular file below root except the marker."""
    root = Path(root)
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for fn in filenames:
            p = Path(dirpath, fn)
            rel = p.relative_to(root).as_posix()
            if rel == MARKER:
                continue
            st = os.lstat(p)
            out[rel] = st.st_size
    return out


def snapshot(root, content=False) -> dict:
    """Full listing of root: {relpath: (kind, size, mtime_ns, ino[, sha])}. Catches any change."""
    import hashlib
    root = Path(root)
    out = {}
    if not root.exists():
        return {"<missing>": None}
    if not root.is_dir():
        st = os.lstat(root)
        return {".": ("file", st.st_size, st.st_mtime_ns, st.st_ino,
                      hashlib.sha1(root.read_bytes()).hexdigest())}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath, n)
            st = os.lstat(p)
            # a FIFO or device node is never read (a FIFO would block the test)
            kind = ("dir" if stat.S_ISDIR(st.st_mode) else "link" if stat.S_ISLNK(st.st_mode)
                    else "file" if stat.S_ISREG(st.st_mode) else f"special {st.st_mode:o}")
            entry = (kind, st.st_size if kind != "dir" else 0, st.st_mtime_ns, st.st_ino)
            if content and kind == "file":
                entry += (hashlib.sha1(p.read_bytes()).hexdigest(),)
            out[p.relative_to(root).as_posix()] = entry
    return out


def file_stats(root) -> dict:
    """{relpath: (ino, size, mtime_ns)} of the tree's files."""
    root = Path(root)
    return {rel: (os.lstat(root / rel).st_ino, os.lstat(root / rel).st_size,
                  os.lstat(root / rel).st_mtime_ns)
            for rel in tree_files(root)}


def read_opstats(path) -> list:
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------

@pytest.fixture
def tree_dir(tmp_path) -> Path:
    """A fresh, empty directory for a tree."""
    d = tmp_path / "tree"
    d.mkdir()
    return d


@pytest.fixture
def other_tree_dir(tmp_path) -> Path:
    """A second fresh, empty directory (reference trees)."""
    d = tmp_path / "tree2"
    d.mkdir()
    return d


def _mount(fstype, target, opts):
    r = subprocess.run(["mount", "-t", fstype, "-o", opts, fstype, str(target)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount {fstype} ({opts}): {r.stderr.strip()}")


def _umount(target):
    for _ in range(20):
        r = subprocess.run(["umount", str(target)], capture_output=True, text=True)
        if r.returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"cannot unmount {target}: {r.stderr}")


def mounted(tmp_path, name, fstype, opts, what=None):
    """A generator for a fixture: @fstype mounted with @opts at tmp_path/name
    for the test (root only; skipped otherwise), unmounted after."""
    if not IS_ROOT:
        pytest.skip(f"needs root to mount {what or fstype}")
    d = tmp_path / name
    d.mkdir()
    _mount(fstype, d, opts)
    yield d
    _umount(d)


@pytest.fixture
def fresh_ext4(tmp_path) -> Path:
    """A new ext4 (mkfs on a loop-mounted file, 64 MiB), as a freshly made
    disk is: its root holds mkfs's empty lost+found. Root only."""
    if not IS_ROOT:
        pytest.skip("needs root to mount an ext4 image")
    img = tmp_path / "ext4.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    r = subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    d = tmp_path / "newdisk"
    d.mkdir()
    r = subprocess.run(["mount", "-o", "loop", str(img), str(d)], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot loop-mount an ext4 image: {r.stderr.strip()}")
    assert (d / "lost+found").is_dir()
    yield d
    _umount(d)


@pytest.fixture
def tmpfs_dir(tmp_path) -> Path:
    """A small tmpfs mounted for the test (root only), unmounted after."""
    yield from mounted(tmp_path, "tmpfs", "tmpfs", "size=64m")


@pytest.fixture
def ramfs_dir(tmp_path) -> Path:
    """A ramfs mount (a file system without O_DIRECT), unmounted after."""
    yield from mounted(tmp_path, "ramfs", "ramfs", "size=64m")


@pytest.fixture
def ro_dir(tmp_path) -> Path:
    """An empty read-only tmpfs mount (root only)."""
    yield from mounted(tmp_path, "ro", "tmpfs", "ro", "a read-only tmpfs")


def start_fio_background(args, env=None) -> subprocess.Popen:
    """Starts fio in its own process group (so the whole group can be killed)."""
    cmd = [str(FIO), "--output-format=json"] + [str(a) for a in args]
    return subprocess.Popen(cmd, env=fio_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def descendants(pid: int) -> list:
    """Process ids of all descendants of pid (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kill_group(p: subprocess.Popen):
    """SIGKILL fio and every process it started.

    fio's job processes call setsid(), so they are not in fio's process group:
    kill the group and, explicitly, every descendant of the fio we started.
    """
    pids = descendants(p.pid)
    for pid in [p.pid] + pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.communicate(timeout=30)
    deadline = time.monotonic() + 10
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                break
            if state == "Z":
                break
            time.sleep(0.01)


# ---------------------------------------------------------------------------
# fio's client/server mode on loopback
# ---------------------------------------------------------------------------

def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def fio_servers(logdir, n=2, hostnames=None):
    """n `fio --server` processes on free loopback ports (their logs in
    logdir), ready to accept a client; yields the ports, kills them after.

    hostnames: one name per server; each server then runs in a UTS namespace
    of its own with that hostname (root only), as servers on different
    machines would: fio's client shows a server's lines as "<hostname> ..."."""
    import socket
    procs, ports = [], []
    if hostnames is not None:
        n = len(hostnames)
    try:
        for i in range(n):
            port = free_port()
            log = open(Path(logdir) / f"server{i}.log", "w")
            cmd = [str(FIO), f"--server=ip:127.0.0.1,{port}"]
            if hostnames is not None:
                # unshare and sh exec: the process is the server (kill_group ends it)
                cmd = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                       hostnames[i]] + cmd
            procs.append(subprocess.Popen(cmd,
                                          stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True))
            ports.append(port)
        for port in ports:
            deadline = time.monotonic() + 15
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"fio server on {port} did not start"
                    time.sleep(0.1)
        yield ports
    finally:
        for p in procs:
            kill_group(p)
