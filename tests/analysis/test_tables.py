"""Tables and reports as a reader pastes them: the
provenance line a shell command, one precision per column, no all-dash
row, --baseline refusals naming columns as the table shows them.

On the stored outputs of tests/fixtures/fio-json (marked nofio) and, where
a case needs it, on real runs here."""
import json
import shlex
import subprocess
import sys

import pytest

from helpers.fio import REPO

STORED = REPO / "tests" / "fixtures" / "fio-json"
ANALYZE = [sys.executable, str(REPO / "scripts" / "fio-pack"), "analyze"]

pytestmark = pytest.mark.nosan


def analyze(*args):
    return subprocess.run(ANALYZE + [str(a) for a in args], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


@pytest.mark.nofio
def test_provenance_is_a_shell_command(tmp_path):
    """The command under a table, in a plot's record: pasted into a shell,
    it is the command that made them ("'fio-pack analyze' table" was one
    word)."""
    args = ["table", str(STORED / "qd"), "--rows", "iodepth", "--metric", "expr:read.iops * 1"]
    p = analyze(*args)
    assert p.returncode == 0, p.stderr
    line = p.stdout.strip().splitlines()[-1].strip("_")
    assert shlex.split(line.split("; ")[-1]) == ["fio-pack", "analyze"] + args
    png = tmp_path / "p.svg"
    args = ["plot", str(STORED / "qd"), "--metric", "read.iops", "--x", "iodepth",
            "--where", "job!=qd-a-1", "--title", "queue depth, two runs", "-o", str(png)]
    assert analyze(*args).returncode == 0
    side = json.loads((tmp_path / "p.svg.json").read_text())
    assert shlex.split(side["command"]) == ["fio-pack", "analyze"] + args


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The 002 study at 1 and 4 threads on one directory."""
    from helpers.fio import ENGINE_DIR, FIO
    base = tmp_path_factory.mktemp("tables")
    (base / "t").mkdir()
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "fio-pack"), "study",
                        "sysbench-rndrd", "--sweep", "threads=1,4", "--target", f"t={base / 't'}",
                        "--set", "runtime=1", "--set", "size=2m", "--fio", FIO,
                        "--engine-dir", ENGINE_DIR, "--out", base / "s", "--quiet"],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    return base / "s"


def md_rows(text):
    """The body rows of every Markdown table in @text, as lists of cells."""
    return [[c.strip() for c in l.strip("|").split("|")] for l in text.splitlines()
            if l.startswith("| ") and not l.startswith("|---")]


def test_no_unmapped_leaves_no_all_dash_row(study):
    """The FusionIO card's 64 threads is a point of no mapped device: with
    --no-unmapped its row was all dashes."""
    p = analyze("report", study, "--map", "intel320=t")
    assert p.returncode == 0, p.stderr
    assert any(r[0] == "64" for r in md_rows(p.stdout))      # FusionIO's, shown
    p = analyze("report", study, "--map", "intel320=t", "--no-unmapped")
    assert p.returncode == 0, p.stderr
    rows = md_rows(p.stdout)
    assert rows and not [r for r in rows if all(c == "-" for c in r[1:])], rows
    assert not [r for r in rows if r[0] == "64"]
    p = analyze("report", study, "--map", "intel320=t", "--no-unmapped", "--format", "csv")
    lines = p.stdout.splitlines()
    head = lines[0].split(",")
    for l in lines[1:]:
        cell = dict(zip(head, l.split(",")))
        assert cell["measured"] or cell["published"], l


def decimals(cell) -> list:
    """The decimals of every number in a cell ("0.12 (0.0896–0.16)": 2, 4, 2)."""
    import re
    return [len(m) for m in re.findall(r"\d\.(\d+)", cell)]


@pytest.mark.nofio
@pytest.mark.parametrize("cells", ["range", "columns"])
def test_one_precision_per_column(cells):
    """The stored queue-depth sweep's p90 latencies straddle 0.1 ms: a
    column said "0.13 (0.0257–0.13)". Every number of a column has the
    same decimals, the ratio columns included; compare's columns too."""
    p = analyze("table", STORED / "qd", "--rows", "iodepth", "--metric", "read.clat_p90_ms",
                "--metric", "read.lat_mean_ms", "--cells", cells, "--baseline",
                "/tmp/fio-json-fixtures/data/dev-a")
    assert p.returncode == 0, p.stderr
    rows = [r for r in md_rows(p.stdout) if r[0] != "iodepth"]
    assert len(rows) == 6
    for table in (rows[:3], rows[3:]):
        for col in range(1, len(table[0])):
            found = {d for r in table for d in decimals(r[col])}
            assert len(found) <= 1, (col, [r[col] for r in table])   # n: none
    p = subprocess.run(ANALYZE + ["compare", str(STORED / "qd"), str(STORED / "qd"),
                                  "--threshold", "read.clat_p90_ms=5%"],
                       capture_output=True, text=True, timeout=120)
    rows = [r for r in md_rows(p.stdout) if r[0] != "metric"]
    for col in (2, 3):
        assert len({d for r in rows for d in decimals(r[col])}) == 1, [r[col] for r in rows]


def test_baseline_refusal_names_hosts_as_the_table_does(tmp_path):
    """A study over two fio servers named lab-a and lab-b: the table's
    columns say "ssd, lab-a"; a --baseline that is no column was refused
    with the columns listed by address ("ssd, 127.0.0.1:PORT")."""
    from helpers.fio import ENGINE_DIR, FIO, IS_ROOT
    from helpers.procs import fio_servers
    if not IS_ROOT:
        pytest.skip("needs root to give fio servers host names (unshare --uts)")
    (tmp_path / "d").mkdir()
    with fio_servers(tmp_path, hostnames=("lab-a", "lab-b")) as ports:
        p = subprocess.run([sys.executable, str(REPO / "scripts" / "fio-pack"), "study",
                            "sysbench-rndrd", "--sweep", "threads=1", "--target",
                            f"ssd={tmp_path / 'd'}", "--set", "runtime=1", "--set", "size=4m",
                            "--fio", FIO, "--engine-dir", ENGINE_DIR, "--out", tmp_path / "s",
                            "--quiet"] + [a for port in ports
                                          for a in ("--server", f"127.0.0.1:{port}")],
                           capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    study = tmp_path / "s"
    p = analyze("table", study, "--metric", "throughput")
    assert p.returncode == 0, p.stderr
    assert md_rows(p.stdout)[0][1:] == ["ssd, lab-a", "ssd, lab-b"]
    p = analyze("table", study, "--metric", "throughput", "--baseline", "ssd,lab-c")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == ["fio-pack analyze table: --baseline ssd,lab-c: not a "
                                     "column; columns: ssd, lab-a; ssd, lab-b"]
    # a baseline by name is a column
    p = analyze("table", study, "--metric", "throughput", "--baseline", "ssd,lab-a")
    assert p.returncode == 0, p.stderr


@pytest.mark.nofio
def test_ratio_headers_readable():
    """A ratio column of a labelled target over a path read
    "dir-a//tmp/fio-json-fixtures/data/dev-b": two names, a slash apart,
    paths cut to what tells the columns apart, in Markdown and CSV."""
    args = ["table", STORED / "qd", "--rows", "iodepth", "--cols", "target", "--metric",
            "read.iops", "--label", "/tmp/fio-json-fixtures/data/dev-a=dir-a"]
    p = analyze(*args, "--baseline", "/tmp/fio-json-fixtures/data/dev-b")
    assert p.returncode == 0, p.stderr
    head = md_rows(p.stdout)[0]
    assert head[-2:] == ["dir-a / dev-b", "dev-c / dev-b"], head
    assert "Ratio columns: column / dev-b, of the medians" in p.stdout
    p = analyze(*args, "--baseline", "dir-a", "--format", "csv")
    assert p.stdout.splitlines()[0].split(",")[-2:] == ["dev-b / dir-a", "dev-c / dir-a"]


def test_report_one_precision_per_column(study):
    """The report's own tables wrote each cell by itself: a response-time
    column on tmpfs read "0.00193" beside "0.12", a ratio column "0.0451"
    beside "1.30". Every column of every report table, published and
    ratio columns included, has one number of decimals."""
    p = analyze("report", study, "--map", "intel320=t", "--map", "raid10=t")
    assert p.returncode == 0, p.stderr
    blocks, cur = [], []
    for line in p.stdout.splitlines():
        if line.startswith("| "):
            cur.append([c.strip() for c in line.strip("|").split("|")])
        elif not line.startswith("|---") and cur:
            blocks.append(cur)
            cur = []
    assert len(blocks) >= 3, p.stdout                   # throughput, p95, ratios
    mixed = []
    for head, *body in blocks:
        for col in range(1, len(head)):
            found = {d for r in body for d in decimals(r[col])}
            if len(found) > 1:
                mixed.append((head[col], [r[col] for r in body]))
    assert not mixed, mixed


@pytest.mark.nofio
def test_report_columns_take_their_smallest_values_decimals():
    """What the test above meets when a run's p95 straddles 0.1 ms (a study
    here gave "0.0845" over "0.14"): the column's decimals come from its
    smallest value, a published range's ends included."""
    from fiopack.results.report import Cell, format_columns
    body = [["1", Cell([0.0845]), Cell([0.5, 0.9], "~"), "-"],
            ["4", Cell([0.1362]), Cell([1.24]), Cell([7.2])]]
    assert format_columns(body, 2) == [["1", "0.0845", "~0.50-0.90", "-"],
                                       ["4", "0.1362", "1.24", "7.20"]]
