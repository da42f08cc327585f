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
