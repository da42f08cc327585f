"""Engine speed, measured side by side in one run: our cost per SimPy event vs a bare SimPy loop.

For each case: wall seconds, SimPy events scheduled, simulated cycles per wall second, and
(cost per event) / (cost per event of a bare `yield env.timeout(1)` loop with the same event
count, timed in the same process). Both costs are CPU time (process_time), best of --repeat
runs, because wall time on a shared machine swings more than the effects measured. Targets from issue 2: GEMM 1024^3 on the
32x32 tpu_like core under 10 s; cost per event within 3x of bare SimPy.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import simpy

from cyclesim.engine.run import replay_plan
from cyclesim.results import build_result
from cyclesim.schedule import build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "tpu_like GEMM 1024^3 (32x32, weight-stationary)": (
        "hw_models/tpu_like.yaml",
        "examples/tpu_gemm/workload.yaml",
        "examples/tpu_gemm/mapping.yaml",
    ),
    "eyeriss_like GEMM 100^3, small SRAMs (ZigZag memsize)": (
        "hw_models/eyeriss_like_small.yaml",
        "examples/eyeriss_memsize/workload.yaml",
        "examples/eyeriss_memsize/mapping_small.yaml",
    ),
    "eyeriss_like GEMM 100^3, large SRAMs (ZigZag memsize)": (
        "hw_models/eyeriss_like.yaml",
        "examples/eyeriss_memsize/workload.yaml",
        "examples/eyeriss_memsize/mapping_large.yaml",
    ),
    "simple_3level matmul 64^3 (AccelForge reference)": (
        "hw_models/simple_3level.yaml",
        "examples/simple_3level/workload.yaml",
        "examples/simple_3level/mapping.yaml",
    ),
}


def bare_simpy(n_events: int, repeat: int) -> float:
    """CPU seconds per event of the simplest SimPy process (one timeout per step), best of repeat."""

    def ticker(env, n):
        for _ in range(n):
            yield env.timeout(1)

    best = float("inf")
    for _ in range(repeat):
        env = simpy.Environment()
        env.process(ticker(env, n_events))
        t0 = time.process_time()
        env.run()
        best = min(best, time.process_time() - t0)
    return best / max(1, n_events)


def measure(arch: str, workload: str, mapping: str, repeat: int) -> dict:
    """Compile once, replay `repeat` times (best CPU time), build the result of the last run."""
    a = load_architecture(str(ROOT / arch))
    w = load_workload(str(ROOT / workload))
    m = load_mapping(str(ROOT / mapping), a, w)
    t0 = time.perf_counter()
    plan = build_plan(a, w, m)
    t1 = time.perf_counter()
    engine = float("inf")
    for _ in range(repeat):
        c0 = time.process_time()
        raw = replay_plan(plan, progress=False)
        engine = min(engine, time.process_time() - c0)
    t2 = time.perf_counter()
    res = build_result(raw)
    t3 = time.perf_counter()
    wall = (t1 - t0) + (t2 - t1) / repeat + (t3 - t2)
    return dict(cycles=res.cycles, engine=engine, total=wall, raw=raw)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="only the tpu_like and simple_3level cases"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per case; the best CPU time counts"
    )
    args = parser.parse_args()
    print(
        f"{'case':<56}{'cycles':>12}{'wall s':>9}{'cpu s':>10}{'events':>11}{'Mcyc/s':>9}{'us/event':>10}{'bare us':>9}{'ratio':>7}"
    )
    for name, files in CASES.items():
        if args.quick and "eyeriss" in name:
            continue
        if not all((ROOT / f).exists() for f in files):
            print(f"{name:<56} skipped: inputs missing")
            continue
        r = measure(*files, repeat=args.repeat)
        events = r["raw"].env_events
        per_event = r["engine"] / max(1, events)
        bare = bare_simpy(events, args.repeat)
        print(
            f"{name:<56}{r['cycles']:>12,}{r['total']:>9.2f}{r['engine']:>10.2f}{events:>11,}"
            f"{r['cycles'] / r['total'] / 1e6:>9.2f}{per_event * 1e6:>10.2f}{bare * 1e6:>9.2f}{per_event / bare:>7.1f}"
        )


if __name__ == "__main__":
    main()
