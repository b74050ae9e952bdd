"""The BPF capture's converter in C (build/iocap-convert, tools/iocap/
convert*.c): the Python converter's rules (convert.py) for the calls iocap
writes, at the rate a production capture makes records. The C side makes
the records, the files and the notes; this side the header, whose roles
need the rules. What it does not hold (a line iocap does not write,
something the Python converter refuses with its message) it leaves to that
converter, which stays the reference: with FIO_PACK_CONVERT_CHECK=1 (the
capture tests set it) both run and their traces must be the same."""
import gzip
import json
import os
import shutil
import subprocess
import tempfile

from fiopack import REPO
from fiopack.capture.convert import GZ_LEVEL, Converter
from fiopack.capture.model import Counts, TFile
from fiopack.capture.rules import Error
from fiopack.trace import dbtrace as dt

CONVERT = os.environ.get("FIO_PACK_IOCAP_CONVERT") or os.path.join(REPO, "build", "iocap-convert")
# iocap-convert's exit status for a capture it leaves to the Python converter
FALLBACK = 2
OPS_DIR = {"fsync", "fdatasync", "create", "unlink"}


def crosscheck() -> bool:
    return os.environ.get("FIO_PACK_CONVERT_CHECK") == "1"


class NativeConverter(Converter):
    """A Converter whose calls iocap-convert has read: run() instead of feed()."""

    def run(self, path: str, pagesize: int, bpf: bool) -> bool:
        """Converts PATH; False if iocap-convert leaves it to the Python
        converter (with FIO_PACK_CONVERT_CHECK, a BPF capture it leaves is
        an error)."""
        strict = bpf and crosscheck()
        if not os.access(CONVERT, os.X_OK):
            if strict:
                raise Error(f"{CONVERT} is not built (make builds it)")
            self.close()
            return False
        try:
            with open(path, "rb") as f:
                gz = f.read(2) == b"\x1f\x8b"     # strace's output, compressed
        except OSError:
            gz = True                               # the Python converter says why
        if gz:
            self.close()
            return False
        self.work = tempfile.mkdtemp(prefix="iocap-convert.")
        listing = os.path.join(self.work, "listing")
        odirect = os.path.join(self.work, "odirect")
        argv = [CONVERT, "--outside", self.outside, "--outside-prefix", self.outside_prefix,
                "--pagesize", str(pagesize), "--body", os.path.join(self.work, "body"),
                "--state", os.path.join(self.work, "state"), "--odirect", odirect]
        for r in self.roots:
            argv += ["--root", r]
        if self.listing is not None:
            with open(listing, "wb") as f:
                f.write(b"".join(f"{'d' if t == 'd' else 'f'} {size} {p}\0".encode("latin-1")
                                 for p, (t, size) in self.listing.items()))
            argv += ["--listing", listing]
        with open(odirect, "wb") as f:
            f.write(b"".join(f"{tid} {info['odirect']}\0".encode("latin-1")
                             for tid, info in self.procinfo.items() if info.get("odirect")))
        p = subprocess.run(argv + [path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        why = (p.stderr.decode("latin-1").strip().splitlines() or ["?"])[-1]
        if p.returncode == FALLBACK:
            if strict:
                raise Error(f"{self.name}: the C converter did not take it: {why}")
            self.close()
            return False
        if p.returncode != 0:
            self.close()
            raise Error(f"{self.name}: {why}")
        with open(os.path.join(self.work, "state"), encoding="utf-8") as f:
            st = json.load(f)
        self.load(st)
        return True

    def load(self, st: dict):
        self.timed = True
        self.nrec, self.nlat, self.written = st["nrec"], st["nlat"], st["written"]
        if self.nrec:
            self.t0, self.tmax = st["t0"], st["tmax"]
        self.first_pid = st.get("first_pid")
        self.ops = {k: v for k, v in st["ops"].items() if v}
        self.streams = {pid: sid for sid, pid in enumerate(st["streams"])}
        self.files = []
        for fid, d in enumerate(st["files"]):
            tf = TFile(d["path"], bool(d["existed"]), None if d["size0"] < 0 else d["size0"],
                       bool(d["is_dir"]), fid)
            tf.id = fid
            tf.extent, tf.temp = d["extent"], bool(d["temp"])
            tf.direct, tf.buffered = d["direct"], d["buffered"]
            self.files.append(tf)
        for name in ("dropped", "unseen", "ignored", "mapped"):
            getattr(self, name).update(st[name])

    def write(self, out_path, pagesize, source, rules, stream_names):
        h = self.header(self.declare(rules), pagesize, source, stream_names)
        out = dt.Output(out_path, gz_level=GZ_LEVEL)
        try:
            dt.TraceWriter(out, h)
            with open(os.path.join(self.work, "body"), "rb") as f:
                shutil.copyfileobj(f, out.f, 1 << 20)
            out.write(f"end {self.written}\n")
            out.commit()
        except dt.TraceError as e:
            raise Error(f"internal error, the trace written would not parse: {e}")
        except OSError as e:
            raise Error(f"cannot write {out_path}: {e.strerror}")
        finally:
            out.abort()
            self.close()
        return self.result(h, self.written, Counts(self.ops))

    def close(self):
        if getattr(self, "work", None):
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None
        self.spool.close()


def trace_text(path: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def compare(native: Converter, python: Converter, native_out: str, python_out: str):
    """FIO_PACK_CONVERT_CHECK: the two converters' traces and notes must be the same."""
    a, b = trace_text(native_out), trace_text(python_out)
    if a != b:
        la, lb = a.split(b"\n"), b.split(b"\n")
        n = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
        show = lambda v: v[n].decode("latin-1")[:120] if n < len(v) else "(end)"  # noqa: E731
        raise Error(f"internal error: the C converter's trace differs from the Python one's "
                    f"at line {n + 1}: '{show(la)}' against '{show(lb)}'")
    for name in ("dropped", "unseen", "ignored", "mapped"):
        x, y = dict(getattr(native, name)), dict(getattr(python, name))
        if x != y:
            raise Error(f"internal error: the C converter's {name} notes differ from the "
                        f"Python one's: {sorted(set(x.items()) ^ set(y.items()))[:3]}")
