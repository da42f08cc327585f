"""Issue 25's measurement: `cyclesim rank zigzag` on resnet18 with zigzag-dse's shipped hardware.

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
    args = parser.parse_args()

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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
