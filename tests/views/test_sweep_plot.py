"""The sweep's plots: a y column without a value at any point is named, not drawn."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402

from cyclesim.views import sweep_plot  # noqa: E402


def test_a_column_without_values_is_named_in_the_title_not_in_the_legend(tmp_path, monkeypatch):
    # two mappings x two sizes; zigzag_search_latency is empty at every point (the sweep's hook
    # returns None without zigzag-dse): the legend holds the two drawn columns' four lines only
    table = pd.DataFrame(
        {
            "status": ["ok"] * 4,
            "size": [1, 2, 1, 2],
            "mapping": ["small", "small", "large", "large"],
            "cycles": [10.0, 8.0, 12.0, 9.0],
            "zigzag_latency": [11.0, 9.0, 12.0, 10.0],
            "zigzag_search_latency": [None] * 4,
        }
    )
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to read it back
    (path,) = sweep_plot.write_sweep_plots(
        table,
        (("size", "mapping", ("cycles", "zigzag_latency", "zigzag_search_latency")),),
        tmp_path,
        title="t",
    )
    assert path.is_file()
    (ax,) = figures[0].axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "cycles, mapping = small",
        "cycles, mapping = large",
        "zigzag_latency, mapping = small",
        "zigzag_latency, mapping = large",
    ]
    assert "no values: zigzag_search_latency" in ax.get_title()


def test_a_count_axis_starts_at_zero(tmp_path, monkeypatch):
    # found: cycles from 1.16e6 to 1.21e6 filled the axis, so a 4 % change looked large
    table = pd.DataFrame({"status": ["ok"] * 3, "width": [256, 512, 1024],
                          "cycles": [1_210_000, 1_180_000, 1_160_000]})  # fmt: skip
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    sweep_plot.write_sweep_plots(table, (("width", None, ("cycles",)),), tmp_path, title="t")
    (ax,) = figures[0].axes
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 1_210_000
    assert ax.yaxis.get_major_formatter()(1_000_000, 0) == "1,000,000"  # not a 1e6 offset
