"""The reference model's view of a schedule, by enumeration: every step of the loop nest, every
storage node's tile residencies ("runs") and the elements each one holds.

Written from docs/design.md alone (no cyclesim.schedule / engine / results): nothing here is a closed
form; element sets are enumerated point by point, so a reader can check each number by hand.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from cyclesim.spec import Architecture, Compute, Mapping, Spatial, Storage, Temporal, Workload
from cyclesim.spec.arch_types import Direction, Port


@dataclass
class PortRef:
    """One memory port (ports are named per memory)."""

    memory: str
    port: Port

    @property
    def key(self) -> tuple[str, str]:
        return (self.memory, self.port.name)


@dataclass
class Run:
    """One residency of a tile in a storage node: the steps first..last (inclusive) use it."""

    index: int
    first: int
    last: int
    elements: list[frozenset]  # per instance
    fill_bits: int  # bits crossing the parent's port to fill it (0: nothing to read)
    fill_instance_bits: int  # bits each instance's own port writes (the largest share)
    fill_values_parent: int
    fill_values_child: int
    wb_bits: int = 0  # outputs: bits leaving for the parent when the tile is left
    wb_instance_bits: int = 0
    wb_values: int = 0
    revisit: bool = False  # outputs: the elements were visited before (partial sums exist)


@dataclass
class Node:
    """A storage node of one tensor (a Storage of several tensors is one Node per tensor)."""

    position: int  # index in the loop tree (tie order of arbitration)
    memory: str
    tensor: str
    tensor_order: int
    is_output: bool
    slots: int
    instances: int
    parent: Node | None = None
    child: Node | None = None
    runs: list[Run] = field(default_factory=list)
    above: list[int] = field(default_factory=list)  # temporal loops above (indices)
    inst_dims: list[int] = field(default_factory=list)  # spatial loops it has instances along

    @property
    def label(self) -> str:
        return f"{self.tensor}@{self.memory}"


@dataclass
class Nest:
    einsum: str
    tensors: list[str]  # operand order: inputs, then the output
    output: str
    steps: list[tuple[int, ...]]  # temporal loop indices per step
    spatial_points: list[tuple[int, ...]]  # spatial loop indices per PE position
    nodes: list[Node]  # every non-backing and backing node, tree order then tensor order
    chains: dict[str, list[Node]]  # per tensor, backing store first
    bits: dict[str, int]
    psum_bits: dict[str, int]
    pe_elements: dict[str, list[list[tuple]]]  # per tensor, per step: element per PE position
    pipeline: int
    loop_ranks: list[str]  # the temporal loops' ranks, outermost first
    ranks: dict[str, set[str]]  # per tensor, the ranks that index it


def _port(arch: Architecture, memory: str, tensor: str, direction: Direction) -> PortRef:
    port = arch.memory(memory).port_for(tensor, direction)
    assert port is not None, (memory, tensor, direction)
    return PortRef(memory, port)


def fill_ports(arch: Architecture, node: Node) -> tuple[PortRef, PortRef]:
    """(the port the data leaves, the port it enters) of a fill into node."""
    t = node.tensor
    return (
        _port(arch, node.parent.memory, t, Direction.READ_TO_BELOW),
        _port(arch, node.memory, t, Direction.WRITE_FROM_ABOVE),
    )


def writeback_ports(arch: Architecture, node: Node) -> tuple[PortRef, PortRef]:
    """(the port the data leaves, the port it enters) of a write-back from node."""
    t = node.tensor
    return (
        _port(arch, node.memory, t, Direction.READ_TO_ABOVE),
        _port(arch, node.parent.memory, t, Direction.WRITE_FROM_BELOW),
    )


def pe_port(arch: Architecture, node: Node, direction: Direction) -> PortRef:
    return _port(arch, node.memory, node.tensor, direction)


def build_nest(arch: Architecture, work: Workload, mapping: Mapping, reuse: str) -> Nest:
    """Enumerate steps, tiles and runs of a single-Einsum loop tree."""
    tree = mapping.loop_tree
    compute = tree[-1]
    assert isinstance(compute, Compute), "the reference covers one Einsum without splits"
    einsum = work.einsum(compute.einsum)
    temporal = [(i, n) for i, n in enumerate(tree) if isinstance(n, Temporal)]
    spatial = [(i, n) for i, n in enumerate(tree) if isinstance(n, Spatial)]
    loops = sorted(temporal + spatial)  # tree order

    def rank_index(t_idx: tuple[int, ...], s_idx: tuple[int, ...]) -> dict[str, int]:
        """Each rank's index: loops of one rank compose outermost-first (mixed radix)."""
        value = dict(zip([i for i, _ in temporal], t_idx, strict=True))
        value.update(zip([i for i, _ in spatial], s_idx, strict=True))
        idx: dict[str, int] = {r: 0 for r, _ in einsum.ranks}
        for pos, loop in loops:
            idx[loop.rank] = idx[loop.rank] * loop.bound + value[pos]
        return idx

    def element(tensor: str, idx: dict[str, int]) -> tuple:
        acc = einsum.access(tensor)
        return tuple(sum(c * idx[r] for c, r in p.terms) for p in acc.projection)

    steps = list(itertools.product(*(range(n.bound) for _, n in temporal)))
    spatial_points = list(itertools.product(*(range(n.bound) for _, n in spatial)))
    tensors = [a.tensor for a in einsum.inputs] + [einsum.output.tensor]
    output = einsum.output.tensor
    order = {t.name: i for i, t in enumerate(work.tensors)}
    bits = {t: work.tensor(t).bits_per_value for t in tensors}
    psum = {t: work.tensor(t).partial_sum_bits for t in tensors}

    # the element each PE position touches in each step
    pe_elements = {
        t: [[element(t, rank_index(st, sp)) for sp in spatial_points] for st in steps]
        for t in tensors
    }

    nodes: list[Node] = []
    chains: dict[str, list[Node]] = {t: [] for t in tensors}
    for pos, n in enumerate(tree):
        if not isinstance(n, Storage):
            continue
        mem = arch.memory(n.memory)
        for t in sorted(n.tensors, key=lambda x: order[x]):
            above_spatial = [(i, s) for i, s in spatial if i < pos]
            inst = math.prod(s.bound for _, s in above_spatial if s.dim not in mem.shared_across)
            node = Node(
                position=pos,
                memory=n.memory,
                tensor=t,
                tensor_order=order[t],
                is_output=t == output,
                slots=mem.slots_for(t),
                instances=inst,
                above=[k for k, (i, _) in enumerate(temporal) if i < pos],
            )
            if chains[t]:
                node.parent = chains[t][-1]
                chains[t][-1].child = node
            chains[t].append(node)
            nodes.append(node)
    nodes.sort(key=lambda n: (n.position, n.tensor_order))

    # first and last visit of every output element (zero-initialised first, final width last)
    first_visit: dict[tuple, int] = {}
    last_visit: dict[tuple, int] = {}
    for s, per_pe in enumerate(pe_elements[output]):
        for e in per_pe:
            first_visit.setdefault(e, s)
            last_visit[e] = s

    for t, chain in chains.items():
        for node in chain[1:]:
            _make_runs(
                node,
                temporal,
                spatial,
                steps,
                pe_elements[t],
                reuse,
                bits[t],
                psum[t],
                first_visit if node.is_output else None,
                last_visit,
                arch,
            )
    return Nest(
        einsum=einsum.name,
        tensors=tensors,
        output=output,
        steps=steps,
        spatial_points=spatial_points,
        nodes=nodes,
        chains=chains,
        bits=bits,
        psum_bits=psum,
        pe_elements=pe_elements,
        pipeline=arch.pe_array.pipeline_depth_cycles,
        loop_ranks=[n.rank for _, n in temporal],
        ranks={t: {r for p in einsum.access(t).projection for _, r in p.terms} for t in tensors},
    )


def _make_runs(
    node, temporal, spatial, steps, elements, reuse, bits, psum, first_visit, last_visit, arch
) -> None:
    """A run per change of the tile key. retain: the tile changes when a loop above that
    indexes the tensor moves (its elements change); strict: on every iteration of every loop
    above."""
    mem = arch.memory(node.memory)
    inst_dims = [
        k
        for k, (i, s) in enumerate(spatial)
        if i < node.position and s.dim not in mem.shared_across
    ]

    node.inst_dims = inst_dims

    def instance_of(point: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(point[k] for k in inst_dims)

    points = list(itertools.product(*(range(s.bound) for _, s in spatial)))
    instances = sorted({instance_of(p) for p in points})

    # per step the tile the node holds: the elements touched by all steps sharing the loops above
    above_key = [tuple(steps[s][k] for k in node.above) for s in range(len(steps))]
    tile_of: dict[tuple, list[set]] = {}
    for s, ak in enumerate(above_key):
        sets = tile_of.setdefault(ak, [set() for _ in instances])
        for p, e in zip(points, elements[s], strict=True):
            sets[instances.index(instance_of(p))].add(e)
    runs: list[Run] = []
    prev = None
    for s, ak in enumerate(above_key):
        tile = [frozenset(x) for x in tile_of[ak]]
        k = ak if reuse == "strict" else tuple(tile)
        if runs and k == prev:
            runs[-1].last = s
            continue
        prev = k
        runs.append(Run(len(runs), s, s, tile, 0, 0, 0, 0))
    for r in runs:
        union = frozenset().union(*r.elements)
        share = max(len(x) for x in r.elements)
        total = sum(len(x) for x in r.elements)
        if first_visit is None:  # an input: every residency is filled from the parent
            r.fill_bits, r.fill_instance_bits = len(union) * bits, share * bits
            r.fill_values_parent, r.fill_values_child = len(union), total
            continue
        r.revisit = any(first_visit[e] < r.first for e in union)
        if r.revisit:  # partial sums read back at partial-sum width
            r.fill_bits, r.fill_instance_bits = len(union) * psum, share * psum
            r.fill_values_parent, r.fill_values_child = len(union), total
        complete = all(last_visit[e] <= r.last for e in union)
        width = bits if complete else psum
        r.wb_bits, r.wb_instance_bits, r.wb_values = total * width, share * width, total
    node.runs = runs
