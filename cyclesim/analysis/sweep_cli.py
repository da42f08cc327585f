"""The `cyclesim sweep SWEEP.yaml` sub-command: every point of a sweep file on Dask, one table."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `sweep` to the top-level commands."""
    p = subparsers.add_parser(
        "sweep",
        help="replay every point of a sweep file (axes over architecture/mapping fields) on Dask",
        description=(
            "Replay the product (or zip) of a sweep file's axes on a Dask cluster: a local cluster "
            "of worker processes by default, or an existing one with --scheduler. Writes "
            "sweep.parquet, sweep.csv (one row per point) and the plots the file asks for into "
            "--out; points already computed (same inputs, same simulator) are read from OUT/cache."
        ),
    )
    p.add_argument("sweep_file", metavar="SWEEP.yaml", help="the sweep file")
    p.add_argument(
        "--out", metavar="DIR", help="output folder (default: out/sweeps/<the sweep's name>)"
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="worker processes of the local cluster (default: one per core; 1: the points "
        "one by one in this process, no cluster started)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="use the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786)",
    )
    p.add_argument("--no-cache", action="store_true", help="recompute every point")
    p.add_argument("--no-plots", action="store_true", help="write the table only")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the sweep; print the table's head and the files written (or --json)."""
    from pathlib import Path

    from cyclesim.analysis.sweep import sweep
    from cyclesim.analysis.sweep_spec import load_sweep
    from cyclesim.errors import CyclesimError

    if args.workers is not None and args.workers < 1:
        raise CyclesimError("--workers must be at least 1")
    out = args.out or str(Path("out") / "sweeps" / load_sweep(args.sweep_file).name)
    result = sweep(
        args.sweep_file,
        out,
        workers=args.workers,
        scheduler=args.scheduler,
        # one worker and no cluster named: nothing to gain from starting a cluster
        backend="processes" if args.workers == 1 and args.scheduler is None else "dask",
        progress=False if args.no_progress else None,
        use_cache=not args.no_cache,
        plots=not args.no_plots,
    )
    if args.json:
        from cyclesim.results.schema import print_json

        print_json(result.to_json_dict())
    else:
        from cyclesim.analysis.sweep import summary_text

        print(summary_text(result))
    table = result.table
    if len(table) and result.failed == len(table):  # nothing was measured: not a success
        first = str(table["error"].iloc[0])[:300]
        raise CyclesimError(
            f"every point of the sweep failed ({result.failed}); the first: {first}"
        )
    return 0
