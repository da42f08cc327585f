"""`cyclesim chip --explain`: remedies from the largest causes, each replayed (hand-derived
on the cases of test_chip_hand.py)."""

from __future__ import annotations

import json

from chip_helpers import CHAIN, LOCAL, MC, layer, make_chip, run

from cyclesim.chip.explain import explain
from cyclesim.cli import main


def test_wider_link_replayed():
    """test_transfer_over_one_link (23 cycles): A's 64 b over the 16-b link took 4 burst
    cycles; at 32 b/cycle its 2 bursts take 1 cycle each: A lands at 8 + 2 + 3 = 13, e2 runs
    13..21: 21 cycles, 2 saved."""
    chip = make_chip(links=[{"name": "l", "cores": ["c0", "c1"], "width_bits": 16,
                             "latency_cycles": 3, "burst_bits": 32}])  # fmt: skip
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    res = run(chip, [e1, e2], [layer(e1, ["c0"]), layer(e2, ["c1"])], LOCAL)
    remedies = {r.what: r.cycles for r in explain(res)}
    assert remedies["l (link) twice as wide (16 -> 32 b/cycle)"] == 21


def test_multicast_proposed_for_repeated_unicast():
    """test_multicast_to_two_cores without multicast took 25 cycles; multicast gives 21."""
    chip = make_chip(cores=("c0", "c1", "c2"), buses=[{"name": "b", "cores": ["c0", "c1", "c2"],
                     "width_bits": 16, "burst_bits": 32, "latency_cycles": 1}])  # fmt: skip
    e1 = CHAIN[0](8)
    layers = [layer(e1, ["c0"]), layer(MC, ["c1", "c2"], split=[("n", 2)])]
    res = run(chip, [e1, MC], layers, LOCAL + [{"tensor": "A", "multicast": False}])
    assert res.cycles == 25
    remedies = {r.what: r.cycles for r in explain(res)}
    assert remedies["A multicast"] == 21


def test_cli_explain_json(capsys):
    ex = "examples/multicore"
    args = [f"{ex}/chip_bus_2core.yaml", f"{ex}/workload.yaml", f"{ex}/fused_rows_2core.yaml"]
    assert main(["chip", *args, "--explain", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    best = out["explain"][0]
    assert best["cycles"] + best["saved"] == out["cycles"] and best["saved"] > 0


def test_widening_both_sides_together_when_each_alone_gains_nothing():
    """X (8 values of 8 b = 64 b) comes from the DRAM to c0 over the bus: both the bus and the
    DRAM port move 16 b/cycle in 32-b bursts, so each burst takes max(32/16, 32/16) = 2 cycles
    (the tie names the DRAM port, the side the data leaves: `bandwidth` on dram.rw): 2 bursts,
    4 cycles, then e1's 8: 12 cycles. The port twice as wide (32 b/cycle, burst 32) leaves the
    bus's 2 cycles a burst: still 12. The port and the bus together: 1 cycle a burst, X lands
    at 2, 10 cycles. The section shows only what helps (the port alone, +0, is counted)."""
    from cyclesim.chip.explain import explain_section

    bus = {"name": "b", "cores": ["c0", "dram"], "width_bits": 16, "burst_bits": 32}
    port = {"name": "rw", "kind": "read_write", "width_bits": 16, "burst_bits": 32}
    chip = make_chip(cores=("c0",), buses=[bus], dram=port)
    e1 = CHAIN[0](8)
    tensors = [{"tensor": "X", "home": "dram"}, {"tensor": "Y", "home": "local"},
               {"tensor": "A", "home": "kept"}]  # fmt: skip
    res = run(chip, [e1], [layer(e1, ["c0"])], tensors)
    assert res.cycles == 12
    remedies = explain(res)
    found = {r.what: r.cycles for r in remedies}
    assert found == {
        "DRAM port twice as wide (rw 16 -> 32 b/cycle)": 12,
        "the DRAM port and b twice as wide, together": 10,
    }
    text = explain_section(res, remedies)
    assert "-2  the DRAM port and b twice as wide, together" in text
    assert "+0" not in text and "(1 other change replayed saved nothing" in text


def test_why_sums_a_medium_over_every_core_and_tensor(capsys):
    """The bracket gives the cycles the remedy answers, summed over every core and tensor, as
    the report's rows add up (it gave one row's share: 1,096 of the DRAM port's 2,472)."""
    ex = "examples/multicore"
    args = [f"{ex}/chip_bus_2core.yaml", f"{ex}/workload.yaml", f"{ex}/layer_by_layer_2core.yaml"]
    assert main(["chip", *args, "--explain", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = [r for core in out["cores"] for r in core["causes"]]
    on_dram = sum(r["cycles"] for r in rows if r["phase"] != "step"
                  and r["cause"] in ("dram_port", "bandwidth") and r["where"].startswith("dram."))  # fmt: skip
    why = next(r["why"] for r in out["explain"] if r["remedy"].startswith("DRAM port"))
    assert why == f"{on_dram:,} cycles of dram_port and bandwidth on dram"


def test_widening_together_is_listed_only_where_it_beats_each_alone(capsys):
    """On the 2-core bus chip, layer by layer, the DRAM port twice as wide gives 12,008 cycles,
    and the port and the bus together the same: the joint remedy adds nothing and is left out
    (it was listed right after the port's, with the same cycles and bracket). On the DDR4 chip
    each alone saves nothing and together they save 139: listed."""
    ex = "examples/multicore"
    found = {}
    for chip in ("chip_bus_2core", "chip_bus_2core_ddr4"):
        args = [f"{ex}/{chip}.yaml", f"{ex}/workload.yaml", f"{ex}/layer_by_layer_2core.yaml"]
        assert main(["chip", *args, "--explain", "--json"]) == 0
        found[chip] = {r["remedy"]: r["saved"] for r in json.loads(capsys.readouterr().out)["explain"]}  # fmt: skip
    assert found["chip_bus_2core"]["DRAM port twice as wide (rw 16 -> 32 b/cycle)"] == 1060
    assert not [r for r in found["chip_bus_2core"] if r.endswith("together")]
    assert found["chip_bus_2core_ddr4"]["the DRAM port and bus twice as wide, together"] == 139
