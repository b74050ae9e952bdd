"""What the analysis tests share: fio-pack analyze run as a user runs it,
and the Markdown tables of its output read back. A module of helpers, not
of tests: test_analysis.py and test_analysis_end_to_end.py import it, and
not each other."""
import subprocess
import sys

from fiopack import REPO

ANALYZE = [sys.executable, str(REPO / "scripts" / "fio-pack"), "analyze"]
TIMEOUT = 300


def analyze(*args, cwd=None):
    return subprocess.run(ANALYZE + [str(a) for a in args],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd or REPO)


def ok(p):
    assert p.returncode == 0, f"rc={p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
    return p


def md_tables(text):
    """The markdown tables of an output: [(title, header, rows)]."""
    tables, title, cur = [], None, None
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip()
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cur is None:
                cur = (title, cells, [])
                tables.append(cur)
            elif not set(line) <= set("|-: "):
                cur[2].append(cells)
        else:
            cur = None
    return tables
