#!/bin/sh
# Installs what the pack needs on Debian (or a derivative) and is silent when
# everything is already there, so `make` and `make check` can call it every time.
# Packages: fio's build needs (with --fio: Debian's fio itself, when the
# user names no fio and has none; scripts/fio-source.sh), liburing/libaio
# headers, dpkg-dev for `apt-get source`, clang, libbpf-dev and bpftool for the
# BPF capture tool (tools/iocap), fuse3, libfuse3-dev and pkg-config for the
# modeled-device daemon (tools/moddev, fio-pack device), xfsprogs for the xfs
# series of `fio-pack bench cold` (its default --fs ext4,xfs); with --test also
# python3-pytest for the tests, python3-matplotlib for the plots of scripts/fio-pack analyze, strace
# for syscall checks, clang (libFuzzer) for the fuzz target and postmark, the
# peer the PostMark engine is checked against, blktrace (blkparse) for
# the trace importer tests, and sqlite3, postgresql, mariadb-server and
# sysbench for the live database captures of tests/capture/test_dbcapture_databases.py,
# bison, flex (its tarball carries no generated parsers), libreadline-dev and
# pkg-config (liburing) for the PostgreSQL 18 of make pg18,
# valgrind for the memcheck runs of tests/engines/test_reliability_load.py, and
# pyflakes3 and clang-format for make lint.
set -eu

pkgs="gcc make dpkg-dev liburing-dev libaio-dev zlib1g-dev python3 clang libbpf-dev bpftool fuse3 libfuse3-dev pkg-config xfsprogs"
case "${1:-}" in
--test)
	pkgs="$pkgs python3-pytest python3-matplotlib strace clang libclang-rt-dev postmark blktrace sqlite3 postgresql mariadb-server sysbench bison flex libreadline-dev pkg-config valgrind pyflakes3 clang-format" ;;
--fio)	# the fio to build for, when the user names none and has none
	pkgs="fio" ;;
esac

missing=""
for p in $pkgs; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
		echo "install-deps: missing packages:$missing (run as root or install sudo)" >&2
		exit 1
	fi
else
	SUDO=
fi
echo "install-deps: installing$missing" >&2
$SUDO apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
