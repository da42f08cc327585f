"""Closed-form access counts of a plan: the numbers the engine's counted events must equal."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from cyclesim.schedule.plan import NodePlan, Plan
from cyclesim.schedule.steps import program_blocks, segment_classifier

READ, WRITE = "read", "write"
READ_TO_BELOW, WRITE_FROM_ABOVE = "read_to_below", "write_from_above"
READ_TO_ABOVE, WRITE_FROM_BELOW = "read_to_above", "write_from_below"


@dataclass(frozen=True, slots=True)
class Access:
    """One fact: an Einsum's tensor moved in one direction at one memory."""

    einsum: str
    tensor: str
    memory: str
    action: str
    direction: str
    values: int
    bits: int


def transfer_bits(node: NodePlan, final: bool) -> int:
    """Bits per value of a node's tensor when it moves: final width once reduced."""
    if node.output_role and not final:
        return node.psum_bits
    return node.bits


def closed_form(plan: Plan) -> list[Access]:
    """Every storage node's fills, reloads and write-backs, and the PE array's operand accesses.

    Over 80 lines: one loop per kind of access (storage nodes, the PE array's operands, re-reads
    after another Einsum) appending to one table.
    """
    rows: list[Access] = []
    nodes = plan.nodes
    for n in nodes:
        if n.parent is None:
            continue
        p = nodes[n.parent]
        par = n.union_values * n.parent_instances
        chi = n.tile_values * n.instances
        if not n.output_role:
            e = n.fills  # an entry at a level where the tile stands still is no refill
            rows.append(
                Access(n.owner, n.tensor, p.memory, READ, READ_TO_BELOW, e * par, e * par * n.bits)
            )
            rows.append(
                Access(
                    n.owner, n.tensor, n.memory, WRITE, WRITE_FROM_ABOVE, e * chi, e * chi * n.bits
                )
            )
            continue
        reloads = n.entries - n.distinct
        finals, partials = n.distinct, n.entries - n.distinct
        ps, fb = n.psum_bits, n.bits
        rows.append(
            Access(
                n.owner, n.tensor, p.memory, READ, READ_TO_BELOW, reloads * par, reloads * par * ps
            )
        )
        rows.append(
            Access(
                n.owner,
                n.tensor,
                n.memory,
                WRITE,
                WRITE_FROM_ABOVE,
                reloads * chi,
                reloads * chi * ps,
            )
        )
        rows.append(
            Access(
                n.owner,
                n.tensor,
                n.memory,
                READ,
                READ_TO_ABOVE,
                n.entries * chi,
                chi * (finals * fb + partials * ps),
            )
        )
        rows.append(
            Access(
                n.owner,
                n.tensor,
                p.memory,
                WRITE,
                WRITE_FROM_BELOW,
                n.entries * par,
                par * (finals * fb + partials * ps),
            )
        )
    for leaf in plan.leaves:
        steps = leaf.steps
        for o in leaf.operands:
            mem = nodes[o.node].memory
            per = o.values_per_step * o.instances
            if o.is_output:
                rows.append(
                    Access(
                        leaf.einsum,
                        o.tensor,
                        mem,
                        WRITE,
                        WRITE_FROM_BELOW,
                        steps * per,
                        steps * per * o.bits,
                    )
                )
                if o.read_port is not None:
                    first = prod(
                        b for b, r in zip(leaf.bounds, leaf.out_relevant, strict=True) if r
                    )
                    v = (steps - first) * per
                    rows.append(
                        Access(leaf.einsum, o.tensor, mem, READ, READ_TO_BELOW, v, v * o.bits)
                    )
            else:
                # one read per step of a level <= change_depth (prod of the loops to it), less
                # the steps of such a level at which an affine index stands still (loop l
                # moved); a still level below change_depth reads nothing anyway (reads_at)
                steps_read = prod(leaf.bounds[: o.change_depth]) - sum(
                    prod(leaf.bounds[: lv - 1]) * (leaf.bounds[lv - 1] - 1)
                    for lv in o.still_levels
                    if lv <= o.change_depth
                )
                v = steps_read * per
                rows.append(Access(leaf.einsum, o.tensor, mem, READ, READ_TO_BELOW, v, v * o.bits))
    for li, o, times in _rereads_after_other_einsum(plan):
        leaf = plan.leaves[li]
        v = times * o.values_per_step * o.instances
        rows.append(
            Access(leaf.einsum, o.tensor, nodes[o.node].memory, READ, READ_TO_BELOW, v, v * o.bits)
        )
    return merge(rows)


def _rereads_after_other_einsum(plan: Plan):
    """(leaf, input operand, reads) the retain rule adds where a block of a leaf's steps follows
    another Einsum's step: its first step re-reads every operand (DESIGN "Operand registers hold
    the previous cycle's value only"), also those whose value did not change.

    A block's first segment g0 has level segment_classifier(leaf)(g0)[0]; operand o would re-read
    there anyway when o.reads_at(level).
    """
    if len(plan.leaves) < 2:
        return
    extra: dict[tuple[int, int], int] = {}
    classify = {}
    previous = None
    for li, g0, _ in program_blocks(plan):
        after_other = previous is not None and previous != li
        previous = li
        if not after_other or g0 == 0:
            continue
        c = classify.get(li)
        if c is None:
            c = classify[li] = segment_classifier(plan.leaves[li])
        level = c(g0)[0]
        for i, o in enumerate(plan.leaves[li].operands):
            if not o.is_output and not o.reads_at(level):
                extra[(li, i)] = extra.get((li, i), 0) + 1
    for (li, i), times in extra.items():
        yield li, plan.leaves[li].operands[i], times


def merge(rows: list[Access]) -> list[Access]:
    """Sum rows with the same key and drop zeros, in first-seen order."""
    acc: dict[tuple, list[int]] = {}
    for r in rows:
        key = (r.einsum, r.tensor, r.memory, r.action, r.direction)
        cur = acc.setdefault(key, [0, 0])
        cur[0] += r.values
        cur[1] += r.bits
    return [Access(*k, v, b) for k, (v, b) in acc.items() if v or b]
