"""What fio-pack device knows of the devices it brought up, and what the
system says of them: one state directory per device (its record, the FUSE
mount point, the daemon's log) under /run/fio-pack/devices (gone at a
reboot, as the loop devices are), whether its daemon still runs, whether
its loop device is still attached to it, and who uses that loop device."""
import contextlib
import fcntl
import json
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import List, Optional

from fiopack import REPO, UserError

PROG = "fio-pack device"

# The FUSE file a loop device is attached to: the daemon's inode 2
DISK_INO = 2


class Error(UserError):
    """A one-line error; main() prints it after "fio-pack device: "."""


def run_dir() -> Path:
    """The state directories (FIO_PACK_RUN_DIR: another root, for tests)."""
    return Path(os.environ.get("FIO_PACK_RUN_DIR") or "/run/fio-pack") / "devices"


def moddev_path() -> str:
    """The daemon (tools/moddev, built by make into build/moddev)."""
    return os.environ.get("FIO_PACK_MODDEV") or str(REPO / "build" / "moddev")


@dataclass
class Device:
    name: str
    model: str
    size: int
    backing: str
    mount: str
    pid: int
    loop: str
    back_dev: str       # the FUSE mount's device number, "major:minor"
    backdate_us: int
    created: str
    daemon: str         # the daemon's path, as it was started
    realtime: bool = False

    @property
    def statedir(self) -> Path:
        return run_dir() / self.name

    def save(self) -> None:
        """The record, written whole (a reader never sees half of it)."""
        tmp = self.statedir / "state.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=1) + "\n")
        os.replace(tmp, self.statedir / "state.json")


def devices() -> List[Device]:
    """Every device brought up and not yet taken down, by name."""
    out = []
    root = run_dir()
    if not root.is_dir():
        return out
    for d in sorted(root.iterdir()):
        try:
            out.append(Device(**json.loads((d / "state.json").read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return out


def find(dev: str) -> Optional[Device]:
    """The device whose loop device is @dev (a path, or a link to one)."""
    path = os.path.realpath(dev)
    for rec in devices():
        if rec.loop == path:
            return rec
    return None


def daemon_alive(rec: Device) -> bool:
    """Whether rec.pid is still this device's daemon (not a reused pid)."""
    try:
        argv = Path(f"/proc/{rec.pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{rec.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and argv[0] == rec.daemon.encode() and rec.mount.encode() in argv


def loops() -> List[dict]:
    """The attached loop devices: name, back-ino, back-maj:min (losetup's view)."""
    r = subprocess.run(["losetup", "--list", "--json", "-O", "NAME,BACK-INO,BACK-MAJ:MIN"],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        return []
    return json.loads(r.stdout).get("loopdevices", [])


def attached(back_dev: str) -> List[str]:
    """The loop devices attached to the FUSE file of the mount whose device
    number is @back_dev: its file system's device number and the file's
    inode, which stay the same when the mount is gone (a daemon that
    unmounted on SIGTERM) where its path would not."""
    return [lo["name"] for lo in loops()
            if str(lo.get("back-maj:min", "")).strip() == back_dev
            and int(lo.get("back-ino") or 0) == DISK_INO]


def loop_attached(rec: Device) -> bool:
    """Whether rec.loop is still this device's."""
    return bool(rec.back_dev) and rec.loop in attached(rec.back_dev)


def is_mounted(path: str) -> bool:
    """Whether @path is a mount point (/proc/self/mountinfo: a dead FUSE
    daemon's mount cannot be stat()ed, so os.path.ismount says no)."""
    target = os.path.abspath(path)
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if len(fields) > 4 and unescape(fields[4]) == target:
            return True
    return False


def unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are octal escapes."""
    for code, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, ch)
    return field


def users(loop: str) -> List[str]:
    """Who holds @loop: its mounts, swap, devices stacked on it and the
    processes that have it open, each said as a user would look for it."""
    out = []
    try:
        st = os.stat(loop)
    except OSError:
        return out
    majmin = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[2] == majmin:
            out.append(f"mounted on {unescape(fields[4])}")
    for line in Path("/proc/swaps").read_text().splitlines()[1:]:
        if line.split() and os.path.realpath(line.split()[0]) == loop:
            out.append("used as swap")
    holders = Path("/sys/block", os.path.basename(loop), "holders")
    if holders.is_dir():
        out += [f"held by {h.name}" for h in sorted(holders.iterdir())]
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == loop:
                    comm = Path(f"/proc/{pid}/comm").read_text().strip()
                    out.append(f"open by pid {pid} ({comm})")
                    break
            except OSError:
                continue
    return out


@contextlib.contextmanager
def locked():
    """One `up` or `down` at a time on this machine: two would pick the same
    name, or one would take down what the other is bringing up."""
    root = run_dir()
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
