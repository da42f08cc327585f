"""The `cyclesim check accelforge` sub-command: register(check_subparsers) adds it, run(args) executes it."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `accelforge` under the `check` command group."""
    parser = subparsers.add_parser(
        "accelforge",
        help="replay an AccelForge spec and compare its reads and writes with AccelForge's",
        description=(
            "Read an AccelForge spec (arch + workload + LoopTree mapping, in one or several files "
            "merged as accelforge.Spec.from_yaml merges them), replay the mapping, and print per "
            "Einsum, memory and tensor the bits read and written: by the replay, by its closed "
            "form in AccelForge's conventions, by cyclesim's model of AccelForge and by the real "
            "accelforge when its environment exists; then the replay's cycles against "
            "AccelForge's latency bound, and one sentence per difference."
        ),
    )
    parser.add_argument("spec", nargs="+", help="AccelForge spec YAML file(s)")
    parser.add_argument(
        "--reuse",
        choices=["retain", "strict"],
        default="retain",
        help="retain: refill only when a tile changes (hardware); strict: on every loop "
        "iteration (AccelForge)",
    )
    parser.add_argument(
        "--isolate-einsums",
        action="store_true",
        help="evaluate each Einsum alone, exchanging tensors only through backing stores "
        "(AccelForge); with --reuse strict the counts equal AccelForge's",
    )
    parser.add_argument(
        "--jinja-data",
        action="append",
        metavar="FILE|NAME=VALUE",
        help="values for templated specs (repeatable; later ones win): a YAML file of "
        "NAME: value, or NAME=VALUE; variables with a | default(...) in the template may be "
        "left out, as in AccelForge",
    )
    parser.add_argument(
        "--no-peer",
        action="store_true",
        help="leave out the real accelforge column (per-action energies a spec leaves to "
        "hwcomponents component classes are still asked of it, once per spec, and cached)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    parser.set_defaults(func=run, error_prefix="cyclesim check accelforge")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the check and print its table (or --json); a bad spec raises SpecError, which
    `cyclesim.cli.main` prints as one line (exit 2)."""
    from cyclesim.checks.accelforge.check import format_report, run_check
    from cyclesim.checks.accelforge.read_yaml import parse_jinja_data
    from cyclesim.results.schema import print_json

    check, _ = run_check(
        args.spec,
        reuse=args.reuse,
        isolate_einsums=args.isolate_einsums,
        use_peer=not args.no_peer,
        jinja_data=parse_jinja_data(args.jinja_data),
    )
    if args.json:
        print_json(check.to_json())
    else:
        print(format_report(check))
    return 0
