"""The PE array's work per segment, in closed form: cycles, spatial stalls and accesses.

A step is one iteration of the temporal loop nest. Its *level* is the outermost loop that
advanced into it (0 for the very first step), and an input operand's value changes in a step
iff level <= the operand's change depth and its projected coordinates moved (retain: an affine
index can stand still, Operand.reads_at) — every step under strict. An output element is
visited first iff every loop that does not index it is at 0. Steps of one segment fall into
a handful of (level, first-visit) classes whose counts are products of loop bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod
from typing import TYPE_CHECKING

from cyclesim.schedule.plan import LeafPlan, Plan

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class StepCost:
    cycles: int
    stall_port: str | None  # the port whose width set the cycles when > 1
    stall_operand: int | None
    port_bits: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class SegmentProfile:
    """What one segment of a leaf costs, given its first step's level and first-visit flag."""

    cycles: int
    steps: int
    spatial: tuple[tuple[tuple[int, str], int], ...]  # ((operand index, port key), stall cycles)
    port_bits: tuple[tuple[str, int], ...]  # bits through each PE-side port, per instance
    reads: tuple[int, ...]  # values read per operand (PE side, all instances)
    writes: tuple[int, ...]  # values written per operand


def step_cost(leaf: LeafPlan, level: int, first_visit: bool) -> StepCost:
    """Cycles of one step: the slowest port's ceil(bits / width), at least 1."""
    bits: dict[str, int] = {}
    width: dict[str, int] = {}
    owner: dict[str, int] = {}
    for i, o in enumerate(leaf.operands):
        b = o.values_per_step * o.bits
        if o.is_output:
            if o.read_port is not None and not first_visit:
                _add(bits, width, owner, o.read_port, b, i)
            if o.write_port is not None:
                _add(bits, width, owner, o.write_port, b, i)
        elif o.reads_at(level):
            _add(bits, width, owner, o.read_port, b, i)
    best, port, rank = 1, None, -1
    for key, b in bits.items():
        c = -(-b // width[key])
        o = leaf.operands[_most_bits(owner[key])]
        r = len(leaf.bounds) + 1 if o.is_output else o.change_depth
        # ties name the operand that changes most often (ZigZag charges the same port)
        if c > best or (c == best > 1 and r > rank):
            best, port, rank = c, key, r
    stall_operand = _most_bits(owner[port]) if port is not None else None
    return StepCost(best, port, stall_operand, tuple(bits.items()))


def _add(bits: dict, width: dict, owner: dict, port, b: int, i: int) -> None:
    """Add an operand's bits to a port, and to the operand's bits on it (DESIGN "Naming a
    stalled transfer's port": a port's spatial stall names the operand with the most bits
    through it, ties in operand order)."""
    bits[port.key] = bits.get(port.key, 0) + b
    width[port.key] = port.width_bits
    on = owner.setdefault(port.key, {})
    on[i] = on.get(i, 0) + b


def _most_bits(on: dict[int, int]) -> int:
    """The operand with the most bits on a port, the first in operand order on a tie."""
    return min(on, key=lambda i: (-on[i], i))


def segment_classifier(leaf: LeafPlan):
    """A function g -> (level of segment g's first step, whether it visits output elements
    first): the level is the position + 1 of g's innermost non-zero loop digit (0 if none); it
    visits them first iff every loop that does not index the output has digit 0. The digit loop
    is turned into strides once.

    The level is found from the innermost digit outwards and stops at the first non-zero one;
    the first-visit test looks at runs of adjacent loops that do not index the output, each run
    one division: its digits are all 0 iff g // stride % (product of their bounds) is 0.
    """
    digits, runs = _digits_and_runs(leaf)

    def classify(g: int) -> tuple[int, bool]:
        level = 0
        for stride, bound, lv in digits:
            if g // stride % bound:
                level = lv
                break
        for stride, span in runs:
            if g // stride % span:
                return level, False
        return level, True

    return classify


def segment_classes(leaf: LeafPlan, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """segment_classifier's (level, first visit) of every segment number in g, by numpy: the
    trace's PE pieces classify every recorded segment (62,500 on the memory-size example)."""
    import numpy as np  # here: the replay imports this module and needs no numpy (lean start)

    digits, runs = _digits_and_runs(leaf)
    level = np.zeros(len(g), dtype=np.int64)
    found = np.zeros(len(g), dtype=bool)
    for stride, bound, lv in digits:  # innermost first: the first non-zero digit wins
        hit = ~found & (g // stride % bound != 0)
        level[hit] = lv
        found |= hit
    first = np.ones(len(g), dtype=bool)
    for stride, span in runs:
        first &= g // stride % span == 0
    return level, first


def _digits_and_runs(leaf: LeafPlan) -> tuple[tuple, tuple]:
    """(stride, bound, level) of each loop digit, innermost first, and (stride, product of
    bounds) of each run of adjacent loops that do not index the output."""
    digits = []  # (stride, bound, level), innermost loop first
    runs = []  # (stride, product of bounds) of adjacent loops that do not index the output
    stride = 1
    for pos in range(leaf.seg_depth - 1, -1, -1):
        bound = leaf.bounds[pos]
        digits.append((stride, bound, pos + 1))
        if not leaf.out_relevant[pos]:
            if runs and runs[-1][0] * runs[-1][1] == stride:  # extends the run just inside it
                runs[-1] = (runs[-1][0], runs[-1][1] * bound)
            else:
                runs.append((stride, bound))
        stride *= bound
    digits, runs = tuple(digits), tuple(runs)
    return digits, runs


@lru_cache(maxsize=4096)
def segment_profile(leaf: LeafPlan, level: int, first: bool) -> SegmentProfile:
    """Closed-form cycles, spatial stalls and PE accesses of one segment."""
    n_ops = len(leaf.operands)
    reads = [0] * n_ops
    writes = [0] * n_ops
    spatial: dict[tuple[int, str], int] = {}
    port_bits: dict[str, int] = {}
    cycles = 0
    steps = 0
    J, bounds, rel = leaf.seg_depth, leaf.bounds, leaf.out_relevant

    def account(lv: int, fv: bool, count: int) -> None:
        nonlocal cycles, steps
        if count <= 0:
            return
        c = step_cost(leaf, lv, fv)
        cycles += c.cycles * count
        steps += count
        for key, b in c.port_bits:
            port_bits[key] = port_bits.get(key, 0) + b * count
        if c.cycles > 1:
            key = (c.stall_operand, c.stall_port)
            spatial[key] = spatial.get(key, 0) + (c.cycles - 1) * count
        for i, o in enumerate(leaf.operands):
            v = o.values_per_step * o.instances * count
            if o.is_output:
                writes[i] += v
                if o.read_port is not None and not fv:
                    reads[i] += v
            elif o.reads_at(lv):
                reads[i] += v

    account(level, first, 1)
    for d in range(J + 1, len(bounds) + 1):
        total = prod(bounds[J : d - 1]) * (bounds[d - 1] - 1)
        fv = 0
        if first and rel[d - 1]:
            fv = prod(b for b, r in zip(bounds[J : d - 1], rel[J : d - 1], strict=True) if r) * (
                bounds[d - 1] - 1
            )
        account(d, True, fv)
        account(d, False, total - fv)
    return SegmentProfile(
        cycles,
        steps,
        tuple(sorted(spatial.items())),
        tuple(port_bits.items()),
        tuple(reads),
        tuple(writes),
    )


def program_blocks(plan: Plan):
    """The PE array's segments in execution order, in blocks: (leaf index, first g, end g)."""
    leaves = plan.leaves

    def gen(item, q: int, outer: int):
        if isinstance(item, int):
            per = leaves[item].segments // outer
            yield item, q * per, (q + 1) * per
            return
        inner = item.iterations // outer
        for q2 in range(q * inner, (q + 1) * inner):
            for branch in item.branches:
                yield from gen(branch, q2, item.iterations)

    yield from gen(plan.root, 0, 1)


def program(plan: Plan):
    """The PE array's segments in execution order: (leaf index, segment index)."""
    for li, g0, g1 in program_blocks(plan):
        for g in range(g0, g1):
            yield li, g
