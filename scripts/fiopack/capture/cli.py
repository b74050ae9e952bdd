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
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

from fiopack.capture.bpf import (IOCAP_INCOMPLETE, bpf_losses, bpf_unusable, iocap_args,
                                 last_words, pick_tracer, read_stats)
from fiopack.capture import native
from fiopack.capture.convert import Converter, Counts
from fiopack.capture.native import NativeConverter
from fiopack.capture.procs import (Watcher, descendants, direct_fds, running, read_listing,
                                   read_procinfo, take_listing, task_label, write_procinfo)
from fiopack.capture.rules import (DB_ALIASES, DB_NAMES, PAGESIZE, PROG, RULES, TRACE_SET,
                                   Error)
from fiopack import UserError, inputs, outputs
from fiopack.cli import pick_command
from fiopack.manpage import ManParser, sections
from fiopack.options import number
from fiopack.trace import dbtrace as dt  # the format's reader/writer

# strace's longest line: a call's strings at -s 65535, escaped (4 bytes a byte)
STRACE_LINE_MAX = 16 << 20

# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

def db_of(name: str) -> str:
    db = DB_ALIASES.get(name, name)
    if db not in RULES:
        raise Error(f"--db: unknown database '{name}' (postgresql, mariadb, sqlite, generic)")
    return db


def rules_of(db: str, extra: List[str]) -> list:
    rules = []
    for r in extra or []:
        if "=" not in r:
            raise Error(f"--role '{r}': expected PATTERN=ROLE")
        pat, role = r.rsplit("=", 1)
        if role not in dt.ROLES or role == "directory":
            raise Error(f"--role '{r}': unknown role '{role}' (data, log, journal, temp, other)")
        if not pat:
            raise Error(f"--role '{r}': empty pattern")
        rules.append((pat, role))
    return rules + RULES[db]


def pagesize_of(a, db) -> int:
    p = a.pagesize or PAGESIZE[db]
    if p < dt.MIN_PAGE or p > dt.MAX_PAGE or p & (p - 1):
        raise Error(f"--pagesize {p}: must be a power of two from {dt.MIN_PAGE} to {dt.MAX_PAGE}")
    return p


def check_outputs(a):
    """Every output of the command, checked before anything runs (a capture
    is long: its trace refused at the end would lose it)."""
    if not a.output:
        raise Error("-o OUT.trace[.gz] is required")
    # convert's strace output, --listing and --procinfo are its inputs
    outputs.check(a.output, "-o", [x for x in (getattr(a, "input", None), getattr(a, "listing", None),
                                               getattr(a, "procinfo", None)) if x])
    outputs.check(getattr(a, "ready", None), "--ready")
    # the capture writes strace.out, listing and procinfo there: a user's
    # files of those names were replaced
    outputs.check_new_or_empty_dir(getattr(a, "keep", None), "--keep",
                                   "the capture writes strace.out, listing and procinfo in it")


def compose_source(a, db, capture: str) -> str:
    what = a.source if a.source else f"{DB_NAMES[db]} database"
    if any((c < " " and c != "\t") or c == "\x7f" for c in what):
        raise Error("--source: no control characters (the source is one line)")
    if DB_NAMES[db].lower() not in what.lower() and db not in what.lower():
        what = f"{DB_NAMES[db]}: {what}"
    conv = f"fio-pack capture convert --db {db}"
    text = f"{what}; capture: {capture}; {conv}"
    text = "".join("?" if c < " " or c == "\x7f" else c for c in text)
    return text[:dt.MAX_LINE - 8]


def convert_file(a, db, strace_out, listing, procinfo, capture, cwd, name=None,
                 root_name=None, tracer_stats=None) -> dict:
    kw = dict(listing=listing, procinfo=procinfo, cwd=cwd, outside=a.outside,
              outside_prefix=a.outside_prefix, name=name or strace_out)
    # the input's rules (fiopack.inputs) before either converter reads it
    inputs.open_regular(strace_out, Error, "strace's output").close()
    # iocap-convert makes the records when it holds every line (native.py):
    # iocap's output always; strace's goes to the Python converter
    conv = NativeConverter(db, a.datadir, **kw)
    if not conv.run(strace_out, pagesize_of(a, db), bpf=tracer_stats is not None):
        conv = None
    if conv is None:
        conv = Converter(db, a.datadir, **kw)
        feed_file(conv, strace_out, name)
    try:
        res = write_trace(a, db, conv, a.output, capture, root_name, tracer_stats)
    finally:
        if isinstance(conv, NativeConverter):
            conv.close()
    if isinstance(conv, NativeConverter) and native.crosscheck():
        ref = Converter(db, a.datadir, **kw)
        feed_file(ref, strace_out, name)
        work = tempfile.mkdtemp(prefix="convert-check.")
        try:
            out = os.path.join(work, "python.trace")
            write_trace(a, db, ref, out, capture, root_name, tracer_stats)
            native.compare(conv, ref, a.output, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    notes(a, conv, res)
    return res


def feed_file(conv: Converter, strace_out: str, name: Optional[str]):
    f = inputs.open_regular(strace_out, Error, "strace's output")
    with f:
        first = f.read(2)
        f.seek(0)
        if first == b"\x1f\x8b":
            import gzip
            f = gzip.GzipFile(fileobj=f)
        try:
            # a line at most STRACE_LINE_MAX: /dev/zero's bytes or a sparse
            # file are one line without end, read until the memory ran out
            for n, raw in enumerate(iter(lambda: f.readline(STRACE_LINE_MAX + 1), b""), 1):
                if len(raw) > STRACE_LINE_MAX:
                    raise Error(f"{name or strace_out} line {n}: longer than "
                                f"{STRACE_LINE_MAX >> 20} MiB: not strace's output")
                conv.feed(n, raw.decode("latin-1"))
        except (OSError, EOFError) as e:
            raise Error(f"{name or strace_out}: cannot read: {e}")
    conv.finish()


def write_trace(a, db, conv: Converter, output, capture, root_name, tracer_stats) -> dict:
    if tracer_stats:
        bpf_losses(conv, tracer_stats)
    if conv.nrec == 0:
        raise Error(f"{conv.name}: no file I/O of the data directory {conv.datadir} "
                    "in the capture (wrong --datadir?)")
    names = {}
    if root_name and conv.first_pid is not None:
        names[conv.first_pid] = f"{root_name}-{conv.first_pid}"
    return conv.write(output, pagesize_of(a, db), compose_source(a, db, capture),
                      rules_of(db, a.role), names)


def capture_status(a, res: dict) -> int:
    """0, or 3 for a trace that lacks I/O its capture could not see (its
    "incomplete" header lines), unless --accept-incomplete: such a trace is
    written all the same, and says so to whoever replays it."""
    lines = res.get("incomplete") or []
    for text in lines:
        print(f"{PROG}: {a.output}: incomplete capture"
              f"{' (accepted)' if a.accept_incomplete else ''}: {text}", file=sys.stderr)
    if not lines or a.accept_incomplete:
        return 0
    print(f"{PROG}: {a.output}: written, but incomplete: {len(lines)} class(es) of I/O not "
          "seen, listed above and in its header (fio-pack trace check shows them); pass "
          "--accept-incomplete to accept such a trace", file=sys.stderr)
    return 3


def notes(a, conv: Converter, res: dict):
    if a.quiet:
        return
    say = lambda m: print(f"{PROG}: note: {m}", file=sys.stderr)  # noqa: E731
    for k, v in sorted(conv.dropped.items()):
        say(f"dropped {v} {k}")
    for k, v in sorted(conv.mapped.items()):
        say(f"{v} {k}")
    ops = " ".join(f"{k}={v}" for k, v in sorted(res["ops"].items()))
    roles = Counts()
    for d in res["decls"]:
        roles.add(d.role)
    say(f"{a.output}: {res['records']} records, {res['files']} files "
        f"({', '.join(f'{v} {k}' for k, v in sorted(roles.items()))}), {res['streams']} "
        f"streams, {res['duration']:.3f} s; {ops}")


def strace_binary(a) -> str:
    s = shutil.which(a.strace)
    if not s:
        raise Error(f"strace not found ('{a.strace}'): install it (apt-get install strace)")
    return s


def strace_args(out_name: str, seccomp: bool) -> List[str]:
    args = ["strace", "-f", "-ttt", "-yy", "-qq", "-s", "0", "-T"]
    if seccomp:
        args.append("--seccomp-bpf")
    return args + ["-e", f"trace={TRACE_SET}", "-o", out_name]


def keep_files(a, work: str):
    if not a.keep:
        return
    try:
        os.makedirs(a.keep, exist_ok=True)
    except OSError as e:
        raise Error(f"--keep {a.keep}: {e.strerror}")
    for n in ("strace.out", "listing", "procinfo"):
        p = os.path.join(work, n)
        if os.path.exists(p):
            outputs.copy_to_output(p, os.path.join(a.keep, n), "--keep")


def prepare(a):
    db = db_of(a.db)
    check_outputs(a)
    pagesize_of(a, db)
    rules_of(db, a.role)
    if not a.datadir:
        raise Error("--datadir DIR is required")
    return db


def run_bpf(a, db, work: str, raw: str) -> dict:
    """run with the BPF capture: the command starts held at a pipe, iocap
    attaches to it, then it goes; the capture ends with it."""
    stats, ready = os.path.join(work, "iocap.stats"), os.path.join(work, "iocap.ready")
    if not shutil.which(a.command[0]):
        raise Error(f"run: '{a.command[0]}' not found")
    r, wfd = os.pipe()
    # a shell that waits for a word on the pipe, then becomes COMMAND (same
    # pid, stdin untouched)
    hold = ["sh", "-c", f'read go <&{r}; exec {r}<&-; exec "$@"', "sh", *a.command]
    try:
        cmd = subprocess.Popen(hold, pass_fds=(r,))
    except OSError as e:
        raise Error(f"run: cannot start '{a.command[0]}': {e.strerror}")
    os.close(r)
    argv = iocap_args([cmd.pid], raw, stats, ready, True)
    cap = subprocess.Popen(argv, start_new_session=True, stderr=subprocess.PIPE)
    w = Watcher()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the command
    try:
        while cap.poll() is None and not os.path.exists(ready):
            time.sleep(0.02)
        if cap.poll() is not None:
            cmd.kill()
            cmd.wait()
            why = last_words(cap)
            raise Error(f"run: the BPF capture failed: {why}")
        os.write(wfd, b"go\n")
        os.close(wfd)
        wfd = -1
        while True:
            try:
                rc = cmd.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                w.sample(roots=[cmd.pid])
        cap.wait(timeout=600)       # it ends once the command has
    finally:
        signal.signal(signal.SIGINT, old)
        if wfd >= 0:
            os.close(wfd)
        if cap.poll() is None:
            cap.send_signal(signal.SIGINT)
            cap.wait(timeout=60)
    write_procinfo(os.path.join(work, "procinfo"), w.info)
    keep_files(a, work)
    if cap.returncode not in (0, IOCAP_INCOMPLETE):
        why = last_words(cap)
        raise Error(f"run: the BPF capture failed: {why}")
    if rc != 0:
        raise Error(f"run: '{' '.join(a.command)[:80]}' exited with status {rc}")
    shown = ["iocap", "-p", "PID", "-o", "strace.out", "(the command held until attached)"]
    return convert_file(a, db, raw, read_listing(os.path.join(work, "listing"), a.datadir),
                        w.info, " ".join(shown), os.getcwd(), name="BPF capture",
                        root_name=os.path.basename(a.command[0]),
                        tracer_stats=read_stats(stats))


def cmd_run(a) -> int:
    db = prepare(a)
    if not a.command:
        raise Error("run: no COMMAND given after '--' (see fio-pack capture run --help)")
    if not os.path.isdir(a.datadir):
        raise Error(f"--datadir {a.datadir}: not a directory")
    a.datadir = os.path.realpath(a.datadir)
    if pick_tracer(a) == "bpf":
        work = tempfile.mkdtemp(prefix="dbcapture.")
        try:
            with open(os.path.join(work, "listing"), "w", encoding="latin-1") as f:
                f.write("".join(ln + "\n" for ln in take_listing(a.datadir)))
            res = run_bpf(a, db, work, os.path.join(work, "strace.out"))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return capture_status(a, res)
    st = strace_binary(a)
    work = tempfile.mkdtemp(prefix="dbcapture.")
    try:
        raw = os.path.join(work, "strace.out")
        lst = take_listing(a.datadir)
        with open(os.path.join(work, "listing"), "w", encoding="latin-1") as f:
            f.write("".join(ln + "\n" for ln in lst))
        argv = strace_args(raw, not a.no_seccomp)
        shown = argv[:-1] + ["strace.out", "--"] + a.command
        argv = [st] + argv[1:] + ["--"] + a.command
        w = Watcher()
        try:
            p = subprocess.Popen(argv)
        except OSError as e:
            raise Error(f"cannot start strace: {e.strerror}")
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the command
        try:
            while True:
                try:
                    rc = p.wait(timeout=0.05)
                    break
                except subprocess.TimeoutExpired:
                    w.sample(p.pid)
        finally:
            signal.signal(signal.SIGINT, old)
        write_procinfo(os.path.join(work, "procinfo"), w.info)
        keep_files(a, work)
        if rc != 0:
            raise Error(f"run: '{' '.join(a.command)[:80]}' under strace exited with status {rc}")
        if not os.path.exists(raw):
            # not the capture's temporary file to name: the tracer ran, the command was
            # not captured (a wrapper that did nothing, or ran it untraced)
            raise Error(f"run: strace exited with status 0 without writing its output: "
                        f"'{' '.join(a.command)[:80]}' was not captured")
        capture = " ".join(shlex.quote(x) for x in shown)
        res = convert_file(a, db, raw, read_listing(os.path.join(work, "listing"), a.datadir),
                           w.info, capture, os.getcwd(), name="strace output",
                           root_name=os.path.basename(a.command[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return capture_status(a, res)


def cgroup_procs(cgroup: str) -> List[int]:
    """The processes of cgroup v2 directory @cgroup (itself, not below)."""
    try:
        with open(os.path.join(cgroup, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def cgroup_tracer(a) -> str:
    """--cgroup: only the BPF capture filters by cgroup (strace follows pids)."""
    if not os.path.isdir(a.cgroup):
        raise Error(f"--cgroup {a.cgroup}: not a directory")
    if not os.path.exists(os.path.join(a.cgroup, "cgroup.controllers")):
        raise Error(f"--cgroup {a.cgroup}: not a cgroup v2 directory")
    if a.tracer == "strace":
        raise Error("--cgroup: needs --tracer bpf (strace follows processes, not cgroups)")
    why = bpf_unusable()
    if why is not None:
        raise Error(f"--cgroup: needs the BPF capture, which cannot run: {why}")
    return "bpf"


def check_attach(a) -> None:
    """The refusals of attach's own options (prepare() checks the common ones)."""
    if bool(a.pid) == bool(a.cgroup):
        raise Error("attach: give the processes: --pid PID (repeatable) or --cgroup CGROUP")
    for pid in a.pid or []:
        if not os.path.isdir(f"/proc/{pid}"):
            raise Error(f"--pid {pid}: no such process")
    if not os.path.isdir(a.datadir):
        raise Error(f"--datadir {a.datadir}: not a directory")
    for pid in a.pid or []:
        # --pid 1 (a hostile-user trial gave it) traced every process of
        # the machine, fio-pack and its tracer among them
        if not a.no_children and os.getpid() in [pid] + descendants([pid]):
            raise Error(f"--pid {pid}: fio-pack itself runs under it: the capture would "
                        "trace itself (name the database's processes, or --no-children)")
    a.datadir = os.path.realpath(a.datadir)
    if a.duration is not None and a.duration <= 0:
        raise Error("--duration: must be a positive number of seconds")
    if a.cgroup and a.no_children:
        raise Error("--no-children: a cgroup's processes are captured, children or not")
    if a.cgroup:
        a.cgroup = os.path.realpath(a.cgroup)


def postmaster_of(pid: int):
    """(postmaster pid, its data directory) of the PostgreSQL process @pid
    is or descends from, or None: a postmaster runs in its data directory,
    whose postmaster.pid names it first."""
    p = pid
    while p > 1:
        try:
            d = os.path.realpath(f"/proc/{p}/cwd")
            with open(os.path.join(d, "postmaster.pid")) as f:
                if f.readline().strip() == str(p):
                    return p, d
        except (OSError, ValueError):
            pass
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
            p = int(st[st.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            return None
    return None


def check_postgresql(a, tracer: str) -> None:
    """A PostgreSQL capture's refusals, before anything starts: a --datadir
    that is not the data directory of the server attached (the trace would
    hold nothing, or another cluster's files); an io_method whose I/O the
    tracer cannot see (strace and io_uring), unless --accept-incomplete."""
    for pid in a.pid or []:
        got = postmaster_of(pid)
        if got is None:
            continue
        pm, d = got
        if d != a.datadir:
            raise Error(f"--datadir {a.datadir}: process {pid} is the PostgreSQL server of {d} "
                        f"(postmaster {pm}), not of this directory")
        if tracer != "strace" or a.accept_incomplete:
            continue
        try:
            rings = any(os.readlink(f"/proc/{pm}/fd/{fd}") == "anon_inode:[io_uring]"
                        for fd in os.listdir(f"/proc/{pm}/fd"))
        except OSError:
            rings = False
        if rings:
            raise Error(f"--tracer strace: the PostgreSQL server {pm} runs with "
                        "io_method=io_uring, whose reads and writes strace cannot see (they are "
                        "not system calls): capture it with --tracer bpf, or pass "
                        "--accept-incomplete for a trace without them")


def snapshot_tasks(w, pids) -> None:
    """What the capture cannot see start: each task's name and working
    directory, each process's files open with O_DIRECT."""
    for pid in pids:
        w.odirect[pid] = direct_fds(pid)
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                lab = task_label(pid, int(tid))
                if lab:
                    w.info.setdefault(int(tid), {})["name"] = f"{lab}-{tid}"
                try:
                    w.info[int(tid)]["cwd"] = os.readlink(f"/proc/{tid}/cwd")
                except (OSError, KeyError):
                    pass
        except OSError:
            pass


def tracer_argv(a, tracer, roots, pids, raw, work) -> tuple:
    """The tracer's command line: (argv, argv as the trace's source shows
    it, iocap's stats file, iocap's ready file)."""
    stats, ready = os.path.join(work, "iocap.stats"), os.path.join(work, "iocap.ready")
    if tracer == "bpf":
        argv = iocap_args([] if a.cgroup else roots, raw, stats, ready, not a.no_children,
                          a.cgroup)
        shown = ["iocap"] + [x if x != raw else "strace.out" for x in argv[1:-4]]
    else:
        argv = strace_args(raw, False)
        for pid in pids:
            argv += ["-p", str(pid)]
        shown = [x if x != raw else "strace.out" for x in argv]
        argv[0] = strace_binary(a)
    return argv, shown, stats, ready


def wait_attached(p, tracer, ready, pids, w, stop) -> None:
    """Returns once the tracer sees every task (iocap: its ready file;
    strace: every task has it as its tracer), or a signal asks to stop."""
    t_start = time.monotonic()
    if tracer == "bpf":
        while p.poll() is None and not os.path.exists(ready) and not stop:
            time.sleep(0.02)
        if p.poll() is not None:
            why = last_words(p)
            raise Error(f"attach: the BPF capture failed: {why}")
        return
    want = set()
    for pid in pids:
        try:
            want.update(int(t) for t in os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass
    have = set()
    while p.poll() is None and time.monotonic() - t_start < 60 and not stop:
        have = {tid for _, tid in w.traced_by(p.pid)}
        # a task another tracer holds is not waited for: it never comes
        if not want or want - have <= set(other_tracers(want - have, p.pid)):
            break
        time.sleep(0.05)
    if stop:
        return
    # a task strace could not attach to (another tracer has it, or ptrace
    # is refused: --pid 1) left strace tracing the rest, or nothing, and
    # the capture went on without an end or without that task's I/O
    missing = sorted(t for t in want - have if running(t))
    rc = p.poll()
    if rc is not None or missing:
        if rc is None:
            p.kill()
            try:
                # a strace that failed to attach has been seen in a tracing
                # stop of its own (this VM's init as its tracer): its end is
                # then not ours to collect, and waiting would hang
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        held = other_tracers(missing, p.pid)
        named = sorted(held) or [pid for pid in pids if pid in missing] or missing or pids
        why = held.get(named[0])
        raise Error(f"attach: strace cannot attach to process {named[0]}"
                    + (f" (and {len(named) - 1} more)" if len(named) > 1 else "")
                    + (f": traced by process {why} already" if why else
                       f": strace exited with status {rc}" if rc is not None else
                       ": not attached within 60 s (permissions? ptrace_scope?)"))


def other_tracers(tids, mine: int) -> dict:
    """{task: its tracer} of those of @tids that a tracer other than @mine
    holds: ptrace allows one tracer a task, so strace cannot attach to it."""
    held = {}
    for t in tids:
        try:
            with open(f"/proc/{t}/status", encoding="latin-1") as f:
                for line in f:
                    if line.startswith("TracerPid:"):
                        tp = int(line.split()[1])
                        if tp and tp != mine:
                            held[t] = tp
        except (OSError, ValueError):
            continue
    return held


def tracer_ended(p, tracer, name, roots, stop) -> None:
    """The tracer @p ended by itself during the capture (not stopped by a
    signal to fio-pack or --duration): an error if it failed, or if a
    process it traced (@roots) still runs: the trace would end there and
    pass for the whole capture."""
    if stop or p.poll() is None:
        return
    # iocap ends by itself at its --duration, and its early stops
    # (incomplete: exit 3, or a failure) are said by detach() with its
    # reason, an incomplete one in the trace's header
    if tracer == "bpf":
        return
    alive = [pid for pid in roots if running(pid)]
    if p.returncode != 0:
        raise Error(f"attach: {name} ended with status {p.returncode} during the capture"
                    + (f" while process {alive[0]} still runs" if alive else ""))
    if alive:
        raise Error(f"attach: {name} ended (status {p.returncode}) while process {alive[0]} "
                    "still runs: the capture would miss the rest")


def detach(p, tracer, name) -> None:
    """Stops the tracer @p (SIGINT: it detaches and ends) and checks how."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Error(f"attach: {name} did not detach within 60 s")
    if tracer == "bpf" and p.returncode not in (0, IOCAP_INCOMPLETE):
        why = last_words(p)
        raise Error(f"attach: the BPF capture failed: {why}")


def cmd_attach(a) -> int:
    db = prepare(a)
    check_attach(a)
    tracer = cgroup_tracer(a) if a.cgroup else pick_tracer(a)
    if tracer == "strace":
        strace_binary(a)        # refused before anything starts
    if db == "postgresql":
        check_postgresql(a, tracer)
    # a cgroup's processes are whatever is in it at each moment
    roots = cgroup_procs(a.cgroup) if a.cgroup else list(dict.fromkeys(a.pid))
    pids = list(roots)
    if not a.no_children and not a.cgroup:
        pids += descendants(pids)
    work = tempfile.mkdtemp(prefix="dbcapture.")
    stop = []

    def on_signal(signum, frame):
        stop.append(signum)

    old_int = signal.signal(signal.SIGINT, on_signal)
    old_term = signal.signal(signal.SIGTERM, on_signal)
    try:
        raw = os.path.join(work, "strace.out")
        w = Watcher()
        snapshot_tasks(w, pids)
        lst = take_listing(a.datadir)
        with open(os.path.join(work, "listing"), "w", encoding="latin-1") as f:
            f.write("".join(ln + "\n" for ln in lst))
        argv, shown, stats, ready = tracer_argv(a, tracer, roots, pids, raw, work)
        try:
            # strace's own lines ("attach: ptrace(PTRACE_SEIZE, 1): ...") to
            # a file: a failure is said in one line, naming the process
            err = subprocess.PIPE if tracer == "bpf" else \
                open(os.path.join(work, "tracer.err"), "wb")
            p = subprocess.Popen(argv, start_new_session=True, stderr=err)
        except OSError as e:
            raise Error(f"cannot start {argv[0]}: {e.strerror}")
        finally:
            if err is not subprocess.PIPE:
                err.close()     # the child has its own descriptor
        wait_attached(p, tracer, ready, pids, w, stop)
        if a.cgroup:
            sample = lambda: w.sample(roots=cgroup_procs(a.cgroup))  # noqa: E731
        elif tracer == "bpf":
            sample = lambda: w.sample(roots=roots)  # noqa: E731
        else:
            sample = lambda: w.sample(p.pid)  # noqa: E731
        n = sample()
        if not a.quiet:
            what = f"cgroup {a.cgroup}: " if a.cgroup else ""
            print(f"{PROG}: attached to {what}{len(pids)} process(es), {n} thread(s); capturing "
                  + (f"for {a.duration:g} s" if a.duration else "until SIGINT/SIGTERM"),
                  file=sys.stderr)
        if a.ready:
            outputs.write_output(a.ready, f"{p.pid}\n", "--ready")
        t_attached = time.monotonic()
        while not stop and p.poll() is None:
            if a.duration and time.monotonic() - t_attached >= a.duration:
                break
            time.sleep(0.2)
            sample()
        tracer_ended(p, tracer, shown[0], roots if not a.cgroup else [], stop)
        detach(p, tracer, shown[0])
        # the capture's time: its conversion comes after, said apart
        secs = time.monotonic() - t_attached
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
        write_procinfo(os.path.join(work, "procinfo"), w.info)
        keep_files(a, work)
        capture = " ".join(shlex.quote(x) for x in shown)
        tstats = read_stats(stats) if tracer == "bpf" else None
        t_convert = time.monotonic()
        res = convert_file(a, db, raw, read_listing(os.path.join(work, "listing"), a.datadir),
                           w.info, capture, None,
                           name="BPF capture" if tracer == "bpf" else "strace output",
                           tracer_stats=tstats)
        t_convert = time.monotonic() - t_convert
        if not a.quiet:
            print(f"{PROG}: note: converted in {t_convert:.1f} s after the capture "
                  f"({res['records'] / max(t_convert, 1e-3):.0f} records a second)",
                  file=sys.stderr)
        if tstats and not a.quiet:
            print(f"{PROG}: note: the BPF capture: {tstats.get('events', 0)} events in "
                  f"{secs:.1f} s, {tstats.get('cpu_user_s', 0) + tstats.get('cpu_sys_s', 0):.2f} "
                  "s of CPU in user space", file=sys.stderr)
            if tstats.get("syscalls_on_raw_tp"):
                print(f"{PROG}: note: the BPF capture ran on every system call of the machine: "
                      "this kernel has no syscalls:* tracepoints", file=sys.stderr)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
        shutil.rmtree(work, ignore_errors=True)
    return capture_status(a, res)


def cmd_convert(a) -> int:
    db = prepare(a)
    if not a.input:
        raise Error("convert: no STRACE_OUT given (see fio-pack capture convert --help)")
    listing = read_listing(a.listing, a.datadir) if a.listing else None
    procinfo = read_procinfo(a.procinfo) if a.procinfo else None
    capture = a.capture or f"strace output {os.path.basename(a.input)}"
    cwd = os.path.normpath(os.path.abspath(a.cwd)) if a.cwd else None
    return capture_status(a, convert_file(a, db, a.input, listing, procinfo, capture, cwd))


# ---------------------------------------------------------------------------
# Manual pages
# ---------------------------------------------------------------------------

RULES_TEXT = "\n".join(
    f"    {db}:\n" + "\n".join(f"        {pat:26} {role}" for pat, role in RULES[db])
    for db in ("postgresql", "mariadb", "sqlite", "generic"))

MANUAL = {}
MANUAL["run"] = dict(description="""\
NAME
    fio-pack capture run - start a command captured and convert its file I/O

SYNOPSIS
    fio-pack capture run --datadir DIR --db DB -o OUT.trace[.gz] [OPTIONS] -- COMMAND...

DESCRIPTION
    Lists DIR (the sizes the trace declares), then starts COMMAND held until
    the BPF capture (build/iocap, the default where it can run) has attached
    to it, and lets it run captured from the kernel, with every thread and
    process it starts; when COMMAND ends, the capture is converted (see
    convert). Where BPF cannot run (or with --tracer strace) it runs

      strace -f -ttt -yy -qq -s 0 -T --seccomp-bpf -e trace=CALLS -o strace.out -- COMMAND...

    instead (CALLS: the calls "fio-pack capture help convert" lists).
    COMMAND's standard input, output and error are fio-pack capture's own;
    SIGINT (Ctrl-C) goes to COMMAND only. A COMMAND that exits with a
    non-zero status is an error: no trace is written.

    Streams are named after the threads' names (comm) or, for PostgreSQL, the
    process titles, sampled from /proc while the capture runs, plus the
    thread id: "sqlite3-4242", "checkpointer-4250", "backend-4262".
""", epilog="""\
EXAMPLE
    fio-pack capture run --datadir /tmp/db --db sqlite -o load.trace.gz \\
        --source "SQLite 3.40.1 bulk load" -- sqlite3 /tmp/db/app.db < dump.sql
""")

MANUAL["attach"] = dict(description="""\
NAME
    fio-pack capture attach - capture the file I/O of running processes

SYNOPSIS
    fio-pack capture attach --datadir DIR --db DB -o OUT.trace[.gz] --pid PID [--pid PID]...
                        | --cgroup CGROUP
                        [--duration SECONDS] [--no-children] [--ready FILE] [OPTIONS]

DESCRIPTION
    Lists DIR (the sizes the trace declares), then captures each PID and
    (unless --no-children) every process descending from it at that moment:
    a PostgreSQL postmaster's checkpointer, WAL writer, I/O workers and
    backends; MariaDB's mariadbd has threads only, all captured through its
    PID. Threads and processes started later are followed. The tracer is
    the BPF capture, build/iocap (the default where it can run): it follows
    the processes from the kernel (eBPF on tracepoints) and sees their
    system calls, io_uring and libaio requests; what it could not see goes
    into the trace's header as "incomplete" lines. Where it cannot run (or
    with --tracer strace) strace takes its place,

      strace -f -ttt -yy -qq -s 0 -T -e trace=CALLS -o strace.out -p PID -p CHILD...

    which sees system calls only. Once the tracer sees every thread, a line
    "attached to ..." goes to stderr and --ready FILE is written; the
    capture then lasts --duration SECONDS, or until fio-pack capture gets
    SIGINT (Ctrl-C) or SIGTERM, or (with --pid) the processes end. The
    tracer then stops (the database keeps running) and its output is
    converted (see convert). Calls still in progress at the start and the
    end are dropped. A PostgreSQL server whose data directory is not DIR is
    refused, as is io_method=io_uring under strace (it cannot see it).

    --cgroup CGROUP (BPF only) captures every process of the cgroup v2
    directory CGROUP instead, for instance a systemd service's
    /sys/fs/cgroup/system.slice/mariadb.service: the kernel filters by the
    cgroup, so processes that join it later are captured from their first
    call, and those of its sub-cgroups are not.

    strace's ptrace stops every traced thread twice per traced system call:
    under strace the database runs slower while attached (docs/dbcapture.md has
    numbers). --seccomp-bpf, which makes run cheaper, cannot be used when
    attaching.
""", epilog="""\
EXAMPLE
    fio-pack capture attach --datadir /var/lib/postgresql/15/main --db postgresql \\
        --pid $(head -1 /var/lib/postgresql/15/main/postmaster.pid) --duration 10 \\
        --source "PostgreSQL 15 pgbench -c 4 -T 10" -o pgbench.trace.gz
""")

MANUAL["convert"] = dict(description=f"""\
NAME
    fio-pack capture convert - strace output as a dbtrace trace

SYNOPSIS
    fio-pack capture convert STRACE_OUT --datadir DIR --db DB -o OUT.trace[.gz]
                         [--listing FILE] [--procinfo FILE] [--cwd DIR]
                         [--capture TEXT] [OPTIONS]

DESCRIPTION
    Reads what strace -f -ttt -yy -o STRACE_OUT wrote (plain or gzip; lines
    "PID SECONDS.MICROS CALL(ARGS) = RESULT"; -tt times, -T durations, lines
    without a pid (no -f) and "[pid N]" prefixes are read too; without
    timestamps the trace is order-only) and writes the file I/O on DIR as a
    trace: one stream per thread or process, records in the order the calls
    were issued, times in microseconds from the first record (timeunit us).
    With -T durations (run and attach pass -T; iocap always writes them) each
    record keeps its latency ("+LATENCY", dbtrace 2); files read or written
    through O_DIRECT descriptors are declared "direct" (dbtrace 2).

    --listing FILE is the data directory as it was when the capture started,
    in the form of find DIR -printf '%y %s %P\\n' (run and attach make it
    themselves): files in it are declared with its sizes, files the capture
    creates as absent ('-'). Without it, a file is taken to exist before the
    capture unless the capture creates it after unlinking its name or with
    O_EXCL, and its size is estimated from the furthest read (or
    lseek(SEEK_END)) before it shrinks.

MAPPING
    Descriptors  -y paths (fd</path>) name the file of every call; open,
                 openat, openat2, creat, close, close_range, dup, dup2, dup3,
                 fcntl(F_DUPFD, F_DUPFD_CLOEXEC), clone/clone3/fork/vfork
                 (CLONE_FILES shares the table) are tracked as well, for the
                 file positions of read/write and for captures without -y.
                 Sockets, pipes, eventfds, /dev, /proc and /sys are skipped.
    Paths        relative to DIR (and to its real path if it is a symbolic
                 link); relative call arguments are resolved with the
                 AT_FDCWD</dir> and dirfd</dir> paths strace prints, chdir and
                 fchdir, the directories sampled by run/attach (--procinfo),
                 --cwd, or else DIR. Files outside DIR are dropped with a
                 count (--outside). A path the format cannot hold (blanks,
                 control characters, over 1024 bytes) is dropped with a count.
    Names        open with O_CREAT of an absent name -> create; O_TRUNC of a
                 non-empty file -> truncate 0; open(DIR, O_TMPFILE), a file
                 with no name (sort files) -> a file DIR/#tmpfile.N of role
                 temp, created and unlinked at once, its I/O recorded on
                 it; unlink, unlinkat -> unlink;
                 mkdir, mkdirat -> create of a directory; rmdir,
                 unlinkat(AT_REMOVEDIR) -> unlink of a directory. rename,
                 renameat, renameat2 have no equivalent: a renamed file is
                 named by its new name in the trace (a WAL segment made as
                 pg_wal/xlogtemp.PID is its segment), unless another file of
                 the trace has that name (then it keeps its first), and the
                 name it replaced (if any) gets an unlink; a name used again
                 after an unlink is the same trace file (a journal made anew
                 each transaction: create, writes, unlink, create, ...).
    I/O          pread64, preadv, preadv2 -> read; pwrite64, pwritev,
                 pwritev2 -> write (at their offset); read, readv, write,
                 writev -> read/write at the file position (tracked through
                 opens, lseek and O_APPEND; unknown for a descriptor opened
                 before an attach: dropped with a count). The LENGTH is the
                 result (bytes really transferred): a short read at the end of
                 a file is replayed as short; 0 bytes is dropped. Over 64 MiB
                 is split.
    Sizes        ftruncate, truncate -> truncate; fallocate PUNCH_HOLE ->
                 trim (clipped to the file's size); fallocate mode 0 growing
                 the file -> truncate to its new size (the format has no
                 allocation); other fallocate modes dropped.
    Durability   fsync, fdatasync -> fsync, fdatasync (an fdatasync of a
                 directory -> fsync); sync_file_range -> sync_file_range (any
                 flags; clipped to the file's size).
    Async I/O    iocap's output has each io_uring and libaio request with
                 its completion, as a call. In strace's, io_submit: its
                 requests are recorded at submission with their requested
                 lengths when strace prints them (a warning: completion is
                 not visible); io_uring_enter: a warning, its I/O is
                 invisible. Both make the trace incomplete (below): capture
                 with the BPF tracer, which sees them.
    Incomplete   I/O of the data directory that the trace cannot hold is
                 counted, and each class becomes an "incomplete" line of the
                 trace's header, "incomplete N WHAT": io_uring_enter calls,
                 io_submit requests not printed, or of an unmapped opcode, or
                 recorded without their completion; calls on descriptors
                 opened before the capture with no path, or at an unknown
                 file position; paths a trace cannot hold; copy_file_range,
                 sendfile, syncfs and unmapped fallocate modes. Exit status
                 3 unless --accept-incomplete. Calls cut by the capture's
                 start and end, failed calls and files outside DIR are not
                 holes: they are dropped with a note only.
    Dropped      (counted in notes) failed calls (result -1: a failed call
                 changed no file, and replaying it would fail again or do
                 what the database did not), calls interrupted or never
                 resumed, syncfs, copy_file_range, sendfile. mmap'ed I/O
                 (SQLite's -shm, msync) is not a system call strace sees.
    Files        SIZE from --listing (raised when the capture reads past it:
                 the file grew between the listing and the attach); MAXSIZE
                 the furthest any record reaches; roles by the rules below,
                 first match wins, --role rules before them; a path with
                 another below it (or fsynced with O_DIRECTORY, mkdir'ed) is
                 a directory, the data directory itself is '.'.
    Unfinished   with strace -f, a call another thread interrupts is printed
                 as "CALL(ARGS <unfinished ...>" and later "<... CALL
                 resumed>REST": the two are joined; the record has the time
                 the call was issued, and is written in issue order.

ROLE RULES
{RULES_TEXT}
""", epilog="""\
EXAMPLE
    strace -f -ttt -yy -qq -s 0 -e trace=%file,%desc -o pg.strace -p 4242
    fio-pack capture convert pg.strace --datadir /srv/pg --db postgresql \\
        --capture "strace -f -ttt -yy -p 4242" -o pg.trace.gz
""")


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
