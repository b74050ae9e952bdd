"""Build-level promises: the engine refuses a fio it was not built for,
loads with immediate binding, and `make install` gives job files that work
from any directory."""
import json
import os
from pathlib import Path
import re
import shlex
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIO = os.environ.get("FIO", os.path.join(REPO, "build", "fio"))
ENGINE_DIR = os.environ.get("PACK_ENGINE_DIR", os.path.join(REPO, "build"))
ENGINES = ["smallfile"]


def make_output(target):
    return subprocess.run(["make", "-s", "--no-print-directory", target], cwd=REPO,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_loads_with_immediate_binding(engine):
    so = os.path.join(ENGINE_DIR, engine + ".so")
    env = dict(os.environ, LD_BIND_NOW="1")
    r = subprocess.run([FIO, "--enghelp=" + so], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "symbol lookup error" not in r.stderr
    assert len(r.stdout.strip().splitlines()) >= 5, r.stdout


def test_engine_built_for_another_fio_refuses_to_run(tmp_path):
    """An engine compiled for another fio version stops with a clear error
    naming both versions instead of running with mismatched structures."""
    cflags = [f for f in shlex.split(make_output("print-engine-cflags"))
              if not f.startswith("-DPACK_FIO_VERSION")]
    srcs = make_output("print-lib-srcs").split()
    so = tmp_path / "smallfile-wrongver.so"
    subprocess.run(["cc"] + cflags + ['-DPACK_FIO_VERSION="fio-9.99"', "-o", str(so),
                    "engines/smallfile.c"] + srcs +
                   ["-shared", "-Wl,-z,now", "-luring", "-lm"], cwd=REPO, check=True)
    tree = tmp_path / "tree"
    tree.mkdir()
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # this variant is not sanitizer-instrumented
    r = subprocess.run([FIO, "--name=x", "--ioengine=external:" + str(so),
                        "--tree_dir=" + str(tree), "--file_op=layout", "--tree_files=10",
                        "--output-format=json"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode != 0
    assert re.search(r"smallfile: built for fio-9\.99 but loaded into fio-3\.\d+", r.stderr), r.stderr
    assert "signal" not in r.stderr
    assert os.listdir(tree) == []


def test_make_install_jobs_work_from_any_directory(tmp_path):
    if os.environ.get("LD_PRELOAD"):
        pytest.skip("installs the normal build; covered by the plain run")
    stage = tmp_path / "stage"
    subprocess.run(["make", "-s", "install", "DESTDIR=" + str(stage), "PREFIX=/opt/fio-pack"],
                   cwd=REPO, check=True, capture_output=True)
    libdir = stage / "opt/fio-pack/lib/fio-pack"
    jobdir = stage / "opt/fio-pack/share/fio-pack/jobs"
    assert (libdir / "smallfile.so").exists()
    def tree(root):
        return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file()
                      and "__pycache__" not in p.parts)
    assert tree(jobdir) == tree(Path(REPO) / "jobs")
    # iologs are read from the installed tree
    for f in jobdir.rglob("*.fio"):
        for line in f.read_text().splitlines():
            if line.startswith("read_iolog="):
                assert line.startswith("read_iolog=/opt/fio-pack/share/fio-pack/jobs/"), line
                assert (stage / line.split("=", 1)[1].lstrip("/")).is_file(), line
    assert (libdir / "postmark.so").exists() and (libdir / "pmrc2fio").exists()
    text = (jobdir / "smallfile-mail.fio").read_text()
    assert "external:/opt/fio-pack/lib/fio-pack/smallfile.so" in text
    # Run the installed job from an unrelated directory; the staged tree is
    # not at /opt, so point the absolute path at the stage and shorten it.
    job = tmp_path / "mail.fio"
    job.write_text(text.replace("external:/opt/fio-pack/lib/fio-pack/", "external:%s/" % libdir)
                   .replace("runtime=20", "runtime=1"))
    tree = tmp_path / "tree"
    tree.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, SMALLFILE_DIR=str(tree), SMALLFILE_FILES="300")
    r = subprocess.run([FIO, str(job), "--output-format=json"], cwd=elsewhere,
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    names = [j["jobname"] for j in res["jobs"]]
    assert names == ["layout", "mail"]
    assert res["jobs"][0]["write"]["total_ios"] == 300
    assert res["jobs"][1]["read"]["total_ios"] > 0
    assert os.listdir(elsewhere) == []
