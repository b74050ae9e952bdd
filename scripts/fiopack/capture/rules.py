"""What a capture knows of each database (its page size and the role of each
of its files) and which system calls run and attach ask strace to trace;
the one-line Error every part of the capture raises."""
from fiopack import UserError
from fiopack.trace import dbtrace as dt  # the format's reader/writer


PROG = "fio-pack capture"


class Error(UserError):
    """A one-line error; main() prints it after "fio-pack capture: "."""


# ---------------------------------------------------------------------------
# Databases: page sizes and file roles
# ---------------------------------------------------------------------------

# Rules are (pattern, role), matched in order with fnmatch on the path
# relative to the data directory ('*' also matches '/'); the first match wins.
# Directories are always role directory.
RULES = {
    "postgresql": [
        ("pg_wal/archive_status/*", "other"),
        ("pg_wal/*", "log"),
        ("pg_xlog/*", "log"),
        ("*pgsql_tmp*", "temp"),
        ("pg_stat_tmp/*", "temp"),
        ("global/pg_control", "other"),
        ("*pg_filenode.map", "other"),
        ("*pg_internal.init*", "other"),
        ("base/*", "data"),
        ("global/*", "data"),
        ("pg_tblspc/*", "data"),
        ("pg_xact/*", "data"),
        ("pg_multixact/*", "data"),
        ("pg_subtrans/*", "data"),
        ("pg_commit_ts/*", "data"),
        ("pg_serial/*", "data"),
        ("*", "other"),
    ],
    "mariadb": [
        ("ib_logfile*", "log"),
        ("#innodb_redo/*", "log"),
        ("aria_log.[0-9]*", "log"),
        ("*-bin.[0-9]*", "log"),
        ("*-relay-bin.[0-9]*", "log"),
        ("ib_doublewrite", "journal"),
        ("#ib_*.dblwr", "journal"),
        ("ibtmp*", "temp"),
        ("#innodb_temp/*", "temp"),
        ("*#sql*", "temp"),
        ("tmp/*", "temp"),
        ("ibdata*", "data"),
        ("undo[0-9]*", "data"),
        ("*.ibd", "data"),
        ("*.MYD", "data"),
        ("*.MYI", "data"),
        ("*.MAD", "data"),
        ("*.MAI", "data"),
        ("*.CSV", "data"),
        ("*", "other"),
    ],
    "sqlite": [
        ("*-journal", "journal"),
        ("*-wal", "log"),
        ("*-shm", "other"),
        ("*etilqs_*", "temp"),
        ("*", "data"),
    ],
    "generic": [
        ("*", "other"),
    ],
}
PAGESIZE = {"postgresql": 8192, "mariadb": 16384, "sqlite": 4096, "generic": 4096}
DB_NAMES = {"postgresql": "PostgreSQL", "mariadb": "MariaDB", "sqlite": "SQLite",
            "generic": "generic"}
DB_ALIASES = {"postgres": "postgresql", "pg": "postgresql", "mysql": "mariadb",
              "innodb": "mariadb", "sqlite3": "sqlite"}

# What run and attach ask strace to trace: the calls the converter reads.
TRACE_SET = ("open,openat,openat2,creat,close,close_range,dup,dup2,dup3,fcntl,"
             "rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,rmdir,"
             "truncate,ftruncate,fallocate,fsync,fdatasync,sync_file_range,syncfs,"
             "pread64,pwrite64,read,write,readv,writev,preadv,pwritev,preadv2,pwritev2,"
             "lseek,io_submit,io_uring_enter,copy_file_range,sendfile,"
             "chdir,fchdir,clone,clone3,fork,vfork")

MAX_IO = dt.MAX_IO
NONFILE_PREFIXES = ("/dev/", "/proc/", "/sys/")
