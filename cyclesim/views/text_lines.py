"""Lines of ASCII text (the Perfetto JSON's events) made column by column, a block at a time,
not per line in Python: by the C loop of views/text_native.py where it is built, else by
numpy (padded rows side by side, the padding squeezed out); the same bytes either way.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cyclesim.views import text_native

BLOCK_BYTES = 1 << 20  # bytes of a block of padded lines made at once: they stay in the CPU's cache
_FULL, _ABSENT = 1000, 2000  # row offsets in the digit tables: leading zeros kept; left out


class TextLines:
    """Lines of ASCII text made by numpy column by column, not per line in Python.

    Each field is a byte table and a row of it per line (None: its one row on every line); the
    rows are NUL-padded (a number's leading zeros, a shorter string, a field left out), and a
    block of lines is written side by side, then squeezed: the NULs dropped. The JSON never
    holds a NUL byte (strings are escaped), so the squeeze removes only the padding."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.fields: list[tuple[np.ndarray, np.ndarray | None]] = []

    def __len__(self) -> int:
        return self.n

    def text(self, text: str, when: np.ndarray | None = None) -> TextLines:
        """The same text on every line (where `when`)."""
        row = _ascii_rows([text])
        if when is None:
            self.fields.append((row, None))
        else:
            self.fields.append((np.vstack([np.zeros_like(row), row]), when.astype(np.intp)))
        return self

    def number(self, values: np.ndarray, when: np.ndarray | None = None) -> TextLines:
        """Non-negative integers in decimal, three digits (a row of _DIGITS) per field."""
        values = np.asarray(values, dtype=np.int64)
        groups = max(1, -(-len(str(int(values.max()) if len(values) else 0)) // 3))
        fields = []
        above = values
        for k in range(groups):  # the least significant group first: one divmod each
            above, rows = np.divmod(above, 1000)  # above: values // 1000 ** (k + 1)
            if k < groups - 1:  # below a non-zero group, a group keeps its leading zeros
                rows += _FULL * (above > 0)
            if when is not None:
                rows = np.where(when, rows, _ABSENT)
            fields.append((_DIGITS[k > 0], rows))
        self.fields += reversed(fields)  # the most significant group first
        return self

    def micros(self, cycles: np.ndarray) -> TextLines:
        """Cycles as perfetto_json._us writes them: whole microseconds, then .ddd when there is a remainder."""
        whole, frac = np.divmod(np.asarray(cycles, dtype=np.int64), 1000)
        self.number(whole)
        self.fields.append((_FRACTION, frac))
        return self

    def slice_times(self, starts: np.ndarray, ends: np.ndarray, pid: int, tid: int) -> TextLines:
        """What every Trace Event slice has after its name and category: phase X, start and
        duration in microseconds, pid and tid, and the opening of its args."""
        return (
            self.text(',"ph":"X","ts":')
            .micros(starts)
            .text(',"dur":')
            .micros(ends - starts)
            .text(f',"pid":{pid},"tid":{tid},"args":{{')
        )

    def strings(
        self, codes: np.ndarray, pool: list[str], when: np.ndarray | None = None
    ) -> TextLines:
        """pool[codes[i]] on line i (ASCII)."""
        table = _ascii_rows([*pool, ""])  # the last row, all NUL: the field left out
        self.fields.append((table, codes if when is None else np.where(when, codes, len(pool))))
        return self

    def render(self, separator: str, seps: np.ndarray | int) -> Iterator[np.ndarray]:
        """The lines, each followed by the first seps[i] characters of separator, as ASCII
        byte arrays of a block of lines each (bounded memory)."""
        ends = _ascii_rows([separator[:k] for k in range(len(separator) + 1)])
        fields = [*self.fields, (ends, np.broadcast_to(np.asarray(seps, np.intp), (self.n,)))]
        width = sum(table.shape[1] for table, _ in fields)
        lines = max(1, min(self.n, BLOCK_BYTES // width))
        native = text_native.load()
        if native is not None:
            yield from _render_in_c(native, fields, self.n, lines, width)
            return
        block = np.empty((lines, width), dtype=np.uint8)
        keep = np.empty(block.shape, dtype=bool)
        varying = []  # (table, rows, columns), a table row as one item of numpy's void type
        at = 0
        for table, rows in fields:
            columns = block[:, at : at + table.shape[1]]
            at += table.shape[1]
            if rows is None:
                columns[:] = table  # the same on every line: written once for all blocks
            else:
                varying.append((_items(table), rows, _items(columns)))
        for lo in range(0, self.n, lines):
            hi = min(lo + lines, self.n)
            for table, rows, columns in varying:
                columns[: hi - lo] = table[rows[lo:hi]]
            text = block[: hi - lo]
            yield text[np.not_equal(text, 0, out=keep[: hi - lo])]


def _render_in_c(native, fields: list, n: int, lines: int, width: int) -> Iterator[np.ndarray]:
    """render's blocks written by the C loop (views/text_native.py): each table row without
    its NULs, copied field by field, line by line; the same bytes, no padded block."""
    tables = [table for table, _ in fields]
    # the rows, NULs dropped, and the 16 bytes the C loop may read past the last
    blob = np.concatenate([*(table[table != 0] for table in tables), np.zeros(16, np.uint8)])
    lengths = np.concatenate([np.count_nonzero(table, axis=1) for table in tables])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    sizes = np.array([len(table) for table in tables], dtype=np.int64)
    bases = np.zeros(len(tables), dtype=np.int64)
    np.cumsum(sizes[:-1], out=bases[1:])
    columns = [None if rows is None else np.ascontiguousarray(rows, dtype=np.int64) for _, rows in fields]  # fmt: skip
    ffi, lib = native.ffi, native.lib
    rows_c = ffi.new("uintptr_t[]", [0 if c is None else c.ctypes.data for c in columns])
    args = (rows_c, ffi.from_buffer("int64_t[]", bases), ffi.from_buffer("int64_t[]", sizes),
            ffi.from_buffer("char[]", blob), ffi.from_buffer("int64_t[]", offsets))  # fmt: skip
    for lo in range(0, n, lines):
        hi = min(lo + lines, n)
        # a padded line's width bounds each; 16 bytes the C loop may write past the last
        out = np.empty((hi - lo) * width + 16, dtype=np.uint8)
        written = lib.text_lines(lo, hi, len(fields), *args, ffi.from_buffer("char[]", out))
        if written < 0:
            raise IndexError("a text line's row is outside its table")
        yield out[:written]


def _items(matrix: np.ndarray) -> np.ndarray:
    """Each row of a byte matrix (its columns contiguous) as one item, so that numpy copies
    rows by one memcpy each rather than byte by byte."""
    return matrix.view(np.dtype((np.void, matrix.shape[1])))[:, 0]


def _ascii_rows(texts: list[str]) -> np.ndarray:
    """texts as a byte matrix, a row each, NUL-padded on the right (at least one column)."""
    encoded = [t.encode("ascii") for t in texts]
    if any(0 in b for b in encoded):
        raise ValueError("a NUL in trace text: the JSON lines drop NULs as padding")
    out = np.zeros((len(encoded), max(1, *map(len, encoded))), dtype=np.uint8)
    for row, b in zip(out, encoded, strict=True):  # a few distinct strings
        row[: len(b)] = np.frombuffer(b, dtype=np.uint8)
    return out


def _digit_tables() -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Three-digit groups (rows q: q without leading zeros, NUL instead; _FULL + q: with them;
    _ABSENT: all NUL) for a number's lowest group, which writes 0 as "0", and for the groups
    above it, which write it as nothing; then the fractions of a microsecond, ".ddd" (0: none)."""
    q = np.arange(1000)
    full = (np.stack([q // 100, q // 10 % 10, q % 10], axis=1) + ord("0")).astype(np.uint8)
    lead = np.where(q[:, None] >= np.array([100, 10, 1]), full, 0).astype(np.uint8)
    higher = np.vstack([lead, full, np.zeros((1, 3), dtype=np.uint8)])
    lowest = higher.copy()
    lowest[0, 2] = ord("0")
    fraction = np.hstack([np.full((1000, 1), ord("."), dtype=np.uint8), full])
    fraction[0] = 0
    return (lowest, higher), fraction


_DIGITS, _FRACTION = _digit_tables()  # _DIGITS[0]: a number's lowest group, [1]: those above
