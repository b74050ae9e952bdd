"""What file system a path is on, from /proc/self/mountinfo: the analysis
and the summary judge a figure by it (tmpfs holds its files in the page
cache, so nothing read there is ever cold)."""
import os
from pathlib import Path

from fiopack.device.state import unescape


def fs_type(path) -> str:
    """The type of the file system @path is on ("ext4", "tmpfs"), the
    nearest existing parent's for a path not yet (or no longer) there;
    None where it cannot be known (no mountinfo: another machine's path)."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    real = os.path.realpath(p)
    best, best_len = None, -1
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 5 or " - " not in line:
            continue
        mp = unescape(fields[4])
        inside = real == mp or real.startswith(mp.rstrip("/") + "/")
        # a later mount over the same point hides the earlier: >=
        if inside and len(mp) >= best_len:
            best, best_len = line.split(" - ", 1)[1].split()[0], len(mp)
    return best
