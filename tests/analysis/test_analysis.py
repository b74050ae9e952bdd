"""scripts/fio-pack analyze and scripts/fiopack/results/data.py: reading, normalising, tables, plots,
reproduction reports and regression checks.

Every fixture is a real fio output produced here by build/fio: local multi-job
files with several groups, clones without group_reporting, group_reporting,
json+, a client/server run against two fio servers on loopback ports, the
PostMark and smallfile engines, and a queue-depth sweep over three targets run
twice (repeats). Runs are tiny (1 MiB files, runtime=1). The 002 study end to
end is test_analysis_end_to_end.py.
"""
import csv
import io
import json
import re
import shutil
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from analysis_common import TIMEOUT, analyze, md_tables, ok
from helpers.fio import ENGINE_DIR, FIO, IS_ROOT, REPO
from helpers.procs import fio_servers
from fiopack.catalogue import split_json
from fiopack.results.data import load
from fiopack.results.metrics import select

STUDY = [sys.executable, str(REPO / "scripts" / "fio-pack"), "study"]
FIGURES = REPO / "reference" / "figures.json"
STORED = REPO / "tests" / "fixtures" / "fio-json"


# Python analysis code: the sanitizer run (engines built with ASan) adds nothing here
pytestmark = pytest.mark.nosan


def fio(args, out: Path, cwd=None, env=None):
    """Runs build/fio, stores its whole standard output (as a user would: > out)."""
    p = subprocess.run([str(FIO)] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=cwd, env=env)
    assert p.returncode == 0, f"fio failed: {args}\n{p.stderr[-3000:]}\n{p.stdout[-2000:]}"
    out.write_text(p.stdout)
    return out


def fio_doc(path: Path) -> dict:
    text = path.read_text()
    return json.loads(split_json(text)[1])


# ---------------------------------------------------------------------------
# Fixtures: real fio outputs
# ---------------------------------------------------------------------------

MULTI_JOB = """\
[global]
directory={data}
size=1m
bs=4k
ioengine=psync

[seqread]
rw=read
numjobs=2

[randwrite]
rw=randwrite
fsync=8

[grouped]
new_group
stonewall
rw=randread
numjobs=2
iodepth=2
group_reporting
"""

QD_JOB_HEAD = """\
[global]
size=256k
bs=4k
ioengine=libaio
direct=1
rw=randread
norandommap
randrepeat=0
"""


def qd_job(dirs, rate=None) -> str:
    text = QD_JOB_HEAD + (f"rate_iops={rate}\n" if rate else "")
    for label, d in dirs.items():
        for qd in (1, 2, 4):
            text += f"\n[qd-{label}-{qd}]\nstonewall\ndirectory={d}\niodepth={qd}\n"
    return text


@pytest.fixture(scope="module",
                params=["live", pytest.param("stored", marks=pytest.mark.nofio)])
def out(request, tmp_path_factory):
    """The fio outputs every check reads, and where they ran: made here by
    build/fio ("live"), or the stored outputs of the same jobs in
    tests/fixtures/fio-json ("stored": made by the real fio 3.33 and the
    pack's engines, each beside the command that produced it, so these
    checks also run without fio). Either way each check compares what the
    analysis says with what the JSON holds, read here directly: no value
    is written into a test."""
    if request.param == "stored":
        return stored_outputs(tmp_path_factory)
    return live_outputs(tmp_path_factory)


def stored_outputs(tmp_path_factory) -> dict:
    """The outputs of tests/fixtures/fio-json; the directories the jobs ran
    in are read back from their JSON (the analysis reports them as targets)."""
    multi = STORED / "local-multi.out"
    qd = [STORED / "qd" / "first.json", STORED / "qd" / "second.json"]
    dirs = {}
    for j in fio_doc(qd[0])["jobs"]:
        label = re.fullmatch(r"qd-(\w)-\d", j["jobname"]).group(1)
        dirs[label] = Path(j["job options"]["directory"])
    return {"stored": True, "base": tmp_path_factory.mktemp("stored"),
            "data": Path(fio_doc(multi)["global options"]["directory"]),
            "multi": multi, "multi_json": STORED / "local-multi-plain.out",
            "qd": qd, "qd_dirs": dirs, "qd_slow": STORED / "qd-slow.json",
            "postmark": STORED / "postmark.json", "smallfile": STORED / "smallfile.json",
            "opstats": STORED / "smallfile-ops.jsonl"}


def live_outputs(tmp_path_factory) -> dict:
    """Real fio outputs, made once for the module."""
    base = tmp_path_factory.mktemp("fio-outputs")
    data = base / "data"
    data.mkdir()
    res = base / "results"
    res.mkdir()
    o = {"stored": False, "base": base, "data": data}

    job = base / "multi.fio"
    job.write_text(MULTI_JOB.format(data=data))
    o["multi"] = fio(["--output-format=json+", job], res / "local-multi.out")
    o["multi_json"] = fio(["--output-format=json", job], base / "local-multi-plain.out")

    dirs = {}
    for label in ("a", "b", "c"):
        dirs[label] = data / f"dev-{label}"
        dirs[label].mkdir()
    o["qd_dirs"] = dirs
    qd = base / "qd.fio"
    qd.write_text(qd_job(dirs))
    qdres = base / "qd"
    qdres.mkdir()
    o["qd"] = [fio(["--output-format=json", qd], qdres / f"{name}.json")
               for name in ("first", "second")]
    slow = base / "qd-slow.fio"
    slow.write_text(qd_job(dirs, rate=200))
    o["qd_slow"] = fio(["--output-format=json", slow], base / "slow.json")

    pm = data / "pm"
    pm.mkdir()
    o["postmark"] = fio(["--output-format=json", "--name=pm",
                         f"--ioengine=external:{ENGINE_DIR / 'postmark.so'}",
                         f"--pm_location={pm}", "--pm_number=40", "--pm_transactions=150",
                         "--pm_report=none"], base / "postmark.json")
    sf = data / "sf"
    sf.mkdir()
    o["opstats"] = base / "smallfile-ops.jsonl"
    eng = f"--ioengine=external:{ENGINE_DIR / 'smallfile.so'}"
    o["smallfile"] = fio(["--output-format=json", "--name=layout", eng, f"--tree_dir={sf}",
                          "--tree_files=100", "--tree_file_op=layout", "--rw=write",
                          f"--tree_opstats_file={o['opstats']}",
                          "--name=mix", "--stonewall", eng, f"--tree_dir={sf}",
                          "--tree_files=100", "--tree_file_op=read:50,stat:30,append:20",
                          "--rw=randread", "--number_ios=200", "--numjobs=2",
                          f"--tree_opstats_file={o['opstats']}"], base / "smallfile.json")
    return o


@pytest.fixture(scope="module")
def client_server(tmp_path_factory, out):
    """A client/server result from two fio servers on free loopback ports,
    and the servers' ports as the JSON names them (stored: the run of
    tests/fixtures/fio-json)."""
    if out["stored"]:
        path = STORED / "client-server.out"
        yield path, sorted({e["port"] for e in fio_doc(path)["client_stats"]
                            if e["jobname"] != "All clients"})
        return
    with fio_servers(tmp_path_factory.mktemp("fio-servers")) as ports:
        job = out["base"] / "cs.fio"
        job.write_text(f"[global]\ndirectory={out['data']}\nsize=1m\nbs=4k\nioengine=psync\n"
                       f"[cs-read]\nrw=randread\nnumjobs=2\n[cs-write]\nrw=write\n")
        args = ["--output-format=json"]
        for port in ports:
            args += [f"--client=127.0.0.1,{port}", job]
        path = fio(args, out["base"] / "client-server.out")
        yield path, ports


# ---------------------------------------------------------------------------
# Reading and normalising
# ---------------------------------------------------------------------------

def rows_of(ds, **kw):
    return [r for r in ds.rows if all(r.get(k) == v for k, v in kw.items())]


def test_local_multi_job_groups_clones_json_plus(out):
    text = out["multi"].read_text()
    assert not text.startswith("{"), "fio printed its note before the JSON (preamble expected)"
    doc = fio_doc(out["multi"])
    ds = load([out["multi"]])
    assert len(ds.runs) == 1
    run = ds.runs[0]
    assert run.fio_version == doc["fio version"]
    # seqread: two clones without group_reporting -> one row, ios summed
    clones = [j for j in doc["jobs"] if j["jobname"] == "seqread"]
    assert len(clones) == 2
    (rd,) = rows_of(ds, job="seqread", direction="read", op="")
    assert rd["clones"] == 2
    assert rd["ios"] == sum(j["read"]["total_ios"] for j in clones)
    assert rd["io_bytes"] == sum(j["read"]["io_bytes"] for j in clones) == 2 << 20
    assert rd["clat_min_ns"] == min(j["read"]["clat_ns"]["min"] for j in clones)
    assert rd["clat_max_ns"] == max(j["read"]["clat_ns"]["max"] for j in clones)
    n = sum(j["read"]["clat_ns"]["N"] for j in clones)
    mean = sum(j["read"]["clat_ns"]["mean"] * j["read"]["clat_ns"]["N"] for j in clones) / n
    assert rd["clat_mean_ns"] == pytest.approx(mean)
    # merged percentiles from the json+ histograms: the merged median lies between the clones'
    p50 = [j["read"]["clat_ns"]["percentile"]["50.000000"] for j in clones]
    assert min(p50) <= rd["clat_p50_ns"] <= max(p50)
    # group_reporting: one entry for two processes; the other group has its own groupid
    (gr,) = rows_of(ds, job="grouped", direction="read", op="")
    (ge,) = [j for j in doc["jobs"] if j["jobname"] == "grouped"]
    assert gr["clones"] == 1 and gr["params"]["numjobs"] == 2 and gr["params"]["iodepth"] == 2
    assert gr["ios"] == ge["read"]["total_ios"] and gr["iops"] == ge["read"]["iops"]
    assert gr["clat_p95_ns"] == ge["read"]["clat_ns"]["percentile"]["95.000000"]
    assert {r["groupid"] for r in ds.rows} == {0, 1}
    # fsync latencies: the sync direction
    (sy,) = rows_of(ds, job="randwrite", direction="sync")
    (we,) = [j for j in doc["jobs"] if j["jobname"] == "randwrite"]
    assert sy["ios"] == we["sync"]["lat_ns"]["N"] > 0
    assert sy["lat_mean_ns"] == we["sync"]["lat_ns"]["mean"]
    assert sy["lat_p99_ns"] == we["sync"]["lat_ns"]["percentile"]["99.000000"]
    # parameters from the job options over the global options, fio's defaults filled in
    (tot,) = rows_of(ds, job="randwrite", direction="total")
    assert tot["params"]["rw"] == "randwrite" and tot["params"]["bs"] == "4k"
    assert tot["params"]["fsync"] == 8 and tot["params"]["numjobs"] == 1
    assert tot["target"] == str(out["data"])
    assert tot["usr_cpu"] == we["usr_cpu"] and tot["ctx"] == we["ctx"]


def test_client_server_all_clients(client_server):
    path, ports = client_server
    text = path.read_text()
    assert text.lstrip().startswith("<"), "the servers' text lines come before the JSON"
    doc = fio_doc(path)
    ds = load([path])
    hosts = {f"127.0.0.1:{p}" for p in ports}
    reads = rows_of(ds, job="cs-read", direction="read", op="")
    assert {r["host"] for r in reads} == hosts
    for r in reads:
        es = [e for e in doc["client_stats"] if e["jobname"] == "cs-read"
              and f"{e['hostname']}:{e['port']}" == r["host"]]
        assert r["clones"] == len(es) == 2
        assert r["ios"] == sum(e["read"]["total_ios"] for e in es)
    # the "All clients" entry: a row of its own, left out unless asked for
    (allc,) = [e for e in doc["client_stats"] if e["jobname"] == "All clients"]
    (agg,) = rows_of(ds, job="All clients", direction="read")
    assert agg["host"] == "all" and agg["ios"] == allc["read"]["total_ios"]
    assert agg["ios"] == sum(r["ios"] for r in reads)
    assert not [r for r in select(ds.rows, []) if r["job"] == "All clients"]
    p = ok(analyze("table", path, "--rows", "host", "--cols", "job", "--metric", "read.ios",
                   "--format", "csv"))
    lines = list(csv.reader(io.StringIO(p.stdout)))
    assert lines[0] == ["metric", "unit", "host", "cs-read"]
    assert {l[2] for l in lines[1:]} == hosts
    p = ok(analyze("table", path, "--rows", "host", "--cols", "job", "--metric", "read.ios",
                   "--where", "job=All clients", "--format", "csv"))
    lines = list(csv.reader(io.StringIO(p.stdout)))
    assert lines[1][2:] == ["all", str(allc["read"]["total_ios"])]


def test_engine_operations(out):
    doc = fio_doc(out["postmark"])
    (job,) = doc["jobs"]
    ds = load([out["postmark"]])
    prios = {p["prio"]: p for p in job["write"]["prios"]}
    (create,) = rows_of(ds, direction="write", op="create")
    (append,) = rows_of(ds, direction="write", op="append")
    assert create["ios"] == prios[1]["clat_ns"]["N"] > 0
    assert append["ios"] == prios[2]["clat_ns"]["N"]
    assert create["clat_p99_ns"] == prios[1]["clat_ns"]["percentile"]["99.000000"]
    assert create["ios"] + append["ios"] == job["write"]["total_ios"]
    (tx,) = rows_of(ds, direction="sync", op="transaction")
    assert tx["ios"] == job["sync"]["total_ios"] == 150
    assert tx["lat_mean_ns"] == job["sync"]["lat_ns"]["mean"]
    (dl,) = rows_of(ds, direction="trim", op="delete")
    assert dl["ios"] == job["trim"]["total_ios"]
    # the catalogue's transactions metric evaluated the same way
    p = ok(analyze("table", out["postmark"], "--rows", "job", "--cols", "op",
                   "--metric", "write.ios", "--where", "op=create,append", "--format", "csv"))
    lines = list(csv.reader(io.StringIO(p.stdout)))
    assert lines[0][3:] == ["create", "append"]
    assert lines[1][3:] == [str(prios[1]["clat_ns"]["N"]), str(prios[2]["clat_ns"]["N"])]
    p = ok(analyze("table", out["postmark"], "--rows", "job", "--metric", "create.clat_p99_ms",
                   "--metric", "transaction.lat_mean_ms", "--metric", "append.iops",
                   "--format", "csv"))
    vals = [l for l in csv.reader(io.StringIO(p.stdout)) if l and l[0] != "metric"]
    assert float(vals[0][-1]) == pytest.approx(prios[1]["clat_ns"]["percentile"]["99.000000"] / 1e6)
    assert float(vals[1][-1]) == pytest.approx(job["sync"]["lat_ns"]["mean"] / 1e6)

    # smallfile: the opstats_file's operation classes, two clones merged
    lines = [json.loads(l) for l in out["opstats"].read_text().splitlines()]
    ds = load([out["smallfile"]])
    mix = [l for l in lines if l["job"] == "mix"]
    assert len(mix) == 2
    for op, d in (("read", "read"), ("stat", "read"), ("append", "write")):
        (r,) = rows_of(ds, job="mix", op=op)
        assert r["direction"] == d
        assert r["ios"] == sum(l["ops"][op]["ops"] for l in mix)
        assert r["io_bytes"] == sum(l["ops"][op]["bytes"] for l in mix)
    (lay,) = rows_of(ds, job="layout", op="layout")
    assert lay["ios"] == 100
    (rd,) = rows_of(ds, job="mix", direction="read", op="")
    assert rd["ios"] == sum(l["ops"][o]["ops"] for l in mix for o in ("read", "stat"))


def test_rows_output(out):
    p = ok(analyze("rows", out["multi"], out["postmark"]))
    lines = list(csv.DictReader(io.StringIO(p.stdout)))
    assert {l["direction"] for l in lines} >= {"total", "read", "write", "sync", "trim"}
    assert {"iodepth", "bs", "numjobs", "rw", "clat_p95_ns", "iops", "repeat", "op"} <= set(lines[0])
    p = ok(analyze("rows", out["multi"], "--format", "json", "--where", "direction=sync"))
    doc = json.loads(p.stdout)
    assert [r["job"] for r in doc["rows"]] == ["randwrite"]
    assert doc["provenance"]["fio_versions"] == [fio_doc(out["multi"])["fio version"]]
    p = ok(analyze("metrics", out["postmark"]))
    assert "write:create" in p.stdout and "transaction" in p.stdout


# ---------------------------------------------------------------------------
# Identity by content, repeats
# ---------------------------------------------------------------------------

def test_identity_by_content_and_repeats(out, tmp_path):
    d = tmp_path / "mixed"
    (d / "sub").mkdir(parents=True)
    first, second = out["qd"]
    # names say nothing (and lie): content decides
    shutil.copy(second, d / "zzz-first.txt")
    shutil.copy(first, d / "sub" / "second.json")
    shutil.copy(first, d / "copy-of-first")
    (d / "README").write_text("not a result\n")
    (d / "job.fio").write_text("[x]\nrw=read\n")
    p = ok(analyze("rows", d, "--format", "json", "--where", "direction=read"))
    assert "the same fio result" in p.stderr
    rows = json.loads(p.stdout)["rows"]
    assert len({r["run"] for r in rows}) == 2
    t1 = fio_doc(first)["timestamp_ms"] / 1000.0
    for r in rows:
        assert r["repeat"] == (1 if r["timestamp"] == t1 else 2)
    assert {r["target"] for r in rows} == {str(v) for v in out["qd_dirs"].values()}


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

def qd_values(paths, label_dirs):
    """{(iodepth, label): [read iops per run]} straight from the JSON."""
    vals = {}
    for p in paths:
        for j in fio_doc(p)["jobs"]:
            m = re.fullmatch(r"qd-(\w)-(\d)", j["jobname"])
            vals.setdefault((int(m.group(2)), m.group(1)), []).append(j["read"]["iops"])
    return vals


def labels_args(out):
    args = []
    for label, d in out["qd_dirs"].items():
        args += ["--label", f"{d}=dev-{label}"]
    return args


def test_table_repeats_median_min_max_cv(out):
    p = ok(analyze("table", *out["qd"], "--rows", "iodepth", "--cols", "target",
                   "--metric", "read.iops", "--baseline", "dev-a", *labels_args(out),
                   "--format", "csv"))
    lines = list(csv.reader(io.StringIO(p.stdout)))
    head = lines[0]
    assert head[:3] == ["metric", "unit", "iodepth"]
    assert head[3:8] == ["dev-a median", "dev-a min", "dev-a max", "dev-a CV", "dev-a n"]
    assert head[-2:] == ["dev-b / dev-a", "dev-c / dev-a"]
    vals = qd_values(out["qd"], out["qd_dirs"])
    assert [l[2] for l in lines[1:]] == ["1", "2", "4"]
    for l in lines[1:]:
        qd = int(l[2])
        for i, lab in enumerate("abc"):
            v = vals[(qd, lab)]
            med, lo, hi, cv, n = l[3 + 5 * i: 8 + 5 * i]
            assert float(med) == pytest.approx(statistics.median(v))
            assert float(lo) == min(v) and float(hi) == max(v) and int(n) == 2
            assert float(cv) == pytest.approx(statistics.stdev(v) / statistics.mean(v))
        assert float(l[-2]) == pytest.approx(statistics.median(vals[(qd, "b")])
                                             / statistics.median(vals[(qd, "a")]))
    # markdown and html of the same table
    p = ok(analyze("table", *out["qd"], "--rows", "iodepth", "--metric", "read.iops",
                   *labels_args(out), "--stats", "median,cv"))
    assert "| iodepth | dev-a median | dev-a CV |" in p.stdout
    html_out = out["base"] / "qd.html"
    ok(analyze("table", *out["qd"], "--rows", "iodepth", "--metric", "read.iops",
               "--metric", "read.clat_p99_ms", *labels_args(out), "-o", html_out))
    h = html_out.read_text()
    assert h.startswith("<!DOCTYPE html>") and "<style>" in h and "</html>" in h
    assert not re.search(r"(src|href)\s*=|https?://|@import", h), "not self-contained"
    ET.fromstring(re.sub(r"^<!DOCTYPE html>", "", h))    # well-formed
    assert h.count("<table>") == 2 and "Provenance" in h and str(out["qd"][0]) in h


def test_table_refuses_pooling_non_repeats(out):
    # without target on rows/cols one run has three values (three directories) per cell
    p = analyze("table", *out["qd"], "--rows", "iodepth", "--cols", "bs", "--metric", "read.iops")
    assert p.returncode == 2
    assert "has 3 values for iodepth=1, bs=4k" in p.stderr and "--where target=" in p.stderr
    # runs that differ in a parameter are not pooled as repeats
    p = analyze("table", out["qd"][0], out["qd_slow"], "--rows", "iodepth", "--cols", "target",
                "--metric", "read.iops")
    assert p.returncode == 2
    assert "not repeats" in p.stderr and "rate_iops (200, unset)" in p.stderr
    # two values in one run's cell: the direction must be chosen
    p = analyze("table", out["multi"], "--rows", "job", "--cols", "bs",
                "--metric", "clat_mean_ms", "--where", "job=randwrite,seqread")
    assert p.returncode == 0, p.stderr
    p = analyze("table", out["multi"], "--cols", "bs", "--rows", "groupid",
                "--metric", "clat_mean_ms")
    assert p.returncode == 2 and "differ in job" in p.stderr


def test_table_compact_cells(out):
    vals = qd_values(out["qd"], out["qd_dirs"])
    p = ok(analyze("table", *out["qd"], "--rows", "iodepth", "--metric", "read.iops",
                   "--baseline", "dev-a", *labels_args(out)))
    (tab,) = md_tables(p.stdout)
    assert tab[0] == "read.iops (IOPS): median (min–max) of 2 repeats"
    assert tab[1] == ["iodepth", "dev-a", "dev-b", "dev-c", "dev-b / dev-a", "dev-c / dev-a"]
    for r in tab[2]:
        for lab, cell in zip("abc", r[1:4]):
            v = vals[(int(r[0]), lab)]
            m = re.fullmatch(r"([\d.]+) \(([\d.]+)–([\d.]+)\)", cell)
            assert m, cell
            assert [float(x) for x in m.groups()] == pytest.approx(
                [statistics.median(v), min(v), max(v)], abs=0.006)
    # the coefficient of variation instead of the range
    p = ok(analyze("table", *out["qd"], "--rows", "iodepth", "--metric", "read.iops",
                   "--cells", "cv", *labels_args(out)))
    (tab,) = md_tables(p.stdout)
    assert tab[0].endswith("median ±CV of 2 repeats")
    for r in tab[2]:
        for lab, cell in zip("abc", r[1:4]):
            v = vals[(int(r[0]), lab)]
            m = re.fullmatch(r"([\d.]+) ±([\d.]+)%", cell)
            assert m, cell
            assert float(m.group(2)) == pytest.approx(
                100 * statistics.stdev(v) / statistics.mean(v), abs=0.051)
    # a column per statistic, as before, when asked for; CSV always has them
    p = ok(analyze("table", *out["qd"], "--rows", "iodepth", "--metric", "read.iops",
                   "--cells", "columns", *labels_args(out)))
    (tab,) = md_tables(p.stdout)
    assert len(tab[1]) == 1 + 3 * 5
    p = analyze("table", *out["qd"], "--rows", "iodepth", "--metric", "read.iops",
                "--cells", "range", "--format", "csv")
    assert p.returncode == 2 and "CSV keeps one column per statistic" in p.stderr
    # html: the compact cells too
    h = ok(analyze("table", *out["qd"], "--rows", "iodepth", "--metric", "read.iops",
                   *labels_args(out), "--format", "html")).stdout
    assert re.search(r'<td class="num">[\d.]+ \([\d.]+–[\d.]+\)</td>', h)


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------

def png_text(path: Path) -> dict:
    from PIL import Image
    with Image.open(path) as im:
        return dict(im.text)


def test_plot_iops_against_queue_depth(out, tmp_path):
    png, svg = tmp_path / "qd.png", tmp_path / "qd.svg"
    ok(analyze("plot", *out["qd"], "--metric", "read.iops", "--x", "iodepth",
               *labels_args(out), "-o", png, "-o", svg))
    meta = png_text(png)
    prov = json.loads(meta["fio-pack provenance"])
    version = fio_doc(out["qd"][0])["fio version"]
    assert prov["fio_versions"] == [version]
    assert [i["path"] for i in prov["inputs"]] == [str(p) for p in out["qd"]]
    assert all(len(i["sha256"]) == 64 for i in prov["inputs"])
    assert prov["plot"]["metric"] == "read.iops" and prov["plot"]["x"] == "iodepth"
    assert version in meta["Description"]
    root = ET.parse(svg).getroot()
    desc = [e.text for e in root.iter() if e.tag.endswith("description")]
    assert desc and json.loads(desc[0])["inputs"] == prov["inputs"]
    side = json.loads((tmp_path / "qd.png.json").read_text())
    assert (tmp_path / "qd.svg.json").is_file()
    vals = qd_values(out["qd"], out["qd_dirs"])
    assert [s["label"] for s in side["data"]["series"]] == ["dev-a", "dev-b", "dev-c"]
    for s in side["data"]["series"]:
        lab = s["label"][-1]
        assert [pt["x"] for pt in s["points"]] == [1, 2, 4]
        for pt in s["points"]:
            v = vals[(pt["x"], lab)]
            assert pt["median"] == pytest.approx(statistics.median(v))
            assert (pt["min"], pt["max"], pt["n"]) == (min(v), max(v), 2)


def svg_labels(path: Path) -> dict:
    """{"x": [...], "y": [...], "legend": [...]}: the tick labels and legend
    entries as the SVG that fio-pack analyze wrote holds them (its text is text)."""
    ns = "{http://www.w3.org/2000/svg}"
    out = {"x": [], "y": [], "legend": []}
    for g in ET.parse(path).getroot().iter(ns + "g"):
        m = re.fullmatch(r"(xtick|ytick|legend)_\d+", g.get("id", ""))
        if not m:
            continue
        texts = ["".join(t.itertext()).strip() for t in g.iter(ns + "text")]
        if m.group(1) == "legend":
            out["legend"] += texts
        else:
            out[m.group(1)[0]].append("".join(texts))
    return out


def test_plot_axes_read_back_from_svg(out, tmp_path):
    svg = tmp_path / "qd.svg"
    # queue depths 1, 2, 4: a log2 axis with a tick at each, labelled as numbers;
    # y linear (a loaded machine's IOPS may span the decades that choose a log
    # axis: test_plots.py)
    ok(analyze("plot", *out["qd"], "--metric", "read.iops", "--x", "iodepth",
               "--yscale", "linear", *labels_args(out), "-o", svg))
    lab = svg_labels(svg)
    assert lab["x"] == ["1", "2", "4"]
    # a rate from zero, plain numbers (no offset or 1e4 above the axis)
    assert lab["y"][0] == "0" and all(re.fullmatch(r"\d+", y) for y in lab["y"]), lab["y"]
    assert len(lab["y"]) >= 3
    assert lab["legend"] == ["dev-a", "dev-b", "dev-c"]
    side = json.loads((tmp_path / "qd.svg.json").read_text())
    assert side["plot"]["xscale"] == "log2"
    top = max(pt["max"] for s in side["data"]["series"] for pt in s["points"])
    assert int(lab["y"][-1]) <= top * 1.05
    # --logx: the same labels, not 2^0 2^1 2^2
    ok(analyze("plot", *out["qd"], "--metric", "read.iops", "--x", "iodepth", "--logx",
               *labels_args(out), "-o", svg))
    assert svg_labels(svg)["x"] == ["1", "2", "4"]
    # a linear axis by choice: whole numbers only, never 1.5
    ok(analyze("plot", *out["qd"], "--metric", "read.iops", "--x", "iodepth",
               "--xscale", "linear", *labels_args(out), "-o", svg))
    lab = svg_labels(svg)
    assert all(re.fullmatch(r"\d+", x) for x in lab["x"]) and {"1", "4"} <= set(lab["x"])
    # a latency on a linear axis: from zero too (one rule for every linear y
    # axis; p99s that span decades get a log axis: test_plots.py)
    ok(analyze("plot", *out["qd"], "--metric", "read.clat_p99_ms", "--x", "iodepth",
               "--yscale", "linear", *labels_args(out), "-o", svg))
    assert float(svg_labels(svg)["y"][0]) == 0


def test_plot_legend_names_hosts(host_study, tmp_path):
    study = host_study["study"]
    svg = tmp_path / "hosts.svg"
    ok(analyze("plot", study, "--metric", "throughput", "--x", "threads", "-o", svg))
    lab = svg_labels(svg)
    assert lab["legend"] == ["ssd, lab-a", "ssd, lab-b"]
    assert lab["x"] == ["1", "2", "4"] and lab["y"][0] == "0"
    side = json.loads((tmp_path / "hosts.svg.json").read_text())
    assert [s["key"]["host"] for s in side["data"]["series"]] == \
        [f"127.0.0.1:{p}" for p in host_study["ports"]]
    # the published Intel 320 beside them: a tick at every thread count drawn
    ok(analyze("plot", study, "--metric", "throughput", "--x", "threads",
               "--reference", FIGURES, "--map", "intel320=ssd", "-o", svg))
    side = json.loads((tmp_path / "hosts.svg.json").read_text())
    xs = sorted({pt["x"] for pt in side["data"]["published"][0]["points"]} | {1, 2, 4})
    assert svg_labels(svg)["x"] == [str(x) for x in xs]
    assert len(xs) > 3 and all(x & (x - 1) == 0 for x in xs)
    # one host's line by itself: its name
    ok(analyze("plot", study, "--metric", "response time p95", "--x", "threads",
               "--series", "host", "-o", svg))
    lab = svg_labels(svg)
    assert lab["legend"] == list(HOSTS) and float(lab["y"][0]) == 0


def test_plot_latency_percentiles_from_json_plus(out, tmp_path):
    png = tmp_path / "lat.png"
    ok(analyze("plot", out["multi"], "--percentiles", "--direction", "write",
               "--series", "job", "-o", png))
    side = json.loads((tmp_path / "lat.png.json").read_text())
    (s,) = side["data"]["series"]
    assert s["label"] == "job=randwrite" and s["source"].startswith("json+ histogram")
    (we,) = [j for j in fio_doc(out["multi"])["jobs"] if j["jobname"] == "randwrite"]
    clat = we["write"]["clat_ns"]
    assert s["samples"] == clat["N"]
    # fio's own percentiles are points of the curve
    for p in ("50.000000", "99.000000"):
        first = next(pt for pt in s["points"] if pt["percentile"] >= float(p))
        # ms in the sidecar, integer ns in fio's JSON: equal once rounded
        assert round(first["latency_ms"] * 1e6) == clat["percentile"][p]
    assert "fio-pack provenance" in png_text(png)
    # without json+ the fallback is fio's percentile list, said so
    p = ok(analyze("plot", out["multi_json"], "--percentiles", "--direction", "write",
                   "-o", tmp_path / "lat2.svg"))
    assert "no json+" in p.stderr
    side = json.loads((tmp_path / "lat2.svg.json").read_text())
    assert side["data"]["series"][0]["source"].startswith("fio's percentile list")


# ---------------------------------------------------------------------------
# Several hosts: fio servers with host names of their own
# ---------------------------------------------------------------------------

HOSTS = ("lab-a", "lab-b")


@pytest.fixture(scope="module")
def host_study(tmp_path_factory):
    """The sysbench-rndrd study of jobs/catalogue.json (threads 1, 2, 4;
    runtime=1, size=4m) over two fio servers, each in a UTS namespace of its
    own named lab-a and lab-b, as servers on two machines are; and one
    client's output of the lab-a server alone."""
    if not IS_ROOT:
        pytest.skip("needs root to give fio servers host names (unshare --uts)")
    base = tmp_path_factory.mktemp("hosts")
    target = base / "target"
    target.mkdir()
    with fio_servers(base, hostnames=HOSTS) as ports:
        p = subprocess.run([*STUDY, "sysbench-rndrd", "--sweep",
                            "threads=1,2,4", "--target", f"ssd={target}", "--set", "runtime=1",
                            "--set", "size=4m", "--fio", FIO, "--engine-dir", ENGINE_DIR,
                            "--out", base / "study", "--quiet"]
                           + [a for port in ports for a in ("--server", f"127.0.0.1:{port}")],
                           capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO)
        assert p.returncode == 0, p.stderr
        job = base / "one.fio"
        job.write_text(f"[one]\ndirectory={target}\nsize=1m\nbs=4k\nrw=randread\n")
        one = fio(["--output-format=json", f"--client=127.0.0.1,{ports[0]}", job],
                  base / "one-server.out")
    yield {"study": base / "study", "ports": ports, "one": one, "target": target}


def host_truth(study):
    """{(server port, threads): MiB/s} from the runs' client_stats."""
    out = {}
    for mp in sorted((study / "runs").glob("*.meta.json")):
        meta = json.loads(mp.read_text())
        doc = json.loads((study / "runs" / ("%04d.json" % meta["run"])).read_text())
        (e,) = [e for e in doc["client_stats"] if e["jobname"] == "sysbench-rndrd"]
        out[(e["port"], meta["params"]["threads"])] = e["read"]["bw_bytes"] / 1048576
    return out


def test_several_hosts_table_has_a_column_per_target_and_host(host_study):
    study, ports = host_study["study"], host_study["ports"]
    truth = host_truth(study)
    assert len(truth) == 6
    p = ok(analyze("table", study, "--metric", "throughput", "--format", "csv"))
    lines = list(csv.reader(io.StringIO(p.stdout)))
    assert lines[0] == ["metric", "unit", "threads", "ssd, lab-a", "ssd, lab-b"]
    assert [l[2] for l in lines[1:]] == ["1", "2", "4"]
    for l in lines[1:]:
        assert [float(v) for v in l[3:]] == [truth[(port, int(l[2]))] for port in ports]
    p = ok(analyze("table", study, "--metric", "throughput", "--metric", "response time p95"))
    tables = md_tables(p.stdout)
    assert [t[1] for t in tables] == [["threads", "ssd, lab-a", "ssd, lab-b"]] * 2
    assert "_6 of 6 runs from" in p.stdout
    # one host chosen: no host column, and the count says what was used and why
    p = ok(analyze("table", study, "--metric", "throughput",
                   "--where", f"host=127.0.0.1:{ports[1]}"))
    (tab,) = md_tables(p.stdout)
    assert tab[1] == ["threads", "ssd"]
    assert [float(r[1]) for r in tab[2]] == pytest.approx(
        [truth[(ports[1], t)] for t in (1, 2, 4)], abs=0.006)
    assert f"_3 of 6 runs (3 left out by --where host=127.0.0.1:{ports[1]}) from" in p.stdout
    # hosts as the columns, the baseline named by its host name
    p = ok(analyze("table", study, "--metric", "throughput", "--cols", "host",
                   "--baseline", "lab-a", "--format", "csv"))
    lines = list(csv.reader(io.StringIO(p.stdout)))
    assert lines[0] == ["metric", "unit", "threads", "lab-a", "lab-b", "lab-b / lab-a"]
    for l in lines[1:]:
        t = int(l[2])
        assert float(l[5]) == pytest.approx(truth[(ports[1], t)] / truth[(ports[0], t)])


def test_several_hosts_report(host_study):
    study, ports = host_study["study"], host_study["ports"]
    truth = host_truth(study)
    figs = {f["id"]: f for f in json.loads(FIGURES.read_text())["figures"]}
    p = ok(analyze("report", study, "--map", "intel320=ssd", "--no-unmapped"))
    assert "Measured: 6 of 6 runs; " in p.stdout and "hosts lab-a, lab-b" in p.stdout
    tput = next(t for t in md_tables(p.stdout) if t[0].startswith("throughput (MiB/s)"))
    assert tput[1] == ["threads", "ssd, lab-a", "ssd, lab-b", "Intel 320 (published)",
                       "(ssd, lab-a) / published", "(ssd, lab-b) / published"]
    for r in tput[2]:
        t = int(r[0])
        if t > 4:
            assert r[1:3] == ["-", "-"] and r[4:] == ["-", "-"]
            continue
        pub = figs[f"002-throughput-intel320-t{t}"]["value"]
        assert float(r[3]) == pub
        for i, port in enumerate(ports):
            assert float(r[1 + i]) == pytest.approx(truth[(port, t)], abs=0.006)
            assert float(r[4 + i]) == pytest.approx(truth[(port, t)] / pub, abs=0.006)
    # one host: the count says 3 of 6 were used, and why the others were not
    p = ok(analyze("report", study, "--map", "intel320=ssd", "--where",
                   f"host=127.0.0.1:{ports[0]}"))
    assert (f"Measured: 3 of 6 runs (3 left out by --where host=127.0.0.1:{ports[0]}); "
            in p.stdout) and "hosts lab-a\n" in p.stdout
    tput = next(t for t in md_tables(p.stdout) if t[0].startswith("throughput (MiB/s)"))
    assert tput[1][:4] == ["threads", "ssd", "Intel 320 (published)", "ssd / published"]
    # --cols in the report: hosts by hand; the CSV has each host's address and name
    p = ok(analyze("report", study, "--map", "intel320=ssd", "--cols", "host",
                   "--format", "csv"))
    rows = [r for r in csv.DictReader(io.StringIO(p.stdout))
            if r["metric"] == "throughput" and r["measured"]]
    assert len(rows) == 6
    for r in rows:
        port = int(r["host"].rsplit(":", 1)[1])
        assert r["host_name"] == HOSTS[ports.index(port)]
        assert float(r["measured"]) == truth[(port, int(r["threads"]))]
    # no target mapped: nothing measured is shown, and the count says so
    p = ok(analyze("report", study, "--no-unmapped"))
    assert "Measured: 0 of 6 runs (6 left out as no --map names their target (ssd)); " \
        in p.stdout


# live only: host_study runs fio servers whatever the outputs
@pytest.mark.parametrize("out", ["live"], indirect=True)
def test_hosts_of_plain_client_outputs(host_study, client_server):
    # two servers in one client's output: a column per host, shown by address
    # (fio's client_stats "hostname" is the address the client was given)
    path, ports = client_server
    doc = fio_doc(path)
    p = ok(analyze("table", path, "--rows", "job", "--metric", "read.ios",
                   "--where", "job=cs-read", "--format", "csv"))
    lines = list(csv.reader(io.StringIO(p.stdout)))
    d = doc["global options"]["directory"]
    assert sorted(lines[0][3:]) == sorted(f"{d}, 127.0.0.1:{port}" for port in ports)
    for col, v in zip(lines[0][3:], lines[1][3:]):
        port = int(col.rsplit(":", 1)[1])
        assert int(v) == sum(e["read"]["total_ios"] for e in doc["client_stats"]
                             if e["jobname"] == "cs-read" and e["port"] == port)
    # one server: its own name, from the "<lab-a>" its lines carry
    one = host_study["one"]
    assert "<lab-a> " in one.read_text()
    assert fio_doc(one)["client_stats"][0]["hostname"] == "127.0.0.1"
    p = ok(analyze("table", one, "--rows", "job", "--cols", "host", "--metric", "read.ios",
                   "--format", "csv"))
    lines = list(csv.reader(io.StringIO(p.stdout)))
    assert lines[0] == ["metric", "unit", "job", "lab-a"]


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

def test_bad_input(out, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("fio: this is not a result\n")
    p = analyze("table", text, "--metric", "iops")
    assert p.returncode == 2 and f"{text}: not fio JSON output" in p.stderr

    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}\n')
    p = analyze("rows", other)
    assert p.returncode == 2 and f"{other}: not fio JSON output" in p.stderr

    whole = out["qd"][0].read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(whole[: len(whole) // 2])
    p = analyze("rows", cut)
    assert p.returncode == 2 and f"{cut}: truncated fio JSON" in p.stderr
    # also when found inside a directory
    d = tmp_path / "dir"
    d.mkdir()
    shutil.copy(out["qd"][1], d / "good")
    shutil.copy(cut, d / "bad")
    p = analyze("rows", d)
    assert p.returncode == 2 and f"{d / 'bad'}: truncated fio JSON" in p.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    p = analyze("table", empty, "--metric", "iops")
    assert p.returncode == 2 and f"{empty}: no fio results" in p.stderr
    (empty / "README").write_text("nothing\n")
    p = analyze("plot", empty, "--metric", "iops", "--x", "bs", "-o", tmp_path / "x.png")
    assert p.returncode == 2 and f"{empty}: no fio results" in p.stderr

    p = analyze("table", out["qd"][0], "--rows", "queue_depth", "--metric", "read.iops")
    assert p.returncode == 2 and "queue_depth: no such parameter" in p.stderr
    assert "iodepth" in p.stderr
    p = analyze("plot", out["qd"][0], "--metric", "read.iops", "--x", "blocks",
                "-o", tmp_path / "x.png")
    assert p.returncode == 2 and "blocks: no such parameter" in p.stderr
    p = analyze("table", out["qd"][0], "--rows", "iodepth", "--metric", "read.speed")
    assert p.returncode == 2 and "unknown metric 'read.speed'" in p.stderr
    p = analyze("table", out["qd"][0], "--rows", "iodepth", "--metric", "read.iops",
                "--baseline", "nowhere")
    assert p.returncode == 2 and "--baseline nowhere: not a column" in p.stderr
    p = analyze("rows", tmp_path / "missing.json")
    assert p.returncode == 2 and "missing.json: no such file" in p.stderr
    assert not (tmp_path / "x.png").exists()


# ---------------------------------------------------------------------------
# Regression check
# ---------------------------------------------------------------------------

def test_compare(out, tmp_path):
    first, second = out["qd"]
    # same workload, generous threshold: passes
    p = analyze("compare", first, second, "--threshold", "read.iops=95%")
    assert p.returncode == 0, p.stderr
    assert "9 comparisons, 0 regression(s)" in p.stderr
    # the rate-limited run measures the same thing with a changed parameter:
    # aligned once rate_iops is ignored, and a regression
    p = analyze("compare", first, out["qd_slow"], "--threshold", "read.iops=20%",
                "--threshold", "read.clat_p99_ms=1000%", "--ignore", "rate_iops",
                "--format", "json")
    assert p.returncode == 1, p.stderr
    res = json.loads(p.stdout)
    iops = [c for c in res["comparisons"] if c["metric"] == "read.iops"]
    assert len(iops) == 9 and all(c["verdict"] == "REGRESSION" for c in iops)
    assert "regression(s)" in p.stderr and "read.iops" in p.stderr
    # without --ignore nothing aligns: every old measurement is missing in NEW
    p = analyze("compare", first, out["qd_slow"], "--threshold", "read.iops=20%")
    assert p.returncode == 1 and "9 missing in NEW" in p.stderr
    p = analyze("compare", first, out["qd_slow"], "--threshold", "read.iops=20%",
                "--allow-missing")
    assert p.returncode == 0
    # bad threshold and unknown metric are input errors
    p = analyze("compare", first, second, "--threshold", "read.iops")
    assert p.returncode == 2 and "--threshold 'read.iops'" in p.stderr
    p = analyze("compare", first, second, "--threshold", "nonsense=5%")
    assert p.returncode == 2 and "unknown metric 'nonsense'" in p.stderr


# ---------------------------------------------------------------------------
# Manual pages
# ---------------------------------------------------------------------------

@pytest.mark.nofio
@pytest.mark.parametrize("cmd", ["", "rows", "metrics", "table", "plot", "report", "compare"])
def test_help_reads_like_a_man_page(cmd):
    p = ok(analyze(*([cmd] if cmd else []), "--help"))
    text = p.stdout
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS"):
        assert re.search(rf"^{section}$", text, re.M), f"{cmd}: no {section}"
    if cmd:
        assert re.search(r"^EXAMPLES$", text, re.M)
        assert re.search(r"^(OPTIONS|INPUT OPTIONS)$", text, re.M)
        assert ok(analyze("help", cmd)).stdout == text
    assert max(len(l) for l in text.splitlines()) <= 90
    p = analyze()
    assert p.returncode == 2 and "SYNOPSIS" in p.stdout
    p = analyze("tabel")
    assert p.returncode == 2 and "did you mean table" in p.stderr
