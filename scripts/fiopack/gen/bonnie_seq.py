"""Write bonnie-seq.fio (bonnie++'s sequential tests) and its rewrite iolog.

bonnie++ 2.00 (Debian; bonnie++.cpp TestFileOps, bon_io.cpp) runs, on one
file of -s SIZE MiB in the scratch directory:

  per-char write   write(fd, &c, 1) for the first 3 MiB (DefaultByteIO), then
                   fsync + close, all timed
  block write      the file unlinked and created again (O_CREAT|O_EXCL), SIZE
                   written with write() of 8 KiB chunks, fsync + close, timed
  rewrite          for every 8 KiB chunk: read(), lseek(-8 KiB, SEEK_CUR),
                   write() of the same chunk (one byte changed); fsync + close
  per-char read    read(fd, &c, 1) over the first 3 MiB
  block read       read() of 8 KiB chunks over SIZE

fio has no rw= mode for "read a block, then write the same block, then the
next": rw=rw interleaves the two directions at random, so the writer would
often overwrite chunks before the reader gets to them (and the reader would
then hit the page cache). The rewrite job therefore replays an iolog:
read i, write i, for every chunk, then a sync. Replayed through fio's sync
engine that is read(), lseek(), write() per chunk: bonnie's own calls.

fio 3.33 crashes replaying an iolog when directory= is set (the iolog's file
is looked up by its name without the directory prefix), so the data file is
an absolute path fixed here (--data-dir, default /tmp), and the iolog names
its file through replay_redirect=. The shipped
jobs/004-phoronix-raid/bonnie-seq.fio was written by

  scripts/fio-pack gen bonnie-seq --out jobs/004-phoronix-raid

from the repository root (SIZE 16m, iolog paths relative to that root). A
real run, bonnie++'s rule of twice the RAM (24 GiB here):

  scripts/fio-pack gen bonnie-seq --size 48g --data-dir /mnt/raid --out /data/bonnie
  fio --output-format=json /data/bonnie/bonnie-seq.fio

(the iolog has two lines per 8 KiB chunk: ~440 MB for 48g; the job reads it
in chunks, read_iolog_chunked=1).
"""
import argparse
import os

from fiopack import outputs
from fiopack.gen.common import check_iolog_records, check_out_and_data_dir
from fiopack.options import Parser, size as size_type
from fiopack.units import size_name

DATA_FILE = "fio-pack.bonnie.dat"
IOLOG_FILE = "Bonnie.tmp"


def write_rewrite_iolog(path: str, size: int, chunk: int):
    with outputs.Output(path) as f:
        f.write("fio version 2 iolog\n")
        f.write(f"{IOLOG_FILE} add\n{IOLOG_FILE} open\n")
        for off in range(0, size - size % chunk, chunk):
            f.write(f"{IOLOG_FILE} read {off} {chunk}\n{IOLOG_FILE} write {off} {chunk}\n")
        f.write(f"{IOLOG_FILE} sync 0 0\n{IOLOG_FILE} close\n")


HEADER = """\
; {name} - bonnie++ sequential tests: per-char and block write, rewrite, per-char and block read
;
; Reproduces: the bonnie++ runs of "Disk Type Benchmarks" (2010, source 004):
; an HP IO Accelerator (Fusion-io), 6 SSDs in RAID0 on a SmartArray P400, and
; Nexsan SAS and SATA arrays (RAID0+1, RAID6), ext2 mounted noatime.
; Published: "Seq Block In" 466,542 K/s for the ssd-raid rerun; the rest is
; charts. The article does not give the bonnie++ command line or version.
;
; Original: bonnie++ (2.00 in Debian; source bonnie++.cpp TestFileOps,
; bon_io.cpp) `bonnie++ -d DIR -s SIZE`, SIZE defaulting to twice the RAM:
;   per-char write: write() of 1 byte for the first 3 MiB; fsync+close timed
;   block write:    unlink, O_CREAT|O_EXCL, write() of 8 KiB; fsync+close timed
;   rewrite:        per 8 KiB chunk read(), lseek(-8 KiB, SEEK_CUR), write();
;                   fsync+close timed
;   per-char read:  read() of 1 byte over the first 3 MiB
;   block read:     read() of 8 KiB
; and prints K/sec = KiB / elapsed. The article does not say which version
; it ran; bonnie++ 1.03, the stable branch before 1.9x, did the per-char
; tests with stdio putc()/getc() (bonnie++'s changelog, 1.92: "Made the
; per-byte code use read() and write() instead of putc() and getc()"), so its
; per-char system calls were stdio buffer-sized.
;
; This file: SIZE {size}, data file
;   {data}
; written by scripts/fio-pack gen bonnie-seq (--size, --data-dir).
; Identical: the system calls of bonnie++ 2.00 for each test (ioengine=sync:
; write()/read() of 1 byte or 8 KiB, buffered, sequential; the rewrite
; replayed from iolog/{iolog} as read, lseek,
; write per chunk), the fsync inside the timed part of the write tests
; (end_fsync=1; an iolog "sync" for the rewrite), a new file for the block
; write (the per-char write job removes its file: unlink=1), no fadvise
; (fadvise_hint=0), no preallocation.
; Not identical: bonnie++ fsyncs the file at every close, after the read
; tests too (no I/O: the file is clean); fio fsyncs after the writes. The
; data written are fio's buffers, not bonnie++'s counting bytes. bonnie++
; 1.03's stdio per-char tests are not reproduced (see above).
;
; Measures: with SIZE = 2x RAM (bonnie++'s rule), the file system and device
; sequential rates through the page cache; the per-char tests measure
; system-call overhead (CPU). With the default SIZE it is a page-cache test.
; Headline (KiB/s, as bonnie++'s K/sec), per job:
;   per-char write  write.bw_bytes / 1024            job "putc"
;   block write     write.bw_bytes / 1024            job "block-write"
;   rewrite         read.io_bytes / 1024 / (job_runtime / 1000)   job "rewrite"
;                   (bonnie++ counts SIZE once per elapsed time, not the
;                   bytes read plus written)
;   per-char read   read.bw_bytes / 1024             job "getc"
;   block read      read.bw_bytes / 1024             job "block-read"
;
; Run from the repository root (the iolog path is relative to it):
;   fio jobs/004-phoronix-raid/{name}
; Environment: none. The job WRITES its data file (above) and leaves it in
; place (bonnie++ deletes its file; delete it by hand). For another
; directory or SIZE, write a new job file (the environment cannot be used
; here: fio 3.33 crashes replaying an iolog with directory= set):
;   scripts/fio-pack gen bonnie-seq --size 48g \\
;       --data-dir /mnt/raid --out DIR
;
; Sizing: bonnie++ uses SIZE = 2x RAM (it refuses less without -r); the
; per-char tests stay at 3 MiB.
"""


def job_file(name: str, size: int, byte_io: int, chunk: int, data: str, iolog: str) -> str:
    cs = size_name(chunk)
    body = f"""
[global]
create_serialize=0
ioengine=sync
direct=0
fadvise_hint=0
fallocate=none
filename={data}
stonewall

[putc]
rw=write
bs=1
size={size_name(byte_io)}
end_fsync=1
unlink=1

[block-write]
rw=write
bs={cs}
size={size_name(size)}
end_fsync=1

[rewrite]
read_iolog={iolog}
read_iolog_chunked=1
replay_redirect={data}

[getc]
rw=read
bs=1
size={size_name(byte_io)}

[block-read]
rw=read
bs={cs}
size={size_name(size)}
"""
    return HEADER.format(name=name, size=size_name(size), data=data,
                         iolog=os.path.basename(iolog)) + body


def main(argv=None) -> int:
    ap = Parser(prog="fio-pack gen bonnie-seq", description=__doc__.split("\n")[0],
                                 epilog=__doc__.split("\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=size_type(), default="16m", help="bonnie++ -s: file size (default 16m; bonnie++: 2x RAM)")
    ap.add_argument("--byte-io", type=size_type(), default="3m", help="per-char test size (bonnie++: 3m)")
    ap.add_argument("--chunk", type=size_type(), default="8k", help="block size (bonnie++ -s SIZE:CHUNK; default 8k)")
    ap.add_argument("--data-dir", default="/tmp",
                    help=f"existing directory for the data file {DATA_FILE} (default /tmp)")
    ap.add_argument("--out", required=True, help="directory for the job file and iolog/")
    ap.add_argument("--name", default="bonnie-seq.fio", help="job file name (default bonnie-seq.fio)")
    args = ap.parse_args(argv)
    size, byte_io, chunk = args.size, args.byte_io, args.chunk
    if size < byte_io:
        ap.error("--size must be at least --byte-io")
    # a read and a write line per chunk
    check_iolog_records(ap, 2 * (size // chunk), f"--size {args.size} in chunks of {chunk}")
    check_out_and_data_dir(ap, args)
    iolog_dir = os.path.join(args.out, "iolog")
    os.makedirs(iolog_dir, exist_ok=True)
    iolog = os.path.join(iolog_dir, f"bonnie-rewrite-{size_name(size)}-{size_name(chunk)}.log")
    write_rewrite_iolog(iolog, size, chunk)
    outputs.write_output(os.path.join(args.out, args.name),
                         job_file(args.name, size, byte_io, chunk,
                                  os.path.join(args.data_dir, DATA_FILE), iolog))
    return 0

