"""Where a study runs: devices (what sysfs says of them, who uses them),
targets (a directory, file or device, checked before any run) and fio
servers (reachable, running the engines, seeing the targets)."""
import json
import os
import re
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

from fiopack import REPO, mounts
from fiopack.catalogue import split_json
from fiopack.study.common import (CONNECT_TIMEOUT, DEFAULT_PORT, ENGINE_PROBES, LABEL_RE,
                                  PROBE_TIMEOUT, StudyError, check_job_text)


# Devices (sysfs)
# ---------------------------------------------------------------------------

def _read(path: Path):
    try:
        s = path.read_text().strip()
    except OSError:
        return None
    return s or None


def _disk_info(disk: Path, depth=0) -> dict:
    info = {"name": disk.name, "model": _read(disk / "device" / "model"),
            "vendor": _read(disk / "device" / "vendor"), "rotational": None}
    rot = _read(disk / "queue" / "rotational")
    if rot is not None:
        info["rotational"] = rot == "1"
    dm = _read(disk / "dm" / "name")
    if dm:
        info["dm_name"] = dm
    backing = _read(disk / "loop" / "backing_file")
    if backing:
        info["backing_file"] = backing
        modeled = modeled_device(backing)
        if modeled:
            # a loop device has no model of its own: a modeled one's is its spec
            info["model"], info["vendor"], info["modeled"] = \
                modeled["model"], "fio-pack device", modeled
    try:
        slaves = sorted(os.listdir(disk / "slaves"))
    except OSError:
        slaves = []
    if slaves and depth < 4:
        # LVM, md RAID, dm-crypt: the devices underneath are what was bought
        info["slaves"] = []
        for s in slaves:
            real = (disk / "slaves" / s).resolve()
            if (real / "partition").exists():
                real = real.parent
            info["slaves"].append(_disk_info(real, depth + 1))
    return info


# The modeled-device daemon's FUSE file system (tools/moddev/moddev.c: subtype=moddev)
MODDEV_FSTYPE = "fuse.moddev"


def modeled_device(backing: str):
    """A loop device over a modeled device's FUSE file "disk" (fio-pack
    device up): what its daemon says of it in the "stats" file beside it
    (the model's spec, the size, the back-dating), or None. Read from the
    daemon itself, not from fio-pack's records, so that it holds whatever
    FIO_PACK_RUN_DIR the device was brought up with."""
    mnt, name = os.path.split(backing)
    if name != "disk":
        return None
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    ours = any(len(f) > 4 and f[4] == mnt and line.split(" - ", 1)[-1].split()[0] == MODDEV_FSTYPE
               for line in mounts for f in [line.split()])
    if not ours:
        return None
    try:
        st = json.loads((Path(mnt) / "stats").read_text())
    except (OSError, ValueError):
        return None
    return {"model": st.get("model"), "size_bytes": st.get("size_bytes"),
            "backdate_us": (st.get("backdate_ns") or 0) // 1000,
            "realtime": bool(st.get("realtime"))}


def device_info(path) -> dict:
    """What sysfs says about the block device holding path (or being path),
    and the type of the file system path is on (tmpfs has no block device,
    and is the one fact that explains its figures)."""
    empty = {"name": None, "model": None, "vendor": None, "rotational": None,
             "size_bytes": None, "fs_type": mounts.fs_type(path)}
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent        # a file still to be created: its directory's device
    try:
        st = os.stat(p)
    except OSError:
        return empty
    dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
    sysdev = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sysdev.exists():
        return empty        # tmpfs, overlayfs, btrfs subvolumes, NFS...
    real = sysdev.resolve()
    disk, part = real, None
    if (real / "partition").exists():
        disk, part = real.parent, real.name
    info = dict(empty)
    info.update(_disk_info(disk))
    size = _read(real / "size")
    info["size_bytes"] = int(size) * 512 if size and size.isdigit() else None
    if part:
        info["partition"] = part
    return info


def device_users(dev_path: str) -> list:
    """Why a block device is in use: mounts, swap, holders (its partitions too)."""
    st = os.stat(dev_path)
    real = Path(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}").resolve()
    nodes = [real] + [c for c in real.iterdir() if (c / "partition").exists()] \
        if real.exists() else []
    devnums = {}
    for n in nodes:
        d = _read(n / "dev")
        if d:
            devnums[d] = n.name
    users = []
    try:
        names = set(devnums.values())
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            f = line.split()
            # btrfs reports an anonymous device number: match the source too
            src = line.split(" - ", 1)[1].split()[1:2] if " - " in line else []
            src_name = os.path.basename(os.path.realpath(src[0])) \
                if src and src[0].startswith("/dev/") else None
            if len(f) > 4 and (f[2] in devnums or src_name in names):
                what = f"{devnums.get(f[2], src_name)} is mounted on {f[4]}"
                if what not in users:
                    users.append(what)
    except OSError:
        pass
    try:
        for line in Path("/proc/swaps").read_text().splitlines()[1:]:
            f = line.split()
            if f and os.path.exists(f[0]) and stat.S_ISBLK(os.stat(f[0]).st_mode) \
                    and "%d:%d" % (os.major(os.stat(f[0]).st_rdev),
                                   os.minor(os.stat(f[0]).st_rdev)) in devnums:
                users.append(f"{f[0]} is in use as swap")
    except OSError:
        pass
    for n in nodes:
        try:
            holders = os.listdir(n / "holders")
        except OSError:
            holders = []
        if holders:
            users.append(f"{n.name} is held by {', '.join(sorted(holders))}")
    return users


# ---------------------------------------------------------------------------
# Targets and servers
# ---------------------------------------------------------------------------

def parse_target(text: str) -> dict:
    label, sep, path = text.partition("=")
    if not sep or not path:
        raise StudyError(f"--target {text!r}: expected LABEL=PATH")
    if not LABEL_RE.fullmatch(label):
        raise StudyError(f"--target {text!r}: label {label!r} must be letters, digits, . _ -")
    # the path is the job's directory=, filename=, tree_dir=...
    check_job_text(path, f"--target {label}", path=True)
    return {"label": label, "path": path}


def check_local_target(t: dict, sc: dict, kind: str, confirm: str) -> None:
    """Refuses a local target the scenario cannot or must not use."""
    label, path = t["label"], t["path"]
    writes = bool(sc.get("writes_target"))
    what = f"target {label}: {path}"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise StudyError(f"{what}: {e.strerror}")
    if kind == "dir":
        if st is None:
            raise StudyError(f"{what}: no such directory")
        if not stat.S_ISDIR(st.st_mode):
            raise StudyError(f"{what}: not a directory (scenario {sc['id']} runs in a directory)")
        need = os.W_OK | os.X_OK if writes else os.R_OK | os.X_OK
        if not os.access(path, need):
            raise StudyError(f"{what}: not {'writable' if writes else 'readable'}")
        return
    # file-or-device
    if st is None:
        parent = os.path.dirname(path) or "."
        if not writes:
            raise StudyError(f"{what}: no such file or device")
        if not os.path.isdir(parent):
            raise StudyError(f"{what}: no such file, and no directory {parent} to create it in")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise StudyError(f"{what}: no such file, and {parent} is not writable")
        return
    if stat.S_ISDIR(st.st_mode):
        raise StudyError(f"{what}: is a directory (scenario {sc['id']} needs a file or device)")
    if stat.S_ISBLK(st.st_mode):
        if writes:
            if not confirm or os.path.realpath(confirm) != os.path.realpath(path):
                raise StudyError(
                    f"{what}: block device, and scenario {sc['id']} writes to its target "
                    f"(data on it is destroyed): add --confirm-overwrite {path} to proceed")
            users = device_users(path)
            if users:
                raise StudyError(f"{what}: in use ({'; '.join(users)}): refusing to overwrite it")
            ro = _read(Path(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}/ro"))
            if ro == "1":
                raise StudyError(f"{what}: the device is read-only")
    if not os.access(path, os.R_OK | (os.W_OK if writes else 0)):
        raise StudyError(f"{what}: not {'writable' if writes else 'readable'}")


def check_remote_target(t: dict, sc: dict, kind: str, confirm: str) -> None:
    """What can be checked of a server's target path without the server."""
    label, path = t["label"], t["path"]
    if not path.startswith("/"):
        raise StudyError(f"target {label}: {path}: must be an absolute path with --server "
                         f"(the servers' working directories are unknown)")
    if kind == "file-or-device" and sc.get("writes_target") and path.startswith("/dev/") \
            and confirm != path:
        raise StudyError(f"target {label}: {path}: a device on the servers, and scenario "
                         f"{sc['id']} writes to its target: add --confirm-overwrite {path} "
                         f"to proceed")


def parse_server(text: str) -> dict:
    # HOST:PORT is on the derived job file's header line
    check_job_text(text, "--server")
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](?::(\d+))?", text)
    if m:
        host, port, v6 = m.group(1), m.group(2), True
    else:
        host, _, port = text.partition(":") if text.count(":") <= 1 else (text, "", "")
        v6 = text.count(":") > 1
    if not host:
        raise StudyError(f"--server {text!r}: expected HOST[:PORT]")
    try:
        port = int(port) if port else DEFAULT_PORT
        if not 0 < port < 65536:
            raise ValueError
    except ValueError:
        raise StudyError(f"--server {text!r}: bad port")
    label = f"[{host}]:{port}" if v6 else f"{host}:{port}"
    client = f"ip6:{host},{port}" if v6 else f"{host},{port}"
    return {"host": host, "port": port, "label": label, "client": client}


def fio_messages(text: str) -> list:
    """fio's (and the engines') error lines, without the servers' <host> prefix."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"^<[^>]*> ", "", line).strip()
        if not line or re.match(r"^fio: (job .* dropped|failed parsing)", line) \
                or line.startswith(("Correct format", "client <")):
            continue
        if re.match(r"^(fio|[a-z_]+): ", line):
            out.append(line)
    return out


def run_probe(fio: str, server: dict, lines: list, extra_args=()):
    """Runs a one-job probe on a server: (ok, problem text)."""
    with tempfile.NamedTemporaryFile("w", suffix=".fio", prefix="study-probe-") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        cmd = [fio, "--output-format=json", f"--client={server['client']}", *extra_args, f.name]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                               timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return False, f"no answer within {PROBE_TIMEOUT} s"
    pre, js = split_json(p.stdout)
    stats = []
    if js is not None:
        try:
            stats = [c for c in json.loads(js).get("client_stats", [])
                     if c.get("jobname") != "All clients"]
        except ValueError:
            pass
    if p.returncode == 0 and stats and not any(c.get("error") for c in stats):
        return True, ""
    msgs = fio_messages(pre + "\n" + p.stderr)
    msg = msgs[0] if msgs else (p.stderr.strip().splitlines() or ["fio exit %d" % p.returncode])[-1]
    m = re.search(r"error=(.*)$", msg)
    if m:
        msg = m.group(1)
    return False, re.sub(r"^fio: ", "", msg)


def check_server(fio: str, server: dict, engines: list, engine_dir: str,
                 dir_targets: list, repo_dir: str = "") -> list:
    """Problems with one server, one line each (empty: ready)."""
    name = f"server {server['label']}"
    try:
        with socket.create_connection((server["host"], server["port"]), CONNECT_TIMEOUT):
            pass
    except socket.gaierror as e:
        return [f"{name}: unreachable: cannot resolve {server['host']}: {e.strerror}"]
    except OSError as e:
        return [f"{name}: unreachable: {e.strerror or e}"]
    ok, why = run_probe(fio, server, ["[study-probe]", "ioengine=null", "size=4k", "rw=read"])
    if not ok:
        return [f"{name}: fio on the server does not run a job for us: {why}"]
    problems = []
    for eng in engines:
        so = f"{engine_dir.rstrip('/')}/{eng}.so"
        probe = [o.replace("{repo}", (repo_dir or str(REPO)).rstrip("/"))
                 for o in ENGINE_PROBES.get(eng, ["size=4k", "rw=read"])]
        ok, why = run_probe(fio, server, [f"[study-probe-{eng}]", f"ioengine=external:{so}"]
                            + probe)
        if not ok:
            if why.startswith("invalid external ioengine path"):
                why = "no such file on the server"
            problems.append(f"{name}: cannot load {so}: {why}")
    for t in dir_targets:
        # the null engine does no I/O and creates no file; fio still checks
        # that directory= exists on the server
        ok, why = run_probe(fio, server, ["[study-probe-target]", "ioengine=null",
                                          f"directory={t['path']}", "size=4k", "rw=read"])
        if not ok:
            problems.append(f"{name}: target {t['label']}: {t['path']}: not a directory "
                            f"on the server ({why})")
    return problems


# ---------------------------------------------------------------------------
