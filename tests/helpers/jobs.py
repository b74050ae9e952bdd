"""The shipped job files (jobs/), as the tests run them: a copy whose
runs are shorter, the engines taken from FIO_PACK_ENGINES."""
from pathlib import Path

from helpers.fio import REPO

JOBS = REPO / "jobs"


def prepared_copy(src: Path, tmp_path: Path, replace=None) -> Path:
    text = src.read_text()
    if src.name.startswith("smallfile-"):
        assert "runtime=20\n" in text, f"{src.name}: no runtime=20 to shorten"
    assert "ioengine=external:${FIO_PACK_ENGINES}/" in text, \
        f"{src.name}: engine path is not external:${{FIO_PACK_ENGINES}}/"
    text = text.replace("runtime=20\n", "runtime=2\n")
    for old, new in (replace or {}).items():
        assert old in text, f"{src.name}: no {old!r} to replace"
        text = text.replace(old, new)
    dst = tmp_path / src.name
    dst.write_text(text)
    return dst
