"""The `cyclesim check scalesim` sub-command: register(check_subparsers) adds it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (  # (term, header) of the per-layer table
    ("compute_cycles", "compute"),
    ("stall_cycles", "stall"),
    ("outside_cycles", "pre/post"),
    ("total_cycles", "total"),
    ("utilisation_percent", "util %"),
    ("dram_reads_ifmap", "DRAM rd ifmap"),
    ("dram_reads_filter", "DRAM rd filter"),
    ("dram_reads_ofmap", "DRAM rd ofmap"),
    ("dram_writes_ofmap", "DRAM wr ofmap"),
    ("wall_seconds", "wall s"),
)


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `scalesim` under the `check` command group."""
    parser = subparsers.add_parser(
        "scalesim",
        help="replay a SCALE-Sim config and topology and compare with SCALE-Sim 3.0.0",
        description=(
            "Read SCALE-Sim's own config (.cfg) and topology (.csv, conv or GEMM rows), build a "
            "systolic architecture and mapping for each layer, replay it, run the real SCALE-Sim "
            "3.0.0 when its environment exists, and print per layer the compute and stall "
            "cycles, utilisation, DRAM words per operand and wall time of both, with the "
            "mechanism behind every difference."
        ),
    )
    parser.add_argument("config", help="SCALE-Sim config file (.cfg)")
    parser.add_argument("topology", help="SCALE-Sim topology file (.csv)")
    parser.add_argument("--layer", help="only the layer of this name")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument(
        "--gemm", action="store_true", help="rows are 'name, M, N, K' (default: guess)"
    )
    fmt.add_argument("--conv", action="store_true", help="rows are conv layers (default: guess)")
    parser.add_argument("--no-peer", action="store_true", help="do not run SCALE-Sim")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    parser.set_defaults(func=run, error_prefix="cyclesim check scalesim")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the check; exit 0 when compute cycles match SCALE-Sim (or it did not run), else 1."""
    from cyclesim.checks.scalesim.check import run_check

    gemm = True if args.gemm else False if args.conv else None
    check = run_check(
        args.config,
        args.topology,
        layer=args.layer,
        gemm=gemm,
        use_peer=not args.no_peer,
        progress=None if not args.json else False,
    )
    parity = check.parity()
    if args.json:
        from cyclesim.results.schema import print_json

        print_json(report_json(check))
    else:
        print(format_report(check))
    return 1 if any(v is False for v in parity.values()) else 0


def wide_table(check) -> pd.DataFrame:
    """One row per layer and source: the terms as columns."""
    long = check.table()
    wide = long.pivot_table(
        index=["layer", "source"], columns="term", values="value", aggfunc="first", sort=False
    )
    cols = [t for t, _ in COLUMNS if t in wide.columns]
    return wide[cols].rename(columns=dict(COLUMNS))


def format_report(check) -> str:
    """The per-layer table (pandas' own formatter) and the notes."""
    c = check.config
    mode = (
        "CALC (ideal memory)"
        if c.calc
        else (
            f"USER (DRAM words/cycle: ifmap {c.ifmap_bandwidth}, filter {c.filter_bandwidth}, "
            f"ofmap {c.ofmap_bandwidth})"
        )
    )
    head = [
        f"SCALE-Sim check: {check.topology} on {c.rows}x{c.cols} {c.dataflow.value}, {mode}",
        f"SRAMs (KiB): ifmap {c.ifmap_sram_kib}, filter {c.filter_sram_kib}, ofmap {c.ofmap_sram_kib}",
    ]
    if check.peer_run is not None:
        head.append(
            f"SCALE-Sim 3.0.0 (Python {check.peer_run.python_version}, numpy "
            f"{check.peer_run.numpy_version}), peak memory {check.peer_run.peak_rss_mib:,.0f} MiB"
        )
    table = wide_table(check)
    text = table.to_string(
        float_format=lambda v: f"{v:,.2f}" if abs(v) < 1000 and v != int(v) else f"{v:,.0f}",
        na_rep="-",
    )
    parity = check.parity()
    if all(v is None for v in parity.values()):
        verdict = "compute cycles: SCALE-Sim did not run"
    else:
        equal = sum(1 for v in parity.values() if v)
        verdict = f"compute cycles equal to SCALE-Sim's on {equal} of {len(parity)} layers"
    notes = "\n".join(f"* {n}" for n in check.notes())
    return "\n".join(head) + "\n\n" + text + "\n\n" + verdict + "\n" + notes


def report_json(check) -> dict:
    c = check.config
    return {
        "config": c.source,
        "topology": check.topology,
        "array": [c.rows, c.cols],
        "dataflow": c.dataflow.value,
        "mode": "CALC" if c.calc else "USER",
        "terms": check.table().to_dict(orient="records"),
        "compute_cycles_equal": check.parity(),
        "scalesim_peak_rss_mib": check.peer_run.peak_rss_mib if check.peer_run else None,
        "notes": check.notes(),
    }
