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

The changes are drawn from SimResult.activity (built once) and streamed to the file in time
order, a stretch of cycles at a time, so memory stays bounded; the same run gives the same
bytes (no date).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from cyclesim.outputs import atomic_output
from cyclesim.results import SimResult
from cyclesim.results.activity import (
    COMPUTE,
    Activity,
    DramBank,
    Track,
    gc_paused,
    iter_busy_runs,
)
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


def _spans(
    items: Iterable[tuple], idle: object, k: int | None = None, const: object = 1, transform=None
) -> Iterator[tuple[int, object]]:
    """Value changes of one signal from non-overlapping (start, end, ...) records in time order.

    The value is the record's field k (through transform), or const when k is None; idle between
    records. Times strictly increase and a value is not repeated across back-to-back records.
    """
    gap, last = None, idle  # end of the record before (idle not yet written); last value written
    for it in items:
        start, end = it[0], it[1]
        if end <= start:
            continue
        v = const if k is None else it[k]
        if transform is not None:
            v = transform(v)
        if gap == start:
            if v != last:
                yield start, v
                last = v
        else:
            if gap is not None:
                yield gap, idle
            yield start, v
            last = v
        gap = end
    if gap is not None:
        yield gap, idle


def _where_value(where: str) -> str:
    return _clean(where) if where else IDLE


@dataclass(slots=True)
class Waves:
    """Every signal, its value before the window, and a function giving its changes.

    Each source gives (time, value) with strictly increasing times (ChangeStream relies on it).
    """

    start: int
    end: int
    signals: list[Signal] = field(default_factory=list)
    inits: list[object] = field(default_factory=list)
    sources: list[Callable[[], Iterator[tuple[int, object]]]] = field(default_factory=list)

    def add(self, scope, name: str, var_type: str, group: str, init, source) -> None:
        self.signals.append(Signal(tuple(scope), name, var_type, group))
        self.inits.append(init)
        self.sources.append(source)


def _port_waves(w: Waves, act: Activity, memory: str, key: str) -> None:
    bursts, pe = act.ports[key], act.pe_ports[key]
    scope, group = (TOP, memory, key.split(".", 1)[1]), memory
    w.add(scope, "busy", "wire", group, 0, lambda: _spans(iter_busy_runs(act, key), 0))
    w.add(scope, "tensor", "string", group, IDLE,
          lambda: _spans(zip(bursts.starts, bursts.ends, bursts.tensors, strict=True), IDLE, 2, transform=_clean))  # fmt: skip
    w.add(scope, "bits", "integer", group, 0,
          lambda: _spans(zip(bursts.starts, bursts.ends, bursts.bits, strict=True), 0, 2))  # fmt: skip
    if pe:
        w.add(scope, "pe_share", "integer", group, 0,
              lambda: _spans(((a, b, -(-x // (b - a))) for a, b, x in zip(pe.starts, pe.ends, pe.bits, strict=True)), 0, 2))  # fmt: skip
    w.add(scope, "bits_total", "integer", group, 0, lambda: _landed(bursts, pe))


def _merged(transfers: Iterator, pe_use: Iterator, pe: Track) -> Iterator:
    """Two time-ordered streams of a port as one; the second is often empty (no PE use)."""
    return heapq.merge(transfers, pe_use) if pe else transfers


def _landed(bursts: Track, pe: Track) -> Iterator[tuple[int, int]]:
    """Bits moved through a port so far: each grant's and each PE segment's bits land at its end."""
    moved, at = 0, None
    # each track's records end in time order (one holder at a time): merged lazily, no copy
    ends = _merged(
        zip(bursts.ends, bursts.bits, strict=True), zip(pe.ends, pe.bits, strict=True), pe
    )
    for t, bits in ends:
        if at is not None and t != at:
            yield at, moved
        moved += bits
        at = t
    if at is not None:
        yield at, moved


def _pe_waves(w: Waves, act: Activity) -> None:
    pe, group = (TOP, "pe_array"), "PE array"
    st, segs = act.pe_states, act.segments
    w.add(pe, "state", "string", group, IDLE,
          lambda: _spans(zip(st.starts, st.ends, st.states, strict=True), IDLE, 2))  # fmt: skip
    w.add(pe, "phase", "string", group, IDLE,
          lambda: _spans(zip(st.starts, st.ends, st.phases, strict=True), IDLE, 2))  # fmt: skip
    w.add(pe, "active", "wire", group, 0,
          lambda: _spans((r for r in zip(st.starts, st.ends, st.states, strict=True) if r[2] == COMPUTE), 0))  # fmt: skip
    w.add(pe, "einsum", "string", group, IDLE, lambda: ((s.start, _clean(s.einsum)) for s in segs))
    w.add(pe, "tile", "integer", group, "x", lambda: ((s.start, s.tile) for s in segs))
    w.add(pe, "stall_where", "string", group, IDLE,
          lambda: _spans(zip(st.starts, st.ends, st.wheres, strict=True), IDLE, 2, transform=_where_value))  # fmt: skip


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
              lambda ts=times, ns=counts: zip(ts, ns, strict=True))  # fmt: skip
        w.add(scope, "bits", "integer", group, 0,
              lambda ts=times, ns=counts, b=buf.tile_bits: ((t, n * b) for t, n in zip(ts, ns, strict=True)))  # fmt: skip
        for i, column in enumerate(buf.slot_tiles):
            w.add(scope, f"slot{i}", "integer", group, "x",
                  lambda ts=times, c=column: ((t, "x" if k < 0 else k) for t, k in zip(ts, c, strict=True)))  # fmt: skip


def _dram_waves(w: Waves, act: Activity, memory: str, banks: list[DramBank]) -> None:
    """Per bank of a DRAM-modelled memory: `state` (idle, active, precharge, refresh) and
    `open_row` (x while no row is open), under <memory>.ch<c>[.rank<r>].bg<g>.bank<b>."""
    ranks, group = act.dram_ranks[memory], f"{memory} banks"
    for bank in banks:
        scope = (TOP, memory, *bank.path(ranks))
        times, states, rows = bank.times, bank.states, bank.rows
        w.add(scope, "state", "string", group, states[0],
              lambda ts=times, ss=states: zip(ts, ss, strict=True))  # fmt: skip
        w.add(scope, "open_row", "integer", group, "x" if rows[0] < 0 else rows[0],
              lambda ts=times, rs=rows: ((t, "x" if r < 0 else r) for t, r in zip(ts, rs, strict=True)))  # fmt: skip


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
            w.add((TOP, memory, "allocator"), "used_bytes", "integer", f"{memory} L1", 0, lambda s=series: iter(s))  # fmt: skip
        if memory in act.dram_banks:  # in the memory's scope, which the header opens once
            _dram_waves(w, act, memory, act.dram_banks[memory])
    for engine, channels in act.dma.items():
        for c, transfers in enumerate(channels):
            scope, group = (TOP, f"dma_{_clean(engine)}", f"ch{c}"), f"DMA {engine}"
            w.add(scope, "busy", "wire", group, 0, lambda tr=transfers: _spans(tr, 0))  # fmt: skip
            w.add(scope, "tensor", "string", group, IDLE,
                  lambda tr=transfers: _spans(tr, IDLE, 3, transform=_clean))  # fmt: skip
            w.add(scope, "bits", "integer", group, 0, lambda tr=transfers: _spans(tr, 0, 4))  # fmt: skip
    return w


class ChangeStream:
    """The changes of every signal of Waves after the window's start, in time order.

    `initial` holds the values at the window's start. `run` gathers the changes a stretch of
    cycles at a time from every signal (each source gives strictly increasing times), formats
    them, sorts them and passes them on, so at most one stretch is held in memory; a value
    equal to the one before is not repeated.
    """

    def __init__(self, w: Waves) -> None:
        self.w = w
        self.iters = [src() for src in w.sources]
        self.last = list(w.inits)
        self.pending: list[object] = [_NONE] * len(self.iters)
        for i, it in enumerate(self.iters):
            for t, v in it:
                if t > w.start:
                    self.pending[i] = (t, v)
                    break
                self.last[i] = v
        self.initial = list(self.last)

    def stretches(
        self, fmt: list, bar=None, stretch: int | None = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per stretch of cycles: (times, firsts, texts) where texts holds fmt[i](value) of each
        change in time order (signal order within a time), times[j] the distinct times and
        firsts[j] where time j's changes start in texts. Sorted by numpy on integer keys, not
        per change in Python: a long run has millions of changes."""
        w0, w1 = self.w.start, self.w.end
        iters, pending, last = self.iters, self.pending, self.last
        n = len(iters)
        stretch = stretch or max(1 << 12, (w1 - w0) // 64)
        lo = w0
        while lo <= w1:
            hi = min(lo + stretch, w1 + 1)
            keys: list[int] = []  # t * n + i: time first, then the signal's order
            texts: list[object] = []
            key, text = keys.append, texts.append
            for i in range(n):
                p = pending[i]
                if p is _NONE or p[0] >= hi:
                    continue
                t, v = p
                it, f, prev = iters[i], fmt[i], last[i]
                while True:
                    if v != prev and t <= w1:
                        key(t * n + i)
                        text(f(v))
                        prev = v
                    nxt = next(it, _NONE)
                    if nxt is _NONE:
                        pending[i] = _NONE
                        break
                    t, v = nxt
                    if t >= hi:
                        pending[i] = nxt
                        break
                last[i] = prev
            if keys:
                ordered = np.array(keys, dtype=np.int64)
                order = np.argsort(ordered, kind="stable")
                times = ordered[order] // n
                firsts = np.flatnonzero(np.concatenate(([True], times[1:] != times[:-1])))
                column = np.empty(len(texts), dtype=object)
                column[:] = texts
                yield times[firsts], firsts, column[order]
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
        return lambda v: f"bx {code}" if v == "x" else f"b{v:b} {code}"
    return _Texts(lambda v: f"s{v} {code}").__getitem__


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
    res: SimResult,
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
