"""Plots (matplotlib, Agg): a Gantt timeline of ports, DMA channels and the PE array; stall
cycles by cause; buffer occupancy over time. Deterministic PNG/SVG (no dates in metadata).
"""

from __future__ import annotations

from pathlib import Path

from cyclesim.results import SimResult
from cyclesim.views.activity import Activity, build_activity

CAUSE_COLORS = {
    "bandwidth": "#d62728", "contention": "#ff7f0e", "buffer_full": "#9467bd", "latency": "#8c564b",
    "dependency": "#7f7f7f", "spatial": "#e377c2", "l1_alloc": "#bcbd22",
    "row_miss": "#1f77b4", "bank_conflict": "#17becf", "refresh": "#2ca02c", "turnaround": "#aec7e8",
}  # fmt: skip
_PALETTE = ("#1f77b4", "#2ca02c", "#17becf", "#bcbd22", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
_META = {"Software": None}  # no version/date stamps: same input, same bytes


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _color(name: str, seen: dict[str, str]) -> str:
    if name not in seen:
        seen[name] = _PALETTE[len(seen) % len(_PALETTE)]
    return seen[name]


def plot_timeline(act: Activity, path: str | Path, title: str = "") -> None:
    """Gantt chart: one row per busy port, per DMA channel, and the PE array (stalls by cause)."""
    plt = _plt()
    rows: list[tuple[str, list[tuple[int, int, str, str]]]] = []
    colors: dict[str, str] = {}
    pe = [(s.start, s.end, _color(s.einsum, colors), s.einsum) for s in act.segments]
    pe += [(s.start, s.end, CAUSE_COLORS.get(s.cause, "#000000"), s.cause) for s in act.stalls]
    rows.append(("PE array", pe))
    for key, bursts in act.ports.items():
        if bursts:
            rows.append(
                (key, [(b.start, b.end, _color(b.tensor, colors), b.tensor) for b in bursts])
            )
    for engine, channels in act.dma.items():
        for c, transfers in enumerate(channels):
            rows.append(
                (
                    f"DMA {engine} ch{c}",
                    [(b.start, b.end, _color(b.tensor, colors), b.tensor) for b in transfers],
                )
            )
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(rows) + 1.6))
    for y, (_, bars) in enumerate(reversed(rows)):
        ax.broken_barh(
            [(a, b - a) for a, b, _, _ in bars],
            (y - 0.4, 0.8),
            facecolors=[c for _, _, c, _ in bars],
            edgecolor="white",
            linewidth=0.3,
        )
    ax.set_yticks(range(len(rows)), [name for name, _ in reversed(rows)])
    ax.set_xlim(act.start, act.end)
    ax.set_xlabel("cycle")
    ax.set_title(title or f"timeline, cycles {act.start}..{act.end}")
    used = {label: c for _, bars in rows for _, _, c, label in bars}
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in used.values()]
    if handles:
        ax.legend(
            handles,
            list(used),
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=8,
            frameon=False,
        )
    fig.tight_layout()
    fig.savefig(path, metadata=_META)
    plt.close(fig)


def plot_stalls(res: SimResult, path: str | Path, title: str = "") -> None:
    """Horizontal bars: non-compute cycles per root cause and place (SimResult.stalls), by phase."""
    plt = _plt()
    df = res.stalls
    fig, ax = plt.subplots(figsize=(10, 0.4 * max(len(df), 1) + 1.6))
    if df.empty:
        ax.text(0.5, 0.5, "no non-compute cycles", ha="center", va="center", transform=ax.transAxes)
    else:
        df = df.head(20).iloc[::-1]
        labels = [
            f"{r.phase}: {r.cause} {r.tensor or ''}@{r.memory or ''}"
            + (f" vs {r.competitor}" if r.competitor else "")
            for r in df.itertuples()
        ]
        ax.barh(
            range(len(df)), df["cycles"], color=[CAUSE_COLORS.get(c, "#000") for c in df["cause"]]
        )
        ax.set_yticks(range(len(df)), labels, fontsize=8)
        ax.set_xlabel("cycles")
    ax.set_title(title or f"non-compute cycles by root cause ({res.cycles:,} cycles in all)")
    fig.tight_layout()
    fig.savefig(path, metadata=_META)
    plt.close(fig)


def plot_occupancy(act: Activity, path: str | Path, title: str = "") -> None:
    """Step plot of the tiles resident in each buffer (storage node) over the window."""
    plt = _plt()
    bufs = act.buffers or []
    fig, axes = plt.subplots(
        max(len(bufs), 1),
        1,
        figsize=(12, 1.2 * max(len(bufs), 1) + 1.0),
        sharex=True,
        squeeze=False,
    )
    for ax, buf in zip(axes[:, 0], bufs, strict=False):
        ts = [t for t, _, _ in buf.changes] + [act.end]
        ns = [n for _, n, _ in buf.changes]
        ax.step(ts, ns + ns[-1:], where="post")
        ax.set_ylim(-0.2, buf.slots + 0.2)
        ax.set_yticks(range(buf.slots + 1))
        ax.set_ylabel(buf.label, rotation=0, ha="right", fontsize=8)
    axes[-1, 0].set_xlim(act.start, act.end)
    axes[-1, 0].set_xlabel("cycle")
    axes[0, 0].set_title(title or "tiles resident per buffer")
    fig.tight_layout()
    fig.savefig(path, metadata=_META)
    plt.close(fig)


def write_plots(
    res: SimResult, out_dir: str | Path, *, window: tuple[int, int] | None = None, fmt: str = "png"
) -> list[Path]:
    """timeline, stalls and occupancy plots into out_dir; return the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    act = build_activity(res, window)
    files = [out / f"timeline.{fmt}", out / f"stalls.{fmt}", out / f"occupancy.{fmt}"]
    plot_timeline(act, files[0])
    plot_stalls(res, files[1])
    plot_occupancy(act, files[2])
    return files
