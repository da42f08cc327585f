"""Components describe and move their own state: Tiles, NodeState, TransferState.

A fast-forward jump moves each component by whole periods (shift) and compares two moments
of it relative to a cycle and a tile (snapshot); these cases check both by hand.
"""

from __future__ import annotations

from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.engine.snapshot import Origin
from cyclesim.engine.storage_node import NodeState
from cyclesim.engine.tiles import Tiles
from cyclesim.engine.transfer_state import TransferState
from cyclesim.vocabulary import Wait


def test_tiles_shift_moves_tables_by_tiles_parts_by_tiles_times_parts_and_landing_by_cycles():
    env = ReplayEnvironment()
    t = Tiles(env)
    t.resident.update({3: True, 4: True})
    t.remaining[4] = 2
    t.prod_left[9] = 1  # part key 4 * 2 + 1: tile 4, part 1 of 2
    t.lands_at[3] = 100
    t.drained[7] = True  # the storage node's to rebuild (shift_visits), not moved here
    t.shift(50, 5, 2)
    # tiles 3, 4 -> 8, 9; part key 9 -> 9 + 5 * 2 = 19 (tile 9, part 1); lands 100 -> 150
    assert t.resident == {8: True, 9: True}
    assert t.remaining == {9: 2}
    assert t.prod_left == {19: 1}
    assert t.lands_at == {8: 150}
    assert t.drained == {7: True}


def test_tiles_shift_by_no_tiles_moves_only_the_landing_cycles():
    t = Tiles(ReplayEnvironment())
    t.resident[2] = True
    t.lands_at[2] = 10
    t.shift(7, 0, 1)  # a frozen node: its tiles stay, the clock moves
    assert t.resident == {2: True}
    assert t.lands_at == {2: 17}


def test_tiles_snapshot_is_relative_to_the_tile_and_cycle_it_is_taken_at():
    """Tile 5 resident, 6 awaited, results of 5 landing 3 cycles on, at base 5, cycle 20,
    describe the same as tiles 9 and 10 at base 9, cycle 40 (4 tiles and 20 cycles later)."""

    def moment(base: int, now: int) -> tuple:
        env = ReplayEnvironment()
        t = Tiles(env)
        t.resident[base] = True
        t.waiter(t.resident, base + 1)
        t.lands_at[base] = now + 3
        return t.snapshot(Origin(env, now, {}, None, {}), 0, base, True, 1, {})

    assert moment(5, 20) == moment(9, 40)
    rows, countdowns = moment(5, 20)
    assert rows[0][0] == (0, True) and rows[0][1][0] == 1  # tile 6 is base + 1
    assert rows[3] == ((0, 3),)  # lands 3 cycles after the snapshot
    assert countdowns == {}  # a moving node has no frozen countdowns


def test_a_frozen_node_reports_its_countdowns_absolutely():
    env = ReplayEnvironment()
    t = Tiles(env)
    t.remaining[4] = 6  # tile 4 has 6 uses left; frozen: it keeps tile 4 during a skip
    _, countdowns = t.snapshot(Origin(env, 0, {}, None, {}), 2, 0, False, 1, {(2, 4): "who"})
    assert countdowns == {(2, "remaining", 4): 6}


def test_node_state_shift_moves_entry_previous_visit_and_transfer_times():
    st = NodeState()
    st.k, st.prev, st.start, st.stage = 10, 6, 100, Wait.TRANSFER
    x = st.xfer = TransferState(64, 64)
    x.start, x.end, x.last, x.last_start, x.i, x.j = 100, 108, 106, 104, 2, 5
    st.shift(40, 3)  # 40 cycles, 3 entries
    assert (st.k, st.prev, st.start) == (13, 9, 140)
    assert (x.start, x.end, x.last, x.last_start) == (140, 148, 146, 144)
    assert (x.i, x.j) == (2, 5)  # a new entry's transfer: the bursts are its own


def test_transfer_shift_between_grants_moves_its_bursts_too():
    x = TransferState(1024, 1024)
    x.start, x.end, x.last, x.last_start, x.i, x.j = 0, 4, 3, 2, 8, 9
    x.granted = 6  # its grant began at burst 6: it has moved bursts 6 and 7 so far
    x.shift(32, 16)  # 16 bursts of 2 cycles skipped inside the same transfer
    assert (x.start, x.end, x.last, x.last_start, x.i, x.j) == (32, 36, 35, 34, 24, 25)
    assert x.granted == 22  # the grant held moves with them: still 2 bursts into it


def test_transfer_snapshot_counts_the_bursts_moved_under_the_grant_it_holds():
    """At burst 8 under a grant that began at burst 6 (2 bursts moved) is the same moment,
    between grants, as at burst 24 under one that began at 22, but not under one that began
    at 23: the bits the grant's record gets depend on it."""

    def moment(i: int, granted: int) -> tuple:
        x = TransferState(1024, 1024)
        x.stage, x.i, x.j, x.granted = Wait.PORT, i, i + 1, granted
        return x.snapshot(0, {}, True)

    assert moment(8, 6) == moment(24, 22)
    assert moment(8, 6) != moment(24, 23)


def test_node_state_snapshot_names_its_entry_relative_to_the_tile_base():
    """Entry 13 waiting for its transfer since cycle 95, seen at cycle 100 with base 10:
    entry 3 from the base, started 5 cycles ago; between grants the start stays absolute."""
    st = NodeState()
    st.k, st.start, st.stage = 13, 95, Wait.TRANSFER
    assert st.snapshot(10, 100, {}, False) == (Wait.TRANSFER, 3, None, -5, None)
    assert st.snapshot(10, 100, {}, True) == (Wait.TRANSFER, 3, None, 95, None)
