"""Stream's schedule term by term, on a hand-written runner payload (no Stream needed): each
row's re-derivation and the mechanism it names. Numbers are those of stream.md 5.1 P4
(eyeriss_like_dual_core, two convs fused by rows, 4 rows per core per step)."""

from __future__ import annotations

from cyclesim.checks.stream.arithmetic import compare
from cyclesim.checks.stream.schedule import parse_run


def _transfer(
    name, tensor, kind, slot, sources, targets, bits, moved, share, route, reuse, charged
):
    bus = {"link": "Bus(0,1,2,3,4, bw=128)", "bandwidth": 128, "share": share, "load": 1}
    return {
        "name": name, "tensor": tensor, "tensor_bits": bits, "type": kind, "slot": slot,
        "sources": sources, "targets": targets, "links": [bus], "moved_bits": moved,
        "route_cycles": route, "reuse_factor": reuse, "charged_cycles": charged,
    }  # fmt: skip


def _node(name, slot, cycles):
    core = {
        "latency_cycles": cycles,
        "energy_pj": 1.0,
        "metadata": {"drain_cycles": 0},
        "zigzag": None,
    }
    return {
        "name": name, "type": "Conv", "slot": slot, "runtime_cycles": cycles,
        "active_runtime_cycles": cycles, "cores": [{**core, "core": 0}, {**core, "core": 1}],
    }  # fmt: skip


def _payload(**group_changes):
    group = {
        "iterations": 4,
        "layers": ["Conv1", "Conv2"],
        "latency": {"total": 73006, "per_iteration": 20233, "overlap": 2867, "fill": 675},
        "fill_parts": {"drain": 0, "warmup": 531},
        "slot_latencies": {"0": 0, "1": 704, "2": 72, "3": 3506, "4": 43, "5": 13860, "6": 2048},
        "nodes": [_node("Conv1", 3, 3506), _node("Conv2", 5, 13860)],
        "transfers": [
            _transfer(
                "Transfer(input)",
                "input",
                "MEM_TO_COMPUTE",
                1,
                [4],
                [0, 1],
                40960,
                45056,
                1,
                352,
                1,
                352,
            ),
            _transfer(
                "Transfer(weights_1)",
                "weights_1",
                "MEM_TO_COMPUTE",
                2,
                [4],
                [0, 1],
                18432,
                18432,
                1,
                144,
                4,
                36,
            ),
            _transfer(
                "Transfer(conv1_out)",
                "conv1_out",
                "COMPUTE_TO_COMPUTE",
                4,
                [0, 1],
                [0, 1],
                65536,
                16384,
                0.25,
                32,
                1,
                32,
            ),
        ],
        "port_slot_demand": [
            {"port": "4.dram.rw_port_1", "slot": 1, "bits": 45056, "rate": 64},
            {"port": "4.dram.rw_port_1", "slot": 2, "bits": 4608, "rate": 64},
            {"port": "0.sram_1M.rw_port_1", "slot": 4, "bits": 16384, "rate": 384},
            {"port": "4.dram.rw_port_1", "slot": 6, "bits": 131072, "rate": 64},
        ],
        "port_iteration_demand": [{"port": "4.dram.rw_port_1", "bits": 254464, "rate": 64}],
        "link_busy_per_iteration": {"Bus(0,1,2,3,4, bw=128)": 420},
        "idle_latency": {"Core(0, zigzag.compute)": 2867, "Core(1, zigzag.compute)": 2867},
        "performance": {"energy": {"total_pj": 90999120}},
        "solve_status": "OPTIMAL",
    }
    group.update(group_changes)
    return {
        "stream_version": "2.1.1", "zigzag_version": "3.9.1", "total_cycles": 73006,
        "group_cycles": [73006], "dispatch_cycles": 0, "groups": [group], "seconds": 1.0,
    }  # fmt: skip


def _rows(**changes):
    return {(r.section, r.item): r for r in compare(parse_run(_payload(**changes)), ())}


def test_total_and_group_arithmetic_hold():
    rows = _rows()
    assert rows[("total", "cycles")].difference == 0
    # 4 x 20233 - 3 x 2867 + 675 = 73006
    assert rows[("group", "total = N x L - (N-1) x overlap + fill")].check == 73006
    # the slots add up to the iteration: 704 + 72 + 3506 + 43 + 13860 + 2048 = 20233
    assert rows[("group", "iteration latency")].check == 20233
    # busiest core: 20233 - 2867 idle = 17366 = the interval
    interval = rows[("group", "interval (busiest: Core(0, zigzag.compute))")]
    assert interval.stream == interval.check == 17366 and not interval.mechanism


def test_fill_re_added_from_its_parts():
    # resident weights_1 (reuse 4): its first fetch at link speed, 18432 / 128 = 144; warm-up 531
    fill = _rows()[("group", "fill")]
    assert fill.check == 144 + 531 == fill.stream and fill.mechanism == ""
    off = _rows(fill_parts={"drain": 0, "warmup": 0})[("group", "fill")]
    assert off.difference == -531 and "resident fill 144" in off.mechanism


def test_slot_binding_terms():
    rows = _rows()
    # slot 1: the DRAM port, 45056 b / 64 b/cycle = 704, longer than the bus's 352
    assert rows[("slot", "slot 1: port 4.dram.rw_port_1 (45,056 b / 64 b/cycle)")].difference == 0
    # slot 4: ceil(16384 / 384) = 43 on core 0's SRAM port binds, not the 32-cycle halo
    assert (
        rows[("slot", "slot 4: port 0.sram_1M.rw_port_1 (16,384 b / 384 b/cycle)")].difference == 0
    )
    assert rows[("slot", "slot 5: compute Conv2")].check == 13860


def test_slot_longer_than_every_term_is_named():
    slots = {"0": 0, "1": 704, "2": 72, "3": 3506, "4": 43, "5": 13900, "6": 2048}
    row = _rows(slot_latencies=slots)[("slot", "slot 5: compute Conv2")]
    assert row.difference == -40 and "+40 cycles off its largest term" in row.mechanism


def test_halo_charged_at_its_share_of_the_route():
    # 16384 halo bits on the 128 b/cycle bus take 128 cycles; Stream charges 16384 x 0.25 / 128 = 32
    row = _rows()[("transfer", "Transfer(conv1_out) (slot 4)")]
    assert (row.stream, row.check) == (32, 128)
    assert row.mechanism.startswith("a halo charged at its share of the route")


def test_amortised_transfer_names_its_reuse():
    # one fetch of weights_1 serves 4 iterations: 144 / 4 = 36 per iteration, as Stream charges
    row = _rows()[("transfer", "Transfer(weights_1) (slot 2)")]
    assert row.stream == row.check == 36 and "one firing serves 4 iterations" in row.mechanism


def test_link_busy_names_the_halo():
    # per iteration at full width: 352 + 144/4 + 128 = 516 against Stream's busy time
    row = _rows()[("link", "Bus(0,1,2,3,4, bw=128) busy per iteration")]
    assert row.check == 516 and "Transfer(conv1_out)" in row.mechanism


def test_every_differing_row_names_a_mechanism():
    for rows in (_rows(), _rows(fill_parts={"drain": 0, "warmup": 0})):
        for row in rows.values():
            if row.difference not in (None, 0):
                assert row.mechanism and "unexplained" not in row.mechanism, row
