"""Sweep speed side by side: the same sweep on 1 and on N Dask workers, and a rerun from the cache.

    python benchmarks/bench_sweep.py [SWEEP.yaml] [--workers 2] [--repeat 1]

Prints wall seconds (best of --repeat; a sweep's point is to use several processes, so CPU
time of this process says nothing) for 1 worker, N workers, their ratio, and the rerun that
reads every point from the cache. Each timed run starts from an empty cache. Default sweep:
examples/api/dram_width_sweep.yaml (6 points of a ~1 s replay).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from cyclesim.analysis.sweep import sweep

ROOT = Path(__file__).resolve().parents[1]


def timed(sweep_file: Path, out: Path, workers: int, use_cache: bool) -> tuple[float, object]:
    start = time.perf_counter()
    run = sweep(sweep_file, out, workers=workers, progress=False, use_cache=use_cache, plots=False)
    return time.perf_counter() - start, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "sweep_file", nargs="?", default=ROOT / "examples/api/dram_width_sweep.yaml"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    best: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, args.workers):
            for k in range(args.repeat):
                out = Path(tmp) / f"w{workers}_{k}"
                seconds, run = timed(Path(args.sweep_file), out, workers, use_cache=False)
                best[workers] = min(best.get(workers, seconds), seconds)
        cached, run = timed(Path(args.sweep_file), out, args.workers, use_cache=True)
    points = len(run.table)
    print(f"sweep {run.spec.name}: {points} points, best of {args.repeat}")
    print(f"  1 worker   {best[1]:8.1f} s")
    print(
        f"  {args.workers} workers  {best[args.workers]:8.1f} s   speed-up x{best[1] / best[args.workers]:.2f}"
    )
    print(f"  cache rerun {cached:7.1f} s   ({run.cached} of {points} points from the cache)")


if __name__ == "__main__":
    main()
