"""One sentence per differing row of a ZigZag comparison, naming the mechanism (docs/reference/zigzag.md §3.11).

The replay's side of each sentence comes from its stall table (`stalls.stall_groups`):
which transfer the PE array waited for, through which port, on whom. ZigZag's side comes from
our reimplementation of its model: the port's combined stall or slack, its worst port, its
inferred double buffering.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, prod
from typing import TYPE_CHECKING

from cyclesim.checks.zigzag.inputs import DataDirection
from cyclesim.checks.zigzag.stalls import StallGroup
from cyclesim.vocabulary import Cause

if TYPE_CHECKING:
    from cyclesim.checks.zigzag.inputs import ZigZagInputs
    from cyclesim.checks.zigzag.latency import PortStall, ZigZagLatency
    from cyclesim.checks.zigzag.terms import AccessRow, Terms


def count(value: float) -> str:
    """A number of cycles or words with thousands separators: 3,265,890, not 3.26589e+06
    (ZigZag's terms are floats; a fractional one keeps up to two decimals)."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True, slots=True)
class ZigZagView:
    """What ZigZag's model says about a port or a buffer, looked up by the replay's names."""

    inputs: ZigZagInputs
    model: ZigZagLatency

    def port(self, key: str | None) -> PortStall | None:
        """ZigZag's combined stall/slack of port 'memory.port', None if it has no such port."""
        for stall in self.model.port_stalls:
            if f"{stall.memory}.{stall.port}" == key:
                return stall
        return None

    @property
    def worst(self) -> PortStall | None:
        """The port whose stall ZigZag reports as SS_comb."""
        return max(self.model.port_stalls, key=lambda p: p.stall_cycles, default=None)

    def double_buffered(self, tensor: str | None, memory: str | None) -> bool | None:
        """ZigZag's inferred double buffering of a tensor in a memory (None if not modelled)."""
        for db in self.model.double_buffers:
            if (db.layer_operand, db.memory) == (tensor, memory):
                return db.double_buffered
        return None

    def width(self, key: str | None) -> int | None:
        """bandwidth_max of port 'memory.port' in bits per cycle."""
        for memory in self.inputs.accelerator.memories:
            for port in memory.ports:
                if f"{memory.name}.{port.name}" == key:
                    return port.bandwidth_max_bits
        return None

    def on_port(self, key: str | None) -> str:
        """ZigZag's verdict on one port, as a clause."""
        stall, worst = self.port(key), self.worst
        if stall is None:
            return f"ZigZag models no port {key}"
        if stall.stall_cycles > 0:
            if worst is stall:
                return f"ZigZag charges {key} {count(stall.stall_cycles)} cycles, its worst port"
            return (
                f"ZigZag charges {key} {count(stall.stall_cycles)} cycles but counts only its worst "
                f"port, {worst.memory}.{worst.port} ({count(worst.stall_cycles)})"
            )
        slack = (
            f"{count(-stall.stall_cycles)} cycles of slack"
            if stall.stall_cycles
            else "no slack left"
        )
        return (
            f"ZigZag lets compute hide that traffic ({key}: every period fits its window, {slack})"
        )


def cause_sentence(cause: str, cycles: int, groups: list[StallGroup], view: ZigZagView) -> str:
    """The sentence of one 'stall: <cause>' row, told through the cause's largest group."""
    g = groups[0]
    rest = sum(x.cycles for x in groups[1:])
    more = f" (+{len(groups) - 1} smaller groups, {rest:,} cycles)" if len(groups) > 1 else ""
    head = f"stall, {cause} ({cycles:,} cycles): "
    if cause == Cause.SPATIAL:
        width = view.width(g.port) or 0
        bits = view.inputs.layer.precision(g.tensor) if g.tensor else 0
        pace = (
            f"one {bits}-bit value every {ceil(bits / width)} cycles"
            if width and bits
            else "slowly"
        )
        body = (
            f"the PE array reads {g.tensor} from {g.memory} through {g.port} at {width} b/cycle, "
            f"{pace}, so the MACs waited {g.cycles:,} cycles; {view.on_port(g.port)}"
        )
    elif cause == Cause.BANDWIDTH:
        body = (
            f"the MACs waited {g.cycles:,} cycles while the {g.what} moved its bursts through "
            f"{g.port} ({view.width(g.port)} b/cycle); {view.on_port(g.port)}"
        )
    elif cause == Cause.CONTENTION:
        body = (
            f"the {g.what} waited {g.cycles:,} cycles for {g.port}, busy with the {g.competitor}; "
            f"ZigZag never divides a port between its users, it only subtracts their slack from the "
            f"overlap of their windows (MUW union): {view.on_port(g.port)}"
        )
    elif cause == Cause.BUFFER_FULL:
        from cyclesim.checks.zigzag.to_spec import slot_flags

        db = view.double_buffered(g.tensor, g.memory)
        slots = "two slots" if db else "one slot"
        inferred = {
            True: " (ZigZag's own inference: double-buffered)",
            False: " (ZigZag's own inference: single-buffered, tile over half the memory)",
        }.get(db, "")
        if db and (g.tensor, g.memory) in slot_flags(view.inputs)[1]:
            # the replay fell back to one slot (the 'buffers:' note says why): say so here too
            slots = "one slot"
            inferred = " (ZigZag infers double buffering, but two whole tiles do not fit)"
        competitor = g.competitor or "an earlier tile"
        if not competitor.startswith("an earlier tile"):
            competitor = f"earlier tiles of {competitor}"
        body = (
            f"ZigZag lets compute hide the {g.what}; the replay's {g.tensor} tile at {g.memory} had "
            f"{slots}{inferred}, still held by {competitor}, so the MACs waited "
            f"{g.cycles:,} cycles"
        )
    elif cause == Cause.LATENCY:
        body = (
            f"the replay pays the latency of {g.port or 'the PE pipeline'} once per {g.what} "
            f"({g.cycles:,} cycles); ZigZag stores a memory's latency but its model never reads it"
        )
    elif cause == Cause.DEPENDENCY:
        body = (
            f"the {g.what} waited {g.cycles:,} cycles for a tile still in use or not yet produced; "
            f"ZigZag has no dependency between transfers"
        )
    else:
        body = f"the {g.what} waited {g.cycles:,} cycles; ZigZag has no such term"
    return head + body + more


def explain(
    inputs: ZigZagInputs,
    ours: ZigZagLatency,
    replay: Terms,
    analytical: Terms,
    zigzag: Terms | None,
    rows: list[AccessRow],
    groups: dict[str, tuple[StallGroup, ...]],
) -> list[str]:
    """Explanations for every row where the replay, the model or zigzag-dse differ."""
    view = ZigZagView(inputs, ours)
    out: list[str] = []
    if zigzag is not None and zigzag != analytical:
        out.append(
            "our reimplementation differs from zigzag-dse on a latency term: a bug in cyclesim's model, please report it"
        )
    worst = view.worst
    compute = list(groups.get("compute", ()))
    if replay.stall != analytical.stall and worst is not None:
        largest = f", the largest: {compute[0].short()}" if compute else ""
        out.append(
            f"stall: ZigZag charges only its worst port, {worst.memory}.{worst.port} ({count(worst.stall_cycles)} "
            f"cycles = (real - allowed) x (N - 1) over its transfers), and lets every other port work in "
            f"parallel with compute; the replay counts every cycle the PE array waits, so waits at "
            f"different ports add up to {count(replay.stall)} cycles{largest}"
        )
    by_cause: dict[str, list[StallGroup]] = {}
    for g in compute:
        by_cause.setdefault(g.cause, []).append(g)
    for cause, members in sorted(by_cause.items(), key=lambda kv: -sum(g.cycles for g in kv[1])):
        out.append(cause_sentence(cause, sum(g.cycles for g in members), members, view))
    for term, phase, zz_words in (
        ("onloading", "onload", "one period per link before compute"),
        ("offloading", "offload", "the last period of each output link after compute"),
    ):
        ours_t, theirs_t = getattr(replay, term), getattr(analytical, term)
        if ours_t == theirs_t:
            continue
        borrow = (
            f", with once-per-layer transfers shrunk to one innermost tile by borrowing "
            f"{count(ours.borrowed_cycles)} cycles of port time from compute (since 3.7)"
            if ours.borrowed_cycles
            else ""
        )
        top = "; ".join(g.short() for g in groups.get(phase, ())[:3]) or "nothing"
        replay_words = (
            "the first MAC waits until the first tile of every level has arrived"
            if phase == "onload"
            else "the run ends when the last output tiles have drained level by level to DRAM"
        )
        out.append(
            f"{term}: ZigZag counts {zz_words}{borrow}: {count(theirs_t)} cycles; in the replay {replay_words}, "
            f"{count(ours_t)} cycles: {top}"
        )
    if replay.ideal_cycles != analytical.ideal_cycles:
        pe_count = inputs.accelerator.pe_count
        used = inputs.layer.mac_count / max(ours.ideal_temporal_cycles, 1)
        if replay.ideal_cycles == ours.ideal_temporal_cycles:
            out.append(
                f"ideal compute: ZigZag's ideal assumes all {pe_count:,} PEs busy (MACs / PEs = "
                f"{count(analytical.ideal_cycles)}); its spatial mapping keeps {used:,.4g} busy on "
                f"average, so {count(ours.spatial_stall_cycles)} of its stall cycles are that under-use "
                f"(ideal_temporal_cycle - ideal_cycle); the replay's ideal compute is the "
                f"{count(replay.ideal_cycles)} temporal iterations themselves"
            )
        else:
            out.append(
                f"ideal compute: the replay runs {count(replay.ideal_cycles)} temporal iterations where "
                f"ZigZag's temporal mapping has {count(ours.ideal_temporal_cycles)}"
            )
    out += _access_sentences(inputs, rows)
    return out


def _sliding_loops(inputs: ZigZagInputs, row: AccessRow) -> list[tuple[str, int]]:
    """Temporal loops above the row's level over a dim that slides an input window (a dim of a
    relation indexing the operand, as FX and OX in ix = ox + fx); [] for outputs and rows
    moving up."""
    layer, tm = inputs.layer, inputs.temporal_mapping
    if tm is None or row.operand == layer.output_operand:
        return []
    if row.direction not in (DataDirection.WRITTEN_FROM_ABOVE, DataDirection.READ_TO_BELOW):
        return []
    levels = [m.name for m in inputs.accelerator.levels(inputs.mapping.memory_operand(row.operand))]
    if row.memory not in levels:
        return []
    level = levels.index(row.memory)
    if row.direction == DataDirection.READ_TO_BELOW:
        level -= 1  # a read to below fills the level beneath
    spatial: dict[str, int] = {}
    for _, loops in inputs.mapping.spatial:
        for d, f in loops:
            spatial[d] = spatial.get(d, 1) * f
    below = dict(spatial)
    for lv in tm.of(row.operand)[: level + 1]:
        for d, f in lv:
            below[d] = below.get(d, 1) * f
    out: list[tuple[str, int]] = []
    rels = [r for r in layer.relations if r.target in layer.dims_of(row.operand)]
    for lv in tm.of(row.operand)[level + 1 :]:
        for d, f in lv:
            for r in rels:
                coefficient = dict(
                    ((r.first_dim, r.first_coefficient), (r.second_dim, r.second_coefficient))
                )
                if d not in coefficient or f <= 1:
                    continue
                window = sum(c * (below.get(x, 1) - 1) for x, c in coefficient.items()) + 1
                if coefficient[d] * below.get(d, 1) < window:  # the next window overlaps this one
                    out.append((d, f))
            below[d] = below.get(d, 1) * f
    return out


def _access_sentences(inputs: ZigZagInputs, rows: list[AccessRow]) -> list[str]:
    """One sentence per word-access row where the sources differ, naming its mechanism.

    Over 80 lines: one loop over the rows with one short branch per access mechanism (partial
    sums, padding, strides, spatial reuse), in the order the table lists them.
    """
    from cyclesim.checks.zigzag.to_spec import padded_dims

    out: list[str] = []
    psum_down = (DataDirection.WRITTEN_FROM_ABOVE, DataDirection.READ_TO_BELOW)
    layer = inputs.layer
    out_op = layer.output_operand
    padded = padded_dims(inputs)
    relations = {rel.target: rel for rel in layer.relations}

    def indexed(op: str, dims: set[str]) -> bool:
        used = set()
        for dim in layer.dims_of(op):
            rel = relations.get(dim)
            used |= {rel.first_dim, rel.second_dim} if rel else {dim}
        return bool(used & dims)

    clipped = [
        (target, layer.extent_limit(target, 10**9))
        for target in relations
        if layer.padding_of(target) or target in dict(layer.input_extents)
    ]
    # a stride larger than the window (ix = 2*ox + fx with FX 1) leaves input indices untouched
    strided = [
        r
        for r in layer.relations
        if r.first_coefficient > r.second_coefficient * layer.loop_size(r.second_dim)
        or r.second_coefficient > r.first_coefficient * layer.loop_size(r.first_dim)
    ]
    for row in rows:
        where = f"{row.operand} at {row.memory}, {row.direction.words}"
        if row.zigzag is not None and row.zigzag != row.analytical:
            out.append(f"{where}: our model differs from zigzag-dse (a bug in cyclesim's model)")
        if row.replay is not None and row.replay == row.analytical:
            continue
        values = f"{row.replay_values:,} values where ZigZag's links move {row.model_values:,.0f}"
        pads = [p for p in padded if indexed(row.operand, {p[0]})]
        sliding = _sliding_loops(inputs, row)
        if sliding and row.replay_values > row.model_values * prod(p / n for _, n, p in pads):
            out.append(
                f"{where}: sliding window: the temporal loops above this level over "
                + ", ".join(f"{d} {f}" for d, f in sliding)
                + " move the input window by overlapping steps; ZigZag counts the union of the "
                "windows it slides over, the replay refills the whole window each time it moves"
                + (
                    " (and pads " + ", ".join(f"{d} from {n} to {p}" for d, n, p in pads) + ")"
                    if pads
                    else ""
                )
                + f": {values}"
            )
        elif pads and row.replay_values > row.model_values:
            out.append(
                f"{where}: fractional unrolling: the replay pads "
                + ", ".join(f"{d} from {n} to {p}" for d, n, p in pads)
                + f" to whole spatial steps (idle PEs compute padded values), so it moves {values}"
            )
        elif pads and row.replay_values < row.model_values:
            out.append(
                f"{where}: fractional unrolling: ZigZag's links count the padded iterations' values ("
                + ", ".join(f"{d} {p} for {n}" for d, n, p in pads)
                + f"); a tile that spans the whole dimension holds only the tensor's real values in "
                f"the replay, so it moves {values}"
            )
        elif strided and row.operand != out_op and row.replay_values > row.model_values:
            out.append(
                f"{where}: strided window: "
                + ", ".join(
                    f"{r.target} = {r.first_coefficient}*{r.first_dim} + {r.second_coefficient}*{r.second_dim} "
                    f"with {r.second_dim} {layer.loop_size(r.second_dim)} skips indices"
                    for r in strided
                )
                + f"; ZigZag counts only the indices the window touches, the replay's tiles are "
                f"contiguous ranges that include the skipped ones: {values}"
            )
        elif row.operand != out_op and clipped and row.replay_values > row.model_values:
            out.append(
                f"{where}: input padding: ZigZag clips {row.operand}'s extent to "
                + ", ".join(f"{t} {size}" for t, size in clipped)
                + f" (the padded border is never stored); the replay moves every index its loops span, {values}"
            )
        elif row.replay is None and row.replay_values == round(row.model_values):
            out.append(
                f"{where}: the same {row.replay_values:,} values move in both; ZigZag rounds each of its "
                f"periods up to whole port words and the replay's transfers are of another size, so "
                f"only the values compare"
            )
        elif (
            row.operand == out_op
            and row.direction in psum_down
            and (row.replay_values < row.model_values)
        ):
            out.append(
                f"{where}: ZigZag reloads partial sums on every visit of an output tile, the first one "
                f"included; the replay starts each output at zero and reads nothing on the first "
                f"visit: {values}"
            )
        elif (
            row.operand == out_op
            and row.direction in (DataDirection.WRITTEN_FROM_BELOW, DataDirection.READ_TO_ABOVE)
            and row.replay_values == round(row.model_values)
            and row.replay is not None
            and row.replay < row.analytical
        ):
            out.append(
                f"{where}: precision: the same {row.replay_values:,} values move in both; the replay "
                f"writes each output's last visit at its final width ({layer.final_output_precision_bits} b, "
                f"O_final), ZigZag counts every write-back of this link at the partial-sum width "
                f"({layer.precision(out_op)} b) because reduction loops remain above the level"
            )
        elif row.replay_values > row.model_values:
            out.append(
                f"{where}: the replay refills this tile more often than ZigZag's period count (a "
                f"single-buffered or evicted tile it must fetch again): {values}"
            )
        else:
            out.append(f"{where}: unexplained difference: {values}")
    return out
