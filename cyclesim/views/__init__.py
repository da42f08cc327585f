"""views: trace files (VCD / FST + .gtkw, Perfetto JSON / gzipped JSON / protobuf), event
tables, plots. Views read a Result only (never the engine; what-if replays live in
cyclesim.analysis). `cyclesim run` calls add_view_arguments(parser) and write_requested(args, res).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cyclesim.errors import CyclesimError
from cyclesim.outputs import make_parent_folders

if TYPE_CHECKING:  # `cyclesim --help` must not import the engine, pandas or the writers
    from cyclesim.results import Result

VIEW_OPTIONS = ("vcd", "fst", "perfetto", "plot", "events", "save_run", "html")


def add_view_arguments(p: argparse.ArgumentParser) -> None:
    """--vcd, --fst, --perfetto, --plot, --events, --save-run, and the trace filter (--window, --only)."""
    g = p.add_argument_group("traces and plots")
    g.add_argument(
        "--vcd",
        metavar="PATH",
        help="write a VCD, and a GTKWave save file beside it (run.vcd: run.gtkw)",
    )
    g.add_argument(
        "--fst",
        metavar="PATH",
        help="write an FST, the compressed waveform GTKWave and Surfer read, and a save file beside "
        "it (run.fst: run.gtkw, or run.fst.gtkw when a --vcd takes run.gtkw); "
        "written with the pylibfst package, or converted by GTKWave's vcd2fst when pylibfst is missing",
    )
    g.add_argument(
        "--perfetto",
        metavar="PATH",
        help="write a Perfetto trace in the format PATH names: .json (Chrome Trace Event JSON), "
        ".json.gz (the same, gzipped: ui.perfetto.dev opens it) or .pftrace (Perfetto's protobuf, "
        "arguments kept; needs the perfetto package)",
    )
    g.add_argument(
        "--plot",
        metavar="DIR",
        help="write breakdown.png, stalls.png, ports.png, timeline.png (a window around the first "
        "steady stretch, or --window) and occupancy.png into DIR",
    )
    g.add_argument(
        "--html",
        metavar="PATH",
        help="write a one-page report (.html): summary, causes, accesses, energy, plots and a "
        "zoomable timeline, in one file that opens offline",
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
        help="trace (and draw the timeline of) only cycles [START, END); either side may be empty",
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


# the views that read the trace records (and so honour --window and --only)
TRACED_VIEWS = ("vcd", "fst", "perfetto", "plot", "events", "html")


def tracing_requested(args: argparse.Namespace) -> bool:
    """Does any requested view need the trace records?"""
    return any(getattr(args, k, None) for k in TRACED_VIEWS)


WAVES = ("vcd", "fst")  # written with a .gtkw save file beside them


def save_file_of(args: argparse.Namespace, option: str) -> Path:
    """The .gtkw save file of the waveform `option` names: X.gtkw beside X.vcd or X.fst, and
    X.fst.gtkw for an FST whose X.gtkw the VCD of the same run already takes."""
    path = Path(getattr(args, option))
    gtkw = path.with_suffix(".gtkw")
    vcd = getattr(args, "vcd", None)
    if option == "fst" and vcd and Path(vcd).with_suffix(".gtkw") == gtkw:
        return path.with_name(path.name + ".gtkw")
    return gtkw


def write_requested(args: argparse.Namespace, res: Result) -> list[Path]:
    """Write every view asked for on the command line; return the files written.

    Missing parent folders are made (the CLI checked beforehand that they can be). When a
    writer fails, the files this call wrote are removed: no half set of outputs is left.
    """
    written: list[Path] = []
    make_parent_folders(
        {
            "--" + option.replace("_", "-"): getattr(args, option, None)
            for option in ("save_run", "vcd", "fst", "perfetto", "events", "html")
        }
    )
    new_files = [  # the files this call creates; a failing writer removes them again
        path
        for option in ("save_run", "vcd", "fst", "perfetto", "events", "html")
        if isinstance(value := getattr(args, option, None), str) and value not in ("", "-")
        for path in (Path(value), *([save_file_of(args, option)] if option in WAVES else []))
        if not path.exists()
    ]
    if getattr(args, "plot", None):
        from cyclesim.views.plots import PLOT_NAMES

        pngs = (Path(args.plot) / f"{name}.png" for name in PLOT_NAMES)
        new_files += [path for path in pngs if not path.exists()]
    if getattr(args, "csv", None):
        from cyclesim.views.summary_csv import CSV_NAMES

        tables = (Path(args.csv) / name for name in CSV_NAMES)
        new_files += [path for path in tables if not path.exists()]
    try:
        _write_views(args, res, written)
        _write_summaries(args, res, written)
        return written
    except BaseException:  # an output half written is worse than none (disk full, Ctrl-C)
        for path in {*written, *new_files}:
            if path.is_file():
                path.unlink()
        raise


def _write_views(args: argparse.Namespace, res: Result, written: list[Path]) -> list[Path]:
    """write_requested's writers, in order; each appends what it wrote to `written`."""
    if getattr(args, "save_run", None):
        from cyclesim.views.saved import save_run

        save_run(res, args.arch, args.workload, args.mapping, args.save_run)
        written.append(Path(args.save_run))
    if not tracing_requested(args):
        return written
    # the specs' names (`cyclesim run` sets them) say more than file names like workload.yaml
    title = "cyclesim: " + (
        getattr(args, "title", None) or f"{Path(args.workload).stem} / {Path(args.mapping).stem}"
    )
    progress = False if getattr(args, "no_progress", False) else None
    from cyclesim.results.activity_build import ACTIVITY_STAGES
    from cyclesim.views.progress import steps_bar

    with steps_bar(len(ACTIVITY_STAGES), "building the activity", progress) as tick:
        res.activity(None, on_stage=tick)  # every writer below draws from it
    vcd = None  # with --fst too, vcd2fst converts this VCD rather than writing another
    if args.vcd:
        written.extend(
            write_vcd_files(res, args.vcd, clock_mhz=_clock(args.arch), progress=progress)
        )
        vcd = Path(args.vcd)
    if getattr(args, "fst", None):
        written.extend(
            write_vcd_files(
                res,
                args.fst,
                clock_mhz=_clock(args.arch),
                progress=progress,
                fst=True,
                save_file=save_file_of(args, "fst"),
                written_vcd=vcd,
            )
        )
    if args.perfetto:
        written.extend(write_perfetto_files(res, args.perfetto, title=title, progress=progress))
    if args.plot:
        from cyclesim.views.plots import write_plots

        written.extend(write_plots(res, args.plot, title=title, progress=progress))
    if getattr(args, "html", None):
        from cyclesim.views.html import write_html_report

        written.append(write_html_report(res, args.html, title=title, progress=progress))
    if getattr(args, "events", None):
        from cyclesim.views.tables import write_events

        write_events(res, args.events)
        written.append(Path(args.events))
    return written


def _write_summaries(args: argparse.Namespace, res: Result, written: list[Path]) -> None:
    """--csv: the SCALE-Sim-like summaries (they need the architecture's spec: args.architecture)."""
    if getattr(args, "csv", None):
        from cyclesim.views.summary_csv import write_summary_csv

        run = getattr(args, "run_name", None) or Path(args.mapping).stem
        written.extend(write_summary_csv(res, args.architecture, args.csv, run=run))


def write_vcd_files(
    res: Result,
    path: str | Path,
    *,
    clock_mhz: float | None = None,
    window: tuple[int, int] | None = None,
    progress: bool | None = False,
    fst: bool | None = None,
    save_file: Path | None = None,
    written_vcd: Path | None = None,
) -> list[Path]:
    """The waveform (FST when fst, or by default when path ends in .fst; else VCD) and its .gtkw
    (save_file, or path with the suffix .gtkw). written_vcd: a VCD of the same run, clock and
    window written before, which an FST converted by vcd2fst is made from."""
    from cyclesim.views.gtkw import write_gtkw

    path = Path(path)
    if fst or (fst is None and path.suffix == ".fst"):
        from cyclesim.views.fst import write_fst

        signals = write_fst(res, path, clock_mhz=clock_mhz, window=window, progress=progress,
                            written_vcd=written_vcd)  # fmt: skip
    else:
        from cyclesim.views.vcd import write_vcd

        signals = write_vcd(res, path, clock_mhz=clock_mhz, window=window, progress=progress)
    start, end = _plots_window(res, window)  # the save file opens where the timeline plot looks
    gtkw = save_file if save_file is not None else path.with_suffix(".gtkw")
    write_gtkw(signals, path, gtkw, start=start, end=end)
    return [path, gtkw]


def _plots_window(res: Result, window: tuple[int, int] | None) -> tuple[int, int]:
    """The window plots.write_plots draws its timeline over: around the first steady stretch
    of a whole run, else the traced window."""
    from cyclesim.views.plots import steady_window

    act = res.activity(window)
    whole = act.start == 0 and act.end == res.cycles
    return steady_window(act) if whole and window is None else (act.start, act.end)


def write_perfetto_files(
    res: Result,
    path: str | Path,
    *,
    title: str = "cyclesim",
    window: tuple[int, int] | None = None,
    progress: bool | None = False,
) -> list[Path]:
    """The Perfetto trace in the format path names: .pftrace / .pb protobuf, else JSON (.gz: gzipped)."""
    from cyclesim.views.perfetto_json import write_chrome_json
    from cyclesim.views.perfetto_proto import write_perfetto_proto

    path = Path(path)
    write = write_perfetto_proto if path.suffix in (".pftrace", ".pb") else write_chrome_json
    write(res, path, window=window, title=title, progress=progress)
    return [path]


def _clock(arch_path: str) -> float | None:
    from cyclesim.spec import load_architecture

    try:
        return load_architecture(arch_path).clock_mhz
    except CyclesimError:
        return None


__all__ = [
    "add_view_arguments",
    "parse_window",
    "tracing_requested",
    "write_perfetto_files",
    "write_requested",
    "write_vcd_files",
]
