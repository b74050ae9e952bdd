"""The fio a command runs (--fio PATH, or its default build/fio), checked
before anything runs, in one place for every command that runs it.

A directory or a file without x was handed to subprocess and ended in a
PermissionError traceback (`syscalls --fio DIR`, after it had written into
--work), a missing one in a FileNotFoundError; a program that is not fio
(`--fio /bin/true`) ran without an error, and the JSON it did not write
ended in a traceback later."""
import os
import subprocess
from typing import Optional

from fiopack import UserError


def problem(path, version=False) -> Optional[str]:
    """Why @path cannot be run as fio, or None. With @version, it is also
    run with --version, which must print fio's "fio-VERSION"."""
    path = str(path)
    if not os.path.exists(path):
        return "not found (run make)"
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return "not an executable file"
    if version:
        try:
            out = subprocess.run([path, "--version"], stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True, errors="replace",
                                 timeout=30).stdout
        except OSError as e:
            return f"cannot be run: {e.strerror}"
        except subprocess.TimeoutExpired:
            return "not fio: its --version did not end within 30 s"
        if not out.startswith("fio-"):
            return "not fio: its --version does not print fio-VERSION"
    return None


def check(path, what="--fio", error=UserError, version=True) -> str:
    """@path as an absolute path if problem() finds none, else @error in one
    line naming @what and the path."""
    why = problem(path, version)
    if why:
        raise error(f"{what} {path}: {why}")
    return os.path.abspath(str(path))
