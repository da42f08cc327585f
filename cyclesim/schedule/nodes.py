"""The storage nodes of a plan: what each holds and which loops change it (NodeFacts), the
first of build_plan's node steps; node_plans.py turns them into NodePlans.

Pure: no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from cyclesim.schedule.types import PortRef, ReusePolicy
from cyclesim.spec import (
    Architecture,
    Direction,
    Mapping,
    Port,
    Sequential,
    Spatial,
    Storage,
    Temporal,
    Workload,
)


def indexes(workload: Workload, tensor: str, rank: str) -> bool:
    """Does some Einsum index the tensor by this rank (a loop over it changes its tile)?"""
    for e in workload.einsums:
        a = e.access(tensor)
        if a is not None and rank in a.ranks():
            return True
    return False


def port_ref(
    arch: Architecture, memory: str, tensor: str, direction: Direction, why: str
) -> PortRef:
    """The memory's port serving (tensor, direction); SpecError naming the port list if none
    does (why: the use that needs it, for the message)."""
    mem = arch.memory(memory)
    port: Port | None = mem.port_for(tensor, direction)
    if port is None:
        raise arch.error(
            f"memory '{memory}' has no port serving tensor {tensor} in direction {direction.value} ({why})",
            ("memories", arch.memory_index(memory), "ports"),
            expected=f"a port whose kind and 'serves' cover ({tensor}, {direction.value})",
        )
    return PortRef(memory, port.name, port.width_bits, port.burst_bits, port.latency_cycles)


@dataclass(frozen=True, slots=True)
class StorageRecord:
    """A storage node of one tensor while the plan is being built."""

    store: Storage
    tensor: str
    above: tuple  # spec nodes above the storage node, outermost first


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What build_plan works out for one storage node before its NodePlan (where its tile sits
    among the loops, how big it is, who uses it); finish_nodes turns it into the NodePlan."""

    parent: int | None  # the nearest storage node of the same tensor above it
    counted_loops: tuple[Temporal, ...]  # loops above it whose advance changes its tile
    counted: tuple[int, ...]  # their bounds, outer first
    relevant: tuple[bool, ...]  # per counted loop: does it index the tensor
    instances: int  # copies of the node: spatial positions above it, as its tensor sees them
    tile: int  # values per instance: the largest tile of the leaves below it
    union: int  # values on the parent side per fill (multicast / spatial reduction)
    below: tuple[int, ...]  # the leaves below it that access its tensor
    output_role: bool  # the producing Einsum's compute node is below it

    def revisited(self) -> bool:
        """Is its tile entered again after it was left (an irrelevant counted loop), so that
        it drains unfinished partial sums to its parent in between?"""
        return any(b > 1 and not rel for b, rel in zip(self.counted, self.relevant, strict=True))


@dataclass(frozen=True, slots=True)
class PlanInputs:
    """The three inputs of one build_plan call and what every step reads off them."""

    arch: Architecture
    workload: Workload
    mapping: Mapping
    reuse: ReusePolicy
    leaves: tuple  # (path above, Compute) per leaf of the loop tree, in tree order
    shared: dict[str, set[str]]  # memory -> the array dimensions it is shared across
    views: dict[tuple[int, str], tuple]  # (leaf, tensor) -> view(leaf, tensor), once computed

    def view(self, li: int, tensor: str) -> tuple:
        """Leaf li's path as `tensor` sees it (`tensor_view`)."""
        seen = self.views.get((li, tensor))
        if seen is None:
            seen = self.views[(li, tensor)] = tensor_view(self.leaves[li][0], tensor, self.shared)
        return seen


def footprint(workload: Workload, einsum: str, tensor: str, loops: list) -> int:
    """Distinct values of the tensor touched under these loops."""
    access = workload.einsum(einsum).access(tensor)
    tile: dict[str, int] = {}
    for loop in loops:
        tile[loop.rank] = tile.get(loop.rank, 1) * loop.bound
    return access.footprint(tile)


def tensor_view(path: tuple, tensor: str, shared: dict[str, set[str]]) -> tuple:
    """A leaf's path as one tensor sees it: a spatial loop above a storage node of the tensor whose
    memory is shared across that loop's array dimension moves to just below the innermost such
    node. That node is then one instance for all those positions and its tile spans them; the
    other tensors keep the loop where the tree puts it (spatial iterations run in parallel, so
    only which storage nodes a spatial loop is inside matters, and that is per tensor, as in
    ZigZag's per-operand level lists)."""
    nodes = list(path)
    for loop in [n for n in path if isinstance(n, Spatial)]:
        at = next(i for i, n in enumerate(nodes) if n is loop)
        target = None
        for j in range(at + 1, len(nodes)):
            n = nodes[j]
            if isinstance(n, Storage) and tensor in n.tensors and loop.dim in shared[n.memory]:
                target = j
        if target is not None:
            nodes.insert(target, nodes.pop(at))
    return tuple(nodes)


def position(nodes: tuple, node) -> int:
    """Position of a node in a path, by identity."""
    return next(i for i, n in enumerate(nodes) if n is node)


def copies(
    workload: Workload, einsum: str, tensor: str, spatial: list, no_multicast: frozenset[str]
) -> int:
    """Copies a fan-out moves of the same values: one per position of a spatial loop that does
    not index the tensor over a dimension that may not multicast (or reduce) it."""
    ranks = workload.einsum(einsum).access(tensor).ranks()
    return prod(
        n.bound
        for n in spatial
        if isinstance(n, Spatial) and n.dim in no_multicast and n.rank not in ranks
    )


def storage_records(tree: tuple, tensor_order: tuple[str, ...]) -> list[StorageRecord]:
    """One record per (storage node, tensor) in loop-tree order, then workload tensor order."""
    recs: list[StorageRecord] = []

    def walk(nodes: tuple, above: tuple) -> None:
        for i, node in enumerate(nodes):
            if isinstance(node, Storage):
                for t in sorted(node.tensors, key=tensor_order.index):
                    recs.append(StorageRecord(node, t, above + nodes[:i]))
            elif isinstance(node, Sequential):
                for branch in node.branches:
                    walk(branch, above + nodes[:i])

    walk(tree, ())
    return recs


def node_facts(inputs: PlanInputs, recs: list[StorageRecord]) -> list[NodeFacts]:
    """Per storage node: its parent, counted loops, instances, tile sizes and leaves below."""
    workload = inputs.workload
    index_of = {(id(r.store), r.tensor): i for i, r in enumerate(recs)}
    producer_leaf = {
        workload.einsum(comp.einsum).output.tensor: li for li, (_, comp) in enumerate(inputs.leaves)
    }
    facts = []
    for r in recs:
        parent = None
        for node in reversed(r.above):
            if isinstance(node, Storage) and r.tensor in node.tensors:
                parent = index_of[(id(node), r.tensor)]
                break
        facts.append(_facts_of(inputs, r, parent, recs, producer_leaf))
    return facts


def _facts_of(
    inputs: PlanInputs,
    r: StorageRecord,
    parent: int | None,
    recs: list[StorageRecord],
    producer_leaf: dict,
) -> NodeFacts:
    """One storage node's facts (see NodeFacts); SpecError if no leaf below uses its tensor
    or a spatial loop below it runs over a dimension its memory is not shared across."""
    workload, mapping = inputs.workload, inputs.mapping
    temporal = [n for n in r.above if isinstance(n, Temporal) and n.bound > 1]
    below = tuple(
        li
        for li, (above, comp) in enumerate(inputs.leaves)
        if any(n is r.store for n in above) and workload.einsum(comp.einsum).access(r.tensor)
    )
    if not below:
        raise mapping.error(f"tensor {r.tensor} is used by no compute node below", r.store.path)
    # the spatial loops above the node as its tensor sees them: one over a dimension the
    # memory is shared across has moved below it (one instance serves those positions)
    seen = inputs.view(below[0], r.tensor)
    spatial_above = [
        n for n in seen[: position(seen, r.store)] if isinstance(n, Spatial) and n.bound > 1
    ]
    rel = [indexes(workload, r.tensor, n.rank) for n in temporal]
    if inputs.reuse is ReusePolicy.RETAIN:
        depth = max((i + 1 for i, x in enumerate(rel) if x), default=0)
    else:
        depth = len(temporal)
    no_mc = inputs.arch.pe_array.no_multicast_dims(r.tensor)
    tiles, unions = [], []
    for li in below:
        einsum = inputs.leaves[li][1].einsum
        above = inputs.view(li, r.tensor)
        pos = position(above, r.store)
        inner = [n for n in above[pos + 1 :] if isinstance(n, (Temporal, Spatial))]
        tiles.append(footprint(workload, einsum, r.tensor, inner))
        between = []
        if parent is not None:
            ppos = position(above, recs[parent].store)
            between = [n for n in above[ppos + 1 : pos] if isinstance(n, Spatial)]
        unions.append(
            footprint(workload, einsum, r.tensor, inner + between)
            * copies(workload, einsum, r.tensor, between, no_mc)
        )
    shared = inputs.shared[r.store.memory]
    for li in below:
        above = inputs.view(li, r.tensor)
        for sp in above[position(above, r.store) + 1 :]:
            if isinstance(sp, Spatial) and sp.bound > 1 and sp.dim not in shared:
                raise mapping.error(
                    f"memory '{r.store.memory}' exists once per position of array dimension "
                    f"{sp.dim}, but the spatial loop over {sp.dim} ({sp.path}) is below its "
                    "storage node; move the storage node below that loop",
                    r.store.path,
                )
    return NodeFacts(
        parent=parent,
        counted_loops=tuple(temporal[:depth]),
        counted=tuple(n.bound for n in temporal[:depth]),
        relevant=tuple(rel[:depth]),
        instances=prod(n.bound for n in spatial_above),
        tile=max(tiles),
        union=max(unions),
        below=below,
        output_role=r.tensor in producer_leaf and producer_leaf[r.tensor] in below,
    )
