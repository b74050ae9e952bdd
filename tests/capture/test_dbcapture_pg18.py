"""fio-pack capture attach (BPF) of PostgreSQL 18, built by make pg18, in
each of its I/O methods (io_method worker, its default; io_uring; sync),
held against its own pg_stat_io over the same window: nobody here wrote
that oracle. One capture per method holds read-heavy work (pgbench -S, a
sequential scan of a table larger than shared_buffers, a VACUUM, the scan
again: the reads PostgreSQL 18 combines and issues asynchronously) and
read-write pgbench. The I/O workers' streams are ioworker-TID."""
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from fiopack.capture import postgres
from fiopack.capture.databases import AS_POSTGRES
from helpers.capture import IS_ROOT, attach, c_check, detach, kill, read_trace, tool
from helpers.fio import DBR_ENGINE, run_fio
from helpers.pgstat import PG_REL, PG_WAL, PgSession

pytestmark = [pytest.mark.nosan,
              pytest.mark.skipif(not IS_ROOT, reason="runs PostgreSQL as user postgres "
                                 "and the BPF capture (needs root)"),
              pytest.mark.skipif(not os.path.exists("/sys/kernel/btf/vmlinux"),
                                 reason="this kernel has no BTF: no BPF capture")]

# pg_stat_io over every backend type and context: relations (their reads
# and read bytes; writes and extends, with their bytes; fsyncs) and the WAL
# (writes and fsyncs, its init context included: the zero-fill of a new
# segment is a write of the segment). checkpoints_req last, for settled().
IO_NAMES = ("reads", "read_bytes", "writes", "write_bytes", "extends", "extend_bytes",
            "fsyncs", "wal_writes", "wal_fsyncs", "checkpoints_req")
IO_SNAPSHOT = (IO_NAMES, "SELECT "
               + ", ".join(f"coalesce(sum({c}) FILTER (WHERE object = 'relation'), 0)"
                           for c in IO_NAMES[:7])
               + ", coalesce(sum(writes) FILTER (WHERE object = 'wal'), 0)"
               + ", coalesce(sum(fsyncs) FILTER (WHERE object = 'wal'), 0)"
               + ", (SELECT num_requested FROM pg_stat_checkpointer) FROM pg_stat_io")


@pytest.fixture(scope="module")
def pg18():
    """PostgreSQL 18 from build/, copied where user postgres can run it (a
    checkout may be in a 0700 directory)."""
    built = postgres.built_pg18()
    if built is None:
        pytest.fail("PostgreSQL 18 is not built (make pg18)", pytrace=False)
    d = Path(tempfile.mkdtemp(prefix="pg18.", dir="/tmp"))
    try:
        os.chmod(d, 0o755)
        for sub in ("bin", "lib", "share"):
            shutil.copytree(built / sub, d / sub, symlinks=True)
        yield postgres.Server(d / "bin", d / "lib")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def relation_io(path) -> dict:
    """The trace counted as pg_stat_io counts relations' and the WAL's I/O."""
    _, files, streams, recs = read_trace(path)
    rel = {i for i, f in files.items() if PG_REL.fullmatch(f["path"])}
    wal = {i for i, f in files.items() if PG_WAL.fullmatch(f["path"]) and f["role"] == "log"}
    size = {i: f["size"] or 0 for i, f in files.items()}
    # a WAL segment made in the window (XLogFileInitInternal): its zero-fill,
    # pg_pwrite_zeros()'s 16 writes of 1 MiB, is one write of the init
    # context, and its first fsync the init context's; then durable_rename()
    # fsyncs it twice more, which pg_stat_io does not count (fd.c's
    # fsync_fname()), nor a recycled segment's. The other syncs are
    # XLogWrite()'s, fdatasync (wal_sync_method)
    filling = {i for i in wal if files[i]["size"] is None}
    filled = set()
    c = dict.fromkeys(IO_NAMES[:-1], 0)
    c.update(_worker_reads=0, _worker_read_bytes=0, _zero_extends=0, _wal_fill_writes=0,
             _combined_reads=0)
    workers = {s for s, n in streams.items() if n.startswith("ioworker-")}
    for r in recs:
        s, f, op = r[1], r[2], r[3]
        if f in rel:
            if op == "read":
                c["reads"] += 1
                c["read_bytes"] += r[5]
                c["_combined_reads"] += r[5] > 8192
                if s in workers:
                    c["_worker_reads"] += 1
                    c["_worker_read_bytes"] += r[5]
            elif op == "write":
                if r[4] >= size[f]:
                    c["extends"] += 1
                    c["extend_bytes"] += r[4] + r[5] - size[f]
                else:
                    c["writes"] += 1
                    c["write_bytes"] += r[5]
                size[f] = max(size[f], r[4] + r[5])
            elif op == "truncate":
                if r[4] > size[f]:          # fallocate growing the file (mdzeroextend)
                    c["extends"] += 1
                    c["extend_bytes"] += r[4] - size[f]
                    c["_zero_extends"] += 1
                size[f] = r[4]
            elif op in ("fsync", "fdatasync"):
                c["fsyncs"] += 1
        elif f in wal:
            if op == "write" and f in filling:
                if f not in filled:
                    c["wal_writes"] += 1
                    filled.add(f)
                c["_wal_fill_writes"] += 1
            elif op == "write":
                c["wal_writes"] += 1
            elif op == "fdatasync" or (op == "fsync" and f in filling):
                c["wal_fsyncs"] += 1
                filling.discard(f)
    return c


def overlaps(path) -> list:
    """(stream, end, next issue) of each record that ends after the next one
    of its stream is issued (issue time + latency)."""
    _, _, _, recs = read_trace(path, latency=True)
    end, out = {}, []
    for r in recs:
        if r[1] in end and r[0] < end[r[1]]:
            out.append((r[1], end[r[1]], r[0]))
        if r[-1] is not None:
            end[r[1]] = max(end.get(r[1], 0), r[0] + r[-1])
    return out


def start_pg18(pg_cluster, pg18, io_method: str, scale):
    """A private PostgreSQL 18 cluster with @io_method (pgbench's tables at
    @scale, None: none)."""
    return pg_cluster("dbcapture-pg18.", pg18,
                      f"-c shared_buffers=16MB -c io_method={io_method} -c autovacuum=off "
                      "-c wal_level=minimal -c max_wal_senders=0 -c wal_sync_method=fdatasync",
                      scale=scale, pgbench=pg18.bin("pgbench"), timeout=300)


@pytest.mark.parametrize("io_method", ["worker", "io_uring", "sync"])
def test_postgresql_18_capture_matches_pg_stat_io(pg18, pg_cluster, checker, io_method):
    db = start_pg18(pg_cluster, pg18, io_method, 4)
    base, run = db.base, db.run
    cap, sess = None, None
    try:
        sess = PgSession(AS_POSTGRES, base, 18, psql=pg18.bin("psql"), env=pg18.env(),
                         snapshot=IO_SNAPSHOT)
        assert sess.query("SHOW io_method")[0][0] == io_method
        out, ready = base / "pg18.trace.gz", base / "ready"
        sess.checkpoint()
        cap = attach("postgresql", db.data, db.pid, ready, f"PostgreSQL 18 io_method={io_method}",
                     out, "--tracer", "bpf")
        before = sess.counters()
        for c in (["-S", "-c", "2", "-j", "2", "-T", "2"], ["-n", "-c", "2", "-j", "2", "-T", "2"]):
            r = run(pg18.bin("pgbench"), "-h", base, *c, "postgres")
            assert r.returncode == 0, r.stderr
        for q in ("SELECT count(*) FROM pgbench_accounts", "VACUUM pgbench_accounts",
                  "SELECT count(*) FROM pgbench_accounts"):
            sess.query(q)
        while sess.others():
            time.sleep(0.05)
        after = sess.checkpoint()
        rc, err = detach(cap, timeout=300)
        cap = None
        assert rc == 0, err
        # the window: the capture stopped on quiet counters (the CHECKPOINT
        # reported, two readings 0.5 s apart equal), still quiet after it
        assert sess.counters() == after, "PostgreSQL did I/O as the capture stopped"
        truth = {k: after[k] - before[k] for k in IO_NAMES[:-1]}
        c_check(checker, out)
        head, files, streams, recs = read_trace(out)
        assert "incomplete" not in head, head
        seen = relation_io(out)
        parts = {k: seen.pop(k) for k in list(seen) if k.startswith("_")}
        print(f"PostgreSQL 18 io_method={io_method}: pg_stat_io {truth}, the trace {seen} "
              f"{parts}")
        assert seen == truth, (seen, truth, parts)
        assert all(truth[k] > 0 for k in ("reads", "writes", "extends", "fsyncs", "wal_writes",
                                           "wal_fsyncs")), truth
        # the scans' reads combined (io_combine_limit), and who issued them:
        # the I/O workers with io_method=worker, nobody else's streams
        assert parts["_combined_reads"] > 0, parts
        workers = [n for n in streams.values() if n.startswith("ioworker-")]
        if io_method == "worker":
            assert workers and parts["_worker_reads"] > 0, (streams, parts)
        else:
            assert workers == [] and parts["_worker_reads"] == 0, (streams, parts)
        if io_method != "io_uring":
            # every record a system call of its stream's thread: each ends
            # before the thread's next begins, one request in flight
            assert overlaps(out) == [], overlaps(out)[:5]
        # the replay replays every record, at the depth the capture saw
        target = base / "replay"
        target.mkdir()
        rep = base / "rep.jsonl"
        res = run_fio(["--name=pg18", f"--ioengine=external:{DBR_ENGINE}", f"--dbr_trace={out}",
                       f"--dbr_target={target}", f"--dbr_report_file={rep}", "--dbr_report=none",
                       "--dbr_io_api=io_uring", "--iodepth=64"]).ok()
        report = json.loads(rep.read_text().splitlines()[0])
        print(f"  the replay: {report}")
        assert report["replayed"] == report["trace_records"] == len(recs), report
        assert report["errors"] == 0, report
        assert res.job()["read"]["total_ios"] == sum(1 for r in recs if r[3] == "read")
        if io_method != "io_uring":
            assert report["captured_depth"] == 1, report
    finally:
        if sess is not None:
            sess.close()
        kill(cap)


def test_postgresql_18_bad_input(pg18, pg_cluster, tmp_path):
    """One line, exit 2, nothing written, nothing attached: a --datadir that
    is not the data directory of the server attached; io_method=io_uring
    under strace, which cannot see its I/O (unless --accept-incomplete,
    which takes a trace without it: the capture then says what it lacks)."""
    db = start_pg18(pg_cluster, pg18, "io_uring", None)
    data, pid = db.data, db.pid
    other = tmp_path / "other"
    other.mkdir()
    out = tmp_path / "x.trace"
    cases = [
        (["--datadir", other, "--tracer", "bpf"],
         f"--datadir {other}: process {pid} is the PostgreSQL server of {data} "
         f"(postmaster {pid}), not of this directory"),
        (["--datadir", data, "--tracer", "strace"],
         f"--tracer strace: the PostgreSQL server {pid} runs with io_method=io_uring, "
         "whose reads and writes strace cannot see")]
    for args, want in cases:
        r = tool("attach", "--db", "postgresql", "--pid", pid, "--duration", "1", "-o", out,
                 *args, timeout=120)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        assert r.stderr.startswith(f"fio-pack capture: {want}"), r.stderr
        assert not out.exists() and os.listdir(other) == []
