"""The replay against the real SCALE-Sim 3.0.0 on the same layers, measured side by side in one run.

Per case (CALC mode, 32x32 array, where both give the same compute cycles): the cycles of
both, CPU seconds of the replay (SCALE-Sim's files read, layer imported, compiled, replayed,
results built; best of --repeat) and of SCALE-Sim (its Python API without traces, one run:
it takes tens of seconds), their ratio, and the peak memory (max RSS) of each, each measured
in a fresh process of its own. SCALE-Sim's interpreter: $CYCLESIM_SCALESIM_PYTHON or
.venv-scalesim (`make peers`).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "scalesim"
CASES = {  # name: (topology, config)
    "GEMM 512^3, weight stationary": ("gemm512.csv", "ws_32x32_calc.cfg"),
    "GEMM 512^3, output stationary": ("gemm512.csv", "os_32x32_calc.cfg"),
    "ResNet-50 conv2_x 3x3 (56x56x64->64), weight stationary": (
        "resnet50_conv2x.csv",
        "ws_32x32_calc.cfg",
    ),
    "ResNet-50 conv2_x 3x3 (56x56x64->64), output stationary": (
        "resnet50_conv2x.csv",
        "os_32x32_calc.cfg",
    ),
}


def replay_once(config: str, topology: str, repeat: int) -> dict:
    """In this process: best CPU time of the whole check minus the peer, and the max RSS."""
    from cyclesim.checks.scalesim.check import replay_compute, run_check

    best, cycles = float("inf"), None
    for _ in range(repeat):
        c0 = time.process_time()
        check = run_check(config, topology, use_peer=False, progress=False)
        best = min(best, time.process_time() - c0)
        cycles = replay_compute(check.layers[0].replay)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"cpu_seconds": best, "compute_cycles": cycles, "peak_rss_mib": peak}


def measure_replay(config: Path, topology: Path, repeat: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--replay-only", str(config), str(topology), str(repeat)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--repeat", type=int, default=3, help="replay runs; the best CPU time counts"
    )
    parser.add_argument("--quick", action="store_true", help="weight stationary only")
    args = parser.parse_args()
    from cyclesim.checks.scalesim.peer import run_scalesim
    from cyclesim.errors import PeerUnavailable

    print(
        f"{'case':<58}{'cycles':>10}{'replay cpu s':>14}{'SCALE-Sim cpu s':>17}{'ratio':>8}"
        f"{'replay MiB':>12}{'SCALE-Sim MiB':>15}"
    )
    for name, (topo, cfg) in CASES.items():
        if args.quick and "output" in name:
            continue
        ours = measure_replay(EXAMPLES / cfg, EXAMPLES / topo, args.repeat)
        try:
            theirs = run_scalesim(EXAMPLES / cfg, EXAMPLES / topo, gemm="GEMM" in name)
        except PeerUnavailable as exc:
            print(f"{name:<58}{ours['compute_cycles']:>10,}{ours['cpu_seconds']:>14.3f}  {exc}")
            continue
        layer = theirs.layers[0]
        same = "" if layer.compute_cycles == ours["compute_cycles"] else " (cycles differ!)"
        print(
            f"{name:<58}{ours['compute_cycles']:>10,}{ours['cpu_seconds']:>14.3f}"
            f"{layer.cpu_seconds:>17.2f}{layer.cpu_seconds / ours['cpu_seconds']:>7.0f}x"
            f"{ours['peak_rss_mib']:>12.0f}{theirs.peak_rss_mib:>15.0f}{same}"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--replay-only":
        sys.path.insert(0, str(ROOT))
        print(json.dumps(replay_once(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        main()
