#!/bin/sh
# CPU per operation of two builds of an engine, A and B, interleaved round
# by round (A B, B A, ...) in one run of one fio job, for a before/after
# comparison on a shared machine: CPU time moves much less with the
# machine's load than elapsed time does. Per run: the job's CPU
# microseconds per operation (fio's usr_cpu + sys_cpu over job_runtime: the
# job's thread), the whole fio process's (user + system, getrusage of the
# children), operations per second on the job clock, and the load average.
# An operation is one fio I/O of any direction (sync ones counted by their
# latency samples), so a smallfile file operation or a dbreplay record.
# One untimed run of B comes first (the page cache and dentries warm).
#
# usage: bench/ab-cpu.sh ROUNDS A.so B.so FIO ARG...
#   every @ENGINE@ in the ARGs is replaced by A.so or B.so, e.g.
#   bench/ab-cpu.sh 5 /tmp/before.so build/fio-3.33/smallfile.so \
#       build/fio-3.33/fio --name=r --ioengine=external:@ENGINE@ \
#       --tree_dir=/srv/t --tree_files=100000 --bs=4k --tree_file_op=read \
#       --rw=randread --norandommap=1 --number_ios=1000000
set -eu
rounds=$1 a=$2 b=$3
shift 3
out=$(mktemp /tmp/ab-cpu.XXXXXX)
trap 'rm -f "$out" "$out.time"' EXIT
one() { # $1 label, $2 engine, then the fio command
	label=$1 so=$2
	shift 2
	cmd=""
	for arg in "$@"; do
		cmd="$cmd '$(printf '%s' "$arg" | sed "s|@ENGINE@|$so|g; s|'|'\\\\''|g")'"
	done
	load=$(cut -d' ' -f1 /proc/loadavg)
	eval /usr/bin/time -f '%U\ %S' -o "$out.time" $cmd --output-format=json >"$out" 2>/dev/null
	python3 - "$out" "$out.time" "$label" "$load" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
user, sys_s = (float(x) for x in open(sys.argv[2]).read().split()[-2:])
ops = sum(j[d]["total_ios"] for d in ("read", "write", "trim")) + j["sync"]["lat_ns"].get("N", 0)
job_cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * j["job_runtime"] / 1000.0
print("%-6s ops %d  job CPU %.3f us/op  process CPU %.3f us/op  %.0f ops/s (job clock)  load %s"
      % (sys.argv[3], ops, job_cpu * 1e6 / ops, (user + sys_s) * 1e6 / ops,
         ops * 1000.0 / j["job_runtime"], sys.argv[4]))
EOF
}
one warmup "$b" "$@" >/dev/null # untimed: the page cache and dentries warm
for r in $(seq "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then
		one A "$a" "$@"
		one B "$b" "$@"
	else
		one B "$b" "$@"
		one A "$a" "$@"
	fi
done
