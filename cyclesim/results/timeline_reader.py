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


class RepeatedStarts:
    """The first column (start cycles) of rows fast-forward repeated, read without writing
    the rows out: a row's start by the reader, and how many rows start by a cycle by
    bisecting the pieces' first starts, then the piece's own column (a Repeat's copy j: its
    base's column moved j periods, by arithmetic). Only the pieces looked into get a column:
    a walk that reads one copy of each repeat pays for that copy, not for all of them."""

    __slots__ = ("reader", "pieces", "firsts", "offsets", "_cols")

    def __init__(self, reader: RunReader) -> None:
        self.reader = reader
        self.pieces = list(reader.rows.pieces())
        self.firsts: list[int] = []  # each piece's first start (rows start in order)
        self.offsets: list[int] = []  # each piece's first row index
        at = 0
        for piece in self.pieces:
            self.firsts.append(piece[0][0] if not isinstance(piece, Repeat) else piece.row(0)[0])
            self.offsets.append(at)
            at += len(piece)
        self._cols: dict[int, tuple] = {}  # per piece looked into: _column's answer

    def __getitem__(self, i: int) -> int:
        p = bisect_right(self.offsets, i) - 1
        col, P = self._column(p)
        k = i - self.offsets[p]
        if not P:
            return col[k]
        j, k = divmod(k, len(col))
        return col[k] + (j + 1) * P

    def __len__(self) -> int:
        return len(self.reader)

    def _column(self, p: int) -> tuple[list[int], int]:
        """Piece p's column and 0, or, for a repeat whose copy j is its base moved j periods P
        on, the base's column and P."""
        got = self._cols.get(p)
        if got is None:
            piece = self.pieces[p]
            if isinstance(piece, Repeat) and piece._span > 0 and not _shifts_starts(piece):
                got = first_column(piece.base), piece._span
            else:
                got = [r[0] for r in piece], 0
            self._cols[p] = got
        return got

    def count_by(self, t: int) -> int:
        """How many rows start at or before t."""
        p = bisect_right(self.firsts, t) - 1
        if p < 0:
            return 0
        col, P = self._column(p)
        if not P:
            return self.offsets[p] + bisect_right(col, t)
        # copy j (1..count) starts at col[0] + j * P, and piece p has started by t; the
        # copies before the last one started by t have started every row (rows in order)
        j = min(self.pieces[p].count, (t - col[0]) // P)
        return self.offsets[p] + (j - 1) * len(col) + bisect_right(col, t - j * P)


def _shifts_starts(piece: Repeat) -> bool:
    """Whether a repeat's tile shift moves the start column (then it is written out)."""
    return piece.tile is not None and piece.tile.column == 0


def start_cycles(rows) -> object:
    """The start cycles of a timeline's or a port's rows: a list when the rows are one, else
    a RepeatedStarts; started_by bisects either."""
    if isinstance(rows, Rows) and rows.flat is None:
        rows = RunReader(rows)
    if isinstance(rows, RunReader):
        return RepeatedStarts(rows)
    return [r[0] for r in (rows.flat if isinstance(rows, Rows) else rows)]


def first_column(rows: Rows) -> list[int]:
    """The first column of rows, each repeated stretch by arithmetic over its base's column
    (copy j adds j times the stretch's step to it) instead of shifting every row."""
    out: list[int] = []
    for piece in rows.pieces():
        if not isinstance(piece, Repeat) or _shifts_starts(piece):
            out.extend([r[0] for r in piece])
            continue
        base, step = first_column(piece.base), dict(piece.steps).get(0, 0)
        for j in range(1, piece.count + 1):
            d = j * step
            out.extend([x + d for x in base])
    return out


def started_by(starts, t: int) -> int:
    """How many rows start at or before t."""
    if type(starts) is list:
        return bisect_right(starts, t)
    return starts.count_by(t)
