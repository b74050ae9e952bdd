#!/bin/sh
# Two builds of the smallfile engine, A and B, on cold single passes of a
# real block device: an image under $IMAGE_DIR written in full from
# /dev/urandom (reads of holes, or of zero blocks a thin VM disk may fake,
# would never reach the disk), attached with losetup --direct-io=on, a
# fresh mkfs per file system. The tree is laid out once per file system;
# then per round the four modes (A sync, A io_uring, B sync, B io_uring,
# all at iodepth 1) in an order rotated by one from the round before, each
# a single cold pass: `sync; echo 3 > /proc/sys/vm/drop_caches`, then
# tree_file_op=read rw=randread randrepeat=0 number_ios=$IOS (each file at
# most once). files/s = read.total_ios / read.runtime.
#
# Prints one line per pass as it goes (files/s, CPU us and context
# switches per file), then per file system: files/s median (min / max) per
# mode, per round io_uring / sync of the same build, the median CPU time
# and context switches per file, and per round B / A of each API, median
# (min / max). Load average
# before and after. Undoes everything on every exit path (umount,
# losetup -d, image and directories removed). Needs root.
#
# usage: bench/ab-cold.sh A.so B.so FIO [ROUNDS [FS...]]
#   ROUNDS default 6, FS default "ext4 xfs"
#   env: FILES (30000), SIZE (16k), IOS (3000), DEPTH (1),
#        IMAGE_MIB (1024, at most 2048), IMAGE_DIR (/var/tmp)
set -eu
[ $# -ge 3 ] || { echo "usage: $0 A.so B.so FIO [ROUNDS [FS...]]" >&2; exit 2; }
a=$(realpath "$1") b=$(realpath "$2") fio=$(realpath "$3") rounds=${4:-6}
shift 3
[ $# -gt 0 ] && shift
fslist=${*:-ext4 xfs}
files=${FILES:-30000} size=${SIZE:-16k} ios=${IOS:-3000} depth=${DEPTH:-1}
mib=${IMAGE_MIB:-1024} imgdir=${IMAGE_DIR:-/var/tmp}
[ "$(id -u)" -eq 0 ] || { echo "$0: needs root (losetup, mkfs, mount, drop_caches)" >&2; exit 2; }
[ "$mib" -le 2048 ] || { echo "$0: IMAGE_MIB $mib is above 2048" >&2; exit 2; }
for f in "$a" "$b" "$fio"; do
	[ -f "$f" ] || { echo "$0: $f: no such file" >&2; exit 2; }
done

base=$(mktemp -d /tmp/ab-cold.XXXXXX)
img=$imgdir/ab-cold-$$.img
mnt=$base/mnt
dev=
mounted=0
cleanup() {
	if [ "$mounted" = 1 ]; then
		umount "$mnt" 2>/dev/null || { sleep 1; umount -l "$mnt"; }
		mounted=0
	fi
	[ -n "$dev" ] && losetup -d "$dev"
	dev=
	rm -f "$img"
	rm -rf "$base"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
mkdir "$mnt"
res=$base/results.tsv
: >"$res"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A=$a"
echo "B=$b"
[ ! -e "$img" ] || { echo "$0: $img exists" >&2; exit 1; }
dd if=/dev/urandom of="$img" bs=1M count="$mib" oflag=direct status=none
dev=$(losetup --direct-io=on --show -f "$img")

common="--name=c --output-format=json --tree_dir=$mnt/t --tree_files=$files \
	--tree_file_size_dist=fixed:$size --bs=$size"
# files/s = read.total_ios / read.runtime (ms); the job's CPU time (fio's
# usr_cpu + sys_cpu, % of the run) in us and its context switches, per
# file: on a shared machine the rate moves with the neighbours' load, the
# work per file much less
rate() {
	python3 -c 'import json,sys
j = json.load(sys.stdin)["jobs"][0]
r = j["read"]
n = r["total_ios"]
print(round(n * 1000 / r["runtime"]), round((j["usr_cpu"] + j["sys_cpu"]) * r["runtime"] * 10 / n, 1),
      round(j["ctx"] / n, 2), sep="\t")'
}
for fs in $fslist; do
	case $fs in
	xfs) mkfs.xfs -q -f "$dev" ;;
	*) "mkfs.$fs" -q -F "$dev" ;;
	esac
	mount "$dev" "$mnt"
	mounted=1
	mkdir "$mnt/t"
	# shellcheck disable=SC2086 # $common is a list of options: split on purpose
	"$fio" --ioengine=external:"$b" $common --tree_file_op=layout --rw=write >/dev/null
	sync
	for r in $(seq "$rounds"); do
		set -- "A sync" "A io_uring" "B sync" "B io_uring"
		i=$(((r - 1) % 4))
		while [ "$i" -gt 0 ]; do  # rotated by one more each round
			first=$1
			shift
			set -- "$@" "$first"
			i=$((i - 1))
		done
		for m in "$@"; do
			build=${m% *} api=${m#* }
			[ "$build" = A ] && so=$a || so=$b
			sync
			echo 3 >/proc/sys/vm/drop_caches
			# shellcheck disable=SC2086
			n=$("$fio" --ioengine=external:"$so" $common --tree_file_op=read --rw=randread \
				--number_ios="$ios" --randrepeat=0 --tree_io_api="$api" \
				--iodepth="$depth" | rate)
			echo "$fs round=$r $build $api $n" | tr '\t' ' '
			printf '%s\t%s\t%s\t%s\t%s\n' "$fs" "$r" "$build" "$api" "$n" >>"$res"
		done
	done
	umount "$mnt"
	mounted=0
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$res" <<'EOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
def fmt(xs, f):
    return "%s (%s / %s)" % (f(statistics.median(xs)), f(min(xs)), f(max(xs)))
def num(x):
    return "{:,}".format(round(x))
for fs in dict.fromkeys(r[0] for r in rows):
    v = {}
    for f, r, b, api, n, cpu, ctx in rows:
        if f == fs:
            v[(b, api, r)] = (int(n), float(cpu), float(ctx))
    rounds = sorted({k[2] for k in v}, key=int)
    print("\n%s, %d rounds\n" % (fs, len(rounds)))
    print("| build, mode | files/s median (min / max) | io_uring / sync per round "
          "| CPU us per file | context switches per file |")
    print("|---|---|---|---|---|")
    for b in "AB":
        for api in ("sync", "io_uring"):
            xs = [v[(b, api, r)][0] for r in rounds]
            ratio = "1" if api == "sync" else fmt(
                [v[(b, "io_uring", r)][0] / v[(b, "sync", r)][0] for r in rounds], "{:.2f}".format)
            cpu = statistics.median(v[(b, api, r)][1] for r in rounds)
            ctx = statistics.median(v[(b, api, r)][2] for r in rounds)
            print("| %s, %s | %s | %s | %.0f | %.2f |" % (b, api, fmt(xs, num), ratio, cpu, ctx))
    for api in ("sync", "io_uring"):
        print("\nB / A, %s, per round: %s" % (api, fmt(
            [v[("B", api, r)][0] / v[("A", api, r)][0] for r in rounds], "{:.2f}".format)))
EOF
