"""`cyclesim l1 OPS.yaml`: replay op descriptions' L1 placement under heap, stack or pool."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cyclesim.errors import CyclesimError

DEFAULT_ARCH = Path(__file__).resolve().parents[2] / "hw_models" / "tensix_like.yaml"

# l1.config.Policy's values, spelled out so `--help` need not import the YAML loader
# (tests/test_lean_start.py checks they agree)
POLICIES = ("heap", "stack", "pool")

EXIT_OK, EXIT_L1_FAILURE = 0, 1  # bad input: 2, from cyclesim.cli.exit_code


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `l1` sub-command to the main CLI's sub-parsers; it dispatches to `run`."""
    parser = subparsers.add_parser(
        "l1",
        help="L1 placement of composite ops under heap / stack / pool policies",
        description=(
            "Replay the allocation sequence of an op-description file on a Tensix-like L1 and "
            "report, per op, its L1 requirement, CB peak, lowest L1 buffer, headroom, free space "
            "and fragmentation, and any clash or out-of-memory in tt-metal's words. "
            "Exit code: 0 ok (or --compare done), 1 the replay hit a clash/out-of-memory, "
            "2 bad input."
        ),
    )
    parser.add_argument("ops", help="op-description YAML (ops + model)")
    parser.add_argument(
        "--arch",
        default=str(DEFAULT_ARCH),
        help="architecture YAML whose L1 memory has an `allocator:` (default: %(default)s)",
    )
    parser.add_argument(
        "--policy",
        choices=POLICIES,
        help="where intermediates go (default: the allocator's policy)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--compare", action="store_true", help="all three policies side by side (ignores --policy)"
    )
    parser.add_argument("--plot", metavar="PATH.png", help="write the L1 map over time as a PNG")
    parser.add_argument(
        "--no-timeline", action="store_true", help="leave the per-event timeline out of --json"
    )
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Execute `cyclesim l1`; print the report; return the exit code."""
    from cyclesim.cli import exit_code

    try:
        return _run(args)
    except CyclesimError as exc:
        print(f"cyclesim l1: {exc}", file=sys.stderr)
        return exit_code(exc)


def _run(args: argparse.Namespace) -> int:
    from cyclesim.l1.config import Policy, load_l1_config
    from cyclesim.l1.ops import load_ops
    from cyclesim.l1.report import render_compare, render_text, to_json
    from cyclesim.l1.tree_replay import replay

    config = load_l1_config(args.arch)
    ops = load_ops(args.ops)  # validated whole before anything is replayed
    if args.compare:
        policies = list(Policy)
    else:
        policies = [Policy(args.policy) if args.policy else config.policy]
    results = [replay(ops, config, p) for p in policies]
    if args.json:
        from cyclesim.results.schema import versioned

        doc = versioned(to_json(results, timeline=not args.no_timeline))
        print(json.dumps(doc, indent=1))
    elif args.compare:
        print(render_compare(results), end="")
    else:
        print(render_text(results[0]), end="")
    if args.plot:
        from cyclesim.l1.plot import plot_l1_map

        written = plot_l1_map(results, args.plot)
        print(f"L1 map written to {written}", file=sys.stderr)
    if args.compare:
        return EXIT_OK
    return EXIT_L1_FAILURE if results[0].failure is not None else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry: `python -m cyclesim.l1.cli l1 OPS.yaml ...` or without the `l1`."""
    parser = argparse.ArgumentParser(prog="cyclesim")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "l1":
        argv.insert(0, "l1")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
