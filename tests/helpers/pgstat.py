"""PostgreSQL for the capture's tests: a private cluster
(fiopack.capture.databases) loaded by pgbench, and its own counters of
I/O read over one psql session, to hold a trace against."""
import re
import subprocess
import time

from fiopack.capture.databases import PrivatePostgres


def load_pgbench(db: PrivatePostgres, scale=1, pgbench="pgbench"):
    """Starts the private cluster @db (initdb --no-sync), loads pgbench's
    tables at @scale (None: none), then restarts it: its shared buffers
    cold."""
    db.start("--no-sync")
    if scale is not None:
        db.run(pgbench, "-h", db.base, "-i", "-s", scale, "-q", "postgres", check=True)
        db.restart()
    return db


# What PostgreSQL counts, by file (paths relative to the data directory):
# relations (every fork, and their 1 GiB segments) under base/DBOID/ and
# global/; the SLRUs whose writes queue a sync request for the checkpointer
# (SlruPhysicalWritePage, sync_handler != SYNC_HANDLER_NONE: pg_xact,
# pg_multixact, pg_commit_ts; not pg_subtrans, pg_notify, pg_serial); the WAL.
PG_REL = re.compile(r"(?:base/(\d+)|global)/\d+(_fsm|_vm|_init)?(\.\d+)?")
PG_SYNCED_SLRU = re.compile(r"(pg_xact|pg_multixact/offsets|pg_multixact/members|pg_commit_ts)/"
                            r"[0-9A-F]+")
PG_WAL = re.compile(r"pg_wal/(?!archive_status/)[^/]+")


def pg_snapshot(major: int) -> tuple:
    """(names, query) of the counters the server of @major has, where it
    keeps them: 17 moved the checkpointer's to pg_stat_checkpointer and
    dropped buffers_backend (pg_stat_io has the writes, not the sync
    requests it counted); 18 moved the WAL's writes and syncs to pg_stat_io
    (object wal; context normal: its init context is the zero-fill of new
    segments, which wal_write never counted). checkpoints_req last: not a
    count of I/O, for settled() only."""
    cols = {"blks_read": "d.blks_read", "shared_blks_read": "s.blks_read"}
    src = ["pg_stat_database d", "pg_stat_database s", "pg_stat_bgwriter b"]
    if major >= 17:
        cols["buffers_checkpoint"] = "c.buffers_written"
        src.append("pg_stat_checkpointer c")
    else:
        cols["buffers_checkpoint"] = "b.buffers_checkpoint"
    cols["buffers_clean"] = "b.buffers_clean"
    if major < 17:
        cols["buffers_backend"] = "b.buffers_backend"
    if major >= 18:
        cols["wal_write"] = "w.writes"
        cols["wal_sync"] = "w.fsyncs"
        src.append("(SELECT sum(writes) AS writes, sum(fsyncs) AS fsyncs FROM pg_stat_io "
                   "WHERE object = 'wal' AND context = 'normal') w")
    else:
        cols["wal_write"] = "w.wal_write"
        cols["wal_sync"] = "w.wal_sync"
        src.append("pg_stat_wal w")
    cols["checkpoints_req"] = "c.num_requested" if major >= 17 else "b.checkpoints_req"
    return tuple(cols), (f"SELECT {', '.join(cols.values())} FROM {', '.join(src)} "
                         "WHERE d.datname = current_database() AND s.datid = 0")


class PgSession:
    """One psql session held open for the whole test, so that the queries
    that read the counters find every catalog page they need cached: they
    read nothing, and what the session did is flushed to the counters
    before each reading (pg_stat_force_next_flush())."""

    def __init__(self, pg, sock, major, psql="psql", env=None, snapshot=None):
        self.names, self.snapshot = snapshot or pg_snapshot(major)
        self.proc = subprocess.Popen([*pg, psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                                      "-h", str(sock), "postgres"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=str(sock), env=env)

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
        row = self.query(self.snapshot)[0]
        return dict(zip(self.names, (int(x or 0) for x in row)))

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
