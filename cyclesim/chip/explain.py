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


def _doubled(x):
    """A link, bus or port twice as wide, its burst at least the new width (as `explain` widens
    a port: a burst no larger than the width would take one cycle either way)."""
    return replace(x, width_bits=2 * x.width_bits, burst_bits=max(x.burst_bits, 2 * x.width_bits))


def _change(old, new) -> str:
    burst = (
        f", burst {old.burst_bits} -> {new.burst_bits} b"
        if new.burst_bits != old.burst_bits
        else ""
    )
    return f"{old.width_bits} -> {new.width_bits} b/cycle{burst}"


def _wider_medium(chip: Chip, name: str) -> Chip:
    return replace(chip, media=tuple(_doubled(m) if m.name == name else m for m in chip.media))


def _wider_dram_ports(chip: Chip) -> Chip:
    ports = tuple(_doubled(p) for p in chip.offchip.ports)
    return replace(chip, offchip=replace(chip.offchip, ports=ports))


def _joint_widening(plan, widened: dict) -> list[str]:
    """What to widen together: every link, bus and the DRAM port proposed alone, and the other
    side of each DRAM hop crossing one of them when that side would then bind its bursts (as
    single-core `explain` widens a port's far side too): "" names the DRAM port."""
    joint = list(widened)
    for hop in plan.hops:
        if hop.dram_port is None:
            continue
        name, port = hop.medium.name, hop.dram_port
        burst = hop.burst_bits
        medium = -(-burst // hop.medium.width_bits)
        dram = -(-burst // port.width_bits)
        if "" in widened and name not in joint and medium >= -(-burst // (2 * port.width_bits)):
            joint.append(name)
        if name in widened and "" not in joint and dram >= -(-burst // (2 * hop.medium.width_bits)):
            joint.append("")
    return joint


@dataclass(frozen=True)
class Candidate:
    """A remedy to replay: the changed chip and mapping, in words (what, and the cause cycles it
    answers, summed over every core and tensor as the report's rows); for widenings made
    together, the `what` of each widening proposed alone among them."""

    what: str
    why: str
    chip: Chip
    mapping: ChipMapping
    parts: tuple[str, ...] = ()


def candidates(res: ChipResult) -> list[Candidate]:
    """The remedies to replay, from the largest causes down."""
    plan = res.run.plan
    chip, mapping = plan.chip, plan.mapping
    by_where: Counter = Counter()
    on_medium: Counter = Counter()  # link and contention cycles per link or bus
    on_dram = 0  # dram_port and bandwidth cycles on the off-chip memory's ports
    dram_prefix = chip.offchip.name + "."
    media = {m.name: m for m in chip.media}
    for r in res.rows:
        if r.phase != "step":
            by_where[(r.cause, r.where, r.tensor)] += r.cycles
            if r.cause in ("link", "contention") and r.where in media:
                on_medium[r.where] += r.cycles
            if r.cause in ("dram_port", "bandwidth") and (r.where or "").startswith(dram_prefix):
                on_dram += r.cycles
    out = []
    widened: dict[str, tuple[str, str]] = {}  # medium name or "" (the DRAM port) -> (what, why)
    rerouted: set[str] = set()
    for (cause, where, tensor), cycles in by_where.most_common():
        why = f"{cycles:,} cycles of {cause} on {where}"
        if cause in ("link", "contention") and where in media and where not in widened:
            m = media[where]
            what = f"{where} ({m.kind.value}) twice as wide ({_change(m, _doubled(m))})"
            widened[where] = (what, f"{on_medium[where]:,} cycles of link and contention on {where}")  # fmt: skip
            out.append(Candidate(what, widened[where][1], _wider_medium(chip, where), mapping))
        if cause in ("dram_port", "bandwidth") and (where or "").startswith(dram_prefix):
            if "" not in widened:
                wide = _wider_dram_ports(chip)
                changes = "; ".join(
                    f"{p.name} {_change(p, _doubled(p))}" for p in chip.offchip.ports
                )
                what = f"DRAM port twice as wide ({changes})"
                widened[""] = (what, f"{on_dram:,} cycles of dram_port and bandwidth on {chip.offchip.name}")  # fmt: skip
                out.append(Candidate(what, widened[""][1], wide, mapping))
        if cause == "contention" and where in media and tensor and tensor not in rerouted:
            rerouted.add(tensor)
            others = tuple(m.name for m in chip.media if m.name != where)
            p = mapping.placement(tensor)
            ok = all(route_tree(chip, t.source, t.targets, others) is not None
                     for t in plan.transfers if t.tensor == tensor)  # fmt: skip
            if ok:
                m2 = _with_placement(mapping, replace(p, route=others))
                out.append(Candidate(f"{tensor} routed around {where}", why, chip, m2))
        if cause == "buffer_full" and where and where.startswith("slot of") and tensor:
            p = mapping.placement(tensor)
            if p.multicast and tensor not in rerouted:
                rerouted.add(tensor)
                out.append(Candidate(f"{tensor} sent to each core on its own (no multicast)", why, chip,
                            _with_placement(mapping, replace(p, multicast=False))))  # fmt: skip
    joint = _joint_widening(plan, widened)
    if len(joint) > 1:  # each alone may gain nothing while the other side binds: all at once
        both = chip
        for name in joint:
            both = _wider_dram_ports(both) if name == "" else _wider_medium(both, name)
        names = [name or "the DRAM port" for name in joint]
        why = "; ".join(widened[name][1] for name in joint if name in widened)
        parts = tuple(widened[name][0] for name in joint if name in widened)
        out.insert(len(widened), Candidate(f"{', '.join(names[:-1])} and {names[-1]} twice as wide, together",
                                           why, both, mapping, parts))  # fmt: skip
    for p in mapping.tensors:
        if not p.multicast:
            parts = Counter(
                (t.tensor, t.box, t.source) for t in plan.transfers if t.tensor == p.tensor
            )
            if parts and max(parts.values()) > 1:
                out.append(Candidate(f"{p.tensor} multicast", "the same part sent to several cores one by one",
                            chip, _with_placement(mapping, replace(p, multicast=True))))  # fmt: skip
    for lm in mapping.layers:
        for rank, size in lm.tile:
            try:
                m2 = with_tile(mapping, lm.einsum, rank, 2 * size, plan.workload, chip)
            except CyclesimError:
                continue
            steps = sum(1 for s in plan.steps if s.layer == lm.einsum)
            out.append(Candidate(f"{lm.einsum}: tile of {2 * size} along {rank} (was {size})",
                        f"{steps:,} step{'s' if steps != 1 else ''} of {lm.einsum}", chip, m2))  # fmt: skip
    return out


def _with_placement(mapping: ChipMapping, placement) -> ChipMapping:
    tensors = tuple(placement if t.tensor == placement.tensor else t for t in mapping.tensors)
    return replace(mapping, tensors=tensors)


def explain(res: ChipResult, limit: int = 8) -> list[Remedy]:
    """The remedies, each replayed, fewest cycles first."""
    out = []
    workload = res.run.plan.workload
    chosen = candidates(res)[:limit]
    for c in chosen:
        try:
            run = run_chip(
                build_chip_plan(c.chip, workload, c.mapping), fast_forward=res.run.fast_forward
            )
        except CyclesimError as e:  # e.g. a larger tile that no longer fits its core
            out.append(Remedy(c.what, c.why, None, str(e).split(": ", 1)[-1]))
            continue
        out.append(Remedy(c.what, c.why, run.cycles))
    # widenings made together are worth listing only where they beat each of them alone
    cycles = {r.what: r.cycles for r in out}
    redundant = {c.what for c in chosen if c.parts and cycles[c.what] is not None
                 and any(cycles.get(p) is not None and cycles[p] <= cycles[c.what] for p in c.parts)}  # fmt: skip
    return sorted((r for r in out if r.what not in redundant),
                  key=lambda r: (r.cycles is None, r.cycles or 0))  # fmt: skip


def explain_section(res: ChipResult, remedies: list[Remedy]) -> str:
    """The remedies that shorten the run, fewest cycles first, then those refused; how many
    were replayed and saved nothing (or cost cycles): --json lists every one."""
    lines = ["", f"what would help (each replayed; now {res.cycles:,} cycles):"]
    if not remedies:
        lines.append("  nothing to try: no link, bus or DRAM cause and no tile to grow")
    helped = [r for r in remedies if r.cycles is not None and r.cycles < res.cycles]
    for r in helped:
        saved = res.cycles - r.cycles
        lines.append(f"  {r.cycles:>12,} {-saved:>+9,}  {r.what}  [{r.why}]")
    for r in remedies:
        if r.cycles is None:
            lines.append(f"  {'refused':>12}            {r.what}: {r.note}")
    if remedies and not helped:
        lines.append("  none of the changes tried shortens the run")
    others = sum(1 for r in remedies if r.cycles is not None and r.cycles >= res.cycles)
    if others:
        lines.append(f"  ({others} other change{'s' if others > 1 else ''} replayed saved "
                     "nothing or cost cycles: --json lists them)")  # fmt: skip
    return "\n".join(lines)
