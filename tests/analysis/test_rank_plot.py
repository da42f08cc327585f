"""The rank plots read right: the title and the legend never cover each other, a long title
stays inside the figure, and a style another package sets (zigzag-dse sets axis labels at
20 pt on import) does not reach them."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=True)
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from cyclesim.analysis.rank import RankRun
from cyclesim.analysis.rank_plot import plot_candidates, plot_regret

LONG_TITLE = "accelforge_matmul8 under AccelForge's conventions (--reuse strict --isolate-einsums)"


@pytest.fixture
def run() -> RankRun:
    # one layer, three candidates the peer ties at 533 cycles; the replay separates them
    candidates = pd.DataFrame(
        {
            "layer": ["gemm"] * 3,
            "peer_latency": [533.0, 533.0, 533.0],
            "replay_cycles": [707, 808, 908],
            "is_pick": [True, False, False],
            "is_winner": [True, False, False],
        }
    )
    layers = pd.DataFrame({"layer": ["gemm"], "regret": [0.0], "tau": [float("nan")]})
    return RankRun("accelforge", candidates, layers, 0, 0, 0)


@pytest.fixture
def figures(monkeypatch) -> list:
    """The figures the plot functions close, kept open to measure them."""
    kept: list = []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    yield kept
    monkeypatch.undo()
    for fig in kept:
        plt.close(fig)


def _box(fig, artist):
    return artist.get_window_extent(fig.canvas.get_renderer())


def test_candidates_title_and_legend_do_not_overlap(run, figures, tmp_path):
    with plt.rc_context({"axes.labelsize": 20, "axes.titlesize": 20}):
        plot_candidates(run, tmp_path / "c.png", LONG_TITLE)
    (fig,) = figures
    title, legend = _box(fig, fig._suptitle), _box(fig, fig.legends[0])
    assert not title.overlaps(legend)
    assert title.x0 >= 0 and title.x1 <= fig.bbox.width


def test_regret_title_inside_the_figure_and_label_at_its_own_size(run, figures, tmp_path):
    with plt.rc_context({"axes.labelsize": 20}):
        plot_regret(run, tmp_path / "r.png", LONG_TITLE + ": regret of accelforge's pick")
    (fig,) = figures
    ax = fig.axes[0]
    title = _box(fig, ax.title)
    assert title.x0 >= 0 and title.x1 <= fig.bbox.width
    assert ax.yaxis.label.get_fontsize() == 9
