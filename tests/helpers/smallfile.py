"""What the smallfile engine's tests share: a tree checked against its
documented paths, read back whole, the shape options of the operation
tests, and a refused job's one line."""
from pathlib import Path

from helpers.fio import MARKER
from helpers.trees import Shape, snapshot, tree_files


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


def read_tree(root) -> dict:
    root = Path(root)
    return {rel: (root / rel).read_bytes() for rel in tree_files(root)}


SHAPE_OPTS = dict(tree_fanout=8, tree_depth=2, tree_file_size_dist="uniform:100:20000")


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
