"""replay_plan: build a replay (engine/shared.py), start its processes, run them to the end.

One SimPy process per storage node's fill and write-back (engine/storage_node.py) and one for
the PE array (engine/pe_array.py). Ports are plain resources arbitrated per burst (fabric.py);
DMA engines are SimPy resources with one slot per channel. Events happen per burst, per
transfer and per PE segment, never per cycle.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace

from cyclesim.engine.fastforward import FastForward, FastForwardStats
from cyclesim.engine.loop import deadlock_message, gc_paused, run_to_empty_queue
from cyclesim.engine.options import RunOptions
from cyclesim.engine.record import Recorder
from cyclesim.engine.shared import Replay
from cyclesim.engine.space import CapacityOverflow, ledger_overflows
from cyclesim.engine.verify import (
    VERIFY_ENVIRONMENT_VARIABLE,
    FastForwardMismatch,
    run_differences,
)
from cyclesim.errors import DeadlockError, OptionError
from cyclesim.schedule.plan import Plan


@dataclass(slots=True)
class RawRun:
    """What the engine hands to results: the plan, the records, counts and the end time."""

    plan: Plan
    rec: Recorder
    counts: dict[tuple, list[int]]  # (einsum, tensor, memory, action, direction) -> [values, bits]
    cycles: int
    wall_seconds: float
    options: RunOptions  # how it was replayed (the plan's reuse and isolate_einsums too)
    env_events: int = 0  # SimPy events scheduled (SimPy's own event counter)
    fast_forward: FastForwardStats = FastForwardStats()  # what fast-forward skipped

    @property
    def fast_forward_on(self) -> bool:
        """Whether fast-forward was allowed (RunOptions.fast_forward)."""
        return self.options.fast_forward


def replay_plan(plan: Plan, options: RunOptions | None = None, **choices) -> RawRun:
    """Run the plan to completion; raise DeadlockError (an EngineError) if it cannot progress.

    options: how to run it (engine/options.py), by default the plan's reuse and
    isolate_einsums and `cyclesim run`'s defaults; choices override single fields of it
    (`replay_plan(plan, trace=True)`). Raise OptionError when options name another reuse or
    isolate_einsums than the plan was built with.

    fast_forward: skip iterations that repeat an exactly equal state (engine/fastforward.py);
    the result is identical either way, only SimPy's event counts differ.
    verify_fast_forward (or the environment variable CYCLESIM_VERIFY_FAST_FORWARD=1): when it
    fired, replay once more in full and raise FastForwardMismatch unless every record is the
    same (engine/verify.py); the test suite runs with it on.

    Raise L1ReplayError (an EngineError) at the cycle an L1 allocation does not fit, when a
    memory has an `allocator:` (engine/l1.py).

    A trace_filter implies tracing and keeps only the events it selects.
    """
    options = _options_for(plan, options, choices)
    wall0 = time.perf_counter()
    r = Replay(plan, options.traced, options.trace_filter)
    env = r.env
    procs = []
    for node in r.nodes:
        n = node.plan
        if n.parent is None:
            continue
        fill = env.process(node.fill_process())
        procs.append((f"fill {n.label()}", r.rec.fill_tl[n.index], fill))
        if n.output_role:
            drain = env.process(node.write_back_process())
            procs.append((f"write-back {n.label()}", r.rec.drain_tl[n.index], drain))
    pe = env.process(r.pe.process())
    ff = FastForward(r, [p for _, _, p in procs] + [pe]) if options.fast_forward else None

    with gc_paused():
        run_to_empty_queue(
            env,
            progress=options.progress,
            total=sum(leaf.segments for leaf in plan.leaves),
            done=lambda: r.segments_done,
            wall0=wall0,
            boundaries=r.boundaries,
            at_boundary=ff.at_boundary if ff is not None else None,
        )
    # the queue is empty: nothing is scheduled, so a process still alive waits forever
    stuck = [(name, tl) for name, tl, p in procs if p.is_alive]
    if pe.is_alive or stuck:
        raise DeadlockError(deadlock_message(env.now, pe.is_alive, stuck, r))
    if r.space.ledger is not None:  # the test suite's invariant (engine/space.py)
        over = ledger_overflows(r.space.ledger, r.space.size)
        if over:
            raise CapacityOverflow("the replay overfilled a memory: " + "; ".join(over[:3]))
    r.finish_dram()
    # SimPy numbers every scheduled event from one counter: read it once, after the run
    env_events = env.scheduled_count()
    raw = RawRun(
        plan,
        r.rec,
        r.counts,
        int(r.end),
        time.perf_counter() - wall0,
        options,
        env_events,
        ff.stats if ff is not None else FastForwardStats(),
    )
    if raw.fast_forward.jumps and (
        options.verify_fast_forward
        or os.environ.get(VERIFY_ENVIRONMENT_VARIABLE, "0") not in ("", "0")
    ):
        full = replay_plan(plan, options, progress=False, fast_forward=False)
        diffs = run_differences(raw, full)
        if diffs:
            raise FastForwardMismatch("fast-forward changed the replay: " + "; ".join(diffs))
    return raw


def _options_for(plan: Plan, options: RunOptions | None, choices: dict) -> RunOptions:
    """The options a plan is replayed with: the given ones (by default the plan's schedule
    choices and the defaults) with single fields overridden by choices."""
    schedule = (plan.reuse.value, plan.isolate_einsums)
    if options is None:
        options = RunOptions(reuse=schedule[0], isolate_einsums=schedule[1])
    if choices:
        options = replace(options, **choices)
    if (options.reuse, options.isolate_einsums) != schedule:
        raise OptionError(
            f"the plan was built with reuse={schedule[0]}, isolate_einsums={schedule[1]}; "
            f"the options ask for reuse={options.reuse}, isolate_einsums={options.isolate_einsums}"
        )
    return options
