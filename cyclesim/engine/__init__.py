"""engine: the SimPy replay of a plan (`replay_plan` -> RawRun); it builds no results: the
inputs -> plan -> engine -> results path is analysis.simulate's (`simulate`, `replay`)."""

from __future__ import annotations

from cyclesim.engine.fastforward import FastForwardStats
from cyclesim.engine.options import RunOptions
from cyclesim.engine.record import TraceFilter
from cyclesim.engine.run import RawRun, replay_plan

__all__ = ["FastForwardStats", "RawRun", "RunOptions", "TraceFilter", "replay_plan"]
