#!/bin/sh
# Two builds of the smallfile engine, A and B, interleaved (A B, B A, ...) in
# one run: warm random whole-file reads of 4 KiB files with io_api=io_uring
# at iodepth 1 and 16, on a private tmpfs (unmounted on exit), files/s per
# run as fio reports it (read.total_ios / read.runtime). Needs root (mount).
# usage: bench/ab-smallfile.sh BEFORE.so AFTER.so FIO [ROUNDS]
set -eu
before=$1 after=$2 fio=$3 rounds=${4:-5}
d=$(mktemp -d /tmp/ab-smallfile.XXXXXX)
trap 'umount "$d" 2>/dev/null; rmdir "$d"' EXIT
mount -t tmpfs -o size=1g tmpfs "$d"
mkdir "$d/t"
common="--name=b --tree_dir=$d/t --tree_files=100000 --file_size_dist=fixed:4k --bs=4k"
"$fio" --ioengine=external:"$after" $common --file_op=layout --rw=write --output=/dev/null
rate() {  # files/s = read.total_ios / read.runtime (ms)
	python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; print(round(j["total_ios"]*1000/j["runtime"]))'
}
for depth in 1 16; do
	for r in $(seq "$rounds"); do
		if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
		for which in $order; do
			eval so=\$$which
			n=$("$fio" --ioengine=external:"$so" $common --file_op=read --rw=randread \
				--norandommap=1 --number_ios=200000 --randseed=$r --io_api=io_uring \
				--iodepth=$depth --output-format=json | rate)
			echo "depth=$depth round=$r $which $n"
		done
	done
done
