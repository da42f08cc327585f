"""Compile (architecture, workload, mapping) into a frozen plan: storage nodes, leaves, ports.

Pure: no SimPy. Every storage node's tile sequence is a mixed-radix counter over the loops
above it, so tile indices, parent tiles and first/final visits are closed-form functions of
an integer (no per-cycle or per-tile lists are materialised).
"""

from __future__ import annotations

from math import prod

from cyclesim.schedule.addresses import dram_addresses
from cyclesim.schedule.capacity import check_backing_stores, check_capacity
from cyclesim.schedule.isolate import isolate
from cyclesim.schedule.node_plans import finish_nodes, still_levels
from cyclesim.schedule.nodes import (
    NodeFacts,
    PlanInputs,
    StorageRecord,
    copies,
    footprint,
    node_facts,
    port_ref,
    position,
    storage_records,
)
from cyclesim.schedule.types import (
    LeafPlan,
    NodePlan,
    Operand,
    Plan,
    PortRef,
    ReusePolicy,
    SeqPlan,
)
from cyclesim.spec import (
    Architecture,
    Compute,
    Direction,
    Mapping,
    Sequential,
    Spatial,
    Storage,
    Temporal,
    Workload,
)

__all__ = [
    "LeafPlan",
    "NodePlan",
    "Operand",
    "Plan",
    "PortRef",
    "ReusePolicy",
    "SeqPlan",
    "build_plan",
    "isolate",
]


def build_plan(
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    reuse: ReusePolicy = ReusePolicy.RETAIN,
    isolate_einsums: bool = False,
) -> Plan:
    """Compile the three inputs into a Plan; raise SpecError for what cannot be replayed.

    In steps: the storage nodes in loop-tree order (storage_records), what each holds and
    which loops change it (node_facts), the sequential splits (_sequence), the leaves and
    how their PE arrays touch each tensor (_leaf_plan), then the NodePlans (finish_nodes)."""
    from cyclesim.spec import leaves

    tree = isolate(mapping, workload) if isolate_einsums else mapping.loop_tree
    tensor_order = tuple(t.name for t in workload.tensors)
    shared = {m.name: set(m.shared_across) for m in arch.memories}
    inputs = PlanInputs(arch, workload, mapping, reuse, tuple(leaves(tree)), shared, {})
    recs = storage_records(tree, tensor_order)
    facts = node_facts(inputs, recs)
    root, shared_depth_of = _sequence(tree, inputs.leaves)
    leaf_plans, leaf_loops = [], []
    for li in range(len(inputs.leaves)):
        leaf, loops = _leaf_plan(inputs, li, recs, facts, shared_depth_of.get(li, 0))
        leaf_plans.append(leaf)
        leaf_loops.append(loops)
    nodes = finish_nodes(inputs, recs, facts, leaf_plans, leaf_loops)
    check_backing_stores(workload, mapping, nodes)
    check_capacity(arch, mapping, nodes, leaf_plans)
    dma = tuple((d.name, d.channels, d.setup_cycles) for d in arch.dma_engines)
    dram, dram_nodes = dram_addresses(arch, workload, tree, tuple(nodes))
    return Plan(
        tuple(nodes),
        tuple(leaf_plans),
        root,
        reuse,
        isolate_einsums,
        arch.pe_array.pipeline_depth_cycles,
        _ports(nodes, leaf_plans),
        dma,
        tensor_order,
        _allocators(arch),
        dram,
        dram_nodes,
        arch.pe_array.systolic,
        tuple((m.name, m.size_bits) for m in arch.memories if m.size_bits is not None),
        tuple(f"{m.name}.{p.name}" for m in arch.memories for p in m.ports),
        arch,
        workload,
        mapping,
    )


def _sequence(tree: tuple, leaf_list: tuple) -> tuple[object, dict[int, int]]:
    """The tree's sequential splits as SeqPlans over leaf indices (the root: a leaf index or a
    SeqPlan), and per leaf the temporal loops above its innermost split."""
    shared_depth_of: dict[int, int] = {}

    def seq_walk(nodes: tuple, above: tuple) -> object:
        for i, node in enumerate(nodes):
            if isinstance(node, Compute):
                return next(j for j, (_, c) in enumerate(leaf_list) if c is node)
            if isinstance(node, Sequential):
                ab = above + nodes[:i]
                depth = sum(1 for n in ab if isinstance(n, Temporal) and n.bound > 1)
                branches = []
                for b in node.branches:
                    item = seq_walk(b, ab)
                    for li in _leaf_ids(item):
                        shared_depth_of[li] = max(shared_depth_of.get(li, 0), depth)
                    branches.append(item)
                iters = prod(n.bound for n in ab if isinstance(n, Temporal))
                return SeqPlan(iters, tuple(branches))
        raise AssertionError("validated tree ends in compute or sequential")

    return seq_walk(tree, ()), shared_depth_of


def _leaf_plan(
    inputs: PlanInputs,
    li: int,
    recs: list[StorageRecord],
    facts: list[NodeFacts],
    shared_depth: int,
) -> tuple[LeafPlan, tuple]:
    """Leaf li's plan, and its temporal loops (bound > 1, outer first, the lane loop divided).

    Its segment depth covers every storage node on its path and the loops shared above its
    innermost sequential split."""
    arch = inputs.arch
    lanes = arch.pe_array.macs_per_pe_per_cycle
    above, comp = inputs.leaves[li]
    einsum = inputs.workload.einsum(comp.einsum)
    temporal = [n for n in above if isinstance(n, Temporal) and n.bound > 1]
    temporal, lane_loop = _vector_lanes(
        arch, inputs.mapping, above, temporal, lanes, einsum.is_copy
    )
    bounds = tuple(n.bound for n in temporal)
    on_path = [ri for ri, f in enumerate(facts) if li in f.below]
    seg_depth = max([len(facts[ri].counted) for ri in on_path] + [shared_depth])
    segments = prod(bounds[:seg_depth])
    operands = []
    for a in einsum.accesses:
        node = max(ri for ri in on_path if recs[ri].tensor == a.tensor)  # the innermost
        ratio = segments // prod(facts[node].counted)
        operands.append(
            _operand(
                inputs,
                li,
                einsum,
                a,
                recs[node],
                node,
                facts[node].instances,
                ratio,
                temporal,
                lane_loop,
            )
        )
    out_rel = tuple(n.rank in einsum.output.ranks() for n in temporal)
    spatial_macs = prod(n.bound for n in above if isinstance(n, Spatial)) * (
        lanes if lane_loop else 1
    )
    leaf = LeafPlan(
        li,
        einsum.name,
        comp.path,
        einsum.is_copy,
        bounds,
        out_rel,
        seg_depth,
        segments,
        prod(bounds),
        spatial_macs,
        tuple(operands),
        shared_depth,
    )
    return leaf, tuple(temporal)


def _operand(
    inputs: PlanInputs,
    li: int,
    einsum,
    a,
    r: StorageRecord,
    node: int,
    instances: int,
    ratio: int,
    temporal: list,
    lane_loop: list,
) -> Operand:
    """How leaf li's PE array touches access a's tensor at its innermost storage node r (index
    node, of `instances` instances; `ratio` segments of the leaf use one of its tiles)."""
    arch, workload, reuse = inputs.arch, inputs.workload, inputs.reuse
    seen = inputs.view(li, a.tensor)
    sp_below = [
        n for n in seen[position(seen, r.store) + 1 :] if isinstance(n, Spatial) and n.bound > 1
    ]
    is_out = a is einsum.output
    # distinct values across the PEs below the node: a spatial loop that does not index the
    # tensor multicasts it (inputs) or reduces it for free (outputs), under both policies;
    # strict differs in reading them on every step (AccelForge's convention)
    vps = footprint(workload, einsum.name, a.tensor, sp_below + lane_loop) * copies(
        workload, einsum.name, a.tensor, sp_below, arch.pe_array.no_multicast_dims(a.tensor)
    )
    if lane_loop and reuse is ReusePolicy.STRICT and lane_loop[0].rank not in a.ranks():
        vps *= arch.pe_array.macs_per_pe_per_cycle  # strict: every MAC of the vector on its own
    still: frozenset[int] = frozenset()
    if reuse is ReusePolicy.STRICT:
        change = len(temporal)
    else:
        change = max((i + 1 for i, n in enumerate(temporal) if n.rank in a.ranks()), default=0)
        if not is_out:
            still = still_levels(inputs.leaves[li][0], temporal, lane_loop, a.projection)
    mem = r.store.memory
    tensor = workload.tensor(a.tensor)
    why = f"the PE array of Einsum '{einsum.name}'"
    read_port = port_ref(arch, mem, a.tensor, Direction.READ_TO_BELOW, why)
    write_port = port_ref(arch, mem, a.tensor, Direction.WRITE_FROM_BELOW, why) if is_out else None
    if is_out and einsum.is_copy:
        read_port = None
    return Operand(
        a.tensor,
        node,
        ratio,
        is_out,
        change,
        vps,
        instances,
        tensor.partial_sum_bits if (is_out and not einsum.is_copy) else tensor.bits_per_value,
        read_port,
        write_port,
        still,
    )


def _ports(nodes: list[NodePlan], leaf_plans: list[LeafPlan]) -> tuple[PortRef, ...]:
    """Every port a transfer or a PE array uses, in order of first use."""
    ports = []
    for n in nodes:
        for p in (n.fill_src, n.fill_dst, n.drain_src, n.drain_dst):
            if p is not None and p not in ports:
                ports.append(p)
    for leaf in leaf_plans:
        for o in leaf.operands:
            for p in (o.read_port, o.write_port):
                if p is not None and p not in ports:
                    ports.append(p)
    return tuple(ports)


def _allocators(arch: Architecture) -> tuple[tuple[str, object], ...]:
    """The L1 allocator of each memory that has one, validated (SpecError names file and field)."""
    if not any(m.allocator is not None for m in arch.memories):
        return ()
    from cyclesim.l1.config import L1Config

    return tuple(
        (
            m.name,
            L1Config.from_dict(
                m.allocator, file=arch.source, lines=arch.lines, loc=("memories", i, "allocator")
            ),
        )
        for i, m in enumerate(arch.memories)
        if m.allocator is not None
    )


def _vector_lanes(arch, mapping, above: tuple, temporal: list, lanes: int, is_copy: bool):
    """A PE doing `lanes` MACs per cycle runs that many iterations of the innermost temporal loop
    in one step: return the leaf's temporal loops with that loop divided, and the lane loop."""
    if lanes == 1 or is_copy:
        return temporal, []
    if not temporal or temporal[-1].bound % lanes:
        where = temporal[-1].path if temporal else "loop_tree"
        raise mapping.error(
            f"the PE array does {lanes} MACs per PE per cycle ({arch.source}: pe_array."
            "macs_per_pe_per_cycle), so the innermost temporal loop runs that many iterations "
            f"per step; its bound must be a multiple of {lanes}",
            where,
            found=temporal[-1].bound if temporal else None,
        )
    inner = temporal[-1]
    pos = next(i for i, n in enumerate(above) if n is inner)
    if any(isinstance(n, Storage) for n in above[pos + 1 :]):
        raise mapping.error(
            f"with {lanes} MACs per PE per cycle the innermost temporal loop is vectorised; no "
            "storage node may sit below it",
            inner.path,
        )
    grouped = Temporal(inner.rank, inner.bound // lanes, inner.path)
    rest = temporal[:-1] + ([grouped] if grouped.bound > 1 else [])
    return rest, [Temporal(inner.rank, lanes, inner.path)]


def _leaf_ids(item: object) -> list[int]:
    if isinstance(item, int):
        return [item]
    return [li for b in item.branches for li in _leaf_ids(b)]
