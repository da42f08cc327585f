"""Copies of an architecture with one thing changed, as explain's remedies propose them: a
memory's or port's fields, a tensor double-buffered or split onto its own port, a port widened
(with the far end of its transfer when that end binds next)."""

from __future__ import annotations

from dataclasses import replace

from cyclesim.analysis.explain.causes import Cause
from cyclesim.analysis.explain.transfer import TransferEnds, per_cycle
from cyclesim.spec import Architecture, Direction, Memory, Port, Workload


def with_memory(arch: Architecture, name: str, **changes) -> Architecture:
    """A copy of arch with memory `name`'s fields changed."""
    mems = tuple(replace(m, **changes) if m.name == name else m for m in arch.memories)
    return replace(arch, memories=mems)


def with_port(arch: Architecture, memory: str, port: str, **changes) -> Architecture:
    """A copy of arch with one port's fields changed."""
    mem = arch.memory(memory)
    ports = tuple(replace(p, **changes) if p.name == port else p for p in mem.ports)
    return with_memory(arch, memory, ports=ports)


def double_buffer(arch: Architecture, memory: str, tensor: str) -> Architecture:
    """A copy of arch with `tensor` double-buffered in `memory` (arch itself if it already is)."""
    mem = arch.memory(memory)
    db = mem.double_buffered
    if db is True or (not isinstance(db, bool) and tensor in db):
        return arch
    new = (tensor,) if db is False else tuple(db) + (tensor,)
    return with_memory(arch, memory, double_buffered=new)


def own_port(
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
    return with_memory(arch, memory, ports=ports)


def widen(
    arch: Architecture, c: Cause, p: Port, ends: TransferEnds | None
) -> tuple[str, Architecture]:
    """Double the bits per cycle at c's port: widen it (and its burst, and the far side's burst
    when that one would cut the transfer's bursts); when the far side then binds (both ends as
    narrow, e.g. a multicast's parent port against each child's), widen both ends together."""
    burst = max(p.burst_bits, 2 * p.width_bits)
    wider = with_port(arch, c.port_memory, p.name, width_bits=2 * p.width_bits, burst_bits=burst)
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
        wider = with_port(wider, far.memory, far.name, burst_bits=burst)
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
    now = "as now" if alone == before else f"now {per_cycle(before)}"
    both = with_port(
        arch, c.port_memory, p.name, width_bits=2 * p.width_bits, burst_bits=2 * p.burst_bits
    )
    both = with_port(
        both, far.memory, far.name, width_bits=2 * far.width_bits, burst_bits=2 * far.burst_bits
    )
    return (
        f"widen ports {near.key} and {far.key} together from {near.width_bits} and "
        f"{far.width_bits} to {2 * near.width_bits} and {2 * far.width_bits} bits/cycle, bursts "
        f"{near.burst_bits} and {far.burst_bits} -> {2 * near.burst_bits} and "
        f"{2 * far.burst_bits} bits (each burst holds both ports for the slower side's cycles; "
        f"{near.key} alone: {per_cycle(alone)} per {child} instance, {now})",
        both,
    )
