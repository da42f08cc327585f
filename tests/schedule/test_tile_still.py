"""Where an affine operand's tile stays in place (DESIGN "retain: refill only when the tile
changes"; NodePlan.still_levels, tile_of, first_entry_of, fills).

The D17 case (tests/reference/cases/affine_tile_refill): A[m, n + k] in buf below n (2) and
k (2), one value per tile. Entries (n, k) = (0,0) (0,1) (1,0) (1,1) hold A[0], A[1], A[1], A[2]:
a step of level 1 moves the origin n + k by 1 - 1 * (2 - 1) = 0, so entry 2 is entry 1's tile.
"""

from __future__ import annotations

from pathlib import Path

from cyclesim.schedule.counts import closed_form
from cyclesim.schedule.plan import build_plan
from cyclesim.schedule.types import ReusePolicy
from cyclesim.spec import load_architecture, load_mapping, load_workload

CASE = Path(__file__).parents[1] / "reference" / "cases" / "affine_tile_refill"


def plan_of(reuse: ReusePolicy):
    a = load_architecture(str(CASE / "arch.yaml"))
    w = load_workload(str(CASE / "workload.yaml"))
    return build_plan(a, w, load_mapping(str(CASE / "mapping.yaml"), a, w), reuse)


def a_in_buf(plan):
    return next(n for n in plan.nodes if n.tensor == "A" and n.memory == "buf")


def test_the_repeated_tile_is_one_fill_and_shares_its_slot():
    n = a_in_buf(plan_of(ReusePolicy.RETAIN))
    assert n.still_levels == {1}
    assert n.entries == 4 and n.fills == 3
    assert [n.tile_of(k) for k in range(4)] == [0, 1, 1, 2]
    assert [n.extends_previous(k) for k in range(4)] == [False, False, True, False]
    # with one slot, tile 2 (entry 3) waits for tile 1 to go, i.e. its last entry, 2
    assert [n.first_entry_of(t) for t in range(3)] == [0, 1, 3]
    # 3 fills of one 4-b value: 12 b read from DRAM, not 16 (differences.txt)
    dram_reads = [
        r
        for r in closed_form(plan_of(ReusePolicy.RETAIN))
        if r.tensor == "A" and r.memory == "DRAM" and r.action == "read"
    ]
    assert [(r.values, r.bits) for r in dram_reads] == [(3, 12)]


def test_strict_refills_every_entry():
    # strict refills on every iteration of every loop above, whatever the tile holds
    n = a_in_buf(plan_of(ReusePolicy.STRICT))
    assert n.still_levels == frozenset() and n.fills == n.entries == 4
