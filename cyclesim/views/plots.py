"""Plots (matplotlib, Agg) an architect reads first: where the cycles went (one stacked bar),
stall cycles by cause (every cause visible), per-port utilisation over time (binned), a Gantt
timeline over a window around the first steady stretch, and buffer occupancy over that window.
Deterministic PNG/SVG (no dates in metadata); drawn from Result tables and its Activity.

Over 400 lines: the five figures `--plot` writes, one function each, sharing their colours,
binning and save.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cyclesim.outputs import atomic_output
from cyclesim.results import Result
from cyclesim.results.activity import COMPUTE, Activity, gc_paused
from cyclesim.results.port_use import busy_run_columns, merged_runs
from cyclesim.views.figures import DPI, save_png, shared_text
from cyclesim.views.figures import bars as _bars
from cyclesim.views.figures import fit as _fit
from cyclesim.views.figures import minor_log_ticks as _minor_log_ticks
from cyclesim.views.figures import new_figure as _figure
from cyclesim.views.figures import rgba as _rgba
from cyclesim.views.figures import tick_marks as _tick_marks
from cyclesim.views.figures import y_tick_labels as _y_tick_labels
from cyclesim.vocabulary import Cause

# One fixed colour per root cause, the same in every plot (breakdown, stalls, timeline, the
# zigzag network plot), colour-blind safe as far as 16 categories go. The seven causes every
# architecture can show, and compute, take Okabe & Ito's palette (vermillion, orange, reddish
# purple, blue, sky blue, yellow; bluish green); dependency and the DRAM and systolic causes
# take colours of Paul Tol's schemes (muted, bright, dark, light), onload and offload two
# greys. Chosen so that every two causes or phases are at least 17.8 apart in CAM02-UCS under
# normal vision (the two greys, never side by side, 11.3) and 11 under simulated full
# deuteranomaly, protanomaly and tritanomaly; tests/views/test_colours.py measures it.
CAUSE_COLORS = {
    Cause.BANDWIDTH: "#D55E00",
    Cause.CONTENTION: "#E69F00",
    Cause.BUFFER_FULL: "#CC79A7",
    Cause.LATENCY: "#0072B2",
    Cause.SPATIAL: "#56B4E9",
    Cause.L1_ALLOC: "#F0E442",
    Cause.DEPENDENCY: "#333333",
    Cause.ROW_MISS: "#42150A",
    Cause.BANK_CONFLICT: "#AA3377",
    Cause.REFRESH: "#666633",
    Cause.TURNAROUND: "#225555",
    Cause.DRAM_QUEUE: "#110011",
    Cause.SYSTOLIC_FILL: "#222255",
    Cause.SYSTOLIC_DRAIN: "#90C987",
}  # fmt: skip  one colour per cause (tests/views check every cause has its own)
PHASE_COLORS = {"onload": "#DDDDDD", "compute": "#009E73", "offload": "#BBBBBB"}
# Tensors and every Einsum's compute but the first's (compute's green) in the timeline, beside
# the causes in one legend: of Tol's schemes' colours, the twelve furthest from every cause's
# and phase's
_PALETTE = ("#A5170E", "#777777", "#332288", "#F6C141", "#5289C7", "#AA4499", "#D1BBD7",
            "#EE7733", "#72190E", "#CC3311", "#882255", "#99DDFF")  # fmt: skip
PE_USE_COLOR = "#000000"  # the PE array's use of a port: a thin bar under the transfers
# no version or date stamps (the keys each format has; PNGs are written by figures.save_png,
# with none): same input, same bytes
_META = {"svg": {"Date": None}}
PLOT_NAMES = ("breakdown", "stalls", "ports", "timeline", "occupancy")  # write_plots' files
ROW_GAP = 0.27  # blank between the occupancy plot's rows, in rows' heights
STALL_BASE = 0.5  # where the stall plot's log-scale bars start, in cycles
BINS = 200  # time bins of the utilisation plot, whatever the run's length
STEADY_PERIODS = 10  # PE segment periods the default timeline window shows
STEADY_RUN = 4  # periods in a row of the common length that make a steady stretch


def _color(name: str, seen: dict[str, str]) -> str:
    """The palette's next colour for a name not seen before (compute's green is no palette's)."""
    if name not in seen:
        taken = sum(1 for c in seen.values() if c != PHASE_COLORS["compute"])
        seen[name] = _PALETTE[taken % len(_PALETTE)]
    return seen[name]


def _ink(background: str) -> str:
    """Black or white text, whichever reads on `background` (#RRGGBB): black on light colours
    (onload's grey, l1_alloc's yellow), white on dark ones (WCAG relative luminance)."""
    linear = [int(background[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in linear]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "black" if luminance > 0.179 else "white"  # the contrast ratios cross at 0.179


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


@atomic_output
def _save(fig, path) -> None:
    """Margins set (_fit), then the one drawing of the figure into path (PNG: zlib level 3)."""
    import matplotlib

    _fit(fig)
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt == "png":
        save_png(fig, path, DPI)
        return
    with matplotlib.rc_context({"svg.hashsalt": "cyclesim"}):  # SVG ids from a fixed salt
        fig.savefig(path, metadata=_META.get(fmt), dpi=DPI)


def breakdown_parts(res: Result) -> list[tuple[str, int, str]]:
    """(label, cycles, color) of the run's cycles in order: onload, compute, stall by cause, offload."""
    parts = [("onload", res.onload_cycles, PHASE_COLORS["onload"])]
    parts.append(("compute", res.ideal_compute_cycles, PHASE_COLORS["compute"]))
    by_cause = res.stall_cycles_by_cause(("compute",))
    for cause, cycles in sorted(by_cause.items(), key=lambda kv: -kv[1]):
        parts.append((f"stall: {cause}", cycles, CAUSE_COLORS.get(cause, "#000000")))
    parts.append(("offload", res.offload_cycles, PHASE_COLORS["offload"]))
    return [p for p in parts if p[1] > 0]


def plot_breakdown(res: Result, path: str | Path, title: str = "") -> None:
    """One stacked bar: onload / compute / stall by cause / offload, each with its cycles and share."""
    from matplotlib.ticker import FuncFormatter

    parts = breakdown_parts(res)
    fig, ax = _figure(11, 2.6)
    left = 0
    for label, cycles, color in parts:
        ax.barh(0, cycles, left=left, color=color, edgecolor="white", linewidth=0.8,
                label=f"{label}: {cycles:,} ({_pct(cycles, res.cycles)})")  # fmt: skip
        if cycles >= 0.06 * res.cycles:  # wide enough to carry its own label
            ax.text(left + cycles / 2, 0, f"{label}\n{_pct(cycles, res.cycles)}", ha="center",
                    va="center", fontsize=8, color=_ink(color), fontweight="bold")  # fmt: skip
        left += cycles
    ax.set_xlim(0, max(res.cycles, 1))
    ax.set_yticks([])
    ax.set_xlabel("cycles")
    # whole cycles with thousands separators, not matplotlib's '0.2 ... 1.0' with a '1e6' aside
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
    ax.set_title(title or f"where the {res.cycles:,} cycles went", fontsize=10)
    # under the x axis's label: 4.5 font sizes (36 points) below the axes, whatever their height
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0), borderaxespad=4.5, ncol=3, fontsize=8,
              frameon=False)  # fmt: skip
    _save(fig, path)


def plot_stalls(res: Result, path: str | Path, title: str = "") -> None:
    """Non-compute cycles per (phase, cause, place), largest first, on a log axis so every one shows."""
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import FuncFormatter

    df = res.stalls
    top = 24
    fig, ax = _figure(11, 0.34 * max(min(len(df), top), 1) + 1.8)
    if df.empty:
        ax.text(0.5, 0.5, "no non-compute cycles", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    else:
        rest = df.iloc[top:]
        df = df.head(top).iloc[::-1]
        labels = [
            f"{r.phase} {r.cause}: "
            + (f"{r.tensor or ''}@{r.memory}" if r.memory else "PE array")
            + (f" {r.port_memory}.{r.port}" if r.port_memory else (f" {r.port}" if r.port else ""))
            + (f" vs {r.competitor}" if r.competitor else "")
            for r in df.itertuples()
        ]
        colors = [CAUSE_COLORS.get(c, "#000") for c in df["cause"]]
        # bars start at STALL_BASE, half a cycle, so a 1-cycle bar spans a factor of 2 on the
        # log axis (from 0.8 it was a sliver of a few pixels beside a 10^5-cycle one)
        ax.barh(range(len(df)), df["cycles"] - STALL_BASE, left=STALL_BASE, color=colors)
        ax.set_xscale("log")
        ax.set_xlim(STALL_BASE, df["cycles"].max() * 8)
        # decades as whole cycles ('1,000'), not mathtext's 10^3: easier to read, and parsing
        # mathtext was a third of this plot's CPU time
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        _minor_log_ticks(ax, STALL_BASE, df["cycles"].max() * 8)
        for y, cycles in enumerate(df["cycles"]):
            ax.text(cycles * 1.1, y, f"{int(cycles):,} ({_pct(int(cycles), res.cycles)})",
                    va="center", fontsize=7)  # fmt: skip
        _y_tick_labels(ax, range(len(df)), labels, 7)
        # the log axis said so only in small print: a 504-cycle bar looked two thirds of a
        # 187,500-cycle one. A grid line per decade shows the scale; the values are the numbers
        ax.grid(True, axis="x", which="major", alpha=0.4)
        ax.set_axisbelow(True)
        ax.set_xlabel("cycles, LOG SCALE: each grid line x10, values at the bars' ends", fontsize=9)
        causes = list(dict.fromkeys(df["cause"][::-1]))
        ax.legend([Rectangle((0, 0), 1, 1, color=CAUSE_COLORS.get(c, "#000")) for c in causes],
                  causes, loc="lower right", fontsize=7, frameon=False)  # fmt: skip
        if len(rest):  # under the axes' right end, beside the x axis's label
            ax.annotate(f"{len(rest)} more rows, {int(rest['cycles'].sum()):,} cycles", (1, 0),
                        xycoords="axes fraction", xytext=(0, -24), textcoords="offset points",
                        ha="right", va="top", fontsize=7)  # fmt: skip
    non_compute = res.onload_cycles + res.stall_cycles + res.offload_cycles
    ax.set_title(title or f"non-compute cycles by root cause: {non_compute:,} of {res.cycles:,} "
                 f"({_pct(non_compute, res.cycles)})", fontsize=10)  # fmt: skip
    _save(fig, path)


def utilisation(runs, start: int, end: int, bins: int):
    """Fraction of each of `bins` equal stretches of [start, end) covered by the runs (numpy).

    The runs ((start, end) pairs, or a pair of start and end columns) are sorted and do not
    overlap; the cycles covered up to each bin edge are the whole runs that end before it plus
    the part of the one that holds it.
    """

    edges = np.linspace(start, end, bins + 1)
    if isinstance(runs, tuple):  # columns
        a, b = (np.asarray(c, dtype=np.float64) for c in runs)
    else:
        a = np.fromiter((r[0] for r in runs), dtype=np.float64, count=len(runs))
        b = np.fromiter((r[1] for r in runs), dtype=np.float64, count=len(runs))
    if not len(a):
        return edges, np.zeros(bins)
    whole = np.concatenate(([0.0], np.cumsum(b - a)))
    k = np.searchsorted(b, edges, side="right")  # runs ending at or before each edge
    inside = k < len(a)
    part = np.zeros_like(edges)
    part[inside] = np.clip(edges[inside] - a[k[inside]], 0.0, None)
    covered = whole[k] + part
    return edges, np.diff(covered) / np.diff(edges)


def plot_ports(act: Activity, path: str | Path, title: str = "") -> None:
    """Per-port busy fraction over time, binned (a heat map row per port), the PE array on top."""
    rows, labels = [], []
    st = act.pe_states
    codes, states = st.numbered("states")  # numbered once for every view (VCD, Perfetto)
    computing = codes == states.index(COMPUTE) if COMPUTE in states else np.zeros(len(st), bool)
    pe_runs = merged_runs(np.array(st.starts, np.int64)[computing], np.array(st.ends, np.int64)[computing])  # fmt: skip
    bins = min(BINS, max(1, act.end - act.start))
    edges, frac = utilisation(pe_runs, act.start, act.end, bins)
    rows.append(frac)
    labels.append("PE array computing")
    for key in act.ports:
        runs = busy_run_columns(act, key)
        if not len(runs[0]):
            continue
        rows.append(utilisation(runs, act.start, act.end, bins)[1])
        share = " (PE array + transfers)" if act.pe_ports.get(key) and act.ports[key] else (
            " (PE array)" if act.pe_ports.get(key) else "")  # fmt: skip
        labels.append(f"{key}{share}")
    fig, ax = _figure(12, 0.32 * len(rows) + 1.9)
    im = ax.imshow(np.array(rows), aspect="auto", interpolation="nearest", cmap="viridis",
                   vmin=0, vmax=1, extent=(edges[0], edges[-1], len(rows) - 0.5, -0.5))  # fmt: skip
    _y_tick_labels(ax, range(len(rows)), labels, 8)
    width = f"{(act.end - act.start) / bins:,.0f}"
    ax.set_xlabel(f"cycle ({bins} bins of {width} cycle{'' if width == '1' else 's'})")
    fig.colorbar(im, ax=ax, fraction=0.025, pad=0.01, label="busy fraction")
    ax.set_title(title or "port utilisation over time (busy: a transfer holds it or the PE array uses it)", fontsize=10)  # fmt: skip
    _save(fig, path)


def steady_window(act: Activity) -> tuple[int, int]:
    """A window around the first steady stretch of the PE array.

    The steady period is the most common time between the starts of consecutive PE segments;
    the stretch is the first place where STEADY_RUN periods in a row have that length. The window
    opens one period before it and shows STEADY_PERIODS periods. Without segments (or a period),
    the first 2,000 cycles from the first step.
    """
    from collections import Counter

    starts = act.segments.starts.tolist()
    periods = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    if periods:
        common = Counter(periods).most_common(1)[0][0]
        run = 0
        for i, p in enumerate(periods):
            run = run + 1 if p == common else 0
            if run == STEADY_RUN and common > 0:
                first = starts[i + 1 - STEADY_RUN]
                lo = max(act.start, first - common)
                return lo, min(act.end, lo + (STEADY_PERIODS + 1) * common)
    first = starts[0] if starts else act.start
    lo = max(act.start, first - 50)
    return lo, min(act.end, lo + 2000)


def plot_timeline(
    act: Activity, path: str | Path, window: tuple[int, int], title: str = ""
) -> None:
    """Gantt chart over window: the PE array's state, each busy port (its transfers, and the PE
    array's use in a thinner bar), DMA channels."""
    from matplotlib import rcParams
    from matplotlib.patches import Rectangle

    w0, w1 = window

    def within(records):
        """The records overlapping the window, clipped to it (a long run holds many more:
        columns are searched with numpy, and only the records inside are made)."""
        if not isinstance(records, list):  # a Track or States, by column
            starts = np.frombuffer(records.starts, dtype=np.int64)
            ends = np.frombuffer(records.ends, dtype=np.int64)
            records = records.take(np.flatnonzero((ends > w0) & (starts < w1)).tolist())
        return [r._replace(start=max(r.start, w0), end=min(r.end, w1)) for r in records
                if r.end > w0 and r.start < w1]  # fmt: skip

    rows: list[tuple[str, list, list]] = []  # name, bars, thin bars
    # the first Einsum computes in compute's green, as in the breakdown; the PE array's row
    # puts it beside the causes, none of which is close to it (a palette blue was spatial's)
    first = next((s.einsum for s in act.pe_states if s.state == COMPUTE), None)
    colors: dict[str, str] = {} if first is None else {first: PHASE_COLORS["compute"]}
    pe = [(s.start, s.end, _color(s.einsum, colors) if s.state == COMPUTE else CAUSE_COLORS.get(s.state, "#000"),
           f"compute {s.einsum}" if s.state == COMPUTE else s.state) for s in within(act.pe_states)]  # fmt: skip
    rows.append(("PE array", pe, []))
    for key, bursts in act.ports.items():
        bars = [(b.start, b.end, _color(b.tensor, colors), f"moving {b.tensor}") for b in within(bursts)]  # fmt: skip
        thin = [(b.start, b.end, PE_USE_COLOR, "PE array's use of a port") for b in within(act.pe_ports[key])]  # fmt: skip
        if bars or thin:
            rows.append((key, bars, thin))
    for engine, channels in act.dma.items():
        for c, transfers in enumerate(channels):
            bars = [(b.start, b.end, _color(b.tensor, colors), f"moving {b.tensor}") for b in within(transfers)]  # fmt: skip
            if bars:
                rows.append((f"DMA {engine} ch{c}", bars, []))
    fig, ax = _figure(12, 0.42 * len(rows) + 1.8)
    # white separators between bars only where bars are a few pixels wide; narrower ones
    # (short bursts in a long window) get an edge of their own colour instead, so white does
    # not wash them out and a transfer shorter than a pixel still shows
    pixels_per_cycle = 0.8 * fig.get_figwidth() * fig.dpi / max(w1 - w0, 1)
    for y, (_, bars, thin) in enumerate(reversed(rows)):
        if bars:
            faces = _rgba([c for _, _, c, _ in bars])
            wide = min(b - a for a, b, _, _ in bars) * pixels_per_cycle >= 4
            _bars(ax, bars, y - 0.38, 0.76, facecolors=faces, edgecolors="white" if wide else faces,
                  linewidths=0.4 if wide else 0.6)  # fmt: skip
        if thin:
            _bars(ax, thin, y - 0.38, 0.18, facecolors=PE_USE_COLOR, edgecolors="none")
    # the rows' extent with matplotlib's margin, as autoscaling to the bars gave
    margin = rcParams["axes.ymargin"] * (len(rows) - 1 + 0.76)
    ax.set_ylim(-0.38 - margin, len(rows) - 1 + 0.38 + margin)
    _y_tick_labels(ax, range(len(rows)), [name for name, _, _ in reversed(rows)], 8)
    ax.set_xlim(w0, w1)
    ax.set_xlabel("cycle")
    ax.set_title(title or f"timeline, cycles {w0:,}..{w1:,} (of {act.cycles:,})", fontsize=10)
    used = {lab: c for _, bars, thin in rows for _, _, c, lab in bars + thin}
    # right of the axes by one font size (8 points), whatever their width
    ax.legend([Rectangle((0, 0), 1, 1, color=c) for c in used.values()], list(used),
              loc="upper left", bbox_to_anchor=(1, 1), borderaxespad=1, fontsize=8, frameon=False)  # fmt: skip
    _save(fig, path)


def plot_occupancy(
    act: Activity, path: str | Path, window: tuple[int, int], title: str = ""
) -> None:
    """Step plot of the tiles resident in each buffer (storage node) over window: a framed row
    per buffer on its own scale 0..slots, the rows drawn on one axes (an axes per row cost
    ~25 ms of matplotlib's machinery each; the memory-size example has seven)."""
    from matplotlib import rcParams
    from matplotlib.font_manager import FontProperties
    from matplotlib.patches import Rectangle

    w0, w1 = window
    bufs = act.buffers or []
    rows = max(len(bufs), 1)
    fig, ax = _figure(12, 0.9 * rows + 1.0)
    ax.set_xlim(w0, w1)
    ax.set_ylim(0, rows + (rows - 1) * ROW_GAP)
    ax.spines[:].set_visible(False)  # each row has its own frame
    ticks = [t for t in ax.xaxis.get_major_locator().tick_values(w0, w1) if w0 <= t <= w1]
    ax.set_xticks(ticks)  # labelled under the bottom row, marks only under the others
    # a row's name right of its tick labels, as a y axis label stands (the widest label measured)
    font = FontProperties(size=rcParams["ytick.labelsize"])
    widest = max((len(str(b.slots)) for b in bufs), default=1)
    width = fig.canvas.get_renderer().get_text_width_height_descent("8" * widest, font, False)[0]
    name_x = -(rcParams["ytick.major.size"] + rcParams["ytick.major.pad"] + width * 72 / DPI + 4)
    positions, labels = [], []
    for row in range(rows):
        base = (rows - 1 - row) * (1 + ROW_GAP)  # the first buffer on top
        ax.add_patch(Rectangle((0, base), 1, 1, transform=ax.get_yaxis_transform(), fill=False,
                               edgecolor=rcParams["axes.edgecolor"], zorder=2.5,
                               linewidth=rcParams["axes.linewidth"], clip_on=False))  # fmt: skip
        if row < rows - 1:
            _tick_marks(ax, ticks, at=base)
        if row >= len(bufs):
            continue
        buf = bufs[row]
        scale = 1 / (buf.slots + 0.4)  # counts -0.2 .. slots + 0.2 fill the row
        times, counts = np.array(buf.times, np.int64), np.array(buf.counts, np.int64)
        before = int(np.searchsorted(times, w0, side="right"))  # changes at or before w0
        inside = np.flatnonzero((times > w0) & (times < w1))
        ts = [w0, *times[inside].tolist(), w1]
        ns = [int(counts[before - 1]) if before else 0, *counts[inside].tolist()]
        ax.step(ts, [base + (n + 0.2) * scale for n in ns + ns[-1:]], where="post", color="C0")
        positions += [base + (k + 0.2) * scale for k in range(buf.slots + 1)]
        labels += [str(k) for k in range(buf.slots + 1)]
        ax.annotate(buf.label, (0, base + 0.5), xycoords=ax.get_yaxis_transform(),
                    xytext=(name_x, 0), textcoords="offset points", ha="right", va="center",
                    fontsize=8)  # fmt: skip
    _y_tick_labels(ax, positions, labels, rcParams["ytick.labelsize"])
    ax.set_xlabel("cycle")
    ax.set_title(title or f"tiles resident per buffer, cycles {w0:,}..{w1:,}", fontsize=10)
    _save(fig, path)


def write_plots(
    res: Result,
    out_dir: str | Path,
    *,
    window: tuple[int, int] | None = None,
    fmt: str = "png",
    title: str = "",
    progress: bool | None = False,
) -> list[Path]:
    """breakdown, stalls, ports, timeline and occupancy plots into out_dir; return the files.

    The timeline and occupancy show window when given or when the trace was recorded over a
    window (--window); otherwise a window around the first steady stretch (steady_window).
    A bar counts the plots drawn (progress: None = on a terminal).
    """
    from cyclesim.views.progress import steps_bar

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    act = res.activity(window)
    whole = act.start == 0 and act.end == res.cycles
    span = steady_window(act) if whole and window is None else (act.start, act.end)
    files = [out / f"{n}.{fmt}" for n in PLOT_NAMES]
    suffix = f" — {title}" if title else ""
    draw = (
        lambda: plot_breakdown(res, files[0], f"where the {res.cycles:,} cycles went{suffix}"),
        lambda: plot_stalls(res, files[1]),
        lambda: plot_ports(act, files[2]),
        lambda: plot_timeline(act, files[3], span),
        lambda: plot_occupancy(act, files[4], span),
    )
    # the collector paused (as the trace writers pause it): matplotlib's artists set it off
    # dozens of times per plot, and each full collection walks every live object of the
    # traced run (0.2-0.4 s on the memory-size example); the five figures' cycles are freed
    # by the first collection after
    # matplotlib's own style: a library imported in this process (zigzag-dse sets axes labels
    # at 20 pt) may have changed rcParams globally, which made the stalls plot's label outgrow
    # its figure
    import matplotlib.style

    with steps_bar(len(draw), "plots", progress) as tick, gc_paused(), matplotlib.style.context("default"), shared_text():  # fmt: skip
        for name, plot in zip(PLOT_NAMES, draw, strict=True):
            plot()
            tick(name)
    return files
