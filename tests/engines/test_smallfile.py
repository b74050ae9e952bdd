"""fio tests of the smallfile engine against its documented behaviour (docs/smallfile.md):
the layout, determinism, content, resumption, the operations, the system
calls made, file choice, io_uring and direct=1. Bad input, the target's
safety, --enghelp and the default target are in test_smallfile_safety.py.

Every test runs the real fio with the real engine on real directories and
checks both fio's JSON and what is on disk.
"""
import collections
import os
import re
import statistics
import subprocess
import time
import zlib
from pathlib import Path

import pytest

from helpers.fio import MARKER, layout, needs_root, run_fio, sf_args, start_fio_background
from helpers.procs import kill_group
from helpers.smallfile import SHAPE_OPTS, assert_layout_matches, read_tree
from helpers.trees import Shape, file_stats, marker_params, read_opstats, snapshot, tree_files
from fiopack.capture.strace import summary_counts


def sizes_by_index(root, shape: Shape) -> list:
    files = tree_files(root)
    return [files[shape.path(i)] for i in range(shape.nfiles)]


# ---------------------------------------------------------------------------
# 1. Layout: paths, directories, sizes
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("nfiles,fanout,depth", [
    (200, 4, 2),      # 16 leaves, 13 files each (last one short)
    (1000, 16, 2),    # 256 leaves, 4 files each
    (300, 20, 1),     # 2-hex-digit names (fanout-1 = 0x13)
    (250, 3, 3),      # 27 leaves, base-3 digits
    (50, 32, 0),      # depth 0: files in the root
])
def test_layout_creates_documented_paths(tree_dir, nfiles, fanout, depth):
    r = layout(tree_dir, nfiles, tree_fanout=fanout, tree_depth=depth,
               tree_file_size_dist="fixed:1000")
    shape = Shape(nfiles, fanout, depth)
    on_disk = assert_layout_matches(tree_dir, shape)
    w = r.job()["write"]
    assert w["total_ios"] == nfiles, f"write.total_ios {w['total_ios']} != tree_files {nfiles}"
    assert w["io_bytes"] == sum(on_disk.values()) == 1000 * nfiles
    assert w["clat_ns"]["N"] == nfiles
    assert w["iops"] > 0
    assert r.job()["read"]["total_ios"] == 0 and r.job()["trim"]["total_ios"] == 0
    # directory levels: exactly `depth` levels of fixed-width lowercase hex names
    width = len(format(fanout - 1, "x"))
    for rel in on_disk:
        parts = rel.split("/")
        assert len(parts) == depth + 1, f"{rel}: expected {depth} directory levels"
        for d in parts[:-1]:
            assert re.fullmatch("[0-9a-f]{%d}" % width, d), f"{rel}: bad directory name {d!r}"
            assert int(d, 16) < fanout, f"{rel}: digit {d} >= fanout {fanout}"
        assert re.fullmatch(r"f\d{10}", parts[-1]), f"{rel}: bad file name"


def test_layout_leaf_numbering(tree_dir):
    """4096 files over 16x16 leaves: 16 files a leaf; file 197 is in leaf 12 = "0/c"."""
    shape = Shape(4096, 16, 2)
    assert shape.files_per_leaf == 16 and shape.path(197) == "0/c/f0000000197"
    layout(tree_dir, 4096, tree_fanout=16, tree_depth=2, tree_file_size_dist="fixed:0")
    assert (tree_dir / "0" / "c" / "f0000000197").is_file()
    assert (tree_dir / "0" / "b" / "f0000000191").is_file()
    assert (tree_dir / "f" / "f" / "f0000004095").is_file()
    assert sorted(os.listdir(tree_dir / "0" / "c")) == [shape.name(i) for i in range(192, 208)]


def test_layout_wide_names(tree_dir):
    """More than 10^10 files would widen names; 10 digits is the minimum width."""
    layout(tree_dir, 12, tree_fanout=1, tree_depth=3, tree_file_size_dist="fixed:1")
    assert sorted(tree_files(tree_dir)) == [f"0/0/0/f{i:010d}" for i in range(12)]


def test_layout_marker_records_parameters(tree_dir):
    layout(tree_dir, 321, tree_fanout=5, tree_depth=2, tree_file_size_dist="uniform:10:2000",
           tree_file_content="zero", tree_seed=77)
    text = (tree_dir / MARKER).read_text()
    for key, val in [("tree_files", "321"), ("tree_fanout", "5"), ("tree_depth", "2"),
                     ("tree_maildir", "0"), ("tree_seed", "77"), ("file_content", "zero")]:
        assert f"{key}={val}\n" in text, f"marker lacks {key}={val}:\n{text}"
    # the marker's keys are its format, older than the options' tree_ prefix
    assert "file_size_dist=" in text
    # where it was laid out: a cp -al copy shares the marker (test_smallfile_hostile.py)
    assert f"tree_dir_inode={os.stat(tree_dir).st_ino}\n" in text


def test_size_fixed_all_equal(tree_dir):
    r = layout(tree_dir, 400, tree_fanout=8, tree_depth=1, tree_file_size_dist="fixed:3k")
    sizes = list(tree_files(tree_dir).values())
    assert len(sizes) == 400 and set(sizes) == {3072}, f"sizes: {collections.Counter(sizes)}"
    assert r.job()["write"]["io_bytes"] == 400 * 3072


def test_size_plain_number_means_fixed(tree_dir):
    layout(tree_dir, 100, tree_fanout=4, tree_depth=1, tree_file_size_dist="1500")
    assert set(tree_files(tree_dir).values()) == {1500}


def test_size_uniform_in_range(tree_dir):
    r = layout(tree_dir, 1000, tree_fanout=8, tree_depth=2,
               tree_file_size_dist="uniform:500:9000")
    sizes = list(tree_files(tree_dir).values())
    assert len(sizes) == 1000
    assert min(sizes) >= 500 and max(sizes) <= 9000, f"range [{min(sizes)}, {max(sizes)}]"
    assert len(set(sizes)) > 500, "uniform sizes are (nearly) all equal"
    # uniform over [500, 9000]: mean ~4750, both halves populated
    assert 4250 < statistics.mean(sizes) < 5250, f"mean {statistics.mean(sizes)}"
    assert sum(s < 4750 for s in sizes) > 400 and sum(s > 4750 for s in sizes) > 400
    w = r.job()["write"]
    assert w["total_ios"] == 1000 and w["io_bytes"] == sum(sizes)


def test_size_lognormal_median_and_max(tree_dir):
    r = layout(tree_dir, 2000, tree_fanout=16, tree_depth=2,
               tree_file_size_dist="lognormal:8k:1.0:40k")
    sizes = list(tree_files(tree_dir).values())
    assert len(sizes) == 2000
    med = statistics.median(sizes)
    assert abs(med - 8192) <= 0.15 * 8192, f"sample median {med} not within 15% of 8192"
    assert max(sizes) <= 40 * 1024, f"max {max(sizes)} exceeds the 40k cap"
    # sigma 1: P(size > 5*median) ~ 5.4%, so the cap (5 x median) is reached by some files
    assert sum(s == 40 * 1024 for s in sizes) > 20, "no file clamped at the cap"
    assert sum(s < 8192 / 4 for s in sizes) > 40, "no lower tail"
    assert r.job()["write"]["io_bytes"] == sum(sizes)


def test_size_lognormal_default_cap_is_64m(tree_dir):
    layout(tree_dir, 300, tree_fanout=4, tree_depth=1, tree_file_size_dist="lognormal:1k:0.5")
    sizes = list(tree_files(tree_dir).values())
    assert 0.75 * 1024 < statistics.median(sizes) < 1.25 * 1024
    assert max(sizes) <= 64 << 20


def test_size_hist_bins_and_weights(tree_dir, tmp_path):
    hist = tmp_path / "sizes.hist"
    hist.write_text("# size histogram\n"
                    "1000 6\n"
                    "\n"
                    "2000 3000 3\n"
                    "7777 1\n")
    r = layout(tree_dir, 2000, tree_fanout=8, tree_depth=2, tree_file_size_dist=f"hist:{hist}")
    sizes = list(tree_files(tree_dir).values())
    assert len(sizes) == 2000
    exact_1000 = sum(s == 1000 for s in sizes)
    ranged = sum(2000 <= s <= 3000 for s in sizes)
    exact_7777 = sum(s == 7777 for s in sizes)
    assert exact_1000 + ranged + exact_7777 == 2000, \
        f"sizes outside the bins: {sorted(set(sizes) - {1000, 7777})[:10]}"
    for got, weight in [(exact_1000, 0.6), (ranged, 0.3), (exact_7777, 0.1)]:
        assert abs(got / 2000 - weight) < 0.05, \
            f"bin weights not respected: {exact_1000}, {ranged}, {exact_7777} of 2000"
    assert len({s for s in sizes if 2000 <= s <= 3000}) > 100, "range bin not spread"
    assert r.job()["write"]["io_bytes"] == sum(sizes)


def test_files_per_dir_bounds_leaves(tree_dir):
    r = layout(tree_dir, 1000, tree_fanout=4, tree_files_per_dir=30, tree_file_size_dist="fixed:100")
    shape = Shape(1000, 4, files_per_dir=30)
    assert shape.depth == 3  # 34 leaves needed; 4^3 = 64
    assert_layout_matches(tree_dir, shape)
    per_dir = collections.Counter(str(Path(p).parent) for p in tree_files(tree_dir))
    assert max(per_dir.values()) <= 30, f"a leaf holds {max(per_dir.values())} files > 30"
    assert sum(per_dir.values()) == 1000
    assert all(len(Path(d).parts) == 3 for d in per_dir), "depth does not follow tree_files_per_dir"
    assert r.job()["write"]["total_ios"] == 1000


def test_maildir_layout(tree_dir):
    r = layout(tree_dir, 300, tree_fanout=4, tree_depth=2, tree_maildir=1,
               tree_file_size_dist="fixed:512")
    shape = Shape(300, 4, 2, maildir=True)
    on_disk = assert_layout_matches(tree_dir, shape)
    assert all(Path(p).parent.name == "new" for p in on_disk)
    leaves = {str(Path(p).parent.parent) for p in on_disk}
    assert len(leaves) == 16
    for leaf in leaves:
        for sub in ("tmp", "new", "cur"):
            assert (tree_dir / leaf / sub).is_dir(), f"leaf {leaf} lacks {sub}/"
        assert not any((tree_dir / leaf / "tmp").iterdir()), f"{leaf}/tmp not empty"
        assert not any((tree_dir / leaf / "cur").iterdir()), f"{leaf}/cur not empty"
    assert r.job()["write"]["io_bytes"] == 300 * 512


# ---------------------------------------------------------------------------
# 2. Determinism
# ---------------------------------------------------------------------------

def test_same_parameters_same_tree(tree_dir, other_tree_dir):
    params = dict(tree_fanout=8, tree_depth=2, tree_file_size_dist="uniform:100:20000")
    layout(tree_dir, 500, **params)
    layout(other_tree_dir, 500, **params)
    a, b = read_tree(tree_dir), read_tree(other_tree_dir)
    assert a.keys() == b.keys()
    diff = [p for p in a if a[p] != b[p]]
    assert not diff, f"{len(diff)} files differ between two identical layouts, e.g. {diff[:3]}"
    assert marker_params(tree_dir / MARKER) == marker_params(other_tree_dir / MARKER)


def test_tree_seed_changes_sizes_and_content(tree_dir, other_tree_dir):
    params = dict(tree_fanout=8, tree_depth=2, tree_file_size_dist="uniform:100:20000")
    layout(tree_dir, 500, tree_seed=1, **params)
    layout(other_tree_dir, 500, tree_seed=2, **params)
    a, b = tree_files(tree_dir), tree_files(other_tree_dir)
    assert a.keys() == b.keys(), "tree_seed must not change the paths"
    same = sum(a[p] == b[p] for p in a)
    assert same < 25, f"{same} of 500 files have the same size under another tree_seed"
    # content differs too (compare a common prefix of two files)
    p = sorted(a)[0]
    n = min(a[p], b[p])
    assert (tree_dir / p).read_bytes()[:n] != (other_tree_dir / p).read_bytes()[:n]


def test_files_differ_from_each_other(tree_dir):
    layout(tree_dir, 200, tree_fanout=4, tree_depth=1, tree_file_size_dist="fixed:4k")
    contents = list(read_tree(tree_dir).values())
    assert len(set(contents)) == 200, "random files of one tree are not distinct"


# ---------------------------------------------------------------------------
# 3. Content
# ---------------------------------------------------------------------------

def test_content_zero(tree_dir):
    layout(tree_dir, 100, tree_fanout=4, tree_depth=1,
           tree_file_size_dist="uniform:1000:30000", tree_file_content="zero")
    for rel, data in read_tree(tree_dir).items():
        assert data.count(0) == len(data), f"{rel} is not all zeros"


def _ratios(root):
    return [len(zlib.compress(d, 6)) / len(d) for d in read_tree(root).values()]


def test_content_compressible_50(tree_dir):
    layout(tree_dir, 60, tree_fanout=4, tree_depth=1,
           tree_file_size_dist="fixed:64k", tree_file_content="compressible:50")
    ratios = _ratios(tree_dir)
    assert len(ratios) == 60
    bad = [r for r in ratios if not 0.35 <= r <= 0.65]
    assert not bad, f"compressible:50 files compress to {sorted(bad)[:5]} (want 35%..65%)"


def test_content_random_incompressible(tree_dir):
    layout(tree_dir, 60, tree_fanout=4, tree_depth=1, tree_file_size_dist="fixed:64k")
    ratios = _ratios(tree_dir)
    assert min(ratios) > 0.95, f"random content compresses to {min(ratios):.2f}"


# ---------------------------------------------------------------------------
# 4. Resumable / idempotent layout
# ---------------------------------------------------------------------------

def test_layout_rerun_changes_nothing(tree_dir):
    params = dict(tree_fanout=8, tree_depth=2, tree_file_size_dist="uniform:100:10000")
    layout(tree_dir, 600, **params)
    before = file_stats(tree_dir)
    marker_before = snapshot(tree_dir)[MARKER]
    time.sleep(0.05)
    r = layout(tree_dir, 600, **params)
    w = r.job()["write"]
    assert w["io_bytes"] == 0, f"rerun on a complete tree wrote {w['io_bytes']} bytes"
    assert w["total_ios"] == 600, "every file is still one (skipped) layout operation"
    after = file_stats(tree_dir)
    changed = [p for p in before if before[p] != after.get(p)]
    assert before.keys() == after.keys() and not changed, \
        f"rerun changed {len(changed)} files (inode/size/mtime), e.g. {changed[:3]}"
    assert snapshot(tree_dir)[MARKER] == marker_before, "marker rewritten"


def test_layout_rerun_restores_deleted_and_truncated(tree_dir, tmp_path):
    params = dict(tree_fanout=8, tree_depth=2, tree_file_size_dist="uniform:100:10000")
    opstats = tmp_path / "ops.jsonl"
    layout(tree_dir, 600, **params)
    original = read_tree(tree_dir)
    paths = sorted(original)
    deleted = paths[10:25] + paths[300:305]
    truncated = paths[100:110] + paths[500:503]
    for p in deleted:
        (tree_dir / p).unlink()
    for j, p in enumerate(truncated):
        os.truncate(tree_dir / p, j % 3 * (len(original[p]) // 3))  # 0, 1/3, 2/3
    untouched_before = {p: s for p, s in file_stats(tree_dir).items()
                        if p not in deleted and p not in truncated}
    time.sleep(0.05)
    r = layout(tree_dir, 600, tree_opstats_file=opstats, **params)
    w = r.job()["write"]
    expect = sum(len(original[p]) for p in deleted + truncated)
    assert w["io_bytes"] == expect, \
        f"rerun wrote {w['io_bytes']} bytes, want exactly the {expect} of the damaged files"
    now = read_tree(tree_dir)
    assert now.keys() == original.keys()
    wrong = [p for p in now if now[p] != original[p]]
    assert not wrong, f"{len(wrong)} files not restored to their model content, e.g. {wrong[:3]}"
    after = file_stats(tree_dir)
    changed = [p for p in untouched_before if untouched_before[p] != after[p]]
    assert not changed, f"rerun touched intact files: {changed[:5]}"
    st = read_opstats(opstats)[0]["ops"]["layout"]
    assert st["ops"] == 600 and st["skipped"] == 600 - len(deleted) - len(truncated), st


def test_layout_killed_with_sigkill_is_completed(tree_dir, other_tree_dir):
    n = 8000
    params = dict(tree_fanout=16, tree_depth=2, tree_file_size_dist="uniform:100:6000")
    p = start_fio_background(sf_args(tree_dir, name="layout", tree_files=n, tree_file_op="layout",
                                     rw="write", tree_file_sync="fsync", **params))
    deadline = time.monotonic() + 30
    count = 0
    try:
        time.sleep(0.5)
        while time.monotonic() < deadline:
            count = len(tree_files(tree_dir))
            if count >= 100 or p.poll() is not None:
                break
            time.sleep(0.02)
        still_running = p.poll() is None
    finally:
        kill_group(p)
    assert still_running, "layout finished before it could be killed; test needs a slower layout"
    partial = len(tree_files(tree_dir))
    assert 0 < partial < n, f"{partial} files after the kill; expected a partial tree"

    r = layout(tree_dir, n, **params)
    assert r.job()["write"]["total_ios"] == n
    layout(other_tree_dir, n, **params)
    a, b = read_tree(tree_dir), read_tree(other_tree_dir)
    assert a.keys() == b.keys(), f"{len(b.keys() - a.keys())} files missing after the resume"
    wrong = [p for p in a if a[p] != b[p]]
    assert not wrong, f"{len(wrong)} files differ from a clean layout, e.g. {wrong[:3]}"
    leftovers = [e for e in os.listdir(tree_dir) if e.startswith(MARKER + ".")]
    assert not leftovers, f"marker staging files left: {leftovers}"


# ---------------------------------------------------------------------------
# 5. numjobs splits a layout
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("group_reporting", [False, True])
def test_layout_numjobs_splits_work(tree_dir, tmp_path, group_reporting):
    n = 1000
    opstats = tmp_path / "ops.jsonl"
    extra = {"group_reporting": 1} if group_reporting else {}
    r = run_fio(sf_args(tree_dir, name="layout", tree_files=n, tree_file_op="layout", rw="write",
                        tree_fanout=8, tree_depth=2, tree_file_size_dist="uniform:100:5000",
                        numjobs=3, tree_opstats_file=opstats, **extra)).ok()
    assert len(r.jobs) == (1 if group_reporting else 3)
    assert r.total("write", "total_ios") == n, "clones together must lay out each file once"
    on_disk = assert_layout_matches(tree_dir, Shape(n, 8, 2))
    assert r.total("write", "io_bytes") == sum(on_disk.values()), \
        "bytes written != bytes on disk: some file was written twice (overlap)"
    lines = read_opstats(opstats)
    assert sorted(l["subjob"] for l in lines) == [0, 1, 2]
    shares = sorted(l["ops"]["layout"]["ops"] for l in lines)
    assert shares == sorted(n * (k + 1) // 3 - n * k // 3 for k in range(3)), shares
    assert sum(l["ops"]["layout"]["skipped"] for l in lines) == 0, "a clone found files done"


# ---------------------------------------------------------------------------
# 6. Operations
# ---------------------------------------------------------------------------

def test_read_sequential_pass(tree_dir):
    layout(tree_dir, 700, **SHAPE_OPTS)
    total = sum(tree_files(tree_dir).values())
    before = file_stats(tree_dir)
    r = run_fio(sf_args(tree_dir, tree_files=700, tree_file_op="read", rw="read", bs="4k",
                        **SHAPE_OPTS)).ok()
    rd = r.job()["read"]
    assert rd["total_ios"] == 700, "a default job is one pass over the files"
    assert rd["io_bytes"] == total, f"read {rd['io_bytes']} bytes, tree holds {total}"
    assert rd["clat_ns"]["N"] == 700 and rd["iops"] > 0
    assert rd["clat_ns"]["min"] > 0, "latency of a file operation cannot be 0"
    assert "percentile" in rd["clat_ns"] and rd["clat_ns"]["percentile"]["99.000000"] > 0
    assert r.job()["write"]["total_ios"] == 0 and r.job()["trim"]["total_ios"] == 0
    assert file_stats(tree_dir) == before, "a read job changed the tree"


def test_read_loops_and_number_ios(tree_dir):
    layout(tree_dir, 300, **SHAPE_OPTS)
    total = sum(tree_files(tree_dir).values())
    r = run_fio(sf_args(tree_dir, tree_files=300, tree_file_op="read", rw="read", loops=2,
                        **SHAPE_OPTS)).ok()
    assert r.job()["read"]["total_ios"] == 600
    assert r.job()["read"]["io_bytes"] == 2 * total
    r = run_fio(sf_args(tree_dir, tree_files=300, tree_file_op="read", rw="randread",
                        number_ios=777, **SHAPE_OPTS)).ok()
    rd = r.job()["read"]
    assert rd["total_ios"] == 777 and rd["clat_ns"]["N"] == 777
    assert rd["io_bytes"] > 0


def test_read_random_pass_reads_every_file_once(tree_dir):
    layout(tree_dir, 500, **SHAPE_OPTS)
    total = sum(tree_files(tree_dir).values())
    r = run_fio(sf_args(tree_dir, tree_files=500, tree_file_op="read", rw="randread",
                        **SHAPE_OPTS)).ok()
    assert r.job()["read"]["total_ios"] == 500
    assert r.job()["read"]["io_bytes"] == total, "random pass with the random map = each file once"


def test_read_small_bs_and_exact_multiples(tree_dir):
    """Files whose size is a multiple of bs are read to EOF (one extra 0-byte read)."""
    layout(tree_dir, 64, tree_fanout=4, tree_depth=1, tree_file_size_dist="fixed:8k", bs="4k")
    r = run_fio(sf_args(tree_dir, tree_files=64, tree_file_op="read", rw="read", bs="1k",
                        tree_fanout=4, tree_depth=1, tree_file_size_dist="fixed:8k")).ok()
    assert r.job()["read"]["io_bytes"] == 64 * 8192


def test_stat(tree_dir):
    layout(tree_dir, 300, **SHAPE_OPTS)
    before = snapshot(tree_dir)
    r = run_fio(sf_args(tree_dir, tree_files=300, tree_file_op="stat", rw="randread",
                        number_ios=400, **SHAPE_OPTS)).ok()
    rd = r.job()["read"]
    assert rd["total_ios"] == 400 and rd["clat_ns"]["N"] == 400
    assert rd["io_bytes"] == 0, "stat moves no bytes"
    assert rd["iops"] > 0, "stat job reports 0 IOPS"
    assert snapshot(tree_dir) == before


def test_create_on_empty_tree_then_probe(tree_dir, other_tree_dir, tmp_path):
    n = 200
    opts = dict(tree_files=n, **SHAPE_OPTS)
    r = run_fio(sf_args(tree_dir, tree_file_op="create", rw="write", number_ios=100, **opts)).ok()
    w = r.job()["write"]
    assert w["total_ios"] == 100
    shape = Shape(n, 8, 2)
    on_disk = tree_files(tree_dir)
    assert set(on_disk) == {shape.path(i) for i in range(100)}, \
        "sequential create on an empty tree must create files 0..99"
    assert (tree_dir / MARKER).is_file()
    assert w["io_bytes"] == sum(on_disk.values())
    # second run: slots 0..49 exist -> EEXIST -> the engine probes absent slots
    opstats = tmp_path / "ops.jsonl"
    r = run_fio(sf_args(tree_dir, tree_file_op="create", rw="write", number_ios=50,
                        tree_opstats_file=opstats, **opts)).ok()
    after = tree_files(tree_dir)
    assert len(after) == 150, f"{len(after)} files after 100 + 50 creates"
    new = set(after) - set(on_disk)
    assert all(on_disk[p] == after[p] for p in on_disk), "create overwrote an existing file"
    assert r.job()["write"]["io_bytes"] == sum(after[p] for p in new)
    st = read_opstats(opstats)[0]["ops"]["create"]
    assert st["ops"] == 50 and st["probes"] >= 50, f"no probing recorded: {st}"
    # created files are the model files
    layout(other_tree_dir, n, **SHAPE_OPTS)
    ref = read_tree(other_tree_dir)
    wrong = [p for p in after if (tree_dir / p).read_bytes() != ref[p]]
    assert not wrong, f"created files differ from their model: {wrong[:3]}"


def test_create_full_tree_fails_cleanly(tree_dir):
    layout(tree_dir, 50, tree_fanout=4, tree_depth=1)
    before = snapshot(tree_dir)
    r = run_fio(sf_args(tree_dir, tree_files=50, tree_fanout=4, tree_depth=1,
                        tree_file_op="create", rw="randwrite", number_ios=5, tree_probe_limit=8))
    assert r.rc != 0, "create with no absent slot must fail"
    assert any("create" in l and "absent" in l for l in r.smallfile_lines()), r.describe()
    assert snapshot(tree_dir) == before


@pytest.mark.parametrize("tree_append_size", ["fixed:1000", "uniform:1:5000"])
def test_append_grows_files(tree_dir, tree_append_size):
    layout(tree_dir, 200, **SHAPE_OPTS)
    before = tree_files(tree_dir)
    r = run_fio(sf_args(tree_dir, tree_files=200, tree_file_op="append", rw="randwrite",
                        number_ios=150, tree_append_size=tree_append_size, **SHAPE_OPTS)).ok()
    w = r.job()["write"]
    after = tree_files(tree_dir)
    assert after.keys() == before.keys()
    growth = {p: after[p] - before[p] for p in after}
    assert all(g >= 0 for g in growth.values())
    assert w["total_ios"] == 150
    assert sum(growth.values()) == w["io_bytes"], \
        f"files grew by {sum(growth.values())} bytes, fio reports {w['io_bytes']}"
    if tree_append_size == "fixed:1000":
        assert w["io_bytes"] == 150 * 1000
        assert all(g % 1000 == 0 for g in growth.values()), "append not exactly tree_append_size"
    else:
        assert 150 <= w["io_bytes"] <= 150 * 5000


def test_append_keeps_old_content(tree_dir):
    layout(tree_dir, 20, tree_fanout=2, tree_depth=1, tree_file_size_dist="fixed:3000")
    old = read_tree(tree_dir)
    run_fio(sf_args(tree_dir, tree_files=20, tree_fanout=2, tree_depth=1,
                    tree_file_size_dist="fixed:3000", tree_file_op="append", rw="write",
                    tree_append_size="fixed:500")).ok()
    new = read_tree(tree_dir)
    for p in old:
        assert len(new[p]) == 3500 and new[p][:3000] == old[p], f"{p}: append clobbered data"


def test_delete(tree_dir):
    layout(tree_dir, 300, **SHAPE_OPTS)
    before = set(tree_files(tree_dir))
    r = run_fio(sf_args(tree_dir, tree_files=300, tree_file_op="delete", rw="randread",
                        number_ios=120, **SHAPE_OPTS)).ok()
    t = r.job()["trim"]
    assert t["total_ios"] == 120 and t["clat_ns"]["N"] == 120
    assert t["io_bytes"] == 0
    assert t["iops"] > 0, "delete job reports 0 IOPS"
    after = set(tree_files(tree_dir))
    assert after < before and len(before - after) == 120, \
        f"{len(before - after)} files removed, fio counted 120 deletes"
    assert (tree_dir / MARKER).is_file(), "delete removed the marker"


def test_deliver_maildir(tree_dir, other_tree_dir):
    n = 200
    opts = dict(tree_files=n, tree_maildir=1, **SHAPE_OPTS)
    layout(tree_dir, n, tree_maildir=1, **SHAPE_OPTS)
    before = file_stats(tree_dir)
    r = run_fio(sf_args(tree_dir, tree_file_op="deliver", rw="write", number_ios=100,
                        **opts)).ok()
    w = r.job()["write"]
    assert w["total_ios"] == 100
    after = file_stats(tree_dir)
    assert after.keys() == before.keys(), "deliveries must land in new/ at the slot's path"
    delivered = [p for p in after if after[p][0] != before[p][0]]
    assert len(delivered) == 100, f"{len(delivered)} files replaced, 100 deliveries"
    assert all("/new/" in p for p in delivered)
    assert w["io_bytes"] == sum(after[p][1] for p in delivered)
    leftovers = [str(p) for p in tree_dir.glob("**/tmp/*")]
    assert not leftovers, f"staging files left in tmp/: {leftovers[:5]}"
    assert not list(tree_dir.glob("**/cur/*"))
    # a delivery writes the slot's model file
    layout(other_tree_dir, n, tree_maildir=1, **SHAPE_OPTS)
    wrong = [p for p in delivered
             if (tree_dir / p).read_bytes() != (other_tree_dir / p).read_bytes()]
    assert not wrong, f"delivered messages differ from the model: {wrong[:3]}"


def test_deliver_into_empty_maildir_tree(tree_dir):
    r = run_fio(sf_args(tree_dir, tree_files=100, tree_maildir=1, tree_fanout=4,
                        tree_depth=1, tree_file_op="deliver", rw="write", **{})).ok()
    on_disk = tree_files(tree_dir)
    assert set(on_disk) == set(Shape(100, 4, 1, maildir=True).all_paths())
    assert r.job()["write"]["io_bytes"] == sum(on_disk.values())
    assert not list(tree_dir.glob("*/tmp/*"))


def test_mix_counts_and_opstats(tree_dir, tmp_path):
    n = 400
    opstats = tmp_path / "ops.jsonl"
    layout(tree_dir, n, tree_maildir=1, **SHAPE_OPTS)
    files_before = len(tree_files(tree_dir))
    r = run_fio(sf_args(tree_dir, name="mix", tree_files=n, tree_maildir=1,
                        tree_file_op="read:50,deliver:25,delete:25", rw="randread",
                        number_ios=600, tree_opstats_file=opstats, **SHAPE_OPTS)).ok()
    j = r.job()
    rd, wr, tr = j["read"]["total_ios"], j["write"]["total_ios"], j["trim"]["total_ios"]
    assert rd + wr + tr == 600, f"read {rd} + write {wr} + trim {tr} != number_ios 600"
    assert 240 < rd < 360 and 100 < wr < 200 and 100 < tr < 200, \
        f"mix weights 50/25/25 not reflected: {rd}/{wr}/{tr}"
    for d in ("read", "write", "trim"):
        assert j[d]["iops"] > 0, f"{d} direction of the mix reports 0 IOPS"
        assert j[d]["clat_ns"]["N"] == j[d]["total_ios"]
    lines = read_opstats(opstats)
    assert len(lines) == 1 and lines[0]["job"] == "mix"
    ops = lines[0]["ops"]
    assert set(ops) == {"read", "deliver", "delete"}, ops.keys()
    assert ops["read"]["ops"] == rd and ops["read"]["bytes"] == j["read"]["io_bytes"]
    assert ops["deliver"]["ops"] == wr and ops["deliver"]["bytes"] == j["write"]["io_bytes"]
    assert ops["delete"]["ops"] == tr and ops["delete"]["bytes"] == 0
    assert all(o["errors"] == 0 for o in ops.values())
    assert ops["read"]["lat_min_ns"] <= ops["read"]["lat_mean_ns"] <= ops["read"]["lat_max_ns"]
    assert lines[0]["tree_dir"] == str(tree_dir)
    # on disk: deliveries add (or replace) messages, deletes remove them
    files_after = len(tree_files(tree_dir))
    assert files_before - tr <= files_after <= files_before - tr + wr
    assert not list(tree_dir.glob("**/tmp/*")), "staging files left in tmp/"


@pytest.mark.parametrize("api", ["sync", "io_uring"])
@pytest.mark.parametrize("fio_latencies", ["on", "off"])
def test_opstats_latencies_with_fio_latencies_on_and_off(tree_dir, tmp_path, api, fio_latencies):
    """The engine's latencies start at fio's issue time, which fio stamps
    only while it keeps latencies itself: with them off the engine stamps
    it, so no operation's latency runs from a stale or zero time."""
    opstats = tmp_path / "ops.jsonl"
    layout(tree_dir, 200, **SHAPE_OPTS)
    off = dict(disable_clat=1, disable_slat=1, disable_lat=1, disable_bw_measurement=1)
    r = run_fio(sf_args(tree_dir, name="lat", tree_files=200, tree_file_op="read",
                        rw="randread", number_ios=300, tree_io_api=api, iodepth=4,
                        tree_opstats_file=opstats, **SHAPE_OPTS,
                        **(off if fio_latencies == "off" else {}))).ok()
    assert r.job()["read"]["total_ios"] == 300
    ops = read_opstats(opstats)[0]["ops"]["read"]
    assert ops["ops"] == 300 and ops["errors"] == 0
    assert 0 < ops["lat_min_ns"] <= ops["lat_mean_ns"] <= ops["lat_max_ns"], ops
    # a start from the wrong clock or from zero would be ages, not seconds
    assert ops["lat_max_ns"] < 60 * 10**9, ops


def test_mix_is_repeatable_with_randseed(tmp_path):
    results = []
    for k in range(2):
        d = tmp_path / f"t{k}"
        d.mkdir()
        layout(d, 300, tree_maildir=1, **SHAPE_OPTS)
        r = run_fio(sf_args(d, tree_files=300, tree_maildir=1, randseed=42,
                            tree_file_op="read:50,deliver:25,delete:25", rw="randread",
                            number_ios=300, **SHAPE_OPTS)).ok()
        j = r.job()
        results.append(tuple(j[x][k2] for x in ("read", "write", "trim")
                             for k2 in ("total_ios", "io_bytes")))
        results.append(sorted(tree_files(d).items()))
    assert results[0] == results[2], "same randseed, different operation counts"
    assert results[1] == results[3], "same randseed, different resulting trees"


# ---------------------------------------------------------------------------
# 7. Syscalls really issued (strace)
# ---------------------------------------------------------------------------

def _strace(tmp_path, args):
    out = tmp_path / "strace.txt"
    r = run_fio(args, prefix=["strace", "-f", "-c", "-o", str(out),
                              "-e", "trace=fsync,fdatasync"]).ok()
    return r, summary_counts(out)


@pytest.mark.parametrize("mode", ["fsync", "fdatasync"])
def test_file_sync_issues_syscalls(tree_dir, tmp_path, mode):
    r, counts = _strace(tmp_path, sf_args(tree_dir, tree_files=150, tree_file_op="layout",
                                          rw="write", tree_file_sync=mode, **SHAPE_OPTS))
    assert r.job()["write"]["total_ios"] == 150
    assert counts.get(mode, 0) >= 150, f"{mode} calls: {counts} for 150 files"
    other = "fdatasync" if mode == "fsync" else "fsync"
    assert counts.get(other, 0) < 150, f"tree_file_sync={mode} also issued {other}: {counts}"


def test_no_sync_by_default(tree_dir, tmp_path):
    r, counts = _strace(tmp_path, sf_args(tree_dir, tree_files=150, tree_file_op="layout",
                                          rw="write", **SHAPE_OPTS))
    assert counts.get("fsync", 0) + counts.get("fdatasync", 0) < 10, counts


def test_dir_sync_on_delete_and_create(tree_dir, tmp_path):
    layout(tree_dir, 200, **SHAPE_OPTS)
    r, counts = _strace(tmp_path, sf_args(tree_dir, tree_files=200, tree_file_op="delete",
                                          rw="randread", number_ios=80, tree_dir_sync=1,
                                          **SHAPE_OPTS))
    assert r.job()["trim"]["total_ios"] == 80
    assert counts.get("fsync", 0) >= 80, f"tree_dir_sync=1: {counts} for 80 deletes"
    r, counts = _strace(tmp_path, sf_args(tree_dir, tree_files=200, tree_file_op="create",
                                          rw="randwrite", number_ios=60, tree_dir_sync=1,
                                          tree_file_sync="fdatasync", **SHAPE_OPTS))
    assert counts.get("fdatasync", 0) >= 60 and counts.get("fsync", 0) >= 60, \
        f"create with tree_file_sync=fdatasync,tree_dir_sync=1: {counts} for 60 creates"


def test_deliver_syncs(tree_dir, tmp_path):
    layout(tree_dir, 100, tree_maildir=1, **SHAPE_OPTS)
    r, counts = _strace(tmp_path, sf_args(tree_dir, tree_files=100, tree_maildir=1,
                                          tree_file_op="deliver", rw="randwrite", number_ios=50,
                                          tree_file_sync="fsync", tree_dir_sync=1, **SHAPE_OPTS))
    assert counts.get("fsync", 0) >= 100, f"deliver fsync file + dir: {counts} for 50"


# ---------------------------------------------------------------------------
# 8. File choice through fio (random_distribution, randseed)
# ---------------------------------------------------------------------------

OPEN_RE = re.compile(r'openat2?\([^,]+, "([^"]*f\d{10,})"')


def _opened_paths(tmp_path, tree, args, tag):
    out = tmp_path / f"open-{tag}.txt"
    r = run_fio(args, prefix=["strace", "-f", "-qq", "-e", "trace=openat,openat2", "-o", str(out)]).ok()
    paths = OPEN_RE.findall(out.read_text())
    return r, paths


def _top_share(paths, nfiles, frac=0.10):
    c = collections.Counter(paths)
    top = sorted(c.values(), reverse=True)[:int(nfiles * frac)]
    return sum(top) / len(paths)


def test_zipf_skews_file_choice(tree_dir, tmp_path):
    n = 1000
    opts = dict(tree_files=n, tree_fanout=8, tree_depth=2, tree_file_size_dist="fixed:512")
    layout(tree_dir, n, tree_fanout=8, tree_depth=2, tree_file_size_dist="fixed:512")
    r, zipf = _opened_paths(tmp_path, tree_dir,
                            sf_args(tree_dir, tree_file_op="read", rw="randread", number_ios=5000,
                                    random_distribution="zipf:1.2", **opts), "zipf")
    assert r.job()["read"]["total_ios"] == 5000
    assert len(zipf) == 5000, f"{len(zipf)} file opens traced for 5000 reads"
    r, uni = _opened_paths(tmp_path, tree_dir,
                           sf_args(tree_dir, tree_file_op="read", rw="randread", number_ios=5000,
                                   **opts), "uniform")
    assert len(uni) == 5000
    zs, us = _top_share(zipf, n), _top_share(uni, n)
    assert zs > 0.5, f"zipf:1.2: the top 10% of files got only {zs:.0%} of the opens"
    assert us < 0.2, f"uniform: the top 10% of files got {us:.0%} of the opens"
    assert len(set(uni)) == n, "uniform randread with the random map must touch every file"


def _stat_sequence(tree_dir, tmp_path, tag, **opts):
    out = tmp_path / f"stat-{tag}.txt"
    run_fio(sf_args(tree_dir, tree_files=500, tree_fanout=8, tree_depth=2,
                    tree_file_size_dist="fixed:512", tree_file_op="stat", rw="randread",
                    number_ios=300, **opts),
            prefix=["strace", "-f", "-qq", "-e", "trace=newfstatat,fstatat64",
                    "-o", str(out)]).ok()
    return re.findall(r'"([^"]*f\d{10,})"', out.read_text())


def test_randseed_drives_file_choice(tree_dir, tmp_path):
    """fio 3.33 seeds offsets from randseed only with randrepeat=0 (with the default
    randrepeat=1 it uses a fixed seed); as usual in fio, the engine adds nothing."""
    layout(tree_dir, 500, tree_fanout=8, tree_depth=2, tree_file_size_dist="fixed:512")
    a = _stat_sequence(tree_dir, tmp_path, "a", randrepeat=0, randseed=1234)
    b = _stat_sequence(tree_dir, tmp_path, "b", randrepeat=0, randseed=1234)
    c = _stat_sequence(tree_dir, tmp_path, "c", randrepeat=0, randseed=999)
    assert len(a) == 300, f"{len(a)} stats traced for 300 operations"
    assert a == b, "same randseed gave a different sequence of files"
    assert a != c, "different randseed gave the same sequence of files"
    assert len(set(a)) > 250, "random map: 300 picks of 500 files should rarely repeat"


def test_randrepeat_default_is_repeatable(tree_dir, tmp_path):
    layout(tree_dir, 500, tree_fanout=8, tree_depth=2, tree_file_size_dist="fixed:512")
    a = _stat_sequence(tree_dir, tmp_path, "a")
    b = _stat_sequence(tree_dir, tmp_path, "b")
    assert len(a) == 300 and a == b, "randrepeat=1 (default) must repeat the file sequence"
    assert a != sorted(a), "randread picked files in sequential order"


def test_sequential_order(tree_dir, tmp_path):
    n = 100
    layout(tree_dir, n, tree_fanout=4, tree_depth=1, tree_file_size_dist="fixed:100")
    r, paths = _opened_paths(tmp_path, tree_dir,
                             sf_args(tree_dir, tree_files=n, tree_fanout=4, tree_depth=1,
                                     tree_file_size_dist="fixed:100", tree_file_op="read", rw="read"),
                             "seq")
    shape = Shape(n, 4, 1)
    assert [p[-len(shape.path(0)):] for p in paths] == shape.all_paths(), \
        "rw=read must visit file 0, 1, 2, ... in order"


# ---------------------------------------------------------------------------
# 9. io_uring
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [1, 8])
def test_io_uring_read_matches_sync(tree_dir, depth):
    n = 800
    layout(tree_dir, n, **SHAPE_OPTS)
    total = sum(tree_files(tree_dir).values())
    sync = run_fio(sf_args(tree_dir, tree_files=n, tree_file_op="read", rw="read",
                           **SHAPE_OPTS)).ok().job()["read"]
    r = run_fio(sf_args(tree_dir, tree_files=n, tree_file_op="read", rw="read", tree_io_api="io_uring",
                        iodepth=depth, **SHAPE_OPTS)).ok()
    ur = r.job()["read"]
    assert (ur["total_ios"], ur["io_bytes"]) == (sync["total_ios"], sync["io_bytes"]) \
        == (n, total), f"io_uring depth {depth}: {ur['total_ios']}/{ur['io_bytes']}, " \
        f"sync: {sync['total_ios']}/{sync['io_bytes']}, tree: {n}/{total}"
    assert ur["clat_ns"]["N"] == n
    # fio's submit histogram counts the engine's submissions: none is empty
    assert r.job()["iodepth_submit"]["0"] == 0, r.job()["iodepth_submit"]
    if depth == 8:
        lvl = r.job()["iodepth_level"]
        assert lvl["8"] > 50, f"io_uring iodepth=8 did not keep 8 in flight: {lvl}"


def test_io_uring_opens_in_place_only_when_the_ring_is_empty(tree_dir, tmp_path):
    """An open is made in place (a system call) when the ring holds nothing
    else, so at iodepth 1 every file's open is an openat2 of fio's process
    and none goes through an io-wq worker; at iodepth 8 the ring is rarely
    empty and the opens stay in it."""
    n = 300
    layout(tree_dir, n, **SHAPE_OPTS)
    calls = {}
    for depth in (1, 8):
        out = tmp_path / f"strace-{depth}.txt"
        run_fio(sf_args(tree_dir, tree_files=n, tree_file_op="read", rw="read",
                        tree_io_api="io_uring", iodepth=depth, **SHAPE_OPTS),
                prefix=["strace", "-f", "-c", "-o", str(out), "-e", "trace=openat2,openat"]).ok()
        c = summary_counts(out)
        calls[depth] = c.get("openat2", 0) or c.get("openat", 0)
    # depth 1: the n files, plus the engine's own opens of the tree (a few)
    assert n <= calls[1] <= n + 20, calls
    assert calls[8] < n // 2, calls


@pytest.mark.parametrize("depth", [1, 4])
def test_io_uring_reads_files_grown_past_their_model_size(tree_dir, depth):
    """The reads the tree's arithmetic expects to reach the end of file (a
    full chunk, then a short one) go in hard-linked with the close. A file
    grown since the layout returns a full chunk at the last instead, its
    descriptor already closed: it must be opened again and read to its end,
    every byte counted, as the sync path counts them. A file shrunk since
    comes back short early: the reads after that count nothing."""
    n = 70
    opts = dict(tree_fanout=8, tree_depth=2, tree_file_size_dist="fixed:16k", bs="16k")
    layout(tree_dir, n, **opts)
    # appends of 0, 1 byte, a chunk and a bit, three chunks: the last two
    # leave bytes after the read that was expected to be the last; then
    # files cut by a byte, by 100 bytes and to nothing
    growth = [0, 1, 16384 + 100, 3 * 16384, -1, -100, -16384]
    for i, rel in enumerate(sorted(tree_files(tree_dir))):
        with open(Path(tree_dir) / rel, "ab") as f:
            g = growth[i % len(growth)]
            if g < 0:
                f.truncate(16384 + g)
            f.write(b"x" * max(g, 0))
    on_disk = sum(tree_files(tree_dir).values())
    assert on_disk > n * 16384
    for api in ("io_uring", "sync"):
        r = run_fio(sf_args(tree_dir, tree_files=n, tree_file_op="read", rw="read",
                            tree_io_api=api, iodepth=depth, **opts)).ok()
        rd = r.job()["read"]
        assert (rd["total_ios"], rd["io_bytes"]) == (n, on_disk), api


@pytest.mark.parametrize("depth", [1, 8])
def test_io_uring_layout_matches_sync(tree_dir, other_tree_dir, depth):
    n = 600
    params = dict(tree_maildir=1, tree_file_sync="fsync", **SHAPE_OPTS)
    r = layout(tree_dir, n, tree_io_api="io_uring", iodepth=depth, **params)
    layout(other_tree_dir, n, **params)
    a, b = read_tree(tree_dir), read_tree(other_tree_dir)
    assert a.keys() == b.keys()
    wrong = [p for p in a if a[p] != b[p]]
    assert not wrong, f"io_uring layout differs from sync layout: {wrong[:3]}"
    w = r.job()["write"]
    assert w["total_ios"] == n and w["io_bytes"] == sum(len(v) for v in a.values())
    # rerun through io_uring: nothing to write
    r = layout(tree_dir, n, tree_io_api="io_uring", iodepth=depth, **params)
    assert r.job()["write"]["io_bytes"] == 0


def test_io_uring_mix(tree_dir, tmp_path):
    n = 400
    opstats = tmp_path / "ops.jsonl"
    layout(tree_dir, n, tree_maildir=1, **SHAPE_OPTS)
    r = run_fio(sf_args(tree_dir, tree_files=n, tree_maildir=1, tree_io_api="io_uring", iodepth=8,
                        tree_file_op="read:40,stat:10,deliver:20,delete:10,append:20",
                        rw="randread", number_ios=500, tree_dir_sync=1, tree_file_sync="fdatasync",
                        tree_opstats_file=opstats, **SHAPE_OPTS)).ok()
    j = r.job()
    assert j["read"]["total_ios"] + j["write"]["total_ios"] + j["trim"]["total_ios"] == 500
    ops = read_opstats(opstats)[0]["ops"]
    assert sum(o["ops"] for o in ops.values()) == 500
    assert all(o["errors"] == 0 for o in ops.values()), ops
    assert ops["read"]["ops"] + ops["stat"]["ops"] == j["read"]["total_ios"]
    assert ops["delete"]["ops"] == j["trim"]["total_ios"]
    assert ops["deliver"]["ops"] + ops["append"]["ops"] == j["write"]["total_ios"]
    assert ops["deliver"]["bytes"] + ops["append"]["bytes"] == j["write"]["io_bytes"]
    assert not list(tree_dir.glob("**/tmp/*")), "staging files left in tmp/"


def test_io_uring_stat_and_delete(tree_dir):
    layout(tree_dir, 300, **SHAPE_OPTS)
    r = run_fio(sf_args(tree_dir, tree_files=300, tree_io_api="io_uring", iodepth=4,
                        tree_file_op="delete", rw="randread", number_ios=100, **SHAPE_OPTS)).ok()
    assert r.job()["trim"]["total_ios"] == 100
    assert len(tree_files(tree_dir)) == 200
    r = run_fio(sf_args(tree_dir, tree_files=300, tree_io_api="io_uring", iodepth=4,
                        tree_file_op="stat", rw="randread", number_ios=100, **SHAPE_OPTS)).ok()
    assert r.job()["read"]["total_ios"] == 100 and r.job()["read"]["io_bytes"] == 0


# ---------------------------------------------------------------------------
# 10. direct=1
# ---------------------------------------------------------------------------

def _odirect_supported(d: Path) -> bool:
    probe = d / ".odirect-probe"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o644)
    except OSError:
        return False
    os.close(fd)
    probe.unlink()
    return True


def test_direct_on_disk_filesystem(tree_dir, other_tree_dir):
    fstype = subprocess.run(["stat", "-f", "-c", "%T", str(tree_dir)], capture_output=True,
                            text=True).stdout.strip()
    if not _odirect_supported(tree_dir):
        pytest.skip(f"{tree_dir} ({fstype}) does not support O_DIRECT")
    n = 300
    params = dict(tree_fanout=4, tree_depth=2, tree_file_size_dist="uniform:1:20000", bs="4k")
    r = layout(tree_dir, n, direct=1, **params)
    layout(other_tree_dir, n, **params)
    a, b = read_tree(tree_dir), read_tree(other_tree_dir)
    assert a.keys() == b.keys()
    assert all(a[p] == b[p] for p in a), "direct=1 layout (unaligned tails) wrote other data"
    assert r.job()["write"]["io_bytes"] == sum(len(v) for v in a.values())
    r = run_fio(sf_args(tree_dir, tree_files=n, tree_file_op="read", rw="read", direct=1,
                        **params)).ok()
    assert r.job()["read"]["total_ios"] == n
    assert r.job()["read"]["io_bytes"] == sum(len(v) for v in a.values())
    r = run_fio(sf_args(tree_dir, tree_files=n, tree_file_op="append", rw="randwrite",
                        number_ios=50, direct=1, tree_append_size="fixed:100", **params)).ok()
    assert r.job()["write"]["io_bytes"] == 5000
    assert sum(tree_files(tree_dir).values()) == sum(len(v) for v in a.values()) + 5000


@needs_root
def test_direct_on_tmpfs(tmpfs_dir):
    """docs: a file system without O_DIRECT (tmpfs) gives a clear error.

    Newer kernels (6.6+) give tmpfs O_DIRECT; there the job must simply work."""
    n = 100
    tree = tmpfs_dir / "t"
    tree.mkdir()
    params = dict(tree_files=n, tree_fanout=4, tree_depth=1, tree_file_size_dist="fixed:4k")
    r = run_fio(sf_args(tree, tree_file_op="layout", rw="write", direct=1, **params))
    if _odirect_supported(tmpfs_dir):
        r.ok()
        assert len(tree_files(tree)) == n
    else:
        _assert_direct_error(r, tree)


def _assert_direct_error(r, tree):
    assert r.rc != 0, "direct=1 on a file system without O_DIRECT must fail\n" + r.describe()
    lines = r.smallfile_lines()
    assert any(("direct" in l or "O_DIRECT" in l) and str(tree) in l for l in lines), \
        "error must name direct/O_DIRECT and the tree\n" + r.describe()
    assert len(lines) <= 2, "one clear error, not one per file\n" + r.describe()


@needs_root
def test_direct_without_odirect_support_is_clear_error(ramfs_dir):
    """ramfs has no O_DIRECT on any kernel."""
    assert not _odirect_supported(ramfs_dir)
    tree = ramfs_dir / "t"
    tree.mkdir()
    r = run_fio(sf_args(tree, tree_files=100, tree_fanout=4, tree_depth=1,
                        tree_file_op="layout", rw="write", direct=1))
    _assert_direct_error(r, tree)
    # reads of a tree laid out without direct fail the same way
    layout(tree, 100, tree_fanout=4, tree_depth=1)
    r = run_fio(sf_args(tree, tree_files=100, tree_fanout=4, tree_depth=1,
                        tree_file_op="read", rw="read", direct=1))
    _assert_direct_error(r, tree)
