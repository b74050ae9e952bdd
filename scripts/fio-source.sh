#!/bin/sh
# Finds the fio the engines are built for and the source of exactly that
# version: engines are compiled against fio's headers, and fio's struct
# layouts change between releases (the ioops version does not protect them).
#
#   FIO=path      the fio the user runs (default: fio on PATH); its version
#                 comes from `$FIO --version`
#   FIO_SRC=DIR   a fio source tree, configured or not; copied under
#                 BUILDDIR/src, so the user's tree is never touched
#
# Without FIO_SRC the source of a Debian or Ubuntu fio package comes from
# `apt-get source` (a deb-src entry for the machine's own archive is added in
# a file of our own if there is none). Without FIO or FIO_SRC and no fio on
# PATH, Debian's fio is installed. Any other case stops with one line saying
# how to get the source.
#
# Usage: fio-source.sh BUILDDIR  -> prints "VERSION SOURCE-DIR" on stdout.
# Errors: one line on stderr naming what is wrong and the fix, exit 1.
set -eu
build=$1
oldest=3.28
[ "$(id -u)" -eq 0 ] && SUDO= || SUDO=sudo

die() {
	echo "fio-source: $*" >&2
	exit 1
}

# "fio-3.41" or "fio-3.41-12-gabcd" -> 0 if at least $oldest
new_enough() {
	mm=$(echo "$1" | sed -n 's/^fio-\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
	[ -n "$mm" ] || return 1
	set -- $mm
	omaj=${oldest%.*}
	omin=${oldest#*.}
	[ "$1" -gt "$omaj" ] || { [ "$1" -eq "$omaj" ] && [ "$2" -ge "$omin" ]; }
}

# the version a fio source tree builds, as its FIO-VERSION-GEN would say
tree_version() {
	if [ -f "$1/version" ]; then
		cat "$1/version"
	elif [ -e "$1/.git" ] && command -v git >/dev/null 2>&1 &&
		v=$(git -C "$1" describe --match 'fio-[0-9]*' --abbrev=4 HEAD 2>/dev/null); then
		# FIO-VERSION-GEN adds -dirty for local changes
		if [ -n "$(git -C "$1" diff-index --name-only HEAD -- 2>/dev/null)" ]; then
			v="$v-dirty"
		fi
		echo "$v"
	elif [ -f "$1/FIO-VERSION-FILE" ]; then
		sed 's/^FIO_VERSION = //' "$1/FIO-VERSION-FILE"
	else
		sed -n 's/^DEF_VER=//p' "$1/FIO-VERSION-GEN"
	fi
}

# --- the fio being run --------------------------------------------------
fio_bin=
fio_ver=
if [ -n "${FIO:-}" ]; then
	case $FIO in
	*/*) fio_bin=$FIO ;;
	*) fio_bin=$(command -v "$FIO" 2>/dev/null) || die "FIO=$FIO: no such fio on PATH; set FIO to the fio you run" ;;
	esac
	[ -f "$fio_bin" ] && [ -x "$fio_bin" ] || die "FIO=$FIO: no such fio binary; set FIO to the fio you run, or unset it to use Debian's"
elif fio_bin=$(command -v fio 2>/dev/null); then
	:
elif [ -z "${FIO_SRC:-}" ]; then
	# nothing given, nothing installed: Debian's fio, as any other missing package
	sh "$(dirname "$0")/install-deps.sh" --fio >&2
	fio_bin=$(command -v fio 2>/dev/null) || die "fio could not be installed (apt-get install fio)"
fi
if [ -n "$fio_bin" ]; then
	fio_ver=$("$fio_bin" --version 2>/dev/null | head -n 1) || true
	case $fio_ver in
	fio-[0-9]*) ;;
	*) die "$fio_bin --version printed '$fio_ver', not a fio version: set FIO to a fio binary" ;;
	esac
	new_enough "$fio_ver" ||
		die "$fio_bin is $fio_ver, older than fio-$oldest, the oldest the pack supports: install fio $oldest or later"
fi

# --- its source ---------------------------------------------------------
if [ -n "${FIO_SRC:-}" ]; then
	[ -d "$FIO_SRC" ] || die "FIO_SRC=$FIO_SRC: no such directory"
	for f in FIO-VERSION-GEN ioengines.h fio.h configure; do
		[ -f "$FIO_SRC/$f" ] || die "FIO_SRC=$FIO_SRC is not a fio source tree (no $f): give the top of a fio checkout or release tarball"
	done
	src_ver=$(tree_version "$FIO_SRC")
	case $src_ver in
	fio-[0-9]*) ;;
	*) die "FIO_SRC=$FIO_SRC: cannot tell its fio version (got '$src_ver')" ;;
	esac
	new_enough "$src_ver" ||
		die "FIO_SRC=$FIO_SRC is $src_ver, older than fio-$oldest, the oldest the pack supports"
	if [ -n "$fio_ver" ] && [ "$fio_ver" != "$src_ver" ]; then
		if [ -n "${FIO:-}" ]; then
			die "FIO_SRC=$FIO_SRC is $src_ver but FIO=$fio_bin is $fio_ver: give the source of the fio you run (its fio-X.Y tag)"
		fi
		# the fio built from FIO_SRC is the one these engines are for; say so
		echo "fio-source: building for $src_ver from FIO_SRC; the fio on PATH ($fio_bin) is $fio_ver, which needs its own build (make FIO=$fio_bin)" >&2
	fi
	dest="$build/src/$src_ver"
	abs_src=$(cd "$FIO_SRC" && pwd)
	abs_dest=$(mkdir -p "$dest" && cd "$dest" && pwd)
	if [ "$abs_src" != "$abs_dest" ]; then
		# a copy (without git metadata) refreshed when the tree changed: the
		# user's tree is never configured or built in. Its objects come
		# along (timestamps kept), so a built tree is not built again.
		rm -rf "$dest.tmp"
		mkdir -p "$dest.tmp"
		(cd "$FIO_SRC" && tar --exclude=.git -cf - .) | (cd "$dest.tmp" && tar -xf -)
		echo "$src_ver" > "$dest.tmp/version"	# the copy has no .git to describe
		# unchanged: every file of the tree is in the copy as it is (the
		# copy has more: what configure and make wrote)
		if [ -d "$dest" ] && [ -f "$dest/.pack-stamp" ] &&
			[ -z "$(diff -rq "$dest.tmp" "$dest" 2>&1 | grep -v "^Only in $dest[:/]")" ]; then
			rm -rf "$dest.tmp"	# unchanged: keep the built tree
		else
			rm -rf "$dest"
			mv "$dest.tmp" "$dest"
			touch "$dest/.pack-stamp"
		fi
	fi
	echo "$src_ver $dest"
	exit 0
fi

real=$(readlink -f "$fio_bin")
# a fio this build made (build/fio-X.Y/fio): the source it was built from
rec="$(dirname "$real")/fio-source"
if [ -f "$rec" ]; then
	src=$(cat "$rec")
	if [ -f "$src/ioengines.h" ] && [ "$(tree_version "$src")" = "$fio_ver" ]; then
		echo "$fio_ver $src"
		exit 0
	fi
fi

# a Debian or Ubuntu package?
pkg=$(dpkg-query -S "$real" 2>/dev/null | sed -n 's/^\([^:]*\): .*/\1/p' | head -n 1) || true
[ -n "$pkg" ] || pkg=$(dpkg-query -S "$fio_bin" 2>/dev/null | sed -n 's/^\([^:]*\): .*/\1/p' | head -n 1) || true
if [ -z "$pkg" ]; then
	die "$fio_bin ($fio_ver) is not from a Debian package: give its source with FIO_SRC=DIR (the $fio_ver tag of fio's repository, git clone -b $fio_ver https://github.com/axboe/fio)"
fi
pver=$(dpkg-query -W -f='${Version}' "$pkg")
upstream=${pver%-*}
upstream=${upstream#*:}
upstream=${upstream%%+*}
[ "fio-$upstream" = "$fio_ver" ] ||
	die "$fio_bin says $fio_ver but its package $pkg is $pver: reinstall the package, or give the source with FIO_SRC=DIR"
src="$build/src/fio-$upstream"
if [ -f "$src/ioengines.h" ]; then
	echo "$fio_ver $src"
	exit 0
fi
command -v dpkg-source >/dev/null 2>&1 || sh "$(dirname "$0")/install-deps.sh" >&2

has_src() {
	grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}
srcpkg=$(dpkg-query -W -f='${source:Package}' "$pkg" 2>/dev/null || echo fio)
if ! has_src || ! apt-cache showsrc "$srcpkg" 2>/dev/null | grep -q "^Version: $pver\$"; then
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
mkdir -p "$build/src"
# apt-get source warns when _apt cannot read the directory; harmless.
(cd "$build/src" && apt-get source -qq --download-only "$srcpkg=$pver" >&2 &&
	dpkg-source -q -x "${srcpkg}_$(echo "$pver" | sed 's/^[0-9]*://').dsc" "fio-$upstream" >&2) 2>&1 |
	grep -v 'unsandboxed' >&2 || true
[ -f "$src/ioengines.h" ] ||
	die "could not get the source of $pkg $pver with apt-get source: give it with FIO_SRC=DIR (the $fio_ver tag of fio's repository)"
echo "$fio_ver $src"
