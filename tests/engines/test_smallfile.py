"""fio tests of the smallfile engine against its documented behaviour (docs/smallfile.md).

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

from conftest import (ENGINE, MARKER, engine_arg, needs_root, Shape, file_stats, kill_group, layout,
                      read_opstats, run_fio, sf_args, snapshot, start_fio_background,
                      strace_counts, tree_files)


def assert_layout_matches(root, shape: Shape):
    """Exactly the documented paths exist (plus the marker), no other file."""
    on_disk = tree_files(root)
    expected = set(shape.all_paths())
    missing = sorted(expected - set(on_disk))
    extra = sorted(set(on_disk) - expected)
    assert not missing and not extra, (
        f"layout differs from the documented paths: {len(missing)} missing "
        f"(e.g. {missing[:5]}), {len(extra)} unexpected (e.g. {extra[:5]})")
    assert (Path(root) / MARKER).is_file(), "tree marker .fio-smallfile-tree missing"
    return on_disk


def sizes_by_index(root, shape: Shape) -> list:
    files = tree_files(root)
    return [files[shape.path(i)] for i in range(shape.nfiles)]


def read_tree(root) -> dict:
    root = Path(root)
    return {rel: (root / rel).read_bytes() for rel in tree_files(root)}


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
    assert (tree_dir / MARKER).read_text() == (other_tree_dir / MARKER).read_text()


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

SHAPE_OPTS = dict(tree_fanout=8, tree_depth=2, tree_file_size_dist="uniform:100:20000")


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
    return r, strace_counts(out)


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
        c = strace_counts(out)
        calls[depth] = c.get("openat2", 0) or c.get("openat", 0)
    # depth 1: the n files, plus the engine's own opens of the tree (a few)
    assert n <= calls[1] <= n + 20, calls
    assert calls[8] < n // 2, calls


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


# ---------------------------------------------------------------------------
# 11. Bad input
# ---------------------------------------------------------------------------

def assert_refused(r, needle, *dirs_and_snaps):
    lines = r.smallfile_lines()
    assert r.rc != 0, "fio must exit non-zero\n" + r.describe()
    assert r.rc > 0, "fio crashed\n" + r.describe()
    for bad in ("signal", "Assertion", "Segmentation", "core dumped"):
        assert bad not in r.stderr, f"{bad!r} in stderr\n" + r.describe()
    assert lines, "no 'smallfile:' error line on stderr\n" + r.describe()
    assert any(needle in l for l in lines), \
        f"no 'smallfile:' line names {needle!r}\n" + r.describe()
    assert len(lines) == 1, "expected a one-line error\n" + r.describe()
    for d, snap in dirs_and_snaps:
        assert snapshot(d, content=True) == snap, f"refused job changed {d}"


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
    return (r1.job()["write"]["total_ios"], r2.job()["read"]["total_ios"],
            r2.job()["write"]["total_ios"], r2.job()["trim"]["total_ios"],
            {k: v[:2] + v[4:] for k, v in disk.items() if not k.startswith("ops")},
            sizes, lines)


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
    assert res.smallfile_lines() == [
        f"smallfile: job warm read {3 * n} files of a {n}-file tree: 3.00 passes; reads after "
        "the first pass may come from the page cache (for a cold test: number_ios= at most "
        "tree_files with caches dropped first, or tree_drop_cache=1)"]
    assert read_opstats(ops)[0]["read_passes"] == 3.0
    assert warm < 1.5 * n * size < cold, (warm, cold)


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
