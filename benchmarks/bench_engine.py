"""Engine speed, measured side by side in one run (`make bench`): fast-forward's figures.

Per case: simulated cycles; engine CPU seconds with and without fast-forward and their ratio;
SimPy events with and without; the whole `cyclesim run` process (CPU seconds and peak RSS);
the cost per event without fast-forward against a bare SimPy loop of the same event count
(`yield env.timeout(1)`), timed in the same process. Then `cyclesim --help` as a whole
process, and the engine time when the outermost loop's bound doubles (steady-state cases).

Times are CPU time (process_time, or the child's rusage), best of --repeat runs, because wall
time on a shared machine swings more than the effects measured. Targets: memsize
example >= 10x faster with fast-forward; GEMM 2048^3 < 0.1 s of engine time; doubling the
outermost loop adds <= 10 % engine time; --help < 0.2 s and a worked example < 0.5 s as whole
processes, < 100 MB; cost per event <= 3x bare SimPy.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import inspect
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import simpy
import yaml

from cyclesim.engine.run import replay_plan
from cyclesim.schedule import build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload

ROOT = Path(__file__).resolve().parents[1]
INPUTS = ROOT / "benchmarks" / "inputs"
WORKED = ROOT / "tests" / "cases" / "worked" / "01_compute_bound"

# name -> (arch, workload, mapping, scale): scale doubles ranks and loop bounds (see _scaled)
CASES = {
    "memsize small (eyeriss_like GEMM 100^3)": (
        "hw_models/eyeriss_like_small.yaml",
        "examples/eyeriss_memsize/workload.yaml",
        "examples/eyeriss_memsize/mapping_small.yaml",
        None,
    ),
    "memsize large (eyeriss_like GEMM 100^3)": (
        "hw_models/eyeriss_like.yaml",
        "examples/eyeriss_memsize/workload.yaml",
        "examples/eyeriss_memsize/mapping_large.yaml",
        None,
    ),
    "tpu_like GEMM 1024^3": (
        "hw_models/tpu_like.yaml",
        "examples/tpu_gemm/workload.yaml",
        "examples/tpu_gemm/mapping.yaml",
        None,
    ),
    # m, n and k doubled: the n and k tile loops and the streamed m loop
    "tpu_like GEMM 2048^3": (
        "hw_models/tpu_like.yaml",
        "examples/tpu_gemm/workload.yaml",
        "examples/tpu_gemm/mapping.yaml",
        {"m": 2, "n": 2, "k": 2},
    ),
    "ResNet-50 3x3 56x56x64->64 on tpu_like": (
        "hw_models/tpu_like.yaml",
        "benchmarks/inputs/resnet50_conv2_abz.yaml",
        "benchmarks/inputs/resnet50_conv2_tpu.yaml",
        None,
    ),
    "ResNet-50 3x3 56x56x64->64 on eyeriss_like": (
        "hw_models/eyeriss_like.yaml",
        "benchmarks/inputs/resnet50_conv2.yaml",
        "benchmarks/inputs/resnet50_conv2_eyeriss.yaml",
        None,
    ),
}
# cases whose outermost temporal loop is doubled for the steady-state scaling figure
DOUBLED = ("memsize small (eyeriss_like GEMM 100^3)", "tpu_like GEMM 1024^3")
SLOW = ("ResNet-50 3x3 56x56x64->64 on eyeriss_like",)  # skipped by --quick


def _scaled(workload: dict, mapping: dict, scale: dict[str, int]) -> tuple[dict, dict]:
    """Multiply each rank in scale, and the outermost temporal loop over it, by its factor."""
    workload, mapping = copy.deepcopy(workload), copy.deepcopy(mapping)
    for einsum in workload["einsums"]:
        for rank, factor in scale.items():
            einsum["ranks"][rank] *= factor
    done = set()
    for node in mapping["loop_tree"]:
        rank = node.get("rank")
        if node["type"] == "temporal" and rank in scale and rank not in done:
            node["bound"] *= scale[rank]
            done.add(rank)
    return workload, mapping


def _outermost_doubled(workload: dict, mapping: dict) -> tuple[dict, dict]:
    """The outermost temporal loop's bound and its rank doubled."""
    rank = next(n["rank"] for n in mapping["loop_tree"] if n["type"] == "temporal")
    return _scaled(workload, mapping, {rank: 2})


def materialise(name: str, files: tuple, folder: Path, double_outermost: bool = False) -> tuple:
    """The case's three input files (written to folder when derived)."""
    arch, workload, mapping, scale = files
    if scale is None and not double_outermost:
        return str(ROOT / arch), str(ROOT / workload), str(ROOT / mapping)
    w = yaml.safe_load((ROOT / workload).read_text())
    m = yaml.safe_load((ROOT / mapping).read_text())
    if scale is not None:
        w, m = _scaled(w, m, scale)
    if double_outermost:
        w, m = _outermost_doubled(w, m)
    stem = "".join(c if c.isalnum() else "_" for c in name) + ("_x2" if double_outermost else "")
    wp, mp = folder / f"{stem}_workload.yaml", folder / f"{stem}_mapping.yaml"
    wp.write_text(yaml.safe_dump(w, sort_keys=False))
    mp.write_text(yaml.safe_dump(m, sort_keys=False))
    return str(ROOT / arch), str(wp), str(mp)


def _has_fast_forward() -> bool:
    """Does this engine take fast_forward (a replay_plan keyword once, a RunOptions field now)?"""
    if "fast_forward" in inspect.signature(replay_plan).parameters:
        return True
    try:
        from cyclesim.engine.options import RunOptions
    except ImportError:
        return False
    return "fast_forward" in {f.name for f in dataclasses.fields(RunOptions)}


def engine_time(plan, repeat: int, fast_forward: bool) -> tuple[float, object]:
    """Best CPU seconds of replay_plan over repeat runs, and the last run."""
    kwargs = {"fast_forward": fast_forward} if _has_fast_forward() else {}
    best, raw = float("inf"), None
    for _ in range(repeat):
        c0 = time.process_time()
        raw = replay_plan(plan, progress=False, **kwargs)
        best = min(best, time.process_time() - c0)
    return best, raw


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


# Runs `python -m cyclesim` and reports the peak resident set of that process alone: rusage's
# ru_maxrss of a child would include the image of this (large) benchmark process it forked from.
_CHILD = """
import atexit, runpy, sys
def peak():
    try:
        with open("/proc/self/status") as f:
            kb = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
    except OSError:
        import resource
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sys.stderr.write(f"\\npeak-rss-kb {kb}\\n")
atexit.register(peak)
sys.argv = ["cyclesim", *sys.argv[1:]]
runpy.run_module("cyclesim", run_name="__main__")
"""


def whole_process(argv: list[str], repeat: int) -> tuple[float, float]:
    """Best CPU seconds (user + system) and peak RSS (MB) of `python -m cyclesim argv`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    best_cpu, rss = float("inf"), 0.0
    for _ in range(repeat):
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        err = proc.stderr.read().decode()
        proc.stderr.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise SystemExit(f"cyclesim {' '.join(argv)} failed ({proc.returncode}):\n{err}")
        best_cpu = min(best_cpu, usage.ru_utime + usage.ru_stime)
        rss = max(rss, int(err.rsplit("peak-rss-kb", 1)[1]) / 1024)
    return best_cpu, rss


def _plan(arch: str, workload: str, mapping: str):
    a = load_architecture(arch)
    w = load_workload(workload)
    return build_plan(a, w, load_mapping(mapping, a, w))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="leave out the slowest case")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per figure; the best CPU time counts"
    )
    args = parser.parse_args()
    ff = _has_fast_forward()
    print(f"fast-forward in this engine: {'yes' if ff else 'no'}")
    head = (
        f"{'case':<44}{'cycles':>11}{'eng ff s':>10}{'eng s':>9}{'speedup':>8}"
        f"{'events ff':>11}{'events':>11}{'proc s':>8}{'RSS MB':>8}{'us/ev':>7}{'bare':>6}{'ratio':>6}"
    )
    print(head)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, files in CASES.items():
            if args.quick and name in SLOW:
                continue
            paths = materialise(name, files, folder)
            plan = _plan(*paths)
            off, raw_off = engine_time(plan, args.repeat, False)
            if ff:
                on, raw_on = engine_time(plan, args.repeat, True)
                if raw_on.cycles != raw_off.cycles or raw_on.counts != raw_off.counts:
                    raise SystemExit(f"{name}: fast-forward changed the result")
                on_s, speedup, ev_on = f"{on:>10.3f}", f"{off / on:>7.1f}x", raw_on.env_events
            else:
                on_s, speedup, ev_on = f"{'-':>10}", f"{'-':>8}", "-"
            proc, rss = whole_process(["run", *paths], args.repeat)
            per_event = off / max(1, raw_off.env_events)
            bare = bare_simpy(raw_off.env_events, args.repeat)
            print(
                f"{name:<44}{raw_off.cycles:>11,}{on_s}{off:>9.3f}{speedup}"
                f"{ev_on:>11}{raw_off.env_events:>11,}{proc:>8.2f}{rss:>8.0f}"
                f"{per_event * 1e6:>7.2f}{bare * 1e6:>6.2f}{per_event / bare:>6.1f}"
            )
        print()
        help_cpu, help_rss = whole_process(["--help"], args.repeat)
        print(
            f"cyclesim --help: {help_cpu:.3f} s CPU, {help_rss:.0f} MB peak (targets 0.2 s, 100 MB)"
        )
        worked = [str(WORKED / f) for f in ("arch.yaml", "workload.yaml", "mapping.yaml")]
        run_cpu, run_rss = whole_process(["run", *worked], args.repeat)
        print(
            f"cyclesim run (worked example 01): {run_cpu:.3f} s CPU, {run_rss:.0f} MB peak "
            "(targets 0.5 s, 100 MB)"
        )
        print()
        print(
            "doubling the outermost temporal loop (engine CPU s; target: at most +10 % with fast-forward)"
        )
        for name in DOUBLED:
            once = _plan(*materialise(name, CASES[name], folder))
            twice = _plan(*materialise(name, CASES[name], folder, double_outermost=True))
            modes = (True, False) if ff else (False,)
            cells = []
            for mode in modes:
                t1 = t2 = float("inf")
                for _ in range(args.repeat):  # alternated: a busy spell slows both alike
                    t1 = min(t1, engine_time(once, 1, mode)[0])
                    t2 = min(t2, engine_time(twice, 1, mode)[0])
                label = "with fast-forward" if mode else "without"
                cells.append(f"{label}: {t1:.3f} -> {t2:.3f} ({100 * (t2 / t1 - 1):+.0f} %)")
            print(f"  {name:<42}" + "; ".join(cells))


if __name__ == "__main__":
    main()
