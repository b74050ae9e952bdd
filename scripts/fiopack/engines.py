"""Where the pack's engines are, said once for every tool.

A job file loads an engine as ioengine=external:${FIO_PACK_ENGINES}/NAME.so:
fio replaces ${VAR} in job files from the environment (by nothing when it
is unset; there is no default syntax), and loads external: paths from
where fio runs. A bare ioengine=NAME would need the dynamic loader's
search path (LD_LIBRARY_PATH for every program), or a fio built with
dynamic engines (fio-NAME.so in its own engine directory; Debian's is not).
So one variable, set once, makes every job file run from anywhere; an
installed copy of a job file names the installed engines outright.

The default, which `fio-pack run` and `fio-pack study` apply when the
variable is unset: the installed LIBDIR (written into installed.json beside
this package by `make install`), else the checkout's build/.
"""
import json
import os
import re
from pathlib import Path

from fiopack import REPO

ENV = "FIO_PACK_ENGINES"
# the engine line of the pack's job files, and the one before the variable
# (a relative build/, from the repository root), still read everywhere
JOB_ENGINE_RE = re.compile(r"^(\s*ioengine\s*=\s*external:)(?:\$\{" + ENV + r"\}/|build/)")
JOB_ENGINE_NAME_RE = re.compile(r"^\s*ioengine\s*=\s*external:(?:\$\{" + ENV +
                                r"\}/|build/)([A-Za-z0-9_.-]+)\.so\s*$")
# what fio says of an external: path that is no file, and of an engine it
# found but could not load
FIO_BAD_PATH_RE = re.compile(r'invalid external ioengine path "([^"]*)"')
INSTALLED = Path(__file__).resolve().parent / "installed.json"


def installed() -> dict:
    """What `make install` recorded ({"engines": LIBDIR, ...}), or {} in a
    checkout."""
    try:
        doc = json.loads(INSTALLED.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def default_dir() -> str:
    """The pack's own engines: the installed LIBDIR, else build/."""
    return installed().get("engines") or str(REPO / "build")


def engine_dir() -> str:
    """$FIO_PACK_ENGINES when set, else the default."""
    return os.environ.get(ENV) or default_dir()


def fix(what: str, name: str = "NAME", literal: bool = False, run: bool = False) -> str:
    """The one line that says how to point a job file at the engines
    (@what: "JOB line 65: engine /x/smallfile.so not found"; @name the
    engine's; @literal: the line names a path without the variable; @run:
    said by `fio-pack run`, which sets the variable when it is unset)."""
    here = default_dir()
    if literal:
        return (f"{what}: the job file names the engine's path itself; write "
                f"ioengine=external:${{{ENV}}}/{name}.so (this pack's engines: {here})")
    if run:
        return (f"{what}: {ENV} is set to {os.environ.get(ENV)!r}; set it to the "
                f"directory of the pack's engines, or unset it for this pack's ({here})")
    return (f"{what}: set {ENV} to the directory of the pack's engines (this pack's: "
            f"{here}), or run the job file with `fio-pack run JOB`")
