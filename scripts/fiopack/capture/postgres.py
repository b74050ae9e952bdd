"""The PostgreSQL servers the capture is tested and benchmarked with: the
one the machine has installed (Debian's /usr/lib/postgresql/MAJOR, whichever
major it is: 15 on Debian 12, 17 on Debian 13), and the PostgreSQL 18 that
`make pg18` builds under build/ for its I/O methods. Nothing else names a
major version: what differs between them is asked of the server."""
import os
import re
import subprocess
from pathlib import Path
from typing import Dict, Optional

from fiopack import REPO

DEBIAN_LIB = Path("/usr/lib/postgresql")
PG18_VERSION = "18.6"


class Server:
    """A PostgreSQL installation: its bin directory, the library directory
    its programs need on LD_LIBRARY_PATH (None: the system's), its version."""

    def __init__(self, bindir: Path, libdir: Optional[Path] = None):
        self.bindir = Path(bindir)
        self.libdir = Path(libdir) if libdir else None
        # never under the tests' LD_PRELOAD (libasan): postgres hangs there
        env = {k: v for k, v in self.env().items() if k != "LD_PRELOAD"}
        try:
            r = subprocess.run([str(self.bindir / "postgres"), "--version"],
                               capture_output=True, text=True, env=env, timeout=60)
        except subprocess.TimeoutExpired:
            raise OSError(f"{self.bindir / 'postgres'} --version did not answer in 60 s")
        # "postgres (PostgreSQL) 15.19 (Debian 15.19-0+deb12u1)"
        m = re.search(r"\(PostgreSQL\) (\d+)(?:\.(\d+))?", r.stdout)
        if r.returncode or not m:
            raise OSError(f"{self.bindir / 'postgres'} --version: "
                          f"{(r.stderr or r.stdout).strip()[:200]}")
        self.major = int(m.group(1))
        self.version = m.group(0).split(") ")[1]

    def bin(self, name: str) -> str:
        return str(self.bindir / name)

    def env(self, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        env = dict(os.environ if base is None else base)
        if self.libdir:
            env["LD_LIBRARY_PATH"] = str(self.libdir)
        return env

    def __repr__(self):
        return f"PostgreSQL {self.version} ({self.bindir})"


def installed() -> Optional[Server]:
    """The newest server Debian's packages installed, or None."""
    found = []
    for d in DEBIAN_LIB.glob("*/bin/initdb") if DEBIAN_LIB.is_dir() else []:
        major = d.parent.parent.name
        if major.isdigit():
            found.append((int(major), d.parent))
    if not found:
        return None
    try:
        return Server(max(found)[1])
    except OSError:
        return None


def built_pg18() -> Optional[Path]:
    """The prefix `make pg18` installed PostgreSQL 18 in, or None."""
    p = Path(REPO) / "build" / f"postgresql-{PG18_VERSION}"
    return p if (p / ".pack-built").exists() else None
