"""The systolic wavefront in the replay: a fill before a fold's stream, a drain after it.

Two timeouts per fold at most (none inside a fold), so the cost does not grow with the
fold's length. The cycles are recorded per (leaf, fill | drain) for stall attribution, the
way spatial stalls are. With overlapping folds a block of consecutive segments of one leaf
fills once and drains once; a memory stall inside the block does not empty the pipeline
(no refill is charged after it) — a simplification, named here.
"""

from __future__ import annotations

from cyclesim.schedule.plan import Plan
from cyclesim.schedule.systolic import fold_depth, fold_timing


class Wavefront:
    """Answers, per PE segment, how many fill and drain cycles surround its stream."""

    __slots__ = ("fill", "drain", "depths", "overlap", "record", "spans")

    def __init__(self, plan: Plan, record: dict, spans: list | None = None) -> None:
        timing = fold_timing(plan.systolic)
        self.fill, self.drain = timing.fill, timing.drain
        self.depths = tuple(fold_depth(leaf) for leaf in plan.leaves)
        self.overlap = plan.systolic.overlap_folds
        self.record = record  # (leaf, Fold) -> [cycles, first start, last end]
        self.spans = spans  # when tracing: every fill and drain, (start, end, leaf, kind)

    def fill_cycles(self, li: int, g: int, g0: int, level: int) -> int:
        """Fill before segment g of a block starting at g0 (level: its first step's level)."""
        if self.overlap:
            return self.fill if g == g0 else 0
        return self.fill if level <= self.depths[li] else 0

    def drain_cycles(self, li: int, g: int, g1: int, classify) -> int:
        """Drain after segment g of a block ending at g1: when the next segment starts a fold."""
        if g + 1 == g1:
            return self.drain
        if self.overlap:
            return 0
        return self.drain if classify(g + 1)[0] <= self.depths[li] else 0

    def note(self, li: int, kind: str, start: int, end: int) -> None:
        """Book cycles [start, end) of the wavefront to a leaf."""
        if self.spans is not None:
            self.spans.append((start, end, li, kind))
        cur = self.record.get((li, kind))
        if cur is None:
            self.record[(li, kind)] = [end - start, start, end]
        else:
            cur[0] += end - start
            cur[2] = end
