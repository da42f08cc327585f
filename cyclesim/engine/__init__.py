"""engine: the SimPy replay of a plan, and the public `replay` entry point."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from cyclesim.engine.fastforward import FastForwardStats
from cyclesim.engine.options import RunOptions
from cyclesim.engine.record import TraceFilter
from cyclesim.engine.run import RawRun, replay_plan

if TYPE_CHECKING:
    from cyclesim.results import SimResult
    from cyclesim.spec import Architecture, Mapping, Workload


def replay(
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    options: RunOptions | None = None,
    **choices,
) -> SimResult:
    """Compile and replay the three inputs; return the SimResult (counts checked unless
    options say otherwise).

    options: how (engine/options.py; `cyclesim run`'s defaults when None); choices override
    single fields of it (`replay(a, w, m, trace=True)`). fast_forward=False replays every
    iteration (the result is the same; engine/fastforward.py).
    """
    from cyclesim.results import build_result
    from cyclesim.schedule import ReusePolicy, build_plan

    options = replace(options or RunOptions(), **choices)
    plan = build_plan(arch, workload, mapping, ReusePolicy(options.reuse), options.isolate_einsums)
    return build_result(replay_plan(plan, options))


__all__ = ["FastForwardStats", "RawRun", "RunOptions", "TraceFilter", "replay", "replay_plan"]
