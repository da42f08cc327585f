"""The waveforms' signals (VCD, FST): which exist, and each one's changes as numpy columns.

One scope for the PE array, one per memory level with its ports and buffers, one per DMA engine.
PE array: `state` (compute, or the root cause of the cycle: spatial, bandwidth, contention,
buffer_full, latency, dependency, l1_alloc), `phase` (onload, compute, offload), `active` (1 while
a step completes every cycle), `einsum` and `tile` (the segment being computed, or in a stall the
last one), and `stall_where`. Per port:
`busy` (a transfer holds it or the PE array uses it), `tensor` and `bits` of the transfer's grant,
`pe_share` (bits per cycle the PE array takes, on ports it reads or writes) and `bits_total`
(bits moved through the port so far, the PE array's included). Per buffer: tiles resident,
their bits, and the tile index each slot holds (x when empty). Per bank of a DRAM-modelled
memory, in the memory's scope (`<memory>.ch<c>.bg<g>.bank<b>`, with `.rank<r>` after the
channel when the device has several ranks; Perfetto's bank tracks read the same words):
`state` (idle, active, precharge, refresh) and `open_row` (x when none), from the bank
commands of each row visit. All drawn from Result.activity (built once).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from cyclesim.results.activity import COMPUTE, Activity, DramBank, Track
from cyclesim.results.port_use import busy_run_columns
from cyclesim.results.record_columns import numbered

TOP = "cyclesim"
IDLE = "-"  # the value of a string signal when nothing happens


@dataclass(frozen=True, slots=True)
class Signal:
    """A registered waveform variable: its scope path, name, type and how a viewer shows it."""

    scope: tuple[str, ...]
    name: str
    var_type: str  # wire, integer, string
    group: str  # the .gtkw group it belongs to

    @property
    def path(self) -> str:
        return ".".join(self.scope + (self.name,))


@lru_cache(maxsize=1 << 14)
def _clean(text: str) -> str:
    """String values and names carry no whitespace."""
    return "_".join(str(text).split()) or IDLE


X = np.iinfo(np.int64).min  # "x" (no value) in an integer signal's value column


@dataclass(slots=True)
class Column:
    """One signal's changes by column: times (int64, strictly increasing) and values (int64
    for wires and integers, X for "x"; an object array of str for strings, or with `names`
    each string's position in names). A value equal to the one before is dropped later,
    where every signal's are."""

    times: np.ndarray
    values: np.ndarray
    names: list | None = None


def _ints(values) -> np.ndarray:
    """A column (array.array, list, numpy) as a fresh int64 array (no view that pins it)."""
    return np.array(values, dtype=np.int64).reshape(-1)


def _objects(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _per_value(values: list, transform) -> np.ndarray:
    """transform(v) of each value as an object column, computed once per distinct value."""
    codes, distinct = numbered(values)
    return _objects([transform(v) for v in distinct])[codes]


def _spans(starts, ends, values, idle) -> Column:
    """Changes of one signal from non-overlapping [start, end) records in time order: the
    record's value from its start (values: a column, or one value for all), idle from its end
    unless the next record starts there."""
    starts, ends = _ints(starts), _ints(ends)
    real = ends > starts
    if not real.all():
        starts, ends = starts[real], ends[real]
        values = values[real] if isinstance(values, np.ndarray) else values
    n = len(starts)
    strings = isinstance(idle, str)
    times = np.empty(2 * n, dtype=np.int64)
    times[0::2], times[1::2] = starts, ends
    column = np.empty(2 * n, dtype=object if strings else np.int64)
    column[0::2], column[1::2] = values, idle
    keep = np.ones(2 * n, dtype=bool)
    keep[1:-1:2] = ends[:-1] != starts[1:]  # back to back: no idle between
    return Column(times[keep], column[keep])


def _string_spans(starts, ends, coded: tuple[np.ndarray, list], transform=None) -> Column:
    """_spans of a string column given numbered (a number per record and the distinct values,
    shared with the other views), transform(v) of each distinct one: the numbers are spread,
    and name the strings (IDLE after the last), never made into a column of strings."""
    codes, distinct = coded
    texts = distinct if transform is None else [transform(v) for v in distinct]
    column = _spans(starts, ends, codes, len(texts))
    return Column(column.times, column.values, [*texts, IDLE])


def _where_value(where: str) -> str:
    return _clean(where) if where else IDLE


def _or_x(column) -> np.ndarray:
    """An integer column with -1 for "no value" (an empty slot, no open row) as X."""
    values = _ints(column)
    return np.where(values < 0, X, values)


@dataclass(slots=True)
class Waves:
    """Every signal, its value before the window, and a function giving its changes (a Column)."""

    start: int
    end: int
    signals: list[Signal] = field(default_factory=list)
    inits: list[object] = field(default_factory=list)
    sources: list[Callable[[], Column]] = field(default_factory=list)

    def add(self, scope, name: str, var_type: str, group: str, init, source) -> None:
        self.signals.append(Signal(tuple(scope), name, var_type, group))
        self.inits.append(init)
        self.sources.append(source)


def _port_waves(w: Waves, act: Activity, memory: str, key: str) -> None:
    bursts, pe = act.ports[key], act.pe_ports[key]
    scope, group = (TOP, memory, key.split(".", 1)[1]), memory
    w.add(scope, "busy", "wire", group, 0, lambda: _spans(*busy_run_columns(act, key), 1, 0))
    w.add(scope, "tensor", "string", group, IDLE,
          lambda: _string_spans(bursts.starts, bursts.ends, bursts.numbered("tensors"), _clean))  # fmt: skip
    w.add(scope, "bits", "integer", group, 0,
          lambda: _spans(bursts.starts, bursts.ends, _ints(bursts.bits), 0))  # fmt: skip
    if pe:
        w.add(scope, "pe_share", "integer", group, 0, lambda: _pe_share(pe))
    w.add(scope, "bits_total", "integer", group, 0, lambda: _landed(bursts, pe))


def _pe_share(pe: Track) -> Column:
    """Bits per cycle the PE array takes of a port: ceil(bits / cycles) over each segment."""
    starts, ends, bits = _ints(pe.starts), _ints(pe.ends), _ints(pe.bits)
    real = ends > starts
    starts, ends, bits = starts[real], ends[real], bits[real]
    return _spans(starts, ends, -(-bits // (ends - starts)), 0)


def _landed(bursts: Track, pe: Track) -> Column:
    """Bits moved through a port so far: each grant's and each PE segment's bits land at its end."""
    ends = np.concatenate((_ints(bursts.ends), _ints(pe.ends)))
    bits = np.concatenate((_ints(bursts.bits), _ints(pe.bits)))
    order = np.argsort(ends, kind="stable")
    ends, moved = ends[order], np.cumsum(bits[order])
    last = np.ones(len(ends), dtype=bool)  # the total once every record ending then has landed
    last[:-1] = ends[1:] != ends[:-1]
    return Column(ends[last], moved[last])


def _pe_waves(w: Waves, act: Activity) -> None:
    pe, group = (TOP, "pe_array"), "PE array"
    st, segs = act.pe_states, act.segments
    w.add(pe, "state", "string", group, IDLE,
          lambda: _string_spans(st.starts, st.ends, st.numbered("states")))  # fmt: skip
    w.add(pe, "phase", "string", group, IDLE,
          lambda: _string_spans(st.starts, st.ends, st.numbered("phases")))  # fmt: skip
    w.add(pe, "active", "wire", group, 0, lambda: _active(st))
    w.add(pe, "einsum", "string", group, IDLE,
          lambda: Column(_ints(segs.starts), _ints(segs.leaves), [_clean(e) for e in segs.einsums]))  # fmt: skip
    w.add(pe, "tile", "integer", group, "x", lambda: _at(segs.starts, _ints(segs.tiles)))
    w.add(pe, "stall_where", "string", group, IDLE,
          lambda: _string_spans(st.starts, st.ends, st.numbered("wheres"), _where_value))  # fmt: skip


def _active(st) -> Column:
    """1 while the PE array computes (its compute states), 0 otherwise."""
    codes, states = st.numbered("states")  # numbered once for every view
    computing = codes == states.index(COMPUTE) if COMPUTE in states else np.zeros(len(codes), bool)
    return _spans(_ints(st.starts)[computing], _ints(st.ends)[computing], 1, 0)


def _at(times, values: np.ndarray) -> Column:
    """Changes given as a time column and a value column."""
    return Column(_ints(times), values)


def _buffer_waves(w: Waves, act: Activity, memory: str) -> None:
    names: dict[str, int] = {}
    for buf in act.buffers:
        if buf.memory != memory:
            continue
        name = _clean(buf.tensor)
        names[name] = names.get(name, 0) + 1
        scope = (TOP, memory, name if names[name] == 1 else f"{name}_{names[name]}")
        group = f"{memory} buffers"
        times, counts = buf.times, buf.counts
        w.add(scope, "tiles", "integer", group, 0,
              lambda ts=times, ns=counts: _at(ts, _ints(ns)))  # fmt: skip
        w.add(scope, "bits", "integer", group, 0,
              lambda ts=times, ns=counts, b=buf.tile_bits: _at(ts, _ints(ns) * b))  # fmt: skip
        for i, column in enumerate(buf.slot_tiles):
            w.add(scope, f"slot{i}", "integer", group, "x",
                  lambda ts=times, c=column: _at(ts, _or_x(c)))  # fmt: skip


def _dram_waves(w: Waves, act: Activity, memory: str, banks: list[DramBank]) -> None:
    """Per bank of a DRAM-modelled memory: `state` (idle, active, precharge, refresh) and
    `open_row` (x while no row is open), under <memory>.ch<c>[.rank<r>].bg<g>.bank<b>."""
    ranks, group = act.dram_ranks[memory], f"{memory} banks"
    for bank in banks:
        scope = (TOP, memory, *bank.path(ranks))
        times, states, rows = bank.times, bank.states, bank.rows
        w.add(scope, "state", "string", group, states[0],
              lambda ts=times, ss=states: _at(ts, _objects(ss)))  # fmt: skip
        w.add(scope, "open_row", "integer", group, "x" if rows[0] < 0 else rows[0],
              lambda ts=times, rs=rows: _at(ts, _or_x(rs)))  # fmt: skip


def _dma_waves(w: Waves, scope: tuple, group: str, transfers: list) -> None:
    starts, ends = [b.start for b in transfers], [b.end for b in transfers]
    w.add(scope, "busy", "wire", group, 0, lambda: _spans(starts, ends, 1, 0))
    # the tensor as its storage node names it (A@sram_a): the node's label, Busy.who
    w.add(scope, "tensor", "string", group, IDLE,
          lambda: _spans(starts, ends, _per_value([b.who for b in transfers], _clean), IDLE))  # fmt: skip
    w.add(scope, "bits", "integer", group, 0,
          lambda: _spans(starts, ends, _ints([b.bits for b in transfers]), 0))  # fmt: skip


def plan_waves(act: Activity) -> Waves:
    """Every signal of the waveform and where its changes come from, in a fixed order."""
    w = Waves(act.start, act.end)
    _pe_waves(w, act)
    for memory in act.memories:
        for key in act.ports:
            if act.port_memory[key] == memory:
                _port_waves(w, act, memory, key)
        _buffer_waves(w, act, memory)
        if memory in act.l1:  # its L1 allocator: bytes in use
            series = act.l1[memory]
            w.add((TOP, memory, "allocator"), "used_bytes", "integer", f"{memory} L1", 0,
                  lambda s=series: _at([t for t, _ in s], _ints([b for _, b in s])))  # fmt: skip
        if memory in act.dram_banks:  # in the memory's scope, which the header opens once
            _dram_waves(w, act, memory, act.dram_banks[memory])
    for engine, channels in act.dma.items():
        for c, transfers in enumerate(channels):
            scope, group = (TOP, f"dma_{_clean(engine)}", f"ch{c}"), f"DMA {engine}"
            _dma_waves(w, scope, group, transfers)
    return w
