"""scripts/fio-pack trace: fio iolog and blkparse importers, the iolog exporter and
the Python reader/writer of the dbtrace format (docs/dbtrace-format.md).

Every trace the tool writes is read back by the C parser (engines/lib/dbtrace.c)
through tools/dbtrace-check.c (make build/dbtrace-check), which prints what
it read (record and operation counts, declarations with the extents the
records reached) or the parser's one-line error.

The iologs are real: fio 3.33 (build/fio) writes them with --write_iolog; it
writes version 3 only (iolog.c init_iolog_write), so the version 2 log is fio's
own log with its time column removed, and fio itself replays that v2 log to
show it is one. Exported iologs are replayed by fio on files created with the
trace's sizes, and fio's own counts must match the trace's.

blkparse: blktrace's relay files are refused on a kernel in lockdown
("Lockdown: blktrace: debugfs access is restricted"), so the live test takes
the same blk_io_trace records from the kernel's ftrace blk tracer (tracefs,
options/bin) and hands them to the real blkparse; it runs as root on a loop
device over a file in tmp_path. The recorded sample below is blkparse output
captured that way on the development machine (not written by hand)."""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fiopack import catalogue
from fiopack.trace import dbtrace

REPO = Path(__file__).resolve().parents[2]
TOOL = [sys.executable, str(REPO / "scripts" / "fio-pack"), "trace"]
FIO = Path(os.environ.get("FIO", str(REPO / "build" / "fio")))
CHECKER = REPO / "build" / "dbtrace-check"
IS_ROOT = os.geteuid() == 0

# Pure Python plus a normal C build: nothing for the sanitizer pass to add.
# tools/dbtrace-check is built first (the checker fixture,
# tests/capture/conftest.py), for c_check() below.
pytestmark = [pytest.mark.nosan, pytest.mark.usefixtures("checker")]

def _env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the ASan run preloads libasan into us
    return env


def c_check(path, ok=True):
    """The C parser's view of a trace: a dict, or the error line if ok=False."""
    r = subprocess.run([str(CHECKER), str(path)], capture_output=True, text=True, env=_env(),
                       timeout=60)
    if not ok:
        assert r.returncode == 1 and r.stdout.startswith("error "), r.stdout + r.stderr
        return r.stdout[6:].rstrip("\n")
    assert r.returncode == 0, f"C parser refuses {path}: {r.stdout}{r.stderr}"
    out = {"ops": {}, "files": {}, "streams": {}}
    for ln in r.stdout.splitlines():
        k, *v = ln.split(" ")
        if k == "records":
            out["records"] = int(v[0])
        elif k in ("pagesize", "timeunit"):
            out[k] = v[0]
        elif k == "op":
            out["ops"][v[0]] = int(v[1])
        elif k == "file":
            out["files"][int(v[0])] = {"role": v[1], "size": None if v[2] == "-" else int(v[2]),
                                       "max": int(v[3]), "extent": int(v[4]), "path": v[5]}
        elif k == "stream":
            out["streams"][int(v[0])] = {"name": v[1], "records": int(v[2])}
    return out


def tool(*args, cwd=None, stdin=None):
    return subprocess.run([*TOOL, *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, input=stdin, env=_env(), timeout=120)


def ok(r):
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stderr}"
    return r


def run_fio(*args, cwd):
    r = subprocess.run([str(FIO), *map(str, args), "--output-format=json"], capture_output=True,
                       text=True, cwd=cwd, env=_env(), timeout=120)
    assert r.returncode == 0, f"fio failed: {r.stderr}\n{r.stdout[:2000]}"
    out = r.stdout
    job = json.loads(catalogue.split_json(out)[1])["jobs"][0]
    assert job["error"] == 0, job
    return job


def fio_counts(job):
    return {k: job[k]["total_ios"] for k in ("read", "write", "trim", "sync")}


def records(path):
    """The record lines of a trace the tool wrote (plain or gzip)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    lines = raw.decode("latin-1").splitlines()
    return [ln.split() for ln in lines if ln[:1].isdigit() or ln[:2] == "- "]


# ---------------------------------------------------------------------------
# A real fio iolog
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fio_log(tmp_path_factory):
    """fio --write_iolog of a small randrw job over two files with fsyncs:
    a few hundred I/Os."""
    d = tmp_path_factory.mktemp("fiolog")
    (d / "data").mkdir()
    run_fio("--name=x", f"--directory={d / 'data'}", "--nrfiles=2", "--size=512k", "--bs=4k",
            "--rw=randrw", "--fsync=16", "--ioengine=psync", "--write_iolog=x.iolog", cwd=d)
    log = d / "x.iolog"
    lines = log.read_text().splitlines()
    # what fio 3.33 writes: version 3 only, microseconds since the job started
    assert lines[0] == "fio version 3 iolog"
    ios, ends, acts = [], {}, {}
    for ln in lines[1:]:
        t = ln.split()
        acts[t[2]] = acts.get(t[2], 0) + 1
        if len(t) == 5:
            ios.append((t[1], t[2], int(t[3]), int(t[4])))
            if t[2] in ("read", "write"):
                ends[t[1]] = max(ends.get(t[1], 0), int(t[3]) + int(t[4]))
    assert len(ends) == 2 and 100 <= len(ios) <= 400, acts
    assert acts.get("sync", 0) > 0 and acts["add"] == 2 and acts["open"] == 2
    return {"dir": d, "log": log, "ios": ios, "ends": ends, "acts": acts}


def _expected_ops(acts):
    return {k: v for k, v in {"read": acts.get("read", 0), "write": acts.get("write", 0),
                              "fsync": acts.get("sync", 0),
                              "fdatasync": acts.get("datasync", 0)}.items() if v}


@pytest.mark.nofio
def test_help_pages():
    r = ok(tool("--help"))
    assert r.stdout.startswith("NAME") and "SYNOPSIS" in r.stdout
    for cmd in ("import-iolog", "import-blkparse", "export-iolog", "check", "summary"):
        r = ok(tool(cmd, "--help"))
        assert r.stdout.startswith("NAME\n    fio-pack trace " + cmd), r.stdout[:200]
        for section in ("SYNOPSIS", "DESCRIPTION"):
            assert section in r.stdout
        assert ok(tool("help", cmd)).stdout == r.stdout
    # every exit status a command can give is on the top page
    assert "; 3 (check,\n    summary) every trace is valid and at least one is incomplete" in \
        ok(tool("--help")).stdout
    r = tool("import-log", "x")
    assert r.returncode == 2 and "unknown command" in r.stderr
    r = tool("import-blkparse", "x", "--event", "X")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--event" in r.stderr


# A PostgreSQL 18 capture in small: a backend, an I/O worker reading for
# it (io_method=worker), the WAL writer, a sort file.
SUMMARY_TRACE = """\
dbtrace 2
pagesize 8192
timeunit us
source PostgreSQL 18 (test)
incomplete 2 things not seen
file 0 data 65536 65536 base/5/16384
file 1 log 16777216 16777216 pg_wal/000000010000000000000001
file 2 temp - 8192 base/pgsql_tmp/pgsql_tmp42.0
stream 0 backend-4262
stream 1 ioworker-4255
stream 2 walwriter-4250
0 0 0 read p0 8192 +5
10 1 0 read p1 p3 +20
12 1 0 read p4 p2 +20
20 0 1 write 0 4096 +7
30 2 1 write 4096 4096 +3
31 2 1 fdatasync +100
40 0 2 create
41 0 2 write p0 8192
1000000 0 2 unlink
end 9
"""


@pytest.mark.nofio
def test_summary_per_role_operation_and_stream(tmp_path):
    """fio-pack trace summary: counts and bytes per file role and operation
    (the way a database's counters are kept), per stream with --streams,
    the I/O workers' share of the data reads, in text and JSON; exit 3 for
    an incomplete trace, as check."""
    t = tmp_path / "s.trace"
    t.write_text(SUMMARY_TRACE)
    r = tool("summary", t, "--streams")
    assert r.returncode == 3, r.stderr
    assert r.stdout.splitlines() == [
        f"{t}: 9 records, 3 files, 3 streams, 1.000 s",
        "  ROLE       OPERATION           RECORDS         BYTES",
        "  data       read                      3         49152",
        "  log        fdatasync                 1             0",
        "  log        write                     2          8192",
        "  temp       create                    1             0",
        "  temp       unlink                    1             0",
        "  temp       write                     1          8192",
        "  stream backend-4262",
        "    data       read                      1          8192",
        "    log        write                     1          4096",
        "    temp       create                    1             0",
        "    temp       unlink                    1             0",
        "    temp       write                     1          8192",
        "  stream ioworker-4255",
        "    data       read                      2         40960",
        "  stream walwriter-4250",
        "    log        fdatasync                 1             0",
        "    log        write                     1          4096",
        f"{t}: I/O workers: 2 of the 3 data reads (66.7%), 40960 of the 49152 bytes (83.3%)",
        f"{t}: incomplete: 2 things not seen"]
    r = tool("summary", "--json", t)
    assert r.returncode == 3
    got = json.loads(r.stdout)
    assert got["roles"]["data"] == {"read": {"records": 3, "bytes": 49152}}
    assert got["ioworkers"] == {"reads": 2, "read_bytes": 40960, "data_reads": 3,
                                "data_read_bytes": 49152}
    assert got["duration_s"] == 1.0 and got["incomplete"] == ["2 things not seen"]
    assert "by_stream" not in got
    # a complete trace without I/O workers: no such line, exit 0
    t.write_text(SUMMARY_TRACE.replace("incomplete 2 things not seen\n", "")
                 .replace("ioworker-4255", "backend-4255"))
    r = tool("summary", t)
    assert r.returncode == 0 and "I/O workers" not in r.stdout and len(r.stdout.splitlines()) == 8
    assert json.loads(ok(tool("summary", "--json", t)).stdout)["ioworkers"] is None
    # bad input: one line
    r = tool("summary", tmp_path / "none.trace")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    r = tool("summary")
    assert r.returncode == 2 and r.stderr == ("fio-pack trace: summary: no TRACE given (see "
                                              "fio-pack trace summary --help)\n")


def test_iolog_v3_import_export_replay(fio_log, tmp_path):
    ios, ends, acts = fio_log["ios"], fio_log["ends"], fio_log["acts"]
    trace = tmp_path / "x.trace.gz"
    r = ok(tool("import-iolog", fio_log["log"], "-o", trace))
    assert "dropped 2 add, 2 open, 2 close action(s)" in r.stderr
    assert trace.read_bytes()[:2] == b"\x1f\x8b"
    c = c_check(trace)
    assert c["timeunit"] == "us" and c["pagesize"] == "4096"
    assert c["records"] == len(ios)
    assert c["ops"] == _expected_ops(acts)
    # files: basenames, size = max size = the highest end fio reached
    by_path = {f["path"]: f for f in c["files"].values()}
    assert set(by_path) == {os.path.basename(n) for n in ends}
    for name, end in ends.items():
        f = by_path[os.path.basename(name)]
        assert f["role"] == "data" and f["size"] == f["max"] == f["extent"] == end
    assert list(c["streams"].values()) == [{"name": "x.iolog", "records": len(ios)}]
    # the times are fio's, unchanged
    recs = records(trace)
    log_times = [int(ln.split()[0]) for ln in fio_log["log"].read_text().splitlines()[1:]
                 if len(ln.split()) == 5]
    assert [int(x[0]) for x in recs] == log_times
    # the Python reader agrees with the C parser
    r = ok(tool("check", trace))
    assert f"{len(ios)} records, 2 files, 1 streams, timeunit us" in r.stdout

    # export, and fio replays the export on files of the trace's sizes
    replay = tmp_path / "replay"
    replay.mkdir()
    for f in c["files"].values():
        with open(replay / f["path"], "wb") as fh:
            fh.truncate(f["size"])
    exported = tmp_path / "x.v3.iolog"
    ok(tool("export-iolog", trace, "-o", exported, "--prefix", replay))
    lines = exported.read_text().splitlines()
    assert lines[0] == "fio version 3 iolog"
    ex_ios = [(t[1], t[2], int(t[3]), int(t[4])) for t in map(str.split, lines[1:]) if len(t) == 5]
    # the same operations in the same order (fio writes an offset on sync lines, we write 0)
    norm = [(os.path.basename(n), a, o if a != "sync" else 0, n_) for n, a, o, n_ in ios]
    assert [(os.path.basename(n), a, o, n_) for n, a, o, n_ in ex_ios] == norm
    # times start at 0 and keep fio's differences
    ex_times = [int(t.split()[0]) for t in lines[1:] if len(t.split()) == 5]
    assert ex_times == [x - log_times[0] for x in log_times]
    job = run_fio("--name=replay", f"--read_iolog={exported}", "--ioengine=psync", cwd=tmp_path)
    assert fio_counts(job) == {"read": acts["read"], "write": acts["write"], "trim": 0,
                               "sync": acts["sync"]}


def test_iolog_v2_from_fio_log(fio_log, tmp_path):
    """Version 2: fio's own log without its time column (fio 3.33 writes only
    v3); fio replays it, so it is a v2 log fio accepts."""
    acts = fio_log["acts"]
    v2 = tmp_path / "x.v2.iolog"
    lines = fio_log["log"].read_text().splitlines()
    v2.write_text("fio version 2 iolog\n" +
                  "".join(ln.split(" ", 1)[1] + "\n" for ln in lines[1:]))
    want = {"read": acts["read"], "write": acts["write"], "trim": 0, "sync": acts["sync"]}
    job = run_fio("--name=v2", f"--read_iolog={v2}", "--ioengine=psync", cwd=tmp_path)
    assert fio_counts(job) == want

    trace = tmp_path / "x.v2.trace"
    ok(tool("import-iolog", v2, "-o", trace))
    c = c_check(trace)
    assert c["timeunit"] == "none" and c["records"] == len(fio_log["ios"])
    assert c["ops"] == _expected_ops(acts)
    assert all(r[0] == "-" for r in records(trace))

    replay = tmp_path / "replay"
    replay.mkdir()
    for f in c["files"].values():
        with open(replay / f["path"], "wb") as fh:
            fh.truncate(f["size"])
    exported = tmp_path / "x.back.iolog"
    ok(tool("export-iolog", trace, "-o", exported, "--prefix", replay))
    out = exported.read_text().splitlines()
    assert out[0] == "fio version 2 iolog"
    assert all(len(t.split()) in (2, 4) for t in out[1:])
    job = run_fio("--name=v2back", f"--read_iolog={exported}", "--ioengine=psync", cwd=tmp_path)
    assert fio_counts(job) == want


def test_iolog_streams(fio_log, tmp_path):
    log2 = tmp_path / "y.iolog"
    shutil.copy(fio_log["log"], log2)
    n = len(fio_log["ios"])
    trace = tmp_path / "two.trace"
    ok(tool("import-iolog", fio_log["log"], log2, "-o", trace, "--pagesize", "8192",
            "--source", "two copies of one fio log"))
    c = c_check(trace)
    assert c["records"] == 2 * n and c["pagesize"] == "8192" and len(c["files"]) == 2
    assert [s["name"] for s in c["streams"].values()] == ["x.iolog", "y.iolog"]
    assert all(s["records"] == n for s in c["streams"].values())
    assert "source two copies of one fio log\n" in trace.read_text()

    per_file = tmp_path / "perfile.trace"
    ok(tool("import-iolog", fio_log["log"], "-o", per_file, "--streams", "file"))
    c = c_check(per_file)
    assert sorted(s["name"] for s in c["streams"].values()) == \
        sorted(f["path"] for f in c["files"].values())
    per = {os.path.basename(k): 0 for k in fio_log["ends"]}
    for name, *_ in fio_log["ios"]:
        per[os.path.basename(name)] += 1
    assert {s["name"]: s["records"] for s in c["streams"].values()} == per

    # several logs, per file: one stream per log and file
    both = tmp_path / "both.trace"
    r = ok(tool("import-iolog", fio_log["log"], log2, "-o", both, "--streams", "file",
                "--quiet"))
    assert r.stderr == ""
    c = c_check(both)
    paths = sorted(f["path"] for f in c["files"].values())
    assert sorted(s["name"] for s in c["streams"].values()) == \
        [f"{log}:{p}" for log in ("x.iolog", "y.iolog") for p in paths]
    assert c["records"] == 2 * n
    r = tool("import-iolog", log2, log2)
    assert r.returncode == 2 and r.stderr == f"fio-pack trace: {log2} given twice\n"

    # standard output, when no -o
    r = ok(tool("import-iolog", fio_log["log"]))
    assert r.stdout.startswith("dbtrace 1\n") and r.stdout.endswith(f"end {n}\n")
    (tmp_path / "stdout.trace").write_text(r.stdout)
    assert c_check(tmp_path / "stdout.trace")["records"] == n


@pytest.mark.nofio
def test_iolog_mapping_details(tmp_path):
    """What a v2 log's other actions become (wait, open/close, datasync, trim,
    sync_file_range), and file names that need making safe."""
    log = tmp_path / "m.iolog"
    log.write_text("fio version 2 iolog\n"
                   "/a/db add\n/b/db add\n/c/.. add\n"
                   "/a/db open\n/b/db open\n/c/.. open\n"
                   "/a/db write 0 8192\n"
                   "/a/db wait 500 0\n"
                   "/b/db read 4096 512\n"
                   "\n"
                   "/c/.. datasync 0 0\n"
                   "/a/db trim 8192 1048576\n"
                   "/a/db sync_file_range 0 0\n"
                   "/a/db close\n")
    trace = tmp_path / "m.trace"
    r = ok(tool("import-iolog", log, "-o", trace))
    assert "dropped 3 add, 3 open, 1 close, 1 wait action(s)" in r.stderr
    c = c_check(trace)
    assert [(f["path"], f["size"], f["max"]) for f in c["files"].values()] == \
        [("db", 1056768, 1056768), ("db.2", 4608, 4608), ("file", 0, 0)]
    assert [r[3:] for r in records(trace)] == [
        ["write", "p0", "8192"], ["read", "p1", "512"], ["fdatasync"],
        ["trim", "p2", "1048576"], ["sync_file_range", "p0", "0"]]


def test_output_is_atomic(fio_log, tmp_path):
    bad = tmp_path / "bad.iolog"
    bad.write_text(fio_log["log"].read_text() + "12 /x read zero 4096\n")
    out = tmp_path / "out.trace"
    out.write_text("previous\n")
    r = tool("import-iolog", bad, "-o", out)
    assert r.returncode == 2
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.iolog", "out.trace"]


V3 = "fio version 3 iolog\n10 /d/f add\n20 /d/f open\n30 /d/f write 0 4096\n"


@pytest.mark.nofio
@pytest.mark.parametrize("text,line,reason", [
    ("hello\n", 1, "not a fio version 2 or 3 iolog"),
    ("", 1, "empty file"),
    ("fio version 1 iolog\n", 1, "not a fio version 2 or 3 iolog"),
    (V3 + "x /d/f read 0 4096\n", 5, "bad time 'x'"),
    (V3 + "40 /d/f frobnicate 0 4096\n", 5, "unknown action 'frobnicate'"),
    (V3 + "40 /d/f read 0\n", 5, "'read' needs OFFSET and LENGTH"),
    (V3 + "40 /d/f read 12k 4096\n", 5, "bad offset '12k'"),
    (V3 + "40 /d/f read -5 4096\n", 5, "bad offset '-5'"),
    (V3 + "40 /d/f read 0 4294967296\n", 5, "length 4294967296 is beyond 2^32-1"),
    (V3 + "40 /d/f read 0 0\n", 5, "read of 0 bytes"),
    (V3 + "40 /d/f write 0 67108865\n", 5, "over the trace format's limit"),
    (V3 + "25 /d/f read 0 4096\n", 5, "time 25 goes back from 30 (line 4)"),
    (V3 + "40 /d/f wait 100 0\n", 5, "'wait' is not allowed in a version 3 iolog"),
    (V3 + "40 /d/f close 0 0\n", 5, "'close' takes no OFFSET LENGTH"),
    (V3 + "fio version 3 iolog\n", 5, "a second iolog header"),
    (V3 + "40 /d/f read 0 4096\x01\n", 5, "control character 0x01"),
    ("fio version 2 iolog\n/d/f add\n10 /d/f read 0 4096\n", 3, "unknown action '/d/f'"),
    ("fio version 2 iolog\n/d/f add\n/d/f read 0 4096 7\n", 3, "'read' needs OFFSET and LENGTH"),
])
def test_iolog_bad_input(tmp_path, text, line, reason):
    log = tmp_path / "bad.iolog"
    log.write_text(text)
    out = tmp_path / "out.trace.gz"
    r = tool("import-iolog", log, "-o", out)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"fio-pack trace: {log} line {line}: "), r.stderr
    assert reason in r.stderr, r.stderr
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.iolog"]


def test_iolog_mixed_versions(fio_log, tmp_path):
    v2 = tmp_path / "v2.iolog"
    v2.write_text("fio version 2 iolog\n/d/f add\n/d/f read 0 4096\n")
    r = tool("import-iolog", fio_log["log"], v2, "-o", tmp_path / "o.trace")
    assert r.returncode == 2 and f"{v2} line 1: a version 2 iolog after version 3" in r.stderr
    assert not (tmp_path / "o.trace").exists()


# ---------------------------------------------------------------------------
# export-iolog on the format document's example
# ---------------------------------------------------------------------------

def doc_example(tmp_path) -> Path:
    doc = (REPO / "docs" / "dbtrace-format.md").read_text()
    block = re.search(r"## Example\n\n```\n(.*?)```", doc, re.S).group(1)
    assert block.startswith("dbtrace 1\n") and block.endswith("end 14\n")
    p = tmp_path / "example.trace"
    p.write_text(block)
    return p


@pytest.mark.nofio
def test_export_mapping(tmp_path):
    ex = doc_example(tmp_path)
    assert c_check(ex)["records"] == 14
    assert "14 records, 5 files, 3 streams, timeunit us" in ok(tool("check", ex)).stdout
    out = tmp_path / "ex.iolog"
    r = ok(tool("export-iolog", ex, "-o", out, "--prefix", "/srv/pg/"))
    assert "dropped 1 create, 1 unlink, 1 truncate, 2 directory fsync, 1 sync_file_range" \
        in r.stderr
    rel = "/srv/pg/base/16384/16397"
    wal = "/srv/pg/pg_wal/000000010000000000000001"
    tmpf = "/srv/pg/base/pgsql_tmp/pgsql_tmp4242.0"
    assert out.read_text().splitlines() == [
        "fio version 3 iolog",
        f"0 {rel} add", f"0 {rel} open", f"0 {rel} read 24576 8192",
        f"12 {rel} read 57344 8192",
        f"40 {wal} add", f"40 {wal} open", f"40 {wal} write 0 8192",
        f"41 {wal} datasync 0 0",
        f"51 {tmpf} add", f"51 {tmpf} open", f"51 {tmpf} write 0 131072",
        f"1000 {rel} write 24576 8192",
        f"1100 {rel} sync 0 0",
        f"1200 {rel} trim 8192000 196608",
        f"1200 {rel} close", f"1200 {wal} close", f"1200 {tmpf} close"]
    # sync_file_range as datasync; one stream only; ms times
    r = ok(tool("export-iolog", ex, "-o", out, "--stream", "2", "--sync-file-range", "datasync",
                "--iolog-unit", "ms"))
    assert out.read_text().splitlines() == [
        "fio version 3 iolog",
        "0 base/16384/16397 add", "0 base/16384/16397 open",
        "0 base/16384/16397 write 24576 8192", "0 base/16384/16397 datasync 0 0",
        "0 base/16384/16397 sync 0 0", "0 base/16384/16397 trim 8192000 196608",
        "0 base/16384/16397 close"]
    assert "7 records of other streams" in r.stderr
    # version 2: the same iolog; O_DIRECT and completion times said lost
    v2 = tmp_path / "v2.trace"
    v2.write_text(_v2(ex.read_text()))
    r = ok(tool("export-iolog", v2, "-o", out, "--prefix", "/srv/pg/", "--quiet"))
    assert out.read_text().splitlines()[3] == f"0 {rel} read 24576 8192"
    assert r.stderr == (f"fio-pack trace: warning: 1 file(s) of {v2} were opened with O_DIRECT "
                        "(base/16384/16397); fio's iolog cannot say so: replay it with direct=1 "
                        "to match\n")
    r = ok(tool("export-iolog", v2, "-o", out))
    assert "3 completion time(s) dropped" in r.stderr


@pytest.mark.nofio
def test_export_bad_trace(tmp_path):
    ex = doc_example(tmp_path)
    cut = tmp_path / "cut.trace"
    cut.write_text(ex.read_text().replace("end 14\n", ""))
    out = tmp_path / "o.iolog"
    r = tool("export-iolog", cut, "-o", out)
    n = cut.read_text().count("\n")
    assert r.returncode == 2 and r.stderr == \
        f"fio-pack trace: {cut} line {n + 1}: the trace ends without its 'end' line (truncated?)\n"
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == \
        ["cut.trace", "example.trace"]


# ---------------------------------------------------------------------------
# The Python reader against the C parser
# ---------------------------------------------------------------------------

def _v2(text):
    """The format document's example as version 2: file 0 direct, some latencies."""
    return (text.replace("dbtrace 1", "dbtrace 2")
            .replace("base/16384/16397\n", "base/16384/16397 direct\n")
            .replace("1000 0 0 read p3 8192", "1000 0 0 read p3 8192 +40")
            .replace("1041 1 1 fdatasync", "1041 1 1 fdatasync +9")
            .replace("2102 2 3 fsync", "2102 2 3 fsync +0"))


def _mutations(text):
    yield "no end", text.replace("end 14\n", "")
    yield "wrong count", text.replace("end 14", "end 13")
    yield "time back", text.replace("1012 0 0 read p7", "999 0 0 read p7")
    yield "dotdot", text.replace("pg_wal/000000010000000000000001", "pg_wal/../../etc/x")
    yield "undeclared", text.replace("2300 2 0 truncate", "2300 2 9 truncate")
    yield "beyond max", text.replace("read p7 8192", "read p1023 16384")
    yield "dup path", text.replace("file 3 directory 0 0 .", "file 3 directory 0 0 pg_wal")
    yield "below data", text.replace("base/pgsql_tmp/pgsql_tmp4242.0",
                                     "base/16384/16397/tmp")
    yield "after end", text + "1 2 3 fsync\n"
    yield "control", text.replace("stream 1 walwriter", "stream 1 wal\x1bwriter")
    yield "fields", text.replace("2101 2 2 fsync", "2101 2 2 fsync a b c d e")
    yield "pagesize", text.replace("pagesize 8192", "pagesize 3000")
    yield "dash time", text.replace("1041 1 1 fdatasync", "- 1 1 fdatasync")
    yield "dir op", text.replace("2102 2 3 fsync", "2102 2 2 fdatasync")
    yield "negative", text.replace("read p3 8192", "read -3 8192")
    yield "huge", text.replace("read p3 8192", "read 9223372036854775808 8192")
    yield "late decl", text.replace("end 14", "stream 9 late\nend 14")
    yield "version", text.replace("dbtrace 1", "dbtrace 3")
    yield "direct in v1", text.replace("pg_wal/000000010000000000000001",
                                       "pg_wal/000000010000000000000001 direct")
    yield "latency in v1", text.replace("1012 0 0 read p7 8192", "1012 0 0 read p7 8192 +5")
    v2 = _v2(text)
    yield "bad flag", v2.replace(" direct", " Direct")
    yield "direct dir", v2.replace("file 2 directory 0 0 pg_wal", "file 2 directory 0 0 pg_wal direct")
    yield "bad latency", v2.replace("+40", "+4x")
    yield "latency alone", v2.replace("2101 2 2 fsync", "2101 2 2 +3")
    yield "latency overflow", v2.replace("+40", "+9223372036854775807")
    yield "empty", ""
    yield "long line", text.replace("# relation", "#" + "x" * 5000)
    yield "unknown op", text.replace("fdatasync", "fdatasink")
    yield "no source", re.sub(r"^source .*\n", "", text, flags=re.M)
    yield "empty source", re.sub(r"^source .*\n", "source  \n", text, flags=re.M)


@pytest.mark.nofio
def test_reader_errors_match_c(tmp_path):
    text = doc_example(tmp_path).read_text()
    v2 = tmp_path / "v2.trace"
    v2.write_text(_v2(text))
    assert c_check(v2)["records"] == 14
    r = tool("check", v2)
    assert r.returncode == 0 and "14 records" in r.stdout, r.stderr
    doc = (REPO / "docs" / "dbtrace-format.md").read_text()
    block = re.search(r"## Version 2[^\n]*\n.*?```\n(.*?)```", doc, re.S).group(1)
    v2doc = tmp_path / "v2doc.trace"
    v2doc.write_text(block)
    assert c_check(v2doc)["records"] == 6
    assert tool("check", v2doc).returncode == 0
    seen = set()
    for what, bad in _mutations(text):
        assert bad != text, what
        p = tmp_path / f"bad-{len(seen)}.trace"
        p.write_bytes(bad.encode("latin-1"))
        c_err = c_check(p, ok=False)
        r = tool("check", p)
        assert r.returncode == 2, (what, r.stdout)
        assert r.stderr == f"fio-pack trace: {c_err}\n", what
        seen.add(what)


@pytest.mark.nofio
def test_reader_gzip_like_c(tmp_path):
    text = doc_example(tmp_path).read_text().encode()
    z = gzip.compress(text)
    cases = {
        "whole": z,
        "two members": gzip.compress(text[:300]) + gzip.compress(text[300:]),
        "truncated": z[:len(z) // 2],
        "trailing bytes": z + b"junk",
        "corrupt": z[:20] + bytes(b ^ 0x55 for b in z[20:40]) + z[40:],
    }
    for what, data in cases.items():
        p = tmp_path / f"{what.replace(' ', '-')}.trace.gz"
        p.write_bytes(data)
        r = tool("check", p)
        if what in ("whole", "two members"):
            assert r.returncode == 0 and "14 records" in r.stdout
            assert c_check(p)["records"] == 14
            continue
        c_err = c_check(p, ok=False)
        assert r.returncode == 2, what
        # same line; zlib's wording of a corrupt stream may differ
        c_at = c_err.split(": ", 1)[0]
        assert r.stderr.startswith(f"fio-pack trace: {c_at}: "), (what, c_err, r.stderr)
        if what != "corrupt":
            assert r.stderr == f"fio-pack trace: {c_err}\n", what


def _mutate(rng, text):
    lines = text.split("\n")
    kind = rng.randrange(7)
    i = rng.randrange(len(lines))
    if kind == 0:       # a character out
        ln = lines[i]
        if ln:
            j = rng.randrange(len(ln))
            lines[i] = ln[:j] + ln[j + 1:]
    elif kind == 1:     # a character in
        ln = lines[i]
        j = rng.randrange(len(ln) + 1)
        lines[i] = ln[:j] + rng.choice("09p- \t#/.x\r\x00\xa0") + ln[j:]
    elif kind == 2:     # a line twice
        lines.insert(i, lines[i])
    elif kind == 3:     # a line out
        del lines[i]
    elif kind == 4:     # two lines swapped
        k = rng.randrange(len(lines))
        lines[i], lines[k] = lines[k], lines[i]
    elif kind == 5:     # a number made large, zero or a page count
        toks = lines[i].split(" ")
        nums = [k for k, t in enumerate(toks) if t.isdigit()]
        if nums:
            k = rng.choice(nums)
            toks[k] = rng.choice(["0", "9223372036854775807", "9223372036854775808",
                                  "p1125899906842623", "67108864", "67108865", "4095", "16384"])
            lines[i] = " ".join(toks)
    else:               # an operation or role swapped for another
        words = ["read", "write", "fsync", "fdatasync", "sync_file_range", "trim", "truncate",
                 "create", "unlink", "data", "directory", "log", "-", "end", "stream", "file",
                 "direct", "+7", "+"]
        toks = lines[i].split(" ")
        if len(toks) > 1:
            toks[rng.randrange(len(toks))] = rng.choice(words)
            lines[i] = " ".join(toks)
    return "\n".join(lines)


@pytest.mark.nofio
@pytest.mark.parametrize("version", [1, 2])
def test_reader_differential(tmp_path, version):
    """Mutated copies of the format document's example (and of its version-2
    form): this tool's reader and the C parser accept the same traces with
    the same record counts, and refuse the others with the same message."""
    import random
    text = doc_example(tmp_path).read_text()
    if version == 2:
        text = _v2(text)
    rng = random.Random(4)
    paths = []
    for i in range(400):
        t = text
        for _ in range(rng.randrange(1, 4)):
            t = _mutate(rng, t)
        p = tmp_path / f"m{i}.trace"
        p.write_bytes(t.encode("latin-1"))
        paths.append(p)
    r = subprocess.run([str(CHECKER), "-m", *map(str, paths)], capture_output=True, text=True,
                       env=_env(), timeout=60, encoding="latin-1")
    c_out = r.stdout.splitlines()
    assert len(c_out) == len(paths), r.stderr
    accepted = 0
    for p, c in zip(paths, c_out):
        try:
            gen = dbtrace.read_trace(str(p))
            parser = next(gen)
            for _ in gen:
                pass
            py = f"ok {parser.nrec}"
            accepted += 1
        except dbtrace.TraceError as e:
            py = f"error {e}"
        assert py == c, (p.read_bytes(), py, c)
    assert 20 < accepted < 380, accepted   # both kinds well represented


# ---------------------------------------------------------------------------
# blkparse
# ---------------------------------------------------------------------------

# Recorded on the development machine (kernel 6.18, blkparse 1.2.0): dd writes,
# dd reads, blkdiscard and O_DSYNC writes on /dev/loop0, from the kernel's blk
# tracer through blkparse -i - (process names are "(null)": the binary stream
# carries no notify records). Abridged: some G/P/U events left out.
BLKPARSE_SAMPLE = """\
  7,0    1        0     0.000000000 25438  Q  WS 0 + 8 [(null)]
  7,0    1        0     0.000007852 25438  G  WS 0 + 8 [(null)]
  7,0    1        0     0.000009955 25438  P   N [(null)]
  7,0    1        0     0.000011147 25438  U   N [(null)] 1
  7,0    1        0     0.000013129 25438  D  WS 0 + 8 [(null)]
  7,0    1        0     0.000064606    22  C  WS 0 + 8 [0]
  7,0    1        0     0.000076413 25438  Q  WS 8 + 8 [(null)]
  7,0    1        0     0.000078166 25438  D  WS 8 + 8 [(null)]
  7,0    1        0     0.000093709    22  C  WS 8 + 8 [0]
  7,0    1        0     0.001705871 25439  Q  RA 8064 + 8 [(null)]
  7,0    1        0     0.001713012 25439  D  RA 8064 + 8 [(null)]
  7,0    1        0     0.001734854    22  C  RA 8064 + 8 [0]
  7,0    1        0     0.001746842 25439  Q  RA 8176 + 8 [(null)]
  7,0    1        0     0.001748605 25439  D  RA 8176 + 8 [(null)]
  7,0    1        0     0.001758609    22  C  RA 8176 + 8 [0]
  7,0    1        0     0.002306052 25439  Q  DS 0 + 128 [(null)]
  7,0    1        0     0.002309777 25439 UT   N [(null)] 1
  7,0    1        0     0.002310278 25439  I  DS 0 + 128 [(null)]
  7,0    1        0     0.002318881    78  D  DS 0 + 128 [(null)]
  7,0    1        0     0.002366832    22  C  DS 0 + 128 [0]
  7,0    1        0     0.004103469 25440  Q WFS 0 + 8 [(null)]
  7,0    1        0     0.004114115 25440  D  WS 0 + 8 [(null)]
  7,0    1        0     0.004159142    22  C  WS 0 + 8 [0]
  7,0    1        0     0.004172842    78  D  FN [(null)]
  7,0    1        0     0.004605143    22  C  FN 0 [0]
  7,0    1        0     0.004606856    22  C  WS 0 [0]
  7,0    1        0     0.004613666 25440  Q FWS [(null)]
  7,0    1        0     0.004619264    78  D  FN [(null)]
  7,0    1        0     0.004671712    22  C  FN 0 [0]
  7,0    1        0     0.004672473    22  C  WS 0 [0]
CPU1 (7,0):
 Reads Queued:          29,      116KiB\t Writes Queued:           9,       88KiB
 Read Dispatches:       33,      116KiB\t Write Dispatches:        7,       88KiB
 Reads Requeued:         0\t\t Writes Requeued:         0
 Reads Completed:       33,      116KiB\t Writes Completed:       11,       88KiB

Throughput (R/W): 29000KiB/s / 22000KiB/s
Events (7,0): 233 entries
Skips: 0 forward (0 -   0.0%)
"""


@pytest.mark.nofio
def test_blkparse_recorded(tmp_path):
    inp = tmp_path / "sample.txt"
    inp.write_text(BLKPARSE_SAMPLE)
    want = {
        # event: (records as STREAM-NAME OP ARGS, note)
        "D": [("pid-25438", "write", "p0", "4096"), ("pid-25438", "write", "p1", "4096"),
              ("pid-25439", "read", "p1008", "4096"), ("pid-25439", "read", "p1022", "4096"),
              ("pid-25439", "trim", "p0", "65536"),
              ("pid-25440", "write", "p0", "4096"), ("pid-25440", "fsync"),
              ("pid-25440", "fsync")],
        "Q": [("pid-25438", "write", "p0", "4096"), ("pid-25438", "write", "p1", "4096"),
              ("pid-25439", "read", "p1008", "4096"), ("pid-25439", "read", "p1022", "4096"),
              ("pid-25439", "trim", "p0", "65536"),
              ("pid-25440", "write", "p0", "4096"), ("pid-25440", "fsync")],
        "C": [("pid-25438", "write", "p0", "4096"), ("pid-25438", "write", "p1", "4096"),
              ("pid-25439", "read", "p1008", "4096"), ("pid-25439", "read", "p1022", "4096"),
              ("pid-25439", "trim", "p0", "65536"),
              ("pid-25440", "write", "p0", "4096"), ("pid-25440", "fsync"),
              ("pid-25440", "fsync")],
    }
    for ev, recs in want.items():
        out = tmp_path / f"{ev}.trace"
        r = ok(tool("import-blkparse", inp, "--event", ev, "-o", out))
        c = c_check(out)
        assert c["timeunit"] == "ns" and c["records"] == len(recs)
        assert list(c["files"].values()) == [{"role": "data", "size": 4190208, "max": 4190208,
                                              "extent": 4190208, "path": "dev-7-0"}]
        names = {str(k): v["name"] for k, v in c["streams"].items()}
        got = [(names[x[1]], *x[3:]) for x in records(out)]
        assert got == recs, ev
        if ev == "Q":
            assert "1 FUA flags dropped" in r.stderr
        if ev == "C":
            assert "2 skipped (no data)" in r.stderr
    # times: nanoseconds from the time column
    first = records(tmp_path / "D.trace")[0]
    assert first[0] == "13129"
    out = tmp_path / "single.trace"
    ok(tool("import-blkparse", inp, "--streams", "single", "-o", out))
    c = c_check(out)
    assert list(c["streams"].values()) == [{"name": "device", "records": 8}]
    # standard input
    r = ok(tool("import-blkparse", "-", stdin=BLKPARSE_SAMPLE))
    assert r.stdout.startswith("dbtrace 1\n") and r.stdout.endswith("end 8\n")
    (tmp_path / "stdout.trace").write_text(r.stdout)
    assert c_check(tmp_path / "stdout.trace")["records"] == 8


@pytest.mark.nofio
@pytest.mark.parametrize("line,reason", [
    ("  7,0    1        0     0.0000 25438  D  WS 0 + 8 [dd]", "bad time '0.0000'"),
    ("  7,0    1        0     0.000013129 25438  D  XS 0 + 8 [dd]", "unknown RWBS field 'XS'"),
    ("  7,0    1        0     0.000013129 25438  D  WS zero + 8 [dd]",
     "cannot read the sectors"),
    ("  7,0    1        0     0.000000001 25438  D  WS 0 + 8 [dd]", "goes back"),
    ("  7,0    1   D  WS 0 + 8 [dd]", "malformed event line"),
    ("hello", "not a blkparse event line"),
    ("  7,0    1        0     0.000013129 25438  D  WS 0 + 262144 [dd]",
     "over the trace format's limit"),
])
def test_blkparse_bad_input(tmp_path, line, reason):
    inp = tmp_path / "bad.txt"
    inp.write_text("  7,0    1        0     0.000000005 25438  Q  WS 0 + 8 [dd]\n"
                   "  7,0    1        0     0.000000009 25438  D  WS 0 + 8 [dd]\n"
                   + line + "\n")
    out = tmp_path / "out.trace"
    r = tool("import-blkparse", inp, "-o", out)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"fio-pack trace: {inp} line 3: ") and reason in r.stderr, r.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["bad.txt"]


TRACING = Path("/sys/kernel/tracing")


def _blk_capture_possible():
    if not IS_ROOT:
        return "needs root (loop device, kernel tracing)"
    if not shutil.which("blkparse") or not shutil.which("losetup"):
        return "blkparse (package blktrace) or losetup not installed"
    try:
        if "blk" not in (TRACING / "available_tracers").read_text().split():
            return "the kernel has no blk tracer"
        if (TRACING / "current_tracer").read_text().strip() != "nop" or \
                (TRACING / "set_event").read_text().strip():
            return "kernel tracing is in use (a tracer or events are set)"
        if (TRACING / "tracing_on").read_text().strip() != "1":
            return "kernel tracing is switched off (tracing_on 0)"
    except OSError as e:
        return f"no tracefs: {e}"
    return None


def _write(path, value):
    with open(path, "w") as f:
        f.write(value)


@pytest.mark.skipif(_blk_capture_possible() is not None, reason=str(_blk_capture_possible()))
def test_blkparse_live_loop_device(tmp_path):
    """A real capture: dd on a loop device, the kernel's blk events through
    blkparse, imported at the Q, D and C events."""
    img = tmp_path / "img"
    with open(img, "wb") as f:
        f.truncate(4 << 20)
    loop = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True,
                          check=True).stdout.strip()
    dev = os.path.basename(loop)
    enable = Path(f"/sys/block/{dev}/trace/enable")
    opts = {o: (TRACING / "options" / o).read_text().strip() for o in ("bin", "context-info")}
    pids = {}
    raw = b""
    try:
        time.sleep(0.2)       # let udev's probe of the new device pass
        _write(enable, "1")
        _write(TRACING / "current_tracer", "blk")
        _write(TRACING / "trace", "")
        for what, cmd in [
                ("write", ["dd", "if=/dev/zero", f"of={loop}", "bs=4k", "count=64",
                           "oflag=direct"]),
                ("read", ["dd", f"if={loop}", "of=/dev/null", "bs=8k", "count=32", "skip=64",
                          "iflag=direct"]),
                ("dsync", ["dd", "if=/dev/zero", f"of={loop}", "bs=4k", "count=4", "seek=256",
                           "oflag=direct,dsync"])]:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pids[what] = p.pid
            assert p.wait(timeout=30) == 0, what
        subprocess.run(["blkdiscard", "-o", str(1 << 20), "-l", str(1 << 20), loop], check=True)
        _write(TRACING / "options" / "context-info", "0")
        _write(TRACING / "options" / "bin", "1")
        fd = os.open(TRACING / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        try:
            while True:
                try:
                    b = os.read(fd, 1 << 16)
                except BlockingIOError:
                    break
                if not b:
                    break
                raw += b
        finally:
            os.close(fd)
    finally:
        for o, v in opts.items():
            _write(TRACING / "options" / o, v)
        _write(TRACING / "current_tracer", "nop")
        _write(enable, "0")
        subprocess.run(["losetup", "-d", loop])
    text = subprocess.run(["blkparse", "-i", "-"], input=raw, capture_output=True,
                          check=True).stdout
    (tmp_path / "blkparse.txt").write_bytes(text)
    assert b"Events (" in text, text[-500:]
    for ev in ("Q", "D", "C"):
        out = tmp_path / f"{ev}.trace.gz"
        ok(tool("import-blkparse", tmp_path / "blkparse.txt", "--event", ev, "-o", out))
        c = c_check(out)
        assert c["timeunit"] == "ns"
        rdev = os.stat(loop).st_rdev
        assert [f["path"] for f in c["files"].values()] == \
            [f"dev-{os.major(rdev)}-{os.minor(rdev)}"]
        by_name = {s["name"]: k for k, s in c["streams"].items()}
        recs = records(out)
        per = {}
        for what, pid in pids.items():
            sid = str(by_name[f"pid-{pid}"])
            per[what] = [r[3:] for r in recs if r[1] == sid]
        # each dd is its own stream, with exactly its requests
        assert per["write"] == [["write", f"p{i}", "4096"] for i in range(64)], ev
        assert per["read"] == [["read", f"p{128 + 2 * i}", "8192"] for i in range(32)], ev
        writes = [r for r in per["dsync"] if r[0] == "write"]
        assert writes == [["write", f"p{256 + i}", "4096"] for i in range(4)], ev
        assert sum(r[0] == "fsync" for r in per["dsync"]) >= 4, (ev, per["dsync"])
        trims = [r for r in recs if r[3] == "trim"]
        assert sum(int(r[5]) for r in trims) == 1 << 20 and trims[0][4] == "p256", ev
        # a flush ends the dsync process's stream after its last write
        assert per["dsync"][-1] == ["fsync"], ev
