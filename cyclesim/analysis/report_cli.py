"""`cyclesim report SAVED.json`: the one-page HTML report of a run saved with `run --save-run`.

A saved run holds its three inputs verbatim and its policy; the report replays them, traced,
and writes the same page as `cyclesim run ... --html` (views/html.py).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

log = logging.getLogger("cyclesim")


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `report` to the top-level commands."""
    p = subparsers.add_parser(
        "report",
        help="write the one-page HTML report of a run saved with `cyclesim run --save-run`",
        description="Replay a saved run (its inputs and policy are in the file) and write one "
        "self-contained HTML page: summary, causes, accesses, energy, plots and a zoomable "
        "timeline.",
    )
    p.add_argument("saved", metavar="SAVED.json", help="a run saved with `cyclesim run --save-run`")
    p.add_argument(
        "--html", metavar="PATH", help="the page to write (default: SAVED with the suffix .html)"
    )
    p.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from cyclesim.analysis.simulate import replay
    from cyclesim.engine import RunOptions
    from cyclesim.outputs import make_parent_folders
    from cyclesim.views.html import write_html_report
    from cyclesim.views.saved import check_same_cycles, load_saved_run

    arch, workload, mapping, saved = load_saved_run(args.saved)
    path = Path(args.html) if args.html else Path(args.saved).with_suffix(".html")
    progress = False if args.no_progress else None
    options = RunOptions(
        reuse=saved["reuse"],
        isolate_einsums=saved["isolate_einsums"],
        trace=True,
        progress=progress,
    )
    make_parent_folders({"--html": str(path)})  # as `run --html` makes them, before the replay
    res = replay(arch, workload, mapping, options)
    check_same_cycles(saved, res)  # the page shows the run that was saved, or nothing
    title = f"cyclesim: {workload.name} on {arch.name}, mapping {mapping.name}"  # as `run`
    write_html_report(res, path, title=title, progress=progress)
    if not args.quiet:  # named on stderr as `run` and `chip` name what they wrote
        print(f"cyclesim: wrote {path}", file=sys.stderr)
    return 0
