"""Build-level promises: the engine refuses a fio it was not built for,
loads with immediate binding, and `make install` gives job files that work
from any directory."""
import json
import os
from pathlib import Path
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
    target = make_output("print-fio-dir") + "/test/smallfile-fio-9.99.so"
    subprocess.run(["make", "-s", "--no-print-directory", target], cwd=REPO, check=True,
                   capture_output=True)
    so = os.path.join(REPO, target)
    tree = tmp_path / "tree"
    tree.mkdir()
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # this variant is not sanitizer-instrumented
    r = subprocess.run([FIO, "--name=x", "--ioengine=external:" + str(so),
                        "--tree_dir=" + str(tree), "--tree_file_op=layout", "--tree_files=10",
                        "--output-format=json"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode != 0
    assert re.search(r"smallfile: built for fio-9\.99 but loaded into fio-3\.\d+", r.stderr), r.stderr
    assert "signal" not in r.stderr
    assert os.listdir(tree) == []
    # --enghelp too: fio asks get_ioengine, which refuses
    r = subprocess.run([FIO, "--enghelp=" + str(so)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode != 0 and "tree_dir" not in r.stdout
    assert re.search(r"^smallfile: built for fio-9\.99 but loaded into fio-3\.\d+", r.stderr, re.M)


# ---------------------------------------------------------------------------
# An engine in a fio it was not built for: refused in one line by
# get_ioengine, the first thing fio asks (before ->setup reads td->eo), for
# every engine and for --enghelp too (engines/glue/fioglue.c)
# ---------------------------------------------------------------------------

ALL_ENGINES = ["smallfile", "postmark", "dbreplay"]


def engine_job(engine, so, target):
    """fio arguments of a small job of @engine (the library @so) working in @target."""
    args = ["--name=x", "--ioengine=external:" + str(so), "--output-format=json"]
    if engine == "smallfile":
        return args + ["--tree_dir=" + str(target), "--tree_file_op=layout", "--tree_files=10"]
    if engine == "postmark":
        return args + ["--pm_location=" + str(target), "--pm_number=10", "--pm_transactions=10"]
    return args + ["--dbr_trace=" + os.path.join(REPO, "jobs/dbreplay/traces/pgbench.trace.gz"),
                   "--dbr_target=" + str(target)]


def assert_engine_refused(r, engine, pattern, target=None):
    assert r.returncode > 0, f"rc={r.returncode} (a signal is negative)\n{r.stderr}"
    for bad in ("signal", "Segmentation", "core dumped", "you need to specify size="):
        assert bad not in r.stderr, r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith(engine + ":")]
    assert len(lines) == 1 and re.search(pattern, lines[0]), r.stderr
    if target is not None:
        assert os.listdir(target) == []


def run_unsanitized(cmd, fio=FIO):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # these builds are not sanitizer-instrumented
    return subprocess.run([str(fio)] + cmd, capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_engine_built_for_another_layout_of_this_version_refuses(tmp_path, engine):
    """An engine built against a source of this fio's version and ioops ABI
    whose struct thread_data has one field more before td->eo (what fio 3.41
    and 3.42, both ABI 39, are to each other) is refused in one line naming
    the struct and the command that builds for this fio, before ->setup
    reads td->eo: it used to segfault there (smallfile) or fail with fio's
    "you need to specify size=" (postmark, dbreplay)."""
    target = make_output("print-fio-dir") + f"/test/layout/{engine}.so"
    subprocess.run(["make", "-s", "--no-print-directory", target], cwd=REPO, check=True,
                   capture_output=True)
    so = os.path.join(REPO, target)
    work = tmp_path / "target"
    work.mkdir()
    version = subprocess.run([FIO, "--version"], capture_output=True, text=True).stdout.strip()
    want = (rf"^{engine}: built for {re.escape(version)} but loaded into a {re.escape(version)} "
            r"whose struct thread_data is \d+ bytes, the build's \d+: .*make engines FIO=\S+ FIO_SRC=")
    assert_engine_refused(run_unsanitized(engine_job(engine, so, work)), engine, want, work)


def fio_builds():
    """Every fio this checkout has built for, with its engines: {version: dir}."""
    return {p.parent.name: p.parent for p in (Path(REPO) / "build").glob("fio-*/fio")
            if all((p.parent / f"{e}.so").is_file() for e in ALL_ENGINES)}


@pytest.mark.parametrize("engine", ALL_ENGINES)
@pytest.mark.parametrize("how", ["job", "enghelp"])
def test_engine_of_another_fio_release_refuses(tmp_path, engine, how):
    """Each engine built for one fio release, loaded into another (./pack
    check builds 3.33 and 3.41), says in one line which fio it was built for,
    which is running and the command that builds for it, from a job and from
    --enghelp, where fio used to answer only "bad ioops version"."""
    builds = fio_builds()
    if len(builds) < 2:
        pytest.skip(f"one fio build here ({sorted(builds)}); ./pack check makes two")
    for built_for, bdir in builds.items():
        for running, rdir in builds.items():
            if running == built_for:
                continue
            so = bdir / f"{engine}.so"
            work = tmp_path / f"{built_for}-in-{running}"
            work.mkdir()
            cmd = engine_job(engine, so, work) if how == "job" else ["--enghelp=" + str(so)]
            r = run_unsanitized(cmd, fio=rdir / "fio")
            want = (rf"^{engine}: built for {re.escape(built_for)} but loaded into "
                    rf"{re.escape(running)}; build it for this fio: make engines "
                    rf"FIO={re.escape(str((rdir / 'fio').resolve()))} ")
            assert_engine_refused(r, engine, want, work)
            assert "bad ioops version" not in r.stderr


# The fio functions that not every fio from 3.28 on exports, the ones behind
# a PACK_FIO_HAVE_* probe (engines/glue/fioglue.h declares each weak).
VERSIONED_FIO_CALLS = {"alloc_clat_prio_stat_ddir", "in_ramp_time", "in_ramp_period"}


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_engine_needs_no_call_of_one_fio_release_to_load(engine):
    """The engines are linked -z now: a strong reference to a function the
    running fio lacks fails dlopen, fio says only "not loadable", and the
    line naming the fio the engine was built for (above) never comes. fio
    3.42 renamed in_ramp_time, 3.28 has no alloc_clat_prio_stat_ddir."""
    so = os.path.join(ENGINE_DIR, engine + ".so")
    out = subprocess.run(["nm", "-D", "--undefined-only", so], capture_output=True,
                         text=True, check=True).stdout
    strong = {f[1] for f in (line.split() for line in out.splitlines())
              if len(f) == 2 and f[0] == "U"}
    assert not strong & VERSIONED_FIO_CALLS


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
    assert (libdir / "postmark.so").exists() and (stage / "opt/fio-pack/bin/pmrc2fio").exists()
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


# ---------------------------------------------------------------------------
# Which fio the build is for (scripts/fio-source.sh): bad input is refused in
# one line, before anything is built
# ---------------------------------------------------------------------------

def build_tree_state():
    """Every file under build/ except fetched sources and apt lists, with its mtime."""
    root = Path(REPO) / "build"
    out = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if rel.parts[0] in ("src", "apt") or not p.is_file():
            continue
        out[str(rel)] = p.stat().st_mtime_ns
    return out


def fake_fio(tmp_path, version):
    """A program that answers --version like fio would."""
    p = tmp_path / f"fio-{version}"
    p.write_text(f"#!/bin/sh\necho fio-{version}\n")
    p.chmod(0o755)
    return p


def run_make(env_over, goal="engines"):
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "FIO", "FIO_SRC"):   # what make check-engines passed down
        env.pop(k, None)
    env.update(env_over)
    return subprocess.run(["make", "--no-print-directory", goal], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def fio_source_errors(r):
    return [l for l in r.stderr.splitlines() if l.startswith("fio-source:")]


@pytest.mark.parametrize("case", ["not-a-tree", "mismatch", "too-old", "missing-fio",
                                  "not-a-package"])
def test_build_refuses_bad_fio_input_in_one_line(tmp_path, case):
    src = make_output("print-fio-source")
    if case == "not-a-tree":
        d = tmp_path / "notfio"
        d.mkdir()
        (d / "Makefile").write_text("all:\n")
        env, want = {"FIO_SRC": str(d)}, rf"FIO_SRC={d} is not a fio source tree \(no \w"
    elif case == "mismatch":
        env = {"FIO": str(fake_fio(tmp_path, "9.1")), "FIO_SRC": src}    # no source's version
        want = r"FIO_SRC=.* is fio-\S+ but FIO=.* is fio-9\.1: give the source of the fio you run"
    elif case == "too-old":
        env = {"FIO": str(fake_fio(tmp_path, "3.25"))}
        want = r"is fio-3\.25, older than fio-3\.28, the oldest the pack supports"
    elif case == "missing-fio":
        env = {"FIO": str(tmp_path / "no" / "fio")}
        want = r"FIO=.*/no/fio: no such fio binary"
    else:
        env = {"FIO": str(fake_fio(tmp_path, "3.40"))}
        want = (r"fio-3\.40\) is not from a Debian package: give its source with FIO_SRC=DIR "
                r"\(the fio-3\.40 tag of fio's repository")
    before = build_tree_state()
    r = run_make(env)
    assert r.returncode != 0, r.stdout + r.stderr
    lines = fio_source_errors(r)
    assert len(lines) == 1 and re.search(want, lines[0]), r.stderr
    assert "Traceback" not in r.stderr and "cc " not in r.stdout
    assert build_tree_state() == before     # nothing half-built


def test_dispatcher_names_the_fio_it_has_no_build_for(tmp_path):
    """build/smallfile.so loads the build for the running fio's version; where
    there is none it says so in one line with the command that makes it."""
    lone = tmp_path / "smallfile.so"
    lone.write_bytes((Path(REPO) / "build" / "smallfile.so").read_bytes())
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([FIO, "--name=x", "--ioengine=external:" + str(lone),
                        "--tree_dir=" + str(tmp_path), "--output-format=json"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if l.startswith("smallfile:")]
    assert len(lines) == 1, r.stderr
    assert re.match(r"smallfile: no build for fio-\S+, the fio running: .*; build it with: make FIO=",
                    lines[0]), lines
    assert list(tmp_path.iterdir()) == [lone]


def test_dispatcher_loads_the_build_for_this_fio(tmp_path):
    """The job files' engine path (build/NAME.so) runs the versioned build."""
    version = subprocess.run([FIO, "--version"], capture_output=True, text=True).stdout.strip()
    assert (Path(REPO) / "build" / version / "smallfile.so").is_file()
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    tree = tmp_path / "t"
    tree.mkdir()
    r = subprocess.run([FIO, "--name=x", "--ioengine=external:build/smallfile.so",
                        "--tree_dir=" + str(tree), "--tree_file_op=layout", "--tree_files=20",
                        "--rw=write", "--output-format=json"], cwd=REPO, capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["jobs"][0]["write"]["total_ios"] == 20


def test_builds_for_several_fio_versions_coexist(tmp_path):
    """Every fio this checkout has built for (build/fio-X.Y/fio) runs the
    job files' engine path, build/smallfile.so, with its own build (./pack
    check makes two: the distribution's fio and 3.41)."""
    builds = sorted(p.parent for p in (Path(REPO) / "build").glob("fio-*/fio")
                    if (p.parent / "smallfile.so").is_file())
    if len(builds) < 2:
        pytest.skip(f"one fio build here ({[b.name for b in builds]}); ./pack check makes two")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    for b in builds:
        tree = tmp_path / b.name
        tree.mkdir()
        r = subprocess.run([str(b / "fio"), "--name=x", "--ioengine=external:build/smallfile.so",
                            "--tree_dir=" + str(tree), "--tree_file_op=layout", "--tree_files=20",
                            "--rw=write", "--output-format=json"], cwd=REPO, capture_output=True,
                           text=True, env=env, timeout=60)
        assert r.returncode == 0, (b, r.stderr)
        out = json.loads(r.stdout)
        assert out["fio version"] == b.name and out["jobs"][0]["write"]["total_ios"] == 20
