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
