"""The scenario job library (jobs/0*/*.fio) and its catalogue (jobs/catalogue.json).

Every job file: has the documented header, is accepted by fio, and runs for
real in a shrunken copy (sizes and run times cut by text substitution, FIO_DIR
pointing into tmp_path) producing the numbers its catalogue metrics read.
With no environment at all, jobs write only /tmp files with their own
distinctive names (checked in a private mount namespace whose /tmp is an
empty tmpfs when we are root, else by listing the real /tmp before and after).
The catalogue lists every scenario of SCENARIOS.md, and every metric
expression evaluates - with a small evaluator that allows only field access,
indexing by constants and arithmetic - on the job's real JSON.

Run: /usr/bin/python3 -m pytest -q tests/analysis/test_scenario_jobs.py
"""
import ast
import json
import math
import operator
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fio import ENGINE_DIR, FIO, REPO, run_fio
from fiopack.gen import iozone_grid
from fiopack.study import jobfile

JOBS = REPO / "jobs"
CATALOGUE = JOBS / "catalogue.json"
JOB_FILES = sorted(JOBS.glob("0*/*.fio"))
SCENARIOS_MD = REPO.parent / "shared" / "SCENARIOS.md"
# the ids of SCENARIOS.md's catalogue table, for when the file is not beside the repository
SCENARIO_IDS = ["hdparm-t", "hdparm-T", "seeker", "dd-write-10g", "dd-read-10g", "mysql-load",
                "mysql-dump", "postmark-isp", "iozone-auto", "iozone-raid0-stripe",
                "sysbench-rndrd", "storagemark-service", "bonnie-seq", "bonnie-seeks",
                "bonnie-files", "fio-randread-64", "fio-randwrite-64", "phoronix-disk-2010"]
HEADER_WORDS = ("Reproduces:", "Original:", "Identical", "Not identical", "Measures",
                "Headline", "Run from the repository root", "Environment", "Sizing")
FIO_PACK = [sys.executable, str(REPO / "scripts" / "fio-pack")]
IOZONE_GEN = [*FIO_PACK, "gen", "iozone-grid"]
BONNIE_GEN = [*FIO_PACK, "gen", "bonnie-seq"]

# Shrinking: option lines replaced in the copy that is run (each must be present).
SHRINK = {
    "hdparm-t-buffered.fio": {"size=64m": "size=8m", "runtime=3": "runtime=1"},
    "hdparm-T-cached.fio": {"runtime=2": "runtime=1"},
    "seeker.fio": {"size=64m": "size=8m", "runtime=30": "runtime=1"},
    "dd-write-10g.fio": {"size=64m": "size=8m"},
    "dd-read-10g.fio": {"size=64m": "size=8m"},
    "sysbench-rndrd.fio": {"size=64m": "size=8m", "runtime=10": "runtime=1", "numjobs=4": "numjobs=2"},
    "storagemark-service.fio": {"size=64m": "size=8m", "runtime=10": "runtime=1",
                                "io_size=16m": "io_size=2m"},
    "bonnie-seeks.fio": {"size=64m": "size=8m", "number_ios=1800": "number_ios=100"},
    "bonnie-files.fio": {"tree_files=16384": "tree_files=512"},
    "fio-randread-64.fio": {"size=64m": "size=8m", "runtime=10": "runtime=1", "numjobs=64": "numjobs=4"},
    "fio-randwrite-64.fio": {"size=64m": "size=8m", "runtime=10": "runtime=1", "numjobs=64": "numjobs=4"},
    "phoronix-disk-2010.fio": {"tree_files=64": "tree_files=4", "size=64m": "size=8m"},
    # the shipped traces are seconds long: run as they are
    "mysql-load.fio": {},
    "mysql-dump.fio": {},
}


def catalogue() -> dict:
    return json.loads(CATALOGUE.read_text())


def header_comment(path: Path) -> str:
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith((";", "#")) or not line.strip():
            lines.append(line)
        else:
            break
    return "\n".join(lines)


def shrunken_copy(src: Path, dst_dir: Path, replace: dict) -> Path:
    text = src.read_text()
    for old, new in replace.items():
        pattern = rf"(?m)^{re.escape(old)}$"
        assert re.search(pattern, text), f"{src.name}: no line {old!r} to shrink"
        text = re.sub(pattern, new, text)
    text = text.replace("external:${FIO_PACK_ENGINES}/", f"external:{ENGINE_DIR}/")
    dst = dst_dir / src.name
    dst.write_text(text)
    return dst


# ---------------------------------------------------------------------------
# A safe evaluator for catalogue metric expressions
# ---------------------------------------------------------------------------

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv}


def eval_metric(expr: str, job: dict) -> float:
    """Evaluates e.g. 'read.clat_ns.percentile["95.000000"] / 1e6' on one fio JSON job.

    Names and attributes are keys of the job object; only constant subscripts,
    + - * / and unary minus are allowed: no calls, no other names.
    """
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.Name):
            return job[node.id]
        if isinstance(node, ast.Attribute):
            return ev(node.value)[node.attr]
        if isinstance(node, ast.Subscript):
            key = node.slice
            if not (isinstance(key, ast.Constant) and type(key.value) in (str, int)):
                raise ValueError(f"only constant subscripts are allowed: {expr!r}")
            return ev(node.value)[key.value]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"not allowed in a metric expression: {ast.dump(node)}")
    return ev(ast.parse(expr, mode="eval"))


def test_eval_metric_is_restricted():
    job = {"read": {"bw_bytes": 2097152, "clat_ns": {"percentile": {"95.000000": 3e6}}},
           "job_runtime": 500}
    assert eval_metric("read.bw_bytes / 1048576", job) == 2
    assert eval_metric('read.clat_ns.percentile["95.000000"] / 1e6', job) == 3
    assert eval_metric("-(job_runtime / 1000) * 2", job) == -1
    for bad in ("__import__('os')", "read.bw_bytes.__class__()", "open('x')", "read[job_runtime]",
                "lambda: 1", "read.bw_bytes if 1 else 0", "read.bw_bytes ** 2"):
        with pytest.raises((ValueError, KeyError, TypeError)):
            eval_metric(bad, job)


def job_entries(result, metric_job):
    """The JSON job objects a metric applies to (None: every job but the preconditions)."""
    if metric_job is None:
        return [j for j in result.jobs if "precondition" not in j["jobname"]]
    return [j for j in result.jobs if j["jobname"] == metric_job]


# ---------------------------------------------------------------------------
# Headers and parsing
# ---------------------------------------------------------------------------

@pytest.mark.nofio
def test_job_files_present():
    dirs = sorted(p.name for p in JOBS.glob("0*") if p.is_dir())
    assert [d[:3] for d in dirs] == ["000", "001", "002", "003", "004"], dirs
    assert len(JOB_FILES) >= 14, [p.name for p in JOB_FILES]


@pytest.mark.nofio
@pytest.mark.parametrize("path", JOB_FILES, ids=[p.name for p in JOB_FILES])
def test_header(path):
    text = path.read_text()
    first = text.splitlines()[0]
    assert first.startswith(";") and path.name in first, f"first line must name the file: {first!r}"
    header = header_comment(path)
    for word in HEADER_WORDS:
        assert word in header, f"{path.name}: header lacks {word!r}"
    used = set(re.findall(r"\$\{(\w+)\}", text))
    undocumented = [v for v in sorted(used) if v not in header]
    assert not undocumented, f"{path.name} uses ${{{undocumented}}} without documenting it"
    body = text[len(header):]
    assert not re.search(r"(?m)^readonly", body), "readonly is not a job-file option"
    assert "filename_format" not in body, "use explicit filename= lists (numjobs clones)"
    # a job that may write a device or a file must say so loudly
    if re.search(r"(?m)^rw=(write|randwrite|randrw|rw)", body) or "file_op=create" in body:
        assert re.search(r"WRITES|WRITE", header), f"{path.name}: writes its target without saying so"


@pytest.mark.parametrize("path", JOB_FILES, ids=[p.name for p in JOB_FILES])
def test_parse_only(path, tmp_path):
    job = shrunken_copy(path, tmp_path, {})
    r = run_fio(["--parse-only"], jobfile=job, cwd=REPO, json_output=False,
                env={"FIO_DIR": str(tmp_path)})
    assert r.rc == 0, r.describe()
    assert "dropped" not in r.stderr and "Bad option" not in r.stderr, r.describe()


@pytest.mark.parametrize("path", JOB_FILES, ids=[p.name for p in JOB_FILES])
def test_targets_are_safe(path):
    """Every target is under ${FIO_DIR}:/tmp, an absolute /tmp path or the engine's own default."""
    body = path.read_text()[len(header_comment(path)):]
    for m in re.finditer(r"(?m)^directory=(.*)$", body):
        assert m.group(1) == "${FIO_DIR}:/tmp", m.group(0)
    for m in re.finditer(r"(?m)^(?:filename|replay_redirect)=(.*)$", body):
        for name in m.group(1).split(":"):
            assert name.startswith("fio-pack.") or name.startswith("/tmp/fio-pack."), m.group(0)
            if not name.startswith("/"):
                assert "directory=${FIO_DIR}:/tmp" in body, f"{name}: relative name without directory="
    for m in re.finditer(r"(?m)^tree_dir=(.*)$", body):
        assert m.group(1) == "${FIO_DIR}", m.group(0)


# ---------------------------------------------------------------------------
# Running the jobs
# ---------------------------------------------------------------------------

def runnable_copy(path: Path, tmp_path: Path, target: Path) -> Path:
    """A small copy of path to run, with its data in target."""
    if path.name == "iozone-auto.fio":
        out = tmp_path / "grid"
        subprocess.run([*IOZONE_GEN, "--max-file", "64k",
                        "--data-dir", str(target), "--out", str(out)], check=True, cwd=REPO)
        return out / "iozone-auto.fio"
    if path.name == "bonnie-seq.fio":
        out = tmp_path / "bonnie"
        subprocess.run([*BONNIE_GEN, "--size", "2m", "--byte-io", "64k",
                        "--data-dir", str(target), "--out", str(out)], check=True, cwd=REPO)
        return out / "bonnie-seq.fio"
    return shrunken_copy(path, tmp_path, SHRINK[path.name])


@pytest.mark.parametrize("path", JOB_FILES, ids=[p.name for p in JOB_FILES])
def test_runs_and_metrics_evaluate(path, tmp_path):
    rel = str(path.relative_to(REPO))
    rows = [s for s in catalogue()["scenarios"] if rel in s["jobs"]]
    assert rows, f"{rel} is in no catalogue row"
    target = tmp_path / "target"
    target.mkdir()
    job = runnable_copy(path, tmp_path, target)
    r = run_fio(jobfile=job, cwd=REPO, env={"FIO_DIR": str(target), "TMPDIR": str(tmp_path)},
                timeout=300).ok()
    names = [j["jobname"] for j in r.jobs]
    for j in r.jobs:
        assert j["error"] == 0, f"job {j['jobname']} error {j['error']}\n" + r.describe()
    checked = 0
    for row in rows:
        for metric in row["metrics"]:
            if metric["job"] is not None and metric["job"] not in names:
                continue        # a metric of another job file of the same row
            entries = job_entries(r, metric["job"])
            assert entries, f"{row['id']}: metric {metric['name']} matches no job in {names}"
            for j in entries:
                value = eval_metric(metric["expr"], j)
                assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0, \
                    f"{row['id']}: {metric['name']} = {value!r} on job {j['jobname']}"
                checked += 1
    assert checked, f"no catalogue metric of {rel} was checked"


def test_file_or_device_target_via_symlink(tmp_path):
    """FIO_DIR holding a symlink named like the job's file: fio follows it (here to a file)."""
    real = tmp_path / "real.dat"
    real.write_bytes(b"\0" * (8 << 20))
    d = tmp_path / "dev"
    d.mkdir()
    (d / "fio-pack.hdparm-T.dat").symlink_to(real)
    job = shrunken_copy(JOBS / "000-mtron-isp" / "hdparm-T-cached.fio", tmp_path, {"runtime=2": "runtime=1"})
    r = run_fio(jobfile=job, cwd=REPO, env={"FIO_DIR": str(d)}).ok()
    assert r.job("hdparm-T")["read"]["io_bytes"] > 0
    assert (d / "fio-pack.hdparm-T.dat").is_symlink() and real.stat().st_size == 8 << 20


# ---------------------------------------------------------------------------
# No environment: /tmp only, distinctive names
# ---------------------------------------------------------------------------

NO_ENV_JOBS = ["000-mtron-isp/hdparm-t-buffered.fio", "002-intel320-sysbench/sysbench-rndrd.fio",
               "000-mtron-isp/dd-read-10g.fio"]


def _listing(d: Path) -> set:
    try:
        return set(os.listdir(d))
    except FileNotFoundError:
        return set()


@pytest.mark.parametrize("rel", NO_ENV_JOBS)
def test_no_environment_writes_only_distinctive_tmp_files(rel, tmp_path):
    src = JOBS / rel
    job_text = shrunken_copy(src, tmp_path, SHRINK[src.name]).read_text()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    repo_before = _listing(REPO), _listing(JOBS)
    isolated = os.geteuid() == 0 and shutil.which("unshare") is not None
    if isolated:
        # a private /tmp: an empty tmpfs in a mount namespace of our own
        # (fio is opened first and run through its descriptor: the
        # repository itself may live under /tmp, hidden by the mount)
        script = (f'exec 3<"{FIO}"; '
                  'mount -t tmpfs -o size=256m fio-pack-test /tmp || exit 90; '
                  '/proc/self/fd/3 --output-format=json -; rc=$?; '
                  'echo @@LISTING@@ >&2; ls -A /tmp >&2; exit $rc')
        p = subprocess.run(["unshare", "--mount", "--", "sh", "-c", script], input=job_text,
                           capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
        assert p.returncode != 90, "cannot mount a tmpfs on /tmp: " + p.stderr
        assert p.returncode == 0, p.stderr[-3000:]
        new = set(p.stderr.split("@@LISTING@@", 1)[1].split())
        created = sorted(new)
    else:
        before = _listing(Path("/tmp"))
        p = subprocess.run([str(FIO), "--output-format=json", "-"], input=job_text,
                           capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        created = sorted(_listing(Path("/tmp")) - before)
        created = [c for c in created if c.startswith("fio") or re.match(r".*\.\d+\.\d+$", c)]
        for c in created:
            if c.startswith("fio-pack."):
                Path("/tmp", c).unlink()
    data = json.loads(p.stdout)
    assert all(j["error"] == 0 for j in data["jobs"])
    assert sum(j["read"]["io_bytes"] + j["write"]["io_bytes"] for j in data["jobs"]) > 0
    assert all(c.startswith("fio-pack.") for c in created), f"{rel} created in /tmp: {created}"
    if src.name != "dd-read-10g.fio":        # dd-read removes its file (unlink=1)
        assert created, f"{rel} created nothing in /tmp: where did it write?"
    assert (_listing(REPO), _listing(JOBS)) == repo_before, "the job wrote into the repository"


# ---------------------------------------------------------------------------
# Catalogue
# ---------------------------------------------------------------------------

def scenario_ids() -> list:
    if SCENARIOS_MD.is_file():
        text = SCENARIOS_MD.read_text()
        table = text.split("## Scenario catalogue", 1)[1].split("\n## ", 1)[0]
        ids = [m.group(1) for m in re.finditer(r"(?m)^\| ([\w-]+) \| \d{3} \|", table)]
        assert ids == SCENARIO_IDS, "SCENARIOS.md's table changed: update SCENARIO_IDS"
        return ids
    return SCENARIO_IDS


@pytest.mark.nofio
def test_catalogue_shape():
    cat = catalogue()
    assert set(cat) == {"version", "scenarios"} and cat["version"] == 1
    keys = {"id", "source", "title", "jobs", "target", "writes_target", "engines", "params",
            "metrics", "status"}
    for row in cat["scenarios"]:
        assert set(row) == keys, (row["id"], set(row) ^ keys)
        assert re.fullmatch(r"00[0-4]", row["source"]), row
        assert set(row["target"]) == {"env", "kind"}
        assert row["target"]["kind"] in ("dir", "file-or-device", "none"), row
        assert isinstance(row["writes_target"], bool)
        assert set(row["engines"]) <= {"smallfile", "postmark", "dbreplay"}, row
        assert isinstance(row["params"], dict)
        for m in row["metrics"]:
            assert set(m) == {"name", "expr", "unit", "job"}, m
            ast.parse(m["expr"], mode="eval")
        if row["status"] == "ok":
            assert row["jobs"] and row["metrics"], row["id"]
        else:
            assert not row["jobs"], row["id"]


def test_catalogue_covers_scenarios_and_files():
    cat = catalogue()
    ids = [s["id"] for s in cat["scenarios"]]
    assert ids == scenario_ids()
    referenced = set()
    for row in cat["scenarios"]:
        for rel in row["jobs"]:
            assert (REPO / rel).is_file(), f"{row['id']}: {rel} does not exist"
            referenced.add(rel)
            text = (REPO / rel).read_text()
            envs = row["target"]["env"]
            envs = [envs] if isinstance(envs, str) else (envs or [])
            # each job file reads the target from one of the scenario's variables
            if envs:
                assert any("${" + e + "}" in text or (rel.startswith("jobs/0") and
                                                      e in header_comment(REPO / rel))
                           for e in envs), (row["id"], envs, rel)
        uses = {e for rel in row["jobs"] for e in ("smallfile", "postmark", "dbreplay")
                if f"external:${{FIO_PACK_ENGINES}}/{e}.so" in (REPO / rel).read_text()}
        assert uses == set(row["engines"]), (row["id"], uses, row["engines"])
        for name, option in row["params"].items():
            assert all(re.search(rf"(?m)^{option}=", (REPO / rel).read_text()) for rel in row["jobs"]
                       if rel.startswith("jobs/0")), (row["id"], name, option)
    for path in JOB_FILES:
        assert str(path.relative_to(REPO)) in referenced, f"{path} is not in the catalogue"
    by_id = {s["id"]: s for s in cat["scenarios"]}
    assert by_id["mysql-load"]["status"] == by_id["mysql-dump"]["status"] == "ok"
    assert by_id["mysql-load"]["engines"] == by_id["mysql-dump"]["engines"] == ["dbreplay"]
    assert "jobs/postmark-isp.fio" in by_id["postmark-isp"]["jobs"]
    assert "jobs/postmark-pts.fio" in by_id["phoronix-disk-2010"]["jobs"]


# the options a "dir" target may be given to: a directory each
DIR_OPTIONS = {"directory", "tree_dir", "pm_location", "dbr_target"}


def target_uses(rel: str, envs: list) -> dict:
    """{target variable: [(option, line)]} of the job file's option lines."""
    uses = {e: [] for e in envs}
    for line in (REPO / rel).read_text().splitlines():
        if jobfile.is_comment(line):
            continue
        for e in envs:
            if "${" + e + "}" in line:
                uses[e].append((jobfile.line_key(line), line))
    return uses


@pytest.mark.nofio
def test_catalogue_target_kinds_match_the_jobs():
    """fio-randwrite-64 was once catalogued with a file-or-device
    target while its job takes FIO_DIR as directory=: the study refused a
    directory, fio refused a file or device as directory=, and the scenario
    could not run; iozone-auto and bonnie-seq were "dir" scenarios whose job
    uses no target at all (the study recorded a target the run never
    touched). Every scenario's kind must be what its job files do with its
    variables, and a file-or-device job must derive into one that names the
    target as its file."""
    for sc in catalogue()["scenarios"]:
        sid, kind = sc["id"], sc["target"]["kind"]
        envs = sc["target"]["env"]
        envs = [envs] if isinstance(envs, str) else list(envs or [])
        assert (kind == "none") == (not envs), f"{sid}: kind {kind} with variables {envs}"
        for rel in sc["jobs"]:
            uses = target_uses(rel, envs)
            if kind == "none":
                continue
            assert any(uses.values()), f"{sid}: {rel} uses none of {envs}"
            options = {o for u in uses.values() for o, _ in u}
            if kind == "dir":
                assert options <= DIR_OPTIONS, f"{sid}: {rel}: the directory target in {options}"
                continue
            # file-or-device: filename=${VAR}, or the file named in directory=${VAR}
            assert options in ({"filename"}, {"directory"}), f"{sid}: {rel}: {options}"
            derived = jobfile.derive_job([REPO / rel], [], {}, "/engines", [], None,
                                         file_target="/dev/sdX", target_vars=envs)
            lines = [l for l in derived.splitlines() if not jobfile.is_comment(l)]
            assert not [l for l in lines if jobfile.line_key(l) == "directory"], (sid, rel)
            names = [l for l in lines if jobfile.line_key(l) == "filename"]
            assert names and set(names) == {"filename=/dev/sdX"}, (sid, rel, names)
            assert "${" not in derived and "/dev/sdX/" not in derived, (sid, rel)


FILE_OR_DEVICE = [s["id"] for s in catalogue()["scenarios"]
                  if s["target"]["kind"] == "file-or-device"]


@pytest.mark.parametrize("sid", FILE_OR_DEVICE)
def test_file_or_device_scenario_runs_in_a_study(sid, tmp_path):
    """Each file-or-device scenario through the study on a file target
    (shrunk with --set): the run succeeds, its I/O went to the target file,
    and nothing else was made beside it."""
    d = tmp_path / "t"
    d.mkdir()
    target = d / "target.dat"
    target.write_bytes(os.urandom(8 << 20))     # the reading scenarios need it whole
    out = tmp_path / "results"
    p = subprocess.run([*FIO_PACK, "study", sid, "--target", f"f={target}", "--out", str(out),
                        "--set", "size=8m", "--set", "runtime=1", "--set", "numjobs=2",
                        "--fio", str(FIO), "--engine-dir", str(ENGINE_DIR), "--quiet"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    result = json.loads((out / "runs" / "0001.json").read_text())
    jobs = result["jobs"]
    assert all(j["error"] == 0 for j in jobs), p.stderr
    assert sum(j["read"]["io_bytes"] + j["write"]["io_bytes"] for j in jobs) > 0
    derived = (out / "runs" / "0001.fio").read_text()
    assert f"filename={target}\n" in derived
    assert os.listdir(d) == ["target.dat"] and target.stat().st_size == 8 << 20


def test_metrics_of_existing_postmark_jobs(tmp_path):
    """postmark-isp and postmark-pts are existing job files: evaluate their catalogue metrics on a
    short PostMark run of the same engine (the full runs write gigabytes)."""
    cat = {s["id"]: s for s in catalogue()["scenarios"]}
    for sid, name in (("postmark-isp", "postmark-isp"), ("phoronix-disk-2010", "postmark-pts")):
        loc = tmp_path / sid
        loc.mkdir()
        r = run_fio([f"--name={name}", f"--ioengine=external:{ENGINE_DIR}/postmark.so",
                     f"--pm_location={loc}", "--pm_transactions=200", "--pm_number=50"],
                    env={"TMPDIR": str(tmp_path)}).ok()
        for m in cat[sid]["metrics"]:
            if m["job"] == name:
                v = eval_metric(m["expr"], r.job(name))
                assert math.isfinite(v) and v > 0, (sid, m, v)


# ---------------------------------------------------------------------------
# Generated files are what their generators write
# ---------------------------------------------------------------------------

@pytest.mark.nofio
def test_generated_job_files_are_current(tmp_path):
    for name, gen, shipped_dir, args in (
            ("iozone-auto.fio", IOZONE_GEN, JOBS / "001-iozone-mtron", ["--max-file", "256k"]),
            ("bonnie-seq.fio", BONNIE_GEN, JOBS / "004-phoronix-raid", [])):
        out = tmp_path / gen[-1]
        subprocess.run([*gen, *args, "--out", str(out)], check=True, cwd=REPO)
        rel = str(shipped_dir.relative_to(REPO))
        text = (out / name).read_text().replace(str(out), rel)
        assert text == (shipped_dir / name).read_text(), \
            f"{name} differs from what fio-pack gen {gen[-1]} writes: regenerate it (see its docstring)"
        for log in (out / "iolog").iterdir():
            assert (shipped_dir / "iolog" / log.name).read_text() == log.read_text(), log.name
        shipped_logs = {p.name for p in (shipped_dir / "iolog").iterdir()}
        produced = {p.name for p in (out / "iolog").iterdir()}
        if name == "iozone-auto.fio":
            assert {n for n in shipped_logs if n.startswith(("bkwd-", "stride-"))} == produced


@pytest.mark.nofio
def test_iozone_offsets_follow_iozone_c():
    ns = vars(iozone_grid)
    k = 4096
    # backward: last record first
    assert ns["backward_offsets"](16 * k, k) == [i * k for i in range(15, -1, -1)]
    # stride: 17 records apart, restarting one record further on; files of <= 17 records
    # reread record 0 (iozone.c read_stride_perf_test)
    assert ns["stride_offsets"](16 * k, k) == [0] * 16
    s = ns["stride_offsets"](64 * k, k)
    assert len(s) == 64 and [o // k for o in s[:9]] == [0, 17, 34, 51, 1, 18, 35, 52, 2]
    pairs = list(ns["grid"](64 * 1024, 512 * 1024 * 1024))
    assert len(pairs) == 126
    assert (32 << 20, 4096) not in pairs and (32 << 20, 64 << 10) in pairs
    assert (16 << 20, 4096) in pairs and (512 << 20, 16 << 20) in pairs


@pytest.mark.nofio
def test_compare_syscalls_script_help():
    """scripts/fio-pack syscalls (docs/syscall-patterns.md) at least starts and explains itself."""
    p = subprocess.run([*FIO_PACK, "syscalls", "--help"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "strace" in p.stdout, p.stderr


@pytest.mark.nofio
@pytest.mark.parametrize("work", ["users-dir", "file"])
def test_syscalls_work_is_a_new_or_empty_directory(work, tmp_path):
    """A trial of the pack as a user runs it found that `syscalls --work DIR`
    wrote, replaced and removed files in a directory the user named, by the
    comparisons' fixed names (dd/10GB.bin was overwritten and removed,
    sysbench/ and bonnie/ emptied): --work is now a path to make or an empty
    directory, refused in one line otherwise, before anything runs."""
    from helpers.trees import snapshot
    if work == "users-dir":
        target = tmp_path / "mine"
        (target / "dd").mkdir(parents=True)
        (target / "dd" / "10GB.bin").write_text("the user's file\n")
        (target / "notes.txt").write_text("mine\n")
    else:
        target = tmp_path / "file"
        target.write_text("mine\n")
    before = snapshot(tmp_path, content=True)
    p = subprocess.run([*FIO_PACK, "syscalls", "--only", "dd", "--size-mib", "1",
                        "--work", str(target)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stdout == "", p
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"fio-pack syscalls: --work {target}"), \
        p.stderr
    assert snapshot(tmp_path, content=True) == before


@pytest.mark.parametrize("mode", ["local", "client-server"])
def test_cleanup_hint_removes_what_the_job_left(mode, tmp_path):
    """The header's rm line removes every file the job left, run locally or
    through a fio server (which prefixes generated names with the client's
    address: 127.0.0.1.fio-pack.sysbench.0)."""
    from helpers.procs import fio_servers
    path = REPO / "jobs" / "002-intel320-sysbench" / "sysbench-rndrd.fio"
    m = re.search(r"delete them with\s*;?\s*(rm [^)\n]*)", header_comment(path))
    assert m, "no cleanup hint in the header"
    target = tmp_path / "target"
    target.mkdir()
    job = shrunken_copy(path, tmp_path, SHRINK[path.name])
    text = job.read_text().replace("${FIO_DIR}", str(target))   # the client sends the text
    job.write_text(text)
    if mode == "local":
        run_fio(jobfile=job, cwd=REPO).ok()
    else:
        with fio_servers(tmp_path, n=1) as (port,):
            r = subprocess.run([str(FIO), f"--client=127.0.0.1,{port}", str(job)],
                               capture_output=True, text=True, timeout=300, cwd=REPO)
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    left = sorted(os.listdir(target))
    assert left, "the job left nothing: the test tests nothing"
    cmd = m.group(1).replace("FIO_DIR", str(target))
    subprocess.run(["sh", "-c", cmd], check=True)
    assert os.listdir(target) == [], (mode, left[:3], cmd)
