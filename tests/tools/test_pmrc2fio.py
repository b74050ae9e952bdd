"""pmrc2fio (tools/pmrc2fio.c): PostMark configurations (.pmrc) converted into
fio job files for the postmark engine.

Each test runs the real build/pmrc2fio on real files and reads the job file
it writes back with a small INI reader that keeps what fio keeps (section
order, repeated sections, bare options like `stonewall`). pm_location values
are decoded with the engine's grammar (entries split at unescaped ':', a
backslash escapes the next character, an unescaped '@' followed by digits at
the end of an entry is the weight). fio itself cannot parse the jobs without
the engine, but how fio reads a value back (comments, ${VAR} and $keyword
substitution) is checked by handing the same value to a string option of
fio's null engine and reading fio's own parse debug output."""
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from helpers.fio import IS_ROOT
from helpers.pmrc2fio import PMRC_000, TOOL, _env, jobs_of, parse_job, run_tool

REPO = Path(__file__).resolve().parents[2]
FIO = Path(os.environ.get("FIO", str(REPO / "build" / "fio")))
SMALLFILE = Path(os.environ.get("PACK_ENGINE_DIR", str(REPO / "build"))).resolve() / "smallfile.so"

# Not a sanitizer build: the ASan pass of `make check` has nothing to add.
pytestmark = [pytest.mark.nosan, pytest.mark.usefixtures("_build")]

DEFAULTS = {
    "pm_size_low": "500", "pm_size_high": "10000", "pm_number": "500",
    "pm_seed": "42", "pm_transactions": "500", "pm_subdirectories": "0",
    "pm_read_block": "512", "pm_write_block": "512", "pm_buffering": "1",
    "pm_bias_read": "5", "pm_bias_create": "5", "pm_report": "verbose",
    "pm_location": "${PM_LOCATION}",
}

PMRC_PHORONIX = "set transactions 25000\nset size 5120 524288\nset number 500\n"


# ---------------------------------------------------------------------------
# Reading job files back
# ---------------------------------------------------------------------------

def convert(pmrc, *args):
    r = run_tool(*args, "-", stdin=pmrc)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return r.stdout


def only_job(pmrc, *args):
    jobs = jobs_of(convert(pmrc, *args))
    assert len(jobs) == 1
    name, opts = jobs[0]
    assert name == "postmark"
    assert "stonewall" not in opts
    return opts


def pm_opts(opts):
    """The pm_* options, which must be every one of them."""
    pm = {k: v for k, v in opts.items() if k.startswith("pm_")}
    assert set(pm) - {"pm_report_file"} == set(DEFAULTS), sorted(pm)
    return pm


def decode_locations(value):
    """pm_location grammar -> [(path, weight)]."""
    entries, cur, i = [], [], 0
    while i < len(value):
        c = value[i]
        if c == "\\":
            assert i + 1 < len(value), f"dangling backslash in {value!r}"
            cur.append((value[i + 1], True))
            i += 2
            continue
        if c == ":":
            entries.append(cur)
            cur = []
        else:
            cur.append((c, False))
        i += 1
    entries.append(cur)
    out = []
    for e in entries:
        weight = 1
        text = "".join(ch for ch, _ in e)
        for j in range(len(e) - 1, -1, -1):
            if e[j] == ("@", False):
                digits = e[j + 1:]
                if digits and all(not esc and ch.isdigit() for ch, esc in digits):
                    weight = int("".join(ch for ch, _ in digits))
                    text = "".join(ch for ch, _ in e[:j])
                break
        out.append((text, weight))
    return out


# ---------------------------------------------------------------------------
# Conversions
# ---------------------------------------------------------------------------

def test_000_article():
    opts = only_job(PMRC_000)
    assert pm_opts(opts) == dict(DEFAULTS, pm_read_block="4096", pm_write_block="4096",
                                 pm_transactions="10000", pm_size_low="500",
                                 pm_size_high="500000", pm_number="5000")


def test_phoronix():
    opts = only_job(PMRC_PHORONIX)
    assert pm_opts(opts) == dict(DEFAULTS, pm_transactions="25000", pm_size_low="5120",
                                 pm_size_high="524288", pm_number="500")


def test_empty_file_is_defaults(tmp_path):
    cfg = tmp_path / "empty.pmrc"
    cfg.write_text("")
    r = run_tool(cfg)
    assert r.returncode == 0 and r.stderr == ""
    jobs = jobs_of(r.stdout)
    assert [n for n, _ in jobs] == ["postmark"]
    assert jobs[0][1] == DEFAULTS  # every option explicit, nothing else


def test_header_and_global(tmp_path):
    cfg = tmp_path / "000.pmrc"
    cfg.write_text(PMRC_000)
    out = tmp_path / "000.fio"
    r = run_tool("-o", out, cfg)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    text = out.read_text()
    sections, header = parse_job(text)
    assert text.startswith(";")
    htext = "\n".join(header)
    assert f"Converted by pmrc2fio from the PostMark configuration {cfg}" in htext
    assert "postmark engine" in htext
    assert f"fio {out}" in htext
    assert "FIO_PACK_ENGINES" in htext and "fio-pack run" in htext
    assert "PM_LOCATION" in htext
    assert "current directory" in htext  # what PostMark itself would do
    assert sections[0] == ("global", {"ioengine": "external:${FIO_PACK_ENGINES}/postmark.so"})


def test_stdin_and_dash_agree(tmp_path):
    cfg = tmp_path / "p.pmrc"
    cfg.write_text(PMRC_PHORONIX)
    a = run_tool(stdin=PMRC_PHORONIX)
    b = run_tool("-", stdin=PMRC_PHORONIX)
    c = run_tool(cfg)
    assert a.returncode == b.returncode == c.returncode == 0
    assert a.stdout == b.stdout
    assert "(standard input)" in a.stdout
    assert jobs_of(a.stdout) == jobs_of(c.stdout)


def test_every_setting_changed():
    opts = only_job("set size 1000 2000\nset number 77\nset seed 1234567\n"
                    "set transactions 9999\nset subdirectories 12\nset read 1024\n"
                    "set write 8192\nset buffering false\nset bias read -1\n"
                    "set bias create 10\nset report terse\nset location /mnt/pm\n")
    assert pm_opts(opts) == {
        "pm_size_low": "1000", "pm_size_high": "2000", "pm_number": "77",
        "pm_seed": "1234567", "pm_transactions": "9999", "pm_subdirectories": "12",
        "pm_read_block": "1024", "pm_write_block": "8192", "pm_buffering": "0",
        "pm_bias_read": "-1", "pm_bias_create": "10", "pm_report": "terse",
        "pm_location": "/mnt/pm",
    }


def test_later_settings_win_and_comments_ignored():
    opts = only_job("# a comment\n\nset number 10\r\nset  number\t20\nshow\nhelp\n"
                    "set buffering false\nset buffering true\nset bias read 0\n")
    pm = pm_opts(opts)
    assert pm["pm_number"] == "20"
    assert pm["pm_buffering"] == "1"
    assert pm["pm_bias_read"] == "0"


@pytest.mark.parametrize("line,lo,hi", [
    ("set size 4096", "4096", "4096"),          # H missing: fixed
    ("set size 4096 100", "4096", "4096"),      # H < L: fixed L
    ("set size 4096 0", "4096", "4096"),        # H <= 0
    ("set size 4096 -5", "4096", "4096"),
    ("set size 4096 4096", "4096", "4096"),
    ("set size 1 1073741823", "1", "1073741823"),
])
def test_size(line, lo, hi):
    pm = pm_opts(only_job(line + "\n"))
    assert (pm["pm_size_low"], pm["pm_size_high"]) == (lo, hi)


def test_fewer_than_ten_transactions_still_converted():
    r = run_tool(stdin="set transactions 3\n")
    assert r.returncode == 0 and r.stderr == ""
    assert pm_opts(jobs_of(r.stdout)[0][1])["pm_transactions"] == "3"


def test_locations_with_weights_and_special_characters():
    text = convert("set location /tmp/one\n"
                   "set location +/tmp/two 3\n"
                   "set location +/tmp/a:b 2\n"
                   "set location +/tmp/mail@host\n"
                   "set location +/tmp/back\\slash 1000000\n"
                   "set location +/tmp/gone 5\n"
                   "set location -/tmp/gone\n"
                   "set location +/tmp/with space 4\n")
    (name, opts), = jobs_of(text)
    value = opts["pm_location"]
    assert decode_locations(value) == [
        ("/tmp/one", 1), ("/tmp/two", 3), ("/tmp/a:b", 2), ("/tmp/mail@host", 1),
        ("/tmp/back\\slash", 1000000), ("/tmp/with space", 4)]
    # written as the grammar says: @W only when W != 1 or the path has an '@'
    assert value == ("/tmp/one:/tmp/two@3:/tmp/a\\:b@2:/tmp/mail\\@host@1:"
                     "/tmp/back\\\\slash@1000000:/tmp/with space@4")
    _, header = parse_job(text)
    assert any("not used" in h for h in header)  # PM_LOCATION does not apply


def test_set_location_replaces_the_list():
    pm = pm_opts(only_job("set location /a 2\nset location +/b\nset location /c 7\n"))
    assert decode_locations(pm["pm_location"]) == [("/c", 7)]
    # removing the last one goes back to the environment
    pm = pm_opts(only_job("set location /a\nset location -/a\n"))
    assert pm["pm_location"] == "${PM_LOCATION}"


def test_several_runs():
    text = convert("set number 100\nset transactions 200\nrun\n"
                   "set size 1000\nrun results.txt\n"
                   "set location /tmp/x 2\nset report terse\nrun   other file.txt  \n"
                   "quit\nset number 5\nrun\n")
    jobs = jobs_of(text)
    assert [n for n, _ in jobs] == ["postmark-1", "postmark-2", "postmark-3"]
    o1, o2, o3 = (o for _, o in jobs)
    assert "stonewall" not in o1
    assert "stonewall" in o2 and o2["stonewall"] is None
    assert "stonewall" in o3
    assert pm_opts(o1) == dict(DEFAULTS, pm_number="100", pm_transactions="200")
    assert "pm_report_file" not in o1
    assert pm_opts(o2) == dict(DEFAULTS, pm_number="100", pm_transactions="200",
                               pm_size_low="1000", pm_size_high="1000",
                               pm_report_file="results.txt")
    assert pm_opts(o3) == dict(DEFAULTS, pm_number="100", pm_transactions="200",
                               pm_size_low="1000", pm_size_high="1000",
                               pm_report="terse", pm_location="/tmp/x@2",
                               pm_report_file="other file.txt")
    # each job is self-contained: settings are repeated, not inherited
    for _, o in jobs:
        assert set(DEFAULTS) <= set(o)


def test_single_run_and_no_extra_job():
    jobs = jobs_of(convert("set number 9\nrun\nset number 10\n"))
    assert [n for n, _ in jobs] == ["postmark"]
    assert jobs[0][1]["pm_number"] == "9"


def test_quit_stops_reading():
    # the bad line after quit is never read; no run: one job at the end
    jobs = jobs_of(convert("set number 9\nexit\nset size abc\n"))
    assert len(jobs) == 1 and jobs[0][1]["pm_number"] == "9"


def test_name_and_engine():
    text = convert("run\nrun\n", "--name", "pm000", "--engine=external:/opt/pm/postmark.so")
    sections, header = parse_job(text)
    assert sections[0] == ("global", {"ioengine": "external:/opt/pm/postmark.so"})
    assert [n for n, _ in sections[1:]] == ["pm000-1", "pm000-2"]


@pytest.mark.parametrize("args", [["--name", "global-x"], ["--name", "a b"],
                                  ["--name", "x]"], ["--name", ""],
                                  ["--engine", "a;b"], ["--bogus"], ["a", "b"]])
def test_bad_command_line(args):
    r = run_tool(*args, stdin="")
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("pmrc2fio: ")


def test_help():
    r = run_tool("--help")
    assert r.returncode == 0 and r.stderr == ""
    for word in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "PM_LOCATION",
                 "--engine", "--name", "-o"):
        assert word in r.stdout
    assert run_tool("-h").stdout == r.stdout


# ---------------------------------------------------------------------------
# Output file
# ---------------------------------------------------------------------------

def test_output_replaces_atomically(tmp_path):
    out = tmp_path / "job.fio"
    out.write_text("old\n")
    out.chmod(0o640)
    r = run_tool("-o", out, stdin=PMRC_000)
    assert r.returncode == 0 and r.stdout == ""
    assert jobs_of(out.read_text())[0][1]["pm_number"] == "5000"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.fio"]  # no temporary left


def test_output_new_file_mode_follows_umask(tmp_path):
    out = tmp_path / "new.fio"
    old = os.umask(0o022)
    try:
        r = run_tool("-o", out, stdin="")
    finally:
        os.umask(old)
    assert r.returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_output_to_missing_directory(tmp_path):
    out = tmp_path / "nodir" / "job.fio"
    r = run_tool("-o", out, stdin=PMRC_000)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"pmrc2fio: {out}: No such file or directory\n"
    assert not out.parent.exists()


def test_output_onto_a_directory(tmp_path):
    out = tmp_path / "adir"
    out.mkdir()
    r = run_tool("-o", out, stdin=PMRC_000)
    assert r.returncode == 2
    assert r.stderr == f"pmrc2fio: {out}: Is a directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir"]
    assert list(out.iterdir()) == []


@pytest.mark.skipif(IS_ROOT, reason="root may write into a read-only directory")
def test_output_in_read_only_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        r = run_tool("-o", d / "job.fio", stdin="")
        assert r.returncode == 2
        assert r.stderr == f"pmrc2fio: {d / 'job.fio'}: Permission denied\n"
    finally:
        d.chmod(0o755)


def test_stdout_full():
    with open("/dev/full", "w") as full:
        r = subprocess.run([str(TOOL), "-"], input=PMRC_000, stdout=full,
                           stderr=subprocess.PIPE, text=True, env=_env())
    assert r.returncode == 2
    assert r.stderr == "pmrc2fio: standard output: No space left on device\n"


# ---------------------------------------------------------------------------
# Bad input: one line on stderr, exit 2, nothing written
# ---------------------------------------------------------------------------

def test_missing_file(tmp_path):
    missing = tmp_path / "nope.pmrc"
    out = tmp_path / "out.fio"
    r = run_tool("-o", out, missing)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"pmrc2fio: {missing}: No such file or directory\n"
    assert not out.exists()


def test_directory_as_config(tmp_path):
    r = run_tool(tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"pmrc2fio: {tmp_path}: Is a directory\n"


@pytest.mark.skipif(IS_ROOT, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path):
    cfg = tmp_path / "secret.pmrc"
    cfg.write_text(PMRC_000)
    cfg.chmod(0)
    r = run_tool(cfg)
    assert r.returncode == 2
    assert r.stderr == f"pmrc2fio: {cfg}: Permission denied\n"


BAD_LINES = [
    ("frobnicate", "frobnicate: unknown command"),
    ("set size abc", "set size: 'abc' is not a whole number"),
    ("set size 100 abc", "set size: 'abc' is not a whole number"),
    ("set bias read 11", "set bias read: 11 is not in -1..10"),
    ("set bias create -2", "set bias create: -2 is not in -1..10"),
    ("set location /x 0", "set location: 0 is not in 1..1000000"),
    ("set location -/never", "set location: no location '/never' to remove"),
    ("set number 0", "set number: 0 is not in 1..1073741823"),
    ("set buffering maybe", "set buffering: expected 'true' or 'false'"),
    ("set colour blue", "set colour: unknown setting"),
    ("load other.pmrc", "load: not supported here"),
    ("!ls", "!ls: shell escapes are not supported"),
    ("quit now", "quit: unexpected 'now'"),
    ("set location /tmp/a;b", "set location: '/tmp/a;b': fio cannot read a ';'"),
    ("set location +/tmp/c#d 2", "set location: '/tmp/c#d': fio cannot read a '#'"),
    ("run report;1.txt", "run: report file 'report;1.txt': fio cannot read a ';'"),
    ("run ${HOME}/r.txt", "run: report file '${HOME}/r.txt': fio would replace '${'"),
    ("run r$ncpus", "run: report file 'r$ncpus': fio would replace '$ncpus'"),
]


@pytest.mark.parametrize("bad,msg", BAD_LINES, ids=[b for b, _ in BAD_LINES])
def test_bad_line(tmp_path, bad, msg):
    cfg = tmp_path / "bad.pmrc"
    # the bad line is line 4, after a comment, a blank line and a good setting
    cfg.write_text(f"# header\n\nset number 10\n{bad}\nrun\n")
    out = tmp_path / "out.fio"
    r = run_tool("-o", out, cfg)
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"pmrc2fio: {cfg}: line 4: {msg}"), r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.pmrc"]  # nothing written


def test_bad_line_leaves_existing_output_alone(tmp_path):
    out = tmp_path / "out.fio"
    out.write_text("keep me\n")
    r = run_tool("-o", out, stdin="run\nset size abc\n")
    assert r.returncode == 2
    assert r.stderr == "pmrc2fio: (standard input): line 2: set size: 'abc' is not a whole number\n"
    assert out.read_text() == "keep me\n"


def test_bad_line_after_a_run_writes_nothing():
    r = run_tool(stdin="run\nrun\nset bias read 11\n")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "pmrc2fio: (standard input): line 3: set bias read: 11 is not in -1..10\n"


def test_unrunnable_configuration_is_refused():
    # every line is fine alone, but file names would overflow an int
    r = run_tool(stdin="set number 1073741823\nset transactions 2147483647\nrun\n")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("pmrc2fio: (standard input): line 3: set transactions: ")
    assert len(r.stderr.splitlines()) == 1


# ---------------------------------------------------------------------------
# fio reads the values back unchanged
# ---------------------------------------------------------------------------

def fio_values(job_text, tmp_path, keys):
    """The values fio hands to the options @keys of the job, read through the
    real fio: the job's ioengine becomes fio's null engine, the pm_* options
    are dropped and each of @keys becomes fio's string option `description`
    in a job of its own; fio's parse debug output shows the value it got."""
    sections, _ = parse_job(job_text)
    lines, expected = ["[global]", "ioengine=null", "size=1m"], []
    raw = {}
    for sec, opts in sections[1:]:
        for k in keys:
            if k in opts:
                lines += [f"[{sec}-{k}]", f"description={opts[k]}"]
                expected.append((sec, k))
    # the description line as written by pmrc2fio, character for character
    for line in job_text.splitlines():
        for k in keys:
            if line.startswith(k + "="):
                raw.setdefault(k, []).append(line[len(k) + 1:])
    job = tmp_path / "readback.fio"
    job.write_text("\n".join(lines) + "\n")
    env = _env()
    env.pop("PM_LOCATION", None)
    env["HOME"] = "/should/not/appear"
    r = subprocess.run([str(FIO), "--parse-only", "--debug=parse", str(job)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    got = re.findall(r"__handle_option=description, type=\S+, ptr=(.*)", r.stdout + r.stderr)
    assert len(got) == len(expected), r.stdout
    return got, raw


@pytest.mark.skipif(not FIO.is_file(), reason="build/fio not built")
def test_fio_reads_locations_back(tmp_path):
    paths = ["/tmp/a:b", "/tmp/mail@host", "/tmp/back\\slash", "/tmp/${HOME}/x",
             "/tmp/$HOME", "/tmp/n$ncpus", "/tmp/p$pagesize$mb_memory", "/tmp/dollar$",
             "/tmp/$$", "/tmp/with space", "/tmp/trailing\\", "/tmp/eq=sign,comma-dash"]
    pmrc = "".join(f"set location {'+' if i else ''}{p} {i + 1}\n" for i, p in enumerate(paths))
    pmrc += "run rep-ort,1=x.txt\n"
    text = convert(pmrc)
    got, raw = fio_values(text, tmp_path, ["pm_location", "pm_report_file"])
    loc, rep = got
    assert loc == raw["pm_location"][0]      # fio substituted and cut nothing
    assert decode_locations(loc) == [(p, i + 1) for i, p in enumerate(paths)]
    assert rep == "rep-ort,1=x.txt"


@pytest.mark.skipif(not (FIO.is_file() and SMALLFILE.is_file()),
                    reason="build/fio or build/smallfile.so not built")
def test_fio_substitutes_pm_location_from_environment(tmp_path):
    """pm_location=${PM_LOCATION}: the variable's value, or an empty string
    when it is unset. fio's plain string options refuse an empty value, so
    this reads it back through the small-file engine's tree_dir, an option
    that takes any string, as the postmark engine's pm_location must."""
    text = convert("")
    job = tmp_path / "env.fio"
    job.write_text(text.replace("ioengine=external:${FIO_PACK_ENGINES}/postmark.so",
                                f"ioengine=external:{SMALLFILE}")
                   .replace("pm_location=", "tree_dir=")
                   .replace("\npm_", "\n;pm_"))
    for value, want in (("/mnt/a:/mnt/b@3", "/mnt/a:/mnt/b@3"), (None, "")):
        env = _env()
        env.pop("PM_LOCATION", None)
        if value is not None:
            env["PM_LOCATION"] = value
        r = subprocess.run([str(FIO), "--parse-only", "--debug=parse", str(job)],
                           capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        got = re.findall(r"__handle_option=tree_dir, type=\S+, ptr=(.*)", r.stdout)
        assert got == [want]


# ---------------------------------------------------------------------------
# End to end: the converted job on the real engine does what postmark does
# ---------------------------------------------------------------------------

POSTMARK = "/usr/bin/postmark"
PM_ENGINE = Path(os.environ.get("PACK_ENGINE_DIR", str(REPO / "build"))).resolve() / "postmark.so"


def _counts(report):
    """A report with times and rates blanked out (verbose or terse)."""
    if report.startswith("Time:"):
        s = re.sub(r"\t\d+ seconds", "\tT seconds", report)
        return re.sub(r"\([\d.]+ (?:(?:mega|kilo)?bytes )?per second\)", "(R)", s)
    # terse: 13 rates over a few intervals; the engine's intervals are not
    # whole seconds, so compare the ratios of rates over the same interval
    f = [float(x) for x in report.split()]
    assert len(f) == 13, report
    tx = [round(f[k] / f[2], 3) for k in (5, 6, 7, 10)]       # per transaction
    total = [round(f[k] / f[3], 3) for k in (8, 11, 12)]       # per file created
    return tx + total


@pytest.mark.parametrize("body", [
    "set read 4096\nset write 4096\nset transactions 800\nset size 500 500000\n"
    "set number 300\nset location {d}\nrun {r}1\nquit\n",
    "set location {d} 2\nset location +{d2}\nset subdirectories 3\nset buffering false\n"
    "set number 120\nset transactions 700\nset bias read 3\nrun {r}1\n"
    "set report terse\nset seed 77\nset size 100\nrun {r}2\nquit\n",
], ids=["000-like", "locations-two-runs"])
def test_converted_job_equals_postmark(body, tmp_path):
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="p2f-", dir="/tmp"))   # short: postmark's name buffer
    try:
        d, d2 = base / "a", base / "b"
        d.mkdir()
        d2.mkdir()
        pm_rep, fio_rep = base / "pm.", base / "fio."
        pmrc = base / "cfg.pmrc"
        pmrc.write_text(body.format(d=d, d2=d2, r=pm_rep))
        r = subprocess.run([POSTMARK, str(pmrc)], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, cwd=base, env=_env(), timeout=120)
        assert r.returncode == 0, r.stderr
        # the same configuration, reports to other files, converted and run by fio
        cfg2 = base / "cfg2.pmrc"
        cfg2.write_text(body.format(d=d, d2=d2, r=fio_rep))
        job = base / "cfg.fio"
        t = run_tool("-o", job, "--engine", f"external:{PM_ENGINE}", cfg2)
        assert t.returncode == 0, t.stderr
        f = subprocess.run([str(FIO), "--output-format=json", str(job)], capture_output=True,
                           text=True, env=_env(), timeout=120)
        assert f.returncode == 0, f.stderr
        runs = body.count("run ")
        for k in range(1, runs + 1):
            want = Path(f"{pm_rep}{k}").read_text()
            got = Path(f"{fio_rep}{k}").read_text()
            assert _counts(got) == _counts(want), (k, got, want)
        assert os.listdir(d) == [] and os.listdir(d2) == []
    finally:
        import shutil
        shutil.rmtree(base, ignore_errors=True)
