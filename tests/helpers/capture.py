"""What the capture's tests share: fio-pack capture and trace run as
commands, a trace read back (by the C parser, by fio-pack trace check, and
here into its header, files, streams and records), a capture attached to a
running database and stopped."""
import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fiopack.capture import postgres

REPO = Path(__file__).resolve().parents[2]
TOOL = [sys.executable, str(REPO / "scripts" / "fio-pack"), "capture"]
DBTRACE = [sys.executable, str(REPO / "scripts" / "fio-pack"), "trace"]
TRACES = REPO / "jobs" / "dbreplay" / "traces"
IS_ROOT = os.geteuid() == 0
# the PostgreSQL Debian installed, whichever major it is (None: none)
PG = postgres.installed()


def tool_env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def c_check(checker, path):
    r = subprocess.run([str(checker), str(path)], capture_output=True, text=True, env=tool_env(),
                       timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("records "), \
        f"the C parser refuses {path}: {r.stdout}{r.stderr}"
    return int(r.stdout.split()[1])


def py_check(path):
    r = subprocess.run([*DBTRACE, "check", str(path)], capture_output=True,
                       text=True, env=tool_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def tool(*args, stdin=None, cwd=None, timeout=300):
    return subprocess.run([*TOOL, *map(str, args)], capture_output=True,
                          text=True, env=tool_env(), stdin=stdin, cwd=cwd, timeout=timeout)


def ok(r):
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stderr}"
    return r


def read_trace(path, latency=False):
    """(header dict, files by id, streams by id, records) of a trace this tool
    wrote. With @latency, each record ends with its latency (version 2's
    "+LATENCY", in the trace's time unit; None where it has none)."""
    op = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with op(path, "rt", encoding="latin-1") as f:
        lines = f.read().splitlines()
    assert lines[0] in ("dbtrace 1", "dbtrace 2") and lines[-1].startswith("end ")
    head, files, streams, recs = {}, {}, {}, []
    page = 1
    for ln in lines[1:-1]:
        tok = ln.split()
        if tok[0] in ("pagesize", "timeunit"):
            head[tok[0]] = tok[1]
            if tok[0] == "pagesize":
                page = int(tok[1])
        elif tok[0] == "source":
            head["source"] = ln[7:]
        elif tok[0] == "file":
            files[int(tok[1])] = {"role": tok[2], "size": None if tok[3] == "-" else int(tok[3]),
                                  "max": int(tok[4]), "path": tok[5],
                                  **({"direct": True} if tok[6:] == ["direct"] else {})}
        elif tok[0] == "stream":
            streams[int(tok[1])] = tok[2]
        elif tok[0] == "incomplete":
            head.setdefault("incomplete", []).append(ln[11:])
        else:
            q = [int(x[1:]) * page if x.startswith("p") else int(x) for x in tok[4:]
                 if not x.startswith("+")]     # version 2: "+LATENCY" left out
            if latency:
                q.append(next((int(x[1:]) for x in tok[4:] if x.startswith("+")), None))
            recs.append((None if tok[0] == "-" else int(tok[0]), int(tok[1]), int(tok[2]),
                         tok[3], *q))
    return head, files, streams, recs


def by_path(files, path):
    got = [i for i, f in files.items() if f["path"] == path]
    assert len(got) == 1, f"no single file {path} in {files}"
    return got[0]



def attach(db, data, pid, ready: Path, source, out, *extra):
    """fio-pack capture attach --db @db to process @pid, once the tracer
    is attached (it writes @ready)."""
    cap = subprocess.Popen([*TOOL, "attach", "--datadir", str(data), "--db", db,
                            "--pid", str(pid), "--ready", str(ready), "--source", source,
                            "-o", str(out), *extra],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=tool_env())
    t0 = time.monotonic()
    try:
        while not ready.exists():
            assert cap.poll() is None, cap.communicate()[1]
            assert time.monotonic() - t0 < 60, "the capture did not attach within 60 s"
            time.sleep(0.05)
    except BaseException:
        cap.kill()
        cap.wait()
        raise
    return cap


def detach(cap, timeout=120):
    """Stops the capture @cap as a user would (SIGINT): (its exit status,
    its stderr)."""
    cap.send_signal(signal.SIGINT)
    _, err = cap.communicate(timeout=timeout)
    return cap.returncode, err


def kill(cap):
    """Ends the capture @cap if it still runs (a test that failed before
    detach())."""
    if cap is not None:
        cap.kill()
        cap.wait()
