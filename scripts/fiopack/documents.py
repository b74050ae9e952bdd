"""The JSON documents the pack reads, and the shape each must have: fio's
output, the scenario catalogue, a study's study.json and run meta files,
the smallfile engine's opstats lines and the published figures.

Each reader checks its document here once, where it reads it, before any
field is used: a document of another shape (a list where fio writes an
object, a string for a number, NaN, a number too large for a float) is then
one line naming the file and the place in it, instead of a traceback from
whichever line first trips on it. Only what the pack reads is described:
other keys pass, and a key that is absent is the reader's business (most
have a default).

A shape is a Python value: NUMBER, INT, STR, BOOL, ANY; Opt(shape) also
allows null; Either(a, b); Text(pattern) a string matching it whole;
{key: shape} an object; [shape] a list of such items; (a, b) a list of
exactly two items, a and b; Map(shape) an object whose values all have
that shape; Required(shape) inside an object: the key must be there."""
import math
import re


class ShapeError(Exception):
    """Where a document is not of its shape: "jobs[0].read: a string, not
    an object"."""


class _Kind:
    def __init__(self, name, test):
        self.name, self.test = name, test


# fio's counters are 64-bit: beyond that a number is not one fio wrote, and
# Python would fail to make a float of it (OverflowError) when computing
LIMIT = 2 ** 64


def _number(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)
            and (math.isfinite(v) if isinstance(v, float) else True) and -LIMIT <= v <= LIMIT)


NUMBER = _Kind("a finite number within 2^64", _number)
INT = _Kind("a whole number within 2^64", lambda v: isinstance(v, int) and _number(v))
STR = _Kind("a string", lambda v: isinstance(v, str))
POSITIVE = _Kind("a number above 0", lambda v: _number(v) and v > 0)
BOOL = _Kind("true or false", lambda v: isinstance(v, bool))
ANY = _Kind("anything", lambda v: True)


class Opt:
    def __init__(self, shape):
        self.shape = shape


class Either:
    def __init__(self, *shapes):
        self.shapes = shapes


class Text:
    def __init__(self, pattern, name):
        self.re, self.name = re.compile(pattern), name


class Map:
    def __init__(self, shape, keys=None):
        self.shape, self.keys = shape, keys


class Required:
    def __init__(self, shape):
        self.shape = shape


def what_is(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true or false"
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, (int, float)):
        return f"the number {v!r}" if _number(v) else f"a {len(str(abs(v)))}-digit number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def expected(shape) -> str:
    if isinstance(shape, _Kind):
        return shape.name
    if isinstance(shape, Opt):
        return expected(shape.shape) + " or null"
    if isinstance(shape, Either):
        return " or ".join(expected(s) for s in shape.shapes)
    if isinstance(shape, Text):
        return shape.name
    if isinstance(shape, list):
        return "a list"
    if isinstance(shape, tuple):
        return f"a list of {len(shape)}"
    return "an object"


def _fits(v, shape) -> bool:
    try:
        check(v, shape)
        return True
    except ShapeError:
        return False


def _at(where, key) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{where}.{key}" if where else key
    return f"{where}[{key!r}]"


def check(v, shape, where="") -> None:
    """Raises ShapeError naming the first place where @v is not @shape."""
    def fail(what=None):
        raise ShapeError(f"{where or 'the document'}: {what or what_is(v)}, not "
                         f"{expected(shape)}")
    if isinstance(shape, Opt):
        if v is not None:
            check(v, shape.shape, where)
    elif isinstance(shape, Either):
        if not any(_fits(v, s) for s in shape.shapes):
            fail()
    elif isinstance(shape, _Kind):
        if not shape.test(v):
            fail()
    elif isinstance(shape, Text):
        if not isinstance(v, str) or not shape.re.fullmatch(v):
            fail(f"{v!r}" if isinstance(v, str) else None)
    elif isinstance(shape, list):
        if not isinstance(v, list):
            fail()
        for i, item in enumerate(v):
            check(item, shape[0], _at(where, i))
    elif isinstance(shape, tuple):
        if not isinstance(v, list) or len(v) != len(shape):
            fail(f"a list of {len(v)}" if isinstance(v, list) else None)
        for i, (item, s) in enumerate(zip(v, shape)):
            check(item, s, _at(where, i))
    elif isinstance(shape, Map):
        if not isinstance(v, dict):
            fail()
        for k, item in v.items():
            if shape.keys is not None and not shape.keys.fullmatch(k):
                raise ShapeError(f"{_at(where, k)}: a key that is not {shape.keys.pattern!r}")
            check(item, shape.shape, _at(where, k))
    else:
        if not isinstance(v, dict):
            fail()
        for k, s in shape.items():
            if isinstance(s, Required):
                if k not in v:
                    raise ShapeError(f"{where or 'the document'}: no {k!r}")
                s = s.shape
            if k in v:
                check(v[k], s, _at(where, k))


# ---------------------------------------------------------------------------
# fio's JSON output (--output-format=json or json+), as results/data.py,
# summary and the study's progress line read it
# ---------------------------------------------------------------------------

# an option's value: fio writes strings; a hand-written result may have numbers
OPTION = Either(STR, NUMBER, BOOL)
LATENCY = {"min": NUMBER, "max": NUMBER, "mean": NUMBER, "stddev": NUMBER, "N": NUMBER,
           "percentile": Map(NUMBER, re.compile(r"\d+(\.\d+)?")),
           "bins": Map(NUMBER, re.compile(r"\d+"))}
DIRECTION = {k: NUMBER for k in ("io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "runtime",
                                 "total_ios", "short_ios", "drop_ios")}
DIRECTION.update({k: LATENCY for k in ("slat_ns", "clat_ns", "lat_ns", "slat", "clat", "lat")})
DIRECTION["prios"] = [{"prioclass": NUMBER, "prio": NUMBER, "clat_ns": LATENCY}]
FIO_ENTRY = {"jobname": Required(STR), "groupid": NUMBER, "error": NUMBER, "job options": Map(OPTION),
             "hostname": Opt(STR), "port": Opt(NUMBER),
             "read": DIRECTION, "write": DIRECTION, "trim": DIRECTION,
             "sync": {"total_ios": NUMBER, "lat_ns": LATENCY},
             **{k: NUMBER for k in ("usr_cpu", "sys_cpu", "ctx", "majf", "minf", "job_runtime",
                                    "elapsed")}}
FIO_OUTPUT = {"fio version": STR, "timestamp": NUMBER, "timestamp_ms": NUMBER, "time": STR,
              "global options": Map(OPTION), "jobs": [FIO_ENTRY], "client_stats": [FIO_ENTRY]}


# ---------------------------------------------------------------------------
# The catalogue (jobs/catalogue.json): the study runner and the analysis
# ---------------------------------------------------------------------------

# a scenario's id and its parameters' option names go into derived job files
ID = Text(r"[A-Za-z0-9._-]+", "an id of letters, digits, . _ -")
TARGET_KIND = Text(r"dir|file-or-device|none", "dir, file-or-device or none")
OPTION_NAME = Text(r"[A-Za-z0-9_:.-]+", "an fio option name")
METRIC = {"name": Required(STR), "expr": Required(STR), "unit": STR, "job": Opt(STR)}
SCENARIO = {"id": Required(ID), "source": STR, "title": STR, "jobs": [STR],
            "target": {"env": Opt(Either(Text(r"[A-Za-z_][A-Za-z0-9_]*", "a variable name"),
                                         [Text(r"[A-Za-z_][A-Za-z0-9_]*", "a variable name")])),
                       "kind": TARGET_KIND},
            "writes_target": BOOL, "engines": [ID], "params": Map(Either(OPTION_NAME,
                                                                          [OPTION_NAME])),
            "metrics": [METRIC], "status": STR}
CATALOGUE = {"scenarios": Required([SCENARIO])}


# ---------------------------------------------------------------------------
# A study's results directory: study.json and runs/NNNN.meta.json
# ---------------------------------------------------------------------------

TARGET = {"label": Required(STR), "path": Opt(STR), "kind": TARGET_KIND,
          "device": Opt(Map(ANY))}
SERVER = {"host": Required(STR), "port": Required(NUMBER), "label": Required(STR),
          "client": Required(STR)}
PLAN_RUN = {"run": Required(INT), "repeat": Required(INT), "host": Required(STR),
            "target": Required(STR), "params": Required(Map(Either(STR, NUMBER))),
            "values": Required(Map(Either(STR, NUMBER)))}
# what the analysis reads of a study.json
STUDY_RESULTS = {"scenario": Required(SCENARIO), "plan": Required([PLAN_RUN]),
                 "started": Opt(STR), "status": Opt(STR), "local": Opt(Map(ANY))}
# what a --resume reads of it: the whole study
STUDY = dict(STUDY_RESULTS, **{
    "target_spec": Required({"env": SCENARIO["target"]["env"], "kind": Required(TARGET_KIND)}),
    "job_files": Required([{"path": Required(STR), "sha256": Required(STR)}]),
    "set": Required([(OPTION_NAME, STR)]), "targets": Required([TARGET]), "servers": Required([SERVER]),
    "repeats": Required(INT), "engines": [STR], "engine_dir": Required(STR),
    "output_format": Opt(Text(r"json\+?", "json or json+")),
    "remote_engine_dir": Opt(STR), "remote_repo": Opt(STR),
    "variables": Required(Map(STR)), "resumed": [Map(ANY)]})
RUN_META = {"run": Required(INT), "scenario": Required(STR), "ok": Required(BOOL),
            "problem": Opt(STR), "target": Opt(TARGET), "repeat": Opt(INT), "host": Opt(STR),
            "remote": Opt({"server_name": Opt(STR)}), "params": Opt(Map(Either(STR, NUMBER))),
            "fio_version": Opt(STR), "started": Opt(STR), "ended": Opt(STR)}


# ---------------------------------------------------------------------------
# The smallfile engine's tree_opstats_file: one JSON object a line
# ---------------------------------------------------------------------------

OPSTATS_LINE = {"job": STR, "subjob": INT, "read_passes": NUMBER,
                "file_drop_cache": NUMBER,
                "ops": Map({k: NUMBER for k in ("ops", "bytes", "probes", "skipped", "errors",
                                                 "lat_mean_ns", "lat_min_ns", "lat_max_ns")})}


# ---------------------------------------------------------------------------
# Published figures (reference/figures.json)
# ---------------------------------------------------------------------------

FIGURE = {"id": Required(STR), "metric": Required(STR), "kind": STR, "scenario": Opt(STR),
          "device": Opt(STR), "device_id": Opt(STR), "value": Opt(NUMBER),
          "range": Opt((NUMBER, NUMBER)), "unit": Opt(STR), "unit_normalised": Opt(STR),
          "unit_note": Opt(STR), "qualifier": Opt(STR), "approximate": Opt(BOOL),
          "params": Opt(Map(Either(STR, NUMBER))), "derived_from": Opt(STR)}
SOURCE = {"title": Opt(STR), "author": Opt(STR), "date": Opt(STR),
          "year": Opt(Either(NUMBER, STR))}
FIGURES = {"figures": Required([FIGURE]), "sources": Map(SOURCE)}


# ---------------------------------------------------------------------------
# fio-pack bench capture --json, read back by --combine
# ---------------------------------------------------------------------------

CAPTURE_FACTS = {"tps": Required(POSITIVE), "db_cpu_per_tx_ms": POSITIVE, "db_cpu_s": NUMBER,
                 "cpu_capture_s": NUMBER, "records": Opt(NUMBER), "span_s": POSITIVE,
                 "tool_events": NUMBER, "cpu_by_comm": Map(NUMBER), "cpu_total_s": NUMBER,
                 "bpf_prog_s": NUMBER, "bpf_prog_runs": POSITIVE, "ringbuf_lost": NUMBER,
                 "failed": STR, "complete": BOOL, "incomplete": [(ANY, STR)]}
BENCH_CAPTURE = {"db": Required(STR), "tracers": Required([Text(r"strace|bpf|bpf-hooks",
                                                                "strace, bpf or bpf-hooks")]),
                 "rounds": Required([Map(CAPTURE_FACTS)]), "argv": Required([STR]),
                 **{k: Required(STR) for k in ("start", "end", "setup")},
                 **{k: Required(Either(NUMBER, STR, [NUMBER]))
                    for k in ("nproc", "load_before", "load_after")}}
