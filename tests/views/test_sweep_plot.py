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
