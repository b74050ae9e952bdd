#!/bin/sh
# Fetches fio's upstream release tarball for VERSION (e.g. 3.41) from the
# Debian archive the machine's apt already uses, checks it against the
# archive's signed Sources index, and unpacks it as a fio source tree for
# `make FIO_SRC=DIR`. Used by .ci/run for the second fio version it tests;
# handy for any fio release Debian carries in some suite.
#
# The archive's address is read from apt's own configuration (the machine's
# deb entries); apt runs with a private list directory under BUILDDIR, so the
# system's package lists and sources are never touched. Only the orig
# tarball is fetched (some mirrors serve no .dsc).
#
# Usage: fio-upstream-source.sh VERSION BUILDDIR [SUITE...]
#        (suites default: unstable testing) -> prints the source directory.
set -eu
ver=$1
build=$2
shift 2
suites=${*:-unstable testing}
dest="$build/src/fio-$ver-orig"
die() {
	echo "fio-upstream-source: $*" >&2
	exit 1
}
if [ -f "$dest/ioengines.h" ] && [ -f "$dest/.pack-verified" ]; then
	echo "$dest"
	exit 0
fi

# the archive: the first Debian URI among the machine's deb entries
uri=$( { sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null
	 grep -hE '^deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/'; } |
	tr ' ' '\n' | grep -E '/debian/?$' | head -n 1) ||
	true
[ -n "$uri" ] || die "no Debian archive among apt's deb entries: give a fio source with FIO_SRC=DIR"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "no $keyring (package debian-archive-keyring)"

apt="$build/apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
: > "$apt/sources.list"
for s in $suites; do
	echo "deb-src [signed-by=$keyring] $uri $s main" >> "$apt/sources.list"
done
APT="apt-get -q -o Dir::Etc::SourceList=$(pwd)/$apt/sources.list -o Dir::Etc::SourceParts=/nonexistent
	-o Dir::State::Lists=$(pwd)/$apt/lists -o Dir::Cache=$(pwd)/$apt/cache
	-o APT::Sandbox::User=root"
# shellcheck disable=SC2086
$APT update >/dev/null 2>"$apt/update.err" || { tail -n 3 "$apt/update.err" >&2; die "apt-get update of $suites failed"; }

# the newest Debian revision of that upstream version any suite carries
# shellcheck disable=SC2086
pver=$(apt-cache \
	-o Dir::Etc::SourceList="$(pwd)/$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
	-o Dir::State::Lists="$(pwd)/$apt/lists" -o Dir::Cache="$(pwd)/$apt/cache" \
	showsrc fio 2>/dev/null | sed -n "s/^Version: \(\([0-9]*:\)\{0,1\}$ver-.*\)/\1/p" | head -n 1)
[ -n "$pver" ] || die "no suite of $uri ($suites) carries fio $ver: give its source with FIO_SRC=DIR (the fio-$ver tag of fio's repository)"
# shellcheck disable=SC2086
line=$($APT --print-uris source "fio=$pver" 2>/dev/null | grep "_$ver.orig.tar" | head -n 1)
[ -n "$line" ] || die "fio $pver has no orig tarball in $uri"
# 'URI' NAME SIZE SHA256:HASH (the hash from the signed Sources index)
url=$(echo "$line" | sed "s/^'\([^']*\)'.*/\1/")
name=$(echo "$line" | awk '{print $2}')
hash=$(echo "$line" | awk '{print $4}')
case $hash in
SHA256:*) ;;
*) die "the Sources index gives no SHA256 for $name" ;;
esac
mkdir -p "$build/src"
tarball="$build/src/$name"
if [ ! -f "$tarball" ] || ! echo "${hash#SHA256:}  $tarball" | sha256sum -c --status; then
	rm -f "$tarball"
	{ /usr/lib/apt/apt-helper -q download-file "$url" "$tarball" "$hash" 2>&1 ||
		echo "fio-upstream-source: could not download $url"; } | grep -v unsandboxed >&2 || true
	[ -f "$tarball" ] || die "could not download $url"
fi
echo "${hash#SHA256:}  $tarball" | sha256sum -c --status ||
	die "$tarball does not match the SHA256 of the Sources index"
rm -rf "$dest"
mkdir -p "$dest"
tar -xf "$tarball" -C "$dest" --strip-components=1
[ -f "$dest/ioengines.h" ] || die "$tarball is not a fio source tarball"
echo "fio-$ver" > "$dest/version"
touch "$dest/.pack-verified"
echo "fio-upstream-source: fio $ver from $name (Debian $pver), SHA256 verified" >&2
echo "$dest"
