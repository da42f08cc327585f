"""The architectural changes that could remove one cause, each in words with its changed
architecture; explain replays them (the DRAM causes' changes are in dram_remedies.py). A full
buffer whose slot is held by a slow write-back also gets the write-back's own changes, and one
whose write-back waited for the PE array's pipeline, and a latency the pipeline causes, get a
pipeline without that delay."""

from __future__ import annotations

from dataclasses import replace

from cyclesim import vocabulary
from cyclesim.analysis.explain.arch_changes import (
    double_buffer,
    own_port,
    widen,
    with_memory,
    with_port,
)
from cyclesim.analysis.explain.causes import Cause
from cyclesim.analysis.explain.transfer import SlotHolding, TransferEnds, per_cycle
from cyclesim.results.stall_span import is_pipeline_latency
from cyclesim.schedule.types import PortRef
from cyclesim.spec import Architecture, Workload

GROW = "if it does not fit: "


def candidates(
    c: Cause,
    arch: Architecture,
    workload: Workload,
    demand: int = 0,
    ends: TransferEnds | None = None,
    write_back: TransferEnds | None = None,
    holding: SlotHolding | None = None,
) -> list[tuple[str, Architecture]]:
    """Architectural changes that could remove cause c, each described in words.

    A change whose text starts with GROW is the fallback of the one before it. `demand` is the
    bits per step of a spatially stalled operand; `ends` the two ports of the transfer the cause
    waits on (a transfer waits the larger of its two ports' latencies and moves bursts of the
    smaller of their bursts, each holding both ports for the slower side's cycles);
    `write_back` the ports of the write-back that frees a buffer_full cause's slot, `holding`
    how many of its cycles that write-back waited for the PE array's pipeline and how many it
    took itself (without `holding`, all its own).

    Over 80 lines: one short block per remedy family (slots, write-back, pipeline, systolic,
    port width, port sharing, latency, DMA) in the order explain lists them; they share the
    cause's port, far port and DMA engine, looked up once at the top.
    """
    other_port = ends.far if ends is not None else None
    out: list[tuple[str, Architecture]] = []
    port = arch.memory(c.port_memory).ports if c.port_memory else ()
    p = next((x for x in port if x.name == c.port), None)
    if (
        c.memory
        and c.tensor
        and c.cause
        in (
            vocabulary.Cause.BUFFER_FULL,
            vocabulary.Cause.BANDWIDTH,
            vocabulary.Cause.LATENCY,
            vocabulary.Cause.CONTENTION,
        )
    ):
        mem = next((m for m in arch.memories if m.name == c.memory), None)
        if mem is not None and mem.slots_for(c.tensor) == 1:
            db = double_buffer(arch, c.memory, c.tensor)
            out.append((f"double-buffer {c.tensor} in {c.memory}", db))
            if mem.size_bits is not None:  # tried only when the plain one does not fit
                out.append(
                    (
                        f"{GROW}double-buffer {c.tensor} in {c.memory} and grow {c.memory} from "
                        f"{mem.size_bits} to {2 * mem.size_bits} bits",
                        with_memory(db, c.memory, size_bits=2 * mem.size_bits),
                    )
                )
    if c.cause == vocabulary.Cause.BUFFER_FULL and write_back is not None:
        if holding is None or holding.write_back_cycles:
            out.extend(_write_back_changes(c, arch, write_back))
        if holding is not None and holding.pipeline_cycles:
            out.append(_pipeline_cut(arch))
    if is_pipeline_latency(c) and arch.pe_array.pipeline_depth_cycles:
        out.append(_pipeline_cut(arch))  # the run's last results, or a tile's, wait in it
    systolic = arch.pe_array.systolic
    if (
        c.cause in (vocabulary.Cause.SYSTOLIC_FILL, vocabulary.Cause.SYSTOLIC_DRAIN)
        and systolic
        and not systolic.overlap_folds
    ):
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
    if p is not None and c.cause == vocabulary.Cause.SPATIAL and demand:
        out.append(
            (
                f"widen port {c.port_memory}.{p.name} from {p.width_bits} to {demand} bits/cycle (the operand's "
                "demand per step)",
                with_port(arch, c.port_memory, p.name, width_bits=max(demand, p.width_bits)),
            )
        )
    if p is not None and c.cause in (vocabulary.Cause.BANDWIDTH, vocabulary.Cause.CONTENTION):
        out.append(widen(arch, c, p, ends))
    if (
        p is not None
        and c.cause == vocabulary.Cause.CONTENTION
        and c.tensor
        and c.competitor != "PE array"
    ):
        own = own_port(arch, workload, c.port_memory, p.name, c.tensor)
        far = other_port
        both = (
            own_port(own, workload, far.memory, far.name, c.tensor)
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
    if p is not None and c.cause == vocabulary.Cause.LATENCY and p.latency_cycles:
        cut = with_port(arch, c.port_memory, p.name, latency_cycles=0)
        if other_port is not None and other_port.latency_cycles:
            # cutting only the charged port leaves the other side's latency in its place
            out.append(
                (
                    f"cut the latency of ports {c.port_memory}.{p.name} and {other_port.key} "
                    f"from {p.latency_cycles} and {other_port.latency_cycles} to 0 cycles (a "
                    "transfer waits the larger of its two ports' latencies)",
                    with_port(cut, other_port.memory, other_port.name, latency_cycles=0),
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
    if dma is not None and c.cause == vocabulary.Cause.CONTENTION:
        dmas = tuple(
            replace(d, channels=d.channels + 1) if d is dma else d for d in arch.dma_engines
        )
        out.append(
            (
                f"add a channel to DMA engine {dma.name} ({dma.channels} -> {dma.channels + 1})",
                replace(arch, dma_engines=dmas),
            )
        )
    if dma is not None and c.cause == vocabulary.Cause.LATENCY and dma.setup_cycles:
        dmas = tuple(replace(d, setup_cycles=0) if d is dma else d for d in arch.dma_engines)
        out.append(
            (
                f"cut the setup of DMA engine {dma.name} from {dma.setup_cycles} to 0 cycles",
                replace(arch, dma_engines=dmas),
            )
        )
    return out


def _pipeline_cut(arch: Architecture) -> tuple[str, Architecture]:
    """The PE array without its pipeline delay, in words."""
    depth = arch.pe_array.pipeline_depth_cycles
    return (
        f"cut the PE array's pipeline from {depth} to 0 cycles (its results land as they are "
        "computed, so a tile's write-back starts at once)",
        replace(arch, pe_array=replace(arch.pe_array, pipeline_depth_cycles=0)),
    )


def write_back_cause(c: Cause, end: PortRef) -> Cause:
    """The write-back that holds buffer_full cause c's slot, as a bandwidth cause at one of its
    ports: what the remedies of a slow transfer (widen, DRAM) are proposed for."""
    return replace(
        c, cause=vocabulary.Cause.BANDWIDTH, port_memory=end.memory, port=end.name, competitor=None
    )


def held_by(
    c: Cause, arch: Architecture, write_back: TransferEnds, holding: SlotHolding | None = None
) -> str:
    """In words, what holds buffer_full cause c's slot: the write-back, its ports and rate, and
    first, for the cycles it waited for them, the PE array's results still in its pipeline."""
    parent, child = (
        (write_back.near, write_back.far)
        if write_back.near_is_parent
        else (write_back.far, write_back.near)
    )
    rate = write_back.rate(write_back.near, write_back.far)
    slots = arch.memory(c.memory).slots_for(c.tensor)
    kept = f"{slots} slot{'s' if slots > 1 else ''} of {c.tensor} in {c.memory}"
    most = " (the most a node keeps: a third slot cannot be given)" if slots > 1 else ""
    text = (
        f"the write-back of {c.tensor} from {c.memory} to {parent.memory} ({child.key} -> "
        f"{parent.key}, {per_cycle(rate)} per {c.memory} instance, {write_back.near.key} binds)"
    )
    if holding is not None and holding.pipeline_cycles:
        depth = arch.pe_array.pipeline_depth_cycles
        text = (
            f"the PE array, for {holding.pipeline_cycles:,} of these {c.cycles:,} cycles: the "
            f"tile's last results were still in its {depth}-cycle pipeline, so {text} could not "
            f"start; the write-back itself for {holding.write_back_cycles:,}"
        )
    return f"{text}; {kept}{most}"


def _write_back_changes(
    c: Cause, arch: Architecture, write_back: TransferEnds
) -> list[tuple[str, Architecture]]:
    """What would free c's slot sooner: a wider write-back (at its binding end, with the far end
    when that one binds next) and, when its ports have latency, none at either end."""
    near, far = write_back.near, write_back.far
    port = next(p for p in arch.memory(near.memory).ports if p.name == near.name)
    out = [widen(arch, write_back_cause(c, near), port, write_back)]
    slow = [end for end in (near, far) if end.latency_cycles]
    if len(slow) == 1:
        (end,) = slow
        out.append(
            (
                f"cut the latency of port {end.key} from {end.latency_cycles} to 0 cycles",
                with_port(arch, end.memory, end.name, latency_cycles=0),
            )
        )
    elif slow:
        cut = with_port(arch, near.memory, near.name, latency_cycles=0)
        out.append(
            (
                f"cut the latency of ports {near.key} and {far.key} from {near.latency_cycles} "
                f"and {far.latency_cycles} to 0 cycles (a transfer waits the larger of its two "
                "ports' latencies)",
                with_port(cut, far.memory, far.name, latency_cycles=0),
            )
        )
    return out
