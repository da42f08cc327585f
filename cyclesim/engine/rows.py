"""Record rows that fast-forward repeats: a list-like sequence storing a skipped stretch once.

A jump over K periods adds a period's rows K more times, times moved by whole periods and
tiles by whole tiles per period (engine/fastforward_records.py). `Rows` keeps such a stretch
as one `Repeat` (the period's rows, K, the shifts) instead of K copies, so a 100M-cycle
replay's records stay the size of what was simulated. It reads like the list it replaces:
exact len, indexing, slicing, iteration (copies made lazily) and equality by contents, plus
`bisect_right` by first column (a row's cycle) in arithmetic over the repeats.

The engine only appends (and closes its open port grant, the last row); `append` is the
tail list's own method, so the hot path pays nothing.
"""

from __future__ import annotations

from bisect import bisect_right as _bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice


@dataclass(frozen=True, slots=True)
class TileShift:
    """How far one period moves a row's tile column: by `by[row[of]]` (a node's tiles per
    period, looked up by the node in column `of`), or, with `states`, by `by` for rows whose
    column 1 (a timeline's state) is one of `states` and by 0 for the others."""

    column: int
    by: object  # tuple[int, ...] (per node) or int (with states)
    of: int = 2
    states: tuple[str, ...] = ()

    def of_row(self, row: tuple) -> int:
        if self.states:
            return self.by if row[1] in self.states else 0
        return self.by[row[self.of]]


class Repeat:
    """K copies of `base` (a frozen sequence of rows); copy j (1..K) adds j * step to each
    (column, step) of `steps` and j * tile.of_row(row) to the tile column."""

    __slots__ = ("base", "count", "steps", "tile", "_n", "_first_key", "_span")

    def __init__(self, base: Rows, count: int, steps: tuple, tile: TileShift | None) -> None:
        self.base, self.count, self.steps, self.tile = base, count, steps, tile
        self._n = len(base)
        step0 = dict(steps).get(0, 0)
        self._first_key = base[0][0] + step0 if self._n else None
        self._span = step0  # how far copy j+1's first column lies after copy j's

    def __len__(self) -> int:
        return self._n * self.count

    def shift(self, row: tuple, j: int) -> tuple:
        """The base row as copy j has it."""
        out = list(row)
        for c, s in self.steps:
            out[c] += j * s
        if self.tile is not None:
            d = self.tile.of_row(row)
            if d:
                out[self.tile.column] += j * d
        return tuple(out)

    def row(self, i: int) -> tuple:
        j, r = divmod(i, self._n)
        return self.shift(self.base[r], j + 1)

    def __iter__(self) -> Iterator[tuple]:
        base, shift = self.base, self.shift
        for j in range(1, self.count + 1):
            for row in base:
                yield shift(row, j)

    def rows(self, lo: int, hi: int) -> Iterator[tuple]:
        """Rows lo..hi-1, from copy lo // len(base) on: the copies before lo are not walked
        (a jump's period often starts in the last copy of an inner jump's repeat)."""
        n, base, shift = self._n, self.base, self.shift
        j, r = divmod(lo, n)
        while lo < hi:
            end = min(n, r + hi - lo)
            for row in base if (r, end) == (0, n) else base[r:end]:
                yield shift(row, j + 1)
            lo += end - r
            j, r = j + 1, 0

    def copy_rows(self, j: int) -> Rows:
        """Copy j (1..K) as a Rows of its own: the base's literal rows shifted, its repeats kept
        as repeats of shifted bases (nothing expanded but rows that were simulated)."""
        return _shifted(self.base, self.steps, self.tile, j)

    def bisect_right(self, key: int) -> int:
        """Rows whose first column is <= key (rows in order of it)."""
        n, P = self._n, self._span
        if not n or key < self._first_key:
            return 0
        last = self.base[n - 1][0] + P  # copy 1's last row
        if P <= 0:
            return n * self.count if key >= last else self.base.bisect_right(key - P)
        full = min(self.count, max(0, (key - last) // P + 1))  # copies wholly <= key
        out = full * n
        for j in range(full + 1, self.count + 1):
            if self._first_key + (j - 1) * P > key:
                break
            out += self.base.bisect_right(key - j * P)
        return out


class Rows:
    """A list of rows in which fast-forward's repeated stretches are stored once (see module)."""

    __slots__ = ("_pieces", "_ends", "_tail", "append", "__weakref__")

    def __init__(self, rows: list | None = None) -> None:
        self._pieces: list = []  # lists of rows and Repeats, before the tail
        self._ends: list[int] = []  # cumulative length after each piece
        self._tail: list = rows if rows is not None else []
        self.append = self._tail.append

    def __getstate__(self) -> tuple:
        return self._pieces, self._ends, self._tail

    def __setstate__(self, state: tuple) -> None:
        self._pieces, self._ends, self._tail = state
        self.append = self._tail.append

    # ------------------------------------------------------------ building
    def _close_tail(self) -> None:
        if self._tail:
            self._push(self._tail)
            self._tail = []
            self.append = self._tail.append

    def _push(self, piece) -> None:
        if len(piece):
            self._pieces.append(piece)
            self._ends.append((self._ends[-1] if self._ends else 0) + len(piece))

    def repeat(
        self, start: int, stop: int, count: int, steps: tuple, tile: TileShift | None = None
    ) -> None:
        """Append rows[start:stop] `count` more times, copy j shifted by j periods (Repeat)."""
        if stop <= start or count < 1:
            return
        base = self[start:stop]
        self._close_tail()
        self._push(Repeat(base, count, tuple(steps), tile))

    def extend(self, rows) -> None:
        self._tail.extend(rows)

    def close_last(self, end: int, bits: int) -> None:
        """Close the open grant in the last row, [start, None, who, tensor, None], as the tuple
        (start, end, who, tensor, bits) (engine/fabric.py; one call on the hot path: the open
        grant is always appended after the last repeat)."""
        tail = self._tail
        start, _, who, tensor, _ = tail[-1]
        tail[-1] = (start, end, who, tensor, bits)

    def pop(self) -> tuple:
        """Remove and return the last row (it must have been appended after the last repeat)."""
        if not self._tail:
            raise IndexError("pop of a row inside a repeated stretch")
        return self._tail.pop()

    # ------------------------------------------------------------ reading
    @property
    def flat(self) -> list | None:
        """The rows as the plain list they are when nothing was repeated, else None."""
        return None if self._pieces else self._tail

    @property
    def repeated(self) -> int:
        """Rows held by repeats (not stored one by one)."""
        return sum(len(p) for p in self._pieces if isinstance(p, Repeat))

    def pieces(self) -> Iterator:
        """The stored pieces in order: lists of rows and Repeats."""
        yield from self._pieces
        if self._tail:
            yield self._tail

    def __len__(self) -> int:
        return (self._ends[-1] if self._ends else 0) + len(self._tail)

    def __bool__(self) -> bool:
        return bool(self._pieces) or bool(self._tail)

    def _locate(self, i: int) -> tuple[object, int]:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("Rows index out of range")
        head = self._ends[-1] if self._ends else 0
        if i >= head:
            return self._tail, i - head
        p = _bisect_right(self._ends, i)
        return self._pieces[p], i - (self._ends[p - 1] if p else 0)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self._slice(i)
        if not self._pieces or (i == -1 and self._tail):  # the engine reads its last row
            return self._tail[i]
        piece, r = self._locate(i)
        return piece.row(r) if isinstance(piece, Repeat) else piece[r]

    def __setitem__(self, i: int, row) -> None:
        """Replace a row appended after the last repeat (the engine closes its open grant)."""
        if i == -1 and self._tail:
            self._tail[-1] = row
            return
        piece, r = self._locate(i)
        if piece is not self._tail:
            raise IndexError("rows inside a repeated stretch cannot change")
        self._tail[r] = row

    def __delitem__(self, i) -> None:
        """Drop rows appended after the last repeat (a DRAM transfer re-timed, say)."""
        head = self._ends[-1] if self._ends else 0
        if isinstance(i, slice):
            start, stop, stride = i.indices(len(self))
            if stop > start and (start < head or stride != 1):
                raise IndexError("rows inside a repeated stretch cannot be deleted")
            del self._tail[max(start - head, 0) : max(stop - head, 0)]
            return
        piece, r = self._locate(i)
        if piece is not self._tail:
            raise IndexError("rows inside a repeated stretch cannot be deleted")
        del self._tail[r]

    def _slice(self, s: slice) -> Rows:
        start, stop, stride = s.indices(len(self))
        if stride != 1:
            return Rows(list(self)[s])
        out = Rows()
        if stop <= start:
            return out
        # from the piece holding row start (a jump's period lies at the end of many pieces)
        p = _bisect_right(self._ends, start)
        at = self._ends[p - 1] if p else 0
        tail = [self._tail] if self._tail else []
        for piece in self._pieces[p:] + tail:
            n = len(piece)
            lo, hi = max(start - at, 0), min(stop - at, n)
            if lo < hi:
                if isinstance(piece, Repeat) and (lo, hi) == (0, n):
                    out._close_tail()
                    out._push(piece)
                elif isinstance(piece, Repeat):
                    out.extend(piece.rows(lo, hi))
                else:
                    out.extend(piece[lo:hi])
            at += n
            if at >= stop:
                break
        return out

    def __iter__(self) -> Iterator[tuple]:
        for piece in self._pieces:
            yield from piece
        yield from self._tail

    def __reversed__(self) -> Iterator[tuple]:
        for i in range(len(self) - 1, -1, -1):
            yield self[i]

    def bisect_right(self, key: int) -> int:
        """Rows whose first column is <= key, for rows in order of their first column."""
        if not self._pieces:
            return _bisect_right(self._tail, key, key=_first)
        at = 0
        for piece in self.pieces():
            n = len(piece)
            if isinstance(piece, Repeat):
                k = piece.bisect_right(key)
            else:
                k = _bisect_right(piece, key, key=_first)
            if k < n:
                return at + k
            at += n
        return at

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Rows, list, tuple)):
            return NotImplemented
        if len(self) != len(other):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # mutable, like a list

    def __repr__(self) -> str:
        head = list(islice(iter(self), 3))
        return f"Rows({len(self)} rows, {self.repeated} repeated; {head}...)"


def _first(row) -> int:
    return row[0]


def _shifted(rows: Rows, steps: tuple, tile: TileShift | None, j: int) -> Rows:
    """rows moved j periods on (steps and tile per period): literal rows shifted one by one,
    repeats as repeats of shifted bases."""
    mover = Repeat(Rows(), 1, steps, tile)
    out = Rows()
    for piece in rows.pieces():
        if isinstance(piece, Repeat):
            out._close_tail()
            out._push(
                Repeat(_shifted(piece.base, steps, tile, j), piece.count, piece.steps, piece.tile)
            )
        else:
            out.extend(mover.shift(row, j) for row in piece)
    return out
