"""DRAM in the replay's loop (issue 16): engine time with DDR4 vs bandwidth-only, side by side.

For each case the same workload and mapping replay on the bandwidth-only architecture and on
its copy with a `dram:` block; the engine's CPU time (replay_plan, process_time, best of
--repeat) and the ratio DDR4 / bandwidth-only (target: within 2x). Then cycles and non-compute
cycles by cause for both, so the new causes show.

    PYTHONPATH=. python benchmarks/bench_dram.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from cyclesim.engine.run import replay_plan
from cyclesim.results import build_result
from cyclesim.schedule import build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "eyeriss_like GEMM 100^3, small SRAMs (ZigZag memsize)": (
        "hw_models/eyeriss_like_small.yaml",
        "hw_models/eyeriss_like_small_ddr4.yaml",
        "examples/eyeriss_memsize/workload.yaml",
        "examples/eyeriss_memsize/mapping_small.yaml",
    ),
    "ResNet-50 res2a_branch2c on tpu_like": (
        "hw_models/tpu_like.yaml",
        "hw_models/tpu_like_ddr4.yaml",
        "examples/resnet50_dram/workload.yaml",
        "examples/resnet50_dram/mapping.yaml",
    ),
}


def engine_seconds(plan, repeat: int) -> tuple[float, object]:
    """CPU seconds of replay_plan, best of repeat, and the last run."""
    best, raw = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        raw = replay_plan(plan, progress=False)
        best = min(best, time.process_time() - t0)
    return best, raw


def causes(res) -> str:
    df = res.stall_spans
    rows = df.groupby(["phase", "cause"]).cycles.sum().sort_values(ascending=False)
    return "\n".join(
        f"      {phase:8s} {cause:14s} {int(c):>10,}" for (phase, cause), c in rows.items()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per case; the best CPU time counts")
    args = ap.parse_args()
    for name, (plain, ddr4, workload_path, mapping_path) in CASES.items():
        print(name)
        times = {}
        for label, arch_path in (("bandwidth-only", plain), ("DDR4", ddr4)):
            arch = load_architecture(str(ROOT / arch_path))
            workload = load_workload(str(ROOT / workload_path))
            mapping = load_mapping(str(ROOT / mapping_path), arch, workload)
            plan = build_plan(arch, workload, mapping)
            seconds, raw = engine_seconds(plan, args.repeat)
            res = build_result(raw)
            times[label] = seconds
            print(
                f"  {label:15s} {res.cycles:>10,} cycles  engine {seconds * 1000:8.1f} ms CPU  "
                f"{raw.rec.events:>7,} events"
            )
            print(causes(res))
        ratio = times["DDR4"] / times["bandwidth-only"]
        print(f"  engine time DDR4 / bandwidth-only: {ratio:.2f}x (target <= 2x)\n")


if __name__ == "__main__":
    main()
