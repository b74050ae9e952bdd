"""The benchmarks' modeled device: fio-pack device up MODEL in place of the
plain loop device of harness.LoopDevice, with the same interface (dev,
mkfs_mount, umount, reads, cleanup) and the device's own statistics.

The backing file goes in a tmpfs of its own, so that the device's time is
the model's alone: the host's disk never adds to it, and `echo 3 >
/proc/sys/vm/drop_caches` (the cold-cache benchmarks) cannot send the
daemon's reads of the backing file to that disk. `--device MODEL` of
`fio-pack bench cold`, `bench postmark` and `bench dbreplay --paced` use
it; docs/devices.md has what they measured."""
import json
import os
import sys
import tempfile

from fiopack.bench import harness
from fiopack.bench.harness import log
from fiopack.device import lifecycle
from fiopack.device.state import Error

# room in the tmpfs beyond the backing file (its sidecar)
SLACK_MIB = 16
# at most this share of the memory the machine has available
MEM_SHARE = 0.5


def mem_available_mib() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 0


def check(spec: str, size_mib: int) -> None:
    """The refusals before anything is made: not root, no FUSE or daemon, a
    bad model, a backing file the memory cannot hold. Raises Error."""
    lifecycle.check_root()
    moddev = lifecycle.check_fuse()
    lifecycle.check_model(moddev, spec)
    avail = mem_available_mib()
    if size_mib + SLACK_MIB > avail * MEM_SHARE:
        raise Error(f"--device {spec}: a {size_mib} MiB device needs its backing file in "
                    f"memory (a tmpfs), and only {avail} MiB are available (at most half of "
                    "it is used): ask for fewer files or a smaller image")


def stats_delta(s0: dict, s1: dict, runtime_s: float) -> dict:
    """What the device did between two `stats` snapshots, over @runtime_s
    seconds of the workload: requests per direction, the model's
    utilisation and the mean number of requests in the device."""
    runtime_ns = runtime_s * 1e9
    t0, t1 = s0["in_flight"]["time_ns"], s1["in_flight"]["time_ns"]
    weighted = sum(k * (b - (t0[k] if k < len(t0) else 0)) for k, b in enumerate(t1))
    out = {k: s1[k]["requests"] - s0[k]["requests"] for k in ("read", "write", "flush")}
    out["read_bytes"] = s1["read"]["bytes"] - s0["read"]["bytes"]
    out["utilisation"] = ((s1["service_ns"] - s0["service_ns"]) / (s1["servers"] * runtime_ns)
                          if runtime_ns else None)
    out["in_flight_mean"] = weighted / runtime_ns if runtime_ns else None
    out["busy"] = (s1["busy_ns"] - s0["busy_ns"]) / runtime_ns if runtime_ns else None
    n = sum(out[k] for k in ("read", "write", "flush"))
    out["daemon_cpu_us_per_request"] = ((s1["daemon_cpu_ns"] - s0["daemon_cpu_ns"]) / n / 1e3
                                        if n else None)
    return out


class ModeledDevice(harness.LoopDevice):
    """A modeled device of @size_mib MiB: its backing file in a private
    tmpfs, the device brought up at setup() and taken down at cleanup()
    (after whatever was mounted on it), the tmpfs unmounted. mkfs_mount()
    and umount() are LoopDevice's."""

    # ext4 initialised whole at mkfs: its lazy initialisation of inode
    # tables and journal would otherwise write in the background, on the
    # model's time, while a benchmark reads
    MKFS_OPTIONS = {"ext4": ["-E", "lazy_itable_init=0,lazy_journal_init=0"]}

    def __init__(self, spec: str, size_mib: int):
        # not LoopDevice's: no image file of our own
        self.spec = spec
        self.size_mib = size_mib
        self.fill = "zero"      # what `device up` writes a new backing file with
        self.base = tempfile.mkdtemp(prefix="bench-moddev.", dir="/tmp")
        self.mnt = os.path.join(self.base, "mnt")
        self.backing_dir = os.path.join(self.base, "backing")
        os.mkdir(self.mnt)
        os.mkdir(self.backing_dir)
        self.tmpfs = False
        self.rec = None
        self.dev = None
        self.mounted = False

    def setup(self):
        harness.mount_tmpfs(self.backing_dir, (self.size_mib + SLACK_MIB) << 20, 1)
        self.tmpfs = True
        self.rec = lifecycle.up(self.spec, f"{self.size_mib}m", self.backing_dir,
                                f"bench-{os.getpid()}", 0, False)
        self.dev = self.rec.loop
        log(f"modeled device {self.spec}: {self.dev} ({self.size_mib} MiB)")

    def stats(self) -> dict:
        with open(os.path.join(self.rec.mount, "stats")) as f:
            return json.load(f)

    def reads(self) -> int:
        """Reads the model served so far (what the cold benchmarks divide)."""
        return self.stats()["read"]["requests"]

    def describe(self) -> str:
        return (f"`{self.spec}` (fio-pack device up, {self.size_mib} MiB, {self.dev}; its "
                "backing file in a tmpfs of its own)")

    def daemon_log(self) -> list:
        """What the daemon said (a failed request's reason: loop turns every
        error into EIO, and the reason is only there)."""
        try:
            return (self.rec.statedir / "daemon.log").read_text(errors="replace").splitlines()
        except OSError:
            return []

    def cleanup(self):
        self.umount()
        if self.rec:
            # its first lines: a sanitizer's report starts with the error
            for line in self.daemon_log()[:40]:
                log(f"the daemon of {self.dev}: {line}")
            try:
                lifecycle.down(self.rec.loop)
            except Error as e:
                log(f"fio-pack device down {self.rec.loop}: {e}")
            self.rec = None
            self.dev = None
        if self.tmpfs:
            harness.umount_retrying(self.backing_dir)
            self.tmpfs = False
        for d in (self.backing_dir, self.mnt, self.base):
            try:
                os.rmdir(d)
            except OSError as e:
                log(f"cannot remove {d}: {e}")


def refuse(name: str, e: Error) -> int:
    """A benchmark's one-line refusal of its --device (check() made
    nothing): exit status 2."""
    sys.stderr.write(f"fio-pack bench {name}: {e}\n")
    return 2
