"""pmrc2fio touches nothing but what it is asked to write, and reads only
what it is given, within bounds ("Nothing outside the target", docs/RELIABILITY.md).

-o follows the pack's rules for an output path (engines/lib/outfile.h): a
regular file or a new name is replaced atomically; a character device or a
FIFO is written in place; a symbolic link is followed as the shell's `>`
follows it; a block device, a directory or a socket is refused in one line
with nothing changed. The device nodes are made here, in the test's own
directory (the null device's numbers, and a loop device's that is never
opened), so that a regression cannot turn the machine's /dev/null into a
file."""
import os
import socket
import subprocess
import stat
import threading
from pathlib import Path

import pytest

from helpers.fio import IS_ROOT
from helpers.pmrc2fio import PMRC_000, TOOL, _env, jobs_of, run_tool

# _build: the fixture that makes build/pmrc2fio
pytestmark = [pytest.mark.nosan, pytest.mark.usefixtures("_build")]
needs_root = pytest.mark.skipif(not IS_ROOT, reason="mknod needs root")


def listing(root: Path) -> dict:
    """Every entry below @root: its type and inode, a link's text, a regular
    file's content. Nothing is opened but regular files (no device, no FIFO)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath, n)
            st = os.lstat(p)
            what = (stat.S_IFMT(st.st_mode), st.st_ino, stat.S_IMODE(st.st_mode))
            if stat.S_ISLNK(st.st_mode):
                what += (os.readlink(p),)
            elif stat.S_ISREG(st.st_mode):
                what += (p.read_bytes(),)
            elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                what += (st.st_rdev,)
            out[p.relative_to(root).as_posix()] = what
    return out


def assert_refused(r, needle, root: Path, before: dict):
    """Exit 2, one line on stderr naming @needle, nothing on stdout, and
    nothing below @root changed."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("pmrc2fio: "), r.stderr
    assert needle in r.stderr, r.stderr
    assert listing(root) == before


def null_node(path: Path):
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


# ---------------------------------------------------------------------------
# -o: what is at the path
# ---------------------------------------------------------------------------

@needs_root
def test_output_to_a_character_device_is_written_in_place(tmp_path):
    dev = tmp_path / "null"
    null_node(dev)
    ino = dev.stat().st_ino
    r = run_tool("-o", dev, stdin=PMRC_000)
    assert r.returncode == 0, r.stderr
    st = os.lstat(dev)
    assert stat.S_ISCHR(st.st_mode) and st.st_ino == ino and st.st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_output_to_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    r = run_tool("-o", fifo, stdin=PMRC_000)
    reader.join(timeout=30)
    if reader.is_alive():       # the FIFO was never opened: let the reader go
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert jobs_of(got[0])[0][1]["pm_number"] == "5000"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_output_through_a_symlink_replaces_its_target_in_its_directory(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    target = there / "job.fio"
    target.write_text("old\n")
    target.chmod(0o640)
    # a chain: a relative link to an absolute one
    (here / "abs").symlink_to(target)
    (here / "job.fio").symlink_to("abs")
    r = run_tool("-o", here / "job.fio", stdin=PMRC_000)
    assert r.returncode == 0, r.stderr
    assert os.readlink(here / "job.fio") == "abs" and os.readlink(here / "abs") == str(target)
    assert jobs_of(target.read_text())[0][1]["pm_number"] == "5000"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in here.iterdir()) == ["abs", "job.fio"]
    assert sorted(p.name for p in there.iterdir()) == ["job.fio"]   # no temporary left


def test_output_through_a_dangling_symlink_creates_its_target(tmp_path):
    (tmp_path / "d").mkdir()
    link = tmp_path / "link.fio"
    link.symlink_to("d/new.fio")
    r = run_tool("-o", link, stdin=PMRC_000)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == "d/new.fio"
    assert jobs_of((tmp_path / "d" / "new.fio").read_text())[0][1]["pm_number"] == "5000"
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["new.fio"]


def test_output_through_a_link_to_standard_output(tmp_path):
    """A link to /proc/self/fd/1 (what /dev/stdout is, made here so that a
    regression cannot replace the system's): a pipe is written in place,
    a regular file replaced, the link kept either way."""
    import subprocess
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    tool = run_tool.__globals__["TOOL"]
    r = subprocess.run([str(tool), "-o", str(link), "-"], input=PMRC_000, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert jobs_of(r.stdout)[0][1]["pm_number"] == "5000"
    out = tmp_path / "redirected.fio"
    with open(out, "w") as f:
        r = subprocess.run([str(tool), "-o", str(link), "-"], input=PMRC_000, stdout=f,
                           stderr=subprocess.PIPE, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert jobs_of(out.read_text())[0][1]["pm_number"] == "5000"
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["redirected.fio", "stdout"]


@needs_root
def test_output_through_a_symlink_to_a_character_device(tmp_path):
    null_node(tmp_path / "null")
    (tmp_path / "out").symlink_to("null")
    r = run_tool("-o", tmp_path / "out", stdin=PMRC_000)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.lstat(tmp_path / "null").st_mode)
    assert (tmp_path / "out").is_symlink()


@needs_root
@pytest.mark.parametrize("via_link", [False, True], ids=["direct", "symlink"])
def test_output_to_a_block_device_is_refused(tmp_path, via_link):
    blk = tmp_path / "disk"
    os.mknod(blk, 0o660 | stat.S_IFBLK, os.makedev(7, 250))   # never opened
    out = blk
    if via_link:
        out = tmp_path / "link"
        out.symlink_to("disk")
    before = listing(tmp_path)
    r = run_tool("-o", out, stdin=PMRC_000)
    assert_refused(r, f"pmrc2fio: {out}: is a block device: refused", tmp_path, before)


def test_output_to_a_socket_is_refused(tmp_path):
    path = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(str(path))
        before = listing(tmp_path)
        r = run_tool("-o", path, stdin=PMRC_000)
        assert_refused(r, f"pmrc2fio: {path}: is a socket: refused", tmp_path, before)
    finally:
        s.close()


def test_output_through_a_symlink_to_a_directory_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to("d")
    before = listing(tmp_path)
    r = run_tool("-o", tmp_path / "link", stdin=PMRC_000)
    assert_refused(r, f"pmrc2fio: {tmp_path / 'link'}: Is a directory", tmp_path, before)


def test_output_symlink_loop_is_refused(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    before = listing(tmp_path)
    r = run_tool("-o", tmp_path / "a", stdin=PMRC_000)
    assert_refused(r, "Too many levels of symbolic links", tmp_path, before)


def test_help_says_what_o_does_with_links_and_devices():
    text = " ".join(run_tool("--help").stdout.split())
    for words in ("symbolic link is followed", "character device or a FIFO is written in place",
                  "block device, a directory or a socket is refused"):
        assert words in text


# ---------------------------------------------------------------------------
# CONFIG: a regular file or standard input, read within bounds
# ---------------------------------------------------------------------------

# an ASan build needs its shadow memory's address space: no limit for it
ASAN_TOOL = b"__asan_init" in Path(run_tool.__globals__["TOOL"]).read_bytes()
MEMORY_LIMIT = 256 << 20


def run_bounded(*args, stdin=None):
    """pmrc2fio under an address-space limit, so that an unbounded read fails
    here instead of taking the machine's memory (21.5 GB were seen)."""
    import resource
    import subprocess

    def limit():
        if not ASAN_TOOL:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    tool = run_tool.__globals__["TOOL"]
    return subprocess.run([str(tool), *map(str, args)], stdin=stdin, capture_output=True,
                          text=True, timeout=60, preexec_fn=limit)


def test_a_device_as_config_is_refused(tmp_path):
    out = tmp_path / "out.fio"
    r = run_bounded("-o", out, "/dev/zero")
    assert_refused(r, "pmrc2fio: /dev/zero: is a character device, not a configuration file",
                   tmp_path, {})


def test_a_fifo_as_config_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "cfg"
    os.mkfifo(fifo)
    before = listing(tmp_path)
    r = run_bounded("-o", tmp_path / "out.fio", fifo)      # no writer: open() would wait
    assert_refused(r, f"pmrc2fio: {fifo}: is a FIFO, not a configuration file", tmp_path, before)


def test_standard_input_is_read_within_bounds(tmp_path):
    with open("/dev/zero", "rb") as zero:
        r = run_bounded("-o", tmp_path / "out.fio", "-", stdin=zero)
    assert_refused(r, "pmrc2fio: (standard input): more than 4194304 bytes: not a PostMark "
                   "configuration", tmp_path, {})


def test_ten_megabytes_of_runs_are_refused(tmp_path):
    cfg = tmp_path / "runs.pmrc"
    cfg.write_text("run\n" * (10 << 18))     # 10 MiB, each `run` a job
    before = listing(tmp_path)
    r = run_bounded("-o", tmp_path / "out.fio", cfg)
    assert_refused(r, f"pmrc2fio: {cfg}: more than 4194304 bytes", tmp_path, before)


def test_runs_are_bounded_by_what_fio_runs(tmp_path):
    cfg = tmp_path / "runs.pmrc"
    cfg.write_text("set number 10\n" + "run\n" * 4096)
    r = run_bounded("-o", tmp_path / "ok.fio", cfg)
    assert r.returncode == 0, r.stderr
    assert len(jobs_of((tmp_path / "ok.fio").read_text())) == 4096
    (tmp_path / "ok.fio").unlink()
    cfg.write_text("set number 10\n" + "run\n" * 4097)
    before = listing(tmp_path)
    r = run_bounded("-o", tmp_path / "out.fio", cfg)
    assert_refused(r, f"pmrc2fio: {cfg}: line 4098: run: more than 4096 runs; fio runs at most "
                   "4096 jobs", tmp_path, before)


@pytest.mark.parametrize("text,msg", [
    ("set number 10\n# " + "x" * 9000 + "\nrun\n", "line 2: config: line longer than 1024 bytes"),
    ("set number 1\0\nrun\n", "line 1: a NUL byte"),
], ids=["long-line", "nul-byte"])
def test_lines_are_text_of_bounded_length(tmp_path, text, msg):
    cfg = tmp_path / "bad.pmrc"
    cfg.write_bytes(text.encode())
    before = listing(tmp_path)
    r = run_bounded("-o", tmp_path / "out.fio", cfg)
    assert_refused(r, f"pmrc2fio: {cfg}: {msg}", tmp_path, before)


def test_a_read_error_is_an_error(tmp_path):
    # reading one's own /proc/self/mem at offset 0 (unmapped) fails with EIO
    r = run_bounded("-o", tmp_path / "out.fio", "/proc/self/mem")
    assert_refused(r, "pmrc2fio: /proc/self/mem: Input/output error", tmp_path, {})


@pytest.mark.parametrize("how", ["same-path", "symlink-to-it", "hard-link", "stdin"])
def test_output_that_is_the_configuration_is_refused(how, tmp_path):
    """`pmrc2fio -o CFG CFG` (or -o a link to CFG, or CFG on standard input)
    replaced the user's configuration with its job file, exit 0. The input
    is not an output: refused in one line, CFG unchanged."""
    cfg = tmp_path / "cfg.pmrc"
    cfg.write_text(PMRC_000)
    out = {"same-path": cfg, "stdin": cfg, "symlink-to-it": tmp_path / "link",
           "hard-link": tmp_path / "hard"}[how]
    if how == "symlink-to-it":
        os.symlink("cfg.pmrc", out)
    elif how == "hard-link":
        os.link(cfg, out)
    before = listing(tmp_path)
    if how == "stdin":
        with open(cfg) as f:
            r = subprocess.run([str(TOOL), "-o", str(out), "-"], stdin=f, capture_output=True,
                               text=True, env=_env(), timeout=30)
    else:
        r = run_tool("-o", out, cfg)
    assert_refused(r, "is the configuration", tmp_path, before)
