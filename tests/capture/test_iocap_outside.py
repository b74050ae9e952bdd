"""iocap touches nothing but what it is asked to write (nothing outside
the target, ever): its -o, --stats and --ready paths follow the pack's
rules for an output (engines/lib/outfile.h, as pmrc2fio -o): a block
device, a directory or a socket is refused before anything is loaded, a
refused command changes no file, a character device is written in place
and a symbolic link is followed. No iocap program stays loaded
(the nothing_left_attached fixture)."""
import os
import stat
import subprocess
from pathlib import Path

import pytest

from helpers.iocap import BPF_MARKS, IOCAP, attached_programs

pytestmark = BPF_MARKS


def writer(data: Path) -> subprocess.Popen:
    """A short process that writes a file once the capture has started."""
    return subprocess.Popen(["sh", "-c", f"sleep 1; echo x > {data}/a; sleep 0.3"])


def iocap(*args, timeout=60):
    return subprocess.run([str(IOCAP), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def assert_refused(r, needle):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("iocap: "), r.stderr
    assert needle in r.stderr, r.stderr


@pytest.fixture
def loop_device(tmp_path):
    """A loop device over a 1 MiB file of zeros: (device, backing file)."""
    backing = tmp_path / "backing.img"
    backing.write_bytes(b"\0" * (1 << 20))
    r = subprocess.run(["losetup", "-f", "--show", str(backing)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip(f"no loop device: {r.stderr.strip()}")
    dev = r.stdout.strip()
    try:
        yield Path(dev), backing
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)


def test_output_to_a_block_device_is_refused_before_loading(tmp_path, loop_device):
    dev, backing = loop_device
    data = tmp_path / "data"
    data.mkdir()
    w = writer(data)
    try:
        r = iocap("-p", w.pid, "-o", dev)
    finally:
        w.wait()
    assert_refused(r, f"iocap: -o {dev}: is a block device: refused")
    assert backing.read_bytes() == b"\0" * (1 << 20)     # nothing written on the disk
    assert stat.S_ISBLK(os.stat(dev).st_mode)


@pytest.mark.parametrize("opt", ["--stats", "--ready"])
def test_a_refused_path_changes_no_other_output(tmp_path, opt):
    """--stats or --ready naming a directory is refused at the start: the
    trace named by -o keeps what it held (it was overwritten, then the
    capture died on the stats file)."""
    data = tmp_path / "data"
    data.mkdir()
    keep = tmp_path / "keep.txt"
    keep.write_text("the user's file\n")
    w = writer(data)
    try:
        r = iocap("-p", w.pid, "-o", keep, opt, data)
    finally:
        w.wait()
    assert_refused(r, f"iocap: {opt} {data}: Is a directory")
    assert keep.read_text() == "the user's file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "keep.txt"]
    assert attached_programs() == []


def test_outputs_through_links_and_devices(tmp_path):
    """-o through a symbolic link: the file it points to gets the trace, the
    link stays; --stats to a character device (the null device's numbers,
    made here): written in place, still a device."""
    data, real = tmp_path / "data", tmp_path / "real"
    data.mkdir()
    real.mkdir()
    (tmp_path / "trace").symlink_to(real / "trace.txt")
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    w = writer(data)
    try:
        r = iocap("-p", w.pid, "-o", tmp_path / "trace", "--stats", null, "--ready",
                  tmp_path / "ready")
    finally:
        w.wait()
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "trace").is_symlink()
    assert f"{data}/a>" in (real / "trace.txt").read_text()
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert (tmp_path / "ready").read_bytes() == b""
    assert sorted(p.name for p in real.iterdir()) == ["trace.txt"]     # no temporary left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "null", "ready", "real",
                                                          "trace"]


def test_help_says_what_is_done_with_output_paths():
    text = " ".join(iocap("--help").stdout.split())
    assert "a character device or a FIFO is written in place" in text
    assert "a block device, a directory or a socket is refused" in text


@pytest.mark.parametrize("case", ["stats-is-o", "ready-is-o-via-link", "ready-is-stats"])
def test_two_outputs_that_are_one_file_are_refused(tmp_path, case):
    """`iocap -o F --stats F` (or --ready F, or through a link to F) wrote
    both, and the one committed last replaced the other: the trace or its
    statistics were lost, exit 0. Refused in one line before anything is
    loaded; F is left as it was. (A device written in place, -o /dev/null
    --stats /dev/null, may be shared.)"""
    (tmp_path / "f").write_text("the user's\n")
    os.symlink("f", tmp_path / "link")
    sleeper = subprocess.Popen(["sleep", "2"])
    try:
        args = {"stats-is-o": ["-o", tmp_path / "f", "--stats", tmp_path / "f"],
                "ready-is-o-via-link": ["-o", tmp_path / "link", "--ready", tmp_path / "f"],
                "ready-is-stats": ["-o", tmp_path / "t", "--stats", tmp_path / "f",
                                   "--ready", tmp_path / "f"]}[case]
        r = iocap("-p", sleeper.pid, *args, timeout=30)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert_refused(r, "are the same file")
    assert sorted(os.listdir(tmp_path)) == ["f", "link"]
    assert (tmp_path / "f").read_text() == "the user's\n"


def test_btf_that_is_not_a_regular_file_is_refused(tmp_path):
    """`--btf FIFO` blocked iocap for ever in libbpf's open of it (no writer
    comes): refused in one line, like a missing file, before anything is
    loaded or written."""
    os.mkfifo(tmp_path / "btf")
    sleeper = subprocess.Popen(["sleep", "2"])
    try:
        r = iocap("-p", sleeper.pid, "--btf", tmp_path / "btf", "-o", tmp_path / "t", timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("iocap still waiting on the FIFO after 20 s")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert_refused(r, "--btf")
    assert sorted(os.listdir(tmp_path)) == ["btf"]


@pytest.mark.parametrize("case", ["cgroup", "hooks"])
def test_a_refused_cgroup_or_hook_choice_does_not_touch_the_output_directory(tmp_path, case):
    """--cgroup and IOCAP_SYSCALL_HOOKS were checked only once the outputs
    were open: their refusal removed -o's temporary file again, but the
    output directory had been written (its mtime moved). Both are now
    checked with the other options, before anything is opened."""
    out = tmp_path / "out"
    out.mkdir()
    before = os.stat(out).st_mtime_ns
    sleeper = subprocess.Popen(["sleep", "5"])
    try:
        if case == "cgroup":
            r = iocap("--cgroup", tmp_path / "no-such-cgroup", "-o", out / "t",
                      "--stats", out / "s")
        else:
            r = subprocess.run([str(IOCAP), "-p", str(sleeper.pid), "-o", str(out / "t")],
                               capture_output=True, text=True, timeout=60,
                               env={**os.environ, "IOCAP_SYSCALL_HOOKS": "fast"})
    finally:
        sleeper.kill()
        sleeper.wait()
    assert_refused(r, "--cgroup" if case == "cgroup" else "IOCAP_SYSCALL_HOOKS='fast'")
    assert os.listdir(out) == []
    assert os.stat(out).st_mtime_ns == before, "the output directory was written"
