"""fio-pack capture attach: running processes (or a cgroup's) captured
until --duration, a signal or their end, after the refusals a capture
must make before it starts (fio-pack under the pids, a PostgreSQL server
of another data directory, io_uring under strace)."""
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import List

from fiopack.capture.bpf import (IOCAP_INCOMPLETE, bpf_unusable, iocap_args, last_words,
                                 pick_tracer, read_stats)
from fiopack.capture.common import (capture_status, convert_file, keep_files, prepare,
                                    strace_args, strace_binary)
from fiopack.capture.procs import (Watcher, ended, descendants, direct_fds, running, read_listing,
                                   take_listing, task_label, write_procinfo)
from fiopack.capture.rules import PROG, Error
from fiopack import outputs


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
                       f": strace {ended(rc)}" if rc is not None else
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

