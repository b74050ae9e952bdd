"""What pmrc2fio's tests share: the tool run, a PostMark configuration,
and the job files it writes read back."""
import os
import re
import subprocess
from pathlib import Path

from helpers.fio import REPO

TOOL = Path(os.environ.get("PMRC2FIO", str(REPO / "build" / "pmrc2fio")))  # e.g. an ASan build
PMRC_000 = ("set read 4096\nset write 4096\nset transactions 10000\n"
            "set size 500 500000\nset number 5000\n")


def _env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the ASan run preloads libasan into us
    return env


def run_tool(*args, stdin=None, cwd=None):
    return subprocess.run([str(TOOL), *map(str, args)], input=stdin, capture_output=True,
                          text=True, cwd=cwd, env=_env(), timeout=30)


def parse_job(text):
    """[(section, {option: value or None})] in file order, and the comment lines
    before the first section. Values are as fio sees them (no substitution)."""
    sections, header = [], []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line[0] in ";#":
            if not sections:
                header.append(line)
            continue
        # fio cuts a line at the first ';' or '#': there must be none in options
        assert ";" not in line and "#" not in line, line
        m = re.fullmatch(r"\[(.+)\]", line)
        if m:
            sections.append((m.group(1), {}))
            continue
        assert sections, f"option outside a section: {line}"
        key, eq, val = line.partition("=")
        opts = sections[-1][1]
        assert key not in opts, f"{key} twice in [{sections[-1][0]}]"
        opts[key] = val if eq else None
    return sections, header


def jobs_of(text):
    """The job sections (not [global]) as (name, options)."""
    sections, _ = parse_job(text)
    assert sections[0][0] == "global"
    assert all(name != "global" for name, _ in sections[1:])
    return sections[1:]
