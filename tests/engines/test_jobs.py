"""The shipped job files (jobs/*.fio) run as documented in their headers.

They are run from the repository root on a fresh directory with
SMALLFILE_FILES=2000. fio cannot override runtime= after a job file from the
command line, so each job file is copied with runtime=20 shortened to 2 s;
FIO_PACK_ENGINES is PACK_ENGINE_DIR (run_fio), so the sanitizer run loads the
sanitized engine.
"""
import configparser
import os
import re
import statistics
from pathlib import Path

import pytest

from helpers.fio import MARKER, REPO, layout, run_fio, sf_args
from helpers.jobs import JOBS, prepared_copy
from helpers.trees import read_opstats, tree_files

JOB_FILES = sorted(JOBS.glob("*.fio"))
NFILES = 2000


def parse_job(path: Path) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(comment_prefixes=(";", "#"), allow_no_value=True,
                                   interpolation=None, strict=False, delimiters=("=",))
    cp.optionxform = str
    cp.read_string(path.read_text())
    return cp


def header_comment(path: Path) -> str:
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith((";", "#")):
            lines.append(line)
        elif line.strip():
            break
        else:
            lines.append(line)
    return "\n".join(lines)


def run_job_file(name, tmp_path, tree, extra_env=None):
    job = prepared_copy(JOBS / name, tmp_path)
    opstats = tmp_path / "opstats.jsonl"
    env = {"SMALLFILE_DIR": str(tree), "SMALLFILE_FILES": str(NFILES),
           "SMALLFILE_OPSTATS": str(opstats), "TMPDIR": str(tmp_path)}
    env.update(extra_env or {})
    r = run_fio(jobfile=job, cwd=REPO, env=env).ok()
    return r, read_opstats(opstats)


def test_job_files_exist():
    names = [p.name for p in JOB_FILES]
    for want in ("smallfile-mail.fio", "smallfile-web.fio", "postmark-isp.fio",
                 "postmark-pts.fio", "postmark-default.fio"):
        assert want in names, names


@pytest.mark.nofio
@pytest.mark.parametrize("path", JOB_FILES, ids=[p.name for p in JOB_FILES])
def test_job_file_header_documents_variables(path):
    text = path.read_text()
    first = text.splitlines()[0]
    assert first.startswith((";", "#")), f"{path.name} must begin with a comment line"
    assert path.name in first, f"{path.name}: first line should name the file: {first!r}"
    used = set(re.findall(r"\$\{(\w+)\}", text))
    header = header_comment(path)
    undocumented = [v for v in sorted(used) if v not in header]
    assert not undocumented, f"{path.name} uses ${{{undocumented}}} without documenting it"
    body = text[len(header):]
    assert "ioengine=external:${FIO_PACK_ENGINES}/" in body, \
        "job files load the engine from ${FIO_PACK_ENGINES}"
    assert "FIO_PACK_ENGINES" in header and "fio-pack run" in header, \
        f"{path.name}: the header does not say how the engine is found"


@pytest.mark.parametrize("path", JOB_FILES, ids=[p.name for p in JOB_FILES])
def test_job_file_parses_and_is_accepted_by_fio(path, tmp_path):
    """fio --parse-only accepts the job file (with the engine loaded)."""
    cp = parse_job(path)
    assert cp.sections(), f"{path.name} has no job sections"
    job = prepared_copy(path, tmp_path)
    r = run_fio(["--parse-only"], jobfile=job, cwd=REPO, json_output=False,
                env={"SMALLFILE_DIR": str(tmp_path), "SMALLFILE_FILES": "100",
                     "PM_LOCATION": str(tmp_path)})
    assert r.rc == 0, r.describe()


def _check_layout_job(r, lines, tree):
    lay = r.job("layout")
    assert lay["write"]["total_ios"] == NFILES, "the layout job lays out every file once"
    assert lay["read"]["total_ios"] == 0 and lay["trim"]["total_ios"] == 0
    lay_lines = [l for l in lines if l["job"] == "layout"]
    assert len(lay_lines) == 2, f"layout runs as numjobs=2: {lay_lines}"
    assert sum(l["ops"]["layout"]["ops"] for l in lay_lines) == NFILES
    assert sum(l["ops"]["layout"]["bytes"] for l in lay_lines) == lay["write"]["io_bytes"]
    marker = (tree / MARKER).read_text()
    assert f"tree_files={NFILES}\n" in marker


def test_mail_job(tmp_path):
    tree = tmp_path / "spool"
    tree.mkdir()
    r, lines = run_job_file("smallfile-mail.fio", tmp_path, tree)
    names = [j["jobname"] for j in r.jobs]
    assert names == ["layout", "mail"], f"job entries (group_reporting): {names}"
    _check_layout_job(r, lines, tree)
    assert "tree_maildir=1\n" in (tree / MARKER).read_text()

    mail = r.job("mail")
    for d in ("read", "write", "trim"):
        assert mail[d]["total_ios"] > 0, f"mail job did no {d} operations"
        assert mail[d]["iops"] > 0, f"mail job reports 0 {d} IOPS"
        assert mail[d]["clat_ns"]["N"] == mail[d]["total_ios"]
    assert mail["read"]["io_bytes"] > 0 and mail["write"]["io_bytes"] > 0
    assert mail["trim"]["io_bytes"] == 0
    assert 1.0 <= mail["job_runtime"] / 1000 <= 10, f"runtime {mail['job_runtime']} ms for 2 s"

    mail_lines = [l for l in lines if l["job"] == "mail"]
    assert len(mail_lines) == 4, f"mail runs as numjobs=4: {len(mail_lines)} opstats lines"
    ops = {}
    for l in mail_lines:
        assert l["tree_dir"] == str(tree)
        for op, st in l["ops"].items():
            ops[op] = ops.get(op, 0) + st["ops"]
            assert st["errors"] == 0, f"{op} errors in {l}"
    assert set(ops) == {"read", "stat", "deliver", "delete"}, ops
    assert ops["read"] + ops["stat"] == mail["read"]["total_ios"]
    assert ops["deliver"] == mail["write"]["total_ios"]
    assert ops["delete"] == mail["trim"]["total_ios"]

    # on disk: a maildir spool, messages only in new/, no staging leftovers
    files = tree_files(tree)
    assert files and all("/new/" in p for p in files), "messages outside new/"
    assert not list(tree.glob("**/tmp/*")), "delivery staging files left in tmp/"
    assert len(files) <= NFILES
    assert all(int(Path(p).name[1:]) < NFILES for p in files)


def test_web_job(tmp_path):
    tree = tmp_path / "www"
    tree.mkdir()
    r, lines = run_job_file("smallfile-web.fio", tmp_path, tree)
    names = [j["jobname"] for j in r.jobs]
    assert names == ["layout", "web"], f"job entries (group_reporting): {names}"
    _check_layout_job(r, lines, tree)
    files = tree_files(tree)
    assert len(files) == NFILES

    web = r.job("web")
    assert web["read"]["total_ios"] > 0 and web["read"]["iops"] > 0
    assert web["read"]["io_bytes"] > 0
    assert web["write"]["total_ios"] == 0 and web["trim"]["total_ios"] == 0, \
        "the web serve job must only read"
    web_lines = [l for l in lines if l["job"] == "web"]
    assert len(web_lines) == 4
    ops = {}
    for l in web_lines:
        for op, st in l["ops"].items():
            ops[op] = ops.get(op, 0) + st["ops"]
    assert set(ops) == {"read", "stat"}, ops
    assert ops["read"] + ops["stat"] == web["read"]["total_ios"]
    assert ops["stat"] < ops["read"], "read:90,stat:10 mix"
    assert len(tree_files(tree)) == NFILES, "serving changed the tree"

    # a rerun on the same directory: the layout job finds every file whole
    before = {p: os.stat(tree / p).st_mtime_ns for p in files}
    r, _ = run_job_file("smallfile-web.fio", tmp_path, tree)
    assert r.job("layout")["write"]["total_ios"] == NFILES
    assert r.job("layout")["write"]["io_bytes"] == 0, "a rerun rewrote files"
    assert {p: os.stat(tree / p).st_mtime_ns for p in files} == before


def test_mail_job_default_directory_under_tmpdir(tmp_path):
    """SMALLFILE_DIR unset: the tree goes to $TMPDIR/fio-smallfile-UID/."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    job = prepared_copy(JOBS / "smallfile-mail.fio", tmp_path)
    env = {"SMALLFILE_FILES": "500", "TMPDIR": str(tmpdir), "SMALLFILE_DIR": None,
           "SMALLFILE_OPSTATS": None}
    r = run_fio(jobfile=job, cwd=REPO, env=env).ok()
    assert [j["jobname"] for j in r.jobs] == ["layout", "mail"]
    assert r.job("layout")["write"]["total_ios"] == 500
    roots = list((tmpdir / f"fio-smallfile-{os.getuid()}").iterdir())
    assert len(roots) == 1, roots
    assert "tree_files=500\n" in (roots[0] / MARKER).read_text()


@pytest.mark.parametrize("name", ["smallfile-mail.fio", "smallfile-web.fio"])
def test_job_header_scaling_claims(name, tmp_path):
    """The header's 400-million-file figures: depth (from the engine's own marker, laying
    out 3 files of such a tree) and the average file size (from 3000 laid-out files)."""
    path = JOBS / name
    header = header_comment(path)
    g = dict(parse_job(path)["global"])
    m = re.search(r"(\d+) levels deep", header)
    assert m, f"{name}: header gives no depth for the scaled tree"
    claimed_depth = int(m.group(1))
    m = re.search(r"tree_files_per_dir=(\d+)", header)
    fpd = int(m.group(1)) if m else int(g["tree_files_per_dir"])
    m = re.search(r"average ~(\d+) KiB", header)
    assert m, f"{name}: header gives no average size"
    claimed_avg = int(m.group(1)) * 1024

    opts = dict(tree_fanout=g["tree_fanout"], tree_file_size_dist=g["tree_file_size_dist"],
                bs=g.get("bs", "4k"), tree_maildir=g.get("tree_maildir", "0"))
    big = tmp_path / "big"
    big.mkdir()
    run_fio(sf_args(big, tree_files=400_000_000, tree_files_per_dir=fpd, tree_file_op="layout",
                    rw="write", number_ios=3, **opts)).ok()
    marker = (big / MARKER).read_text()
    assert f"tree_depth={claimed_depth}\n" in marker, \
        f"{name}: header says {claimed_depth} levels; engine made:\n{marker}"

    sample = tmp_path / "sample"
    sample.mkdir()
    layout(sample, 3000, tree_files_per_dir=g["tree_files_per_dir"], **opts)
    mean = statistics.mean(tree_files(sample).values())
    assert abs(mean - claimed_avg) < 0.15 * claimed_avg, \
        f"{name}: header says average ~{claimed_avg // 1024} KiB, sample mean {mean / 1024:.1f} KiB"
