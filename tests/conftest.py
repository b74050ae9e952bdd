"""The tests' fixtures (what they share besides is in helpers/).

Every test runs the real fio with the real engine on real directories:
FIO and PACK_ENGINE_DIR name them (helpers/fio.py).
"""
import os
import subprocess
from pathlib import Path

import pytest

# the helpers' asserts explained as the tests' are
pytest.register_assert_rewrite("helpers")

from helpers.fio import BINARIES_MISSING, ENGINE_DIR, IS_ROOT, REPO  # noqa: E402
from helpers.mounts import _umount, mounted  # noqa: E402


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
# Directories and file systems
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
