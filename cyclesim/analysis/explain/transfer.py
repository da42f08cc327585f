"""What a cause's remedies need to know of the run: the two ports of the transfer it waits on
(TransferEnds, with the rate a full burst moves at), the write-back that holds a full buffer's
slot and what that write-back was waiting for (SlotHolding), and a spatial operand's bits per
step."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

from cyclesim import vocabulary
from cyclesim.analysis.explain.causes import KEYS, Cause
from cyclesim.results import Result
from cyclesim.schedule.types import PortRef
from cyclesim.vocabulary import Wait


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
        parent_cycles, child_cycles = _burst_cycles(parent, child, self.parent_bits_per_child_bit)
        return Fraction(
            min(parent.burst_bits, child.burst_bits), max(parent_cycles, child_cycles, 1)
        )


def _burst_cycles(
    parent: PortRef, child: PortRef, parent_bits_per_child_bit: Fraction
) -> tuple[int, int]:
    """The cycles one full burst (the smaller of the two ports' bursts) takes at the parent's
    port and at the child's, as engine/transfer.py times it."""
    burst = min(parent.burst_bits, child.burst_bits)
    return (
        math.ceil(burst * parent_bits_per_child_bit / parent.width_bits),
        -(-burst // child.width_bits),
    )


def _parent_bits_per_child_bit(n) -> Fraction:
    """A node's union over its tile: > 1 for a multicast or a spatial reduction."""
    return Fraction(n.union_values, n.tile_values) if n.tile_values else Fraction(1)


def per_cycle(rate: Fraction) -> str:
    """A transfer's rate in words: '8 b/cycle', '10.67 b/cycle'."""
    return f"{rate} b/cycle" if rate.denominator == 1 else f"{float(rate):.2f} b/cycle"


def transfer_ends(res: Result, c: Cause) -> TransferEnds | None:
    """Both ends of the fill or write-back cause c is charged to, else None."""
    if c.port_memory is None:
        return None
    for n in res.raw.plan.nodes:
        if n.memory != c.memory or n.tensor != c.tensor:
            continue
        ratio = _parent_bits_per_child_bit(n)
        # (parent end, child end) of the fill and of the write-back
        for parent, child in ((n.fill_src, n.fill_dst), (n.drain_dst, n.drain_src)):
            if parent is None or child is None:
                continue
            if (parent.memory, parent.name) == (c.port_memory, c.port):
                return TransferEnds(parent, child, True, ratio)
            if (child.memory, child.name) == (c.port_memory, c.port):
                return TransferEnds(child, parent, False, ratio)
    return None


def write_back_ends(res: Result, c: Cause) -> TransferEnds | None:
    """For a buffer_full cause: both ends of the write-back that frees the held slot, the end
    that binds a full burst first (near), else None (the node writes nothing back).

    A slot of an output node is free only once its tile is written back, so a slow write-back
    keeps the next tile waiting; its ports are what a remedy for the cause can act on.
    """
    if c.cause != vocabulary.Cause.BUFFER_FULL:
        return None
    for n in res.raw.plan.nodes:
        if (n.memory, n.tensor) != (c.memory, c.tensor) or n.drain_src is None:
            continue
        if n.drain_dst is None:
            continue
        ratio = _parent_bits_per_child_bit(n)
        parent, child = n.drain_dst, n.drain_src
        parent_cycles, child_cycles = _burst_cycles(parent, child, ratio)
        if parent_cycles >= child_cycles:  # a tie goes to the parent's port, as attribution does
            return TransferEnds(parent, child, True, ratio)
        return TransferEnds(child, parent, False, ratio)
    return None


@dataclass(frozen=True, slots=True)
class SlotHolding:
    """What held a buffer_full cause's slot, cycle by cycle of the cause: the PE array, whose
    last results for the holding tile were still in its pipeline (the write-back cannot start
    before they land), or the tile's write-back itself (moving, or waiting for its ports or its
    parent's tile). The two add up to the cause's cycles."""

    pipeline_cycles: int
    write_back_cycles: int


def slot_holding(res: Result, c: Cause) -> SlotHolding | None:
    """For a buffer_full cause whose holding tiles are written back: how many of its cycles the
    holding tile waited on the PE array's pipeline, and how many on its write-back; else None.

    The slot of an output tile frees when its write-back ends; the write-back process takes
    the tiles in order, so during the wait it is on the holding tile (the oldest not freed),
    and its timeline says what it was doing: Wait.PIPELINE is the PE array's pipeline delay.
    """
    if c.cause != vocabulary.Cause.BUFFER_FULL:
        return None
    key = tuple(getattr(c, k) for k in KEYS)
    pipeline = write_back = 0
    drains = res.raw.rec.drain_tl
    for span in res.spans:
        if span.holder is None or tuple(getattr(span, k) for k in KEYS) != key:
            continue
        node = span.holder[0]
        if res.raw.plan.nodes[node].drain_src is None:
            return None  # an input tile's slot: its readers hold it, not a write-back
        timeline = drains[node]
        for start, end, state in timeline_states(timeline, span.start, span.end):
            if state == Wait.PIPELINE:
                pipeline += end - start
            else:
                write_back += end - start
    if not pipeline and not write_back:
        return None
    return SlotHolding(pipeline, write_back)


def timeline_states(timeline: Sequence[tuple], a: int, b: int) -> Iterator[tuple[int, int, str]]:
    """(start, end, state) of a process's timeline rows (a list, or engine/rows.py's Rows that
    keep repeats) over [a, b), in time order."""
    if hasattr(timeline, "bisect_right"):  # engine/rows.py: records kept as repeats
        i = timeline.bisect_right(a)
    else:
        i = bisect_right(timeline, a, key=lambda row: row[0])
    i = max(0, i - 1)
    n = len(timeline)
    while i < n:
        t, state = timeline[i][0], timeline[i][1]
        if t >= b:
            break
        end = timeline[i + 1][0] if i + 1 < n else b
        if end > a:
            yield max(a, t), min(b, end), state
        i += 1


def operand_demand(res: Result, c: Cause) -> int:
    """Bits per step the PE array reads of c's operand (for a spatial stall), else 0."""
    if c.cause != vocabulary.Cause.SPATIAL:
        return 0
    plan = res.raw.plan
    for leaf in plan.leaves:
        for o in leaf.operands:
            if o.tensor == c.tensor and plan.nodes[o.node].memory == c.memory:
                return o.values_per_step * o.bits
    return 0
