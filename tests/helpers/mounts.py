"""File systems mounted for a test (root only), and unmounted after."""
import subprocess
import time

import pytest

from helpers.fio import IS_ROOT


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
