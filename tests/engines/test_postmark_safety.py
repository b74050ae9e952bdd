"""postmark never removes or overwrites what it did not make (issue 23).

The marker `.fio-postmark` proves ownership: a regular file with the
engine's head listing the files and directories a run made. Cleanup removes
only what it lists, and only while each entry is still the one the engine
made (same type and inode, one link). Each test snapshots the user's files
(content, inode, mtime) before and after.
"""
import os

import pytest

from conftest import PM_ENGINE, run_fio, snapshot

MARKER = ".fio-postmark"


def pm(loc, **opts):
    args = ["--name=pm", f"--ioengine=external:{PM_ENGINE}", "--pm_report=none",
            f"--pm_location={loc}"]
    return args + [f"--{k}={v}" for k, v in opts.items()]


def errors(r):
    return [l for l in r.stderr.splitlines() if l.startswith("postmark:")]


def assert_refused(r, needle, *dirs_and_snaps):
    """One 'postmark:' line naming @needle, a non-zero exit without a crash,
    and each (directory, snapshot) unchanged."""
    lines = errors(r)
    assert r.rc > 0, "fio must exit non-zero, not crash\n" + r.describe()
    for bad in ("signal", "Assertion", "Segmentation", "core dumped"):
        assert bad not in r.stderr, f"{bad!r} in stderr\n" + r.describe()
    assert len(lines) == 1, "expected a one-line error\n" + r.describe()
    assert needle in lines[0], f"the line does not name {needle!r}\n" + r.describe()
    for d, snap in dirs_and_snaps:
        assert snapshot(d, content=True) == snap, f"the refused run changed {d}"


# ---------------------------------------------------------------------------
# Subdirectories
# ---------------------------------------------------------------------------

def test_users_empty_subdirectories_stay(tmp_path):
    """pm_subdirectories=3 in a location holding a user's empty s0/ and s1/:
    the run uses them and leaves them (the same directories); only s2/,
    which it made, is removed."""
    d = tmp_path / "loc"
    (d / "s0").mkdir(parents=True)
    (d / "s1").mkdir()
    before = snapshot(d, content=True)
    r = run_fio(pm(d, pm_subdirectories=3, pm_number=60, pm_transactions=200)).ok()
    assert r.job("pm")["sync"]["total_ios"] == 200
    assert not errors(r), r.stderr
    assert sorted(os.listdir(d)) == ["s0", "s1"]
    for s in ("s0", "s1"):
        assert os.listdir(d / s) == []
        assert os.stat(d / s).st_ino == before[s][3]


# ---------------------------------------------------------------------------
# The marker
# ---------------------------------------------------------------------------

def fill(fs_dir):
    """Fills the file system of @fs_dir (a test's tmpfs): one file of its
    free space, then small ones until not even a page is left."""
    with open(fs_dir / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 20))
        except OSError:
            pass
    for k in range(64):
        try:
            (fs_dir / f"filler.{k}").write_bytes(b"x" * 4096)
        except OSError:
            break


@pytest.mark.mounts
def test_run_refused_on_a_full_file_system_leaves_no_marker(tmpfs_dir):
    """pm_space_check=0 on a full file system: the marker cannot be written,
    the run is refused in one line, and the location is left as it was (no
    empty marker, which a later run would take for the engine's)."""
    loc = tmpfs_dir / "loc"
    loc.mkdir()
    fill(tmpfs_dir)
    before = snapshot(loc, content=True)
    r = run_fio(pm(loc, pm_space_check=0, pm_number=20, pm_transactions=50))
    assert_refused(r, MARKER, (loc, before))
    assert not (loc / MARKER).exists()
