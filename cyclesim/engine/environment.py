"""The replay's SimPy environment: with engine/event_loop.py, the one place that reads or writes
SimPy's private fields.

Fast-forward moves a run in time and compares two moments of it, which SimPy's public API
cannot do: it shifts the clock and the event queue, lists the queue, and tells what a queued
event and its callbacks are. The fabric and the DMA engines queue a decision at the end of a
cycle, an already-triggered event at a priority of their own. The hot paths make their
timeouts without SimPy's per-call overhead (fast_timeout), and the replay runs its events in
a loop of its own with SimPy's step inlined (run_events); its processes resume through
ReplayProcess, SimPy's resume with less work per event, and its clock is a plain slot. The
per-event work is engine/event_loop.py's, compiled with the components: the loop, the
resume, and the events the components make (its Event and Timeout hold SimPy's fields in a
compiled class). So the fields they rely on (`_now`, `_queue`, `_eid`, `Event._ok` /
`_value` / `callbacks` / `_defused`, `Timeout._delay`, `Process._resume` / `_generator` /
`_target`, `Environment._active_proc`) are named in this module and in event_loop.py;
pyproject.toml pins SimPy to the versions this was tested with, and
tests/engine/test_replay_environment.py fails when their shape changes.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush

import simpy
from simpy.events import PENDING, Event, Interruption, Process


class ReplayEnvironment(simpy.Environment):
    """A simpy.Environment that fast-forward can shift in time and read.

    Its clock `now` is a plain slot, not SimPy's property over `_now` (kept as a property
    over it, for SimPy's own methods): the hot paths read it twice per event, and a
    property costs a call each time."""

    __slots__ = ("now",)
    now: int  # (the slot; SimPy's own `now` is a property over int | float)

    @property
    def _now(self) -> int:
        return self.now

    @_now.setter
    def _now(self, value: int) -> None:
        self.now = value

    def shift(self, dt: int) -> None:
        """Move the clock and every queued event dt cycles on, as if dt cycles had passed
        with nothing happening. A uniform shift keeps the heap's order."""
        self._queue[:] = [(t + dt, prio, eid, ev) for t, prio, eid, ev in self._queue]
        self.now += dt

    def queued(self) -> list[tuple[int, int, Event]]:
        """The queued events as (time, priority, event), in the order they will fire."""
        return [(t, prio, ev) for t, prio, _, ev in sorted(self._queue)]

    def scheduled_count(self) -> int:
        """How many events were scheduled so far (SimPy numbers them from one counter).

        Reading it advances the counter: read it once, after the run."""
        return next(self._eid)

    def call(self, callback: Callable[[Event], None], priority: float, delay: int = 0) -> Event:
        """Run callback `delay` cycles from now, after that cycle's events of lower priority
        (SimPy's URGENT 0 and NORMAL 1): an event already triggered, queued at `priority`
        (`Event.succeed` would queue it at NORMAL, now). Return the event."""
        ev = Event.__new__(Event)  # (Event(self) and schedule inlined: once per decision)
        ev.env, ev.callbacks, ev._ok, ev._value = self, [callback], True, None
        heappush(self._queue, (self.now + delay, priority, next(self._eid), ev))
        return ev

    def __init__(self, initial_time: int = 0) -> None:
        super().__init__(initial_time)
        # the per-event work, compiled with the components or pure (engine/event_loop.py);
        # imported here, not above: the components import this module
        from cyclesim.engine import native

        parts = native.components
        self.resumer = parts.Resumer  # a ReplayProcess's wait on an event
        self._run_events = parts.run_events
        # delay -> Timeout: the hot paths' timeouts (transfers, the PE array, write-backs)
        self.fast_timeout = parts.Timeouts(self)
        # event -> None: `event.succeed()` (tiles, the fabric's grants) in one call, not two
        self.fast_succeed = parts.Succeeder(self)

    def process(self, generator) -> Process:
        """A process whose resume is ReplayProcess's (the same events, in the same order)."""
        return ReplayProcess(self, generator)

    def run_events(
        self,
        limit: int = -1,
        boundaries: list | None = None,
        at_boundary: Callable[[int], None] | None = None,
    ) -> bool:
        """`env.run()` with SimPy's step inlined (event_loop.run_events): process up to
        `limit` events in order (-1: all); True when none is left. With boundaries
        (fast-forward), after each event that appended to it, call at_boundary with its
        largest entry (a segment, >= 0, before a grant, < 0) and empty it."""
        return self._run_events(self, limit, boundaries, at_boundary)

    def resumed_process(self, callback) -> Process | None:
        """The process a callback resumes, when it is a process's wait on an event."""
        if isinstance(callback, self.resumer):
            return callback.process
        owner = getattr(callback, "__self__", None)
        if owner is not None and getattr(callback, "__func__", None) is Process._resume:
            return owner
        return None

    @staticmethod
    def event_state(ev: Event) -> tuple[bool, bool | None, object]:
        """(still pending, succeeded (None before it is triggered), an interruption's cause)."""
        cause = ev._value.cause if isinstance(ev, Interruption) else None
        return ev._value is PENDING, getattr(ev, "_ok", None), cause


class ReplayProcess(Process):
    """A SimPy process whose wait on an event costs less: its `_resume` is an
    event_loop.Resumer, SimPy's resume with the process, environment and generator held
    once, made before SimPy's __init__ queues the start (so every wait, the first one
    included, is the same object: an interruption removes it by identity). Same events,
    same order, same failures (a failed event takes SimPy's own path)."""

    def __init__(self, env: ReplayEnvironment, generator) -> None:
        if hasattr(generator, "throw"):  # (else SimPy's own ValueError, below)
            self._resume = env.resumer(self, env, generator)
        super().__init__(env, generator)
