"""The five plots: what they draw lies inside the image with a small margin, from the one layout
measurement that replaced tight_layout and savefig's bbox_inches="tight"; the same Result gives
the same PNG bytes twice."""

from __future__ import annotations

import hashlib

import pytest

import cyclesim.views.plots as plots

CASES = ("01_compute_bound", "05_narrow_innermost_port", "dma_two_tensors", "slow_write_back")


@pytest.mark.parametrize("case", CASES)
def test_every_plot_fits_its_image_with_a_small_margin(traced, tmp_path, monkeypatch, case):
    # after the margins are set and the PNG drawn, the drawing's extent is measured again: no
    # text is cut by the image's edge, and no side has more than a quarter inch of blank
    figures = []
    fit = plots._fit
    monkeypatch.setattr(plots, "_fit", lambda fig: (fit(fig), figures.append(fig)))
    plots.write_plots(traced(case), tmp_path)
    assert len(figures) == len(plots.PLOT_NAMES)
    for name, fig in zip(plots.PLOT_NAMES, figures, strict=True):
        drawn = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
        width, height = fig.get_size_inches()
        margins = (drawn.x0, drawn.y0, width - drawn.x1, height - drawn.y1)
        assert min(margins) >= 0.02, (name, margins)
        assert max(margins) <= 0.25, (name, margins)


def test_the_same_result_gives_the_same_png_bytes_twice(traced, tmp_path):
    res = traced("dma_two_tensors")
    first = plots.write_plots(res, tmp_path / "a")
    second = plots.write_plots(res, tmp_path / "b")
    digests = [[hashlib.sha256(p.read_bytes()).hexdigest() for p in ps] for ps in (first, second)]
    assert digests[0] == digests[1]
    assert [p.name for p in first] == [f"{n}.png" for n in plots.PLOT_NAMES]


def test_a_png_holds_the_pixels_savefig_draws(traced, tmp_path):
    # figures.save_png encodes the drawn pixels itself: PIL reads back what matplotlib's own
    # PNG (savefig through PIL) holds, pixel for pixel, at the same dpi
    import numpy as np
    from PIL import Image

    from cyclesim.views.figures import DPI, new_figure, save_png

    fig, ax = new_figure(4, 3)
    ax.plot([0, 1, 2], [2, 0, 1])
    ax.set_title("a title and tick labels: antialiased text")
    save_png(fig, tmp_path / "ours.png", DPI)
    fig.savefig(tmp_path / "pil.png", dpi=DPI)
    ours, pil = (Image.open(tmp_path / f"{n}.png") for n in ("ours", "pil"))
    assert ours.mode == pil.mode == "RGBA" and ours.size == pil.size
    assert ours.info["dpi"] == pil.info["dpi"]
    assert np.array_equal(np.asarray(ours), np.asarray(pil))


@pytest.mark.parametrize("rotation", [0, 90])
def test_a_text_is_drawn_where_the_layout_measured_it(rotation):
    # the plots' canvas draws a string as one bitmap (figures._canvas): its ink lies inside
    # the extent the margins were computed from, within a pixel
    import numpy as np

    from cyclesim.views.figures import new_figure

    fig, ax = new_figure(4, 3)
    ax.set_axis_off()
    text = fig.text(0.3, 0.4, "compute bandwidth: W@sram_64KB dram.rw_port_1", fontsize=7,
                    rotation=rotation)  # fmt: skip
    fig.canvas.draw()
    box = text.get_window_extent()
    ink = np.argwhere(np.asarray(fig.canvas.buffer_rgba())[:, :, 0] < 250)  # rows, columns
    height = fig.canvas.get_width_height()[1]
    top, left = ink.min(axis=0)
    bottom, right = ink.max(axis=0)
    assert box.x0 - 1 <= left and right <= box.x1 + 1
    assert box.y0 - 1 <= height - 1 - bottom and height - 1 - top <= box.y1 + 1
    assert (right - left) >= 0.8 * box.width or (bottom - top) >= 0.8 * box.height


def test_the_string_canvas_finds_the_matplotlib_internals_it_uses():
    # views/figures.py draws a string as one FreeType bitmap through three private names of
    # matplotlib's Agg backend (pyproject pins matplotlib to the versions it was tested with);
    # when a release moves one of them, this fails rather than a user's --plot
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
    from matplotlib.ft2font import FT2Font

    from cyclesim.views.figures import _canvas, new_figure

    assert hasattr(FT2Font, "draw_glyphs_to_bitmap"), "the fast path is off: plots are slower"
    assert _canvas() is not FigureCanvasAgg
    assert callable(getattr(RendererAgg, "_prepare_font", None))
    fig, _ = new_figure(2, 1)
    renderer = fig.canvas.get_renderer()
    assert fig.canvas._lastKey is not None
    assert callable(getattr(renderer._renderer, "draw_text_image", None))


def test_svg_plots_are_written_and_the_same_twice(traced, tmp_path):
    # write_plots(fmt="svg") passed PNG's metadata key to the SVG writer, which refused it;
    # SVG gets its own keys (no date) and a fixed salt for its element ids
    res = traced("dma_two_tensors")
    first = plots.write_plots(res, tmp_path / "a", fmt="svg")
    second = plots.write_plots(res, tmp_path / "b", fmt="svg")
    assert [p.name for p in first] == [f"{n}.svg" for n in plots.PLOT_NAMES]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    assert all(p.read_text().lstrip().startswith("<?xml") for p in first)


def test_the_stall_plot_says_its_axis_is_logarithmic_and_prints_each_value(traced, tmp_path,
                                                                           monkeypatch):  # fmt: skip
    # found: a 504-cycle bar looked two thirds of a 187,500-cycle one; "(log scale)" in small
    # print was all that said why
    figures = []
    fit = plots._fit
    monkeypatch.setattr(plots, "_fit", lambda fig: (fit(fig), figures.append(fig)))
    res = traced("slow_write_back")
    plots.plot_stalls(res, tmp_path / "stalls.png")
    (ax,) = figures[0].axes
    assert ax.get_xscale() == "log" and "LOG SCALE" in ax.get_xlabel()
    assert any(line.get_visible() for line in ax.get_xgridlines())  # a line per decade
    texts = {t.get_text().split(" (")[0] for t in ax.texts}
    assert {f"{int(c):,}" for c in res.stalls["cycles"].head(24)} <= texts


def test_plots_keep_their_layout_when_another_library_changed_rcparams(
    traced, tmp_path, monkeypatch
):
    # importing zigzag-dse sets rcParams globally (axes labels at 20 pt); in the full suite a
    # test that had imported it before made the stalls plot's x label wider than its figure
    import matplotlib

    figures = []
    fit = plots._fit
    monkeypatch.setattr(plots, "_fit", lambda fig: (fit(fig), figures.append(fig)))
    with matplotlib.rc_context({"axes.labelsize": 20, "axes.titlesize": 20, "font.size": 14}):
        plots.write_plots(traced("01_compute_bound"), tmp_path)
    for name, fig in zip(plots.PLOT_NAMES, figures, strict=True):
        drawn = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
        width, height = fig.get_size_inches()
        margins = (drawn.x0, drawn.y0, width - drawn.x1, height - drawn.y1)
        assert 0.02 <= min(margins) and max(margins) <= 0.25, (name, margins)
