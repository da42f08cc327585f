"""An output node's revisit tables brought over a fast-forward jump, block by block.

An output's fill records each entry it enters as the latest visit of its values (`last_visit`,
element key -> entry) and takes the `drained` mark its write-back left on the previous visit.
After a jump these tables must be what the skipped entries would have left. Entry by entry
that costs a few microseconds per skipped entry (an outer level's jump skips thousands, or
millions); here they follow from each entry's next and previous visit of the same values,
which depend only on the entry's digits in the loops that do not index the tensor. That holds
because the fill enters every entry in order (a key's latest visit is the previous entry with
its digits) and `drained` holds marks of entries that have a later visit only (final visits
leave none); tests/engine/test_visits.py checks it against the walk entry by entry.

Entries are walked in blocks of the innermost run of loops (that index the tensor or not):
in a block either every entry has the same such digits (so the same gap to its next and
previous visit) and consecutive element keys, or every entry has the same key and the next
visit of each but the last is the entry after it. Whole stretches of a block then go into
the tables at once.
"""

from __future__ import annotations

from collections import deque
from itertools import repeat
from typing import TYPE_CHECKING

from cyclesim.engine.tiles import digit_runs
from cyclesim.vocabulary import Wait

if TYPE_CHECKING:
    from cyclesim.engine.storage_node import NodeState
    from cyclesim.engine.tiles import Tiles


class VisitBlocks:
    """The digits of one node's entries that decide their visits: runs of counted loops,
    innermost first, each (stride, span, indexes the tensor)."""

    __slots__ = ("span", "inner_rel", "keys", "others", "carry_in")

    def __init__(self, n) -> None:
        runs = digit_runs(n)  # n: a NodePlan (its counted loops and which index the tensor)
        self.span = runs[0][1] if runs else 1  # entries per block
        self.inner_rel = bool(runs) and runs[0][2]
        keys, scale = [], 1
        for stride, span, rel in runs:
            if rel:
                keys.append((stride, span, scale))
                scale *= span
        self.keys = tuple(keys)  # (stride, span, scale) of the runs that index the tensor
        # the runs that do not index it, outside the block (a block spans all of the innermost)
        others = [(s, n) for s, n, rel in runs if not rel]
        self.others = tuple(others if self.inner_rel else others[1:])
        # what the innermost run adds when it wraps: (span - 1) strides of 1 when it is a block
        # of the same values, nothing when it indexes the tensor
        self.carry_in = 0 if self.inner_rel else self.span - 1

    def key(self, x: int) -> int:
        """The element key of entry x (its digits in the loops that index the tensor)."""
        return sum(x // stride % span * scale for stride, span, scale in self.keys)

    def gaps(self, x0: int) -> tuple[int | None, int | None]:
        """For block x0: (next visit - entry, entry - previous visit) of its entries whose
        innermost digit is at its last (next) or first (previous) value; None: none."""
        up = down = None
        carry_up = carry_down = self.carry_in
        for stride, span in self.others:
            d = x0 // stride % span
            if up is None:
                if d < span - 1:
                    up = stride - carry_up
                carry_up += (span - 1) * stride
            if down is None:
                if d:
                    down = stride - carry_down
                carry_down += (span - 1) * stride
            if up is not None and down is not None:
                break
        return up, down


def shift_visits(
    t: Tiles, blocks: VisitBlocks, fill: NodeState, f_old: int, write_back, w_old: int, shift: int
) -> None:
    """Bring an output node's revisit tables  to the entries its processes jumped to.

    The write-back marked each entry of [w_old, write_back.k) it passed as drained; the fill
    visited each entry of (f_old, fill.k] and took the mark of its previous visit (not yet the
    one of its current entry while it still waits for the parent or for that mark). A mark
    stays unless a visit took it, so the marks left are the ones whose next visit is not among
    those visits; a key's latest visit is its last one among them. A waiter in `drained`
    moves with the entries.
    """
    drained = t.drained
    waiter = None  # the fill's, if it waits for `drained` (nobody else does)
    if fill.stage == Wait.PREVIOUS_WRITE_BACK and fill.prev is not None:  # (prev: set then)
        key = fill.prev - shift
        if drained.get(key, True) is not True:
            waiter = (key, drained.pop(key))
    taken = fill.stage not in (Wait.PARENT, Wait.PREVIOUS_WRITE_BACK)
    # the mark entry `old` took during the skip, or waits for now (after the marks made)
    taken_during = fill.prev - shift if not taken and fill.prev is not None else None
    f_lo, f_hi = f_old + 1, fill.k + 1  # the fill's visits
    f_end = f_hi if taken else fill.k  # ... those that took their previous visit's mark
    w_lo, w_hi = w_old, write_back.k  # the write-back's marks
    # a visit takes a mark made before the jump (new ones that a visit takes are never made):
    # only previous visits inside the marks there can be dropped
    d_lo, d_hi = (min(drained), max(drained) + 1) if drained else (0, 0)
    last_visit, s = t.last_visit, blocks.span
    lo, hi = min(f_lo, w_lo), max(f_hi, w_hi)
    for x0 in range(lo - lo % s, hi, s):  # the blocks, each with its gaps computed once
        up, down = blocks.gaps(x0)
        # visits whose previous one may lie in [d_lo, d_hi): x - down, or x - 1 in a block
        # of the same values
        back = (down or 0) if blocks.inner_rel else 1
        a = max(f_lo, x0, d_lo + back)
        b = min(f_end, x0 + s, d_hi + max(back, down or 0))
        if b > a:
            _take_marks(drained, blocks, x0, down, a, b)
        a, b = max(w_lo, x0), min(w_hi, x0 + s)
        if b > a:
            _new_marks(drained, blocks, x0, up, a, b, f_lo, f_end)
        a, b = max(f_lo, x0), min(f_hi, x0 + s)
        if b > a:
            _last_visits(last_visit, blocks, x0, up, a, b, f_hi)
    if taken_during is not None:
        drained.pop(taken_during, None)
    if waiter is not None:
        drained[waiter[0] + shift] = waiter[1]


def _pop_all(table: dict, lo: int, hi: int) -> None:
    """Drop entries lo..hi-1 from table (absent ones too), at C speed."""
    if hi > lo:
        deque(map(table.pop, range(lo, hi), repeat(None)), maxlen=0)


def _take_marks(drained: dict, blocks: VisitBlocks, x0: int, down, a: int, b: int) -> None:
    """The visits a..b-1 of block x0 took the marks of their previous visits."""
    if blocks.inner_rel:  # every entry of the block: the same gap back
        if down is not None:
            _pop_all(drained, a - down, b - down)
        return
    if a == x0 and down is not None:  # the block's first entry: back to the last block
        drained.pop(x0 - down, None)
    _pop_all(drained, max(a, x0 + 1) - 1, b - 1)  # the others: the entry before


def _new_marks(drained: dict, blocks: VisitBlocks, x0: int, up, a: int, b: int, f_lo, f_end):
    """The write-back's marks a..b-1 of block x0 that no visit in [f_lo, f_end) took."""
    if blocks.inner_rel:
        if up is None:  # final visits: no mark
            return
        # y stays unless f_lo <= y + up < f_end
        for c, d in ((a, min(b, f_lo - up)), (max(a, f_end - up), b)):
            if d > c:
                drained.update(dict.fromkeys(range(c, d), True))
        return
    last = x0 + blocks.span - 1  # the block's last entry: its next visit is in another block
    for c, d in ((a, min(b, last, f_lo - 1)), (max(a, f_end - 1), min(b, last))):
        if d > c:
            drained.update(dict.fromkeys(range(c, d), True))
    if a <= last < b and up is not None and not f_lo <= last + up < f_end:
        drained[last] = True


def _last_visits(last_visit: dict, blocks: VisitBlocks, x0: int, up, a: int, b: int, hi: int):
    """The visits a..b-1 of block x0 that are their key's last one before hi."""
    if blocks.inner_rel:  # consecutive keys; the last visit unless the next is before hi
        c = a if up is None else max(a, hi - up)
        if b > c:
            k = blocks.key(c)
            last_visit.update(zip(range(k, k + b - c), range(c, b), strict=True))
        return
    last = x0 + blocks.span - 1
    if a <= last < b and (up is None or last + up >= hi):
        last_visit[blocks.key(last)] = last
    elif a <= hi - 1 < min(b, last):
        last_visit[blocks.key(hi - 1)] = hi - 1
