"""The ladder from Stream's arithmetic to the dependency-driven replay: on hand-built schedules
(derivations in the comments) and, against the real Stream (cached), on the examples."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cyclesim.checks.stream.ladder import Rung, build, ladder_rows
from cyclesim.checks.stream.schedule import parse_run
from cyclesim.errors import PeerUnavailable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "stream"


def _run(
    interval: int, *, share: float = 1.0, charged: float = 4, reuse: float = 1, port_bits: int = 0
):
    """Two iterations of [slot 1: transfer x on Bus (16 b/cycle) | slot 2: A on core 0 (5 cycles)].
    x moves 64 bits: 4 cycles at full width; Stream charges it `charged` cycles."""
    node = {"name": "A", "type": "Conv", "slot": 2, "runtime_cycles": 5,
            "active_runtime_cycles": 5,
            "cores": [{"core": 0, "latency_cycles": 5, "energy_pj": None, "metadata": {},
                       "zigzag": None}]}  # fmt: skip
    halo = share < 1
    transfer = {"name": "Transfer(x)", "tensor": "x", "tensor_bits": 256 if halo else 64,
                "type": "COMPUTE_TO_COMPUTE" if halo else "MEM_TO_COMPUTE", "slot": 1,
                "sources": [1] if halo else [9], "targets": [0], "moved_bits": 64,
                "route_cycles": charged * reuse, "reuse_factor": reuse, "charged_cycles": charged,
                "links": [{"link": "Bus", "bandwidth": 16, "share": share, "load": 1}]}  # fmt: skip
    first = max(charged, port_bits / 8)  # the DRAM port (core 9) moves 8 b/cycle
    latency = first + 5
    ports = (
        [{"port": "9.dram.rw_port_1", "slot": 1, "bits": port_bits, "rate": 8}] if port_bits else []
    )
    group = {"iterations": 2, "layers": ["A"], "slot_latencies": {"1": first, "2": 5},
             "latency": {"total": latency + interval, "per_iteration": latency,
                         "overlap": latency - interval, "fill": 0},
             "nodes": [node], "transfers": [transfer], "port_slot_demand": ports,
             "port_iteration_demand": [], "link_busy_per_iteration": {},
             "idle_latency": {"Core(0, zigzag.compute)": latency - 5}, "solve_status": "OPTIMAL"}  # fmt: skip
    return parse_run({"stream_version": "2.1.1", "zigzag_version": "3.9.1",
                      "total_cycles": latency + interval, "groups": [group]})  # fmt: skip


def test_stream_terms_replayed_as_barriers_equal_a_consistent_streams_total():
    # L = 4 + 5 = 9, interval 10: iteration 0 runs [0, 4) x, [4, 9) A; iteration 1 is released at
    # 10: [10, 14), [14, 19). Stream: N x L - (N-1) x overlap + fill = 18 - (9 - 10) + 0 = 19.
    run = _run(10)
    ladder = build(run, None, None)
    assert ladder.totals[Rung.STREAM_TERMS] == 19 == run.total_cycles
    # x is charged at full width already, nothing is amortised: every Stream-only rung agrees
    assert ladder.totals[Rung.FULL_WIDTH] == ladder.totals[Rung.AMORTISED_IN_FULL] == 19
    assert all(not r.mechanism for r in ladder_rows(run, ladder))


def test_an_overlap_longer_than_a_cores_idle_time_is_named():
    # interval 4 (overlap 5): iteration 1's x runs [4, 8) on the free bus, but A needs core 0,
    # which iteration 0 holds until 9 (its idle time per iteration is 4 < overlap 5): A runs
    # [9, 14). Stream says 13, the barriers give 14: named by the core it waited for.
    run = _run(4)
    ladder = build(run, None, None)
    assert run.total_cycles == 13 and ladder.totals[Rung.STREAM_TERMS] == 14
    row = ladder_rows(run, ladder)[0]
    assert row.difference == 1
    assert (
        "core 0 (iteration 1's slot 2 up to 1 cycles behind iteration 0's slot 2)" in row.mechanism
    )
    assert "Stream's overlap (5) exceeds core 0's idle time per iteration (4)" in row.mechanism


def test_a_halo_charged_at_its_share_of_the_route_is_the_full_width_rungs_difference():
    # the halo's 64 bits are charged at share 0.25: 1 cycle, where Bus needs 64 / 16 = 4.
    # Stream: L = 1 + 5 = 6, total 6 + 10 = 16 (consistent with its own terms: rung 0 = 16).
    # At full width slot 1 lasts 4: iteration 0 runs [0, 4), [4, 9); iteration 1, released at
    # 10, runs [10, 14), [14, 19): 19.
    run = _run(10, share=0.25, charged=1)
    ladder = build(run, None, None)
    assert ladder.totals[Rung.STREAM_TERMS] == 16 == run.total_cycles
    assert ladder.totals[Rung.FULL_WIDTH] == 19
    rows = ladder_rows(run, ladder)
    assert rows[0].mechanism == ""
    assert rows[1].difference == 3 and "halo charged at its share" in rows[1].mechanism


def test_an_amortised_fetch_moved_in_full_in_its_firing_iteration():
    # reuse 2: Stream charges x 4 / 2 = 2 cycles per iteration (fill 0 here). Moved in full:
    # iteration 0's slot 1 lasts 4 ([0, 4), A [4, 9)); iteration 1 (released at 10) has no x,
    # its slot 1 is empty: A runs [10, 15). Stream: L = 2 + 5 = 7, total 7 + 10 = 17; rung 2: 15.
    run = _run(10, charged=2, reuse=2)
    ladder = build(run, None, None)
    assert ladder.totals[Rung.STREAM_TERMS] == 17 == run.total_cycles
    assert ladder.totals[Rung.FULL_WIDTH] == 17
    assert ladder.totals[Rung.AMORTISED_IN_FULL] == 15
    assert "one firing serves 2 iterations" in ladder_rows(run, ladder)[2].mechanism


def test_an_amortised_fetchs_port_demand_moves_in_full_in_its_firing_iteration():
    # reuse 2, x from DRAM: Stream's port demand in slot 1 is 64 / 2 = 32 bits at 8 b/cycle = 4
    # cycles, more than x's charged 2: L = 4 + 5 = 9, total 9 + 10 = 19 (rung 0 agrees).
    # Moved in full: iteration 0's slot 1 is the port's 64 / 8 = 8 cycles, A runs [8, 13);
    # iteration 1 (released at 10) fetches nothing, but A waits for core 0 until 13: [13, 18).
    run = _run(10, charged=2, reuse=2, port_bits=32)
    ladder = build(run, None, None)
    assert ladder.totals[Rung.STREAM_TERMS] == 19 == run.total_cycles
    assert ladder.totals[Rung.FULL_WIDTH] == 19  # still amortised: 4 / 2 on the link, 4 on the port
    assert ladder.totals[Rung.AMORTISED_IN_FULL] == 18


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
        ("eyeriss_like_dual_core.yaml", "dual_pipeline.yaml"),
        ("eyeriss_like_dual_core.yaml", "dual_layer_by_layer.yaml"),
    ],  # fmt: skip
    ids=lambda v: Path(v).stem,
)
def test_stream_terms_equal_streams_total_where_its_accounting_is_consistent(accelerator, mapping):
    check = _check(accelerator, mapping)
    assert check.ladder.totals[Rung.STREAM_TERMS] == check.run.total_cycles


@pytest.mark.peer
def test_dual_fused_rows_names_the_dram_port_slots_streams_overlap_lets_collide():
    # Stream overlaps iteration k+1's weights_2 fetch (slot 3, 73,728 b / 64 = 1,152 cycles on the
    # DRAM port) with iteration k's output write (slot 6, 2,048 cycles on the same port): it bounds
    # the port by its busy time per iteration (704 + 72 + 1,152 + 2,048 < the interval 17,366),
    # not by where its slots fall. As barriers, slot 3 waits for slot 6 of the previous
    # iteration: 20,233 - 18,142 = 2,091 cycles (fractional: 2,090.7) more in every iteration,
    # 3 x 2,090.7 = 6,272 by the last.
    check = _check("eyeriss_like_dual_core.yaml", "dual_fused_rows.yaml")
    row = next(r for r in check.rows if r.section == "ladder")
    assert row.check > check.run.total_cycles
    assert row.check - check.run.total_cycles == 6272
    assert (
        "port 4.dram.rw_port_1 (iteration 3's slot 3 up to 6,272 cycles behind iteration 2's slot 6)"
        in row.mechanism
    )
    assert "not by where in the iteration its slots fall" in row.mechanism
    halo = next(r for r in check.rows if r.section == "ladder" and r.item.startswith("1."))
    assert "halo charged at its share" in halo.mechanism
    for r in check.rows:
        if r.section == "ladder" and r.difference:
            assert r.mechanism and "unexplained" not in r.mechanism


@settings(max_examples=60, deadline=None)
@given(
    terms=st.lists(st.integers(1, 50), min_size=1, max_size=5),
    iterations=st.integers(1, 5),
    fill=st.integers(0, 30),
    overlap=st.integers(0, 60),
)
def test_stream_terms_equal_streams_formula_when_the_overlap_leaves_every_core_free(
    terms, iterations, fill, overlap
):
    # slot s holds one node on its own core s: nothing is shared between slots, so an iteration
    # released k x interval after the first never waits for an earlier one as long as the
    # overlap is no longer than each core's idle time (L minus its own slot), and the barriers
    # give exactly N x L - (N-1) x overlap + fill
    latency = sum(terms)
    overlap = min(overlap, latency - max(terms))
    nodes = [{"name": f"n{s}", "type": "Conv", "slot": s, "runtime_cycles": c,
              "active_runtime_cycles": c,
              "cores": [{"core": s, "latency_cycles": c, "energy_pj": None, "metadata": {},
                         "zigzag": None}]} for s, c in enumerate(terms)]  # fmt: skip
    total = iterations * latency - (iterations - 1) * overlap + fill
    group = {"iterations": iterations, "layers": [n["name"] for n in nodes],
             "slot_latencies": {str(s): c for s, c in enumerate(terms)},
             "latency": {"total": total, "per_iteration": latency, "overlap": overlap,
                         "fill": fill},
             "nodes": nodes, "transfers": [], "port_slot_demand": [],
             "port_iteration_demand": [], "link_busy_per_iteration": {}, "idle_latency": {},
             "solve_status": "OPTIMAL"}  # fmt: skip
    run = parse_run({"stream_version": "2.1.1", "zigzag_version": "3.9.1",
                     "total_cycles": total, "groups": [group]})  # fmt: skip
    ladder = build(run, None, None)
    assert ladder.totals[Rung.STREAM_TERMS] == total
    assert not ladder_rows(run, ladder)[0].mechanism
