"""The capture tests' fixtures."""
import shutil
import subprocess
import time

import pytest

from fiopack.capture.databases import PrivatePostgres, private_dir
from helpers.capture import REPO, tool_env
from helpers.iocap import IOCAP, attached_programs
from helpers.pgstat import load_pgbench


@pytest.fixture(scope="module")
def checker():
    """tools/dbtrace-check, built by make (the one place C is compiled)."""
    r = subprocess.run(["make", "-s", "--no-print-directory", "build/dbtrace-check"],
                       cwd=REPO, capture_output=True, text=True, env=tool_env())
    if r.returncode:
        pytest.fail(f"cannot build the dbtrace checker:\n{r.stdout}{r.stderr}", pytrace=False)
    return REPO / "build" / "dbtrace-check"


@pytest.fixture
def pg_cluster():
    """make(PREFIX, SERVER, SETTINGS, scale=, pgbench=, timeout=): a private
    PostgreSQL cluster of SERVER in a new /tmp/PREFIX* directory, started
    with SETTINGS, loaded by pgbench (helpers.pgstat.load_pgbench); each
    one stopped and removed after the test."""
    made = []

    def make(prefix, server, settings, scale=1, pgbench="pgbench", timeout=120):
        db = PrivatePostgres(private_dir(prefix), server, settings, timeout=timeout)
        made.append(db)
        return load_pgbench(db, scale, pgbench)

    yield make
    for db in made:
        db.stop()
        shutil.rmtree(db.base, ignore_errors=True)


@pytest.fixture(scope="module")
def built():
    """build/iocap, or the BPF capture's tests fail (helpers.iocap.BPF_MARKS)."""
    if not IOCAP.exists():
        pytest.fail("build/iocap is not built (make iocap)", pytrace=False)


@pytest.fixture
def nothing_left_attached():
    """After the test, no program of iocap is still loaded."""
    yield
    # the kernel frees a program shortly after its last descriptor closes
    t0 = time.monotonic()
    while attached_programs() and time.monotonic() - t0 < 10:
        time.sleep(0.2)
    assert attached_programs() == [], "a BPF program of iocap is still loaded"
