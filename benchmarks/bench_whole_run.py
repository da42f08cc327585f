"""The whole `cyclesim run` next to the replay's engine time, side by side in one run.

For each case: CPU seconds (best of --repeat) of the engine alone (replay_plan, untraced),
of the whole result without traces (plan, engine, attribution: what `run` does before it
prints), and of the engine traced plus the activity, VCD, FST, Perfetto JSON and plots;
then the start-up of `python -m cyclesim --help` in a child (the interpreter and the
command line; --version also imports the engine to say whether it runs compiled). Targets: without traces the
whole run at most 2x the engine plus start-up, with every trace at most 3x. The ratio is over
the engine's untraced time; a line per case says met or MISSED, and what took the time.
Below each case, for information: what the engine's time and the whole result's are made of
(building the plan; build_result and the text report on a run already made), and the CPU of
the real `cyclesim run` in a child (its imports, loading the YAML, plan, replay, report).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cyclesim.engine import replay_plan
from cyclesim.report import text_report
from cyclesim.results import build_result
from cyclesim.schedule import ReusePolicy, build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload
from cyclesim.views import write_perfetto_files, write_vcd_files
from cyclesim.views.plots import write_plots

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "tpu_gemm (GEMM 1024^3, tpu_like)": (
        "hw_models/tpu_like.yaml",
        "examples/tpu_gemm/workload.yaml",
        "examples/tpu_gemm/mapping.yaml",
    ),
    "memory-size example (small SRAMs)": (
        "hw_models/eyeriss_like_small.yaml",
        "examples/eyeriss_memsize/workload.yaml",
        "examples/eyeriss_memsize/mapping_small.yaml",
    ),
}
PLAIN_TARGET, TRACES_TARGET = 2.0, 3.0


def best_cpu(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def start_up(repeat: int) -> float:
    """CPU seconds of a child `python -m cyclesim --help` (user + system), best of repeat."""
    import resource

    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "cyclesim", "--help"], capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def child_run(files: tuple[str, str, str], repeat: int) -> float:
    """CPU seconds of a child `python -m cyclesim run ARCH WORKLOAD MAPPING` (its report
    captured), user + system, best of repeat."""
    import resource

    argv = [sys.executable, "-m", "cyclesim", "run", *(str(ROOT / f) for f in files)]
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, capture_output=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def measure(files: tuple[str, str, str], repeat: int) -> dict[str, float]:
    arch = load_architecture(str(ROOT / files[0]))
    workload = load_workload(str(ROOT / files[1]))
    mapping = load_mapping(str(ROOT / files[2]), arch, workload)
    plan = lambda: build_plan(arch, workload, mapping, ReusePolicy("retain"), False)  # noqa: E731

    def plain():
        build_result(replay_plan(plan(), progress=False))

    def traced():
        with tempfile.TemporaryDirectory() as out:
            res = build_result(replay_plan(plan(), trace=True, progress=False))
            write_vcd_files(res, Path(out) / "run.vcd")
            write_vcd_files(res, Path(out) / "run.fst", fst=True)
            write_perfetto_files(res, Path(out) / "run.json")
            write_plots(res, Path(out) / "plots")

    raw = replay_plan(plan(), progress=False)
    engine = best_cpu(lambda: replay_plan(plan(), progress=False), repeat)
    return {
        "engine": engine,
        "plain": best_cpu(plain, repeat),
        "traced": best_cpu(traced, 1),
        "plan": best_cpu(plan, repeat),
        "result": best_cpu(lambda: text_report(build_result(raw)), repeat),
        "child": child_run(files, repeat),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()
    boot = start_up(args.repeat)
    print(f"start-up (python -m cyclesim --help): {boot:.3f} s CPU")
    for name, files in CASES.items():
        t = measure(files, args.repeat)
        plain_ratio = t["plain"] / t["engine"]
        traced_ratio = t["traced"] / t["engine"]
        print(f"\n{name}")
        print(f"  engine, untraced               {t['engine']:8.3f} s")
        print(f"  whole result, no traces        {t['plain']:8.3f} s   {plain_ratio:7.1f}x the engine "
              f"(target {PLAIN_TARGET:g}x: {'met' if plain_ratio <= PLAIN_TARGET else 'MISSED'})")  # fmt: skip
        print(f"  traced + VCD, FST, JSON, plots {t['traced']:8.3f} s   {traced_ratio:7.1f}x the engine "
              f"(target {TRACES_TARGET:g}x: {'met' if traced_ratio <= TRACES_TARGET else 'MISSED'})")  # fmt: skip
        print(
            f"  whole `run` without traces, start-up included: about {t['plain'] + boot:.2f} s CPU"
        )
        print(f"    of the engine's time, building the plan       {t['plan']:8.3f} s")
        print(f"    build_result + text report of a run made       {t['result']:8.3f} s")
        print(f"    `cyclesim run` in a child (imports, load, ...) {t['child']:8.3f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
