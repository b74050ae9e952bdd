"""scripts/fio-pack: the one command, its groups, and the manuals of the
multi-command tools against their parsers.

Pure Python: no fio, no engine (marked nofio)."""
import argparse
import importlib
import os
import re
import subprocess
import sys

import pytest

from helpers.fio import REPO
from fiopack import cli
from fiopack.results import cli as analyze
from fiopack.capture import cli as capture_cli
from fiopack.device import cli as device_cli
from fiopack.study import cli as study_cli
from fiopack.trace import cli as trace_cli

FIO_PACK = [sys.executable, str(REPO / "scripts" / "fio-pack")]

pytestmark = [pytest.mark.nofio, pytest.mark.nosan]


def fio_pack(*args, env=None, timeout=60):
    return subprocess.run([*FIO_PACK, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def man_parsers():
    """(tool, command, parser) of every command whose manual argparse prints."""
    for cmd in [None, *trace_cli.COMMANDS]:
        yield "trace", cmd, trace_cli.parser(cmd)
    for cmd in [None, *analyze.COMMANDS]:
        yield "analyze", cmd, analyze.parser(cmd)
    for cmd in [None, *capture_cli.COMMANDS]:
        yield "capture", cmd, capture_cli.parser(cmd)
    for cmd in [None, *device_cli.COMMANDS]:
        yield "device", cmd, device_cli.parser(cmd)
    yield "study", "run", study_cli.run_parser()


@pytest.mark.parametrize("tool,cmd,ap", list(man_parsers()),
                         ids=lambda v: str(v) if not isinstance(v, argparse.ArgumentParser) else "")
def test_every_option_explains_itself(tool, cmd, ap):
    """The manual is the parser's: an argument without its help= text would
    be listed bare, and one hidden (argparse.SUPPRESS) not at all; both
    count as undocumented."""
    text = ap.format_help()
    for act in ap._actions:
        name = "/".join(act.option_strings) or act.dest
        assert isinstance(act.help, str) and act.help.strip() \
            and act.help != argparse.SUPPRESS, f"fio-pack {tool} {cmd}: {name} has no help"
        for o in act.option_strings:
            assert re.search(rf"^    (-\S+, )*{re.escape(o)}\b", text, re.M), \
                f"fio-pack {tool} {cmd}: {o} not in its manual"
    for section in ("SYNOPSIS", "DESCRIPTION", "OPTIONS"):
        assert re.search(rf"^{section}$", text, re.M), f"fio-pack {tool} {cmd}: no {section}"


def single_commands():
    """(command words, module) of every command that is not one of the
    multi-command tools above: the benchmarks, generators, summary,
    syscalls and study list."""
    multi = {"trace", "analyze", "capture", "device"}
    for name, entry in cli.COMMANDS.items():
        for sub, (mod, _) in (entry.items() if isinstance(entry, dict) else [(None, entry)]):
            if name not in multi:
                yield [name] + ([sub] if sub else []), mod
    yield ["study", "list"], "fiopack.study.cli"


@pytest.mark.parametrize("words,mod", list(single_commands()),
                         ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_single_commands_explain_every_option(words, mod, monkeypatch, capsys):
    """The parsers these commands print their --help from: none has an
    argument without a help text (argparse would list it bare)."""
    seen = []
    parse = argparse.ArgumentParser.parse_known_args

    def record(self, args=None, namespace=None):
        seen.append(self)
        return parse(self, args, namespace)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", record)
    argv = ["list", "--help"] if words == ["study", "list"] else ["--help"]
    try:
        code = importlib.import_module(mod).main(argv)
    except SystemExit as e:     # argparse's own -h
        code = e.code
    assert code == 0 and seen and capsys.readouterr().out
    for ap in seen:
        bare = ["/".join(a.option_strings) or a.dest for a in ap._actions
                if not (isinstance(a.help, str) and a.help.strip())
                or a.help == argparse.SUPPRESS]
        assert not bare, f"fio-pack {' '.join(words)}: {bare} without help"


def test_every_command_answers_help():
    """Each command and each member of a group prints its manual and exits 0."""
    for name, entry in cli.COMMANDS.items():
        for sub in (entry if isinstance(entry, dict) else [None]):
            args = [name] + ([sub] if sub else []) + ["--help"]
            r = fio_pack(*args)
            assert r.returncode == 0 and r.stdout.strip() and not r.stderr, (args, r.stderr)


def test_unknown_command_is_one_line():
    for args in (["nothing"], ["bench", "nothing"]):
        r = fio_pack(*args)
        assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
        assert "unknown command 'nothing'" in r.stderr


def test_no_command_prints_the_list_on_stderr():
    r = fio_pack()
    assert r.returncode == 2 and "commands:" in r.stderr and r.stdout == ""
    r = fio_pack("--help")
    assert r.returncode == 0 and all(c in r.stdout for c in cli.COMMANDS)


def test_python_m_fiopack_is_the_launcher():
    env = {"PYTHONPATH": str(REPO / "scripts"), "PATH": "/usr/bin:/bin"}
    a = subprocess.run([sys.executable, "-m", "fiopack", "study", "list"], capture_output=True,
                       text=True, timeout=60, env=env, cwd="/")
    b = fio_pack("study", "list")
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout


def test_bench_cold_refuses_an_image_dir_that_is_not_there(tmp_path):
    """--image-dir naming nothing, or a file, is refused in one line before
    anything is written: no report, no image. The sizes are tiny and fio is
    missing, so that a refusal that failed could not write much."""
    afile = tmp_path / "file"
    afile.write_text("x")
    report = tmp_path / "report.md"
    for d, why in ((tmp_path / "none", "no such directory"), (afile, "not a directory")):
        r = fio_pack("bench", "cold", "--image-dir", str(d), "--image-mib", "1", "--files", "10",
                     "--ios", "5", "--fio", str(tmp_path / "no-fio"), "--output", str(report))
        assert r.returncode == 2 and r.stdout == "", r
        assert r.stderr == f"fio-pack bench cold: --image-dir {d}: {why}\n", r
    assert [p.name for p in tmp_path.iterdir()] == ["file"] and afile.read_text() == "x"


def test_bench_cold_refuses_without_usr_bin_time(tmp_path, monkeypatch, capsys):
    """fio-pack bench cold measures peak RSS with /usr/bin/time: without it,
    one line, before the run (as root or not). --fs names no mkfs, so that
    a refusal that failed stops at the next check instead of running."""
    from fiopack.bench import cold
    exists = os.path.exists
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(os.path, "exists", lambda p: p != "/usr/bin/time" and exists(p))
    code = cold.main(["--image-dir", str(tmp_path), "--image-mib", "1", "--files", "10",
                      "--ios", "5", "--fio", sys.executable, "--engine", sys.executable,
                      "--fs", "no-such-fs", "--output", str(tmp_path / "report.md")])
    err = capsys.readouterr().err
    assert code == 2 and err == "fio-pack bench cold: /usr/bin/time not found (apt-get install time)\n"
    assert list(tmp_path.iterdir()) == []


def test_bench_smallfile_refuses_too_few_filestat_files(tmp_path):
    """B3's memory per file is the difference with a run of 1,000 files:
    --filestat-files 1000 or fewer is refused before anything runs
    (it divided by zero after the runs)."""
    r = fio_pack("bench", "smallfile", "--sections", "B3", "--filestat-files", "1000",
                 "--output", str(tmp_path / "r.md"))
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr == "fio-pack bench smallfile: --filestat-files 1000: more than 1000 " \
        "(see fio-pack bench smallfile --help)\n", r
    assert list(tmp_path.iterdir()) == []


def test_bench_ab_engines_refuses_what_is_not_two_builds(tmp_path):
    """The A/B mode of bench smallfile and bench cold takes two builds, each
    a directory holding smallfile.so or the .so itself: anything else is
    one line, before anything is made or run."""
    for cmd in ("smallfile", "cold"):
        for value, why in ((str(tmp_path), f"--ab-engines {tmp_path}: two builds, A,B"),
                           (f"{tmp_path},{tmp_path}",
                            f"--ab-engines: {tmp_path}/smallfile.so: no such file")):
            r = fio_pack("bench", cmd, "--ab-engines", value, "--output", str(tmp_path / "r.md"))
            assert r.returncode == 2 and r.stdout == "", r
            assert r.stderr == f"fio-pack bench {cmd}: {why} (see fio-pack bench {cmd} --help)\n", r
    assert list(tmp_path.iterdir()) == []


def test_bench_postmark_calibrates_when_no_transactions_are_given():
    """Without --transactions every configuration is calibrated (the
    manual's default): the option's absence is no count to refuse."""
    from fiopack.bench import postmark
    a = postmark.parse_args(["--configs", "defaults"])
    assert a.tx_fixed == {}
    a = postmark.parse_args(["--transactions", "pts=500,defaults=900"])
    assert a.tx_fixed == {"pts": 500, "defaults": 900}


def every_parser():
    """(command words, parser) of every parser of the package: the
    multi-command tools' and those the single commands build in main()
    (recorded as their --help parses)."""
    for tool, cmd, ap in man_parsers():
        yield f"{tool} {cmd or ''}".strip(), ap
    for words, mod in single_commands():
        seen = []
        parse = argparse.ArgumentParser.parse_known_args

        def record(self, args=None, namespace=None):
            seen.append(self)
            return parse(self, args, namespace)
        argparse.ArgumentParser.parse_known_args = record
        try:
            with open(os.devnull, "w") as null:
                out, sys.stdout = sys.stdout, null
                try:
                    importlib.import_module(mod).main(
                        ["list", "--help"] if words == ["study", "list"] else ["--help"])
                except SystemExit:
                    pass
                finally:
                    sys.stdout = out
        finally:
            argparse.ArgumentParser.parse_known_args = parse
        for ap in seen:
            yield " ".join(words), ap


def numeric_options():
    """(command, option, its parse function) of every option whose value is
    a number or a list of numbers ("5" parses to one)."""
    out = []
    for words, ap in every_parser():
        for act in ap._actions:
            if not act.option_strings or act.nargs == 0 or act.type is None:
                continue
            try:
                v = act.type("5")
            except Exception:
                continue
            if isinstance(v, (int, float)) or (isinstance(v, list) and v == [5]):
                out.append((words, act.option_strings[-1], act.type))
    return out


NUMERIC = numeric_options()


def test_numeric_options_are_found():
    """The search below sees the options it is about (the issue's --duration
    among them), so that it cannot pass by finding none."""
    found = {(w, o) for w, o, _ in NUMERIC}
    assert {("capture attach", "--duration"), ("study run", "--repeats"),
            ("bench smallfile", "--files"), ("gen bonnie-seq", "--size"),
            ("analyze plot", "--x-max")} <= found, sorted(found)


@pytest.mark.parametrize("words,option,parse", NUMERIC,
                         ids=[f"{w}:{o}" for w, o, _ in NUMERIC])
def test_numeric_options_refuse_nan_inf_and_negatives(words, option, parse):
    """The acceptance trial: `capture attach --duration nan` was accepted and the
    capture never ended (nan compares false). Every numeric option of the
    package refuses what is not a finite number, and negatives: argparse
    turns the refusal into its one-line error naming the option."""
    for bad in ("nan", "inf", "-inf", "-1", "1e999", "x"):
        with pytest.raises((argparse.ArgumentTypeError, ValueError, TypeError)):
            v = parse(bad)
            pytest.fail(f"fio-pack {words} {option} {bad}: accepted as {v!r}")


def test_every_parser_refuses_in_one_line():
    """A bad option is the package's one-line error (UserError), not
    argparse's usage block followed by the message."""
    from fiopack import UserError
    for words, ap in every_parser():
        with pytest.raises(UserError) as e:
            ap.error("argument --x: bad")
        assert "\n" not in str(e.value) and "--x: bad" in str(e.value), words


def test_capture_duration_nan_refused_before_anything(tmp_path):
    """The issue's reproduction: one line naming --duration, exit 2,
    nothing written. (--pid names no process: were --duration accepted,
    the refusal would be about --pid, and nothing could be attached.)"""
    out = tmp_path / "out.trace"
    r = fio_pack("capture", "attach", "--db", "generic", "--datadir", str(tmp_path),
                 "-o", str(out), "--tracer", "strace", "--pid", "999999999",
                 "--duration", "nan")
    assert r.returncode == 2 and r.stdout == "", r
    assert len(r.stderr.splitlines()) == 1 and "--duration" in r.stderr \
        and "finite" in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_launcher_runs_with_the_makefiles_python(tmp_path):
    """scripts/fio-pack run as a program uses the Python the Makefile and
    the tests use (PYTHON, the one Debian's matplotlib is installed for),
    not whichever python3 comes first on PATH (a pyenv or venv without
    the packages)."""
    m = re.search(r"^PYTHON\s*\?=\s*(\S+)", (REPO / "Makefile").read_text(), re.M)
    assert m, "no PYTHON ?= in the Makefile"
    launcher = REPO / "scripts" / "fio-pack"
    assert launcher.read_text().splitlines()[0] == f"#!{m.group(1)}"
    # another python3 first on PATH: the launcher must not be run by it
    other = tmp_path / "bin"
    other.mkdir()
    (other / "python3").write_text("#!/bin/sh\necho 'the python3 on PATH' >&2\nexit 99\n")
    (other / "python3").chmod(0o755)
    r = subprocess.run([str(launcher), "--help"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PATH=f"{other}:{os.environ['PATH']}"))
    assert r.returncode == 0 and "study" in r.stdout, r.stderr


# The acceptance trial: the generators wrote --data-dir, --out (the
# job's read_iolog=) and --name (its first comment line) into the job file
# as given, so `--data-dir $'/tmp/x\n[evil]\nioengine=null'` added a job
# section and `--data-dir '/tmp/x;y'` made fio cut the path at ';' (the
# data file written to /tmp/x, outside the directory named). Each is
# refused in one line, as the study refuses its job text, and nothing is
# written.
GEN_JOB_TEXT = {
    "bonnie-data-dir-newline": (["bonnie-seq", "--data-dir", "/tmp/x\n[evil]\nioengine=null"],
                                "--data-dir: '/tmp/x\\n[evil]\\nioengine=null' holds a line break"),
    "bonnie-data-dir-colon": (["bonnie-seq", "--data-dir", "/tmp/a:b"],
                              "--data-dir: '/tmp/a:b' holds a ':'"),
    "bonnie-name-newline": (["bonnie-seq", "--name", "b.fio\n[evil]"],
                            "--name: 'b.fio\\n[evil]' holds a line break"),
    "iozone-data-dir-semicolon": (["iozone-grid", "--max-file", "64k", "--data-dir", "/tmp/x;y"],
                                  "--data-dir: '/tmp/x;y' holds a ';'"),
    "iozone-data-dir-hash": (["iozone-grid", "--max-file", "64k", "--data-dir", "/tmp/x#y"],
                             "--data-dir: '/tmp/x#y' holds a '#'"),
    "iozone-out-newline": (["iozone-grid", "--max-file", "64k", "--out", "OUT/a\nb"],
                           "holds a line break"),
    # the acceptance trial: fio substitutes ${VAR} and $ncpus in a job file
    "iozone-data-dir-dollar": (["iozone-grid", "--max-file", "64k", "--data-dir",
                                "/tmp/x${HOME}"], "--data-dir: '/tmp/x${HOME}' holds a '$'"),
    "bonnie-out-dollar": (["bonnie-seq", "--out", "OUT/o$ncpus"], "holds a '$'"),
}


@pytest.mark.parametrize("case", list(GEN_JOB_TEXT))
def test_generators_refuse_what_fio_would_read_otherwise(case, tmp_path):
    from helpers.trees import snapshot
    args, msg = GEN_JOB_TEXT[case]
    args = [a.replace("OUT", str(tmp_path)) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "out")]
    before = snapshot(tmp_path)
    r = fio_pack("gen", *args)
    gen = args[0]
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"fio-pack gen {gen}: "), r.stderr
    assert msg in r.stderr, r.stderr
    assert snapshot(tmp_path) == before


# The acceptance trial: --name is the job file's name in --out, but
# was joined to it as a path: `--name /elsewhere/x.fio` or `../x.fio`
# wrote the job outside --out; `--name .` or `iolog` was refused only
# after the iologs were written.
@pytest.mark.parametrize("gen", [["bonnie-seq"], ["iozone-grid", "--max-file", "64k"]],
                         ids=["bonnie-seq", "iozone-grid"])
@pytest.mark.parametrize("name", ["ABS", "../up.fio", "sub/x.fio", ".", "..", "", "iolog"])
def test_generator_name_is_a_name_in_out(gen, name, tmp_path):
    from helpers.trees import snapshot
    out = tmp_path / "out"
    out.mkdir()
    name = str(tmp_path / "abs.fio") if name == "ABS" else name
    before = snapshot(tmp_path)
    r = fio_pack("gen", *gen, "--out", str(out), "--name", name)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and f"--name {name!r}" in r.stderr, r.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("gen", [["bonnie-seq", "--size", str(2**63)],
                                 ["bonnie-seq", "--size", "4096g", "--chunk", "512"],
                                 ["iozone-grid", "--max-file", str(2**63)]],
                         ids=["bonnie-2^63", "bonnie-4096g-512", "iozone-2^63"])
def test_generators_refuse_iologs_without_end(gen, tmp_path):
    """A size near 2^63 had bonnie-seq and iozone-grid write their iologs
    (a line per chunk) for ever: gigabytes until the disk was full. More
    than 2^28 records is refused in one line before anything is written."""
    from helpers.trees import snapshot
    out = tmp_path / "out"
    before = snapshot(tmp_path)
    try:
        r = fio_pack("gen", *gen, "--out", str(out), timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("still writing after 30 s")
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and "iolog records, more than the 268435456" in r.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("scale", [str(2**63), "2561"])
@pytest.mark.parametrize("to", ["file", "stdout"])
def test_dbreplay_dump_refuses_a_dump_without_end(scale, to, tmp_path):
    """The acceptance trial: `gen dbreplay-dump --scale 2^63` wrote
    SQL until killed (1.2 GB in a minute, into a temporary file beside -o).
    A dump of more than 10 GiB (scale 2560, 4 MiB a unit at most) is
    refused in one line naming --scale before anything is written."""
    from helpers.trees import snapshot
    out = ["-o", str(tmp_path / "d.sql")] if to == "file" else []
    before = snapshot(tmp_path)
    try:
        r = fio_pack("gen", "dbreplay-dump", "--scale", scale, *out, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("still writing after 30 s")
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and f"--scale {scale}: about " in r.stderr \
        and "more than the 10240 MiB a generator writes" in r.stderr, r.stderr
    assert snapshot(tmp_path) == before


def test_dbreplay_dump_scale_bound_is_what_a_unit_weighs():
    """The bound is derived from what the dump weighs: a unit of scale
    writes less than the 4 MiB it is counted at (were it more, a dump
    under the bound could still pass 10 GiB)."""
    r = fio_pack("gen", "dbreplay-dump", "--scale", "3")
    assert r.returncode == 0 and len(r.stdout.encode()) < 3 * (4 << 20), r.stderr


def test_dbreplay_dump_one_insert_a_table_keeps_memory_flat():
    """--rows-per-insert larger than a table made one INSERT of it, built
    whole in memory first: --scale 16 took 127 MB, and a large scale ran
    out of memory. The rows are now written as they come. Under a 100 MiB
    address-space limit, --scale 12 with one INSERT a table (a MemoryError
    before) writes the whole dump: three INSERTs and the dump's end."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (100 << 20, 100 << 20))

    # not under the sanitizer pass's preloaded ASan: its shadow memory alone is past the limit
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([*FIO_PACK, "gen", "dbreplay-dump", "--scale", "12", "--rows-per-insert",
                        "1000000000"], capture_output=True, timeout=300, preexec_fn=limit,
                       env=env)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert r.stdout.count(b"INSERT INTO ") == 3 and r.stdout.endswith(b"-- Dump completed\n")


@pytest.mark.parametrize("bench", [["device", "--quick", "--dir", "NONE"],
                                   ["models", "--quick", "--dir", "NONE"],
                                   ["dbreplay", "--records", "1000", "--repeats", "1"],
                                   ["smallfile", "--sections", "B1", "--repeats", "1"]],
                         ids=["device", "models", "dbreplay", "smallfile"])
@pytest.mark.parametrize("fio", ["missing", "directory", "not-executable"])
def test_bench_fio_that_cannot_run_is_refused(bench, fio, tmp_path):
    """--fio naming a directory, a file without x or nothing ended bench
    device, models and dbreplay in a PermissionError or FileNotFoundError
    traceback (bench smallfile took a directory for fio): one line naming
    --fio, exit 2, before anything runs."""
    path = {"missing": tmp_path / "no-fio", "directory": tmp_path,
            "not-executable": tmp_path / "fio"}[fio]
    (tmp_path / "fio").write_text("#!/bin/sh\n")
    argv = [str(tmp_path / "none") if x == "NONE" else x for x in bench]
    r = fio_pack("bench", *argv, "--fio", str(path), timeout=60)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and str(path) in r.stderr, r.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["fio"]


# The acceptance trial: `syscalls --fio DIR` wrote into --work, then
# ended in a PermissionError traceback; `run --fio DIR` in one from execve.
# Every command that runs fio checks it first (fiobin.check): one line
# naming --fio, exit 2, nothing written. syscalls and run also run it with
# --version (a program that is not fio, /bin/true, ran "fine" and its
# missing output ended in a traceback); study does not run it before its
# dry run or a resume's checks, so it refuses only what cannot be run.
FIO_COMMANDS = {
    "syscalls": ["syscalls", "--only", "dd", "--work", "TMP/w"],
    "run": ["run", "TMP/job.fio"],
    "study": ["study", "run", "--resume", "TMP/none"],
}


@pytest.mark.parametrize("cmd", list(FIO_COMMANDS))
@pytest.mark.parametrize("fio", ["directory", "not-executable", "missing", "not-fio"])
def test_fio_that_cannot_run_is_refused(cmd, fio, tmp_path):
    if cmd == "study" and fio == "not-fio":
        pytest.skip("study does not run --fio before its checks (see above)")
    tmp_path.joinpath("job.fio").write_text("[j]\nioengine=null\nsize=1m\n")
    tmp_path.joinpath("fio").write_text("#!/bin/sh\n")
    tmp_path.joinpath("true").write_text("#!/bin/sh\nexit 0\n")
    tmp_path.joinpath("true").chmod(0o755)
    path = {"missing": tmp_path / "no-fio", "directory": tmp_path,
            "not-executable": tmp_path / "fio", "not-fio": tmp_path / "true"}[fio]
    argv = [a.replace("TMP", str(tmp_path)) for a in FIO_COMMANDS[cmd]]
    before = snapshot_of(tmp_path)
    r = fio_pack(*argv, "--fio", str(path), timeout=60)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and f"--fio {path}: " in r.stderr, r.stderr
    assert snapshot_of(tmp_path) == before


def snapshot_of(d):
    from helpers.trees import snapshot
    return snapshot(d, content=True)
