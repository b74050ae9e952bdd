"""fio-pack capture run: COMMAND started under the tracer (held until
the BPF capture has attached, or under strace), waited for, converted."""
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

from fiopack.capture.bpf import IOCAP_INCOMPLETE, iocap_args, last_words, pick_tracer, read_stats
from fiopack.capture.common import (capture_status, convert_file, keep_files, prepare,
                                    strace_args, strace_binary)
from fiopack.capture.procs import (Watcher, ended, first_child, read_listing, started,
                                   take_listing, write_procinfo)
from fiopack.capture.rules import Error


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
        raise Error(f"run: '{' '.join(a.command)[:80]}' {ended(rc)}")
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
        child = None    # the command strace forked: (pid, when it started)
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
                    child = child or first_child(p.pid)
        finally:
            signal.signal(signal.SIGINT, old)
        write_procinfo(os.path.join(work, "procinfo"), w.info)
        keep_files(a, work)
        command = ' '.join(a.command)[:80]
        if rc != 0 and child and started(child[0]) == child[1]:
            # strace ends with its command, and with the command's status: this
            # one ended first (killed), and the command runs on, untraced
            raise Error(f"run: strace {ended(rc)} while '{command}' was still running "
                        f"(pid {child[0]}, left running, untraced): the capture is cut short")
        if rc != 0:
            raise Error(f"run: '{command}' under strace {ended(rc)}")
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

