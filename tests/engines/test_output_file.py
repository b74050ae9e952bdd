"""fio --output=FILE --output-format=json stays JSON with the pack's engines:
their reports and notes reach the user on stderr, and
under fio --server on the server's stderr, never in FILE."""
import json
import subprocess

import pytest

from helpers.fio import ENGINE_DIR, FIO, REPO, fio_env
from helpers.procs import fio_servers

PROBE = REPO / "jobs" / "dbreplay" / "probe.trace"


def engine_job(engine, d):
    """fio options of one small job of @engine in directory @d, and the
    line its report or note starts with on stderr."""
    if engine == "smallfile":
        # three passes over a 20-file tree in a job declared cold: the
        # engine's page-cache note (not said on tmpfs: the tree is on /tmp)
        return [f"--ioengine=external:{ENGINE_DIR}/smallfile.so", f"--tree_dir={d}",
                "--tree_files=20", "--tree_file_op=read", "--rw=randread",
                "--number_ios=60", "--tree_file_size_dist=fixed:4096",
                "--description=a cold read"], \
            "smallfile: job j read 60 files of a 20-file tree: 3.00 passes"
    if engine == "postmark":
        return [f"--ioengine=external:{ENGINE_DIR}/postmark.so", f"--pm_location={d}",
                "--pm_number=20", "--pm_transactions=50"], "Time:"
    return [f"--ioengine=external:{ENGINE_DIR}/dbreplay.so", f"--dbr_trace={PROBE}",
            f"--dbr_target={d}"], "dbreplay: class "


def prepare(engine, d):
    """A smallfile tree to read; the other engines make their own files."""
    if engine == "smallfile":
        r = subprocess.run([str(FIO), "--name=layout", f"--ioengine=external:{ENGINE_DIR}/"
                            "smallfile.so", f"--tree_dir={d}", "--tree_files=20",
                            "--tree_file_op=layout", "--rw=write",
                            "--tree_file_size_dist=fixed:4096"], capture_output=True,
                           text=True, env=fio_env(), timeout=120)
        assert r.returncode == 0, r.stderr


def parsed(out):
    text = out.read_text()
    try:
        return json.loads(text)
    except ValueError as e:
        pytest.fail(f"{out} is not JSON ({e}); it begins:\n{text[:600]}")


@pytest.mark.parametrize("mode", ["process", "thread"])
@pytest.mark.parametrize("engine", ["smallfile", "postmark", "dbreplay"])
def test_output_file_is_json_and_the_report_on_stderr(engine, mode, tmp_path):
    d = tmp_path / "target"
    d.mkdir()
    prepare(engine, d)
    opts, said = engine_job(engine, d)
    out = tmp_path / "out.json"
    cmd = [str(FIO), "--output-format=json", f"--output={out}", "--name=j", *opts]
    if mode == "thread":
        cmd.append("--thread")
    r = subprocess.run(cmd, capture_output=True, text=True, env=fio_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    doc = parsed(out)
    (job,) = doc["jobs"]
    assert job["jobname"] == "j" and job["error"] == 0
    assert said in r.stderr, r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("engine", ["smallfile", "postmark", "dbreplay"])
def test_client_output_file_is_json(engine, tmp_path):
    """fio --client: the client's FILE is the JSON alone; the engine's
    report is on the server's stderr (the server's log here). The second
    --output-format=json, after --client=, is the server's: without it
    fio's own job lines come first ("<host> Starting 1 process")."""
    d = tmp_path / "target"
    d.mkdir()
    prepare(engine, d)
    opts, said = engine_job(engine, d)
    job = tmp_path / "job.fio"
    job.write_text("[j]\n" + "\n".join(o[2:] for o in opts) + "\n")
    out = tmp_path / "out.json"
    with fio_servers(tmp_path, n=1) as (port,):
        r = subprocess.run([str(FIO), "--output-format=json", f"--output={out}",
                            f"--client=ip:127.0.0.1,{port}", "--output-format=json", str(job)],
                           capture_output=True, text=True, env=fio_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    doc = parsed(out)
    (entry,) = [e for e in doc["client_stats"] if e["jobname"] == "j"]
    assert entry["error"] == 0
    assert said in (tmp_path / "server0.log").read_text()
