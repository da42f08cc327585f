"""A systolic array's cycles per fold, in closed form: preload, skew, stream and drain.

A fold is the work done while the stationary operand stays in the PEs: the mapping says
which operand that is (the one no loop inside a PE segment indexes), and a fold starts at
every segment where it changes. SCALE-Sim 3.0.0 (systolic_compute_{ws,os,is}.py) times a
fold of T streamed rows on an R x C array as
  weight / input stationary: R (preload) + (R - 1) (skew) + T + (C - 1) (drain) = T + 2R + C - 2
  output stationary:                       (R - 1) (skew) + T + (C - 1) (drain) = T + R + C - 2
and runs folds back to back; with overlapping folds only the first fill and the last drain
of a run of folds remain.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from cyclesim.schedule.plan import LeafPlan
from cyclesim.spec.systolic import Dataflow, Systolic


@dataclass(frozen=True, slots=True)
class FoldTiming:
    """Cycles one fold adds around its stream: the wavefront's fill and drain."""

    preload: int  # shifting the stationary operand into the PEs, one row per cycle
    skew: int  # the streamed operand entering row by row, one cycle apart
    drain: int  # the last streamed values crossing the columns to the array's edge

    @property
    def fill(self) -> int:
        return self.preload + self.skew


def fold_timing(systolic: Systolic) -> FoldTiming:
    """The fill and drain of one fold of a rows x cols array in its dataflow."""
    rows, cols = systolic.rows, systolic.cols
    if systolic.dataflow is Dataflow.OUTPUT_STATIONARY:
        return FoldTiming(0, rows - 1, cols - 1)
    return FoldTiming(rows, rows - 1, cols - 1)


def fold_depth(leaf: LeafPlan) -> int:
    """Segments whose first step advances a loop at this depth or above start a new fold.

    The stationary operand is the one held closest to the PEs (most instances: a register
    per PE) among those whose value does not change inside a segment (change depth <= segment
    depth); a fold starts where it changes. A segment may be shorter than a fold (a stream
    cut into chunks by a storage node of another operand). With no such operand (strict
    reuse), every segment is a fold.
    """
    still = [o for o in leaf.operands if o.change_depth <= leaf.seg_depth]
    if not still:
        return leaf.seg_depth
    most = max(o.instances for o in still)
    return max(o.change_depth for o in still if o.instances == most)


def folds(leaf: LeafPlan) -> int:
    """Number of folds of a leaf: the iterations of its loops down to the fold depth."""
    return prod(leaf.bounds[: fold_depth(leaf)])


def wavefront_cycles(leaf: LeafPlan, systolic: Systolic, runs: int = 1) -> tuple[int, int]:
    """(fill, drain) cycles a leaf's folds add, when its segments execute in `runs` runs.

    Folds back to back pay the fill and drain each; overlapping folds pay them once per run
    of consecutive segments of the leaf (a single-Einsum program is one run).
    """
    timing = fold_timing(systolic)
    times = runs if systolic.overlap_folds else folds(leaf)
    return timing.fill * times, timing.drain * times
