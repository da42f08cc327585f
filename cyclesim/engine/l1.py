"""L1 placement during the replay: tile slots as circular buffers, intermediates per policy.

A memory whose architecture entry has an `allocator:` is one core's L1 (`cyclesim.l1.L1`).
Every storage node kept there is placed through it, in tt-metal's terms:

* **Tile slots -> one circular buffer per storage node** (kind `cb`, the stack/CB region,
  bottom-up). Its pages are the node's slots (two when double-buffered), one tile each, so
  slot i sits at `address + i * round_up(tile_bytes, alignment)`. It is allocated when the
  node takes its first slot (the first fill starts moving bits, after its parent tile and
  producer waits; an output's first entry) and freed when the node's last tile is released.
* **Intermediates -> kind `intermediate`** (heap, stack or pool per the allocator's policy):
  a storage node of a tensor that one Einsum produces and another consumes, when both
  Einsums sit below that node. Its live range runs from its first write (the node's first
  entry) to the release of its last tile (the consumer's last use and its write-back). A
  backing store of an intermediate (no process of its own) lives from the first tile taken by
  any node below it to the moment the last of them is done; one the PE array reads directly
  lives for the whole run.
* **Other backing stores -> kind `tensor`** (heap), placed at cycle 0 and kept: inputs are
  there before the run, outputs are there after it.

Sizes are per instance (one core): `ceil(tile_values * bits / 8)` bytes per tile at the width
the node keeps a value at (`NodePlan.stored_bits`: the partial-sum width only where partial
sums live, as the capacity check counts it). The replay models one core that
holds every value it moves, so a tensor is placed whole in it (one bank, one page), not
interleaved over `num_banks`. The whole workload is one op: one frame (and, under `pool`, one
pool sized to the sum of its intermediates) is opened at cycle 0.

An allocation that does not fit raises `L1ReplayError` at that cycle, with tt-metal's message.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from cyclesim.engine.record import Recorder
from cyclesim.errors import EngineError, FoundFailure
from cyclesim.l1.config import AllocKind, L1Config, Policy, round_up
from cyclesim.l1.errors import L1AllocationError
from cyclesim.l1.model import L1
from cyclesim.schedule.plan import Plan

# columns of Recorder.l1_log rows
LOG_COLUMNS = (
    "cycle",
    "memory",
    "seq",
    "action",
    "buffer",
    "kind",
    "region",
    "address",
    "size_bytes",
    "op",
    "component",
    "used_bytes",
    "cb_end",
    "lowest_heap_address",
    "largest_free_bytes",
)


@dataclass(frozen=True, slots=True)
class L1Failure:
    """Where and when an L1 allocation failed, and tt-metal's facts about it."""

    cycle: int
    memory: str
    component: str
    tensor: str
    facts: dict[str, Any] = field(default_factory=dict)


class L1ReplayError(EngineError, FoundFailure):
    """An L1 allocation did not fit during the replay: cycle, component, tensor, tt-metal's facts."""

    def __init__(self, message: str, failure: L1Failure | None = None) -> None:
        super().__init__(message, failure)  # both in args: SimPy re-raises type(e)(*e.args)
        self.message = message
        self.failure = failure

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class L1Buffer:
    """What one storage node places in an allocator memory."""

    node: int
    memory: str
    name: str
    kind: AllocKind
    size_bytes: int  # whole buffer: slots x tile bytes
    page_bytes: int  # one tile slot (a CB page); the whole buffer for tensors
    slots: int


def _intermediates(plan: Plan) -> set[str]:
    """Tensors one Einsum writes and another reads."""
    written = {o.tensor for leaf in plan.leaves for o in leaf.operands if o.is_output}
    read = {
        (o.tensor, leaf.einsum) for leaf in plan.leaves for o in leaf.operands if not o.is_output
    }
    producer = {o.tensor: leaf.einsum for leaf in plan.leaves for o in leaf.operands if o.is_output}
    return {t for t, e in read if t in written and producer[t] != e}


def _leaves_below(plan: Plan, node: int) -> set[str]:
    """Einsums whose operand chain passes through the node."""
    nodes, out = plan.nodes, set()
    for leaf in plan.leaves:
        for o in leaf.operands:
            i = o.node
            while i is not None and i != node:
                i = nodes[i].parent
            if i == node:
                out.add(leaf.einsum)
    return out


def plan_buffers(plan: Plan) -> tuple[L1Buffer | None, ...]:
    """Per node: its L1 buffer when its memory has an allocator, else None."""
    memories = dict(plan.allocators)
    if not memories:
        return tuple(None for _ in plan.nodes)
    inter = _intermediates(plan)
    producer = {o.tensor: leaf.einsum for leaf in plan.leaves for o in leaf.operands if o.is_output}
    labels = [n.label() for n in plan.nodes]
    out: list[L1Buffer | None] = []
    for n in plan.nodes:
        if n.memory not in memories:
            out.append(None)
            continue
        tile = -(-n.tile_values * n.stored_bits // 8)  # as capacity checks it
        slots = 1 if n.is_backing else n.slots
        below = _leaves_below(plan, n.index)
        if n.tensor in inter and producer[n.tensor] in below and len(below) > 1:
            kind = AllocKind.INTERMEDIATE
        elif n.is_backing:
            kind = AllocKind.TENSOR
        else:
            kind = AllocKind.CB
        page = tile if kind is AllocKind.CB else slots * tile
        name = labels[n.index]
        if labels.count(name) > 1 and kind is AllocKind.CB:  # a copy of its own: name its Einsum
            name = f"{name}:{n.owner}"
        out.append(L1Buffer(n.index, n.memory, name, kind, slots * tile, page, slots))
    return _unique_names(out)


def _unique_names(buffers: list[L1Buffer | None]) -> tuple[L1Buffer | None, ...]:
    """Suffix '#node' to any buffer name still shared by two nodes."""
    names = [b.name for b in buffers if b is not None]
    return tuple(
        b if b is None or names.count(b.name) == 1 else replace(b, name=f"{b.name}#{b.node}")
        for b in buffers
    )


class L1Places:
    """The L1 of each allocator memory during one replay, driven by take/release hooks."""

    def __init__(self, plan: Plan, rec: Recorder, trace: bool) -> None:
        self.plan = plan
        self.buffers = plan_buffers(plan)
        self.l1 = {mem: L1(config) for mem, config in plan.allocators}
        self.configs: dict[str, L1Config] = dict(plan.allocators)
        self._seen = dict.fromkeys(self.l1, 0)
        self.placements: dict[int, Any] = {}  # node -> Placement while live
        self.left = [n.entries for n in plan.nodes]  # tile releases until the node is done
        self.children_left: dict[int, int] = {}  # backing intermediate -> nodes below not done
        rec.l1_log = self.log = []
        rec.l1_occupancy = self.occupancy = [] if trace else None
        nodes = plan.nodes
        operand_nodes = {o.node for leaf in plan.leaves for o in leaf.operands}
        for b in self.buffers:
            if b is not None and b.kind is AllocKind.INTERMEDIATE and nodes[b.node].is_backing:
                kids = [n.index for n in nodes if n.parent == b.node]
                if kids and b.node not in operand_nodes:
                    self.children_left[b.node] = len(kids)
        # tracked: the node has a buffer, or its parent is a backing intermediate placed lazily
        self.tracked = tuple(
            self.buffers[n.index] is not None
            or (n.parent is not None and n.parent in self.children_left)
            for n in nodes
        )
        op = "+".join(dict.fromkeys(leaf.einsum for leaf in plan.leaves))
        for mem, l1 in self.l1.items():
            pool = 0
            if l1.policy is Policy.POOL:
                align = self.configs[mem].alignment_bytes
                pool = sum(
                    round_up(b.size_bytes, align)
                    for b in self.buffers
                    if b is not None and b.memory == mem and b.kind is AllocKind.INTERMEDIATE
                )
            self._call(
                0, mem, f"op {op}", "", lambda l1=l1, pool=pool: l1.push_frame(op, pool_bytes=pool)
            )
        for b in self.buffers:
            if b is None or not nodes[b.node].is_backing or b.node in self.children_left:
                continue
            self._allocate(0, b, "before the run")

    # ------------------------------------------------------------------ hooks
    def take(self, node: int, now: int) -> None:
        """Node takes its first slot: place its buffer (and a lazily placed parent first)."""
        n = self.plan.nodes[node]
        if n.parent in self.children_left and n.parent not in self.placements:
            self._allocate(now, self.buffers[n.parent], f"first tile below {n.label()}")
        b = self.buffers[node]
        if b is not None:
            self._allocate(now, b, f"{'entry' if n.output_role else 'fill'} of {b.name}")

    def release(self, node: int, now: int) -> None:
        """A tile of node is released; after its last one the node's buffer is freed."""
        if not self.tracked[node]:
            return
        self.left[node] -= 1
        if self.left[node]:
            return
        n = self.plan.nodes[node]
        if self.buffers[node] is not None:
            self._free(now, node, f"last tile of {self.buffers[node].name} released")
        p = n.parent
        if p in self.children_left:
            self.children_left[p] -= 1
            if not self.children_left[p]:
                self._free(now, p, f"nodes below {self.plan.nodes[p].label()} done")

    # ------------------------------------------------------------------ internals
    def _allocate(self, now: int, b: L1Buffer, component: str) -> None:
        l1 = self.l1[b.memory]

        def call():
            return l1.allocate(
                b.name, b.kind, b.size_bytes, page_size_bytes=b.page_bytes, num_banks=1
            )

        self.placements[b.node] = self._call(
            now, b.memory, component, self.plan.nodes[b.node].tensor, call
        )

    def _free(self, now: int, node: int, component: str) -> None:
        b = self.buffers[node]
        self.placements.pop(node)
        self._call(
            now,
            b.memory,
            component,
            self.plan.nodes[node].tensor,
            lambda: self.l1[b.memory].free(b.name),
        )

    def _call(self, now: int, memory: str, component: str, tensor: str, call) -> Any:
        """Run one L1 call; log its events at this cycle; raise L1ReplayError if it does not fit."""
        try:
            result = call()
        except L1AllocationError as exc:
            failure = L1Failure(now, memory, component, tensor, exc.facts())
            raise L1ReplayError(
                f"L1 allocation in memory '{memory}' failed at cycle {now} ({component}, tensor "
                f"{tensor or '-'}): {exc.detail}",
                failure,
            ) from exc
        l1, config = self.l1[memory], self.configs[memory]
        for ev in l1.events[self._seen[memory] :]:
            s = ev.snapshot
            used = config.bank_size_bytes - s.total_free_bytes
            self.log.append(
                (
                    now,
                    memory,
                    ev.seq,
                    str(ev.action),
                    ev.name,
                    str(ev.kind) if ev.kind else None,
                    str(ev.region) if ev.region else None,
                    ev.address,
                    ev.size_bytes,
                    ev.op,
                    component,
                    used,
                    s.local_top,
                    s.lowest_heap_address,
                    s.largest_free_bytes,
                )
            )
            if self.occupancy is not None and (
                not self.occupancy or self.occupancy[-1][1:] != (memory, used)
            ):
                self.occupancy.append((now, memory, used))
        self._seen[memory] = len(l1.events)
        return result
