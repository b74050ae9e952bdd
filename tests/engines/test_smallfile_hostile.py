"""fio tests of the smallfile engine against a careless or hostile user
(docs/RELIABILITY.md "Trees, links and options: smallfile"):
error lines that stay one line whatever the user's text, markers that are
only markers, hard links never written through, numeric options that never
wrap, bounded histogram input, output files checked before the run, and a
tree no larger than the engine can address.

Every test runs the real fio with the real engine on real directories and
checks what fio reported and what is on disk.
"""
import os
import re
import stat
import subprocess

import pytest

from helpers.fio import ENGINE, MARKER, layout, run_fio, sf_args
from helpers.mounts import mounted
from helpers.trees import Shape, marker_params, read_opstats, snapshot
from helpers.smallfile import assert_refused


# ---------------------------------------------------------------------------
# Error lines stay one line
# ---------------------------------------------------------------------------

def _one_line_case(tmp_path, case):
    """(tree_dir, more options, the text the line shows, its tail after the newline)"""
    if case == "missing_tree_dir":
        return tmp_path / "no\nsuch", {}, "no?such", "such"
    if case == "foreign_tree_dir":
        return tmp_path / "users\ndir", {}, "users?dir", "dir"
    return tmp_path / "t", dict(tree_file_size_dist=f"hist:{tmp_path}/a\nb.hist"), "a?b.hist", "b.hist"


@pytest.mark.parametrize("case", ["missing_tree_dir", "foreign_tree_dir", "missing_hist"])
def test_newline_in_a_user_value_keeps_the_error_one_line(tmp_path, case):
    """A newline in a path the user gave (tree_dir, a histogram) is printed
    as '?': the error is one line, and no line of stderr is the tail of it.
    Nothing in the user's directory is touched."""
    users = tmp_path / "users\ndir"
    users.mkdir()
    (users / "thesis.tex").write_text("precious\n")
    (tmp_path / "t").mkdir()
    tree_dir, opts, shown, tail = _one_line_case(tmp_path, case)
    before = snapshot(users, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="layout", rw="write", **opts))
    assert_refused(r, shown, (users, before))
    assert not [l for l in r.stderr.splitlines() if l.startswith(tail)], r.describe()


# ---------------------------------------------------------------------------
# A marker is exactly the marker: its name, a regular file, its content
# ---------------------------------------------------------------------------

def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("suffix", ["orig", "dead_pid"])
@pytest.mark.parametrize("tree_file_op", ["layout", "create"])
def test_a_marker_like_name_is_not_a_marker(tmp_path, tree_dir, suffix, tree_file_op):
    """A directory holding only the user's .fio-smallfile-tree.orig (a copy
    of an old tree's marker), or a name like a marker being published by a
    process that is gone, is not empty: refused, nothing written."""
    (tmp_path / "old").mkdir()
    layout(tmp_path / "old", 20)
    name = f"{MARKER}.{'orig' if suffix == 'orig' else _dead_pid()}"
    (tree_dir / name).write_bytes((tmp_path / "old" / MARKER).read_bytes())
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op=tree_file_op, rw="write"))
    assert_refused(r, "is not empty and holds no smallfile tree", (tree_dir, before))


def _plant_marker(tree_dir, tmp_path, kind):
    m = tree_dir / MARKER
    if kind == "fifo":
        os.mkfifo(m)
    elif kind == "device":
        os.mknod(m, stat.S_IFCHR | 0o644, os.makedev(1, 5))    # /dev/zero's numbers
    elif kind == "directory":
        m.mkdir()
    else:   # a symlink to a real marker elsewhere
        (tmp_path / "other").mkdir()
        layout(tmp_path / "other", 20)
        m.symlink_to(tmp_path / "other" / MARKER)


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "symlink"])
@pytest.mark.parametrize("tree_file_op,rw", [("layout", "write"), ("read", "read")])
def test_a_marker_that_is_not_a_regular_file_is_refused(tmp_path, tree_dir, kind, tree_file_op, rw):
    """A FIFO named like the marker blocked the job for ever in open(); a
    device or a symlink was opened and read. Each is refused at once, in one
    line, without being opened."""
    if kind == "device" and os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    _plant_marker(tree_dir, tmp_path, kind)
    # (names, kinds, sizes, times: reading a FIFO or a device to hash it would hang)
    before = snapshot(tree_dir)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op=tree_file_op, rw=rw), timeout=30)
    assert_refused(r, f"{MARKER} is not a regular file")
    assert snapshot(tree_dir) == before


# ---------------------------------------------------------------------------
# Hard links: a `cp -al` backup of the tree is never written through
# ---------------------------------------------------------------------------

LINKED = dict(tree_fanout=2, tree_depth=1, tree_maildir=1, tree_file_size_dist="fixed:4k")


def _linked_tree(tmp_path, tree_dir):
    """A laid-out maildir tree with a short file 3 (a layout cut short) and
    a deliver's staging file left in tmp/ for every slot (a killed run),
    then `cp -al tree backup`: every file of the tree has a second name."""
    layout(tree_dir, 20, **LINKED)
    shape = Shape(20, 2, 1, maildir=True)
    os.truncate(tree_dir / shape.path(3), 100)
    for i in range(20):
        new = shape.path(i)
        tmp = new.replace("/new/", "/tmp/") + ".w1.0"
        (tree_dir / tmp).write_bytes(b"left by a killed delivery\n")
    backup = tmp_path / "backup"
    subprocess.run(["cp", "-al", str(tree_dir), str(backup)], check=True)
    assert os.stat(tree_dir / shape.path(0)).st_nlink == 2
    return backup


@pytest.mark.parametrize("tree_io_api", ["sync", "io_uring"])
@pytest.mark.parametrize("tree_file_op,rw", [("layout", "write"), ("append", "write"),
                                             ("deliver", "randwrite")])
def test_a_hard_linked_file_is_not_written_through(tmp_path, tree_dir, tree_file_op, rw,
                                                   tree_io_api):
    """layout (truncating and rewriting a short file), append and deliver
    (cutting its stale staging file) opened tree files without looking at
    st_nlink: the backup's files changed with them. Refused in one line
    naming the file; neither the backup nor the tree changes."""
    backup = _linked_tree(tmp_path, tree_dir)
    before, tree_before = snapshot(backup, content=True), snapshot(tree_dir, content=True)
    opts = dict(LINKED, number_ios=5) if tree_file_op != "layout" else LINKED
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op=tree_file_op, rw=rw,
                        tree_io_api=tree_io_api, **opts))
    assert_refused(r, "hard links", (backup, before), (tree_dir, tree_before))
    assert str(tree_dir) in r.smallfile_lines()[0]


@pytest.mark.parametrize("tree_file_op,rw", [("layout", "write"), ("read", "read"),
                                             ("stat", "read"), ("delete", "randread")])
def test_a_cp_al_backup_survives_what_does_not_write_through(tmp_path, tree_dir, tree_file_op, rw):
    """What is allowed on a hard-linked tree: a layout of whole files
    writes nothing; read and stat do not write; delete removes the tree's
    name, not the backup's file."""
    layout(tree_dir, 20, **LINKED)
    backup = tmp_path / "backup"
    subprocess.run(["cp", "-al", str(tree_dir), str(backup)], check=True)
    before = snapshot(backup, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op=tree_file_op, rw=rw,
                        number_ios=10, **LINKED)).ok()
    assert r.json["jobs"][0]["write"]["io_bytes"] == 0
    assert snapshot(backup, content=True) == before


@pytest.mark.parametrize("tree_io_api", ["sync", "io_uring"])
@pytest.mark.parametrize("tree_file_op", ["layout", "append"])
def test_a_device_node_in_the_tree_is_not_written(tmp_path, tree_dir, tree_file_op, tree_io_api):
    """A device node in place of a tree file (here /dev/null's numbers: an
    append "succeeded" into it) is not the tree's: refused, not written."""
    if os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    layout(tree_dir, 20, **LINKED)
    path = tree_dir / Shape(20, 2, 1, maildir=True).path(0)
    path.unlink()
    os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 3))
    before = snapshot(tree_dir)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op=tree_file_op, rw="write",
                        tree_io_api=tree_io_api, **LINKED))
    assert_refused(r, f"{path}: is not a regular file")
    assert snapshot(tree_dir) == before


@pytest.mark.parametrize("tree_io_api", ["sync", "io_uring"])
@pytest.mark.parametrize("dist", ["fixed:4k", "uniform:1k:64k"])
def test_a_device_node_in_the_tree_is_not_read_without_end(tree_dir, dist, tree_io_api):
    """`mknod T/0/f0000000000 c 1 5` (/dev/zero's numbers) in place of a
    tree file: a read went on to the end of file, which /dev/zero never
    gives; the job read for ever. A read past the largest size the tree's
    distribution gives looks at the file once: not a regular file, refused
    in one line naming it, the node left as it was. (fixed:4k: io_uring's
    reads linked to the close, then the file opened again; uniform: reads
    one at a time. A regular file grown past it by appends is read whole:
    test_smallfile.py::test_io_uring_reads_files_grown_past_their_model_size.)"""
    if os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    opts = dict(tree_fanout=2, tree_depth=1, tree_file_size_dist=dist)
    layout(tree_dir, 20, **opts)
    path = tree_dir / Shape(20, 2, 1).path(0)
    path.unlink()
    os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))
    before = snapshot(tree_dir)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="read", rw="read",
                        tree_io_api=tree_io_api, **opts), timeout=60)
    assert_refused(r, f"read {path}: is not a regular file")
    assert snapshot(tree_dir) == before


FIFO_CASES = [("layout", "write", None), ("append", "write", None),
              ("deliver", "randwrite", None), ("read", "read", None),
              ("read", "read", "writer")]


@pytest.mark.parametrize("tree_io_api", ["sync", "io_uring"])
@pytest.mark.parametrize("tree_file_op,rw,held", FIFO_CASES,
                         ids=["layout", "append", "deliver", "read", "read-writer-holds-it"])
def test_a_fifo_in_the_tree_does_not_block_the_job(tmp_path, tree_dir, tree_file_op, rw, held,
                                                   tree_io_api):
    """A FIFO in place of a tree file (or of deliver's staging file) blocked
    the job in open() for ever: a write waits for a reader, a read for a
    writer (io_uring: in an io-wq worker). Opened O_NONBLOCK: a write is
    refused in one line naming the file (ENXIO, nothing written), a read
    finds the FIFO empty (no writer) or, in the sync path, fails with
    EAGAIN (a writer that writes nothing holds it); the job ends and the
    FIFO stays.
    (A read counts the FIFO as an empty file: reads look at no file type,
    which would cost a call per file.)"""
    if held and tree_io_api == "io_uring":
        pytest.skip("io_uring polls a pipe whatever O_NONBLOCK says: a read of a FIFO "
                    "whose writer writes nothing waits (docs/RELIABILITY.md, limits)")
    layout(tree_dir, 20, **LINKED)
    new = Shape(20, 2, 1, maildir=True).path(0)
    path = tree_dir / (new.replace("/new/", "/tmp/") + ".w1.0" if tree_file_op == "deliver"
                       else new)
    path.parent.mkdir(exist_ok=True)
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK) if held else None
    try:
        before = snapshot(tree_dir, content=True)
        opts = dict(LINKED, number_ios=20) if tree_file_op in ("append", "deliver") else LINKED
        r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op=tree_file_op, rw=rw,
                            tree_io_api=tree_io_api, **opts), timeout=30)
    finally:
        if fd is not None:
            os.close(fd)
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    if tree_file_op == "read" and not held:
        r.ok()
        assert r.json["jobs"][0]["read"]["io_bytes"] == 19 * 4096
        assert snapshot(tree_dir, content=True) == before
    else:   # the files written before the FIFO was met are the job's: not compared
        assert_refused(r, str(path))
        assert ("Resource temporarily unavailable" if held else "No such device or address") \
            in r.smallfile_lines()[0]


# ---------------------------------------------------------------------------
# Numeric options never wrap
# ---------------------------------------------------------------------------

# fio's FIO_OPT_INT stored -1 as 4294967295 (tree_probe_limit=-1: a job
# probing an emptied tree for hours) and 2^32 + 1 as 1; FIO_OPT_BOOL took -1
# as true; FIO_OPT_STR_VAL -1 as 2^64 - 1.
OPTS_32 = ["tree_fanout", "tree_depth", "tree_probe_limit"]
OPTS_64 = ["tree_files_per_dir", "tree_seed"]
OPTS_BOOL = ["tree_maildir", "tree_space_check", "tree_drop_cache", "tree_dir_sync"]
WRAPPING = ([(o, "-1") for o in OPTS_32 + OPTS_64 + OPTS_BOOL]
            + [(o, str(2**32 + 1)) for o in OPTS_32 + OPTS_BOOL]
            + [(o, str(2**64)) for o in OPTS_64])


@pytest.mark.parametrize("opt,val", WRAPPING, ids=[f"{o}={v}" for o, v in WRAPPING])
def test_a_numeric_option_out_of_its_range_is_refused(tree_dir, opt, val):
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="layout", rw="write", **{opt: val}))
    assert_refused(r, f"{opt}={val} is out of range", (tree_dir, {}))


def test_a_bare_numeric_option_is_refused(tree_dir, tmp_path):
    """In a job file a bare `tree_maildir` (no value) is not silently 0."""
    job = tmp_path / "bare.fio"
    job.write_text(f"[j]\nioengine=external:{ENGINE}\ntree_dir={tree_dir}\ntree_files=20\n"
                   "tree_file_op=layout\nrw=write\ntree_maildir\n")
    r = run_fio(jobfile=job)
    assert_refused(r, "tree_maildir needs a value", (tree_dir, {}))


def test_numeric_options_in_range_and_their_defaults(tree_dir, tmp_path):
    """The ranges take what they should: suffixes as fio's did, the upper
    bounds, an empty value (an unset ${VAR}) for the default, which
    --enghelp shows."""
    r = layout(tree_dir, 20, tree_fanout="1k", tree_depth=1, tree_files_per_dir="",
               tree_seed=2**64 - 1, tree_maildir=1, tree_probe_limit=1000000)
    assert r.job()["write"]["total_ios"] == 20
    marker = (tree_dir / MARKER).read_text()
    for kv in ("tree_fanout=1024", "tree_depth=1", "tree_maildir=1",
               f"tree_seed={2**64 - 1}", "files_per_leaf=1\n"):
        assert kv in marker, marker
    h = run_fio([f"--enghelp={ENGINE},tree_probe_limit"], json_output=False)
    assert re.search(r"default\s*:\s*64\s*$", h.stdout, re.M), h.stdout


def test_the_largest_probe_limit_ends_on_an_emptied_tree(tree_dir):
    """tree_probe_limit at its top (a million) on a tree with no files left:
    the read gives up in bounded time, with the usual one line."""
    layout(tree_dir, 20, tree_fanout=2, tree_depth=1)
    for p in [p for p in tree_dir.rglob("f*") if p.is_file()]:
        p.unlink()
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_fanout=2, tree_depth=1,
                        tree_file_op="read", rw="randread", number_ios=1,
                        tree_probe_limit=1000000), timeout=300)
    assert r.rc != 0
    assert r.smallfile_lines() == [
        f"smallfile: read: no existing file found in 1000001 tries in {tree_dir} "
        "(No such file or directory); is the tree laid out?"], r.describe()


# ---------------------------------------------------------------------------
# Bounded input: a histogram file is a regular file of bounded size
# ---------------------------------------------------------------------------

def _hist_case(tmp_path, case):
    """(the path given to hist:, what the refusal says)"""
    if case == "dev_zero":
        return "/dev/zero", "histogram /dev/zero is not a regular file"
    p = tmp_path / "sizes.hist"
    if case == "fifo":
        os.mkfifo(p)
        return p, f"histogram {p} is not a regular file"
    if case == "huge":
        with open(p, "wb") as f:       # 4 GiB, sparse: one line of NUL bytes
            f.truncate(4 << 30)
        return p, f"{p} line 1 is longer than 4096 bytes"
    if case == "many_lines":
        p.write_bytes(b"4096 1\n" + b"#\n" * (8 << 20) + b"8192 1\n")
        return p, f"histogram {p} is larger than 16 MiB"
    p.write_bytes(b"4096 1\n" + b"8192 " + b" " * 5000 + b"1\n")
    return p, f"{p} line 2 is longer than 4096 bytes"


@pytest.mark.parametrize("case", ["dev_zero", "fifo", "huge", "many_lines", "long_line"])
def test_a_histogram_is_read_within_bounds(tmp_path, tree_dir, case):
    """hist:/dev/zero read gigabytes into one line (ASan: out of memory),
    then said "no bin with weight > 0"; a FIFO blocked the job for ever. A
    histogram is a regular file of at most 16 MiB with lines of at most
    4096 bytes, refused in one line naming the file (and the line)."""
    path, says = _hist_case(tmp_path, case)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="layout", rw="write",
                        tree_file_size_dist=f"hist:{path}"), timeout=60)
    assert_refused(r, f"tree_file_size_dist: {says}", (tree_dir, {}))


# ---------------------------------------------------------------------------
# The report file: checked before the run, and its failure fails the run
# ---------------------------------------------------------------------------

def _opstats_case(tmp_path, case, request):
    if case == "missing_dir":
        return tmp_path / "no-such-dir" / "ops.jsonl", "No such file or directory"
    if case == "directory":
        return tmp_path, "is not a regular file"
    if case == "fifo":
        os.mkfifo(tmp_path / "ops.fifo")   # its open for writing waited for a reader for ever
        return tmp_path / "ops.fifo", "is not a regular file"
    ro = request.getfixturevalue("ro_dir")
    return ro / "ops.jsonl", "Read-only file system"


@pytest.mark.parametrize("case", ["missing_dir", "directory", "fifo", "read_only"])
def test_an_unwritable_opstats_file_is_refused_before_the_run(tmp_path, tree_dir, case, request):
    """An opstats file that cannot be written was found out at the end,
    after the whole run, with exit 0 (and a FIFO blocked the job's end).
    Refused at the start, in one line; nothing is laid out."""
    path, why = _opstats_case(tmp_path, case, request)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="layout", rw="write",
                        tree_opstats_file=path), timeout=60)
    assert_refused(r, f"smallfile: tree_opstats_file {path}: {why}", (tree_dir, {}))


@pytest.mark.parametrize("name", ["marker", "tree-file", "new-in-tree", "via-link",
                                  "symlink-to-marker", "symlink-to-tree-file",
                                  "hard-link-to-marker"])
def test_an_opstats_file_in_the_tree_is_refused(tmp_path, tree_dir, name):
    """tree_opstats_file naming the tree's marker or one of its files had
    the run's opstats line appended to it (exit 0: the marker or a file the
    engine checks afterwards damaged); a new file in the tree is one the
    next run takes for a user's. Refused at the start, in one line. The
    trial's rerun: a link outside the tree to its marker or a file (a
    symlink, or a hard link to the marker) did the same, the marker then
    refused by the next run."""
    layout(tree_dir, 20)
    os.symlink(tree_dir, tmp_path / "link")
    tree_file = sorted(p for p in tree_dir.rglob("f*") if p.is_file())[0]
    path = {"marker": tree_dir / MARKER,
            "tree-file": tree_file,
            "new-in-tree": tree_dir / "ops.jsonl",
            "via-link": tmp_path / "link" / "ops.jsonl"}.get(name, tmp_path / "ops.jsonl")
    if name.startswith("symlink-to-"):
        os.symlink(tree_dir / MARKER if name.endswith("marker") else tree_file, path)
    elif name == "hard-link-to-marker":
        os.link(tree_dir / MARKER, path)
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="read", rw="read",
                        tree_opstats_file=path), timeout=60)
    assert_refused(r, f"smallfile: tree_opstats_file {path} is ", (tree_dir, before))
    assert f"tree_dir {tree_dir}" in r.stderr


def test_an_opstats_line_that_cannot_be_written_at_the_end_fails_the_run(tmp_path, tree_dir):
    """The start check passes (a writable directory), the disk it is on is
    full by the end: the run exits non-zero, with one line saying why."""
    tiny = next(mounted(tmp_path, "tiny", "tmpfs", "size=4k"))
    try:
        fd = os.open(tiny / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            os.write(fd, b"x" * 8192)
        except OSError:     # full: what the test wants
            pass
        os.close(fd)
        r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="layout", rw="write",
                            tree_opstats_file=tiny / "ops.jsonl"))
        assert r.rc != 0, r.describe()
        assert r.smallfile_lines() == [
            f"smallfile: tree_opstats_file {tiny}/ops.jsonl: No space left on device"], r.describe()
        assert r.jobs[0]["error"] != 0
        assert r.jobs[0]["write"]["total_ios"] == 20, "the run itself was whole"
    finally:
        subprocess.run(["umount", str(tiny)], check=True)


# ---------------------------------------------------------------------------
# A tree no larger than the engine can address
# ---------------------------------------------------------------------------

# fio sees the tree as one file of tree_files x bs bytes, kept below 2^63
LIMIT_4K = 2**63 // 4096    # 2^51 files (the most is 2^51 - 1)
FLAT0 = dict(tree_fanout=16, tree_depth=2, tree_file_size_dist="fixed:0")
HUGE = dict(norandommap=1, random_generator="tausworthe64")  # no 2^51-bit map, no stdout note


@pytest.mark.parametrize("nfiles,bs", [(2**52 + 1, "4k"), (LIMIT_4K, "4k"), (2**44, "512k")],
                         ids=["2^52+1@4k", "2^51@4k", "2^44@512k"])
def test_more_files_than_a_job_can_address_are_refused(tree_dir, nfiles, bs):
    """2^52 + 1 slots of 4 KiB made fio's file 4 KiB (2^64 + 4096 wrapped):
    every random operation chose file 0. Refused in one line naming the
    option and the limit."""
    limit = (2**63 - 1) // {"4k": 4096, "512k": 512 << 10}[bs]
    r = run_fio(sf_args(tree_dir, tree_files=nfiles, bs=bs, tree_file_op="create",
                        rw="randwrite", number_ios=5, **FLAT0, **HUGE))
    assert_refused(r, f"tree_files={nfiles} is more than a job can address with "
                   f"bs={ {'4k': 4096, '512k': 524288}[bs]}: at most {limit}", (tree_dir, {}))


def test_the_largest_tree_is_addressed_whole(tree_dir, tmp_path):
    """At the limit (2^51 - 1 files of 4 KiB) random creates land all over
    the tree, none on a file already made (no probes)."""
    ops = tmp_path / "ops.jsonl"
    r = run_fio(sf_args(tree_dir, tree_files=LIMIT_4K - 1, tree_file_op="create",
                        rw="randwrite", number_ios=8, tree_opstats_file=ops, **FLAT0,
                        **HUGE)).ok()
    assert r.job()["write"]["total_ios"] == 8
    made = sorted(int(p.name[1:]) for p in tree_dir.rglob("f*") if p.is_file())
    assert len(made) == 8 and made[-1] > LIMIT_4K // 2, made
    assert read_opstats(ops)[0]["ops"]["create"]["probes"] == 0


def test_numjobs_split_a_tree_of_2_61_files_exactly(tree_dir):
    """A layout's clones split the tree at floor(n * k / j): the product
    overflowed past 2^64 (here 2^61 files over 16 clones), and the shares
    overlapped. Each clone lays out the first files of its own share."""
    n, j = 2**61, 16
    r = run_fio(sf_args(tree_dir, tree_files=n, bs=2, tree_file_op="layout", rw="write",
                        numjobs=j, number_ios=2, tree_space_check=0, **FLAT0)).ok()
    assert sum(job["write"]["total_ios"] for job in r.jobs) == 2 * j
    made = sorted(int(p.name[1:]) for p in tree_dir.rglob("f*") if p.is_file())
    assert made == sorted(n * k // j + i for k in range(j) for i in range(2)), made


def test_a_tree_of_more_than_2_64_bytes_does_not_fit(tmpfs_dir):
    """2^20 files of 16 TiB are 2^64 bytes: the room check's sum wrapped to
    0, the tree "fitted" and the layout began writing 16 TiB into 64 MiB.
    The sum saturates: refused before anything is written."""
    tree = tmpfs_dir / "t"
    tree.mkdir()
    r = run_fio(sf_args(tree, tree_files=2**20, tree_file_op="layout", rw="write",
                        tree_file_size_dist="fixed:16t"))
    assert_refused(r, "the tree needs 18446744073.71 GB", (tree, {}))


# ---------------------------------------------------------------------------
# A marker is its directory's small text file
# ---------------------------------------------------------------------------

SHARED = "is shared with another directory"


def _own_marker(r):
    """Does what the refusal's line advises to give a directory a marker of
    its own (the shell command after 'a marker of its own: ')."""
    line = r.smallfile_lines()[0]
    cmd = line.split("a marker of its own: ", 1)[1]
    subprocess.run(["bash", "-c", cmd], check=True)


def _runs(tree_dir, **opts):
    opts = {**dict(tree_files=20, tree_file_op="read", rw="read", number_ios=10), **opts}
    return run_fio(sf_args(tree_dir, **opts)).ok()


@pytest.mark.parametrize("tree_file_op,rw", [("append", "write"), ("read", "read")])
def test_a_marker_linked_into_a_users_directory_is_refused(tmp_path, tree_dir, tree_file_op, rw):
    """`ln T/.fio-smallfile-tree U/.fio-smallfile-tree` beside the user's
    U/0/f0000000001: an append job on U wrote into the user's file. The
    marker recorded T's inode when it was published: with a second link it
    is T's only. U is refused, unchanged; T still runs."""
    layout(tree_dir, 20, tree_fanout=2, tree_depth=1)
    users = tmp_path / "users"
    shape = Shape(20, 2, 1)
    for i in range(20):     # the user's files, named as the tree's would be
        (users / shape.path(i)).parent.mkdir(parents=True, exist_ok=True)
        (users / shape.path(i)).write_text("the user's own file\n")
    os.link(tree_dir / MARKER, users / MARKER)
    before = snapshot(users, content=True)
    r = run_fio(sf_args(users, tree_files=20, tree_fanout=2, tree_depth=1,
                        tree_file_op=tree_file_op, rw=rw, number_ios=10))
    assert_refused(r, f"{users}: {MARKER} {SHARED}", (users, before))
    assert (users / "0" / "f0000000001").read_text() == "the user's own file\n"
    _runs(tree_dir, tree_fanout=2, tree_depth=1)


def test_a_cp_al_backup_is_not_a_tree_until_it_has_its_own_marker(tmp_path, tree_dir):
    """`cp -al T backup`: T runs (its marker records T), the backup is
    refused (the marker is T's), until the refusal's advice gives the backup
    a marker of its own: then both run, and a write into the backup's files,
    still T's too, is refused as any hard-linked file."""
    layout(tree_dir, 20, **LINKED)
    backup = tmp_path / "backup"
    subprocess.run(["cp", "-al", str(tree_dir), str(backup)], check=True)
    before = snapshot(backup, content=True)
    r = run_fio(sf_args(backup, tree_files=20, tree_file_op="read", rw="read", **LINKED))
    assert_refused(r, f"{backup}: {MARKER} {SHARED}", (backup, before))
    _runs(tree_dir, **LINKED)
    _own_marker(r)
    assert os.stat(backup / MARKER).st_nlink == 1 == os.stat(tree_dir / MARKER).st_nlink
    assert not [e for e in os.listdir(backup) if e.startswith(MARKER + ".")]
    _runs(backup, **LINKED)
    _runs(tree_dir, **LINKED)
    r = run_fio(sf_args(backup, tree_files=20, tree_file_op="append", rw="write",
                        number_ios=5, **LINKED))
    assert_refused(r, "hard links")


@pytest.mark.parametrize("links", [1, 2])
def test_an_old_marker_without_its_directory(tmp_path, tree_dir, links):
    """A marker written before markers recorded their directory: with one
    link it is trusted as before; with two nothing says which directory is
    its tree, and it is refused until a copy replaces the link."""
    layout(tree_dir, 20)
    m = tree_dir / MARKER
    text = m.read_text()
    assert f"tree_dir_inode={os.stat(tree_dir).st_ino}\n" in text
    m.write_text(marker_params(m))
    if links == 1:
        _runs(tree_dir)
        return
    os.link(m, tmp_path / "elsewhere")
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="read", rw="read"))
    assert_refused(r, f"{MARKER} {SHARED} (2 links) and, written before", (tree_dir, before))
    _own_marker(r)
    _runs(tree_dir)

@pytest.mark.parametrize("size", [4096, 1 << 40], ids=["padded", "1TB"])
def test_a_marker_grown_past_its_text_is_refused(tree_dir, size):
    """A marker truncated up to 1 TB (sparse: zeros after its text) was
    read to its first 4 KiB and accepted. Anything after the text is not a
    marker's: refused at once (the 1 TB is never read)."""
    layout(tree_dir, 20)
    os.truncate(tree_dir / MARKER, size)
    def files():    # (the marker is not hashed: 1 TB)
        return {p: p.read_bytes() for p in tree_dir.rglob("f*") if p.is_file()}
    before, stat_before = files(), snapshot(tree_dir, content=False)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="append", rw="write",
                        number_ios=10), timeout=60)
    assert_refused(r, f"{MARKER} holds more than a marker's text")
    assert files() == before and snapshot(tree_dir, content=False) == stat_before
