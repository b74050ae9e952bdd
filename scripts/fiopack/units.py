"""Sizes as the job generators and the benchmarks take and name them:
"64k", "8m", "2g" (powers of 1024, as fio reads them with kb_base=1024)."""

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


def parse_size(text: str) -> int:
    """A size with an optional k, m or g suffix (any case), in bytes."""
    text = text.strip().lower()
    mult = 1
    for suffix, m in (("k", KIB), ("m", MIB), ("g", GIB)):
        if text.endswith(suffix):
            text, mult = text[:-1], m
            break
    return int(text) * mult


def size_name(n: int) -> str:
    """The shortest exact name of @n bytes: "1g", "64k", "1000"."""
    for suffix, m in (("g", GIB), ("m", MIB), ("k", KIB)):
        if n % m == 0:
            return f"{n // m}{suffix}"
    return str(n)
