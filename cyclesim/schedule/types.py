"""The frozen plan a schedule compiles to: storage nodes, leaves, ports, all resolved to integers."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from math import prod
from typing import TYPE_CHECKING

from cyclesim.spec.systolic import Systolic

if TYPE_CHECKING:
    from cyclesim.spec import Architecture, Mapping, Workload


class ReusePolicy(enum.Enum):
    """When a storage node is refilled: on tile change (hardware) or on every loop iteration."""

    RETAIN = "retain"
    STRICT = "strict"


@dataclass(frozen=True, slots=True)
class PortRef:
    """A port resolved for one use: its memory, name and timing."""

    memory: str
    name: str
    width_bits: int
    burst_bits: int
    latency_cycles: int

    @property
    def key(self) -> str:
        return f"{self.memory}.{self.name}"


@dataclass(frozen=True, slots=True)
class NodePlan:
    """One tensor kept by one storage node of the loop tree."""

    index: int
    tensor: str
    memory: str
    path: str
    parent: int | None
    is_backing: bool
    output_role: bool  # the producing Einsum's compute node is below it
    owner: str  # Einsum its own transfers are booked to
    counted: tuple[int, ...]  # bounds of the loops whose advance changes the tile (outer first)
    relevant: tuple[bool, ...]  # per counted loop: does it index the tensor
    entries: int
    distinct: int
    ratio: int  # entries of this node per tile of its parent
    tile_values: int  # per instance
    union_values: int  # values on the parent side per fill (multicast / spatial reduction)
    instances: int
    parent_instances: int
    slots: int
    bits: int
    psum_bits: int
    fill_src: PortRef | None
    fill_dst: PortRef | None
    drain_src: PortRef | None
    drain_dst: PortRef | None
    dma: str | None
    uses_per_tile: int  # children entries + PE segments per tile
    producer_uses_per_tile: int  # of those, the ones that write the tensor
    wait_producer: bool  # a fill from the parent must wait until the producer finished that tile
    pe_written_by: str | None  # Einsum whose PE array writes this node directly
    dependency_groups: int = (
        1  # parts of a tile its producer completes in turn (consumers wait per part)
    )
    # an output node keeps partial sums (at psum_bits) only if the PE array accumulates in it or
    # a child drains unfinished values into it; otherwise it only ever holds final values
    holds_partial_sums: bool = True
    # counted levels (1-based loop that advanced) at which an input's tile is the previous
    # entry's: an affine index (A[n + k]) whose origin does not move (retain; usually empty).
    # Such an entry is no refill and no new slot: it extends the previous entry's tile
    still_levels: frozenset[int] = frozenset()

    @property
    def stored_bits(self) -> int:
        """The width this node keeps a value at (what its capacity is checked with)."""
        return self.psum_bits if self.output_role and self.holds_partial_sums else self.bits

    def user_group(self, k: int, per_tile: int) -> int:
        """The part of this node's tile that user entry k (per_tile entries per tile) touches."""
        return (k % per_tile) // (per_tile // self.dependency_groups)

    def visit_flags(self, k: int) -> tuple[bool, bool]:
        """(first visit, final visit) of entry k: irrelevant counted loops all at 0 / at their last."""
        first = final = True
        for bound, rel in zip(reversed(self.counted), reversed(self.relevant), strict=True):
            k, digit = divmod(k, bound)
            if not rel:
                first = first and digit == 0
                final = final and digit == bound - 1
        return first, final

    def tile_of(self, k: int) -> int:
        """Which distinct tile (fill) entry k is in, counting from 0: k less the entries before
        it that extend the previous tile. Entries of level l (1 <= l <= k) number
        k // stride(l) - k // stride(l - 1), stride(l) the product of the bounds inside loop l."""
        still = 0
        for lv in self.still_levels:
            still += k // prod(self.counted[lv:]) - k // prod(self.counted[lv - 1 :])
        return k - still

    @property
    def fills(self) -> int:
        """Distinct tiles over all entries (entries if no level stands still)."""
        return self.tile_of(self.entries - 1) + 1 if self.entries else 0

    def first_entry_of(self, tile: int) -> int:
        """The entry that starts tile `tile` (tile_of is non-decreasing: bisect it)."""
        lo, hi = tile, self.entries - 1  # a tile starts at or after its own index
        while lo < hi:
            mid = (lo + hi) // 2
            if self.tile_of(mid) < tile:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def extends_previous(self, k: int) -> bool:
        """Is entry k the previous entry's tile again (no fill, no slot of its own)?"""
        return k > 0 and bool(self.still_levels) and self.tile_of(k) == self.tile_of(k - 1)

    def element_key(self, k: int) -> int:
        """Index of the tile's elements: the relevant digits of entry k (same key = same values)."""
        key, scale = 0, 1
        for bound, rel in zip(reversed(self.counted), reversed(self.relevant), strict=True):
            k, digit = divmod(k, bound)
            if rel:
                key += digit * scale
                scale *= bound
        return key

    def label(self) -> str:
        return f"{self.tensor}@{self.memory}"


@dataclass(frozen=True, slots=True)
class Operand:
    """How a leaf's PE array touches one tensor at its innermost storage node."""

    tensor: str
    node: int
    ratio: int  # segments of the leaf per tile of the node
    is_output: bool
    change_depth: (
        int  # innermost leaf loop (1-based) that changes the value; 0: never after the first
    )
    values_per_step: int  # per instance of the node, per step
    instances: int
    bits: int
    read_port: PortRef | None
    write_port: PortRef | None
    # levels <= change_depth at which the value is nevertheless the previous step's: an affine
    # index (A[n + k]) whose loops moved in ways that cancel out (retain only; usually empty)
    still_levels: frozenset[int] = frozenset()

    def reads_at(self, level: int) -> bool:
        """Does an input's value change in a step of this level (the register re-read)?"""
        return level <= self.change_depth and level not in self.still_levels


@dataclass(frozen=True, slots=True)
class LeafPlan:
    """One compute node: its temporal loops and how its steps group into segments."""

    index: int
    einsum: str
    path: str
    is_copy: bool
    bounds: tuple[int, ...]  # temporal loops of its path with bound > 1, outer first
    out_relevant: tuple[bool, ...]  # per loop: does it index the output
    seg_depth: int  # loops 1..seg_depth enumerate segments; the rest run inside a segment
    segments: int
    steps: int
    macs_per_step: int
    operands: tuple[Operand, ...]
    shared_depth: int  # temporal loops above its innermost sequential split

    @property
    def steps_per_segment(self) -> int:
        return self.steps // self.segments


@dataclass(frozen=True, slots=True)
class SeqPlan:
    """A sequential split: branches run in order for each iteration of the loops above."""

    iterations: int  # product of the temporal bounds above it
    branches: tuple[object, ...]  # LeafPlan index (int) or SeqPlan


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the engine needs, resolved to indices and integers."""

    nodes: tuple[NodePlan, ...]
    leaves: tuple[LeafPlan, ...]
    root: object  # int (leaf index) or SeqPlan
    reuse: ReusePolicy
    isolate_einsums: bool
    pipeline_depth: int
    ports: tuple[PortRef, ...]
    dma: tuple[tuple[str, int, int], ...]  # (name, channels, setup cycles)
    tensor_order: tuple[str, ...]
    allocators: tuple[
        tuple[str, object], ...
    ] = ()  # (memory, validated L1Config) with `allocator:`
    dram: tuple = ()  # (memory, DramConfig, placements, clock MHz) per DRAM-modelled memory
    dram_nodes: tuple = ()  # per node: TileAddresses in its parent's DRAM, or None (empty: none)
    systolic: Systolic | None = None  # the PE array's wavefront timing (engine/systolic.py)
    sizes: tuple[tuple[str, int], ...] = ()  # (memory, size_bits) of every memory with a size
    # every port key in architecture order: ports tied in requesters decide in this order
    # (DESIGN "Arbitration sees every request of the cycle"); empty: first-use order
    port_order: tuple[str, ...] = ()
    # the three inputs it was built from, kept for the result (its tables, energy and titles
    # read them); the engine reads none of them, and they take no part in equality
    architecture: Architecture | None = field(default=None, compare=False, repr=False)
    workload: Workload | None = field(default=None, compare=False, repr=False)
    mapping: Mapping | None = field(default=None, compare=False, repr=False)
