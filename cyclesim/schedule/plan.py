"""Compile (architecture, workload, mapping) into a frozen plan: storage nodes, leaves, ports.

Pure: no SimPy. Every storage node's tile sequence is a mixed-radix counter over the loops
above it, so tile indices, parent tiles and first/final visits are closed-form functions of
an integer (no per-cycle or per-tile lists are materialised).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from cyclesim.schedule.addresses import dram_addresses
from cyclesim.schedule.capacity import check_capacity
from cyclesim.schedule.isolate import isolate
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
    Port,
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


def _relevant(workload: Workload, tensor: str, rank: str) -> bool:
    for e in workload.einsums:
        a = e.access(tensor)
        if a is not None and rank in a.ranks():
            return True
    return False


def _port(arch: Architecture, memory: str, tensor: str, direction: Direction, why: str) -> PortRef:
    mem = arch.memory(memory)
    port: Port | None = mem.port_for(tensor, direction)
    if port is None:
        raise arch.error(
            f"memory '{memory}' has no port serving tensor {tensor} in direction {direction.value} ({why})",
            ("memories", arch.memory_index(memory), "ports"),
            expected=f"a port whose kind and 'serves' cover ({tensor}, {direction.value})",
        )
    return PortRef(memory, port.name, port.width_bits, port.burst_bits, port.latency_cycles)


@dataclass(slots=True)
class _Rec:
    """A storage node of one tensor while the plan is being built."""

    store: Storage
    tensor: str
    above: tuple  # spec nodes above the storage node, outermost first
    order: tuple[int, int]


def _footprint(workload: Workload, einsum: str, tensor: str, loops: list) -> int:
    """Distinct values of the tensor touched under these loops."""
    access = workload.einsum(einsum).access(tensor)
    tile: dict[str, int] = {}
    for loop in loops:
        tile[loop.rank] = tile.get(loop.rank, 1) * loop.bound
    return access.footprint(tile)


def _tensor_view(path: tuple, tensor: str, shared: dict[str, set[str]]) -> tuple:
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


def _index(nodes: tuple, node) -> int:
    """Position of a node in a path, by identity."""
    return next(i for i, n in enumerate(nodes) if n is node)


def _copies(
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


def build_plan(
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    reuse: ReusePolicy = ReusePolicy.RETAIN,
    isolate_einsums: bool = False,
) -> Plan:
    """Compile the three inputs into a Plan; raise SpecError for what cannot be replayed."""
    from cyclesim.spec import leaves

    lanes = arch.pe_array.macs_per_pe_per_cycle
    tree = isolate(mapping, workload) if isolate_einsums else mapping.loop_tree
    no_mc = arch.pe_array.no_multicast_dims
    tensor_order = tuple(t.name for t in workload.tensors)
    leaf_list = leaves(tree)

    # ---- storage records in loop-tree order, then workload tensor order
    recs: list[_Rec] = []

    def walk(nodes: tuple, above: tuple) -> None:
        for i, node in enumerate(nodes):
            if isinstance(node, Storage):
                for t in sorted(node.tensors, key=tensor_order.index):
                    recs.append(_Rec(node, t, above + nodes[:i], (len(recs), 0)))
            elif isinstance(node, Sequential):
                for branch in node.branches:
                    walk(branch, above + nodes[:i])

    walk(tree, ())
    index_of = {(id(r.store), r.tensor): i for i, r in enumerate(recs)}

    def rec_index(store: Storage, tensor: str) -> int:
        return index_of[(id(store), tensor)]

    def leaves_below(r: _Rec) -> list[int]:
        return [
            li
            for li, (above, comp) in enumerate(leaf_list)
            if any(n is r.store for n in above) and workload.einsum(comp.einsum).access(r.tensor)
        ]

    producer_leaf = {
        workload.einsum(comp.einsum).output.tensor: li for li, (_, comp) in enumerate(leaf_list)
    }
    dims_shared = {m.name: set(m.shared_across) for m in arch.memories}
    views: dict[tuple[int, str], tuple] = {}

    def view(li: int, tensor: str) -> tuple:
        """Leaf li's path as `tensor` sees it (`_tensor_view`)."""
        if (li, tensor) not in views:
            views[(li, tensor)] = _tensor_view(leaf_list[li][0], tensor, dims_shared)
        return views[(li, tensor)]

    info = []
    for r in recs:
        parent = None
        for node in reversed(r.above):
            if isinstance(node, Storage) and r.tensor in node.tensors:
                parent = rec_index(node, r.tensor)
                break
        temporal = [n for n in r.above if isinstance(n, Temporal) and n.bound > 1]
        below = leaves_below(r)
        if not below:
            raise mapping.error(f"tensor {r.tensor} is used by no compute node below", r.store.path)
        # the spatial loops above the node as its tensor sees them: one over a dimension the
        # memory is shared across has moved below it (one instance serves those positions)
        seen = view(below[0], r.tensor)
        spatial_above = [
            n for n in seen[: _index(seen, r.store)] if isinstance(n, Spatial) and n.bound > 1
        ]
        rel = [_relevant(workload, r.tensor, n.rank) for n in temporal]
        if reuse is ReusePolicy.RETAIN:
            depth = max((i + 1 for i, x in enumerate(rel) if x), default=0)
        else:
            depth = len(temporal)
        tiles, unions = [], []
        for li in below:
            comp = leaf_list[li][1]
            above = view(li, r.tensor)
            pos = _index(above, r.store)
            inner = [n for n in above[pos + 1 :] if isinstance(n, (Temporal, Spatial))]
            tiles.append(_footprint(workload, comp.einsum, r.tensor, inner))
            between = []
            if parent is not None:
                ppos = _index(above, recs[parent].store)
                between = [n for n in above[ppos + 1 : pos] if isinstance(n, Spatial)]
            unions.append(
                _footprint(workload, comp.einsum, r.tensor, inner + between)
                * _copies(workload, comp.einsum, r.tensor, between, no_mc(r.tensor))
            )
        for li in below:
            above = view(li, r.tensor)
            pos = _index(above, r.store)
            for sp in above[pos + 1 :]:
                if (
                    isinstance(sp, Spatial)
                    and sp.bound > 1
                    and sp.dim not in dims_shared[r.store.memory]
                ):
                    raise mapping.error(
                        f"memory '{r.store.memory}' exists once per position of array dimension "
                        f"{sp.dim}, but the spatial loop over {sp.dim} ({sp.path}) is below its "
                        "storage node; move the storage node below that loop",
                        r.store.path,
                    )
        info.append(
            dict(
                parent=parent,
                counted=tuple(n.bound for n in temporal[:depth]),
                counted_loops=tuple(temporal[:depth]),
                relevant=tuple(rel[:depth]),
                instances=prod(n.bound for n in spatial_above),
                tile=max(tiles),
                union=max(unions),
                below=below,
                output_role=r.tensor in producer_leaf and producer_leaf[r.tensor] in below,
            )
        )

    # ---- leaves: segment depth covers every storage node on the path and the shared loops
    shared_depth_of: dict[int, int] = {}

    def seq_walk(nodes: tuple, above: tuple) -> object:
        for i, node in enumerate(nodes):
            if isinstance(node, Compute):
                li = next(j for j, (_, c) in enumerate(leaf_list) if c is node)
                return li
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

    root = seq_walk(tree, ())
    leaf_plans = []
    leaf_loops: list[tuple] = []  # per leaf: its temporal loops (bound > 1), outer first
    for li, (above, comp) in enumerate(leaf_list):
        einsum = workload.einsum(comp.einsum)
        temporal = [n for n in above if isinstance(n, Temporal) and n.bound > 1]
        temporal, lane_loop = _vector_lanes(arch, mapping, above, temporal, lanes, einsum.is_copy)
        leaf_loops.append(tuple(temporal))
        bounds = tuple(n.bound for n in temporal)
        on_path = [ri for ri, r in enumerate(recs) if li in info[ri]["below"]]
        seg_depth = max([len(info[ri]["counted"]) for ri in on_path] + [shared_depth_of.get(li, 0)])
        operands = []
        for a in einsum.accesses:
            inner_ri = max(ri for ri in on_path if recs[ri].tensor == a.tensor)
            r = recs[inner_ri]
            seen = view(li, a.tensor)
            sp_below = [
                n
                for n in seen[_index(seen, r.store) + 1 :]
                if isinstance(n, Spatial) and n.bound > 1
            ]
            is_out = a is einsum.output
            # distinct values across the PEs below the node: a spatial loop that does not index
            # the tensor multicasts it (inputs) or reduces it for free (outputs), under both
            # policies; strict differs in reading them on every step (AccelForge's convention)
            vps = _footprint(workload, einsum.name, a.tensor, sp_below + lane_loop) * _copies(
                workload, einsum.name, a.tensor, sp_below, no_mc(a.tensor)
            )
            if lane_loop and reuse is ReusePolicy.STRICT and lane_loop[0].rank not in a.ranks():
                vps *= lanes  # strict: every MAC of the vector reads (or accumulates) on its own
            if reuse is ReusePolicy.STRICT:
                change = len(bounds)
            else:
                change = max(
                    (i + 1 for i, n in enumerate(temporal) if n.rank in a.ranks()), default=0
                )
            mem = r.store.memory
            tensor = workload.tensor(a.tensor)
            why = f"the PE array of Einsum '{einsum.name}'"
            read_port = _port(arch, mem, a.tensor, Direction.READ_TO_BELOW, why)
            write_port = (
                _port(arch, mem, a.tensor, Direction.WRITE_FROM_BELOW, why) if is_out else None
            )
            if is_out and einsum.is_copy:
                read_port = None
            operands.append(
                Operand(
                    a.tensor,
                    inner_ri,
                    0,  # filled below once segments are known
                    is_out,
                    change,
                    vps,
                    info[inner_ri]["instances"],
                    tensor.partial_sum_bits
                    if (is_out and not einsum.is_copy)
                    else tensor.bits_per_value,
                    read_port,
                    write_port,
                )
            )
        segments = prod(bounds[:seg_depth])
        ops = tuple(
            Operand(
                o.tensor,
                o.node,
                segments // prod(info[o.node]["counted"]),
                o.is_output,
                o.change_depth,
                o.values_per_step,
                o.instances,
                o.bits,
                o.read_port,
                o.write_port,
            )
            for o in operands
        )
        out_rel = tuple(n.rank in einsum.output.ranks() for n in temporal)
        spatial_macs = prod(n.bound for n in above if isinstance(n, Spatial)) * (
            lanes if lane_loop else 1
        )
        leaf_plans.append(
            LeafPlan(
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
                ops,
                shared_depth_of.get(li, 0),
            )
        )
    nodes = _finish_nodes(arch, workload, mapping, recs, info, leaf_plans, leaf_list, leaf_loops)
    check_capacity(arch, mapping, nodes, recs, leaf_plans, workload)
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
    dma = tuple((d.name, d.channels, d.setup_cycles) for d in arch.dma_engines)
    dram, dram_nodes = dram_addresses(arch, workload, tree, tuple(nodes))
    return Plan(
        tuple(nodes),
        tuple(leaf_plans),
        root,
        reuse,
        isolate_einsums,
        arch.pe_array.pipeline_depth_cycles,
        tuple(ports),
        dma,
        tensor_order,
        _allocators(arch),
        dram,
        dram_nodes,
        arch.pe_array.systolic,
        tuple((m.name, m.size_bits) for m in arch.memories if m.size_bits is not None),
    )


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


def _dependency_groups(workload, ri, recs, info, leaf_plans, leaf_loops) -> int:
    """How many independent parts of an intermediate's tile its producer completes in turn.

    The users of a node (children and PE leaves) all see its counted loops first; when they
    continue with the same loops (shared above a sequential split) that all index the tensor,
    each iteration of those loops produces its own part of the tile, and a consumer waits only
    for its part. Otherwise (1) it waits for the whole tile.
    """
    tensor = recs[ri].tensor
    base = len(info[ri]["counted"])
    seqs = [info[c]["counted_loops"][base:] for c in range(len(recs)) if info[c]["parent"] == ri]
    for leaf in leaf_plans:
        if any(o.node == ri for o in leaf.operands):
            seqs.append(leaf_loops[leaf.index][base : leaf.seg_depth])
    groups = 1
    for loops in zip(*seqs, strict=False) if seqs else ():  # the common prefix only
        first = loops[0]
        if any(n is not first for n in loops) or not _relevant(workload, tensor, first.rank):
            break
        groups *= first.bound
    return groups


def _finish_nodes(
    arch, workload, mapping, recs, info, leaf_plans, leaf_list, leaf_loops
) -> list[NodePlan]:
    """Resolve parents, ports, DMA engines and per-tile use counts into NodePlans."""
    nodes = []
    for ri, r in enumerate(recs):
        d = info[ri]
        p = d["parent"]
        tensor = workload.tensor(r.tensor)
        entries = prod(d["counted"])
        distinct = prod(b for b, rel in zip(d["counted"], d["relevant"], strict=True) if rel)
        ratio = 1
        if p is not None:
            pc = info[p]["counted"]
            if d["counted"][: len(pc)] != pc:
                raise AssertionError("a parent's counted loops are a prefix of its child's")
            ratio = entries // prod(pc)
        children = [ci for ci in range(len(recs)) if info[ci]["parent"] == ri]
        uses = sum(prod(info[c]["counted"]) // entries for c in children)
        producer_uses = sum(
            prod(info[c]["counted"]) // entries for c in children if info[c]["output_role"]
        )
        pe_by = None
        for leaf in leaf_plans:
            for o in leaf.operands:
                if o.node == ri:
                    uses += leaf.segments // entries
                    if o.is_output:
                        producer_uses += leaf.segments // entries
                        pe_by = leaf.einsum
        owner = (
            workload.producer(r.tensor).name
            if d["output_role"]
            else leaf_list[d["below"][0]][1].einsum
        )
        fill_src = fill_dst = drain_src = drain_dst = None
        dma = None
        if p is not None:
            pm, why = (
                recs[p].store.memory,
                f"link {recs[p].store.memory} -> {r.store.memory} of tensor {r.tensor}",
            )
            if not d["output_role"] or entries > distinct:  # inputs fill; outputs reload revisits
                fill_src = _port(arch, pm, r.tensor, Direction.READ_TO_BELOW, why)
                fill_dst = _port(arch, r.store.memory, r.tensor, Direction.WRITE_FROM_ABOVE, why)
            if d["output_role"]:
                drain_src = _port(arch, r.store.memory, r.tensor, Direction.READ_TO_ABOVE, why)
                drain_dst = _port(arch, pm, r.tensor, Direction.WRITE_FROM_BELOW, why)
            engine = arch.dma_for(pm, r.store.memory)
            dma = engine.name if engine else None
        wait_producer = p is not None and not d["output_role"] and info[p]["output_role"]
        nodes.append(
            NodePlan(
                ri,
                r.tensor,
                r.store.memory,
                r.store.path,
                p,
                p is None,
                d["output_role"],
                owner,
                d["counted"],
                d["relevant"],
                entries,
                distinct,
                ratio,
                d["tile"],
                d["union"],
                d["instances"],
                info[p]["instances"] if p is not None else 1,
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
                _dependency_groups(workload, ri, recs, info, leaf_plans, leaf_loops)
                if d["output_role"]
                else 1,
                pe_by is not None
                or any(info[c]["output_role"] and _revisited(info[c]) for c in children),
            )
        )
    return nodes


def _revisited(d: dict) -> bool:
    """Is a node's tile entered again after it was left (an irrelevant counted loop), so that
    it drains unfinished partial sums to its parent in between?"""
    return any(b > 1 and not rel for b, rel in zip(d["counted"], d["relevant"], strict=True))
