"""scripts/fio-pack capture: strace and BPF captures as dbtrace traces.

Every trace is read back by the C parser (engines/lib/dbtrace.c, through a
small checker compiled here) and by scripts/fio-pack trace check. The captures are
real: sqlite3 loading rows under `fio-pack capture run`, a small C program doing
known calls from two threads under strace, the converter's handling of
what a capture cannot see, bad input, and the shipped traces. The live
PostgreSQL and MariaDB captures, held against the databases' own
counters, are in test_dbcapture_databases.py."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fiopack.capture import procs, rules
from helpers.capture import (DBTRACE, IS_ROOT, PG, REPO, by_path, c_check, ok, py_check,
                             read_trace, tool, tool_env)
from helpers.fio import DBR_ENGINE, run_fio

TRACES = REPO / "jobs" / "dbreplay" / "traces"

# Pure Python plus strace: nothing for the sanitizer pass to add.
pytestmark = pytest.mark.nosan


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
                       capture_output=True, text=True, env=tool_env())
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
        env = dict(tool_env(), OUTSIDE=str(tmp_path / "outside.log"))
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
    # b.dat is renamed c.dat: the trace names it by its new name
    a, b, pre, top = (by_path(files, p) for p in ("a.dat", "c.dat", "pre.dat", "."))
    assert files[a] == {"role": "other", "size": None, "max": 40 * 8192, "path": "a.dat"}
    assert files[b] == {"role": "other", "size": None, "max": 40 * 4096, "path": "c.dat"}
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


# PostgreSQL makes each new WAL segment as pg_wal/xlogtemp.PID, zero-filled
# and synced, then renames it into place (XLogFileInitInternal,
# InstallXLogFileSegment), twice here under the same temporary name; its
# statistics file (15) is written as a temporary file renamed over the old one.
WAL_SEGMENTS = """\
300  2000.000000 openat(AT_FDCWD</pg>, "pg_wal/xlogtemp.300", O_RDWR|O_CREAT|O_EXCL, 0600) = 3</pg/pg_wal/xlogtemp.300>
300  2000.000010 pwrite64(3</pg/pg_wal/xlogtemp.300>, ""..., 8192, 0) = 8192
300  2000.000020 fsync(3</pg/pg_wal/xlogtemp.300>) = 0
300  2000.000030 close(3</pg/pg_wal/xlogtemp.300>) = 0
300  2000.000040 rename("/pg/pg_wal/xlogtemp.300", "/pg/pg_wal/000000010000000000000002") = 0
300  2000.000050 openat(AT_FDCWD</pg>, "pg_wal/000000010000000000000002", O_RDWR) = 3</pg/pg_wal/000000010000000000000002>
300  2000.000060 pwrite64(3</pg/pg_wal/000000010000000000000002>, ""..., 8192, 0) = 8192
300  2000.000070 fdatasync(3</pg/pg_wal/000000010000000000000002>) = 0
300  2000.000080 openat(AT_FDCWD</pg>, "pg_wal/xlogtemp.300", O_RDWR|O_CREAT|O_EXCL, 0600) = 4</pg/pg_wal/xlogtemp.300>
300  2000.000090 pwrite64(4</pg/pg_wal/xlogtemp.300>, ""..., 8192, 0) = 8192
300  2000.000100 rename("/pg/pg_wal/xlogtemp.300", "/pg/pg_wal/000000010000000000000003") = 0
300  2000.000110 pwrite64(4</pg/pg_wal/000000010000000000000003>, ""..., 8192, 8192) = 8192
301  2000.000120 openat(AT_FDCWD</pg>, "pg_stat_tmp/global.tmp", O_WRONLY|O_CREAT|O_TRUNC, 0600) = 5</pg/pg_stat_tmp/global.tmp>
301  2000.000130 write(5</pg/pg_stat_tmp/global.tmp>, ""..., 100) = 100
301  2000.000140 close(5</pg/pg_stat_tmp/global.tmp>) = 0
301  2000.000150 rename("/pg/pg_stat_tmp/global.tmp", "/pg/pg_stat_tmp/global.stat") = 0
301  2000.000160 openat(AT_FDCWD</pg>, "pg_stat_tmp/global.tmp", O_WRONLY|O_CREAT|O_TRUNC, 0600) = 5</pg/pg_stat_tmp/global.tmp>
301  2000.000170 write(5</pg/pg_stat_tmp/global.tmp>, ""..., 100) = 100
301  2000.000180 close(5</pg/pg_stat_tmp/global.tmp>) = 0
301  2000.000190 rename("/pg/pg_stat_tmp/global.tmp", "/pg/pg_stat_tmp/global.stat") = 0
"""


def test_converter_names_a_renamed_file_by_its_new_name(tmp_path, checker):
    """A file made under a temporary name and renamed into place is declared
    under the name it is renamed to: PostgreSQL's new WAL segments are
    pg_wal/0000..., as a DBA counting WAL by path expects, not
    pg_wal/xlogtemp.PID~N. A file renamed over one the trace has keeps its
    name, and the two stay two files, not one more each time."""
    raw = tmp_path / "wal.strace"
    raw.write_text(WAL_SEGMENTS)
    (tmp_path / "listing").write_text("d 0 pg_wal\nd 0 pg_stat_tmp\nf 100 pg_stat_tmp/global.stat\n")
    out = tmp_path / "wal.trace"
    ok(tool("convert", raw, "--datadir", "/pg", "--db", "postgresql", "--listing",
            tmp_path / "listing", "-o", out))
    c_check(checker, out)
    _, files, _, recs = read_trace(out)
    paths = sorted(f["path"] for f in files.values())
    assert paths == ["pg_stat_tmp/global.stat", "pg_stat_tmp/global.tmp",
                     "pg_stat_tmp/global.tmp~1", "pg_wal/000000010000000000000002",
                     "pg_wal/000000010000000000000003"], paths
    seg2, seg3 = by_path(files, "pg_wal/000000010000000000000002"), \
        by_path(files, "pg_wal/000000010000000000000003")
    assert files[seg2] == {"role": "log", "size": None, "max": 8192,
                           "path": "pg_wal/000000010000000000000002"}
    assert [r[3] for r in recs if r[2] == seg2] == ["create", "write", "fsync", "write",
                                                     "fdatasync"]
    assert [r[3:] for r in recs if r[2] == seg3] == [("create",), ("write", 0, 8192),
                                                      ("write", 8192, 8192)]


# MariaDB's sort files: open(TMPDIR, O_TMPFILE) gives a file with no name.
# iocap names its descriptor by the directory (the path it was opened with),
# strace -yy by "DIR/#INODE (deleted)"; two at once, and a descriptor of one
# made before the capture (iocap: the directory's path).
UNNAMED = """\
400 3000.000000 openat(AT_FDCWD, "/db/tmp", O_RDWR|O_CLOEXEC|O_TMPFILE|O_DIRECTORY) = 7</db/tmp> <0.000010>
400 3000.000020 pwrite64(7</db/tmp>, ""..., 1048576, 0) = 1048576 <0.000100>
401 3000.000030 openat(AT_FDCWD</db>, "tmp", O_RDWR|O_TMPFILE, 0660) = 8</db/tmp/#1234 (deleted)> <0.000010>
401 3000.000040 pwrite64(8</db/tmp/#1234 (deleted)>, ""..., 4096, 0) = 4096 <0.000010>
400 3000.000200 pread64(7</db/tmp>, ""..., 1048576, 0) = 1048576 <0.000100>
400 3000.000300 fsync(7</db/tmp>) = 0 <0.000010>
400 3000.000400 close(7</db/tmp>) = 0 <0.000001>
401 3000.000500 pread64(8</db/tmp/#1234 (deleted)>, ""..., 4096, 0) = 4096 <0.000010>
402 3000.000600 pread64(9</db/tmp>, ""..., 4096, 0) = 4096 <0.000010>
"""


def test_converter_records_files_without_a_name(tmp_path, checker):
    """I/O on files made with O_TMPFILE (MariaDB's index sort spills there)
    is recorded: each such file is a file of the trace, role temp, created
    and unlinked where it was opened, its reads, writes and syncs its own.
    It used to vanish without a word (the open was taken for a directory's,
    O_TMPFILE carrying O_DIRECTORY, and I/O on a directory was not counted):
    what still has no file to go to, a descriptor of one opened before the
    capture, makes the trace incomplete."""
    raw = tmp_path / "unnamed.out"
    raw.write_text(UNNAMED)
    (tmp_path / "listing").write_text("d 0 tmp\n")
    out = tmp_path / "unnamed.trace"
    r = tool("convert", raw, "--datadir", "/db", "--db", "mariadb", "--listing",
             tmp_path / "listing", "-o", out)
    assert r.returncode == 3, r.stderr
    c_check(checker, out)
    head, files, _, recs = read_trace(out)
    assert head["incomplete"] == ["1 pread64 calls on descriptors that name a directory (files "
                                  "made with O_TMPFILE before the capture)"], head
    one, two = by_path(files, "tmp/#tmpfile.1"), by_path(files, "tmp/#tmpfile.2")
    assert files[one] == {"role": "temp", "size": None, "max": 1 << 20, "path": "tmp/#tmpfile.1"}
    assert files[two] == {"role": "temp", "size": None, "max": 4096, "path": "tmp/#tmpfile.2"}
    assert [r[3:] for r in recs if r[2] == one] == [
        ("create",), ("unlink",), ("write", 0, 1 << 20), ("read", 0, 1 << 20), ("fsync",)]
    assert [r[3:] for r in recs if r[2] == two] == [
        ("create",), ("unlink",), ("write", 0, 4096), ("read", 0, 4096)]
    assert len(files) == 2, files


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
    "incomplete 3 io_submit requests strace did not print (the BPF capture, --tracer bpf, "
    "sees them)",
    "incomplete 2 io_uring_enter calls: the reads, writes and syncs submitted through "
    "io_uring are invisible to strace and none is in the trace (capture with --tracer bpf)",
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
                       text=True, env=tool_env(), timeout=120)
    assert r.returncode == 3, r.stderr
    assert r.stdout.splitlines()[1:] == [f"{out}: incomplete: {ln[11:]}" for ln in HOLE_LINES]
    r = subprocess.run([*DBTRACE, "export-iolog", str(out), "-o",
                        str(tmp_path / "x.iolog"), "--quiet"], capture_output=True, text=True,
                       env=tool_env(), timeout=120)
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


@pytest.fixture
def process_tree():
    """TREE_PY running: python's 3 threads, and per thread a sh with its 2
    sleeps, 9 tasks; its pid."""
    p = subprocess.Popen([sys.executable, "-c", TREE_PY], start_new_session=True)
    try:
        t0 = time.monotonic()
        while len(procs._tasks_of_walk([p.pid])) < 9:
            assert p.poll() is None and time.monotonic() - t0 < 30, "the process tree did not start"
            time.sleep(0.05)
        yield p.pid
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def test_tasks_of_finds_every_descendant(process_tree):
    """The BPF capture names the tasks it traces from tasks_of(), sampled
    every 200 ms. It follows each thread's /proc children instead of reading
    every process of the host: it must find what that walk finds, threads,
    children forked by any thread, and grandchildren."""
    pid = process_tree
    walk = sorted(procs._tasks_of_walk([pid]))
    got = sorted(procs.tasks_of([pid]))
    assert got == walk and len(got) == 9, (got, walk)
    assert sum(1 for p, tid in got if p == pid) == 3
    assert sorted(procs.tasks_of([pid, pid])) == got


def test_watcher_sample_is_cheap_and_still_finds_every_task(process_tree, monkeypatch):
    """The BPF capture's sample every 200 ms reads only the main threads'
    children and no settled thread's name; every ALL_CHILDREN_EVERY-th
    sample still walks every thread's children, so a child forked by any
    thread is named."""
    root = process_tree
    every = sorted(procs.tasks_of([root]))
    # the sh's are children of python's other threads, not of its main one
    assert sorted(procs.tasks_of([root], False)) == [t for t in every if t[0] == root]
    reads = []
    real = procs.task_label
    monkeypatch.setattr(procs, "task_label", lambda pid, tid: reads.append(tid) or
                        real(pid, tid))
    w = procs.Watcher()
    for _ in range(w.ALL_CHILDREN_EVERY):
        w.sample(roots=[root])
    assert sorted(w.info) == sorted(tid for _, tid in every)
    assert all(w.info[tid]["name"].endswith(f"-{tid}") for _, tid in every)
    assert {w.info[pid]["name"].split("-")[0] for pid, tid in every if pid == tid} == \
        {"python3", "sh", "sleep"}
    # python's two other threads: read SETTLED times, then no more
    threads = [tid for pid, tid in every if pid != tid]
    assert len(threads) == 2
    assert all(reads.count(t) == w.SETTLED for t in threads), reads
    assert reads.count(root) == w.ALL_CHILDREN_EVERY


@pytest.mark.parametrize("title,label", [
    ("postgres: io worker 0", "ioworker"),
    ("postgres: 18/main: io worker 2", "ioworker"),
    ("postgres: walsummarizer", "walsummarizer"),
    ("postgres: slotsync worker", "slotsync-worker"),
    ("postgres: 15/main: checkpointer", "checkpointer"),
    ("postgres: postgres postgres [local] idle", "backend")])
def test_postgresql_titles_name_the_streams(title, label, tmp_path):
    """A PostgreSQL process is named by its title (ps): the auxiliary
    processes by their role, up to PostgreSQL 18's I/O workers, which issue
    the backends' reads with io_method=worker and must not pass for
    backends (dbr_streams=backend would take them); any other is a backend."""
    # a process whose comm is "postgres" and whose command line is the title
    postgres = tmp_path / "postgres"
    shutil.copy(shutil.which("sleep"), postgres)
    p = subprocess.Popen(["bash", "-c", f'exec -a "{title}" {postgres} 30'])
    try:
        t0 = time.monotonic()
        while not Path(f"/proc/{p.pid}/cmdline").read_bytes().startswith(b"postgres:"):
            assert time.monotonic() - t0 < 10
            time.sleep(0.01)
        assert procs.task_label(p.pid, p.pid) == label
    finally:
        p.kill()
        p.wait()


def test_finding_the_installed_postgresql_under_the_asan_preload():
    """make check's second pass runs pytest with libasan preloaded, and this
    module asks the installed PostgreSQL its version when it is imported:
    postgres run under that preload hung, and the whole pass with it."""
    if PG is None:
        pytest.skip("no PostgreSQL installed")
    asan = subprocess.run(["cc", "-print-file-name=libasan.so"], capture_output=True,
                          text=True).stdout.strip()
    if not os.path.isabs(asan):
        pytest.skip("no libasan")
    env = dict(os.environ, LD_PRELOAD=asan, ASAN_OPTIONS="detect_leaks=0:abort_on_error=1",
               PYTHONPATH=str(REPO / "scripts"))
    r = subprocess.run([sys.executable, "-c", "from fiopack.capture import postgres; "
                        "print(postgres.installed().major)"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == str(PG.major), r.stderr


def test_run_says_a_command_killed_by_a_signal_was_killed(tmp_path):
    """Under either tracer, a command a signal ended "was killed by signal
    SIGTERM"; the BPF capture said it "exited with status -15"."""
    r = tool("run", "--datadir", tmp_path, "--db", "sqlite", "-o", tmp_path / "x.trace", "--",
             "sh", "-c", "kill -TERM $$")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.endswith(" was killed by signal SIGTERM\n") and "-15" not in r.stderr, r.stderr
    assert not (tmp_path / "x.trace").exists()


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
    # the tracer is the BPF capture, strace where it cannot run: no page says
    # the capture is strace's, nor tells to configure the database for it
    pages = {cmd: ok(tool(cmd, "--help")).stdout for cmd in ("run", "attach", "convert")}
    pages["top"] = r.stdout
    assert "The tracer is the BPF capture, build/iocap" in r.stdout
    assert "then captures each PID" in pages["attach"] and "the BPF capture, build/iocap" in \
        pages["attach"]
    assert "held until\n    the BPF capture (build/iocap" in pages["run"]
    for name, page in pages.items():
        for old in ("with strace and\n", "attach strace to", "start COMMAND under strace",
                    "then attaches\n", "innodb_use_native_aio=0", "without io_uring"):
            assert old not in page, (name, old)


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
