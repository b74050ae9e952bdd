"""fio-pack analyze plot as a storage engineer sends it on: the conditions
under the title, a log y axis when the lines span decades, the legend
beside the data, one name per published device, colour by target and line
style by host.

Each test draws the plot the command draws (analyze.make_plot, the
function `analyze plot` saves) and reads its matplotlib objects: the
axes' scale, the tick labels' text, the legend's box against the axes'
box, the caption's text. The data are real fio results: the 002 study
(sysbench-rndrd) run by `fio-pack study` on two directories, and the
stored outputs of tests/fixtures/fio-json (json+, two fio servers)."""
import json
import re
import subprocess
import sys

import pytest

from helpers.fio import ENGINE_DIR, FIO, REPO
from fiopack.results import cli as analyze

STORED = REPO / "tests" / "fixtures" / "fio-json"
FIGURES = REPO / "reference" / "figures.json"
STUDY = [sys.executable, str(REPO / "scripts" / "fio-pack"), "study"]

# Python analysis code: the sanitizer run adds nothing here
pytestmark = pytest.mark.nosan


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """sysbench-rndrd at 1 and 4 threads on two directories, twice over."""
    base = tmp_path_factory.mktemp("plots")
    args = []
    for label in ("ssd", "raid"):
        (base / label).mkdir()
        args += ["--target", f"{label}={base / label}"]
    p = subprocess.run([*STUDY, "sysbench-rndrd", "--sweep", "threads=1,4", *args,
                        "--set", "runtime=1", "--set", "size=4m", "--repeats", "2",
                        "--fio", FIO, "--engine-dir", ENGINE_DIR, "--out", base / "study",
                        "--quiet"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    return base / "study"


def figure(*args):
    """(figure, axes, data, description) of `fio-pack analyze plot ARGS`."""
    a = analyze.parser("plot").parse_args([str(x) for x in args] + ["-o", "unused.png"])
    plt, fig, data, desc, _ = analyze.make_plot(a)
    return fig, fig.axes[0], data, desc


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


def test_caption_says_the_conditions(study):
    fig, ax, _, desc = figure(study, "--metric", "throughput", "--x", "threads",
                              "--where", "threads!=2")
    assert fig._suptitle.get_text() == "sysbench-rndrd: throughput vs threads"
    cap = ax.get_title()
    for part in ("size 4m", "bs 16k", "runtime 1 s", "direct=1",
                 "point: median of 2 repeats, bar: min–max", "where threads!=2"):
        assert part in cap, (part, cap)
    assert desc["caption"] == cap
    # a plotted dimension is not a condition: size on the x axis
    fig, ax, _, _ = figure(study, "--metric", "throughput", "--x", "size", "--where",
                           "threads=1")
    assert "size" not in ax.get_title() and "runtime 1 s" in ax.get_title()
    # the percentile curves say what a curve is
    fig, ax, _, _ = figure(STORED / "local-multi.out", "--percentiles", "--direction",
                           "write", "--series", "job")
    assert ax.get_title().startswith("size 1m, bs 4k")
    assert "curve: json+ histogram of 1 run pooled" in ax.get_title()
    fig, ax, _, _ = figure(STORED / "local-multi-plain.out", "--percentiles", "--direction",
                           "write", "--series", "job")
    assert "curve: fio's percentile list of one run" in ax.get_title()


def boxes(fig, ax):
    """The legend's and the axes' boxes as drawn (pixels), and the figure's."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    return ax.get_legend().get_window_extent(r), ax.get_window_extent(r), fig.bbox


@pytest.mark.parametrize("kind", ["metric", "published", "percentiles"])
def test_legend_beside_the_data(study, kind):
    """The legend covered the published RAID line: it goes right of the
    axes, whole inside the picture."""
    args = {"metric": [study, "--metric", "throughput", "--x", "threads"],
            "published": [study, "--metric", "throughput", "--x", "threads", "--reference",
                          FIGURES, "--map", "intel320=ssd", "--map", "raid10-8sas=raid"],
            "percentiles": [STORED / "local-multi.out", "--percentiles", "--direction",
                            "read", "--series", "job"]}[kind]
    fig, ax, data, _ = figure(*args)
    leg, axes, whole = boxes(fig, ax)
    assert leg.x0 >= axes.x1, (leg, axes)
    assert whole.x0 <= leg.x0 and leg.x1 <= whole.x1 and leg.y0 >= whole.y0
    assert len(ax.get_legend().get_texts()) == len(data["series"]) + len(data.get("published", []))


def y_labels(fig, ax) -> list:
    """The y tick labels drawn (inside the axis' limits), as text."""
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    return [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks())
            if lo <= v <= hi and t.get_text()]


def one_two_five(labels) -> bool:
    """Every label a plain number whose leading digit is 1, 2 or 5."""
    return all(re.fullmatch(r"\d+(\.\d+)?", t) and t.strip("0.")[0] in "125" for t in labels)


def test_log_y_when_the_lines_span_decades(study):
    """The published RAID10's 6-47 ms beside the measured p95 of a fraction
    of a millisecond: on a linear axis the measured lines lie flat on
    zero. A log axis, ticked 1 2 5 in plain numbers."""
    fig, ax, data, desc = figure(study, "--metric", "response time p95", "--x", "threads",
                                 "--reference", FIGURES, "--map", "intel320=ssd",
                                 "--map", "raid10-8sas=raid")
    vals = [pt["median"] for s in data["series"] for pt in s["points"]] + \
        [pt["value"] for p in data["published"] for pt in p["points"]]
    assert max(vals) / min(vals) > 10 ** 1.5
    assert ax.get_yscale() == "log" and desc["yscale"] == "log"
    labels = y_labels(fig, ax)
    assert len(labels) >= 4 and one_two_five(labels), labels
    assert "50" in labels or "20" in labels
    # what the data do not span stays linear, from zero
    fig, ax, data, desc = figure(study, "--metric", "response time p95", "--x", "threads")
    vals = [v for s in data["series"] for pt in s["points"] for v in (pt["min"], pt["max"])]
    assert max(vals) / min(vals) < 10 ** 1.5
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    # the user's choice wins either way
    fig, ax, _, _ = figure(study, "--metric", "response time p95", "--x", "threads",
                           "--reference", FIGURES, "--map", "raid10-8sas=raid",
                           "--yscale", "linear")
    assert ax.get_yscale() == "linear"
    fig, ax, _, _ = figure(study, "--metric", "throughput", "--x", "threads", "--logy")
    assert ax.get_yscale() == "log"
    # percentile curves: log always, the same plain 1-2-5 labels
    fig, ax, _, _ = figure(STORED / "local-multi.out", "--percentiles", "--direction",
                           "read", "--series", "job")
    labels = y_labels(fig, ax)
    assert ax.get_yscale() == "log" and len(labels) >= 4 and one_two_five(labels), labels


def test_one_name_per_published_device(study):
    """The article calls its RAID "RAID10" in the throughput chart and "RAID"
    in the response-time chart: the plots and the report show each device
    by one name, the first the article gives it."""
    names = {}
    for metric in ("throughput", "response time p95"):
        fig, ax, data, _ = figure(study, "--metric", metric, "--x", "threads",
                                  "--reference", FIGURES, "--all-published")
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        for pub in data["published"]:
            names.setdefault(pub["device_id"], set()).add(pub["device"])
            assert any(t.startswith(pub["device"] + " (published") for t in legend)
    assert {"intel320", "raid10-8sas"} <= set(names)
    assert all(len(v) == 1 for v in names.values()), names
    # the report: the section columns name the devices as the mapping line does
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "fio-pack"), "analyze",
                        "report", str(study), "--map", "intel320=ssd",
                        "--map", "raid10-8sas=raid"], capture_output=True, text=True,
                       timeout=120, cwd=REPO)
    assert p.returncode == 0, p.stderr
    heads = [h for h in re.findall(r"^\| threads \|.*$", p.stdout, re.M) if "ssd / published" in h]
    assert len(heads) >= 2
    for did in ("intel320", "raid10-8sas"):
        (name,) = names[did]
        assert f"= {name} ({did})" in p.stdout
        assert all(f"| {name} (published) |" in h for h in heads), (name, heads)


def line_of(ax, label):
    """The line drawn for legend entry @label (an errorbar's data line too)."""
    handles, labels = ax.get_legend_handles_labels()
    h = handles[labels.index(label)]
    return h.lines[0] if hasattr(h, "lines") else h


def test_colour_by_target_line_style_by_host(study):
    """Two hosts measuring one directory: one colour, a line style each;
    two targets on one host: a colour each, one style; a published device
    in its mapped target's colour, dotted apart from every host."""
    fig, ax, data, _ = figure(STORED / "client-server.out", "--metric", "iops", "--x", "job")
    lines = [line_of(ax, s["label"]) for s in data["series"]]
    assert len(lines) == 2 and len({s["key"]["host"] for s in data["series"]}) == 2
    assert len({ln.get_color() for ln in lines}) == 1
    assert len({ln.get_linestyle() for ln in lines}) == 2
    fig, ax, data, _ = figure(STORED / "client-server.out", "--percentiles", "--direction",
                              "write")
    lines = [ln for ln in ax.get_lines()]
    assert len(lines) == 2 and len({ln.get_color() for ln in lines}) == 1
    assert len({ln.get_linestyle() for ln in lines}) == 2
    fig, ax, data, _ = figure(study, "--metric", "throughput", "--x", "threads",
                              "--reference", FIGURES, "--map", "intel320=ssd",
                              "--map", "raid10-8sas=raid")
    measured = {s["key"]["target"]: line_of(ax, s["label"]) for s in data["series"]}
    assert len({ln.get_color() for ln in measured.values()}) == 2
    assert {ln.get_linestyle() for ln in measured.values()} == {"-"}
    handles, labels = ax.get_legend_handles_labels()
    for pub in data["published"]:
        (label,) = [t for t in labels if t.startswith(pub["device"] + " (published")]
        ln = line_of(ax, label)
        assert ln.get_color() == measured[pub["target"]].get_color()
        assert ln.get_linestyle() == ":"


def test_study_asks_fio_for_json_plus(tmp_path):
    """--output-format json+: recorded, given to fio, and the percentile plot
    then draws the histogram of every repeat pooled, not fio's list."""
    (tmp_path / "ssd").mkdir()
    out = tmp_path / "study"
    p = subprocess.run([*STUDY, "sysbench-rndrd", "--sweep", "threads=2", "--target",
                        f"ssd={tmp_path / 'ssd'}", "--set", "runtime=1", "--set", "size=2m",
                        "--repeats", "2", "--output-format", "json+", "--fio", FIO,
                        "--engine-dir", ENGINE_DIR, "--out", out, "--quiet"],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert json.loads((out / "study.json").read_text())["output_format"] == "json+"
    for n in (1, 2):
        meta = json.loads((out / "runs" / f"{n:04d}.meta.json").read_text())
        assert "--output-format=json+" in meta["command"]
        (job,) = [j for j in json.loads((out / "runs" / f"{n:04d}.json").read_text())["jobs"]
                  if j["jobname"] == "sysbench-rndrd"]
        assert job["read"]["clat_ns"]["bins"]
    fig, ax, data, desc = figure(out, "--percentiles", "--where", "job=sysbench-rndrd")
    (s,) = data["series"]
    assert s["source"].startswith("json+ histogram") and len(s["runs"]) == 2
    assert desc["from"] == "json+ histograms"
    assert "curve: json+ histogram of 2 runs pooled" in ax.get_title()


@pytest.mark.nofio
def test_matplotlib_hint_names_the_python_running(tmp_path):
    """Without matplotlib, the hint names the interpreter and the install
    that serves it: Debian's package for /usr/bin/python3 alone; pip for a
    venv (or a pyenv), where the package would change nothing."""
    import os
    if not os.path.exists("/usr/bin/python3"):
        pytest.skip("no /usr/bin/python3")
    png = tmp_path / "qd.png"
    args = [str(REPO / "scripts" / "fio-pack"), "analyze", "plot", str(STORED / "qd"),
            "--metric", "read.iops", "--x", "iodepth", "-o", str(png)]
    # -S: the system's Python without its site packages, matplotlib among them
    p = subprocess.run(["/usr/bin/python3", "-S"] + args, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and not png.exists()
    (line,) = p.stderr.splitlines()
    assert "which /usr/bin/python3 (Python 3." in line and \
        line.endswith("cannot import: apt-get install python3-matplotlib "
                      "(scripts/install-deps.sh --test installs it)"), line
    venv = tmp_path / "venv"
    r = subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"no venv: {r.stderr.strip()}")
    py = venv / "bin" / "python3"
    p = subprocess.run([str(py)] + args, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and not png.exists()
    (line,) = p.stderr.splitlines()
    assert f"which {py} (Python 3." in line and f"{py} -m pip install matplotlib" in line
    assert "or run fio-pack with /usr/bin/python3 and apt-get install python3-matplotlib" in line


def test_targets_record_their_file_system(tmp_path, tmpfs_dir):
    """A tmpfs target recorded no device and no file-system type: nothing
    in the study said its figures came from memory."""
    (tmp_path / "disk").mkdir()
    out = tmp_path / "study"
    p = subprocess.run([*STUDY, "sysbench-rndrd", "--sweep", "threads=1", "--target",
                        f"mem={tmpfs_dir}", "--target", f"disk={tmp_path / 'disk'}",
                        "--set", "runtime=1", "--set", "size=4m", "--fio", FIO,
                        "--engine-dir", ENGINE_DIR, "--out", out, "--quiet"],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    disk_fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", str(tmp_path)],
                             capture_output=True, text=True, check=True).stdout.strip()
    want = {"mem": "tmpfs", "disk": disk_fs}
    study = json.loads((out / "study.json").read_text())
    assert {t["label"]: t["device"]["fs_type"] for t in study["targets"]} == want
    for meta in (out / "runs").glob("*.meta.json"):
        t = json.loads(meta.read_text())["target"]
        assert t["device"]["fs_type"] == want[t["label"]]


def test_every_series_looks_different(study):
    """Series split past target (target and repeat, target and threads)
    took their target's colour and one style: two lines of one target
    looked the same. A further value takes a line style of its own."""
    fig, ax, data, _ = figure(study, "--metric", "throughput", "--x", "threads",
                              "--series", "target,repeat")
    looks = [(ln.get_color(), ln.get_linestyle())
             for ln in (line_of(ax, s["label"]) for s in data["series"])]
    assert len(looks) == 4 and len(set(looks)) == 4, looks
    assert len({c for c, _ in looks}) == 2          # still a colour per target
