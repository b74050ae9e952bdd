"""fio tests of the smallfile engine against a careless or hostile user
(issue 23, docs/RELIABILITY.md "Trees, links and options: smallfile"):
error lines that stay one line whatever the user's text, markers that are
only markers, hard links never written through, numeric options that never
wrap, bounded histogram input, output files checked before the run, and a
tree no larger than the engine can address.

Every test runs the real fio with the real engine on real directories and
checks what fio reported and what is on disk.
"""
import pytest

from conftest import run_fio, sf_args, snapshot
from test_smallfile_safety import assert_refused


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
