"""The bits each memory instance holds or is receiving, and the fills that wait for room.

DESIGN "A memory never holds more than its size": capacity is checked before the run per leaf
path; during the replay a fill (or an output's entry) into a memory whose free bits — its
size less every tile it holds or is receiving, at the width it keeps values at, all tensors
and all branches — are fewer than the tile needs, waits (`buffer_full`, naming the tile whose
release made the room). Only memories whose nodes' slots could together exceed the size
("tight": nodes of other branches share them) are watched; elsewhere the check before the run
already bounds what they hold.

Room is granted at the end of the cycle among every fill asking for it then (D15; DESIGN does
not decide, the project's reading): in the tie order of "Ports and links" (storage nodes in
loop-tree order, then tensors in workload order: the node index), never in the order the
processes happened to run, like the ports' grants (engine/fabric.py) and DMA channels.

Counts are per instance: every node's tile is tile_values x stored bits in each instance.
With a ledger (the test suite's invariant check, engine/verify.py), every change of what a
memory holds is written down as (cycle, memory, +/- bits) for all memories, tight or not.
"""

from __future__ import annotations

import simpy

from cyclesim.engine.dma import CHANNELS
from cyclesim.schedule.plan import Plan
from cyclesim.vocabulary import Wait

LEDGER_ENVIRONMENT_VARIABLE = "CYCLESIM_CHECK_CAPACITY"
# SimPy priority of the end-of-cycle room decision: after every ordinary event (NORMAL, 1), so
# it sees every fill asking in the cycle, and before the DMA channels' (CHANNELS, 1.5) and the
# ports' (DECIDE, 2) decisions: a fill granted room resumes at NORMAL priority in the same
# cycle, asks for its channel and ports, and takes part in that cycle's decisions on them
ROOM = CHANNELS - 0.25


class _RoomRequest:
    """A fill of node asking for room for its tile k; tl is its timeline, noted what its wait
    was last written down as (None: not yet, "turn": the other branch's turn, "room")."""

    __slots__ = ("node", "k", "tl", "event", "noted")

    def __init__(self, node: int, k: int, tl: list, event: simpy.Event) -> None:
        self.node, self.k, self.tl, self.event, self.noted = node, k, tl, event, None


class CapacityOverflow(AssertionError):
    """A replay let a memory instance hold more than its size: a bug in the engine."""


class Space:
    """Per memory: bits held, the tiles holding them; the fills asking for room."""

    __slots__ = (
        "env",
        "size",
        "memory",
        "bits",
        "held",
        "holders",
        "since",
        "tight",
        "asking",
        "deciding",
        "ledger",
        "leaf_of",
        "pe_leaf",
    )

    def __init__(self, env: simpy.Environment, plan: Plan, ledger: bool) -> None:
        self.env = env
        self.size = dict(plan.sizes)
        self.memory = tuple(n.memory for n in plan.nodes)
        self.bits = tuple(n.tile_values * n.stored_bits for n in plan.nodes)  # per instance
        worst: dict[str, int] = {}
        for n in plan.nodes:
            slots = 1 if n.is_backing else n.slots
            worst[n.memory] = worst.get(n.memory, 0) + slots * self.bits[n.index]
        self.tight = frozenset(
            m for m, need in worst.items() if m in self.size and need > self.size[m]
        )
        self.held: dict[str, int] = {m: 0 for m in worst}
        self.holders: dict[str, dict[tuple[int, int], int]] = {m: {} for m in self.tight}
        self.since: dict[tuple[int, int], int] = {}  # (node, tile) -> cycle it took its room
        self.asking: list[_RoomRequest] = []  # fills waiting for room (tight memories)
        self.deciding = False  # an end-of-cycle room decision is queued
        self.ledger: list[tuple[int, str, int]] | None = [] if ledger else None
        # per node: the one leaf whose path it is on (None: several, or none). In a tight
        # memory such a node takes room only while the PE array runs that leaf's steps:
        # a fill that ran ahead into another branch's turn could hold the room the running
        # branch needs, and wait for a PE array that waits for it (a deadlock)
        on = [set() for _ in plan.nodes]
        for li, leaf in enumerate(plan.leaves):
            for o in leaf.operands:
                i = o.node
                while i is not None:
                    on[i].add(li)
                    i = plan.nodes[i].parent
        self.leaf_of = tuple(next(iter(s)) if len(s) == 1 else None for s in on)
        self.pe_leaf: int | None = None  # the leaf whose steps the PE array runs
        for n in plan.nodes:  # a backing store holds its whole tensor from the start
            if n.is_backing and n.memory in self.size:
                self.take(n.index, 0)

    def watched(self, node: int) -> bool:
        """Does a fill of this node have to look for room?"""
        return self.memory[node] in self.tight

    def room(self, node: int) -> bool:
        m = self.memory[node]
        return self.held[m] + self.bits[node] <= self.size[m]

    def turn(self, node: int) -> bool:
        """May a fill of this node take room now (its leaf's turn, or a shared node)?"""
        li = self.leaf_of[node]
        return li is None or self.pe_leaf == li

    def enter(self, li: int) -> None:
        """The PE array starts running leaf li's steps: fills of its branch may take room."""
        self.pe_leaf = li
        if self.asking:
            self._queue_decision()

    def ask(self, node: int, k: int, tl: list) -> simpy.Event:
        """Room for tile k of node (a watched memory): an event that fires once the end-of-
        cycle decision has taken the room for it (this cycle or a later one)."""
        req = _RoomRequest(node, k, tl, self.env.event())
        self.asking.append(req)
        self._queue_decision()
        return req.event

    def _queue_decision(self) -> None:
        if not self.deciding:
            self.deciding = True
            self.env.call(self._decide, ROOM)

    def _decide(self, _event: simpy.Event | None = None) -> None:
        """Grant room in the tie order (node index) to each fill whose branch has its turn and
        whose tile fits; the others wait, written down as the other branch's turn or as
        `buffer_full` naming the tile that holds the room (kept while the wait lasts)."""
        self.deciding = False
        now, waiting = self.env.now, []
        for req in sorted(self.asking, key=lambda r: r.node):
            node = req.node
            if not self.turn(node):
                if req.noted != "turn":
                    req.noted = "turn"
                    req.tl.append((now, Wait.SPACE, None))
            elif not self.room(node):
                if req.noted != "room":
                    req.noted = "room"
                    req.tl.append((now, Wait.SPACE, self.blocker(node)))
            else:
                self.take(node, req.k)
                req.event.succeed()
                continue
            waiting.append(req)
        self.asking = waiting

    def take(self, node: int, k: int) -> None:
        """Tile k of node starts being received (or is entered): it holds its bits from now."""
        m, b = self.memory[node], self.bits[node]
        self.held[m] += b
        if m in self.tight:
            self.holders[m][(node, k)] = b
            self.since[(node, k)] = self.env.now
        if self.ledger is not None:
            self.ledger.append((self.env.now, m, b))

    def free(self, node: int, k: int) -> None:
        """Tile k of node leaves its memory; wake the fills waiting for room there."""
        m, b = self.memory[node], self.bits[node]
        self.held[m] -= b
        if self.ledger is not None:
            self.ledger.append((self.env.now, m, -b))
        if m in self.tight:
            self.holders[m].pop((node, k), None)
            self.since.pop((node, k), None)
            if self.asking:  # fills waiting for room: look again at the end of the cycle
                self._queue_decision()

    def blocker(self, node: int) -> tuple[int, int] | None:
        """The tile the wait of a fill of node is named after: the oldest tile of another
        node holding room in its memory (its own node's otherwise; None if none holds any).
        Tiles that took their room in the same cycle go in the tie order (node, then tile),
        never in the order their processes happened to run."""
        holders = self.holders[self.memory[node]]
        since = self.since
        others = [key for key in holders if key[0] != node] or list(holders)
        return min(others, key=lambda key: (since[key], key), default=None)


def ledger_overflows(ledger: list[tuple[int, str, int]], sizes: dict[str, int]) -> list[str]:
    """Every cycle at which a memory held more than its size, from a Space ledger (releases of
    a cycle before its takes: a tile leaving at c frees its room for one entering at c)."""
    held: dict[str, int] = {}
    out = []
    for t, m, b in sorted(ledger, key=lambda e: (e[0], e[2] > 0)):
        held[m] = held.get(m, 0) + b
        size = sizes.get(m)
        if size is not None and held[m] > size:
            out.append(f"memory '{m}' holds {held[m]} b > its {size} b at cycle {t}")
    return out
