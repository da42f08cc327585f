"""The `run` command: replay ARCH WORKLOAD MAPPING, write the views asked for, print the report.

Its replay arguments, run options and -v log are shared with `explain` (analysis.explain_cli).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from cyclesim.errors import CyclesimError, OptionError

log = logging.getLogger("cyclesim")


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
    p.add_argument(
        "--no-fast-forward",
        action="store_true",
        help="replay every loop iteration, even those that repeat an exactly equal state "
        "(same result, slower; a check of the fast-forward)",
    )


def run_options(args: argparse.Namespace, **choices):
    """The RunOptions the switches of add_replay_arguments give, with choices on top (a trace,
    or a saved run's reuse): what run and explain hand to the engine."""
    from dataclasses import replace

    from cyclesim.engine import RunOptions

    options = RunOptions(
        reuse=args.reuse,
        isolate_einsums=args.isolate_einsums,
        progress=False if args.no_progress else None,
        fast_forward=not args.no_fast_forward,
    )
    return replace(options, **choices)


def log_replay(res, name: str) -> None:
    """-v: how long the replay took and what fast-forward skipped, or that it skipped nothing."""
    log.info("replayed %s in %.2f s (%s events)", name, res.wall_seconds, f"{res.engine_events:,}")
    ff = res.raw.fast_forward
    if ff.jumps:
        log.info(
            "fast-forward skipped %s of %s cycles (%s periods of a repeating loop in %d jumps)",
            f"{ff.cycles_skipped:,}",
            f"{res.cycles:,}",
            f"{ff.periods:,}",
            ff.jumps,
        )
    elif ff.off_because:
        log.info("fast-forward stayed off: this replay has %s", ff.off_because)
    elif res.raw.fast_forward_on:
        log.info("fast-forward skipped nothing: no loop repeated an equal state")
    else:
        log.info("fast-forward off (--no-fast-forward): every cycle simulated")


def cmd_run(args: argparse.Namespace) -> int:
    from cyclesim.analysis.simulate import replay, report_text

    arch, workload, mapping = _load(args)
    in_loop = [
        m.name for m in arch.memories if m.dram is not None and m.dram.config.replay_controller
    ]
    if args.dram_trace and not in_loop:
        raise OptionError(
            "--dram-trace records the requests of a DRAM controller in the replay's loop: "
            "give a memory's dram: block `timing: controller`"
        )
    try:
        from cyclesim.views import TRACED_VIEWS, tracing_requested
    except ImportError:  # views not installed: nothing to trace
        tracing, trace_filter = False, None
    else:
        tracing, trace_filter = tracing_requested(args), _trace_filter(args)
        if trace_filter is not None and not tracing:  # it would select from nothing
            views = [f"--{v}" for v in TRACED_VIEWS]
            raise OptionError(
                "--window and --only choose what a trace keeps: give one of "
                f"{', '.join(views[:-1])} or {views[-1]} with them"
            )
    options = run_options(args, trace=tracing, trace_filter=trace_filter if tracing else None)
    res = replay(arch, workload, mapping, options)
    log_replay(res, mapping.name)
    if args.dram_trace:
        from cyclesim.engine.dram_loop import write_dram_trace

        for name in in_loop:
            path = Path(args.dram_trace)
            if len(in_loop) > 1:
                path = path.with_name(f"{path.name}.{name}")
            write_dram_trace(path, res.raw.rec.dram_requests[name])
            _say_wrote(args, path)
    args.title = res.title  # plots, Perfetto
    args.architecture, args.run_name = arch, mapping.name  # --csv summaries
    for path in _write_views(args, res):
        _say_wrote(args, path)
    if args.json:
        json.dump(res.to_dict(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif not args.quiet:  # -q: errors only, no report
        print(report_text(res))
    return 0


def _say_wrote(args: argparse.Namespace, path) -> None:
    """Name a file the run wrote on stderr (not with -q): a user who asked for --html or --vcd
    is told where it is, as sweep and rank do; stdout keeps the report or --json alone."""
    if not args.quiet:
        print(f"cyclesim: wrote {path}", file=sys.stderr)


def _trace_filter(args: argparse.Namespace):
    """The TraceFilter asked for with --window / --only (None: record everything)."""
    window, only = getattr(args, "window", None), getattr(args, "only", None)
    if window is None and only is None:
        return None
    from cyclesim.engine import TraceFilter

    start, end = window if window is not None else (0, None)
    return TraceFilter(start, end, only)


def _write_views(args: argparse.Namespace, res) -> list:
    """Trace files and plots requested on the command line (views read the Result)."""
    try:
        from cyclesim.views import write_requested
    except ImportError:
        if (
            getattr(args, "vcd", None)
            or getattr(args, "perfetto", None)
            or getattr(args, "plot", None)
        ):
            raise CyclesimError("trace views are not available in this build") from None
        return []
    return write_requested(args, res)
