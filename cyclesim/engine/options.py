"""How one replay runs: the choices `cyclesim run` takes from its flags, as one frozen value.

The CLI, the Python API (analysis.simulate) and the what-if replays of explain build a
RunOptions and hand it down; analysis.simulate's `replay` builds the plan with its schedule
choices (reuse, isolate_einsums) and `replay_plan` runs it with the rest. The RawRun keeps it,
so a result can be replayed again the way it was made (traced, or with a changed architecture).
"""

from __future__ import annotations

from dataclasses import dataclass

from cyclesim.engine.record import TraceFilter
from cyclesim.errors import OptionError
from cyclesim.schedule.types import ReusePolicy

REUSE_CHOICES = tuple(p.value for p in ReusePolicy)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Every choice of a replay but its three inputs; the defaults are `cyclesim run`'s."""

    reuse: str = ReusePolicy.RETAIN.value  # retain: refill on tile change; strict: every iteration
    isolate_einsums: bool = False  # each Einsum alone, exchanging tensors through backing stores
    trace: bool = False  # record transfers and PE segments (traces, plots, the events table)
    trace_filter: TraceFilter | None = None  # keep only this window and these resources (traces)
    progress: bool | None = None  # the progress bar: on, off, or None (on a tty after a second)
    fast_forward: bool = True  # skip iterations that repeat an exactly equal state
    verify_fast_forward: bool = False  # when it fired, replay in full and compare every record
    check_counts: bool = True  # check the replayed access counts against the plan's

    def __post_init__(self) -> None:
        if self.reuse not in REUSE_CHOICES:
            raise OptionError(
                f"reuse: expected one of {', '.join(REUSE_CHOICES)}, got {self.reuse!r}"
            )

    @property
    def traced(self) -> bool:
        """Whether the replay records a trace (a trace filter implies one)."""
        return self.trace or self.trace_filter is not None
