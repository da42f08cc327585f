"""The `cyclesim check zigzag` sub-command: register(check_subparsers) adds it, run(args) executes it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cyclesim.errors import CyclesimError


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `zigzag` under the `check` command group."""
    parser = subparsers.add_parser(
        "zigzag",
        help="replay ZigZag inputs (one layer or a whole network) and compare with ZigZag",
        description=(
            "Read ZigZag 3.x inputs (workload as YAML or ONNX), replay what ZigZag maps, and print "
            "side by side: the replay, cyclesim's reimplementation of ZigZag 3.9.1's latency model, "
            "and the real zigzag-dse when installed. Without --temporal-mapping, zigzag-dse chooses "
            "the mapping. A workload with several layers is checked layer by layer in worker "
            "processes unless --layer picks one; the per-layer table is written as CSV or Parquet "
            "and plotted."
        ),
    )
    parser.add_argument("--accelerator", required=True, help="ZigZag accelerator YAML")
    parser.add_argument("--workload", required=True, help="ZigZag workload (.yaml or .onnx)")
    parser.add_argument("--mapping", required=True, help="ZigZag mapping YAML")
    parser.add_argument(
        "--temporal-mapping",
        help="fixed temporal mapping, tm_*_setting form (JSON or YAML); one layer only",
    )
    parser.add_argument(
        "--layer", help="check only this layer (ZigZag's name, e.g. Layer30 or /conv1/Conv)"
    )
    parser.add_argument(
        "--no-peer", action="store_true", help="do not run zigzag-dse even if installed"
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    network = parser.add_argument_group("whole network")
    network.add_argument(
        "--table",
        metavar="PATH",
        help="per-layer table, .csv or .parquet (default: out/zigzag/<workload>-<accelerator>-layers.csv)",
    )
    network.add_argument(
        "--plot",
        metavar="PATH",
        help="per-layer plot, .png, .svg or .pdf (default: "
        "out/zigzag/<workload>-<accelerator>-layers.png)",
    )
    network.add_argument(
        "--workers",
        type=int,
        help="worker processes (default: one per core, at most one per layer)",
    )
    network.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (default: on a terminal) and no line per finished layer "
        "(default: when stderr is not a terminal; always with -v)",
    )
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the check; a CyclesimError is printed to stderr (exit 2), never a traceback."""
    from cyclesim.checks.zigzag.read import workload_layers
    from cyclesim.checks.zigzag.read_accelerator import parse_accelerator

    try:
        parse_accelerator(args.accelerator)  # files are checked in the order they are named
        single = args.layer is not None or args.temporal_mapping is not None
        if not single:
            single = len(workload_layers(args.workload, args.mapping)) == 1
        return _run_layer(args) if single else _run_network(args)
    except CyclesimError as exc:
        print(f"cyclesim check zigzag: {exc}", file=sys.stderr)
        return 2


def _run_layer(args: argparse.Namespace) -> int:
    from cyclesim.checks.zigzag.check import format_report, report_json, run_check

    check = run_check(
        args.accelerator,
        args.workload,
        args.mapping,
        args.temporal_mapping,
        layer_name=args.layer,
        use_peer=not args.no_peer,
    )
    print(report_json(check) if args.json else format_report(check))
    return 0


def _run_network(args: argparse.Namespace) -> int:
    from cyclesim.checks.zigzag.network import (
        FAILED,
        check_network,
        format_network,
        totals,
        write_table,
    )
    from cyclesim.checks.zigzag.network_plot import plot_network

    if args.workers is not None and args.workers < 1:
        raise CyclesimError(f"--workers must be at least 1 (got {args.workers})")
    stem = f"{Path(args.workload).stem}-{Path(args.accelerator).stem}-layers"
    # by default under out/ (as `make demo` writes), so a check never litters the folder it runs in
    table_path = args.table or f"out/zigzag/{stem}.csv"
    plot_path = args.plot or f"out/zigzag/{stem}.png"  # a given one: cli.check_outputs checked it
    if Path(table_path).suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise CyclesimError(f"--table {table_path}: use a .csv or .parquet file name")
    # a line per finished layer where the bar cannot be drawn (a CI log, `| tee`), or with -v
    lines = getattr(args, "verbose", False) or not (args.no_progress or sys.stderr.isatty())
    df = check_network(
        args.accelerator,
        args.workload,
        args.mapping,
        use_peer=not args.no_peer,
        workers=args.workers,
        progress=False if args.no_progress else None,
        on_layer=_print_err if lines else None,
    )
    for path in (table_path, plot_path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_table(df, table_path)
    plot_network(df, plot_path, f"{Path(args.workload).name} on {Path(args.accelerator).stem}")
    if args.json:
        rows = json.loads(df.to_json(orient="records"))
        from cyclesim.results.schema import versioned

        print(json.dumps(versioned({"totals": totals(df), "layers": rows}), indent=2))
    else:
        print(format_network(df))
        print(f"\nwrote {table_path} and {plot_path}")
    return 1 if (df["status"] == FAILED).any() else 0


def _print_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
