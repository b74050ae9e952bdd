"""The BPF capture: build/iocap (tools/iocap) and what it could not see."""
import os
import sys
from typing import Dict, List, Optional

from fiopack import REPO
from fiopack.capture.rules import PROG, Error


# ---------------------------------------------------------------------------
# The BPF capture (build/iocap, tools/iocap)
# ---------------------------------------------------------------------------

IOCAP = os.environ.get("IOCAP") or os.path.join(REPO, "build", "iocap")
# iocap's exit status for a capture written whole that did not see everything
# (its --stats say what): the trace is made, with its "incomplete" lines
IOCAP_INCOMPLETE = 3
URING_OPS = {6: "POLL_ADD", 7: "POLL_REMOVE", 9: "SENDMSG", 10: "RECVMSG", 11: "TIMEOUT",
             13: "ACCEPT", 16: "CONNECT", 17: "FALLOCATE", 18: "OPENAT", 19: "CLOSE",
             21: "STATX", 24: "FADVISE", 25: "MADVISE", 26: "SEND", 27: "RECV",
             28: "OPENAT2", 30: "SPLICE", 35: "RENAMEAT", 36: "UNLINKAT", 37: "MKDIRAT",
             40: "MSG_RING", 46: "URING_CMD", 48: "SENDMSG_ZC", 49: "READ_MULTISHOT"}
# What iocap could not see (its --stats): each a class of lost I/O
BPF_LOST = {
    "ringbuf_full": "events lost by the BPF capture: its ring buffer was full",
    "inflight_no_slot": "system calls not captured: the BPF table of calls in flight was full",
    "uring_no_slot": "io_uring requests not captured: the BPF table of requests in flight "
                     "was full",
    "aio_no_slot": "libaio requests not captured: the table of requests in flight was full",
    "aio_cut": "io_submit calls of more than 64 iocbs: those past the 64th not captured",
    "aio_unmapped": "libaio requests of an opcode the trace has no operation for",
    "unresolved": "calls on descriptors whose file the BPF capture could not name",
    "uring_nofile": "io_uring requests without a file",
    "missed_runs": "calls or requests not captured: the kernel skipped the capture's BPF "
                   "programs while another BPF program ran on the same CPU",
    "targets_full": "processes not captured: the BPF table of traced processes was full",
    "children_unknown": "processes whose child processes /proc did not list at the start: "
                        "those children not captured",
    "cwd_unknown": "calls on a relative path of a process whose working directory the BPF "
                   "capture could not read",
    "path_cut": "calls on a path longer than the BPF capture keeps (255 bytes): not captured",
    "user_unreadable": "calls or requests whose arguments (a path, an iocb, an io_event) the "
                       "BPF capture could not read from the process's memory",
    "short_records": "events of the BPF capture received cut short",
}
# The capture stopped before its end: how much was missed is unknown (no count)
BPF_STOPPED = {
    "stopped_early": "the BPF capture stopped early: reading its ring buffer failed, so what "
                     "happened after that was not captured",
}
# What iocap's --stats say that is no loss
BPF_INFO = {"events", "syscalls_on_raw_tp", "syscalls_on_tracepoints", "cpu_user_s",
            "cpu_sys_s"}
# The capture's edges: notes only, as strace's unfinished calls are
BPF_EDGE = {
    "uring_in_flight_at_end": "io_uring requests still in flight when the capture stopped",
    "aio_in_flight_at_end": "libaio requests still in flight when the capture stopped",
    "aio_done_without_submit": "libaio completions of requests submitted before the capture",
}


def bpf_unusable() -> Optional[str]:
    """Why the BPF capture cannot run here, or None."""
    if not os.access(IOCAP, os.X_OK):
        return f"{IOCAP} is not built (make builds it where the kernel has BTF)"
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return "this kernel has no BTF (/sys/kernel/btf/vmlinux)"
    if os.geteuid() != 0:
        return "not root (the BPF capture needs CAP_BPF and CAP_PERFMON)"
    return None


def pick_tracer(a) -> str:
    if a.tracer == "strace":
        return "strace"
    why = bpf_unusable()
    if why is None:
        return "bpf"
    if a.tracer == "bpf":
        raise Error(f"--tracer bpf: {why}")
    if not a.quiet:
        print(f"{PROG}: note: capturing with strace, not BPF: {why}", file=sys.stderr)
    return "strace"


def read_stats(path: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    try:
        with open(path) as f:
            for ln in f:
                tok = ln.split()
                if len(tok) == 3 and tok[0] == "uring_unmapped":
                    out[f"uring_op_{tok[1]}"] = int(tok[2])
                elif len(tok) == 3 and tok[0] == "syscall_unseen":
                    out[f"syscall_unseen_{tok[1]}"] = int(tok[2])
                elif len(tok) == 2:
                    out[tok[0]] = float(tok[1]) if tok[0].startswith("cpu") else int(tok[1])
    except (OSError, ValueError) as e:
        raise Error(f"cannot read the BPF capture's statistics {path}: {e}")
    return out


def bpf_losses(conv, st: Dict[str, int]):
    for k, why in BPF_LOST.items():
        if st.get(k):
            conv.lost(why, st[k])
    for k, v in st.items():
        if k.startswith("uring_op_") and v:
            op = int(k[9:])
            conv.lost(f"io_uring requests IORING_OP_{URING_OPS.get(op, op)} (no operation of the "
                      "trace for them)", v)
    for k, why in BPF_EDGE.items():
        if st.get(k):
            conv.dropped.add(why, st[k])
    for k, why in BPF_STOPPED.items():
        if st.get(k):
            conv.unseen.add(why, 0)
    # a counter this side has no words for is a loss all the same, never silent
    known = set(BPF_LOST) | set(BPF_EDGE) | set(BPF_STOPPED) | BPF_INFO
    for k, v in sorted(st.items()):
        if v and k not in known and not k.startswith(("uring_op_", "syscall_unseen_")):
            conv.lost(f"events the BPF capture could not see (its counter {k})", v)
    for k, v in st.items():
        if k.startswith("syscall_unseen_") and v:
            # how many calls were missed is unknown: the line has no count
            conv.unseen.add(f"{k[15:]} calls, if any: this kernel has no tracepoint "
                            f"syscalls:sys_enter_{k[15:]}, so the BPF capture could not see them",
                            0)


def last_words(proc) -> str:
    """The last line a failed iocap wrote (its one-line error)."""
    return (proc.stderr.read().decode("latin-1").strip().splitlines() or ["?"])[-1]


def iocap_args(pids: List[int], out: str, stats: str, ready: str, children: bool,
               cgroup: Optional[str] = None) -> List[str]:
    argv = [IOCAP]
    if cgroup:
        argv += ["--cgroup", cgroup]
    for pid in pids:
        argv += ["-p", str(pid)]
    if not children:
        argv.append("--no-children")
    return argv + ["-o", out, "--stats", stats, "--ready", ready]
