"""The tile tables alone (engine/tiles.py): a tile is done (True) or holds the one event its
waiters share; the entry classifier's strides agree with the loop digits they replace."""

from __future__ import annotations

from types import SimpleNamespace

from cyclesim.engine.tiles import Tiles, entry_classifier


def test_a_waiter_resumes_in_the_cycle_its_tile_is_fired(env, log):
    # The user of tile 5 asks at cycle 0 (not resident: it gets an event), the filler fires
    # the tile at cycle 4: the user resumes at 4, and asking again finds it done (None).
    tiles = Tiles(env)

    def user():
        ev = tiles.waiter(tiles.resident, 5)
        log.append((env.now, "waits", ev is not None))
        yield ev
        log.append((env.now, "resident", tiles.waiter(tiles.resident, 5)))

    def filler():
        yield env.timeout(4)
        tiles.fire(tiles.resident, 5)
        log.append((env.now, "fired"))

    env.process(user())
    env.process(filler())
    env.run()
    assert log == [(0, "waits", True), (4, "fired"), (4, "resident", None)]


def test_waiters_of_one_tile_share_one_event_and_a_tile_nobody_awaits_costs_none(env):
    tiles = Tiles(env)
    first = tiles.waiter(tiles.released, 2)
    assert tiles.waiter(tiles.released, 2) is first  # a second waiter: the same event
    tiles.fire(tiles.used, 3)  # nobody waited for tile 3: no event was ever made
    assert tiles.used == {3: True}
    assert tiles.waiter(tiles.used, 3) is None
    tiles.fire(tiles.released, 2)
    assert first.triggered and tiles.released == {2: True}


def test_the_entry_classifier_reads_first_visit_element_and_final_visit_off_the_digits():
    # A node below three counted loops, outermost first, bounds (2, 3, 4); the middle one does
    # not index the tensor. Entry k has digits (d0, d1, d2), k = 12 d0 + 4 d1 + d2:
    #   first visit of its element <=> every non-indexing digit is 0: d1 == 0
    #   final visit                <=> every non-indexing digit is at its last value: d1 == 2
    #   element key: the indexing digits, innermost fastest: d2 + 4 d0
    node = SimpleNamespace(counted=(2, 3, 4), relevant=(True, False, True))
    first_and_key, final = entry_classifier(node)
    assert first_and_key(5) == (False, 1) and not final(5)  # digits (0, 1, 1)
    assert first_and_key(13) == (True, 5) and not final(13)  # digits (1, 0, 1)
    assert first_and_key(23) == (False, 7) and final(23)  # digits (1, 2, 3)
    for k in range(24):
        d0, d1, d2 = k // 12, k // 4 % 3, k % 4
        assert first_and_key(k) == (d1 == 0, d2 + 4 * d0)
        assert final(k) == (d1 == 2)


def test_adjacent_loops_of_one_kind_merge_into_one_run():
    # Bounds (2, 3, 5, 4), indexing (yes, no, no, yes): the two middle loops form one run of
    # span 15 at stride 4. Entry k = 60 d0 + 20 d1 + 4 d2 + d3; first <=> d1 == d2 == 0,
    # final <=> d1 == 2 and d2 == 4, key d3 + 4 d0.
    node = SimpleNamespace(counted=(2, 3, 5, 4), relevant=(True, False, False, True))
    first_and_key, final = entry_classifier(node)
    for k in range(120):
        d0, d1, d2, d3 = k // 60, k // 20 % 3, k // 4 % 5, k % 4
        assert first_and_key(k) == (d1 == 0 and d2 == 0, d3 + 4 * d0)
        assert final(k) == (d1 == 2 and d2 == 4)
