"""VCD view (pyvcd): one scope per memory level with its ports and buffers, one per DMA engine,
one for the PE array. One cycle is one time unit.

Per port: busy (1 bit), tensor (string), bits (moved by the current grant: a burst, or a run of
back-to-back bursts) and bits_total (moved through the port since the window began). Per
buffer: tiles resident, their bits, and the tile index each slot holds (x when empty). PE
array: active, einsum, tile (segment index), stall (root cause) and stall_where.

Every variable is registered before the first change, and changes are written in time order;
anything else raises TraceError. The file carries no date, so the same run gives the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from vcd import VCDWriter
from vcd.writer import VCDPhaseError

from cyclesim.errors import TraceError
from cyclesim.results import SimResult
from cyclesim.views.activity import Activity, Busy, build_activity

TOP = "cyclesim"
IDLE = "-"  # the value of a string signal when nothing happens
_UNITS = ("fs", "ps", "ns", "us", "ms", "s")


@dataclass(frozen=True, slots=True)
class Signal:
    """A registered VCD variable: its scope path, name, type and how a viewer should show it."""

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
        return f"{mag} {unit}", f"1 time unit = 1 cycle = {mag} {unit} at {clock_mhz:g} MHz"
    return (
        "1 ns",
        f"1 time unit = 1 cycle; the clock is {clock_mhz:g} MHz ({1e3 / clock_mhz:g} ns per cycle)",
    )


def _clean(text: str) -> str:
    """VCD string values and names carry no whitespace."""
    return "_".join(str(text).split()) or IDLE


def _spans(changes: dict, spans: list[tuple[int, int, object]], idle: object) -> None:
    """Value changes of one signal from non-overlapping spans in time order; idle between them."""
    for start, end, value in spans:
        changes[start] = value
        if end > start:
            changes[end] = idle


class _Plan:
    """Signals to register, each with its changes {time: value}."""

    def __init__(self) -> None:
        self.signals: list[Signal] = []
        self.inits: list[object] = []
        self.changes: list[dict[int, object]] = []

    def add(
        self, scope: tuple[str, ...], name: str, var_type: str, group: str, init: object
    ) -> dict:
        self.signals.append(Signal(scope, name, var_type, group))
        self.inits.append(init)
        ch: dict[int, object] = {}
        self.changes.append(ch)
        return ch


def _port_signals(p: _Plan, act: Activity, memory: str, key: str, bursts: list[Busy]) -> None:
    scope = (TOP, memory, key.split(".", 1)[1])
    group = f"{memory}"
    busy = p.add(scope, "busy", "wire", group, 0)
    tensor = p.add(scope, "tensor", "string", group, IDLE)
    bits = p.add(scope, "bits", "integer", group, 0)
    total = p.add(scope, "bits_total", "integer", group, 0)
    _spans(busy, [(b.start, b.end, 1) for b in bursts], 0)
    _spans(tensor, [(b.start, b.end, _clean(b.tensor)) for b in bursts], IDLE)
    _spans(bits, [(b.start, b.end, b.bits) for b in bursts], 0)
    moved = 0
    for b in bursts:  # bits land when the grant ends
        moved += b.bits
        total[b.end] = moved


def plan_signals(act: Activity) -> _Plan:
    """Every signal of the VCD and its changes, in a fixed order (PE array, memories, DMA)."""
    p = _Plan()
    pe = (TOP, "pe_array")
    active = p.add(pe, "active", "wire", "PE array", 0)
    einsum = p.add(pe, "einsum", "string", "PE array", IDLE)
    tile = p.add(pe, "tile", "integer", "PE array", "x")
    stall = p.add(pe, "stall", "string", "PE array", IDLE)
    where = p.add(pe, "stall_where", "string", "PE array", IDLE)
    _spans(active, [(s.start, s.end, 1) for s in act.segments], 0)
    _spans(einsum, [(s.start, s.end, _clean(s.einsum)) for s in act.segments], IDLE)
    _spans(tile, [(s.start, s.end, s.tile) for s in act.segments], "x")
    _spans(stall, [(s.start, s.end, s.cause) for s in act.stalls], IDLE)
    _spans(where, [(s.start, s.end, _clean(s.where)) for s in act.stalls], IDLE)
    for memory in act.memories:
        for key, bursts in act.ports.items():
            if act.port_memory[key] == memory:
                _port_signals(p, act, memory, key, bursts)
        names: dict[str, int] = {}
        for buf in act.buffers:
            if buf.memory != memory:
                continue
            name = _clean(buf.tensor)
            names[name] = names.get(name, 0) + 1
            scope = (TOP, memory, name if names[name] == 1 else f"{name}_{names[name]}")
            group = f"{memory} buffers"
            tiles = p.add(scope, "tiles", "integer", group, 0)
            bits = p.add(scope, "bits", "integer", group, 0)
            slots = [p.add(scope, f"slot{i}", "integer", group, "x") for i in range(buf.slots)]
            for t, n, held in buf.changes:
                tiles[t] = n
                bits[t] = n * buf.tile_bits
                for i, k in enumerate(held):
                    slots[i][t] = "x" if k is None else k
        if memory in act.l1:  # its L1 allocator: bytes in use
            used = p.add((TOP, memory, "allocator"), "used_bytes", "integer", f"{memory} L1", 0)
            used.update(act.l1[memory])
    for engine, channels in act.dma.items():
        for c, transfers in enumerate(channels):
            scope = (TOP, f"dma_{_clean(engine)}", f"ch{c}")
            group = f"DMA {engine}"
            busy = p.add(scope, "busy", "wire", group, 0)
            tensor = p.add(scope, "tensor", "string", group, IDLE)
            bits = p.add(scope, "bits", "integer", group, 0)
            _spans(busy, [(b.start, b.end, 1) for b in transfers], 0)
            _spans(tensor, [(b.start, b.end, _clean(b.who)) for b in transfers], IDLE)
            _spans(bits, [(b.start, b.end, b.bits) for b in transfers], 0)
    return p


def write_vcd(
    res: SimResult,
    path: str | Path,
    *,
    clock_mhz: float | None = None,
    window: tuple[int, int] | None = None,
) -> list[Signal]:
    """Write the VCD of a traced run over window; return the signals (for the .gtkw file).

    Raise TraceError if the run was not traced or the window is empty.
    """
    act = build_activity(res, window)
    p = plan_signals(act)
    timescale, comment = timescale_for(clock_mhz)
    w0 = act.start
    initial = [ch.pop(w0, init) for init, ch in zip(p.inits, p.changes, strict=True)]
    merged = sorted(
        (t, i, v) for i, ch in enumerate(p.changes) for t, v in ch.items() if w0 < t <= act.end
    )
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        try:
            with VCDWriter(
                f,
                timescale=timescale,
                date="",
                comment=comment,
                version="cyclesim",
                check_values=False,
                init_timestamp=w0,
            ) as w:
                handles = [
                    w.register_var(
                        s.scope,
                        s.name,
                        s.var_type,
                        size=1 if s.var_type == "wire" else None,
                        init=v,
                    )
                    for s, v in zip(p.signals, initial, strict=True)
                ]
                last = list(initial)
                for t, i, v in merged:
                    if v != last[i]:
                        w.change(handles[i], t, v)
                        last[i] = v
                w.close(act.end)
        except (VCDPhaseError, ValueError, KeyError) as exc:
            raise TraceError(f"VCD {path}: {exc}") from exc
    return p.signals
