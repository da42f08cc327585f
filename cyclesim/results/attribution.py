"""Every cycle the PE array does not complete a step, charged to one root cause.

attribute() gathers a run's stall spans: the PE array's waits (walked to their roots by the
Attributor, results/attributor.py), spatial stalls, a systolic array's fill and drain, and
the offload after the last step. A stretch fast-forward repeated gives its spans as a repeat.
"""

from __future__ import annotations

from math import inf

from cyclesim.engine.rows import Repeat, Rows
from cyclesim.engine.run import RawRun
from cyclesim.results.attributor import Attributor
from cyclesim.results.spans import SpanCollector, SpanList, SpanRepeat, collect, same_moved
from cyclesim.results.stall_span import PIPELINE_DEPTH, StallSpan
from cyclesim.vocabulary import Cause, Direction, Fold, PeWait


def attribute(raw: RawRun) -> SpanList:
    """All stall spans of a run: onload, waits between steps, spatial stalls, offload."""
    rec, plan = raw.rec, raw.plan
    at = Attributor(raw)
    first = rec.first_step if rec.first_step is not None else raw.cycles
    producer_of = {leaf.operands[-1].tensor: leaf.einsum for leaf in plan.leaves}
    # the chain's first words, per node: for its tile, for its part to be produced
    tile_words = [(f"PE array waits for {n.tensor} tile at {n.memory}",) for n in plan.nodes]
    part_words = [(f"PE array waits for {n.tensor} at {n.memory}",) for n in plan.nodes]
    fill, produced = Direction.FILL, PeWait.PRODUCED

    def waits(rows) -> SpanList:
        spans = SpanCollector()
        for t0, t1, node, kind, key in rows:
            if t1 <= first:
                phase = "onload"
                at.earliest = -inf  # a later copy may be compute: not a copy of this one
            else:
                phase = "compute"
            if kind == produced:
                n = plan.nodes[node]
                spans.extend(
                    at.produced(
                        node, key, producer_of.get(n.tensor), t0, t1, phase, part_words[node]
                    )
                )
                continue
            spans.extend(at.explain(fill, node, t0, t1, phase, tile_words[node], entry=key))
        return spans.done()

    # DRAM-modelled memories record their rows ahead of the clock (engine/dram_port.py)
    out = _walk_waits(rec.pe_waits, waits, None if plan.dram else at)
    spans: list[StallSpan] = []
    for (li, oi, key), (cycles, start, end) in rec.spatial.items():
        leaf = plan.leaves[li]
        o = leaf.operands[oi]
        # the port that binds the step (DESIGN "Naming a stalled transfer's port")
        port = next(p for p in (o.read_port, o.write_port) if p is not None and p.key == key)
        spans.append(
            StallSpan(
                start,
                end,
                "compute",
                Cause.SPATIAL,
                plan.nodes[o.node].memory,
                o.tensor,
                port.name if port else None,
                port.memory if port else None,
                None,
                f"PE array steps of {leaf.einsum} wait on {port.key if port else '?'} "
                f"({o.values_per_step * o.bits} b per step, {port.width_bits if port else '?'} b/cycle)",
                cycles,
                "compute",
            )
        )
    spans.extend(_wavefront(raw))
    out.add(spans)
    last = rec.last_step_end
    if raw.cycles > last:
        out.add(_offload(at, raw, last))
    return out


def _walk_waits(rows: Rows, waits, at: Attributor | None, after: float = -inf) -> SpanList:
    """The spans of the PE array's waits; a stretch fast-forward repeated K times gives its
    copies' spans as a SpanRepeat when they repeat exactly.

    Copy j's waits, and every row recorded in the stretch, are copy 1's moved j - 1 periods
    on (engine/rows.py): rows are dated when recorded, so those starting after the period
    fast-forward copied began were recorded in it or in a copy. When copy 1's walk reads no
    row starting earlier (at.earliest, results/attributor.py; at None: rows may be dated
    ahead), copy j's walk reads copy 1's rows moved on and gives copy 1's spans moved:
    copy 1 is walked alone. Otherwise copies 2, 3 and K are walked and compared, and when 3
    and K are 2 moved on, so is every copy between; else every copy is walked.

    after: rows are a copy of an enclosing stretch, whose rows repeat from after this cycle
    (the copy's period began); a repeat inside is trusted only when its walk reads no earlier.
    """
    out = SpanList()
    for piece in rows.pieces():
        if not isinstance(piece, Repeat):
            out.add(waits(piece))
            continue
        period = dict(piece.steps).get(0, 0)
        tiles = piece.tile.by if piece.tile is not None else None  # per node, per period
        K = piece.count
        copies: dict[int, SpanList] = {}

        began = _period_began_by(piece.base)

        def copy(j: int, piece=piece, copies=copies, began=began, P=period) -> SpanList:
            if j not in copies:
                inside = max(after, began + j * P)  # copy j's rows repeat from here on
                copies[j] = _walk_waits(piece.copy_rows(j), waits, at, inside)
            return copies[j]

        if at is not None:
            before, at.earliest = at.earliest, inf
            copy(1)
            read_from, at.earliest = at.earliest, min(before, at.earliest)
            if read_from > max(after, began):
                out.add(SpanRepeat(copies[1], K, period, tiles))
                continue
        out.add(copy(1))
        if K >= 4 and (
            same_moved(copy(2), copy(3), period, 1, tiles)
            and same_moved(copy(2), copy(K), (K - 2) * period, K - 2, tiles)
        ):
            out.add(SpanRepeat(copy(2), K - 1, period, tiles))
            continue

        for j in range(2, K + 1):
            out.add(copy(j))
            copies.pop(j, None)
    return out


def _period_began_by(base: Rows) -> int:
    """A cycle at or after the start of the period fast-forward copied, from its PE waits
    (base): a wait is recorded when it ends, the first row's end or, when its wait was split
    in two (resident, then produced), the second's."""
    return max(row[1] for row in base[:2])


def _wavefront(raw: RawRun) -> list[StallSpan]:
    """A systolic array's fill and drain cycles, one span per leaf and kind, like spatial stalls.

    They lie between the PE array's first step and its last one, so they are compute-phase
    stalls: cycles in which the array completes no iteration of the loop nest.
    """
    plan, spans = raw.plan, []
    for (li, kind), (cycles, start, end) in raw.rec.systolic.items():
        leaf = plan.leaves[li]
        what = "preload and skew of each fold" if kind == Fold.FILL else "wavefront draining out"
        cause = Cause.SYSTOLIC_FILL if kind == Fold.FILL else Cause.SYSTOLIC_DRAIN
        spans.append(
            StallSpan(
                start,
                end,
                "compute",
                cause,
                None,
                None,
                None,
                None,
                None,
                f"PE array of {leaf.einsum}: {what} ({plan.systolic.dataflow.value} systolic array)",
                cycles,
                "compute",
            )
        )
    return spans


def _offload(at: Attributor, raw: RawRun, last: int) -> list[StallSpan] | SpanList:
    """After the last step: follow the write-back that lands last, back to its roots."""
    plan, rec = raw.plan, raw.rec
    best, best_t = None, -1
    for n in plan.nodes:
        tl = rec.drain_tl[n.index]
        if tl and tl[-1][0] > best_t:
            best, best_t = n.index, tl[-1][0]
    if best is None or best_t < raw.cycles:
        return [
            StallSpan(
                last,
                raw.cycles,
                "offload",
                Cause.LATENCY,
                None,
                None,
                None,
                None,
                None,
                PIPELINE_DEPTH,
                raw.cycles - last,
            )
        ]
    n = plan.nodes[best]
    return collect(
        at.explain(
            Direction.WRITE_BACK,
            best,
            last,
            raw.cycles,
            "offload",
            (f"run ends with the write-back of {n.tensor} from {n.memory}",),
        )
    )
