"""The replay's per-event work, compiled with the engine's hot path: the loop that fires the
queued events (run_events), a process's resume (Resumer), the events and timeouts the
components make (Event, Timeout) and how they queue them (Timeouts, Succeeder).

environment.py's ReplayEnvironment and ReplayProcess hand these their SimPy objects. The
classes here are plain (mypyc native classes cannot subclass SimPy's): Event and Timeout hold
SimPy's fields under SimPy's names, so that compiled code reads them without a dictionary
lookup and SimPy's own code (a failed event, an interruption) reads them as it reads its
own; every event still takes its number from SimPy's counter: same events, same order."""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

from simpy.events import NORMAL, PENDING, Process

# SimPy's own resume: a process's path for a failed event (thrown into its generator)
simpy_resume: Any = Process._resume


class Event:
    """An event the replay's components make (a tile's arrival, a grant, a change of width):
    what SimPy's Event holds (env, callbacks, `_value` PENDING until it is triggered, then
    `_ok`; `_defused` once SimPy's code sets it), in a class compiled code reads without a
    dictionary lookup. SimPy's code that meets it (a process's own resume, an interruption)
    reads the same fields; a field not set yet is missing, as on SimPy's."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.callbacks: list | None = []
        self._value: Any = PENDING
        self._ok: bool  # (unset until triggered: SimPy's getattr(ev, "_ok", None) is None)
        self._defused: bool  # (unset: SimPy's hasattr reads "not defused")

    @property
    def triggered(self) -> bool:
        return self._value is not PENDING

    @property
    def processed(self) -> bool:
        return self.callbacks is None

    @property
    def ok(self) -> bool:
        return self._ok

    @property
    def value(self) -> Any:
        if self._value is PENDING:
            raise AttributeError(f"Value of {self} is not yet available")
        return self._value

    def succeed(self, value: Any = None) -> Event:
        """Trigger the event, queued now at NORMAL priority, as SimPy's succeed does."""
        if self._value is not PENDING:
            raise RuntimeError(f"{self} has already been triggered")
        self._ok = True
        self._value = value
        self.env.schedule(self)
        return self

    def __repr__(self) -> str:
        return f"<{type(self).__name__}() object at {id(self):#x}>"


class Timeout(Event):
    """A timeout the replay's hot paths queue: SimPy's Timeout's fields (`_value` None,
    `_delay`, `_ok` True) in the replay's Event."""

    def __init__(self, env: Any, delay: int) -> None:
        self.env = env
        self.callbacks = []
        self._value = None
        self._delay = delay
        self._ok = True

    def __repr__(self) -> str:
        return f"<Timeout({self._delay}) object at {id(self):#x}>"


class Resumer:
    """A process's wait on an event, the callback it leaves on the event: SimPy's
    `Process._resume` with the process, its environment and its generator's send held once.
    ReplayProcess makes it its `_resume`, so that SimPy's own code (an interruption removing
    the wait, a failed event thrown in) finds and calls the same object."""

    def __init__(self, process: Any, env: Any, generator: Any) -> None:
        self.process = process
        self.env = env
        self.send = generator.send

    def __call__(self, event: Any) -> None:
        self.resume(event)

    def resume(self, event: Any) -> None:
        """Send the event's value into the generator until it yields an event not yet
        processed, and wait on that one; a failed event takes SimPy's own path."""
        env, process, send = self.env, self.process, self.send
        env._active_proc = process
        while True:
            if isinstance(event, Event):  # (read natively: the most common events)
                if not event._ok:
                    simpy_resume(process, event)
                    return
                value = event._value
            elif event._ok:
                value = event._value
            else:  # thrown into the generator: SimPy's own path, from here
                simpy_resume(process, event)
                return
            try:
                event = send(value)
            except StopIteration as e:  # it returned: the process succeeds, as in SimPy
                process._ok, process._value = True, e.args[0] if e.args else None
                env.schedule(process)
                event = None
                break
            except BaseException as e:  # it failed: the process fails, as in SimPy
                _drop_own_frame(e)
                process._ok, process._value = False, e
                env.schedule(process)
                event = None
                break
            if isinstance(event, Event):
                callbacks = event.callbacks
            else:
                try:
                    callbacks = event.callbacks
                except AttributeError:
                    raise RuntimeError(f'Invalid yield value "{event}"') from None
            if callbacks is not None:  # not processed yet: wait for it
                callbacks.append(self)
                break
        process._target = event
        env._active_proc = None


def _drop_own_frame(e: BaseException) -> None:
    """Start the failure's traceback at the process's generator, as SimPy does: without the
    resume's own frame (there is one only where this module runs as Python)."""
    tb = e.__traceback__
    if tb is not None and tb.tb_frame.f_code is _RESUME_CODE:
        e.__traceback__ = tb.tb_next


_RESUME_CODE: Any = getattr(Resumer.resume, "__code__", None)  # (None: compiled)


class Timeouts:
    """`env.timeout(delay)` as one call: the same Timeout (same time, priority and number)
    queued without SimPy's __init__, schedule, descriptor and check: delay must be >= 0."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.queue: list = env._queue
        self.eid: Any = env._eid

    def __call__(self, delay: int) -> Timeout:
        env = self.env
        ev = Timeout(env, delay)
        heappush(self.queue, (env.now + delay, NORMAL, next(self.eid), ev))
        return ev


class Succeeder:
    """`ev.succeed()` as one call: the same event queued at the same time, priority and
    number, without the call to `schedule`."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.queue: list = env._queue
        self.eid: Any = env._eid

    def __call__(self, ev: Any) -> None:
        if isinstance(ev, Event):  # (set natively: the components' events)
            if ev._value is not PENDING:
                raise RuntimeError(f"{ev} has already been triggered")
            ev._ok = True
            ev._value = None
        else:
            if ev._value is not PENDING:
                raise RuntimeError(f"{ev} has already been triggered")
            ev._ok = True
            ev._value = None
        heappush(self.queue, (self.env.now, NORMAL, next(self.eid), ev))


def failure(exc: Any) -> BaseException:
    """A failed event nobody handled: the copy to raise, as Environment.step makes it."""
    copy = type(exc)(*exc.args)
    copy.__cause__ = exc
    return copy


def fire(event: Any, callbacks: Any) -> None:
    """Call the event's callbacks in order, a process's wait by a native call."""
    for callback in callbacks:
        if isinstance(callback, Resumer):
            callback.resume(event)
        else:
            callback(event)


def run_events(
    env: Any,
    limit: int,
    boundaries: list | None,
    at_boundary: Callable[[int], None] | None,
) -> bool:
    """ReplayEnvironment.run_events: fire up to `limit` queued events in order (-1: all), a
    process's wait resumed by a native call; True when none is left. After each event that
    appended to boundaries, call at_boundary with its largest entry and empty it."""
    queue: list = env._queue
    while queue:
        if not limit:
            return False
        limit -= 1
        now, _, _, event = heappop(queue)
        env.now = now
        if isinstance(event, Event):  # (read natively: the most common events)
            callbacks = event.callbacks
            event.callbacks = None
            fire(event, callbacks)
            if not event._ok and not hasattr(event, "_defused"):
                raise failure(event._value)
        else:
            callbacks = event.callbacks
            event.callbacks = None
            fire(event, callbacks)
            if not event._ok and not hasattr(event, "_defused"):
                raise failure(event._value)
        if boundaries:
            g = max(boundaries)
            boundaries.clear()
            if at_boundary is not None:
                at_boundary(g)
    return True
