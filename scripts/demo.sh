#!/bin/sh
# Runs the main job, jobs/smallfile-mail.fio, on a fresh temporary directory
# (never the repository, never /) and prints a short summary. Called by
# `make demo` after the build; SMALLFILE_DIR may point it at a real directory.
set -eu
cd "$(dirname "$0")/.."
made_dir=
if [ -z "${SMALLFILE_DIR:-}" ]; then
	SMALLFILE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/smallfile-mail.XXXXXX")
	made_dir=$SMALLFILE_DIR
fi
out=$(mktemp "${TMPDIR:-/tmp}/smallfile-mail-json.XXXXXX")
ops=$(mktemp "${TMPDIR:-/tmp}/smallfile-mail-ops.XXXXXX")
cleanup() {
	rm -f "$out" "$ops"
	[ -n "$made_dir" ] && rm -rf "$made_dir"
	return 0
}
trap cleanup EXIT INT TERM
echo "Running jobs/smallfile-mail.fio on $SMALLFILE_DIR (layout, then 20 s of mail traffic)..."
export SMALLFILE_DIR
# fio-pack run: the job file finds the engines as a user runs it (FIO_PACK_ENGINES)
SMALLFILE_OPSTATS=$ops scripts/fio-pack run --fio ./build/fio --output-format=json \
	jobs/smallfile-mail.fio >"$out"
scripts/fio-pack summary "$out" "$ops"
