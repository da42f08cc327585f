"""Trace writing at the replay's speed, measured side by side in one run.

On the ZigZag memory-size example (small SRAMs, 311,514 cycles): CPU seconds of the replay
(as `cyclesim run` does it, untraced) and of writing the VCD + FST + Perfetto JSON + plots from
a traced result (the Activity model built once, then the writers; FST when this machine has a
writer, its child process's CPU counted when it is vcd2fst), best of --repeat runs each; their
ratio against the target of 3x. The same without FST is printed for information. Peak RSS of the whole `cyclesim run --vcd
--perfetto --plot` process (a child, so this process's own memory does not count) against
500 MB. Then, for information: the compressed forms (FST, .json.gz, .pftrace) and file sizes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from cyclesim.analysis.simulate import replay
from cyclesim.spec import load_architecture, load_mapping, load_workload
from cyclesim.views.fst import write_fst
from cyclesim.views.fst_native import fst_writer
from cyclesim.views.perfetto_json import write_chrome_json
from cyclesim.views.perfetto_proto import perfetto_available, write_perfetto_proto
from cyclesim.views.plots import write_plots
from cyclesim.views.vcd import write_vcd

ROOT = Path(__file__).resolve().parents[1]
FILES = (
    "hw_models/eyeriss_like_small.yaml",
    "examples/eyeriss_memsize/workload.yaml",
    "examples/eyeriss_memsize/mapping_small.yaml",
)
RATIO_TARGET, RSS_TARGET_MB = 3.0, 500


def cpu_now() -> float:
    """CPU seconds of this process and its finished children (vcd2fst runs as one)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def best_cpu(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = cpu_now()
        fn()
        best = min(best, cpu_now() - t0)
    return best


_CHILD = """
import runpy, sys
def high_water():  # peak resident set of this process image (VmHWM restarts at exec, ru_maxrss does not)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
try:
    sys.argv = ["cyclesim", *sys.argv[1:]]
    runpy.run_module("cyclesim", run_name="__main__")
except SystemExit:
    pass
finally:
    print("VmHWM", high_water(), file=sys.stderr)
"""


def peak_rss_mb(args: list[str]) -> float:
    """Peak resident memory of `python -m cyclesim ARGS` in a child process, in MB (Linux)."""
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], check=True, cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    kb = next(int(line.split()[1]) for line in out.stderr.splitlines() if line.startswith("VmHWM"))
    return kb / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    args = ap.parse_args()
    arch = load_architecture(str(ROOT / FILES[0]))
    workload = load_workload(str(ROOT / FILES[1]))
    mapping = load_mapping(str(ROOT / FILES[2]), arch, workload)
    print("trace writing vs replay: ZigZag memory-size example, small SRAMs")
    replay_cpu = best_cpu(lambda: replay(arch, workload, mapping, progress=False), args.repeat)
    res = replay(arch, workload, mapping, trace=True, progress=False)
    res.spans  # noqa: B018 (attribution is the replay's, computed once)
    out = Path(tempfile.mkdtemp(prefix="cyclesim-bench-"))

    def writers(fst: bool) -> None:
        res.__dict__.pop("_activity", None)  # build the Activity again each round
        write_vcd(res, out / "run.vcd")
        if fst:
            write_fst(res, out / "run.fst")
        write_chrome_json(res, out / "run.json")
        write_plots(res, out / "plots")

    fst = fst_writer() is not None
    traces_cpu = best_cpu(lambda: writers(fst), args.repeat)
    ratio = traces_cpu / replay_cpu
    named = "VCD + FST + Perfetto + plots" if fst else "VCD + Perfetto + plots (no FST)"
    print(f"  cycles {res.cycles:,}")
    print(f"  replay (untraced)                CPU {replay_cpu:7.2f} s")
    print(f"  {named:<32} CPU {traces_cpu:7.2f} s   ratio {ratio:.2f}x "
          f"(target <= {RATIO_TARGET:g}x: {'met' if ratio <= RATIO_TARGET else 'MISSED'})")  # fmt: skip
    if fst:
        without = best_cpu(lambda: writers(False), args.repeat)
        print(
            f"    for information, without FST   CPU {without:7.2f} s   ratio {without / replay_cpu:.2f}x"
        )
    # for information, where that time goes: each part alone, best of --repeat
    parts = {
        "Activity (built once per result)": lambda: (
            res.__dict__.pop("_activity", None),
            res.activity(),
        ),  # fmt: skip
        "VCD": lambda: write_vcd(res, out / "run.vcd"),
        "Perfetto JSON": lambda: write_chrome_json(res, out / "run.json"),
        "plots (5 PNG, matplotlib)": lambda: write_plots(res, out / "plots"),
    }
    for name, fn in parts.items():
        print(f"    {name:<30} CPU {best_cpu(fn, args.repeat):7.2f} s")
    run = ["run", *FILES, "--no-progress"]
    rss_replay = peak_rss_mb(run)
    rss = peak_rss_mb([*run, "--vcd", str(out / "c.vcd"), "--perfetto", str(out / "c.json"),
                       "--plot", str(out / "cplots")])  # fmt: skip
    print(f"  peak RSS, cyclesim run            {rss_replay:7.0f} MB")
    print(f"  peak RSS, with --vcd --perfetto --plot {rss:4.0f} MB "
          f"(target < {RSS_TARGET_MB} MB: {'met' if rss < RSS_TARGET_MB else 'MISSED'})")  # fmt: skip
    extra = (
        [("FST", lambda: write_fst(res, out / "run.fst"), out / "run.fst")] if fst_writer() else []
    )
    extra.append(("Perfetto .json.gz", lambda: write_chrome_json(res, out / "run.json.gz"), out / "run.json.gz"))  # fmt: skip
    if perfetto_available():
        extra.append(("Perfetto .pftrace", lambda: write_perfetto_proto(res, out / "run.pftrace"), out / "run.pftrace"))  # fmt: skip
    for name, fn, _ in extra:
        print(f"  {name:<32} CPU {best_cpu(fn, 1):7.2f} s" + (f" ({fst_writer()})" if name == "FST" else ""))  # fmt: skip
    for path in [out / "run.vcd", out / "run.json"] + [p for _, _, p in extra]:
        print(f"  size {path.name:<26} {path.stat().st_size / 1e6:9.1f} MB")
    plots = sum(p.stat().st_size for p in (out / "plots").iterdir())
    print(f"  size {'plots/ (5 PNG)':<26} {plots / 1e6:9.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
