"""Plots of a sweep table: one per chosen pair of axes, y (cycles by default) against x, one
line per value of the series axis. Failed points are left out and counted in the legend title;
a y column without a value at any point (a peer's column when the peer is not installed) is
named in the title, not drawn as an empty legend entry.
"""

from __future__ import annotations

import logging
import re
import textwrap
from pathlib import Path

import pandas as pd

from cyclesim.outputs import atomic_path

MARKERS = "osD^vP*X"
DASHES = ("-", "--", ":", "-.")


def plot_name(x: str, series: str | None, ys: tuple[str, ...]) -> str:
    """The file name of one plot: 'cycles_vs_sram.size_bits_by_mapping.png', made file-safe."""
    name = f"{'_and_'.join(ys)}_vs_{x}" + (f"_by_{series}" if series else "")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".png"


def write_sweep_plots(
    table: pd.DataFrame,
    plots: tuple[tuple[str, str | None, tuple[str, ...]], ...],
    out: str | Path,
    title: str,
) -> list[Path]:
    """Write one PNG per (x, series, y columns) into out; return their paths.

    Raise CyclesimError when x or a y is not a column of the table.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    from cyclesim.errors import CyclesimError

    written: list[Path] = []
    ok = table[table["status"] == "ok"]
    if ok.empty:
        logging.getLogger(__name__).warning("no point of the sweep succeeded: no plots drawn")
        return written
    for x, series, ys in plots:
        for column in (x, *ys):
            if column not in table:
                numeric = [c for c in table.columns if pd.api.types.is_numeric_dtype(table[c])]
                raise CyclesimError(
                    f"plot column '{column}' is not in the sweep table; try one of {numeric}"
                )
        fig, ax = plt.subplots(figsize=(8, 5))
        groups = [(None, ok)] if series is None else list(ok.groupby(series, sort=False))
        numeric_x = pd.api.types.is_numeric_dtype(ok[x])
        k = 0
        empty = [y for y in ys if pd.to_numeric(ok[y], errors="coerce").isna().all()]
        for y in (y for y in ys if y not in empty):
            for value, rows in groups:
                rows = rows.sort_values(x) if numeric_x else rows
                parts = ([y] if len(ys) > 1 else []) + ([f"{series} = {value}"] if series else [])
                xs = rows[x].astype(float if numeric_x else str)
                # distinct marker and dash per line: equal lines stay visible on top of each other
                style = MARKERS[k % len(MARKERS)] + DASHES[k % len(DASHES)]
                label = ", ".join(parts) or None
                ax.plot(xs, rows[y].astype(float), style, label=label, markersize=8 - k % 3 * 2)
                k += 1
        if numeric_x and len(ok) and ok[x].min() > 0 and ok[x].max() / ok[x].min() >= 16:
            ax.set_xscale("log", base=2)
        if numeric_x and 0 < ok[x].nunique() <= 12:
            ticks = sorted(ok[x].unique())
            ax.set_xticks(ticks, [f"{t:.4g}" for t in ticks])
        values = [pd.to_numeric(ok[y], errors="coerce") for y in ys if y not in empty]
        if values and min(v.min() for v in values) >= 0:
            # counts from 0 (a 4 % change looked like 90 % on an axis from 1.16e6 to 1.21e6),
            # written out in full, not as a 1e6 offset
            ax.set_ylim(0, max(v.max() for v in values) * 1.06 or 1)
            ax.yaxis.set_major_formatter(
                FuncFormatter(lambda v, _: f"{v:,.0f}" if v == int(v) else f"{v:,.3g}")
            )
        y = " / ".join(ys)
        failed = int((table["status"] != "ok").sum())
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(
            textwrap.fill(f"{title}: {y} vs {x}", 80)
            + (f"\n({failed} failed points left out)" if failed else "")
            + (f"\n(no values: {', '.join(empty)})" if empty else ""),
            fontsize=10,
        )
        ax.grid(True, alpha=0.3)
        if k > 1:
            ax.legend()
        fig.tight_layout()
        path = Path(out) / plot_name(x, series, ys)
        with atomic_path(path) as temporary:
            fig.savefig(temporary, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
