"""The whole-network plot: replay vs ZigZag latency per layer, and where each layer's stall comes from."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cyclesim.checks.zigzag.network import OK, status_counts
from cyclesim.outputs import atomic_path
from cyclesim.results.stall_span import CAUSES
from cyclesim.views.plots import CAUSE_COLORS


def plot_network(df: pd.DataFrame, path: str | Path, title: str = "") -> None:
    """Two panels over every layer: latency per source (log scale), and the replay's non-compute
    cycles stacked by root cause. A layer not replayed keeps its place (and ZigZag's point), its
    label says why, and the title counts it."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    # matplotlib's own style, whatever the process set: importing zigzag-dse (in this process
    # with --workers 1) sets rcParams globally (axes labels at 20 pt)
    with plt.style.context("default"):
        _plot(df, path, title, plt)


def _plot(df: pd.DataFrame, path: str | Path, title: str, plt) -> None:
    ok = df.reset_index(drop=True)  # every layer: one not replayed still shows ZigZag's latency
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(8.0, 0.45 * len(ok) + 3), 8), sharex=True)
    x = range(len(ok))
    # a layer not checked says why in the table's words: '(no ZigZag mapping)' where
    # zigzag-dse found none, '(refused)' only where cyclesim's reader refused it
    labels = [
        _short(name) + ("" if status == OK else f" ({status})")
        for name, status in zip(ok["layer"], ok["status"], strict=True)
    ]
    for source, style, label in (
        ("zigzag", dict(marker="s", linestyle="--", color="#d62728"), "zigzag-dse"),
        ("model", dict(marker="x", linestyle="none", color="#7f7f7f"), "cyclesim's ZigZag model"),
        ("replay", dict(marker="o", linestyle="-", color="#1f77b4"), "replay"),
    ):
        values = pd.to_numeric(ok[f"{source}_cycles"], errors="coerce").astype("Float64")
        if values.notna().any():
            top.plot(x, values.to_numpy(dtype=float, na_value=float("nan")), label=label, **style)
    top.set_yscale("log")
    top.set_ylabel("latency (cycles)")
    top.legend(fontsize=8, frameon=False)
    top.grid(axis="y", alpha=0.3)
    bottom_base = [0.0] * len(ok)
    for cause in CAUSES:
        column = f"stall_{cause}"
        if column not in ok.columns or not ok[column].fillna(0).any():
            continue
        values = pd.to_numeric(ok[column], errors="coerce").fillna(0).astype(float).tolist()
        bottom.bar(x, values, bottom=bottom_base, color=CAUSE_COLORS.get(cause, "#000"),
                   label=cause)  # fmt: skip
        bottom_base = [b + v for b, v in zip(bottom_base, values, strict=True)]
    bottom.set_ylabel("replay non-compute cycles")
    bottom.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))  # not '1e6'
    if any(bottom_base):
        bottom.legend(fontsize=8, frameon=False, title="root cause", title_fontsize=8)
    bottom.set_xticks(list(x), labels, rotation=60, ha="right", fontsize=7)
    left_out = status_counts(df)  # '(8 with no ZigZag mapping)', as the text summary says
    suffix = f" ({left_out})" if left_out else ""
    top.set_title((title or "replay vs ZigZag, per layer") + suffix)
    fig.tight_layout()
    # no version or date stamps: the same table gives the same bytes, in each format
    stamps = {".svg": {"Creator": None, "Date": None}, ".pdf": {"Creator": None,
              "Producer": None, "CreationDate": None}}  # fmt: skip
    with plt.rc_context({"svg.hashsalt": "cyclesim"}):  # SVG ids from a fixed salt, not random
        with atomic_path(path) as temporary:
            fig.savefig(
                temporary, metadata=stamps.get(Path(path).suffix.lower(), {"Software": None})
            )
    plt.close(fig)


def _short(name: str) -> str:
    """An ONNX node path shortened for an axis label: '/layer1/layer1.0/conv1/Conv' ->
    'layer1.0/conv1', '/layer2/layer2.0/downsample/downsample.0/Conv' -> 'layer2.0/downsample.0'."""
    parts = [p for p in str(name).split("/") if p]
    if len(parts) > 1:
        parts = parts[:-1]  # the operator type
    if len(parts) >= 2 and parts[-1].startswith(parts[-2]):
        parts = parts[:-2] + parts[-1:]
    return "/".join(parts[-2:]) or str(name)
