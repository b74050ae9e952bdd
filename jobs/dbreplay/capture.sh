#!/bin/bash
# Re-captures the shipped database traces of jobs/dbreplay/traces/ on this
# machine: every server runs from a data directory in a temporary directory,
# on a unix socket only, and is stopped at the end. Run as root from the
# repository root ($distro):
#
#   jobs/dbreplay/capture.sh sqlite-load|pgbench|mariadb-load|mariadb-dump|all [OUTDIR]
#
# OUTDIR defaults to jobs/dbreplay/traces. Needs strace, sqlite3, postgresql
# (any major: the newest installed), mariadb-server (10.11): apt-get install -y strace sqlite3 postgresql
# mariadb-server. The exact commands are also in jobs/dbreplay/README.md.
# mariadb-dump loads the same database as mariadb-load first (not captured).
set -euo pipefail

what=${1:?usage: capture.sh sqlite-load|pgbench|mariadb-load|mariadb-dump|all [OUTDIR]}
out=$(realpath "${2:-jobs/dbreplay/traces}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
cap="/usr/bin/python3 $repo/scripts/fio-pack capture"
gen="/usr/bin/python3 $repo/scripts/fio-pack gen dbreplay-dump"
mkdir -p "$out"
# the system the sources name ("Debian 12")
distro=$(. /etc/os-release && echo "${NAME%% *} ${VERSION_ID:-}")
work=$(mktemp -d /tmp/dbcapture-work.XXXXXX)
chmod 755 "$work"
server_stop=""
cleanup() {
	if [ -n "$server_stop" ]; then eval "$server_stop" || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# --- SQLite: the generated dump loaded by the sqlite3 shell, autocommit ---
sqlite_load() {
	local v
	v=$(sqlite3 --version | cut -d' ' -f1)
	$gen --dialect sqlite -o "$work/dump-sqlite.sql"
	mkdir "$work/sqlite"
	$cap run --datadir "$work/sqlite" --db sqlite -o "$out/sqlite-load.trace.gz" \
		--source "SQLite $v ($distro sqlite3 shell), bulk load of scripts/fio-pack gen dbreplay-dump --dialect sqlite (3 tables, 74923 rows, one INSERT of 500 rows per transaction, rollback journal), ext4" \
		-- sqlite3 "$work/sqlite/load.db" < "$work/dump-sqlite.sql"
}

# --- PostgreSQL: pgbench scale 1, 2 clients, 3 s, cold shared buffers ---
pgbench_run() {
	local bin pgd="$work/pg" v pid
	# the newest major Debian installed (/usr/lib/postgresql/MAJOR/bin)
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -x "$bin/initdb" ] || { echo "capture.sh: no PostgreSQL server (apt-get install postgresql)" >&2; exit 1; }
	v=$($bin/postgres --version | awk '{print $3}')
	mkdir "$pgd" && chown postgres: "$pgd"
	runuser -u postgres -- $bin/initdb -D "$pgd/data" -A trust -U postgres >/dev/null
	local opts="-k $pgd -c listen_addresses= -c shared_buffers=32MB"
	server_stop="runuser -u postgres -- $bin/pg_ctl -D $pgd/data -m fast -w stop"
	runuser -u postgres -- $bin/pg_ctl -D "$pgd/data" -o "$opts" -l "$pgd/log" -w start
	runuser -u postgres -- pgbench -h "$pgd" -i -s 1 -q postgres
	# restart: shared buffers empty, the run reads its pages from the files
	runuser -u postgres -- $bin/pg_ctl -D "$pgd/data" -o "$opts" -l "$pgd/log" -m fast -w restart
	pid=$(head -1 "$pgd/data/postmaster.pid")
	rm -f "$work/ready"
	$cap attach --datadir "$pgd/data" --db postgresql --pid "$pid" --ready "$work/ready" \
		-o "$out/pgbench.trace.gz" \
		--source "PostgreSQL $v ($distro), shared_buffers=32MB, restarted after pgbench -i -s 1; pgbench -c 2 -j 2 -T 3 (TPC-B-like) then psql -c CHECKPOINT, ext4" &
	local c=$!
	while [ ! -e "$work/ready" ]; do sleep 0.1; kill -0 $c; done
	runuser -u postgres -- pgbench -h "$pgd" -c 2 -j 2 -T 3 postgres
	runuser -u postgres -- psql -h "$pgd" -c CHECKPOINT postgres
	kill -INT $c
	wait $c
	eval "$server_stop"
	server_stop=""
}

# --- MariaDB 10.11 InnoDB, native AIO off ---
mdb_start() {
	local d="$work/mdb"
	mariadbd --no-defaults --user=mysql --datadir="$d/data" --socket="$d/sock" \
		--pid-file="$d/mariadbd.pid" --log-error="$d/error.log" --skip-networking \
		--innodb-use-native-aio=0 --innodb-log-file-size=16M --innodb-buffer-pool-size=8M \
		--innodb-buffer-pool-load-at-startup=0 --innodb-buffer-pool-dump-at-shutdown=0 &
	server_stop="mariadb-admin --socket=$d/sock -uroot shutdown"
	for _ in $(seq 100); do
		mariadb-admin --socket="$d/sock" -uroot ping >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	echo "capture.sh: mariadbd did not start" >&2
	cat "$d/error.log" >&2
	return 1
}
mdb_stop() {
	eval "$server_stop"
	server_stop=""
	while [ -e "$work/mdb/mariadbd.pid" ]; do sleep 0.1; done
}
mdb_init() {
	local d="$work/mdb"
	mkdir "$d" && chown mysql: "$d"
	mariadb-install-db --no-defaults --user=mysql --datadir="$d/data" \
		--innodb-log-file-size=16M --auth-root-authentication-method=normal \
		--skip-test-db >"$d/install.log" 2>&1
	$gen -o "$work/dump.sql"
	mdb_start
	mariadb --socket="$d/sock" -uroot -e "CREATE DATABASE test"
}
mdb_version() { mariadbd --version | awk '{print $3}'; }

mariadb_load() {
	local d="$work/mdb" v
	v=$(mdb_version)
	mdb_init
	rm -f "$work/ready"
	$cap attach --datadir "$d/data" --db mariadb --pid "$(cat "$d/mariadbd.pid")" \
		--ready "$work/ready" -o "$out/mariadb-load.trace.gz" \
		--source "MariaDB $v ($distro) InnoDB, innodb_use_native_aio=0 innodb_log_file_size=16M innodb_buffer_pool_size=8M (smaller than the data: pages are written back during the load), flush method O_DIRECT (the default), binlog off; load of scripts/fio-pack gen dbreplay-dump (mysqldump-style, 3 tables, 74923 rows, 500-row INSERTs) with mariadb test < dump.sql, then innodb_max_dirty_pages_pct=0 until no page is dirty, ext4" &
	local c=$!
	while [ ! -e "$work/ready" ]; do sleep 0.1; kill -0 $c; done
	mariadb --socket="$d/sock" -uroot test < "$work/dump.sql"
	# the write-back that follows a load: every dirty page to its file
	mariadb --socket="$d/sock" -uroot -e "SET GLOBAL innodb_max_dirty_pages_pct=0"
	for _ in $(seq 300); do
		[ "$(mariadb --socket="$d/sock" -uroot -N -e "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'" | cut -f2)" = 0 ] && break
		sleep 0.1
	done
	kill -INT $c
	wait $c
	rm -f "$work/ready"
	mdb_stop
}

mariadb_dump() {
	local d="$work/mdb" v
	v=$(mdb_version)
	mdb_init
	mariadb --socket="$d/sock" -uroot test < "$work/dump.sql"
	# a cold start: the buffer pool is neither dumped nor loaded, the page
	# cache is dropped, so the dump reads every page from the files
	mdb_stop
	sync
	echo 3 > /proc/sys/vm/drop_caches
	mdb_start
	rm -f "$work/ready"
	$cap attach --datadir "$d/data" --db mariadb --pid "$(cat "$d/mariadbd.pid")" \
		--ready "$work/ready" -o "$out/mariadb-dump.trace.gz" \
		--source "MariaDB $v ($distro) InnoDB, innodb_use_native_aio=0 innodb_buffer_pool_size=8M, restarted (buffer pool not loaded, page cache dropped) after loading scripts/fio-pack gen dbreplay-dump; mariadb-dump --all-databases > /dev/null, ext4" &
	local c=$!
	while [ ! -e "$work/ready" ]; do sleep 0.1; kill -0 $c; done
	mariadb-dump --socket="$d/sock" -uroot --all-databases > /dev/null
	kill -INT $c
	wait $c
	rm -f "$work/ready"
	mdb_stop
}

case "$what" in
sqlite-load) sqlite_load ;;
pgbench) pgbench_run ;;
mariadb-load) mariadb_load ;;
mariadb-dump) mariadb_dump ;;
all)
	sqlite_load
	pgbench_run
	mariadb_load
	rm -rf "$work/mdb"
	mariadb_dump
	;;
*) echo "capture.sh: unknown capture '$what'" >&2; exit 2 ;;
esac
