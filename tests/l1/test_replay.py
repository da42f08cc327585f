"""Replaying op trees: hand-derived placements per policy, per-op figures, the clash case."""

from __future__ import annotations

from pathlib import Path

import pytest

from cyclesim.l1 import FailureKind, L1Config, load_l1_config, load_ops, load_ops_text, replay
from cyclesim.l1.events import Action
from cyclesim.l1.metrics import op_reports, summary

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "l1_placement"
SMALL = L1Config(l1_size_bytes=8192, unreserved_base_bytes=1024, alignment_bytes=32)

# comp owns t (1024 B), calls leaf_a (1024 B of CBs) to fill t, then leaf_b (512 B of CBs)
# to write its output into the model's x (512 B).
TINY = """
ops:
  leaf_a:
    circular_buffers: [{name: cb, page_size_bytes: 256, num_pages: 4}]
    outputs: [{name: out, size_bytes: 1024, page_size_bytes: 256}]
  leaf_b:
    circular_buffers: [{name: cb, page_size_bytes: 256, num_pages: 2}]
    outputs: [{name: out, size_bytes: 512, page_size_bytes: 256}]
  comp:
    intermediates: [{name: t, size_bytes: 1024, page_size_bytes: 256}]
    outputs: [{name: out, size_bytes: 512, page_size_bytes: 256}]
    steps:
      - alloc: t
      - {call: leaf_a, outputs: {out: t}}
      - call: leaf_b
      - free: t
model:
  tensors: [{name: x, size_bytes: 512, page_size_bytes: 256}]
  steps: [{alloc: x}, {call: comp, outputs: {out: x}}, {free: x}]
"""


def _addresses(result):
    return {e.name: e.address for e in result.events if e.action is Action.ALLOC}


def test_heap_policy_places_intermediates_top_down_and_cbs_at_the_base():
    result = replay(load_ops_text(TINY), SMALL, "heap")
    # x: [8192 - 512, 8192) = 7680; t below it: 7680 - 1024 = 6656;
    # each program's CBs start at the unreserved base 1024.
    assert _addresses(result) == {
        "x": 7680,
        "comp:t": 6656,
        "comp/leaf_a:cb": 1024,
        "comp/leaf_b:cb": 1024,
    }
    comp = op_reports(result)[0]
    # not one number: CB peak 1024 (leaf_a) + heap peak 1024 (t), in two places
    assert (comp.requirement_bytes, comp.contiguous) == (2048, False)
    assert (comp.cb_peak_bytes, comp.peak_cb_end, comp.lowest_heap_address) == (1024, 2048, 6656)
    assert comp.min_headroom_bytes == 6656 - 2048
    assert result.failure is None and result.empty_at_end


def test_stack_policy_puts_intermediates_beside_cbs_and_shifts_cb_offsets():
    result = replay(load_ops_text(TINY), SMALL, "stack")
    # t sits at the base [1024, 2048); leaf_a's CBs are shifted above it: [2048, 3072);
    # leaf_b's likewise [2048, 2560); x stays on the heap at 7680.
    assert _addresses(result) == {
        "x": 7680,
        "comp:t": 1024,
        "comp/leaf_a:cb": 2048,
        "comp/leaf_b:cb": 2048,
    }
    reports = {r.path: r for r in op_reports(result)}
    # comp's requirement is one contiguous number: t (1024) + the deepest callee (1024) = 2048
    assert (reports["comp"].requirement_bytes, reports["comp"].contiguous) == (2048, True)
    assert reports["comp/leaf_a"].requirement_bytes == 1024
    assert reports["comp/leaf_b"].requirement_bytes == 512
    # t's free only marks it dead: it is popped (LIFO) when comp returns
    frees = [e.name for e in result.events if e.action is Action.FREE]
    assert frees == ["comp/leaf_a:cb", "comp/leaf_b:cb", "comp:t", "x"]
    assert result.empty_at_end


def test_pool_policy_reserves_the_peak_of_a_top_level_op_on_entry():
    result = replay(load_ops_text(TINY), SMALL, "pool")
    # comp's pool = its intermediates' span = 1024, on the heap under x: [6656, 7680);
    # t takes the whole pool; CBs at the base.
    assert _addresses(result) == {
        "x": 7680,
        "comp:pool": 6656,
        "comp:t": 6656,
        "comp/leaf_a:cb": 1024,
        "comp/leaf_b:cb": 1024,
    }
    comp = op_reports(result)[0]
    assert (comp.pool_bytes, comp.requirement_bytes, comp.contiguous) == (1024, 2048, False)
    assert result.empty_at_end


def test_heap_fragmentation_is_reported_over_time():
    text = TINY.replace(
        "steps: [{alloc: x}, {call: comp, outputs: {out: x}}, {free: x}]",
        "tensors: [{name: x, size_bytes: 512, page_size_bytes: 256},"
        " {name: y, size_bytes: 512, page_size_bytes: 256}]\n"
        "  steps: [{alloc: y}, {alloc: x}, {free: y}, {call: comp, outputs: {out: x}}, {free: x}]",
    ).replace("  tensors: [{name: x, size_bytes: 512, page_size_bytes: 256}]\n", "")
    result = replay(load_ops_text(text), SMALL, "heap")
    # y [7680, 8192), x [7168, 7680), y freed: free = [1024, 7168) + [7680, 8192)
    # = 6144 + 512; largest 6144; fragmentation 1 - 6144/6656
    after_free = next(e for e in result.events if e.action is Action.FREE and e.name == "y")
    assert after_free.snapshot.total_free_bytes == 6656
    assert after_free.snapshot.largest_free_bytes == 6144
    assert after_free.snapshot.fragmentation == pytest.approx(1 - 6144 / 6656)
    assert summary(result).worst_fragmentation >= after_free.snapshot.fragmentation


def test_clash_example_reports_the_buffer_pushed_into_the_cb_region():
    ops = load_ops(EXAMPLES / "clash_fragmentation.yaml")
    config = load_l1_config(ROOT / "hw_models" / "tensix_like.yaml")
    heap = replay(ops, config, "heap")
    err = heap.failure
    # derivation in the example's header: context lands at 872,448 below the held scores and
    # probs; linear_ff1_wide's 884,736 B of CBs end at 103,712 + 884,736 = 988,448.
    assert err is not None and err.reason is FailureKind.CLASH
    assert (err.lowest_heap_buffer, err.lowest_heap_address) == ("context", 872448)
    assert err.cb_region_end == 988448 and err.op == "mlp_wide/linear_ff1_wide"
    assert "L1 buffer allocated at 872448 and static circular buffer region ends at 988448" in str(
        err
    )
    stack = replay(ops, config, "stack")
    assert stack.failure is None and stack.empty_at_end
    mlp = next(r for r in op_reports(heap) if r.path == "mlp_wide")
    # the requirement of the op that never finished is read from an unbounded replay
    assert not mlp.completed and mlp.requirement_bytes == 884736 + 2 * 147456


@pytest.mark.parametrize(
    "name", ["softmax", "layer_norm", "attention", "gelu_mlp", "deep_composite"]
)
def test_shipped_examples_fit_under_stack_and_return_l1_to_empty(name):
    ops = load_ops(EXAMPLES / f"{name}.yaml")
    config = load_l1_config(ROOT / "hw_models" / "tensix_like.yaml")
    result = replay(ops, config, "stack")
    assert result.failure is None
    assert all(r.contiguous for r in op_reports(result))


def test_deep_composite_is_at_least_three_composites_deep():
    ops = load_ops(EXAMPLES / "deep_composite.yaml")
    result = replay(ops, load_l1_config(ROOT / "hw_models" / "tensix_like.yaml"), "heap")
    assert max(inst.depth for inst in result.instances) >= 4
    paths = {inst.path for inst in result.instances}
    assert "encoder_layer/attention_block/attention/softmax/reduce_max" in paths
