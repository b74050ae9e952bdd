"""What the modeled devices' tests share: fio-pack device run in a lab of
the test's own (a state and a data directory, nothing of other users
seen or touched), what it left behind, and a refusal's one line."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from helpers.fio import ENGINE_DIR, REPO, fio_env

FIO_PACK = [sys.executable, str(REPO / "scripts" / "fio-pack")]
# the sanitizer pass (PACK_ENGINE_DIR=.../asan) runs the ASan+UBSan daemon
MODDEV = REPO / "build" / ("moddev-asan" if ENGINE_DIR.name == "asan" else "moddev")
LOSETUP = shutil.which("losetup") or "/usr/sbin/losetup"

# fast enough for a test: 8 channels of 50 us, 160k requests a second at most
QUICK = "fixed:channels=8,latency_us=50"


def loops() -> list:
    """The attached loop devices (name, back-file, back-maj:min, back-ino)."""
    r = subprocess.run([LOSETUP, "--list", "--json", "-O",
                        "NAME,BACK-FILE,BACK-MAJ:MIN,BACK-INO"],
                       capture_output=True, text=True, check=True)
    out = json.loads(r.stdout)["loopdevices"] if r.stdout.strip() else []
    for lo in out:
        lo["back-maj:min"] = str(lo.get("back-maj:min") or "").strip()
        lo["back-ino"] = int(lo.get("back-ino") or 0)
    return out


def one_line(p) -> str:
    """The refusal's one line, after checking that it is the only one."""
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, describe(p)
    assert lines[0].startswith("fio-pack device: "), describe(p)
    return lines[0]


def describe(p) -> str:
    return f"rc={p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"


class Lab:
    """A state directory and a data directory of the test's own, so that
    the devices of other users of this machine are never seen or touched."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.run = tmp_path / "run"
        self.data = tmp_path / "data"
        self.data.mkdir()
        self.mnt = tmp_path / "fs"
        self.mnt.mkdir()
        self.env = {"FIO_PACK_RUN_DIR": str(self.run), "FIO_PACK_MODDEV": str(MODDEV)}
        self.back_devs = set()
        self.nobody = None
        self.loops_before = {lo["name"] for lo in loops()}

    def cmd(self, *args, env=None, prefix=(), timeout=60) -> subprocess.CompletedProcess:
        command = FIO_PACK
        if prefix and prefix[0] == "setpriv":
            command = self.nobodys_fio_pack()
        return subprocess.run([*prefix, *command, "device", *map(str, args)],
                              capture_output=True, text=True, timeout=timeout,
                              env=fio_env({**self.env, **(env or {})}))

    def nobodys_fio_pack(self) -> list:
        """The command in a copy an unprivileged user can read: the
        checkout may sit where it cannot look (CI's clone is in a 0700
        directory, Debian's /root is 0700)."""
        if self.nobody is None:
            # pytest's own directories are 0700 too: a directory of its own
            self.nobody = Path(tempfile.mkdtemp(prefix="fio-pack-nobody.", dir="/tmp"))
            shutil.copytree(REPO / "scripts", self.nobody / "scripts",
                            ignore=shutil.ignore_patterns("__pycache__"))
            for d in [self.nobody, *self.nobody.rglob("*")]:
                d.chmod(0o755 if d.is_dir() or os.access(d, os.X_OK) else 0o644)
        copy = self.nobody
        return [sys.executable, str(copy / "scripts" / "fio-pack")]

    def up(self, spec=QUICK, *args, size="64m", name=None, env=None) -> str:
        """A device of @spec up (without back-dating unless @args say: the
        tests check the model's own times), its /dev/loopN."""
        extra = ["--size", size] if size else []
        if "--backdate-us" not in args:
            extra += ["--backdate-us", "0"]
        p = self.cmd("up", spec, "--dir", self.data, *extra,
                     *(["--name", name] if name else []), *args, env=env)
        assert p.returncode == 0 and not p.stderr, describe(p)
        assert len(p.stdout.splitlines()) == 1, describe(p)
        dev = p.stdout.strip()
        assert Path(dev).is_block_device()
        self.back_devs.add(self.record(dev)["back_dev"])
        return dev

    def down(self, dev):
        p = self.cmd("down", dev)
        assert p.returncode == 0 and not p.stdout and not p.stderr, describe(p)

    def list(self) -> list:
        p = self.cmd("list")
        assert p.returncode == 0, describe(p)
        return json.loads(p.stdout)

    def record(self, dev) -> dict:
        return next(d for d in self.list() if d["device"] == dev)

    def stats(self, dev) -> dict:
        p = self.cmd("stats", dev)
        assert p.returncode == 0, describe(p)
        return json.loads(p.stdout)

    def leftovers(self) -> list:
        """Loop devices over one of its FUSE files, its FUSE mounts and the
        file systems it mounted, its daemons: each said."""
        out = []
        for lo in loops():
            # A daemon that unmounted on SIGTERM leaves its file as "/disk";
            # other users' devices are elsewhere, and device numbers of gone
            # mounts are reused: a match by number needs that file too.
            back = str(lo.get("back-file") or "")
            lost = back == "/disk" and lo["back-ino"] == 2 and (
                lo["back-maj:min"] in self.back_devs or lo["name"] not in self.loops_before)
            if back.startswith(str(self.run) + "/") or lost:
                out.append(f"loop device {lo['name']} over {back}")
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split()
            if fields[4].startswith((str(self.run), str(self.mnt))):
                out.append(f"mount {fields[4]}")
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if os.path.basename(argv[0]).startswith(b"moddev") and any(
                    a.startswith(str(self.tmp).encode()) for a in argv):
                try:
                    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                if state != "Z":
                    out.append(f"daemon {pid}")
        return out

    def devices_dir_empty(self) -> bool:
        d = self.run / "devices"
        return not d.exists() or not [e for e in d.iterdir() if e.name != ".lock"]

    def cleanup(self):
        for line in reversed(Path("/proc/self/mountinfo").read_text().splitlines()):
            mp = line.split()[4]
            if mp.startswith(str(self.mnt)):
                subprocess.run(["umount", mp], capture_output=True)
        for d in self.list() if (self.run / "devices").is_dir() else []:
            self.cmd("down", d["device"])
        if self.nobody is not None:
            shutil.rmtree(self.nobody)


def wait_for(pred, timeout=10.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def raw_fio(dev, name, **opts) -> list:
    args = [f"--name={name}", f"--filename={dev}", "--direct=1"]
    return args + [f"--{k}={v}" for k, v in opts.items()]
