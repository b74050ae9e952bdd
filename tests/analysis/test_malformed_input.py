"""Malformed input to every command that reads a JSON document: one line
naming the file, exit status 2, never a traceback.

The cases that once gave a traceback (`analyze` on {"jobs":[1,2]},
{"jobs":5}, "read":"oops", "job options" as a list; `summary` on
{"jobs":5} or binary garbage; `study --resume` on a {} study.json) are
members of families made here from valid documents: at every place in the
document, a value of each other type (a string, a list, an object, null,
true) and the numbers fio never writes (NaN, 1e400, a 400-digit integer);
and the whole file truncated, empty, binary, nested too deep. The documents: fio's JSON output (the
fixtures of tests/fixtures/fio-json: local, json+ histograms, client/server,
PostMark's priorities), the smallfile engine's opstats lines, a study's
study.json and run meta file, the catalogue and the published figures.

The commands run in this process through fio-pack's own entry point
(fiopack.cli.main), so that the thousands of variants take seconds.

Pure Python: no fio, no engine (marked nofio)."""
import copy
import json
import signal
import traceback
from pathlib import Path

import pytest

from helpers.fio import REPO
from fiopack import cli
from fiopack.catalogue import split_json

pytestmark = [pytest.mark.nofio, pytest.mark.nosan]

FIXTURES = REPO / "tests" / "fixtures" / "fio-json"
# what each place of a document is replaced with
BAD = [("a string", "oops"), ("a list", [1, 2]), ("an object", {"x": 1}), ("null", None),
       ("true", True), ("NaN", float("nan")), ("1e400", "@1e400@"), ("a huge integer", 10 ** 400)]


def run(capsys, *argv, what=""):
    """fio-pack ARGV in this process: (exit status, stderr), or the test
    fails with the traceback. SIGPIPE and SIGTERM are restored after (the
    dispatcher and the study set them for a command's own process)."""
    saved = signal.getsignal(signal.SIGPIPE), signal.getsignal(signal.SIGTERM)
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code
    except Exception:
        out = capsys.readouterr()
        pytest.fail(f"{what}: fio-pack {' '.join(map(str, argv))}: a traceback\n"
                    f"{traceback.format_exc()}\n{out.err[-2000:]}")
    finally:
        signal.signal(signal.SIGPIPE, saved[0])
        signal.signal(signal.SIGTERM, saved[1])
    return rc, capsys.readouterr().err


def places(doc, path=()):
    """The places of @doc: every key of an object (of a map of numbers, such
    as percentiles, the first two), the first item of a list."""
    yield path
    if isinstance(doc, dict):
        for i, (k, v) in enumerate(doc.items()):
            if i < 2 or not k[:1].isdigit():
                yield from places(v, path + (k,))
    elif isinstance(doc, list) and doc:
        yield from places(doc[0], path + (0,))


def replaced(doc, path, value):
    out = copy.deepcopy(doc)
    if not path:
        return value
    cur = out
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return out


def dumps(doc) -> str:
    # 1e400 is written as the literal fio never prints (json.loads reads inf)
    return json.dumps(doc).replace('"@1e400@"', "1e400")


def variants(doc, text: str):
    """(what, file content) of the family made from @doc (@text: as written)."""
    for path in places(doc):
        where = "/".join(map(str, path)) or "the document"
        for name, value in BAD:
            yield f"{where} = {name}", dumps(replaced(doc, path, value)).encode()
    for n in (0, 1, len(text) // 3, len(text) // 2, len(text) - 2):
        yield f"truncated to {n} characters", text[:n].encode()
    yield "binary", bytes(range(256)) * 8
    yield "binary after a brace", b"{" + bytes(range(256))
    yield "nested too deep", b"[" * 100000
    yield "latin-1 text", "{\"jobs\": [{\"jobname\": \"\xe9\"}]".encode("latin-1")


def check_one_line(rc, err, path, what):
    """Exit status 0 (the variant changed nothing the command reads), 1 (a
    job's error) or 2 with one line naming @path (None: a valid document
    the command refuses for what it says, such as a scenario's new
    target kind)."""
    assert rc in (0, 1, 2), (what, rc, err)
    if rc == 2:
        lines = err.splitlines()
        assert len(lines) == 1, f"{what}: {err}"
        assert path is None or str(path) in lines[0], \
            f"{what}: the message does not name {path}: {err}"


def fio_docs():
    for name in ("local-multi.out", "client-server.out", "postmark.json"):
        text = (FIXTURES / name).read_text()
        yield name, json.loads(split_json(text)[1]), text


@pytest.mark.parametrize("name", ["local-multi.out", "client-server.out", "postmark.json"])
def test_fio_json_family(name, tmp_path, capsys):
    """analyze rows and summary on every variant of a fio result."""
    doc, text = next((d, t) for n, d, t in fio_docs() if n == name)
    f = tmp_path / "result.json"
    seen = 0
    for what, content in variants(doc, text):
        f.write_bytes(content)
        for argv in (["analyze", "rows", f, "--quiet"], ["summary", f]):
            rc, err = run(capsys, *argv, what=what)
            check_one_line(rc, err, f, f"{argv[0]}: {what}")
            seen += rc == 2
    assert seen > 100, "the family was not refused: is it the document the commands read?"


def test_the_issues_fio_json_cases(tmp_path, capsys):
    f = tmp_path / "result.json"
    for text, why in (('{"jobs":[1,2]}', "jobs[0]: the number 1, not an object"),
                      ('{"jobs":5}', "jobs: the number 5, not a list"),
                      ('{"jobs":[{"jobname":"j","read":"oops"}]}', "jobs[0].read: a string"),
                      ('{"jobs":[{"jobname":"j","job options":["bs=4k"]}]}',
                       "jobs[0]['job options']: a list, not an object")):
        f.write_text(text)
        for argv in (["analyze", "rows", f], ["summary", f]):
            rc, err = run(capsys, *argv)
            assert rc == 2 and err.count("\n") == 1 and str(f) in err and why in err, \
                (argv, err)
    f.write_bytes(bytes(range(256)))
    rc, err = run(capsys, "summary", f)
    assert rc == 2 and err.startswith(f"fio-pack summary: {f}: "), err


def test_opstats_family(tmp_path, capsys):
    """summary RESULT OPSTATS on every variant of one opstats line."""
    result = FIXTURES / "smallfile.json"
    lines = (FIXTURES / "smallfile-ops.jsonl").read_text().splitlines()
    doc = json.loads(lines[1])
    f = tmp_path / "ops.jsonl"
    for what, content in variants(doc, lines[1]):
        f.write_bytes(lines[0].encode() + b"\n" + content + b"\n")
        rc, err = run(capsys, "summary", result, f, what=what)
        check_one_line(rc, err, f, what)


# ---------------------------------------------------------------------------
# A study's results directory: study.json, run meta files
# ---------------------------------------------------------------------------

def study_dir(tmp: Path) -> Path:
    """A complete study of one successful run (the local-multi fixture as
    its result), as the runner writes it, and the job file it names."""
    d = tmp / "study"
    (d / "runs").mkdir(parents=True)
    job = tmp / "job.fio"
    job.write_text("[r]\nrw=read\ndirectory=${T}\nsize=4k\n")
    cat = json.loads((REPO / "jobs" / "catalogue.json").read_text())
    sc = dict(next(s for s in cat["scenarios"] if s["id"] == "sysbench-rndrd"),
              jobs=[str(job)])
    import hashlib
    study = {"format": 1, "command": [], "scenario": sc,
             "target_spec": {"env": "T", "kind": "dir"},
             "job_files": [{"path": str(job), "sha256": hashlib.sha256(job.read_bytes())
                            .hexdigest()}],
             "sweep": {"threads": [1]}, "set": [["runtime", "1"]],
             "targets": [{"label": "ssd", "path": str(tmp), "kind": "dir", "device": None}],
             "servers": [], "repeats": 1, "order": "interleaved", "engines": [],
             "engine_dir": "/engines", "remote_engine_dir": "/engines",
             "remote_repo": str(REPO), "variables": {}, "status": "complete",
             "started": "2026-01-01T00:00:00.000000Z", "ended": "2026-01-01T00:01:00.000000Z",
             "local": {"hostname": "h", "kernel": "k"},
             "plan": [{"run": 1, "repeat": 1, "host": "local", "target": "ssd",
                       "params": {"threads": 1}, "values": {"threads": "1"}}]}
    (d / "study.json").write_text(json.dumps(study))
    text = (FIXTURES / "local-multi.out").read_text()
    (d / "runs" / "0001.json").write_text(text[text.index("\n{") + 1:])
    meta = {"run": 1, "scenario": "sysbench-rndrd", "ok": True, "problem": None,
            "params": {"threads": 1}, "repeat": 1, "host": "local",
            "target": {"label": "ssd", "path": str(tmp), "kind": "dir", "device": None},
            "fio_version": "fio-3.33", "started": None, "ended": None}
    (d / "runs" / "0001.meta.json").write_text(json.dumps(meta))
    return d


def test_study_json_family(tmp_path, capsys):
    """analyze rows DIR and study run --resume DIR on every variant of a
    study.json; the valid one is accepted by both (its one run is done)."""
    base = study_dir(tmp_path)
    doc = json.loads((base / "study.json").read_text())
    sj = base / "study.json"
    assert run(capsys, "analyze", "rows", base, "--quiet")[0] == 0
    resume = ["study", "run", "--resume", base, "--fio", "/bin/true", "--quiet"]
    assert run(capsys, *resume)[0] == 0
    for what, content in variants(doc, sj.read_text()):
        sj.write_bytes(content)
        rc, err = run(capsys, "analyze", "rows", base, "--quiet", what=what)
        check_one_line(rc, err, base, f"analyze: {what}")
        rc, err = run(capsys, *resume, what=what)
        check_one_line(rc, err, base, f"resume: {what}")
    sj.write_text("{}")      # the case that once gave a traceback
    rc, err = run(capsys, *resume)
    assert rc == 2 and err == f"fio-pack study: --resume {sj}: the document: no 'scenario'\n", err


def test_run_meta_family(tmp_path, capsys):
    base = study_dir(tmp_path)
    mf = base / "runs" / "0001.meta.json"
    doc = json.loads(mf.read_text())
    for what, content in variants(doc, mf.read_text()):
        mf.write_bytes(content)
        rc, err = run(capsys, "analyze", "rows", base, "--quiet", what=what)
        check_one_line(rc, err, base, what)


# ---------------------------------------------------------------------------
# The catalogue and the published figures
# ---------------------------------------------------------------------------

def test_catalogue_family(tmp_path, capsys):
    """study list, a study's plan and analyze's scenario inference on every
    variant of a catalogue of two scenarios."""
    cat = json.loads((REPO / "jobs" / "catalogue.json").read_text())
    cat["scenarios"] = [s for s in cat["scenarios"] if s["id"] in ("sysbench-rndrd",
                                                                   "fio-randread-64")]
    f = tmp_path / "catalogue.json"
    fixture = FIXTURES / "local-multi.out"
    rc, err = run(capsys, "study", "list", "--catalogue", REPO / "jobs" / "catalogue.json")
    assert rc == 0, "the shipped catalogue: " + err
    for what, content in variants(cat, json.dumps(cat, indent=1)):
        f.write_bytes(content)
        for argv in (["study", "list", "--catalogue", f],
                     ["study", "sysbench-rndrd", "--catalogue", f, "--target", f"t={tmp_path}",
                      "--fio", "/bin/true", "--dry-run"],
                     ["analyze", "rows", fixture, "--catalogue", f, "--quiet"]):
            rc, err = run(capsys, *argv, what=what)
            named = None if argv[1] == "sysbench-rndrd" else f
            check_one_line(rc, err, named, f"{argv[:2]}: {what}")


def test_figures_family(tmp_path, capsys):
    doc = json.loads((REPO / "reference" / "figures.json").read_text())
    doc["figures"] = [x for x in doc["figures"] if x.get("scenario") == "sysbench-rndrd"]
    f = tmp_path / "figures.json"
    fixture = FIXTURES / "local-multi.out"
    report = ["analyze", "report", fixture, "--scenario", "sysbench-rndrd", "--map",
              "intel320=/tmp/fio-json-fixtures/data", "--quiet"]
    for whole in (REPO / "reference" / "figures.json", ):
        assert run(capsys, *report, "--reference", whole)[0] == 0, "the shipped figures"
    for what, content in variants(doc, json.dumps(doc)):
        f.write_bytes(content)
        rc, err = run(capsys, "analyze", "report", fixture, "--scenario", "sysbench-rndrd",
                      "--reference", f, "--map", "intel320=/tmp/fio-json-fixtures/data",
                      "--quiet", what=what)
        # a figure of another shape names the file; a well-formed one the
        # results do not match (a parameter they lack) is refused for that
        check_one_line(rc, err, f if ("figures file" in err or "JSON" in err) else None,
                       what)


# ---------------------------------------------------------------------------
# Line-oriented inputs: traces, iologs, blkparse output, strace output and
# the capture's side files
# ---------------------------------------------------------------------------

IOLOG_V3 = ("fio version 3 iolog\n10 /d/f add\n20 /d/f open\n30 /d/f write 0 4096\n"
            "40 /d/f read 4096 8192\n50 /d/f sync 0 0\n60 /d/f close\n")
BLKPARSE = ("  7,0    1        0     0.000000000 25438  Q  WS 0 + 8 [(null)]\n"
            "  7,0    1        0     0.000013129 25438  D  WS 0 + 8 [(null)]\n"
            "  7,0    1        0     0.000064606    22  C  WS 0 + 8 [0]\n"
            "  7,0    1        0     0.004172842    78  D  FN [(null)]\n")
STRACE = ('100  1000.000000 openat(AT_FDCWD</db>, "data.db", O_RDWR|O_CREAT, 0644) = 3'
          '</db/data.db>\n'
          '100  1000.000020 pwrite64(3</db/data.db>, ""..., 8192, 0) = 8192 <0.000020>\n'
          '100  1000.000060 fdatasync(3</db/data.db>) = 0\n'
          '100  1000.000090 pread64(3</db/data.db>, ""..., 8192, 16384) = 4096\n')
LISTING = "d 0 \nf 20480 data.db\n"
PROCINFO = "100 name main-100\n100 cwd /db\n100 odirect 3,4\n"
# what a field is replaced with: numbers no writer prints, empty, bytes
FIELDS = ["nan", "-1", "1e400", "9" * 400, "", "\xb2", "0x10"]


def text_variants(text: str):
    """(what, content): every field of every line replaced by each of FIELDS,
    each line doubled and dropped, the text truncated, empty, binary."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        fields = line.rstrip("\n").split(" ")
        for j, field in enumerate(fields):
            if not field:
                continue
            for bad in FIELDS:
                new = " ".join(fields[:j] + [bad] + fields[j + 1:]) + "\n"
                yield f"line {i + 1} field {j + 1} = {bad[:8]!r}", \
                    "".join(lines[:i] + [new] + lines[i + 1:]).encode("latin-1")
        yield f"line {i + 1} twice", "".join(lines[:i + 1] + lines[i:]).encode("latin-1")
        yield f"line {i + 1} left out", "".join(lines[:i] + lines[i + 1:]).encode("latin-1")
    for n in (0, 1, len(text) // 2, len(text) - 1):
        yield f"truncated to {n}", text[:n].encode("latin-1")
    yield "binary", bytes(range(256)) * 4


def example_trace() -> str:
    import re
    doc = (REPO / "docs" / "dbtrace-format.md").read_text()
    return re.search(r"## Example\n\n```\n(.*?)```", doc, re.S).group(1)


@pytest.mark.parametrize("reader", ["trace check", "trace export-iolog", "trace import-iolog",
                                    "trace import-blkparse", "capture convert",
                                    "capture --listing", "capture --procinfo"])
def test_line_input_family(reader, tmp_path, capsys):
    good = {"trace check": example_trace(), "trace export-iolog": example_trace(),
            "trace import-iolog": IOLOG_V3, "trace import-blkparse": BLKPARSE,
            "capture convert": STRACE, "capture --listing": LISTING,
            "capture --procinfo": PROCINFO}[reader]
    f = tmp_path / "input"
    out = tmp_path / "out"
    side = {"strace": tmp_path / "s", "listing": tmp_path / "l", "procinfo": tmp_path / "p"}
    side["strace"].write_text(STRACE)
    side["listing"].write_text(LISTING)
    side["procinfo"].write_text(PROCINFO)
    argv = {"trace check": ["trace", "check", f],
            "trace export-iolog": ["trace", "export-iolog", f, "-o", out, "--quiet"],
            "trace import-iolog": ["trace", "import-iolog", f, "-o", out, "--quiet"],
            "trace import-blkparse": ["trace", "import-blkparse", f, "-o", out, "--quiet"],
            "capture convert": ["capture", "convert", f, "--db", "sqlite", "--datadir", "/db",
                                "--listing", side["listing"], "--procinfo", side["procinfo"],
                                "-o", out, "--quiet"],
            "capture --listing": ["capture", "convert", side["strace"], "--db", "sqlite",
                                  "--datadir", "/db", "--listing", f, "-o", out, "--quiet"],
            "capture --procinfo": ["capture", "convert", side["strace"], "--db", "sqlite",
                                   "--datadir", "/db", "--procinfo", f, "-o", out,
                                   "--quiet"]}[reader]
    f.write_text(good, encoding="latin-1")
    assert run(capsys, *argv)[0] in (0, 3), reader
    refused = 0
    for what, content in text_variants(good):
        f.write_bytes(content)
        rc, err = run(capsys, *argv, what=what)
        assert rc in (0, 2, 3), (what, rc, err)
        if rc == 2:
            lines = err.splitlines()
            assert len(lines) == 1 and "Traceback" not in err, f"{what}: {err}"
            refused += 1
    assert refused, f"{reader}: no variant refused"


# ---------------------------------------------------------------------------
# The other inputs: bench capture --combine's JSON, gen iozone-grid --check,
# syscalls --only
# ---------------------------------------------------------------------------

def test_bench_capture_combine_family(tmp_path, capsys):
    facts = {"tps": 900.0, "db_cpu_per_tx_ms": 1.5, "db_cpu_s": 20.0, "cpu_capture_s": 3.0,
             "records": 1000, "span_s": 20.0, "cpu_by_comm": {"strace": 3.0},
             "cpu_total_s": 4.0, "complete": False, "incomplete": [[3, "io_uring"]]}
    run_doc = {"db": "postgresql", "tracers": ["strace"], "argv": [], "start": "s", "end": "e",
               "setup": "x", "nproc": 2, "load_before": [0.1, 0.2, 0.3], "load_after": "y",
               "rounds": [{"alone": {"tps": 1000.0, "db_cpu_per_tx_ms": 1.0, "db_cpu_s": 20.0},
                           "strace": facts}]}
    f = tmp_path / "run.json"
    f.write_text(json.dumps(run_doc))
    assert run(capsys, "bench", "capture", "--combine", f)[0] == 0
    for what, content in variants(run_doc, json.dumps(run_doc)):
        f.write_bytes(content)
        rc, err = run(capsys, "bench", "capture", "--combine", f, what=what)
        check_one_line(rc, err, f, what)


@pytest.mark.parametrize("argv", [
    ["gen", "iozone-grid", "--check", "x"], ["gen", "iozone-grid", "--check", "stride"],
    ["gen", "iozone-grid", "--check", "stride:64k"], ["gen", "iozone-grid", "--check", "bkwd:0:0"],
    ["gen", "iozone-grid", "--check", "stride:1k:4k"],
    ["gen", "iozone-grid", "--check", "stride:nan:4k"],
    ["gen", "iozone-grid", "--check", "bkwd:99999999999g:4k"],
    ["syscalls", "--only", "dd,nope"]], ids=lambda a: " ".join(a))
def test_option_texts_refused(argv, capsys):
    rc, err = run(capsys, *argv, what=" ".join(argv))
    assert rc == 2 and err.count("\n") == 1 and argv[-2] in err, err


# ---------------------------------------------------------------------------
# Inputs that are not files, or no end (found by a trial of the pack as a
# user runs it: a FIFO blocked, /dev/zero was read until memory ran out)
# ---------------------------------------------------------------------------

PACK = [__import__("sys").executable, str(REPO / "scripts" / "fio-pack")]
LOCAL = FIXTURES / "local-multi.out"
# what each command reads, as a function of the input's path
READERS = {"summary": lambda p, d: ["summary", p],
           "summary-opstats": lambda p, d: ["summary", LOCAL, p],
           "analyze": lambda p, d: ["analyze", "rows", p],
           "bench-combine": lambda p, d: ["bench", "capture", "--combine", p],
           "study-catalogue": lambda p, d: ["study", "list", "--catalogue", p],
           "capture-convert": lambda p, d: ["capture", "convert", p, "--db", "generic",
                                            "--datadir", d, "-o", d / "o.trace"],
           # its side files: an empty strace output with each
           "convert-listing": lambda p, d: ["capture", "convert", "/dev/null", "--db", "generic",
                                            "--datadir", d, "-o", d / "o.trace", "--listing", p],
           "convert-procinfo": lambda p, d: ["capture", "convert", "/dev/null", "--db",
                                             "generic", "--datadir", d, "-o", d / "o.trace",
                                             "--procinfo", p]}


def _input(tmp_path, kind):
    if kind == "fifo":
        import os
        os.mkfifo(tmp_path / "in")
        return tmp_path / "in"
    if kind == "sparse-1TB":
        with open(tmp_path / "in", "wb") as f:
            f.truncate(1 << 40)
        return tmp_path / "in"
    return Path("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "sparse-1TB"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_input_that_is_not_a_file_or_has_no_end(reader, kind, tmp_path):
    """A FIFO as an input blocked the command for ever in open(); /dev/zero
    (and /dev/urandom) or a sparse 1 TB file were read whole, or as one
    line, until a MemoryError traceback. An input must be a regular file
    (fiopack/inputs.py), a document read whole at most 256 MiB, a line of
    strace's output at most 16 MiB: one line naming the file, exit 2."""
    import subprocess
    path = _input(tmp_path, kind)
    try:
        p = subprocess.run(PACK + [str(a) for a in READERS[reader](path, tmp_path)], capture_output=True,
                           text=True, timeout=30, cwd=tmp_path,
                           preexec_fn=lambda: __import__("resource").setrlimit(
                               __import__("resource").RLIMIT_AS, (4 << 30, 4 << 30)))
    except subprocess.TimeoutExpired:
        pytest.fail(f"fio-pack {reader} on {kind}: still running after 30 s")
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and str(path) in lines[0], p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ([] if kind == "dev-zero" else ["in"])
