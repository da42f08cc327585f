"""What a cause's remedies need to know of the run: the two ports of the transfer it waits on
(TransferEnds, with the rate a full burst moves at), the write-back that holds a full buffer's
slot, and a spatial operand's bits per step."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from cyclesim.analysis.explain.causes import Cause
from cyclesim.results import SimResult
from cyclesim.results.attribution import BUFFER_FULL, SPATIAL
from cyclesim.schedule.types import PortRef


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


def per_cycle(rate: Fraction) -> str:
    """A transfer's rate in words: '8 b/cycle', '10.67 b/cycle'."""
    return f"{rate} b/cycle" if rate.denominator == 1 else f"{float(rate):.2f} b/cycle"


def transfer_ends(res: SimResult, c: Cause) -> TransferEnds | None:
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


def write_back_ends(res: SimResult, c: Cause) -> TransferEnds | None:
    """For a buffer_full cause: both ends of the write-back that frees the held slot, the end
    that binds a full burst first (near), else None (the node writes nothing back).

    A slot of an output node is free only once its tile is written back, so a slow write-back
    keeps the next tile waiting; its ports are what a remedy for the cause can act on.
    """
    if c.cause != BUFFER_FULL:
        return None
    for n in res.raw.plan.nodes:
        if (n.memory, n.tensor) != (c.memory, c.tensor) or n.drain_src is None:
            continue
        if n.drain_dst is None:
            continue
        ratio = Fraction(n.union_values, n.tile_values) if n.tile_values else Fraction(1)
        parent, child = n.drain_dst, n.drain_src
        burst = min(parent.burst_bits, child.burst_bits)
        parent_binds = math.ceil(burst * ratio / parent.width_bits) >= -(-burst // child.width_bits)
        if parent_binds:  # a tie goes to the parent's port, as attribution charges it
            return TransferEnds(parent, child, True, ratio)
        return TransferEnds(child, parent, False, ratio)
    return None


def operand_demand(res: SimResult, c: Cause) -> int:
    """Bits per step the PE array reads of c's operand (for a spatial stall), else 0."""
    if c.cause != SPATIAL:
        return 0
    plan = res.raw.plan
    for leaf in plan.leaves:
        for o in leaf.operands:
            if o.tensor == c.tensor and plan.nodes[o.node].memory == c.memory:
                return o.values_per_step * o.bits
    return 0
