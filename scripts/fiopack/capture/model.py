"""What the converter knows of the capture (convert.py): the trace's
files, the files and directories of the capture behind them, the open
file descriptions behind the descriptors, and the counts of its notes."""
from typing import Optional


class TFile:
    """A file of the trace: one path, one declaration; successive files of
    the same name (a journal created and removed per transaction) share it."""
    __slots__ = ("path", "existed", "size0", "extent", "is_dir", "owner", "id", "ops", "bad",
                 "order", "direct", "buffered", "shared", "temp")

    def __init__(self, path, existed, size0, is_dir, order):
        self.path = path
        self.existed = existed      # exists before the first record
        self.size0 = size0          # its size then (None if it does not exist)
        self.extent = 0
        self.is_dir = is_dir
        self.owner = None           # the object now using this name
        self.id = None              # assigned at its first record
        self.ops = set()
        self.bad = None             # why the format cannot hold its path
        self.order = order
        self.direct = 0             # reads and writes through O_DIRECT descriptors
        self.buffered = 0           # and through others
        self.shared = False         # held by more than one object (a name made anew)
        self.temp = False           # a file without a name (O_TMPFILE): role temp


class Obj:
    """A file or directory of the capture (follows renames)."""
    __slots__ = ("path", "tf", "dead", "cur", "bumpable", "is_dir", "why", "unnamed")

    def __init__(self, path):
        self.path = path            # current absolute path
        self.tf: Optional[TFile] = None
        self.dead = False           # unlinked (may still be open)
        self.cur = 0                # size as far as the trace tells
        self.bumpable = False       # existed before the capture and never shrunk
        self.is_dir = False
        self.why = None             # why it is not in the trace (outside, ...)
        self.unnamed = False        # made by open(DIR, O_TMPFILE): no name ever


class Ofd:
    """An open file description: shared by dup'ed and inherited descriptors."""
    __slots__ = ("obj", "pos", "append", "direct")

    def __init__(self, obj, pos, append=False, direct=False):
        self.obj = obj              # None: not a regular file (socket, pipe, device)
        self.pos = pos              # None: unknown (opened before the capture)
        self.append = append
        self.direct = direct        # opened with O_DIRECT (or set by fcntl F_SETFL)


class Counts(dict):
    def add(self, key, n=1):
        self[key] = self.get(key, 0) + n

