#!/bin/sh
# Fetches fio's upstream release tarball for VERSION (e.g. 3.41) from the
# Debian archive (scripts/upstream-source.sh: the archive apt already uses,
# the SHA256 of its signed Sources index) and prepares it as a fio source
# tree for `make FIO_SRC=DIR`. Used by `make check-second-fio` for the
# second fio version ./pack check tests; handy for any fio release Debian
# carries in some suite.
#
# Usage: fio-upstream-source.sh VERSION BUILDDIR [SUITE...]
#        (suites default: unstable testing) -> prints the source directory.
set -eu
ver=$1
build=$2
shift 2
dest=$(sh "$(dirname "$0")/upstream-source.sh" --expect ioengines.h \
	--hint "give its source with FIO_SRC=DIR (the fio-$ver tag of fio's repository)" \
	fio "$ver" "$build" "$@")
# what fio's FIO-VERSION-GEN says in a git tree (scripts/fio-source.sh reads it)
[ -f "$dest/version" ] || echo "fio-$ver" > "$dest/version"
echo "$dest"
