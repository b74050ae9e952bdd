"""fio-pack summary knows the scenario: one entry per job
(its clones merged), PostMark's and the catalogue's headlines, the re-read
note only where a cold test was asked for, and refusals in one line
before anything is printed.

On the stored outputs of tests/fixtures/fio-json (real fio 3.33 and the
pack's engines; marked nofio) and, where a case needs a fresh run, on a
real fio run here."""
import json
import re
import subprocess
import sys

import pytest

from helpers.fio import REPO
from fiopack.catalogue import split_json

STORED = REPO / "tests" / "fixtures" / "fio-json"
SUMMARY = [sys.executable, str(REPO / "scripts" / "fio-pack"), "summary"]

pytestmark = pytest.mark.nosan


def summary(*args):
    return subprocess.run(SUMMARY + [str(a) for a in args], capture_output=True, text=True,
                          timeout=120)


def doc_of(path):
    text = path.read_text()
    return json.loads(split_json(text)[1])


@pytest.mark.nofio
def test_clones_are_one_job():
    """numjobs=2 without group_reporting: fio prints two entries; the
    summary one, with the clones' I/Os added (the 002 precondition printed
    16 times at 16 threads)."""
    path = STORED / "local-multi-plain.out"
    clones = [j for j in doc_of(path)["jobs"] if j["jobname"] == "seqread"]
    assert len(clones) == 2
    p = summary(path)
    assert p.returncode == 0, p.stderr
    heads = [l for l in p.stdout.splitlines() if l.startswith("seqread")]
    assert heads == ["seqread (2 clones merged)"]
    read = p.stdout.split("seqread (2 clones merged)\n", 1)[1].splitlines()[0]
    assert f"({sum(c['read']['total_ios'] for c in clones)} ops" in read
    # two servers: a job per host, said which
    p = summary(STORED / "client-server.out")
    ports = sorted({e["port"] for e in doc_of(STORED / "client-server.out")["client_stats"]
                    if "port" in e})
    for port in ports:
        assert re.search(rf"^cs-read on \S+:{port} \(2 clones merged\)$", p.stdout, re.M)


@pytest.mark.nofio
def test_refusal_before_any_line(tmp_path):
    """A bad opstats file was refused after the jobs were printed: the
    refusal is one line on stderr and nothing on stdout."""
    bad = tmp_path / "ops.jsonl"
    bad.write_text("not json\n")
    p = summary(STORED / "smallfile.json", bad)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == [f"fio-pack summary: {bad} line 1: not a JSON line "
                                      f"(Expecting value: line 1 column 1 (char 0))"]
    for args, what in (([tmp_path / "none.json"], "cannot read: No such file or directory"),
                       ([tmp_path], "a directory, not a regular file"),
                       ([bad], "not fio JSON output")):
        p = summary(*args)
        assert p.returncode == 2 and p.stdout == ""
        (line,) = p.stderr.splitlines()
        assert line.startswith(f"fio-pack summary: {args[0]}: {what}"), line


@pytest.mark.nofio
def test_postmark_headline_and_sync():
    """PostMark: its transactions per second, the elapsed time, the files
    created and appended to; the transactions (fio's sync direction) were
    dropped, as were every job's fsyncs."""
    path = STORED / "postmark.json"
    (job,) = doc_of(path)["jobs"]
    p = summary(path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    m = re.fullmatch(r"  PostMark: (\d+) transactions in ([\d.]+) s: (\d+) transactions/s; "
                     r"(\d+) creates, (\d+) appends, (\d+) reads, (\d+) deletes", lines[1])
    assert m, lines[1]
    tx, secs, rate, creates, appends, reads, deletes = m.groups()
    assert int(tx) == job["sync"]["total_ios"] == 150       # pm_transactions=150
    ms = job["read"]["runtime"]            # the job's, in every direction
    assert float(secs) == ms / 1000
    assert int(rate) == round(job["sync"]["total_ios"] * 1000 / ms)
    assert int(creates) + int(appends) == job["write"]["total_ios"]
    assert (int(reads), int(deletes)) == (job["read"]["total_ios"], job["trim"]["total_ios"])
    assert re.search(rf"^  transactions .* \({tx} transactions\)$", p.stdout, re.M)
    # a plain job's fsyncs (fsync=8 in the randwrite job)
    path = STORED / "local-multi-plain.out"
    (rw,) = [j for j in doc_of(path)["jobs"] if j["jobname"] == "randwrite"]
    p = summary(path)
    n = rw["sync"]["lat_ns"]["N"]
    assert n and re.search(rf"^  sync \(fsync\) .* \({n} syncs\)$", p.stdout, re.M), p.stdout


def test_sysbench_headline(tmp_path):
    """The 002 study's run at 4 threads: the scenario's throughput and p95
    response time under the measured job, the precondition once."""
    from helpers.fio import ENGINE_DIR, FIO
    (tmp_path / "t").mkdir()
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "fio-pack"), "study",
                        "sysbench-rndrd", "--sweep", "threads=4", "--target",
                        f"t={tmp_path / 't'}", "--set", "runtime=1", "--set", "size=2m",
                        "--fio", FIO, "--engine-dir", ENGINE_DIR, "--out", tmp_path / "s",
                        "--quiet"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    result = tmp_path / "s" / "runs" / "0001.json"
    (job,) = [j for j in json.loads(result.read_text())["jobs"]
              if j["jobname"] == "sysbench-rndrd"]
    p = summary(result)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert sum(1 for l in lines if l.startswith("precondition")) == 1
    i = lines.index("sysbench-rndrd")
    m = re.fullmatch(r"  sysbench-rndrd: throughput ([\d.]+) MiB/s, "
                     r"response time p95 ([\d.]+) ms", lines[i + 1])
    assert m, lines[i + 1]
    tp = job["read"]["bw_bytes"] / 2 ** 20
    p95 = job["read"]["clat_ns"]["percentile"]["95.000000"] / 1e6
    assert float(m.group(1)) == pytest.approx(tp, rel=0.005, abs=0.005)
    assert float(m.group(2)) == pytest.approx(p95, rel=0.005)


def reread(tree, out, name, **opts):
    """A smallfile read job over @tree's 40 files, 3 passes, 2 clones: its
    fio JSON and opstats file in @out."""
    from helpers.fio import ENGINE, FIO
    args = [f"--name={name}", f"--ioengine=external:{ENGINE}", f"--tree_dir={tree}",
            "--tree_files=40", "--tree_file_op=read", "--rw=randread", "--number_ios=120",
            "--numjobs=2", f"--tree_opstats_file={out / (name + '.jsonl')}",
            "--output-format=json"] + [f"--{k}={v}" for k, v in opts.items()]
    p = subprocess.run([str(FIO)] + args, capture_output=True, text=True, timeout=120,
                       cwd=out)
    assert p.returncode == 0, p.stderr
    (out / (name + ".json")).write_text(p.stdout)
    return out / (name + ".json"), out / (name + ".jsonl")


def notes(result, ops):
    p = summary(result, ops)
    assert p.returncode == 0, p.stderr
    return [l for l in p.stdout.splitlines() if l.startswith("note:")]


@pytest.mark.parametrize("where", ["disk", "tmpfs"])
def test_reread_note_only_where_cold_was_asked(where, tmp_path, request):
    """The mail and web jobs re-read a hot spool on purpose: no note. A job
    that asks for a cold test (tree_drop_cache, caches dropped before it,
    a description that says cold) gets one line, not one per clone, with
    the job's figure. On tmpfs, none: every read there is from memory."""
    from helpers.fio import ENGINE, FIO
    from fiopack.mounts import fs_type
    tree = request.getfixturevalue("tmpfs_dir") if where == "tmpfs" else tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    assert (fs_type(tree) == "tmpfs") == (where == "tmpfs")
    subprocess.run([str(FIO), "--name=layout", f"--ioengine=external:{ENGINE}",
                    f"--tree_dir={tree}", "--tree_files=40", "--tree_file_op=layout",
                    "--rw=write"], capture_output=True, check=True, timeout=120)
    assert notes(*reread(tree, tmp_path, "warm")) == []
    cold = notes(*reread(tree, tmp_path, "cold", description="cold read of the tree"))
    dropped = notes(*reread(tree, tmp_path, "dropped", tree_drop_cache=1))
    if where == "tmpfs":
        assert cold == dropped == []
        return
    passes = [json.loads(l)["read_passes"]
              for l in (tmp_path / "cold.jsonl").read_text().splitlines()]
    assert len(passes) == 2
    assert cold == [f"note: cold: {sum(passes) / 2:.2f} passes over the tree: reads after the "
                    "first pass may come from the page cache (for a cold test: number_ios= at "
                    "most tree_files, or tree_drop_cache=1)"]
    # dropping the caches before the job declares it cold too (not run here:
    # it would empty the page cache of everything else on the machine)
    from fiopack.results.summary import declared_cold
    assert declared_cold({"exec_prerun": "sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches'"})
    assert not declared_cold({"exec_prerun": "sync", "description": "the mail spool"})
    assert len(dropped) == 1 and "inodes, dentries and directory blocks" in dropped[0]
