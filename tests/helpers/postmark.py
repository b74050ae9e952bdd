"""What the postmark engine's tests share: PostMark's report read back,
the configurations run both by PostMark and by the engine (as PostMark
settings and as engine options), and the calls an strace log shows on
the benchmark's files."""
import re

from helpers.fio import PM_ENGINE


def postmark_report(stdout):
    """What postmark printed after its last progress message ("...Done"):
    the report, or nothing when it ran out of files."""
    i = stdout.rfind("Done\n")
    assert i >= 0, stdout
    return stdout[i + len("Done\n"):]


def verbose_counts(report):
    """A verbose report with its times and rates blanked out."""
    s = re.sub(r"\t\d+ seconds total", "\tT seconds total", report)
    s = re.sub(r"\t\d+ seconds of transactions", "\tT seconds of transactions", s)
    s = re.sub(r"\(\d+ per second\)", "(R per second)", s)
    s = re.sub(r"\([\d.]+ (megabytes|kilobytes|bytes) per second\)", "(R per second)", s)
    assert s.startswith("Time:\n") and "written (R per second)\n" in s, report
    return s


def terse_counts(report):
    """Counts back from a terse line: its rates times the intervals it
    printed (creations/deletions alone are left out: their intervals are
    not printed)."""
    f = [float(x) for x in report.split()]
    assert len(f) == 13, report
    el, tx = f[0], f[1]
    return {"created": round(f[3] * el), "created_mixed": round(f[5] * tx),
            "read": round(f[6] * tx), "appended": round(f[7] * tx),
            "deleted": round(f[8] * el), "deleted_mixed": round(f[10] * tx),
            "bytes_read": round(f[11] * el), "bytes_written": round(f[12] * el)}


# open flags left out when the engine's opens are compared with PostMark's
ENGINE_FLAGS = {"O_EXCL", "O_NOFOLLOW", "O_CLOEXEC", "O_LARGEFILE"}

# PostMark's settings where a configuration does not set them
DEFAULTS = {"size": (500, 10000), "number": 500, "transactions": 500, "seed": 42,
            "read": 512, "write": 512, "buffering": True, "bias_read": 5,
            "bias_create": 5, "subdirs": 0, "report": "verbose", "locations": [(0, 1)]}


def engine_args(cfg, dirs, report_file, **extra):
    c = dict(DEFAULTS, **cfg)
    args = ["--name=pm", f"--ioengine=external:{PM_ENGINE}",
            f"--pm_size_low={c['size'][0]}", f"--pm_size_high={c['size'][1]}",
            f"--pm_number={c['number']}", f"--pm_transactions={c['transactions']}",
            f"--pm_seed={c['seed']}", f"--pm_read_block={c['read']}",
            f"--pm_write_block={c['write']}", f"--pm_buffering={int(c['buffering'])}",
            f"--pm_bias_read={c['bias_read']}", f"--pm_bias_create={c['bias_create']}",
            f"--pm_subdirectories={c['subdirs']}", f"--pm_report={c['report']}",
            "--pm_location=" + ":".join(f"{dirs[d]}@{w}" for d, w in c["locations"]),
            f"--pm_report_file={report_file}"]
    args += [f"--{k}={v}" for k, v in extra.items()]
    return args


CONFIGS = {
    "defaults": {},
    "article_000": {"read": 4096, "write": 4096, "transactions": 1500,
                    "size": (500, 500000), "number": 300},
    "raw_small_blocks": {"buffering": False, "read": 100, "write": 300, "size": (10, 5000),
                         "number": 200, "transactions": 1500, "seed": 7},
    "buffered_odd_blocks": {"read": 4097, "write": 1, "size": (1, 9000), "number": 64,
                            "transactions": 600, "seed": 12345},
    "buffered_large_blocks": {"read": 10000, "write": 65536, "size": (5000, 300000),
                              "number": 40, "transactions": 200},
    "raw_large_blocks_exact": {"buffering": False, "read": 4096, "write": 4096,
                               "size": (4096, 4097), "number": 50, "transactions": 300},
    "no_read_append": {"bias_read": -1, "bias_create": 7, "number": 100, "transactions": 500},
    "no_create_delete": {"bias_create": -1, "bias_read": 9, "number": 100,
                         "transactions": 500, "size": (100, 900)},
    "locations_subdirs_terse": {"locations": [(0, 2), (1, 1), (2, 4)], "subdirs": 3,
                                "number": 150, "transactions": 600, "seed": 99,
                                "report": "terse", "read": 700, "write": 300},
    "raw_subdirs": {"buffering": False, "subdirs": 5, "number": 80, "transactions": 400,
                    "locations": [(0, 1), (1, 3)]},
    "table_full": {"bias_create": 10, "number": 20, "transactions": 200, "size": (10, 100)},
    "fixed_size_file_full": {"size": (1000, 1000), "number": 100, "transactions": 500},
    "appends_until_full": {"bias_read": 0, "bias_create": 10, "number": 10,
                           "transactions": 400, "size": (100, 150), "buffering": False},
}


LINE = re.compile(r"^(\w+)\((.*)\) += (-?\d+)")
FD = re.compile(r"^(-?\d+|AT_FDCWD)(?:<([^>]*)>)?")


def _args(s):
    """Top-level comma-separated arguments of a syscall (strings are -s 0)."""
    out, depth, cur, q = [], 0, "", False
    for ch in s:
        if q:
            cur += ch
            if ch == '"':
                q = False
            continue
        if ch == '"':
            q = True
        elif ch in "{[(<":
            depth += 1
        elif ch in "}])>":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    out.append(cur.strip())
    return out


def _unquote(a):
    return a[1:-1] if a.startswith('"') else a


def _fd_path(a):
    m = FD.match(a)
    return m.group(2) if m else None


def trace_calls(log, roots):
    """[(call, path relative to its location root, detail)] for every call
    on a numbered file or an s<N> subdirectory under @roots."""
    calls = []

    def rel(path):
        for i, r in enumerate(roots):
            if path == r or path.startswith(r + "/"):
                return f"L{i}" + path[len(r):]
        return None

    def numbered(p):
        return p is not None and re.fullmatch(r"L\d+(/s\d+)?/\d+", p)

    def ours(p):
        return numbered(p) or (p is not None and re.fullmatch(r"L\d+/s\d+", p))

    for line in log.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        call, argstr, rc = m.group(1), m.group(2), int(m.group(3))
        a = _args(argstr)
        if call == "openat":
            base = _fd_path(a[0])
            name = _unquote(a[1])
            path = name if name.startswith("/") else f"{base}/{name}"
            p = rel(path)
            if numbered(p):
                flags = set(a[2].split("|")) - ENGINE_FLAGS
                calls.append(("open", p, "|".join(sorted(flags)) + (" ok" if rc >= 0 else " fail")))
        elif call in ("unlink", "rmdir", "mkdir"):
            p = rel(_unquote(a[0]))
            if ours(p):
                calls.append((call, p, rc >= 0))
        elif call in ("unlinkat", "mkdirat"):
            p = rel(f"{_fd_path(a[0])}/{_unquote(a[1])}")
            if ours(p):
                if call == "mkdirat":
                    calls.append(("mkdir", p, rc >= 0))
                else:
                    calls.append(("rmdir" if "AT_REMOVEDIR" in a[2] else "unlink", p, rc >= 0))
        elif call in ("read", "write", "lseek", "close", "newfstatat", "fstat"):
            p = rel(_fd_path(a[0]) or "")
            if not numbered(p):
                continue
            if call in ("read", "write"):
                calls.append((call, p, int(a[2])))
            elif call == "lseek":
                calls.append((call, p, a[2]))
            elif call == "close":
                calls.append((call, p, None))
            else:
                calls.append(("fstat", p, None))
    return calls
