"""What the commands' options share: the argparse types of numbers, lists
of numbers and sizes, and a parser whose errors are one line.

Python's int() and float() accept "nan", "inf", "-5" and "1e999"; an option
that takes what they return on trust runs with it (a capture for --duration
nan never ends, a negative count sizes nothing). Every numeric option of the
package is parsed by one of these types, which refuse what is not finite or
outside the range the option makes sense in, naming the value."""
import argparse
import math

from fiopack import UserError
from fiopack.units import parse_size


def _bounds(v, low, high, above, text):
    if above is not None and not v > above:
        raise argparse.ArgumentTypeError(f"{text!r}: must be more than {above}")
    if low is not None and v < low:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least {low}")
    if high is not None and v > high:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at most {high}")
    return v


def number(kind=int, low=None, high=None, above=None):
    """The type of an option taking one @kind (int or float) number: finite,
    and low <= it <= high, or above < it (each bound when given)."""
    def parse(text):
        try:
            v = kind(text)
        except (TypeError, ValueError):
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r}: not {what}")
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number")
        return _bounds(v, low, high, above, text)
    parse.__name__ = kind.__name__
    return parse


def number_list(kind=int, low=None, high=None):
    """The type of an option taking comma-separated numbers ("1,8,32"), each
    as number() checks it; empty items are skipped."""
    one = number(kind, low, high)

    def parse(text):
        return [one(x.strip()) for x in text.split(",") if x.strip()]
    parse.__name__ = "list"
    return parse


def size(low=1):
    """The type of a size option ("64k", "8m", "2g": units.parse_size), at
    least @low bytes."""
    def parse(text):
        try:
            v = parse_size(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: not a size (a number of bytes, "
                                             f"or with k, m or g)")
        return _bounds(v, low, None, None, text)
    parse.__name__ = "size"
    return parse


class Parser(argparse.ArgumentParser):
    """argparse's parser with one-line errors: a bad option raises
    UserError, which fio-pack prints after the command's name (argparse's
    own way is a usage block, then the message)."""

    def error(self, message):
        raise UserError(f"{message} (see {self.prog} --help)")
