"""Tables and reports as a reader pastes them (issue 25, item 7): the
provenance line a shell command, one precision per column, no all-dash
row, --baseline refusals naming columns as the table shows them.

On the stored outputs of tests/fixtures/fio-json (marked nofio) and, where
a case needs it, on real runs here."""
import json
import shlex
import subprocess
import sys

import pytest

from conftest import REPO

STORED = REPO / "tests" / "fixtures" / "fio-json"
ANALYZE = [sys.executable, str(REPO / "scripts" / "fio-pack"), "analyze"]

pytestmark = pytest.mark.nosan


def analyze(*args):
    return subprocess.run(ANALYZE + [str(a) for a in args], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


@pytest.mark.nofio
def test_provenance_is_a_shell_command(tmp_path):
    """The command under a table, in a plot's record: pasted into a shell,
    it is the command that made them ("'fio-pack analyze' table" was one
    word)."""
    args = ["table", str(STORED / "qd"), "--rows", "iodepth", "--metric", "expr:read.iops * 1"]
    p = analyze(*args)
    assert p.returncode == 0, p.stderr
    line = p.stdout.strip().splitlines()[-1].strip("_")
    assert shlex.split(line.split("; ")[-1]) == ["fio-pack", "analyze"] + args
    png = tmp_path / "p.svg"
    args = ["plot", str(STORED / "qd"), "--metric", "read.iops", "--x", "iodepth",
            "--where", "job!=qd-a-1", "--title", "queue depth, two runs", "-o", str(png)]
    assert analyze(*args).returncode == 0
    side = json.loads((tmp_path / "p.svg.json").read_text())
    assert shlex.split(side["command"]) == ["fio-pack", "analyze"] + args
