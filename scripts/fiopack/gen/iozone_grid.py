"""Write an fio job file reproducing `iozone -a`, with the iologs it replays.

IOzone's automatic mode (-a) runs, for every file size from 64 KiB to
512 MiB (doubling) and every record size from 4 KiB to 16 MiB (doubling, no
larger than the file; files above 16 MiB start at 64 KiB records), the tests
write, rewrite, read, reread, random read, random write, backward read,
record rewrite and stride read (then fwrite/frewrite/fread/freread, not
reproduced: see the header this script writes). This script writes that grid
as one fio job file of stonewalled jobs, nine per (file size, record size)
pair, and the iolog files for the two tests fio cannot express with rw=:

  backward read   IOzone: lseek(-reclen, SEEK_END), then read + lseek(-2*reclen,
                  SEEK_CUR) for every record. fio 3.33's rw=read:-N starts at
                  offset 0 and wraps to the end minus 2 records, so it reads
                  record 0 twice and never the last one; the iolog has the
                  exact order.
  stride read     IOzone: read a record, skip 17 records (STRIDE), and when the
                  next read would pass the end minus one record, restart at
                  record 1, 2, ... (record 0 when the file has <= 17 records),
                  until it has read as many records as the file holds.

The offsets are computed here exactly as iozone.c does (reverse_perf_test,
read_stride_perf_test).

Where the data file goes is fixed when the job file is written (--data-dir,
default /tmp), not taken from the environment: in fio 3.33 an iolog replayed
with directory= set crashes fio (the iolog's "open" looks the file up by its
name without the directory prefix; get_fileno() returns -1), so the iolog
jobs name their file with replay_redirect=, an absolute path, and so do the
other jobs, to use the same file.

The shipped jobs/001-iozone-mtron/iozone-auto.fio was written by

  scripts/fio-pack gen iozone-grid --max-file 256k \\
      --out jobs/001-iozone-mtron

run from the repository root; the iolog paths in the job file are the --out
directory as given, so run the job file from the same directory (or give an
absolute --out). The full IOzone grid on a file system mounted at /mnt/ssd:

  scripts/fio-pack gen iozone-grid --max-file 512m \\
      --data-dir /mnt/ssd --out /data/iozone-grid
  fio --output-format=json /data/iozone-grid/iozone-auto.fio

(126 file/record pairs, 1134 jobs, 252 iologs of 4.5 MB in all). --check
prints the record numbers one backward or stride read visits instead.
"""
import argparse
import os

from fiopack import outputs
from fiopack.gen.common import check_iolog_records, check_out_and_data_dir
from fiopack.options import Parser, size
from fiopack.units import KIB, MIB, parse_size, size_name

STRIDE = 17                 # iozone.c: #define STRIDE 17
CROSSOVER = 16 * MIB        # iozone.c: CROSSOVER (16*1024) KiB: above it, records start at LARGE_REC
LARGE_REC = 64 * KIB        # iozone.c: #define LARGE_REC 65536
MIN_REC = 4 * KIB
MAX_REC = 16 * MIB
MAX_CHECK = 16 << 30        # --check: the largest file IOzone -a's grid reaches, and more
DATA_FILE = "fio-pack.iozone.tmp"   # the job's data file, in --data-dir
IOLOG_FILE = "iozone.tmp"          # the name inside the iologs (replay_redirect maps it)
TESTS = ("write", "rewrite", "read", "reread", "randread", "randwrite",
         "bkwdread", "recrewrite", "strideread")


def grid(min_file: int, max_file: int):
    """(file size, record size) pairs in IOzone -a order."""
    f = min_file
    while f <= max_file:
        r = LARGE_REC if f > CROSSOVER else MIN_REC
        while r <= min(f, MAX_REC):
            yield f, r
            r *= 2
        f *= 2


def backward_offsets(file_size: int, reclen: int):
    n = file_size // reclen
    return [(n - 1 - i) * reclen for i in range(n)]


def stride_offsets(file_size: int, reclen: int, stride: int = STRIDE):
    """iozone.c read_stride_perf_test, with its positions in bytes."""
    n = file_size // reclen
    out = []
    pos = 0
    wrap = 0
    for _ in range(n):
        out.append(pos)
        pos += reclen
        if pos + stride * reclen >= n * reclen - reclen:
            wrap += 1
            pos = 0 if n <= stride else (wrap % n) * reclen
        else:
            pos += stride * reclen - reclen
    return out


def write_iolog(path: str, offsets, reclen: int):
    with outputs.Output(path) as f:
        f.write("fio version 2 iolog\n")
        f.write(f"{IOLOG_FILE} add\n{IOLOG_FILE} open\n")
        for off in offsets:
            f.write(f"{IOLOG_FILE} read {off} {reclen}\n")
        f.write(f"{IOLOG_FILE} close\n")


HEADER = """\
; {name} - IOzone -a (automatic mode) as a grid of stonewalled fio jobs
;
; Reproduces: "To SSD or not to SSD? High-end SSD vs. SAS disks benchmark"
; (2008, source 001): IOzone runs by Vladislav Seliverstov (Yandex) on an
; MTRON MSP-SATA7035 SSD and a Fujitsu SAS MBA3147RC (ext3, data=writeback,
; commit=300, noatime; vm.dirty_writeback_centisecs=3000), and on 2-SSD
; software RAID-0 arrays with several stripe sizes (scenario
; iozone-raid0-stripe: the same grid, run once per array). The article shows
; charts only; its statements (SAS ~20% faster sequentially; SSD random read
; at 100-120 MB/s from 64 KiB records, SAS only at 8-16 MiB records; SSD
; random write >2x slower than SAS) are what a lab's grid is compared with.
;
; Original: `iozone -a` in the file system under test: file sizes 64 KiB to
; 512 MiB (doubling), record sizes 4 KiB to 16 MiB (doubling, at most the
; file size; files above 16 MiB start at 64 KiB records), tests write,
; rewrite, read, reread, random read, random write, backward read, record
; rewrite, stride read, fwrite, frewrite, fread, freread, all on one file
; (iozone.tmp) with buffered read()/write() of one record after lseek();
; fsync and close happen after each test, outside its timing (no -e/-c).
; IOzone prints KB/s = bytes / time >> 10, i.e. KiB/s.
;
; This file: the grid from {min_file} to {max_file} ({pairs} file/record pairs,
; {njobs} jobs), data file
;   {data}
; written by scripts/fio-pack gen iozone-grid (its docstring says how;
; --max-file 512m writes IOzone's full grid).
; Per pair F (file size) and R (record size), in IOzone's order:
;   write.F.R       new file, sequential write() of R bytes (the previous pair
;                   removed the file: unlink=1 on its last job)
;   rewrite.F.R     the same over the existing file
;   read.F.R, reread.F.R   sequential read()
;   randread.F.R, randwrite.F.R   every record once in random order (fio's
;                   random map; IOzone 3.4xx shuffles the record numbers, older
;                   IOzone drew lrand48() % records with repeats)
;   bkwdread.F.R    last record to first, replayed from iolog/bkwd-F-R.log
;   recrewrite.F.R  the first record rewritten F/R times (IOzone: write +
;                   lseek(0); fio: lseek(0) + write)
;   strideread.F.R  IOzone's stride pattern (17 records), replayed from
;                   iolog/stride-F-R.log
;
; Identical: buffered read()/write() of one record, lseek() where IOzone
; seeks (ioengine=sync), no fadvise (fadvise_hint=0), nothing dropped from the
; page cache between tests (invalidate=0), no preallocation (fallocate=none),
; the offsets of backward and stride reads (iolog replay, computed as
; iozone.c computes them), one file for the whole run.
; Not identical: IOzone fsyncs and closes after every test outside the timing;
; fio cannot fsync untimed, so the write-back of a write test may overlap the
; next test (the article delayed write-back to 30 s anyway). Random order uses
; fio's generator, not lrand48(). The replayed jobs open the file O_RDONLY
; as IOzone does, the others O_RDWR|O_NOATIME or O_RDONLY|O_NOATIME.
; fwrite/frewrite/fread/freread (stdio) are not reproduced: their system
; calls depend on the stdio buffer IOzone sets, which was not checked here.
;
; Measures: mostly the page cache: IOzone -a never drops the cache, and a
; file smaller than RAM is read from memory (reread, and read after write).
; Device behaviour shows in the writes once dirty data exceeds the write-back
; limits, and in every test only for files larger than RAM.
; Headline: KB/s (KiB/s) per job = (read.bw_bytes + write.bw_bytes) / 1024
; (each job moves data in one direction only); job names give test, file
; size and record size.
;
; Run from the repository root (the iolog paths are relative to it):
;   fio jobs/001-iozone-mtron/iozone-auto.fio
; Environment: none. The job WRITES its data file (above) and removes it
; after each file/record pair. To run on another file system, write a grid
; for it:
;   scripts/fio-pack gen iozone-grid --data-dir /mnt/ssd --out DIR
; (a directory from the environment cannot be used here: fio 3.33 crashes
; replaying an iolog with directory= set, see fio-pack gen iozone-grid).
; RAID-0 stripe sizes (iozone-raid0-stripe): build the array per stripe size
; and run the grid on each, e.g. (DESTROYS the disks' contents)
;   mdadm --create /dev/md0 --level=0 --raid-devices=2 --chunk=64 \\
;         /dev/sdX /dev/sdY
;   mke2fs -b 4096 -R stride=16 -j -J size=384 -m 0 -O dir_index /dev/md0
;   mount -o noatime,reservation,data=writeback,commit=300 /dev/md0 /mnt/raid
;   sysctl vm.dirty_writeback_centisecs=3000
;   scripts/fio-pack gen iozone-grid --max-file 512m \\
;       --data-dir /mnt/raid --out /tmp/grid-raid
;   fio /tmp/grid-raid/iozone-auto.fio
; (the article's mke2fs and mount options; stride= is the chunk size in 4 KiB
; blocks and "differs accordingly in RAID tests"; reservation is an ext3
; mount option: drop it if the file system refuses it).
;
; Sizing: IOzone's own grid goes to 512 MiB (--max-file 512m). For device
; figures add file sizes beyond RAM (IOzone: -g; here --max-file). fio spends
; ~0.25 s starting each stonewalled job (it polls for job state), so the
; full grid's 1134 jobs take ~5 min beyond their I/O. Small files finish in
; well under a millisecond and fio's runtime is whole milliseconds: their
; KiB/s are quantised (IOzone's own timer has the same problem at 64 KiB).
"""


def job_file(min_file: int, max_file: int, iolog_dir: str, name: str, data_dir: str) -> str:
    pairs = list(grid(min_file, max_file))
    data = os.path.join(data_dir, DATA_FILE)
    lines = [HEADER.format(name=name, min_file=size_name(min_file), max_file=size_name(max_file),
                           pairs=len(pairs), njobs=len(pairs) * len(TESTS), data=data).rstrip("\n"),
             "",
             "[global]",
             "create_serialize=0",
             "ioengine=sync",
             "direct=0",
             "invalidate=0",
             "fadvise_hint=0",
             "fallocate=none",
             "stonewall",
             ""]
    for f, r in pairs:
        fs, rs = size_name(f), size_name(r)
        whole = [f"filename={data}", f"size={fs}"]
        sections = [
            ("write", ["rw=write"] + whole),
            ("rewrite", ["rw=write"] + whole),
            ("read", ["rw=read"] + whole),
            ("reread", ["rw=read"] + whole),
            ("randread", ["rw=randread"] + whole),
            ("randwrite", ["rw=randwrite"] + whole),
            ("bkwdread", [f"read_iolog={iolog_dir}/bkwd-{fs}-{rs}.log", f"replay_redirect={data}"]),
            ("recrewrite", ["rw=write", f"filename={data}", f"size={rs}", f"io_size={fs}"]),
            ("strideread", [f"read_iolog={iolog_dir}/stride-{fs}-{rs}.log", f"replay_redirect={data}",
                            "unlink=1"]),
        ]
        for test, opts in sections:
            lines.append(f"[{test}.{fs}.{rs}]")
            lines.append(f"bs={rs}")
            lines.extend(opts)
            lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = Parser(prog="fio-pack gen iozone-grid", description=__doc__.split("\n")[0],
                                 epilog=__doc__.split("\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-file", type=size(), default="64k", help="smallest file size (IOzone -n; default 64k)")
    ap.add_argument("--max-file", type=size(), default="512m", help="largest file size (IOzone -g; default 512m)")
    ap.add_argument("--data-dir", default="/tmp",
                    help="existing directory on the file system under test for the data file "
                         f"{DATA_FILE} (default /tmp)")
    ap.add_argument("--out", help="directory for the job file and iolog/ (made if missing)")
    ap.add_argument("--name", default="iozone-auto.fio", help="job file name (default iozone-auto.fio)")
    ap.add_argument("--check", metavar="TEST:FILE:REC",
                    help="print the record numbers of bkwd or stride for one pair, e.g. stride:256k:4k")
    args = ap.parse_args(argv)

    if args.check:
        test, fs, rs = (args.check.split(":") + ["", "", ""])[:3]
        fn = {"bkwd": backward_offsets, "stride": stride_offsets}.get(test)
        try:
            f, r = parse_size(fs), parse_size(rs)
        except ValueError:
            f = r = 0
        if fn is None or args.check.count(":") != 2 or not 0 < r <= f <= MAX_CHECK:
            ap.error(f"--check {args.check!r}: expected bkwd|stride:FILE:REC, sizes with "
                     f"0 < REC <= FILE <= {size_name(MAX_CHECK)}")
        print(" ".join(str(o // r) for o in fn(f, r)))
        return 0
    if not args.out:
        ap.error("--out is required")
    check_out_and_data_dir(ap, args)
    min_file, max_file = args.min_file, args.max_file
    # a backward and a stride iolog of FILE/REC records for each pair
    check_iolog_records(ap, sum(2 * (f // r) for f, r in grid(min_file, max_file)),
                        f"--min-file {args.min_file} --max-file {args.max_file}")
    iolog_dir = os.path.join(args.out, "iolog")
    os.makedirs(iolog_dir, exist_ok=True)
    for f, r in grid(min_file, max_file):
        fs, rs = size_name(f), size_name(r)
        write_iolog(os.path.join(iolog_dir, f"bkwd-{fs}-{rs}.log"), backward_offsets(f, r), r)
        write_iolog(os.path.join(iolog_dir, f"stride-{fs}-{rs}.log"), stride_offsets(f, r), r)
    outputs.write_output(os.path.join(args.out, args.name),
                         job_file(min_file, max_file, iolog_dir, args.name, args.data_dir))
    return 0

