"""Access patterns a DMA engine issues, as DRAMsim3 traces: the validation set for `cyclesim dram`.

Each pattern is a deterministic function of its parameters (the random one is seeded), so the
recorded DRAMsim3 numbers stay valid for the traces these functions write.
"""

from __future__ import annotations

import random
from pathlib import Path

LINE = 64  # bytes per request (64-bit DDR4 x BL8, 128-bit HBM x BL4)
N = 2048


def seq_read(n: int = N, base: int = 0) -> list[tuple[int, str, int]]:
    return [(base + i * LINE, "READ", i) for i in range(n)]


def seq_write(n: int = N, base: int = 0) -> list[tuple[int, str, int]]:
    return [(base + i * LINE, "WRITE", i) for i in range(n)]


def two_streams(n: int = N) -> list[tuple[int, str, int]]:
    """Two operands streamed from regions 256 MiB apart, interleaved request by request."""
    a, b = 0, 256 << 20
    return [((a if i % 2 == 0 else b) + (i // 2) * LINE, "READ", i) for i in range(n)]


def row_strided(n: int = N // 2, stride: int = 1 << 17) -> list[tuple[int, str, int]]:
    """One line per 128 KiB: a column walk through a row-major matrix (a new row each time)."""
    return [((i * stride) % (1 << 30) + (i * stride >> 30) * LINE, "READ", i) for i in range(n)]


def tile_2d(rows: int = 64, row_bytes: int = 512, pitch: int = 8192, tiles: int = 4):
    """Tiles of `rows` x `row_bytes` from a matrix with an 8 KiB row pitch, one after another."""
    out, i = [], 0
    for t in range(tiles):
        for r in range(rows):
            for c in range(0, row_bytes, LINE):
                out.append((t * row_bytes + r * pitch + c, "READ", i))
                i += 1
    return out


def read_write_mix(n: int = N) -> list[tuple[int, str, int]]:
    """Read A and B, write C: two reads then one write, each stream sequential."""
    out = []
    for i in range(n):
        k = i // 3
        if i % 3 == 0:
            out.append((k * LINE, "READ", i))
        elif i % 3 == 1:
            out.append(((64 << 20) + k * LINE, "READ", i))
        else:
            out.append(((128 << 20) + k * LINE, "WRITE", i))
    return out


def random_reads(n: int = N, seed: int = 7, span: int = 1 << 30) -> list[tuple[int, str, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(span // LINE) * LINE, "READ", i) for i in range(n)]


def rate_limited(n: int = N // 2, every: int = 6) -> list[tuple[int, str, int]]:
    """A sequential stream that a narrow link feeds one request every `every` cycles."""
    return [(i * LINE, "READ", i * every) for i in range(n)]


def same_bank_conflict(n: int = N // 2, row_step: int = 1 << 23) -> list[tuple[int, str, int]]:
    """Alternate between two rows of one bank (an address 8 MiB away keeps bank, changes row)."""
    return [((i % 2) * row_step + (i // 2) * LINE, "READ", i) for i in range(n)]


PATTERNS = {
    "seq_read": seq_read,
    "seq_write": seq_write,
    "two_streams": two_streams,
    "row_strided": row_strided,
    "tile_2d": tile_2d,
    "read_write_mix": read_write_mix,
    "random_reads": random_reads,
    "rate_limited": rate_limited,
    "same_bank_conflict": same_bank_conflict,
}


def write_trace(path: Path, requests: list[tuple[int, str, int]]) -> Path:
    path.write_text("".join(f"{addr:#x} {op} {cycle}\n" for addr, op, cycle in requests))
    return path
