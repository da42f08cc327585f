"""DRAM in the replay's loop (issue 16): engine time with DDR4 vs bandwidth-only, side by side.

For each case the same workload and mapping replay on the bandwidth-only architecture and on
its copy with a `dram:` block, in turn (side by side, so a busy machine slows both alike); the
engine's CPU time (replay_plan, process_time, best of --repeat) and the ratio DDR4 /
bandwidth-only (target: within 2x). With a DRAM model, fast-forward (issue 14) skips only
periods that issue no DRAM request (engine/fastforward_dram.py), so every replay is timed with
it (the default) and without it, with the jumps it made: the ratio of the replays without it
compares the same amount of simulated work. Then cycles and non-compute cycles by cause, so
the new causes show.

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


def side_by_side(plans: dict, repeat: int) -> tuple[dict, dict]:
    """CPU seconds of replay_plan per (plan, fast_forward), best of `repeat`, run in turn within
    each repetition (so a busy machine slows all alike); and each one's last run."""
    best = {label: float("inf") for label in plans}
    raw = {}
    for _ in range(repeat):
        for label, (plan, fast_forward) in plans.items():
            t0 = time.process_time()
            raw[label] = replay_plan(plan, progress=False, fast_forward=fast_forward)
            best[label] = min(best[label], time.process_time() - t0)
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
    ratios, ratios_full = {}, {}
    for name, (plain, ddr4, workload_path, mapping_path) in CASES.items():
        print(name)
        plans = {}
        for label, arch_path, fast_forward in (
            ("bandwidth-only", plain, True),
            ("bandwidth, no ff", plain, False),
            ("DDR4", ddr4, True),
            ("DDR4, no ff", ddr4, False),
        ):
            arch = load_architecture(str(ROOT / arch_path))
            workload = load_workload(str(ROOT / workload_path))
            mapping = load_mapping(str(ROOT / mapping_path), arch, workload)
            plans[label] = (build_plan(arch, workload, mapping), fast_forward)
        seconds, raws = side_by_side(plans, args.repeat)
        for label, raw in raws.items():
            res = build_result(raw)
            ff = raw.fast_forward
            print(
                f"  {label:16s} {res.cycles:>10,} cycles  engine {seconds[label] * 1000:8.1f} ms CPU"
                f"  {raw.env_events:>8,} SimPy events  fast-forward: {ff.jumps} jumps,"
                f" {ff.cycles_skipped:,} cycles skipped{', off: ' + ff.off_because if ff.off_because else ''}"
            )
            if "no ff" not in label:  # the same cycles and causes as with fast-forward
                print(causes(res))
        ratios[name] = seconds["DDR4"] / seconds["bandwidth-only"]
        ratios_full[name] = seconds["DDR4, no ff"] / seconds["bandwidth, no ff"]
        print(
            f"  engine time DDR4 / bandwidth-only: {ratios[name]:.2f}x with its fast-forward, "
            f"{ratios_full[name]:.2f}x without (target <= 2x)\n"
        )
    print("engine CPU time, DDR4 / bandwidth-only (best of", args.repeat, "side by side):")
    print("  with ff  without  case")
    for name, ratio in ratios.items():
        print(f"  {ratio:6.2f}x  {ratios_full[name]:6.2f}x  {name}")


if __name__ == "__main__":
    main()
