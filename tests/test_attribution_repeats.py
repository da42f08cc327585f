"""Attribution walks a storage node's fast-forward repeats as repeats: tpu_gemm's onload, where
B and A take turns on the one DRAM read port burst by burst (examples/tpu_gemm/README.md),
keeps its stall spans as one copy and a repeat, and they are span for span the spans of the
replay that simulated every burst. The memory-size example's PE waits, repeats inside
repeats, are walked one copy per repeat."""

from __future__ import annotations

from replay_helpers import ROOT

from cyclesim.engine import replay_plan
from cyclesim.results import build_result
from cyclesim.results.spans import SpanList, SpanRepeat
from cyclesim.schedule import ReusePolicy, build_plan
from cyclesim.spec import load_architecture, load_mapping, load_workload


def tpu_gemm(fast_forward: bool):
    return result(
        (
            "hw_models/tpu_like.yaml",
            "examples/tpu_gemm/workload.yaml",
            "examples/tpu_gemm/mapping.yaml",
        ),
        fast_forward,
    )


def result(files: tuple[str, str, str], fast_forward: bool):
    arch = load_architecture(str(ROOT / files[0]))
    workload = load_workload(str(ROOT / files[1]))
    mapping = load_mapping(str(ROOT / files[2]), arch, workload)
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


def test_nested_repeats_are_walked_one_copy_each():
    # their spans equal the replay of every iteration's: test_fast_forward_identity
    files = (
        "hw_models/eyeriss_like_small.yaml",
        "examples/eyeriss_memsize/workload.yaml",
        "examples/eyeriss_memsize/mapping_small.yaml",
    )
    fast = result(files, True)
    # ~60,000 spans; walking copies 1, 2, 3 and K of every repeat (nested three deep) kept
    # 15,764 of them, one copy per repeat keeps about half
    assert len(fast.spans) > 60_000
    assert stored(fast.spans) < 9_000
