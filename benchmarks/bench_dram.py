"""DRAM in the replay's loop: engine time with DDR4 vs bandwidth-only, side by side.

For each case the same workload and mapping replay on the bandwidth-only architecture and on
its copy with a `dram:` block, in turn (side by side, so a busy machine slows both alike); the
engine's CPU time (replay_plan, process_time, best of --repeat) and the ratio DDR4 /
bandwidth-only (target: within 2x). With a DRAM model, fast-forward skips only
periods that issue no DRAM request (engine/fastforward_dram.py), so every replay is timed with
it (the default) and without it, with the jumps it made: the ratio of the replays without it
compares the same amount of simulated work. Then cycles and non-compute cycles by cause, so
the new causes show. The DDR4 replay is timed with the compiled DRAM timer (make native;
dram/native.py) and, without fast-forward, with the pure-Python one, side by side; a
line says which the replay uses by default. On the ResNet-50 layer the DDR4 replay is also timed
with `cyclesim dram`'s controllers in the loop (`timing: controller`, engine/dram_loop.py) and
its ratio to the bandwidth-only replay printed against the same 2x target.

    PYTHONPATH=. python benchmarks/bench_dram.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from cyclesim.dram import byte_runs, timer
from cyclesim.dram import native as dram_native
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


# the DRAM modules timed side by side: the compiled ones, if built from the current sources
NATIVE = tuple(dram_native.choose(name, environ={})[0] for name in ("timer", "byte_runs"))
PURE = (timer, byte_runs)
NATIVE_KIND = dram_native.choose("timer", environ={})[1]
PURE_LABEL = "DDR4, pure timer"
# the DDR4 replay with `timing: controller`: cyclesim dram's controllers in the loop
# (engine/dram_loop.py), on the case the 2x target is set on (the GEMM takes minutes)
CONTROLLER_LABEL = "DDR4, controller"
CONTROLLER_CASES = ("ResNet-50 res2a_branch2c on tpu_like",)


def with_controller(plan):
    """The plan with every DRAM-modelled memory timed by the controller in the loop."""
    dram = tuple(
        (name, config.with_changes(replay_controller=True), placed, mhz)
        for name, config, placed, mhz in plan.dram
    )
    return dataclasses.replace(plan, dram=dram)


def side_by_side(plans: dict, repeat: int) -> tuple[dict, dict]:
    """CPU seconds of replay_plan per (plan, fast_forward, DRAM modules: timer, slicing), best of
    `repeat`, run in turn within each repetition (so a busy machine slows all alike); and each
    one's last run."""
    best = {label: float("inf") for label in plans}
    raw = {}
    chosen = dram_native.DramTimer, dram_native.byte_runs
    try:
        for _ in range(repeat):
            for label, (plan, fast_forward, (timer, slices)) in plans.items():
                dram_native.DramTimer, dram_native.byte_runs = timer.DramTimer, slices.byte_runs
                t0 = time.process_time()
                raw[label] = replay_plan(plan, progress=False, fast_forward=fast_forward)
                best[label] = min(best[label], time.process_time() - t0)
    finally:
        dram_native.DramTimer, dram_native.byte_runs = chosen
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
    print(f"DRAM timer: {dram_native.NATIVE_KIND}")
    if NATIVE == PURE:
        print(f"  (no compiled timer to compare: {NATIVE_KIND}; make native builds it)")
    print()
    ratios, ratios_full, ratios_pure, ratios_controller = {}, {}, {}, {}
    for name, (plain, ddr4, workload_path, mapping_path) in CASES.items():
        print(name)
        plans = {}
        for label, arch_path, fast_forward, modules in (
            ("bandwidth-only", plain, True, NATIVE),
            ("bandwidth, no ff", plain, False, NATIVE),
            ("DDR4", ddr4, True, NATIVE),
            ("DDR4, no ff", ddr4, False, NATIVE),
            (PURE_LABEL, ddr4, False, PURE),
        ):
            if label == PURE_LABEL and NATIVE == PURE:
                continue  # "DDR4" is the pure timer already
            arch = load_architecture(str(ROOT / arch_path))
            workload = load_workload(str(ROOT / workload_path))
            mapping = load_mapping(str(ROOT / mapping_path), arch, workload)
            plans[label] = (build_plan(arch, workload, mapping), fast_forward, modules)
        if name in CONTROLLER_CASES:
            plans[CONTROLLER_LABEL] = (with_controller(plans["DDR4"][0]), True, NATIVE)
        seconds, raws = side_by_side(plans, args.repeat)
        for label, raw in raws.items():
            res = build_result(raw)
            ff = raw.fast_forward
            print(
                f"  {label:16s} {res.cycles:>10,} cycles  engine {seconds[label] * 1000:8.1f} ms CPU"
                f"  {raw.env_events:>8,} SimPy events  fast-forward: {ff.jumps} jumps,"
                f" {ff.cycles_skipped:,} cycles skipped{', off: ' + ff.off_because if ff.off_because else ''}"
            )
            if "no ff" not in label and label != PURE_LABEL:  # the same cycles and causes
                if label == CONTROLLER_LABEL:
                    print(f"      DRAM: {raw.rec.dram_counts}")
                print(causes(res))
        ratios[name] = seconds["DDR4"] / seconds["bandwidth-only"]
        ratios_full[name] = seconds["DDR4, no ff"] / seconds["bandwidth, no ff"]
        print(
            f"  engine time DDR4 / bandwidth-only: {ratios[name]:.2f}x with its fast-forward, "
            f"{ratios_full[name]:.2f}x without (target <= 2x)"
        )
        if CONTROLLER_LABEL in seconds:
            ratios_controller[name] = seconds[CONTROLLER_LABEL] / seconds["bandwidth-only"]
            print(
                f"  engine time DDR4 with the controller in the loop / bandwidth-only: "
                f"{ratios_controller[name]:.1f}x (target <= 2x)"
            )
        if PURE_LABEL in seconds:
            assert raws[PURE_LABEL].cycles == raws["DDR4, no ff"].cycles  # the same numbers
            ratios_pure[name] = seconds[PURE_LABEL] / seconds["bandwidth, no ff"]
            print(
                f"  DRAM timer: pure Python {seconds[PURE_LABEL] * 1000:.1f} ms, compiled "
                f"{seconds['DDR4, no ff'] * 1000:.1f} ms CPU (without fast-forward): "
                f"{seconds[PURE_LABEL] / seconds['DDR4, no ff']:.2f}x faster compiled"
            )
        print()
    print("engine CPU time, DDR4 / bandwidth-only (best of", args.repeat, "side by side):")
    print("  with ff  without  pure timer, without  case")
    for name, ratio in ratios.items():
        pure = f"{ratios_pure[name]:6.2f}x" if name in ratios_pure else "     -"
        print(f"  {ratio:6.2f}x  {ratios_full[name]:6.2f}x  {pure:>19s}  {name}")
    for name, ratio in ratios_controller.items():
        print(f"controller in the loop / bandwidth-only: {ratio:.1f}x, target <= 2x  ({name})")


if __name__ == "__main__":
    main()
