"""The `cyclesim` command: run, explain, check zigzag|accelforge, l1."""

from __future__ import annotations

import argparse
import json
import sys

from cyclesim.errors import CyclesimError


def _load(args: argparse.Namespace):
    from cyclesim.spec import load_architecture, load_mapping, load_workload

    arch = load_architecture(args.arch)
    workload = load_workload(args.workload)
    mapping = load_mapping(args.mapping, arch, workload)
    return arch, workload, mapping


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    """ARCH WORKLOAD MAPPING and the policy switches, shared by run and explain."""
    p.add_argument("arch", help="architecture YAML (hw_models/*.yaml)")
    p.add_argument("workload", help="workload YAML: one or more Einsums")
    p.add_argument("mapping", help="mapping YAML: the loop tree")
    p.add_argument(
        "--reuse",
        choices=["retain", "strict"],
        default="retain",
        help="retain: refill only when a tile changes (hardware); strict: on every loop iteration (AccelForge)",
    )
    p.add_argument(
        "--isolate-einsums",
        action="store_true",
        help="evaluate each Einsum alone, exchanging tensors only through backing stores (AccelForge)",
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON object on stdout instead of the report"
    )
    p.add_argument("--no-progress", action="store_true", help="never show the progress bar")


def cmd_run(args: argparse.Namespace) -> int:
    from cyclesim.engine import replay
    from cyclesim.report import text_report

    arch, workload, mapping = _load(args)
    try:
        from cyclesim.views import trace_filter_from_args, tracing_requested
    except ImportError:  # views not installed: nothing to trace
        tracing, trace_filter = False, None
    else:
        tracing, trace_filter = tracing_requested(args), trace_filter_from_args(args)
    res = replay(
        arch,
        workload,
        mapping,
        reuse=args.reuse,
        isolate_einsums=args.isolate_einsums,
        trace=tracing,
        trace_filter=trace_filter if tracing else None,
        progress=False if args.no_progress else None,
    )
    _write_views(args, res)
    if args.json:
        json.dump(res.to_json_dict(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(text_report(res, f"{workload.name} on {arch.name}, mapping {mapping.name}"))
    return 0


def _write_views(args: argparse.Namespace, res) -> None:
    """Trace files and plots requested on the command line (views read the SimResult)."""
    try:
        from cyclesim.views import write_requested
    except ImportError:
        if (
            getattr(args, "vcd", None)
            or getattr(args, "perfetto", None)
            or getattr(args, "plot", None)
        ):
            raise CyclesimError("trace views are not available in this build") from None
        return
    write_requested(args, res)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cyclesim", description="Replay DNN accelerator schedules cycle by cycle."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run", help="replay ARCH WORKLOAD MAPPING and report cycles, stalls, accesses"
    )
    add_replay_arguments(run)
    try:
        from cyclesim.views import add_view_arguments

        add_view_arguments(run)
    except ImportError:
        pass
    run.set_defaults(func=cmd_run)
    _optional(sub, "cyclesim.views.explain_cli")
    check = sub.add_parser(
        "check", help="compare a replay with an analytical model and the real peer"
    )
    check_sub = check.add_subparsers(dest="peer", required=True)
    _optional(check_sub, "cyclesim.checks.zigzag.cli")
    _optional(check_sub, "cyclesim.checks.accelforge_cli")
    _optional(sub, "cyclesim.l1.cli")
    return parser


def _optional(sub, module: str) -> None:
    """Sub-commands live beside the layer they belong to; each module has register(subparsers)."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        return
    mod.register(sub)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CyclesimError as exc:
        print(f"cyclesim: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
