"""The `cyclesim check stream` sub-command: register(check_subparsers) adds it, run(args) executes it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cyclesim.errors import CyclesimError


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `stream` under the `check` command group."""
    parser = subparsers.add_parser(
        "stream",
        help="run Stream (stream-dse 2.1.1) on its own inputs and check its schedule term by term",
        description=(
            "Read Stream's accelerator YAML, ONNX workload and mapping YAML, run the real Stream "
            "in its own environment (cached by content hash), and print its solved schedule term "
            "by term: total; per fused group N, iteration latency, interval and fill; per slot its "
            "latency and binding term; per transfer and link the cycles charged against the moved "
            "bits at full link width; per node and core the tile replayed alone on the core at the "
            "mapping Stream's ZigZag search chose; then, when the case imports into the multi-core "
            "chip (`cyclesim chip`), the schedule replayed as scheduled (Stream's slots as "
            "barriers, iteration k released at k x interval) and dependency-driven. Every "
            "differing row names its mechanism."
        ),
    )
    parser.add_argument("--accelerator", required=True, help="Stream accelerator YAML")
    parser.add_argument("--workload", required=True, help="ONNX workload")
    parser.add_argument(
        "--mapping", help="Stream mapping YAML (default: Stream's generic mapping generator)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--table",
        metavar="PATH",
        help="the term table as CSV (default: out/stream/<workload>-<accelerator>[-<mapping>].csv)",
    )
    parser.add_argument(
        "--plot",
        metavar="PATH",
        help="slot timeline, .png, .svg or .pdf (default: next to the table, .png)",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="run Stream even if a cached result exists"
    )
    parser.add_argument(
        "--no-zigzag",
        action="store_true",
        help="per-node check without zigzag-dse's own column (replay and our model only)",
    )
    parser.set_defaults(func=run, error_prefix="cyclesim check stream")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the check; a CyclesimError is printed to stderr (exit 2), never a traceback."""
    from cyclesim.checks.stream.check import format_report, report_json
    from cyclesim.checks.stream.check import run_check as check_stream
    from cyclesim.checks.stream.plot import plot_timeline
    from cyclesim.outputs import atomic_path

    try:
        stem = f"{Path(args.workload).stem}-{Path(args.accelerator).stem}"
        if args.mapping:
            stem += f"-{Path(args.mapping).stem}"
        table = args.table or f"out/stream/{stem}.csv"
        plot = args.plot or str(Path(table).with_suffix(".png"))
        if not table.lower().endswith(".csv"):
            raise CyclesimError(f"--table {table}: use a .csv file name")
        check = check_stream(
            args.accelerator,
            args.workload,
            args.mapping,
            use_cache=not args.no_cache,
            use_zigzag=not args.no_zigzag,
        )
        for path in (table, plot):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # the table and the plot are written whole, and both or neither
        with atomic_path(table) as table_part, atomic_path(plot) as plot_part:
            check.table().to_csv(table_part, index=False)
            plot_timeline(check, plot_part)
    except CyclesimError as exc:
        print(f"cyclesim check stream: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(report_json(check))
    else:
        print(format_report(check))
        print(f"\nwrote {table} and {plot}")
    return 0
