#!/bin/sh
# Fetches the source of exactly the fio version Debian installed (engines must
# be compiled against the same struct layouts: fio's ioops version number does
# not protect them), adding a deb-src entry for the machine's own archive if
# there is none. Usage: fetch-fio-source.sh DESTDIR  -> prints the source path.
set -eu
dest=$1
ver=$(dpkg-query -W -f='${Version}' fio)
upstream=${ver%-*}
upstream=${upstream#*:}
src="$dest/fio-$upstream"
if [ -f "$src/ioengines.h" ]; then echo "$src"; exit 0; fi

[ "$(id -u)" -eq 0 ] && SUDO= || SUDO=sudo

has_src() {
	grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}
if ! has_src || ! apt-cache showsrc fio 2>/dev/null | grep -q "^Version: $ver\$"; then
	# Mirror the machine's deb entries as deb-src in a file of our own, so the
	# system's files are never edited.
	tmp=$(mktemp)
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		sed -n '/^Types:/,/^$/p' /etc/apt/sources.list.d/debian.sources |
			sed 's/^Types:.*/Types: deb-src/' > "$tmp"
		$SUDO cp "$tmp" /etc/apt/sources.list.d/fio-pack-src.sources
	else
		grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			grep -v 'deb-src' | sed 's/^deb /deb-src /' > "$tmp"
		$SUDO cp "$tmp" /etc/apt/sources.list.d/fio-pack-src.list
	fi
	rm -f "$tmp"
	$SUDO apt-get update -qq >&2
fi
mkdir -p "$dest"
# apt-get source warns when _apt cannot read the directory; harmless.
(cd "$dest" && apt-get source -qq --download-only "fio=$ver" >&2 &&
	dpkg-source -q -x "fio_$(echo "$ver" | sed 's/^[0-9]*://').dsc" "fio-$upstream" >&2) 2>&1 |
	grep -v 'unsandboxed' >&2 || true
[ -f "$src/ioengines.h" ] || { echo "fetch-fio-source: could not obtain fio $ver source" >&2; exit 1; }
echo "$src"
