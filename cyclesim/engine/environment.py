"""The replay's SimPy environment: the one place that reads or writes SimPy's private fields.

Fast-forward moves a run in time and compares two moments of it, which SimPy's public API
cannot do: it shifts the clock and the event queue, lists the queue, and tells what a queued
event and its callbacks are. The fabric and the DMA engines queue a decision at the end of a
cycle, an already-triggered event at a priority of their own. The hot paths make their
timeouts without SimPy's per-call overhead (fast_timeout), and the replay runs its events in
a loop of its own with SimPy's step inlined (run_events); its processes resume through
ReplayProcess, SimPy's resume with less work per event, and its clock is a plain slot. Each
of these is a method here, so the fields they rely on (`_now`, `_queue`, `_eid`,
`Event._ok` / `_value` / `callbacks` / `_defused`, `Timeout._delay`, `Process._resume` /
`_generator` / `_target`, `Environment._active_proc`) are named in one module;
pyproject.toml pins SimPy to the versions this was tested with, and
tests/engine/test_replay_environment.py fails when their shape changes.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush

import simpy
from simpy.events import NORMAL, PENDING, Event, Interruption, Process, Timeout


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
        # delay -> Timeout: the hot paths' timeouts (transfers, the PE array, write-backs)
        self.fast_timeout = self._timeouts()
        # event -> None: `event.succeed()` (tiles, the fabric's grants) in one call, not two
        self.fast_succeed = self._succeeder()

    def process(self, generator) -> Process:
        """A process whose resume is ReplayProcess's (the same events, in the same order)."""
        return ReplayProcess(self, generator)

    def _succeeder(self) -> Callable[[Event], None]:
        """A function ev -> None, `ev.succeed()`: the same event queued at the same time,
        priority and number, without the call to `schedule`."""
        queue, eid = self._queue, self._eid
        env = self

        def succeed(ev: Event) -> None:
            if ev._value is not PENDING:
                raise RuntimeError(f"{ev} has already been triggered")
            ev._ok, ev._value = True, None
            heappush(queue, (env.now, NORMAL, next(eid), ev))

        return succeed

    def _timeouts(self) -> Callable[[int], Timeout]:
        """A function delay -> Timeout, the same event `env.timeout(delay)` schedules (same
        time, priority and number) without its two calls (__init__, schedule), its
        descriptor and its check: delay must be >= 0."""
        queue, eid, new = self._queue, self._eid, Timeout.__new__
        env = self

        def timeout(delay: int) -> Timeout:
            ev = new(Timeout)
            ev.env, ev.callbacks, ev._value, ev._delay, ev._ok = env, [], None, delay, True
            heappush(queue, (env.now + delay, NORMAL, next(eid), ev))
            return ev

        return timeout

    def run_events(
        self,
        limit: int = -1,
        boundaries: list | None = None,
        at_boundary: Callable[[int], None] | None = None,
    ) -> bool:
        """`env.run()` with SimPy's step inlined (one method call and one try per event
        fewer): process up to `limit` events in order (-1: all); True when none is left.
        With boundaries (fast-forward), after each event that appended to it, call
        at_boundary with its largest entry (a segment, >= 0, before a grant, < 0) and empty
        it."""
        queue = self._queue
        while queue:
            if not limit:
                return False
            limit -= 1
            self.now, _, _, event = heappop(queue)
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                # a failed event nobody handled: raise a copy, as Environment.step does
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                raise exc
            if boundaries:
                g = max(boundaries)
                boundaries.clear()
                at_boundary(g)
        return True

    @staticmethod
    def resumed_process(callback) -> Process | None:
        """The process a callback resumes, when it is a process's wait on an event."""
        owner = getattr(callback, "__self__", None)
        if owner is not None and getattr(callback, "__func__", None) in _RESUMES:
            return owner
        return None

    @staticmethod
    def event_state(ev: Event) -> tuple[bool, bool | None, object]:
        """(still pending, succeeded (None before it is triggered), an interruption's cause)."""
        cause = ev._value.cause if isinstance(ev, Interruption) else None
        return ev._value is PENDING, getattr(ev, "_ok", None), cause


class ReplayProcess(Process):
    """A SimPy process whose wait on an event costs less: `Process._resume` with the bound
    method it registers on each event made once per process instead of once per yield, and
    the environment and generator read once per resume. Same events, same order, same
    failures (a failed event takes SimPy's own path)."""

    def __init__(self, env: ReplayEnvironment, generator) -> None:
        super().__init__(env, generator)
        self._resumer = self._resume  # (Interruption removes it by equality: the same)
        self._send = generator.send

    def _resume(self, event: Event) -> None:
        env = self.env
        env._active_proc = self
        send = self._send
        while True:
            if not event._ok:  # thrown into the generator: SimPy's own path, from here
                Process._resume(self, event)
                return
            try:
                event = send(event._value)
            except StopIteration as e:  # it returned: the process succeeds, as in SimPy
                event = None
                self._ok, self._value = True, e.args[0] if e.args else None
                env.schedule(self)
                break
            except BaseException as e:  # it failed: the process fails, as in SimPy
                event = None
                e.__traceback__ = e.__traceback__.tb_next
                self._ok, self._value = False, e
                env.schedule(self)
                break
            try:
                callbacks = event.callbacks
            except AttributeError:
                raise RuntimeError(f'Invalid yield value "{event}"') from None
            if callbacks is not None:  # not processed yet: wait for it
                callbacks.append(self._resumer)
                break
        self._target = event
        env._active_proc = None


_RESUMES = (Process._resume, ReplayProcess._resume)
