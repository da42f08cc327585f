"""GTKWave save file written beside a VCD: the signals grouped (PE array, each memory's ports,
its buffers, each DMA engine), integers in decimal. Paths are relative, no dates: deterministic.
"""

from __future__ import annotations

import math
from pathlib import Path

from vcd.gtkw import GTKWSave

from cyclesim.outputs import atomic_open
from cyclesim.views.waves import Signal


def gtkw_name(sig: Signal) -> str:
    """The name GTKWave gives the signal (VCD integers carry no bit range there)."""
    return sig.path


def gtkw_alias(sig: Signal) -> str:
    """The name a trace shows: its path below the root scope, so each port's and buffer's
    signals read with their memory, port and tensor (`DRAM rd busy`, not `busy`). Spaces, not
    dots: GTKWave shows a dotted alias by its last part, as it does a signal's path."""
    return " ".join((*sig.scope[1:], sig.name))


WAVE_PIXELS = 800  # about the width of GTKWave's wave pane in its default window
# GTKWave 3.3 draws 2**-zoom / 2**7.6 time units per pixel: measured on its screenshots under
# Xvfb (zoom -10: ~2,300 ns across 440 px; -14: ~33,000 ns), not a documented constant
ZOOM_OFFSET = 7.6


def gtkw_zoom(span: int) -> float:
    """GTKWave's zoom that shows `span` time units across the wave pane."""
    return -math.log2(max(span, 1) / WAVE_PIXELS) - ZOOM_OFFSET


def write_gtkw(
    signals: list[Signal],
    vcd_path: str | Path,
    path: str | Path,
    *,
    start: int = 0,
    end: int | None = None,
) -> None:
    """Write a .gtkw save file for the VCD at vcd_path, one group per signal group; it opens
    on [start, end) when end is given (the plots' timeline window), else at start."""
    vcd_path, path = Path(vcd_path), Path(path)
    try:
        dump = str(vcd_path.resolve().relative_to(path.resolve().parent))
    except ValueError:
        dump = str(vcd_path)
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as f:
        save = GTKWSave(f)
        save.comment(
            "cyclesim: one group per resource; open from this folder: gtkwave " + path.name
        )
        save.dumpfile(dump, abspath=False)
        save.timestart(start)
        if end is not None and end > start:
            save.zoom_markers(gtkw_zoom(end - start))
        save.signals_width(260)
        save.sst_expanded(True)
        groups: dict[str, list[Signal]] = {}
        for sig in signals:
            groups.setdefault(sig.group, []).append(sig)
        for name, sigs in groups.items():
            with save.group(name, closed=False):
                for sig in sigs:
                    alias = gtkw_alias(sig)
                    if sig.var_type == "wire":
                        save.trace(gtkw_name(sig), alias=alias)
                    elif sig.var_type == "integer":
                        save.trace(gtkw_name(sig), alias=alias, datafmt="dec")
                    else:
                        save.trace(gtkw_name(sig), alias=alias, datafmt="ascii")
