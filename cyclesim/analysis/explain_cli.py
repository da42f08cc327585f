"""The `cyclesim explain` sub-command: ranked root causes with verified remedies."""

from __future__ import annotations

import argparse
from dataclasses import replace

from cyclesim.errors import CyclesimError


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `explain` to the top-level commands."""
    from cyclesim.cli.run import add_replay_arguments

    p = subparsers.add_parser(
        "explain",
        help="why the PE array waited: causes ranked by cycles, where they occur, verified remedies",
        description=(
            "Replay ARCH WORKLOAD MAPPING (or a run saved with `cyclesim run --save-run`), rank the "
            "root causes of every non-compute cycle, show the cycle ranges and loop iterations where "
            "each occurs, and replay each proposed architectural change to report the cycles it saves."
        ),
    )
    add_replay_arguments(p)
    p.add_argument("--top", type=int, default=5, help="causes to detail and verify (default 5)")
    p.add_argument(
        "--no-verify", action="store_true", help="list the remedies without replaying them"
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes replaying the remedies (default: one per core)",
    )
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Load (or read the saved run), replay, explain; print text or --json."""
    from cyclesim.analysis.explain import explain, format_explanation
    from cyclesim.views.saved import load_inputs

    if args.top < 1:
        raise CyclesimError("--top must be at least 1")
    if args.workers is not None and args.workers < 1:
        raise CyclesimError("--workers must be at least 1")
    arch, workload, mapping, saved = load_inputs(args.arch, args.workload, args.mapping)
    res = _replay(arch, workload, mapping, args, saved)
    ex = explain(res, arch, workload, mapping, top=args.top, verify_remedies=not args.no_verify,
                 workers=args.workers, progress=False if args.no_progress else None)  # fmt: skip
    if args.json:
        from cyclesim.results.schema import print_json

        print_json(ex.to_json_dict())
    else:
        title = f"why {workload.name} on {arch.name} (mapping {mapping.name}) is not compute-bound"
        print(format_explanation(ex, title, args.top))
    return 0


def _replay(arch, workload, mapping, args: argparse.Namespace, saved: dict | None):
    from cyclesim.analysis.simulate import replay
    from cyclesim.cli.run import log_replay, run_options
    from cyclesim.engine import TraceFilter
    from cyclesim.views.saved import check_same_cycles

    # only the PE segments are needed (to name the delayed loop iterations)
    options = run_options(args, trace_filter=TraceFilter(resources=("PE",)))
    if saved is not None:
        options = replace(options, reuse=saved["reuse"], isolate_einsums=saved["isolate_einsums"])
    res = replay(arch, workload, mapping, options)

    log_replay(res, mapping.name)
    if saved is not None:
        check_same_cycles(saved, res)
    return res
