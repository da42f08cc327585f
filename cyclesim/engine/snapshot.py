"""What a fast-forward snapshot is made of, and the origin every component describes itself at.

Each component (storage nodes and their tiles, the PE array, the fabric, the DMA channels)
has snapshot(origin, ...) beside its fields: its state relative to the origin's cycle and to
a node's tile, with every SimPy event it holds named by where it is held (Origin.event).
Two snapshots with equal keys mean the replay repeats from there on (engine/fastforward.py);
each component's shift(dt, ...) then moves it whole periods on.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import simpy
from simpy.events import Interruption

from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.engine.record import FOREVER

if TYPE_CHECKING:
    from cyclesim.engine.shared import Replay


class Unknown(Exception):
    """Some state the snapshot cannot describe: no fast-forward from this boundary."""


@dataclass(frozen=True, slots=True)
class Watched:
    """The replay's processes as snapshots name them, in a fixed order."""

    procs: list[simpy.Process]  # fills, write-backs, the PE array
    ids: dict[int, int]  # id(process) -> its index in procs
    active: list  # (node plan, its fill's or write-back's NodeState, is it the fill), as they run
    tiles_per: list[int]  # per node: segments per tile


@dataclass(slots=True)
class Snapshot:
    """The state at segment g, cycle time: key compares, the rest says how to shift."""

    g: int
    time: int
    recent: int  # last-grant cycles from this one on are compared exactly, older ones by order
    key: tuple
    countdowns: dict  # (node, table, tile) of frozen nodes -> uses left
    marks: dict  # record lengths and accumulator values at the snapshot
    # per DRAM timer, its issue() calls so far (absolute): a period between two snapshots
    # repeats only if it called none (engine/fastforward.py: the DRAM rule)
    dram_calls: tuple = ()


class Origin:
    """The moment a snapshot is taken at, and the names of the events it meets.

    An event is named by the first place it is found held (in the order the snapshot walks
    the state) with its state and what its callbacks resume; a second place names the first.
    """

    __slots__ = ("env", "now", "locs", "proc_ids", "fabric", "resources")

    def __init__(self, env: ReplayEnvironment, now: int, proc_ids: dict, fabric, dma: dict):
        self.env = env
        self.now = now
        self.locs: dict[int, tuple] = {}  # id(event) -> where it is held
        self.proc_ids = proc_ids  # id(process) -> its index among the watched processes
        self.fabric = fabric
        self.resources = {id(resource): name for name, (resource, _, _) in dma.items()}

    def process(self, process: simpy.Process | None) -> int | None:
        """The index of a watched process (None: not one of them)."""
        return self.proc_ids.get(id(process))

    def event(self, ev: Any, loc: tuple) -> tuple:  # (SimPy's or engine/event_loop.py's)
        """The event's name: its type, state and callbacks, or where it was first seen."""
        seen = self.locs.get(id(ev))
        if seen is not None:
            return ("same", seen)
        self.locs[id(ev)] = loc
        cbs = tuple(self._callback(cb) for cb in ev.callbacks) if ev.callbacks else ()
        return (type(ev).__name__, *self.env.event_state(ev), cbs)

    def _callback(self, cb) -> tuple:
        """What a callback does, by name: resume a process, interrupt one, decide grants..."""
        process = self.env.resumed_process(cb)
        if process is not None:
            pid = self.proc_ids.get(id(process))
            if pid is not None:
                return ("resume", pid)
        owner = getattr(cb, "__self__", None)
        if isinstance(owner, Interruption):
            return ("interrupt", self.proc_ids.get(id(owner.process)))
        if owner is self.fabric:  # the end-of-cycle grant decision (engine/fabric.py)
            return ("fabric", cb.__name__)
        name = self.resources.get(id(owner))
        if name is not None:  # a DMA engine serving its queue when a channel is freed
            return ("dma", name, cb.__name__)
        if isinstance(cb, functools.partial) and getattr(cb.func, "__name__", "") == "_resident":
            return ("resident", cb.args)  # the PE array's wait notes when a tile arrived
        raise Unknown(cb)

    def queue(self) -> tuple:
        """The queued events in heap order, relative to now. One nobody waits for (an
        interrupted run's timeout) does nothing when it fires, whenever that is: left out
        (a jump moves it all the same)."""
        now = self.now
        return tuple(
            (t - now, prio, self.event(ev, ("queue", i)))
            for i, (t, prio, ev) in enumerate(self.env.queued())
            if ev.callbacks
        )

    def targets(self, procs: list[simpy.Process]) -> tuple:
        """Where the event each live process waits for is held (all of them seen by now)."""
        out = []
        for p in procs:
            if p.is_alive:
                loc = self.locs.get(id(p.target))
                if loc is None:
                    raise Unknown("target")
                out.append(loc)
            else:
                out.append(None)
        return tuple(out)


def cannot_capture(r: Replay) -> str:
    """Why a snapshot cannot capture this replay's whole state ('' when it can): fast-forward
    then stays off, which is still exact."""
    plan = r.plan
    if len(plan.leaves) != 1 or not isinstance(plan.root, int):
        return "several Einsums"
    if plan.allocators or r.l1 is not None:
        return "L1 allocators"
    if r.space.tight:  # fills that wait for room: their waits are not in the snapshot
        return "memories shared beyond their size"
    if r.rec.trace_window != (0, FOREVER):
        return "a trace window"  # the period's records are cut by the window: no repeat
    leaf = plan.leaves[0]
    for n in plan.nodes:
        if n.wait_producer or r.nodes[n.index].intermediate:
            return "an intermediate tensor"
        if n.still_levels:  # its slots follow its fills, not its entries
            return f"tiles of {n.label()} that repeat (an affine index standing still)"
        if leaf.segments % n.entries or n.counted != leaf.bounds[: len(n.counted)]:
            return f"tiles of {n.label()} that do not follow the loop nest"
    for o in leaf.operands:
        if o.ratio * plan.nodes[o.node].entries != leaf.segments:
            return f"tiles of {plan.nodes[o.node].label()} that do not follow the loop nest"
    return ""
