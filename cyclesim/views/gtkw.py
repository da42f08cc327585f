"""GTKWave save file written beside a VCD: the signals grouped (PE array, each memory's ports,
its buffers, each DMA engine), integers in decimal. Paths are relative, no dates: deterministic.
"""

from __future__ import annotations

from pathlib import Path

from vcd.gtkw import GTKWSave

from cyclesim.outputs import atomic_open
from cyclesim.views.vcd import Signal


def gtkw_name(sig: Signal) -> str:
    """The name GTKWave gives the signal (VCD integers carry no bit range there)."""
    return sig.path


def write_gtkw(
    signals: list[Signal], vcd_path: str | Path, path: str | Path, *, start: int = 0
) -> None:
    """Write a .gtkw save file for the VCD at vcd_path, one group per signal group."""
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
        save.signals_width(260)
        save.sst_expanded(True)
        groups: dict[str, list[Signal]] = {}
        for sig in signals:
            groups.setdefault(sig.group, []).append(sig)
        for name, sigs in groups.items():
            with save.group(name, closed=False):
                for sig in sigs:
                    if sig.var_type == "wire":
                        save.trace(gtkw_name(sig))
                    elif sig.var_type == "integer":
                        save.trace(gtkw_name(sig), datafmt="dec")
                    else:
                        save.trace(gtkw_name(sig), datafmt="ascii")
