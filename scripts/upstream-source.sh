#!/bin/sh
# Fetches a Debian source package's upstream tarball (its orig tarball) for
# one upstream VERSION from the Debian archive the machine's apt already
# uses, checks it against the archive's signed Sources index, and unpacks
# it. Used for fio's second test version (scripts/fio-upstream-source.sh)
# and for the PostgreSQL 18 the capture tests run (make pg18).
#
# The archive's address is read from apt's own configuration (the machine's
# deb entries); apt runs with a private list directory under BUILDDIR, so the
# system's package lists and sources are never touched. Only the orig
# tarball is fetched (some mirrors serve no .dsc), and only its main one
# (not the signature or the orig-COMPONENT tarballs).
#
# Usage: upstream-source.sh [--expect FILE] [--hint TEXT] PACKAGE VERSION BUILDDIR [SUITE...]
#        (suites default: unstable testing) -> prints the source directory,
#        BUILDDIR/src/PACKAGE-VERSION-orig. --expect FILE: a file the tree
#        must hold (else the tarball is refused as not PACKAGE's); --hint:
#        how else to get the source, said when the archive has none.
# Errors: one line on stderr, exit 1.
set -eu
expect=
hint="give its source tree instead"
while [ $# -ge 2 ]; do
	case $1 in
	--expect) expect=$2 ;;
	--hint) hint=$2 ;;
	*) break ;;
	esac
	shift 2
done
[ $# -ge 3 ] || { echo "usage: upstream-source.sh [--expect FILE] [--hint TEXT] PACKAGE VERSION BUILDDIR [SUITE...]" >&2; exit 1; }
pkg=$1
ver=$2
build=$3
shift 3
suites=${*:-unstable testing}
dest="$build/src/$pkg-$ver-orig"
die() {
	echo "upstream-source: $pkg $ver: $*" >&2
	exit 1
}
if [ -f "$dest/.pack-verified" ] && { [ -z "$expect" ] || [ -e "$dest/$expect" ]; }; then
	echo "$dest"
	exit 0
fi

# the archive: the first Debian URI among the machine's deb entries
uri=$( { sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null
	 grep -hE '^deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/'; } |
	tr ' ' '\n' | grep -E '/debian/?$' | head -n 1) ||
	true
[ -n "$uri" ] || die "no Debian archive among apt's deb entries: $hint"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "no $keyring (package debian-archive-keyring)"

apt="$build/apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
: > "$apt/sources.list.new"
for s in $suites; do
	echo "deb-src [signed-by=$keyring] $uri $s main" >> "$apt/sources.list.new"
done
# lists of other suites (an earlier call) would be stale: read again
if ! cmp -s "$apt/sources.list.new" "$apt/sources.list"; then
	mv -f "$apt/sources.list.new" "$apt/sources.list"
else
	rm -f "$apt/sources.list.new"
fi
APTOPTS="-o Dir::Etc::SourceList=$(pwd)/$apt/sources.list -o Dir::Etc::SourceParts=/nonexistent
	-o Dir::State::Lists=$(pwd)/$apt/lists -o Dir::Cache=$(pwd)/$apt/cache
	-o APT::Sandbox::User=root"
# shellcheck disable=SC2086
apt-get -q $APTOPTS update >/dev/null 2>"$apt/update.err" ||
	{ tail -n 3 "$apt/update.err" >&2; die "apt-get update of $suites failed"; }

# the newest Debian revision of that upstream version any suite carries
# shellcheck disable=SC2086
pver=$(apt-cache $APTOPTS showsrc "$pkg" 2>/dev/null |
	sed -n "s/^Version: \(\([0-9]*:\)\{0,1\}$ver-.*\)/\1/p" | head -n 1)
[ -n "$pver" ] || die "no suite of $uri ($suites) carries it: $hint"
# shellcheck disable=SC2086
line=$(apt-get -q $APTOPTS --print-uris source "$pkg=$pver" 2>/dev/null |
	grep -E "_$ver\.orig\.tar\.[a-z0-9]+' " | head -n 1)
[ -n "$line" ] || die "Debian $pver has no orig tarball in $uri"
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
		echo "upstream-source: could not download $url"; } | grep -v unsandboxed >&2 || true
	[ -f "$tarball" ] || die "could not download $url"
fi
echo "${hash#SHA256:}  $tarball" | sha256sum -c --status ||
	die "$tarball does not match the SHA256 of the Sources index"
rm -rf "$dest"
mkdir -p "$dest"
tar -xf "$tarball" -C "$dest" --strip-components=1
[ -z "$expect" ] || [ -e "$dest/$expect" ] || die "$tarball has no $expect: not $pkg's source"
touch "$dest/.pack-verified"
echo "upstream-source: $pkg $ver from $name (Debian $pver), SHA256 verified" >&2
echo "$dest"
