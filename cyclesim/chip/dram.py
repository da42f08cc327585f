"""The shared DRAM's timing at chip level: where each tensor lies in the off-chip memory (packed
in workload order at row boundaries, row-major, as a memory's `dram:` places them) and the
byte runs of a transfer's box, for the DRAM timer the core replay uses (dram/timer.py)."""

from __future__ import annotations

from cyclesim.chip.arch import Chip
from cyclesim.errors import SpecError
from cyclesim.schedule.addresses import Placement, box_runs, place_tensors
from cyclesim.spec.workload import Workload


def tensor_shapes(workload: Workload) -> list[tuple[str, tuple[int, ...], int]]:
    """(tensor, size per dimension over every Einsum that accesses it, bytes per value)."""
    out = []
    for t in workload.tensors:
        sizes: list[int] = []
        for e in workload.einsums:
            a = e.access(t.name)
            if a is None:
                continue
            ext = [p.extent(e.rank_sizes) for p in a.projection]
            sizes = [max(x, y) for x, y in zip(sizes, ext, strict=True)] if sizes else ext
        out.append((t.name, tuple(sizes), -(-max(t.bits_per_value, t.partial_sum_bits) // 8)))
    return out


def dram_placements(chip: Chip, workload: Workload) -> dict[str, Placement]:
    """Every tensor's place in the off-chip memory; `dram.placements` overrides a base or an
    order (dimension names as the projection writes them)."""
    model = chip.offchip.dram
    shapes = tensor_shapes(workload)
    overrides = {}
    loc = ("offchip", "dram", "placements")
    for tensor, base, order in model.placements:
        if not any(s[0] == tensor for s in shapes):
            raise chip.error("placement of a tensor the workload does not have", loc + (tensor,),
                             found=tensor)  # fmt: skip
        index = None
        if order is not None:
            e = next(e for e in workload.einsums if e.access(tensor) is not None)
            names = ["+".join(p.ranks()) for p in e.access(tensor).projection]
            if sorted(order) != sorted(names):
                raise chip.error(f"placement order of {tensor} must list its dimensions {names} "
                                 "once each", loc + (tensor, "order"), found=list(order))  # fmt: skip
            index = tuple(names.index(o) for o in order)
        overrides[tensor] = (base, index)
    try:
        return place_tensors(shapes, model.config.row_bytes, overrides)
    except ValueError as e:
        raise SpecError(str(e), file=chip.source, field="offchip.dram.placements") from None


def runs(placement: Placement, box: tuple[tuple[int, int], ...]) -> list[tuple[int, int, int, int]]:
    """A box's bytes as the timer's strided runs (address, bytes, stride, count)."""
    return box_runs(placement, box)
