"""views: trace files (VCD + .gtkw, Perfetto JSON/protobuf), event tables, plots, `explain`.

Views read a SimResult (and its raw records) only. `cyclesim run` calls
add_view_arguments(parser) and write_requested(args, res).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cyclesim.errors import CyclesimError

if TYPE_CHECKING:  # `cyclesim --help` must not import the engine, pandas or the writers
    from cyclesim.engine.record import TraceFilter
    from cyclesim.results import SimResult

VIEW_OPTIONS = ("vcd", "perfetto", "plot", "events", "save_run")


def add_view_arguments(p: argparse.ArgumentParser) -> None:
    """--vcd, --perfetto, --plot, --events, --save-run, and the trace filter (--window, --only)."""
    g = p.add_argument_group("traces and plots")
    g.add_argument(
        "--vcd", metavar="PATH", help="write a VCD (and PATH.gtkw beside it for GTKWave)"
    )
    g.add_argument(
        "--perfetto",
        metavar="PATH",
        help="write Chrome/Perfetto trace JSON; also PATH.pftrace when the perfetto package is installed",
    )
    g.add_argument(
        "--plot", metavar="DIR", help="write timeline.png, stalls.png, occupancy.png into DIR"
    )
    g.add_argument("--events", metavar="PATH", help="write the events table (.csv or .parquet)")
    g.add_argument(
        "--save-run",
        metavar="PATH",
        help="save inputs and totals as JSON (for `cyclesim explain PATH - -`)",
    )
    g.add_argument(
        "--window",
        metavar="START:END",
        type=parse_window,
        help="trace only cycles [START, END) (either side may be empty)",
    )
    g.add_argument(
        "--only",
        metavar="NAMES",
        type=lambda s: tuple(x for x in s.split(",") if x),
        help="trace only these resources: memories, ports (mem.port), tensors, A@mem, DMA engines, PE",
    )


def parse_window(text: str) -> tuple[int, int | None]:
    """'START:END' -> (start, end); an empty side means the start or the end of the run."""
    a, sep, b = text.partition(":")
    try:
        if not sep:
            raise ValueError
        start = int(a) if a.strip() else 0
        end = int(b) if b.strip() else None
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:END in cycles, found {text!r}") from None
    if start < 0 or (end is not None and end <= start):
        raise argparse.ArgumentTypeError(f"the window {text!r} is empty or negative")
    return start, end


def trace_filter_from_args(args: argparse.Namespace) -> TraceFilter | None:
    """The TraceFilter asked for on the command line (None: record everything)."""
    window = getattr(args, "window", None)
    only = getattr(args, "only", None)
    if window is None and only is None:
        return None
    from cyclesim.engine.record import TraceFilter

    start, end = window if window is not None else (0, None)
    return TraceFilter(start, end, only)


def tracing_requested(args: argparse.Namespace) -> bool:
    """Does any requested view need the trace records?"""
    return any(getattr(args, k, None) for k in ("vcd", "perfetto", "plot", "events"))


def write_requested(args: argparse.Namespace, res: SimResult) -> list[Path]:
    """Write every view asked for on the command line; return the files written."""
    written: list[Path] = []
    if getattr(args, "save_run", None):
        from cyclesim.views.saved import save_run

        save_run(res, args.arch, args.workload, args.mapping, args.save_run)
        written.append(Path(args.save_run))
    if not tracing_requested(args):
        return written
    res = _traced(res, trace_filter_from_args(args))
    title = f"cyclesim: {Path(args.workload).stem} / {Path(args.mapping).stem}"
    if args.vcd:
        written += write_vcd_files(res, args.vcd, clock_mhz=_clock(args.arch))
    if args.perfetto:
        written += write_perfetto_files(res, args.perfetto, title=title)
    if args.plot:
        from cyclesim.views.plots import write_plots

        written += write_plots(res, args.plot)
    if getattr(args, "events", None):
        from cyclesim.views.tables import write_events

        write_events(res, args.events)
        written.append(Path(args.events))
    return written


def write_vcd_files(
    res: SimResult,
    path: str | Path,
    *,
    clock_mhz: float | None = None,
    window: tuple[int, int] | None = None,
) -> list[Path]:
    """The VCD and its .gtkw save file beside it."""
    from cyclesim.views.gtkw import write_gtkw
    from cyclesim.views.vcd import write_vcd

    path = Path(path)
    signals = write_vcd(res, path, clock_mhz=clock_mhz, window=window)
    gtkw = path.with_suffix(".gtkw")
    from cyclesim.views.activity import window_of

    write_gtkw(signals, path, gtkw, start=window_of(res, window)[0])
    return [path, gtkw]


def write_perfetto_files(
    res: SimResult,
    path: str | Path,
    *,
    title: str = "cyclesim",
    window: tuple[int, int] | None = None,
) -> list[Path]:
    """Trace Event JSON at path (or protobuf when path ends in .pftrace); both when possible."""
    from cyclesim.views.perfetto import perfetto_available, write_chrome_json, write_perfetto_proto

    path = Path(path)
    if path.suffix in (".pftrace", ".pb"):
        write_perfetto_proto(res, path, window=window, title=title)
        return [path]
    write_chrome_json(res, path, window=window, title=title)
    out = [path]
    if perfetto_available():
        proto = path.with_suffix(".pftrace")
        write_perfetto_proto(res, proto, window=window, title=title)
        out.append(proto)
    return out


def _traced(res: SimResult, f: TraceFilter | None) -> SimResult:
    """res itself when its records are what was asked for; otherwise the plan replayed with them."""
    rec = res.raw.rec
    if rec.transfers is not None and rec.trace_filter == f:
        return res
    from cyclesim.engine import replay_plan
    from cyclesim.results import build_result

    return build_result(
        replay_plan(res.raw.plan, trace=True, trace_filter=f, progress=False), check_counts=False
    )


def _clock(arch_path: str) -> float | None:
    from cyclesim.spec import load_architecture

    try:
        return load_architecture(arch_path).clock_mhz
    except CyclesimError:
        return None


__all__ = [
    "add_view_arguments",
    "parse_window",
    "trace_filter_from_args",
    "tracing_requested",
    "write_perfetto_files",
    "write_requested",
    "write_vcd_files",
]
