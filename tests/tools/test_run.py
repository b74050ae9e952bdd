"""A job file copied out of the checkout runs as its header says: plain fio
with FIO_PACK_ENGINES set once, or `fio-pack run`, which sets it; a wrong
engine path is one line naming the fix."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers.fio import ENGINE_DIR, FIO, REPO, fio_env
from helpers.trees import snapshot

PACK = [sys.executable, str(REPO / "scripts" / "fio-pack")]
JOBS = ["smallfile-mail.fio", "postmark-default.fio"]


def copied(name, tmp_path):
    """The job file copied to a directory of its own, with a tree and a
    working directory beside it (nothing of the checkout)."""
    away = tmp_path / "elsewhere"
    away.mkdir()
    shutil.copy(REPO / "jobs" / name, away / name)
    tree = tmp_path / "tree"
    tree.mkdir()
    env = {"SMALLFILE_DIR": str(tree), "SMALLFILE_FILES": "200", "PM_LOCATION": str(tree),
           "TMPDIR": str(tmp_path)}
    return away / name, tree, env


def run(cmd, cwd, env):
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=fio_env(env),
                          capture_output=True, text=True, timeout=300)


def jobs_of(out):
    doc = json.loads(out.read_text())
    return {j["jobname"]: j for j in doc["jobs"]}


@pytest.mark.parametrize("name", JOBS)
def test_copied_job_file_runs_with_the_variable(name, tmp_path):
    """Plain fio, from another directory, FIO_PACK_ENGINES set once."""
    job, tree, env = copied(name, tmp_path)
    out = tmp_path / "out.json"
    r = run([FIO, "--output-format=json", f"--output={out}", "--runtime=1", job.name],
            job.parent, dict(env, FIO_PACK_ENGINES=str(ENGINE_DIR)))
    assert r.returncode == 0, r.stdout + r.stderr
    jobs = jobs_of(out)
    assert jobs and all(j["error"] == 0 for j in jobs.values()), jobs
    assert sum(j["write"]["total_ios"] for j in jobs.values()) > 0
    if name.startswith("smallfile"):
        assert os.listdir(tree)     # the tree stays; PostMark removes what it made


def test_copied_job_file_runs_with_fio_pack_run(tmp_path):
    """fio-pack run sets FIO_PACK_ENGINES (the pack's engines) when it is
    unset, passes fio's options, and its output is fio's."""
    job, tree, env = copied("smallfile-mail.fio", tmp_path)
    out = tmp_path / "out.json"
    r = run([*PACK, "run", "--fio", FIO, "--output-format=json", f"--output={out}",
             "--runtime=1", job.name], job.parent, dict(env, FIO_PACK_ENGINES=str(ENGINE_DIR)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert {n: j["error"] for n, j in jobs_of(out).items()} == {"layout": 0, "mail": 0}
    # unset: the pack's own engines (the checkout's build/), parsed and loaded
    r = run([*PACK, "run", "--fio", FIO, "--parse-only", job.name], job.parent,
            dict(env, FIO_PACK_ENGINES=None))
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", JOBS)
def test_unset_variable_is_what_the_header_says(name, tmp_path):
    """Plain fio without the variable fails as the header warns."""
    job, tree, env = copied(name, tmp_path)
    engine = name.split("-")[0]
    header = job.read_text().split("\n[", 1)[0]
    said = f'invalid external ioengine path "/{engine}.so"'
    assert said in header
    r = run([FIO, job.name], job.parent, dict(env, FIO_PACK_ENGINES=None))
    assert r.returncode != 0 and said in r.stdout + r.stderr


@pytest.mark.parametrize("case", ["wrong", "literal"])
def test_wrong_engine_path_one_line(case, tmp_path):
    """A wrong FIO_PACK_ENGINES, or a job file naming a path that is not
    there: fio-pack run says so in one line naming the file, the line and
    the fix, and fio never starts (nothing in the tree)."""
    job, tree, env = copied("smallfile-mail.fio", tmp_path)
    if case == "wrong":
        env["FIO_PACK_ENGINES"] = str(tmp_path / "nope")
        want = [f"{job.name} line ", f"engine {tmp_path}/nope/smallfile.so not found",
                "FIO_PACK_ENGINES is set to", "unset it for this pack's"]
    else:
        job.write_text(job.read_text().replace("external:${FIO_PACK_ENGINES}/",
                                               "external:build/"))
        env["FIO_PACK_ENGINES"] = None
        want = ["engine build/smallfile.so not found",
                "write ioengine=external:${FIO_PACK_ENGINES}/smallfile.so"]
    before = snapshot(tmp_path, content=True)
    r = run([*PACK, "run", "--fio", FIO, job.name], job.parent, env)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fio-pack run: "), r.stderr
    for w in want:
        assert w in lines[0], (w, lines[0])
    assert r.stdout == ""
    assert snapshot(tmp_path, content=True) == before


def test_summary_of_a_run_without_its_engine_names_the_fix(tmp_path):
    """fio's output of a job file that found no engine (the variable
    unset): fio-pack summary says what to do in one line, not only that
    the file is not JSON."""
    job, tree, env = copied("smallfile-mail.fio", tmp_path)
    out = tmp_path / "out.json"
    r = run([FIO, "--output-format=json", f"--output={out}", job.name], job.parent,
            dict(env, FIO_PACK_ENGINES=None))
    assert r.returncode != 0
    r = run([*PACK, "summary", out], job.parent, env)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"fio-pack summary: {out}: fio found no engine at /smallfile.so: "
                               "set FIO_PACK_ENGINES to the directory of the pack's engines"), \
        lines[0]
    assert "fio-pack run JOB" in lines[0] and r.stdout == ""


@pytest.mark.nosan
def test_demo_runs_the_mail_job(tmp_path):
    """`make demo` (scripts/demo.sh), the README's first command, with no
    FIO_PACK_ENGINES in the environment: the summary of the mail job."""
    r = subprocess.run(["sh", str(REPO / "scripts" / "demo.sh")], cwd=tmp_path,
                       env=fio_env({"FIO_PACK_ENGINES": None, "TMPDIR": str(tmp_path)}),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "read/stat" in r.stdout and "\nmail\n" in r.stdout, r.stdout
