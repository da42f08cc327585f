"""The ranking measurement: `cyclesim rank zigzag` on resnet18 with zigzag-dse's shipped hardware.

For tpu_like, edge_tpu_like, ascend_like and eyeriss_like with their shipped mappings, every
layer's top K candidates of zigzag-dse's search are replayed; each network's tables and plots
go to OUT/resnet18-<hardware>/ and the wall time of each is printed.

    nice python benchmarks/rank_resnet18.py [--top 20] [--out out/rank] [--cache DIR] [--dask]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

PAIRS = (
    ("tpu_like", "tpu_like"),
    ("edge_tpu_like", "edge_tpu_like"),
    ("ascend_like", "ascend_like"),
    ("eyeriss_like", "default"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--out", default="out/rank")
    parser.add_argument("--cache", help="cache folder (default: cyclesim's)")
    parser.add_argument("--dask", action="store_true", help="on a local Dask cluster")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--pairs", help="comma-separated hardware names (default: all four)")
    parser.add_argument(
        "--summary-only", action="store_true", help="only summarize the tables already in OUT"
    )
    args = parser.parse_args()
    if args.summary_only:
        print(summary(Path(args.out), [h for h, _ in PAIRS if not args.pairs or h in args.pairs]))
        return 0

    import zigzag

    from cyclesim.cli import main as cyclesim

    inputs = Path(zigzag.__file__).parent / "inputs"
    wanted = set(args.pairs.split(",")) if args.pairs else None
    walls = {}
    for hardware, mapping in PAIRS:
        if wanted and hardware not in wanted:
            continue
        argv = [
            "rank", "zigzag",
            "--accelerator", str(inputs / "hardware" / f"{hardware}.yaml"),
            "--workload", str(inputs / "workload" / "resnet18.onnx"),
            "--mapping", str(inputs / "mapping" / f"{mapping}.yaml"),
            "--top", str(args.top),
            "--out", str(Path(args.out) / f"resnet18-{hardware}"),
        ]  # fmt: skip
        if args.cache:
            argv += ["--cache", args.cache]
        if args.dask:
            argv.append("--dask")
        if args.workers:
            argv += ["--workers", str(args.workers)]
        print(f"== {hardware} ({mapping})", flush=True)
        start = time.perf_counter()
        code = cyclesim(argv)
        walls[hardware] = time.perf_counter() - start
        print(f"== {hardware}: exit {code}, {walls[hardware]:,.0f} s", flush=True)
    print("wall time: " + ", ".join(f"{h} {s:,.0f} s" for h, s in walls.items())
          + f"; total {sum(walls.values()):,.0f} s")  # fmt: skip
    print(summary(Path(args.out), list(walls)))
    return 0


def summary(out: Path, hardware: list[str], worst: int = 3) -> str:
    """Per network: layers, mean tau, picks that replay best, totals and regret; then the
    layers with the largest regret over all networks, with their mechanisms."""
    import pandas as pd

    from cyclesim.analysis.rank import read_tables, totals

    lines, every = [], []
    for h in hardware:
        table = out / f"resnet18-{h}" / "rank.csv"
        if not table.is_file():
            continue
        run = read_tables(table)
        t = totals(run.layers)
        tau = run.layers["tau"].astype(float)
        lines.append(
            f"{h}: {t['ranked']}/{t['layers']} layers ranked, mean tau {tau.mean():.2f} "
            f"(NaN on {int(tau.isna().sum())}: all tied), pick replays best on "
            f"{t['pick_is_best']}; zigzag-dse's picks {t['peer_picks']:,.0f} cycles by its model, "
            f"replayed {t['pick_replay']:,}; best of its top candidates {t['best_replay']:,}; "
            f"regret {t['regret']:.2%}"
        )
        every.append(run.layers.assign(hardware=h))
    if every:
        df = pd.concat(every).dropna(subset=["regret"]).sort_values("regret", ascending=False)
        lines.append("largest regret:")
        for r in df.head(worst).itertuples():
            lines.append(
                f"* {r.hardware} {r.layer}: {r.regret:.2%} (pick {r.pick_replay:,} vs "
                f"{r.best_replay:,}, the winner ranked {r.winner_peer_rank} by zigzag-dse); the "
                f"pick pays more in {r.pick_pays_more}\n  why: {r.regret_mechanism or '-'}\n"
                f"  pick: {r.pick_mechanism}\n  winner: "
                f"{r.winner_mechanism}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
