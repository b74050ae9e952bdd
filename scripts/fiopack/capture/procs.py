"""The processes a capture follows and the data directory it lists: the
listing taken before a capture starts, process names, the tasks of a
process tree (from /proc), and the watcher that notices new ones."""
import os
import re
import signal
import stat as _st
from typing import Dict, List, Optional

from fiopack import inputs
from fiopack.capture.rules import Error
from fiopack.trace.dbtrace import MAX_OFFSET


# ---------------------------------------------------------------------------
# Listing and process information
# ---------------------------------------------------------------------------

def take_listing(datadir: str) -> List[str]:
    """The data directory now, as find DIR -printf '%y %s %P\\n' prints it."""
    lines = []
    for top, dirs, files in os.walk(datadir):
        for name in dirs + files:
            p = os.path.join(top, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            y = "d" if _st.S_ISDIR(st.st_mode) else "f" if _st.S_ISREG(st.st_mode) else \
                "l" if _st.S_ISLNK(st.st_mode) else "o"
            lines.append(f"{y} {st.st_size if y == 'f' else 0} {os.path.relpath(p, datadir)}")
    return lines


def data_lines(path: str):
    """(line number, fields split on the first two spaces) of each line of the
    side file @path (a listing, process names) that is not blank or a comment."""
    # the input rules (a FIFO blocked, /dev/zero ran out of memory); a side
    # file is a listing of a data directory or of its processes: bounded
    data = inputs.read_whole(path, Error, "a listing")
    for n, ln in enumerate(data.decode("latin-1").split("\n"), 1):
        if ln.strip() and not ln.startswith("#"):
            yield n, ln.split(" ", 2)


def read_listing(path: str, datadir: str) -> Dict[str, tuple]:
    roots = [os.path.normpath(os.path.abspath(datadir))]
    out: Dict[str, tuple] = {}
    for n, parts in data_lines(path):
        if len(parts) < 2 or len(parts[0]) != 1 or not re.fullmatch(r"[0-9]{1,19}", parts[1]) \
                or int(parts[1]) > MAX_OFFSET:
            raise Error(f"{path} line {n}: expected 'TYPE SIZE PATH' (find DIR -printf "
                        "'%y %s %P\\n')")
        rel = parts[2] if len(parts) > 2 else ""
        if rel.startswith("/") or ".." in rel.split("/"):
            raise Error(f"{path} line {n}: path '{rel[:60]}' is not relative to the data "
                        "directory")
        if parts[0] not in "fd":
            continue
        for r in roots:
            out[os.path.normpath(os.path.join(r, rel)) if rel else r] = \
                (parts[0], int(parts[1]))
    return out


def read_procinfo(path: str) -> Dict[int, dict]:
    out: Dict[int, dict] = {}
    for n, parts in data_lines(path):
        if len(parts) != 3 or not re.fullmatch(r"[0-9]{1,10}", parts[0]) or \
                parts[1] not in ("name", "cwd", "odirect"):
            raise Error(f"{path} line {n}: expected 'TID name NAME', 'TID cwd PATH' or "
                        "'TID odirect FD,FD...'")
        out.setdefault(int(parts[0]), {})[parts[1]] = parts[2]
    return out


def write_procinfo(path: str, info: Dict[int, dict]):
    with open(path, "w", encoding="latin-1") as f:
        for tid in sorted(info):
            for k in ("name", "cwd", "odirect"):
                if info[tid].get(k):
                    f.write(f"{tid} {k} {info[tid][k]}\n")


# PostgreSQL's auxiliary processes by their titles (GetBackendTypeDesc() and
# the background workers' names), up to 18, and the stream name each gets
# ("ROLE-TID"): a title not here is a backend. PostgreSQL 18's I/O workers
# issue the reads of io_method=worker on the backends' behalf: named apart, so
# that dbr_streams=backend does not take them and their share shows.
PG_AUX = {"checkpointer": "checkpointer", "background writer": "background-writer",
          "walwriter": "walwriter", "autovacuum launcher": "autovacuum-launcher",
          "autovacuum worker": "autovacuum-worker",
          "logical replication launcher": "logical-replication-launcher",
          "startup": "startup", "archiver": "archiver", "walreceiver": "walreceiver",
          "walsender": "walsender", "logical replication worker": "logical-replication-worker",
          "parallel worker": "parallel-worker", "stats collector": "stats-collector",
          "bgworker": "bgworker", "io worker": "ioworker", "walsummarizer": "walsummarizer",
          "slotsync worker": "slotsync-worker", "logger": "logger"}


def task_label(pid: int, tid: int) -> Optional[str]:
    """A name for a thread or process: its ps title (PostgreSQL sets one per
    process) or its comm (thread name)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/comm", encoding="latin-1") as f:
            comm = f.read().strip()
    except OSError:
        return None
    if tid == pid:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("latin-1").strip()
        except OSError:
            cmd = ""
        if ": " in cmd and not cmd.startswith("/"):
            title = cmd.split(": ", 1)[1].strip()
            # "postgres: [CLUSTER_NAME: ]ACTIVITY": Debian sets cluster_name
            # ("15/main"), so the role may follow a second ": "
            rest = title.split(": ", 1)[1] if ": " in title else ""
            for aux, label in PG_AUX.items():
                if title.startswith(aux) or rest.startswith(aux):
                    return label
            return "backend" if comm == "postgres" else title.split(" ")[0]
    return comm


class Watcher:
    """Names and working directories of the tasks a strace process traces,
    sampled from /proc while the capture runs."""

    def __init__(self):
        self.info: Dict[int, dict] = {}
        # pid -> its descriptors open with O_DIRECT ("3,7") when first seen:
        # attach takes them before the capture starts (a slow first sample
        # would also delay --ready, letting the capture start before it)
        self.odirect: Dict[int, str] = {}
        # thread (not process) -> how many samples in a row read the same name:
        # a thread names itself once, at its start, so after SETTLED reads
        # its name is not read again (a process's always is: an exec renames
        # it, and PostgreSQL sets its title after the fork)
        self.same: Dict[int, int] = {}
        self.nsamples = 0

    SETTLED = 3
    # every this many samples, the children of every thread, not only of
    # each process's main thread (where PostgreSQL's postmaster forks)
    ALL_CHILDREN_EVERY = 5

    def traced_by(self, tracer: int) -> List[tuple]:
        tasks = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                tids = os.listdir(f"/proc/{d}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{d}/task/{tid}/status", encoding="latin-1") as f:
                        st = f.read()
                except OSError:
                    continue
                m = re.search(r"^TracerPid:\s*(\d+)", st, re.M)
                if m and int(m.group(1)) == tracer:
                    tasks.append((int(d), int(tid)))
        return tasks

    def sample(self, tracer: int = 0, roots: Optional[List[int]] = None) -> int:
        """The tasks traced by strace process @tracer, or @roots' threads and
        their descendants' (the BPF capture)."""
        if roots is None:
            tasks = self.traced_by(tracer)
        else:
            tasks = tasks_of(roots, self.nsamples % self.ALL_CHILDREN_EVERY == 0)
        self.nsamples += 1
        for pid, tid in tasks:
            ent = self.info.setdefault(tid, {})
            if tid != pid and self.same.get(tid, 0) >= self.SETTLED:
                lab = None
            else:
                lab = task_label(pid, tid)
            if lab:
                name = f"{lab}-{tid}"
                self.same[tid] = self.same.get(tid, 0) + 1 if ent.get("name") == name else 1
                ent["name"] = name
            if "cwd" not in ent:
                try:
                    ent["cwd"] = os.readlink(f"/proc/{tid}/cwd")
                except OSError:
                    pass
            if "odirect" not in ent:
                if pid not in self.odirect:
                    self.odirect[pid] = direct_fds(pid)
                ent["odirect"] = self.odirect[pid]
        # a thread gone from a full sample is forgotten: its number may be reused
        if tasks and self.nsamples % self.ALL_CHILDREN_EVERY == 1:
            live = {tid for _, tid in tasks}
            self.same = {t: n for t, n in self.same.items() if t in live}
        return len(tasks)


def ended(rc: int) -> str:
    """A process's end from its return code (subprocess's: -N for signal N),
    in words."""
    if rc < 0:
        try:
            return f"was killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"was killed by signal {-rc}"
    return f"exited with status {rc}"


def started(pid: int) -> Optional[int]:
    """When process @pid started (clock ticks after boot, /proc/PID/stat):
    with its number, what tells it from a later process given the same
    number. None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="latin-1") as f:
            # the name (field 2) may hold spaces and parentheses: fields after its last ')'
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def first_child(pid: int) -> Optional[tuple]:
    """(pid, started) of the first child of process @pid's main thread (the
    command strace forks), or None while it has none."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="latin-1") as f:
            kids = f.read().split()
    except OSError:
        return None
    if not kids:
        return None
    when = started(int(kids[0]))
    return (int(kids[0]), when) if when is not None else None


def direct_fds(pid: int) -> str:
    """The descriptors of process @pid opened with O_DIRECT, "3,7" (from the
    octal flags: line of /proc/PID/fdinfo/FD)."""
    out = []
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ""
    for fd in fds:
        try:
            # regular files only: an io_uring's fdinfo takes the ring's lock
            # and walks its queues, which a capture must not do to a database
            if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/"):
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}", encoding="latin-1") as f:
                m = re.search(r"^flags:\s*([0-7]+)", f.read(), re.M)
        except OSError:
            continue
        if m and int(m.group(1), 8) & os.O_DIRECT:
            out.append(int(fd))
    return ",".join(map(str, sorted(out)))


def tasks_of(pids: List[int], all_children: bool = True) -> List[tuple]:
    """(pid, tid) of every thread of @pids and of their descendants; with
    @all_children false, only of the descendants forked by a process's main
    thread (a cheaper sample: one children file a process, not a thread).

    Sampled every 200 ms for the whole capture, on the database's host: it
    follows each thread's /proc/PID/task/TID/children down from @pids, and
    so reads only the files of the traced tasks, not those of every process
    on the host (descendants(), the fallback for a kernel without
    CONFIG_PROC_CHILDREN)."""
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        return _tasks_of_walk(pids)
    out, seen, todo = [], set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for t in tids:
            out.append((pid, int(t)))
            if not all_children and int(t) != pid:
                continue
            try:
                with open(f"/proc/{pid}/task/{t}/children", encoding="latin-1") as f:
                    todo += [int(c) for c in f.read().split()]
            except OSError:
                pass
    return out


def _tasks_of_walk(pids: List[int]) -> List[tuple]:
    """tasks_of() from the parent of every process in /proc."""
    out = []
    for pid in list(pids) + descendants(pids):
        try:
            out += [(pid, int(t)) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            pass
    return out


def running(pid: int) -> bool:
    """@pid exists and has not ended: a zombie (ended, not yet reaped by its
    parent) still has its /proc entry, but does no more I/O."""
    try:
        with open(f"/proc/{pid}/stat", encoding="latin-1") as f:
            s = f.read()
        return s[s.rindex(")") + 2:].split()[0] not in ("Z", "X")
    except (OSError, ValueError, IndexError):
        return False


def descendants(pids: List[int]) -> List[int]:
    kids: Dict[int, List[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", encoding="latin-1") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], list(pids)
    while todo:
        p = todo.pop()
        for c in sorted(kids.get(p, [])):
            if c not in out and c not in pids:
                out.append(c)
                todo.append(c)
    return out
