"""The PE array's part of the Activity: its use of its operand ports and its states over time.

Read from the recorded segments through the closed-form segment profile the engine times them
with, then merged with the stall spans; apart from the other builders for its size.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from cyclesim.engine.record import FOREVER
from cyclesim.errors import TraceError
from cyclesim.results.activity import COMPUTE, States, Track, prefill_numbered
from cyclesim.results.record_columns import numbered_by
from cyclesim.results.spans import SpanList, SpanRepeat
from cyclesim.results.stall_span import StallSpan
from cyclesim.schedule.steps import segment_classes, segment_profile
from cyclesim.vocabulary import Cause, Fold


def build_pe_use(res, w0: int, w1: int, segs: list[np.ndarray]) -> tuple[dict[str, Track], _Pieces]:
    """The PE array's port use and compute / spatial pieces of each recorded segment (segs:
    the run's columns start, end, leaf, tile, sorted).

    A segment takes ceil(bits / cycles) of each port it reads or writes for all its cycles (the
    engine's reservation) and moves the profile's bits through it, landing when it ends. Its
    spatial stall cycles are checked against the engine's totals per (leaf, operand). The
    segments of one kind (leaf, level, first visit) share a profile: done by numpy per kind.
    """
    plan, rec = res.raw.plan, res.raw.rec
    pe_ports: dict[str, Track] = {p.key: Track() for p in plan.ports}
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
    kinds, kind_of = _kinds(plan, leaf_of, tiles)
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


def build_pe_states(res, w0: int, w1: int, pieces: _Pieces) -> States:
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
    # each label's four parts as object columns, taken by numpy for the kept states' labels
    chosen = label_of[keep]
    parts = np.empty((len(labels), 4), dtype=object)
    for row, label in zip(parts, labels, strict=True):
        row[:] = label
    out.phases, out.states, out.wheres, out.einsums = (parts[chosen, c].tolist() for c in range(4))  # fmt: skip
    # numbered for the views from the labels' numbers, not from the columns of strings
    names = ("phases", "states", "wheres", "einsums")
    parts_of = [[label[c] for label in labels] for c in range(4)]
    for name, held in zip(names, numbered_by(chosen, *parts_of), strict=True):
        prefill_numbered(out, name, held)
    kept_tiles = tiles[keep]
    tile_objects = kept_tiles.astype(object)  # Python ints, None where there is no tile
    tile_objects[kept_tiles < 0] = None
    out.tiles = tile_objects.tolist()
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


def _kinds(plan, leaf_of: np.ndarray, tiles: np.ndarray) -> tuple[dict[tuple, int], np.ndarray]:
    """Each segment's kind (leaf, level, first visit) numbered in first-seen order, and the
    number of every segment's kind; classified by numpy per leaf (steps.segment_classes)."""
    level = np.zeros(len(tiles), dtype=np.int64)
    first = np.zeros(len(tiles), dtype=bool)
    for li in np.unique(leaf_of).tolist():
        mine = leaf_of == li
        level[mine], first[mine] = segment_classes(plan.leaves[li], tiles[mine])
    key = (leaf_of * (int(level.max(initial=0)) + 1) + level) * 2 + first
    _, seen_at, which = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(seen_at, kind="stable")  # the kinds in the order first seen
    number = np.empty(len(order), dtype=np.int64)
    number[order] = np.arange(len(order))
    kinds = {
        (int(leaf_of[i]), int(level[i]), bool(first[i])): n
        for n, i in enumerate(seen_at[order].tolist())
    }
    return kinds, number[which.reshape(-1)]
