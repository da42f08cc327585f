"""Sweep the SRAM sizes between the small (1/2/4 KB) and the large (8 KB/64 KB/1 MB) setting.

    python examples/eyeriss_memsize/sweep.py --out out/eyeriss_memsize_sweep [--points 7]

At each point the three SRAMs (sram_8KB for O, sram_64KB for W, sram_1M for I and O) grow
geometrically together. Where zigzag-dse is installed, ZigZag's own search (LOMA, lpf 6,
opt="latency") picks the temporal mapping and reports its latency; we replay that mapping.
Without zigzag-dse the mapping is the large setting's reference mapping where it fits and the
small one's otherwise, and the ZigZag column is our reimplementation of its 3.9.1 model.
Writes sweep.csv, sweep.txt and sweep.png (replay vs ZigZag: latency and load cycles against SRAM size).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memsize import SRAM_BITS, zigzag_case  # noqa: E402

from cyclesim.checks.zigzag import cases as zc  # noqa: E402
from cyclesim.checks.zigzag.check import replay_case  # noqa: E402
from cyclesim.checks.zigzag.inputs import TemporalMapping  # noqa: E402
from cyclesim.checks.zigzag.model import evaluate  # noqa: E402
from cyclesim.checks.zigzag.read import load_zigzag_inputs  # noqa: E402
from cyclesim.checks.zigzag.stalls import stall_groups  # noqa: E402
from cyclesim.checks.zigzag.terms import Terms  # noqa: E402
from cyclesim.errors import CyclesimError, PeerUnavailable  # noqa: E402


@dataclass(frozen=True, slots=True)
class Point:
    """One sweep point: sizes, the mapping used, ZigZag's and the replay's terms."""

    sram_8kb_bits: int
    sram_64kb_bits: int
    sram_1m_bits: int
    mapping_source: str
    loop_order: str
    zigzag_latency: float
    zigzag_onloading: float
    zigzag_offloading: float
    replay_cycles: int
    replay_onload: int
    replay_stall: int
    replay_offload: int
    replay_top_stall: str

    @property
    def total_kib(self) -> float:
        """All three SRAMs together, in KiB."""
        return (self.sram_8kb_bits + self.sram_64kb_bits + self.sram_1m_bits) / 8192


def sizes(points: int) -> list[tuple[int, int, int]]:
    """`points` size triples from small to large, geometric per SRAM, rounded to 128 bytes."""
    small, large = SRAM_BITS["small"], SRAM_BITS["large"]
    out = []
    for k in range(points):
        t = k / (points - 1)
        out.append(
            tuple(
                max(1024, round(s * (g / s) ** t / 1024) * 1024)
                for s, g in zip(small, large, strict=True)
            )
        )
    return out  # type: ignore[return-value]


def tm_dict(tm: TemporalMapping) -> dict:
    """A TemporalMapping as the tm_*_setting JSON form."""
    return {op: [[[d, f] for d, f in level] for level in levels] for op, levels in tm.levels}


def order_text(tm: dict) -> str:
    """O's levels as 'B5 K5 | C5 | ...' (innermost first), a compact name for the mapping."""
    return " | ".join(" ".join(f"{d}{f}" for d, f in level) or "-" for level in tm["O"])


def choose(
    bits: tuple[int, int, int], folder: Path, use_peer: bool
) -> tuple[dict, str, Terms | None]:
    """The temporal mapping of one point: ZigZag's search if available, else a reference that fits."""
    if use_peer:
        from cyclesim.checks.zigzag import peer

        files = zigzag_case("large", "issue", folder, sram_bits=bits, temporal_mapping=None)
        result = peer.run_zigzag(files.accelerator, files.workload, files.mapping)
        return tm_dict(result.temporal_mapping), "zigzag-dse search", Terms.of_model(result.latency)
    for setting in ("large", "small"):
        tm = zc.MEMSIZE_TEMPORAL_MAPPINGS[setting]
        files = zigzag_case(setting, "issue", folder, sram_bits=bits, temporal_mapping=tm)
        inputs = load_zigzag_inputs(
            files.accelerator, files.workload, files.mapping, files.temporal_mapping
        )
        try:
            from cyclesim.checks.zigzag.to_spec import import_zigzag
            from cyclesim.schedule import build_plan

            spec = import_zigzag(inputs)
            build_plan(spec.architecture, spec.workload, spec.mapping)  # capacity check
        except CyclesimError:
            continue
        return tm, f"reference {setting} mapping", None
    raise SystemExit(f"neither reference mapping fits SRAM sizes {bits}")


def replay_point(job: tuple[tuple[int, int, int], dict, str, Terms | None]) -> Point:
    """Replay one point's mapping; the ZigZag column is zigzag-dse's terms or our model's."""
    bits, tm, source, theirs = job
    with tempfile.TemporaryDirectory() as tmp:
        files = zigzag_case("large", "issue", tmp, sram_bits=bits, temporal_mapping=tm)
        inputs = load_zigzag_inputs(
            files.accelerator, files.workload, files.mapping, files.temporal_mapping
        )
        zz = theirs or Terms.of_model(evaluate(inputs))
        res = replay_case(inputs)
    groups = stall_groups(res, "compute")
    return Point(
        *bits, source, order_text(tm), zz.latency_total, zz.onloading, zz.offloading,
        res.cycles, res.onload_cycles, res.stall_cycles, res.offload_cycles,
        groups[0].short() if groups else "",
    )  # fmt: skip


def plot(points: list[Point], path: Path, zz_label: str) -> None:
    """Two panels against total SRAM size: latency, and onload/offload cycles."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [p.total_kib for p in points]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 8), sharex=True)
    top.plot(x, [p.replay_cycles for p in points], "o-", label="replay (cyclesim)")
    top.plot(x, [p.zigzag_latency for p in points], "s--", label=zz_label)
    top.set_ylabel("latency (cycles)")
    top.set_title("GEMM 100x100x100, 32 b, Eyeriss-like 4x4: latency vs SRAM size")
    top.legend()
    top.grid(True, alpha=0.3)
    bottom.plot(x, [p.replay_onload for p in points], "o-", label="replay onload")
    bottom.plot(x, [p.replay_offload for p in points], "^-", label="replay offload")
    bottom.plot(x, [p.zigzag_onloading for p in points], "s--", label=f"{zz_label} onloading")
    bottom.plot(x, [p.zigzag_offloading for p in points], "v--", label=f"{zz_label} offloading")
    bottom.set_xscale("log")
    bottom.set_yscale("symlog", linthresh=100)
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel("sram_8KB + sram_64KB + sram_1M (KiB)")
    bottom.set_ylabel("load cycles")
    bottom.legend()
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Run the sweep; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory for sweep.csv and sweep.png")
    parser.add_argument("--points", type=int, default=7, help="number of SRAM sizes (at least 6)")
    parser.add_argument(
        "--jobs", type=int, default=min(2, os.cpu_count() or 1), help="parallel replays"
    )
    parser.add_argument(
        "--no-zigzag", action="store_true", help="do not run zigzag-dse even if installed"
    )
    args = parser.parse_args(argv)
    if args.points < 2:
        parser.error("--points must be at least 2")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    use_peer, why = not args.no_zigzag, "not asked for (--no-zigzag)"
    if use_peer:
        from cyclesim.checks.zigzag import peer

        try:
            peer.zigzag_version()
        except PeerUnavailable as exc:
            use_peer, why = False, str(exc)
    if not use_peer:
        print(
            f"zigzag-dse missing ({why}): reference mappings and our model of ZigZag 3.9.1",
            file=sys.stderr,
        )
    start = time.perf_counter()
    jobs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, bits in enumerate(sizes(args.points)):
            tm, source, theirs = choose(bits, Path(tmp) / str(i), use_peer)
            jobs.append((bits, tm, source, theirs))
    print(f"replaying {len(jobs)} points, {args.jobs} at a time ...", file=sys.stderr, flush=True)
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            points = list(pool.map(replay_point, jobs))
    else:
        points = [replay_point(job) for job in jobs]
    zz_label = "zigzag-dse 3.9.1" if use_peer else "ZigZag 3.9.1 model (ours)"
    with (out / "sweep.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=[*asdict(points[0]), "total_kib"])
        writer.writeheader()
        for p in points:
            writer.writerow({**asdict(p), "total_kib": p.total_kib})
    plot(points, out / "sweep.png", zz_label)
    head = f"{'KiB':>9}{'replay':>10}{'onload':>8}{'offload':>8}{zz_label:>28}{'onl.':>6}  mapping (O's levels)"
    lines = [head]
    for p in points:
        lines.append(
            f"{p.total_kib:>9.1f}{p.replay_cycles:>10,}{p.replay_onload:>8,}{p.replay_offload:>8,}"
            f"{p.zigzag_latency:>28,g}{p.zigzag_onloading:>6g}  {p.loop_order}"
        )
    print("\n".join(lines))
    (out / "sweep.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote sweep.csv, sweep.txt, sweep.png to {out} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
