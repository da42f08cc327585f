"""The reference model's view of a schedule, by enumeration: every step of the loop nest, every
storage node's tile residencies ("runs") and the elements each one holds.

Written from docs/design.md alone (no cyclesim.schedule / engine / results): nothing here is a closed
form; element sets are enumerated point by point, so a reader can check each number by hand.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from cyclesim.spec import (
    Architecture,
    Compute,
    Mapping,
    Sequential,
    Spatial,
    Storage,
    Temporal,
    Workload,
)
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
    above: list[int] = field(default_factory=list)  # temporal loops above (tree positions)
    users: list[int] = field(default_factory=list)  # leaves that read or write it
    owner: str = ""  # the Einsum its transfers are booked to (an output's: its producer)
    inst_dims: list[int] = field(default_factory=list)  # spatial loops it has instances along

    @property
    def label(self) -> str:
        return f"{self.tensor}@{self.memory}"


@dataclass
class Leaf:
    """One Einsum's computation: its path through the loop tree (one per `sequential` branch)."""

    einsum: str
    tensors: list[str]  # operand order: inputs, then the output
    output: str
    chains: dict[str, list[Node]]  # per tensor, backing store first, along this leaf's path
    loop_ranks: list[str]  # its temporal loops' ranks, outermost first
    ranks: dict[str, set[str]]  # per tensor, the ranks that index it


@dataclass
class Nest:
    leaves: list[Leaf]
    leaf_of: list[int]  # per step: the leaf (Einsum) it computes
    steps: list[dict[int, int]]  # per step: temporal loop (tree position) -> index
    spatial_points: list[tuple[int, ...]]  # spatial loop indices per PE position
    nodes: list[Node]  # every non-backing and backing node, tree order then tensor order
    bits: dict[str, int]
    psum_bits: dict[str, int]
    pe_elements: dict[str, list[list[tuple] | None]]  # per tensor, per step: element per PE
    pipeline: int


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


def _flatten(tree) -> tuple[list[tuple[int, object]], list[list[tuple[int, object]]]]:
    """(the nodes above a `sequential` split, each branch's nodes), with their positions in
    loop-tree order (a pre-order walk: the nodes above, then branch after branch)."""
    prefix: list[tuple[int, object]] = []
    branches: list[list[tuple[int, object]]] = []
    pos = 0
    for n in tree:
        if isinstance(n, Sequential):
            for b in n.branches:
                assert not any(isinstance(x, Sequential) for x in b), "one split level only"
                branches.append([(pos + i, x) for i, x in enumerate(b)])
                pos += len(b)
            continue
        prefix.append((pos, n))
        pos += 1
    return prefix, branches


def build_nest(arch: Architecture, work: Workload, mapping: Mapping, reuse: str) -> Nest:
    """Enumerate steps, tiles and runs of a loop tree: one Einsum, or several under one
    `sequential` split whose branches run in order for each iteration of the loops above."""
    prefix, branches = _flatten(mapping.loop_tree)
    paths = [prefix + b for b in branches] if branches else [prefix]
    order = {t.name: i for i, t in enumerate(work.tensors)}
    above_split = {i for i, n in prefix if isinstance(n, Temporal)}
    outer = [(i, n) for i, n in prefix if isinstance(n, Temporal)]

    spatial = [(i, n) for i, n in paths[0] if isinstance(n, Spatial)]
    assert len(paths) == 1 or not any(isinstance(n, Spatial) for p in paths for _, n in p), (
        "the reference covers spatial loops with one Einsum only"
    )
    spatial_points = list(itertools.product(*(range(n.bound) for _, n in spatial)))

    # the steps: per iteration of the loops above the split, each branch's nest in turn
    einsums = []
    steps: list[dict[int, int]] = []
    leaf_of: list[int] = []
    for path in paths:
        compute = path[-1][1]
        assert isinstance(compute, Compute), "a branch ends in its compute node"
        einsums.append(work.einsum(compute.einsum))
    for o in itertools.product(*(range(n.bound) for _, n in outer)):
        for li, path in enumerate(paths):
            inner = [(i, n) for i, n in path if isinstance(n, Temporal) and i not in above_split]
            for x in itertools.product(*(range(n.bound) for _, n in inner)):
                v = dict(zip([i for i, _ in outer], o, strict=True))
                v.update(zip([i for i, _ in inner], x, strict=True))
                steps.append(v)
                leaf_of.append(li)

    def element(li: int, tensor: str, value: dict[int, int], point: tuple[int, ...]) -> tuple:
        """The element of tensor that a step of leaf li touches at a PE position: each rank's
        index composes its loops outermost-first (mixed radix)."""
        einsum, path = einsums[li], paths[li]
        value = dict(value)
        value.update(zip([i for i, _ in spatial], point, strict=True))
        idx: dict[str, int] = {r: 0 for r, _ in einsum.ranks}
        for pos, loop in path:
            if isinstance(loop, Temporal | Spatial):
                idx[loop.rank] = idx[loop.rank] * loop.bound + value[pos]
        acc = einsum.access(tensor)
        return tuple(sum(c * idx[r] for c, r in p.terms) for p in acc.projection)

    tensors_of = [[a.tensor for a in e.inputs] + [e.output.tensor] for e in einsums]
    all_tensors = sorted({t for ts in tensors_of for t in ts}, key=lambda x: order[x])
    bits = {t: work.tensor(t).bits_per_value for t in all_tensors}
    psum = {t: work.tensor(t).partial_sum_bits for t in all_tensors}
    pe_elements = {
        t: [
            [element(li, t, v, sp) for sp in spatial_points] if t in tensors_of[li] else None
            for li, v in zip(leaf_of, steps, strict=True)
        ]
        for t in all_tensors
    }

    nodes: list[Node] = []
    by_key: dict[tuple[int, str], Node] = {}
    leaves: list[Leaf] = []
    for li, path in enumerate(paths):
        einsum = einsums[li]
        chains: dict[str, list[Node]] = {t: [] for t in tensors_of[li]}
        for pos, n in path:
            if not isinstance(n, Storage):
                continue
            mem = arch.memory(n.memory)
            for t in sorted(n.tensors, key=lambda x: order[x]):
                if t not in chains:
                    continue
                node = by_key.get((pos, t))
                if node is None:
                    above_spatial = [(i, s) for i, s in spatial if i < pos]
                    node = Node(
                        position=pos,
                        memory=n.memory,
                        tensor=t,
                        tensor_order=order[t],
                        is_output=False,
                        slots=mem.slots_for(t),
                        instances=math.prod(
                            s.bound for _, s in above_spatial if s.dim not in mem.shared_across
                        ),
                        above=[i for i, x in path if isinstance(x, Temporal) and i < pos],
                    )
                    by_key[(pos, t)] = node
                    nodes.append(node)
                node.users.append(li)
                node.is_output |= t == einsum.output.tensor
                if chains[t]:
                    assert node.parent in (None, chains[t][-1])
                    assert chains[t][-1].child in (None, node), "one child per node"
                    node.parent = chains[t][-1]
                    chains[t][-1].child = node
                chains[t].append(node)
        leaves.append(
            Leaf(
                einsum=einsum.name,
                tensors=tensors_of[li],
                output=einsum.output.tensor,
                chains=chains,
                loop_ranks=[n.rank for _, n in path if isinstance(n, Temporal)],
                ranks={
                    t: {r for p in einsum.access(t).projection for _, r in p.terms}
                    for t in tensors_of[li]
                },
            )
        )
    nodes.sort(key=lambda n: (n.position, n.tensor_order))
    for node in nodes:  # booked to its producer if an Einsum writes it, else its first user
        writers = [einsums[li].name for li in node.users if leaves[li].output == node.tensor]
        node.owner = writers[0] if writers else einsums[node.users[0]].name

    # first and last visit of every output element by the Einsum that writes it
    first_visit: dict[tuple, int] = {}
    last_visit: dict[tuple, int] = {}
    for t in {lf.output for lf in leaves}:
        for s, per_pe in enumerate(pe_elements[t]):
            if leaves[leaf_of[s]].output != t:
                continue
            for e in per_pe:
                first_visit.setdefault((t, e), s)
                last_visit[(t, e)] = s

    for node in nodes:
        if node.parent is None:
            continue
        t = node.tensor
        _make_runs(
            node,
            spatial,
            steps,
            [s for s in range(len(steps)) if leaf_of[s] in node.users],
            pe_elements[t],
            reuse,
            bits[t],
            psum[t],
            {e: s for (x, e), s in first_visit.items() if x == t} if node.is_output else None,
            {e: s for (x, e), s in last_visit.items() if x == t},
            arch,
        )
    return Nest(
        leaves=leaves,
        leaf_of=leaf_of,
        steps=steps,
        spatial_points=spatial_points,
        nodes=nodes,
        bits=bits,
        psum_bits=psum,
        pe_elements=pe_elements,
        pipeline=arch.pe_array.pipeline_depth_cycles,
    )


def _make_runs(
    node, spatial, steps, used, elements, reuse, bits, psum, first_visit, last_visit, arch
) -> None:
    """A run per change of the tile key over the steps that use the node (`used`; the other
    branch's steps in between neither use nor change it). retain: the tile changes when a
    loop above that indexes the tensor moves (its elements change); strict: on every
    iteration of every loop above."""
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
    above_key = {s: tuple(steps[s][i] for i in node.above) for s in used}
    tile_of: dict[tuple, list[set]] = {}
    for s in used:
        sets = tile_of.setdefault(above_key[s], [set() for _ in instances])
        for p, e in zip(points, elements[s], strict=True):
            sets[instances.index(instance_of(p))].add(e)
    runs: list[Run] = []
    prev = None
    for s in used:
        ak = above_key[s]
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
