"""Capacity counts an output tile at the width it is kept at: partial-sum width only where
partial sums live (DESIGN: Precision, Capacity); a level that only ever receives finished
outputs holds them at their final width, as ZigZag sizes it."""

from __future__ import annotations

import pytest
from replay_helpers import inputs_from_dicts, matvec_einsum, memory, port

from cyclesim.errors import SpecError
from cyclesim.schedule.plan import build_plan

WORKLOAD = {
    "tensors": {
        "A": {"bits_per_value": 8},
        "B": {"bits_per_value": 8},
        "Z": {"bits_per_value": 8, "partial_sum_bits": 16},
    },
    "einsums": [matvec_einsum(4, 4)],
}


def _arch(buf_bits: int) -> dict:
    ports = [port("rd", "read", 64), port("wr", "write", 64)]
    return {
        "name": "widths",
        "pe_array": {"dims": {"X": 1}},
        "memories": [
            memory("DRAM", None, None, ports),
            memory("buf", buf_bits, ["Z"], ports),
            memory("reg", None, ["Z"], ports),
        ],
    }


def _tree(*loops: tuple[str, int], inner: tuple[str, int]) -> dict:
    """buf (Z), the loops, reg (Z), the inner loop, compute."""
    return {
        "loop_tree": [
            {"type": "storage", "memory": "DRAM", "tensors": ["A", "B", "Z"]},
            {"type": "storage", "memory": "buf", "tensors": ["Z"]},
            *({"type": "temporal", "rank": r, "bound": b} for r, b in loops),
            {"type": "storage", "memory": "reg", "tensors": ["Z"]},
            {"type": "temporal", "rank": inner[0], "bound": inner[1]},
            {"type": "compute", "einsum": "matvec"},
        ]
    }


def test_a_level_that_only_receives_finished_outputs_keeps_them_at_final_width():
    # m outside, k inside reg: each Z element is finished in reg before it is left, so buf
    # (tile Z[0..3]) only ever receives final 8-b values: 4 x 8 = 32 b fit a 32-b buf
    plan = build_plan(*inputs_from_dicts(_arch(32), WORKLOAD, _tree(("m", 4), inner=("k", 4))))
    widths = {n.label(): n.stored_bits for n in plan.nodes}
    assert widths["Z@buf"] == 8 and widths["Z@reg"] == 16  # the PE array accumulates in reg


def test_a_level_that_receives_partial_sums_keeps_them_at_partial_sum_width():
    # k 2 outside m 4 outside reg, k 2 inside: reg's tile Z[m] is left for the next m and
    # entered again on the second k, so it drains partial sums into buf in between: buf needs
    # 4 x 16 = 64 b and a 32-b buf is refused (a k loop alone above reg would not count: under
    # retain reg keeps Z[0..3] resident across it and is never left)
    tree = _tree(("k", 2), ("m", 4), inner=("k", 2))
    plan = build_plan(*inputs_from_dicts(_arch(64), WORKLOAD, tree))
    assert {n.label(): n.stored_bits for n in plan.nodes}["Z@buf"] == 16
    with pytest.raises(SpecError, match="need 64 bits per instance but it has 32"):
        build_plan(*inputs_from_dicts(_arch(32), WORKLOAD, tree))
