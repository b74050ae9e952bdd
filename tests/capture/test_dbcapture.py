"""scripts/fio-pack capture: strace captures of real databases as dbtrace traces.

Every trace is read back by the C parser (engines/lib/dbtrace.c, through a
small checker compiled here) and by scripts/fio-pack trace check. The captures are
real: sqlite3 loading rows under `fio-pack capture run`, a small C program doing
known calls from two threads under strace, and (as root, with Debian's
PostgreSQL 15 installed) a PostgreSQL server started in a temporary directory
with pgbench running while `fio-pack capture attach` is attached (with the BPF
capture, held against pg_stat_database.blks_read, pg_stat_bgwriter's buffers
and pg_stat_wal's writes and syncs: exactly equal), and Debian's
MariaDB 10.11 under sysbench oltp_read_write, whose trace is held against
InnoDB's own counters (Innodb_data_reads, _writes, _fsyncs, _read, _written):
exactly equal with innodb_use_native_aio=0, and, in MariaDB's default
configuration (io_uring), a trace that says it lacks the writes."""
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import DBR_ENGINE, free_port, run_fio
from fiopack.capture import procs, rules

REPO = Path(__file__).resolve().parents[2]
TOOL = [sys.executable, str(REPO / "scripts" / "fio-pack"), "capture"]
DBTRACE = [sys.executable, str(REPO / "scripts" / "fio-pack"), "trace"]
TRACES = REPO / "jobs" / "dbreplay" / "traces"
IS_ROOT = os.geteuid() == 0
PG_BIN = Path("/usr/lib/postgresql/15/bin")

# Pure Python plus strace: nothing for the sanitizer pass to add.
pytestmark = pytest.mark.nosan

def _env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


@pytest.fixture(scope="module")
def checker():
    """tools/dbtrace-check, built by make (the one place C is compiled)."""
    r = subprocess.run(["make", "-s", "--no-print-directory", "build/dbtrace-check"],
                       cwd=REPO, capture_output=True, text=True, env=_env())
    if r.returncode:
        pytest.fail(f"cannot build the dbtrace checker:\n{r.stdout}{r.stderr}", pytrace=False)
    return REPO / "build" / "dbtrace-check"


def c_check(checker, path):
    r = subprocess.run([str(checker), str(path)], capture_output=True, text=True, env=_env(),
                       timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("records "), \
        f"the C parser refuses {path}: {r.stdout}{r.stderr}"
    return int(r.stdout.split()[1])


def py_check(path):
    r = subprocess.run([*DBTRACE, "check", str(path)], capture_output=True,
                       text=True, env=_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def tool(*args, stdin=None, cwd=None, timeout=300):
    return subprocess.run([*TOOL, *map(str, args)], capture_output=True,
                          text=True, env=_env(), stdin=stdin, cwd=cwd, timeout=timeout)


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


# ---------------------------------------------------------------------------
# (1) sqlite3 under fio-pack capture run
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("tracer", ["strace", "bpf"])
def test_sqlite_live_capture(tmp_path, checker, tracer):
    if tracer == "bpf" and not (IS_ROOT and os.path.exists("/sys/kernel/btf/vmlinux")):
        pytest.skip("the BPF capture needs root and a kernel with BTF")
    db = tmp_path / "db"
    db.mkdir()
    sql = tmp_path / "load.sql"
    ntx = 30
    with open(sql, "w") as f:
        f.write("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER);\n")
        for i in range(ntx):
            f.write("BEGIN;\n")
            for j in range(100):
                f.write(f"INSERT INTO t(name, n) VALUES ('row {i}-{j} {'x' * 60}', {i * j});\n")
            f.write("COMMIT;\n")
        f.write("CREATE INDEX t_n ON t(n);\n")
    out = tmp_path / "load.trace.gz"
    with open(sql) as stdin:
        r = ok(tool("run", "--tracer", tracer, "--datadir", db, "--db", "sqlite", "-o", out,
                    "--source", "SQLite bulk load test", "--", "sqlite3", db / "load.db",
                    stdin=stdin))
    assert "records" in r.stderr
    n = c_check(checker, out)
    assert f"{n} records" in py_check(out)
    head, files, streams, recs = read_trace(out)
    assert head["timeunit"] == "us" and head["pagesize"] == "4096"
    if tracer == "strace":
        assert head["source"].startswith("SQLite bulk load test; capture: strace -f -ttt -yy")
        assert "-- sqlite3 " in head["source"]
    else:
        assert head["source"].startswith("SQLite bulk load test; capture: iocap -p PID")
    assert "incomplete" not in head
    dbf = by_path(files, "load.db")
    jf = by_path(files, "load.db-journal")
    assert files[dbf]["role"] == "data" and files[jf]["role"] == "journal"
    assert files[dbf]["size"] is None and files[jf]["size"] is None   # both made by the capture
    final = os.path.getsize(db / "load.db")
    writes = [r for r in recs if r[2] == dbf and r[3] == "write"]
    assert writes and max(r[4] + r[5] for r in writes) == final == files[dbf]["max"]
    # every page of the final file was written at least once
    covered = set()
    for r in writes:
        covered.update(range(r[4] // 4096, (r[4] + r[5] + 4095) // 4096))
    assert covered == set(range(final // 4096))
    ops = lambda fid, op: sum(1 for r in recs if r[2] == fid and r[3] == op)  # noqa: E731
    # rollback journal: each transaction creates, syncs and removes it
    assert ops(jf, "create") >= ntx and ops(jf, "unlink") >= ntx
    assert ops(jf, "fdatasync") + ops(jf, "fsync") >= ntx
    assert ops(dbf, "fdatasync") + ops(dbf, "fsync") >= ntx
    assert ops(dbf, "create") == 1 and recs[0][3] == "create" and recs[0][2] == dbf
    jrecs = [r[3] for r in recs if r[2] == jf]
    assert jrecs[0] == "create" and jrecs[-1] == "unlink"
    # sqlite fsyncs the directory after creating the journal (fdatasync on a directory -> fsync)
    top = by_path(files, ".")
    assert files[top]["role"] == "directory" and ops(top, "fsync") >= ntx
    assert list(streams.values()) == [s for s in streams.values() if s.startswith("sqlite3-")]
    times = [r[0] for r in recs]
    assert times[0] == 0 and times == sorted(times)


# ---------------------------------------------------------------------------
# (2) known calls from two threads, real strace, exact records
# ---------------------------------------------------------------------------

PROG_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char buf[16384];
static pthread_barrier_t bar;

static void *second(void *arg)
{
	int fd = open("b.dat", O_RDWR | O_CREAT, 0644), i;

	pthread_barrier_wait(&bar);
	for (i = 0; i < 40; i++) {
		pwrite(fd, buf, 4096, (off_t)i * 4096);
		fsync(fd);
	}
	close(fd);
	return arg;
}

int main(void)
{
	pthread_t t;
	int fd, fd2, fd3, pre, dir, out, i;

	pthread_barrier_init(&bar, NULL, 2);
	fd = open("a.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
	pthread_create(&t, NULL, second, NULL);
	pthread_barrier_wait(&bar);
	for (i = 0; i < 40; i++) {
		pwrite(fd, buf, 8192, (off_t)i * 8192);
		fdatasync(fd);
	}
	fd2 = dup(fd);
	pread(fd2, buf, 100, 0);
	fd3 = fcntl(fd, F_DUPFD, 100);
	lseek(fd3, 10, SEEK_SET);
	read(fd3, buf, 4096);
	read(fd, buf, 50);                      /* the position is shared: 4106 */
	pthread_join(t, NULL);
	pre = open("pre.dat", O_RDONLY);
	pread(pre, buf, 4096, 4096);
	pread(pre, buf, 16384, 8192);           /* short: the file ends at 12288 */
	pread(pre, buf, 100, 12288);            /* 0 bytes: dropped */
	rename("b.dat", "c.dat");
	fd2 = open("c.dat", O_RDONLY);
	pread(fd2, buf, 4096, 0);
	unlink("c.dat");
	dir = open(".", O_RDONLY | O_DIRECTORY);
	fsync(dir);
	out = open(getenv("OUTSIDE"), O_WRONLY | O_CREAT, 0644);
	write(out, buf, 10);                    /* outside the data directory: dropped */
	pread(fd, buf, 10, 1 << 30);            /* beyond the end: 0 bytes, dropped */
	return 0;
}
"""


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    d = tmp_path_factory.mktemp("dbcapture-prog")
    (d / "prog.c").write_text(PROG_C)
    r = subprocess.run(["cc", "-O1", "-pthread", "-o", str(d / "prog"), str(d / "prog.c")],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr
    return d / "prog"


def trace_set():
    return rules.TRACE_SET


def test_converter_on_known_program(tmp_path, prog, checker):
    data = tmp_path / "data"
    for attempt in range(5):
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir()
        (data / "pre.dat").write_bytes(b"p" * 12288)
        listing = subprocess.run(["find", str(data), "-printf", "%y %s %P\\n"],
                                 capture_output=True, text=True, check=True).stdout
        (tmp_path / "listing").write_text(listing)
        raw = tmp_path / "strace.out"
        env = dict(_env(), OUTSIDE=str(tmp_path / "outside.log"))
        r = subprocess.run(["strace", "-f", "-ttt", "-yy", "-qq", "-s", "0", "-T", "-e",
                            f"trace={trace_set()}", "-o", str(raw), str(prog)],
                           cwd=data, env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        text = raw.read_text()
        # the two threads overlap in their calls: strace splits some in two
        if re.search(r"<\.\.\. (pwrite64|fsync|fdatasync) resumed>", text):
            break
    else:
        pytest.fail("strace never showed an unfinished call of the two threads")
    out = tmp_path / "prog.trace"
    r = ok(tool("convert", raw, "--datadir", data, "--db", "generic", "--listing",
                tmp_path / "listing", "--cwd", data, "-o", out))
    assert "renames" in r.stderr and "outside the data directory" in r.stderr
    n = c_check(checker, out)
    head, files, streams, recs = read_trace(out)
    assert n == len(recs)
    a, b, pre, top = (by_path(files, p) for p in ("a.dat", "b.dat", "pre.dat", "."))
    assert files[a] == {"role": "other", "size": None, "max": 40 * 8192, "path": "a.dat"}
    assert files[b] == {"role": "other", "size": None, "max": 40 * 4096, "path": "b.dat"}
    assert files[pre] == {"role": "other", "size": 12288, "max": 12288, "path": "pre.dat"}
    assert files[top] == {"role": "directory", "size": 0, "max": 0, "path": "."}
    assert len(files) == 4 and len(streams) == 2
    main_s = recs[0][1]
    other = [s for s in streams if s != main_s][0]
    main_ops = [r[2:] for r in recs if r[1] == main_s]
    second_ops = [r[2:] for r in recs if r[1] == other]
    want_main = [(a, "create")]
    for i in range(40):
        want_main += [(a, "write", i * 8192, 8192), (a, "fdatasync")]
    want_main += [(a, "read", 0, 100), (a, "read", 10, 4096), (a, "read", 4106, 50),
                  (pre, "read", 4096, 4096), (pre, "read", 8192, 4096),
                  (b, "read", 0, 4096), (b, "unlink"), (top, "fsync")]
    assert main_ops == want_main
    want_second = [(b, "create")]
    for i in range(40):
        want_second += [(b, "write", i * 4096, 4096), (b, "fsync")]
    assert second_ops == want_second
    # issue order: times never go back across the whole trace
    assert [r[0] for r in recs] == sorted(r[0] for r in recs)
    # strace -T: every record has its completion (version 2), none direct
    lines = out.read_text().splitlines()
    assert lines[0] == "dbtrace 2" and not any(f.get("direct") for f in files.values())
    assert all(ln.split()[-1].startswith("+") for ln in lines if ln[0].isdigit())


SYNTHETIC = """\
100  1000.000000 openat(AT_FDCWD</db>, "data.db", O_RDWR|O_CREAT, 0644) = 3</db/data.db>
100  1000.000010 clone3({flags=CLONE_VM|CLONE_FILES|CLONE_THREAD, exit_signal=0} => {parent_tid=[101]}, 88) = 101
100  1000.000020 pwrite64(3</db/data.db>, ""..., 8192, 0 <unfinished ...>
101  1000.000025 openat(AT_FDCWD</db>, "data.db-wal", O_RDWR|O_CREAT, 0644) = 4</db/data.db-wal>
101  1000.000030 write(4</db/data.db-wal>, ""..., 100 <unfinished ...>
100  1000.000040 <... pwrite64 resumed>) = 8192 <0.000020>
101  1000.000050 <... write resumed>) = 100
100  1000.000060 fdatasync(3</db/data.db> <unfinished ...>
101  1000.000061 write(4</db/data.db-wal>, ""..., 50) = 50
101  1000.000070 fsync(4</db/data.db-wal>) = 0
100  1000.000080 <... fdatasync resumed>) = 0
100  1000.000090 pread64(3</db/data.db>, ""..., 8192, 16384) = 4096
100  1000.000100 dup2(3</db/data.db>, 7) = 7</db/data.db>
100  1000.000110 lseek(7</db/data.db>, 4096, SEEK_SET) = 4096
100  1000.000120 read(7</db/data.db>,  <unfinished ...>
101  1000.000125 write(9<UNIX-STREAM:[11->12]>, ""..., 10) = 10
100  1000.000126 <... read resumed>""..., 100) = 100
101  1000.000130 rename("/db/data.db-wal", "/db/data.db") = 0
100  1000.000140 pwrite64(3</db/data.db>(deleted), ""..., 4096, 0) = 4096
101  1000.000150 pwrite64(4</db/data.db>, ""..., 10, 150) = 10
101  1000.000160 unlink("/db/data.db") = 0
100  1000.000170 openat(AT_FDCWD</db>, "data.db", O_RDWR|O_CREAT|O_EXCL, 0644) = 5</db/data.db>
100  1000.000175 pread64(3</db/data.db>(deleted), ""..., 10, 0) = -1 EINTR (Interrupted system call)
101  1000.000180 mkdir("/db/sub", 0755) = 0
101  1000.000190 openat(AT_FDCWD</db>, "sub", O_RDONLY|O_DIRECTORY) = 6</db/sub>
101  1000.000195 fdatasync(6</db/sub>) = 0
101  1000.000200 openat(AT_FDCWD</db>, "/etc/passwd", O_RDONLY) = 8</etc/passwd>
101  1000.000210 read(8</etc/passwd>, ""..., 4096) = 1000
100  1000.000215 --- SIGUSR1 {si_signo=SIGUSR1, si_code=SI_USER, si_pid=1, si_uid=0} ---
100  1000.000220 ftruncate(5</db/data.db>, 8192) = 0
100  1000.000230 fallocate(5</db/data.db>, FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE, 0, 4096) = 0
100  1000.000240 sync_file_range(5</db/data.db>, 0, 0, SYNC_FILE_RANGE_WRITE) = 0
101  1000.000250 fsync(4</db/data.db>(deleted) <unfinished ...>
"""

SYNTHETIC_RECORDS = """\
0 0 0 write p0 8192 +20
5 1 1 create
10 1 1 write p0 100
40 0 0 fdatasync
41 1 1 write 100 50
50 1 1 fsync
70 0 0 read p4 4096
100 0 0 read p1 100
110 1 0 unlink
120 0 0 write p0 4096
130 1 1 write 150 10
140 1 1 unlink
150 0 0 create
160 1 2 create
175 1 2 fsync
200 0 0 truncate 8192
210 0 0 trim p0 4096
220 0 0 sync_file_range p0 0
end 18
"""


def test_converter_exact_on_synthetic_capture(tmp_path, checker):
    """Interleaved threads, unfinished/resumed calls, dup2 + lseek + read, a
    rename over an existing file, I/O on the unlinked file, a name made anew,
    a directory: the exact trace."""
    raw = tmp_path / "synthetic.strace"
    raw.write_text(SYNTHETIC)
    (tmp_path / "listing").write_text("f 20480 data.db\n")
    (tmp_path / "procinfo").write_text("100 name main-100\n101 name writer-101\n")
    out = tmp_path / "s.trace"
    r = ok(tool("convert", raw, "--datadir", "/db", "--db", "sqlite", "--listing",
                tmp_path / "listing", "--procinfo", tmp_path / "procinfo", "--capture",
                "strace -f -ttt -yy -o synthetic.strace", "-o", out))
    text = out.read_text()
    assert text.startswith(      # one call with its strace -T duration: version 2
        "dbtrace 2\npagesize 4096\ntimeunit us\n"
        "source SQLite database; capture: strace -f -ttt -yy -o synthetic.strace; "
        "fio-pack capture convert --db sqlite\n"
        "file 0 data 20480 20480 data.db\n"
        "file 1 log - 160 data.db-wal\n"
        "file 2 directory - 0 sub\n"
        "stream 0 main-100\nstream 1 writer-101\n")
    assert text.split("stream 1 writer-101\n")[1] == SYNTHETIC_RECORDS
    c_check(checker, out)
    for why in ("dropped 1 failed pread64 calls (-1 EINTR)",
                "dropped 1 reads of files outside the data directory",
                "dropped 1 calls still unfinished at the end of the capture",
                "1 renames", "1 fdatasyncs of directories, recorded as fsync"):
        assert why in r.stderr, r.stderr


def test_converter_drops_calls_strace_detached_from(tmp_path, checker):
    """strace ends a call it detaches from in the middle (the capture's end)
    with '<detached ...>', fresh or resumed: the call is dropped and counted
    as unfinished at the end, the rest converts as without it."""
    raw = tmp_path / "detached.strace"
    raw.write_text(SYNTHETIC.replace(
        "101  1000.000250 fsync(4</db/data.db>(deleted) <unfinished ...>\n",
        "101  1000.000250 fsync(4</db/data.db>(deleted) <unfinished ...>\n"
        "100  1000.000260 pread64(5</db/data.db>, <detached ...>\n"
        "101  1000.000270 <... fsync resumed> <detached ...>\n"))
    (tmp_path / "listing").write_text("f 20480 data.db\n")
    (tmp_path / "procinfo").write_text("100 name main-100\n101 name writer-101\n")
    out = tmp_path / "d.trace"
    r = ok(tool("convert", raw, "--datadir", "/db", "--db", "sqlite", "--listing",
                tmp_path / "listing", "--procinfo", tmp_path / "procinfo", "-o", out))
    assert out.read_text().split("stream 1 writer-101\n")[1] == SYNTHETIC_RECORDS
    assert "dropped 2 calls still unfinished at the end of the capture" in r.stderr, r.stderr
    c_check(checker, out)


# Version 2: strace -T durations become latencies, O_DIRECT from the open
# flags, from fcntl(F_SETFL) and (descriptors open before the capture) from
# the procinfo's odirect list; io_submit's duration is not its requests'.
DIRECT = """\
300  3000.000000 openat(AT_FDCWD</db>, "d.ibd", O_RDWR|O_DIRECT|O_CLOEXEC) = 3</db/d.ibd> <0.000020>
300  3000.000100 pread64(3</db/d.ibd>, ""..., 4096, 0) = 4096 <0.000150>
301  3000.000120 pwrite64(7</db/old.log>, ""..., 512, 0) = 512 <0.000030>
300  3000.000200 pwrite64(3</db/d.ibd>, ""..., 4096, 4096 <unfinished ...>
301  3000.000210 fdatasync(7</db/old.log>) = 0 <0.000400>
300  3000.000300 <... pwrite64 resumed>) = 4096 <0.000100>
301  3000.000700 openat(AT_FDCWD</db>, "b.dat", O_RDWR) = 8</db/b.dat> <0.000010>
301  3000.000710 pwrite64(8</db/b.dat>, ""..., 100, 0) = 100 <0.000005>
301  3000.000720 fcntl(8</db/b.dat>, F_SETFL, O_RDWR|O_DIRECT) = 0 <0.000001>
301  3000.000730 pwrite64(8</db/b.dat>, ""..., 4096, 4096) = 4096 <0.000009>
302  3000.000800 io_submit(0x7f3c2a5d1000, 1, [{aio_data=0, aio_lio_opcode=IOCB_CMD_PREAD, aio_fildes=9</db/a.ibd>, aio_buf=0x1, aio_nbytes=4096, aio_offset=0}]) = 1 <0.000004>
"""


def test_converter_direct_and_latencies(tmp_path, checker):
    raw = tmp_path / "direct.strace"
    raw.write_text(DIRECT)
    (tmp_path / "listing").write_text("f 8192 d.ibd\nf 4096 old.log\nf 8192 a.ibd\n")
    (tmp_path / "procinfo").write_text("300 name a-300\n301 name b-301\n301 odirect 5,7\n"
                                       "302 name c-302\n")
    out = tmp_path / "d.trace"
    r = ok(tool("convert", raw, "--datadir", "/db", "--db", "generic", "--listing",
                tmp_path / "listing", "--procinfo", tmp_path / "procinfo",
                "--accept-incomplete", "-o", out))
    text = out.read_text()
    assert text.startswith("dbtrace 2\n"), text
    decl = {ln.split()[5]: ln for ln in text.splitlines() if ln.startswith("file ")}
    assert decl["d.ibd"].endswith(" d.ibd direct")
    assert decl["old.log"].endswith(" old.log direct")     # opened before, fdinfo said so
    assert decl["b.dat"].endswith(" b.dat direct")         # F_SETFL; also written buffered
    assert decl["a.ibd"].endswith(" a.ibd")
    recs = text.split("stream 2 c-302\n")[1].splitlines()
    assert recs == [
        "0 0 0 read p0 4096 +150",
        "20 1 1 write p0 512 +30",
        "100 0 0 write p1 4096 +100",       # resumed: the whole call's duration
        "110 1 1 fdatasync +400",
        "610 1 2 write p0 100 +5",
        "630 1 2 write p1 4096 +9",
        "700 2 3 read p0 4096",             # io_submit: completion unseen, no latency
        "end 7",
    ], recs
    c_check(checker, out)
    assert "1 files read or written both with and without O_DIRECT, declared direct" \
        in r.stderr, r.stderr
    # without -T: version 1 as before, unless a file is direct
    raw.write_text(re.sub(r" <[0-9.]+>$", "", DIRECT, flags=re.M))
    ok(tool("convert", raw, "--datadir", "/db", "--db", "generic", "--listing",
            tmp_path / "listing", "--accept-incomplete", "-o", out))
    assert out.read_text().startswith("dbtrace 2\n") and "+" not in out.read_text()
    raw.write_text(re.sub(r" <[0-9.]+>$", "", DIRECT, flags=re.M).replace("|O_DIRECT", ""))
    ok(tool("convert", raw, "--datadir", "/db", "--db", "generic", "--listing",
            tmp_path / "listing", "--accept-incomplete", "-o", out))
    assert out.read_text().startswith("dbtrace 1\n")


# What strace cannot see: io_uring's requests (MariaDB 10.11's default), the
# requests of an io_submit strace did not print, a descriptor opened before
# the capture whose path strace could not give.
HOLES = """\
200  2000.000000 openat(AT_FDCWD</db>, "t.ibd", O_RDWR) = 3</db/t.ibd>
200  2000.000010 pread64(3</db/t.ibd>, ""..., 16384, 0) = 16384
201  2000.000020 io_uring_enter(9<anon_inode:[io_uring]>, 2, 0, 0, NULL, 8) = 2
201  2000.000030 io_uring_enter(9<anon_inode:[io_uring]>, 1, 0, 0, NULL, 8) = 1
202  2000.000040 io_submit(0x7f3c2a5d1000, 3, 0x7ffd5a6b7c80) = 3
200  2000.000050 pwrite64(12, ""..., 16384, 32768) = 16384
200  2000.000060 fsync(3</db/t.ibd>) = 0
"""
HOLE_LINES = [   # in the order of their text
    "incomplete 3 io_submit requests strace did not print (native AIO: "
    "innodb_use_native_aio=0 for a full capture)",
    "incomplete 2 io_uring_enter calls: the reads, writes and syncs submitted through "
    "io_uring are invisible to strace and none is in the trace (InnoDB: "
    "innodb_use_native_aio=0; PostgreSQL 18: io_method=worker)",
    "incomplete 1 pwrite64s on descriptors opened before the capture (no -y path)",
]


def test_incomplete_capture_is_recorded_checked_and_refused(tmp_path, checker):
    """A capture that misses I/O says so in the trace's header, exits 3
    unless accepted; check repeats it; the replay refuses it unless
    accepted, and then repeats it in its summary and report."""
    raw = tmp_path / "holes.strace"
    raw.write_text(HOLES)
    (tmp_path / "listing").write_text("f 65536 t.ibd\n")
    out = tmp_path / "holes.trace"
    args = ["convert", raw, "--datadir", "/db", "--db", "mariadb", "--listing",
            tmp_path / "listing", "-o", out]
    r = tool(*args)
    assert r.returncode == 3, r.stderr
    text = out.read_text()       # written all the same
    header = text.split("\nfile ")[0].splitlines()
    assert header[4:] == HOLE_LINES, header
    last = r.stderr.splitlines()[-1]
    assert last == (f"fio-pack capture: {out}: written, but incomplete: 3 class(es) of I/O not seen, "
                    "listed above and in its header (fio-pack trace check shows them); pass "
                    "--accept-incomplete to accept such a trace"), r.stderr
    for ln in HOLE_LINES:
        assert f"fio-pack capture: {out}: incomplete capture: {ln[11:]}" in r.stderr
    # what it saw is there: the read and the fsync of the file it knows
    assert re.findall(r"^\d+ \d+ \d+ (\w+)", text, re.M) == ["read", "fsync"]
    assert c_check(checker, out) == 2
    r = ok(tool(*args, "--accept-incomplete"))
    assert out.read_text() == text
    assert f"fio-pack capture: {out}: incomplete capture (accepted): 2 io_uring_enter" in r.stderr
    assert "pass --accept-incomplete" not in r.stderr

    r = subprocess.run([*DBTRACE, "check", str(out)], capture_output=True,
                       text=True, env=_env(), timeout=120)
    assert r.returncode == 3, r.stderr
    assert r.stdout.splitlines()[1:] == [f"{out}: incomplete: {ln[11:]}" for ln in HOLE_LINES]
    r = subprocess.run([*DBTRACE, "export-iolog", str(out), "-o",
                        str(tmp_path / "x.iolog"), "--quiet"], capture_output=True, text=True,
                       env=_env(), timeout=120)
    assert r.returncode == 0 and r.stderr.count("is incomplete, and so is the iolog") == 3

    target = tmp_path / "replay"
    target.mkdir()
    res = run_fio(["--name=holes", f"--ioengine=external:{DBR_ENGINE}", f"--dbr_trace={out}",
                   f"--dbr_target={target}"])
    assert res.rc != 0
    refusal = [ln for ln in res.stderr.splitlines() if ln.startswith("dbreplay:")]
    assert refusal == [f"dbreplay: {out} is an incomplete capture: {HOLE_LINES[0][11:]} (and 2 "
                       "more: fio-pack trace check lists them); set dbr_accept_incomplete=1 to "
                       "replay it as it is"], res.stderr
    assert sorted(os.listdir(target)) == []      # refused before anything was made
    rep = tmp_path / "rep.jsonl"
    res = run_fio(["--name=holes", f"--ioengine=external:{DBR_ENGINE}", f"--dbr_trace={out}",
                   f"--dbr_target={target}", "--dbr_accept_incomplete=1",
                   f"--dbr_report_file={rep}"]).ok()
    assert res.job()["read"]["total_ios"] == 1
    assert res.job()["sync"]["total_ios"] == 1
    for ln in HOLE_LINES:
        assert f"dbreplay: holes: INCOMPLETE capture, the replay lacks: {ln[11:]}" in res.stderr
        assert f"replaying an incomplete capture (dbr_accept_incomplete=1): {ln[11:]}" \
            in res.stderr
    report = json.loads(rep.read_text())
    assert report["incomplete"] == [ln[11:] for ln in HOLE_LINES]
    # a complete trace's report says so too
    whole = tmp_path / "whole.trace"
    whole.write_text("\n".join(ln for ln in text.splitlines()
                               if not ln.startswith("incomplete")) + "\n")
    rep.unlink()
    run_fio(["--name=whole", f"--ioengine=external:{DBR_ENGINE}", f"--dbr_trace={whole}",
             f"--dbr_target={target}", f"--dbr_report_file={rep}"]).ok()
    assert json.loads(rep.read_text())["incomplete"] == []


# ---------------------------------------------------------------------------
# (3) bad input
# ---------------------------------------------------------------------------

GOOD = '7  10.000001 pwrite64(3</db/x>, ""..., 10, 0) = 10\n'


@pytest.mark.parametrize("text,db,extra,msg", [
    (GOOD + "garbage here\n", "sqlite", [], "bad.strace line 2: not an strace line"),
    (GOOD + '7  10.000002 pread64(3</db/x>, "..., 10, 0) = 10\n', "sqlite", [],
     "bad.strace line 2: an unterminated string"),
    (GOOD + '7  10.000002 pread64(3</db/x>, ""..., 10, 0)\n', "sqlite", [],
     "bad.strace line 2: pread64: no result"),
    (GOOD + '7  10.000002 pread64(3</db/x>, ""..., 10, 0 = 10\n', "sqlite", [],
     "bad.strace line 2: pread64: the argument list does not end"),
    (GOOD + '7  10.000002 pread64(3</db/x, ""..., 10, 0) = 10\n', "sqlite", [],
     "bad.strace line 2: an unterminated <...> annotation"),
    (GOOD + '7  pread64(3</db/x>, ""..., 10, 0) = 10\n', "sqlite", [],
     "bad.strace line 2: a line without a timestamp among timed lines"),
    (GOOD + '7  10.000002 pread64(3</db/x>, ""..., 10, 0) = x\n', "sqlite", [],
     "bad.strace line 2: cannot read the call's result"),
    (GOOD + '7  10.000002 pread64(3</db/x>,  <unfinished ...>\n'
     '7  10.000003 <... fsync resumed>) = 0\n', "sqlite", [],
     "bad.strace line 3: 'fsync' resumed while pid 7's unfinished call is 'pread64'"),
    (GOOD + '7  10.000002 openat(AT_FDCWD</db>, "../etc/passwd", O_RDONLY) = 4\n', "sqlite",
     ["--outside", "error"],
     "bad.strace line 2: '/etc/passwd' is outside the data directory /db (--outside error)"),
    (GOOD + '7  10.000002 pwrite64(3</elsewhere/y>, ""..., 10, 0) = 10\n', "sqlite",
     ["--outside", "error"], "bad.strace line 2: '/elsewhere/y' is outside the data directory"),
    (GOOD, "oracle", [], "--db: unknown database 'oracle'"),
    (GOOD, "sqlite", ["--role", "*.db=table"], "--role '*.db=table': unknown role 'table'"),
    (GOOD, "sqlite", ["--pagesize", "1000"], "--pagesize 1000: must be a power of two"),
    ('7  10.000001 pwrite64(3</elsewhere/x>, ""..., 10, 0) = 10\n', "sqlite", [],
     "bad.strace: no file I/O of the data directory /db in the capture"),
])
def test_bad_input(tmp_path, text, db, extra, msg):
    raw = tmp_path / "bad.strace"
    raw.write_text(text)
    out = tmp_path / "out.trace.gz"
    r = tool("convert", "bad.strace", "--datadir", "/db", "--db", db, *extra, "-o", out,
             cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fio-pack capture: " + msg), r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.strace"]   # no output left


TREE_PY = r"""
import subprocess, sys, threading, time

def fork():
    # forked by this thread, not the main one: a child of this thread in /proc
    subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60; :"])
    time.sleep(60)

for _ in range(2):
    threading.Thread(target=fork, daemon=True).start()
time.sleep(60)
"""


def test_tasks_of_finds_every_descendant():
    """The BPF capture names the tasks it traces from tasks_of(), sampled
    every 200 ms. It follows each thread's /proc children instead of reading
    every process of the host: it must find what that walk finds, threads,
    children forked by any thread, and grandchildren."""
    p = subprocess.Popen([sys.executable, "-c", TREE_PY], start_new_session=True)
    try:
        # python's 3 threads, and per thread a sh with its 2 sleeps
        t0 = time.monotonic()
        while len(procs._tasks_of_walk([p.pid])) < 9:
            assert p.poll() is None and time.monotonic() - t0 < 30, "the process tree did not start"
            time.sleep(0.05)
        walk = sorted(procs._tasks_of_walk([p.pid]))
        got = sorted(procs.tasks_of([p.pid]))
        assert got == walk and len(got) == 9, (got, walk)
        assert sum(1 for pid, tid in got if pid == p.pid) == 3
        assert sorted(procs.tasks_of([p.pid, p.pid])) == got
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def test_usage_errors_and_manual(tmp_path):
    r = tool("run", "--datadir", tmp_path, "--db", "sqlite", "-o", tmp_path / "x.trace")
    assert r.returncode == 2 and "put the COMMAND after '--'" in r.stderr
    r = tool("run", "--datadir", tmp_path, "--db", "sqlite", "-o", tmp_path / "x.trace", "--",
             "sh", "-c", "exit 3")
    assert r.returncode == 2 and "exited with status 3" in r.stderr
    r = tool("attach", "--datadir", tmp_path, "--db", "sqlite", "-o", tmp_path / "x.trace",
             "--pid", "999999999")
    assert r.returncode == 2 and "--pid 999999999: no such process" in r.stderr
    assert not (tmp_path / "x.trace").exists()
    for cmd in ("run", "attach", "convert"):
        r = ok(tool(cmd, "--help"))
        assert r.stdout.startswith("NAME\n    fio-pack capture " + cmd)
    r = ok(tool("--help"))
    assert "SYNOPSIS" in r.stdout and "convert STRACE_OUT" in r.stdout
    assert "pg_wal/*" in ok(tool("help", "convert")).stdout


# ---------------------------------------------------------------------------
# (4) PostgreSQL: pgbench under fio-pack capture attach
# ---------------------------------------------------------------------------

def attach_postgresql(data, pid, ready, source, out, tracer="auto"):
    """fio-pack capture attach to the postmaster @pid, once the tracer is attached."""
    cap = subprocess.Popen([*TOOL, "attach", "--datadir", str(data),
                            "--db", "postgresql", "--pid", str(pid), "--ready", str(ready),
                            "--source", source, "-o", str(out), "--tracer", tracer],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=_env())
    t0 = time.monotonic()
    while not ready.exists():
        assert cap.poll() is None, cap.communicate()[1]
        assert time.monotonic() - t0 < 60, "strace did not attach within 60 s"
        time.sleep(0.05)
    return cap


@pytest.mark.skipif(not IS_ROOT, reason="runs PostgreSQL as user postgres (needs root)")
@pytest.mark.parametrize("tracer", ["strace", "bpf"])
def test_postgresql_live_capture(checker, tracer):
    if tracer == "bpf" and not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.skip("this kernel has no BTF: no BPF capture")
    if not (PG_BIN / "initdb").exists() or not shutil.which("pgbench"):
        pytest.fail("PostgreSQL 15 is not installed (scripts/install-deps.sh --test installs it)",
                    pytrace=False)
    base = Path(tempfile.mkdtemp(prefix="dbcapture-pg.", dir="/tmp"))
    os.chmod(base, 0o755)
    shutil.chown(base, "postgres")
    pg = ["runuser", "-u", "postgres", "--"]
    data = base / "data"
    opts = f"-k {base} -c listen_addresses= -c shared_buffers=16MB -c fsync=on"
    started = False
    cap = None
    try:
        # cwd: the postgres user may not reach the checkout (a 0700 /root)
        run = lambda *c: subprocess.run([*pg, *map(str, c)], capture_output=True,  # noqa: E731
                                        text=True, timeout=120, cwd=str(base))
        r = run(PG_BIN / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
        assert r.returncode == 0, r.stderr
        r = run(PG_BIN / "pg_ctl", "-D", data, "-o", opts, "-l", base / "log", "-w", "start")
        assert r.returncode == 0, r.stderr + (base / "log").read_text()
        started = True
        r = run("pgbench", "-h", base, "-i", "-s", "1", "-q", "postgres")
        assert r.returncode == 0, r.stderr
        r = run(PG_BIN / "pg_ctl", "-D", data, "-o", opts, "-l", base / "log", "-m", "fast",
                "-w", "restart")
        assert r.returncode == 0, r.stderr
        pid = int((data / "postmaster.pid").read_text().split()[0])
        out = base / "pg.trace.gz"
        ready = base / "ready"
        cap = attach_postgresql(data, pid, ready, "PostgreSQL 15 pgbench test", out, tracer)
        r = run("pgbench", "-h", base, "-c", "2", "-j", "2", "-T", "2", "postgres")
        assert r.returncode == 0, r.stderr
        r = run("psql", "-h", base, "-c", "CHECKPOINT", "postgres")
        assert r.returncode == 0, r.stderr
        cap.send_signal(signal.SIGINT)
        _, err = cap.communicate(timeout=120)
        assert cap.returncode == 0, err
        cap = None
        c_check(checker, out)
        py_check(out)
        head, files, streams, recs = read_trace(out)
        assert head["pagesize"] == "8192" and head["timeunit"] == "us"
        assert head["source"].startswith("PostgreSQL 15 pgbench test; capture: "
                                         + ("strace -f" if tracer == "strace" else "iocap -p"))
        assert "incomplete" not in head
        assert f"-p {pid}" in head["source"]
        role = {i: f["role"] for i, f in files.items()}
        wal = [i for i, f in files.items() if f["path"].startswith("pg_wal/0")]
        assert wal and all(role[i] == "log" for i in wal)
        walops = {r[3] for r in recs if r[2] in wal}
        assert "write" in walops and walops & {"fdatasync", "fsync"}
        rel = [i for i, f in files.items() if re.fullmatch(r"base/\d+/\d+", f["path"])]
        assert rel and all(role[i] == "data" for i in rel)
        assert any(r[3] == "read" and r[2] in rel for r in recs)   # cold shared buffers
        assert all(f["size"] is not None for i, f in files.items() if i in rel and
                   any(r[2] == i and r[3] == "read" for r in recs))
        names = set(streams.values())
        assert any(n.startswith("backend-") for n in names), names
        ckpt = [s for s, n in streams.items() if n.startswith("checkpointer-")]
        assert ckpt and any(r[1] == ckpt[0] and r[3] == "fsync" and r[2] in rel for r in recs)
        # WAL segments and relations existed before the capture: their real sizes
        for i in wal:
            f = files[i]
            if f["size"] is not None:
                assert f["size"] == 16 << 20
    finally:
        if cap is not None:
            cap.kill()
            cap.wait()
        if started:
            subprocess.run([*pg, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate",
                            "-w", "stop"], capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(not IS_ROOT, reason="creates a Debian PostgreSQL cluster (needs root)")
def test_postgresql_debian_cluster_roles(checker, tmp_path):
    """Debian's clusters set cluster_name ('15/NAME'), so the process titles
    are 'postgres: 15/NAME: checkpointer': the roles are still recognised,
    in a capture of a cluster made by Debian's own pg_createcluster, and a
    replay can pick the WAL writer's stream by name."""
    if not shutil.which("pg_createcluster") or not (PG_BIN / "initdb").exists():
        pytest.fail("PostgreSQL 15 with postgresql-common is not installed "
                    "(scripts/install-deps.sh --test installs it)", pytrace=False)
    name = f"fiopack{os.getpid()}"
    base = Path(tempfile.mkdtemp(prefix="dbcapture-pgc.", dir="/tmp"))
    os.chmod(base, 0o755)
    shutil.chown(base, "postgres")
    data, sock = base / "data", base
    port = str(free_port())
    pg = ["runuser", "-u", "postgres", "--"]
    run = lambda *c, user=True: subprocess.run(  # noqa: E731
        [*(pg if user else []), *map(str, c)], capture_output=True, text=True, timeout=120,
        cwd=str(base))
    cap = None
    try:
        r = run("pg_createcluster", "15", name, "-d", data, "-s", sock, "-p", port,
                "-o", "listen_addresses=", "-o", "shared_buffers=16MB",
                # the WAL writer then writes WAL itself (every 200 ms)
                "-o", "synchronous_commit=off", "--", "--no-sync",
                user=False)
        assert r.returncode == 0, r.stdout + r.stderr
        conf = Path(f"/etc/postgresql/15/{name}/postgresql.conf").read_text()
        assert re.search(rf"^cluster_name = '15/{name}'", conf, re.M), conf
        r = run("pg_ctlcluster", "15", name, "start", user=False)
        assert r.returncode == 0, r.stdout + r.stderr
        pid = int((data / "postmaster.pid").read_text().split()[0])
        titles = subprocess.run(["ps", "-o", "args=", "--ppid", str(pid)], capture_output=True,
                                text=True).stdout
        assert f"postgres: 15/{name}: checkpointer" in titles, titles
        children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                                  text=True).stdout.split()
        labels = {procs.task_label(int(c), int(c)) for c in children}
        assert {"checkpointer", "background-writer", "walwriter"} <= labels, (labels, titles)
        r = run("pgbench", "-h", sock, "-p", port, "-i", "-s", "1", "-q", "postgres")
        assert r.returncode == 0, r.stderr
        out, ready = base / "pg.trace.gz", base / "ready"
        cap = attach_postgresql(data, pid, ready, "Debian cluster test", out)
        r = run("pgbench", "-h", sock, "-p", port, "-c", "2", "-j", "2", "-T", "2", "postgres")
        assert r.returncode == 0, r.stderr
        r = run("psql", "-h", sock, "-p", port, "-c", "CHECKPOINT", "postgres")
        assert r.returncode == 0, r.stderr
        cap.send_signal(signal.SIGINT)
        _, err = cap.communicate(timeout=120)
        assert cap.returncode == 0, err
        cap = None
        c_check(checker, out)
        _, files, streams, recs = read_trace(out)
        names = set(streams.values())
        for role in ("checkpointer", "walwriter"):
            assert any(n.startswith(role + "-") for n in names), (role, names)
        assert any(n.startswith("backend-") for n in names), names
        assert not any(n.startswith(("15/", name)) for n in names), names
        ckpt = [i for i, n in streams.items() if n.startswith("checkpointer-")]
        assert any(r[1] in ckpt and r[3] == "fsync" for r in recs)
        # the replay picks the WAL writer by its name
        target = tmp_path / "replay"
        target.mkdir()
        rep = tmp_path / "rep.jsonl"
        res = run_fio(["--name=wal", f"--ioengine=external:{DBR_ENGINE}", f"--dbr_trace={out}",
                       f"--dbr_target={target}", "--dbr_streams=walwriter",
                       f"--dbr_report_file={rep}", "--dbr_report=none"]).ok()
        wal = [i for i, n in streams.items() if n.startswith("walwriter-")]
        want = sum(1 for r in recs if r[1] in wal)
        assert json.loads(rep.read_text().splitlines()[0])["replayed"] == want > 0
        assert res.job()["write"]["total_ios"] > 0
    finally:
        if cap is not None:
            cap.kill()
            cap.wait()
        subprocess.run(["pg_dropcluster", "--stop", "15", name], capture_output=True,
                       timeout=120)
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------
# (4a) PostgreSQL: pgbench under the BPF capture, against PostgreSQL's counters
# ---------------------------------------------------------------------------

# What PostgreSQL 15 counts, by file (paths relative to the data directory):
# relations (every fork, and their 1 GiB segments) under base/DBOID/ and
# global/; the SLRUs whose writes queue a sync request for the checkpointer
# (SlruPhysicalWritePage, sync_handler != SYNC_HANDLER_NONE: pg_xact,
# pg_multixact, pg_commit_ts; not pg_subtrans, pg_notify, pg_serial); the WAL.
PG_REL = re.compile(r"(?:base/(\d+)|global)/\d+(_fsm|_vm|_init)?(\.\d+)?")
PG_SYNCED_SLRU = re.compile(r"(pg_xact|pg_multixact/offsets|pg_multixact/members|pg_commit_ts)/"
                            r"[0-9A-F]+")
PG_WAL = re.compile(r"pg_wal/(?!archive_status/)[^/]+")
PG_COUNTERS = ("blks_read", "shared_blks_read", "buffers_checkpoint", "buffers_clean",
               "buffers_backend", "wal_write", "wal_sync")
PG_SNAPSHOT = ("SELECT d.blks_read, s.blks_read, b.buffers_checkpoint, b.buffers_clean, "
               "b.buffers_backend, w.wal_write, w.wal_sync, b.checkpoints_req "
               "FROM pg_stat_database d, pg_stat_database s, pg_stat_bgwriter b, pg_stat_wal w "
               "WHERE d.datname = current_database() AND s.datid = 0")


class PgSession:
    """One psql session held open for the whole test, so that the queries
    that read the counters find every catalog page they need cached: they
    read nothing, and what the session did is flushed to the counters
    before each reading (pg_stat_force_next_flush())."""

    def __init__(self, pg, sock):
        self.proc = subprocess.Popen([*pg, "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                                      "-h", str(sock), "postgres"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=str(sock))

    def query(self, sql):
        """The rows of @sql, each a list of its fields."""
        self.proc.stdin.write(f"{sql};\nSELECT '--end--';\n")
        self.proc.stdin.flush()
        rows = []
        while True:
            ln = self.proc.stdout.readline()
            assert ln, f"psql ended during {sql!r}"
            if ln.rstrip("\n") == "--end--":
                return rows
            rows.append(ln.rstrip("\n").split("|"))

    def counters(self) -> dict:
        """The counters, once every pending count of this session is flushed.
        pg_stat_force_next_flush() takes effect when the session goes idle
        after it, i.e. before the next statement."""
        self.query("SELECT pg_stat_force_next_flush()")
        row = self.query(PG_SNAPSHOT)[0]
        return dict(zip(PG_COUNTERS + ("checkpoints_req",), map(int, row)))

    def settled(self, checkpoints_req=None) -> dict:
        """The counters once everything is published: with @checkpoints_req,
        the CHECKPOINT after it has been reported (the checkpointer publishes
        buffers_checkpoint and the backends' writes it absorbed only after
        waking the waiter, and its WAL counts just after), then two readings
        0.5 s apart that are equal (the bgwriter publishes at each of its
        200 ms rounds; the WAL writer at each of its rounds, every 200 ms
        for 10 s after its last work, but without waiting for the lock)."""
        t0 = time.monotonic()
        last = self.counters()
        while True:
            time.sleep(0.5)
            now = self.counters()
            if now == last and (checkpoints_req is None
                                or now["checkpoints_req"] > checkpoints_req):
                return now
            assert time.monotonic() - t0 < 60, f"PostgreSQL's counters never settled: {now}"
            last = now

    def checkpoint(self) -> dict:
        req = self.counters()["checkpoints_req"]
        self.query("CHECKPOINT")
        return self.settled(req)

    def others(self) -> int:
        """Client backends other than this one (a backend flushes its counts
        in a before_shmem_exit hook, before it leaves pg_stat_activity)."""
        return int(self.query("SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
                              "'client backend' AND pid <> pg_backend_pid()")[0][0])

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def pg_counts(path, dboid: int, wal_method: str) -> dict:
    """The trace counted as PostgreSQL 15 counts (source: 15.18).

    blks_read (pg_stat_database; relations of the database) and the shared
    relations' (global/, datid 0): ReadBufferExtended() counts a fetch,
    and a hit if the page was in shared buffers; a miss is one pread of 8 KiB
    (mdread), or, for P_NEW, a relation extension: one pwrite of a new page
    at the end (mdextend). The free space and visibility maps extend their
    forks with fsm_extend()/vm_extend(), not through ReadBuffer: not counted.
    (RBM_ZERO_AND_LOCK on an existing page is a counted miss without a read:
    hash indexes and WAL replay only, neither of which pgbench uses.)

    buffers_checkpoint / buffers_clean: pages written (FlushBuffer, one pwrite)
    by the checkpointer in BufferSync() / by the bgwriter in BgBufferSync().
    Also counted there, with no write of theirs: a page they found dirty
    while another process was writing it. SyncOneBuffer() then waits for that
    write, FlushBuffer() finds the page clean and writes nothing, yet the page
    is counted (BUF_WRITTEN) and scheduled for writeback. Such a page shows as
    a block of their sync_file_range() (checkpoint_flush_after,
    bgwriter_flush_after) they did not write, written by another process in
    the same batch of writebacks; it is counted as PostgreSQL does, in
    "_found_written". (Seen once in 5 to 7 runs here: 1 page of ~370.)

    buffers_backend: ForwardSyncRequest() calls of every other process, each
    counted as one "backend write" (checkpointer.c): md.c's register_dirty_segment()
    after every page write (mdwrite) and extension (mdextend, any fork), file
    creation (mdcreate) and truncation (mdtruncate), and the writes of the
    synced SLRUs (SlruPhysicalWritePage). The forget and unlink requests of
    dropped relations are counted too and leave nothing in a trace: the test
    runs pgbench -n (no TRUNCATE pgbench_history, no VACUUM) and autovacuum=off.

    wal_write: each pwrite of XLogWrite() (pg_wal segments), not the zero-fill
    of a new segment (XLogFileInitInternal: written before its first fsync).
    wal_sync: each issue_xlog_fsync(); with wal_sync_method=fdatasync that is
    each fdatasync of a segment (a new segment's first sync, and durable_rename()
    of a new or recycled segment, use fsync)."""
    assert wal_method == "fdatasync", wal_method
    _, files, streams, recs = read_trace(path, latency=True)
    role = {}
    for s, name in streams.items():
        role[s] = ("checkpointer" if name.startswith("checkpointer-") else
                   "bgwriter" if name.startswith("background-writer-") else "other")
    rel = {i: PG_REL.fullmatch(f["path"]) for i, f in files.items()}
    rel = {i: m for i, m in rel.items() if m}
    slru = {i for i, f in files.items() if PG_SYNCED_SLRU.fullmatch(f["path"])}
    wal = {i for i, f in files.items() if PG_WAL.fullmatch(f["path"]) and f["role"] == "log"}
    size = {i: f["size"] or 0 for i, f in files.items()}
    new_wal = {i for i in wal if files[i]["size"] is None}     # made during the capture
    c = dict.fromkeys(PG_COUNTERS, 0)
    # how they are made up (not PostgreSQL's counters)
    c.update(dict.fromkeys(("_extensions", "_backend_creates", "_backend_truncates",
                            "_backend_slru", "_new_wal_segments", "_wal_fills",
                            "_found_written"), 0))
    page = 8192
    writes_of = {}          # (file, block): [(stream, start, end)] of every page write
    pending = {}            # stream: its written blocks not yet in its sync_file_range
    batch = {}              # stream: start of its batch of writebacks (its last one's end)
    last_sfr = {}
    for r in recs:
        if r[2] in rel and r[3] == "write":
            writes_of.setdefault((r[2], r[4] // page), []).append((r[1], r[0], r[0] + r[-1]))
    for r in recs:
        s, f, op = r[1], r[2], r[3]
        if f in rel and role[s] != "other":
            if op == "write":
                if s in last_sfr:       # the first write after a burst of writebacks
                    batch[s] = last_sfr.pop(s)
                pending.setdefault(s, set()).add((f, r[4] // page))
            elif op == "sync_file_range":
                last_sfr[s] = r[0]
                for b in range(r[4] // page, (r[4] + r[5]) // page):
                    if (f, b) in pending.get(s, ()):
                        pending[s].discard((f, b))
                    elif any(o != s and t0 <= r[0] and t1 >= batch.get(s, 0)
                             for o, t0, t1 in writes_of.get((f, b), ())):
                        c["buffers_checkpoint" if role[s] == "checkpointer"
                          else "buffers_clean"] += 1
                        c["_found_written"] += 1
        if f in rel:
            m = rel[f]
            db = "blks_read" if m.group(1) == str(dboid) else \
                "shared_blks_read" if m.group(1) is None else None
            if op == "read" and db:
                c[db] += 1
            elif op == "write":
                ext = r[4] >= size[f]
                size[f] = max(size[f], r[4] + r[5])
                if ext and not m.group(2) and db:       # P_NEW: a main fork's new page
                    c[db] += 1
                    c["_extensions"] += 1
                if role[s] == "checkpointer":
                    c["buffers_checkpoint"] += 1
                elif role[s] == "bgwriter":
                    c["buffers_clean"] += 1
                else:
                    c["buffers_backend"] += 1
            elif op in ("create", "truncate") and role[s] == "other":
                c["buffers_backend"] += 1
                c[f"_backend_{op}s"] += 1
            if op == "truncate":
                size[f] = r[4]
        elif f in slru and op == "write" and role[s] == "other":
            c["buffers_backend"] += 1
            c["_backend_slru"] += 1
        elif f in wal:
            if op in ("fsync", "fdatasync"):
                new_wal.discard(f)
                if op == "fdatasync":
                    c["wal_sync"] += 1
            elif op == "write" and f not in new_wal:
                c["wal_write"] += 1
            elif op == "write":
                c["_wal_fills"] += 1
    c["_new_wal_segments"] = sum(1 for f in wal if files[f]["size"] is None)
    return c


@pytest.mark.skipif(not IS_ROOT, reason="runs PostgreSQL as user postgres (needs root)")
@pytest.mark.skipif(not os.path.exists("/sys/kernel/btf/vmlinux"),
                    reason="this kernel has no BTF (/sys/kernel/btf/vmlinux): no BPF capture")
def test_postgresql_bpf_capture_matches_pg_counters(checker, tmp_path):
    """PostgreSQL 15 under pgbench, captured with the BPF tracer: over the
    capture, the trace's data-file reads equal pg_stat_database.blks_read,
    its page writes by the checkpointer, the bgwriter and the other processes
    pg_stat_bgwriter's buffers_checkpoint, buffers_clean and buffers_backend,
    its WAL writes and syncs pg_stat_wal's wal_write and wal_sync; and the
    replay replays every record."""
    if not (PG_BIN / "initdb").exists() or not shutil.which("pgbench"):
        pytest.fail("PostgreSQL 15 is not installed (scripts/install-deps.sh --test installs it)",
                    pytrace=False)
    base = Path(tempfile.mkdtemp(prefix="dbcapture-pgc.", dir="/tmp"))
    os.chmod(base, 0o755)
    shutil.chown(base, "postgres")
    pg = ["runuser", "-u", "postgres", "--"]
    data = base / "data"
    # shared_buffers smaller than pgbench's tables: cold reads, evictions by
    # the backends, and work for the bgwriter. Quiet edges for the window:
    # autovacuum off; wal_level=minimal, so that the bgwriter logs no
    # running-xacts record (every 15 s with replica); fdatasync for the WAL.
    opts = (f"-k {base} -c listen_addresses= -c shared_buffers=4MB -c fsync=on "
            "-c autovacuum=off -c wal_level=minimal -c max_wal_senders=0 "
            "-c wal_sync_method=fdatasync")
    started = False
    cap = sess = None
    try:
        run = lambda *c: subprocess.run([*pg, *map(str, c)], capture_output=True,  # noqa: E731
                                        text=True, timeout=120, cwd=str(base))
        r = run(PG_BIN / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
        assert r.returncode == 0, r.stderr
        r = run(PG_BIN / "pg_ctl", "-D", data, "-o", opts, "-l", base / "log", "-w", "start")
        assert r.returncode == 0, r.stderr + (base / "log").read_text()
        started = True
        r = run("pgbench", "-h", base, "-i", "-s", "1", "-q", "postgres")
        assert r.returncode == 0, r.stderr
        r = run(PG_BIN / "pg_ctl", "-D", data, "-o", opts, "-l", base / "log", "-m", "fast",
                "-w", "restart")
        assert r.returncode == 0, r.stderr
        pid = int((data / "postmaster.pid").read_text().split()[0])
        sess = PgSession(pg, base)
        dboid = int(sess.query("SELECT oid FROM pg_database "
                               "WHERE datname = current_database()")[0][0])
        wal_method = sess.query("SHOW wal_sync_method")[0][0]
        sess.others()
        for attempt in range(3):
            out, ready = base / "pg.trace.gz", base / "ready"
            ready.unlink(missing_ok=True)
            quiet = sess.checkpoint()
            cap = attach_postgresql(data, pid, ready, "PostgreSQL 15 pgbench counters test", out,
                                    "bpf")
            before = sess.counters()
            r = run("pgbench", "-h", base, "-n", "-c", "2", "-j", "2", "-T", "3", "postgres")
            assert r.returncode == 0, r.stderr
            t0 = time.monotonic()
            while sess.others():
                assert time.monotonic() - t0 < 60, "pgbench's backends did not exit"
                time.sleep(0.05)
            after = sess.checkpoint()
            cap.send_signal(signal.SIGINT)
            _, err = cap.communicate(timeout=120)
            assert cap.returncode == 0, err
            cap = None
            later = sess.counters()
            if before == quiet and later == after:
                break
            print(f"PostgreSQL moved at the window's edges: {quiet} {before} / {after} {later}")
        else:
            pytest.fail("PostgreSQL's counters moved at the capture's edges, three times")
        truth = {k: after[k] - before[k] for k in PG_COUNTERS}
        head, files, streams, recs = read_trace(out)
        assert "incomplete" not in head, head
        assert "capture: iocap -p" in head["source"]
        n = c_check(checker, out)
        py_check(out)
        seen = pg_counts(out, dboid, wal_method)
        print(f"PostgreSQL 15 pgbench, BPF capture: PostgreSQL's counters over the capture "
              f"{truth}, the trace {seen}")
        parts = {k: seen.pop(k) for k in list(seen) if k.startswith("_")}
        assert seen == truth, (seen, truth, parts)
        for k in ("blks_read", "buffers_checkpoint", "buffers_backend", "wal_write", "wal_sync"):
            assert truth[k] > 0, (k, truth)
        if attempt == 0:        # a retry may fit pgbench_history's rows in its last page
            assert parts["_extensions"] > 0, parts
        # the replay replays every record
        target = tmp_path / "replay"
        target.mkdir()
        rep = tmp_path / "rep.jsonl"
        res = run_fio(["--name=pg", f"--ioengine=external:{DBR_ENGINE}", f"--dbr_trace={out}",
                       f"--dbr_target={target}", f"--dbr_report_file={rep}",
                       "--dbr_report=none"]).ok()
        report = json.loads(rep.read_text().splitlines()[0])
        assert report["replayed"] == report["trace_records"] == n == len(recs), report
        assert report["errors"] == 0, report
        job = res.job()
        assert job["read"]["total_ios"] == sum(1 for r in recs if r[3] == "read")
    finally:
        if sess is not None:
            sess.close()
        if cap is not None:
            cap.kill()
            cap.wait()
        if started:
            subprocess.run([*pg, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate",
                            "-w", "stop"], capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------
# (4b) MariaDB: sysbench under fio-pack capture attach, against InnoDB's counters
# ---------------------------------------------------------------------------

# InnoDB's tablespaces: what Innodb_data_reads and Innodb_data_writes count
# (the redo log's writes are not in them; its fsyncs are in Innodb_data_fsyncs).
# Innodb_log_writes counts log_t::write_buf() calls: one pwrite of redo at or
# past ib_logfile0's header (12288 bytes), two when it wraps to the start;
# checkpoints write the header's blocks at 4096 and 8192 and are not counted.
INNODB_SPACE = re.compile(r"(^|/)(ibdata\d+|undo\d+|ibtmp\d+)$|\.ibd$")
INNODB_LOG = re.compile(r"(^|/)ib_logfile\d+$")
INNODB_STATUS = ("Innodb_data_reads", "Innodb_data_writes", "Innodb_data_fsyncs",
                 "Innodb_data_read", "Innodb_data_written", "Innodb_log_writes",
                 "Innodb_buffer_pool_pages_dirty")
INNODB_LOG_START = 12288
SYSBENCH = ["--db-driver=mysql", "--mysql-user=root", "--tables=2", "--table-size=20000"]


class MariaDB:
    """A mariadbd of Debian's mariadb-server on a private data directory and
    socket, no network; stopped by stop()."""

    def __init__(self, base: Path):
        self.base, self.data, self.sock = base, base / "data", base / "sock"
        self.proc = None
        r = subprocess.run(["mariadb-install-db", "--no-defaults", "--user=root",
                            f"--datadir={self.data}", "--auth-root-authentication-method=normal",
                            "--skip-test-db"], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr

    def start(self, *opts):
        self.log = self.base / "error.log"
        self.log.write_text("")
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", "--user=root", f"--datadir={self.data}",
             f"--socket={self.sock}", "--skip-networking", f"--log-error={self.log}",
             "--innodb-buffer-pool-size=8M", "--innodb-buffer-pool-load-at-startup=0",
             "--innodb-buffer-pool-dump-at-shutdown=0", *opts],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while self.sql("SELECT 1", check=False) is None:
            assert self.proc.poll() is None, "mariadbd exited:\n" + self.log.read_text()
            assert time.monotonic() - t0 < 120, "mariadbd did not start:\n" + self.log.read_text()
            time.sleep(0.2)

    def sql(self, query, check=True):
        r = subprocess.run(["mariadb", f"--socket={self.sock}", "-uroot", "-N", "-B", "-e", query],
                           capture_output=True, text=True, timeout=120)
        if check:
            assert r.returncode == 0, r.stderr
        return r.stdout if r.returncode == 0 else None

    def status(self) -> dict:
        names = ",".join(f"'{n}'" for n in INNODB_STATUS)
        out = self.sql(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")
        return {k: int(v) for k, v in (ln.split("\t") for ln in out.splitlines())}

    def quiesce(self) -> dict:
        """Flushes every dirty page, then waits until InnoDB's counters stop moving."""
        self.sql("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        last, t0 = None, time.monotonic()
        while True:
            now = self.status()
            if now == last and now["Innodb_buffer_pool_pages_dirty"] == 0:
                return now
            assert time.monotonic() - t0 < 120, f"InnoDB never went quiet: {now}"
            last = now
            time.sleep(1)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.sql("SHUTDOWN", check=False)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture(scope="module")
def mariadb(tmp_path_factory):
    if not (IS_ROOT and shutil.which("mariadbd") and shutil.which("sysbench")):
        pytest.fail("mariadb-server and sysbench are not installed, or not root "
                    "(scripts/install-deps.sh --test installs them)", pytrace=False)
    db = MariaDB(Path(tempfile.mkdtemp(prefix="dbcapture-mariadb.", dir="/tmp")))
    try:
        db.start()
        db.sql("CREATE DATABASE sbtest")
        r = subprocess.run(["sysbench", "oltp_read_write", f"--mysql-socket={db.sock}",
                            *SYSBENCH, "prepare"], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        db.stop()
        yield db
    finally:
        db.stop()
        shutil.rmtree(db.base, ignore_errors=True)


def capture_mariadb(db: MariaDB, out: Path, *extra):
    """Attaches to the running server, runs sysbench for 3 s, waits until
    InnoDB is quiet, stops the capture: (dbcapture's exit status, its stderr,
    InnoDB's counters over the capture), or None if InnoDB did I/O while the
    capture was stopping (the counters would not be the capture's)."""
    ready = db.base / "ready"
    ready.unlink(missing_ok=True)
    db.quiesce()    # the counters at attach time are the capture's start
    cap = subprocess.Popen([*TOOL, "attach", "--datadir", str(db.data),
                            "--db", "mariadb", "--pid", str(db.proc.pid), "--ready", str(ready),
                            "--source", "MariaDB 10.11 sysbench oltp_read_write", "-o", str(out),
                            *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=_env())
    try:
        t0 = time.monotonic()
        while not ready.exists():
            assert cap.poll() is None, cap.communicate()[1]
            assert time.monotonic() - t0 < 60, "strace did not attach within 60 s"
            time.sleep(0.05)
        before = db.status()
        r = subprocess.run(["sysbench", "oltp_read_write", f"--mysql-socket={db.sock}", *SYSBENCH,
                            "--threads=2", "--time=3", "run"], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        after = db.quiesce()
        cap.send_signal(signal.SIGINT)
        _, err = cap.communicate(timeout=300)
        rc, cap = cap.returncode, None
    finally:
        if cap is not None:
            cap.kill()
            cap.wait()
    if db.status() != after:
        return None
    return rc, err, {k: after[k] - before[k] for k in INNODB_STATUS[:6]}


def run_and_capture(db: MariaDB, out: Path, opts, *extra):
    """Starts the server with @opts, captures a sysbench run (again while
    InnoDB did I/O as the capture stopped: up to three times), stops it:
    (capture_mariadb's result, the server's error log)."""
    db.start(*opts)
    try:
        for attempt in range(3):
            got = capture_mariadb(db, out, *extra)
            if got is not None:
                return got, db.log.read_text()
        pytest.fail("InnoDB kept doing I/O after the workload, three times")
    finally:
        db.stop()


def innodb_counts(path):
    """What the trace holds, as InnoDB counts it."""
    _, files, _, recs = read_trace(path)
    space = {i for i, f in files.items() if INNODB_SPACE.search(f["path"])}
    log = {i for i, f in files.items() if INNODB_LOG.search(f["path"])}
    c = dict.fromkeys(INNODB_STATUS[:6], 0)
    c["log_wraps"] = 0
    at_end = set()      # streams whose last record was a log write up to the log's end
    for r in recs:
        if r[2] in log and r[3] == "write" and r[4] >= INNODB_LOG_START:
            c["Innodb_log_writes"] += 1
            # the rest of a write that wrapped, or a new write that starts
            # where one ended exactly at the end: the trace cannot tell
            if r[4] == INNODB_LOG_START and r[1] in at_end:
                c["log_wraps"] += 1
        if r[2] in log and r[3] == "write" and r[4] + r[5] == files[r[2]]["max"]:
            at_end.add(r[1])
        else:
            at_end.discard(r[1])
        if r[2] in space and r[3] in ("read", "write"):
            c["Innodb_data_reads" if r[3] == "read" else "Innodb_data_writes"] += 1
            c["Innodb_data_read" if r[3] == "read" else "Innodb_data_written"] += r[5]
        elif r[2] in space | log and r[3] in ("fsync", "fdatasync"):
            c["Innodb_data_fsyncs"] += 1
    return c


def assert_innodb_equal(seen: dict, truth: dict, keys=None):
    """@seen (innodb_counts) equals InnoDB's counters; Innodb_log_writes within
    the log wraps of the window (each may be one write_buf() or two)."""
    seen = dict(seen)
    wraps = seen.pop("log_wraps")
    keys = keys or list(truth)
    lw = "Innodb_log_writes"
    assert {k: seen[k] for k in keys if k != lw} == {k: truth[k] for k in keys if k != lw}, \
        (seen, truth)
    if lw in keys:
        assert seen[lw] - wraps <= truth[lw] <= seen[lw], (seen, truth, wraps)


@pytest.mark.skipif(not IS_ROOT, reason="runs MariaDB (needs root)")
def test_mariadb_capture_matches_innodb_counters(mariadb, checker):
    """innodb_use_native_aio=0: every page read, page and doublewrite write
    and fsync of InnoDB is in the trace, as MariaDB itself counts them."""
    out = mariadb.base / "sync.trace.gz"
    got, log = run_and_capture(mariadb, out, ["--innodb-use-native-aio=0"], "--tracer", "strace")
    rc, err, truth = got
    assert rc == 0, err
    head, files, streams, recs = read_trace(out)
    assert "incomplete" not in head
    c_check(checker, out)
    py_check(out)
    assert truth["Innodb_data_reads"] > 100 and truth["Innodb_data_writes"] > 100, truth
    assert_innodb_equal(innodb_counts(out), truth)
    print(f"MariaDB native AIO off: InnoDB counters over the capture {truth}")



@pytest.mark.skipif(not IS_ROOT, reason="runs MariaDB (needs root)")
def test_mariadb_native_aio_capture_is_incomplete(mariadb, checker, tmp_path):
    """MariaDB 10.11's default, InnoDB "Using io_uring": its page and
    doublewrite writes are not visible to strace. The trace says so, the
    capture exits 3, check and the replay repeat it."""
    out = mariadb.base / "uring.trace.gz"
    got, log = run_and_capture(mariadb, out, [], "--tracer", "strace")
    rc, err, truth = got
    assert rc == 3, err
    head, files, streams, recs = read_trace(out)
    seen = innodb_counts(out)
    if "Using io_uring" in log:
        hole = "io_uring_enter calls: the reads, writes and syncs submitted through io_uring"
    else:
        assert "Using Linux native AIO" in log, log
        hole = "io_submit requests strace did not print"
    holes = [ln for ln in head.get("incomplete", []) if hole in ln]
    assert len(holes) == 1 and int(holes[0].split()[0]) > 0, head.get("incomplete")
    assert f"fio-pack capture: {out}: written, but incomplete" in err.splitlines()[-1]
    # what is lost: the writes (all of them), not the reads (only read-ahead)
    assert truth["Innodb_data_writes"] > 100 and seen["Innodb_data_writes"] == 0, (truth, seen)
    assert 0.9 * truth["Innodb_data_reads"] <= seen["Innodb_data_reads"] \
        <= truth["Innodb_data_reads"], (truth, seen)
    assert seen["Innodb_data_fsyncs"] == truth["Innodb_data_fsyncs"], (truth, seen)
    assert truth["Innodb_log_writes"] > 0
    assert_innodb_equal(seen, truth, ["Innodb_log_writes"])
    print(f"MariaDB default (native AIO): InnoDB counters {truth}, in the trace {seen}")
    c_check(checker, out)
    r = subprocess.run([*DBTRACE, "check", str(out)], capture_output=True,
                       text=True, env=_env(), timeout=120)
    assert r.returncode == 3 and f"{out}: incomplete: {holes[0]}" in r.stdout, r.stdout + r.stderr
    target = tmp_path / "replay"
    target.mkdir()
    res = run_fio(["--name=uring", f"--ioengine=external:{DBR_ENGINE}", f"--dbr_trace={out}",
                   f"--dbr_target={target}"])
    assert res.rc != 0 and f"dbreplay: {out} is an incomplete capture: " in res.stderr
    assert os.listdir(target) == []
    res = run_fio(["--name=uring", f"--ioengine=external:{DBR_ENGINE}", f"--dbr_trace={out}",
                   f"--dbr_target={target}", "--dbr_accept_incomplete=1"]).ok()
    assert f"dbreplay: uring: INCOMPLETE capture, the replay lacks: {holes[0]}" in res.stderr


@pytest.mark.skipif(not IS_ROOT or not os.path.exists("/sys/kernel/btf/vmlinux"),
                    reason="the BPF capture needs root and a kernel with BTF")
def test_mariadb_default_configuration_with_bpf(mariadb, checker):
    """MariaDB 10.11 as Debian ships it, io_uring on: the BPF capture sees
    what strace cannot, and the trace holds every InnoDB read, write and
    fsync and every redo log write, as InnoDB counts them."""
    out = mariadb.base / "bpf.trace.gz"
    got, log = run_and_capture(mariadb, out, [], "--tracer", "bpf")
    rc, err, truth = got
    assert "Using io_uring" in log or "Using Linux native AIO" in log, log
    assert rc == 0, err
    head, files, streams, recs = read_trace(out)
    assert "incomplete" not in head, head
    assert "capture: iocap -p" in head["source"]
    c_check(checker, out)
    py_check(out)
    assert truth["Innodb_data_writes"] > 100, truth
    seen = innodb_counts(out)
    print(f"MariaDB default, BPF capture: InnoDB counters over the capture {truth}, "
          f"the trace {seen}")
    # Every count is exact, and the bytes written. The bytes read are within
    # 0.2%: in 2 of 6 runs the trace held 1 and 10 pages (16 KiB reads, all
    # of them) more than Innodb_data_read, with Innodb_data_reads equal; not
    # explained yet (InnoDB's read-ahead adds to the two counters apart).
    read = seen.pop("Innodb_data_read"), truth.pop("Innodb_data_read")
    assert_innodb_equal(seen, truth)
    assert read[1] <= read[0] <= read[1] * 1.002, read

# ---------------------------------------------------------------------------
# (5) the shipped traces
# ---------------------------------------------------------------------------

SHIPPED = {"pgbench": "PostgreSQL", "sqlite-load": "SQLite", "mariadb-load": "MariaDB",
           "mariadb-dump": "MariaDB"}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_trace(name, checker):
    path = TRACES / f"{name}.trace.gz"
    assert path.is_file(), f"{path} is missing"
    assert path.stat().st_size < 2 << 20
    n = c_check(checker, path)
    assert f"{n} records" in py_check(path)
    head, files, streams, recs = read_trace(path)
    src = head["source"]
    assert src.startswith(SHIPPED[name]) and "capture: strace -f -ttt -yy" in src
    assert head["timeunit"] == "us" and n == len(recs) and 500 <= n <= 100000
    assert sum(f["max"] for f in files.values()) < 400 << 20
    notes = TRACES.parent / "README.md"
    assert f"`{name}.trace.gz`" in notes.read_text()
