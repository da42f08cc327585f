"""The systolic PE array option: which operand stays in the PEs, and whether folds overlap."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Dataflow(enum.Enum):
    """What a systolic array keeps in its PEs during a fold (SCALE-Sim's ws / os / is)."""

    WEIGHT_STATIONARY = "weight_stationary"
    OUTPUT_STATIONARY = "output_stationary"
    INPUT_STATIONARY = "input_stationary"


@dataclass(frozen=True, slots=True)
class Systolic:
    """A systolic array of `rows` x `cols` PEs (the pe_array's first and second dimension).

    Each fold preloads the stationary operand, skews the streamed operand in and drains the
    wavefront out; with `overlap_folds` the next fold's preload and skew hide under the current
    fold's stream (double-buffered stationary registers), so only the first fold fills and only
    the last one drains. SCALE-Sim 3.0.0 runs folds strictly one after another.
    """

    dataflow: Dataflow
    rows: int
    cols: int
    overlap_folds: bool = False
