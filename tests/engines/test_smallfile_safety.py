"""fio tests of the smallfile engine: bad input refused in one line, the
safety of the target (symlinks, foreign files), --enghelp and the default
target under $TMPDIR (docs/smallfile.md). The layout, operations, io_uring
and direct=1 tests are in test_smallfile.py.

Every test runs the real fio with the real engine on real directories and
checks both fio's JSON and what is on disk.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers.fio import ENGINE, MARKER, engine_arg, layout, needs_root, run_fio, sf_args
from helpers.smallfile import SHAPE_OPTS, assert_layout_matches, assert_refused, read_tree
from helpers.trees import Shape, marker_params, read_opstats, snapshot, tree_files


# ---------------------------------------------------------------------------
# 11. Bad input
# ---------------------------------------------------------------------------

BAD_OPTIONS = [
    ("tree_files_zero", dict(tree_files=0), "tree_files"),
    ("tree_files_nan", dict(tree_files="12x"), "tree_files"),
    ("tree_fanout_zero", dict(tree_fanout=0), "tree_fanout"),
    ("uniform_inverted", dict(tree_file_size_dist="uniform:9000:500"), "tree_file_size_dist"),
    ("unknown_dist", dict(tree_file_size_dist="gauss:4k"), "tree_file_size_dist"),
    ("hist_missing", dict(tree_file_size_dist="hist:/nonexistent/sizes.hist"),
     "/nonexistent/sizes.hist"),
    ("unknown_file_op", dict(tree_file_op="frobnicate"), "tree_file_op"),
    ("layout_in_mix", dict(tree_file_op="layout:50,read:50"), "tree_file_op"),
    ("deliver_without_maildir", dict(tree_file_op="read:50,deliver:50", rw="randread"),
     "tree_maildir"),
    ("bad_content", dict(tree_file_content="compressible:150"), "tree_file_content"),
    ("bad_append_size", dict(tree_file_op="append", tree_append_size="uniform:10:1"), "tree_append_size"),
    ("probe_limit_zero", dict(tree_probe_limit=0), "tree_probe_limit"),
    ("size_given", dict(size="1m"), "size="),
    ("io_size_given", dict(io_size="1m"), "io_size="),
    ("bs_two_sizes", dict(bs="4k,8k"), "bs"),
    ("bs_range", dict(bsrange="4k-8k"), "bs"),
]


@pytest.mark.parametrize("case,opts,needle", BAD_OPTIONS, ids=[c[0] for c in BAD_OPTIONS])
@pytest.mark.parametrize("target", ["empty", "laid_out"])
def test_bad_option_refused(tree_dir, case, opts, needle, target):
    base = dict(tree_files=200, tree_fanout=4, tree_depth=2, tree_file_op="layout", rw="write")
    if target == "laid_out":
        layout(tree_dir, 200, tree_fanout=4, tree_depth=2)
    before = snapshot(tree_dir, content=True)
    base.update(opts)
    r = run_fio(sf_args(tree_dir, **base))
    assert_refused(r, needle, (tree_dir, before))


def test_hist_malformed_line_names_line(tree_dir, tmp_path):
    hist = tmp_path / "bad.hist"
    hist.write_text("# comment\n1000 5\n2000 3000 1 9\n4000 1\n")
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_file_op="layout", rw="write",
                        tree_file_size_dist=f"hist:{hist}"))
    assert_refused(r, "line 3", (tree_dir, before))
    assert any(str(hist) in l for l in r.smallfile_lines()), "message must name the file"


@pytest.mark.parametrize("text,line", [("1000 abc\n", 1), ("\n\n-5 1\n", 3),
                                       ("100 200 -1\n", 1), ("500 100 1\n", 1)])
def test_hist_bad_values(tree_dir, tmp_path, text, line):
    hist = tmp_path / "bad.hist"
    hist.write_text(text)
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_file_op="layout", rw="write",
                        tree_file_size_dist=f"hist:{hist}"))
    assert_refused(r, f"line {line}", (tree_dir, before))


def test_hist_all_zero_weights(tree_dir, tmp_path):
    hist = tmp_path / "zero.hist"
    hist.write_text("1000 0\n2000 0\n")
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_file_op="layout", rw="write",
                        tree_file_size_dist=f"hist:{hist}"))
    assert_refused(r, "tree_file_size_dist", (tree_dir, before))


def test_hist_unreadable_directory(tree_dir, tmp_path):
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_file_op="layout", rw="write",
                        tree_file_size_dist=f"hist:{tmp_path}"))
    assert_refused(r, str(tmp_path), (tree_dir, before))


def test_tree_dir_missing(tmp_path):
    missing = tmp_path / "does-not-exist"
    r = run_fio(sf_args(missing, tree_files=100, tree_file_op="layout", rw="write"))
    assert_refused(r, str(missing))
    assert not missing.exists(), "the engine created a missing tree_dir"


def test_tree_dir_is_regular_file(tmp_path):
    f = tmp_path / "plainfile"
    f.write_bytes(b"user data\n")
    before = snapshot(f, content=True)
    r = run_fio(sf_args(f, tree_files=100, tree_file_op="layout", rw="write"))
    assert_refused(r, str(f), (f, before))


@needs_root
def test_tree_dir_read_only(ro_dir):
    before = snapshot(ro_dir, content=True)
    r = run_fio(sf_args(ro_dir, tree_files=100, tree_file_op="layout", rw="write"))
    assert_refused(r, str(ro_dir), (ro_dir, before))
    assert any("read-only" in l for l in r.smallfile_lines()), r.describe()


def test_tree_dir_not_writable(tree_dir, tmp_path):
    """A directory we may not write (mode 0555; root is exempt from modes, so use the
    immutable attribute when running as root, else plain permissions)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    if os.geteuid() == 0:
        r0 = subprocess.run(["chattr", "+i", str(locked)], capture_output=True, text=True)
        if r0.returncode != 0:
            pytest.skip(f"chattr +i unsupported here: {r0.stderr.strip()}")
    else:
        locked.chmod(0o555)
    try:
        before = snapshot(locked, content=True)
        r = run_fio(sf_args(locked, tree_files=100, tree_file_op="layout", rw="write"))
        assert_refused(r, str(locked), (locked, before))
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(locked)])
        locked.chmod(0o755)


@pytest.mark.parametrize("tree_file_op", ["layout", "read", "create", "delete"])
def test_foreign_directory_untouched(tmp_path, tree_file_op):
    d = tmp_path / "foreign"
    d.mkdir()
    (d / "thesis.tex").write_text("precious\n")
    (d / "sub").mkdir()
    (d / "sub" / "data.bin").write_bytes(os.urandom(5000))
    before = snapshot(d, content=True)
    r = run_fio(sf_args(d, tree_files=50, tree_fanout=2, tree_depth=1, tree_file_op=tree_file_op,
                        rw="write"))
    assert_refused(r, str(d), (d, before))
    assert any("not empty" in l or "refus" in l for l in r.smallfile_lines()), r.describe()


def test_foreign_marker_refused(tree_dir):
    (tree_dir / MARKER).write_text("not a smallfile marker\n")
    (tree_dir / "x").write_text("user file\n")
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=50, tree_file_op="layout", rw="write"))
    assert_refused(r, MARKER, (tree_dir, before))


@pytest.mark.parametrize("changed,needle", [
    (dict(tree_files=300), "tree_files"),
    (dict(tree_fanout=8), "tree_fanout"),
    (dict(tree_depth=1), "tree_depth"),
    (dict(tree_file_size_dist="fixed:8k"), "file_size_dist"),
    (dict(tree_file_content="zero"), "file_content"),
    (dict(tree_seed=5), "tree_seed"),
    (dict(tree_maildir=1), "tree_maildir"),
])
@pytest.mark.parametrize("tree_file_op", ["layout", "read"])
def test_tree_with_other_parameters_refused(tree_dir, changed, needle, tree_file_op):
    layout(tree_dir, 200, tree_fanout=4, tree_depth=2, tree_file_size_dist="fixed:4k")
    before = snapshot(tree_dir, content=True)
    opts = dict(tree_files=200, tree_fanout=4, tree_depth=2, tree_file_size_dist="fixed:4k")
    opts.update(changed)
    r = run_fio(sf_args(tree_dir, tree_file_op=tree_file_op, rw="write", **opts))
    assert_refused(r, needle, (tree_dir, before))


def test_read_job_on_never_laid_out_dir(tree_dir):
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_file_op="read", rw="randread"))
    assert_refused(r, str(tree_dir), (tree_dir, {}))
    assert any("layout" in l for l in r.smallfile_lines()), \
        "message must say to run a layout first\n" + r.describe()


@pytest.mark.parametrize("tree_file_op", ["stat", "append", "delete", "read:50,stat:50"])
def test_other_jobs_on_never_laid_out_dir(tree_dir, tree_file_op):
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_file_op=tree_file_op, rw="randread"))
    assert_refused(r, str(tree_dir), (tree_dir, {}))


def test_bad_input_within_job_file(tree_dir, tmp_path):
    """A refused job among others: fio still exits non-zero and the engine's error names it."""
    job = tmp_path / "bad.fio"
    job.write_text(f"[global]\nioengine=external:{ENGINE}\ntree_dir={tree_dir}\n"
                   "tree_files=100\n\n[a]\ntree_file_op=layout\nrw=write\n\n"
                   "[b]\nstonewall\ntree_file_op=read\nrw=read\ntree_fanout=0\n")
    r = run_fio(jobfile=job)
    assert r.rc != 0
    assert any("tree_fanout" in l for l in r.smallfile_lines()), r.describe()


# ---------------------------------------------------------------------------
# 12. Safety
# ---------------------------------------------------------------------------

@pytest.fixture
def planted(tree_dir, tmp_path):
    """A tree whose file 5 is a symlink to a file outside the tree."""
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    victim = outside_dir / "victim.txt"
    victim.write_bytes(b"V" * 12345)
    layout(tree_dir, 40, tree_fanout=2, tree_depth=1, tree_file_size_dist="fixed:4k")
    link = tree_dir / Shape(40, 2, 1).path(5)
    link.unlink()
    link.symlink_to(victim)
    return tree_dir, victim, link, snapshot(outside_dir, content=True), outside_dir


OPTS40 = dict(tree_files=40, tree_fanout=2, tree_depth=1, tree_file_size_dist="fixed:4k")


@pytest.mark.parametrize("tree_file_op,rw", [
    ("read", "read"), ("stat", "read"), ("append", "write"), ("create", "write"),
    ("delete", "read"), ("layout", "write"),
])
@pytest.mark.parametrize("tree_io_api", ["sync", "io_uring"])
def test_symlink_in_tree_not_followed(planted, tree_file_op, rw, tree_io_api):
    tree, victim, link, outside_before, outside_dir = planted
    r = run_fio(sf_args(tree, tree_file_op=tree_file_op, rw=rw, tree_io_api=tree_io_api, **OPTS40))
    assert r.rc >= 0
    assert victim.exists(), f"{tree_file_op} removed the file a symlink points to"
    assert snapshot(outside_dir, content=True) == outside_before, \
        f"{tree_file_op} changed a file outside the tree through a symlink"
    if r.json is not None and r.jobs:
        j = r.jobs[0]
        assert j["read"]["io_bytes"] % 4096 == 0, \
            f"{tree_file_op} read the 12345-byte file behind the symlink"
    if tree_file_op != "delete":
        assert link.is_symlink(), f"{tree_file_op} replaced the planted symlink"


def test_unlink_option_removes_nothing(tree_dir):
    layout(tree_dir, 200, **SHAPE_OPTS)
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=200, tree_file_op="read", rw="read", unlink=1,
                        **SHAPE_OPTS)).ok()
    assert r.job()["read"]["total_ios"] == 200
    assert snapshot(tree_dir, content=True) == before, "fio's unlink=1 removed or changed files"
    r = layout(tree_dir, 200, unlink=1, **SHAPE_OPTS)
    assert snapshot(tree_dir, content=True) == before


def test_writes_stay_below_tree_dir(tree_dir, tmp_path):
    """Nothing appears next to tree_dir (e.g. staging files, marker temps)."""
    parent_before = sorted(os.listdir(tmp_path))
    layout(tree_dir, 100, tree_maildir=1, tree_fanout=4, tree_depth=1)
    run_fio(sf_args(tree_dir, tree_files=100, tree_maildir=1, tree_fanout=4, tree_depth=1,
                    tree_file_op="read:30,deliver:40,delete:30", rw="randread",
                    number_ios=200)).ok()
    assert sorted(os.listdir(tmp_path)) == parent_before


# ---------------------------------------------------------------------------
# 13. --enghelp
# ---------------------------------------------------------------------------

ENGINE_OPTIONS = ["tree_dir", "tree_files", "tree_fanout", "tree_depth", "tree_files_per_dir",
                  "tree_maildir", "tree_file_size_dist", "tree_file_content", "tree_seed", "tree_file_op",
                  "tree_append_size", "tree_file_sync", "tree_dir_sync", "tree_io_api", "tree_probe_limit",
                  "tree_opstats_file"]


def test_enghelp_lists_options():
    r = run_fio([f"--enghelp={ENGINE}"], json_output=False)
    assert r.rc == 0, r.describe()
    listed = set(re.findall(r"^\s*([a-z_]+)\s*:", r.stdout, re.M))
    missing = [o for o in ENGINE_OPTIONS if o not in listed]
    assert not missing, f"--enghelp does not list {missing}\n{r.stdout}"


def test_enghelp_option_details():
    r = run_fio([f"--enghelp={ENGINE},tree_file_sync"], json_output=False)
    assert r.rc == 0, r.describe()
    for v in ("none", "fsync", "fdatasync"):
        assert v in r.stdout, f"tree_file_sync help lacks {v}\n{r.stdout}"


# The options' names before the tree_ prefix: fio option aliases, accepted
# until the next release (docs/smallfile.md, "Old option names").
OLD_NAMES = {"files_per_dir": "tree_files_per_dir", "file_drop_cache": "tree_drop_cache",
             "file_size_dist": "tree_file_size_dist", "file_content": "tree_file_content",
             "file_op": "tree_file_op", "append_size": "tree_append_size",
             "file_sync": "tree_file_sync", "dir_sync": "tree_dir_sync",
             "io_api": "tree_io_api", "probe_limit": "tree_probe_limit",
             "opstats_file": "tree_opstats_file"}


def _alias_runs(tmp_path, names):
    """A layout, then a mix, with every option but tree_* spelled by @names
    (old -> the name to use): what is on disk and what the jobs counted."""
    root = tmp_path / ("old" if names is None else "new")
    root.mkdir()
    ops = root / "ops.jsonl"
    tree = root / "tree"
    tree.mkdir()

    def opts(**kw):
        return {(k if names is None else names[k]): v for k, v in kw.items()}

    shape = dict(tree_files=120, tree_fanout=4, tree_maildir=1, tree_seed=9)
    r1 = run_fio(sf_args(tree, name="lay", rw="write", **shape, **opts(
        files_per_dir=10, file_size_dist="uniform:100:9000", file_content="compressible:50",
        file_op="layout", file_sync="fdatasync", dir_sync=1, opstats_file=ops))).ok()
    disk = snapshot(tree, content=True)
    # iodepth=1: one operation at a time, so that the two runs are the same to the byte
    r2 = run_fio(sf_args(tree, name="mix", rw="randread", number_ios=300, randrepeat=1,
                         iodepth=1, **shape, **opts(
        files_per_dir=10, file_size_dist="uniform:100:9000", file_content="compressible:50",
        file_op="read:40,stat:20,append:20,deliver:10,delete:10", append_size="fixed:512",
        file_sync="fsync", dir_sync=1, io_api="io_uring", probe_limit=8, file_drop_cache=1,
        opstats_file=ops))).ok()
    sizes = tree_files(tree)
    lines = read_opstats(ops)
    for l in lines:
        l.pop("tree_dir")
        for o in l["ops"].values():
            for k in [k for k in o if k.startswith("lat_")]:
                del o[k]
    # the marker as its parameters: the inode of its directory differs
    marker = marker_params(tree / MARKER)
    return (r1.job()["write"]["total_ios"], r2.job()["read"]["total_ios"],
            r2.job()["write"]["total_ios"], r2.job()["trim"]["total_ios"],
            {k: v[:2] + v[4:] for k, v in disk.items() if not k.startswith("ops") and k != MARKER},
            sizes, lines, marker)


def test_old_option_names_still_work_as_aliases(tmp_path):
    """Every old name gives the same run as its tree_ name: the same files
    with the same contents after the layout, the same operations and sizes
    after a mix (io_uring, probes, appends, deliveries, drop_cache), the
    same opstats lines, which also prove that the old opstats_file and
    file_drop_cache took effect."""
    old = _alias_runs(tmp_path, None)
    new = _alias_runs(tmp_path, OLD_NAMES)
    assert old[4] and old[5], "the layout made no files"
    assert [l["job"] for l in old[6]] == ["lay", "mix"] and old[6][1]["file_drop_cache"] == 1
    assert old[6][1]["ops"]["deliver"]["ops"] > 0 and old[6][1]["ops"]["append"]["ops"] > 0
    assert old == new


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_enghelp_names_the_old_name_as_alias(old):
    r = run_fio([f"--enghelp={ENGINE},{old}"], json_output=False)
    assert r.rc == 0, r.describe()
    assert re.search(rf"^\s*{OLD_NAMES[old]}\s*:", r.stdout, re.M), r.stdout
    assert re.search(rf"^\s*alias\s*:\s*{old}\s*$", r.stdout, re.M), r.stdout


# ---------------------------------------------------------------------------
# 15. Default target under $TMPDIR
# ---------------------------------------------------------------------------

def test_default_tree_dir_under_tmpdir(tmp_path):
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    n = 300
    common = [engine_arg(), f"--tree_files={n}", "--tree_fanout=4", "--tree_depth=2",
                                  "--tree_file_size_dist=uniform:10:5000"]
    args = common + ["--name=layout", "--tree_file_op=layout", "--rw=write",
                     "--name=read", "--stonewall", "--tree_file_op=read", "--rw=read"]
    r = run_fio(args, env={"TMPDIR": str(tmpdir)}).ok()
    base = tmpdir / f"fio-smallfile-{os.getuid()}"
    assert base.is_dir(), f"no {base}: {list(tmpdir.iterdir())}"
    trees = list(base.iterdir())
    assert len(trees) == 1, f"expected one tree under {base}: {trees}"
    root = trees[0]
    assert (root / MARKER).is_file()
    on_disk = assert_layout_matches(root, Shape(n, 4, 2))
    assert r.job("layout")["write"]["total_ios"] == n
    assert r.job("read")["read"]["total_ios"] == n
    assert r.job("read")["read"]["io_bytes"] == sum(on_disk.values())
    # same parameters -> same tree (nothing rewritten); other parameters -> another tree
    r = run_fio(args, env={"TMPDIR": str(tmpdir)}).ok()
    assert r.job("layout")["write"]["io_bytes"] == 0
    run_fio(common + ["--tree_seed=9", "--name=layout", "--tree_file_op=layout", "--rw=write"],
            env={"TMPDIR": str(tmpdir)}).ok()
    assert len(list(base.iterdir())) == 2, "other parameters must get their own directory"


def test_empty_tree_dir_and_tree_files_mean_default(tmp_path):
    """tree_dir= and tree_files= empty (an unset ${VAR}) mean the defaults."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    job = tmp_path / "env.fio"
    job.write_text(f"[layout]\nioengine=external:{ENGINE}\ntree_dir=${{SF_UNSET_DIR}}\n"
                   "tree_files=${SF_UNSET_FILES}\ntree_fanout=4\ntree_depth=1\n"
                   "tree_file_size_dist=fixed:0\ntree_file_op=layout\nrw=write\n")
    env = {"TMPDIR": str(tmpdir), "SF_UNSET_DIR": "", "SF_UNSET_FILES": ""}
    r = run_fio(jobfile=job, env=env).ok()
    assert r.job()["write"]["total_ios"] == 10000
    roots = list((tmpdir / f"fio-smallfile-{os.getuid()}").iterdir())
    assert len(roots) == 1 and len(tree_files(roots[0])) == 10000


# ---------------------------------------------------------------------------
# More documented behaviour
# ---------------------------------------------------------------------------

def test_equivalent_size_spellings_share_a_tree(tree_dir):
    """"4k" and "fixed:4096" describe the same tree (canonical marker text)."""
    layout(tree_dir, 100, tree_fanout=4, tree_depth=1, tree_file_size_dist="4k")
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_fanout=4, tree_depth=1,
                        tree_file_size_dist="fixed:4096", tree_file_op="read", rw="read")).ok()
    assert r.job()["read"]["io_bytes"] == 100 * 4096


def test_hist_identified_by_content_not_path(tree_dir, tmp_path):
    h1, h2, h3 = tmp_path / "a.hist", tmp_path / "b.hist", tmp_path / "c.hist"
    h1.write_text("1000 1\n3000 1\n")
    h2.write_text("# same bins, other file\n1000 1\n\n3000 1\n")
    h3.write_text("1000 1\n3001 1\n")
    layout(tree_dir, 100, tree_fanout=4, tree_depth=1, tree_file_size_dist=f"hist:{h1}")
    run_fio(sf_args(tree_dir, tree_files=100, tree_fanout=4, tree_depth=1,
                    tree_file_size_dist=f"hist:{h2}", tree_file_op="read", rw="read")).ok()
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_fanout=4, tree_depth=1,
                        tree_file_size_dist=f"hist:{h3}", tree_file_op="read", rw="read"))
    assert_refused(r, "file_size_dist", (tree_dir, before))


def test_tree_files_empty_means_default(tree_dir):
    layout(tree_dir, 10000, tree_fanout=8, tree_depth=1, tree_file_size_dist="fixed:0")
    r = run_fio(sf_args(tree_dir, tree_files="", tree_fanout=8, tree_depth=1,
                        tree_file_size_dist="fixed:0", tree_file_op="stat", rw="randread",
                        number_ios=100)).ok()
    assert r.job()["read"]["total_ios"] == 100


def test_content_independent_of_bs(tree_dir, other_tree_dir):
    params = dict(tree_fanout=2, tree_depth=1, tree_file_size_dist="uniform:1000:200000")
    layout(tree_dir, 50, bs="4k", **params)
    layout(other_tree_dir, 50, bs="64k", **params)
    a, b = read_tree(tree_dir), read_tree(other_tree_dir)
    assert all(a[p] == b[p] for p in a), "file content depends on bs"


def test_zero_size_files(tree_dir):
    for api in ("sync", "io_uring"):
        r = layout(tree_dir, 100, tree_fanout=4, tree_depth=1, tree_file_size_dist="fixed:0",
                   tree_io_api=api)
        assert r.job()["write"]["io_bytes"] == 0
        assert set(tree_files(tree_dir).values()) == {0} and len(tree_files(tree_dir)) == 100
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_fanout=4, tree_depth=1,
                        tree_file_size_dist="fixed:0", tree_file_op="read", rw="read")).ok()
    assert r.job()["read"]["total_ios"] == 100 and r.job()["read"]["io_bytes"] == 0


def test_time_based_runs_for_runtime(tree_dir):
    layout(tree_dir, 100, tree_fanout=4, tree_depth=1, tree_file_size_dist="fixed:1k")
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_fanout=4, tree_depth=1,
                        tree_file_size_dist="fixed:1k", tree_file_op="read", rw="randread",
                        time_based=1, runtime=1)).ok()
    j = r.job()
    assert 900 <= j["job_runtime"] <= 3000, f"job_runtime {j['job_runtime']} ms for runtime=1"
    assert j["read"]["total_ios"] > 100, "a time_based job goes on past one pass"
    assert j["read"]["io_bytes"] == 1024 * j["read"]["total_ios"]


def test_loops_random_reads_every_file_each_loop(tree_dir):
    layout(tree_dir, 200, **SHAPE_OPTS)
    total = sum(tree_files(tree_dir).values())
    r = run_fio(sf_args(tree_dir, tree_files=200, tree_file_op="read", rw="randread", loops=3,
                        **SHAPE_OPTS)).ok()
    assert r.job()["read"]["total_ios"] == 600 and r.job()["read"]["io_bytes"] == 3 * total


def test_numjobs_non_layout_each_clone_does_number_ios(tree_dir):
    layout(tree_dir, 200, **SHAPE_OPTS)
    r = run_fio(sf_args(tree_dir, tree_files=200, tree_file_op="stat", rw="randread",
                        number_ios=70, numjobs=3, **SHAPE_OPTS)).ok()
    assert [j["read"]["total_ios"] for j in r.jobs] == [70, 70, 70]


def test_mix_occupancy_settles_near_one_minus_x_over_d(tree_dir, tmp_path):
    """docs: deliveries at rate d, deletes at rate x: occupancy settles near 1 - x/d."""
    n = 400
    opstats = tmp_path / "ops.jsonl"
    opts = dict(tree_files=n, tree_maildir=1, tree_fanout=4, tree_depth=2,
                tree_file_size_dist="fixed:256")
    layout(tree_dir, n, tree_maildir=1, tree_fanout=4, tree_depth=2, tree_file_size_dist="fixed:256")
    r = run_fio(sf_args(tree_dir, tree_file_op="read:20,deliver:50,delete:20", rw="randread",
                        number_ios=5000, tree_opstats_file=opstats, **opts)).ok()
    frac = len(tree_files(tree_dir)) / n
    assert 0.45 < frac < 0.75, f"occupancy {frac:.2f}, docs predict 1 - 20/50 = 0.60"
    ops = read_opstats(opstats)[0]["ops"]
    assert ops["read"]["probes"] > 0 and ops["delete"]["probes"] > 0, \
        f"reads/deletes of absent slots must probe: {ops}"
    assert ops["read"]["errors"] == 0 and ops["delete"]["errors"] == 0
    j = r.job()
    assert j["read"]["io_bytes"] == 256 * j["read"]["total_ios"], "a probed read read a file"


def test_delete_until_empty_fails_cleanly(tree_dir):
    layout(tree_dir, 30, tree_fanout=2, tree_depth=1)
    r = run_fio(sf_args(tree_dir, tree_files=30, tree_fanout=2, tree_depth=1,
                        tree_file_op="delete", rw="randread", number_ios=40, tree_probe_limit=20))
    assert r.rc != 0, "deleting more files than exist must fail"
    assert any("delete" in l and "existing" in l for l in r.smallfile_lines()), r.describe()
    assert tree_files(tree_dir) == {} and (tree_dir / MARKER).is_file()


def test_numjobs_more_than_files_refused(tree_dir):
    r = run_fio(sf_args(tree_dir, tree_files=4, tree_file_op="layout", rw="write", numjobs=6))
    assert r.rc != 0
    assert any("numjobs" in l for l in r.smallfile_lines()), r.describe()


def test_numjobs_more_than_files_said_once_by_threads(tmp_path):
    """Clones run as threads (--thread), setting up at once
    (create_serialize=0), share the engine's statics: the refusal is said
    once for the run, and the check that the engine runs in the fio it was
    built for, which every clone asks at once, says nothing."""
    args = ["--thread", "--create_serialize=0"]
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        args += sf_args(tmp_path / name, name=name, tree_files=4, tree_file_op="layout",
                        rw="write", numjobs=6)
    r = run_fio(args)
    assert r.rc != 0
    said = [l for l in r.smallfile_lines() if "exceeds tree_files" in l]
    assert said == ["smallfile: numjobs=6 exceeds tree_files=4"], r.describe()
    assert "built for" not in r.stderr, r.describe()


def test_threads_laying_out_one_tree_at_once_all_succeed(tmp_path):
    """Clones run as threads (--thread) that set up at once
    (create_serialize=0) share one process id: the marker's private name
    while it is written was NAME.PID, so the second clone's create failed
    (EEXIST), it took that for the marker being there, read it before the
    first had put it in place, and the job ended with "cannot read
    .fio-smallfile-tree: No such file or directory" (3 to 6 runs in 6)."""
    for attempt in range(6):
        tree = tmp_path / f"t{attempt}"
        tree.mkdir()
        r = run_fio(["--thread", "--create_serialize=0",
                     *sf_args(tree, tree_files=2000, tree_file_op="layout", rw="write",
                              numjobs=4)])
        r.ok()
        assert len(tree_files(tree)) == 2000 and (tree / MARKER).is_file()
        assert sorted(p.name for p in tree.iterdir() if p.name.startswith(MARKER)) == [MARKER]


@pytest.mark.parametrize("opts,needle", [(dict(nrfiles=2), "nrfiles"),
                                         (dict(verify="md5"), "verify")])
def test_unsupported_fio_options_refused(tree_dir, opts, needle):
    before = snapshot(tree_dir, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_file_op="layout", rw="write", **opts))
    assert_refused(r, needle, (tree_dir, before))


@pytest.mark.parametrize("name,dirname", [('mail"1', "plain"), ("plain", 'dir"quote'),
                                          ("back\\slash", "plain")])
def test_opstats_line_is_valid_json_for_any_names(tmp_path, name, dirname):
    tree = tmp_path / dirname
    tree.mkdir()
    opstats = tmp_path / "ops.jsonl"
    run_fio(sf_args(tree, name=name, tree_files=20, tree_file_op="layout", rw="write",
                    tree_opstats_file=opstats)).ok()
    lines = read_opstats(opstats)   # json.loads of every line
    assert lines[0]["job"] == name and lines[0]["tree_dir"] == str(tree)


@pytest.mark.parametrize("tree_io_api", ["sync", "io_uring"])
@pytest.mark.parametrize("tree_file_op,rw", [("layout", "write"), ("append", "write"),
                                        ("delete", "read"), ("read", "read"),
                                        ("stat", "read")])
def test_symlinked_directory_in_tree_not_followed(tree_dir, tmp_path, tree_file_op, rw, tree_io_api):
    """docs (Safety): the engine only writes below tree_dir and only deletes or overwrites
    files of its own tree. A leaf directory replaced by a symlink to a user's directory
    holding a file of the same name as a tree file must not lead there."""
    shape = Shape(20, 2, 1)
    layout(tree_dir, 20, tree_fanout=2, tree_depth=1)
    outside = tmp_path / "users-dir"
    outside.mkdir()
    victim = outside / shape.name(10)            # file 10 lives in leaf "1"
    victim.write_bytes(b"precious user data\n")
    for p in (tree_dir / "1").iterdir():
        p.unlink()
    (tree_dir / "1").rmdir()
    (tree_dir / "1").symlink_to(outside)
    before = snapshot(outside, content=True)
    r = run_fio(sf_args(tree_dir, tree_files=20, tree_fanout=2, tree_depth=1, tree_file_op=tree_file_op,
                        rw=rw, tree_io_api=tree_io_api, iodepth=4))
    if tree_file_op in ("read", "stat"):
        # reading through the symlink would report the user's file as a tree file
        assert r.rc != 0 and "Too many levels of symbolic links" in r.stderr, r.stderr
    assert victim.exists(), f"{tree_file_op} deleted a file outside tree_dir through a dir symlink"
    assert snapshot(outside, content=True) == before, \
        f"{tree_file_op} wrote outside tree_dir through a directory symlink: {sorted(os.listdir(outside))}"


@needs_root
@pytest.mark.parametrize("tree_io_api", ["sync", "io_uring"])
def test_out_of_space_is_a_clear_error(tmpfs_dir, tree_io_api):
    """A 64 MiB tmpfs cannot hold 1200 files of 64 KiB: a clear error naming the file."""
    tree = tmpfs_dir / "t"
    tree.mkdir()
    # (tree_space_check=0: the room is checked first otherwise, as below)
    r = run_fio(sf_args(tree, tree_files=1200, tree_fanout=4, tree_depth=1,
                        tree_file_size_dist="fixed:64k", tree_file_op="layout", rw="write",
                        tree_io_api=tree_io_api, iodepth=4, tree_space_check=0))
    assert r.rc > 0, "layout on a full file system must fail\n" + r.describe()
    lines = r.smallfile_lines()
    assert lines and all(str(tree) in l and "No space left" in l for l in lines), r.describe()
    assert len(lines) <= 4, "one error per failed in-flight operation at most\n" + r.describe()
    assert 0 < len(tree_files(tree)) < 1200
    assert r.json is not None and r.jobs[0]["error"] != 0


def lost_found_state(root):
    st = (root / "lost+found").stat()
    return (st.st_ino, st.st_mtime_ns, st.st_mode, sorted(os.listdir(root / "lost+found")))


def test_fresh_file_system_root_is_an_empty_target(fresh_ext4, tmp_path):
    """A new disk's mount point holds mkfs's empty lost+found: it counts as
    empty (SMALLFILE_DIR=/mnt/newdisk works), and is never touched."""
    before = lost_found_state(fresh_ext4)
    res = layout(fresh_ext4, 200)
    assert res.job()["write"]["total_ios"] == 200
    assert (fresh_ext4 / MARKER).is_file()
    run_fio(sf_args(fresh_ext4, name="read", tree_files=200, tree_file_op="read",
                    rw="randread", number_ios=300)).ok()
    assert lost_found_state(fresh_ext4) == before
    # not the empty lost+found of a file system's root: refused as before
    (fresh_ext4 / MARKER).unlink()
    plain = tmp_path / "plain"
    (plain / "lost+found").mkdir(parents=True)
    for d in (plain,):
        res = run_fio(sf_args(d, name="layout", tree_files=10, tree_file_op="layout", rw="write"))
        assert res.rc != 0 and "is not empty and holds no smallfile tree" in res.stderr
        assert sorted(os.listdir(d)) == ["lost+found"]


def test_fresh_file_system_with_a_used_lost_found_is_refused(fresh_ext4):
    """fsck's lost+found with something in it is data: the directory is not empty."""
    (fresh_ext4 / "lost+found" / "#12").write_text("recovered\n")
    res = run_fio(sf_args(fresh_ext4, name="layout", tree_files=10, tree_file_op="layout", rw="write"))
    assert res.rc != 0 and "is not empty and holds no smallfile tree" in res.stderr
    assert sorted(os.listdir(fresh_ext4)) == ["lost+found"]
    assert os.listdir(fresh_ext4 / "lost+found") == ["#12"]


def test_layout_that_does_not_fit_is_refused_before_writing(fresh_ext4):
    """The tree's bytes (files in whole blocks, directories) are checked
    against the free space before anything is written: one line with need
    and have, nothing created. A tree that fits is laid out."""
    before = sorted(os.listdir(fresh_ext4))
    st = os.statvfs(fresh_ext4)
    free = st.f_bavail * st.f_frsize  # df's Avail
    n = free // 16384 + 200          # 16 KiB files: ~3 MiB more than the disk has
    res = run_fio(sf_args(fresh_ext4, name="layout", tree_files=n, tree_file_op="layout",
                          rw="write", tree_file_size_dist="fixed:16k", tree_fanout=8, tree_depth=1))
    assert res.rc != 0
    lines = res.smallfile_lines()
    assert len(lines) == 1, res.stderr
    m = re.match(rf"smallfile: tree_dir {re.escape(str(fresh_ext4))}: the tree needs "
                 r"[\d.]+ MB \((\d+) bytes\) for (\d+) files in 8 directories, the file system "
                 r"has [\d.]+ MB \((\d+) bytes\) free; ", lines[0])
    assert m, lines
    need, files, have = map(int, m.groups())
    assert files == n and need >= n * 16384 and have == free
    assert sorted(os.listdir(fresh_ext4)) == before
    # half of it fits, and is laid out whole
    res = layout(fresh_ext4, n // 2, tree_file_size_dist="fixed:16k", tree_fanout=8, tree_depth=1)
    assert res.job()["write"]["total_ios"] == n // 2


def test_layout_with_too_few_inodes_is_refused(tmp_path):
    """An ext4 made with few inodes: the tree's files plus directories are
    checked against the free inodes before anything is written."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount an ext4 image")
    img = tmp_path / "few-inodes.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-N", "256", str(img)], check=True)
    d = tmp_path / "mnt"
    d.mkdir()
    subprocess.run(["mount", "-o", "loop", str(img), str(d)], check=True)
    try:
        free = os.statvfs(d).f_favail
        res = run_fio(sf_args(d, name="layout", tree_files=free, tree_file_op="layout", rw="write",
                              tree_file_size_dist="fixed:1k", tree_fanout=4, tree_depth=2))
        assert res.rc != 0
        lines = res.smallfile_lines()
        assert lines == [f"smallfile: tree_dir {d}: the tree needs {free + 20} inodes ({free} "
                         f"files, 20 directories), the file system has {free} free; lay out "
                         "fewer files or make the file system with more inodes "
                         "(mkfs.ext4 -N, -i)"], res.stderr
        assert sorted(os.listdir(d)) == ["lost+found"]
        layout(d, free - 20, tree_file_size_dist="fixed:1k", tree_fanout=4, tree_depth=2)
    finally:
        subprocess.run(["umount", str(d)])


def _device_read_bytes(mountpoint) -> int:
    """Bytes read from the block device under @mountpoint so far (its /sys stat)."""
    src = subprocess.run(["findmnt", "-n", "-o", "SOURCE", str(mountpoint)],
                         capture_output=True, text=True, check=True).stdout.strip()
    name = os.path.basename(os.path.realpath(src))
    fields = Path(f"/sys/block/{name}/stat").read_text().split()
    return int(fields[2]) * 512


def test_reads_past_one_pass_are_said_and_file_drop_cache_keeps_them_cold(fresh_ext4, tmp_path):
    """A read job that reads more files than the tree holds says how many
    passes it made (stderr and opstats): after the first, the page cache may
    serve it. tree_drop_cache=1 drops each file's data once read: every read
    then reaches the device, as /sys/block/loopN/stat shows."""
    n, size = 300, 16384
    layout(fresh_ext4, n, tree_file_size_dist=f"fixed:{size}", tree_fanout=4, tree_depth=1)
    common = dict(tree_files=n, tree_fanout=4, tree_depth=1, tree_file_op="read", rw="randread",
                  number_ios=3 * n, randrepeat=0, tree_file_size_dist=f"fixed:{size}")
    # written back (fadvise drops clean pages only), then one pass that drops them all
    os.sync()
    run_fio(sf_args(fresh_ext4, name="drop", tree_drop_cache=1,
                    **dict(common, number_ios=n, rw="read"))).ok()
    # cold: every file dropped after each read (this run also leaves them all cold)
    ops = tmp_path / "cold.jsonl"
    before = _device_read_bytes(fresh_ext4)
    res = run_fio(sf_args(fresh_ext4, name="cold", tree_drop_cache=1, tree_opstats_file=ops,
                          **common)).ok()
    cold = _device_read_bytes(fresh_ext4) - before
    assert res.job("cold")["read"]["total_ios"] == 3 * n
    assert not [l for l in res.smallfile_lines() if "passes" in l]
    line = read_opstats(ops)[0]
    assert line["read_passes"] == 3.0 and line["file_drop_cache"] == 1
    assert cold >= 0.9 * 3 * n * size, cold
    # warm: the first pass from the device, the rest mostly from the page cache
    ops = tmp_path / "warm.jsonl"
    before = _device_read_bytes(fresh_ext4)
    res = run_fio(sf_args(fresh_ext4, name="warm", tree_opstats_file=ops, **common)).ok()
    warm = _device_read_bytes(fresh_ext4) - before
    # no cold test asked for: the passes are in the opstats line, nothing on stderr
    assert res.smallfile_lines() == []
    assert read_opstats(ops)[0]["read_passes"] == 3.0
    assert warm < 1.5 * n * size < cold, (warm, cold)


REREAD_NOTE = ("smallfile: job {job}{clone} read {reads} files of a 40-file tree: {passes} passes "
               "over the tree: reads after the first pass may come from the page cache (for a "
               "cold test: number_ios= at most tree_files, or tree_drop_cache=1)")


@pytest.mark.parametrize("mode", ["process", "thread"])
@pytest.mark.parametrize("where", ["disk", "tmpfs"])
def test_reread_said_once_per_job_where_cold_was_asked(mode, where, tmp_path, request):
    """The demo's mail job re-reads a hot spool on purpose: said nothing
    (it said it once per clone). A job declared cold says it once, not once
    per clone, in processes and in threads, with the opstats line's
    rounding; with a tree_opstats_file, fio-pack summary says it (once for
    the clones together), not the engine. On tmpfs, nothing: every read
    there is from memory."""
    tree = request.getfixturevalue("tmpfs_dir") if where == "tmpfs" else tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    layout(tree, 40)
    thread = {"thread": 1} if mode == "thread" else {}

    def reread(name, numjobs=3, number_ios=120, **opts):
        return run_fio(sf_args(tree, name=name, tree_files=40, tree_file_op="read",
                               rw="randread", number_ios=number_ios, numjobs=numjobs,
                               **thread, **opts)).ok().smallfile_lines()

    assert reread("warm", description="the mail spool, hot") == []
    cold = reread("cold", description="Cold read of the tree")
    one = reread("single", numjobs=1, number_ios=130, description="cold")
    with_ops = reread("ops", description="cold", tree_opstats_file=tmp_path / "o.jsonl")
    assert with_ops == []
    assert [l["read_passes"] for l in read_opstats(tmp_path / "o.jsonl")] == [3.0] * 3
    if where == "tmpfs":
        assert cold == one == []
        return
    assert cold == [REREAD_NOTE.format(job="cold", clone=" (its clone 0 of 3)", reads=120,
                                       passes="3.00")]
    # 130/40 = 3.25 exactly; the figure the opstats line would hold, %.2f
    assert one == [REREAD_NOTE.format(job="single", clone="", reads=130, passes="3.25")]
    dropped = reread("dropped", numjobs=2, tree_drop_cache=1)
    assert len(dropped) == 1 and dropped[0].startswith(
        "smallfile: job dropped (its clone 0 of 2) read 120 files") and \
        "inodes, dentries and directory blocks of later passes" in dropped[0], dropped


def test_opstats_line_is_whole_with_a_long_tree_dir(tmp_path):
    """The opstats line is built to its full size: a tree_dir of over 1 KiB
    (past the old fixed 1 KiB buffer for it), with a quote and a backslash in
    a name, comes back whole, and the counters after it are there."""
    d = tmp_path
    for k in range(9):
        d = d / (f"level{k}-" + "y" * 110 + ('"q\\' if k == 4 else ""))
    d.mkdir(parents=True)
    assert len(str(d)) > 1024
    opstats = tmp_path / "ops.jsonl"
    layout(d, 50, tree_opstats_file=opstats)
    (line,) = read_opstats(opstats)
    assert line["engine"] == "smallfile" and line["job"] == "layout"
    assert line["tree_dir"] == str(d)
    assert line["ops"]["layout"]["ops"] == 50
