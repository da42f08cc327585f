"""A schedule that can never progress ends with an error naming who waits for what."""

from __future__ import annotations

import pytest
from replay_helpers import memory, port

from cyclesim.errors import EngineError, SpecError

WORKLOAD = {
    "default_bits_per_value": 8,
    "einsums": [
        {
            "name": "producer",
            "ranks": {"m": 2, "n": 2},
            "inputs": [{"tensor": "I", "projection": ["m", "n"]}],
            "outputs": [{"tensor": "AO", "projection": ["m", "n"]}],
        },
        {
            "name": "consumer",
            "ranks": {"m": 2, "n": 2},
            "inputs": [{"tensor": "AO", "projection": ["m", "n"]}],
            "outputs": [{"tensor": "O", "projection": ["m", "n"]}],
        },
    ],
}
ARCH = {
    "name": "two_level",
    "pe_array": {"dims": {"X": 1}},
    "memories": [
        memory("DRAM", None, None, [port("rd", "read", 64), port("wr", "write", 64)]),
        memory("sram", None, None, [port("rd", "read", 64), port("wr", "write", 64)]),
    ],
}


def mapping(order: list[str]) -> dict:
    branch = {
        e: [{"type": "temporal", "rank": "n", "bound": 2}, {"type": "compute", "einsum": e}]
        for e in ("producer", "consumer")
    }
    return {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["I", "AO", "O"]},
            {"type": "temporal", "rank": "m", "bound": 2},
            {"type": "storage", "memory": "sram", "tensors": ["AO"]},
            {"type": "sequential", "branches": [branch[e] for e in order]},
        ]
    }


def test_consumer_before_producer_is_refused_before_the_replay(replay_dicts):
    with pytest.raises(SpecError) as info:
        replay_dicts(ARCH, WORKLOAD, mapping(["consumer", "producer"]))
    assert "Einsum 'consumer' reads tensor AO before Einsum 'producer'" in str(info.value)
    assert info.value.field == "loop_tree[3].branches[0][1]"


def test_consumer_before_producer_is_a_cyclic_wait(replay_dicts, monkeypatch):
    # The loader refuses this tree (above); with that check off, the engine's own detection —
    # the safety net for waits validation cannot see — names the cycle. The consumer's branch
    # runs first in every iteration of m, so the PE array waits for AO in sram, which only the
    # producer's branch — queued behind it on the same PE array — writes.
    monkeypatch.setattr("cyclesim.spec.mapping._check_order", lambda mapping, workload: None)
    with pytest.raises(EngineError) as info:
        replay_dicts(ARCH, WORKLOAD, mapping(["consumer", "producer"]))
    text = str(info.value)
    assert "cannot progress at cycle" in text
    assert "PE array: waiting" in text and "'produced'" in text
    assert "write-back AO@sram" in text


def test_producer_first_runs(replay_dicts):
    # The same tree in the right order: AO stays in sram, read by the consumer, written once to DRAM.
    res = replay_dicts(ARCH, WORKLOAD, mapping(["producer", "consumer"]))
    acc = res.accesses
    dram_ao = acc[(acc.tensor == "AO") & (acc.memory == "DRAM")]
    assert dram_ao[["einsum", "action"]].values.tolist() == [["producer", "write"]]
