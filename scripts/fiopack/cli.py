"""fio-pack: the one command of the pack's Python side.

`fio-pack COMMAND [ARGS]` runs one tool; `fio-pack COMMAND --help` is that
tool's manual, `fio-pack --help` the list below. The groups `bench` and
`gen` take a second name (`fio-pack bench smallfile --help`).
"""
import argparse
import difflib
import importlib
import signal
import sys

from fiopack import UserError

# command -> (module, one line for the list); a group maps to its own table
COMMANDS = {
    "study": ("fiopack.study.cli", "run a scenario of jobs/catalogue.json over a parameter sweep"),
    "analyze": ("fiopack.results.cli", "fio JSON results to tables, plots, reports and comparisons"),
    "run": ("fiopack.run", "fio on job files with the pack's engines found (FIO_PACK_ENGINES)"),
    "summary": ("fiopack.results.summary", "a short human-readable summary of one fio JSON result"),
    "capture": ("fiopack.capture.cli", "capture a database's I/O as a dbtrace trace"),
    "trace": ("fiopack.trace.cli", "import, export and check dbtrace traces"),
    "device": ("fiopack.device.cli",
               "block devices with the service times of a model (SSD, HDD, array)"),
    "syscalls": ("fiopack.bench.syscalls",
                 "compare the system calls of the original tools and their job files"),
    "bench": {
        "smallfile": ("fiopack.bench.smallfile",
                      "the smallfile engine against a minimal C loop and fio's file engines"),
        "postmark": ("fiopack.bench.postmark", "the postmark engine against PostMark 1.53"),
        "dbreplay": ("fiopack.bench.dbreplay",
                     "the dbreplay engine against fio's read_iolog replay"),
        "capture": ("fiopack.bench.capture", "the cost of capture on a loaded database"),
        "cold": ("fiopack.bench.cold",
                 "cold small-file reads against what the block device serves"),
        "device": ("fiopack.bench.device",
                   "how well a modeled device keeps to its model (fio-pack device)"),
        "models": ("fiopack.bench.models",
                   "the named hard disks of fio-pack device against their datasheets"),
    },
    "gen": {
        "iozone-grid": ("fiopack.gen.iozone_grid",
                        "write the job file and iologs of `iozone -a`"),
        "bonnie-seq": ("fiopack.gen.bonnie_seq",
                       "write bonnie-seq.fio and its rewrite iolog"),
        "dbreplay-dump": ("fiopack.gen.dbreplay_dump",
                          "a deterministic mysqldump-style SQL dump"),
    },
}

# what each group of commands holds, for the list
GROUPS = {"bench": "benchmarks", "gen": "generators"}

# commands whose output is often piped into head: a closed pipe ends them
# quietly, as it ends cat
PIPED = {"study", "analyze", "trace"}


def parser(prog: str, table: dict) -> argparse.ArgumentParser:
    """The list of the commands of @table, as --help prints it."""
    ap = argparse.ArgumentParser(
        prog=prog, description=__doc__.split("\n\n", 1)[1] if prog == "fio-pack" else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, entry in table.items():
        if isinstance(entry, dict):
            sub.add_parser(name, help=f"{GROUPS[name]}: {', '.join(entry)}")
        else:
            sub.add_parser(name, help=entry[1])
    return ap


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prog, table, path = "fio-pack", COMMANDS, []
    while True:
        if not argv or argv[0] in ("-h", "--help"):
            parser(prog, table).print_help(sys.stdout if argv else sys.stderr)
            return 0 if argv else 2
        name, argv = argv[0], argv[1:]
        if name not in table:
            print(f"{prog}: unknown command {name!r}; commands: {', '.join(table)} "
                  f"(see {prog} --help)", file=sys.stderr)
            return 2
        path.append(name)
        if not isinstance(table[name], dict):
            break
        prog, table = f"{prog} {name}", table[name]
    module = importlib.import_module(table[name][0])
    if path[0] in PIPED:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if hasattr(module, "on_signals"):
        module.on_signals()
    try:
        return module.main(argv)
    except UserError as e:
        # the commands without error handling of their own (the generators,
        # the benchmarks, summary): one line after the command's name
        print(f"{' '.join(['fio-pack'] + path)}: {e}", file=sys.stderr)
        return 2


def pick_command(argv, doc, prog, commands, bare=None, suggest=False):
    """The command of a `PROG COMMAND [OPTIONS]` tool (fio-pack analyze,
    capture, device, trace): (command, its arguments), or the exit status
    once the usage @doc is printed (no command: on @bare, standard error by
    default, status 2; -h, --help, `help`: on stdout, 0; `help COMMAND` is
    `COMMAND --help`) or an unknown command is said (2; with @suggest, the
    closest command named)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(doc.strip(), file=sys.stdout if argv else bare or sys.stderr)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "help":
        if not rest:
            print(doc.strip())
            return 0
        cmd, rest = rest[0], ["--help"]
    if cmd not in commands:
        close = difflib.get_close_matches(cmd, list(commands), 1) if suggest else []
        print(f"{prog}: unknown command {cmd!r}" + (f" (did you mean {close[0]}?)" if close else "")
              + f"; commands: {', '.join(commands)} (see {prog} --help)", file=sys.stderr)
        return 2
    return cmd, rest


def run_command(argv, parser, prog, commands, error) -> int:
    """The main() of a `PROG COMMAND [OPTIONS]` tool whose commands take
    what their own parser(COMMAND) reads (fio-pack trace and device): the
    command's exit status, or pick_command's; an @error it raises is said
    in one line, "PROG: ...", status 2."""
    got = pick_command(argv, parser().format_help(), prog, commands)
    if isinstance(got, int):
        return got
    cmd, rest = got
    try:
        # the command's own parser: its errors name it, as they always have
        return commands[cmd](parser(cmd).parse_args(rest))
    except SystemExit as e:     # --help printed the manual
        return e.code
    except (error, UserError) as e:  # the command's Error, an output refused
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
