"""A record's rows read as columns: numpy int64 arrays for numbers, lists for the rest.

The builders of the Activity (and the views numbering strings) read the engine's records this
way, fast-forward's repeated stretches written out by numpy rather than row by row.
"""

from __future__ import annotations

import numpy as np

from cyclesim.engine.rows import Repeat, Rows


def row_columns(rows, width: int, none_as: int = 0) -> list:
    """The rows of a record (a list or the engine's Rows) as `width` columns in row order:
    numbers as int64 arrays (None as none_as: an open grant's end), other values as lists.

    Fast-forward's repeated stretches (Repeat) are written out by numpy, copy j of a period
    shifted j times, not row by row in Python: a long run repeats most of its rows."""
    pieces = rows.pieces() if isinstance(rows, Rows) else (rows,)
    parts = [_piece_columns(p, width, none_as) for p in pieces if len(p)]
    if not parts:
        return [np.zeros(0, dtype=np.int64) for _ in range(width)]
    out = []
    for c in range(width):
        column = [part[c] for part in parts]
        if all(isinstance(x, np.ndarray) for x in column):
            out.append(np.concatenate(column))
        else:
            out.append(
                [v for x in column for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
            )
    return out


def _piece_columns(piece, width: int, none_as: int) -> list:
    if not isinstance(piece, Repeat):
        columns = []
        for values in zip(*piece, strict=True):  # a record's column holds one kind of value
            if type(values[0]) is not int and values[0] is not None:
                columns.append(list(values))
                continue
            try:
                columns.append(np.array(values, dtype=np.int64))
            except TypeError:  # None among the numbers (an open grant's end)
                values = [none_as if v is None else v for v in values]
                columns.append(np.array(values, dtype=np.int64))
        return columns
    base = row_columns(piece.base, width, none_as)
    k, n = piece.count, len(piece.base)
    copy = np.repeat(np.arange(1, k + 1, dtype=np.int64), n)  # j of each written-out row
    out = [np.tile(c, k) if isinstance(c, np.ndarray) else c * k for c in base]
    for c, step in piece.steps:
        out[c] = out[c] + copy * step
    tile = piece.tile
    if tile is not None:
        if tile.states:
            per_row = [tile.by if s in tile.states else 0 for s in base[1]]
        else:
            per_row = [tile.by[x] for x in base[tile.of].tolist()]
        out[tile.column] = out[tile.column] + copy * np.tile(np.array(per_row, np.int64), k)
    return out


def numbered(values) -> tuple[np.ndarray, list]:
    """A number per value (equal values, equal numbers; numbered in order of first sight) and
    the distinct values, by pandas' hash table rather than a dict lookup per value."""
    import pandas as pd

    column = np.empty(len(values), dtype=object)
    column[:] = values
    codes, distinct = pd.factorize(column)
    if len(codes) and codes.min() < 0:  # None (or NaN), which pandas leaves without a number
        codes, distinct = pd.factorize(column, use_na_sentinel=False)
    return codes.astype(np.int64), list(distinct)


def numbered_by(codes: np.ndarray, *columns: list) -> list[tuple[np.ndarray, list]]:
    """numbered([values[c] for c in codes]) of each values list in columns, from the codes
    (int64) without those columns: the codes' own order of first sight, found once by pandas'
    hash table on integers, then each list's values numbered in it (equal values, one
    number). The values hold no None (numbered's other case)."""
    import pandas as pd

    seen = pd.factorize(codes)[1].tolist()  # the codes in order of first sight
    out = []
    for values in columns:
        number: dict = {}
        remap = np.zeros(len(values), dtype=np.int64)
        for c in seen:
            remap[c] = number.setdefault(values[c], len(number))
        out.append((remap[codes], list(number)))
    return out
