"""The L1 map over time: address up, allocation sequence across, one colour per kind."""

from __future__ import annotations

from pathlib import Path

import matplotlib

from cyclesim.outputs import atomic_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from cyclesim.l1.config import AllocKind, Region  # noqa: E402
from cyclesim.l1.events import Action  # noqa: E402
from cyclesim.l1.tree_replay import ReplayResult  # noqa: E402

_LEGEND_ENTRY_INCHES = 1.75  # the widest entry, "intermediate (stack)", at font size 8
_COLOURS = {
    "pool block": "#e8e0f4",
    "tensor": "#8c8c8c",
    "output": "#2ca02c",
    "intermediate (heap)": "#d62728",
    "intermediate (pool)": "#9467bd",
    "intermediate (stack)": "#ff7f0e",
    "cb": "#1f77b4",
}


def _category(kind: AllocKind, region: Region) -> str:
    if kind is AllocKind.POOL:
        return "pool block"
    if kind is AllocKind.INTERMEDIATE:
        return f"intermediate ({region})"
    return str(kind)


def _rectangles(result: ReplayResult) -> list[tuple[str, int, int, int, int]]:
    """(category, first seq, last seq, address, size) of every allocation's lifetime."""
    open_: dict[str, tuple[str, int, int, int]] = {}
    out = []
    last = len(result.events)
    for event in result.events:
        if event.action is Action.ALLOC:
            cat = _category(event.kind, event.region)
            open_[event.name] = (cat, event.seq, event.address, event.size_bytes)
        elif event.action is Action.FREE and event.name in open_:
            cat, start, address, size = open_.pop(event.name)
            out.append((cat, start, event.seq, address, size))
    out += [(cat, start, last, address, size) for cat, start, address, size in open_.values()]
    return out


def plot_l1_map(results: list[ReplayResult], path: str | Path) -> Path:
    """Write one panel per policy, side by side, to a PNG; return the path."""
    path = Path(path)
    config = results[0].config
    kib = 1024.0
    fig, axes = plt.subplots(
        1, len(results), figsize=(5.5 * len(results), 6), sharey=True, squeeze=False
    )
    for ax, result in zip(axes[0], results, strict=True):
        rects = sorted(_rectangles(result), key=lambda r: list(_COLOURS).index(r[0]))
        patches = [Rectangle((s, a / kib), max(e - s, 0.8), z / kib) for _, s, e, a, z in rects]
        colours = [_COLOURS[c] for c, *_ in rects]
        ax.add_collection(
            PatchCollection(patches, facecolor=colours, edgecolor="black", linewidth=0.2)
        )
        ax.axhline(config.unreserved_base_bytes / kib, color="black", linewidth=0.8)
        ax.axhline(config.heap_top / kib, color="black", linewidth=0.8, linestyle="--")
        ax.set_xlim(0, max(len(result.events), 1))
        ax.set_ylim(config.unreserved_base_bytes / kib * 0.9, config.l1_size_bytes / kib)
        title = f"policy {result.policy}"
        if result.failure is not None:
            failure = result.failure
            ax.axvline(len(result.events), color="red", linewidth=1.5)
            y = (failure.address if failure.address is not None else failure.cb_region_end) / kib
            ax.plot([len(result.events)], [y], marker="x", color="red", markersize=10)
            title += f" - {failure.reason} at event {len(result.events)}"
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("allocation sequence (event)")
    axes[0][0].set_ylabel("L1 address (KiB); solid: unreserved base, dashed: heap top")
    handles = [Patch(facecolor=c, edgecolor="black", label=k) for k, c in _COLOURS.items()]
    # as many legend entries per row as the figure's width holds (one policy: 5.5 in), so
    # the legend is not clipped at both edges; the rows below the plots
    per_row = max(1, min(len(handles), int(5.5 * len(results) / _LEGEND_ENTRY_INCHES)))
    rows = -(-len(handles) // per_row)
    fig.legend(handles=handles, loc="lower center", ncol=per_row, fontsize=8, frameon=False)
    fig.suptitle(f"L1 map over time: {results[0].source}", fontsize=11)
    fig.tight_layout(rect=(0, 0.035 * rows + 0.01, 1, 0.96))
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        fig.savefig(temporary, dpi=120)
    plt.close(fig)
    return path
