"""Every output path of fio-pack by one policy (scripts/fiopack/outputs.py):
a regular file or nothing is replaced whole (temporary file, rename); a
character device or a FIFO is written in place; a symlink is followed; a
block device, a directory or a socket is refused in one line, untouched.

The acceptance trial: `fio-pack trace ... -o /dev/null` (as root) renamed a regular
file over /dev/null. Each command that writes an output is run here against
each kind of path; the device nodes are made in tmp_path (a /dev/null twin,
and a block device of a major number no driver has, which no write can
reach).

Pure Python: no fio, no engine (marked nofio); root for mknod."""
import os
import select
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers.fio import IS_ROOT, REPO

pytestmark = [pytest.mark.nofio, pytest.mark.nosan]

FIO_PACK = [sys.executable, str(REPO / "scripts" / "fio-pack")]
FIXTURE = REPO / "tests" / "fixtures" / "fio-json" / "local-multi.out"
IOLOG = "fio version 2 iolog\n/d/f add\n/d/f open\n/d/f write 0 4096\n/d/f read 0 4096\n" \
        "/d/f close\n"
STRACE = '7  10.000001 pwrite64(3</db/x>, ""..., 10, 0) = 10\n'


def fio_pack(*args, cwd=None):
    return subprocess.run([*FIO_PACK, *map(str, args)], capture_output=True, timeout=120,
                          cwd=cwd)


def inputs(d: Path) -> Path:
    """The commands' inputs, in a directory of their own."""
    d.mkdir(exist_ok=True)
    (d / "in.iolog").write_text(IOLOG)
    (d / "in.strace").write_text(STRACE)
    if not (d / "in.trace").exists():
        r = fio_pack("trace", "import-iolog", d / "in.iolog", "-o", d / "in.trace",
                     "--source", "test")
        assert r.returncode == 0, r.stderr
    return d


def bench_report(out, _inp):
    """fio-pack bench's report writer, in-process: its commands need root,
    fio and minutes."""
    from fiopack import UserError
    from fiopack.bench import harness
    rep = harness.Report()
    rep.add("# a report")
    try:
        harness.save_report(SimpleNamespace(output=str(out), raw=None), rep, {}, None)
    except UserError as e:
        return SimpleNamespace(returncode=2, stderr=f"fio-pack bench: {e}\n".encode(),
                               stdout=b"")
    return SimpleNamespace(returncode=0, stderr=b"", stdout=b"")


# command -> (the name its output has, how to run it with output OUT)
COMMANDS = {
    "trace import-iolog": ("out.trace", lambda out, inp: fio_pack(
        "trace", "import-iolog", inp / "in.iolog", "-o", out, "--source", "test", "--quiet")),
    "trace export-iolog": ("out.iolog", lambda out, inp: fio_pack(
        "trace", "export-iolog", inp / "in.trace", "-o", out, "--quiet")),
    "capture convert": ("out.trace", lambda out, inp: fio_pack(
        "capture", "convert", inp / "in.strace", "--datadir", "/db", "--db", "generic",
        "--capture", "test", "-o", out, "--quiet")),
    "analyze rows": ("out.csv", lambda out, inp: fio_pack(
        "analyze", "rows", FIXTURE, "--format", "csv", "-o", out, "--quiet")),
    "gen dbreplay-dump": ("out.sql", lambda out, inp: fio_pack(
        "gen", "dbreplay-dump", "--dialect", "sqlite", "-o", out)),
    "bench report": ("out.md", bench_report),
}


class FifoReader(threading.Thread):
    """Drains a FIFO while a command writes it; .data once stopped. The read
    end is open before the command starts, so its open for writing never
    waits, and a command that never writes leaves .data empty."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.data = bytearray()
        self.done = threading.Event()

    def run(self):
        try:
            while True:
                ready, _, _ = select.select([self.fd], [], [], 0.05)
                chunk = b""
                if ready:
                    try:
                        chunk = os.read(self.fd, 1 << 16)
                    except BlockingIOError:
                        pass
                self.data += chunk
                if not chunk:
                    if self.done.is_set():
                        return
                    time.sleep(0.01)
        finally:
            os.close(self.fd)

    def stop(self) -> bytes:
        self.done.set()
        self.join(10)
        return bytes(self.data)


def free_block_major() -> int:
    """A block major number no driver registered: a node of it cannot be
    opened (ENXIO), so a writer that got past the policy writes nothing."""
    text = Path("/proc/devices").read_text().split("Block devices:")[1]
    used = {int(line.split()[0]) for line in text.splitlines() if line.strip()}
    return next(m for m in range(240, 255) if m not in used)


def node_state(p: Path):
    st = os.lstat(p)
    return stat.S_IFMT(st.st_mode), st.st_rdev, st.st_ino


def listing(*dirs) -> dict:
    return {str(d): sorted(os.listdir(d)) for d in dirs}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Each command's output written to a new regular file: what every
    accepted path must receive."""
    base = tmp_path_factory.mktemp("reference")
    inp = inputs(base / "in")
    ref = {}
    for cmd, (name, run) in COMMANDS.items():
        r = run(base / name, inp)
        assert r.returncode == 0, (cmd, r.stderr)
        ref[cmd] = (base / name).read_bytes()
        assert ref[cmd], cmd
    return ref


def one_line(r, *needles):
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for n in needles:
        assert str(n) in err, err


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_regular_file_is_replaced_whole(cmd, tmp_path, reference):
    name, run = COMMANDS[cmd]
    inp = inputs(tmp_path / "in")
    out = tmp_path / "o" / name
    out.parent.mkdir()
    out.write_text("previous\n")
    os.chmod(out, 0o640)
    r = run(out, inp)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == reference[cmd]
    assert stat.S_IMODE(out.stat().st_mode) == 0o640     # the file's mode is kept
    assert listing(out.parent) == {str(out.parent): [name]}


@pytest.mark.skipif(not IS_ROOT, reason="mknod needs root")
@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_character_device_is_written_in_place(cmd, tmp_path):
    """The issue's -o /dev/null, on a twin of /dev/null (1:3) made here."""
    name, run = COMMANDS[cmd]
    inp = inputs(tmp_path / "in")
    d = tmp_path / "o"
    d.mkdir()
    null = d / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    before = node_state(null)
    r = run(null, inp)
    assert r.returncode == 0, r.stderr
    assert node_state(null) == before, "the device node was replaced"
    assert listing(d) == {str(d): ["null"]}
    # and through a symlink to it
    link = d / name
    link.symlink_to(null)
    r = run(link, inp)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and node_state(null) == before
    assert listing(d) == {str(d): sorted(["null", name])}


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_fifo_is_written_in_place(cmd, tmp_path, reference):
    name, run = COMMANDS[cmd]
    inp = inputs(tmp_path / "in")
    d = tmp_path / "o"
    d.mkdir()
    fifo = d / name
    os.mkfifo(fifo)
    before = node_state(fifo)
    reader = FifoReader(fifo)
    reader.start()
    try:
        r = run(fifo, inp)
    finally:
        got = reader.stop()
    assert r.returncode == 0, r.stderr
    assert node_state(fifo) == before, "the FIFO was replaced"
    assert got == reference[cmd]
    assert listing(d) == {str(d): [name]}


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_symlink_is_followed(cmd, tmp_path, reference):
    """The link stays a link; the file it points to, in another directory,
    is replaced there; nothing is left in either directory."""
    name, run = COMMANDS[cmd]
    inp = inputs(tmp_path / "in")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    real = b / ("real-" + name)
    real.write_text("previous\n")
    link = a / name
    link.symlink_to(real)
    r = run(link, inp)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == reference[cmd]
    assert listing(a, b) == {str(a): [name], str(b): [real.name]}
    # a link to where nothing is yet: the file is made there
    real.unlink()
    r = run(link, inp)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and real.read_bytes() == reference[cmd]
    assert listing(a, b) == {str(a): [name], str(b): [real.name]}


def refused_kinds(tmp_path: Path):
    """(what, path, a check that it is untouched) of each refused kind."""
    d = tmp_path / "o"
    d.mkdir()
    kinds = []
    sub = d / "adir"
    sub.mkdir()
    (sub / "keep").write_text("x")
    kinds.append(("a directory", sub))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(d / "sock"))
    kinds.append(("a socket", d / "sock"))
    if IS_ROOT:
        blk = d / "blk"
        os.mknod(blk, 0o660 | stat.S_IFBLK, os.makedev(free_block_major(), 0))
        kinds.append(("a block device", blk))
        link = d / "link-to-blk"
        link.symlink_to(blk)
        kinds.append(("a block device", link))
    return d, kinds, sock


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_block_device_directory_socket_are_refused(cmd, tmp_path):
    name, run = COMMANDS[cmd]
    inp = inputs(tmp_path / "in")
    d, kinds, sock = refused_kinds(tmp_path)
    try:
        for what, path in kinds:
            before = node_state(path), listing(d, d / "adir")
            r = run(path, inp)
            one_line(r, path, what)
            assert (node_state(path), listing(d, d / "adir")) == before, (what, r.stderr)
            assert (d / "adir" / "keep").read_text() == "x"
    finally:
        sock.close()


@pytest.mark.skipif(not IS_ROOT, reason="mknod needs root")
def test_plot_writes_devices_in_place_and_refuses_block_devices(tmp_path):
    """analyze plot: its picture and the FILE.json beside it by the same
    rules (the picture's name must end in .png or .svg: a device node of
    that name, a link to one)."""
    qd = REPO / "tests" / "fixtures" / "fio-json" / "qd"
    plot = ["analyze", "plot", qd / "first.json", qd / "second.json", "--metric", "read.iops",
            "--x", "iodepth", "--quiet"]
    d = tmp_path / "o"
    d.mkdir()
    null = d / "null.svg"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    before = node_state(null)
    link = d / "link.svg"
    link.symlink_to(null)
    r = fio_pack(*plot, "-o", null, "-o", link)
    assert r.returncode == 0, r.stderr
    assert node_state(null) == before and link.is_symlink()
    assert listing(d) == {str(d): ["link.svg", "link.svg.json", "null.svg", "null.svg.json"]}
    blk = d / "blk.svg"
    os.mknod(blk, 0o660 | stat.S_IFBLK, os.makedev(free_block_major(), 0))
    before = node_state(blk), listing(d)
    r = fio_pack(*plot, "-o", blk)
    one_line(r, blk, "a block device")
    assert (node_state(blk), listing(d)) == before


# ---------------------------------------------------------------------------
# Outputs checked before the work (the acceptance trial: `capture -o` in a read-only
# directory was refused only after the whole capture)
# ---------------------------------------------------------------------------

def before_work_cases(tmp, ro, make=True):
    """(name, argv, the output it must name) of each command, with an output
    in the read-only directory @ro. Each argv also holds what would stop it
    another way (a bad input, a missing program) or show that it ran (a
    marker file): were the output not checked first, the refusal would not
    be about it."""
    marker, data, inp = tmp / "ran", tmp / "data", tmp / "in"
    if make:
        data.mkdir(exist_ok=True)
        inputs(inp)
        (tmp / "bad.iolog").write_text("fio version 2 iolog\n/d/f nonsense\n")
    ran = ["sh", "-c", f"touch {marker}"]
    capture = ["capture", "run", "--db", "generic", "--datadir", data, "--tracer", "strace"]
    return [
        ("capture run -o", [*capture, "-o", ro / "x.trace", "--", *ran], ro / "x.trace"),
        ("capture run --keep", [*capture, "-o", tmp / "x.trace", "--keep", ro / "keep", "--",
                                *ran], ro / "keep"),
        ("capture attach --ready", ["capture", "attach", "--db", "generic", "--datadir", data,
                                    "--tracer", "strace", "-o", tmp / "y.trace", "--ready",
                                    ro / "ready", "--pid", "999999999"], ro / "ready"),
        ("capture convert -o", ["capture", "convert", inp / "in.strace", "--db", "generic",
                                "--datadir", "/db", "-o", ro / "z.trace"], ro / "z.trace"),
        ("trace import-iolog -o", ["trace", "import-iolog", tmp / "bad.iolog", "-o",
                                   ro / "t.trace"], ro / "t.trace"),
        ("analyze table -o", ["analyze", "table", tmp / "no-results", "--metric", "iops",
                              "-o", ro / "t.md"], ro / "t.md"),
        ("gen bonnie-seq --out", ["gen", "bonnie-seq", "--out", ro / "gen"], ro / "gen"),
        ("bench smallfile --output", ["bench", "smallfile", "--sections", "B9", "--output",
                                      ro / "b.md"], ro / "b.md"),
        ("bench smallfile --raw", ["bench", "smallfile", "--sections", "B9", "--raw",
                                   ro / "b.json"], ro / "b.json"),
        ("bench cold --output", ["bench", "cold", "--image-dir", tmp / "none", "--output",
                                 ro / "c.md"], ro / "c.md"),
        ("bench postmark --output", ["bench", "postmark", "--filesystems", "none", "--output",
                                     ro / "p.md"], ro / "p.md"),
        ("bench dbreplay --raw", ["bench", "dbreplay", "--records", "10", "--raw",
                                  ro / "d.json"], ro / "d.json"),
        ("bench capture --output", ["bench", "capture", "--tracers", "none", "--output",
                                    ro / "k.md"], ro / "k.md"),
        # --fio missing: without the check these end in its error, not a long run
        ("bench device --output", ["bench", "device", "--quick", "--fio", tmp / "no-fio",
                                   "--dir", tmp / "none", "--output", ro / "v.md"], ro / "v.md"),
        ("bench models --raw", ["bench", "models", "--quick", "--fio", tmp / "no-fio",
                                "--dir", tmp / "none", "--raw", ro / "m.json"], ro / "m.json"),
    ]




BEFORE_WORK = [c[0] for c in before_work_cases(Path("/nonexistent/t"), Path("/nonexistent/ro"),
                                               make=False)]


@pytest.mark.mounts
@pytest.mark.parametrize("case", BEFORE_WORK)
def test_outputs_are_checked_before_the_work(case, tmp_path, ro_dir):
    name, argv, out = {c[0]: c for c in before_work_cases(tmp_path, ro_dir)}[case]
    before = listing(tmp_path / "data", tmp_path / "in")
    r = fio_pack(*argv, cwd=tmp_path)
    one_line(r, out, "not writable")
    assert not (tmp_path / "ran").exists(), f"{name}: the command ran"
    assert listing(ro_dir) == {str(ro_dir): []}
    assert listing(tmp_path / "data", tmp_path / "in") == before
    assert sorted(os.listdir(tmp_path)) == ["bad.iolog", "data", "in", "ro"], name


# each command, and the input (in inputs()) it is given as its -o too
READS_ITS_OUTPUT = {
    "trace export-iolog": (["trace", "export-iolog", "in.trace"], "in.trace"),
    "trace import-iolog": (["trace", "import-iolog", "in.iolog"], "in.iolog"),
    "trace import-blkparse": (["trace", "import-blkparse", "in.iolog"], "in.iolog"),
    "capture convert": (["capture", "convert", "in.strace", "--datadir", "/db", "--db",
                         "generic"], "in.strace")}


@pytest.mark.parametrize("via", ["same-path", "symlink"])
@pytest.mark.parametrize("cmd", sorted(READS_ITS_OUTPUT))
def test_an_output_that_is_the_input_is_refused(cmd, via, tmp_path):
    """`trace export-iolog T -o T` replaced the user's trace with its iolog
    (exit 0), and so did the importers and `capture convert` given their
    input as -o, by name or through a symlink: refused in one line before
    anything is read or written (outputs.check's inputs)."""
    inp = inputs(tmp_path / "in")
    argv, name = READS_ITS_OUTPUT[cmd]
    argv = [inp / x if x.startswith("in.") else x for x in argv]
    out = inp / name
    if via == "symlink":
        os.symlink(out, tmp_path / "link")
        out = tmp_path / "link"
    before = {p.name: p.read_bytes() for p in inp.iterdir()}
    r = fio_pack(*argv, "-o", out)
    one_line(r, "is the input")
    assert {p.name: p.read_bytes() for p in inp.iterdir()} == before


# ---------------------------------------------------------------------------
# An output directory through a dangling symlink (acceptance trial, rerun):
# `gen bonnie-seq --out LINK` (LINK -> nowhere/x) passed check_dir (the
# nearest existing ancestor of where the link points was writable) and
# ended in makedirs' FileNotFoundError traceback.
# ---------------------------------------------------------------------------

DIR_OPTIONS = {
    "gen bonnie-seq --out": lambda d: ["gen", "bonnie-seq", "--out", d],
    "gen iozone-grid --out": lambda d: ["gen", "iozone-grid", "--out", d],
    "capture run --keep": lambda d: ["capture", "run", "--db", "generic", "--datadir", ".",
                                     "--tracer", "strace", "-o", "x.trace", "--keep", d,
                                     "--", "true"],
}


@pytest.mark.parametrize("below", [False, True], ids=["link", "below-link"])
@pytest.mark.parametrize("cmd", sorted(DIR_OPTIONS))
def test_an_output_directory_through_a_dangling_link_is_refused(cmd, below, tmp_path):
    os.symlink("nowhere/x", tmp_path / "link")
    d = tmp_path / "link" / "sub" if below else tmp_path / "link"
    r = fio_pack(*DIR_OPTIONS[cmd](d), cwd=tmp_path)
    one_line(r, tmp_path / "link", "nowhere/x")
    assert sorted(os.listdir(tmp_path)) == ["link"], cmd


@pytest.mark.parametrize("prefix", ["/x\ny", "/x y", "/x\ty"], ids=["newline", "blank", "tab"])
def test_a_refused_prefix_makes_nothing_where_the_output_goes(prefix, tmp_path):
    """`trace export-iolog --prefix '/x<newline>y'` was refused at the first
    file name, after its temporary output had been made beside -o (and
    then removed): the directory changed for a refused input. Refused
    before the output is opened."""
    inp = inputs(tmp_path / "in")
    o = tmp_path / "o"
    o.mkdir()
    time.sleep(0.05)
    before = os.stat(o).st_mtime_ns
    r = fio_pack("trace", "export-iolog", inp / "in.trace", "-o", o / "x.iolog",
                 "--prefix", prefix)
    one_line(r, "--prefix", "cannot hold blanks")
    assert os.listdir(o) == [] and os.stat(o).st_mtime_ns == before
