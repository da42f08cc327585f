"""The worked examples of tests/cases/worked/*.json, replayed to their hand-derived numbers.

Each case's derivation is in its JSON under `derivation`; the essential steps are repeated in
the comments here. The examples name the narrow-port stall `spatial_stall`; cyclesim's cause
vocabulary (docs/causes.md) calls it `spatial`.
"""

from __future__ import annotations

import pytest

# (case, cycles, onload, ideal, stall, offload, stalls by (cause, memory, tensor, port, competitor))
CASES = {
    # A, B (64 b each) share dram_rd (32 b/cycle, 32-b bursts): A [0,1) B [1,2) A [2,3) B [3,4);
    # 16 one-cycle steps [4,20); Z's 32-b write-back [20,21).
    "01_compute_bound": (21, 4, 16, 0, 1, {}),
    # A tile (32 b) through a 4 b/cycle port: T = 8; C = 4; one slot: 4 x (8 + 4) + Z drain 4.
    "03_single_buffer": (52, 8, 16, 24, 4, {("bandwidth", "abuf", "A", "dram_rd", None): 24}),
    # 32-b A through an 8 b/cycle innermost port: each step 4 cycles; 8 steps -> 24 extra.
    "05_narrow_innermost_port": (38, 5, 8, 24, 1, {("spatial", "arf", "A", "arf_rd", None): 24}),
    # n innermost does not index A: under retain A is read every other step: 4 x 3 extra.
    "05_narrow_innermost_port_reuse_every_other_cycle": (
        25,
        3,
        8,
        12,
        2,
        {("spatial", "arf", "A", "arf_rd", None): 12},
    ),
}

# per case: (einsum, tensor, memory, action) -> (values, bits)
ACCESSES = {
    "01_compute_bound": {
        ("matmul", "A", "DRAM", "read"): (8, 64),
        ("matmul", "A", "buf", "write"): (8, 64),
        ("matmul", "A", "buf", "read"): (16, 128),
        ("matmul", "B", "DRAM", "read"): (8, 64),
        ("matmul", "B", "buf", "write"): (8, 64),
        ("matmul", "B", "buf", "read"): (16, 128),
        ("matmul", "Z", "buf", "write"): (16, 128),
        ("matmul", "Z", "buf", "read"): (16, 128),
        ("matmul", "Z", "DRAM", "write"): (4, 32),
    },
    "03_single_buffer": {
        ("matvec", "A", "DRAM", "read"): (16, 128),
        ("matvec", "A", "abuf", "write"): (16, 128),
        ("matvec", "A", "abuf", "read"): (16, 128),
        ("matvec", "B", "wbuf", "read"): (16, 128),
        ("matvec", "Z", "acc", "write"): (16, 128),
        ("matvec", "Z", "acc", "read"): (16, 128),
        ("matvec", "Z", "DRAM", "write"): (4, 32),
    },
    "05_narrow_innermost_port": {
        ("matvec", "A", "DRAM", "read"): (8, 256),
        ("matvec", "A", "arf", "write"): (8, 256),
        ("matvec", "A", "arf", "read"): (8, 256),
        ("matvec", "B", "DRAM", "read"): (4, 32),
        ("matvec", "B", "wrf", "write"): (4, 32),
        ("matvec", "B", "wrf", "read"): (8, 64),
        ("matvec", "Z", "acc", "write"): (8, 256),
        ("matvec", "Z", "acc", "read"): (8, 256),
        ("matvec", "Z", "DRAM", "write"): (2, 64),
    },
    "05_narrow_innermost_port_reuse_every_other_cycle": {
        ("matmul", "A", "DRAM", "read"): (4, 128),
        ("matmul", "A", "arf", "write"): (4, 128),
        ("matmul", "A", "arf", "read"): (4, 128),
        ("matmul", "B", "DRAM", "read"): (4, 32),
        ("matmul", "B", "wrf", "write"): (4, 32),
        ("matmul", "B", "wrf", "read"): (8, 64),
        ("matmul", "Z", "acc", "write"): (8, 256),
        ("matmul", "Z", "acc", "read"): (8, 256),
        ("matmul", "Z", "DRAM", "write"): (4, 128),
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cycles_split_as_derived(replay_case, case):
    cycles, onload, ideal, stall, offload, _ = CASES[case]
    res = replay_case(case)
    assert (
        res.cycles,
        res.onload_cycles,
        res.ideal_compute_cycles,
        res.stall_cycles,
        res.offload_cycles,
    ) == (
        cycles,
        onload,
        ideal,
        stall,
        offload,
    )
    assert (
        res.onload_cycles + res.ideal_compute_cycles + res.stall_cycles + res.offload_cycles
        == res.cycles
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_compute_stalls_by_root_cause(replay_case, case):
    expected = CASES[case][5]
    res = replay_case(case)
    got = {}
    for r in res.stalls[res.stalls.phase == "compute"].itertuples():
        key = (r.cause, r.memory, r.tensor, r.port, r.competitor)
        got[key] = got.get(key, 0) + int(r.cycles)
    assert got == expected


@pytest.mark.parametrize("case", sorted(ACCESSES))
def test_accesses_per_tensor_and_memory(replay_case, case):
    res = replay_case(case)
    got = {
        (r.einsum, r.tensor, r.memory, r.action): (int(r.values), int(r.bits))
        for r in res.accesses.itertuples()
    }
    assert got == ACCESSES[case]


def test_onload_contention_names_the_competitor(replay_case):
    # 01: dram_rd alternates A [0,1), B [1,2), A [2,3), B [3,4). The PE waits for both tiles;
    # B is ready last (4), so it binds and every onload cycle is B's (DESIGN "Several tiles
    # awaited at once"): B's own bursts [1,2), [3,4) are bandwidth, [0,1) and [2,3) contention
    # with A's fill. (Before that rule the wait was split by operand order: A 2 + 1, B 1.)
    res = replay_case("01_compute_bound")
    onload = res.stalls[res.stalls.phase == "onload"]
    rows = {(r.cause, r.tensor, r.competitor): int(r.cycles) for r in onload.itertuples()}
    assert rows == {
        ("bandwidth", "B", None): 2,
        ("contention", "B", "fill of A@buf"): 2,
    }


def test_offload_is_the_last_write_back(replay_case):
    # 03: Z's 4 final values, 32 b, through the 8 b/cycle DRAM write port: [48, 52). Its 8-b
    # bursts take 1 cycle on dram_wr and 1 on acc_rd (64 b/cycle): a tie, so the cycles name
    # acc_rd, the port the data leaves (DESIGN "Naming a stalled transfer's port"; the worked
    # example, written before that rule, names dram_wr).
    res = replay_case("03_single_buffer")
    off = res.stalls[res.stalls.phase == "offload"]
    assert [(r.cause, r.tensor, r.memory, r.port, int(r.cycles)) for r in off.itertuples()] == [
        ("bandwidth", "Z", "acc", "acc_rd", 4)
    ]
