"""A DRAM transfer's bytes [lo, hi) as strided byte runs: what each run of bursts issues.

Pure integer arithmetic on the tile's runs, called once or twice per run of bursts
(engine/dram_port.py: DramSide.slice); compiled with mypyc like the timer (make native,
dram/native.py).
"""

from __future__ import annotations

from bisect import bisect_right

# a strided byte run: (address, bytes, stride, count)
ByteRun = tuple[int, int, int, int]


def byte_runs(runs: list[ByteRun], offsets: list[int], lo: int, hi: int) -> list[ByteRun]:
    """The strided runs of transfer bytes [lo, hi) of `runs`, whose first bytes are transfer
    bytes `offsets` (offsets[-1]: the total)."""
    out: list[ByteRun] = []
    i = max(0, bisect_right(offsets, lo) - 1)
    while i < len(runs) and offsets[i] < hi:
        address, size, stride, count = runs[i]
        a, b = max(lo, offsets[i]) - offsets[i], min(hi, offsets[i + 1]) - offsets[i]
        i += 1
        if b <= a:
            continue
        x0, x1 = a // size, (b - 1) // size
        if x0 == x1:
            out.append((address + x0 * stride + a % size, b - a, 0, 1))
            continue
        if a % size:
            out.append((address + x0 * stride + a % size, size - a % size, 0, 1))
            x0 += 1
        tail = b - x1 * size
        full_end = x1 + 1 if tail == size else x1
        if full_end > x0:
            out.append((address + x0 * stride, size, stride, full_end - x0))
        if tail != size:
            out.append((address + x1 * stride, tail, 0, 1))
    return out
