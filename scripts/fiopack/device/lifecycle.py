"""Bringing a modeled device up and taking it down.

up:   the backing file (written in full when new), the state directory,
      the daemon (build/moddev) serving its FUSE file, and a loop device
      with direct I/O over that file; each step is undone, in reverse,
      when a later one fails or the command is interrupted (Ctrl-C,
      SIGTERM, SIGHUP), so that a failed `up` leaves no loop device, mount
      or daemon behind, nor a backing file it created.
down: the loop device detached (refused while it is mounted or open: the
      file system on it is the user's), the FUSE file system unmounted,
      the daemon stopped, the state directory removed; the backing file
      is kept, so `up` with the same --name and --dir finds its data.
"""
import datetime
import json
import mmap
import os
import random
import re
import select
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Callable, List, Optional

from fiopack.device.state import (DISK_INO, Device, Error, attached, daemon_alive, devices,
                                  is_mounted, locked, moddev_path, run_dir, users)
from fiopack.units import GIB, MIB, parse_size, size_name

DEFAULT_DIR = "/var/tmp/fio-pack-devices"
DEFAULT_SIZE = GIB
# the sidecar that says a backing file is one fio-pack device made
MARKER_SUFFIX = ".fio-pack-device"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
READY_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0

# The round trip's measurement (up's default back-dating): a device of
# one server with a fixed service time, so that a request's reply goes
# through the completion thread's timer as a modeled device's does (one
# with no latency is answered at once by the thread that read it, one
# wake-up fewer), read at depth 1 with O_DIRECT; what a read takes beyond
# the service time is the round trip (the kernel, FUSE, the daemon's two
# wake-ups, the reader).
ROUND_TRIP_SERVICE_US = 1000
ROUND_TRIP_SPEC = f"fixed:channels=1,latency_us={ROUND_TRIP_SERVICE_US}"
ROUND_TRIP_READS = 100
ROUND_TRIP_WARMUP = 10
ROUND_TRIP_SIZE = 4 * MIB
ROUND_TRIP_BS = 4096

DEV_FUSE_HELP = ("no /dev/fuse: the kernel's FUSE is not available here (modprobe fuse; "
                 "in a container, pass /dev/fuse through)")
FUSE_PACKAGES = "fuse3 libfuse3-dev (scripts/install-deps.sh installs them), then make"


# ---------------------------------------------------------------------------
# What every command checks first (nothing is touched before)
# ---------------------------------------------------------------------------

def check_root() -> None:
    if os.geteuid() != 0:
        raise Error("must run as root (it attaches loop devices and mounts FUSE file systems)")


def check_fuse() -> str:
    """/dev/fuse and a daemon that runs: its path."""
    try:
        if not stat.S_ISCHR(os.stat("/dev/fuse").st_mode):
            raise Error(DEV_FUSE_HELP)
    except FileNotFoundError:
        raise Error(DEV_FUSE_HELP) from None
    moddev = moddev_path()
    if not os.access(moddev, os.X_OK):
        raise Error(f"{moddev} is not built: install {FUSE_PACKAGES}")
    return moddev


def check_model(moddev: str, spec: str) -> None:
    """The spec's one-line error, from the daemon's own parser."""
    r = subprocess.run([moddev, "--check", spec], capture_output=True, text=True)
    if r.returncode == 0:
        return
    line = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
    if "error while loading shared libraries" in line or r.returncode == 127:
        raise Error(f"{moddev} cannot start: {line.split(': ', 1)[-1]} "
                    f"(install {FUSE_PACKAGES})")
    raise Error(line)


def parse_device_size(text: str) -> int:
    try:
        size = parse_size(text)
    except ValueError:
        raise Error(f"--size {text}: not a size (e.g. 256m, 4g)") from None
    if size < MIB or size % 4096:
        raise Error(f"--size {text}: must be at least 1m and a multiple of 4k")
    return size


# ---------------------------------------------------------------------------
# up
# ---------------------------------------------------------------------------

class Undo:
    """The steps done so far, undone in reverse by unwind(); signals that
    would interrupt the unwinding are held off until it is over."""

    def __init__(self):
        self.steps: List[Callable[[], None]] = []

    def push(self, step: Callable[[], None]) -> None:
        self.steps.append(step)

    def unwind(self) -> None:
        old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM,
                                                             signal.SIGHUP)}
        try:
            while self.steps:
                try:
                    self.steps.pop()()
                except Exception:     # the next steps still run
                    pass
        finally:
            for s, h in old.items():
                signal.signal(s, h)


def backing_paths(directory: str, name: str):
    base = Path(directory) / f"{name}.img"
    return base, Path(str(base) + MARKER_SUFFIX)


def prepare_backing(undo: Undo, directory: str, name: str, size: Optional[int]) -> tuple:
    """The backing file: an existing one of ours (its data kept), or a new
    one written in full (a file system's unwritten extents would be
    served without reaching the device). (path, size)."""
    backing, marker = backing_paths(directory, name)
    if backing.exists() or backing.is_symlink():
        if not marker.is_file() or not backing.is_file() or backing.is_symlink():
            raise Error(f"{backing} exists and was not made by fio-pack device: "
                        "not touched (choose another --name or --dir)")
        have = backing.stat().st_size
        if size is not None and size != have:
            raise Error(f"--size {size_name(size)}: {backing} holds {size_name(have)} "
                        "(its data is kept: leave --size out, or choose another --name)")
        for rec in devices():
            if os.path.realpath(rec.backing) == os.path.realpath(backing):
                raise Error(f"{backing} is in use by {rec.loop} "
                            f"(fio-pack device down {rec.loop} first)")
        return str(backing), have
    size = DEFAULT_SIZE if size is None else size
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    if size > free:
        raise Error(f"--size {size_name(size)}: only {free // MIB} MiB free under {directory}")
    tmp = Path(directory) / f".{name}.img.tmp-{os.getpid()}"
    undo.push(lambda: tmp.unlink(missing_ok=True))
    zeros = bytes(MIB)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        left = size
        while left:
            left -= os.write(fd, zeros[:min(left, MIB)])
    except OSError as e:
        raise Error(f"cannot write {tmp}: {e.strerror}") from None
    finally:
        os.close(fd)
    try:
        # never over a file of that name (ours left without its backing file, or not ours)
        with open(marker, "x") as f:
            f.write(json.dumps({"made_by": "fio-pack device up", "size": size}) + "\n")
    except FileExistsError:
        raise Error(f"{marker} exists without {backing.name}: not touched (remove it, "
                    "or choose another --name)") from None
    undo.push(lambda: marker.unlink(missing_ok=True))
    os.rename(tmp, backing)
    undo.push(lambda: backing.unlink(missing_ok=True))
    return str(backing), size


def wait_ready(p: subprocess.Popen, ready_fd: int, log: Path) -> None:
    """The daemon's "ready" line, or its last line when it stopped instead."""
    deadline = time.monotonic() + READY_TIMEOUT
    got = b""
    while b"\n" not in got:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Error(f"the daemon did not start in {READY_TIMEOUT:.0f} s (its log: {log})")
        r, _, _ = select.select([ready_fd], [], [], left)
        if r:
            chunk = os.read(ready_fd, 64)
            if not chunk:
                break
            got += chunk
    if got.startswith(b"ready"):
        return
    try:
        p.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass
    lines = log.read_text(errors="replace").strip().splitlines()
    raise Error(lines[-1].replace("moddev: ", "", 1) if lines else "the daemon stopped")


def stop_daemon(pid: int, is_ours: Callable[[], bool]) -> None:
    """SIGTERM, then SIGKILL if it is still there after STOP_TIMEOUT."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not is_ours():
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline and is_ours():
            time.sleep(0.02)


def unmount(path: str) -> None:
    """A FUSE mount (a dead daemon's too), retried while it is busy."""
    for attempt in range(20):
        if not is_mounted(path):
            return
        if subprocess.run(["umount", path], capture_output=True).returncode == 0:
            return
        time.sleep(0.05 * (attempt + 1))
    raise Error(f"cannot unmount {path} (fuser -m {path} says who holds it)")


def detach(loop: str) -> None:
    subprocess.run(["losetup", "-d", loop], capture_output=True)


def start_daemon(undo: Undo, moddev: str, rec: Device) -> subprocess.Popen:
    log = rec.statedir / "daemon.log"
    ready_r, ready_w = os.pipe()
    try:
        with open(log, "w") as logf:
            p = subprocess.Popen(
                [moddev, "--model", rec.model, "--backing", rec.backing,
                 "--backdate-us", str(rec.backdate_us), *(["--realtime"] if rec.realtime else []),
                 "--ready-fd", str(ready_w), rec.mount],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=logf,
                pass_fds=(ready_w,), start_new_session=True)
        undo.push(lambda: p.poll() is None and stop_daemon(p.pid, lambda: p.poll() is None))
        undo.push(lambda: unmount(rec.mount))
        os.close(ready_w)
        ready_w = -1
        wait_ready(p, ready_r, log)
    finally:
        os.close(ready_r)
        if ready_w >= 0:
            os.close(ready_w)
    return p


def detach_all(back_dev: str) -> None:
    for loop in attached(back_dev):
        detach(loop)


def attach_loop(undo: Undo, rec: Device) -> str:
    disk = os.path.join(rec.mount, "disk")
    # whatever losetup attached, even if it failed or was interrupted after
    undo.push(lambda: detach_all(rec.back_dev))
    r = subprocess.run(["losetup", "--direct-io=on", "--show", "-f", disk],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise Error(f"losetup: {(r.stderr.strip().splitlines() or ['failed'])[-1]}")
    loop = r.stdout.strip()
    # without direct I/O, loop serves one request at a time: not the model
    dio = Path("/sys/block", os.path.basename(loop), "loop", "dio")
    if not dio.is_file() or dio.read_text().strip() != "1":
        raise Error(f"{loop}: the kernel refused direct I/O over {disk}")
    return loop


# What a state directory holds (state.py's record, start_daemon's log, the
# mount point): removed by these names, never by walking the directory,
# which could lead into a FUSE mount that failed to come off
STATE_FILES = ("state.json", "state.json.tmp", "daemon.log")
STATE_DIRS = ("mnt",)


def remove_entries(d: Path, files=(), dirs=()) -> None:
    """@files and the (empty) @dirs of @d, then @d itself: what is not
    there, or not empty (a mount still on it), is left."""
    for f in files:
        (d / f).unlink(missing_ok=True)
    for sub in (*(d / x for x in dirs), d):
        try:
            sub.rmdir()
        except OSError:
            pass


def wait_detached(back_dev: str) -> bool:
    """Whether the loop devices over @back_dev are gone within STOP_TIMEOUT."""
    deadline = time.monotonic() + STOP_TIMEOUT
    while attached(back_dev):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def timed_reads(loop: str, count: int, size: int) -> List[float]:
    """@count O_DIRECT reads of ROUND_TRIP_BS at depth 1 from @loop, at
    random places in its first @size bytes: each one's time in us."""
    buf = mmap.mmap(-1, ROUND_TRIP_BS)     # page-aligned, as O_DIRECT wants
    rng = random.Random(1)
    fd = os.open(loop, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    try:
        out = []
        for _ in range(count):
            off = rng.randrange(size // ROUND_TRIP_BS) * ROUND_TRIP_BS
            t0 = time.perf_counter_ns()
            if os.preadv(fd, [buf], off) != ROUND_TRIP_BS:
                raise Error(f"{loop}: a short read while measuring the round trip")
            out.append((time.perf_counter_ns() - t0) / 1e3)
        return out
    except OSError as e:
        raise Error(f"{loop}: cannot measure the round trip: {e.strerror}") from None
    finally:
        os.close(fd)
        buf.close()


def measure_round_trip(moddev: str, statedir: Path, name: str, realtime: bool) -> int:
    """What a request costs here beyond its model, in us: the median over
    ROUND_TRIP_READS reads of a device of ROUND_TRIP_SPEC brought up for
    it alone (as --realtime as the device it is for) and taken down."""
    cal = Undo()
    try:
        # made here (mkdir and O_EXCL refuse what exists), and removed name
        # by name: nothing else, and never into a mount left behind
        d = statedir / "round-trip"
        d.mkdir()
        cal.push(lambda: remove_entries(d, files=("disk.img", "daemon.log"), dirs=("mnt",)))
        backing = d / "disk.img"
        with open(backing, "xb") as f:
            f.write(bytes(ROUND_TRIP_SIZE))     # in full: no hole answered from nothing
        (d / "mnt").mkdir()
        rec = Device(name=f"{name}/round-trip", model=ROUND_TRIP_SPEC, size=ROUND_TRIP_SIZE,
                     backing=str(backing), mount=str(d / "mnt"), pid=0, loop="",
                     back_dev="", backdate_us=0, created="", daemon=moddev,
                     realtime=realtime)
        p = start_daemon(cal, moddev, rec)
        st = os.stat(os.path.join(rec.mount, "disk"))
        rec.back_dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        loop = attach_loop(cal, rec)
        lat = timed_reads(loop, ROUND_TRIP_WARMUP + ROUND_TRIP_READS, ROUND_TRIP_SIZE)
        lat = sorted(lat[ROUND_TRIP_WARMUP:])
        # down's order: the daemon, unmounted, leaves by itself (unwind's
        # SIGTERM is for a daemon that does not)
        detach_all(rec.back_dev)
        wait_detached(rec.back_dev)
        unmount(rec.mount)
        try:
            p.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        return max(0, round(lat[len(lat) // 2] - ROUND_TRIP_SERVICE_US))
    finally:
        cal.unwind()


def up(spec: str, size_text: Optional[str], directory: Optional[str], name: Optional[str],
       backdate_us: Optional[int] = 0, realtime: bool = False) -> Device:
    """Brings a device up: its record (rec.loop is the block device).
    @backdate_us None: the round trip measured here (measure_round_trip)."""
    check_root()
    moddev = check_fuse()
    check_model(moddev, spec)
    size = parse_device_size(size_text) if size_text is not None else None
    name = name or spec.split(":", 1)[0]
    if not NAME_RE.match(name):
        raise Error(f"--name {name}: letters, digits, '.', '_' and '-' only (at most 64)")
    if directory is not None and not os.path.isdir(directory):
        raise Error(f"--dir {directory}: no such directory")
    undo = Undo()
    try:
        with locked():
            for rec in devices():
                if rec.name == name:
                    raise Error(f"{name} is up as {rec.loop} (fio-pack device down {rec.loop} "
                                "first, or --name OTHER)")
            if directory is None:
                directory = DEFAULT_DIR
                if not os.path.isdir(directory):
                    os.mkdir(directory, 0o700)
                    undo.push(lambda: os.rmdir(DEFAULT_DIR))
            backing, size = prepare_backing(undo, directory, name, size)
            statedir = run_dir() / name
            try:
                statedir.mkdir()
            except FileExistsError:
                raise Error(f"{statedir} exists but {name} is not up: not touched (remove it "
                            "if it is a leftover of ours, or choose another --name)") from None
            undo.push(lambda: remove_entries(statedir, STATE_FILES, STATE_DIRS))
            mount = statedir / "mnt"
            mount.mkdir()
            if backdate_us is None:
                backdate_us = measure_round_trip(moddev, statedir, name, realtime)
            rec = Device(name=name, model=spec, size=size, backing=os.path.abspath(backing),
                         mount=str(mount), pid=0, loop="", back_dev="",
                         backdate_us=backdate_us,
                         created=datetime.datetime.now().isoformat(timespec="seconds"),
                         daemon=moddev, realtime=realtime)
            rec.pid = start_daemon(undo, moddev, rec).pid
            st = os.stat(os.path.join(rec.mount, "disk"))
            if st.st_ino != DISK_INO:
                raise Error(f"{rec.mount}/disk is not the daemon's")
            rec.back_dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
            rec.loop = attach_loop(undo, rec)
            rec.save()
            undo.steps.clear()
            return rec
    except BaseException:
        undo.unwind()
        raise


# ---------------------------------------------------------------------------
# down
# ---------------------------------------------------------------------------

def down(dev: str) -> Device:
    """Takes down the device whose loop device is @dev: its record."""
    check_root()
    with locked():
        path = os.path.realpath(dev)
        rec = next((r for r in devices() if r.loop == path), None)
        if rec is None:
            raise Error(f"{dev}: not a device of fio-pack device (fio-pack device list shows them)")
        # its loop device, and any other attached to its file by hand
        loops = attached(rec.back_dev)
        for loop in loops:
            held = users(loop)
            if held:
                raise Error(f"{loop} is {held[0]}: stop using it first (nothing was changed)")
        for loop in loops:
            detach(loop)
        if not wait_detached(rec.back_dev):
            raise Error(f"{rec.loop} is still attached: something opened it meanwhile")
        unmount(rec.mount)
        # Unmounted, the daemon leaves by itself: its FUSE loop ends and it
        # cleans up. A SIGTERM in that cleanup, after it has put back the
        # default handlers, would kill it half way: give it the time first.
        deadline = time.monotonic() + STOP_TIMEOUT
        while daemon_alive(rec) and time.monotonic() < deadline:
            time.sleep(0.02)
        stop_daemon(rec.pid, lambda: daemon_alive(rec))
        remove_entries(rec.statedir, STATE_FILES, STATE_DIRS)
        return rec
