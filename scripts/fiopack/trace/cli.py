"""NAME
    fio-pack trace - import fio iologs and blkparse output as dbtrace traces, export
    traces as fio iologs, check traces

SYNOPSIS
    fio-pack trace import-iolog    IOLOG... [-o OUT.trace[.gz]] [--streams log|file]
                               [--iolog-unit us|ms|ns] [--pagesize BYTES]
                               [--source TEXT] [--quiet]
    fio-pack trace import-blkparse IN [-o OUT.trace[.gz]] [--event Q|D|C]
                               [--streams pid|single] [--pagesize BYTES]
                               [--source TEXT] [--quiet]
    fio-pack trace export-iolog    TRACE -o OUT.iolog [--prefix DIR] [--stream ID]...
                               [--iolog-unit us|ms|ns]
                               [--sync-file-range drop|datasync] [--quiet]
    fio-pack trace check           TRACE...
    fio-pack trace summary         TRACE... [--streams] [--json]
    fio-pack trace help [COMMAND]

DESCRIPTION
    Converts between the dbtrace trace format of the page-replay engine
    (docs/dbtrace-format.md; the C parser and writer are engines/lib/dbtrace.h)
    and what other tools capture or replay:

      import-iolog     fio iologs, versions 2 and 3 (fio --write_iolog)
      import-blkparse  blkparse's default text output (blktrace | blkparse)
      export-iolog     a trace as a fio iolog (version 3; version 2 for an
                       order-only trace), for fio --read_iolog
      check            read traces with this tool's parser and print what
                       they hold (the same checks as the C parser)
      summary          counts and bytes per file role and operation (and
                       per stream), text or JSON

    Traces are written and read exactly as docs/dbtrace-format.md says. Every
    line written is first run through the reader's own checks, so the tool
    cannot write a trace the parser refuses. A trace output whose name ends in
    .gz is gzip-compressed; trace input is decompressed when it starts with the
    gzip magic bytes, whatever its name ("-" reads standard input).

    An output that is a regular file (or not there yet) is written to a
    temporary file beside it and renamed into place when complete: on any
    error no output file is left behind (nor a partial one over an existing
    file). A character device or a FIFO (-o /dev/null, a named pipe) is
    written in place, never replaced; a symlink is followed, as the shell's >
    follows it (the file it points to is replaced in its own directory); a
    block device, a directory or a socket is refused. Without -o (or with
    -o -) an import writes the trace to standard output, after the whole
    input has been read and checked.

    Notes about what a conversion dropped or changed go to standard error, one
    line each, starting with "fio-pack trace: note:" (--quiet: none).

COMMANDS
    Each command's --help (or fio-pack trace help COMMAND) is its manual page.

EXIT STATUS
    0 success; 2 bad input (a malformed line, named as "FILE line N: reason"),
    a bad option, or a file that cannot be read or written; 3 (check,
    summary) every trace is valid and at least one is incomplete: its
    capture could not see some of the I/O (its "incomplete" lines).
"""
import argparse
from typing import Dict

from fiopack.cli import run_command
from fiopack.manpage import ManParser, sections
from fiopack.options import number
from fiopack.trace.dbtrace import Error, PROG, read_trace
from fiopack.trace import blkparse, iolog
from fiopack.trace import summary as trace_summary
from fiopack.trace.blkparse import cmd_import_blkparse
from fiopack.trace.iolog import cmd_export_iolog, cmd_import_iolog


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------

MANUAL = {**iolog.MANUAL, **blkparse.MANUAL, **trace_summary.MANUAL}
MANUAL["check"] = dict(description="""\
NAME
    fio-pack trace check - read traces and say what they hold

SYNOPSIS
    fio-pack trace check TRACE...

DESCRIPTION
    Reads each TRACE (plain or gzip; "-" standard input) with this tool's
    reader, which makes every check docs/dbtrace-format.md lists (the same as
    the C parser, engines/lib/dbtrace.c), and prints one line per trace:

      TRACE: N records, F files, S streams, timeunit U, pagesize P, ops read=R write=W ...

    A trace whose capture could not see some of the I/O (its header's
    "incomplete" lines, written by fio-pack capture) gets one more line for each,
    after its summary:

      TRACE: incomplete: TEXT

    The first invalid trace stops the command: "fio-pack trace: TRACE line N:
    reason", exit status 2.
""", epilog="""\
EXIT STATUS
    0 every trace is valid and complete; 3 every trace is valid, and at least
    one is incomplete; 2 an invalid trace or a bad option.
""")


def cmd_check(a) -> int:
    if not a.inputs:
        raise Error("check: no TRACE given (see fio-pack trace check --help)")
    incomplete = False
    for path in a.inputs:
        gen = read_trace(path)
        p = next(gen)
        ops: Dict[str, int] = {}
        for rec in gen:
            ops[rec.op] = ops.get(rec.op, 0) + 1
        print(f"{p.name}: {p.nrec} records, {len(p.h.files)} files, {len(p.h.streams)} streams, "
              f"timeunit {p.h.timeunit}, pagesize {p.h.pagesize}, ops "
              + " ".join(f"{k}={v}" for k, v in sorted(ops.items())))
        for text in p.h.incomplete:
            print(f"{p.name}: incomplete: {text}")
        incomplete = incomplete or bool(p.h.incomplete)
    return 3 if incomplete else 0


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

class _Parser(ManParser):
    def error(self, message):
        raise Error(f"{self.prog}: {message} (see {PROG} {self.prog.split()[-1]} --help)")


# what `fio-pack trace --help` lists beside each command
SUMMARY = {"import-iolog": "fio iologs (versions 2 and 3) as a dbtrace trace",
           "import-blkparse": "blkparse text output as a dbtrace trace",
           "export-iolog": "a dbtrace trace as a fio iolog",
           "check": "read traces and say what they hold",
           "summary": "counts and bytes per file role and operation"}

OUTPUT_HELP = ("the trace (.gz: compressed); default standard output\n"
               "(a file is replaced whole, a device or FIFO written\n"
               "in place, a symlink followed)")
PAGESIZE_HELP = "power of two from 512 to 1048576 (default 4096)"


def _add_import_options(ap, cmd):
    ap.add_argument("-o", "--output", metavar="FILE", help=OUTPUT_HELP)
    if cmd == "import-blkparse":
        ap.add_argument("--event", choices=("Q", "D", "C"), default="D", metavar="Q|D|C",
                        help="which events become records (default D)")
        ap.add_argument("--streams", choices=("pid", "single"), default="pid",
                        metavar="pid|single", help="see Streams above")
    else:
        ap.add_argument("--streams", choices=("log", "file"), default="log",
                        metavar="log|file", help="see Streams above")
        ap.add_argument("--iolog-unit", choices=("us", "ms", "ns"), default="us", metavar="U",
                        help="unit of version 3 times: us (default), ms, ns")
    ap.add_argument("--pagesize", type=number(int, low=1), default=4096, metavar="BYTES", help=PAGESIZE_HELP)
    ap.add_argument("--source", metavar="TEXT", help="the trace's source line")
    ap.add_argument("--quiet", action="store_true", help="no notes on stderr")


def _add_export_options(ap):
    ap.add_argument("-o", "--output", metavar="FILE", help="the iolog (required; a file is replaced\n"
                    "whole, a device or FIFO written in place, a symlink\nfollowed)")
    ap.add_argument("--prefix", metavar="DIR", help="directory put before each path")
    ap.add_argument("--stream", type=number(int, low=0), action="append", metavar="ID",
                    help="export only stream ID (repeatable)")
    ap.add_argument("--iolog-unit", choices=("us", "ms", "ns"), default="us",
                    metavar="us|ms|ns", help="unit of version 3 times (default us)")
    ap.add_argument("--sync-file-range", choices=("drop", "datasync"), default="drop",
                    metavar="drop|datasync",
                    help="what a sync_file_range becomes (default drop;\n"
                         "see Dropped above)")
    ap.add_argument("--quiet", action="store_true", help="no notes on stderr")


def parser(cmd=None) -> argparse.ArgumentParser:
    """`fio-pack trace`'s parser, its manual the --help; with @cmd, that
    command's."""
    top = _Parser(prog=PROG, description=sections(__doc__, "NAME", "SYNOPSIS", "DESCRIPTION"),
                  epilog=sections(__doc__, "EXIT STATUS"))
    sub = top.add_subparsers(dest="command", metavar="COMMAND", title="COMMANDS",
                             help="one of the commands below",
                             description="Each command's --help (or fio-pack trace help "
                                         "COMMAND) is its manual page.")
    subs = {}
    for name, summary in SUMMARY.items():
        ap = subs[name] = sub.add_parser(name, prog=f"{PROG} {name}", help=summary,
                                         **MANUAL[name])
        if name == "import-iolog":
            ap.add_argument("inputs", nargs="*", metavar="IOLOG",
                            help="fio iologs, version 2 or 3 (\"-\": standard input)")
            _add_import_options(ap, name)
        elif name == "import-blkparse":
            ap.add_argument("input", metavar="IN",
                            help="blkparse's text output (\"-\": standard input)")
            _add_import_options(ap, name)
        elif name == "export-iolog":
            ap.add_argument("input", metavar="TRACE",
                            help="the trace, plain or gzip (\"-\": standard input)")
            _add_export_options(ap)
        else:
            ap.add_argument("inputs", nargs="*", metavar="TRACE",
                            help="traces, plain or gzip (\"-\": standard input)")
        if name == "summary":
            ap.add_argument("--streams", action="store_true",
                            help="also per stream, by its name")
            ap.add_argument("--json", action="store_true",
                            help="one JSON object per trace, one line each")
    return subs[cmd] if cmd else top


COMMANDS = {"import-iolog": cmd_import_iolog, "import-blkparse": cmd_import_blkparse,
            "export-iolog": cmd_export_iolog, "check": cmd_check,
            "summary": trace_summary.cmd_summary}


def main(argv=None) -> int:
    try:
        return run_command(argv, parser, PROG, COMMANDS, Error)
    except BrokenPipeError:
        return 0
