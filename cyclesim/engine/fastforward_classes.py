"""How far an output node's entries keep the class of their visits past the loop above a
fast-forward level L, when L indexes the output: the entries a jump's processes may run into.

An output's fill and write-back read three facts of each entry from the schedule: its first
visit (nothing to reload), the gap back to the previous visit of the same values (whose
write-back mark a reload waits for) and its final visit (the write-back's width). All three
follow from the entry's digits in the loops that do not index the tensor (engine/tiles.py
entry_classifier, engine/visits.py). When L indexes the tensor, entry x and entry x - m*d
(m iterations of L, d entries per iteration) have the same digits below L, and none of those
facts reads L's digit; so they have the same facts whenever the loops above L that do not
index the tensor tell the same story for both:

* the fill: are those digits all 0 (a first visit is possible), and which is the innermost
  non-zero one (it sets the gap back to the previous visit when the digits below are all 0);
* the write-back: are those digits all at their last value (a final visit is possible).

An iteration of the loop above L (a block) has one such story; consecutive blocks with the
same story can be run through as one. Blocks with the same digits have the same story, and
so do, for the write-back, blocks none of which can hold a final visit: a partial write-back
of one iteration of an outer loop is the same transfer as one of the next.
"""

from __future__ import annotations

from functools import cache
from math import prod


@cache
def _loops(counted: tuple, relevant: tuple, pos: int) -> tuple[int, tuple]:
    """(entries per block, (stride, bound) of the loops above pos that do not index the
    tensor, innermost first) of a node's counted loops."""
    strides = [prod(counted[j + 1 :]) for j in range(len(counted))]
    span = strides[pos - 1] if pos else prod(counted)
    outer = tuple((strides[j], counted[j]) for j in reversed(range(pos)) if not relevant[j])
    return span, outer


def _story(outer: tuple, x: int, fill: bool) -> tuple | bool:
    """What the digits above L of entry x decide about its visits (see the module doc)."""
    digits = [x // stride % bound for stride, bound in outer]
    if not fill:
        return all(v == bound - 1 for v, (_, bound) in zip(digits, outer, strict=True))
    innermost = next((i for i, v in enumerate(digits) if v), None)
    return (innermost,)


def same_class_until(n, pos: int, x: int, fill: bool, need: int) -> int:
    """The last entry of the run of blocks, from entry x's on, whose entries have the visits
    of the entries one or more iterations of loop pos (which indexes n's tensor) before them
    in the run; it looks no further than the block of entry need. fill: the fill's facts,
    else the write-back's."""
    span, outer = _loops(n.counted, n.relevant, pos)
    last = n.entries // span - 1
    block = x // span
    story = _story(outer, block * span, fill)
    while block < last and (block + 1) * span <= need:
        if _story(outer, (block + 1) * span, fill) != story:
            break
        block += 1
    return (block + 1) * span - 1
