"""The replay's stall table regrouped for the ZigZag comparison: who waited, on what, through which port.

Reads `SimResult.stall_spans` only. The transfer at the root of each span's chain (a fill, a
partial-sum entry or a write-back of a tensor at a memory) is taken from the chain's last
"<what> of <tensor> at <memory>" step; a full slot's holder loses its tile number, so one
group stands for every tile of a node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cyclesim.results import SimResult

PHASES = ("onload", "compute", "offload")
_ROOT = re.compile(r"(fill|entry|write-back) of (\S+) at (\S+)")
_TILE = re.compile(r"^tile \d+ of (.+)$")
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
        vs = f" vs {self.competitor}" if self.competitor and self.cause == "contention" else ""
        return f"{self.cause} of the {self.what}{where}{vs} ({self.cycles:,})"


def _text(value: object) -> str | None:
    """A table cell as text, None for missing values."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return str(value)


def stall_groups(result: SimResult, phase: str) -> tuple[StallGroup, ...]:
    """The stall spans of one phase grouped by root transfer, largest first (ties in name order)."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
    spans = result.stall_spans
    spans = spans[spans["phase"] == phase]
    if spans.empty:
        return ()
    keys = ["cause", "memory", "tensor", "port_memory", "port", "competitor", "chain"]
    summed = spans.fillna({k: "" for k in keys}).groupby(keys, sort=True)["cycles"].sum()
    totals: dict[tuple, int] = {}
    for (cause, memory, tensor, port_memory, port, competitor, chain), cycles in summed.items():
        roots = _ROOT.findall(chain)
        if roots:
            action, tensor, memory = roots[-1]
        else:
            action = _SPATIAL if cause == "spatial" else ""
        holder = _TILE.match(competitor)
        key = (
            cause,
            action,
            _text(tensor or None),
            _text(memory or None),
            f"{port_memory}.{port}" if port_memory else _text(port or None),
            holder.group(1) if holder else _text(competitor or None),
        )
        totals[key] = totals.get(key, 0) + int(cycles)
    ordered = sorted(totals.items(), key=lambda kv: (-kv[1], [str(k) for k in kv[0]]))
    return tuple(StallGroup(phase, *key, cycles) for key, cycles in ordered)


def cycles_by_cause(groups: tuple[StallGroup, ...]) -> tuple[tuple[str, int], ...]:
    """Cycles per cause, largest first."""
    out: dict[str, int] = {}
    for g in groups:
        out[g.cause] = out.get(g.cause, 0) + g.cycles
    return tuple(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))
