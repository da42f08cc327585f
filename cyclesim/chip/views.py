"""Views of a chip replay (read ChipResult only): a VCD waveform with a scope per core and
per link, bus and DRAM port; a Perfetto trace with a process per core and a track per link,
bus and DRAM port; a per-core Gantt of steps and waits and a link/DRAM utilisation plot.
One cycle is one time unit (the VCD's 1 ns, Perfetto's 1 us)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from cyclesim.chip.result import ChipResult
from cyclesim.outputs import atomic_open, atomic_path, write_atomically


def _transfer_name(res: ChipResult, hop: int) -> str:
    plan = res.run.plan
    t = plan.transfers[plan.hops[hop].transfer]
    return f"{t.tensor}#{t.id} {t.source}->{'+'.join(t.targets)}"


def _us(cycles: int) -> float:
    """Cycles as Trace Event microseconds, one cycle = one nanosecond on the UI's ruler, as
    `cyclesim run` writes them (cycles / 1000: its shortest repr is the exact decimal)."""
    return cycles / 1000


def perfetto_events(res: ChipResult) -> list[dict]:
    """Chrome-trace events: pid 1.. a core each (tracks: steps, waits), then one process for
    the interconnect with a track per link, bus and DRAM port (a slice per burst)."""
    plan = res.run.plan
    events: list[dict] = []
    cores = plan.chip.core_names
    for i, core in enumerate(cores, start=1):
        events.append(
            {"ph": "M", "name": "process_name", "pid": i, "args": {"name": f"core {core}"}}
        )
        events.append(
            {"ph": "M", "name": "thread_name", "pid": i, "tid": 1, "args": {"name": "steps"}}
        )
        events.append(
            {"ph": "M", "name": "thread_name", "pid": i, "tid": 2, "args": {"name": "waits"}}
        )
    for s in res.spans:
        pid = cores.index(s.core) + 1
        if s.cause == "step":
            events.append({"ph": "X", "name": s.where, "cat": "step", "pid": pid, "tid": 1,
                           "ts": _us(s.start), "dur": _us(s.end - s.start)})  # fmt: skip
        else:
            args = {"phase": s.phase, "where": s.where, "competitor": s.competitor}
            events.append({"ph": "X", "name": s.cause, "cat": "wait", "pid": pid, "tid": 2,
                           "ts": _us(s.start), "dur": _us(s.end - s.start), "args": args})  # fmt: skip
    net = len(cores) + 1
    events.append({"ph": "M", "name": "process_name", "pid": net, "args": {"name": "interconnect"}})
    for tid, key in enumerate(plan.port_keys, start=1):
        events.append(
            {"ph": "M", "name": "thread_name", "pid": net, "tid": tid, "args": {"name": key}}
        )
        for start, end, hop, bits in res.run.grants[key]:
            events.append({"ph": "X", "name": _transfer_name(res, hop), "cat": "burst", "pid": net,
                           "tid": tid, "ts": _us(start), "dur": _us(end - start), "args": {"bits": bits}})  # fmt: skip
    return events


def write_chip_perfetto(res: ChipResult, path: str | Path) -> Path:
    """A Perfetto (Trace Event JSON) trace, gzipped when path ends in .gz (as `cyclesim run`
    writes it, no time stamp in the header); ui.perfetto.dev opens either."""
    path = Path(path)
    # no displayTimeUnit, as `cyclesim run`'s: older trace processors took it as ts's unit
    unit = "1 cycle = 1 ns on the ruler (ts in microseconds = cycles / 1000)"  # as run's
    doc = {"otherData": {"time_unit": unit, "cycles": res.cycles}, "traceEvents": perfetto_events(res)}  # fmt: skip
    text = json.dumps(doc, separators=(",", ":")) + "\n"
    if path.suffix != ".gz":
        write_atomically(path, text)
        return path
    from cyclesim.views.perfetto_json import gzipped

    with atomic_path(path) as temporary, gzipped(temporary) as f:
        f.write(text.encode("utf-8"))
    return path


def scope_name(key: str) -> str:
    """A link's, bus's or DRAM port's name as a waveform scope ('l[c0>c1]' -> 'l_c0_to_c1')."""
    return key.replace("[", "_").replace("]", "").replace(">", "_to_").replace(".", "_")


def chip_waves(res: ChipResult) -> tuple[list[tuple], list[tuple]]:
    """The waveform: signals (scope, name, type, initial value) and their changes (cycle,
    signal index, value) in time order. Per core `state` (step, or the cause of the wait, or
    idle) and `step` (its name); per link, bus and DRAM port `busy`, `transfer` (what holds
    it) and `bits_total`."""
    plan = res.run.plan
    signals: list[tuple] = []
    index: dict[tuple, int] = {}
    for core in plan.chip.core_names:
        for name, init in (("state", "idle"), ("step", "-")):
            index[(core, name)] = len(signals)
            signals.append((("chip", core), name, "string", init))
    for key in plan.port_keys:
        for name, kind, init in (("busy", "wire", 0), ("transfer", "string", "-"),
                                 ("bits_total", "integer", 0)):  # fmt: skip
            index[(key, name)] = len(signals)
            signals.append((("chip", scope_name(key)), name, kind, init))
    changes: list[tuple] = []  # (cycle, a grant's end before a start, order, signal, value)
    for s in res.spans:
        step = s.cause == "step"
        changes.append(
            (s.start, 1, len(changes), index[(s.core, "state")], "step" if step else s.cause)
        )
        changes.append(
            (s.start, 1, len(changes), index[(s.core, "step")], s.where if step else "-")
        )
    for key, grants in res.run.grants.items():
        moved = 0
        for start, end, hop, bits in grants:
            moved += bits
            changes.append((start, 1, len(changes), index[(key, "busy")], 1))
            changes.append(
                (start, 1, len(changes), index[(key, "transfer")], _transfer_name(res, hop))
            )
            changes.append((end, 0, len(changes), index[(key, "bits_total")], moved))
            changes.append((end, 0, len(changes), index[(key, "busy")], 0))
            changes.append((end, 0, len(changes), index[(key, "transfer")], "-"))
    changes.sort()  # in a cycle where one grant ends and the next starts, the end goes first
    out = [
        (c, sig, v.replace(" ", "_") if isinstance(v, str) else v) for c, _, _, sig, v in changes
    ]
    return signals, out


WAVE_UNIT = "1 time unit = 1 cycle (1 ns shown per cycle)"  # the waveforms' header comment


def write_chip_vcd(res: ChipResult, path: str | Path) -> Path:
    """The waveform (chip_waves) as VCD, written with pyvcd."""
    from vcd import VCDWriter

    path = Path(path)
    signals, changes = chip_waves(res)
    with (
        atomic_open(path, "w", encoding="ascii") as f,
        VCDWriter(f, timescale="1 ns", date="-", comment=WAVE_UNIT) as w,
    ):
        sizes = {"wire": 1, "integer": 64, "string": None}
        var = [w.register_var(".".join(scope), name, kind, size=sizes[kind], init=init)
               for scope, name, kind, init in signals]  # fmt: skip
        for cycle, sig, value in changes:
            w.change(var[sig], cycle, value)
        w.change(var[0], res.cycles, "end")
    return path


def write_chip_gtkw(res: ChipResult, wave: str | Path, path: str | Path) -> Path:
    """GTKWave's save file for the chip's VCD or FST at `wave`: a group per core and per
    link, bus and DRAM port, opening on the whole run (as `cyclesim run` writes one)."""
    from cyclesim.views.gtkw import write_gtkw
    from cyclesim.views.waves import Signal

    plan = res.run.plan
    groups = {core: f"core {core}" for core in plan.chip.core_names}
    groups.update({scope_name(key): key for key in plan.port_keys})  # 'dram_rw' -> 'dram.rw'
    signals = [Signal(scope, name, kind, groups[scope[1]])
               for scope, name, kind, _ in chip_waves(res)[0]]  # fmt: skip
    write_gtkw(signals, wave, path, start=0, end=max(res.cycles, 1))
    return Path(path)


def write_chip_fst(res: ChipResult, path: str | Path) -> Path:
    """The waveform (chip_waves) as FST, written with pylibfst (GTKWave's libfst)."""
    from pylibfst import ffi, lib

    from cyclesim.views.fst import _fst_value, _register, change_emitter, create_fst_writer
    from cyclesim.views.waves import Signal

    path = Path(path)
    signals, changes = chip_waves(res)
    ctx = create_fst_writer(ffi, lib, path)
    try:
        lib.fstWriterSetTimescaleFromString(ctx, b"1ns")
        lib.fstWriterSetComment(ctx, WAVE_UNIT.encode())
        lib.fstWriterSetVersion(ctx, b"cyclesim")
        handles = _register(lib, ffi, ctx, [Signal(sc, n, k, "") for sc, n, k, _ in signals])
        fmt = [_fst_value(k, h) for (_, _, k, _), h in zip(signals, handles, strict=True)]

        write = change_emitter(lib, ctx)

        def emit(sig: int, value) -> None:
            write(fmt[sig](value))

        lib.fstWriterEmitTimeChange(ctx, 0)
        for sig, (_, _, _, init) in enumerate(signals):
            emit(sig, init)
        now = 0
        for cycle, sig, value in changes:
            if cycle != now:
                lib.fstWriterEmitTimeChange(ctx, cycle)
                now = cycle
            emit(sig, value)
        lib.fstWriterEmitTimeChange(ctx, max(res.cycles, now))
        emit(0, "end")
    finally:
        lib.fstWriterClose(ctx)
    return path


def utilisation_steps(res: ChipResult, key: str, bins: int) -> tuple[list[float], list[float]]:
    """A link's, bus's or DRAM port's busy share (%) in each of `bins` equal bins of the run, as
    the corners of a post-step line: the last bin's value repeated at the run's end, so that
    the line covers the last bin too."""
    width = max(res.cycles, 1) / bins
    use = [0.0] * bins
    for a, b, _, _ in res.run.grants[key]:
        for k in range(int(a // width), min(math.ceil(b / width) - 1, bins - 1) + 1):
            lo, hi = max(a, k * width), min(b, (k + 1) * width)
            use[k] += max(0.0, hi - lo) / width
    ys = [100 * u for u in use]
    return [k * width for k in range(bins + 1)], ys + ys[-1:]


# The chip's own causes (docs/multicore.md), each a fixed colour of Paul Tol's schemes that no
# single-core cause, phase or layer (views/plots.py) has; `idle` a pale grey: no work left.
CHIP_CAUSE_COLORS = {"link": "#44AA99", "dram_port": "#DDCC77", "idle": "#E8E8E8"}
# the bursts' rows: a link's or bus's, and the DRAM port's (Tol's light blue and olive)
BURST_COLORS = {"link or bus": "#88CCEE", "DRAM port": "#999933"}


def span_color(cause: str, label: str, layers: list[str]) -> str:
    """A Gantt bar's colour: a step's by its layer (in the mapping's order), a wait's by its
    cause, the same in every plot (the single-core plots' colours, and the chip's own)."""
    from cyclesim.views.plots import _PALETTE, CAUSE_COLORS

    if cause == "step":
        greyless = [c for c in _PALETTE if c != "#777777"]  # greys are idle's and dependency's
        return greyless[layers.index(label) % len(greyless)]
    return CHIP_CAUSE_COLORS.get(cause) or CAUSE_COLORS.get(cause, "#000000")


def write_chip_plots(res: ChipResult, directory: str | Path) -> list[Path]:
    """chip_gantt.png (per core its steps by layer and its waits by cause; per link, bus and
    DRAM port its bursts) and chip_links.png (utilisation over time, in 50 bins)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    plan = res.run.plan
    cores, keys = plan.chip.core_names, plan.port_keys
    layers = [lm.einsum for lm in plan.mapping.layers]
    rows = len(cores) + len(keys)
    fig, ax = plt.subplots(figsize=(12, 1.6 + 0.45 * rows))
    seen: set[str] = set()
    for i, core in enumerate(cores):
        y = rows - 1 - i
        for s in (s for s in res.spans if s.core == core):
            label = s.where.split("#")[0] if s.cause == "step" else s.cause
            color = span_color(s.cause, label, layers)
            ax.broken_barh([(s.start, s.end - s.start)], (y - 0.4, 0.8), facecolor=color,
                           edgecolor="white", linewidth=0.8,
                           label=None if label in seen else label)  # fmt: skip
            seen.add(label)
    for j, key in enumerate(keys):
        y = rows - 1 - len(cores) - j
        bars = [(a, b - a) for a, b, _, _ in res.run.grants[key]]
        label = "DRAM port" if "." in key else "link or bus"
        ax.broken_barh(bars, (y - 0.3, 0.6), color=BURST_COLORS[label],
                       label=None if f"bursts on a {label}" in seen else f"bursts on a {label}")  # fmt: skip
        seen.add(f"bursts on a {label}")
    ax.set_yticks(range(rows))
    ax.set_yticklabels(list(reversed([f"core {c}" for c in cores] + list(keys))))
    ax.set_xlabel("cycle")
    ax.set_xlim(0, max(res.cycles, 1))
    ax.set_title(f"{plan.workload.name} on {plan.chip.name} ({plan.mapping.name}): "
                 f"{res.cycles:,} cycles; steps by layer, waits by cause, bursts per link")  # fmt: skip
    fig.legend(loc="lower center", ncol=min(len(seen), 8), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.45 / fig.get_figheight(), 1, 1))
    gantt = directory / "chip_gantt.png"
    with atomic_path(gantt) as temporary:
        fig.savefig(temporary, dpi=110)
    plt.close(fig)

    bins = 50
    width = max(res.cycles, 1) / bins
    fig, ax = plt.subplots(figsize=(12, 4))
    for n, key in enumerate(keys):
        xs, ys = utilisation_steps(res, key, bins)
        if any(ys):
            ax.step(
                xs,
                ys,
                where="post",
                label=key,
                linewidth=2.2 if "." in key else 1.2,
                linestyle=("-", "--", ":", "-.")[n % 4],
            )
    ax.set_ylim(0, 105)
    ax.set_xlim(0, max(res.cycles, 1))
    ax.set_xlabel("cycle")
    ax.set_ylabel("busy, % of each bin")
    ax.set_title(
        f"link, bus and DRAM port utilisation over time ({bins} bins of {f'{width:,.1f}'.removesuffix('.0')} cycles)"
    )
    # beside the axes, not over them: a trace at 100 % along the right edge stays in sight
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    fig.tight_layout()
    links = directory / "chip_links.png"
    with atomic_path(links) as temporary:
        fig.savefig(temporary, dpi=110)
    plt.close(fig)
    return [gantt, links]
