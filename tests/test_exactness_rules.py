"""Hand-derived cases of DESIGN.md's seven exactness rules (issue 22) and of the settled
readings the replay follows, one small case each.

Convention: [a, b) are the cycles a..b-1; a tile whose last burst ends at b is usable at b.
"""

from __future__ import annotations

from replay_helpers import memory, port

WIDE = [port("rd", "read", 64), port("wr", "write", 64)]


def reads(res, einsum: str, tensor: str, memory_name: str) -> int:
    """Values of tensor the Einsum read at a memory (both directions)."""
    df = res.accesses
    row = df[
        (df.einsum == einsum)
        & (df.tensor == tensor)
        & (df.memory == memory_name)
        & (df.action == "read")
    ]
    return int(row["values"].sum())


# ------------------------------------------ operand registers hold the previous cycle's value
REGISTER_WORKLOAD = {
    "default_bits_per_value": 8,
    "einsums": [
        {
            "name": "producer",
            "ranks": {"n1": 2, "c": 1},
            "inputs": [{"tensor": "I", "projection": ["c"]}],
            "outputs": [{"tensor": "AO", "projection": ["n1"]}],
        },
        {
            "name": "consumer",
            "ranks": {"n1": 2},
            "inputs": [{"tensor": "AO", "projection": ["n1"]}],
            "outputs": [{"tensor": "O", "projection": ["n1"]}],
        },
    ],
}


def test_an_operand_is_read_again_after_the_other_einsums_step(replay_dicts):
    # n1 above a `sequential` split; the producer reads I[0] from sram at n1 = 0 and n1 = 1.
    # Under retain the PE re-reads an operand when the previous cycle's step used another
    # value: the producer's step at n1 = 1 follows the consumer's step at n1 = 0, whose
    # operand AO replaced the register's content, so I[0] is read twice, not once (before
    # the rule: once; the closed form counted each leaf as if the other had not run).
    # Under strict every step reads every operand: 2 as well.
    arch = {
        "name": "register",
        "pe_array": {"dims": {"X": 1}},
        "memories": [memory("DRAM", None, None, WIDE), memory("sram", None, None, WIDE)],
    }
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["I", "AO", "O"]},
            {"type": "storage", "memory": "sram", "tensors": ["I"]},
            {"type": "temporal", "rank": "n1", "bound": 2},
            {"type": "storage", "memory": "sram", "tensors": ["AO"]},
            {
                "type": "sequential",
                "branches": [
                    [
                        {"type": "temporal", "rank": "c", "bound": 1},
                        {"type": "compute", "einsum": "producer"},
                    ],
                    [{"type": "compute", "einsum": "consumer"}],
                ],
            },
        ]
    }
    for reuse in ("retain", "strict"):
        res = replay_dicts(arch, REGISTER_WORKLOAD, mapping, reuse=reuse)
        assert reads(res, "producer", "I", "sram") == 2, reuse


# ------------------------------------------------------ bursts are counted where the bits meet
def per_pe_accumulators(parent_burst: int = 8) -> tuple[dict, dict, dict]:
    """Z[m] = A[m] * B[0] over two PEs (m spatial on X); each PE accumulates its Z[m] in its
    own acc instance (8 b), written back to DRAM through 64-b ports with 8-b bursts; DRAM's
    write port has a latency of 1."""
    arch = {
        "name": "per_pe_acc",
        "pe_array": {"dims": {"X": 2}},
        "memories": [
            memory(
                "DRAM",
                None,
                None,
                [port("rd", "read", 64, 8), port("wr", "write", 64, parent_burst, latency=1)],
            ),
            memory(
                "acc",
                None,
                ["Z"],
                [port("rd", "read", 64, 8), port("wr", "write", 64, 8)],
                shared_across=[],  # one instance per PE
            ),
        ],
    }
    workload = {
        "default_bits_per_value": 8,
        "einsums": [
            {
                "name": "scale",
                "ranks": {"m": 2, "k": 1},
                "inputs": [
                    {"tensor": "A", "projection": ["m"]},
                    {"tensor": "B", "projection": ["k"]},
                ],
                "outputs": [{"tensor": "Z", "projection": ["m"]}],
            }
        ],
    }
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
            {"type": "spatial", "rank": "m", "bound": 2, "dim": "X"},
            {"type": "storage", "memory": "acc", "tensors": ["Z"]},
            {"type": "temporal", "rank": "k", "bound": 1},
            {"type": "compute", "einsum": "scale"},
        ]
    }
    return arch, workload, mapping


def test_two_instances_write_back_in_two_bursts_on_the_parent_port(replay_dicts):
    # The PE array's one step [0,1) (A and B are read from DRAM, its backing store). acc's
    # write-back: 8 b from each of the two instances, 16 b through DRAM.wr. Bursts are counted
    # where the bits meet: 16 b on DRAM.wr in 8-b bursts are 2 bursts, [1,2) and [2,3) (each
    # instance's own port moves its 8 b in parallel); DRAM.wr's latency 1: lands at 4.
    # Before the rule, bursts were counted per instance: one burst [1,2), landed at 3.
    arch, workload, mapping = per_pe_accumulators()
    res = replay_dicts(arch, workload, mapping)
    assert (res.cycles, res.ideal_compute_cycles, res.offload_cycles) == (4, 1, 3)
    assert res.stall_cycles_by_cause(("offload",)) == {"bandwidth": 2, "latency": 1}


# ------------------------------------------------------------ naming a stalled transfer's port
def spatial_rows(res) -> dict[tuple, int]:
    """(tensor, memory, port) -> spatial stall cycles."""
    df = res.stalls[res.stalls.cause == "spatial"]
    return {(r.tensor, r.memory, r.port): int(r.cycles) for r in df.itertuples()}


def _narrow_arch(acc_ports: list[dict], buf_ports: list[dict], b_bits: int = 8):
    arch = {
        "name": "narrow",
        "pe_array": {"dims": {"X": 1}},
        "memories": [
            memory("DRAM", None, None, WIDE),
            memory("buf", None, ["A", "B"], buf_ports),
            memory("acc", None, ["Z"], acc_ports),
        ],
    }
    workload = {
        "tensors": {
            "A": {"bits_per_value": 8},
            "B": {"bits_per_value": b_bits},
            "Z": {"bits_per_value": 8},
        },
        "einsums": [
            {
                "name": "matvec",
                "ranks": {"m": 2, "k": 1},
                "inputs": [
                    {"tensor": "A", "projection": ["m", "k"]},
                    {"tensor": "B", "projection": ["k"]},
                ],
                "outputs": [{"tensor": "Z", "projection": ["m"]}],
            }
        ],
    }
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
            {"type": "storage", "memory": "buf", "tensors": ["A", "B"]},
            {"type": "temporal", "rank": "m", "bound": 2},
            {"type": "storage", "memory": "acc", "tensors": ["Z"]},
            {"type": "temporal", "rank": "k", "bound": 1},
            {"type": "compute", "einsum": "matvec"},
        ]
    }
    return arch, workload, mapping


def test_a_spatial_stall_names_the_write_port_an_output_goes_through(replay_dicts):
    # Z[m] is visited once per m (k = 1): both steps are first visits, which only write Z
    # (8 b) through acc.wr at 4 b/cycle: 2 cycles a step, 1 spatial. acc.rd moves no bits in
    # these steps, so the stall names acc.wr (the replay named acc.rd, the output's read port,
    # before the rule). A and B (8 b each on buf.rd, 64 b/cycle) take 1 cycle.
    arch, workload, mapping = _narrow_arch(
        [port("rd", "read", 64), port("wr", "write", 4)], [port("rd", "read", 64), *WIDE[1:]]
    )
    res = replay_dicts(arch, workload, mapping)
    assert res.ideal_compute_cycles == 2
    assert spatial_rows(res) == {("Z", "acc", "wr"): 2}


def test_a_spatial_stall_on_a_shared_port_names_the_operand_with_most_bits(replay_dicts):
    # buf.rd (8 b/cycle) serves A (8 b) and B (16 b): a step's first read moves 24 b, 3
    # cycles, so the first step has 2 spatial cycles; in the second B has not changed (retain:
    # k does not move) and A's 8 b take 1 cycle. The stall names B, the operand with the most
    # bits through the port (A, the first operand on it, before the rule).
    arch, workload, mapping = _narrow_arch(
        WIDE, [port("rd", "read", 8), port("wr", "write", 64)], b_bits=16
    )
    res = replay_dicts(arch, workload, mapping)
    assert spatial_rows(res) == {("B", "buf", "rd"): 2}


def test_a_write_back_tie_names_the_port_the_data_leaves(replay_dicts):
    # per_pe_accumulators: 16 b to DRAM in 8-b bursts, each 8 b on DRAM.wr (64 b/cycle, 1
    # cycle) and 4 b on each instance's acc.rd (64 b/cycle, 1 cycle): a tie every burst, so
    # the write-back's 2 bandwidth cycles name acc.rd, the port the data leaves, not DRAM.wr
    # (the parent's port, before the rule). The latency is DRAM.wr's.
    arch, workload, mapping = per_pe_accumulators()
    res = replay_dicts(arch, workload, mapping)
    rows = {
        (r.cause, r.port_memory, r.port): int(r.cycles)
        for r in res.stalls[res.stalls.phase == "offload"].itertuples()
    }
    assert rows == {("bandwidth", "acc", "rd"): 2, ("latency", "DRAM", "wr"): 1}


# ------------------------------------------------ arbitration sees every request of the cycle
def test_round_robin_is_decided_among_every_request_of_the_cycle(replay_dicts):
    # Z[m] += A[m,0] * B[0], M = 3, strict (B is refilled every m). A (abuf, two slots) and B
    # (bbuf, one slot) fill through DRAM.rd, one 8-b burst a tile, 1 cycle each.
    #   0: A0 and B0 ask; nobody served yet: A0 (first in loop-tree order) [0,1).
    #   1: A asks for A1 (its second slot); B0 waits; the port served A last: B0 [1,2).
    #   2: A1 [2,3); the PE array has A0 and B0: step m0 [2,3).
    #   3: step m0 frees A0's and B0's slots: A2 and B1 ask in the same cycle, A's fill first
    #      (operand order). The port served A last, so B1 [3,4), then A2 [4,5). Step m1 [4,5).
    #      (Before the rule, the port fell free with nobody waiting and went at once to A2,
    #      which happened to ask first: B1 [4,5), step m1 [5,6), 8 cycles in all.)
    #   5: B2 [5,6); step m2 [6,7). 7 = onload 2 + ideal 3 + stall 2 (B's bandwidth).
    arch = {
        "name": "round_robin",
        "pe_array": {"dims": {"X": 1}},
        "memories": [
            memory("DRAM", None, None, [port("rd", "read", 8), port("wr", "write", 64)]),
            memory("abuf", 16, ["A"], WIDE, double_buffered=True),
            memory("bbuf", 8, ["B"], WIDE),
        ],
    }
    workload = {
        "default_bits_per_value": 8,
        "einsums": [
            {
                "name": "matvec",
                "ranks": {"m": 3, "k": 1},
                "inputs": [
                    {"tensor": "A", "projection": ["m", "k"]},
                    {"tensor": "B", "projection": ["k"]},
                ],
                "outputs": [{"tensor": "Z", "projection": ["m"]}],
            }
        ],
    }
    mapping = {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
            {"type": "temporal", "rank": "m", "bound": 3},
            {"type": "storage", "memory": "abuf", "tensors": ["A"]},
            {"type": "storage", "memory": "bbuf", "tensors": ["B"]},
            {"type": "temporal", "rank": "k", "bound": 1},
            {"type": "compute", "einsum": "matvec"},
        ]
    }
    res = replay_dicts(arch, workload, mapping, reuse="strict")
    assert (res.cycles, res.onload_cycles, res.ideal_compute_cycles, res.stall_cycles) == (
        7,
        2,
        3,
        2,
    )
    assert res.stall_cycles_by_cause() == {"bandwidth": 2}
