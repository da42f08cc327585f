"""matplotlib figures drawn once, for the plots (views/plots.py): a Figure on its own Agg canvas
(no pyplot) whose renderer draws a string as one bitmap made when the layout measures it,
margins from one measurement of what sticks out of the axes, tick marks and y tick labels
without matplotlib's Tick objects (~1.5 ms each to make, update and measure, twice), rows
of bars as one collection built from arrays, and PNGs encoded from the drawn pixels with one
row filter (save_png: half PIL's encoding CPU, the same pixels).
"""

from __future__ import annotations

import contextlib
import functools
import math
import struct
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# The figures are drawn at the dpi they are saved at, on one Agg canvas each: the margins are
# measured and the PNG drawn by the same renderer, which measures each text once.
DPI = 110
PAD_INCHES = 0.1  # blank round what a figure shows (savefig's pad for bbox_inches="tight")
# zlib level 3, not 6: 40% less CPU for files at most a third larger (the plots are flat
# colours and text); each row filtered by its difference from the row above (PNG's "Up"),
# not by PIL's per-row choice of five filters: half the CPU again for files as large
PNG_ZLIB_LEVEL = 3
# the laid-out strings and font heights the renderers of shared_text's figures share, or None
_SHARED: list[dict] | None = None


@contextlib.contextmanager
def shared_text() -> Iterator[None]:
    """The figures made inside share their laid-out strings: --plot's five draw the same row
    names, tick labels and axis labels (laying a string out is ~30 us a character); each
    call starts with none, so nothing is kept from one call to the next."""
    global _SHARED
    held, _SHARED = _SHARED, [{}, {}]
    try:
        yield
    finally:
        _SHARED = held


def new_figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A matplotlib Figure on its own Agg canvas, and its axes: no pyplot, so no figure
    manager, backend switch or state between plots."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    _canvas()(fig)
    return fig, fig.subplots()


@functools.cache
def _canvas() -> type:
    """FigureCanvasAgg whose renderer draws a string as one bitmap (FreeType lays out and
    rasterises it in one call, as matplotlib's Agg did up to 3.10), not glyph by glyph in
    Python: matplotlib 3.11's way took ~6 ms for a 45-character label, this one ~2 ms, and
    text was most of the plots' drawing. Mathtext and TeX are drawn as matplotlib draws them;
    without FT2Font.draw_glyphs_to_bitmap, the plain canvas."""
    from matplotlib import rcParams
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
    from matplotlib.ft2font import FT2Font

    if not hasattr(FT2Font, "draw_glyphs_to_bitmap"):
        return FigureCanvasAgg

    class StringRenderer(RendererAgg):
        def __init__(self, width: int, height: int, dpi: float) -> None:
            super().__init__(width, height, dpi)
            # (text, font, antialiased, dpi) -> its bitmap and metrics; (font, dpi) -> its
            # ascent, descent and line gap: shared by shared_text's figures
            self._strings, self._heights = _SHARED if _SHARED is not None else ({}, {})

        def _get_font_height_metrics(self, prop) -> tuple:  # noqa: ANN001
            """A font's ascent, descent and line gap as Text._get_layout computes them for
            each text it lays out (a font lookup and two of its tables each time), once."""
            key = (prop.copy(), self.dpi)
            if key not in self._heights:
                self._heights[key] = font_height_metrics(prop, self.dpi)
            return self._heights[key]

        def _string(self, s: str, prop, antialiased: bool) -> tuple:  # noqa: ANN001
            """The bitmap of s laid out once, when the layout measures it, for the drawing."""
            key = (s, prop.copy(), bool(antialiased), self.dpi)
            if key not in self._strings:
                font = self._prepare_font(prop)
                font.set_text(s, 0, flags=get_hinting_flag())  # unrotated: the image rotates
                font.draw_glyphs_to_bitmap(antialiased=antialiased)
                self._strings[key] = (np.array(font.get_image()), font.get_bitmap_offset(),
                                      font.get_descent(), font.get_width_height())  # fmt: skip
            return self._strings[key]

        def get_text_width_height_descent(self, s, prop, ismath):  # noqa: ANN001
            if ismath:
                return super().get_text_width_height_descent(s, prop, ismath)
            _, _, descent, (width, height) = self._string(s, prop, rcParams["text.antialiased"])
            return width / 64, height / 64, descent / 64  # FreeType's 26.6 fixed point

        def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):  # noqa: ANN001
            if ismath:
                return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
            image, (dx, dy), descent, _ = self._string(s, prop, gc.get_antialiased())
            dx, dy, descent = dx / 64, dy / 64, descent / 64
            x = round(x + dx + descent * math.sin(math.radians(angle)))
            y = round(y + dy + descent * math.cos(math.radians(angle)))
            self._renderer.draw_text_image(image, x, y + 1, angle, gc)
            return None

    class StringCanvas(FigureCanvasAgg):
        def get_renderer(self) -> RendererAgg:
            key = (*self.get_width_height(physical=True), self.figure.dpi)
            if self._lastKey != key:  # as FigureCanvasAgg's: one renderer per size
                self.renderer = StringRenderer(key[0], key[1], key[2])
                self._lastKey = key
            return self.renderer

    return StringCanvas


def font_height_metrics(prop, dpi: float) -> tuple:  # noqa: ANN001
    """(ascent, descent, line gap) of the font prop names at dpi, in pixels, by Text._get_layout's
    own rule (matplotlib 3.11: its first of the OS/2 and hhea tables, scaled by the font size);
    (None, None, None) without either table, for it to measure "lp" instead."""
    from matplotlib.font_manager import fontManager, get_font

    font = get_font(fontManager._find_fonts_by_props(prop))
    for table_name, gap, ascent, descent in (
        ("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
        ("hhea", "lineGap", "ascent", "descent"),
    ):
        table = font.get_sfnt_table(table_name)
        if table is None:
            continue
        scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * prop.get_size_in_points() * dpi / 72
        return table[ascent] * scale, -table[descent] * scale, table[gap] * scale
    return None, None, None


def save_png(fig: Figure, path: str | Path, dpi: float) -> None:
    """Draw the figure as savefig draws a PNG (the same canvas and pixels, taken as raw RGBA)
    and write them as a PNG: every row "Up"-filtered, zlib level PNG_ZLIB_LEVEL, the dpi in
    a pHYs chunk as PIL writes it, no text chunks (no version or date: the same bytes for
    the same figure)."""
    import io

    raw = io.BytesIO()
    fig.savefig(raw, format="rgba", dpi=dpi)
    width, height = (int(v) for v in fig.canvas.get_width_height(physical=True))
    pixels = np.frombuffer(raw.getbuffer(), np.uint8).reshape(height, width * 4)
    Path(path).write_bytes(png_bytes(pixels, dpi))


def png_bytes(rows: np.ndarray, dpi: float) -> bytes:
    """A PNG of 8-bit RGBA pixels (rows: height x 4 * width bytes)."""
    height, width = rows.shape[0], rows.shape[1] // 4
    filtered = np.empty((height, rows.shape[1] + 1), np.uint8)
    filtered[:, 0] = 2  # Up: each byte less the one above it (modulo 256), the first row as is
    filtered[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])
    per_metre = int(dpi / 0.0254 + 0.5)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    return b"".join((
        b"\x89PNG\r\n\x1a\n",
        chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)),  # RGBA, 8 bits
        chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)),
        chunk(b"IDAT", zlib.compress(filtered, PNG_ZLIB_LEVEL)),  # its buffer, not a copy
        chunk(b"IEND", b""),
    ))  # fmt: skip


def fit(fig: Figure) -> None:
    """Margins that hold what sticks out of the axes (tick labels, titles, legends, colour
    bar) with PAD_INCHES to spare, from one measurement: what tight_layout and
    savefig(bbox_inches="tight") found in three layout passes, here one.

    What sticks out must not scale with the axes (legends and notes outside them are placed
    in points from their edge), so moving the axes does not change it.
    """
    renderer = fig.canvas.get_renderer()
    content = fig.get_tightbbox(renderer)  # inches
    width, height = fig.get_size_inches()
    x0 = min(ax.get_position().x0 for ax in fig.axes) * width
    x1 = max(ax.get_position().x1 for ax in fig.axes) * width
    y0 = min(ax.get_position().y0 for ax in fig.axes) * height
    y1 = max(ax.get_position().y1 for ax in fig.axes) * height
    left = (x0 - content.x0 + PAD_INCHES) / width
    right = 1 - (content.x1 - x1 + PAD_INCHES) / width
    bottom = (y0 - content.y0 + PAD_INCHES) / height
    top = 1 - (content.y1 - y1 + PAD_INCHES) / height
    fig.subplots_adjust(left=left, right=right, bottom=bottom, top=top)


def tick_marks(
    ax: Axes, xs: Sequence[float], which: str = "major", at: float | None = None
) -> None:
    """Unlabelled tick marks at xs (data) under the x axis, or under the height `at` (data),
    drawn as the axis draws its own, as one line of markers: the axis makes a Tick, with two
    hidden labels, for each of them."""
    from matplotlib import rcParams as rc
    from matplotlib.lines import Line2D
    from matplotlib.markers import TICKDOWN

    transform = ax.get_xaxis_transform() if at is None else ax.transData
    ax.add_artist(Line2D(xs, [at or 0] * len(xs), transform=transform, linestyle="none",
                         marker=TICKDOWN, markersize=rc[f"xtick.{which}.size"],
                         markeredgewidth=rc[f"xtick.{which}.width"], color=rc["xtick.color"],
                         clip_on=False))  # fmt: skip


def y_tick_labels(
    ax: Axes, ys: Sequence[float], labels: Sequence[str], fontsize: float | str
) -> None:
    """Labelled tick marks on the y axis at ys (data), placed as the axis places its own (the
    same transform, alignment and pad), as one line of markers and a text each: the axis made
    a Tick per label, with a second hidden label, three lines and a deep copy of its style."""
    from matplotlib import rcParams as rc
    from matplotlib.lines import Line2D
    from matplotlib.markers import TICKLEFT
    from matplotlib.ticker import NullLocator

    ax.yaxis.set_major_locator(NullLocator())
    ax.add_artist(Line2D([0] * len(ys), ys, transform=ax.get_yaxis_transform(), linestyle="none",
                         marker=TICKLEFT, markersize=rc["ytick.major.size"],
                         markeredgewidth=rc["ytick.major.width"], color=rc["ytick.color"],
                         clip_on=False))  # fmt: skip
    transform, va, ha = ax.get_yaxis_text1_transform(rc["ytick.major.size"] + rc["ytick.major.pad"])
    for y, label in zip(ys, labels, strict=True):
        ax.text(0, y, label, transform=transform, va=va, ha=ha, fontsize=fontsize, clip_on=False)


def minor_log_ticks(ax: Axes, lo: float, hi: float) -> None:
    """The log x axis's minor ticks, 2..9 times each power of ten in lo..hi (~60)."""
    from matplotlib.ticker import NullLocator

    ax.xaxis.set_minor_locator(NullLocator())
    decades = range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
    tick_marks(ax, [k * 10.0**d for d in decades for k in range(2, 10) if lo <= k * 10.0**d <= hi],
                "minor")  # fmt: skip


def rgba(colors: list[str]) -> np.ndarray:
    """RGBA rows of colours, each distinct one converted once (a bar's colour is one of a few)."""
    from matplotlib.colors import to_rgba

    known: dict[str, tuple] = {}
    return np.array([known[c] if c in known else known.setdefault(c, to_rgba(c)) for c in colors])


def bars(ax: Axes, records: list, bottom: float, height: float, **style: object) -> None:
    """Rectangles from (start, end, ...) records at one height, as one PolyCollection built from
    arrays (what broken_barh makes, converting and checking each bar in Python)."""
    from matplotlib.collections import PolyCollection

    x = np.array([(a, b) for a, b, *_ in records], dtype=np.float64)
    verts = np.empty((len(x), 4, 2))
    verts[:, :2, 0], verts[:, 2:, 0] = x[:, :1], x[:, 1:]
    verts[:, (0, 3), 1], verts[:, (1, 2), 1] = bottom, bottom + height
    ax.add_collection(PolyCollection(verts, **style), autolim=False)
