"""Waveforms (VCD, FST): one scope for the PE array, one per memory level with its ports and
buffers, one per DMA engine. One cycle is one time unit.

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
commands of each row visit.

The changes are drawn from Result.activity (built once) and streamed to the file in time
order, a stretch of cycles at a time, so memory stays bounded; the same run gives the same
bytes (no date).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from cyclesim.outputs import atomic_output
from cyclesim.results import Result
from cyclesim.results.activity import COMPUTE, Activity, DramBank, Track, gc_paused
from cyclesim.results.port_use import busy_run_columns
from cyclesim.results.record_columns import numbered
from cyclesim.views.progress import writing_bar

TOP = "cyclesim"
IDLE = "-"  # the value of a string signal when nothing happens
_UNITS = ("fs", "ps", "ns", "us", "ms", "s")
_NONE = object()


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


def timescale_for(clock_mhz: float | None) -> tuple[str, str]:
    """The VCD timescale that makes one cycle one unit, and a header comment saying so.

    The clock period is used when VCD can state it ({1, 10, 100} x s..fs); otherwise (and
    without a clock) the unit is 1 ns and the comment gives the real period.
    """
    if clock_mhz is None:
        return "1 ns", "1 time unit = 1 cycle (no clock given; 1 ns shown per cycle)"
    period_fs = 1e9 / clock_mhz
    exp = round(math.log10(period_fs)) if period_fs > 0 else -1
    if 0 <= exp <= 17 and math.isclose(period_fs, 10.0**exp, rel_tol=1e-12):
        unit, mag = _UNITS[exp // 3], 10 ** (exp % 3)
        return f"{mag} {unit}", f"1 time unit = 1 cycle = {mag} {unit} ({clock_mhz:g} MHz)"
    return (
        "1 ns",
        f"1 time unit = 1 cycle; the clock is {clock_mhz:g} MHz ({1e3 / clock_mhz:g} ns per cycle)",
    )


@lru_cache(maxsize=1 << 14)
def _clean(text: str) -> str:
    """String values and names carry no whitespace."""
    return "_".join(str(text).split()) or IDLE


X = np.iinfo(np.int64).min  # "x" (no value) in an integer signal's value column


@dataclass(slots=True)
class Column:
    """One signal's changes by column: times (int64, strictly increasing) and values (int64
    for wires and integers, X for "x"; an object array of str for strings). A value equal to
    the one before is dropped later, where every signal's are."""

    times: np.ndarray
    values: np.ndarray


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
          lambda: _spans(bursts.starts, bursts.ends, _per_value(bursts.tensors, _clean), IDLE))  # fmt: skip
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
          lambda: _spans(st.starts, st.ends, _objects(st.states), IDLE))  # fmt: skip
    w.add(pe, "phase", "string", group, IDLE,
          lambda: _spans(st.starts, st.ends, _objects(st.phases), IDLE))  # fmt: skip
    w.add(pe, "active", "wire", group, 0, lambda: _active(st))
    w.add(pe, "einsum", "string", group, IDLE,
          lambda: _at([s.start for s in segs], _per_value([s.einsum for s in segs], _clean)))  # fmt: skip
    w.add(pe, "tile", "integer", group, "x",
          lambda: _at([s.start for s in segs], _ints([s.tile for s in segs])))  # fmt: skip
    w.add(pe, "stall_where", "string", group, IDLE,
          lambda: _spans(st.starts, st.ends, _per_value(st.wheres, _where_value), IDLE))  # fmt: skip


def _active(st) -> Column:
    """1 while the PE array computes (its compute states), 0 otherwise."""
    computing = np.array([s == COMPUTE for s in st.states], dtype=bool)
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


class ChangeStream:
    """The changes of every signal of Waves after the window's start, in time order.

    `initial` holds the values at the window's start. Each signal's changes are columns
    (numpy), a value equal to the one before dropped; `stretches` merges them a stretch of
    cycles at a time, so the text of at most one stretch is held in memory.
    """

    def __init__(self, w: Waves) -> None:
        self.w = w
        self.initial = list(w.inits)
        self.times: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        for i, source in enumerate(w.sources):
            col = source()
            times, values = col.times, col.values
            strings = values.dtype == object
            before = int(np.searchsorted(times, w.start, side="right"))  # the value at start
            if before:
                v = values[before - 1]
                self.initial[i] = v if strings else ("x" if v == X else int(v))
            inside = int(np.searchsorted(times, w.end, side="right"))
            times, values = times[before:inside], values[before:inside]
            init = self.initial[i]
            if not strings:
                init = X if init == "x" else init
            prev = np.empty_like(values)
            if len(values):
                prev[0] = init
                prev[1:] = values[:-1]
            changed = np.asarray(values != prev, dtype=bool)
            self.times.append(times[changed])
            self.values.append(values[changed])

    def _texts(self, fmt: list) -> tuple[np.ndarray, list[np.ndarray]]:
        """fmt[i](value) of every distinct value of every signal in one pool, and per signal
        each change's position in it."""
        pool: list = []
        where: list[np.ndarray] = []
        for f, values in zip(fmt, self.values, strict=True):
            if values.dtype == object:
                at, uniq = numbered(values)
                distinct = [f(v) for v in uniq]
            else:
                uniq, at = np.unique(values, return_inverse=True)
                many = getattr(f, "many", None)
                if many is not None:
                    distinct = many(uniq)
                else:
                    distinct = [f("x" if v == X else v) for v in uniq.tolist()]
            where.append(at.reshape(-1) + len(pool))
            pool += distinct
        return np.fromiter(pool, dtype=object, count=len(pool)), where

    def stretches(
        self, fmt: list, bar=None, stretch: int | None = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per stretch of cycles: (times, firsts, texts) where texts holds fmt[i](value) of each
        change in time order (signal order within a time), times[j] the distinct times and
        firsts[j] where time j's changes start in texts. Merged by numpy on integer keys, not
        per change in Python: a long run has millions of changes."""
        w0, w1 = self.w.start, self.w.end
        n = len(self.times)
        stretch = stretch or max(1 << 12, (w1 - w0) // 64)
        pool, where = self._texts(fmt)
        edges = np.arange(w0, w1 + 1, stretch, dtype=np.int64)[1:]
        edges = np.append(edges, w1 + 1)
        cuts = [np.concatenate(([0], np.searchsorted(t, edges))) for t in self.times]
        lo = w0
        for s, hi in enumerate(edges.tolist()):
            keys = [self.times[i][c[s] : c[s + 1]] * n + i for i, c in enumerate(cuts)]
            texts = [where[i][c[s] : c[s + 1]] for i, c in enumerate(cuts)]
            ordered = np.concatenate(keys)
            if len(ordered):
                order = np.argsort(ordered, kind="stable")
                times = ordered[order] // n
                firsts = np.flatnonzero(np.concatenate(([True], times[1:] != times[:-1])))
                yield times[firsts], firsts, pool[np.concatenate(texts)[order]]
            if bar is not None:
                bar.update(min(hi, w1) - lo)
            lo = hi

    def run(self, fmt: list, emit_time, emit, bar=None, stretch: int | None = None) -> None:
        """emit_time(t) once per time with changes, then emit(fmt[i](value)) per change."""
        for times, firsts, texts in self.stretches(fmt, bar, stretch):
            bounds = [*firsts.tolist(), len(texts)]
            changes = texts.tolist()
            for j, t in enumerate(times.tolist()):
                emit_time(t)
                for change in changes[bounds[j] : bounds[j + 1]]:
                    emit(change)


_CODE_CHARS = [chr(c) for c in range(33, 127)]


def _id_code(i: int) -> str:
    """VCD identifier of the i-th variable: base-94 over the printable characters."""
    out = ""
    while True:
        i, r = divmod(i, 94)
        out += _CODE_CHARS[r]
        if not i:
            return out


class _Texts(dict):
    """value -> VCD text of a change, made once per distinct value (wires and strings repeat)."""

    def __init__(self, make) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, v):
        text = self[v] = self.make(v)
        return text


def _vcd_value(var_type: str, code: str):
    """A function value -> the VCD text of a change of this variable."""
    if var_type == "wire":
        return _Texts(lambda v: f"{v}{code}").__getitem__
    if var_type == "integer":
        return _VcdInteger(code)
    return _Texts(lambda v: f"s{v} {code}").__getitem__


class _VcdInteger:
    """An integer variable's change texts: `b<binary> <code>`, `bx <code>` for "x"; `many`
    makes those of a column of values by numpy (a counter has a new value at most changes)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __call__(self, v) -> str:
        return f"bx {self.code}" if v == "x" else f"b{v:b} {self.code}"

    def many(self, values: np.ndarray) -> list[str]:
        """The texts of int64 values (X for "x")."""
        if (values[values != X] < 0).any():  # a negative number: as __call__ writes it
            return [self("x" if v == X else v) for v in values.tolist()]
        known = values != X
        v = np.where(known, values, 0)
        # binary digits, at least one: from log2, then made exact where rounding missed
        width = np.floor(np.log2(np.maximum(v, 1))).astype(np.int64) + 1
        width += (v >> np.minimum(width, 63)) > 0
        width -= (width > 1) & ((v >> np.maximum(width - 1, 0)) == 0)
        columns = int(width.max()) if len(v) else 1
        shift = np.clip(width[:, None] - 1 - np.arange(columns)[None, :], 0, None)
        matrix = np.empty((len(v), columns + 1), dtype=np.uint8)
        matrix[:, 0] = ord("b")
        matrix[:, 1:] = ((v[:, None] >> shift) & 1) + ord("0")
        matrix[~known, 1] = ord("x")
        keep = np.arange(columns + 1)[None, :] <= np.where(known, width, 1)[:, None]
        tail = np.frombuffer(f" {self.code}\n".encode("ascii"), dtype=np.uint8)
        rows = np.concatenate((matrix, np.broadcast_to(tail, (len(v), len(tail)))), axis=1)
        keep = np.concatenate((keep, np.ones((len(v), len(tail)), dtype=bool)), axis=1)
        return rows[keep].tobytes().decode("ascii").split("\n")[:-1]


def _vcd_header(w: Waves, codes: list[str], timescale: str, comment: str) -> list[str]:
    out = [f"$comment {comment} $end", f"$timescale {timescale} $end", "$version cyclesim $end"]
    open_scope: tuple[str, ...] = ()
    for sig, code in zip(w.signals, codes, strict=True):
        common = 0
        while (
            common < min(len(open_scope), len(sig.scope))
            and open_scope[common] == sig.scope[common]
        ):
            common += 1
        out += ["$upscope $end"] * (len(open_scope) - common)
        out += [f"$scope module {name} $end" for name in sig.scope[common:]]
        open_scope = sig.scope
        size = 1 if sig.var_type != "integer" else 64
        out.append(f"$var {sig.var_type} {size} {code} {sig.name} $end")
    out += ["$upscope $end"] * len(open_scope)
    out.append("$enddefinitions $end")
    return out


@atomic_output
def write_vcd(
    res: Result,
    path: str | Path,
    *,
    clock_mhz: float | None = None,
    window: tuple[int, int] | None = None,
    progress: bool | None = False,
) -> list[Signal]:
    """Write the VCD of a traced run over window; return the signals (for the .gtkw file).

    Raise TraceError if the run was not traced or the window is empty.
    """
    act = res.activity(window)
    w = plan_waves(act)
    timescale, comment = timescale_for(clock_mhz)
    codes = [_id_code(i) for i in range(len(w.signals))]
    fmt = [_vcd_value(s.var_type, c) for s, c in zip(w.signals, codes, strict=True)]
    with open(path, "w", encoding="utf-8", newline="\n") as f, gc_paused():
        stream = ChangeStream(w)
        lines = _vcd_header(w, codes, timescale, comment)
        lines += [f"#{act.start}", "$dumpvars"]
        lines += [fmt[i](v) for i, v in enumerate(stream.initial)] + ["$end"]
        f.write("\n".join(lines) + "\n")
        last_time = act.start
        with writing_bar(act.end - act.start, f"VCD {Path(path).name}", progress) as bar:
            for times, firsts, texts in stream.stretches(fmt, bar):
                # each time's "#t" line goes before its first change: text j moves down by
                # the number of times begun at or before it
                out = np.empty(len(texts) + len(times), dtype=object)
                marks = firsts + np.arange(len(times))
                out[marks] = [f"#{t}" for t in times.tolist()]
                rest = np.ones(len(out), dtype=bool)
                rest[marks] = False
                out[rest] = texts
                f.write("\n".join(out.tolist()) + "\n")
                last_time = int(times[-1])
        if last_time != act.end:
            f.write(f"#{act.end}\n")
    return w.signals
