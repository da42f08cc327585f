"""The bits each memory instance holds or is receiving, and the fills that wait for room.

DESIGN "A memory never holds more than its size": capacity is checked before the run per leaf
path; during the replay a fill (or an output's entry) into a memory whose free bits — its
size less every tile it holds or is receiving, at the width it keeps values at, all tensors
and all branches — are fewer than the tile needs, waits (`buffer_full`, naming the tile whose
release made the room). Only memories whose nodes' slots could together exceed the size
("tight": nodes of other branches share them) are watched; elsewhere the check before the run
already bounds what they hold.

Counts are per instance: every node's tile is tile_values x stored bits in each instance.
With a ledger (the test suite's invariant check, engine/verify.py), every change of what a
memory holds is written down as (cycle, memory, +/- bits) for all memories, tight or not.
"""

from __future__ import annotations

import simpy

from cyclesim.schedule.plan import Plan

LEDGER_ENVIRONMENT_VARIABLE = "CYCLESIM_CHECK_CAPACITY"


class CapacityOverflow(AssertionError):
    """A replay let a memory instance hold more than its size: a bug in the engine."""


class Space:
    """Per memory: bits held, the tiles holding them, fills waiting for room."""

    __slots__ = (
        "env",
        "size",
        "memory",
        "bits",
        "held",
        "holders",
        "since",
        "tight",
        "waiters",
        "ledger",
        "leaf_of",
        "pe_leaf",
        "entered",
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
        self.waiters: dict[str, list[simpy.Event]] = {m: [] for m in self.tight}
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
        self.entered: dict[int, list[simpy.Event]] = {}  # leaf -> fills waiting for its turn
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

    def wait_turn(self, node: int) -> simpy.Event:
        ev = self.env.event()
        self.entered.setdefault(self.leaf_of[node], []).append(ev)
        return ev

    def enter(self, li: int) -> None:
        """The PE array starts running leaf li's steps."""
        self.pe_leaf = li
        for ev in self.entered.pop(li, ()):
            ev.succeed()

    def wait(self, node: int) -> simpy.Event:
        """An event that fires at the next release in the node's memory (then look again)."""
        ev = self.env.event()
        self.waiters[self.memory[node]].append(ev)
        return ev

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
            waiters = self.waiters[m]
            if waiters:
                self.waiters[m] = []
                for ev in waiters:
                    ev.succeed()

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
