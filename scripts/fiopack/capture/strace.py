"""strace's text: one line of `strace -f -ttt -yy -T` output split into its
call, arguments and result; the summary table of `strace -c`."""
import re
from pathlib import Path
from typing import List, Optional


# ---------------------------------------------------------------------------
# strace's text
# ---------------------------------------------------------------------------

class LineError(Exception):
    """A malformed strace line: the converter adds the file and line."""


_PREFIX = re.compile(r"(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?"
                     r"(?:(\d+)\.(\d{6})\s+|(\d\d):(\d\d):(\d\d)\.(\d{6})\s+)?")
_DURATION = re.compile(r"<(\d+)\.(\d{1,9})>\s*$")     # strace -T, iocap: the call's duration
_RESUMED = re.compile(r"<\.\.\. ([A-Za-z0-9_]+) resumed>\s?")
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")
_SPECIAL = re.compile(r'["(){}\[\]<,]')
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?')
_UNFINISHED = " <unfinished ...>"
_ESC = re.compile(r"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "\a", "b": "\b",
            "e": "\x1b"}


def unescape(s: str) -> str:
    """strace's C-style escapes (\\n, \\xHH, \\NNN octal, \\\\, \\") as latin-1 text."""
    def rep(m):
        e = m.group(1)
        if e[0] == "x" and len(e) == 3:
            return chr(int(e[1:], 16))
        if e[0] in "01234567":
            return chr(int(e, 8) & 0xff)
        return _ESCAPES.get(e, e)
    return _ESC.sub(rep, s) if "\\" in s else s


def _skip_annotation(s: str, i: int) -> int:
    """S[i] is the '<' of an -y/-yy annotation: the index after its '>'.
    Paths escape '<' and '>'; a socket's "[123->456]" has a '>' after '-';
    devices nest one more: </dev/null<char 1:3>>."""
    depth = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "<":
            depth += 1
        elif c == ">" and s[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise LineError("an unterminated <...> annotation")


def split_args(s: str, i: int):
    """S[i:] follows a call's '(': its top-level arguments (text) and the
    index after the closing ')', or None for the index if the text ends first
    (an unfinished call)."""
    args: List[str] = []
    depth = 0
    start = i
    n = len(s)
    while True:
        m = _SPECIAL.search(s, i)
        if not m:
            tail = s[start:].strip()
            if tail:
                args.append(tail)
            return args, None
        j = m.start()
        c = s[j]
        if c == '"':
            q = _QUOTED.match(s, j)
            if not q:
                raise LineError("an unterminated string")
            i = q.end()
        elif c in "({[":
            depth += 1
            i = j + 1
        elif c in ")}]":
            if depth == 0:
                if c != ")":
                    raise LineError(f"unbalanced '{c}'")
                tail = s[start:j].strip()
                if tail or args:
                    args.append(tail)
                return args, j + 1
            depth -= 1
            i = j + 1
        elif c == "<":
            if j > 0 and (s[j - 1].isalnum() or s[j - 1] == "_"):
                i = _skip_annotation(s, j)
            else:
                i = j + 1
        else:  # ','
            if depth == 0:
                args.append(s[start:j].strip())
                start = j + 1
            i = j + 1
        if i > n:
            raise LineError("a line cut short")


_FD = re.compile(r"(-?\d+|AT_FDCWD)(<.*>)?(\(deleted\))?\Z", re.S)


class Fd:
    """A descriptor argument or result: number (or AT_FDCWD) and its -y path."""
    __slots__ = ("num", "kind", "path", "deleted")

    def __init__(self, num, kind, path, deleted):
        self.num = num          # int, or -100 for AT_FDCWD
        self.kind = kind        # None (no annotation), "path", "other" (socket, pipe, ...)
        self.path = path        # absolute path for kind "path"
        self.deleted = deleted


def parse_fd(text: str) -> Optional[Fd]:
    m = _FD.match(text)
    if not m:
        return None
    num = -100 if m.group(1) == "AT_FDCWD" else int(m.group(1))
    ann = m.group(2)
    if not ann:
        return Fd(num, None, None, False)
    inner = ann[1:-1]
    deleted = bool(m.group(3))
    if not inner.startswith("/"):
        return Fd(num, "other", inner, deleted)
    k = 0                    # the path ends at the first unescaped '<' (-yy device details)
    while True:
        k = inner.find("<", k)
        if k < 0 or inner[k - 1] != "\\":
            break
        k += 1
    path = unescape(inner if k < 0 else inner[:k])
    if path.endswith(" (deleted)"):       # older strace puts it inside
        path, deleted = path[:-10], True
    return Fd(num, "path", path, deleted)


def parse_str(text: str) -> Optional[str]:
    if len(text) >= 2 and text[0] == '"':
        end = text.rfind('"')
        if end > 0:
            return unescape(text[1:end])
    return None


def parse_int(text: str) -> Optional[int]:
    t = text.strip()
    try:
        if t.startswith(("0x", "-0x")):
            return int(t, 16)
        return int(t)
    except ValueError:
        return None


class Result:
    __slots__ = ("value", "fd", "error")

    def __init__(self, value, fd, error):
        self.value = value      # int, or None for '?'
        self.fd = fd            # Fd if the result carries an annotation
        self.error = error      # errno name when the call failed, "?" if unknown


_RET = re.compile(r"\s*=\s*(\?|-?\d+|0x[0-9a-fA-F]+)")
_ERRNO = re.compile(r"\s+([A-Z][A-Z0-9_]+)\b")


def parse_result(text: str) -> Result:
    """' = 5</path> <0.000010>', ' = -1 ENOENT (...)', ' = 0x2 (flags O_RDWR)', ' = ?'"""
    m = _RET.match(text)
    if not m:
        raise LineError(f"cannot read the call's result '{text.strip()[:40]}'")
    v = m.group(1)
    i = m.end()
    if v == "?":
        e = _ERRNO.match(text, i)
        return Result(None, None, e.group(1) if e else "?")
    value = int(v, 16) if v.startswith("0x") else int(v)
    if not -(1 << 63) <= value < (1 << 64):
        raise LineError(f"a result of {len(v)} digits: beyond what a system call returns")
    fd = None
    if i < len(text) and text[i] == "<":
        j = _skip_annotation(text, i)
        if text.startswith("(deleted)", j):
            j += 9
        fd = parse_fd(f"{value}{text[i:j]}")
        i = j
    err = None
    if value == -1:
        e = _ERRNO.match(text, i)
        err = e.group(1) if e else "?"
    return Result(value, fd, err)


# ---------------------------------------------------------------------------
# strace -c's summary
# ---------------------------------------------------------------------------

def summary_counts(path) -> dict:
    """The summary table `strace -c -o PATH` writes: {system call: calls}."""
    counts = {}
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        # % time, seconds, usecs/call, calls, [errors], syscall
        if len(parts) >= 5 and re.match(r"^[\d.]+$", parts[0]) and parts[-1] != "total":
            try:
                counts[parts[-1]] = int(parts[3])
            except ValueError:
                pass
    return counts
