#!/bin/sh
# Instructions per operation of every engine workload of
# docs/benchmarks-cpu.md, beside its peer and fio's null engine of the same
# job shape, by bench/ir-per-op.py (callgrind: user space only, independent
# of the machine's load). One line
# per measurement: "CASE SIDE INSTRUCTIONS", and for dbr "(job clock N)":
# without dbreplay's check pass and fio's loading of the iolog, which run
# before the job clock starts. The engine's own is the engine
# minus null (and, for smallfile, minus minloop, which makes the same system
# calls and builds the same paths).
#
# usage: bench/ir-engines.sh BUILD DISK TMP [CASE...]
#   BUILD  a directory with fio, smallfile.so, dbreplay.so and postmark.so
#          (build/fio-3.33 of a checkout; another checkout's for "before")
#   DISK   a directory on ext4 (a 100,000-file tree is laid out in
#          DISK/ir-tree on first use and kept)
#   TMP    a directory on tmpfs (the same tree, the dbreplay traces and
#          PostMark's runs; about 1.5 GB)
#   CASE   sf-ext4 sf-tmpfs sf-uring8 sf-uring16 sf-layout dbr pm (all by default)
# Needs valgrind, build/bench/minloop and build/bench/dbtrace-bench (make
# builds both) of this checkout, and /usr/bin/postmark for the pm case.
set -eu
build=$(cd "$1" && pwd) disk=$2 tmp=$3
shift 3
cases=${*:-sf-ext4 sf-tmpfs sf-uring8 sf-uring16 sf-layout dbr pm}
here=$(cd "$(dirname "$0")/.." && pwd)
fio=$build/fio ir=$here/bench/ir-per-op.py minloop=$here/build/bench/minloop
N=50000
SF="--name=b --tree_files=100000 --bs=4k --tree_file_op=read --rw=randread --norandommap=1"
NULL="--name=null --ioengine=null --bs=4k --size=409600000 --norandommap=1 --number_ios=@N@"

say() { # CASE SIDE OUT: the total, and the job clock's where --before-clock gave one
	printf '%-10s %-10s %s%s\n' "$1" "$2" "$(sed -n '1s/ instructions per operation.*//p' "$3")" \
		"$(sed -n 's/^\([0-9]*\) instructions per operation on the job clock.*/ (job clock \1)/p' "$3")"
}
measure() { # CASE SIDE N [--before-clock FUNCTION] COMMAND...
	c=$1 s=$2 n=$3 opts=""
	shift 3
	if [ "$1" = --before-clock ]; then
		opts="--before-clock $2"
		shift 2
	fi
	# shellcheck disable=SC2086 # opts: an option and its value, or nothing
	"$ir" $opts "$n" "$@" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
	say "$c" "$s" "$out"
}
measure_fresh() { # CASE SIDE N BASE COMMAND...
	c=$1 s=$2 n=$3 base=$4
	shift 4
	"$ir" --fresh "$base" "$n" "$@" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
	say "$c" "$s" "$out"
}
tree() { # DIR: the 100,000-file tree of 4 KiB files, laid out once
	[ -e "$1/.fio-smallfile-tree" ] && return
	mkdir -p "$1"
	"$fio" --name=l --ioengine=external:"$build/smallfile.so" --tree_dir="$1" \
		--tree_files=100000 --bs=4k --tree_file_op=layout --rw=write >/dev/null
}
out=$(mktemp /tmp/ir-engines.XXXXXX)
trap 'rm -f "$out"' EXIT
for c in $cases; do
	case $c in
	sf-ext4 | sf-tmpfs | sf-uring8 | sf-uring16)
		d=$disk/ir-tree extra=""
		[ "$c" = sf-tmpfs ] && d=$tmp/ir-tree
		[ "$c" = sf-uring8 ] && extra="--tree_io_api=io_uring --iodepth=8"
		[ "$c" = sf-uring16 ] && extra="--tree_io_api=io_uring --iodepth=16"
		tree "$d"
		# shellcheck disable=SC2086 # the job's options are words
		measure "$c" engine $N "$fio" --ioengine=external:"$build/smallfile.so" \
			--tree_dir="$d" $SF $extra --number_ios=@N@
		# shellcheck disable=SC2086
		measure "$c" null $N "$fio" $NULL --rw=randread
		measure "$c" minloop $N "$minloop" read --dir "$d" --files 100000 --ios @N@
		;;
	sf-layout)
		# N and 2N files laid out in a fresh directory: each file's layout
		measure_fresh "$c" engine 20000 "$tmp" "$fio" \
			--ioengine=external:"$build/smallfile.so" --name=l --tree_dir=@DIR@ \
			--tree_files=@N@ --bs=4k --tree_file_op=layout --rw=write
		measure "$c" null 20000 "$fio" --name=null --ioengine=null --bs=4k \
			--size=409600000 --number_ios=@N@ --rw=write
		measure_fresh "$c" minloop 20000 "$tmp" "$minloop" layout --dir @DIR@ --files @N@
		;;
	dbr)
		# the benchmark's trace of N and 2N records (fio-pack bench dbreplay's generator)
		for n in 100000 200000; do
			[ -e "$tmp/t$n.trace" ] && continue
			"$here/build/bench/dbtrace-bench" gen --records $n --seed 1 --streams 4 \
				--io 8192 --data-mib 64 --log-mib 16 --log-share 20 --read-pct 70 \
				--sync-every 8 >"$tmp/t$n.trace" 2>/dev/null
			"$here/scripts/fio-pack" trace export-iolog "$tmp/t$n.trace" \
				-o "$tmp/t$n.iolog" --prefix "$tmp/dbr" --quiet
		done
		mkdir -p "$tmp/dbr"
		measure "$c" engine 100000 --before-clock dbr_init "$fio" --name=dbreplay \
			--ioengine=external:"$build/dbreplay.so" --dbr_trace="$tmp/t@N@.trace" \
			--dbr_target="$tmp/dbr" --dbr_timing=asap --dbr_fill=data --dbr_keep=1 \
			--dbr_report=none --dbr_io_api=sync --iodepth=1
		measure "$c" read_iolog 100000 --before-clock init_iolog "$fio" --name=read_iolog \
			--read_iolog="$tmp/t@N@.iolog" --replay_no_stall=1 --ioengine=psync --iodepth=1
		# fio's own psync engine doing the same mix on the trace's data file,
		# its offsets fio's: less read_iolog, fio's price for generating an
		# I/O's offset and length, which every external engine pays
		measure "$c" psync 100000 "$fio" --name=psync --ioengine=psync --rw=rw \
			--rwmixread=70 --bs=8k --size=64m --io_size=1t \
			--filename="$tmp/dbr/base/16384/16397" --number_ios=@N@
		# the trace's 70 % reads among its data I/Os, 8 KiB, as one job
		measure "$c" null 100000 "$fio" --name=null --ioengine=null --bs=8k \
			--size=64m --io_size=1t --rw=randrw --rwmixread=70 --norandommap=1 --number_ios=@N@
		;;
	pm)
		# PostMark's 000 article configuration (fio-pack bench postmark's "article")
		measure_fresh "$c" engine 10000 "$tmp" "$fio" --name=pm \
			--ioengine=external:"$build/postmark.so" --pm_location=@DIR@ \
			--pm_number=5000 --pm_transactions=@N@ --pm_size_low=500 \
			--pm_size_high=500000 --pm_read_block=4096 --pm_write_block=4096 \
			--pm_buffering=1 --pm_seed=42 --pm_bias_read=5 --pm_bias_create=5 \
			--pm_report=verbose --pm_whole_seconds=1
		measure_fresh "$c" postmark 10000 "$tmp" sh -c 'printf "set location %s\n\
set number 5000\nset transactions %s\nset size 500 500000\nset read 4096\n\
set write 4096\nset buffering true\nset seed 42\nset bias read 5\nset bias create 5\n\
run\nquit\n" "$0" "$1" >"$0.cfg" && /usr/bin/postmark "$0.cfg" </dev/null; rm -f "$0.cfg"' @DIR@ @N@
		;;
	*)
		echo "ir-engines: unknown case $c" >&2
		exit 2
		;;
	esac
done
