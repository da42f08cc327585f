"""Capacity, before any run: the slots of every tile a memory instance keeps must fit its size,
and a tensor the workload takes in or gives out must be whole in its backing store."""

from __future__ import annotations

from math import prod

from cyclesim.schedule.types import LeafPlan, NodePlan


def check_capacity(arch, mapping, nodes, leaf_plans) -> None:
    """Every memory instance must hold the slots of all tiles it keeps on any one leaf's path."""
    for leaf in leaf_plans:
        use: dict[str, list[NodePlan]] = {}
        for n in nodes:
            below = any(o.node == n.index for o in leaf.operands) or _on_path(n, leaf, nodes)
            if below:
                use.setdefault(n.memory, []).append(n)
        for mem_name, ns in use.items():
            size = arch.memory(mem_name).size_bits
            if size is None:
                continue
            need = 0
            parts = []
            for n in ns:
                bits = n.stored_bits
                slots = 1 if n.is_backing else n.slots
                b = n.tile_values * slots * bits
                need += b
                parts.append(
                    f"{n.tensor}: {n.tile_values} values x {slots} slot(s) x {bits} b = {b} b"
                )
            if need > size:
                raise mapping.error(
                    f"tiles kept in memory '{mem_name}' need {need} bits per instance but it has "
                    f"{size} ({arch.source}: memories[{arch.memory_index(mem_name)}].size_bits) "
                    f"({'; '.join(parts)})",
                    ns[-1].path,
                    expected=f"at most {size} bits: smaller tiles below this node, or a larger memory",
                )


def _on_path(n: NodePlan, leaf: LeafPlan, nodes) -> bool:
    """Is node n an ancestor (same tensor chain) of one of the leaf's operand nodes?"""
    for o in leaf.operands:
        i = o.node
        while i is not None:
            if i == n.index:
                return True
            i = nodes[i].parent
    return False


def check_backing_stores(workload, mapping, nodes) -> None:
    """A workload's input (no Einsum writes it) or final output (no Einsum reads it) must be
    whole in its backing store: DESIGN's backing store starts full (inputs) or receives the
    final values (outputs), so a backing store whose tile changes under a loop above it would
    replay a tensor that never exists whole anywhere (an input's other tiles from nowhere, an
    output's earlier tiles overwritten, none written out). A tensor one Einsum writes and
    another reads may be backed tile by tile on chip (fused Einsums)."""
    written = {e.output.tensor for e in workload.einsums}
    read = {a.tensor for e in workload.einsums for a in e.inputs}
    for n in nodes:
        if not n.is_backing or (n.tensor in written and n.tensor in read):
            continue
        tiles = prod(b for b, indexes in zip(n.counted, n.relevant, strict=True) if indexes)
        if tiles > 1:
            role = "input" if n.tensor not in written else "output"
            raise mapping.error(
                f"the workload's {role} {n.tensor} is first kept in memory '{n.memory}', below "
                f"loops that index it: that node holds one of its {tiles:,} tiles at a time, "
                f"so the whole {n.tensor} is never stored anywhere",
                n.path,
                expected=f"{n.tensor} kept whole above those loops (in DRAM, usually, "
                "as the loop tree's first storage node)",
            )
