"""ReplayEnvironment, the only code touching SimPy's private fields, against the SimPy installed.

Each test drives a tiny SimPy run and logs what happens; derivations in comments. They fail
when a SimPy release changes the shape of a field fast-forward relies on (the queue's entries,
the clock, the event counter, an event's state, a process's resume callback), which is why
pyproject.toml pins SimPy to the versions these pass with.
"""

from __future__ import annotations

import itertools
import re
import signal
import tomllib
from pathlib import Path

import pytest
import simpy
from packaging.specifiers import SpecifierSet
from simpy.core import NORMAL, URGENT
from simpy.events import PENDING, Event, Interruption, Timeout

from cyclesim.engine import native
from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.outputs import Interrupted

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_installed_simpy_is_one_pyproject_pins():
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    spec = next(d for d in deps if re.match(r"simpy\b", d))
    specifiers = SpecifierSet(spec.removeprefix("simpy"))
    assert "<" in str(specifiers), f"{spec}: no upper bound, an untested SimPy may be installed"
    assert simpy.__version__ in specifiers


def test_the_private_fields_have_the_shape_the_environment_relies_on():
    env = ReplayEnvironment()
    assert env._now == 0 and isinstance(env._eid, itertools.count)
    ev = env.timeout(3)
    # the queue: a list heap of (time, priority, event id, event)
    assert env._queue == [(3, NORMAL, 0, ev)]
    fresh = Event(env)
    assert fresh._value is PENDING and getattr(fresh, "_ok", None) is None
    fresh.succeed("v")
    assert fresh._ok is True and fresh._value == "v"
    assert URGENT < NORMAL  # call()'s priorities are numbered after these two


def test_shift_moves_the_clock_and_every_queued_event():
    # a process waits 5 cycles from cycle 0; shifting by 10 at cycle 0 moves its wake-up to
    # 15, and the clock to 10 (the cycles in between pass with nothing happening)
    env = ReplayEnvironment()
    log = []

    def proc():
        yield env.timeout(5)
        log.append(env.now)

    env.process(proc())
    env.step()  # the process starts (Initialize) and yields its timeout
    env.shift(10)
    assert env.now == 10
    env.run()
    assert log == [15]


def test_queued_lists_the_events_in_firing_order():
    env = ReplayEnvironment()
    late, early = env.timeout(7), env.timeout(2)
    urgent = Event(env)
    urgent._ok, urgent._value = True, None
    env.schedule(urgent, URGENT, 2)
    # at cycle 2 the urgent event fires before the normal timeout; 7 last
    assert env.queued() == [(2, URGENT, urgent), (2, NORMAL, early), (7, NORMAL, late)]


def test_call_runs_after_the_cycles_normal_events():
    # at cycle 0 the callback is queued at priority 2 before the process is; the process's
    # timeout(0) at NORMAL (1) still resumes it first. With delay=3: at cycle 3.
    env = ReplayEnvironment()
    log = []

    def proc():
        yield env.timeout(0)
        log.append(("process", env.now))

    ev = env.call(lambda e: log.append(("call", env.now)), 2)
    env.call(lambda e: log.append(("later", env.now)), 2, delay=3)
    env.process(proc())
    env.run()
    assert ev.triggered and ev.ok
    assert log == [("process", 0), ("call", 0), ("later", 3)]


def test_resumed_process_names_the_waiting_process():
    env = ReplayEnvironment()
    gate = Event(env)

    def proc():
        yield gate

    p = env.process(proc())
    env.step()  # Initialize: the process runs to its yield and waits on gate
    (resume,) = gate.callbacks
    assert env.resumed_process(resume) is p
    assert env.resumed_process(print) is None
    assert env.resumed_process(env.step) is None  # a bound method of something else
    assert p.target is gate


def test_event_state_of_pending_triggered_and_interrupting_events():
    env = ReplayEnvironment()
    ev = Event(env)
    assert env.event_state(ev) == (True, None, None)  # pending, not triggered, no cause
    ev.succeed()
    assert env.event_state(ev) == (False, True, None)

    def proc():
        try:
            yield env.timeout(9)
        except simpy.Interrupt:
            pass

    p = env.process(proc())
    env.step()  # the process waits on its timeout
    p.interrupt("reserve")
    (t, prio, interruption) = next(q for q in env.queued() if isinstance(q[2], Interruption))
    assert (t, prio) == (0, URGENT)
    assert env.event_state(interruption) == (False, False, "reserve")
    assert isinstance(p.target, Timeout)


def test_scheduled_count_counts_every_scheduled_event():
    # a process's Initialize, its timeout, one call, and the process itself, triggered when
    # its generator returns: 4 events, numbered 0 to 3
    env = ReplayEnvironment()

    def proc():
        yield env.timeout(1)

    env.process(proc())
    env.call(lambda e: None, 2)
    env.run()
    assert env.scheduled_count() == 4


def test_fast_timeout_queues_what_env_timeout_queues():
    # at cycle 0, env.timeout(4) then fast_timeout(4) then env.timeout(2): three queue entries
    # numbered 0, 1, 2 in that order, each (now + delay, NORMAL, number, a Timeout that has
    # succeeded with no value and no callbacks yet), so they fire in the same order either way.
    # fast_timeout's is the replay's Timeout (engine/event_loop.py): SimPy's fields and name
    # (fast-forward names a queued event by its type's name)
    env = ReplayEnvironment()
    a, b, c = env.timeout(4), env.fast_timeout(4), env.timeout(2)
    assert sorted(env._queue) == [(2, NORMAL, 2, c), (4, NORMAL, 0, a), (4, NORMAL, 1, b)]
    assert type(b).__name__ == type(a).__name__ == "Timeout"
    for t in (a, b):
        assert (t._ok, t._value, t._delay, t.callbacks) == (True, None, 4, [])
        assert t.triggered and not t.processed and env.event_state(t) == (False, True, None)


def test_the_replays_events_hold_what_simpys_hold():
    # a pending event: its value PENDING, no `_ok` yet; fast_succeed triggers it (ok, value
    # None) as it does SimPy's; a process waiting on it, interrupted by another, is resumed by
    # SimPy's own path and leaves it without its wait
    env = ReplayEnvironment()
    ev = native.components.Event(env)
    assert type(ev).__name__ == "Event" and env.event_state(ev) == (True, None, None)
    assert not ev.triggered and ev.callbacks == []
    log = []

    def sleeper():
        try:
            yield ev
        except simpy.Interrupt as irq:
            log.append((env.now, irq.cause))

    def waker(p):
        yield env.fast_timeout(2)
        p.interrupt("late")
        yield env.fast_timeout(1)
        env.fast_succeed(ev)

    p = env.process(sleeper())
    env.process(waker(p))
    env.run_events(2)  # both start: the sleeper waits on ev
    (resume,) = ev.callbacks
    assert env.resumed_process(resume) is p
    env.run_events()
    assert log == [(2, "late")] and ev.callbacks is None and ev.processed
    assert env.event_state(ev) == (False, True, None) and (ev.ok, ev.value) == (True, None)
    with pytest.raises(RuntimeError):
        env.fast_succeed(ev)


def test_run_events_stops_after_its_limit_and_says_when_the_queue_is_empty():
    # one process, five timeouts of one cycle: its start (an Initialize event), the five
    # timeouts and its end (the process event) are 7 events. Three leave the clock at 2
    # (start at 0, timeouts at 1 and 2) with events queued: False; the rest run to the end
    # at cycle 5: True. A boundary the process notes at cycle 3 is handed on once, then cleared.
    env = ReplayEnvironment()
    seen, boundaries = [], []

    def ticks():
        for t in range(5):
            yield env.fast_timeout(1)
            if t == 2:
                boundaries.extend([-1, 7])

    env.process(ticks())
    assert env.run_events(3, boundaries, seen.append) is False and env.now == 2
    assert env.run_events(-1, boundaries, seen.append) is True and env.now == 5
    assert seen == [7] and boundaries == []


def _life(env, log):
    """Processes that wait, are interrupted, wait on a shared event, return a value and fail:
    every path of a process's resume."""
    gate = Event(env)

    def sleeper():
        try:
            yield env.timeout(10)
        except simpy.Interrupt as irq:
            log.append((env.now, "interrupted", irq.cause))
        yield gate
        log.append((env.now, "gate"))
        return "done"

    def waker(p):
        yield env.timeout(2)
        p.interrupt("reserve")
        yield env.timeout(1)
        gate.succeed()

    def parent(p):
        value = yield p
        log.append((env.now, "joined", value))
        yield env.timeout(0)
        raise ValueError("failed")

    def watcher(q):
        try:
            yield q
        except ValueError as e:
            log.append((env.now, "caught", str(e)))

    p = env.process(sleeper())
    env.process(waker(p))
    q = env.process(parent(p))
    env.process(watcher(q))


def test_replay_processes_resume_as_simpys_do():
    # the same processes on SimPy's environment and on the replay's (its ReplayProcess): the
    # same log, the same events scheduled, the same end
    old_env, new_env = simpy.Environment(), ReplayEnvironment()
    old_log, new_log = [], []
    _life(old_env, old_log)
    _life(new_env, new_log)
    old_env.run()
    new_env.run_events()
    assert new_log == old_log
    assert old_log == [
        (2, "interrupted", "reserve"),
        (3, "gate"),
        (3, "joined", "done"),
        (3, "caught", "failed"),
    ]
    assert next(old_env._eid) == new_env.scheduled_count() and new_env.now == old_env.now


def test_fast_succeed_queues_what_succeed_queues():
    env = ReplayEnvironment()
    a, b = Event(env), Event(env)
    a.succeed()
    env.fast_succeed(b)
    assert env._queue == [(0, NORMAL, 0, a), (0, NORMAL, 1, b)]
    assert (b._ok, b._value) == (True, None)
    with pytest.raises(RuntimeError):
        env.fast_succeed(b)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_inside_a_process_unwinds_as_the_same_interrupt(signum):
    # Ctrl-C lands while a process runs: the handler raises Interrupted in it, the process
    # fails, and the loop re-raises a copy made as type(exc)(*exc.args), as SimPy's step does.
    # The copy must be the same Interrupted (the CLI's one line and exit 130/143), not a
    # ValueError from building a signal out of its name.
    def process(env):
        yield env.timeout(1)
        raise Interrupted(signum)

    for run in (lambda env: env.run_events(), lambda env: simpy.Environment.run(env)):
        env = ReplayEnvironment()
        env.process(process(env))
        with pytest.raises(Interrupted) as caught:
            run(env)
        assert caught.value.signum == signum and str(caught.value) == signum.name
