"""The tools' tests' fixtures."""
import subprocess

import pytest

from helpers.fio import REPO
from helpers.pmrc2fio import TOOL, _env


@pytest.fixture(scope="module")
def _build():
    """build/pmrc2fio, made for the tests that run it."""
    r = subprocess.run(["make", "-s", "--no-print-directory", "build/pmrc2fio"], cwd=REPO,
                       capture_output=True, text=True, env=_env())
    if r.returncode != 0 or not TOOL.is_file():
        pytest.fail(f"cannot build {TOOL}:\n{r.stdout}{r.stderr}", pytrace=False)
