"""The smallfile engine's tree as documented, computed apart from the
engine, and what is on disk: listings, snapshots that catch any change,
the engines' op-stat files."""
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from helpers.fio import MARKER


@dataclass
class Shape:
    nfiles: int
    fanout: int = 32
    depth: int = 2
    files_per_dir: int = 0
    maildir: bool = False
    files_per_leaf: int = field(init=False)
    nleaves: int = field(init=False)

    def __post_init__(self):
        if self.files_per_dir:
            need = -(-self.nfiles // self.files_per_dir)
            depth, leaves = 0, 1
            while leaves < need:
                leaves *= self.fanout
                depth += 1
            self.depth, self.nleaves = depth, leaves
            self.files_per_leaf = self.files_per_dir
        else:
            self.nleaves = self.fanout ** self.depth
            self.files_per_leaf = -(-self.nfiles // self.nleaves)

    @property
    def digit_width(self) -> int:
        return len(format(self.fanout - 1, "x"))

    def leaf_path(self, leaf: int) -> str:
        digits = []
        for _ in range(self.depth):
            digits.append(format(leaf % self.fanout, "0%dx" % self.digit_width))
            leaf //= self.fanout
        return "/".join(reversed(digits))

    def name(self, i: int) -> str:
        width = max(10, len(str(self.nfiles - 1)))
        return "f%0*d" % (width, i)

    def path(self, i: int) -> str:
        parts = [self.leaf_path(i // self.files_per_leaf)]
        if self.maildir:
            parts.append("new")
        parts.append(self.name(i))
        return "/".join(p for p in parts if p)

    def all_paths(self) -> list:
        return [self.path(i) for i in range(self.nfiles)]


FILE_RE = re.compile(r"^f\d{10,}$")


def marker_params(marker) -> str:
    """A smallfile marker's text without the inode of its directory
    (tree_dir_inode=: where the tree was laid out, not how), to compare the
    markers of two trees."""
    return "".join(l for l in Path(marker).read_text().splitlines(True)
                   if not l.startswith("tree_dir_inode="))


def tree_files(root) -> dict:
    """{relative path: size} of every regular file below root except the marker."""
    root = Path(root)
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for fn in filenames:
            p = Path(dirpath, fn)
            rel = p.relative_to(root).as_posix()
            if rel == MARKER:
                continue
            st = os.lstat(p)
            out[rel] = st.st_size
    return out


def snapshot(root, content=False) -> dict:
    """Full listing of root: {relpath: (kind, size, mtime_ns, ino[, sha])}. Catches any change."""
    import hashlib
    root = Path(root)
    out = {}
    if not root.exists():
        return {"<missing>": None}
    if not root.is_dir():
        st = os.lstat(root)
        return {".": ("file", st.st_size, st.st_mtime_ns, st.st_ino,
                      hashlib.sha1(root.read_bytes()).hexdigest())}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath, n)
            st = os.lstat(p)
            # a FIFO or device node is never read (a FIFO would block the test)
            kind = ("dir" if stat.S_ISDIR(st.st_mode) else "link" if stat.S_ISLNK(st.st_mode)
                    else "file" if stat.S_ISREG(st.st_mode) else f"special {st.st_mode:o}")
            entry = (kind, st.st_size if kind != "dir" else 0, st.st_mtime_ns, st.st_ino)
            if content and kind == "file":
                entry += (hashlib.sha1(p.read_bytes()).hexdigest(),)
            out[p.relative_to(root).as_posix()] = entry
    return out


def file_stats(root) -> dict:
    """{relpath: (ino, size, mtime_ns)} of the tree's files."""
    root = Path(root)
    return {rel: (os.lstat(root / rel).st_ino, os.lstat(root / rel).st_size,
                  os.lstat(root / rel).st_mtime_ns)
            for rel in tree_files(root)}


def read_opstats(path) -> list:
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
