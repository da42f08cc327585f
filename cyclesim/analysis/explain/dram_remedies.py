"""What could remove a DRAM cause (row_miss, bank_conflict, refresh, turnaround, or bandwidth
through a DRAM-modelled memory): another address mapping, another layout of the tensor, another
tile order. `explain` replays each (explain/replays.py calls `dram_remedies`).
"""

from __future__ import annotations

from dataclasses import replace

from cyclesim.analysis.explain.arch_changes import with_memory
from cyclesim.schedule.addresses import memory_placements
from cyclesim.spec import Architecture, Mapping, Storage, Temporal, Workload
from cyclesim.spec.arch_types import DramModel
from cyclesim.vocabulary import DRAM_CAUSES, Cause

# address mappings worth a replay: DRAMsim3's default (a row, then the next bank group and bank),
# channels interleaved right above the columns (consecutive rows alternate channels), and banks
# interleaved before bank groups
MAPPINGS = ("rochrababgco", "rorabgbachco", "rochrabgbaco")


def _dram_memory(arch: Architecture, cause) -> str | None:
    """The DRAM-modelled memory a cause's port belongs to, if any."""
    name = cause.port_memory
    if name is None:
        return None
    mem = next((m for m in arch.memories if m.name == name), None)
    return name if mem is not None and mem.dram is not None else None


def _with_dram(arch: Architecture, memory: str, **changes) -> Architecture:
    """A copy of arch with fields of `memory`'s DRAM model changed."""
    return with_memory(arch, memory, dram=replace(arch.memory(memory).dram, **changes))


def dram_remedies(
    cause, arch: Architecture, workload: Workload, mapping: Mapping
) -> list[tuple[str, Architecture, Mapping]]:
    """(change in words, architecture, mapping) to replay for one ranked cause (analysis.explain.Cause)."""
    memory = _dram_memory(arch, cause)
    if memory is None or cause.cause not in DRAM_CAUSES + (Cause.BANDWIDTH, Cause.CONTENTION):
        return []
    model: DramModel = arch.memory(memory).dram
    config = model.config
    out: list[tuple[str, Architecture, Mapping]] = []
    for text in MAPPINGS:
        if text != config.address_mapping:
            new = config.with_changes(address_mapping=text)
            out.append(
                (
                    f"address mapping {text} for {memory} (was {config.address_mapping})",
                    _with_dram(arch, memory, config=new),
                    mapping,
                )
            )
    tensor = cause.tensor
    placed = memory_placements(arch, workload, arch.memory(memory))
    if tensor not in placed:
        return out
    here = placed[tensor]
    others = tuple(p for p in model.placements if p[0] != tensor)
    names = [
        "+".join(p.ranks())
        for p in next(
            e.access(tensor) for e in workload.einsums if e.access(tensor) is not None
        ).projection
    ]
    if len(names) > 1:
        order = [names[d] for d in here.order]
        flipped = tuple(reversed(order))
        out.append(
            (
                f"lay {tensor} out in {memory} as [{', '.join(flipped)}] (was [{', '.join(order)}])",
                _with_dram(arch, memory, placements=others + ((tensor, here.base, flipped),)),
                mapping,
            )
        )
    if cause.cause == "bank_conflict":
        shift = config.row_bytes * config.channels  # the next bank under the default mappings
        keep = tuple(names[d] for d in here.order)
        out.append(
            (
                f"move {tensor} {shift} B further in {memory} (its rows to another bank)",
                _with_dram(arch, memory, placements=others + ((tensor, here.base + shift, keep),)),
                mapping,
            )
        )
    swapped = _swap_tile_order(mapping, cause.memory, tensor)
    if swapped is not None:
        text, new_mapping = swapped
        out.append((text, arch, new_mapping))
    return out


def _swap_tile_order(mapping: Mapping, memory: str | None, tensor: str | None):
    """Swap the two innermost temporal loops (bound > 1) above the storage node of tensor at
    memory, in the top-level list of the loop tree: (change in words, mapping) or None."""
    tree = list(mapping.loop_tree)
    at = next(
        (
            i
            for i, n in enumerate(tree)
            if isinstance(n, Storage) and n.memory == memory and tensor in n.tensors
        ),
        None,
    )
    if at is None:
        return None
    loops = [i for i in range(at) if isinstance(tree[i], Temporal) and tree[i].bound > 1]
    if len(loops) < 2:
        return None
    a, b = loops[-2], loops[-1]
    if any(isinstance(tree[i], Storage) for i in range(a + 1, b)):
        return None  # a storage node between them: swapping would change what it keeps
    tree[a], tree[b] = tree[b], tree[a]
    text = (
        f"tile order: loop {tree[a].rank} ({tree[a].bound}) outside {tree[b].rank} "
        f"({tree[b].bound}) above {tensor}@{memory}"
    )
    return text, replace(mapping, loop_tree=tuple(tree))
