"""Stream's schedule replayed two ways on the chip import (cyclesim.chip), next to Stream's numbers.

* **Dependency-driven** is `replay_chip` itself: each step starts when its inputs are on its core
  and its core is free; transfers contend for links, buses and the DRAM port, burst by burst.
* **As scheduled** keeps Stream's slots as barriers and releases iteration k at k x interval; a
  slot lasts as long as its slowest member, each member timed by the replay: a node by its step's
  single-core replay on each of its cores (from the chip run), a transfer by the chip's transfers
  of that tensor in that iteration, contention-free, summed per medium and DRAM port (the parts a
  Stream transfer bundles share its bus). A slot also waits for its resources to be released by
  the previous iteration. Nothing is added afterwards: first fetches, warm-up and drains are
  inside the replayed slots.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from math import ceil
from typing import Any

from cyclesim.checks.stream.chip_cores import core_name
from cyclesim.checks.stream.schedule import StreamGroup, StreamRun


@dataclass(frozen=True, slots=True)
class SlotReplay:
    """One slot of one iteration, as scheduled: when it ran and what bound it."""

    group: int
    iteration: int
    slot: int
    start: int
    end: int
    binding: str  # 'compute Conv2 on c2', 'transfer input on bus12', ...
    waited_for: str  # '' or the resource an earlier iteration still held
    waited: float = 0  # cycles it started after its previous slot (or release) for that resource
    behind: tuple[int, int] | None = None  # (iteration, slot) that held waited_for last


@dataclass(frozen=True, slots=True)
class AsScheduled:
    """The as-scheduled replay: per group its span and slots, and the total."""

    total: float  # an int when every member's cycles are
    group_spans: tuple[tuple[float, float], ...]
    slots: tuple[SlotReplay, ...]
    # (group, slot, member) -> cycles in iteration 0
    member_cycles: dict[tuple[int, int, str], int] = field(default_factory=dict)
    busy: dict[str, int] = field(default_factory=dict)  # resource -> cycles held over the run
    # (group, resource) -> cycles held by that group's iterations
    group_busy: dict[tuple[int, str], float] = field(default_factory=dict)


def tensor_of(name: str, tensors: set[str]) -> str:
    """Stream's name of a tensor copy ('output_1') as the workload's ('output')."""
    if name in tensors:
        return name
    stripped = re.sub(r"_\d+$", "", name)
    return stripped if stripped in tensors else name


def _hop_cycles(hop: Any) -> int:
    """A hop alone on its media: its bursts at the slower of medium and DRAM port, then its latency."""
    full, rest = divmod(hop.bits, hop.burst_bits)
    return (
        full * hop.burst_cycles(hop.burst_bits)
        + (hop.burst_cycles(rest) if rest else 0)
        + hop.latency
    )


def transfer_cycles(plan: Any) -> dict[tuple[str, int, bool], dict[str, int]]:
    """Per (tensor, step index, is a write): cycles per medium or DRAM port, summed over the
    chip's transfers of that tensor for that step (its consumer's, or for a write its
    producer's), each hop alone (no contention)."""
    out: dict[tuple[str, int, bool], dict[str, int]] = {}
    for t in plan.transfers:
        write = not t.for_steps
        step_id = t.after_step if write else t.for_steps[0]
        key = (t.tensor, plan.steps[step_id].index if step_id is not None else 0, write)
        per = out.setdefault(key, {})
        for h in t.hops:
            hop = plan.hops[h]
            for resource in hop.keys:
                per[resource] = per.get(resource, 0) + _hop_cycles(hop)
    return out


def transfer_bits(plan: Any) -> dict[tuple[str, int, bool], int]:
    """Per (tensor, step index, is a write): bits the chip's transfers move, as transfer_cycles keys them."""
    out: dict[tuple[str, int, bool], int] = {}
    for t in plan.transfers:
        write = not t.for_steps
        step_id = t.after_step if write else t.for_steps[0]
        key = (t.tensor, plan.steps[step_id].index if step_id is not None else 0, write)
        out[key] = out.get(key, 0) + t.bits
    return out


def as_scheduled(run: StreamRun, chip_run: Any) -> AsScheduled:
    """Replay Stream's slots as barriers with the chip's step and transfer times (see place)."""
    plan = chip_run.plan
    tensors = {t.name for t in plan.workload.tensors}
    steps = step_cycles(chip_run)
    moves = transfer_cycles(plan)
    return place(run, lambda g, slot, k: _slot_members(g, slot, k, steps, moves, tensors))


def step_cycles(chip_run: Any) -> dict[tuple[str, int], dict[str, int]]:
    """Per (layer, step index): each chip core's replayed time of that step."""
    steps: dict[tuple[str, int], dict[str, int]] = {}
    for s in chip_run.plan.steps:
        steps.setdefault((s.layer, s.index), {})[s.core] = (
            chip_run.step_end[s.id] - chip_run.step_start[s.id]
        )
    return steps


Members = dict[str, tuple[tuple[str, ...], float]]


def place(
    run: StreamRun,
    members_of: Callable[[StreamGroup, int, int], Members],
    tail: Callable[[StreamGroup], float] | None = None,
) -> AsScheduled:
    """Place Stream's slots as barriers, each member timed by members_of(group, slot, iteration)
    (name -> (resources it holds, cycles)); tail(group) cycles are added after a group's last
    iteration (Stream's fill, where a rung keeps it).

    Iterations are placed in order: iteration k's slot s starts at the earliest cycle after its
    release (k x interval, from the group's start) and the end of its slot s-1 at which every
    resource of its members is free for as long as that member holds it; an earlier
    iteration's use of a resource is never moved (the gaps it leaves are used, as Stream's
    overlap assumes)."""
    clock, spans, slots, members, held, per_group = 0.0, [], [], {}, {}, {}
    for g in run.groups:
        start_group = clock
        busy: dict[str, list[tuple[float, float, tuple[int, int]]]] = {}
        ends: list[float] = []
        for k in range(g.iterations):
            release = start_group + k * g.interval
            previous_end = release
            for slot in sorted(g.slot_latencies):
                parts = members_of(g, slot, k)
                if not parts:
                    continue
                start, waited, behind = _earliest(previous_end, parts, busy)
                length = max(c for _, c in parts.values())
                binding = max(parts, key=lambda m: parts[m][1])
                for member, (resources, cycles) in parts.items():
                    for r in resources:
                        if cycles:
                            busy.setdefault(r, []).append((start, start + cycles, (k, slot)))
                            held[r] = held.get(r, 0) + cycles
                            per_group[g.index, r] = per_group.get((g.index, r), 0) + cycles
                    if k == 0:
                        members[(g.index, slot, member)] = cycles
                slots.append(
                    SlotReplay(
                        g.index,
                        k,
                        slot,
                        start,
                        start + length,
                        binding,
                        waited,
                        start - previous_end,
                        behind,
                    )  # fmt: skip
                )
                previous_end = start + length
            ends.append(previous_end)
        clock = max(ends, default=start_group) + (tail(g) if tail else 0)
        spans.append((start_group, clock))
    total = int(clock) if float(clock).is_integer() else clock
    return AsScheduled(total, tuple(spans), tuple(slots), members, held, per_group)


def _earliest(
    ready: int,
    parts: dict[str, tuple[tuple[str, ...], int]],
    busy: dict[str, list[tuple[float, float, tuple[int, int]]]],
) -> tuple[float, str, tuple[int, int] | None]:
    """The first cycle >= ready at which every member's resources are free for its duration,
    and the resource that pushed it later ("" if none) with the (iteration, slot) holding it."""
    start, waited, behind = ready, "", None
    moved = True
    while moved:
        moved = False
        for resources, cycles in parts.values():
            for r in resources:
                for lo, hi, owner in busy.get(r, ()):
                    if cycles and lo < start + cycles and start < hi:
                        start, waited, behind, moved = hi, r, owner, True
    return start, waited, behind


def _slot_members(
    g: StreamGroup, slot: int, k: int, steps: dict, moves: dict, tensors: set[str]
) -> dict[str, tuple[tuple[str, ...], int]]:
    """Members of one slot in iteration k: name -> (resources it holds, cycles)."""
    parts: dict[str, tuple[tuple[str, ...], int]] = {}
    for n in g.nodes:
        if n.slot != slot:
            continue
        per_core = steps.get((n.name, k), {})
        for core, cycles in per_core.items():
            parts[f"compute {n.name} on {core}"] = ((core,), cycles)
    for t in g.transfers:
        if t.slot != slot:
            continue
        write = t.kind == "COMPUTE_TO_MEM"
        per = moves.get((tensor_of(t.tensor, tensors), k, write), {})
        for resource, cycles in per.items():
            parts[f"transfer {t.tensor} on {resource}"] = ((resource,), cycles)
    return parts


def chip_group_spans(run: StreamRun, chip_run: Any) -> list[tuple[int, int]]:
    """Per Stream group, from its first step's start (or its first fetch) to its last step's end
    or last write landed, in the dependency-driven replay."""
    plan = chip_run.plan
    spans = []
    for g in run.groups:
        layers = set(g.layers)
        ids = [s.id for s in plan.steps if s.layer in layers]
        start = min(chip_run.step_start[i] for i in ids)
        end = max(chip_run.step_end[i] for i in ids)
        for t in plan.transfers:
            step_id = t.for_steps[0] if t.for_steps else t.after_step
            if step_id is not None and plan.steps[step_id].layer in layers:
                start = min(start, chip_run.ready[t.id])
                end = max(end, max(chip_run.landed[t.id].values(), default=end))
        spans.append((start, end))
    return spans


def chip_group_busy(run: StreamRun, chip_run: Any) -> dict[tuple[int, str], int]:
    """(group, medium or DRAM port) -> cycles it was granted to the transfers of that group's
    steps (a read by its consumer step, a write by its producer) in the dependency-driven replay."""
    plan = chip_run.plan
    group_of = {layer: g.index for g in run.groups for layer in g.layers}
    hop_group: dict[int, int] = {}
    for t in plan.transfers:
        step_id = t.for_steps[0] if t.for_steps else t.after_step
        if step_id is not None and plan.steps[step_id].layer in group_of:
            for h in t.hops:
                hop_group[h] = group_of[plan.steps[step_id].layer]
    out: dict[tuple[int, str], int] = {}
    for port, grants in chip_run.grants.items():
        for start, end, hop, _ in grants:
            if hop in hop_group:
                key = (hop_group[hop], port)
                out[key] = out.get(key, 0) + end - start
    return out


def chip_interval(g: StreamGroup, chip_run: Any) -> float | None:
    """The steady rate of the dependency-driven replay: per layer of the group and core, the mean
    distance between consecutive step starts; the slowest (largest) of them."""
    plan = chip_run.plan
    layers = set(g.layers)
    by_lane: dict[tuple[str, str], list[int]] = {}
    for s in plan.steps:
        if s.layer in layers:
            by_lane.setdefault((s.layer, s.core), []).append(chip_run.step_start[s.id])
    rates = [
        (max(starts) - min(starts)) / (len(starts) - 1)
        for starts in by_lane.values()
        if len(starts) > 1
    ]
    return max(rates, default=None)


def dram_bits(chip_run: Any) -> dict[str, int]:
    """Bits through the DRAM port per tensor in the replay."""
    plan = chip_run.plan
    out: dict[str, int] = {}
    for t in plan.transfers:
        for h in t.hops:
            if plan.hops[h].dram_port is not None:
                out[t.tensor] = out.get(t.tensor, 0) + plan.hops[h].bits
    return out


def stream_dram_bits(run: StreamRun, tensors: set[str]) -> dict[str, float]:
    """Bits Stream times through the DRAM port per tensor: moved bits x firings (N / reuse)."""
    out: dict[str, float] = {}
    for g in run.groups:
        for t in g.transfers:
            if t.kind in ("MEM_TO_COMPUTE", "COMPUTE_TO_MEM"):
                firings = ceil(g.iterations / max(t.reuse_factor, 1))
                name = tensor_of(t.tensor, tensors)
                out[name] = out.get(name, 0.0) + t.moved_bits * firings
    return out


__all__ = [
    "AsScheduled",
    "SlotReplay",
    "as_scheduled",
    "place",
    "step_cycles",
    "chip_group_spans",
    "core_name",
]
