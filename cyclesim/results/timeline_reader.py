"""Reading recorded rows (timelines, port grants) that fast-forward stored as repeats: by
index a copy at a time, and their start cycles bisected by arithmetic (engine/rows.py)."""

from __future__ import annotations

from bisect import bisect_right

from cyclesim.engine.rows import Repeat, Rows


class RunReader:
    """Rows fast-forward repeated, read by index one run at a time: the piece (a list, or one
    copy of a Repeat) holding the last row read is kept, so a walk over neighbouring rows
    pays one lookup per copy, not per row (engine/rows.py). A copy's rows are shifted from
    the base's when first read (a walk reads few of a copy's rows); a copy of a period
    longer than COPY_LIMIT keeps none, each read shifting its row again."""

    __slots__ = ("rows", "_lo", "_hi", "_run", "_n", "repeats", "_bases", "_copy")

    COPY_LIMIT = 4096  # copies of longer periods are read row by row (no list of a copy made)

    def __init__(self, rows: Rows) -> None:
        self.rows, self._lo, self._hi, self._run, self._n = rows, 0, 0, (), len(rows)
        self._bases: dict[Repeat, object] = {}  # per Repeat read, its base as read_rows has it
        self._copy: tuple = ()  # the copy _run holds: (its Repeat, base, copy number 1..K)
        starts, pieces, at = [], [], 0
        for piece in rows.pieces():
            if isinstance(piece, Repeat):
                starts.append(at)
                pieces.append(piece)
            at += len(piece)
        # the repeated stretches: (their first row indices, the Repeats), or () for none
        self.repeats = (starts, pieces) if pieces else ()

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def __getitem__(self, i: int) -> tuple:
        if i < 0:
            i += self._n
        if self._lo <= i < self._hi:
            row = self._run[i - self._lo]
            if row is None:  # a copy's row not read yet
                piece, base, j = self._copy
                row = self._run[i - self._lo] = piece.shift(base[i - self._lo], j)
            return row
        piece, r = self.rows._locate(i)
        if not isinstance(piece, Repeat):
            self._lo, self._hi, self._run = i - r, i - r + len(piece), piece
            return piece[r]
        n = piece._n
        j, k = divmod(r, n)
        base = self._bases.get(piece)
        if base is None:
            base = self._bases[piece] = read_rows(piece.base)
        if n > self.COPY_LIMIT:
            return piece.shift(base[k], j + 1)
        self._lo, self._hi, self._run = i - k, i - k + n, [None] * n
        self._copy = (piece, base, j + 1)
        row = self._run[k] = piece.shift(base[k], j + 1)
        return row

    def bisect_right(self, key: int) -> int:
        return self.rows.bisect_right(key)


def read_rows(rows):
    """The rows as they are when they are a plain list, else a RunReader over them."""
    if isinstance(rows, Rows) and rows.flat is None:
        return RunReader(rows)
    return rows.flat if isinstance(rows, Rows) else rows


class StartColumn:
    """The first column (start cycles) of rows fast-forward repeated, read without writing
    the rows out: indexing and bisect by arithmetic over the repeats (engine/rows.py)."""

    __slots__ = ("rows",)

    def __init__(self, rows: Rows) -> None:
        self.rows = rows

    def __getitem__(self, i: int) -> int:
        return self.rows[i][0]

    def __len__(self) -> int:
        return len(self.rows)


_STARTS_LIMIT = 250_000  # longer repeated timelines keep their starts as arithmetic


def start_cycles(rows) -> object:
    """The start cycles of a timeline's or a port's rows: a list when the rows are one."""
    if isinstance(rows, RunReader):
        rows = rows.rows
    flat = rows.flat if isinstance(rows, Rows) else rows
    if flat is None and len(rows) <= _STARTS_LIMIT:
        flat = rows  # a few hundred thousand ints: bisected by the builtin, read by index
    if flat is None:
        return StartColumn(RunReader(rows))
    return first_column(flat) if isinstance(flat, Rows) else [r[0] for r in flat]


def first_column(rows: Rows) -> list[int]:
    """The first column of rows, each repeated stretch by arithmetic over its base's column
    (copy j adds j times the stretch's step to it) instead of shifting every row."""
    out: list[int] = []
    for piece in rows.pieces():
        if not isinstance(piece, Repeat) or (piece.tile is not None and piece.tile.column == 0):
            out.extend([r[0] for r in piece])
            continue
        base, step = first_column(piece.base), dict(piece.steps).get(0, 0)
        for j in range(1, piece.count + 1):
            d = j * step
            out.extend([x + d for x in base])
    return out


def started_by(starts, t: int) -> int:
    """How many rows start at or before t."""
    if isinstance(starts, StartColumn):
        return starts.rows.bisect_right(t)
    return bisect_right(starts, t)
