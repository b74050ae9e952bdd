"""The modeled devices' tests' fixtures."""
import os
from pathlib import Path

import pytest

from helpers.device import MODDEV, Lab
from helpers.fio import IS_ROOT


@pytest.fixture
def lab(tmp_path):
    if not IS_ROOT:
        pytest.skip("needs root: loop devices and FUSE mounts")
    assert Path("/dev/fuse").exists(), "no /dev/fuse on this machine"
    assert os.access(MODDEV, os.X_OK), \
        f"{MODDEV} not built: run make (make asan for moddev-asan; needs libfuse3-dev)"
    lab = Lab(tmp_path)
    yield lab
    lab.cleanup()
    assert lab.leftovers() == []
