"""Capacity: the slots of every tile a memory instance keeps must fit its size, before any run."""

from __future__ import annotations

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
