"""The storage nodes' NodePlans: parents, ports, DMA engines and per-tile use counts resolved
from their NodeFacts (nodes.py), the last of build_plan's node steps.

Pure: no SimPy.
"""

from __future__ import annotations

from math import prod

from cyclesim.schedule.nodes import NodeFacts, PlanInputs, StorageRecord, indexes, port_ref
from cyclesim.schedule.types import LeafPlan, NodePlan, PortRef, ReusePolicy
from cyclesim.spec import Architecture, Direction, Spatial, Temporal, Workload


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
                count_dependency_groups(workload, ri, recs, facts, leaf_plans, leaf_loops)
                if d.output_role
                else 1,
                pe_by is not None
                or any(facts[c].output_role and facts[c].revisited() for c in children),
                _tilestill_levels(inputs, r, d),
            )
        )
    return nodes


def still_levels(above: tuple, temporal: list, lane_loop: list, projection: tuple) -> frozenset:
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


def _tilestill_levels(inputs: PlanInputs, r: StorageRecord, d: NodeFacts) -> frozenset:
    """Counted levels at which an input node's tile is the previous entry's (DESIGN "retain:
    refill only when the tile changes"): still for the path of every leaf below it."""
    if inputs.reuse is not ReusePolicy.RETAIN or d.output_role or not d.counted_loops:
        return frozenset()
    still = None
    for li in d.below:
        above, comp = inputs.leaves[li]
        projection = inputs.workload.einsum(comp.einsum).access(r.tensor).projection
        s = still_levels(above, list(d.counted_loops), [], projection)
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


def count_dependency_groups(
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
