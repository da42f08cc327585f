"""The replay's stall table regrouped for the ZigZag comparison: who waited, on what, through which port.

Reads `Result.stall_spans` only: each span's `action` (fill, entry = partial-sum reload,
write-back, compute), `tensor` and `memory` name the transfer at the root of its chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cyclesim.vocabulary import Cause

if TYPE_CHECKING:
    from cyclesim.results import Result

PHASES = ("onload", "compute", "offload")
_SPATIAL = "PE read"
ACTION_WORDS = {
    "fill": "refill of {t} at {m}",
    "entry": "partial-sum reload of {t} into {m}",
    "write-back": "write-back of {t} from {m}",
    _SPATIAL: "PE array's read of {t} from {m}",
}


@dataclass(frozen=True, slots=True)
class StallGroup:
    """Cycles of one phase charged to one cause, root transfer, port and competitor."""

    phase: str
    cause: str
    action: str  # fill, entry, write-back, PE read, or "" (no transfer: pipeline depth)
    tensor: str | None
    memory: str | None
    port: str | None  # "memory.port"
    competitor: str | None
    cycles: int

    @property
    def what(self) -> str:
        """The root transfer in words, e.g. 'refill of W at sram_64KB'."""
        template = ACTION_WORDS.get(self.action)
        if template is None or self.tensor is None:
            return "the PE pipeline"
        return template.format(t=self.tensor, m=self.memory)

    def short(self) -> str:
        """A few words for a list: cause, transfer, port, competitor, cycles."""
        where = f" through {self.port}" if self.port else ""
        vs = f" vs {self.competitor}" if self.competitor and self.cause == Cause.CONTENTION else ""
        return f"{self.cause} of the {self.what}{where}{vs} ({self.cycles:,})"


def stall_groups(result: Result, phase: str) -> tuple[StallGroup, ...]:
    """The stall spans of one phase grouped by root transfer, largest first (ties in name order)."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
    totals: dict[tuple, int] = {}
    for row in result.stall_rows:  # summed without writing out fast-forward's repeats
        if row.phase != phase:
            continue
        action = row.action
        if action == "compute":
            action = _SPATIAL
        elif action not in ACTION_WORDS:
            action = ""
        port = f"{row.port_memory}.{row.port}" if row.port_memory else row.port
        key = (row.cause, action, row.tensor, row.memory, port, row.competitor)
        totals[key] = totals.get(key, 0) + row.cycles
    ordered = sorted(totals.items(), key=lambda kv: (-kv[1], [str(k) for k in kv[0]]))
    return tuple(StallGroup(phase, *key, cycles) for key, cycles in ordered)
