"""What the BPF capture's tests share: the marks each carries, iocap's
programs seen loaded, and a trace's I/O on one file counted. Their
fixtures (iocap built, no program left loaded) are in
tests/capture/conftest.py."""
import collections
import os
import subprocess
from pathlib import Path

import pytest

from helpers.fio import IS_ROOT, REPO

IOCAP = REPO / "build" / "iocap"

# too slow for the sanitizer pass; BPF needs root and a kernel with BTF; and
# after each test, no program of iocap is left loaded
BPF_MARKS = [pytest.mark.nosan,
             pytest.mark.skipif(not IS_ROOT, reason="BPF needs root (CAP_BPF, CAP_PERFMON)"),
             pytest.mark.skipif(not os.path.exists("/sys/kernel/btf/vmlinux"),
                                reason="this kernel has no BTF: no BPF capture"),
             pytest.mark.usefixtures("built", "nothing_left_attached")]


def attached_programs():
    r = subprocess.run(["bpftool", "prog", "show"], capture_output=True, text=True, timeout=60)
    return [ln for ln in r.stdout.splitlines() if " name iocap_" in ln]


def trace_ops(path: Path, name: str):
    files, io, syncs, n, page = {}, collections.Counter(), 0, 0, 1
    qty = lambda q: int(q[1:]) * page if q.startswith("p") else int(q)  # noqa: E731
    for ln in path.read_text().splitlines():
        tok = ln.split()
        if tok[0] == "pagesize":
            page = int(tok[1])
        elif tok[0] == "file":
            files[tok[1]] = tok[5]
        elif tok[0][0].isdigit():
            n += 1
            if files.get(tok[2]) != name:
                continue
            if tok[3] in ("read", "write"):
                io[(tok[3], qty(tok[4]), qty(tok[5]))] += 1
            elif tok[3] in ("fsync", "fdatasync"):
                syncs += 1
    return io, syncs, n
