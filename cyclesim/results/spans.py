"""The stall spans of a run, with fast-forward's repeated stretches kept as repeats.

The PE array's waits in a skipped stretch are a period's waits K more times, times moved by
whole periods (engine/rows.py), and so are their spans: `SpanRepeat` holds one copy's spans,
K and the period. Sums (cycles by cause, the stall groups) multiply instead of adding K
copies; iteration writes the copies out lazily, for a view that wants every span.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields, replace
from functools import cache
from itertools import chain


class SpanRepeat:
    """Copies 0..count-1 of `spans` (a SpanList), copy j moved j * period cycles on and the
    tile a buffer_full span names j * tiles[node] tiles on (tiles: per node, per period)."""

    __slots__ = ("spans", "count", "period", "tiles")

    def __init__(self, spans: SpanList, count: int, period: int, tiles: tuple | None) -> None:
        self.spans, self.count, self.period, self.tiles = spans, count, period, tiles

    def __len__(self) -> int:
        return len(self.spans) * self.count

    def __iter__(self) -> Iterator:
        for j in range(self.count):
            dt = j * self.period
            for s in self.spans:
                yield moved(s, dt, j, self.tiles) if j else s


class SpanList:
    """A sequence of StallSpans stored as lists and SpanRepeats, in the order attributed."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: list | None = None) -> None:
        self.pieces: list = pieces if pieces is not None else []

    def add(self, piece) -> None:
        """Append a list of spans, a SpanRepeat or another SpanList's pieces."""
        if isinstance(piece, SpanList):
            self.pieces.extend(piece.pieces)
        elif len(piece):
            self.pieces.append(piece)

    def __iter__(self) -> Iterator:
        return chain.from_iterable(self.pieces)

    def __len__(self) -> int:
        return sum(len(p) for p in self.pieces)

    def __bool__(self) -> bool:
        return any(len(p) for p in self.pieces)

    def __getitem__(self, i):
        return list(self)[i]

    def groups(self, key) -> dict[tuple, list[int]]:
        """key(span) -> [cycles, first start, last end], in order of first appearance,
        repeats summed by arithmetic (copy j of a span: start and end j periods on)."""
        out: dict[tuple, list[int]] = {}
        _groups(self, key, out, 1, 0)
        return out

    def __repr__(self) -> str:
        return f"SpanList({len(self)} spans in {len(self.pieces)} pieces)"


class SpanCollector:
    """Builds a SpanList from what explain yields: StallSpans, gathered into lists, and the
    SpanLists of repeated stretches, kept as their pieces."""

    __slots__ = ("out", "run")

    def __init__(self) -> None:
        self.out, self.run = SpanList(), []

    def extend(self, items) -> None:
        run = self.run
        for item in items:
            if not isinstance(item, SpanList):  # a StallSpan
                run.append(item)
                continue
            self.out.add(run)
            self.run = run = []
            self.out.add(item)

    def done(self) -> SpanList:
        self.out.add(self.run)
        self.run = []
        return self.out


def collect(items) -> SpanList:
    """What explain yields, as one SpanList."""
    c = SpanCollector()
    c.extend(items)
    return c.done()


def _groups(spans: SpanList, key, out: dict, times: int, last_shift: int) -> None:
    """Add spans, repeated `times` times with the last copy moved last_shift cycles on."""
    for piece in spans.pieces:
        if isinstance(piece, SpanRepeat):
            _groups(
                piece.spans,
                key,
                out,
                times * piece.count,
                last_shift + (piece.count - 1) * piece.period,
            )
            continue
        for s in piece:
            k = key(s)
            g = out.get(k)
            if g is None:
                out[k] = [s.cycles * times, s.start, s.end + last_shift]
            else:
                g[0] += s.cycles * times
                g[1] = min(g[1], s.start)
                g[2] = max(g[2], s.end + last_shift)


def moved(span, dt: int, periods: int = 0, tiles: tuple | None = None):
    """The span dt cycles later, `periods` periods of `tiles` on (the tile it names moves)."""
    if span.holder is None or not tiles or not tiles[span.holder[0]]:
        cls = type(span)  # start and end come first: the others are passed on as they are
        return cls(span.start + dt, span.end + dt, *map(span.__getattribute__, _rest(cls)))
    node, tile = span.holder
    later = tile + periods * tiles[node]
    chain = span.chain.replace(f"tile {tile} still holds it", f"tile {later} still holds it")
    return replace(
        span, start=span.start + dt, end=span.end + dt, holder=(node, later), chain=chain
    )


@cache
def _rest(cls) -> tuple[str, ...]:
    """The fields of a span class after its first two (start, end)."""
    names = tuple(f.name for f in fields(cls))
    assert names[:2] == ("start", "end"), names
    return names[2:]


def same_moved(
    a: SpanList, b: SpanList, dt: int, periods: int = 0, tiles: tuple | None = None
) -> bool:
    """Is b exactly a moved dt cycles (and `periods` periods of tiles) on, piece by piece
    (repeats compared as repeats)?"""
    if len(a.pieces) != len(b.pieces):
        return False
    for x, y in zip(a.pieces, b.pieces, strict=True):
        if isinstance(x, SpanRepeat) != isinstance(y, SpanRepeat):
            return False
        if isinstance(x, SpanRepeat):
            if (x.count, x.period, x.tiles) != (y.count, y.period, y.tiles):
                return False
            if not same_moved(x.spans, y.spans, dt, periods, tiles):
                return False
        elif len(x) != len(y) or any(
            moved(s, dt, periods, tiles) != t for s, t in zip(x, y, strict=True)
        ):
            return False
    return True
