"""Plots of a rank run, read from its tables only: the peer's latency against the replay's cycles
per layer (every candidate, the pick and the replay's winner marked), and the regret by layer."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pandas as pd

from cyclesim.analysis.rank import RankRun


def plot_candidates(run: RankRun, path: str | Path, title: str) -> Path:
    """One panel per layer: a dot per replayed candidate at (peer latency, replayed cycles)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    # matplotlib's own style: importing zigzag-dse in this process sets rcParams globally
    with plt.style.context("default"):
        return _plot_candidates(run, path, title, plt)


def _plot_candidates(run: RankRun, path: str | Path, title: str, plt) -> Path:
    df = run.candidates[run.candidates["replay_cycles"].notna()]
    layers = list(dict.fromkeys(df["layer"]))
    n = max(1, len(layers))
    cols = min(4, n)
    rows = math.ceil(n / cols)
    width, header = max(8.0, 3.6 * cols), 0.9  # inches; the header holds title and legend
    height = header + 3.0 * rows
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False)
    summary = run.layers.set_index("layer")
    for ax, layer in zip(axes.flat, layers, strict=False):
        g = df[df["layer"] == layer]
        # equal mappings land on one point: its size and label say how many
        points = g.groupby(["peer_latency", "replay_cycles"]).size().reset_index(name="n")
        x, y = points["peer_latency"].astype(float), points["replay_cycles"].astype(float)
        ax.scatter(x, y, s=12 + 6 * points["n"].clip(upper=20), color="0.55", alpha=0.8,
                   label="candidates (size: how many)")  # fmt: skip
        for xi, yi, n in zip(x, y, points["n"], strict=True):
            if n > 1:
                ax.annotate(str(n), (xi, yi), fontsize=6, xytext=(4, 3),
                            textcoords="offset points")  # fmt: skip
        pick, win = g[g["is_pick"]], g[g["is_winner"]]
        ax.scatter(pick["peer_latency"], pick["replay_cycles"].astype(float), s=110,
                   facecolors="none", edgecolors="tab:red", linewidths=1.6,
                   label=f"{run.peer}'s pick")  # fmt: skip
        ax.scatter(win["peer_latency"], win["replay_cycles"].astype(float), s=60, marker="x",
                   color="tab:blue", linewidths=1.8, label="replay's best")  # fmt: skip
        ax.margins(0.15)
        row = summary.loc[layer] if layer in summary.index else None
        note = ""
        if row is not None and pd.notna(row.get("regret")):
            tau = "-" if pd.isna(row.get("tau")) else f"{row['tau']:.2f}"
            note = f"\ntau {tau}, regret {100 * row['regret']:.1f}%"
        ax.set_title(_short(layer) + note, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.ticklabel_format(style="sci", scilimits=(-3, 4), axis="both")
        ax.xaxis.get_offset_text().set_fontsize(7)
        ax.yaxis.get_offset_text().set_fontsize(7)
    for ax in list(axes.flat)[len(layers) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    # the title on the first line of the header, the legend on the second: never over each other
    fig.suptitle(_wrap(title, width, 10), fontsize=10, x=0.02, y=1 - 0.08 / height,
                 ha="left", va="top")  # fmt: skip
    fig.legend(handles, labels, loc="upper right", fontsize=8, ncols=3,
               bbox_to_anchor=(0.99, 1 - 0.38 / height))  # fmt: skip
    fig.supxlabel(f"{run.peer} latency (cycles)", fontsize=9)
    fig.supylabel("replayed cycles", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - header / height))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def plot_regret(run: RankRun, path: str | Path, title: str) -> Path:
    """A bar per layer: the regret of the peer's pick, in percent (0 where the pick is best)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    with plt.style.context("default"):  # as in plot_candidates
        return _plot_regret(run, path, title, plt)


def _plot_regret(run: RankRun, path: str | Path, title: str, plt) -> Path:
    df = run.layers
    regret = df["regret"].astype(float)
    values = [0.0 if pd.isna(v) else 100 * v for v in regret]
    width = max(5.0, 0.35 * len(df) + 2)
    fig, ax = plt.subplots(figsize=(width, 3.8))
    ax.bar(range(len(df)), values, color="tab:red", label="the pick replays slower than the best")
    best = [i for i, v in enumerate(regret) if v == 0]
    ax.scatter(best, [0] * len(best), marker="o", color="tab:green", zorder=3, clip_on=False,
               label="the pick replays best")  # fmt: skip
    for i in [i for i, v in enumerate(regret) if pd.isna(v)]:
        ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks(range(len(df)))
    ax.set_xticklabels([_short(n) for n in df["layer"]], rotation=70, ha="right", fontsize=7)
    ax.set_xlim(-0.7, len(df) - 0.3)
    ax.set_ylim(0, max([1.0, *values]) * 1.15)
    ax.set_ylabel("regret of the pick (%)", fontsize=9)
    ax.set_title(_wrap(title, width, 10), fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _wrap(text: str, width_inches: float, fontsize: float) -> str:
    """A title broken into lines that fit the figure's width (a character ~0.6 em wide)."""
    chars = max(20, int(0.9 * width_inches * 72 / (0.6 * fontsize)))
    return "\n".join(textwrap.wrap(text, chars))


def _short(name: str) -> str:
    """'/layer2/layer2.0/downsample/downsample.0/Conv' -> 'layer2.0/downsample.0'."""
    parts = [p for p in name.split("/") if p and p not in ("Conv", "Gemm")]
    parts = [p for p, after in zip(parts, parts[1:] + [""], strict=True)
             if not after.startswith(p + ".")]  # fmt: skip
    return "/".join(parts[-2:]) if parts else name
