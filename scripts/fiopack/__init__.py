"""fiopack: the Python side of the fio plugin and workload pack.

One command, `fio-pack` (scripts/fio-pack, or `python3 -m fiopack` with
scripts/ on PYTHONPATH), with a subcommand per tool: see fiopack.cli.
"""
from pathlib import Path

# The checkout (or the installed share/fio-pack) the package sits in:
# jobs/, reference/ and build/ are found from here.
REPO = Path(__file__).resolve().parent.parent.parent


class UserError(Exception):
    """Bad input or a refusal, said in one line: the command prints it after
    its name and exits with status 2. Every command's own error class
    derives from it, so what the package's shared parts raise (output
    paths, option values) reaches the user the same way."""


def command(*args) -> list:
    """The argv that runs `fio-pack ARGS` as a child process (the launcher
    beside this package, with the Python running now)."""
    import sys
    return [sys.executable, str(REPO / "scripts" / "fio-pack"), *args]
