"""engine: the SimPy replay of a plan, and the public `replay` entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclesim.engine.fastforward import FastForwardStats
from cyclesim.engine.record import TraceFilter
from cyclesim.engine.run import RawRun, replay_plan

if TYPE_CHECKING:
    from cyclesim.results import SimResult
    from cyclesim.spec import Architecture, Mapping, Workload


def replay(
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    *,
    reuse: str = "retain",
    isolate_einsums: bool = False,
    trace: bool = False,
    trace_filter: TraceFilter | None = None,
    progress: bool | None = None,
    check_counts: bool = True,
    fast_forward: bool = True,
) -> SimResult:
    """Compile and replay the three inputs; return the SimResult (counts checked).

    fast_forward=False replays every iteration (the result is the same; engine/fastforward.py).
    """
    from cyclesim.results import build_result
    from cyclesim.schedule import ReusePolicy, build_plan

    plan = build_plan(arch, workload, mapping, ReusePolicy(reuse), isolate_einsums)
    return build_result(
        replay_plan(
            plan,
            trace=trace,
            trace_filter=trace_filter,
            progress=progress,
            fast_forward=fast_forward,
        ),
        check_counts=check_counts,
    )


__all__ = ["FastForwardStats", "RawRun", "TraceFilter", "replay", "replay_plan"]
