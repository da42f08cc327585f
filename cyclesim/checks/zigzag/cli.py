"""The `cyclesim check zigzag` sub-command: register(check_subparsers) adds it, run(args) executes it."""

from __future__ import annotations

import argparse
import sys

from cyclesim.errors import CyclesimError


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `zigzag` under the `check` command group."""
    parser = subparsers.add_parser(
        "zigzag",
        help="replay a ZigZag case and compare with ZigZag's latency model, term by term",
        description=(
            "Read ZigZag 3.x inputs, replay the same mapping, and print side by side: the replay, "
            "cyclesim's reimplementation of ZigZag 3.9.1's latency model, and the real zigzag-dse when "
            "installed. Without --temporal-mapping, zigzag-dse chooses the mapping."
        ),
    )
    parser.add_argument("--accelerator", required=True, help="ZigZag accelerator YAML")
    parser.add_argument("--workload", required=True, help="ZigZag workload YAML")
    parser.add_argument("--mapping", required=True, help="ZigZag mapping YAML")
    parser.add_argument(
        "--temporal-mapping", help="fixed temporal mapping, tm_*_setting form (JSON or YAML)"
    )
    parser.add_argument("--layer", help="layer name, when the workload has several")
    parser.add_argument(
        "--no-peer", action="store_true", help="do not run zigzag-dse even if installed"
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the check; a CyclesimError is printed to stderr (exit 2), never a traceback."""
    from cyclesim.checks.zigzag.check import format_report, report_json, run_check

    try:
        check = run_check(
            args.accelerator,
            args.workload,
            args.mapping,
            args.temporal_mapping,
            layer_name=args.layer,
            use_peer=not args.no_peer,
        )
    except CyclesimError as exc:
        print(f"cyclesim check zigzag: {exc}", file=sys.stderr)
        return 2
    print(report_json(check) if args.json else format_report(check))
    return 0
