"""What would shorten a chip run: remedies drawn from its largest causes, each replayed.

From the causes summed over every core: a wider link or bus (twice the width) where `link` or
`contention` cycles name it; a wider DRAM port where `dram_port` or `bandwidth` cycles do;
another route (every other link or bus) for the tensor whose transfers wait on a contended
one; unicast instead of multicast where a multicast waits for another core's slot
(`buffer_full` on a slot), multicast where one tensor part goes to several cores one by one;
a tile twice as large for each tiled layer. Each remedy is a changed chip or mapping,
replayed in full: the cycles are the replay's, never an estimate.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from cyclesim.chip.arch import Chip
from cyclesim.chip.engine import run_chip
from cyclesim.chip.layer_mapping import with_tile
from cyclesim.chip.mapping_types import ChipMapping
from cyclesim.chip.plan import build_chip_plan
from cyclesim.chip.result import ChipResult
from cyclesim.chip.routes import route_tree
from cyclesim.errors import CyclesimError


@dataclass(frozen=True)
class Remedy:
    what: str  # in words: "l01[c0>c1] (link) twice as wide (32 -> 64 b/cycle)"
    why: str  # the cause cycles it answers
    cycles: int | None  # the replay's; None when the changed inputs are refused
    note: str = ""  # why it could not be replayed


def candidates(res: ChipResult) -> list[tuple[str, str, Chip, ChipMapping]]:
    plan = res.run.plan
    chip, mapping = plan.chip, plan.mapping
    by_where: Counter = Counter()
    for r in res.rows:
        if r.phase != "step":
            by_where[(r.cause, r.where, r.tensor)] += r.cycles
    out = []
    media = {m.name: m for m in chip.media}
    widened: set[str] = set()
    rerouted: set[str] = set()
    for (cause, where, tensor), cycles in by_where.most_common():
        why = f"{cycles:,} cycles of {cause} on {where}"
        if cause in ("link", "contention") and where in media and where not in widened:
            widened.add(where)
            m = media[where]
            wide = replace(m, width_bits=2 * m.width_bits)
            new = replace(chip, media=tuple(wide if x.name == where else x for x in chip.media))
            out.append((f"{where} ({m.kind.value}) twice as wide ({m.width_bits} -> "
                        f"{2 * m.width_bits} b/cycle)", why, new, mapping))  # fmt: skip
        if (
            cause in ("dram_port", "bandwidth")
            and where
            and where.startswith(chip.offchip.name + ".")
        ):
            if "dram" not in widened:
                widened.add("dram")
                ports = tuple(replace(p, width_bits=2 * p.width_bits) for p in chip.offchip.ports)
                new = replace(chip, offchip=replace(chip.offchip, ports=ports))
                widths = "/".join(str(p.width_bits) for p in chip.offchip.ports)
                out.append((f"DRAM port twice as wide ({widths} -> "
                            f"{'/'.join(str(p.width_bits) for p in ports)} b/cycle)", why, new,
                            mapping))  # fmt: skip
        if cause == "contention" and where in media and tensor and tensor not in rerouted:
            rerouted.add(tensor)
            others = tuple(m.name for m in chip.media if m.name != where)
            p = mapping.placement(tensor)
            ok = all(route_tree(chip, t.source, t.targets, others) is not None
                     for t in plan.transfers if t.tensor == tensor)  # fmt: skip
            if ok:
                m2 = _with_placement(mapping, replace(p, route=others))
                out.append((f"{tensor} routed around {where}", why, chip, m2))
        if cause == "buffer_full" and where and where.startswith("slot of") and tensor:
            p = mapping.placement(tensor)
            if p.multicast and tensor not in rerouted:
                rerouted.add(tensor)
                out.append((f"{tensor} sent to each core on its own (no multicast)", why, chip,
                            _with_placement(mapping, replace(p, multicast=False))))  # fmt: skip
    for p in mapping.tensors:
        if not p.multicast:
            parts = Counter(
                (t.tensor, t.box, t.source) for t in plan.transfers if t.tensor == p.tensor
            )
            if parts and max(parts.values()) > 1:
                out.append((f"{p.tensor} multicast", "the same part sent to several cores one by one",
                            chip, _with_placement(mapping, replace(p, multicast=True))))  # fmt: skip
    for lm in mapping.layers:
        for rank, size in lm.tile:
            try:
                m2 = with_tile(mapping, lm.einsum, rank, 2 * size, plan.workload, chip)
            except CyclesimError:
                continue
            out.append((f"{lm.einsum}: tile of {2 * size} along {rank} (was {size})",
                        f"{sum(1 for s in plan.steps if s.layer == lm.einsum)} steps of "
                        f"{lm.einsum}", chip, m2))  # fmt: skip
    return out


def _with_placement(mapping: ChipMapping, placement) -> ChipMapping:
    tensors = tuple(placement if t.tensor == placement.tensor else t for t in mapping.tensors)
    return replace(mapping, tensors=tensors)


def explain(res: ChipResult, limit: int = 8) -> list[Remedy]:
    """The remedies, each replayed, fewest cycles first."""
    out = []
    workload = res.run.plan.workload
    for what, why, chip, mapping in candidates(res)[:limit]:
        try:
            run = run_chip(
                build_chip_plan(chip, workload, mapping), fast_forward=res.run.fast_forward
            )
        except CyclesimError as e:  # e.g. a larger tile that no longer fits its core
            out.append(Remedy(what, why, None, str(e).split(": ", 1)[-1]))
            continue
        out.append(Remedy(what, why, run.cycles))
    return sorted(out, key=lambda r: (r.cycles is None, r.cycles or 0))


def explain_section(res: ChipResult, remedies: list[Remedy]) -> str:
    lines = ["", f"what would help (each replayed; now {res.cycles:,} cycles):"]
    if not remedies:
        lines.append("  nothing to try: no link, bus or DRAM cause and no tile to grow")
    for r in remedies:
        if r.cycles is None:
            lines.append(f"  {'refused':>12}            {r.what}: {r.note}")
            continue
        saved = res.cycles - r.cycles
        lines.append(f"  {r.cycles:>12,} {-saved:>+9,}  {r.what}  [{r.why}]")
    return "\n".join(lines)
