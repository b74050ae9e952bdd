"""fioaxes - the axes of fio-pack analyze's plots, as a storage engineer draws them.

Threads, queue depths and job counts are swept in powers of two (1, 2, 4, 8,
...): such an x axis is a log2 axis with a tick at each value, labelled 1 2 4
8, never 2^0 2^1 or 1.5. Other whole-number parameters get whole-number ticks
on a linear axis. A linear y axis starts at zero, for rates and times alike,
so that heights compare as ratios; its labels are plain numbers (no offset,
no 1e6 factor above the axis). Lines that span more than ~1.5 decades get a
log y axis ticked 1 2 5 10 20 50. See docs/analysis.md, Plots.
"""
import math

from fiopack.results.data import AnalysisError

XSCALES = ("auto", "linear", "log2")


def power_of_two(v) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        return False
    if not float(v).is_integer():
        return False
    n = int(v)
    return n & (n - 1) == 0


def plain(v) -> str:
    """1.0 -> "1", 2.5 -> "2.5", 16384 -> "16384": a tick label."""
    return str(int(v)) if float(v).is_integer() else format(v, "g")


def choose_xscale(values, scale="auto") -> str:
    """auto: log2 when there are two or more x values and all are powers of two."""
    if scale == "auto":
        vals = set(values)
        return "log2" if len(vals) > 1 and all(power_of_two(v) for v in vals) else "linear"
    return scale


def set_x_axis(ax, values, scale="auto", name="x") -> str:
    """Scale, ticks and tick labels of a numeric x axis; returns the scale used.

    values: every x value drawn (measured and published)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator
    vals = sorted(set(values))
    scale = choose_xscale(vals, scale)
    whole = all(float(v).is_integer() for v in vals)
    if scale == "log2":
        if any(v <= 0 for v in vals):
            raise AnalysisError(f"--xscale log2: {name} has values that are not positive "
                                f"({', '.join(plain(v) for v in vals if v <= 0)})")
        ax.set_xscale("log", base=2)
        if all(power_of_two(v) for v in vals):
            ticks = vals
        else:
            lo, hi = math.floor(math.log2(vals[0])), math.ceil(math.log2(vals[-1]))
            ticks = [2.0 ** k for k in range(lo, hi + 1)]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
    elif whole:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: plain(v)))
    return scale


YSCALES = ("auto", "linear", "log")

# a linear axis flattens the lower of two lines that differ by more than this
# (about 1.5 decades: an SSD's 0.5 ms beside a RAID's 47 ms); a log axis
# shows both
LOG_SPAN = 10 ** 1.5


def choose_yscale(values, scale="auto") -> str:
    """auto: log when every value is positive and they span more than ~1.5
    decades, else linear."""
    if scale != "auto":
        return scale
    vals = [v for v in values if v is not None]
    if vals and min(vals) > 0 and max(vals) / min(vals) > LOG_SPAN:
        return "log"
    return "linear"


def set_log_y(ax, values) -> None:
    """A log10 y axis ticked at 1, 2 and 5 of each decade (1 and 10 alone over
    more than five decades), labelled as plain numbers: 0.2 0.5 1 2 5 10,
    never 10^0 or 2x10^-1."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    vals = [v for v in values if v is not None and v > 0]
    decades = math.log10(max(vals) / min(vals)) if vals else 0
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 5
                                          else (1.0,)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: plain(float(f"{v:.3g}"))))
    ax.yaxis.set_minor_formatter(NullFormatter())


def set_y_axis(ax, values, scale="auto") -> str:
    """A linear y axis from zero (when nothing drawn is negative), plain labels,
    or a log one (set_log_y) when asked or when the values span decades;
    returns the scale used."""
    scale = choose_yscale(values, scale)
    if scale == "log":
        if any(v <= 0 for v in values if v is not None):
            raise AnalysisError("--yscale log: the plot has values that are not positive")
        set_log_y(ax, values)
        return scale
    if values and min(values) >= 0:
        top = max(ax.get_ylim()[1], max(values) * 1.05)     # room above the highest point
        ax.set_ylim(0, top if top > 0 else 1)
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    return scale
