"""The storage nodes of a plan: what each holds and which loops change it (NodeFacts), then
their NodePlans with ports, DMA engines and per-tile use counts (build_plan's node steps).

Pure: no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from cyclesim.schedule.types import LeafPlan, NodePlan, PortRef, ReusePolicy
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


def _dependency_groups(
    workload: Workload,
    ri: int,
    recs: list[StorageRecord],
    facts: list[NodeFacts],
    leaf_plans: list[LeafPlan],
    leaf_loops: list[tuple],
) -> int:
    """How many independent parts of an intermediate's tile its producer completes in turn.

    The users of a node (children and PE leaves) all see its counted loops first; when they
    continue with the same loops (shared above a sequential split) that all index the tensor,
    each iteration of those loops produces its own part of the tile, and a consumer waits only
    for its part. Otherwise (1) it waits for the whole tile.
    """
    tensor = recs[ri].tensor
    base = len(facts[ri].counted)
    seqs = [f.counted_loops[base:] for f in facts if f.parent == ri]
    for leaf in leaf_plans:
        if any(o.node == ri for o in leaf.operands):
            seqs.append(leaf_loops[leaf.index][base : leaf.seg_depth])
    groups = 1
    for loops in zip(*seqs, strict=False) if seqs else ():  # the common prefix only
        first = loops[0]
        if any(n is not first for n in loops) or not indexes(workload, tensor, first.rank):
            break
        groups *= first.bound
    return groups


def finish_nodes(
    inputs: PlanInputs,
    recs: list[StorageRecord],
    facts: list[NodeFacts],
    leaf_plans: list[LeafPlan],
    leaf_loops: list[tuple],
) -> list[NodePlan]:
    """Resolve parents, ports, DMA engines and per-tile use counts into NodePlans."""
    arch, workload = inputs.arch, inputs.workload
    nodes = []
    for ri, r in enumerate(recs):
        d = facts[ri]
        p = d.parent
        tensor = workload.tensor(r.tensor)
        entries = prod(d.counted)
        distinct = prod(b for b, rel in zip(d.counted, d.relevant, strict=True) if rel)
        ratio = 1
        if p is not None:
            pc = facts[p].counted
            if d.counted[: len(pc)] != pc:
                raise AssertionError("a parent's counted loops are a prefix of its child's")
            ratio = entries // prod(pc)
        children = [ci for ci, f in enumerate(facts) if f.parent == ri]
        uses, producer_uses, pe_by = _uses_per_tile(ri, entries, children, facts, leaf_plans)
        owner = (
            workload.producer(r.tensor).name
            if d.output_role
            else inputs.leaves[d.below[0]][1].einsum
        )
        fill_src, fill_dst, drain_src, drain_dst, dma = _links(
            arch, r, recs[p] if p is not None else None, d.output_role, entries > distinct
        )
        wait_producer = p is not None and not d.output_role and facts[p].output_role
        nodes.append(
            NodePlan(
                ri,
                r.tensor,
                r.store.memory,
                r.store.path,
                p,
                p is None,
                d.output_role,
                owner,
                d.counted,
                d.relevant,
                entries,
                distinct,
                ratio,
                d.tile,
                d.union,
                d.instances,
                facts[p].instances if p is not None else 1,
                arch.memory(r.store.memory).slots_for(r.tensor),
                tensor.bits_per_value,
                tensor.partial_sum_bits,
                fill_src,
                fill_dst,
                drain_src,
                drain_dst,
                dma,
                uses,
                producer_uses,
                wait_producer,
                pe_by,
                _dependency_groups(workload, ri, recs, facts, leaf_plans, leaf_loops)
                if d.output_role
                else 1,
                pe_by is not None
                or any(facts[c].output_role and facts[c].revisited() for c in children),
                _tile_still_levels(inputs, r, d),
            )
        )
    return nodes


def _still_levels(above: tuple, temporal: list, lane_loop: list, projection: tuple) -> frozenset:
    """Levels (1-based temporal loop that advanced) at which every projected coordinate of
    the operand is the previous step's: its register is not re-read (DESIGN "Operand
    registers hold the previous cycle's value only"), and with a storage node's counted loops
    as `temporal`, the node's tile (fixed extent, origin unmoved) is not refilled. A step of level l moves loop l by one
    and resets every inner loop from its bound - 1 to 0, so a coordinate sum(c * rank) moves
    by the same amount at every step of that level: c * stride of loop l less the inner
    loops' c * stride * (bound - 1). Only affine indices (A[n + k]) can make that zero."""
    if all(len(p.terms) < 2 for p in projection):
        return frozenset()
    # each temporal loop's stride in its rank: the product of the loops below it over that rank
    # (temporal, spatial and the vector lanes), walking the leaf's path from the bottom up
    index = {id(n): i for i, n in enumerate(temporal)}
    span: dict[str, int] = {}
    stride = [1] * len(temporal)
    lane = lane_loop[0] if lane_loop else None
    for n in reversed(above):
        if not isinstance(n, (Temporal, Spatial)) or n.bound <= 1:
            continue
        if lane is not None and isinstance(n, Temporal) and n.path == lane.path:
            span[n.rank] = span.get(n.rank, 1) * lane.bound  # the lanes run inside one step
            if temporal and temporal[-1].path == n.path:  # what is left of it steps
                stride[-1] = span[n.rank]
            span[n.rank] *= n.bound // lane.bound
            continue
        if id(n) in index:
            stride[index[id(n)]] = span.get(n.rank, 1)
        span[n.rank] = span.get(n.rank, 1) * n.bound
    still = set()
    for i, loop in enumerate(temporal):
        moved = False
        for p in projection:
            coefficient = dict((r, c) for c, r in p.terms)
            delta = coefficient.get(loop.rank, 0) * stride[i] - sum(
                coefficient.get(inner.rank, 0) * stride[j] * (inner.bound - 1)
                for j, inner in enumerate(temporal[i + 1 :], start=i + 1)
            )
            moved = moved or delta != 0
        if not moved:
            still.add(i + 1)
    return frozenset(still)


def _tile_still_levels(inputs: PlanInputs, r: StorageRecord, d: NodeFacts) -> frozenset:
    """Counted levels at which an input node's tile is the previous entry's (DESIGN "retain:
    refill only when the tile changes"): still for the path of every leaf below it."""
    if inputs.reuse is not ReusePolicy.RETAIN or d.output_role or not d.counted_loops:
        return frozenset()
    still = None
    for li in d.below:
        above, comp = inputs.leaves[li]
        projection = inputs.workload.einsum(comp.einsum).access(r.tensor).projection
        s = _still_levels(above, list(d.counted_loops), [], projection)
        still = s if still is None else still & s
    return frozenset(still or ())


def _uses_per_tile(
    ri: int, entries: int, children: list[int], facts: list[NodeFacts], leaf_plans: list[LeafPlan]
) -> tuple[int, int, str | None]:
    """Per tile of node ri (entries tiles in all): the entries of its children and segments of
    the PE arrays that use it, of those the ones that write its tensor, and the Einsum whose PE
    array writes it directly (None if none)."""
    uses = sum(prod(facts[c].counted) // entries for c in children)
    producer_uses = sum(prod(facts[c].counted) // entries for c in children if facts[c].output_role)
    pe_by = None
    for leaf in leaf_plans:
        for o in leaf.operands:
            if o.node == ri:
                uses += leaf.segments // entries
                if o.is_output:
                    producer_uses += leaf.segments // entries
                    pe_by = leaf.einsum
    return uses, producer_uses, pe_by


def _links(
    arch: Architecture,
    r: StorageRecord,
    parent: StorageRecord | None,
    output_role: bool,
    revisits: bool,
) -> tuple[PortRef | None, PortRef | None, PortRef | None, PortRef | None, str | None]:
    """The ports of a node's fills (source, destination) and write-backs, and the DMA engine
    of its link to its parent (all None for a backing store). An input fills; an output is
    written back, and fills too where its tiles are revisited (reloading partial sums)."""
    if parent is None:
        return None, None, None, None, None
    pm, cm, tensor = parent.store.memory, r.store.memory, r.tensor
    why = f"link {pm} -> {cm} of tensor {tensor}"
    fill_src = fill_dst = drain_src = drain_dst = None
    if not output_role or revisits:
        fill_src = port_ref(arch, pm, tensor, Direction.READ_TO_BELOW, why)
        fill_dst = port_ref(arch, cm, tensor, Direction.WRITE_FROM_ABOVE, why)
    if output_role:
        drain_src = port_ref(arch, cm, tensor, Direction.READ_TO_ABOVE, why)
        drain_dst = port_ref(arch, pm, tensor, Direction.WRITE_FROM_BELOW, why)
    engine = arch.dma_for(pm, cm)
    return fill_src, fill_dst, drain_src, drain_dst, engine.name if engine else None
