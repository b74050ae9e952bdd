"""fio-pack run - fio on job files, with the pack's engines found.

Runs fio (build/fio in a checkout, else fio in PATH, or --fio PATH) on the
job files, from the current directory, with FIO_PACK_ENGINES set to the
pack's engines when it is not set already: the installed LIBDIR, else the
checkout's build/ (docs/jobs.md). Every other argument goes to fio as it
is (give fio's options as --name=value); its output and exit status are
fio's.

Before fio starts, each job file's ioengine=external:PATH lines are
checked as fio will read them (${VAR} from the environment, a relative
path from the current directory): a path that is no file is refused in
one line naming the job file, its line and the fix, where fio would say
invalid external ioengine path and then "Bad option" for every engine
option with a guess of its own. Exit status 2 for that, else fio's.
"""
import argparse
import os
import re
import sys

from fiopack import UserError, engines, fiobin
from fiopack.options import Parser

ENGINE_LINE_RE = re.compile(r"^\s*ioengine\s*=\s*external:\s*(.*?)\s*$")
VAR_RE = re.compile(r"\$\{([^}]*)\}")


def check_job(path: str, env: dict) -> None:
    """One line for a job file fio cannot read or whose engine is no file."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    except OSError as e:
        raise UserError(f"job file {path}: {e.strerror}")
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith((";", "#")):
            continue
        m = ENGINE_LINE_RE.match(line)
        if not m:
            continue
        so = VAR_RE.sub(lambda v: env.get(v.group(1), ""), m.group(1))
        if not os.path.isfile(so):
            name = os.path.basename(so)
            raise UserError(engines.fix(
                f"{path} line {n}: engine {so} not found",
                name[:-3] if name.endswith(".so") else name,
                literal="${" + engines.ENV + "}" not in m.group(1), run=True))


def split_args(argv: list) -> tuple:
    """(the fio to run or None, fio's arguments, the job files among them)."""
    fio, args, jobs = None, [], []
    it = iter(argv)
    for a in it:
        if a == "--fio":
            fio = next(it, None)
            if fio is None:
                raise UserError("--fio: needs a PATH")
        elif a.startswith("--fio="):
            fio = a.split("=", 1)[1]
        else:
            args.append(a)
            if not a.startswith("-"):
                jobs.append(a)
    return fio, args, jobs


def parser():
    title, text = __doc__.split("\n\n", 1)
    ap = Parser(prog="fio-pack run", description=text,
                usage="fio-pack run [--fio PATH] [FIO OPTION]... JOB.fio...",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fio", metavar="PATH",
                    help="the fio to run (default build/fio in a checkout, else fio in PATH)")
    ap.add_argument("args", nargs="*", metavar="FIO-OPTION|JOB",
                    help="fio's options (--name=value) and the job files, given to fio "
                         "in their order")
    return ap


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        parser().print_usage(sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        parser().parse_known_args(["--help"])
    from fiopack.study.common import StudyError, find_fio
    given, args, jobs = split_args(argv)
    if not jobs:
        raise UserError("no job file given (see fio-pack run --help)")
    try:
        fio = fiobin.check(find_fio(given), "--fio" if given else "fio")
    except StudyError as e:
        raise UserError(str(e))
    env = dict(os.environ)
    env.setdefault(engines.ENV, engines.default_dir())
    for job in jobs:
        check_job(job, env)
    sys.stdout.flush()
    os.execve(fio, [fio, *args], env)
