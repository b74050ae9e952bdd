"""NAME
    fio-pack analyze - tables, plots, reproduction reports and regression checks from fio
    results

SYNOPSIS
    fio-pack analyze rows    RESULTS... [--format csv|json|jsonl] [-o FILE]
                             [INPUT OPTIONS]
    fio-pack analyze metrics RESULTS... [INPUT OPTIONS]
    fio-pack analyze table   RESULTS... --metric NAME [--metric NAME]... [--rows P[,P]]
                       [--cols P[,P]] [--baseline COLUMN] [--ratio auto|col/base|base/col]
                       [--cells auto|range|cv|columns] [--stats auto|LIST]
                       [--combine sum|mean|min|max] [--format md|csv|html]
                       [--precision N] [-o FILE] [INPUT OPTIONS]
    fio-pack analyze plot    RESULTS... --metric NAME --x PARAM [--series P[,P]]
                       [--reference FIGURES [--map DEVICE=TARGET]... [--all-published]]
                       [--xscale auto|linear|log2] [--yscale auto|linear|log]
                       -o FILE.png|FILE.svg [-o ...]
                       [INPUT OPTIONS]
    fio-pack analyze plot    RESULTS... --percentiles [--direction DIR] [--series P[,P]]
                       -o FILE.png|FILE.svg [-o ...] [INPUT OPTIONS]
    fio-pack analyze report  RESULTS... [--reference FIGURES] [--map DEVICE=TARGET]...
                       [--cols P[,P]] [--pair METRIC=PUBLISHED]... [--format md|csv|html]
                       [-o FILE]
    fio-pack analyze compare OLD NEW --threshold METRIC=LIMIT[%]... [--ignore NAME]...
                       [--format md|csv|json] [-o FILE] [INPUT OPTIONS]
    fio-pack analyze help [COMMAND]

DESCRIPTION
    Reads fio results and turns them into what a benchmark report needs: the
    tables of a published article (rows of threads, a column per device, ratio
    columns against a baseline device), plots of a metric against any
    parameter with one series per target, latency percentile curves, the
    measured table beside the published one, and a regression check between
    two result sets for a lab's CI.

    RESULTS are any mix of
      * study results directories written by scripts/fio-pack study: the runner's
        meta files give each run's scenario, target label, sweep point
        (e.g. threads), repeat and host;
      * fio JSON or json+ output files (fio --output-format=json[+]), from
        local runs (jobs[]) or client/server runs (client_stats[] with its
        "All clients" entry), with or without group_reporting, with text
        lines before the JSON (fio's notes, the servers' output);
      * directories holding either, searched recursively. Every file is looked
        into: results are recognised by their content, never by their name,
        and a result found twice is counted once.
    For plain fio files the parameters come from the job options (global
    options, then the job's; fio's defaults for numjobs, iodepth, bs, direct,
    rw, ioengine), the target from the job's directory/filename option, the
    scenario from the catalogue (its metric jobs must all be there and give
    numbers; --scenario overrides), and runs with the same jobs, options, host
    and target are repeats of one another, numbered in time order.

    The normalised view ("fio-pack analyze rows") has one row per run, host, job,
    direction and operation. Direction is total (the whole job entry: summed
    iops and bandwidth, CPU, the catalogue metrics), read, write, trim or sync
    (fsync latencies; PostMark transactions). Operations are the engines'
    per-operation figures: PostMark's create and append (write.prios, prio 1
    and 2), read, delete and transaction; the smallfile engine's operation
    classes from its tree_opstats_file (read, stat, create, append, deliver,
    layout, delete). Clones of a job (numjobs without group_reporting) are
    merged like group_reporting does (percentiles from json+ histograms).

    Results of several hosts (fio servers: a study over --server, or one
    client's output of several servers) are never pooled: by default table
    and report give a column per target and host, plot a line per target and
    host. A host is its address (HOST:PORT, or local) and is shown by its
    name where one is known (the server's hostname a study records, or the
    "<name>" of a client's output of one server), else by its address.

METRICS
    A catalogue metric of the results' scenario, by name ("throughput",
    "response time p95"): its expression on its job's entry, in its unit.
    expr:EXPRESSION: the same kind of expression (read.bw_bytes / 1e6).
    A generic name, optionally qualified by a direction, an operation or
    DIRECTION:OPERATION: iops, bw_mib, bw_mb, bw_kib, bw_bytes, io_mib, ios,
    runtime_s, usr_cpu, sys_cpu, cpu, ctx, {lat,clat,slat}_{mean,min,max,
    stddev,pNN}_{ns,us,ms,s} (clat_p95_ms, clat_p99.9_us, read.lat_mean_ms,
    sync.lat_p99_ms, write:create.clat_p99_ms, transaction.lat_mean_ms, stat.iops).
    Unqualified iops/bandwidth/CPU are the job's totals; an unqualified latency
    is the one direction with I/O. `fio-pack analyze metrics RESULTS` lists them.

COMMANDS
    Each command's --help (or fio-pack analyze help COMMAND) is its manual page.

FILES
    jobs/catalogue.json    scenarios and their metric expressions
    reference/figures.json published figures (reference/README.md)
    docs/analysis.md       this tool's documentation and benchmark

EXIT STATUS
    0 success; 1 compare found a regression (or a result missing from NEW);
    2 bad input: a file that is not fio JSON, truncated JSON, an empty
    directory, an unknown parameter or metric (the message names it).
"""
import argparse
import json
import re
import sys
from pathlib import Path

from fiopack import UserError, outputs
from fiopack.cli import pick_command
from fiopack.manpage import ManParser, sections
from fiopack.options import number
from fiopack.results import axes as fioaxes
from fiopack.results import hosts as fiohosts
from fiopack.results import plots
from fiopack.results import report as fioreport
from fiopack.results.data import AnalysisError, DEFAULT_FIGURES, Dataset, FIELDS, load, text_of
from fiopack.results.metrics import (COMBINE, SIMPLE, check_names, parse_where, select,
                                     split_dims)
from fiopack.results.tables import (column_decimals, csv_val, fmt_num, key_text, order,
                                    build_table, provenance, provenance_line, render_csv,
                                    render_html, render_markdown, rows_json, rows_table)
from fiopack.results.figures import load_figures
from fiopack.results.regress import (NOISE, compare, ignore_hint, key_label,
                                     parse_threshold, varying_keys)

PROG = "fio-pack analyze"


MANUAL = {}

MANUAL["rows"] = dict(description="""\
NAME
    fio-pack analyze rows - the normalised view of fio results, one row per run,
    host, job, direction and operation

SYNOPSIS
    fio-pack analyze rows RESULTS... [--format csv|json|jsonl] [-o FILE] [INPUT OPTIONS]

DESCRIPTION
    Prints every row of the normalised view: the run (study#NNNN for study
    runs, fio@TIMESTAMP-HASH for plain fio results), study, scenario, host,
    hostname, target, target_path, job, groupid, direction (total, read,
    write, trim, sync), op (the engines' operation classes, "" for the whole
    direction), repeat, clones (job entries merged), fio_version, timestamp,
    the device from the runner's metadata, the source file; then parameters
    (rw, bs, iodepth, numjobs, ioengine, direct, size, runtime, the sweep's
    parameters and every job option that differs between rows); then the
    figures: ios, io_bytes, runtime_ms, iops, bw_bytes, CPU (total rows),
    {lat,clat,slat}_{mean,min,max,stddev}_ns, _N and _pNN_ns percentiles,
    the catalogue metrics as m:NAME. JSON output has all job options in
    "params".
""", epilog="""\
EXAMPLES
    fio-pack analyze rows results/sysbench-rndrd-20240101T120000Z > rows.csv
    fio-pack analyze rows run1.json run2.json --format json --where direction=read

EXIT STATUS
    0 success; 2 bad input (the message names the file or parameter).
""")

MANUAL["metrics"] = dict(description="""\
NAME
    fio-pack analyze metrics - which metrics, parameters and fields results have

SYNOPSIS
    fio-pack analyze metrics RESULTS... [INPUT OPTIONS]

DESCRIPTION
    Lists the runs found (per study or file), the catalogue metrics of their
    scenarios with expressions and units, the directions and operations
    present (the qualifiers of generic metrics), the generic metric names,
    and every parameter with its values: what --rows, --cols, --x, --series,
    --where and --metric accept.
""", epilog="""\
EXAMPLES
    fio-pack analyze metrics results/sysbench-rndrd-20240101T120000Z

EXIT STATUS
    0 success; 2 bad input.
""")

MANUAL["table"] = dict(description="""\
NAME
    fio-pack analyze table - pivot tables of fio results with ratio columns and
    statistics over repeats

SYNOPSIS
    fio-pack analyze table RESULTS... --metric NAME [--metric NAME]... [--rows P[,P]]
                     [--cols P[,P]] [--baseline COLUMN] [--ratio auto|col/base|base/col]
                     [--cells auto|range|cv|columns]
                     [--stats auto|median,min,max,mean,stdev,cv,n]
                     [--combine sum|mean|min|max] [--format md|csv|html]
                     [--precision N] [-o FILE] [INPUT OPTIONS]

DESCRIPTION
    One table per --metric: a row per value of the --rows parameters, a column
    per value of the --cols parameters (default: target, and host when the
    results hold several hosts: a column per target and host, hosts shown by
    name), each cell the median over the runs that are repeats of one another,
    and with --baseline a ratio column per other column against the baseline
    column. This is the 002 article's shape:

        fio-pack analyze table results/sb --rows threads --cols target \\
            --metric throughput --metric "response time p95" --baseline raid10

    gives | threads | intel320 | raid10 | intel320/raid10 | for the
    throughput and | threads | intel320 | raid10 | raid10/intel320 | for
    the response time (--ratio auto: column/baseline when higher is better,
    baseline/column for times, so a ratio above 1 always favours the column).

    A cell only pools runs that differ in nothing but their repeat: runs
    that differ in a parameter or field not on the rows or columns (bs, host,
    job, ...) are refused with the parameter named. A run with several values
    for one cell (two jobs, two directions) is refused too, unless
    --combine says how to merge them or the metric is qualified (read.iops).
    With repeats, a Markdown or HTML cell holds the median and its spread:
    "412.35 (405.10–420.20)", the median and the range over the repeats
    (--cells range, the default), or "412.35 ±1.8%" (--cells cv); the title
    says "median (min–max) of 3 repeats", and "(n=2)" marks a cell with
    fewer. --cells columns, or --stats, gives a column per statistic
    instead; CSV always has one (median,min,max,cv,n by default).
    The line under the tables says how many of the runs found they used, and
    why the others were not ("3 of 9 runs (6 left out by --where ...)").
""", epilog="""\
EXAMPLES
    fio-pack analyze table results/sb --rows threads --metric throughput --baseline raid10
    fio-pack analyze table results/sb --rows threads --metric throughput --precision 0
    fio-pack analyze table results/sb --rows threads --metric throughput --cells columns
    fio-pack analyze table a.json b.json c.json --rows iodepth --cols target \\
        --metric read.iops --label /mnt/ssd=ssd --format html -o iops.html
    fio-pack analyze table results/pm --rows target --cols op --metric write.iops \\
        --where direction=write
    fio-pack analyze table results/3-servers --rows threads --cols host \\
        --metric throughput --baseline db1

EXIT STATUS
    0 success; 2 bad input or an impossible table (the message says why).
""")

MANUAL["plot"] = dict(description="""\
NAME
    fio-pack analyze plot - plots of fio results (PNG, SVG) that record what
    produced them

SYNOPSIS
    fio-pack analyze plot RESULTS... --metric NAME --x PARAM [--series P[,P]]
                    [--reference FIGURES [--map DEVICE=TARGET]... [--all-published]]
                    [--combine HOW] [--xscale auto|linear|log2] [--logx]
                    [--yscale auto|linear|log] [--logy] [--title TEXT]
                    -o FILE.png|FILE.svg [-o ...] [INPUT OPTIONS]
    fio-pack analyze plot RESULTS... --percentiles [--direction DIR] [--series P[,P]]
                    [--x-max PCT] -o FILE.png|FILE.svg [-o ...] [INPUT OPTIONS]

DESCRIPTION
    The first form plots a metric against any parameter (--x iodepth, bs,
    threads, ...) with one line per series (default: one per target, or per
    target and host when the results hold several hosts, named by host); each
    point is the median over repeats with a bar from the minimum to the
    maximum. A line's colour is its target's, its style its host's. With
    --reference the published values of the results' scenario are drawn as
    dotted lines with open markers, converted to the metric's unit: the
    devices mapped with --map (in the colour of their target), or every
    published device with --all-published.

    Axes: an x parameter whose values are all powers of two (threads,
    iodepth, numjobs: 1 2 4 8 ...) gets a log2 axis with a tick at each
    value, labelled 1 2 4 8; other whole numbers get whole-number ticks on a
    linear axis. A linear y axis starts at zero, for rates (IOPS, MiB/s,
    files/s, tx/s) and times alike, with plain numbers as labels. When the
    lines drawn span more than ~1.5 decades (an SSD's 0.5 ms beside a RAID's
    47 ms) the y axis is logarithmic instead, ticked 1 2 5 10 20 50 in plain
    numbers (--yscale chooses). SVG text stays text (labels can be searched,
    edited and read back).

    The second form draws latency percentile curves (x: percentile on a
    "nines" scale, y: completion latency in ms, logarithmic) from json+
    histograms (clat_ns.bins; lat_ns.bins for sync), the runs of a series
    pooled. Without json+ output it falls back to fio's percentile list and
    says so.

    Every output records what produced it: the command, inputs (with sha256),
    run count, fio versions, pack version, metric definition and filters go
    into the PNG text chunks ("fio-pack provenance" and Description) or the
    SVG metadata (dc:description), and into a sidecar FILE.json that also
    holds the plotted numbers.
""", epilog="""\
EXAMPLES
    fio-pack analyze plot results/qd --metric read.iops --x iodepth -o iops-qd.svg
    fio-pack analyze plot results/sb --metric throughput --x threads --xscale linear \\
        -o tp-linear.svg
    fio-pack analyze plot results/sb --metric throughput --x threads \\
        --reference reference/figures.json --map intel320=ssd -o sb.png
    fio-pack analyze plot lat+.json --percentiles --direction read -o lat.svg

EXIT STATUS
    0 success; 2 bad input (including matplotlib missing: the message names
    the Python running and how to install it there).
""")

MANUAL["report"] = dict(description="""\
NAME
    fio-pack analyze report - a study's results beside the published figures it
    reproduces

SYNOPSIS
    fio-pack analyze report RESULTS... [--reference FIGURES] [--map DEVICE=TARGET]...
                      [--cols P[,P]] [--pair METRIC=PUBLISHED_METRIC]... [--no-unmapped]
                      [--format md|csv|html] [--precision N] [-o FILE]
                      [INPUT OPTIONS]

DESCRIPTION
    For the results' scenario (one; choose with --where scenario=ID) and each
    of its catalogue metrics that a published figure pairs with, a table with
    a row per published sweep point (e.g. threads) and, for every --map,
    three columns: the measured median of TARGET, the published value of
    DEVICE converted to the metric's unit, and measured/published; then the
    published devices nobody is mapped to. The article's ratio columns
    (derived figures, e.g. Intel 320 / RAID10) follow with the same ratio
    measured between the mapped targets, and the article's summaries
    ("5-8x better throughput") with the measured range. Published results
    that exist only as charts are listed as such.

    With --cols (default: host, when the results hold several hosts) each
    mapped target has a measured column and a ratio column per value of
    those parameters or fields ("ssd, db1", "ssd, db2"), hosts shown by name.
    The "Measured:" line says how many of the runs found the report used and
    why the others were not: left out by --where, of a target no --map
    names, or without a value of the report's metrics.

    Catalogue metrics pair with published metrics of the same kind of unit
    (bandwidth, time, a rate with the same name) and, among several, the one
    whose name shares most words; --pair sets a pairing by hand.
""", epilog="""\
EXAMPLES
    fio-pack analyze report results/sysbench-rndrd-20240101T120000Z \\
        --map intel320=ssd --map raid10-8sas=raid
    fio-pack analyze report results/sb --map intel320=ssd --format html -o report.html
    fio-pack analyze report results/3-servers --map intel320=ssd --where hostname=db1

EXIT STATUS
    0 success; 2 bad input (no scenario, unknown device or target in --map).
""")

MANUAL["compare"] = dict(description="""\
NAME
    fio-pack analyze compare - regression check between two result sets

SYNOPSIS
    fio-pack analyze compare OLD NEW --threshold METRIC=LIMIT[%] [--threshold ...]
                       [--ignore NAME]... [--higher-is-better METRIC]...
                       [--lower-is-better METRIC]... [--format md|csv|json]
                       [-o FILE] [INPUT OPTIONS]

DESCRIPTION
    OLD and NEW are each a results directory or fio JSON file (a directory
    may hold many). Rows are aligned on what they measured: scenario, host,
    target, job, direction, operation and every workload parameter (job
    options other than paths and log names); repeats are pooled and their
    medians compared. For each --threshold the change NEW vs OLD is checked
    against LIMIT: "iops=5%" fails when the median IOPS fell by more than 5 %,
    "clat_p99_ms=10%" when the p99 latency rose by more than 10 %,
    "clat_p99_ms=0.5" when it rose by more than 0.5 ms. Whether higher or
    lower is better follows the metric's unit (times and CPU: lower), unless
    --higher-is-better/--lower-is-better say otherwise. A change past the
    limit whose new median lies within the old repeats' own min-max is
    marked "within old spread" and is not a failure: the old runs already
    varied that much. A measurement in OLD that NEW lacks is a failure too.

    Results go to standard output (or -o) as a table; one summary line goes
    to standard error.
""", epilog="""\
EXAMPLES
    fio-pack analyze compare results/baseline results/today --threshold iops=5% \\
        --threshold clat_p99_ms=10%
    fio-pack analyze compare old.json new.json --threshold read.bw_mib=3% --ignore host

EXIT STATUS
    0 no threshold exceeded; 1 a threshold exceeded or a measurement missing
    from NEW; 2 bad input.
""")


class Usage(AnalysisError):
    pass


class _Parser(ManParser):
    def error(self, message):
        raise Usage(f"{self.prog}: {message} (see {self.prog} --help)")


# what `fio-pack analyze --help` lists beside each command
SUMMARY = {"rows": "the normalised view: a row per run, host, job, direction, op",
           "metrics": "which metrics, parameters and fields results have",
           "table": "pivot tables with ratio columns and statistics over repeats",
           "plot": "plots (PNG, SVG) that record what produced them",
           "report": "results beside the published figures they reproduce",
           "compare": "regression check between two result sets"}

OUTPUT_HELP = ("write there instead of standard output (a file is\n"
               "replaced whole; a device or FIFO written in place;\n"
               "a symlink followed).")

# per command: (its --format values, their explanation)
FORMATS = {"rows": ("csv|json|jsonl", "default csv (or from -o's extension)."),
           "table": ("FMT", "md (default), csv (full precision) or html (one\n"
                            "self-contained file with its provenance)."),
           "report": ("FMT", "md (default), csv (long form) or html."),
           "compare": ("FMT", "md (default), csv or json.")}


def _add_input_options(ap, cmd):
    """The options every command shares, in a group of their own."""
    g = ap.add_argument_group("INPUT OPTIONS")
    g.add_argument("--where", action="append", default=[], metavar="NAME=V[,V]", help="""\
keep rows whose field or parameter NAME is one of the
values (NAME!=V: is none of them). Repeatable.
Fields: run study scenario host hostname target
target_path job groupid direction op repeat clones
fio_version device_model; parameters: the sweep's
(threads) and every job option (bs, iodepth, ...).
The "All clients" aggregate of client/server runs is
left out unless a --where names job or host.""")
    g.add_argument("--label", action="append", default=[], metavar="OLD=NEW", help="""\
call target OLD (a study label or a plain result's
directory/filename) NEW. Repeatable.""")
    g.add_argument("--scenario", metavar="ID", help="""\
the catalogue scenario of plain fio results
(default: inferred).""")
    g.add_argument("--catalogue", metavar="FILE", help="default jobs/catalogue.json.")
    g.add_argument("--include-failed", action="store_true",
                   help="keep failed study runs and jobs that report an error.")
    g.add_argument("--quiet", action="store_true",
                   help="no notes on stderr about what was left out.")


def _add_table_options(ap):
    ap.add_argument("--rows", metavar="P[,P]", help="""\
parameters or fields for the rows (default: the
study's sweep parameters, else none).""")
    ap.add_argument("--cols", metavar="P[,P]", help="""\
parameters or fields for the columns (default target;
target,host when the results hold several hosts).""")
    ap.add_argument("--baseline", metavar="COLUMN", help="""\
the column the ratio columns divide by (its value, or
values joined by commas for several --cols; a host
by its name or its address).""")
    ap.add_argument("--ratio", default="auto", choices=("auto", "col/base", "base/col"),
                    metavar="MODE", help="auto (default), col/base or base/col.")
    ap.add_argument("--cells", default="auto", choices=("auto", "range", "cv", "columns"),
                    metavar="FORM", help="""\
with repeats, what a cell of md and html holds:
range (default: "median (min–max)"), cv ("median
±CV%%") or columns (a column per --stats statistic,
the default when --stats is given, and CSV's form).""")
    ap.add_argument("--stats", default="auto", metavar="LIST", help="""\
statistics per column: median, mean, min, max, stdev,
cv (coefficient of variation, sample stdev / mean),
n. Default auto: median alone when every cell has one
run, else median,min,max,cv,n.""")


def _add_plot_options(ap):
    ap.add_argument("--x", metavar="PARAM", help="""\
parameter or field on the x axis. Numbers are
placed by value, sizes (bs) and text in order.""")
    ap.add_argument("--series", metavar="P[,P]", help="""\
one line per value of these (default target; and
host with several hosts). Hosts are shown by name.""")
    ap.add_argument("--reference", metavar="FILE", help="""\
published figures (reference/figures.json); the
metric must be a catalogue metric of the scenario.""")
    ap.add_argument("--map", action="append", default=[], metavar="DEVICE=TARGET", help="""\
draw published DEVICE (device_id or name) with
measured TARGET's colour. Repeatable.""")
    ap.add_argument("--all-published", action="store_true",
                    help="draw every published device of the metric.")
    ap.add_argument("--percentiles", action="store_true",
                    help="latency percentile curves instead.")
    ap.add_argument("--direction", choices=("read", "write", "trim", "sync"), metavar="DIR",
                    help="""\
read, write, trim or sync for --percentiles
(default: the one direction with I/O).""")
    ap.add_argument("--x-max", type=number(float, above=0, high=100), default=99.99, metavar="PCT",
                    help="last percentile drawn (default 99.99).")
    ap.add_argument("--xscale", choices=fioaxes.XSCALES, default="auto", metavar="SCALE",
                    help="""\
auto (default: log2 when every x value is a power
of two, else linear), linear or log2; ticks are
labelled as numbers (1 2 4 8) either way.""")
    ap.add_argument("--logx", action="store_true", help="--xscale log2.")
    ap.add_argument("--yscale", choices=fioaxes.YSCALES, default="auto", metavar="SCALE",
                    help="""\
auto (default: log when every value is positive and
they span more than ~1.5 decades, else linear from
zero), linear or log; log ticks are 1 2 5 10 20 50.""")
    ap.add_argument("--logy", action="store_true", help="--yscale log.")
    ap.add_argument("--title", metavar="TEXT",
                    help="the title (default: scenario and metric).")


def _add_report_options(ap):
    ap.add_argument("--cols", metavar="P[,P]", help="""\
split each mapped target's columns by these
parameters or fields (default: host with several
hosts, else none).""")
    ap.add_argument("--reference", default=str(DEFAULT_FIGURES), metavar="FILE",
                    help="default reference/figures.json.")
    ap.add_argument("--map", action="append", default=[], metavar="DEVICE=TARGET", help="""\
published device (its device_id, e.g. intel320, or
its name) and the measured target label standing in
for it; the two may be given in either order.
Repeatable.""")
    ap.add_argument("--pair", action="append", default=[], metavar="METRIC=PUBLISHED",
                    help="pair catalogue METRIC with the published metric.")
    ap.add_argument("--no-unmapped", action="store_true",
                    help="leave out published devices that no target maps to.")


def _add_compare_options(ap):
    ap.add_argument("--threshold", action="append", default=[], metavar="METRIC=LIMIT[%]",
                    help="repeatable; METRIC as for table.")
    ap.add_argument("--ignore", action="append", default=[], metavar="NAME", help="""\
leave a field or parameter out of the alignment key
(e.g. host when NEW ran on another machine, or a
parameter that changed on purpose). Repeatable.""")
    ap.add_argument("--allow-missing", action="store_true",
                    help="measurements missing from NEW are not a failure.")
    ap.add_argument("--higher-is-better", action="append", default=[], metavar="METRIC",
                    help="override the sense: higher values of METRIC are better.")
    ap.add_argument("--lower-is-better", action="append", default=[], metavar="METRIC",
                    help="override the sense: lower values of METRIC are better.")


def _add_command_options(ap, cmd):
    if cmd in ("table", "plot"):
        ap.add_argument("--metric", action="append", default=[], metavar="NAME", help=(
            "catalogue metric name, expr:EXPRESSION or generic\n"
            "name (see fio-pack analyze --help, METRICS). Repeatable:\n"
            "one table each." if cmd == "table" else
            "the y metric (see fio-pack analyze --help, METRICS)."))
    if cmd == "table":
        _add_table_options(ap)
    if cmd == "plot":
        _add_plot_options(ap)
    if cmd == "report":
        _add_report_options(ap)
    if cmd == "compare":
        _add_compare_options(ap)
    if cmd in ("table", "plot"):
        ap.add_argument("--combine", choices=sorted(COMBINE), metavar="HOW", help=(
            "merge several values of one run in one cell: sum,\nmean, min or max."
            if cmd == "table" else "as for table."))
    if cmd in FORMATS:
        ap.add_argument("--format", metavar=FORMATS[cmd][0], help=FORMATS[cmd][1])
    if cmd in ("table", "report"):
        ap.add_argument("--precision", type=number(int, low=0, high=15), default=2, metavar="N", help=(
            "decimals in md and html (default 2)." if cmd == "table"
            else "decimals (default 2)."))
    if cmd != "metrics":
        ap.add_argument("-o", "--output", action="append", default=[], metavar="FILE", help=(
            ".png or .svg; repeatable (the same plot in each;\n"
            "FILE.json beside each says what made it)." if cmd == "plot"
            else OUTPUT_HELP))


def parser(cmd=None) -> argparse.ArgumentParser:
    """`fio-pack analyze`'s parser, its manual the --help; with @cmd, that
    command's."""
    top = _Parser(prog=PROG, description=sections(__doc__, "NAME", "SYNOPSIS", "DESCRIPTION",
                                                  "METRICS") + _input_options_page(),
                  epilog=sections(__doc__, "FILES", "EXIT STATUS"))
    sub = top.add_subparsers(dest="command", metavar="COMMAND", title="COMMANDS",
                             help="one of the commands below",
                             description="Each command's --help (or fio-pack analyze help "
                                         "COMMAND) is its manual page.")
    subs = {}
    for name, summary in SUMMARY.items():
        ap = subs[name] = sub.add_parser(name, prog=f"{PROG} {name}", help=summary,
                                         **MANUAL[name])
        if name == "compare":
            ap.add_argument("old", metavar="OLD", help="the results before: a results directory\n"
                            "or fio JSON file (a directory may hold many)")
            ap.add_argument("new", metavar="NEW", help="the results after, the same way")
        else:
            ap.add_argument("results", nargs="*", metavar="RESULTS", help="""\
study results directories, fio JSON/json+ files, or
directories holding them (searched by content).""")
        _add_command_options(ap, name)
        _add_input_options(ap, name)
    return subs[cmd] if cmd else top


def _input_options_page() -> str:
    """The INPUT OPTIONS of every command, for the tool's own page: the
    rows command's, as its parser explains them."""
    ap = _Parser(prog=PROG, add_help=False)
    _add_input_options(ap, "rows")
    fmt = ap._get_formatter()
    for g in ap._action_groups:
        if g.title == "INPUT OPTIONS":
            fmt.start_section("INPUT OPTIONS (every command)")
            fmt.add_arguments(g._group_actions)
            fmt.end_section()
    return "\n" + re.sub(r"^(INPUT OPTIONS \(every command\)):$", r"\1",
                         fmt.format_help(), flags=re.M)


def note(a, msg):
    if not getattr(a, "quiet", False):
        print(f"{PROG}: note: {msg}", file=sys.stderr)


def parse_labels(items) -> dict:
    out = {}
    for it in items:
        old, sep, new = it.partition("=")
        if not sep or not old or not new:
            raise AnalysisError(f"--label {it!r}: expected OLD=NEW")
        out[old] = new
    return out


def load_inputs(a, paths, exprs=(), keep_bins=False) -> Dataset:
    if not paths:
        raise Usage(f"{PROG}: no RESULTS given (see {PROG} --help)")
    return load(paths, catalogue=a.catalogue, scenario=a.scenario,
                   include_failed=a.include_failed, labels=parse_labels(a.label),
                   exprs=exprs, keep_bins=keep_bins, warn=lambda m: note(a, m))


def exprs_of(metrics) -> list:
    return [m[5:].strip() for m in metrics if m.strip().startswith("expr:")]


def out_format(a, default, allowed) -> str:
    fmt = a.format
    if not fmt and a.output:
        ext = Path(a.output[0]).suffix.lower().lstrip(".")
        fmt = {"markdown": "md", "htm": "html"}.get(ext, ext)
        if fmt not in allowed:
            fmt = None
    fmt = fmt or default
    if fmt not in allowed:
        raise Usage(f"--format {fmt}: one of {', '.join(allowed)}")
    return fmt


def emit(a, text: str) -> None:
    if a.output:
        for o in a.output:
            outputs.write_output(o, text, "-o")
    else:
        sys.stdout.write(text)


def default_rows(ds) -> list:
    names = []
    for run in ds.runs:
        for k in run.params or {}:
            if k not in names:
                names.append(k)
    return names


# ---------------------------------------------------------------------------
# rows, metrics
# ---------------------------------------------------------------------------

def cmd_rows(a) -> int:
    fmt = out_format(a, "csv", ("csv", "json", "jsonl"))
    ds = load_inputs(a, a.results)
    rows = select(ds.rows, parse_where(a.where))
    if fmt == "csv":
        import csv
        import io
        head, body = rows_table(ds, rows)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(head)
        for line in body:
            w.writerow(["" if v is None else csv_val(v) for v in line])
        emit(a, buf.getvalue())
    elif fmt == "json":
        emit(a, json.dumps({"provenance": provenance(ds, PROG.split() + ARGV),
                            "rows": rows_json(rows)}, indent=1, default=str) + "\n")
    else:
        emit(a, "".join(json.dumps(r, default=str) + "\n" for r in rows_json(rows)))
    return 0


def cmd_metrics(a) -> int:
    ds = load_inputs(a, a.results)
    rows = select(ds.rows, parse_where(a.where))
    p = print
    p("Inputs:")
    for i in ds.inputs:
        p(f"  {i['path']}: {i['kind']}" + (f" {i['study']}" if i.get("study") else "")
          + f", {i['runs']} run(s)")
    p(f"Runs: {len(ds.runs)}; fio: {', '.join(ds.fio_versions()) or '?'}")
    for sid, sc in sorted(ds.scenarios.items()):
        p(f"\nCatalogue metrics of {sid}:")
        for m in sc.get("metrics") or []:
            p(f"  {m['name']!r:28} {m.get('unit', ''):8} {m['expr']}"
              + (f"  (job {m['job']})" if m.get("job") else ""))
    quals = sorted({r["direction"] + (":" + r["op"] if r["op"] else "") for r in rows})
    p("\nDirections and operations (qualifiers of generic metrics): " + ", ".join(quals))
    names = sorted(SIMPLE) + ["{lat,clat,slat}_{mean,min,max,stddev,pNN}_{ns,us,ms,s}"]
    p("Generic metric names: " + ", ".join(names))
    pct = sorted({k.split("_")[1] for r in rows for k in r if re.match(r"c?lat_p", k)},
                 key=lambda s: float(s[1:]))
    if pct:
        p("Percentiles present: " + ", ".join(pct))
    p("\nParameters (values):")
    for n in ds.param_names(rows):
        vals = order({r["params"].get(n) for r in rows if n in r["params"]})
        shown = ", ".join(text_of(v)[:40] for v in vals[:8])
        p(f"  {n}: {shown}" + (f" ... ({len(vals)} values)" if len(vals) > 8 else ""))
    p("\nFields: " + ", ".join(FIELDS))
    for f in ("target", "host", "job"):
        vals = order([r.get(f) for r in rows])
        p(f"  {f}: " + ", ".join(text_of(v) for v in vals[:12]))
    return 0


# ---------------------------------------------------------------------------
# table
# ---------------------------------------------------------------------------

def cmd_table(a) -> int:
    if not a.metric:
        raise Usage(f"{PROG} table: give at least one --metric (see {PROG} metrics RESULTS)")
    fmt = out_format(a, "md", ("md", "csv", "html"))
    cells = a.cells
    if cells == "auto":
        cells = "columns" if fmt == "csv" or a.stats != "auto" else "range"
    elif cells != "columns" and (fmt == "csv" or a.stats != "auto"):
        raise Usage(f"--cells {cells} puts the spread in the median's cell, for md and "
                    f"html; " + ("CSV keeps one column per statistic (--stats)"
                                 if fmt == "csv" else "--stats chooses columns: give one"))
    ds = load_inputs(a, a.results, exprs=exprs_of(a.metric))
    rows_d = split_dims(a.rows) if a.rows is not None else default_rows(ds)
    where = parse_where(a.where)
    sel = select(ds.rows, where)
    names = fiohosts.host_names(sel)
    cols_d = split_dims(a.cols) if a.cols is not None else \
        fiohosts.default_dims(sel, ["target"], rows_d)
    baseline = fiohosts.baseline_address(a.baseline, cols_d, names)
    # a refused --baseline lists the columns as the table shows them
    shown = (a.baseline, lambda ck: key_text(fiohosts.show(cols_d, ck, names)))
    tables = [build_table(ds, m, rows_d, cols_d, where, baseline, a.ratio, a.stats,
                          a.combine, shown) for m in a.metric]
    for t in tables:
        fiohosts.relabel_table(t, names)
        t.form = cells
    runs = set().union(*(t.runs for t in tables))
    acc = fiohosts.runs_used(ds, runs, where, a.where, what=", ".join(a.metric))
    prov = provenance(ds, PROG.split() + ARGV, {"runs_in_tables": len(runs),
                                                     "runs_used": acc,
                                                     "runs_text": fiohosts.runs_text(acc)})
    if fmt == "md":
        emit(a, render_markdown(tables, provenance_line(prov), a.precision))
    elif fmt == "csv":
        emit(a, render_csv(tables))
    else:
        title = ", ".join(t.metric.text for t in tables)
        sc = sorted({r.scenario for r in ds.runs if r.scenario})
        emit(a, render_html(tables, (" / ".join(sc) + ": " if sc else "") + title, prov,
                               a.precision))
    return 0


# ---------------------------------------------------------------------------
# plot
# ---------------------------------------------------------------------------

def cmd_plot(a) -> int:
    if not a.output:
        raise Usage(f"{PROG} plot: give -o FILE.png or -o FILE.svg")
    for o in a.output:
        if Path(o).suffix.lower() not in (".png", ".svg"):
            raise Usage(f"-o {o}: plot writes .png or .svg files")
    plt, fig, data, desc, ds = make_plot(a)
    prov = provenance(ds, PROG.split() + ARGV, {"plot": desc,
                                                     "outputs": [str(o) for o in a.output]})
    plots.save_plot(fig, a.output, prov, data)
    plt.close(fig)
    return 0


def make_plot(a):
    """(pyplot, the figure, its data, its description, the data set) of the
    plot command @a: what cmd_plot saves, and what the tests look into."""
    plt = plots.pyplot()
    if a.percentiles:
        if a.metric or a.x:
            raise Usage(f"{PROG} plot --percentiles draws latency percentiles: "
                        f"no --metric or --x")
        ds = load_inputs(a, a.results, keep_bins=True)
        fig, data, desc = plots.plot_percentiles(plt, ds, a)
    else:
        if len(a.metric) != 1 or not a.x:
            raise Usage(f"{PROG} plot: give one --metric and --x PARAM (or --percentiles)")
        ds = load_inputs(a, a.results, exprs=exprs_of(a.metric))
        fig, data, desc = plots.plot_metric(plt, ds, a)
    return plt, fig, data, desc, ds


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------

def cmd_report(a) -> int:
    fmt = out_format(a, "md", ("md", "csv", "html"))
    ds = load_inputs(a, a.results)
    doc = load_figures(a.reference)
    pairs = {}
    for p in a.pair:
        cm, sep, fm = p.partition("=")
        if not sep:
            raise Usage(f"--pair {p!r}: expected METRIC=PUBLISHED_METRIC")
        pairs[fm.strip()] = cm.strip()
    where = parse_where(a.where)
    sel = select(ds.rows, where)
    names = fiohosts.host_names(sel)
    cols_d = split_dims(a.cols) if a.cols is not None else fiohosts.default_dims(sel, [])
    rep = fioreport.reproduction(ds, doc, a.map, pairs, where, a.precision,
                                 all_published=not a.no_unmapped, cols=cols_d, names=names)
    acc = fiohosts.runs_used(ds, rep["runs_used"], where, a.where,
                             targets=[t for _, t in rep["mapping"]],
                             what="the report's metrics")
    prov = provenance(ds, PROG.split() + ARGV, {"reference": doc["_path"],
                                                     "reference_sha256": doc["_sha256"],
                                                     "runs_used": acc,
                                                     "runs_text": fiohosts.runs_text(acc)})
    if fmt == "md":
        emit(a, fioreport.render_report_md(rep, prov, a.precision))
    elif fmt == "csv":
        emit(a, fioreport.render_report_csv(rep))
    else:
        emit(a, fioreport.render_report_html(rep, prov, a.precision))
    return 0


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------

def cmd_compare(a) -> int:
    if not a.threshold:
        raise Usage(f"{PROG} compare: give at least one --threshold METRIC=LIMIT[%] "
                    f"(e.g. --threshold iops=5%)")
    fmt = out_format(a, "md", ("md", "csv", "json"))
    ths = [parse_threshold(t) for t in a.threshold]
    exprs = exprs_of([t for t, _, _ in ths])
    old = load_inputs(a, [a.old], exprs=exprs)
    new = load_inputs(a, [a.new], exprs=exprs)
    sense = {m: "higher" for m in a.higher_is_better}
    sense.update({m: "lower" for m in a.lower_is_better})
    for ig in a.ignore:
        check_names(old.rows + new.rows, [ig], "--ignore")
    res = compare(old, new, ths, parse_where(a.where), a.ignore, sense)
    varying = varying_keys(res, prefer={k for ds in (old, new) for run in ds.runs
                                        for k in run.params or {}})
    lines = []
    for r in res:
        lim = (f"{'+' if r['lower_is_better'] else '-'}{text_of(r['limit'])}"
               + ("%" if r["relative"] else f" {r['unit']}"))
        ch = r["change"]
        chs = "-" if ch is None else (f"{ch * 100:+.1f}%" if r["relative"]
                                      else f"{ch:+.4g} {r['unit']}")
        o, n = r["old"], r["new"]
        lines.append({"metric": r["metric"], "unit": r["unit"], "key": key_label(r["key"], varying),
                      "old": o.median if o else None, "old_min": o.min if o else None,
                      "old_max": o.max if o else None, "old_n": o.n if o else 0,
                      "old_cv": o.cv if o else None,
                      "new": n.median if n else None, "new_min": n.min if n else None,
                      "new_max": n.max if n else None, "new_n": n.n if n else 0,
                      "new_cv": n.cv if n else None,
                      "change": ch, "change_text": chs, "limit": lim, "verdict": r["verdict"]})
    bad = [l for l in lines if l["verdict"] == "REGRESSION"
           or (l["verdict"] == "missing in new" and not a.allow_missing)]
    if fmt == "json":
        emit(a, json.dumps({"comparisons": lines, "failed": len(bad)}, indent=1) + "\n")
    elif fmt == "csv":
        import csv
        import io
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(lines[0]) if lines else ["metric"],
                           lineterminator="\n")
        w.writeheader()
        for l in lines:
            w.writerow({k: "" if v is None else csv_val(v) for k, v in l.items()})
        emit(a, buf.getvalue())
    else:
        # one number of decimals per column (old, new), as tables have
        dec = {side: column_decimals([float(l[side + k]) for l in lines
                                      for k in ("", "_min", "_max")
                                      if l[side + k] is not None])
               for side in ("old", "new")}

        def cell(l, side):
            """"11733 (10667–12800, n=2)": the median, and the range of the
            repeats a reader judges a change against."""
            v, n = l[side], l[side + "_n"]

            def num(x):
                return fmt_num(float(x), decimals=dec[side])
            if v is None:
                return "-"
            if n == 1:
                return num(v)
            return f"{num(v)} ({num(l[side + '_min'])}–{num(l[side + '_max'])}, n={n})"
        out = ["| metric | measurement | old (min–max) | new (min–max) | change | limit "
               "| verdict |", "|---|---|---:|---:|---:|---:|---|"]
        for l in lines:
            out.append(f"| {l['metric']} | {l['key']} | {cell(l, 'old')} | {cell(l, 'new')} "
                       f"| {l['change_text']} | {l['limit']} | {l['verdict']} |")
        emit(a, "\n".join(out) + "\n")
    reg = sum(1 for l in lines if l["verdict"] == "REGRESSION")
    miss = sum(1 for l in lines if l["verdict"] == "missing in new")
    noise = sum(1 for l in lines if l["verdict"] == NOISE)
    summary = f"{PROG} compare: {len(lines)} comparisons, {reg} regression(s), {miss} missing in NEW"
    if noise:
        summary += f", {noise} past the limit but within the old runs' spread"
    hint = ignore_hint(res)
    if hint:
        summary += (f"; OLD and NEW differ in {', '.join(hint)} alone: "
                    + " ".join(f"--ignore {n}" for n in hint) + " compares them")
    if bad:
        first = bad[0]
        summary += f"; first: {first['metric']} {first['key']}: {first['verdict']}" + (
            f" ({first['change_text']}, limit {first['limit']})"
            if first["change"] is not None else "")
    print(summary, file=sys.stderr)
    return 1 if bad else 0


# ---------------------------------------------------------------------------

COMMANDS = {"rows": cmd_rows, "metrics": cmd_metrics, "table": cmd_table, "plot": cmd_plot,
            "report": cmd_report, "compare": cmd_compare}


# the command line as given (after the command name), for provenance
ARGV: list = []


def main(argv=None) -> int:
    global ARGV
    argv = ARGV = list(sys.argv[1:] if argv is None else argv)
    # the usage without a command goes to stdout, as it always has here
    got = pick_command(argv, parser().format_help(), PROG, COMMANDS, bare=sys.stdout,
                       suggest=True)
    if isinstance(got, int):
        return got
    cmd, rest = got
    try:
        a = parser(cmd).parse_args(rest)
        for o in getattr(a, "output", None) or []:
            # before the results are read: a refusal costs nothing yet
            outputs.check(o, "-o")
            if cmd == "plot":
                outputs.check(o + ".json", "-o")
        return COMMANDS[cmd](a)
    except SystemExit as e:     # --help printed the manual
        return e.code
    except UserError as e:      # AnalysisError, an output refused
        msg = str(e)
        print(msg if msg.startswith(PROG) else f"{PROG} {cmd}: {msg}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0

