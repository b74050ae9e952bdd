"""Processes the tests start: fio's process trees killed whole, fio's
servers on loopback ports."""
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from helpers.fio import FIO


def descendants(pid: int) -> list:
    """Process ids of all descendants of pid (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kill_group(p: subprocess.Popen):
    """SIGKILL fio and every process it started.

    fio's job processes call setsid(), so they are not in fio's process group:
    kill the group and, explicitly, every descendant of the fio we started.
    """
    pids = descendants(p.pid)
    for pid in [p.pid] + pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.communicate(timeout=30)
    deadline = time.monotonic() + 10
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                break
            if state == "Z":
                break
            time.sleep(0.01)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def fio_servers(logdir, n=2, hostnames=None):
    """n `fio --server` processes on free loopback ports (their logs in
    logdir), ready to accept a client; yields the ports, kills them after.

    hostnames: one name per server; each server then runs in a UTS namespace
    of its own with that hostname (root only), as servers on different
    machines would: fio's client shows a server's lines as "<hostname> ..."."""
    import socket
    procs, ports = [], []
    if hostnames is not None:
        n = len(hostnames)
    try:
        for i in range(n):
            port = free_port()
            log = open(Path(logdir) / f"server{i}.log", "w")
            cmd = [str(FIO), f"--server=ip:127.0.0.1,{port}"]
            if hostnames is not None:
                # unshare and sh exec: the process is the server (kill_group ends it)
                cmd = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                       hostnames[i]] + cmd
            procs.append(subprocess.Popen(cmd,
                                          stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True))
            ports.append(port)
        for port in ports:
            deadline = time.monotonic() + 15
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"fio server on {port} did not start"
                    time.sleep(0.1)
        yield ports
    finally:
        for p in procs:
            kill_group(p)
