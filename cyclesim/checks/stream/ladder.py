"""From Stream's arithmetic to the hardware, one mechanism per step: Stream's slots placed as
barriers (iteration k released at k x interval) with, rung by rung, one of Stream's assumptions
replaced by what the replay finds. Each rung's total minus the previous one is that one mechanism.

0. Stream's slot terms: every member at the cycles Stream charges its slot (a node's active
   latency, a transfer's charged cycles, a port's bits / rate), Stream's fill added at the end.
   Equals Stream's total wherever its slots are tight and its overlap leaves every resource free.
1. transfers at full width: each transfer its moved bits over its route's busiest link at full
   width (a halo is no longer charged at its share of the route), still amortised.
2. amortised fetches in full: a transfer one firing of which serves r iterations is moved in full
   in every r-th iteration (the first in iteration 0), so the fill keeps only drain and warm-up.
3. real tile times: each node's step at its replay on each chip core (drain inside every step).
4. real interconnect: the chip's transfers (as_scheduled): DRAM hops at the port's width, the
   parts Stream bundles queueing on the bus, every halo part moved from its producer core.
5. dependency-driven: no slot barriers, the chip replay itself.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from cyclesim.checks.stream.arithmetic import transfer_mechanism
from cyclesim.checks.stream.replay import AsScheduled, Members, place, step_cycles
from cyclesim.checks.stream.rows import Row
from cyclesim.checks.stream.schedule import StreamGroup, StreamRun, StreamTransfer

SECTION = "ladder"


class Rung(enum.Enum):
    """One step from Stream's arithmetic to the dependency-driven replay."""

    STREAM_TERMS = "Stream's slot terms + its fill"
    FULL_WIDTH = "transfers at full link width"
    AMORTISED_IN_FULL = "amortised fetches moved in full"
    REAL_TILES = "tiles at their replayed time"
    REAL_INTERCONNECT = "the chip's transfers (as scheduled)"
    DEPENDENCY = "dependency-driven (no slot barriers)"


@dataclass(frozen=True, slots=True)
class Ladder:
    """Each rung's placement (None for the dependency-driven rung) and total."""

    placements: dict[Rung, AsScheduled | None]
    totals: dict[Rung, float]


def _full(t: StreamTransfer) -> float:
    """One firing of t: its moved bits over its route's busiest link at full width."""
    return float(t.link_cycles())


def _nodes_stream(g: StreamGroup, slot: int) -> Members:
    return {
        f"compute {n.name}": (tuple(f"core {c.core}" for c in n.cores), n.active_cycles)
        for n in g.nodes
        if n.slot == slot
    }


def _ports(g: StreamGroup, slot: int, k: int, in_full: bool) -> Members:
    """Stream's port demand in this slot; with in_full, an amortised transfer through the port's
    core counts its whole moved bits in a firing iteration and none in the others."""
    out: Members = {}
    for p in g.ports:
        if p.slot != slot:
            continue
        bits = p.bits
        if in_full:
            core = int(p.port.split(".")[0]) if p.port.split(".")[0].isdigit() else None
            for t in g.transfers:
                if t.slot == slot and t.reuse_factor > 1 and core in t.sources + t.targets:
                    share = t.moved_bits / t.reuse_factor
                    bits += t.moved_bits - share if _fires(t, k) else -share
        if bits > 0:
            out[f"port {p.port}"] = ((f"port {p.port}",), bits / p.rate)
    return out


def _fires(t: StreamTransfer, k: int) -> bool:
    return k % max(round(t.reuse_factor), 1) == 0


def _transfers(g: StreamGroup, slot: int, k: int, rung: Rung) -> Members:
    out: Members = {}
    for t in g.transfers:
        if t.slot != slot or not t.links:
            continue
        if rung is Rung.STREAM_TERMS:
            cycles = t.charged_cycles
        elif rung is Rung.FULL_WIDTH:
            cycles = _full(t) / t.reuse_factor
        else:
            cycles = _full(t) if _fires(t, k) else 0.0
        if cycles:
            out[f"transfer {t.name}"] = (tuple(x.link for x in t.links), cycles)
    return out


def _tail(rung: Rung):
    """What a rung adds after a group's last iteration: Stream's fill, its drain and warm-up
    (the first fetches are now inside iteration 0), or nothing (tiles carry their drain)."""
    if rung in (Rung.STREAM_TERMS, Rung.FULL_WIDTH):
        return lambda g: g.fill
    if rung is Rung.AMORTISED_IN_FULL:
        return lambda g: g.fill_drain + g.fill_warmup
    return None


def build(run: StreamRun, result: Any | None, scheduled: AsScheduled | None) -> Ladder:
    """Every rung's placement; the chip rungs only when the case was replayed on the chip."""
    placements: dict[Rung, AsScheduled | None] = {}
    for rung in (Rung.STREAM_TERMS, Rung.FULL_WIDTH, Rung.AMORTISED_IN_FULL):

        def members(g, slot, k, rung=rung):
            return {
                **_nodes_stream(g, slot),
                **_transfers(g, slot, k, rung),
                **_ports(g, slot, k, rung is Rung.AMORTISED_IN_FULL),
            }

        placements[rung] = place(run, members, _tail(rung))
    if result is not None and scheduled is not None:
        steps = step_cycles(result.run)

        def real_tiles(g, slot, k):
            nodes: Members = {}
            for n in g.nodes:
                if n.slot == slot:
                    for core, cycles in steps.get((n.name, k), {}).items():
                        nodes[f"compute {n.name} on {core}"] = ((core,), cycles)
            return {
                **nodes,
                **_transfers(g, slot, k, Rung.AMORTISED_IN_FULL),
                **_ports(g, slot, k, True),
            }

        placements[Rung.REAL_TILES] = place(run, real_tiles)
        placements[Rung.REAL_INTERCONNECT] = scheduled
    totals = {rung: p.total for rung, p in placements.items() if p is not None}
    if result is not None and scheduled is not None:
        placements[Rung.DEPENDENCY] = None
        totals[Rung.DEPENDENCY] = result.cycles
    return Ladder(placements, totals)


def ladder_rows(run: StreamRun, ladder: Ladder, nodes: tuple = (), waits: str = "") -> list[Row]:
    """One row per rung: its total next to Stream's, the step from the previous rung named."""
    rows = []
    previous: float = run.total_cycles
    rungs = list(ladder.totals)
    for i, (rung, total) in enumerate(ladder.totals.items()):
        step = total - previous
        before = rungs[i - 1] if i else None
        why = _why(run, ladder, rung, before, nodes, waits) if round(step) else ""
        if rung is Rung.STREAM_TERMS:
            mechanism = "" if round(step) == 0 else f"{step:+,.0f} against Stream's total: {why}"
        else:
            mechanism = "" if round(total) == round(run.total_cycles) else (
                f"{step:+,.0f} from rung {i - 1}" + (f": {why}" if why else " (this rung changes nothing here)")
            )  # fmt: skip
        rows.append(
            Row(SECTION, None, f"{i}. {rung.value}", run.total_cycles, round(total), mechanism)
        )
        previous = total
    return rows


def _first_sentence(explanations: tuple[str, ...]) -> str:
    """The ZigZag check's first latency sentence (buffer and drain notes last, as node rows do)."""
    ranked = sorted(explanations, key=lambda text: text.startswith(("buffers:", "drain:")))
    return ranked[0].split(";")[0]


def _first_iteration(p: AsScheduled, group: int) -> dict[int, float]:
    return {s.slot: s.end - s.start for s in p.slots if s.group == group and s.iteration == 0}


def _waits(p: AsScheduled) -> str:
    """Per resource an iteration waited for (held by an earlier one): the largest push of an
    iteration's slot behind the earlier slot holding it."""
    per: dict[str, Any] = {}
    for s in p.slots:
        if s.waited_for and s.iteration > 0 and s.waited > per.get(s.waited_for, (0,))[0]:
            per[s.waited_for] = (s.waited, s)
    ranked = sorted(per.items(), key=lambda x: -x[1][0])[:2]
    return ", ".join(
        f"{r} (iteration {s.iteration}'s slot {s.slot} up to {c:,.0f} cycles behind "
        f"iteration {s.behind[0]}'s slot {s.behind[1]})"
        for r, (c, s) in ranked
    )


def _overlap_bound(run: StreamRun, p: AsScheduled) -> str:
    """Why Stream's overlap let the iterations collide on the resources they waited for."""
    texts = []
    for g in run.groups:
        resources = {s.waited_for for s in p.slots if s.group == g.index and s.waited}
        for r in sorted(resources):
            idle = _stream_idle(g, r)
            if idle is not None and g.overlap > idle:
                texts.append(
                    f"Stream's overlap ({g.overlap:,}) exceeds {r}'s idle time per iteration "
                    f"({idle:,.0f})"
                )
            else:
                texts.append(
                    f"Stream bounds {r} only by its busy time per iteration"
                    + (f" (idle {idle:,.0f} >= overlap {g.overlap:,})" if idle is not None else "")
                    + ", not by where in the iteration its slots fall"
                )
    return "; ".join(texts)


def _stream_idle(g: StreamGroup, resource: str) -> float | None:
    """Stream's idle time per iteration of a rung-0 resource ('core 0', a link's name)."""
    if resource.startswith("core "):
        key = f"Core({resource.removeprefix('core ')},"
        return next((v for k, v in g.idle.items() if k.startswith(key)), None)
    return g.idle.get(resource)


def _why(
    run: StreamRun, ladder: Ladder, rung: Rung, previous: Rung | None, nodes: tuple, waits: str
) -> str:
    """Why this rung's latency differs from the one before, in words, from the rungs'
    placements.

    Over 80 lines: one branch per rung of the ladder, in the ladder's order; each reads its
    rung's placement against the one before.
    """
    p = ladder.placements.get(rung)
    parts: list[str] = []
    if rung is Rung.STREAM_TERMS:
        for g in run.groups:
            slack = sum(g.slot_latencies.values()) - sum(_first_iteration(p, g.index).values())
            if round(slack):
                parts.append(
                    f"group {g.index}'s slots are {slack:,.0f} cycles longer in Stream than their "
                    "largest terms (its slot variable is only bounded below; the solver left slack)"
                )
        if _waits(p):
            parts.append(
                "iterations released at Stream's interval wait for resources an earlier one "
                f"still holds: {_waits(p)}; {_overlap_bound(run, p)}"
            )
        if not parts:
            parts.append(
                "rounding: Stream rounds its iteration latency, overlap and fill separately"
            )
    elif rung is Rung.FULL_WIDTH:
        for g in run.groups:
            for t in g.transfers:
                full = _full(t) / t.reuse_factor
                if t.links and full != t.charged_cycles:
                    parts.append(
                        transfer_mechanism(t)
                        or f"{t.name}: Stream charges {t.charged_cycles:,.2f} cycles, its moved "
                        f"bits take {full:,.2f} at full width in whole cycles"
                    )
    elif rung is Rung.AMORTISED_IN_FULL:
        for g in run.groups:
            resident = g.fill - g.fill_drain - g.fill_warmup
            if round(resident):
                parts.append(
                    f"group {g.index}'s fill keeps only its drain and warm-up: its resident part "
                    f"({resident:,.0f}, the first fetches) is placed in iteration 0 instead"
                )
            for t in g.transfers:
                if t.reuse_factor > 1:
                    parts.append(
                        f"{t.name} (one firing serves {t.reuse_factor:g} iterations) moves "
                        f"{_full(t):,.0f} cycles in full every {t.reuse_factor:g}th iteration "
                        f"where Stream charges 1/{t.reuse_factor:g} per slot and its first fetch "
                        "in the fill"
                    )
    elif rung is Rung.REAL_TILES:
        explained = {(n.group, n.node, n.core): n for n in nodes}
        stream_cost = {
            (g.index, n.name, c.core): c.latency_cycles
            for g in run.groups
            for n in g.nodes
            for c in n.cores
        }
        changed = []
        for (group, _, member), cycles in p.member_cycles.items():
            node, _, core = member.removeprefix("compute ").partition(" on ")
            key = (group, node, int(core.lstrip("c") or -1)) if core else None
            if key in stream_cost and round(cycles) != round(stream_cost[key]):
                changed.append((cycles - stream_cost[key], key, cycles))
        for _, key, cycles in sorted(changed, key=lambda c: -abs(c[0]))[:3]:
            check = explained.get(key)
            why = check.explanations if check is not None else ()
            parts.append(
                f"{key[1]} on core {key[2]} replays in {cycles:,.0f} where Stream charges "
                f"{stream_cost[key]:,.0f}"
                + (
                    f" ({_first_sentence(why)})"
                    if why
                    else " (its tile alone is not replayed by the per-node check: see its node row)"
                )
            )
        parts.append(
            "every step carries its own drain, so the fill's drain and warm-up are not added"
        )
    elif rung is Rung.REAL_INTERCONNECT:
        before = ladder.placements[Rung.REAL_TILES]
        deltas = []
        for s in p.slots:
            if s.iteration == 0:
                old = _first_iteration(before, s.group).get(s.slot, 0)
                deltas.append((s.end - s.start - old, s))
        for delta, s in sorted(deltas, key=lambda d: -abs(d[0]))[:3]:
            if delta:
                parts.append(f"slot {s.slot} ({s.binding}) {delta:+,.0f} in iteration 0")
        parts.append(
            "the chip's transfers: a DRAM hop holds the bus at the DRAM port's width, parts "
            "Stream bundles queue on the bus, every halo part moves from its producer core, weights "
            "come once per core and layer"
        )
    if previous is not None and rung is not Rung.DEPENDENCY:
        before, now = _waits(ladder.placements[previous]), _waits(p)
        if before != now:
            parts.append(
                f"waits for an earlier iteration: {before or 'none'} at rung "
                f"{list(ladder.totals).index(previous)}, {now or 'none'} here"
            )
    if rung is Rung.DEPENDENCY:
        parts.append(
            "no slot barriers: a step starts when its inputs have landed and its core is free; "
            f"the largest waits: {waits or 'none'}"
        )
    return "; ".join(parts)
