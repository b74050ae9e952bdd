"""The PostMark model (engines/lib/postmark.c, through build/pm-sim) against
the real PostMark 1.53 (Debian's `postmark`): for each configuration both
run, and every count and byte total of postmark's report must equal
pm-sim's. Only times and rates may differ; when postmark's whole run took
under a second (it prints "1 seconds total"), every interval it saw was 0 or
1 s and so counts as 1 s, exactly what pm-sim assumes, and the two reports
must then be identical character for character.

postmark writes its files into per-test temporary directories (`set
location` with absolute paths); pm-sim touches no filesystem."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers.postmark import postmark_report, terse_counts, verbose_counts

REPO = Path(__file__).resolve().parents[2]
PM_SIM = REPO / "build" / "pm-sim"
POSTMARK = shutil.which("postmark") or "/usr/bin/postmark"
TIMEOUT = 60

# Neither binary is sanitizer-built; the ASan pass of `make check` has
# nothing to add here.
pytestmark = pytest.mark.nosan

OUT_OF_FILES = ("out of files!\n"
                "For this workload, either increase the number of files or\n"
                "decrease the number of transactions.\n")


def _env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the ASan run preloads libasan into us
    return env


@pytest.fixture(scope="module", autouse=True)
def _tools():
    """No skipping: a missing postmark or pm-sim is a failure saying what to do."""
    if not (os.path.isfile(POSTMARK) and os.access(POSTMARK, os.X_OK)):
        pytest.fail("the real PostMark is not installed: apt-get install postmark "
                    "(or scripts/install-deps.sh --test)", pytrace=False)
    r = subprocess.run(["make", "-s", "--no-print-directory", "pm-sim"], cwd=REPO,
                       capture_output=True, text=True, env=_env())
    if r.returncode != 0 or not PM_SIM.is_file():
        pytest.fail(f"cannot build {PM_SIM}:\n{r.stdout}{r.stderr}", pytrace=False)


@pytest.fixture
def pmdir():
    """A directory with a short path: postmark keeps each file name (location
    + subdirectory + number) in an 81-byte buffer and overruns it silently,
    so pytest's long tmp_path names are no place for its locations."""
    d = Path(tempfile.mkdtemp(prefix="pm-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def run_postmark(cfg_path, cwd):
    """postmark reads its configuration from the file named by its only
    argument, then its prompt from stdin (empty here; the file ends in quit)."""
    r = subprocess.run([POSTMARK, str(cfg_path)], cwd=cwd, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=TIMEOUT, env=_env())
    return r


def run_pm_sim(cfg_path, *args):
    r = subprocess.run([str(PM_SIM), *args, str(cfg_path)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=TIMEOUT, env=_env())
    assert r.returncode == 0, f"pm-sim failed: {r.stderr}"
    assert r.stderr == ""
    return r.stdout


def compare(pmdir, body, ndirs=1, terse=False):
    """Runs @body (config lines; {d0}, {d1}... are fresh directories)
    through both and compares. Returns (postmark report, pm-sim output)."""
    dirs = {}
    for i in range(ndirs):
        d = pmdir / f"loc{i}"
        d.mkdir()
        dirs[f"d{i}"] = str(d)
    cfg = pmdir / "pmrc"
    cfg.write_text(body.format(**dirs) + "run\nquit\n")
    real = run_postmark(cfg, pmdir)
    assert real.returncode == 0, f"postmark rc={real.returncode}\n{real.stderr}"
    assert "Error" not in real.stderr, real.stderr
    assert "Eh?" not in real.stdout, real.stdout
    report = postmark_report(real.stdout)
    sim = run_pm_sim(cfg)
    if sim == OUT_OF_FILES:
        assert OUT_OF_FILES in real.stdout and report == ""
    elif report.startswith("Time:\n\t1 seconds total\n") or report.startswith("1 1 "):
        assert sim == report
    elif terse:
        assert terse_counts(sim) == terse_counts(report)
    else:
        assert verbose_counts(sim) == verbose_counts(report)
    # postmark cleaned up after itself: nothing left in the locations.
    for d in dirs.values():
        assert os.listdir(d) == []
    return report, sim


CONFIGS = {
    # PostMark's defaults apart from the location.
    "defaults": "set location {d0}\n",
    "high_below_low_is_fixed": (
        "set location {d0}\nset size 2000 100\nset number 50\nset transactions 300\n"
        "set bias read 0\n"),
    "seed_blocks_raw_io": (
        "set location {d0}\nset seed 7\nset number 200\nset transactions 2000\n"
        "set size 10 5000\nset read 100\nset write 300\nset buffering false\n"),
    "buffered_explicit": (
        "set location {d0}\nset seed 12345\nset buffering true\nset read 4096\n"
        "set write 1\nset size 1 600\nset number 64\nset transactions 777\n"),
    "no_read_append": (
        "set location {d0}\nset bias read -1\nset bias create 7\nset number 100\n"
        "set transactions 500\n"),
    "no_create_delete": (
        "set location {d0}\nset bias create -1\nset bias read 9\nset number 100\n"
        "set transactions 500\nset size 100 900\n"),
    "both_halves_disabled": (
        "set location {d0}\nset bias create -1\nset bias read -1\nset number 30\n"
        "set transactions 50\n"),
    "all_appends_until_full": (
        "set location {d0}\nset bias read 0\nset bias create 10\nset number 10\n"
        "set transactions 400\nset size 100 150\n"),
    "weighted_locations_and_subdirs": (
        "set location {d0}\nset location +{d1} 3\nset location +{d2} 2\n"
        "set subdirectories 4\nset number 150\nset transactions 600\nset seed 99\n"),
    "location_removed": (
        "set location {d0} 2\nset location +{d1} 5\nset location +{d2}\n"
        "set location -{d1}\nset subdirectories 3\nset number 80\nset transactions 400\n"),
    "one_subdirectory_is_none": (
        "set location {d0} 4\nset subdirectories 1\nset number 40\nset transactions 10\n"),
    "single_file": ("set location {d0}\nset number 1\nset transactions 20\n"
                    "set bias create 10\n"),
    "big_files_megabytes": (
        "set location {d0}\nset size 100000 900000\nset number 20\nset transactions 60\n"
        "set read 65536\nset write 65536\n"),
}


def ndirs(body):
    return 1 + max(int(m) for m in re.findall(r"\{d(\d)\}", body))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_counts_equal_real_postmark(pmdir, name):
    report, sim = compare(pmdir, CONFIGS[name], ndirs=ndirs(CONFIGS[name]))
    assert report.startswith("Time:\n")


def test_table_full_creates_nothing(pmdir):
    """Only 2 * number files fit; later creations do nothing, consume no
    draw and name no file."""
    body = ("set location {d0}\nset bias create 10\nset number 20\nset transactions 200\n"
            "set size 10 100\n")
    report, _ = compare(pmdir, body)
    assert "\t40 created" in report
    lines = run_pm_sim(pmdir / "pmrc", "--ops").splitlines()
    assert sum(l.endswith(" table-full") for l in lines) == 200 - 20


def test_fixed_size_appends_nothing(pmdir):
    body = "set location {d0}\nset size 1000\nset number 100\nset transactions 1000\n"
    report, _ = compare(pmdir, body)
    assert "\t0 appended" in report
    lines = run_pm_sim(pmdir / "pmrc", "--ops").splitlines()
    appends = [l for l in lines if l.startswith("append ")]
    assert appends and all(l.endswith(" 0 file-full") for l in appends)


def test_terse_report(pmdir):
    body = ("set location {d0}\nset location +{d1} 2\nset report terse\nset number 120\n"
            "set transactions 900\nset size 300 3000\nset bias read 3\nset bias create 6\n")
    report, sim = compare(pmdir, body, ndirs=2, terse=True)
    assert len(report.split()) == 13 and report.endswith("\n")


def test_out_of_files(pmdir):
    """Deleting in every transaction empties the pool: postmark says so and
    prints no report; pm-sim prints the same message and nothing else."""
    d = pmdir / "loc"
    d.mkdir()
    cfg = pmdir / "pmrc"
    cfg.write_text(f"set location {d}\nset bias create 0\nset number 20\n"
                   "set transactions 1000\nrun\nquit\n")
    real = run_postmark(cfg, pmdir)
    assert real.returncode == 0, real.stderr
    assert OUT_OF_FILES in real.stdout
    assert postmark_report(real.stdout) == ""
    assert run_pm_sim(cfg) == OUT_OF_FILES
    ops = run_pm_sim(cfg, "--ops").splitlines()
    assert ops[-6:-3] == ["out-of-files", "phase delete", "phase done"]
    assert "\n".join(ops[-3:]) + "\n" == OUT_OF_FILES
    # Every transaction deleted one file: the 21st found none.
    assert ops.count("tx-end 19") == 1 and not any(o.startswith("tx-begin 20") for o in ops)


def test_reference_run(pmdir):
    """The 000 article's configuration: ~2.9 GB written, a few seconds."""
    body = ("set location {d0}\nset read 4096\nset write 4096\nset transactions 10000\n"
            "set size 500 500000\nset number 5000\n")
    report, sim = compare(pmdir, body)
    for want in ("\t9950 created", "Creation alone: 5000 files",
                 "Mixed with transactions: 4950 files", "\t5026 read", "\t4974 appended",
                 "\t9950 deleted", "Deletion alone: 4900 files",
                 "Mixed with transactions: 5050 files", "\t1396.61 megabytes read",
                 "\t2861.03 megabytes written"):
        assert want in sim


def test_fewer_than_ten_transactions(pmdir):
    """postmark divides by transactions / 10 and dies of SIGFPE below 10;
    the model simply runs them."""
    d = pmdir / "loc"
    d.mkdir()
    cfg = pmdir / "pmrc"
    cfg.write_text(f"set location {d}\nset number 10\nset transactions 5\nrun\nquit\n")
    real = run_postmark(cfg, pmdir)
    assert real.returncode == -signal.SIGFPE
    sim = run_pm_sim(cfg)
    assert "\t1 seconds of transactions (5 per second)" in sim
    ops = run_pm_sim(cfg, "--ops").splitlines()
    assert sum(op.startswith("tx-end") for op in ops) == 5


def test_several_runs_reseed(pmdir):
    """Every `run` reseeds: two runs of one configuration print the same
    counts, in both programs."""
    d = pmdir / "loc"
    d.mkdir()
    cfg = pmdir / "pmrc"
    cfg.write_text(f"set location {d}\nset number 50\nset transactions 200\nrun\n"
                   "set report terse\nrun\nquit\n")
    real = run_postmark(cfg, pmdir)
    assert real.returncode == 0, real.stderr
    sim = run_pm_sim(cfg)
    terse_real = real.stdout.rstrip("\n").rsplit("\n", 1)[1] + "\n"
    terse_sim = sim.rstrip("\n").rsplit("\n", 1)[1] + "\n"
    assert terse_counts(terse_real) == terse_counts(terse_sim)
    verbose_real = re.findall(r"Time:\n.*? written \(.*?\)\n", real.stdout, re.S)
    assert len(verbose_real) == 1
    assert verbose_counts(sim[:sim.index(terse_sim)]) == verbose_counts(verbose_real[0])
    counts = terse_counts(terse_sim)
    assert f"\t{counts['created']} created" in verbose_real[0]


def test_ops_stream_shape(pmdir):
    """--ops: phases in order, numbered transactions, creations named 1, 2, ...
    in the order they happen, and a deletion for every creation."""
    cfg = pmdir / "pmrc"
    cfg.write_text("set number 30\nset transactions 100\nset subdirectories 3\n"
                   "set location /nonexistent/a\nset location +/nonexistent/b 2\nrun\n")
    lines = run_pm_sim(cfg, "--ops").splitlines()
    phases = [l for l in lines if l.startswith("phase ")]
    assert phases == ["phase create", "phase transactions", "phase delete", "phase done"]
    assert [l for l in lines if l.startswith("tx-begin")] == [
        f"tx-begin {i}" for i in range(100)]
    created = [l.split() for l in lines if l.startswith("create ")]
    assert [int(c[2]) for c in created] == list(range(1, len(created) + 1))
    assert all(c[3] in ("0", "1") and c[4] in ("0", "1", "2") for c in created)
    deleted = sorted(int(l.split()[2]) for l in lines if l.startswith("delete "))
    assert deleted == list(range(1, len(created) + 1))
    assert not os.path.exists("/nonexistent")


def test_bad_config_is_refused(pmdir):
    cfg = pmdir / "pmrc"
    cfg.write_text("set number 10\nset size 0\nrun\n")
    r = subprocess.run([str(PM_SIM), str(cfg)], capture_output=True, text=True,
                       timeout=TIMEOUT, env=_env())
    assert r.returncode == 2
    assert r.stdout == ""
    assert "line 2: set size:" in r.stderr


SYSCALL = re.compile(r'^\d+ +(openat|unlink)\((?:AT_FDCWD, )?"([^"]*)"(?:, ([A-Z_|]+))?.*\) += (-?\d+)')
IO = re.compile(r"^\d+ +(read|write)\((\d+), .*\) += (-?\d+)$")
OPEN_KINDS = {"O_RDWR|O_CREAT": "create", "O_WRONLY|O_CREAT|O_TRUNC": "create",
              "O_RDONLY": "read", "O_RDWR|O_APPEND": "append",
              "O_WRONLY|O_CREAT|O_APPEND": "append"}


def traced_ops(log, roots):
    """(kind, path, bytes) per file operation postmark made, from an strace
    log: the open flags say which operation, the bytes are what the reads or
    writes on that descriptor returned until the next open."""
    ops, fds = [], {}
    for l in log.splitlines():
        m = SYSCALL.match(l)
        if m and m.group(2).startswith(roots):
            call, path, flags, rc = m.groups()
            if call == "unlink":
                ops.append(["delete", path, None])
            else:
                ops.append([OPEN_KINDS[flags], path, 0])
                fds[int(rc)] = ops[-1]
            continue
        m = IO.match(l)
        if m and int(m.group(2)) in fds and int(m.group(3)) > 0:
            fds[int(m.group(2))][2] += int(m.group(3))
    return [tuple(o) for o in ops]


def sim_ops(cfg, dirs, subdirs):
    """The same from pm-sim --ops; operations that do nothing (a full table,
    a full file) make no system call and are left out."""
    ops = []
    for l in run_pm_sim(cfg, "--ops").splitlines():
        w = l.split()
        if not w or w[0] not in ("create", "read", "append", "delete") or len(w) == 7:
            continue
        slot, name, loc, sub, size = map(int, w[1:6])
        path = dirs[loc] + (f"/s{sub}" if subdirs > 1 else "") + f"/{name}"
        ops.append((w[0], path, None if w[0] == "delete" else size))
    return ops


@pytest.mark.parametrize("buffering", ["false", "true"])
def test_file_operations_equal_real_postmark(pmdir, buffering):
    """Under strace: postmark opens, reads, appends to and unlinks exactly
    the files pm-sim names (location, subdirectory, name), in the same
    order, moving the same number of bytes for each."""
    if not shutil.which("strace"):
        pytest.fail("strace is not installed (scripts/install-deps.sh --test)",
                    pytrace=False)
    dirs = [str(pmdir / f"loc{i}") for i in range(3)]
    for d in dirs:
        os.mkdir(d)
    cfg = pmdir / "pmrc"
    cfg.write_text(f"set location {dirs[0]} 2\nset location +{dirs[1]}\n"
                   f"set location +{dirs[2]} 4\nset subdirectories 3\n"
                   f"set buffering {buffering}\nset read 700\nset write 300\n"
                   "set size 50 3000\nset number 60\nset transactions 400\n"
                   "set seed 2024\nset bias read 4\nrun\nquit\n")
    log = pmdir / "strace.log"
    r = subprocess.run(["strace", "-f", "-s", "0", "-o", str(log),
                        "-e", "trace=openat,unlink,read,write", POSTMARK, str(cfg)],
                       cwd=pmdir, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=TIMEOUT, env=_env())
    assert r.returncode == 0, r.stderr
    real = traced_ops(log.read_text(), tuple(dirs))
    sim = sim_ops(cfg, dirs, 3)
    assert len(real) > 400
    assert real == sim
