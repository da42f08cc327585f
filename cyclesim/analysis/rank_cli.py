"""The `cyclesim rank` command group: `rank zigzag` replays the candidates of zigzag-dse's search,
`rank accelforge` the Pareto set of AccelForge's mapper."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cyclesim.errors import CyclesimError


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `rank` with its peers to the top-level commands."""
    rank = subparsers.add_parser(
        "rank",
        help="does a peer's model pick the right mapping? replay its best candidates and rank them",
    )
    peers = rank.add_subparsers(dest="peer", required=True)
    _register_zigzag(peers)
    _register_accelforge(peers)
    _register_hardware(peers)
    return rank


def _register_zigzag(peers: argparse._SubParsersAction) -> None:
    """`rank zigzag`: zigzag-dse's temporal-mapping search, its candidates replayed."""
    p = peers.add_parser(
        "zigzag",
        help="replay the top candidates of zigzag-dse's temporal-mapping search (LOMA)",
        description=(
            "Run zigzag-dse's own search (its spatial mapping, LOMA with --lpf-limit) on every "
            "layer (or --layer), keep every temporal mapping it evaluates with its latency and "
            "energy, replay the K best by its latency (and its pick) and rank them again: per "
            "layer Kendall's tau and Spearman's rho between the two orders, whether the pick "
            "replays best, the regret (replayed cycles of the pick / best replayed - 1) and the "
            "mechanisms. Searches and replays are cached by content hash (a rerun with a larger "
            "--top replays only the new candidates)."
        ),
    )
    p.add_argument("--accelerator", required=True, help="ZigZag accelerator YAML")
    p.add_argument("--workload", required=True, help="ZigZag workload (.yaml or .onnx)")
    p.add_argument("--mapping", required=True, help="ZigZag mapping YAML")
    p.add_argument(
        "--layer", action="append", help="rank only this layer (repeat for several; default: all)"
    )
    how_many = p.add_mutually_exclusive_group()
    how_many.add_argument(
        "--top", type=int, default=20, metavar="K", help="replay the K best candidates (20)"
    )
    how_many.add_argument(
        "--all", action="store_true", help="replay every candidate (small layers only)"
    )
    p.add_argument(
        "--distinct",
        action="store_true",
        help="the K best distinct latencies by zigzag-dse's model (one candidate each), not the "
        "K best candidates (many of which tie)",
    )
    p.add_argument(
        "--lpf-limit", type=int, default=6, help="LOMA's loop prime factor limit (6, as check)"
    )
    p.add_argument("--table", metavar="PATH", help="layer table, .csv or .parquet (OUT/rank.csv)")
    p.add_argument("--no-plots", action="store_true", help="write the tables only")
    _common(p)
    p.set_defaults(func=run_zigzag, error_prefix="cyclesim rank zigzag")


def _register_accelforge(peers: argparse._SubParsersAction) -> None:
    """`rank accelforge`: AccelForge's mapper's Pareto set, replayed under both policies."""
    a = peers.add_parser(
        "accelforge",
        help="replay the Pareto set of AccelForge's mapper, under its conventions and the default",
        description=(
            "Run AccelForge's mapper (FFM, by default with the objectives latency, energy and "
            "resource usage) on an "
            "AccelForge spec (the spec's own mapping is ignored), keep its Pareto set with "
            "AccelForge's latency and energy for each mapping, replay the K best by its latency "
            "(its pick first) twice: under AccelForge's conventions (--reuse strict "
            "--isolate-einsums: is its ranking right under its own rules?) and under the "
            "default policy (what the hardware does), and rank them again: Kendall's tau, "
            "Spearman's rho, whether the pick replays best, the regret and the mechanisms. The "
            "mapper's output and the replays are cached by content hash."
        ),
    )
    a.add_argument("spec", nargs="+", help="AccelForge spec YAML file(s), merged in order")
    a.add_argument(
        "--jinja-data",
        action="append",
        metavar="FILE|NAME=VALUE",
        help="values for templated specs, as `check accelforge` takes them",
    )
    a.add_argument(
        "--objectives",
        default="latency,energy,resource_usage",
        help="the mapper's objectives, comma-separated: latency, energy, resource_usage "
        "(default all three; latency and energy alone often leave one mapping)",
    )
    how_many = a.add_mutually_exclusive_group()
    how_many.add_argument(
        "--top", type=int, default=20, metavar="K", help="replay the K best candidates (20)"
    )
    how_many.add_argument("--all", action="store_true", help="replay every candidate")
    a.add_argument(
        "--table",
        metavar="PATH",
        help="layer table of the default policy, .csv or .parquet (OUT/rank.csv); AccelForge's "
        "conventions' beside it (…-accelforge)",
    )
    a.add_argument("--no-plots", action="store_true", help="write the tables only")
    _common(a)
    a.set_defaults(func=run_accelforge, error_prefix="cyclesim rank accelforge")


def _register_hardware(peers: argparse._SubParsersAction) -> None:
    """`rank zigzag-hardware`: hardware variants ordered by zigzag-dse and by the replay."""
    h = peers.add_parser(
        "zigzag-hardware",
        help="does zigzag-dse order hardware variants as the replay does?",
        description=(
            "Rank every hardware variant of a rank file (a ZigZag accelerator, workload and "
            "mapping, and axes written as `cyclesim sweep` writes them) as `rank zigzag` does, "
            "then order the variants by zigzag-dse's network latency and by the replay of its "
            "picks: Kendall's tau, Spearman's rho, and the regret of zigzag-dse's choice."
        ),
    )
    h.add_argument("rank_file", metavar="FILE.yaml", help="the rank file")
    _common(h)
    h.set_defaults(func=run_hardware, error_prefix="cyclesim rank zigzag-hardware")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", metavar="DIR", help="output folder (default: out/rank/<name>)")
    p.add_argument("--cache", metavar="DIR", help="cache folder (default: ~/.cache/cyclesim/rank)")
    p.add_argument("--no-cache", action="store_true", help="search and replay everything again")
    p.add_argument("--workers", type=int, metavar="N", help="worker processes (one per core)")
    p.add_argument("--dask", action="store_true", help="on a local Dask cluster")
    p.add_argument("--scheduler", metavar="ADDRESS", help="on the Dask cluster at ADDRESS")
    p.add_argument("--no-progress", action="store_true", help="never show the progress bar")


def _options(args: argparse.Namespace) -> dict:
    """rank_zigzag's keyword arguments for the options both commands share."""
    from cyclesim.analysis.rank_cache import default_cache_dir

    if args.workers is not None and args.workers < 1:
        raise CyclesimError("--workers must be at least 1")
    if args.scheduler is not None:
        from cyclesim.analysis.parallel import check_scheduler_address

        check_scheduler_address(args.scheduler)
    quiet = getattr(args, "quiet", False)
    return dict(
        cache_dir=None
        if args.no_cache
        else Path(args.cache)
        if args.cache
        else default_cache_dir(),
        workers=args.workers,
        scheduler=args.scheduler,
        backend="dask" if args.dask or args.scheduler else "processes",
        progress=False if args.no_progress or quiet else None,
        on_line=None if quiet else lambda line: print(line, file=sys.stderr),
    )


def run_hardware(args: argparse.Namespace) -> int:
    """Rank the variants of a rank file; print both orders, write the table."""
    import time

    from cyclesim.analysis.rank_hardware import format_hardware, load_hardware_rank, rank_hardware

    spec = load_hardware_rank(args.rank_file)
    _require_zigzag()  # each variant is searched by zigzag-dse
    out = Path(args.out) if args.out else Path("out") / "rank" / spec.name
    options = _options(args)
    start = time.perf_counter()
    df, summary, _ = rank_hardware(spec, out, **options)
    seconds = time.perf_counter() - start
    table = out / "hardware.csv"
    df.to_csv(table, index=False, lineterminator="\n")
    print(format_hardware(df, summary))
    print(
        f"wall time {seconds:,.1f} s; wrote {table} (and each variant's accelerator in {out / 'variants'})"
    )
    return 0


def _require_zigzag() -> None:
    """Refuse before any work when zigzag-dse cannot be imported: every candidate comes from
    its search and is re-evaluated by it, so nothing could be ranked (one line, exit 2)."""
    from cyclesim.checks.zigzag.peer import require_zigzag
    from cyclesim.errors import PeerUnavailable

    try:
        require_zigzag()
    except PeerUnavailable as exc:
        raise CyclesimError(
            f"{exc}; ranking needs zigzag-dse 3.9.1: `make peers` installs it "
            "(or pip install zigzag-dse==3.9.1 six)"
        ) from None


def _input_file(label: str, path: str) -> None:
    """Refuse an input that is missing or a directory, naming it (one line, exit 2)."""
    if Path(path).is_dir():
        raise CyclesimError(f"{label} is a directory; a file is expected")
    if not Path(path).is_file():
        raise CyclesimError(f"{label}: no such file")


def run_zigzag(args: argparse.Namespace) -> int:
    """Rank one workload on one accelerator; print the table, write tables and plots."""
    import time

    from cyclesim.analysis.rank import format_rank, write_tables
    from cyclesim.analysis.rank_zigzag import rank_zigzag

    if args.top is not None and args.top < 1 and not args.all:
        raise CyclesimError("--top must be at least 1")
    for option in ("accelerator", "workload", "mapping"):  # the files first, then the peer
        _input_file(f"--{option} {getattr(args, option)}", getattr(args, option))
    _require_zigzag()
    name = f"{Path(args.workload).stem}-{Path(args.accelerator).stem}"
    out = Path(args.out) if args.out else Path("out") / "rank" / name
    table = Path(args.table) if args.table else out / "rank.csv"
    if table.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise CyclesimError(f"--table {table}: the suffix chooses the format; use .csv or .parquet")
    options = _options(args)
    start = time.perf_counter()
    run = rank_zigzag(
        args.accelerator,
        args.workload,
        args.mapping,
        layers=args.layer,
        top=None if args.all else args.top,
        lpf_limit=args.lpf_limit,
        distinct=args.distinct,
        **options,
    )
    seconds = time.perf_counter() - start
    table.parent.mkdir(parents=True, exist_ok=True)
    written = write_tables(run, table)
    if not args.no_plots:
        from cyclesim.analysis.rank_plot import plot_candidates, plot_regret

        out.mkdir(parents=True, exist_ok=True)
        title = f"{Path(args.workload).stem} on {Path(args.accelerator).stem}"
        written.append(plot_candidates(run, out / "candidates.png", title))
        written.append(
            plot_regret(run, out / "regret.png", f"{title}: regret of zigzag-dse's pick")
        )
    print(format_rank(run))
    print(f"wall time {seconds:,.1f} s; wrote {', '.join(map(str, written))}")
    return 0


def run_accelforge(args: argparse.Namespace) -> int:
    """Rank AccelForge's Pareto set under both policies; print both tables, write tables and
    plots (one set per policy)."""
    import time

    from cyclesim.analysis.rank import format_rank, write_tables
    from cyclesim.analysis.rank_accelforge import rank_accelforge
    from cyclesim.checks.accelforge.read_yaml import parse_jinja_data

    if args.top is not None and args.top < 1 and not args.all:
        raise CyclesimError("--top must be at least 1")
    for spec in args.spec:
        _input_file(spec, spec)
    name = "+".join(Path(s).stem for s in args.spec)
    out = Path(args.out) if args.out else Path("out") / "rank" / f"accelforge-{name}"
    table = Path(args.table) if args.table else out / "rank.csv"
    if table.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise CyclesimError(f"--table {table}: the suffix chooses the format; use .csv or .parquet")
    options = _options(args)
    start = time.perf_counter()
    runs = rank_accelforge(
        args.spec,
        jinja_data=parse_jinja_data(args.jinja_data),
        objectives=[o.strip() for o in args.objectives.split(",") if o.strip()],
        top=None if args.all else args.top,
        **options,
    )
    seconds = time.perf_counter() - start
    table.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for policy, run in runs:
        target = (
            table if policy.name == "default" else table.with_stem(f"{table.stem}-{policy.name}")
        )
        written += write_tables(run, target)
        if not args.no_plots:
            from cyclesim.analysis.rank_plot import plot_candidates

            out.mkdir(parents=True, exist_ok=True)
            written.append(
                plot_candidates(
                    run, out / f"candidates-{policy.name}.png", f"{name} {policy.title}"
                )
            )
        print(f"{name}: accelforge's Pareto set {policy.title}")
        print(format_rank(run))
        print()
    print(f"wall time {seconds:,.1f} s; wrote {', '.join(map(str, written))}")
    return 0
