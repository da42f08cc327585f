"""Attribution walks a storage node's fast-forward repeats as repeats: tpu_gemm's onload, where
B and A take turns on the one DRAM read port burst by burst (examples/tpu_gemm/README.md),
keeps its stall spans as one copy and a repeat, and they are span for span the spans of the
replay that simulated every burst."""

from __future__ import annotations

from replay_helpers import ROOT

from cyclesim.engine import replay_plan
from cyclesim.results import build_result
from cyclesim.results.spans import SpanList, SpanRepeat
from cyclesim.schedule import ReusePolicy, build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload


def tpu_gemm(fast_forward: bool):
    arch = load_architecture(str(ROOT / "hw_models/tpu_like.yaml"))
    workload = load_workload(str(ROOT / "examples/tpu_gemm/workload.yaml"))
    mapping = load_mapping(str(ROOT / "examples/tpu_gemm/mapping.yaml"), arch, workload)
    plan = build_plan(arch, workload, mapping, ReusePolicy("retain"), False)
    return build_result(replay_plan(plan, fast_forward=fast_forward, progress=False))


def stored(spans: SpanList) -> int:
    """StallSpan objects a SpanList holds (a repeat's copies not counted)."""
    return sum(stored(p.spans) if isinstance(p, SpanRepeat) else len(p) for p in spans.pieces)


def test_the_onload_contention_stays_a_repeat_and_equals_every_burst_simulated():
    fast, full = tpu_gemm(True), tpu_gemm(False)
    # the onload alternates B and A on DRAM.rd for 2 x 16,384 one-cycle bursts: one
    # contention span per burst, 32,768 of them when every burst is simulated ...
    onload = [s for s in full.spans if s.phase == "onload"]
    assert len(onload) >= 32_768
    # ... and fast-forward's spans are the same, in the same order, with every field equal
    assert list(fast.spans) == list(full.spans)
    assert fast.stall_rows == full.stall_rows
    # while the fast-forwarded result keeps them as a few copies and a repeat
    assert stored(fast.spans) < 1_000
