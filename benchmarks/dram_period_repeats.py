"""Does a DRAM-touching period repeat? What fast-forward through DRAM traffic would need.

Bandwidth-only, fast-forward skips the iterations of a loop whose state repeats: on the
memory-size example the B20 loop, a period of 125 PE segments (601 or 625 cycles). With DDR4
each of these iterations issues DRAM requests, and fast-forward never fires
(engine/fastforward_dram.py). A jump over K such periods that issues their DRAM calls to the
timer is exact only if every skipped period's calls get the observed period's answers shifted
by whole periods (the rest then follows by induction). This replays the case in full with the
pure timer's issue() calls recorded and counts, per period (PE segments g = 0, N, 2N, ...):

  * consecutive periods whose calls repeat shifted: relative arrivals, direction, requester,
    bytes, stream index, answers (end, delays with cause and opener; the rows the delays name
    are left out, a looser test than exactness needs), and the period's length; the longest
    run of such repeats (the longest jump possible) and the distinct kinds of period;
  * periods as long as the bandwidth-only replay's (the DRAM's variation absorbed);
  * the timeline entries of the nodes read from or written to DRAM, against all.

Variants: the DDR4 preset as the architecture gives it, the same with refreshes pushed out
(tREFI at its maximum: what the rows alone do), and HBM2 (HBM2_8Gb_x128) in its place.
Measured when fast-forward through DRAM was judged (docs/dram_causes.md, "Engine time").

    PYTHONPATH=. python benchmarks/dram_period_repeats.py [--segments 125]
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
from collections import Counter

import yaml
from bench_dram import CASES, ROOT

from cyclesim.dram import native as dram_native
from cyclesim.dram import timer
from cyclesim.engine.run import replay_plan
from cyclesim.schedule import build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload
from cyclesim.spec.arch import architecture_from_dict

CASE = "eyeriss_like GEMM 100^3, small SRAMs (ZigZag memsize)"
MAX_TREFI = 1 << 20  # the largest tREFI a DramConfig takes (dram/config.py)
VARIANTS = ("DDR4", "DDR4, refresh pushed out", "HBM2")


class RecordingTimer(timer.DramTimer):
    """The pure-Python timer with each issue() call logged: (start, is write, requester, bytes,
    stream index, answer). Cut runs are logged as issued, and again as issued after the cut."""

    recorded: list = []

    def issue(self, runs, is_write, who, start, stream=None, ahead=None):
        out = super().issue(runs, is_write, who, start, stream, ahead)
        size = sum(n * count for _, n, _, count in runs)
        self.recorded.append(
            (start, is_write, who, size, None if stream is None else stream[1], out)
        )
        return out


def plan_of(variant: str | None):
    """The memory-size example's plan: bandwidth-only (None) or with a DRAM variant."""
    plain, ddr4, workload_path, mapping_path = CASES[CASE]
    workload = load_workload(str(ROOT / workload_path))
    if variant == "HBM2":
        data = yaml.safe_load((ROOT / ddr4).read_text())
        data["memories"][0]["dram"] = {"config": "HBM2_8Gb_x128", "channels": 1}
        arch = architecture_from_dict(data, "HBM2")
    else:
        arch = load_architecture(str(ROOT / (ddr4 if variant else plain)))
    plan = build_plan(arch, workload, load_mapping(str(ROOT / mapping_path), arch, workload))
    if variant == "DDR4, refresh pushed out":
        dram = tuple((n, c.with_changes(tREFI=MAX_TREFI), p, m) for n, c, p, m in plan.dram)
        plan = dataclasses.replace(plan, dram=dram)
    return plan


def period_starts(raw, segments: int) -> list[int]:
    """Cycle each period starts at: PE segments g = 0, N, 2N, ... (the traced pe_segments)."""
    return [start for start, _, _, g in raw.rec.pe_segments if g % segments == 0]


def period_kinds(calls: list, starts: list[int]) -> list[tuple]:
    """Per period: its length and its DRAM calls relative to its start (rows left out)."""
    per: list[list] = [[] for _ in starts]
    for start, is_write, who, size, index, (end, delays) in calls:
        i = bisect.bisect_right(starts, start) - 1
        t = starts[i]
        answer = (end - t, tuple((a - t, z - t, cause, str(o)) for a, z, cause, o, _ in delays))
        per[i].append((start - t, is_write, str(who), size, index, answer))
    return [(b - a, tuple(p)) for a, b, p in zip(starts, starts[1:], per, strict=False)]


def timeline_share(raw) -> tuple[int, int]:
    """Timeline entries of the nodes read from or written to DRAM, and of all nodes."""
    linked = {i for i, a in enumerate(raw.plan.dram_nodes) if a is not None}
    mine = every = 0
    for tls in (raw.rec.fill_tl, raw.rec.drain_tl):
        for i, tl in enumerate(tls):
            n = len(tl) if tl is not None else 0
            every += n
            mine += n if i in linked else 0
    return mine, every


def report(variant: str, segments: int, plain_lengths: list[int]) -> None:
    """Replay one variant in full with its calls recorded; print what repeats."""
    RecordingTimer.recorded = calls = []
    chosen, dram_native.DramTimer = dram_native.DramTimer, RecordingTimer
    try:
        raw = replay_plan(plan_of(variant), progress=False, fast_forward=False, trace=True)
    finally:
        dram_native.DramTimer = chosen
    kinds = period_kinds(calls, period_starts(raw, segments))
    same = [a == b for a, b in zip(kinds, kinds[1:], strict=False)]
    runs, run = [], 0
    for s in same:
        run = run + 1 if s else 0
        runs.append(run)
    absorbed = sum(k[0] == p for k, p in zip(kinds, plain_lengths, strict=False))
    mine, every = timeline_share(raw)
    print(f"{variant}: {raw.cycles:,} cycles, {len(calls):,} DRAM calls, {raw.rec.dram_counts}")
    print(f"  {len(kinds)} periods of {segments} segments, {len(set(kinds))} kinds")
    print(
        f"  consecutive periods whose DRAM calls repeat shifted: {sum(same)} of {len(same)}"
        f" (longest run {max(runs, default=0)})"
    )
    print(f"  periods as long as bandwidth-only's: {absorbed} of {len(kinds)}")
    print(f"  timeline entries of DRAM-linked nodes: {mine:,} of {every:,}\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=125, help="PE segments per period")
    args = ap.parse_args()
    plain = replay_plan(plan_of(None), progress=False, fast_forward=False, trace=True)
    starts = period_starts(plain, args.segments)
    lengths = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    print(f"{CASE}, bandwidth-only: {plain.cycles:,} cycles, period lengths {Counter(lengths)}\n")
    for variant in VARIANTS:
        report(variant, args.segments, lengths)


if __name__ == "__main__":
    main()
