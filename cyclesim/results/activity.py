"""What each port, DMA channel, buffer and the PE array did, read from a traced run.

One model, built once per run and window (Result.activity), that the VCD, FST, Perfetto and
plot views draw from. It rearranges the raw records (port grants, transfers, PE segments,
occupancy) and the stall spans; the PE array's use of its operand ports and its spatial stalls
per segment come from the same closed-form segment profile the engine times segments with.
Everything is clipped to a cycle window.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from cyclesim.engine.fabric import PE, requester_of
from cyclesim.engine.loop import gc_paused  # (re-exported: views never import the engine)
from cyclesim.engine.record import FOREVER
from cyclesim.engine.rows import Repeat, Rows
from cyclesim.errors import TraceError
from cyclesim.results.spans import SpanList, SpanRepeat
from cyclesim.results.stall_span import StallSpan
from cyclesim.results.wait_causes import bank_path, holder_label
from cyclesim.schedule.steps import segment_classifier, segment_profile
from cyclesim.vocabulary import BankCommand, Cause, Fold, TransferKind, Wait

COMPUTE = "compute"  # the PE array's state while it completes a step every cycle
OPEN = -1  # the end (and bits) of a grant still held when the run ended (None in the record)


class Busy(NamedTuple):
    """A resource busy over cycles [start, end) moving `bits` of `tensor` for `who`."""

    start: int
    end: int
    tensor: str
    who: str
    bits: int
    kind: str = ""  # fill, reload, write-back (transfers); empty for single bursts


class Track:
    """Busy records of one port stored by column (about 30 bytes each instead of a hundred);
    iterating gives Busy records in time order. A long run holds hundreds of thousands."""

    __slots__ = ("starts", "ends", "tensors", "whos", "bits", "kinds")

    def __init__(self) -> None:
        self.starts, self.ends, self.bits = array("q"), array("q"), array("q")
        self.tensors: list[str] = []
        self.whos: list[str] = []
        self.kinds: list[str] = []

    def add(self, start: int, end: int, tensor: str, who: str, bits: int, kind: str) -> None:
        self.starts.append(start)
        self.ends.append(end)
        self.tensors.append(tensor)
        self.whos.append(who)
        self.bits.append(bits)
        self.kinds.append(kind)

    def __iter__(self) -> Iterator[Busy]:
        columns = (self.starts, self.ends, self.tensors, self.whos, self.bits, self.kinds)
        return map(Busy._make, zip(*columns, strict=True))

    def take(self, indices: Iterable[int]) -> list[Busy]:
        """The records at these positions, made without walking the others."""
        columns = (self.starts, self.ends, self.tensors, self.whos, self.bits, self.kinds)
        return [Busy._make(c[i] for c in columns) for i in indices]

    def __len__(self) -> int:
        return len(self.starts)

    def __bool__(self) -> bool:
        return len(self.starts) > 0


class States:
    """The PE array's states (PeState) stored by column; iterating gives PeState in time order."""

    __slots__ = ("starts", "ends", "phases", "states", "wheres", "einsums", "tiles")

    def __init__(self) -> None:
        self.starts, self.ends = array("q"), array("q")
        self.phases: list[str] = []
        self.states: list[str] = []
        self.wheres: list[str] = []
        self.einsums: list[str] = []
        self.tiles: list[int | None] = []

    def __iter__(self) -> Iterator[PeState]:
        columns = (self.starts, self.ends, self.phases, self.states, self.wheres, self.einsums, self.tiles)  # fmt: skip
        return map(PeState._make, zip(*columns, strict=True))

    def take(self, indices: Iterable[int]) -> list[PeState]:
        """The states at these positions, made without walking the others."""
        columns = (self.starts, self.ends, self.phases, self.states, self.wheres, self.einsums, self.tiles)  # fmt: skip
        return [PeState._make(c[i] for c in columns) for i in indices]

    def __len__(self) -> int:
        return len(self.starts)


class Segment(NamedTuple):
    """The PE array computing tile `tile` of `einsum` over [start, end)."""

    start: int
    end: int
    einsum: str
    tile: int


class PeState(NamedTuple):
    """The PE array over [start, end): `compute` or the root cause of its non-compute cycles.

    Within a segment that a narrow port slows down, the segment's steps come first and its
    spatial stall cycles after them (cycle by cycle they interleave; the counts are exact).
    """

    start: int
    end: int
    phase: str  # onload, compute, offload
    state: str  # compute or a cause (stall_span.CAUSES)
    where: str  # tensor@memory, port, competitor in words ('' for compute)
    einsum: str  # the Einsum computing or stalled ('' outside segments)
    tile: int | None  # segment index while in a segment


@dataclass(slots=True)
class Buffer:
    """One storage node's slots over time, by column: at times[i], counts[i] tiles are resident
    and slot j holds tile slot_tiles[j][i] (-1: empty). `changes` gives them as tuples."""

    memory: str
    tensor: str
    label: str
    slots: int
    tile_bits: int
    times: array = field(default_factory=lambda: array("q"))
    counts: array = field(default_factory=lambda: array("q"))
    slot_tiles: list[array] = field(default_factory=list)

    def record(self, t: int, count: int, held: list[int | None]) -> None:
        """The state from cycle t on; a second state at the same cycle replaces the first."""
        if not self.slot_tiles:
            self.slot_tiles = [array("q") for _ in range(self.slots)]
        if self.times and self.times[-1] == t:
            self.counts[-1] = count
            for column, k in zip(self.slot_tiles, held, strict=True):
                column[-1] = -1 if k is None else k
            return
        self.times.append(t)
        self.counts.append(count)
        for column, k in zip(self.slot_tiles, held, strict=True):
            column.append(-1 if k is None else k)

    @property
    def changes(self) -> Iterator[tuple[int, int, tuple[int | None, ...]]]:
        """(t, tiles resident, tile index per slot or None), in time order."""
        for i, (t, n) in enumerate(zip(self.times, self.counts, strict=True)):
            yield t, n, tuple(None if c[i] < 0 else c[i] for c in self.slot_tiles)


BANK_IDLE, BANK_ACTIVE = "idle", "active"
BANK_STATES = (
    BANK_IDLE,
    BANK_ACTIVE,
    BankCommand.PRECHARGE,
    BankCommand.REFRESH,
)  # a DRAM bank's states
NO_ROW = -1


@dataclass(slots=True)
class DramBank:
    """One bank of a DRAM-modelled memory, by column: from times[i] on it is in states[i] (idle,
    active, precharge, refresh) with row rows[i] open (-1: none). The value at the window's
    start comes first; `activates` counts the activates inside the window."""

    memory: str
    channel: int
    rank: int
    bank_group: int
    bank: int
    times: array = field(default_factory=lambda: array("q"))
    states: list[str] = field(default_factory=list)
    rows: array = field(default_factory=lambda: array("q"))
    activates: int = 0

    @property
    def changes(self) -> Iterator[tuple[int, str, int]]:
        """(t, state, open row or -1), in time order."""
        return zip(self.times, self.states, self.rows, strict=True)

    def path(self, ranks: int) -> tuple[str, ...]:
        """('ch0', 'bg1', 'bank2'), 'rank1' after the channel with several ranks: the VCD's
        scopes under the memory, the words of the Perfetto track after the memory's name."""
        return bank_path(self.channel, self.rank, self.bank_group, self.bank, ranks)


@dataclass(slots=True)
class Activity:
    """The whole picture over [start, end): ports, DMA channels, PE array, buffers."""

    start: int
    end: int
    cycles: int
    ports: dict[str, Track]  # port key -> bursts, in time order
    pe_ports: dict[str, Track]  # port key -> the PE array's segments on it, in time order
    port_memory: dict[str, str]
    port_width: dict[str, int]
    dma: dict[str, list[list[Busy]]]  # engine -> per channel transfers
    segments: list[Segment]
    pe_states: States  # cover [start, end) without overlap, in time order
    buffers: list[Buffer]
    memories: list[str]  # outermost first, as in the plan's ports
    # memory with an L1 allocator -> (t, bytes in use), the value at start first
    l1: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # DRAM-modelled memory -> its banks that a row visit used, by channel, rank, group, bank
    dram_banks: dict[str, list[DramBank]] = field(default_factory=dict)
    dram_ranks: dict[str, int] = field(default_factory=dict)  # DRAM memory -> ranks


def _require_trace(res) -> None:
    rec = res.raw.rec
    if rec.transfers is None or rec.pe_segments is None or rec.occupancy is None:
        raise TraceError("this view needs a traced run: replay with trace=True (or a trace_filter)")


def window_of(res, window: tuple[int, int] | None = None) -> tuple[int, int]:
    """The recorded window intersected with the one asked for; raise TraceError if empty."""
    rec = res.raw.rec
    w0, w1 = rec.trace_window
    w1 = min(w1, res.cycles) if w1 != FOREVER else res.cycles
    if window is not None:
        w0, w1 = max(w0, window[0]), min(w1, window[1])
    if w1 <= w0 and not (w0 == w1 == res.cycles == 0):
        raise TraceError(f"the window [{w0}, {w1}) is empty: the run has {res.cycles} cycles")
    return w0, w1


def who_label(res, who: int) -> str:
    """A grant's holder in words: 'PE array', 'fill of A@abuf' or 'write-back of Z@acc'."""
    return holder_label(res.raw.plan.nodes, who)


def who_kind(res, who: int) -> str:
    """The kind of transfer a grant's holder makes: fill, reload (a fill of a node holding
    partial sums) or write-back; empty for the PE array."""
    if who == PE:
        return ""
    node, write_back = requester_of(who)
    if write_back:
        return TransferKind.WRITE_BACK
    return TransferKind.RELOAD if res.raw.plan.nodes[node].output_role else TransferKind.FILL


def row_columns(rows, width: int, none_as: int = 0) -> list:
    """The rows of a record (a list or the engine's Rows) as `width` columns in row order:
    numbers as int64 arrays (None as none_as: an open grant's end), other values as lists.

    Fast-forward's repeated stretches (Repeat) are written out by numpy, copy j of a period
    shifted j times, not row by row in Python: a long run repeats most of its rows."""
    pieces = rows.pieces() if isinstance(rows, Rows) else (rows,)
    parts = [_piece_columns(p, width, none_as) for p in pieces if len(p)]
    if not parts:
        return [np.zeros(0, dtype=np.int64) for _ in range(width)]
    out = []
    for c in range(width):
        column = [part[c] for part in parts]
        if all(isinstance(x, np.ndarray) for x in column):
            out.append(np.concatenate(column))
        else:
            out.append(
                [v for x in column for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
            )
    return out


def _piece_columns(piece, width: int, none_as: int) -> list:
    if not isinstance(piece, Repeat):
        columns = []
        for values in zip(*piece, strict=True):  # a record's column holds one kind of value
            if type(values[0]) is not int and values[0] is not None:
                columns.append(list(values))
                continue
            try:
                columns.append(np.array(values, dtype=np.int64))
            except TypeError:  # None among the numbers (an open grant's end)
                values = [none_as if v is None else v for v in values]
                columns.append(np.array(values, dtype=np.int64))
        return columns
    base = row_columns(piece.base, width, none_as)
    k, n = piece.count, len(piece.base)
    copy = np.repeat(np.arange(1, k + 1, dtype=np.int64), n)  # j of each written-out row
    out = [np.tile(c, k) if isinstance(c, np.ndarray) else c * k for c in base]
    for c, step in piece.steps:
        out[c] = out[c] + copy * step
    tile = piece.tile
    if tile is not None:
        if tile.states:
            per_row = [tile.by if s in tile.states else 0 for s in base[1]]
        else:
            per_row = [tile.by[x] for x in base[tile.of].tolist()]
        out[tile.column] = out[tile.column] + copy * np.tile(np.array(per_row, np.int64), k)
    return out


def _zipped(columns: list) -> list[tuple]:
    return list(
        zip(*(c.tolist() if isinstance(c, np.ndarray) else c for c in columns), strict=True)
    )


# what build_activity does, in order: on_stage is called with each name once it is done
ACTIVITY_STAGES = ("transfers", "ports", "PE segments", "PE array", "DMA", "buffers", "DRAM")


def build_activity(
    res, window: tuple[int, int] | None = None, on_stage: Callable[[str], None] | None = None
) -> Activity:
    """Gather the traced records of res (a Result) into an Activity clipped to window.

    Raise TraceError if the run was not traced or the window is empty. Views call
    Result.activity(window), which builds it once per window; on_stage(name) hears each
    of ACTIVITY_STAGES as it is done (a progress bar's ticks: building can take seconds).
    """
    with gc_paused():
        return _build_activity(res, window, on_stage or (lambda name: None))


def _build_activity(
    res, window: tuple[int, int] | None, on_stage: Callable[[str], None]
) -> Activity:
    _require_trace(res)
    plan, rec = res.raw.plan, res.raw.rec
    w0, w1 = window_of(res, window)
    keys = [p.key for p in plan.ports]
    port_memory = {p.key: p.memory for p in plan.ports}
    # every grant by column (with the bits the engine recorded it moved), fast-forward's
    # repeats written out by numpy
    grants = {key: row_columns(rec.grants.get(key, ()), 5, OPEN) for key in keys}
    on_stage("transfers")
    ports = {key: _port_track(res, rec, w0, w1, grants[key]) for key in keys}
    on_stage("ports")
    pe_segments = row_columns(rec.pe_segments, 4)  # sorted once, for both
    by_start = np.lexsort(pe_segments[::-1])
    pe_segments = [c[by_start] for c in pe_segments]
    segments = _segments(res, w0, w1, pe_segments)
    pe_ports, pieces = _pe_use(res, w0, w1, pe_segments)
    shown = _shown_ports(rec.trace_filter, keys, port_memory, ports, pe_ports)
    on_stage("PE segments")
    pe_states = _pe_states(res, w0, w1, pieces)
    on_stage("PE array")
    dma = _dma_channels(res, w0, w1, _sorted_transfers(rec.transfers) if plan.dma else [])
    on_stage("DMA")
    buffers = _buffers(res, w0, w1)
    on_stage("buffers")
    banks = _dram_banks(res, w0, w1, {port_memory[k] for k in shown})
    on_stage("DRAM")
    return Activity(
        w0,
        w1,
        res.cycles,
        {k: ports[k] for k in shown},
        {k: pe_ports[k] for k in shown},
        {k: port_memory[k] for k in shown},
        {p.key: p.width_bits for p in plan.ports if p.key in shown},
        dma,
        segments,
        pe_states,
        buffers,
        _memories(res),
        _l1_occupancy(res, w0, w1),
        banks,
        {name: config.ranks for name, config, _, _ in plan.dram},
    )


def _sorted_transfers(rows) -> list[tuple]:
    """The traced transfers, by start and then node (as sorted() orders them)."""
    transfers = row_columns(rows, 6)
    by_start = np.lexsort((transfers[2], transfers[0]))
    return _zipped([c[by_start] if isinstance(c, np.ndarray) else [c[i] for i in by_start.tolist()] for c in transfers])  # fmt: skip


def _port_track(res, rec, w0: int, w1: int, grants: list) -> Track:
    """A port's grants inside [w0, w1), clipped to it, whose holders the trace keeps (--only),
    with the bits the engine recorded each moved on the port (0 for one still open)."""
    starts, ends, holders, tensors, bits = grants
    ends = np.where(ends == OPEN, res.cycles, ends)
    bits = np.where(bits == OPEN, 0, bits)
    out = Track()
    distinct = np.unique(holders).tolist()
    labels = {h: (who_label(res, h) if _traced(rec, h) else "") for h in distinct}
    kinds = {h: who_kind(res, h) for h in distinct}
    shown = np.array([bool(labels[h]) for h in holders.tolist()], dtype=bool)
    keep = np.flatnonzero(shown & (ends > w0) & (starts < w1))
    out.starts.frombytes(np.maximum(starts[keep], w0).tobytes())
    out.ends.frombytes(np.minimum(ends[keep], w1).tobytes())
    out.bits.frombytes(np.ascontiguousarray(bits[keep], dtype=np.int64).tobytes())
    at = keep.tolist()
    out.tensors = [tensors[i] for i in at]
    out.whos = [labels[h] for h in holders[keep].tolist()]
    out.kinds = [kinds[h] for h in holders[keep].tolist()]
    return out


def _traced(rec, who: int) -> bool:
    """Is a grant's holder among the traced resources (--only)? The PE array's, when its
    segments are kept; a transfer's, when its storage node is."""
    if who == PE:
        return rec.trace_leaves is None or any(rec.trace_leaves)
    return rec.trace_nodes is None or rec.trace_nodes[requester_of(who)[0]]


def _shown_ports(trace_filter, keys, port_memory, ports, pe_ports) -> list[str]:
    """The ports a trace shows: all, or with a resource filter (--only) those it names (by key
    or memory) and those a recorded transfer or PE segment used."""
    wanted = None if trace_filter is None else trace_filter.resources
    if wanted is None:
        return keys
    wanted = set(wanted)
    return [
        k
        for k in keys
        if k in wanted
        or port_memory[k] in wanted
        or len(ports[k].starts)
        or len(pe_ports[k].starts)
    ]


def _pe_use(res, w0: int, w1: int, segs: list[np.ndarray]) -> tuple[dict[str, Track], _Pieces]:
    """The PE array's port use and compute / spatial pieces of each recorded segment (segs:
    the run's columns start, end, leaf, tile, sorted).

    A segment takes ceil(bits / cycles) of each port it reads or writes for all its cycles (the
    engine's reservation) and moves the profile's bits through it, landing when it ends. Its
    spatial stall cycles are checked against the engine's totals per (leaf, operand). The
    segments of one kind (leaf, level, first visit) share a profile: done by numpy per kind.
    """
    plan, rec = res.raw.plan, res.raw.rec
    pe_ports: dict[str, Track] = {p.key: Track() for p in plan.ports}
    classify = [segment_classifier(leaf) for leaf in plan.leaves]
    port_tensors: list[dict[str, str]] = []
    where_of: list[dict[tuple[int, str], str]] = []
    for leaf in plan.leaves:
        on: dict[str, list[str]] = {}
        wheres: dict[tuple[int, str], str] = {}
        for oi, o in enumerate(leaf.operands):
            for port in (o.read_port, o.write_port):
                if port is not None and o.tensor not in on.setdefault(port.key, []):
                    on[port.key].append(o.tensor)
                if port is not None:  # a spatial stall names the operand and its binding port
                    where = f"{o.tensor}@{plan.nodes[o.node].memory}"
                    wheres[(oi, port.key)] = f"{where} port {port.memory}.{port.name}"
        port_tensors.append({k: "+".join(v) for k, v in on.items()})
        where_of.append(wheres)
    starts, ends, leaf_of, tiles = segs
    kinds: dict[tuple, int] = {}  # (leaf, level, first visit) -> its number, in first-seen order
    kind_of = np.array(
        [kinds.setdefault((li, *classify[li](g)), len(kinds)) for li, g in zip(leaf_of.tolist(), tiles.tolist(), strict=True)],
        dtype=np.int64,
    )  # fmt: skip
    spatial_sum: dict[tuple[int, int, str], int] = {}
    complete = rec.trace_leaves is None and rec.trace_window == (0, FOREVER)
    pieces = _Pieces()
    use: dict[str, list] = {}  # port -> [(segment positions, starts, ends, bits)]
    inside = (ends > w0) & (starts < w1)
    for kind, number in kinds.items():
        li, leaf = kind[0], plan.leaves[kind[0]]
        prof = segment_profile(leaf, kind[1], kind[2])
        mine = np.flatnonzero(kind_of == number)
        s, e, g = starts[mine], ends[mine], tiles[mine]
        cycles = prof.steps + sum(c for _, c in prof.spatial)
        wrong = np.flatnonzero(e - s != cycles)
        if len(wrong):
            j = int(wrong[0])
            raise TraceError(
                f"PE segment [{s[j]}, {e[j]}) of {leaf.einsum}: its profile says {cycles} cycles"
            )
        shown = mine[inside[mine]]
        for key, bits in prof.port_bits:
            if bits:
                use.setdefault(key, []).append((shown, starts[shown], ends[shown], bits, port_tensors[li][key]))  # fmt: skip
        t = s + prof.steps
        pieces.add(s, t, (COMPUTE, COMPUTE, "", leaf.einsum), g)
        for (oi, pk), c in prof.spatial:
            pieces.add(t, t + c, (COMPUTE, Cause.SPATIAL, where_of[li][(oi, pk)], leaf.einsum), g)  # fmt: skip
            t = t + c
            if complete:
                spatial_sum[(li, oi, pk)] = spatial_sum.get((li, oi, pk), 0) + c * len(mine)
    if complete and spatial_sum != {k: v[0] for k, v in rec.spatial.items()}:
        raise TraceError("the spatial stalls per segment do not add up to the engine's totals")
    for key, parts in use.items():  # each port's segments in segment order
        at = np.concatenate([p[0] for p in parts])
        order = np.argsort(at, kind="stable")
        out = pe_ports[key]
        out.starts.frombytes(np.maximum(np.concatenate([p[1] for p in parts])[order], w0).tobytes())
        out.ends.frombytes(np.minimum(np.concatenate([p[2] for p in parts])[order], w1).tobytes())
        out.bits.frombytes(np.concatenate([np.full(len(p[0]), p[3], np.int64) for p in parts])[order].tobytes())  # fmt: skip
        tensors = [p[4] for p in parts]
        which = np.concatenate([np.full(len(p[0]), i, np.int64) for i, p in enumerate(parts)])
        out.tensors = [tensors[i] for i in which[order].tolist()]
        out.whos = ["PE array"] * len(order)
        out.kinds = [COMPUTE] * len(order)
    return pe_ports, pieces


class _Pieces:
    """States of the PE array by column, in no order: starts, ends, a label (phase, state,
    where, einsum) by number, tile (-1: none)."""

    def __init__(self) -> None:
        self.starts: list[np.ndarray] = []
        self.ends: list[np.ndarray] = []
        self.labels: dict[tuple, int] = {}
        self.label_of: list[np.ndarray] = []
        self.tiles: list[np.ndarray] = []

    def add(self, starts, ends, label: tuple | np.ndarray, tiles) -> None:
        """Pieces with one label, or with a label number each (an array)."""
        if isinstance(label, tuple):
            label = np.full(len(starts), self.labels.setdefault(label, len(self.labels)), np.int64)
        self.starts.append(starts)
        self.ends.append(ends)
        self.label_of.append(label)
        self.tiles.append(tiles)


def _pe_states(res, w0: int, w1: int, pieces: _Pieces) -> States:
    """Compute and spatial pieces of the segments merged with the other stall spans, in [w0, w1).

    A systolic array's fill and drain are one stall span per leaf and kind for the tables (from
    its first to its last fold); the trace draws each fold's own, which the engine records.
    Empty states are dropped; the others do not overlap, so ordering by start is enough."""
    folds = res.raw.rec.systolic_spans or ()
    per_fold = (
        (Cause.SPATIAL, Cause.SYSTOLIC_FILL, Cause.SYSTOLIC_DRAIN) if folds else (Cause.SPATIAL,)
    )
    leaves = res.raw.plan.leaves
    labels = pieces.labels
    span_starts, span_ends, span_labels = _span_columns(res.spans, per_fold, labels)
    pieces.add(span_starts, span_ends, span_labels, np.full(len(span_starts), -1, np.int64))
    rows = []
    for start, end, li, kind in folds:
        cause = Cause.SYSTOLIC_FILL if kind == Fold.FILL else Cause.SYSTOLIC_DRAIN
        rows.append((start, end, labels.setdefault((COMPUTE, cause, "", leaves[li].einsum), len(labels)), -1))  # fmt: skip
    extra = [np.array(c, dtype=np.int64) for c in zip(*rows, strict=True)] if rows else [np.zeros(0, np.int64)] * 4  # fmt: skip
    starts = np.concatenate([*pieces.starts, extra[0]]).astype(np.int64)
    ends = np.concatenate([*pieces.ends, extra[1]]).astype(np.int64)
    label_of = np.concatenate([*pieces.label_of, extra[2]]).astype(np.int64)
    tiles = np.concatenate([*pieces.tiles, extra[3]]).astype(np.int64)
    keep = np.flatnonzero((ends > starts) & (ends > w0) & (starts < w1))
    keep = keep[np.argsort(starts[keep], kind="stable")]
    out = States()
    out.starts.frombytes(np.maximum(starts[keep], w0).tobytes())
    out.ends.frombytes(np.minimum(ends[keep], w1).tobytes())
    table = list(labels)
    chosen = [table[i] for i in label_of[keep].tolist()]
    out.phases = [x[0] for x in chosen]
    out.states = [x[1] for x in chosen]
    out.wheres = [x[2] for x in chosen]
    out.einsums = [x[3] for x in chosen]
    out.tiles = [None if k < 0 else k for k in tiles[keep].tolist()]
    return out


def _span_columns(spans, skip: tuple, labels: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starts, ends and label numbers (labels: (phase, cause, where, '') -> number) of the
    non-empty stall spans whose cause is not in skip. A SpanList's repeats are written out by
    numpy (copy j: j periods on; its words do not move), not span by span."""
    parts = []
    for piece in spans.pieces if isinstance(spans, SpanList) else [spans]:
        if isinstance(piece, SpanRepeat):
            starts, ends, numbers = _span_columns(piece.spans, skip, labels)
            shift = np.repeat(np.arange(piece.count, dtype=np.int64) * piece.period, len(starts))
            parts.append((np.tile(starts, piece.count) + shift, np.tile(ends, piece.count) + shift,
                          np.tile(numbers, piece.count)))  # fmt: skip
            continue
        rows = [
            (s.start, s.end, labels.setdefault((s.phase, s.cause, _where(s), ""), len(labels)))
            for s in piece
            if s.cause not in skip and s.end > s.start
        ]
        parts.append(tuple(np.array(c, dtype=np.int64).reshape(-1) for c in (zip(*rows, strict=True) if rows else ((), (), ()))))  # fmt: skip
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def _where(s: StallSpan) -> str:
    """A stall span's place in words: tensor@memory, port, competitor."""
    return _where_text(s.tensor, s.memory, s.port, s.port_memory, s.competitor)


@lru_cache(maxsize=4096)
def _where_text(tensor, memory, port, port_memory, competitor) -> str:
    s = StallSpan(0, 0, "", "", memory, tensor, port, port_memory, competitor, "", 0)
    where = f"{s.tensor}@{s.memory}" if s.tensor else ""
    if s.port:
        where += f" port {s.port_memory}.{s.port}" if s.port_memory else f" {s.port}"
    if s.competitor:
        where += f" vs {s.competitor}"
    return where.strip()


def _memories(res) -> list[str]:
    """Memory levels outermost first: in loop-tree order of their storage nodes, then by port."""
    plan = res.raw.plan
    return list(dict.fromkeys([n.memory for n in plan.nodes] + [p.memory for p in plan.ports]))


def _dma_channels(res, w0: int, w1: int, transfers: list[tuple]) -> dict[str, list[list[Busy]]]:
    """Transfers (the run's, by start and node) through each DMA engine laid onto channels
    (lowest free channel first)."""
    plan, rec = res.raw.plan, res.raw.rec
    out: dict[str, list[list[Busy]]] = {}
    free_at: dict[str, list[int]] = {}
    for name, channels, _setup in plan.dma:
        out[name] = [[] for _ in range(channels)]
        free_at[name] = [0] * channels
    for start, end, node, kind, _tile, bits in transfers if plan.dma else ():
        n = plan.nodes[node]
        if n.dma is None:
            continue
        tl = rec.drain_tl[node] if kind == TransferKind.WRITE_BACK else rec.fill_tl[node]
        acquire = _acquired(tl, start, end)
        lanes = free_at[n.dma]
        ch = next((c for c, t in enumerate(lanes) if t <= acquire), None)
        if ch is None:
            raise TraceError(f"DMA engine {n.dma}: more transfers at cycle {acquire} than channels")
        lanes[ch] = end
        if end > w0 and acquire < w1:
            out[n.dma][ch].append(
                Busy(max(acquire, w0), min(end, w1), n.tensor, n.label(), bits, kind)
            )
    return out


def _acquired(tl: list[tuple], start: int, end: int) -> int:
    """When a transfer got its DMA channel: after its wait for one (recorded at its start), else its start."""
    i = bisect_left(tl, (start,), key=lambda s: (s[0],))
    while i < len(tl) and tl[i][0] == start:
        if tl[i][1] == Wait.DMA:
            return min(tl[i + 1][0], end) if i + 1 < len(tl) else end
        i += 1
    return start


def _segments(res, w0: int, w1: int, segs: list[np.ndarray]) -> list[Segment]:
    """The recorded segments (segs: sorted columns) inside [w0, w1), clipped to it."""
    einsums = [leaf.einsum for leaf in res.raw.plan.leaves]
    starts, ends, leaf_of, tiles = segs
    inside = np.flatnonzero((ends > w0) & (starts < w1))
    return [
        Segment(max(s, w0), min(e, w1), einsums[li], g)
        for s, e, li, g in zip(*(c[inside].tolist() for c in segs), strict=True)
    ]


def _l1_occupancy(res, w0: int, w1: int) -> dict[str, list[tuple[int, int]]]:
    """Per memory with an L1 allocator: bytes in use, the value at w0 first; empty without one."""
    out: dict[str, list[tuple[int, int]]] = {}
    for t, memory, used in res.raw.rec.l1_occupancy or ():
        series = out.setdefault(memory, [(w0, 0)])
        if t <= w0 or series[-1][0] == t:
            series[-1] = (series[-1][0], used)
        elif t <= w1:  # a free at the last cycle shows the L1 empty when the run ends
            series.append((t, used))
    return out


def _dram_banks(res, w0: int, w1: int, shown: set[str]) -> dict[str, list[DramBank]]:
    """Per DRAM-modelled memory whose ports the trace shows: each used bank's state and open row
    over [w0, w1), from the bank commands the engine recorded per row visit (an activate opens
    a row; a precharge closes it, the bank idle once it is done; a refresh holds every bank of
    its rank). At one cycle an activate follows the end of a precharge or refresh."""
    records = res.raw.rec.dram_banks or ()
    configs = {name: config for name, config, _, _ in res.raw.plan.dram if name in shown}
    # (memory, bank) -> [(t, order, state, row)]; order puts the end of a precharge first
    changes: dict[tuple[str, int], list[tuple[int, int, str, int]]] = {}
    for seq, (t, memory, b, kind, value) in enumerate(records):
        config = configs.get(memory)
        if config is None:
            continue
        if kind == BankCommand.ACTIVATE:
            changes.setdefault((memory, b), []).append((t, 1, seq, BANK_ACTIVE, value))
            continue
        banks = range(b, b + config.banks) if kind == BankCommand.REFRESH else (b,)
        for bank in banks:
            out = changes.setdefault((memory, bank), [])
            out.append((t, 1, seq, kind, NO_ROW))
            out.append((value, 0, seq, BANK_IDLE, NO_ROW))
    result: dict[str, list[DramBank]] = {name: [] for name in configs}
    for (memory, b), items in sorted(changes.items()):
        bank = DramBank(memory, *configs[memory].bank_coords(b))
        state, row = BANK_IDLE, NO_ROW
        items.sort()
        for t, _, _, kind, value in items:
            if t <= w0:
                state, row = kind, value
                continue
            if t >= w1:
                break
            if not bank.times:
                bank.times.append(w0)
                bank.states.append(state)
                bank.rows.append(row)
            if bank.times[-1] == t:  # a later change at the same cycle replaces it
                bank.states[-1], bank.rows[-1] = kind, value
            elif kind != bank.states[-1] or value != bank.rows[-1]:
                bank.times.append(t)
                bank.states.append(kind)
                bank.rows.append(value)
            bank.activates += kind == BANK_ACTIVE
        if not bank.times:
            bank.times.append(w0)
            bank.states.append(state)
            bank.rows.append(row)
        bank.activates += sum(1 for t, _, _, kind, _ in items if kind == BANK_ACTIVE and t == w0)
        result[memory].append(bank)
    return result


def _buffers(res, w0: int, w1: int) -> list[Buffer]:
    """Per storage node with recorded occupancy: tiles resident and the tile held by each slot.

    Tiles enter and leave in order, tile k in slot k % slots: after e entries and r releases
    slot s holds the last tile k < e with k % slots == s, if k >= r (by numpy per node). Of
    several states at one cycle (times before w0 count as w0) the last is kept."""
    plan, rec = res.raw.plan, res.raw.rec
    times, node_of, deltas = row_columns(rec.occupancy, 3)
    order = np.argsort(node_of, kind="stable")
    cuts = np.flatnonzero(np.diff(node_of[order])) + 1
    events = {int(node_of[p[0]]): p for p in np.split(order, cuts)} if len(order) else {}
    out = []
    for n in plan.nodes:
        if n.parent is None or (n.index not in events and n.index not in rec.occupancy_before):
            continue
        entered, released = rec.occupancy_before.get(n.index, [0, 0])
        mine = events.get(n.index, np.zeros(0, dtype=np.int64))
        d = deltas[mine]
        at = np.concatenate(([w0], np.maximum(times[mine], w0)))
        ins = entered + np.concatenate(([0], np.cumsum(d > 0)))
        outs = released + np.concatenate(([0], np.cumsum(d <= 0)))
        last = np.ones(len(at), dtype=bool)  # the last state of each cycle
        last[:-1] = at[1:] != at[:-1]
        at, ins, outs = at[last], ins[last], outs[last]
        buf = Buffer(n.memory, n.tensor, n.label(), n.slots, n.tile_values * n.stored_bits)
        buf.times.frombytes(at.tobytes())
        buf.counts.frombytes((ins - outs).tobytes())
        for s in range(n.slots):
            k = ins - 1 - (ins - 1 - s) % n.slots  # the last tile entered into slot s
            held = np.where((k >= outs) & (k >= 0), k, -1)
            buf.slot_tiles.append(array("q", held.tobytes()))
        out.append(buf)
    return out


def iter_busy_runs(act: Activity, key: str) -> Iterator[tuple[int, int]]:
    """[start, end) runs a port is busy (a transfer holds it or the PE array uses it), merged,
    in time order; lazily, so a writer streaming every port holds no copy of them."""
    transfers, pe = act.ports[key], act.pe_ports[key]
    spans = zip(transfers.starts, transfers.ends, strict=True)
    if pe and transfers:  # both by start: merged lazily
        spans = heapq.merge(spans, zip(pe.starts, pe.ends, strict=True))
    elif pe:
        spans = zip(pe.starts, pe.ends, strict=True)
    a = b = None
    for start, end in spans:
        if end <= start:
            continue
        if b is not None and start <= b:
            if end > b:
                b = end
            continue
        if b is not None:
            yield a, b
        a, b = start, end
    if b is not None:
        yield a, b


def numbered(values) -> tuple[np.ndarray, list]:
    """A number per value (equal values, equal numbers; numbered in order of first sight) and
    the distinct values, by pandas' hash table rather than a dict lookup per value."""
    import pandas as pd

    column = np.empty(len(values), dtype=object)
    column[:] = values
    codes, distinct = pd.factorize(column)
    if len(codes) and codes.min() < 0:  # None (or NaN), which pandas leaves without a number
        codes, distinct = pd.factorize(column, use_na_sentinel=False)
    return codes.astype(np.int64), list(distinct)


def busy_run_columns(act: Activity, key: str) -> tuple[np.ndarray, np.ndarray]:
    """iter_busy_runs as two int64 columns (starts, ends), merged by numpy: a run ends where
    the next record starts after every record before it has ended."""
    transfers, pe = act.ports[key], act.pe_ports[key]
    starts = np.concatenate((np.array(transfers.starts, np.int64), np.array(pe.starts, np.int64)))
    ends = np.concatenate((np.array(transfers.ends, np.int64), np.array(pe.ends, np.int64)))
    real = ends > starts
    return merged_runs(starts[real], ends[real])


def merged_runs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) ranges (int64 columns) merged where they overlap or touch, in time order."""
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    if not len(starts):
        return starts, ends
    reach = np.maximum.accumulate(ends)  # the latest end so far
    begins = np.flatnonzero(np.concatenate(([True], starts[1:] > reach[:-1])))
    return starts[begins], reach[np.append(begins[1:] - 1, len(starts) - 1)]


PORT_COLUMNS = [
    "port", "memory", "width_bits", "grants", "transfer_busy_cycles", "pe_busy_cycles",
    "busy_cycles", "transfer_bits", "pe_bits", "bits",
]  # fmt: skip


def port_rows(act: Activity) -> list[dict]:
    """Per port over the window: busy cycles and bits, the transfers' and the PE array's share.

    busy_cycles counts a cycle once when both use the port (the PE array takes part of its
    width, transfers the rest).
    """
    rows = []
    for key, bursts in act.ports.items():
        pe = act.pe_ports[key]
        rows.append(
            dict(
                port=key,
                memory=act.port_memory[key],
                width_bits=act.port_width[key],
                grants=len(bursts),
                transfer_busy_cycles=sum(bursts.ends) - sum(bursts.starts),
                pe_busy_cycles=sum(pe.ends) - sum(pe.starts),
                busy_cycles=sum(b - a for a, b in iter_busy_runs(act, key)),
                transfer_bits=sum(bursts.bits),
                pe_bits=sum(pe.bits),
                bits=sum(bursts.bits) + sum(pe.bits),
            )
        )
    return rows
