"""Plots of a rank run, read from its tables only: the peer's latency against the replay's cycles
per layer (every candidate, the pick and the replay's winner marked), and the regret by layer."""

from __future__ import annotations

import math
from pathlib import Path

from cyclesim.analysis.rank import RankRun


def plot_candidates(run: RankRun, path: str | Path, title: str) -> Path:
    """One panel per layer: a dot per replayed candidate at (peer latency, replayed cycles)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = run.candidates[run.candidates["replay_cycles"].notna()]
    layers = list(dict.fromkeys(df["layer"]))
    n = max(1, len(layers))
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows), squeeze=False)
    for ax, layer in zip(axes.flat, layers, strict=False):
        g = df[df["layer"] == layer]
        x, y = g["peer_latency"].astype(float), g["replay_cycles"].astype(float)
        ax.scatter(x, y, s=14, color="0.55", label="candidate")
        pick, win = g[g["is_pick"]], g[g["is_winner"]]
        ax.scatter(pick["peer_latency"], pick["replay_cycles"].astype(float), s=70,
                   facecolors="none", edgecolors="tab:red", linewidths=1.6,
                   label=f"{run.peer}'s pick")  # fmt: skip
        ax.scatter(win["peer_latency"], win["replay_cycles"].astype(float), s=40, marker="x",
                   color="tab:blue", linewidths=1.6, label="replay's best")  # fmt: skip
        low, high = min(x.min(), y.min()), max(x.max(), y.max())
        ax.plot([low, high], [low, high], color="0.8", lw=0.8, zorder=0)
        ax.set_title(layer if len(layer) <= 34 else "…" + layer[-33:], fontsize=8)
        ax.tick_params(labelsize=7)
        ax.ticklabel_format(style="sci", scilimits=(0, 0), axis="both")
        ax.xaxis.get_offset_text().set_fontsize(7)
        ax.yaxis.get_offset_text().set_fontsize(7)
    for ax in list(axes.flat)[len(layers) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=8, ncols=3)
    fig.supxlabel(f"{run.peer} latency (cycles)", fontsize=9)
    fig.supylabel("replayed cycles", fontsize=9)
    fig.suptitle(title, fontsize=10, x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def plot_regret(run: RankRun, path: str | Path, title: str) -> Path:
    """A bar per layer: the regret of the peer's pick, in percent (0 where the pick is best)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = run.layers
    values = [
        0.0 if math.isnan(v) else 100 * v for v in df["regret"].astype(float).fillna(math.nan)
    ]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.35 * len(df) + 2), 3.6))
    colors = ["tab:red" if v > 0 else "tab:green" for v in values]
    ax.bar(range(len(df)), values, color=colors)
    missing = df["regret"].isna()
    for i in [i for i, m in enumerate(missing) if m]:
        ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks(range(len(df)))
    ax.set_xticklabels([_short(n) for n in df["layer"]], rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("regret of the pick (%)")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _short(name: str) -> str:
    """'/layer2/layer2.0/conv1/Conv' -> 'layer2.0/conv1'."""
    parts = [p for p in name.split("/") if p and p != "Conv" and p != "Gemm"]
    return "/".join(parts[-2:]) if len(parts) > 1 else (parts[0] if parts else name)
