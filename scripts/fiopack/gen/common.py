"""What the job generators that write a job file and its iologs into --out
(bonnie-seq, iozone-grid) check before writing anything."""
import os

from fiopack import jobtext, outputs


def check_name(ap, args) -> None:
    """--name is the job file's name in --out: a name, not a path (with a
    '/' the job went wherever it said, outside --out), and not the iolog/
    directory beside it; an existing one must be a file the output rules
    replace. Checked before the iologs are written."""
    name = args.name
    if not name or "/" in name or name in (".", "..", "iolog"):
        ap.error(f"--name {name!r}: the job file's name in --out, without a '/' "
                 "(and not '.', '..' or 'iolog')")
    if os.path.isdir(args.out):
        outputs.check(os.path.join(args.out, name), "--name")


# records a generated iolog may hold, all of a command's iologs together:
# bonnie++'s 2x RAM of a 1 TiB machine at 8k chunks. A size near 2^63 wrote
# gigabytes of iolog until the disk was full or the user gave up.
IOLOG_RECORDS_MAX = 1 << 28


def check_iolog_records(ap, records: int, what: str) -> None:
    """Refuses, in one line, iologs of more than IOLOG_RECORDS_MAX records,
    before anything is written."""
    if records > IOLOG_RECORDS_MAX:
        ap.error(f"{what}: {records} iolog records, more than the {IOLOG_RECORDS_MAX} a "
                 f"generator writes (about {IOLOG_RECORDS_MAX * 40 >> 30} GiB of iolog)")


# bytes a generator writes into one output: the iolog bound above in bytes
# (40 a record). `gen dbreplay-dump --scale 2^63` wrote until the disk was
# full or the user gave up.
OUTPUT_BYTES_MAX = IOLOG_RECORDS_MAX * 40


def check_output_bytes(ap, weight: int, what: str) -> None:
    """Refuses, in one line, an output of more than OUTPUT_BYTES_MAX bytes
    (@weight, what the options given would write), before anything is
    written."""
    if weight > OUTPUT_BYTES_MAX:
        ap.error(f"{what}: about {weight >> 20} MiB of output, more than the "
                 f"{OUTPUT_BYTES_MAX >> 20} MiB a generator writes")


def check_out_and_data_dir(ap, args) -> None:
    """--data-dir (the job's filename=, absolute), --out (where the job and
    its iolog/ go: the job names its iologs under it) and --name (in the
    job's first comment line) must read back in the job file as they were
    given (jobtext.check: no line break, ';', '#', and no ':' in a path),
    and --out must be a directory that can be made or written in."""
    if not os.path.isabs(args.data_dir):
        ap.error("--data-dir must be an absolute path")
    jobtext.check(args.data_dir, "--data-dir", path=True)
    jobtext.check(args.out, "--out", path=True)
    jobtext.check(args.name, "--name")
    outputs.check_dir(args.out, "--out")
    check_name(ap, args)
