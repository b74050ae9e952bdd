"""An installed pack works from anywhere: `make install`
from a copy of the checkout, the copy deleted, then a study, an installed
job file, `fio-pack run` and pmrc2fio from another directory."""
import json
import os
import shutil
import subprocess

import pytest

from helpers.fio import FIO, REPO, fio_env

MAKE_TIMEOUT = 600


def sh(cmd, cwd, env=None, timeout=300):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=fio_env(env), capture_output=True,
                       text=True, timeout=timeout)
    r.describe = f"{' '.join(map(str, cmd))}\nrc={r.returncode}\n{r.stdout[-3000:]}\n" \
                 f"{r.stderr[-3000:]}"
    return r


def copy_checkout(dst):
    """The tracked files and build/ (times kept: make has nothing to build)."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        if (REPO / f).is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, dst / f, follow_symlinks=False)
    shutil.copytree(REPO / "build", dst / "build", symlinks=True)


def make_install(tmp_path, *args):
    src = tmp_path / "checkout"
    src.mkdir()
    copy_checkout(src)
    r = sh(["make", "install", f"FIO={FIO}", *args], src, timeout=MAKE_TIMEOUT)
    assert r.returncode == 0, r.describe
    shutil.rmtree(src)


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("install")
    make_install(tmp, f"PREFIX={tmp / 'prefix'}")
    return tmp / "prefix"


@pytest.fixture
def elsewhere(tmp_path):
    d = tmp_path / "elsewhere"
    d.mkdir()
    return d


def no_pack_env(env=None):
    """Nothing pointing at a checkout: the pack must find its own way."""
    return dict(env or {}, FIO_PACK_ENGINES=None, PYTHONPATH=None)


def test_installed_layout(prefix):
    lib = prefix / "lib" / "fio-pack"
    assert (prefix / "bin" / "pmrc2fio").is_file()
    assert not (lib / "pmrc2fio").exists()
    assert json.loads((prefix / "share" / "fio-pack" / "scripts" / "fiopack" /
                       "installed.json").read_text()) == {"engines": str(lib)}
    launcher = (prefix / "bin" / "fio-pack").resolve()
    assert launcher.read_text().splitlines()[0] == "#!/usr/bin/python3"
    for job in (prefix / "share" / "fio-pack" / "jobs").rglob("*.fio"):
        for line in job.read_text().splitlines():
            if line.startswith("ioengine=external:"):
                assert line.startswith(f"ioengine=external:{lib}/"), (job, line)


def test_installed_study_from_anywhere(prefix, elsewhere):
    """The installed fio-pack study finds the installed engines (a
    smallfile scenario) and writes its results to ./results."""
    target = elsewhere / "target"
    target.mkdir()
    r = sh([prefix / "bin" / "fio-pack", "study", "bonnie-files", "--target",
            f"t={target}", "--sweep", "files=64", "--fio", FIO], elsewhere, no_pack_env())
    assert r.returncode == 0, r.describe
    (out,) = (elsewhere / "results").iterdir()
    assert out.name.startswith("bonnie-files-")
    st = json.loads((out / "study.json").read_text())
    assert st["engine_dir"] == str(prefix / "lib" / "fio-pack")
    meta = json.loads((out / "runs" / "0001.meta.json").read_text())
    assert meta["ok"], meta
    res = json.loads((out / "runs" / "0001.json").read_text())
    (create,) = [j for j in res["jobs"] if j["jobname"] == "create-seq"]
    assert create["write"]["total_ios"] == 64
    assert f"ioengine=external:{prefix}/lib/fio-pack/smallfile.so" in \
        (out / "runs" / "0001.fio").read_text()
    assert not (prefix / "share" / "fio-pack" / "results").exists()


def test_installed_job_file_and_run(prefix, elsewhere):
    """An installed job file runs with plain fio, the variable unset; so
    does a copy of it through the installed fio-pack run."""
    job = prefix / "share" / "fio-pack" / "jobs" / "smallfile-mail.fio"
    tree = elsewhere / "tree"
    env = no_pack_env({"SMALLFILE_DIR": str(tree), "SMALLFILE_FILES": "200",
                       "TMPDIR": str(elsewhere)})
    for cmd in ([FIO], [prefix / "bin" / "fio-pack", "run", "--fio", FIO]):
        if tree.exists():
            shutil.rmtree(tree)
        tree.mkdir()
        out = elsewhere / "out.json"
        r = sh([*cmd, "--output-format=json", f"--output={out}", "--runtime=1", job],
               elsewhere, env)
        assert r.returncode == 0, r.describe
        jobs = {j["jobname"]: j["error"] for j in json.loads(out.read_text())["jobs"]}
        assert jobs == {"layout": 0, "mail": 0}
        assert os.listdir(tree)


def test_installed_pmrc2fio(prefix, elsewhere):
    """pmrc2fio is in bin and its job files name the installed engine."""
    cfg = elsewhere / "pm.pmrc"
    cfg.write_text("set number 20\nset transactions 50\nrun\n")
    job = elsewhere / "pm.fio"
    r = sh([prefix / "bin" / "pmrc2fio", "-o", job, cfg], elsewhere, no_pack_env())
    assert r.returncode == 0, r.describe
    assert f"ioengine=external:{prefix}/lib/fio-pack/postmark.so" in job.read_text()
    loc = elsewhere / "pm"
    loc.mkdir()
    out = elsewhere / "pm.json"
    r = sh([FIO, "--output-format=json", f"--output={out}", job], elsewhere,
           no_pack_env({"PM_LOCATION": str(loc)}))
    assert r.returncode == 0, r.describe
    (pm,) = json.loads(out.read_text())["jobs"]
    assert pm["error"] == 0 and pm["write"]["total_ios"] > 0


def test_destdir_stages_the_final_paths(tmp_path):
    """With DESTDIR the files go under it and name the final paths only."""
    stage = tmp_path / "stage"
    make_install(tmp_path, "PREFIX=/opt/fio-pack-test", f"DESTDIR={stage}")
    root = stage / "opt" / "fio-pack-test"
    lib = "/opt/fio-pack-test/lib/fio-pack"
    assert json.loads((root / "share" / "fio-pack" / "scripts" / "fiopack" /
                       "installed.json").read_text()) == {"engines": lib}
    assert os.readlink(root / "bin" / "fio-pack") == \
        "/opt/fio-pack-test/share/fio-pack/scripts/fio-pack"
    text = (root / "share" / "fio-pack" / "jobs" / "postmark-isp.fio").read_text()
    assert f"ioengine=external:{lib}/postmark.so" in text
    r = sh([root / "bin" / "pmrc2fio", "-"], tmp_path)
    assert f"ioengine=external:{lib}/postmark.so" in r.stdout
    for f in root.rglob("*"):
        if f.is_file() and not f.is_symlink() and f.suffix in (".fio", ".json", ".py", ""):
            try:
                assert str(stage) not in f.read_text(), f
            except UnicodeDecodeError:
                pass
