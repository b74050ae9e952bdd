"""NAME
    fio-pack capture - capture the file I/O of a real database (BPF, or strace)
    and write it as a dbtrace trace for the page-replay engine

SYNOPSIS
    fio-pack capture run     --datadir DIR --db DB -o OUT.trace[.gz] [OPTIONS] -- COMMAND...
    fio-pack capture attach  --datadir DIR --db DB -o OUT.trace[.gz] --pid PID [--pid PID]...
                         | --cgroup CGROUP
                         [--duration SECONDS] [--no-children] [--ready FILE] [OPTIONS]
    fio-pack capture convert STRACE_OUT --datadir DIR --db DB -o OUT.trace[.gz]
                         [--listing FILE] [--procinfo FILE] [--cwd DIR] [OPTIONS]
    fio-pack capture help [COMMAND]

DESCRIPTION
    Turns what a database process really did to its files into a trace in the
    dbtrace format (docs/dbtrace-format.md), which the page-replay engine
    replays on the device under test. docs/dbcapture.md says how to capture
    from PostgreSQL, MariaDB/InnoDB and SQLite, and what each tracer costs.

    The tracer is the BPF capture, build/iocap (--tracer auto, the default,
    where it can run: built, a kernel with BTF, root): it sees the system
    calls, io_uring and libaio requests, for a few percent of the database's
    speed. Where it cannot run, strace (system calls only, and the database
    runs several times slower), with a note saying why.

      run      start COMMAND captured (the database server, or a program
               embedding the database such as sqlite3), wait for it to end,
               convert what it did
      attach   capture running processes (a server's main process and, by
               default, its existing child processes; new threads and
               processes are followed), for --duration seconds or until
               SIGINT (Ctrl-C) or SIGTERM, stop, convert
      convert  convert the output of an earlier capture (strace -f -ttt -yy
               -o FILE, one file in time order, not -ff; or iocap's, the same
               text)

    run and attach list the data directory (every regular file with its size,
    every directory) just before strace starts: the files that exist then are
    declared with those sizes; files the capture creates are declared as
    absent ('-'). The trace's source line holds the --source text, the strace
    command line used and the conversion options.

    Output is written to a temporary file beside OUT and renamed into place
    when complete: on any error no output file is left. A character device or
    a FIFO (-o /dev/null, a named pipe) is written in place instead, a
    symlink is followed (the file it points to is replaced in its own
    directory), a block device, a directory or a socket is refused; the
    same for --ready and the files --keep writes. Notes about what was
    dropped go to standard error, one line each, "fio-pack capture: note: ..."
    (--quiet: none).

COMMANDS
    Each command's --help (or fio-pack capture help COMMAND) is its manual page;
    "fio-pack capture help convert" also says exactly what is mapped and dropped.

EXIT STATUS
    0 success; 2 bad input (named as "FILE line N: reason"), a bad option, a
    failed capture (strace or COMMAND failing), a file that cannot be read or
    written; 3 the trace is written but incomplete: the capture could not see
    some of the database's I/O (one "incomplete" line per class in the
    trace's header and on standard error; --accept-incomplete makes it 0).
"""
import argparse
import os
import sys

from fiopack.capture.attach import cmd_attach
from fiopack.capture.common import capture_status, convert_file, prepare
from fiopack.capture.manual import MANUAL
from fiopack.capture.procs import read_listing, read_procinfo
from fiopack.capture.rules import PROG, Error
from fiopack.capture.run import cmd_run
from fiopack import UserError
from fiopack.manpage import ManParser, sections
from fiopack.options import number
from fiopack.cli import pick_command


def cmd_convert(a) -> int:
    db = prepare(a)
    if not a.input:
        raise Error("convert: no STRACE_OUT given (see fio-pack capture convert --help)")
    listing = read_listing(a.listing, a.datadir) if a.listing else None
    procinfo = read_procinfo(a.procinfo) if a.procinfo else None
    capture = a.capture or f"strace output {os.path.basename(a.input)}"
    cwd = os.path.normpath(os.path.abspath(a.cwd)) if a.cwd else None
    return capture_status(a, convert_file(a, db, a.input, listing, procinfo, capture, cwd))



class _Parser(ManParser):
    def error(self, message):
        raise Error(f"{self.prog}: {message} (see {PROG} {self.prog.split()[-1]} --help)")


# what `fio-pack capture --help` lists beside each command
SUMMARY = {"run": "start a command captured and convert its file I/O",
           "attach": "capture the file I/O of running processes",
           "convert": "strace output as a dbtrace trace"}


def _add_common_options(ap):
    """What every command takes: the database, the output, the rules."""
    ap.add_argument("--datadir", metavar="DIR", help="""\
the database's data directory: traced files are
named relative to it (required)""")
    ap.add_argument("--db", metavar="DB", help="""\
postgresql, mariadb, sqlite or generic: the page
size and the file role rules (required)""")
    ap.add_argument("-o", "--output", metavar="FILE",
                    help="the trace (.gz: gzip-compressed; required; a file\n"
                         "is replaced whole, a device or FIFO written in\n"
                         "place, a symlink followed)")
    ap.add_argument("--pagesize", type=number(int, low=1), metavar="BYTES", help="""\
the database's page size (default: 8192
postgresql, 16384 mariadb, 4096 sqlite, generic)""")
    ap.add_argument("--role", action="append", metavar="PATTERN=ROLE", help="""\
a file role rule checked before the built-in
ones (repeatable; first match wins); PATTERN is an
fnmatch pattern on the path relative to DIR ('*'
also matches '/'), ROLE data, log, journal, temp
or other""")
    ap.add_argument("--outside", choices=("drop", "keep", "error"), default="drop",
                    metavar="drop|keep|error", help="""\
files outside DIR: dropped with a count (default),
kept under --outside-prefix, or an error""")
    ap.add_argument("--outside-prefix", default="outside", metavar="P", help="""\
where kept outside files go (default "outside":
/tmp/x becomes outside/tmp/x)""")
    ap.add_argument("--source", metavar="TEXT", help="""\
what was captured (database, version, workload),
put first on the trace's source line""")
    ap.add_argument("--accept-incomplete", action="store_true", help="""\
exit 0 even when the capture could not see part
of the I/O (io_uring, unprinted io_submit
requests, descriptors of unknown files): the
trace is written either way, with one
"incomplete" line in its header per class of I/O
it lacks, which fio-pack trace check and the replay
repeat (the replay refuses it unless
dbr_accept_incomplete=1)""")
    ap.add_argument("--quiet", action="store_true", help="no notes on stderr")


def _add_tracer_options(ap, cmd):
    ap.add_argument("--tracer", choices=("auto", "bpf", "strace"), default="auto",
                    metavar="auto|bpf|strace", help="""\
the BPF capture (build/iocap: system calls,
io_uring and libaio requests, a few percent of
the database's speed) or strace (system calls
only, a third to a fifth of its speed). auto
(default): BPF where it can run (built, a kernel
with BTF, root), else strace with a note saying
why; bpf: an error where it cannot""")
    ap.add_argument("--keep", metavar="DIR", help=(
        "keep the tracer's output, the listing and the\nprocess names in DIR (new or empty)"
        + (" (for fio-pack capture convert)" if cmd == "run" else "")))
    ap.add_argument("--strace", default="strace", metavar="PATH",
                    help="the strace binary (default strace)")


def _add_attach_options(ap):
    ap.add_argument("--pid", type=number(int, low=1), action="append", metavar="PID",
                    help="a process to attach to (repeatable)")
    ap.add_argument("--cgroup", metavar="CGROUP", help="""\
or: every process of this cgroup v2 directory
(--tracer bpf)""")
    # at most a year, as iocap's --duration: 1e300 is a capture without end
    ap.add_argument("--duration", type=number(float, above=0, high=365 * 86400),
                    metavar="SECONDS",
                    help="capture this long, at most a year (default: until SIGINT/SIGTERM)")
    ap.add_argument("--no-children", action="store_true",
                    help="do not attach to the existing child processes")
    ap.add_argument("--ready", metavar="FILE", help="""\
written (the tracer's pid) once attached: a script
can wait for it before starting the workload""")


def _add_convert_options(ap):
    ap.add_argument("--listing", metavar="FILE", help="""\
the data directory at capture start: 'TYPE SIZE
PATH' lines (find DIR -printf '%%y %%s %%P\\n')""")
    ap.add_argument("--procinfo", metavar="FILE", help="""\
'TID name NAME', 'TID cwd PATH' and 'TID odirect
FD,FD...' lines: stream names, working directories
and the descriptors open with O_DIRECT when the task
was first seen (run/attach --keep write one);
default stream names are pid-TID""")
    ap.add_argument("--cwd", metavar="DIR", help="""\
working directory of processes whose directory the
capture does not tell (default DIR)""")
    ap.add_argument("--capture", metavar="TEXT", help="""\
the strace command line, for the source line
(default "strace output FILE")""")


def parser(cmd=None) -> argparse.ArgumentParser:
    """`fio-pack capture`'s parser, its manual the --help; with @cmd, that
    command's."""
    top = _Parser(prog=PROG, description=sections(__doc__, "NAME", "SYNOPSIS", "DESCRIPTION"),
                  epilog=sections(__doc__, "EXIT STATUS"))
    sub = top.add_subparsers(
        dest="command", metavar="COMMAND", title="COMMANDS", help="one of the commands below",
        description="Each command's --help (or fio-pack capture help COMMAND) is its manual "
                    "page;\n\"fio-pack capture help convert\" also says exactly what is "
                    "mapped and dropped.")
    subs = {}
    for name, summary in SUMMARY.items():
        ap = subs[name] = sub.add_parser(name, prog=f"{PROG} {name}", help=summary,
                                         **MANUAL[name])
        if name == "convert":
            ap.add_argument("input", nargs="?", metavar="STRACE_OUT",
                            help="strace's output file (plain or gzip)")
        if name == "run":
            ap.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND...",
                            help="the command to run captured, after '--'")
        _add_common_options(ap)
        if name == "attach":
            _add_attach_options(ap)
        if name in ("run", "attach"):
            _add_tracer_options(ap, name)
        if name == "run":
            ap.add_argument("--no-seccomp", action="store_true", help="""\
trace without --seccomp-bpf (slower: every system
call stops the database, not only the traced ones)""")
        if name == "convert":
            _add_convert_options(ap)
    return subs[cmd] if cmd else top


COMMANDS = {"run": cmd_run, "attach": cmd_attach, "convert": cmd_convert}


def main(argv=None) -> int:
    got = pick_command(argv, parser().format_help(), PROG, COMMANDS)
    if isinstance(got, int):
        return got
    cmd, rest = got
    opts = rest
    if cmd == "run" and "--" in rest:
        k = rest.index("--")
        opts = rest[:k]
    if "-h" in opts or "--help" in opts:
        print(parser(cmd).format_help().rstrip())
        return 0
    try:
        if cmd == "run":
            if "--" not in rest:
                raise Error("run: put the COMMAND after '--' (see fio-pack capture run --help)")
            k = rest.index("--")
            a = parser(cmd).parse_args(rest[:k])
            if a.command:
                raise Error(f"run: unexpected '{a.command[0]}' before '--'")
            a.command = rest[k + 1:]
        else:
            a = parser(cmd).parse_args(rest)
        return COMMANDS[cmd](a)
    except UserError as e:      # the capture's Error, the trace's, an output refused
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
