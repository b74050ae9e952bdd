"""The BPF capture's converter in C (build/iocap-convert, capture/native.py)
against the Python converter it follows: the same trace, byte for byte, and
the same notes, on every kind of call iocap writes; what it does not hold
goes to the Python converter; and the capture's note gives the capture's
time, not the conversion's. (Every capture of tests/capture runs both
converters too: conftest.py's _both_converters.)"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.fio import ENGINE_DIR, REPO

TOOL = [sys.executable, str(REPO / "scripts" / "fio-pack"), "capture"]
CONVERT = REPO / "build" / ("iocap-convert-asan" if ENGINE_DIR.name == "asan" or
                            os.environ.get("PACK_IOCAP_CONVERT") == "asan" else "iocap-convert")


def tool(*args, env=None, timeout=300):
    return subprocess.run([*TOOL, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


# Every call iocap writes (tools/iocap/events.c on_syscall, data_call,
# fd_call), in the shapes it writes them, @ the data directory: threads
# sharing descriptors and a child copying them, dups, a directory renamed
# with files below it, a WAL segment made under a temporary name, O_TMPFILE,
# I/O through a descriptor of an unlinked file, failed and 0-byte calls,
# a transfer longer than a record, a clock that goes back, sockets and
# devices, a path the format cannot hold, files outside the directory.
IOCAP_LINES = r"""
100 1000.000001 openat(AT_FDCWD, "@/a", O_RDWR|O_CREAT) = 3<@/a> <0.000010>
100 1000.000002 pwrite64(3<@/a>, ""..., 8192, 0) = 8192 <0.000020>
100 1000.000003 pread64(3<@/a>, ""..., 4096, 4096) = 4096 <0.000005>
100 1000.000004 fdatasync(3<@/a>) = 0 <0.000100>
100 1000.000005 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD|0}, 88) = 101 <0.000050>
101 1000.000009 pwrite64(3<@/a>, ""..., 100, 8192) = 100 <0.000003>
101 1000.000008 pwrite64(3<@/a>, ""..., 100, 8292) = 100 <0.000003>
100 1000.000010 clone3({flags=0}, 88) = 200 <0.000050>
200 1000.000011 dup(3<@/a>) = 5<@/a> <0.000001>
200 1000.000012 close(3<@/a>) = 0 <0.000001>
200 1000.000013 pread64(5<@/a>, ""..., 100, 0) = 100 <0.000001>
100 1000.000014 mkdir("@/sub", 0700) = 0 <0.000004>
100 1000.000015 openat(AT_FDCWD, "@/sub/x", O_WRONLY|O_CREAT|O_EXCL|O_DIRECT) = 6<@/sub/x> <0.000010>
100 1000.000016 pwrite64(6<@/sub/x>, ""..., 4096, 0) = 4096 <0.000030>
100 1000.000017 renameat2(AT_FDCWD, "@/sub", AT_FDCWD, "@/sub2", 0) = 0 <0.000010>
100 1000.000018 pwrite64(6<@/sub2/x>, ""..., 4096, 4096) = 4096 <0.000030>
100 1000.000019 fsync(6<@/sub2/x>) = 0 <0.000030>
100 1000.000020 openat(AT_FDCWD, "@/sub2", O_RDONLY|O_TMPFILE|O_DIRECTORY) = 7<@/sub2> <0.000010>
100 1000.000021 pwrite64(7<@/sub2>, ""..., 1048576, 0) = 1048576 <0.000300>
100 1000.000022 pread64(7<@/sub2>, ""..., 1048576, 0) = 1048576 <0.000300>
100 1000.000023 openat(AT_FDCWD, "@/pg_wal/xlogtemp.100", O_RDWR|O_CREAT|O_EXCL) = 8<@/pg_wal/xlogtemp.100> <0.000010>
100 1000.000024 pwrite64(8<@/pg_wal/xlogtemp.100>, ""..., 8192, 0) = 8192 <0.000010>
100 1000.000025 renameat2(AT_FDCWD, "@/pg_wal/xlogtemp.100", AT_FDCWD, "@/pg_wal/000000010000000000000001", 0) = 0 <0.000010>
100 1000.000026 fsync(8<@/pg_wal/000000010000000000000001>) = 0 <0.000010>
100 1000.000027 unlink("@/a") = 0 <0.000010>
200 1000.000028 pread64(5<@/a>(deleted), ""..., 10, 0) = 10 <0.000001>
100 1000.000029 ftruncate(8<@/pg_wal/000000010000000000000001>, 4096) = 0 <0.000001>
100 1000.000030 fallocate(8<@/pg_wal/000000010000000000000001>, FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE, 0, 2048) = 0 <0.000001>
100 1000.000031 fallocate(8<@/pg_wal/000000010000000000000001>, 0, 0, 65536) = 0 <0.000001>
100 1000.000032 fallocate(8<@/pg_wal/000000010000000000000001>, FALLOC_FL_ZERO_RANGE, 0, 4096) = 0 <0.000001>
100 1000.000033 sync_file_range(8<@/pg_wal/000000010000000000000001>, 0, 131072, 2) = 0 <0.000001>
100 1000.000034 pread64(9<other:[1234]>, ""..., 10, 0) = 10 <0.000001>
100 1000.000035 pread64(10</dev/null>, ""..., 10, 0) = 0 <0.000001>
100 1000.000036 pread64(4, ""..., 10, 0) = 10 <0.000001>
100 1000.000037 pwrite64(6<@/sub2/x>, ""..., 10, 0) = -1 ENOSPC (No space left on device) <0.000001>
100 1000.000038 openat(AT_FDCWD, "/etc/x\x0aname", O_RDONLY) = 11</etc/x\x0aname> <0.000001>
100 1000.000039 pread64(11</etc/x\x0aname>, ""..., 10, 0) = 10 <0.000001>
100 1000.000040 openat(AT_FDCWD, "/elsewhere/log", O_RDWR) = 12</elsewhere/log> <0.000001>
100 1000.000041 pwrite64(12</elsewhere/log>, ""..., 10, 0) = 10 <0.000001>
100 1000.000042 openat(AT_FDCWD, "@/listed", O_RDONLY) = 13<@/listed> <0.000001>
100 1000.000043 pread64(13<@/listed>, ""..., 8192, 4096) = 8192 <0.000001>
100 1000.000044 syncfs(13<@/listed>) = 0 <0.000001>
100 1000.000045 lseek(13<@/listed>, 0, SEEK_END) = 20480 <0.000001>
100 1000.000046 fcntl(13<@/listed>, F_DUPFD_CLOEXEC, 20) = 20<@/listed> <0.000001>
100 1000.000047 dup3(20<@/listed>, 30) = 30<@/listed> <0.000001>
100 1000.000048 pread64(30<@/listed>, ""..., 4096, 16384) = 4096 <0.000001>
100 1000.000049 truncate("@/listed", 100) = 0 <0.000001>
100 1000.000050 pwrite64(20<@/listed>, ""..., 134217728, 1000) = 134217728 <0.010000>
100 1000.000051 pread64(30<@/listed>, ""..., 4096, 134218728) = 0 <0.000001>
100 1000.000052 copy_file_range(13<@/listed>, NULL, -1, NULL, 0, 0) = 0 <0.000001>
100 1000.000053 sendfile(13<@/listed>, -1, NULL, 0) = 0 <0.000001>
100 1000.000054 openat(AT_FDCWD, "@/with space", O_RDWR|O_CREAT) = 14<@/with space> <0.000001>
100 1000.000055 pwrite64(14<@/with space>, ""..., 10, 0) = 10 <0.000001>
100 1000.000056 openat(AT_FDCWD, "@/caf\xe9", O_RDWR|O_CREAT|O_APPEND) = 15<@/caf\xe9> <0.000001>
100 1000.000057 pwrite64(15<@/caf\xe9>, ""..., 10, 0) = 10 <0.000001>
100 1000.000058 renameat2(AT_FDCWD, "@/caf\xe9", AT_FDCWD, "@/listed", RENAME_EXCHANGE) = 0 <0.000001>
100 1000.000059 pread64(15<@/listed>, ""..., 10, 0) = 10 <0.000001>
100 1000.000060 openat(AT_FDCWD, "@/old", O_RDONLY) = 16<@/old> <0.000001>
100 1000.000061 pread64(16<@/old>, ""..., 10, 0) = 10 <0.000001>
100 1000.000062 fdatasync(16<@/old>) = 0 <0.000001>
100 1000.000063 openat(AT_FDCWD, "@/dir2", O_RDONLY|O_DIRECTORY) = 17<@/dir2> <0.000001>
100 1000.000064 fdatasync(17<@/dir2>) = 0 <0.000001>
100 1000.000065 rmdir("@/dir2") = 0 <0.000001>
100 1000.000066 openat(AT_FDCWD, "@/old", O_WRONLY|O_TRUNC) = 18<@/old> <0.000001>
100 1000.000067 chdir("/tmp") = 0 <0.000001>
100 1000.000068 fchdir(17<@/dir2>) = -1 ENOENT (No such file or directory) <0.000001>
100 1000.000069 pread64(21<@/opened-before>, ""..., 512, 512) = 512 <0.000001>
100 1000.000070 pwrite64(22<@/opened-before>, ""..., 512, 0) = 512 <0.000001>
100 1000.000071 pwrite64(18<@/old>, ""..., 10, 0) = -1 EINTR (Interrupted system call) <0.000001>
100 1000.000072 close(18<@/old>) = 0 <0.000001>
100 1000.000073 openat(AT_FDCWD, "@", O_RDONLY|O_DIRECTORY) = 19<@> <0.000001>
100 1000.000074 fsync(19<@>) = 0 <0.000001>
300 1000.000075 pwrite64(1073741825<@/listed>, ""..., 4096, 8192) = 4096 <0.000001>
"""
LISTING = "d 0 \nf 5000 listed\nf 30 old\nd 0 dir2\nf 2048 opened-before\n"
PROCINFO = "100 name main-100\n101 name writer-101\n100 odirect 22\n"


def write_input(tmp_path: Path) -> tuple:
    data = tmp_path / "data"
    data.mkdir()
    raw = tmp_path / "iocap.out"
    raw.write_bytes(IOCAP_LINES.lstrip("\n").replace("@", str(data)).encode("latin-1"))
    (tmp_path / "listing").write_text(LISTING)
    (tmp_path / "procinfo").write_text(PROCINFO)
    return data, raw


@pytest.mark.parametrize("outside", ["drop", "keep"])
@pytest.mark.parametrize("listed", [True, False], ids=["listing", "no-listing"])
def test_the_c_converter_writes_the_python_converters_trace(tmp_path, outside, listed):
    """iocap-convert takes every line (exit 0), and fio-pack capture convert,
    checking (FIO_PACK_CONVERT_CHECK=1, set for these tests), finds the same
    trace and the same notes as the Python converter's."""
    assert os.access(CONVERT, os.X_OK), f"{CONVERT}: not built (make; make asan)"
    data, raw = write_input(tmp_path)
    extra = ["--listing", tmp_path / "listing"] if listed else []
    r = subprocess.run([str(CONVERT), "--root", str(data), "--outside", outside,
                        "--outside-prefix", "outside", "--pagesize", "4096",
                        "--body", str(tmp_path / "body"), "--state", str(tmp_path / "state"),
                        str(raw)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "c.trace"
    r = tool("convert", raw, "--datadir", data, "--db", "postgresql", "--outside", outside,
             *extra, "--procinfo", tmp_path / "procinfo", "--accept-incomplete", "-o", out)
    assert r.returncode == 0, r.stderr
    text = out.read_text(encoding="latin-1")
    # what the lines above are for is in the trace
    assert re.search(r"^file \d+ temp - 1048576 sub2/#tmpfile.1$", text, re.M), text
    assert re.search(r"^file \d+ log - 65536 pg_wal/000000010000000000000001$", text, re.M)
    assert " write p0 67108864 " in text or " write 1000 67108864 " in text
    assert "incomplete 1 writes of files whose path a trace cannot hold (has a blank" in text
    if outside == "keep":
        assert "incomplete 1 reads of files whose path a trace cannot hold (has a blank or " \
               "control character)" in text and " outside/elsewhere/log" in text
    else:
        assert "dropped 1 reads of files outside the data directory" in r.stderr
    if listed:
        assert "opened-before direct" in text


def test_lines_it_does_not_hold_go_to_the_python_converter(tmp_path):
    """An strace line (a read at the file position, a relative path) is left
    to the Python converter (iocap-convert exits 2), which converts the
    capture: strace's path works as before."""
    data, raw = write_input(tmp_path)
    text = raw.read_text(encoding="latin-1")
    raw.write_text(text + f"100 1000.000080 read(3<{data}/a>, \"\"..., 10) = 10 <0.000001>\n",
                   encoding="latin-1")
    n = text.count("\n") + 1
    r = subprocess.run([str(CONVERT), "--root", str(data), "--pagesize", "4096",
                        "--body", str(tmp_path / "body"), "--state", str(tmp_path / "state"),
                        str(raw)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and f"line {n}: a call iocap does not write (read)" in r.stderr, \
        r.stderr
    out = tmp_path / "py.trace"
    r = tool("convert", raw, "--datadir", data, "--db", "postgresql", "--accept-incomplete",
             "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_text(encoding="latin-1").startswith("dbtrace 2\n")


def test_the_capture_note_gives_the_captures_time_not_the_conversions(tmp_path):
    """"N events in X s" is the capture's time: a conversion that takes 4 s
    more (a converter made slow on purpose) is said apart, "converted in
    Y s", and not counted in X. It used to be: 2.6 M records took two
    minutes to convert, and the note said the capture had lasted that much
    longer."""
    data = tmp_path / "data"
    data.mkdir()
    slow = tmp_path / "slow-convert"
    slow.write_text(f"#!/bin/sh\nsleep 4\nexec {CONVERT} \"$@\"\n")
    slow.chmod(0o755)
    w = subprocess.Popen(["sh", "-c", f"while :; do echo x >> {data}/a; sleep 0.05; done"])
    try:
        env = dict(os.environ, FIO_PACK_IOCAP_CONVERT=str(slow))
        env.pop("LD_PRELOAD", None)
        t0 = time.monotonic()
        r = tool("attach", "--tracer", "bpf", "--pid", w.pid, "--datadir", data, "--db",
                 "generic", "--duration", "1", "-o", tmp_path / "t.trace", env=env)
        took = time.monotonic() - t0
    finally:
        w.kill()
        w.wait()
    assert r.returncode == 0, r.stderr
    m = re.search(r"the BPF capture: (\d+) events in ([0-9.]+) s", r.stderr)
    c = re.search(r"converted in ([0-9.]+) s after the capture \((\d+) records a second\)",
                  r.stderr)
    assert m and c, r.stderr
    assert 1.0 <= float(m.group(2)) < took - 4, r.stderr
    assert float(c.group(1)) >= 4, r.stderr
