"""Stream's schedule replayed: the as-scheduled placement on hand-built inputs (derivations in
the comments), and, against the real Stream (cached), the chip import of the examples."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from cyclesim.checks.stream.replay import as_scheduled
from cyclesim.checks.stream.schedule import parse_run
from cyclesim.errors import PeerUnavailable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "stream"


@dataclass(frozen=True)
class _Hop:
    """A hop alone on an 8-bit-per-cycle bus, one 64-bit burst, no latency."""

    bits: int = 64
    burst_bits: int = 64
    latency: int = 0
    keys: tuple[str, ...] = ("bus",)

    def burst_cycles(self, bits: int) -> int:
        return -(-bits // 8)


def _case(interval: int):
    """Two iterations of [slot 1: transfer x on the bus | slot 2: A on core c0]; every step of A
    replays in 8 cycles and every fetch of x takes 64 / 8 = 8 cycles."""
    node = {
        "name": "A",
        "type": "Conv",
        "slot": 2,
        "runtime_cycles": 5,
        "active_runtime_cycles": 5,
        "cores": [
            {"core": 0, "latency_cycles": 5, "energy_pj": None, "metadata": {}, "zigzag": None}
        ],
    }
    transfer = {"name": "Transfer(x)", "tensor": "x", "tensor_bits": 64, "type": "MEM_TO_COMPUTE",
                "slot": 1, "sources": [9], "targets": [0], "moved_bits": 64, "route_cycles": 4,
                "reuse_factor": 1, "charged_cycles": 4,
                "links": [{"link": "Bus", "bandwidth": 16, "share": 1, "load": 1}]}  # fmt: skip
    group = {
        "iterations": 2, "layers": ["A"], "slot_latencies": {"1": 4, "2": 5},
        "latency": {"total": 9 + interval, "per_iteration": 9, "overlap": 9 - interval, "fill": 0},
        "nodes": [node], "transfers": [transfer], "port_slot_demand": [],
        "port_iteration_demand": [], "link_busy_per_iteration": {}, "idle_latency": {},
        "solve_status": "OPTIMAL",
    }  # fmt: skip
    run = parse_run(
        {
            "stream_version": "2.1.1",
            "zigzag_version": "3.9.1",
            "total_cycles": 9 + interval,
            "groups": [group],
        }  # fmt: skip
    )
    steps = [SimpleNamespace(id=i, layer="A", core="c0", index=i) for i in (0, 1)]
    transfers = [
        SimpleNamespace(id=i, tensor="x", for_steps=(i,), after_step=None, hops=(i,), bits=64)
        for i in (0, 1)
    ]
    plan = SimpleNamespace(
        steps=steps, transfers=transfers, hops=[_Hop(), _Hop()],
        workload=SimpleNamespace(tensors=[SimpleNamespace(name="x")]),
    )  # fmt: skip
    chip_run = SimpleNamespace(plan=plan, step_start=[0, 100], step_end=[8, 108])
    return run, chip_run


def test_iterations_released_at_the_interval_fill_the_gaps():
    # interval 10: iteration 0 = x [0, 8) on the bus, A [8, 16) on c0; iteration 1 is released
    # at 10: x [10, 18) (the bus is free), A [18, 26) after its own slot 1. Total 26.
    scheduled = as_scheduled(*_case(10))
    spans = [(s.iteration, s.slot, s.start, s.end, s.waited_for) for s in scheduled.slots]
    assert spans == [(0, 1, 0, 8, ""), (0, 2, 8, 16, ""), (1, 1, 10, 18, ""), (1, 2, 18, 26, "")]
    assert scheduled.total == 26
    assert scheduled.busy == {"bus": 16, "c0": 16}


def test_a_slot_waits_for_the_resource_the_previous_iteration_holds():
    # interval 4: iteration 1 is released at 4 but the bus carries iteration 0's x until 8, so its
    # x runs [8, 16), named as waiting for the bus; A then runs [16, 24) (c0 is free at 16).
    scheduled = as_scheduled(*_case(4))
    second = [s for s in scheduled.slots if s.iteration == 1]
    assert [(s.start, s.end, s.waited_for) for s in second] == [(8, 16, "bus"), (16, 24, "")]
    assert scheduled.total == 24


def _check(accelerator: str, mapping: str):
    from cyclesim.checks.stream.check import run_check

    try:
        return run_check(
            str(EXAMPLES / accelerator), str(EXAMPLES / "two_conv.onnx"), str(EXAMPLES / mapping)
        )
    except PeerUnavailable as error:
        pytest.skip(f"Stream unavailable: {error}")


@pytest.mark.peer
@pytest.mark.parametrize(
    ("accelerator", "mapping"),
    [
        ("tpu_like_quad_core.yaml", f"quad_{m}.yaml")
        for m in ("layer_by_layer", "fused_rows", "pipeline")
    ]
    + [
        ("eyeriss_like_dual_core.yaml", f"dual_{m}.yaml")
        for m in ("layer_by_layer", "fused_rows", "pipeline")
    ],
    ids=lambda v: Path(v).stem,
)
def test_examples_replay_both_ways_and_name_every_difference(accelerator, mapping):
    check = _check(accelerator, mapping)
    assert check.replays is not None, check.replay_missing
    rows = [r for r in check.rows if r.section == "replay"]
    assert rows[0].item == "total cycles"
    assert rows[0].as_scheduled == check.replays.as_scheduled.total > 0
    assert rows[0].dependency == check.replays.result.cycles > 0
    for row in check.rows:
        if row.difference not in (None, 0):
            assert row.mechanism and "unexplained" not in row.mechanism, row


@pytest.mark.peer
def test_stream_steps_outside_its_cores_and_the_import_keeps_that_order():
    """quad fused rows: each iteration covers 8 rows over 4 cores (2 each), so every step needs
    halo rows from a neighbour core: the import splits an inner rank (D2i, 4 parts of 2 rows) and
    steps an outer one (D2o), and conv1_out moves between cores in every iteration."""
    check = _check("tpu_like_quad_core.yaml", "quad_fused_rows.yaml")
    plan = check.replays.result.run.plan
    conv1 = next(layer for layer in plan.mapping.layers if layer.einsum == "Conv1")
    assert conv1.split == (("D2i", 4),) and conv1.tile == (("D2o", 1),)
    halo_steps = {
        plan.steps[t.for_steps[0]].index for t in plan.transfers if t.tensor == "conv1_out"
    }
    assert halo_steps == {0, 1, 2, 3}


@pytest.mark.peer
def test_as_scheduled_interval_is_the_busiest_cores_replayed_slots():
    # dual fused rows: Stream releases an iteration every 17,366 cycles (core 0: Conv1 3,506 +
    # Conv2 13,860). Replayed, iteration k+1's Conv1 waits for core 0 until iteration k's Conv2
    # ends, then the slot barriers run Conv1 (5,881), the conv1_out halo slot and Conv2 (16,125).
    # (Conv1's step was 4,153 before bursts were counted where the bits meet: its weight
    # registers' fills now bind on rf_64B_W's 8-b write port, docs/exactness.md)
    # The halo slot moves two parts of 2 rows x 16 channels x 32 columns x 16 b = 16,384 bits
    # (Stream's own moved bits) at 128 b/cycle: 256 cycles, 128 in the last iteration (a
    # neighbour on one side only). The iterations finish 22,262, 22,262 and 22,134 cycles apart.
    check = _check("eyeriss_like_dual_core.yaml", "dual_fused_rows.yaml")
    interval = next(r for r in check.rows if r.section == "replay" and r.item == "interval")
    assert interval.stream == 17366
    assert interval.as_scheduled == round((2 * (5881 + 256 + 16125) + 5881 + 128 + 16125) / 3)
    assert "c0" in interval.mechanism


@pytest.mark.peer
def test_a_tile_zigzag_double_buffers_from_its_average_gets_one_slot_where_two_do_not_fit():
    # dual layer by layer, Conv2: ZigZag spreads 32 output columns and rows over a 14 x 12 array
    # as 3 steps of 32 / 3 each, so its O tile in sram_8KB averages 16 x 32/3 x 32/3 = 1,820
    # values and two fit (2 x 1,820 x 16 = 58,240 <= 65,536 bits); the largest real tile is
    # 16 x 14 x 12 = 2,688 values, two of which need 86,016 bits: the replay keeps one slot
    check = _check("eyeriss_like_dual_core.yaml", "dual_layer_by_layer.yaml")
    assert check.replays is not None, check.replay_missing
    row = next(r for r in check.rows if r.item == "one slot where ZigZag double-buffers")
    assert (
        "Conv2 on core 0: ZigZag double-buffers O in sram_8KB from its average tile (1,820 values), but two of its largest (2,688 values) need 86,016 bits where sram_8KB has 65,536"
        in row.mechanism
    )


@pytest.mark.peer
def test_clipped_boxes_move_the_tensors_real_bits():
    # dual layer by layer: every tensor goes through DRAM once, whole (input 8 x 32 x 32 x 16 b
    # = 131,072 b = 2,048 words of 64 b; conv1_out, 16 x 32 x 32 values, written once and read
    # once: 2 x 4,096 words; output, 32 x 32 x 32 values: 8,192 words; weights 16 x 8 x 9 and
    # 32 x 16 x 9 values: 288 and 1,152 words). The chip's boxes stop at each tensor's edge, so it moves exactly
    # Stream's words (unclipped, the 3 x 3 windows' border columns and rows moved too).
    check = _check("eyeriss_like_dual_core.yaml", "dual_layer_by_layer.yaml")
    words = {r.item.rsplit(" ", 1)[-1]: r for r in check.rows if r.item.startswith("DRAM words")}
    assert {t: (r.stream, r.as_scheduled) for t, r in words.items()} == {
        "input": (2048, 2048), "weights_1": (288, 288), "conv1_out": (8192, 8192),
        "weights_2": (1152, 1152), "output": (8192, 8192),
    }  # fmt: skip


@pytest.mark.peer
def test_busy_per_iteration_is_the_groups_share_of_the_run():
    # dual fused rows is one group of 4 iterations: each medium's busy time per iteration, both
    # ways, is its busy time over the run / 4; Stream's bus column is its link's busy time
    # per iteration (2,020: input 352 + weights_1 36 + conv1_out 32 + weights_2 576 + output 1,024)
    check = _check("eyeriss_like_dual_core.yaml", "dual_fused_rows.yaml")
    rows = {r.item: r for r in check.rows if r.section == "replay"}
    for medium in ("bus5", "dram.rw"):
        per, run = rows[f"{medium} busy per iteration"], rows[f"{medium} busy over the run"]
        assert per.as_scheduled * 4 == run.as_scheduled and per.dependency * 4 == run.dependency
    assert rows["bus5 busy per iteration"].stream == 352 + 36 + 32 + 576 + 1024
