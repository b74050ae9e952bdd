"""iocap's option parsing: what it refuses before it opens an output or
loads anything into the kernel.

Every case names a process that does not exist: were the option under test
accepted, iocap would stop at --pid (still before BPF), so a test here
never loads a BPF program, whatever the build."""
import os
import subprocess

import pytest

from helpers.fio import REPO
from helpers.trees import snapshot

IOCAP = REPO / "build" / "iocap"

pytestmark = [pytest.mark.nofio, pytest.mark.nosan,
              pytest.mark.skipif(not os.access(IOCAP, os.X_OK),
                                 reason="build/iocap not built (no BTF?)")]


def dead_pid() -> int:
    for pid in range(4194000, 4194300):
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    pytest.skip("no free pid found")


def iocap(tmp_path, *args):
    return subprocess.run([str(IOCAP), "-p", str(dead_pid()), "-o", str(tmp_path / "o"),
                           *args], capture_output=True, text=True, timeout=30)


# The acceptance trial: `iocap --duration inf` (and 1e999, which
# strtod makes inf) was taken, and the capture never ended: inf is above 0,
# and the loop's elapsed time never reaches it. A year is the most.
@pytest.mark.parametrize("bad", ["inf", "infinity", "-inf", "1e999", "nan", "-1", "0", "",
                                 "1e300", "31536001", "2^63", "5s"])
def test_iocap_duration_without_end_refused(bad, tmp_path):
    r = iocap(tmp_path, "--duration", bad)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr == (f"iocap: --duration '{bad}': not a number of seconds above 0 and at "
                        "most 31536000 (a year)\n"), r.stderr
    assert snapshot(tmp_path) == {}


@pytest.mark.parametrize("good", ["0.5", "60", "31536000"])
def test_iocap_duration_in_range_passes(good, tmp_path):
    """The bound refuses no real duration: iocap goes on to the next
    check, the process that does not exist."""
    r = iocap(tmp_path, "--duration", good)
    assert r.returncode == 2 and "--duration" not in r.stderr \
        and "no such process" in r.stderr, r.stderr


@pytest.mark.parametrize("bad", ["-1", "0", "", "0x1eb", "2147483648", str(2**63), "1.5"])
def test_iocap_pid_not_a_pid_refused(bad, tmp_path):
    """iocap's other numeric option: --pid takes a pid, nothing wider."""
    r = subprocess.run([str(IOCAP), "-p", bad, "--duration", "1", "-o", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr == f"iocap: --pid '{bad}': not a process id\n", r
    assert snapshot(tmp_path) == {}
