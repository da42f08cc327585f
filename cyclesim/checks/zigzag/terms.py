"""The five latency terms of one source and the word counts of one (operand, memory, direction).

Shared by `check` (which builds them) and `explain` (which turns their differences into sentences).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cyclesim.checks.zigzag.inputs import DataDirection
    from cyclesim.checks.zigzag.latency import ZigZagLatency

TERMS = ("latency_total", "ideal_cycles", "stall", "onloading", "offloading")
TERM_NAMES = {
    "latency_total": "total latency",
    "ideal_cycles": "ideal compute",
    "stall": "stall",
    "onloading": "onloading",
    "offloading": "offloading",
}
PHASE_TERMS = {"onload": "onloading", "compute": "stall", "offload": "offloading"}
# --json names every source's terms as `cyclesim run --json` names the replay's (README table)
JSON_NAMES = {
    "latency_total": "cycles",
    "ideal_cycles": "ideal_compute_cycles",
    "stall": "stall_cycles",
    "onloading": "onload_cycles",
    "offloading": "offload_cycles",
}


@dataclass(frozen=True, slots=True)
class Terms:
    """The five latency terms of one source (replay, analytical or zigzag)."""

    latency_total: float
    ideal_cycles: float
    stall: float
    onloading: float
    offloading: float

    @classmethod
    def of_model(cls, latency: ZigZagLatency) -> Terms:
        """ZigZag's terms: stall = SS_comb (+ spatial stall and systolic drain, zero when the array is full)."""
        stall = (
            latency.temporal_stall_cycles
            + latency.spatial_stall_cycles
            + latency.systolic_drain_cycles
        )
        return cls(
            latency.latency_total_cycles,
            latency.ideal_cycles,
            stall,
            latency.onloading_cycles,
            latency.offloading_cycles,
        )


@dataclass(frozen=True, slots=True)
class AccessRow:
    """Words of one operand, memory and direction from each source (None = not comparable / missing)."""

    operand: str
    memory: str
    direction: DataDirection
    replay: int | None
    analytical: int
    zigzag: int | None
    replay_values: int = 0  # values the replay moved (summed over instances)
    model_values: float = 0.0  # values ZigZag's links move: per period x periods x instances
