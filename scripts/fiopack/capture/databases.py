"""A private database server, for the capture's tests and its benchmark
(fio-pack bench capture): PostgreSQL (initdb in a directory of its own,
run as user postgres) or MariaDB (mariadb-install-db, run as root), its
socket in that directory and no network listener. Needs root. A step that
fails raises DatabaseError, naming the command and what it said: a test
fails with it, the benchmark exits with it."""
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

from fiopack.capture.postgres import Server

AS_POSTGRES = ["runuser", "-u", "postgres", "--"]


class DatabaseError(Exception):
    pass


def private_dir(prefix: str) -> Path:
    """A new directory in /tmp that user postgres owns (a checkout may be
    in a 0700 directory it cannot reach)."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chmod(base, 0o755)
    shutil.chown(base, "postgres")
    return base


def _checked(cmd, r: subprocess.CompletedProcess, more: str = ""):
    if r.returncode:
        raise DatabaseError(f"{shlex.join(map(str, cmd))} failed: {r.stderr.strip()}{more}")
    return r


class PrivatePostgres:
    """A PostgreSQL cluster in @base/data, its socket in @base, started
    with @settings (postgres -c options, after listen_addresses= that
    turns TCP off), its log in @base/log."""

    def __init__(self, base: Path, server: Server, settings: str = "", timeout: int = 120):
        self.base, self.server, self.timeout = Path(base), server, timeout
        self.data, self.log = self.base / "data", self.base / "log"
        self.opts = f"-k {self.base} -c listen_addresses= {settings}".rstrip()
        self.started = False

    def run(self, *cmd, check=False, timeout=None) -> subprocess.CompletedProcess:
        """@cmd as user postgres, in @base (the postgres user may not reach
        the caller's directory), with the server's libraries."""
        cmd = [*AS_POSTGRES, *map(str, cmd)]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=str(self.base),
                           env=self.server.env(), timeout=timeout or self.timeout)
        return _checked(cmd, r) if check else r

    def _ctl(self, *args, check=True) -> subprocess.CompletedProcess:
        return self.run(self.server.bin("pg_ctl"), "-D", self.data, "-o", self.opts, "-l",
                        self.log, *args, check=check)

    def start(self, *initdb_opts):
        """initdb (trust, superuser postgres, @initdb_opts), then the server."""
        self.run(self.server.bin("initdb"), "-D", self.data, "-A", "trust", "-U", "postgres",
                 *initdb_opts, check=True)
        r = self._ctl("-w", "start", check=False)
        if r.returncode:
            log = self.log.read_text() if self.log.exists() else ""
            _checked(r.args, r, f"\n{log}")
        self.started = True

    def restart(self):
        """A fast restart: shared buffers empty, the counters' caches cold."""
        self._ctl("-m", "fast", "-w", "restart")

    def stop(self):
        """An immediate stop, if it runs; never fails (a test's clean-up)."""
        if self.started:
            self._ctl("-m", "immediate", "-w", "stop", check=False)
            self.started = False

    @property
    def pid(self) -> int:
        """The postmaster's pid."""
        return int((self.data / "postmaster.pid").read_text().split()[0])


class PrivateMariaDB:
    """A mariadbd of Debian's mariadb-server on @base/data, its socket
    @base/sock, its error log @base/error.log; stopped by stop()."""

    def __init__(self, base: Path, timeout: int = 300):
        self.base, self.data, self.sock = Path(base), Path(base) / "data", Path(base) / "sock"
        self.log = self.base / "error.log"
        self.proc: Optional[subprocess.Popen] = None
        cmd = ["mariadb-install-db", "--no-defaults", "--user=root", f"--datadir={self.data}",
               "--auth-root-authentication-method=normal", "--skip-test-db"]
        _checked(cmd, subprocess.run(cmd, capture_output=True, text=True, cwd=str(self.base),
                                     timeout=timeout))

    def start(self, *opts):
        """mariadbd with @opts, once it answers (at most 120 s)."""
        self.log.write_text("")
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", "--user=root", f"--datadir={self.data}",
             f"--socket={self.sock}", "--skip-networking", f"--log-error={self.log}", *opts],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while self.sql("SELECT 1", check=False) is None:
            if self.proc.poll() is not None:
                raise DatabaseError("mariadbd exited: " + self.log.read_text()[-2000:])
            if time.monotonic() - t0 > 120:
                raise DatabaseError("mariadbd did not start: " + self.log.read_text()[-2000:])
            time.sleep(0.2)

    def sql(self, query: str, check=True) -> Optional[str]:
        """@query's rows, tab-separated, without column names (None if it
        failed and not @check)."""
        cmd = ["mariadb", f"--socket={self.sock}", "-uroot", "-N", "-B", "-e", query]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=str(self.base), timeout=120)
        if check:
            _checked(cmd, r)
        return r.stdout if r.returncode == 0 else None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.sql("SHUTDOWN", check=False)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
