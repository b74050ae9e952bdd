"""fio-pack capture and the directories a user names: --keep, where the
capture writes its files by fixed names (and syscalls --work, the same
rule), and the tracer that cannot attach or ends before the work.

strace only (the acceptance trial's cases run with --tracer strace): no BPF."""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from helpers.fio import REPO
from helpers.trees import snapshot

FIO_PACK = [sys.executable, str(REPO / "scripts" / "fio-pack")]

pytestmark = [pytest.mark.nofio, pytest.mark.nosan,
              pytest.mark.skipif(not shutil.which("strace"), reason="strace not installed")]


def fio_pack(*args, cwd=None, timeout=60):
    return subprocess.run([*FIO_PACK, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def capture_run(tmp_path, keep, *cmd):
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    return fio_pack("capture", "run", "--tracer", "strace", "--datadir", d, "--db", "generic",
                    "-o", tmp_path / "o.trace", "--keep", keep, "--",
                    *(cmd or ("sh", "-c", f"echo x > {d}/f")))


# The acceptance trial (capture-run/keep-users-dir): --keep naming a
# directory that held a user's strace.out replaced it, and added listing
# and procinfo beside the user's files. --keep is the capture's: new or
# empty, as syscalls --work is, checked before anything runs.
@pytest.mark.parametrize("held", [["strace.out", "listing"], ["notes.txt"], ["sub/"]])
def test_capture_keep_refuses_a_users_directory(held, tmp_path):
    keep = tmp_path / "keep"
    keep.mkdir()
    for n in held:
        if n.endswith("/"):
            (keep / n).mkdir()
        else:
            (keep / n).write_text(f"the user's {n}\n")
    before = snapshot(tmp_path, content=True)
    r = capture_run(tmp_path, keep)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr == (f"fio-pack capture: --keep {keep}: not empty: the capture writes "
                        "strace.out, listing and procinfo in it (name a new or empty "
                        "directory)\n"), r.stderr
    after = snapshot(tmp_path, content=True)
    after.pop("data", None)
    before.pop("data", None)
    assert after == before


@pytest.mark.parametrize("keep", ["new", "empty"])
def test_capture_keep_new_or_empty_gets_the_files(keep, tmp_path):
    k = tmp_path / "keep"
    if keep == "empty":
        k.mkdir()
    r = capture_run(tmp_path, k)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in k.iterdir()) == ["listing", "procinfo", "strace.out"]
    assert "/data/f" in (k / "strace.out").read_text()


def test_syscalls_work_rule_is_the_same(tmp_path):
    """syscalls --work: the same check, the same words."""
    (tmp_path / "mine").write_text("x")
    r = fio_pack("syscalls", "--only", "dd", "--work", tmp_path)
    assert r.returncode == 2 and r.stderr == (
        f"fio-pack syscalls: --work {tmp_path}: not empty: the comparisons write, replace "
        "and remove files in it (name a new or empty directory)\n"), r.stderr


# The acceptance trial (capture-attach/pid-self-init): `capture
# attach --pid 1` printed strace's "attach: ptrace(PTRACE_SEIZE, 1):
# Operation not permitted" and hung until killed: pid 1's descendants
# (every process, fio-pack among them) were traced, and a task strace
# could not attach to was waited for, then left out. The class: the
# tracer that cannot attach, or ends before the processes it traces.
def children_of(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def start(argv):
    import time
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return p


def attach(tmp_path, pid, *more, timeout=45):
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    return fio_pack("capture", "attach", "--tracer", "strace", "--datadir", d,
                    "--db", "generic", "-o", tmp_path / "o.trace", "--pid", pid, *more,
                    timeout=timeout)


@pytest.mark.parametrize("named", ["parent-of-traced"])
def test_attach_to_a_process_strace_cannot_trace(named, tmp_path):
    """A process another tracer holds (ptrace allows one): strace cannot
    attach to it. Named itself, or as the parent of the --pid named, the
    command ends at once in one line naming it and its tracer."""
    import os
    outer = start(["sh", "-c", "strace -o /dev/null sleep 60; true"])
    tracer = children_of(outer.pid)[0]
    sleeper = children_of(tracer)[0]
    # strace's child stops itself until strace has it, then execs sleep
    for _ in range(100):
        if open(f"/proc/{sleeper}/comm").read().strip() == "sleep":
            break
        time.sleep(0.05)
    time.sleep(0.3)
    try:
        r = attach(tmp_path, sleeper if named == "traced" else outer.pid, "--duration", "2")
        assert r.returncode == 2 and r.stdout == "", r
        assert r.stderr == (f"fio-pack capture: attach: strace cannot attach to process "
                            f"{sleeper}: traced by process {tracer} already\n"), r.stderr
        assert not (tmp_path / "o.trace").exists()
    finally:
        for pid in (sleeper, tracer):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        outer.wait()


def test_attach_to_an_ancestor_of_fio_pack_refused(tmp_path):
    """--pid 1, or any process fio-pack runs under: the capture would trace
    itself (and with pid 1, every process of the machine)."""
    import os
    r = attach(tmp_path, os.getpid(), "--duration", "1")
    assert r.returncode == 2 and r.stderr == (
        f"fio-pack capture: --pid {os.getpid()}: fio-pack itself runs under it: the capture "
        "would trace itself (name the database's processes, or --no-children)\n"), r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_attach_tracer_killed_during_the_capture(tmp_path):
    """strace killed while the process it traces runs on: the trace would
    stop there and pass for the whole capture (it exited 0)."""
    import os
    import signal
    import time
    d = tmp_path / "data"
    d.mkdir()
    db = start(["sh", "-c", f"while :; do echo x > {d}/f; sleep 0.05; done"])
    ready = tmp_path / "ready"
    try:
        cap = subprocess.Popen([*FIO_PACK, "capture", "attach", "--tracer", "strace",
                                "--datadir", d, "--db", "generic", "-o", tmp_path / "o.trace",
                                "--pid", str(db.pid), "--no-children", "--duration", "20",
                                "--ready", ready], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        while not ready.exists() and cap.poll() is None and time.monotonic() - t0 < 30:
            time.sleep(0.05)
        strace = int(ready.read_text())
        time.sleep(0.5)
        os.kill(strace, signal.SIGKILL)
        out, err = cap.communicate(timeout=40)
        assert cap.returncode == 2, err
        assert err.splitlines()[-1] == (
            f"fio-pack capture: attach: strace ended with status -9 during the capture while "
            f"process {db.pid} still runs"), err
        assert not (tmp_path / "o.trace").exists()
    finally:
        db.kill()
        db.wait()


@pytest.mark.parametrize("duration", ["1e300", "31536001", "inf"])
def test_attach_duration_without_end_refused(duration, tmp_path):
    """--duration 1e300 was a capture without end, as iocap's --duration
    inf was (the acceptance trial): at most a year, as iocap takes."""
    sleeper = start(["sleep", "30"])
    try:
        r = attach(tmp_path, sleeper.pid, "--duration", duration)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert r.returncode == 2 and r.stdout == "", r
    assert len(r.stderr.splitlines()) == 1 and "--duration" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


# The rerun of the acceptance trial (new/capture-run-strace-*): a tracer that
# exits 0 without writing its output (a wrapper that does nothing, or runs
# the command untraced) ended `capture run` in "/tmp/dbcapture.XXX/strace.out:
# cannot read: No such file or directory", naming a temporary file and not
# the tracer.
FAKE_STRACE = {
    "does-nothing": "exit 0",
    "runs-the-command-untraced":
        'while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done; shift; exec "$@"',
}


@pytest.mark.parametrize("fake", sorted(FAKE_STRACE))
def test_run_tracer_that_writes_nothing_is_an_error(fake, tmp_path):
    st = tmp_path / "strace"
    st.write_text("#!/bin/sh\n" + FAKE_STRACE[fake] + "\n")
    st.chmod(0o755)
    d = tmp_path / "data"
    d.mkdir()
    r = fio_pack("capture", "run", "--tracer", "strace", "--strace", st, "--datadir", d,
                 "--db", "generic", "-o", tmp_path / "o.trace", "--", "touch", "x",
                 cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr == ("fio-pack capture: run: strace exited with status 0 without writing "
                        "its output: 'touch x' was not captured\n"), r.stderr
    assert not (tmp_path / "o.trace").exists()


def children(pid: int) -> list:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(k) for k in f.read().split()]
    except OSError:
        return []


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def test_run_names_strace_when_strace_is_killed_mid_capture(tmp_path):
    """strace killed during a capture (by the OOM killer, or a user's kill
    of the wrong process) was reported as the command's failure: "'sleep
    30' under strace exited with status -9", while the command ran on
    untraced. The message now names strace's end, says the command is
    still running and where, and the capture is cut short: no trace."""
    d = tmp_path / "data"
    d.mkdir()
    cap = subprocess.Popen([*FIO_PACK, "capture", "run", "--tracer", "strace", "--datadir", d,
                            "--db", "generic", "-o", tmp_path / "o.trace", "--", "sleep", "30"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sleeper = None
    try:
        deadline = time.monotonic() + 30
        while sleeper is None and time.monotonic() < deadline:
            for st in (k for k in children(cap.pid) if comm(k) == "strace"):
                sleeper = next((k for k in children(st) if comm(k) == "sleep"), None)
                if sleeper:
                    time.sleep(0.5)  # fio-pack has seen it (it samples every 50 ms)
                    os.kill(st, signal.SIGKILL)
            time.sleep(0.05)
        assert sleeper, "strace and its command never appeared"
        cap.wait(timeout=60)
        assert comm(sleeper) == "sleep", "the command did not run on"
        # it holds fio-pack's stdout and stderr: their ends come with its own
        os.kill(sleeper, signal.SIGKILL)
        out, err = cap.communicate(timeout=60)
    finally:
        if cap.poll() is None:
            cap.kill()
            cap.wait()
        if sleeper and comm(sleeper) == "sleep":
            os.kill(sleeper, signal.SIGKILL)
    assert cap.returncode == 2 and out == "", (cap.returncode, out, err)
    assert err == (f"fio-pack capture: run: strace was killed by signal SIGKILL while 'sleep 30' "
                   f"was still running (pid {sleeper}, left running, untraced): the capture is "
                   f"cut short\n"), err
    assert not (tmp_path / "o.trace").exists()


def test_run_says_a_command_killed_by_a_signal_was_killed(tmp_path):
    """A command that a signal ended was said to have "exited with status
    -15"; it was killed by SIGTERM."""
    r = capture_run(tmp_path, tmp_path / "k", "sh", "-c", "kill -TERM $$")
    assert r.returncode == 2 and r.stderr == (
        "fio-pack capture: run: 'sh -c kill -TERM $$' under strace was killed by signal "
        "SIGTERM\n"), r.stderr
    assert not (tmp_path / "o.trace").exists()
