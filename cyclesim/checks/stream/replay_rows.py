"""The replay rows of `check stream`: Stream's numbers next to the as-scheduled and the
dependency-driven replay of its schedule on the chip import, each difference with its mechanism."""

from __future__ import annotations

from math import ceil, prod
from typing import Any

from cyclesim.checks.stream.pernode import NodeCheck
from cyclesim.checks.stream.replay import (
    AsScheduled,
    chip_group_busy,
    chip_group_spans,
    chip_interval,
    dram_bits,
    stream_dram_bits,
    tensor_of,
    transfer_bits,
)
from cyclesim.checks.stream.rows import Row
from cyclesim.checks.stream.schedule import StreamRun, StreamTransfer

SECTION = "replay"


def replay_rows(
    run: StreamRun,
    scheduled: AsScheduled,
    result: Any,
    nodes: tuple[NodeCheck, ...],
    shapes: dict[str, tuple[int, ...]],
) -> list[Row]:
    """Total, per group (end, interval), per slot of iteration 0, per medium, DRAM bits per tensor."""
    chip_run = result.run
    rows = [_total(run, scheduled, result)]
    spans = chip_group_spans(run, chip_run)
    stream_end = 0.0
    for g, (_, end), (_, chip_end) in zip(run.groups, scheduled.group_spans, spans, strict=True):
        stream_end += g.total
        rows.append(
            Row(
                SECTION,
                g.index,
                "group ends at",
                stream_end,
                None,
                _group_end(g, end, chip_end),
                end,
                chip_end,
            )  # fmt: skip
        )
        first = [x for x in scheduled.slots if x.group == g.index and x.iteration == 0]
        length = sum(x.end - x.start for x in first)
        rows.append(
            Row(
                SECTION,
                g.index,
                "iteration latency (iteration 0's slots)",
                g.per_iteration,
                None,
                ""
                if length == g.per_iteration
                else "the sum of the replayed slots of the first iteration; the slot rows below name "
                "each slot's member and why it takes longer or shorter",
                length,
                None,
            )  # fmt: skip
        )
        if g.iterations > 1:
            ends: dict[int, int] = {}  # the steady rate: iterations finishing one after another
            for s in scheduled.slots:
                if s.group == g.index:
                    ends[s.iteration] = max(ends.get(s.iteration, s.end), s.end)
            first, last = ends.get(0), ends.get(g.iterations - 1)
            mine = None if first is None or last is None else (last - first) / (g.iterations - 1)
            theirs = chip_interval(g, chip_run)
            rows.append(
                Row(
                    SECTION,
                    g.index,
                    "interval",
                    g.interval,
                    None,
                    _interval(g, scheduled, mine, theirs),
                    _round(mine),
                    _round(theirs),
                )  # fmt: skip
            )
        rows += _slot_rows(run, g, scheduled, nodes, transfer_bits(chip_run.plan))
        rows += _busy_per_iteration(g, scheduled, result, chip_group_busy(run, chip_run))
    rows += _media_rows(run, scheduled, result)
    rows += _dram_rows(run, chip_run, shapes)
    return rows


def _round(value: float | None) -> float | None:
    return None if value is None else round(value)


def _total(run: StreamRun, scheduled: AsScheduled, result: Any) -> Row:
    causes = largest_waits(result, 3)
    mechanism = (
        f"as scheduled: Stream adds its fill instead of placing it and charges each slot its "
        f"ZigZag and link estimates; the replay places every slot with replayed times "
        f"(the slot rows below); dependency-driven, the largest waits: {causes}"
    )
    return Row(
        SECTION,
        None,
        "total cycles",
        run.total_cycles,
        None,
        mechanism,
        scheduled.total,
        result.cycles,
    )


def largest_waits(result: Any, count: int) -> str:
    """The largest non-compute causes of the dependency-driven replay, by core, named."""
    rows = [r for r in result.rows if r.cause not in ("idle",)]
    parts = []
    for r in rows[:50]:
        where = f" at {r.where}" if r.where else ""
        tensor = f" ({r.tensor})" if r.tensor else ""
        against = f" behind {r.competitor}" if r.competitor else ""
        parts.append(
            (r.cycles, f"{r.core} {r.phase} {r.cause}{where}{tensor}{against}: {r.cycles:,}")
        )
    parts.sort(key=lambda p: -p[0])
    return "; ".join(text for _, text in parts[:count]) or "none"


def _group_end(g: Any, end: int, chip_end: int) -> str:
    return (
        f"Stream's groups run back to back, each N x L - (N-1) x overlap + fill; as scheduled the "
        f"group's slots end at {end:,}; dependency-driven, steps of the next group start as soon "
        f"as their inputs and cores allow (prefetches cross the group boundary), ending at {chip_end:,}"
    )


def _interval(g: Any, scheduled: AsScheduled, mine: float | None, theirs: float | None) -> str:
    waits = sorted(
        {
            s.waited_for
            for s in scheduled.slots
            if s.group == g.index and s.iteration > 0 and s.waited_for
        }
    )
    text = (
        f"as scheduled, iteration k+1 is released {g.interval:,} cycles after k but its slots wait "
        f"for {', '.join(waits)} still held by iteration k"
        if waits
        else "as scheduled, every iteration starts at its release"
    )
    return text + (
        "; dependency-driven, a core starts its next step as soon as its inputs have landed and "
        "its previous step ended (the steady rate of the slowest core's steps and the bus)"
        if theirs is not None
        else ""
    )


def _slot_rows(
    run: StreamRun, g: Any, scheduled: AsScheduled, nodes: tuple[NodeCheck, ...], bits: dict
) -> list[Row]:
    rows = []
    alone = {(n.group, n.node, n.core): n for n in nodes}
    for s in (x for x in scheduled.slots if x.group == g.index and x.iteration == 0):
        stream = g.slot_latencies.get(s.slot, 0.0)
        replayed = s.end - s.start
        mechanism = ""
        if replayed != stream:
            mechanism = _slot_mechanism(g, s, stream, alone, bits)
        rows.append(
            Row(
                SECTION,
                g.index,
                f"slot {s.slot} (iteration 0): {s.binding}",
                stream,
                None,
                mechanism,
                replayed,
                None,
            )
        )
    return rows


def _slot_mechanism(g: Any, s: Any, stream: float, alone: dict, bits: dict) -> str:
    binding = s.binding
    cycles = s.end - s.start
    if binding.startswith("compute "):
        node, _, core = binding[len("compute ") :].partition(" on ")
        check = alone.get((g.index, node, int(core.lstrip("c"))))
        ranked = sorted(
            check.explanations if check else (), key=lambda x: x.startswith(("buffers:", "drain:"))
        )
        why = f": {ranked[0]}" if ranked else ""
        ours = next((n for n in g.nodes if n.name == node), None)
        cost = ours.active_cycles if ours else stream
        return (
            f"{node}'s step replays in {cycles:,} cycles on {core}, where Stream's ZigZag cost is "
            f"{cost:,.0f}{why}"
        )
    tensor, _, medium = binding[len("transfer ") :].partition(" on ")
    t = next((x for x in g.transfers if x.tensor == tensor and x.slot == s.slot), None)
    if t is None:
        return f"{binding} takes {cycles:,} cycles"
    names = {key[0] for key in bits}
    moved = bits.get((tensor_of(t.tensor, names), 0, t.kind == "COMPUTE_TO_MEM"), 0)
    return _chip_transfer_mechanism(t, medium, cycles, moved)


def _chip_transfer_mechanism(t: StreamTransfer, medium: str, cycles: int, moved: int) -> str:
    parts = [
        f"{t.name} takes {cycles:,} cycles on {medium} in the replay for {moved:,} bits, Stream "
        f"charges {t.charged_cycles:,.0f} for {t.moved_bits:,.0f}"
    ]
    if moved > t.moved_bits and t.kind == "COMPUTE_TO_COMPUTE":
        parts.append(
            "the replay sends each consumer step what its window needs and its core does not hold "
            "yet, halo rows included, from every "
            "producer core holding a part of it"
        )
    if medium.startswith("dram") or t.kind in ("MEM_TO_COMPUTE", "COMPUTE_TO_MEM"):
        parts.append(
            "a hop to or from DRAM holds the bus for the DRAM port's time (its narrower width), "
            "and the parts Stream bundles in one transfer queue on the bus one after the other"
        )
    if t.reuse_factor > 1:
        parts.append(
            f"Stream amortises it over {t.reuse_factor:g} iterations (1/{t.reuse_factor:g} per slot, "
            "the first fetch in its fill); the replay fetches it once per core and layer, in full, "
            "in iteration 0"
        )
    if any(link.share < 1 for link in t.links) and t.kind == "COMPUTE_TO_COMPUTE":
        parts.append(
            "a halo charged at its share of the route in Stream; the replay moves every halo part on the bus"
        )
    return "; ".join(parts)


def _is_dram_port(port: str) -> bool:
    return ".dram." in port or port.split(".")[1:2] == ["dram"]


def _busy_per_iteration(
    g: Any, scheduled: AsScheduled, result: Any, dependency: dict[tuple[int, str], int]
) -> list[Row]:
    """Per medium and the DRAM port: the cycles one iteration of this group holds it, as
    scheduled (the group's holds / N) and dependency-driven (its grants to the group's transfers
    / N, bursts included) next to Stream's (its links' busy time, its DRAM port's
    bits per iteration / rate). With several chip media, Stream's links are not paired to them."""
    media = [u for u in result.ports if u.kind != "dram_port"]
    rows = []
    for use in result.ports:
        mine = scheduled.group_busy.get((g.index, use.name), 0) / g.iterations
        if use.kind == "dram_port":
            theirs = sum(
                bits / rate
                for port, (bits, rate) in g.port_bits_per_iteration.items()
                if _is_dram_port(port)
            )
            why = (
                "Stream's DRAM port demand per iteration counts halo-free tiles and amortised "
                "weights at 1/r; as scheduled, the replay holds the port for every burst of what "
                "each step's window needs and its core does not hold yet, weights in full once "
                "per core and layer"
            )
        else:
            theirs = sum(g.link_busy_per_iteration.values()) if len(media) == 1 else None
            why = (
                "Stream charges each transfer share x route latency at the link's own width; as "
                "scheduled, the replay holds the medium for every burst at the slower of the "
                "medium and the DRAM port, for every part and halo it moves"
            )
        rows.append(
            Row(
                SECTION,
                g.index,
                f"{use.name} busy per iteration",
                theirs,
                None,
                why if theirs is not None and round(theirs) != round(mine) else "",
                round(mine),
                round(dependency.get((g.index, use.name), 0) / g.iterations),
            )  # fmt: skip
        )
    return rows


def _media_rows(run: StreamRun, scheduled: AsScheduled, result: Any) -> list[Row]:
    """Per link, bus and DRAM port: cycles busy over the run."""
    rows = []
    stream_links = {}
    for g in run.groups:
        for link, busy in g.link_busy_per_iteration.items():
            stream_links[link] = stream_links.get(link, 0.0) + busy * g.iterations
    stream_bus = sum(stream_links.values())
    dram_stream = 0.0
    for g in run.groups:
        for port, (bits, rate) in g.port_bits_per_iteration.items():
            if _is_dram_port(port):
                dram_stream += bits / rate * g.iterations
    mine = scheduled.busy
    for use in result.ports:
        stream_value = dram_stream if use.kind == "dram_port" else stream_bus
        mechanism = (
            "per iteration Stream charges each transfer its share x route latency at the link's own "
            "width; the replay holds the medium for every burst at the slower of the medium and the "
            "DRAM port, for every part and halo it moves"
            if use.kind != "dram_port"
            else "Stream's DRAM port demand counts halo-free tiles and amortised weights; the replay "
            "moves what each step's window needs and its core does not hold yet, for each core"
        )
        rows.append(Row(SECTION, None, f"{use.name} busy over the run", stream_value, None, mechanism,
                        mine.get(use.name, 0) or None, use.busy_cycles))  # fmt: skip
    return rows


def _dram_rows(run: StreamRun, chip_run: Any, shapes: dict) -> list[Row]:
    plan = chip_run.plan
    tensors = {t.name for t in plan.workload.tensors}
    width = next(p.width_bits for p in plan.chip.offchip.ports)
    ours = dram_bits(chip_run)
    theirs = stream_dram_bits(run, tensors)
    beyond = _beyond_edge(plan, shapes)
    rows = []
    for tensor in sorted(set(ours) | set(theirs)):
        a, b = theirs.get(tensor, 0.0), ours.get(tensor, 0)
        mechanism = ""
        if ceil(a / width) != ceil(b / width):
            notes = []
            if beyond.get(tensor):
                notes.append(
                    f"{beyond[tensor]:,} of the replay's bits lie beyond the tensor's ONNX shape: the "
                    "import gave a dimension no extent to clip at (Projection.size), so a "
                    "convolution's border or a rank padded to whole spatial steps moves too"
                )
            fetches = _stream_firings(run, tensor, tensors)
            moves = sum(
                1
                for t in plan.transfers
                if t.tensor == tensor and any(plan.hops[h].dram_port is not None for h in t.hops)
            )
            notes.append(
                f"Stream moves it in {fetches} firing(s) (N / reuse factor per transfer), each its "
                f"moved bits, which leave out the halo a sliding window keeps resident; the replay "
                f"in {moves} DRAM transfer(s), each what a step's window needs and its core does "
                "not hold yet (halo rows included where the core's previous step was elsewhere), a "
                "weight once per core and layer (multicast)"
            )
            mechanism = "; ".join(notes)
        rows.append(Row(SECTION, None, f"DRAM words ({width}-bit) of {tensor}", ceil(a / width), None,
                        mechanism, ceil(b / width), ceil(b / width)))  # fmt: skip
    return rows


def _stream_firings(run: StreamRun, tensor: str, tensors: set[str]) -> int:
    return sum(
        ceil(g.iterations / max(t.reuse_factor, 1))
        for g in run.groups
        for t in g.transfers
        if t.kind in ("MEM_TO_COMPUTE", "COMPUTE_TO_MEM") and tensor_of(t.tensor, tensors) == tensor
    )


def _beyond_edge(plan: Any, shapes: dict) -> dict[str, int]:
    """Per tensor, bits the chip moves outside the tensor's real extent (unclipped borders)."""
    out: dict[str, int] = {}
    for t in plan.transfers:
        extent = shapes.get(t.tensor)
        if not extent or len(extent) != len(t.box):
            continue
        whole = prod(hi - lo for lo, hi in t.box)
        inside = prod(
            max(0, min(hi, e) - max(lo, 0)) for (lo, hi), e in zip(t.box, extent, strict=True)
        )
        if whole and inside < whole:
            out[t.tensor] = out.get(t.tensor, 0) + (whole - inside) * t.bits // whole * len(t.hops)
    return out


__all__ = ["largest_waits", "replay_rows", "tensor_of"]
