"""`cyclesim explain`: the root causes of the non-compute cycles, ranked, where they occur, and
what would remove them — each remedy verified by replaying the changed architecture, the
replays in parallel worker processes (analysis.parallel.map_tasks). A remedy's replay is
attributed again, so a remedy that saves little names what binds after it.

Cycles per cause come from SimResult.stall_spans (they add up to the phase totals); this module
only groups them, locates them in the loop nest, and runs the counterfactual replays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction

from cyclesim.errors import CyclesimError
from cyclesim.results import SimResult
from cyclesim.results.attribution import (
    BANDWIDTH,
    BUFFER_FULL,
    CONTENTION,
    LATENCY,
    SPATIAL,
    SYSTOLIC_DRAIN,
    SYSTOLIC_FILL,
)
from cyclesim.schedule.types import PortRef
from cyclesim.spec import Architecture, Direction, Mapping, Memory, Port, Temporal, Workload, leaves

KEYS = ("cause", "memory", "tensor", "port_memory", "port", "competitor")


@dataclass(frozen=True, slots=True)
class Remedy:
    """One architectural change, replayed: cycles before and after."""

    change: str
    cycles_before: int
    cycles_after: int | None  # None: the changed architecture could not be replayed
    note: str = ""
    binds_after: str = ""  # the largest cause of the changed run, in words
    grew: str = ""  # the cause and place of the changed run that gained the most cycles

    @property
    def saved(self) -> int | None:
        return None if self.cycles_after is None else self.cycles_before - self.cycles_after


@dataclass(slots=True)
class Cause:
    """Non-compute cycles charged to one root (cause, where, competitor), over all phases."""

    cause: str
    memory: str | None
    tensor: str | None
    port_memory: str | None
    port: str | None
    competitor: str | None
    cycles: int
    by_phase: dict[str, int]
    ranges: list[tuple[int, int]]
    iterations: list[str]
    chain: str
    remedies: list[Remedy] = field(default_factory=list)

    def where(self) -> str:
        text = f"{self.tensor}@{self.memory}" if self.tensor else (self.memory or "PE array")
        if self.port:
            text += (
                f", port {self.port_memory}.{self.port}"
                if self.port_memory
                else f", port {self.port}"
            )
        if self.competitor:
            text += f", vs {self.competitor}"
        return text


@dataclass(slots=True)
class Explanation:
    """The ranked causes of one run."""

    cycles: int
    non_compute_cycles: int
    ideal_compute_cycles: int
    causes: list[Cause]

    def to_json_dict(self) -> dict:
        return dict(
            cycles=self.cycles, non_compute_cycles=self.non_compute_cycles,
            ideal_compute_cycles=self.ideal_compute_cycles,
            causes=[
                dict(cause=c.cause, memory=c.memory, tensor=c.tensor, port_memory=c.port_memory, port=c.port,
                     competitor=c.competitor, cycles=c.cycles, share=round(c.cycles / self.cycles, 6) if self.cycles else 0.0,
                     by_phase=c.by_phase, cycle_ranges=[list(r) for r in c.ranges], iterations=c.iterations,
                     chain=c.chain,
                     remedies=[dict(change=r.change, cycles_before=r.cycles_before, cycles_after=r.cycles_after,
                                    cycles_saved=r.saved, note=r.note, binds_after=r.binds_after, grew=r.grew)
                               for r in c.remedies])
                for c in self.causes
            ],
        )  # fmt: skip


def _merge_ranges(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _loop_names(mapping: Mapping) -> dict[str, list[str]]:
    """Per compute node path: the ranks of its temporal loops with bound > 1, outer first."""
    out = {}
    for path, comp in leaves(mapping.loop_tree):
        out[comp.path] = [n.rank for n in path if isinstance(n, Temporal) and n.bound > 1]
    return out


def _iteration(res: SimResult, ranks: dict[str, list[str]], li: int, g: int) -> str:
    """Segment g of leaf li as loop indices, e.g. 'matvec m=1'."""
    leaf = res.raw.plan.leaves[li]
    names = ranks.get(leaf.path, [])
    digits = []
    for bound in reversed(leaf.bounds[: leaf.seg_depth]):
        g, d = divmod(g, bound)
        digits.append(d)
    digits.reverse()
    idx = ", ".join(
        f"{names[i] if i < len(names) else f'loop{i}'}={d}" for i, d in enumerate(digits)
    )
    return f"{leaf.einsum} {idx}".strip()


def rank_causes(res: SimResult, mapping: Mapping | None = None) -> Explanation:
    """Group the stall spans by root, largest first, with cycle ranges and delayed iterations."""
    groups: dict[tuple, list] = {}
    for s in res.spans:
        groups.setdefault(tuple(getattr(s, k) for k in KEYS), []).append(s)
    segs = sorted(res.raw.rec.pe_segments or ())
    seg_starts = [s[0] for s in segs]
    ranks = _loop_names(mapping) if mapping is not None else {}
    from bisect import bisect_left

    causes = []
    for key, spans in groups.items():
        by_phase: dict[str, int] = {}
        for s in spans:
            by_phase[s.phase] = by_phase.get(s.phase, 0) + s.cycles
        its: list[str] = []
        if segs:
            for s in sorted(spans, key=lambda s: s.start):
                if s.phase == "offload" or s.cause == SPATIAL:
                    continue
                j = bisect_left(seg_starts, s.end)
                if j < len(segs):
                    it = _iteration(res, ranks, segs[j][2], segs[j][3])
                    if not its or its[-1] != it:
                        its.append(it)
        chain = max(spans, key=lambda s: s.cycles).chain
        causes.append(
            Cause(
                *key,
                sum(s.cycles for s in spans),
                by_phase,
                _merge_ranges([(s.start, s.end) for s in spans]),
                its,
                chain,
            )
        )
    causes.sort(
        key=lambda c: (
            -c.cycles,
            c.cause,
            str(c.memory),
            str(c.tensor),
            str(c.port),
            str(c.competitor),
        )
    )
    non_compute = res.onload_cycles + res.stall_cycles + res.offload_cycles
    return Explanation(res.cycles, non_compute, res.ideal_compute_cycles, causes)


# ------------------------------------------------------------------ counterfactual architectures
def _with_memory(arch: Architecture, name: str, **changes) -> Architecture:
    mems = tuple(replace(m, **changes) if m.name == name else m for m in arch.memories)
    return replace(arch, memories=mems)


def _with_port(arch: Architecture, memory: str, port: str, **changes) -> Architecture:
    mem = arch.memory(memory)
    ports = tuple(replace(p, **changes) if p.name == port else p for p in mem.ports)
    return _with_memory(arch, memory, ports=ports)


def _double_buffer(arch: Architecture, memory: str, tensor: str) -> Architecture:
    mem = arch.memory(memory)
    db = mem.double_buffered
    if db is True or (not isinstance(db, bool) and tensor in db):
        return arch
    new = (tensor,) if db is False else tuple(db) + (tensor,)
    return _with_memory(arch, memory, double_buffered=new)


def _own_port(
    arch: Architecture, workload: Workload, memory: str, port: str, tensor: str
) -> Architecture | None:
    """Split `tensor` off `port` of `memory` onto a new port of the same kind, width and timing."""
    mem: Memory = arch.memory(memory)
    old = next(p for p in mem.ports if p.name == port)
    tensors = list(mem.tensors) if mem.tensors is not None else [t.name for t in workload.tensors]
    served = [(t, d) for t in tensors for d in Direction if old.can_serve(t, d)]
    mine = tuple((t, d) for t, d in served if t == tensor)
    rest = tuple((t, d) for t, d in served if t != tensor)
    if not mine or not rest:
        return None
    names = {p.name for p in mem.ports}
    name = f"{port}_{tensor}"
    while name in names:
        name += "_"
    ports = tuple(replace(p, serves=rest) if p.name == port else p for p in mem.ports)
    ports += (Port(name, old.kind, old.width_bits, old.latency_cycles, old.burst_bits, mine),)
    return _with_memory(arch, memory, ports=ports)


GROW = "if it does not fit: "


@dataclass(frozen=True, slots=True)
class TransferEnds:
    """The two ports of the fill or write-back a cause is charged to, as explain needs them."""

    near: PortRef  # the port the cause names
    far: PortRef  # the other end of the same transfer
    near_is_parent: bool
    parent_bits_per_child_bit: Fraction  # > 1 for a multicast or a spatial reduction

    def rate(self, near: PortRef, far: PortRef) -> Fraction:
        """Child-side bits per cycle of a full burst with these ends (as engine/transfer.py
        times it: bursts of the smaller burst, each holding both ports for the slower side)."""
        parent, child = (near, far) if self.near_is_parent else (far, near)
        burst = min(parent.burst_bits, child.burst_bits)
        parent_cycles = math.ceil(burst * self.parent_bits_per_child_bit / parent.width_bits)
        return Fraction(burst, max(parent_cycles, -(-burst // child.width_bits), 1))


def _widen(
    arch: Architecture, c: Cause, p: Port, ends: TransferEnds | None
) -> tuple[str, Architecture]:
    """Double the bits per cycle at c's port: widen it (and its burst, and the far side's burst
    when that one would cut the transfer's bursts); when the far side then binds (both ends as
    narrow, e.g. a multicast's parent port against each child's), widen both ends together."""
    burst = max(p.burst_bits, 2 * p.width_bits)
    wider = _with_port(arch, c.port_memory, p.name, width_bits=2 * p.width_bits, burst_bits=burst)
    change = (
        f"widen port {c.port_memory}.{p.name} from {p.width_bits} to {2 * p.width_bits} bits/cycle"
    )
    bursts = [f"burst {p.burst_bits} -> {burst} bits"] if burst != p.burst_bits else []
    if ends is None:
        return change + (f" ({', '.join(bursts)})" if bursts else ""), wider
    near, far = ends.near, ends.far
    far_burst = max(far.burst_bits, burst)
    if far.burst_bits < burst:
        # a transfer moves bursts of the smaller of its two ports' bursts: a wider port
        # behind a narrow burst on the far side moves no more bits per cycle
        bursts.append(f"{far.key}'s burst {far.burst_bits} -> {burst} bits")
        wider = _with_port(wider, far.memory, far.name, burst_bits=burst)
    before = ends.rate(near, far)
    alone = ends.rate(
        replace(near, width_bits=2 * near.width_bits, burst_bits=burst),
        replace(far, burst_bits=far_burst),
    )
    if alone >= 2 * before or near.key == far.key:
        return change + (f" ({', '.join(bursts)})" if bursts else ""), wider
    # the far side binds as soon as this one is wider: double both widths and both bursts, so
    # every burst takes the cycles it took and carries twice the bits
    child = far.memory if ends.near_is_parent else near.memory
    now = "as now" if alone == before else f"now {_per_cycle(before)}"
    both = _with_port(
        arch, c.port_memory, p.name, width_bits=2 * p.width_bits, burst_bits=2 * p.burst_bits
    )
    both = _with_port(
        both, far.memory, far.name, width_bits=2 * far.width_bits, burst_bits=2 * far.burst_bits
    )
    return (
        f"widen ports {near.key} and {far.key} together from {near.width_bits} and "
        f"{far.width_bits} to {2 * near.width_bits} and {2 * far.width_bits} bits/cycle, bursts "
        f"{near.burst_bits} and {far.burst_bits} -> {2 * near.burst_bits} and "
        f"{2 * far.burst_bits} bits (each burst holds both ports for the slower side's cycles; "
        f"{near.key} alone: {_per_cycle(alone)} per {child} instance, {now})",
        both,
    )


def _per_cycle(rate: Fraction) -> str:
    """A transfer's rate in words: '8 b/cycle', '10.67 b/cycle'."""
    return f"{rate} b/cycle" if rate.denominator == 1 else f"{float(rate):.2f} b/cycle"


def candidates(
    c: Cause,
    arch: Architecture,
    workload: Workload,
    demand: int = 0,
    ends: TransferEnds | None = None,
) -> list[tuple[str, Architecture]]:
    """Architectural changes that could remove cause c, each described in words.

    A change whose text starts with GROW is the fallback of the one before it. `demand` is the
    bits per step of a spatially stalled operand; `ends` the two ports of the transfer the cause
    waits on (a transfer waits the larger of its two ports' latencies and moves bursts of the
    smaller of their bursts, each holding both ports for the slower side's cycles).
    """
    other_port = ends.far if ends is not None else None
    out: list[tuple[str, Architecture]] = []
    port = arch.memory(c.port_memory).ports if c.port_memory else ()
    p = next((x for x in port if x.name == c.port), None)
    if c.memory and c.tensor and c.cause in (BUFFER_FULL, BANDWIDTH, LATENCY, CONTENTION):
        mem = next((m for m in arch.memories if m.name == c.memory), None)
        if mem is not None and mem.slots_for(c.tensor) == 1:
            db = _double_buffer(arch, c.memory, c.tensor)
            out.append((f"double-buffer {c.tensor} in {c.memory}", db))
            if mem.size_bits is not None:  # tried only when the plain one does not fit
                out.append(
                    (
                        f"{GROW}double-buffer {c.tensor} in {c.memory} and grow {c.memory} from "
                        f"{mem.size_bits} to {2 * mem.size_bits} bits",
                        _with_memory(db, c.memory, size_bits=2 * mem.size_bits),
                    )
                )
    systolic = arch.pe_array.systolic
    if c.cause in (SYSTOLIC_FILL, SYSTOLIC_DRAIN) and systolic and not systolic.overlap_folds:
        out.append(
            (
                "overlap systolic folds (double-buffered stationary registers: the next fold's "
                "preload and skew hide under this one's stream)",
                replace(
                    arch,
                    pe_array=replace(arch.pe_array, systolic=replace(systolic, overlap_folds=True)),
                ),
            )
        )
    if p is not None and c.cause == SPATIAL and demand:
        out.append(
            (
                f"widen port {c.port_memory}.{p.name} from {p.width_bits} to {demand} bits/cycle (the operand's "
                "demand per step)",
                _with_port(arch, c.port_memory, p.name, width_bits=max(demand, p.width_bits)),
            )
        )
    if p is not None and c.cause in (BANDWIDTH, CONTENTION):
        out.append(_widen(arch, c, p, ends))
    if p is not None and c.cause == CONTENTION and c.tensor and c.competitor != "PE array":
        own = _own_port(arch, workload, c.port_memory, p.name, c.tensor)
        far = other_port
        both = (
            _own_port(own, workload, far.memory, far.name, c.tensor)
            if own is not None and far is not None and far.memory != c.port_memory
            else None
        )
        if both is not None:  # the far port is shared too: the competitor would meet us there
            out.append(
                (
                    f"give {c.tensor} its own ports at {c.port_memory} and {far.memory} (split "
                    f"from {p.name} and {far.name})",
                    both,
                )
            )
        elif own is not None:
            out.append(
                (f"give {c.tensor} its own port at {c.port_memory} (split from {p.name})", own)
            )
    if p is not None and c.cause == LATENCY and p.latency_cycles:
        cut = _with_port(arch, c.port_memory, p.name, latency_cycles=0)
        if other_port is not None and other_port.latency_cycles:
            # cutting only the charged port leaves the other side's latency in its place
            out.append(
                (
                    f"cut the latency of ports {c.port_memory}.{p.name} and {other_port.key} "
                    f"from {p.latency_cycles} and {other_port.latency_cycles} to 0 cycles (a "
                    "transfer waits the larger of its two ports' latencies)",
                    _with_port(cut, other_port.memory, other_port.name, latency_cycles=0),
                )
            )
        else:
            out.append(
                (
                    f"cut the latency of port {c.port_memory}.{p.name} from {p.latency_cycles} to 0 cycles",
                    cut,
                )
            )
    dma = (
        next((d for d in arch.dma_engines if d.name == c.port), None)
        if c.port_memory is None
        else None
    )
    if dma is not None and c.cause == CONTENTION:
        dmas = tuple(
            replace(d, channels=d.channels + 1) if d is dma else d for d in arch.dma_engines
        )
        out.append(
            (
                f"add a channel to DMA engine {dma.name} ({dma.channels} -> {dma.channels + 1})",
                replace(arch, dma_engines=dmas),
            )
        )
    if dma is not None and c.cause == LATENCY and dma.setup_cycles:
        dmas = tuple(replace(d, setup_cycles=0) if d is dma else d for d in arch.dma_engines)
        out.append(
            (
                f"cut the setup of DMA engine {dma.name} from {dma.setup_cycles} to 0 cycles",
                replace(arch, dma_engines=dmas),
            )
        )
    return out


def verify(
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    res: SimResult,
    change: str,
    new_arch: Architecture,
) -> Remedy:
    """Replay with the changed architecture: the cycles saved and what binds then, or why it could not run."""
    return _replay_remedy(
        (change, new_arch, workload, mapping, res.reuse, res.isolate_einsums, res.cycles,
         res.raw.fast_forward_on, _places(rank_causes(res).causes))
    )  # fmt: skip


def _replay_remedy(task: tuple) -> Remedy:
    """One remedy's replay (a worker process's task: plain, picklable data in and out)."""
    from cyclesim.engine import replay

    change, new_arch, workload, mapping, reuse, isolate, before, fast_forward, places = task
    try:
        new = replay(new_arch, workload, mapping, reuse=reuse, isolate_einsums=isolate,
                     progress=False, check_counts=False, fast_forward=fast_forward)  # fmt: skip
    except CyclesimError as exc:
        return Remedy(change, before, None, str(exc).splitlines()[0])
    ranked = rank_causes(new).causes
    return Remedy(change, before, new.cycles, binds_after=_largest_cause(new, ranked),
                  grew=_grew(ranked, places))  # fmt: skip


def _places(causes: list[Cause]) -> dict[str, int]:
    """Cycles per cause and place, e.g. {'latency at O@rf_16B, port sram_8KB.rw_port_2': 59961}."""
    return {f"{c.cause} at {c.where()}": c.cycles for c in causes}


def _grew(ranked: list[Cause], before: dict[str, int]) -> str:
    """The cause and place that gained the most cycles over the run before the change, in
    words, or '': where the cycles a change removes went when it saves little."""
    gains = [(cycles - before.get(key, 0), key) for key, cycles in _places(ranked).items()]
    gain, key = max(gains, default=(0, ""))
    return f"{key} (+{gain:,})" if gain > 0 else ""


def _largest_cause(res: SimResult, ranked: list[Cause]) -> str:
    """What binds in a run, in words: the cause with the most cycles (summed over its places) and
    its largest place, e.g. 'spatial (186,800 cycles, 60.0% of the run; most at O@rf_16B, ...)'."""
    if not ranked:
        return "nothing (the run is compute-bound)"
    totals: dict[str, int] = {}
    for c in ranked:
        totals[c.cause] = totals.get(c.cause, 0) + c.cycles
    cause = max(totals, key=lambda k: (totals[k], k))
    place = next(c for c in ranked if c.cause == cause)
    most = (
        f"most at {place.where()}: {place.cycles:,}"
        if place.cycles < totals[cause]
        else f"at {place.where()}"
    )
    return (
        f"{cause} ({totals[cause]:,} cycles, {_pct(totals[cause], res.cycles)} of the run; {most})"
    )


def _transfer_ends(res: SimResult, c: Cause) -> TransferEnds | None:
    """Both ends of the fill or write-back cause c is charged to, else None."""
    if c.port_memory is None:
        return None
    for n in res.raw.plan.nodes:
        if n.memory != c.memory or n.tensor != c.tensor:
            continue
        ratio = Fraction(n.union_values, n.tile_values) if n.tile_values else Fraction(1)
        # (parent end, child end) of the fill and of the write-back
        for parent, child in ((n.fill_src, n.fill_dst), (n.drain_dst, n.drain_src)):
            if parent is None or child is None:
                continue
            if (parent.memory, parent.name) == (c.port_memory, c.port):
                return TransferEnds(parent, child, True, ratio)
            if (child.memory, child.name) == (c.port_memory, c.port):
                return TransferEnds(child, parent, False, ratio)
    return None


def _demand(res: SimResult, c: Cause) -> int:
    """Bits per step the PE array reads of c's operand (for a spatial stall), else 0."""
    if c.cause != SPATIAL:
        return 0
    plan = res.raw.plan
    for leaf in plan.leaves:
        for o in leaf.operands:
            if o.tensor == c.tensor and plan.nodes[o.node].memory == c.memory:
                return o.values_per_step * o.bits
    return 0


def explain(
    res: SimResult,
    arch: Architecture,
    workload: Workload,
    mapping: Mapping,
    *,
    top: int = 5,
    verify_remedies: bool = True,
    workers: int | None = None,
    progress: bool | None = None,
) -> Explanation:
    """Ranked causes; for the top ones, remedies replayed on the changed architecture.

    The replays run in parallel (map_tasks, one task per distinct change, with its progress
    bar); a fallback (GROW) is replayed in a second round only where its plain change failed.
    """
    from cyclesim.analysis.parallel import map_tasks

    ex = rank_causes(res, mapping)
    if not verify_remedies:
        return ex
    from cyclesim.analysis.dram_remedies import dram_remedies

    proposed = [
        (c, candidates(c, arch, workload, _demand(res, c), _transfer_ends(res, c)))
        for c in ex.causes[:top]
    ]
    # DRAM causes: another address mapping, layout or tile order, each with its own mapping
    dram = [(c, dram_remedies(c, arch, workload, mapping)) for c in ex.causes[:top]]
    done: dict[str, Remedy] = {}
    places = _places(ex.causes)  # before the change: what grew in each remedy's replay

    def run(tasks: dict[str, tuple[Architecture, Mapping]]) -> None:
        todo = [(change, a, m) for change, (a, m) in tasks.items() if change not in done]
        items = [(change, a, workload, m, res.reuse, res.isolate_einsums, res.cycles, res.raw.fast_forward_on, places) for change, a, m in todo]  # fmt: skip
        for (change, _, _), outcome in zip(todo, map_tasks(_replay_remedy, items, workers=workers,
                                                            progress=progress, desc="remedies"), strict=True):  # fmt: skip
            done[change] = (
                outcome.value
                if outcome.ok
                else Remedy(change, res.cycles, None, outcome.error or "")
            )

    first = {
        ch: (a, mapping) for _, cands in proposed for ch, a in cands if not ch.startswith(GROW)
    }
    first.update({ch: (a, m) for _, rs in dram for ch, a, m in rs})
    run(first)
    run({ch.removeprefix(GROW): (a, mapping) for _, cands in proposed for i, (ch, a) in enumerate(cands)
         if ch.startswith(GROW) and i and done[cands[i - 1][0]].cycles_after is None})  # fmt: skip
    for (c, cands), (_, rs) in zip(proposed, dram, strict=True):
        for i, (change, _) in enumerate(cands):
            if not change.startswith(GROW):
                c.remedies.append(done[change])
            elif i and done[cands[i - 1][0]].cycles_after is None:
                c.remedies.remove(done[cands[i - 1][0]])
                c.remedies.append(done[change.removeprefix(GROW)])
        c.remedies.extend(done[change] for change, _, _ in rs)
        c.remedies.sort(key=lambda r: (r.saved is None, -(r.saved or 0)))
    return ex


SAVES_LITTLE = 0.5  # a remedy saving less than this share of its cause's cycles says what binds


def _list(items: list, limit: int, fmt, sep: str = ", ") -> str:
    shown = sep.join(fmt(x) for x in items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def format_explanation(ex: Explanation, title: str = "", top: int = 5) -> str:
    """The causes as text: rank, cycles, share, where, when, and the verified remedies."""
    out = [title, "=" * len(title)] if title else []
    out.append(
        f"cycles {ex.cycles:,}: ideal compute {ex.ideal_compute_cycles:,}, "
        f"non-compute {ex.non_compute_cycles:,} ({_pct(ex.non_compute_cycles, ex.cycles)} of the run)"
    )
    if not ex.causes:
        out.append("no non-compute cycles: nothing to explain")
    for i, c in enumerate(ex.causes[:top], 1):
        phases = ", ".join(f"{k} {v:,}" for k, v in c.by_phase.items())
        out.append("")
        out.append(
            f"{i}. {c.cause} at {c.where()}: {c.cycles:,} cycles "
            f"({_pct(c.cycles, ex.cycles)} of the run; {phases})"
        )
        out.append(f"   chain:  {c.chain}")
        out.append(f"   cycles: {_list(c.ranges, 6, lambda r: f'{r[0]}..{r[1]}')}")
        if c.iterations:
            out.append(f"   delays: {_list(c.iterations, 4, str, '; ')}")
        for r in c.remedies:
            if r.cycles_after is None:
                out.append(f"   - {r.change}: cannot be replayed ({r.note})")
                continue
            span = f"({r.cycles_before:,} -> {r.cycles_after:,}"
            if r.saved < 0:  # a remedy that makes the run longer says so, not "saves -N"
                out.append(
                    f"   - {r.change}: costs {-r.saved:,} more cycles "
                    f"{span}, +{_pct(-r.saved, r.cycles_before)})"
                )
                if r.binds_after:
                    out.append(f"     makes it worse: then {r.binds_after} binds")
                if r.grew:
                    out.append(f"     grew most: {r.grew}")
                continue
            out.append(
                f"   - {r.change}: saves {r.saved:,} cycles "
                f"{span}, {_pct(r.saved, r.cycles_before)})"
            )
            if r.saved < SAVES_LITTLE * c.cycles and r.binds_after:
                out.append(f"     saves little: then {r.binds_after} binds")
                if r.grew:
                    out.append(f"     grew most: {r.grew}")
        if not c.remedies and c.cause not in (SPATIAL,):
            out.append(
                "   - no architectural change proposed for this cause (a mapping change may help)"
            )
    if len(ex.causes) > top:
        rest = sum(c.cycles for c in ex.causes[top:])
        out.append(
            f"\n... {len(ex.causes) - top} more causes, {rest:,} cycles (--top N, or --json)"
        )
    return "\n".join(out)


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"
