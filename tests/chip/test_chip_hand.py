"""Hand-derived chip replays (docs/multicore.md): each derivation in the comment. Every core
here is chip_helpers.TINY_CORE: a step of m iterations lasts m cycles."""

from __future__ import annotations

from chip_helpers import (
    CHAIN,
    LOCAL,
    MC,
    TINY_CORE,
    assert_sums,
    causes,
    einsum,
    layer,
    make_chip,
    run,
)

from cyclesim.chip import chip_from_dict


def test_transfer_over_one_link():
    """e1 (8 cycles) on c0 makes A (8 x 8 b = 64 b); link c0->c1 moves 16 b/cycle in 32-b
    bursts: 2 bursts x 2 cycles = 4, then latency 3: A lands on c1 at 8 + 4 + 3 = 15; e2 runs
    15..23. c1 waits 8 on c0's e1 (dependency), 4 on the link, 3 on its latency; c0, after its
    step, is offloading A for 7 cycles, then idle 8."""
    chip = make_chip(links=[{"name": "l", "cores": ["c0", "c1"], "width_bits": 16,
                             "latency_cycles": 3, "burst_bits": 32}])  # fmt: skip
    res = run(chip, [CHAIN[0](8), CHAIN[1](8)], [layer(CHAIN[0](8), ["c0"]), layer(CHAIN[1](8), ["c1"])],
              LOCAL)  # fmt: skip
    assert res.cycles == 23
    assert causes(res, "c1") == [
        ("onload", "dependency", "e1#0@c0", "c0", 8),
        ("onload", "latency", "l", None, 3),
        ("onload", "link", "l", None, 4),
    ]
    assert causes(res, "c0") == [
        ("idle", "idle", None, None, 8),
        ("offload", "latency", "l", None, 3),
        ("offload", "link", "l", None, 4),
    ]
    link = res.port("l")
    assert (link.busy_cycles, link.bits, link.bursts) == (4, 64, 2)
    assert_sums(res)
    # the report counts each core's steps in the singular too (it said "1 steps")
    from cyclesim.chip.report import chip_report

    report = chip_report(res)
    assert "core c0: 1 step, compute 8 " in report and "core c1: 1 step, compute 8 " in report


BUS = {"name": "b", "cores": ["c0", "c1", "c2"], "width_bits": 16, "burst_bits": 32,
       "latency_cycles": 1}  # fmt: skip


def test_two_transfers_contend_on_a_bus():
    """e1 (m = 16) split over c0 and c1: 8 cycles each, each makes 64 b of A for e2 on c2.
    Both ask for the bus at 8; round-robin over hop order: c0's burst 8..10, c1's 10..12,
    c0's 12..14, c1's 14..16; latency 1: c0's part lands at 15, c1's at 17, e2 (16 cycles)
    runs 17..33. c2's binding part is c1's (lands last): dependency 0..8, contention with
    c0's transfer 8..10 and 12..14, its own bursts 10..12 and 14..16, latency 16..17."""
    chip = make_chip(cores=("c0", "c1", "c2"), buses=[BUS])
    e1, e2 = CHAIN[0](16), CHAIN[1](16)
    res = run(chip, [e1, e2], [layer(e1, ["c0", "c1"], split=[("m", 2)]), layer(e2, ["c2"])], LOCAL)
    assert res.cycles == 33
    assert causes(res, "c2") == [
        ("onload", "contention", "b", "c0", 4),
        ("onload", "dependency", "e1#0@c1", "c1", 8),
        ("onload", "latency", "b", None, 1),
        ("onload", "link", "b", None, 4),
    ]
    competitors = {r.competitor for r in res.rows if r.core == "c2" and r.cause == "contention"}
    assert competitors == {"A[0:8] c0->c2"}
    # c0: its step 0..8, then its part moves 8..10, waits for c1's 10..12, moves 12..14,
    # latency 14..15; idle 15..33
    assert causes(res, "c0") == [
        ("idle", "idle", None, None, 18),
        ("offload", "contention", "b", "c1", 2),
        ("offload", "latency", "b", None, 1),
        ("offload", "link", "b", None, 4),
    ]
    assert (res.port("b").busy_cycles, res.port("b").bits) == (8, 128)  # 2 parts x 64 b
    assert_sums(res)


def test_multicast_to_two_cores():
    """e1 (8 cycles) on c0 makes A (64 b); e2 split over n on c1 and c2 both read all of A.
    Multicast: one bus transfer reaches both, 2 bursts 8..12, latency 1, lands at 13 on both;
    e2 (8 x 1 iterations) runs 13..21 on each. Without multicast, two transfers take turns:
    c1's 8..10 and 12..14 (lands 15), c2's 10..12 and 14..16 (lands 17); e2 ends at 25."""
    chip = make_chip(cores=("c0", "c1", "c2"), buses=[BUS])
    e1 = CHAIN[0](8)
    layers = [layer(e1, ["c0"]), layer(MC, ["c1", "c2"], split=[("n", 2)])]
    res = run(chip, [e1, MC], layers, LOCAL)
    assert res.cycles == 21
    assert (res.port("b").busy_cycles, res.port("b").bits) == (4, 64)
    assert len(res.run.plan.transfers) == 1
    assert (
        causes(res, "c1")
        == causes(res, "c2")
        == [
            ("onload", "dependency", "e1#0@c0", "c0", 8),
            ("onload", "latency", "b", None, 1),
            ("onload", "link", "b", None, 4),
        ]
    )
    unicast = run(chip, [e1, MC], layers, LOCAL + [{"tensor": "A", "multicast": False}])
    assert unicast.cycles == 25
    assert (unicast.port("b").busy_cycles, unicast.port("b").bits) == (8, 128)
    assert_sums(res)
    assert_sums(unicast)


def test_dram_port_shared_by_two_cores():
    """e1 (m = 16) split over c0 and c1, X (8 b) read from DRAM over a link each (64 b/cycle);
    the DRAM port moves 16 b/cycle in 32-b bursts, latency 5. Each part is 64 b: 2 bursts of
    max(32/64, 32/16) = 2 cycles. Both ask at 0; the DRAM port alternates: c0 0..2, c1 2..4,
    c0 4..6, c1 6..8. Latency 5: X lands on c0 at 11, on c1 at 13; e1 (8 cycles) runs 11..19
    on c0, 13..21 on c1. c1 waits on the DRAM port for c0's traffic 0..2 and 4..6."""
    chip = make_chip(
        links=[{"name": "d0", "cores": ["dram", "c0"], "width_bits": 64},
               {"name": "d1", "cores": ["dram", "c1"], "width_bits": 64}],
        dram={"name": "rw", "kind": "read_write", "width_bits": 16, "burst_bits": 32,
              "latency_cycles": 5},
    )  # fmt: skip
    e1 = CHAIN[0](16)
    tensors = [{"tensor": "X", "home": "dram"}, {"tensor": "Y", "home": "local"},
               {"tensor": "A", "home": "kept"}]  # fmt: skip
    res = run(chip, [e1], [layer(e1, ["c0", "c1"], split=[("m", 2)])], tensors)
    assert res.cycles == 21
    assert causes(res, "c1") == [
        ("onload", "bandwidth", "dram.rw", None, 4),
        ("onload", "dram_port", "dram.rw", "c0", 4),
        ("onload", "latency", "dram.rw", None, 5),
    ]
    assert causes(res, "c0") == [
        ("idle", "idle", None, None, 2),
        ("onload", "bandwidth", "dram.rw", None, 4),
        ("onload", "dram_port", "dram.rw", "c1", 2),
        ("onload", "latency", "dram.rw", None, 5),
    ]
    assert (res.port("dram.rw").busy_cycles, res.port("dram.rw").bits) == (8, 128)
    assert res.port("d0").busy_cycles == 4  # held with the DRAM port, burst by burst
    assert_sums(res)


def test_dependency_across_cores_through_dram():
    """A via DRAM: e1 (8 cycles) on c0 writes A (64 b) over the bus (16 b/cycle, 32-b bursts)
    to the DRAM port (64 b/cycle, latency 2): 2 bursts of max(2, 1) = 2 cycles, 8..12, latency
    max(1, 2) = 2: in DRAM at 14. e2 on c1 reads it back the same way 14..18, latency 2: lands
    at 20; e2 runs 20..28. c1: dependency 8 (c0's e1), then the write's bus bursts 4 and
    latency 2, then the read's bus bursts 4 and latency 2."""
    chip = make_chip(
        buses=[{"name": "b", "cores": ["c0", "c1", "dram"], "width_bits": 16, "burst_bits": 32,
                "latency_cycles": 1}],
        dram={"name": "rw", "kind": "read_write", "width_bits": 64, "latency_cycles": 2},
    )  # fmt: skip
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    res = run(chip, [e1, e2], [layer(e1, ["c0"]), layer(e2, ["c1"])],
              LOCAL + [{"tensor": "A", "via": "dram"}])  # fmt: skip
    assert res.cycles == 28
    assert causes(res, "c1") == [
        ("onload", "dependency", "e1#0@c0", "c0", 8),
        ("onload", "latency", "dram.rw", None, 4),
        ("onload", "link", "b", None, 8),
    ]
    assert_sums(res)


def test_fused_pipeline_over_two_cores():
    """e1 on c0 and e2 on c1, fused in tiles of 4 (2 steps each, 4 cycles a step); A's tile
    (32 b) crosses link c0->c1 (16 b/cycle, latency 3) in 2 + 3 = 5 cycles. e1#0 0..4, e1#1
    4..8; A[0:4] 4..9, A[4:8] 8..13; e2#0 9..13, e2#1 13..17: 17 cycles, against one step
    each: e1 0..8, A 8..15 (4 burst cycles + 3), e2 15..23."""
    chip = make_chip(links=[{"name": "l", "cores": ["c0", "c1"], "width_bits": 16,
                             "latency_cycles": 3, "burst_bits": 32}])  # fmt: skip
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    fused = run(chip, [e1, e2], [layer(e1, ["c0"], tile=[("m", 4)]), layer(e2, ["c1"], tile=[("m", 4)])],
                LOCAL, groups=[("e1", "e2")])  # fmt: skip
    assert fused.cycles == 17
    assert [(s["step"], s["start"], s["end"]) for s in fused.steps()] == [
        ("e1#0@c0", 0, 4), ("e2#0@c1", 9, 13), ("e1#1@c0", 4, 8), ("e2#1@c1", 13, 17),
    ]  # fmt: skip
    assert causes(fused, "c1") == [
        ("onload", "dependency", "e1#0@c0", "c0", 4),
        ("onload", "latency", "l", None, 3),
        ("onload", "link", "l", None, 2),
    ]
    whole = run(chip, [e1, e2], [layer(e1, ["c0"]), layer(e2, ["c1"])], LOCAL)
    assert whole.cycles == 23
    assert_sums(fused)


def test_ddr4_behind_the_dram_port_times_each_hop_with_the_device():
    """One DRAM read of 64 b (X, 8 values) to c0 over a 64-b link, through a 16-b DRAM port
    (32-b bursts: 2 bursts of 2 cycles, 0..4) with DDR4-3200 behind it: the hop lands when its
    bursts and the device's data of its requests (issued at cycle 0, timed by the same timer
    the core replay uses) are done, then the port latency 5. Every cycle of c0 before its step
    is the port's bandwidth, the device's row miss or latency, or the port latency."""
    from cyclesim.chip.dram import runs
    from cyclesim.dram.native import DramTimer

    data = {"name": "chip", "clock_mhz": 1000,
            "cores": [{"name": "c0", "architecture": TINY_CORE}],
            "offchip": {"ports": [{"name": "rw", "kind": "read_write", "width_bits": 16,
                                   "burst_bits": 32, "latency_cycles": 5}],
                        "dram": {"config": "DDR4_8Gb_x16_3200"}},
            "interconnect": {"links": [{"name": "d0", "cores": ["dram", "c0"], "width_bits": 64}]}}  # fmt: skip
    chip = chip_from_dict(data)
    e1 = CHAIN[0](8)
    res = run(chip, [e1], [layer(e1, ["c0"])],
              [{"tensor": "X", "home": "dram"}, {"tensor": "Y", "home": "local"},
               {"tensor": "A", "home": "kept"}])  # fmt: skip
    plan = res.run.plan
    timer = DramTimer(chip.offchip.dram.config, 1000)
    device_end, delays = timer.issue(runs(plan.placements["X"], plan.transfers[0].box), False, 0, 0)
    lands = max(4, device_end) + 5
    assert res.run.step_start[0] == lands and res.cycles == lands + 8
    assert device_end > 4  # the device, not the port, binds this short read
    # the first request opens its row: the timer's row_miss, where it falls after the bursts
    miss = sum(
        max(0, min(z, device_end) - max(a, 4)) for a, z, cause, *_ in delays if cause == "row_miss"
    )
    assert miss > 0
    waits = {r.cause: r.cycles for r in res.rows if r.where == "dram"}
    assert waits == {"row_miss": miss, "latency": device_end - 4 - miss}
    assert_sums(res)


LINE = [  # c0 -> c1 -> c2, 16 b/cycle, 32-b bursts, latency 3 each
    {"name": "l01", "cores": ["c0", "c1"], "width_bits": 16, "latency_cycles": 3, "burst_bits": 32},
    {"name": "l12", "cores": ["c1", "c2"], "width_bits": 16, "latency_cycles": 3, "burst_bits": 32},
]


def test_store_and_forward_over_two_hops():
    """A (64 b) from e1 on c0 to e2 on c2 through c1, store-and-forward per hop: l01 moves it
    8..12 and its latency ends at 15; only then l12 moves it, 15..19, latency to 22; e2 runs
    22..30. (Cut-through per burst would land it at 8 + 4 + 2 + 3 = 17 or so: not the rule.)"""
    chip = make_chip(cores=("c0", "c1", "c2"), links=LINE)
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    res = run(chip, [e1, e2], [layer(e1, ["c0"]), layer(e2, ["c2"])], LOCAL)
    assert res.cycles == 30
    hops = res.transfers()[0]["hops"]
    assert [(h["medium"], h["start"], h["end"]) for h in hops] == [("l01", 8, 15), ("l12", 15, 22)]
    assert causes(res, "c2") == [
        ("onload", "dependency", "e1#0@c0", "c0", 8),
        ("onload", "latency", "l01", None, 3),
        ("onload", "latency", "l12", None, 3),
        ("onload", "link", "l01", None, 4),
        ("onload", "link", "l12", None, 4),
    ]
    assert causes(res, "c1") == [("idle", "idle", None, None, 30)]  # it relays, it does not wait


def test_multicast_tree_over_links_moves_each_hop_once():
    """e2 split over n on c1 and c2, both reading all of A from c0: one tree, l01 then l12;
    l01 carries A once for both (busy 4), c1 has it at 15, c2 at 22; e2 runs 15..23 on c1 and
    22..30 on c2."""
    chip = make_chip(cores=("c0", "c1", "c2"), links=LINE)
    e1 = CHAIN[0](8)
    res = run(chip, [e1, MC], [layer(e1, ["c0"]), layer(MC, ["c1", "c2"], split=[("n", 2)])], LOCAL)
    assert res.cycles == 30
    assert (res.port("l01").busy_cycles, res.port("l12").busy_cycles) == (4, 4)
    assert [(s["step"], s["start"]) for s in res.steps()][1:] == [("e2#0@c1", 15), ("e2#0@c2", 22)]


def test_prefer_picks_the_link_over_the_bus():
    """c0 and c1 joined by a link (16 b/cycle) and a bus (64 b/cycle): `prefer: link` routes A
    over the link (4 burst cycles), `prefer: bus` over the bus (32-b bursts of 1 cycle: 2)."""
    bus = {
        "name": "b",
        "cores": ["c0", "c1"],
        "width_bits": 64,
        "burst_bits": 32,
        "latency_cycles": 3,
    }
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    cycles = {}
    for prefer in ("link", "bus"):
        chip = make_chip(links=LINE[:1], buses=[bus], prefer=prefer)
        res = run(chip, [e1, e2], [layer(e1, ["c0"]), layer(e2, ["c1"])], LOCAL)
        cycles[prefer] = res.cycles
        assert res.transfers()[0]["hops"][0]["medium"] == ("l01" if prefer == "link" else "b")
    assert cycles == {"link": 8 + 4 + 3 + 8, "bus": 8 + 2 + 3 + 8}


def test_a_sliding_window_moves_only_its_new_rows():
    """e2 (Z[m] += A[m + f] * W[f], f = 3) on c1 in tiles of 2 outputs reads A[2s : 2s + 4]
    at step s; what step s - 1 read stays, so step 0 gets 4 values (32 b) and every later step
    only its 2 new ones (16 b), each from e1's step that made them. W (same every step) moves
    once."""
    chip = make_chip(links=LINE[:1])
    e1 = CHAIN[0](10)
    e2 = einsum("e2", [("A", ["m + f"]), ("W", ["f"])], ("Z", ["m"]), {"m": 8, "f": 3})
    tensors = [{"tensor": t, "home": "local"} for t in ("X", "Y", "W")] + [
        {"tensor": "Z", "home": "kept"}
    ]
    res = run(chip, [e1, e2], [layer(e1, ["c0"], tile=[("m", 2)]), layer(e2, ["c1"], tile=[("m", 2)])],
              tensors, groups=[("e1", "e2")])  # fmt: skip
    moved = [(t["tensor"], t["bits"]) for t in res.transfers()]
    assert moved == [("A", 16), ("A", 16), ("A", 16), ("A", 16), ("A", 16)]  # e1's 5 tiles
    needs = res.run.plan.needs
    e2_steps = [s for s in res.run.plan.steps if s.layer == "e2"]
    assert [
        sum(res.run.plan.transfers[n.transfer].bits for n in needs[s.id]) for s in e2_steps
    ] == [32, 16, 16, 16]
    assert_sums(res)
