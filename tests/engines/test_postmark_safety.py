"""postmark never removes or overwrites what it did not make.

The marker `.fio-postmark` proves ownership: a regular file with the
engine's head listing the files and directories a run made. Cleanup removes
only what it lists, and only while each entry is still the one the engine
made (same type and inode, one link). Each test snapshots the user's files
(content, inode, mtime) before and after.
"""
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from helpers.fio import PM_ENGINE, run_fio, start_fio_background
from helpers.procs import kill_group
from helpers.trees import snapshot

MARKER = ".fio-postmark"


def pm(loc, **opts):
    args = ["--name=pm", f"--ioengine=external:{PM_ENGINE}", "--pm_report=none",
            f"--pm_location={loc}"]
    return args + [f"--{k}={v}" for k, v in opts.items()]


def errors(r):
    return [l for l in r.stderr.splitlines() if l.startswith("postmark:")]


def assert_refused(r, needle, *dirs_and_snaps):
    """One 'postmark:' line naming @needle, a non-zero exit without a crash,
    and each (directory, snapshot) unchanged."""
    lines = errors(r)
    assert r.rc > 0, "fio must exit non-zero, not crash\n" + r.describe()
    for bad in ("signal", "Assertion", "Segmentation", "core dumped"):
        assert bad not in r.stderr, f"{bad!r} in stderr\n" + r.describe()
    assert len(lines) == 1, "expected a one-line error\n" + r.describe()
    assert needle in lines[0], f"the line does not name {needle!r}\n" + r.describe()
    for d, snap in dirs_and_snaps:
        assert snapshot(d, content=True) == snap, f"the refused run changed {d}"


# ---------------------------------------------------------------------------
# Subdirectories
# ---------------------------------------------------------------------------

def test_users_empty_subdirectories_stay(tmp_path):
    """pm_subdirectories=3 in a location holding a user's empty s0/ and s1/:
    the run uses them and leaves them (the same directories); only s2/,
    which it made, is removed."""
    d = tmp_path / "loc"
    (d / "s0").mkdir(parents=True)
    (d / "s1").mkdir()
    before = snapshot(d, content=True)
    r = run_fio(pm(d, pm_subdirectories=3, pm_number=60, pm_transactions=200)).ok()
    assert r.job("pm")["sync"]["total_ios"] == 200
    assert not errors(r), r.stderr
    assert sorted(os.listdir(d)) == ["s0", "s1"]
    for s in ("s0", "s1"):
        assert os.listdir(d / s) == []
        assert os.stat(d / s).st_ino == before[s][3]


# ---------------------------------------------------------------------------
# The marker
# ---------------------------------------------------------------------------

def fill(fs_dir):
    """Fills the file system of @fs_dir (a test's tmpfs): one file of its
    free space, then small ones until not even a page is left."""
    with open(fs_dir / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 20))
        except OSError:
            pass
    for k in range(64):
        try:
            (fs_dir / f"filler.{k}").write_bytes(b"x" * 4096)
        except OSError:
            break


@pytest.mark.mounts
def test_run_refused_on_a_full_file_system_leaves_no_marker(tmpfs_dir):
    """pm_space_check=0 on a full file system: the marker cannot be written,
    the run is refused in one line, and the location is left as it was (no
    empty marker, which a later run would take for the engine's)."""
    loc = tmpfs_dir / "loc"
    loc.mkdir()
    fill(tmpfs_dir)
    before = snapshot(loc, content=True)
    r = run_fio(pm(loc, pm_space_check=0, pm_number=20, pm_transactions=50))
    assert_refused(r, MARKER, (loc, before))
    assert not (loc / MARKER).exists()


def listed(loc):
    """The entries the marker of @loc lists: [(kind, subdir, name, ino, born_ns)]."""
    data = (Path(loc) / MARKER).read_bytes()[4096:]
    out = []
    for k in range(0, len(data), 64):
        line = data[k:k + 64].decode()
        if line[0] in "fd":
            kind, sub, name, ino, born = line.split()
            out.append((kind, int(sub), int(name), int(ino), int(born)))
    return out


def listed_path(entry):
    kind, sub, name = entry[:3]
    return f"s{sub}" if kind == "d" else f"s{sub}/{name}" if sub >= 0 else str(name)


def killed_run(loc, files=300, **opts):
    """A run of the engine in @loc killed in its transactions, with at
    least @files of its files there."""
    p = start_fio_background(pm(loc, pm_transactions=10_000_000, **opts))
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and p.poll() is None:
            if sum(len(fs) for _, _, fs in os.walk(loc)) > files:
                break
            time.sleep(0.02)
        assert p.poll() is None, "the run ended before it could be killed"
    finally:
        kill_group(p)
    assert (Path(loc) / MARKER).is_file()


def users_mail(d):
    """A user's MH-style mail folder: messages named by numbers."""
    for k in (1, 2, 3):
        (d / str(k)).write_text(f"From: someone\nSubject: message {k}\n\nhello\n")


FAKE_MARKERS = ["empty_left_by_a_refused_run", "directory", "old_format", "other_text",
                "fifo", "symlink_to_a_real_marker", "hard_link_of_a_real_marker"]


@pytest.mark.parametrize("fake", FAKE_MARKERS)
def test_a_marker_must_prove_itself(tmp_path, fake):
    """A .fio-postmark that is not a regular, singly linked file with the
    engine's head is no proof: the user's numbered mail files beside it are
    refused in one line naming the marker, and nothing changes."""
    loc = tmp_path / "mail"
    loc.mkdir()
    marker = loc / MARKER
    if fake.endswith("real_marker"):
        # the engine's own marker, made by a killed run elsewhere
        other = tmp_path / "other"
        other.mkdir()
        killed_run(other, pm_number=50, files=20)
        if fake.startswith("symlink"):
            marker.symlink_to(other / MARKER)
        else:
            os.link(other / MARKER, marker)
    elif fake == "directory":
        marker.mkdir()
    elif fake == "fifo":
        os.mkfifo(marker)
    else:
        marker.write_text({"empty_left_by_a_refused_run": "",
                           "old_format": "fio postmark engine: files named by numbers and "
                                         "s<N>/ directories here are the engine's\n",
                           "other_text": "fio postmark engine marker, format 2\n"}[fake])
    users_mail(loc)
    content = fake != "fifo"          # a FIFO cannot be read for its hash
    before = snapshot(tmp_path, content=content)
    r = run_fio(pm(loc, pm_number=20, pm_transactions=50))
    assert_refused(r, MARKER)
    assert snapshot(tmp_path, content=content) == before


def test_killed_run_entries_must_still_be_the_engines(tmp_path):
    """After a killed run, the next one removes only what the marker lists
    and only while each is what the engine made. A user's numbered file the
    marker does not list, a listed file replaced by a user's (another inode)
    or by a symlink, or hard-linked elsewhere: each refused in one line
    naming it, nothing removed. Then, the user's changes undone, the run
    removes the rest and the location ends empty."""
    loc = tmp_path / "loc"
    loc.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("the user's\n")
    killed_run(loc, pm_subdirectories=3, pm_number=400)
    files = [e for e in listed(loc) if e[0] == "f" and (loc / listed_path(e)).exists()]
    # buffered: stdio's fstat gives each file's inode (all but one being made)
    assert len(files) > 100 and sum(1 for e in files if not e[3]) <= 1, files[:5]
    files = [e for e in files if e[3]]
    victim = loc / listed_path(files[len(files) // 2])
    saved = outside / "saved"

    def refused(needle):
        before = snapshot(tmp_path, content=True)
        r = run_fio(pm(loc, pm_subdirectories=3))
        assert_refused(r, needle, (tmp_path, before))

    for planted in (loc / "424242", loc / "s1" / "900001"):
        planted.write_text("a user's file, named like PostMark's\n")
        refused(f"holds '{planted.relative_to(loc)}', named like PostMark's files but not the engine's")
        planted.unlink()
    # replaced by a user's file: made beside it, then renamed over it
    shutil.copy2(victim, saved)
    (victim.parent / "new").write_text("the user's own\n")
    os.replace(victim.parent / "new", victim)
    refused(f"'{victim.relative_to(loc)}' is in {MARKER} but has another inode")
    os.replace(saved, victim)                       # back, with another inode still
    refused("has another inode")
    victim.unlink()
    # hard-linked from elsewhere, or replaced by a symlink
    other = loc / listed_path(files[len(files) // 3])
    os.link(other, outside / "link")
    refused(f"'{other.relative_to(loc)}' is in {MARKER} but has 2 links")
    (outside / "link").unlink()
    other.unlink()
    other.symlink_to(outside / "keep")
    refused(f"'{other.relative_to(loc)}' is in {MARKER} but is not a regular file")
    other.unlink()

    keep = snapshot(outside, content=True)
    r = run_fio(pm(loc, pm_subdirectories=3)).ok()
    assert "removed" in errors(r)[0] and len(errors(r)) == 1, r.stderr
    assert os.listdir(loc) == []
    assert snapshot(outside, content=True) == keep


@pytest.mark.parametrize("api", ["raw", "io_uring"])
def test_unknown_inode_is_told_by_its_birth(tmp_path, api):
    """Raw and io_uring modes make no fstat: the marker lists files without
    their inode. A listed file replaced by a user's later is told by its
    birth time and refused; the engine's own are removed."""
    loc = tmp_path / "loc"
    loc.mkdir()
    opts = dict(pm_buffering=0) if api == "raw" else dict(pm_io_api="io_uring", iodepth=8)
    killed_run(loc, pm_number=400, **opts)
    files = [e for e in listed(loc) if (loc / listed_path(e)).exists()]
    assert files and not any(e[3] for e in files)
    victim = loc / listed_path(files[0])
    time.sleep(1.2)       # past the slack of a file system clock tick
    victim.unlink()
    victim.write_text("the user's own\n")
    before = snapshot(tmp_path, content=True)
    r = run_fio(pm(loc, **opts))
    assert_refused(r, f"'{victim.name}' is in {MARKER} but was made at another time", (tmp_path, before))
    victim.unlink()
    run_fio(pm(loc, **opts)).ok()
    assert os.listdir(loc) == []


def test_users_subdirectories_are_used_and_left(tmp_path):
    """A user's s1/ holding the user's notes: the run makes its files in it
    and leaves it as it was."""
    d = tmp_path / "loc"
    (d / "s1").mkdir(parents=True)
    (d / "s1" / "notes.txt").write_text("the user's notes\n")
    before = snapshot(d, content=True)
    r = run_fio(pm(d, pm_subdirectories=3, pm_number=60, pm_transactions=200)).ok()
    assert r.job("pm")["sync"]["total_ios"] == 200 and not errors(r), r.stderr
    after = snapshot(d, content=True)
    assert sorted(after) == ["s1", "s1/notes.txt"]
    assert after["s1/notes.txt"] == before["s1/notes.txt"]
    assert os.stat(d / "s1").st_ino == before["s1"][3]


# ---------------------------------------------------------------------------
# Operations by name
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("api", ["sync", "io_uring"])
def test_a_failed_create_leaves_the_users_file_alone(tmp_path, api):
    """A user's file appears, during the run, under a name the engine is
    about to create: the create fails (EEXIST), and the reads, appends and
    the delete PostMark's model then makes of that file fail too (ENOENT)
    without a call on it: the user's file is whole at the end (not appended
    to, not removed)."""
    loc = tmp_path / "loc"
    loc.mkdir()
    opts = dict(pm_io_api="io_uring", iodepth=8) if api == "io_uring" else {}
    # rate_iops: the creation phase lasts seconds, so the file goes in first
    # the run goes on past those errors (fio's lists: read, then write and trim)
    p = start_fio_background(pm(loc, pm_number=3000, pm_transactions=1000, continue_on_error="all",
                                ignore_error="ENOENT,EEXIST:ENOENT", rate_iops=2000, **opts))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (loc / "100").exists():
        time.sleep(0.01)
    users = loc / "2500"
    users.write_text("the user's file, named like one of PostMark's\n")
    before = snapshot(tmp_path, content=True)["loc/2500"]
    try:
        err = p.communicate(timeout=120)[1].decode()
    finally:
        if p.poll() is None:
            kill_group(p)
    assert p.returncode == 0, err
    assert f"postmark: create {users}: File exists" in err, err
    # the model deletes every file it made at the end: this one's too
    assert f"postmark: delete {users}: No such file or directory" in err, err
    assert snapshot(tmp_path, content=True)["loc/2500"] == before
    assert os.listdir(loc) == ["2500"], err


# ---------------------------------------------------------------------------
# Output files
# ---------------------------------------------------------------------------

OUTPUTS = {
    "in_a_missing_directory": lambda t: t / "no" / "such" / "report",
    "a_directory": lambda t: t / "reports",
    "under_a_file": lambda t: t / "notes.txt" / "report",
    "dev_full": lambda t: Path("/dev/full"),
}


@pytest.mark.parametrize("case", sorted(OUTPUTS))
@pytest.mark.parametrize("option", ["pm_report_file", "pm_opstats_file"])
def test_unwritable_output_file_is_refused_at_the_start(tmp_path, option, case):
    """A report the run could only fail to write at its end is refused
    before the run, in one line naming the option and the file, nothing
    made."""
    loc = tmp_path / "loc"
    loc.mkdir()
    (tmp_path / "reports").mkdir()
    (tmp_path / "notes.txt").write_text("the user's notes\n")
    out = OUTPUTS[case](tmp_path)
    before = snapshot(tmp_path, content=True)
    r = run_fio(pm(loc, pm_number=20, pm_transactions=50, **{option: out}) + ["--pm_report=verbose"])
    assert_refused(r, f"{option} {out}", (tmp_path, before))


# An output named as the engine's files in a location (acceptance trial,
# rerun): the marker's name lost the report (the run's cleanup removed it,
# exit 0); a numbered name (or s<N>), in the location or in a user's s<N>
# below it, made a location the next run refuses as not all the engine's.
IN_LOCATION = {
    "the_marker": (".fio-postmark", {}),
    "a_numbered_name": ("5", {}),
    "an_s_name": ("s7", {}),
    "through_a_link_to_the_location": ("LINK/.fio-postmark", {}),
    "a_symlink_beside_to_the_marker": ("ops", {}),
    "a_numbered_name_in_a_users_subdirectory": ("s1/5", {"pm_subdirectories": 2}),
}


@pytest.mark.parametrize("case", sorted(IN_LOCATION))
@pytest.mark.parametrize("option", ["pm_report_file", "pm_opstats_file"])
def test_an_output_named_as_the_engines_files_is_refused(tmp_path, option, case):
    loc = tmp_path / "loc"
    loc.mkdir()
    (loc / "s1").mkdir()
    os.symlink(loc, tmp_path / "LINK")
    rel, extra = IN_LOCATION[case]
    out = (tmp_path / rel) if rel.startswith("LINK") else loc / rel
    if rel == "ops":   # outside the location, a link to where its marker will be
        out = tmp_path / "ops"
        os.symlink(loc / ".fio-postmark", out)
    before = snapshot(tmp_path, content=True)
    r = run_fio(pm(loc, pm_number=20, pm_transactions=50, **extra, **{option: out})
                + ["--pm_report=verbose"])
    assert_refused(r, f"{option} {out} is in pm_location {loc}", (tmp_path, before))


def test_a_report_beside_the_engines_files_is_kept(tmp_path):
    """PostMark's `run FILE` with the location the current directory: a
    report of another name in the location is written, and the next run
    takes the location as before."""
    loc = tmp_path / "loc"
    loc.mkdir()
    for n in (1, 2):
        run_fio(pm(loc, pm_number=20, pm_transactions=50, pm_report_file=loc / "results.txt")
                + ["--pm_report=terse"]).ok()
        assert os.listdir(loc) == ["results.txt"]
    assert len((loc / "results.txt").read_text().splitlines()) == 2   # a line a run


@pytest.mark.mounts
def test_output_file_on_a_read_only_file_system_is_refused_at_the_start(tmp_path, ro_dir):
    loc = tmp_path / "loc"
    loc.mkdir()
    for option in ("pm_report_file", "pm_opstats_file"):
        r = run_fio(pm(loc, **{option: ro_dir / "report"}) + ["--pm_report=verbose"])
        assert_refused(r, f"{option} {ro_dir / 'report'}", (loc, {}))
        assert "report: Read-only file system" in errors(r)[0]


@pytest.mark.mounts
@pytest.mark.parametrize("option", ["pm_report_file", "pm_opstats_file"])
def test_report_that_cannot_be_written_at_the_end_fails_the_job(tmp_path, tmpfs_dir, option):
    """The report's file system fills up during the run: the write at the
    end fails, and says so in one line, and fio exits non-zero (the run's
    figures are not where the user asked for them)."""
    loc = tmp_path / "loc"
    loc.mkdir()
    out = tmpfs_dir / "report"
    p = start_fio_background(pm(loc, pm_number=200, pm_transactions=3000, rate_iops=2000,
                                **{option: out}) + ["--pm_report=verbose"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (loc / MARKER).exists():
        time.sleep(0.01)
    fill(tmpfs_dir)
    try:
        err = p.communicate(timeout=120)[1].decode()
    finally:
        if p.poll() is None:
            kill_group(p)
    lines = [l for l in err.splitlines()       # not the notices (before fio 3.30: no prios)
             if l.startswith("postmark:") and "as PostMark does" not in l
             and "has no per-priority statistics" not in l]
    assert len(lines) == 1 and f"{option} {out}" in lines[0] and \
        "No space left on device" in lines[0], err
    assert p.returncode != 0, err
    assert os.listdir(loc) == []


# ---------------------------------------------------------------------------
# A control character in a value the user gave keeps the error one line
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["pm_location", "pm_report_file", "pm_opstats_file"])
def test_newline_in_a_path_keeps_the_error_one_line(tmp_path, option):
    """A missing path with a newline in it is printed with '?' for the
    newline: the refusal is one line, and no line of stderr is its tail."""
    loc = tmp_path / "loc"
    loc.mkdir()
    bad = tmp_path / "no\nsuch" / "x"
    before = snapshot(tmp_path, content=True)
    r = run_fio(pm(bad if option == "pm_location" else loc,
                   **({} if option == "pm_location" else {option: bad}))
                + ["--pm_report=verbose"])
    assert_refused(r, f"{tmp_path}/no?such/x", (tmp_path, before))
    assert not [l for l in r.stderr.splitlines() if l.startswith("such")], r.describe()


# ---------------------------------------------------------------------------
# Numeric and 0/1 options never wrap
# ---------------------------------------------------------------------------

# fio's FIO_OPT_BOOL took pm_space_check=-1 or pm_buffering=-1 as 1 (any
# number but 0 is true); each option is read at init within its range.
PM_BOOLS = ["pm_buffering", "pm_whole_seconds", "pm_space_check"]
PM_RANGES = {   # option: (lowest, highest)
    "pm_size_low": (1, 2**31 // 2 - 1), "pm_size_high": (1, 2**31 // 2 - 1),
    "pm_number": (1, 2**31 // 2 - 1), "pm_transactions": (1, 2**31 - 2),
    "pm_seed": (1, 2**31 - 1), "pm_read_block": (1, 64 << 20),
    "pm_write_block": (1, 64 << 20), "pm_subdirectories": (0, 1 << 24),
    **{b: (0, 1) for b in PM_BOOLS},
}
PM_OUT = ([(o, "-1") for o in PM_RANGES]
          + [(o, str(hi + 1)) for o, (_, hi) in PM_RANGES.items()]
          + [(o, str(2**32 + 1)) for o in PM_RANGES]
          + [(o, str(lo - 1)) for o, (lo, _) in PM_RANGES.items() if lo > 0]
          + [(b, "-2") for b in ("pm_bias_read", "pm_bias_create")]
          + [(b, "11") for b in ("pm_bias_read", "pm_bias_create")])


@pytest.mark.parametrize("opt,val", PM_OUT, ids=[f"{o}={v}" for o, v in PM_OUT])
def test_a_numeric_option_out_of_its_range_is_refused(tmp_path, opt, val):
    loc = tmp_path / "loc"
    loc.mkdir()
    before = snapshot(tmp_path, content=True)
    r = run_fio(pm(loc, **{"pm_number": 5, "pm_transactions": 10, opt: val}))
    assert_refused(r, f"{opt}={val} is ", (tmp_path, before))


@pytest.mark.parametrize("opt", PM_BOOLS)
def test_a_bare_zero_one_option_is_refused(tmp_path, opt):
    """In a job file a bare `pm_space_check` (no value) is not silently 1."""
    loc = tmp_path / "loc"
    loc.mkdir()
    job = tmp_path / "bare.fio"
    job.write_text(f"[pm]\nioengine=external:{PM_ENGINE}\npm_report=none\npm_location={loc}\n"
                   f"pm_number=5\npm_transactions=10\n{opt}\n")
    assert_refused(run_fio(jobfile=job), f"{opt} needs a value (0..1)", (loc, {}))


@pytest.mark.parametrize("opt", PM_BOOLS)
@pytest.mark.parametrize("val", ["0", "1", ""])
def test_a_zero_one_option_in_range_runs(tmp_path, opt, val):
    """0, 1, and empty (an unset ${VAR}: the default --enghelp shows)."""
    loc = tmp_path / "loc"
    loc.mkdir()
    r = run_fio(pm(loc, pm_number=5, pm_transactions=10, **{opt: val}))
    assert r.rc == 0 and not errors(r), r.describe()
    assert r.job("pm")["write"]["total_ios"] > 0
    assert list(loc.iterdir()) == []


def test_zero_one_options_keep_their_help():
    h = run_fio([f"--enghelp={PM_ENGINE}"], json_output=False)
    for opt in PM_BOOLS:
        assert re.search(rf"^{opt}\s*: \S", h.stdout, re.M), h.stdout
