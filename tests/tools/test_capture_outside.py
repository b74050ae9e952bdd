"""fio-pack capture and the directories a user names: --keep, where the
capture writes its files by fixed names (and syscalls --work, the same
rule), and the tracer that cannot attach or ends before the work.

strace only (issue 23's trial cases run with --tracer strace): no BPF."""
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, snapshot

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


# Issue 23's acceptance trial (capture-run/keep-users-dir): --keep naming a
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
