"""The capacity space alone (engine/space.py), driven by tiny SimPy processes.

DESIGN "A memory never holds more than its size": a fill into a memory without room waits
(`buffer_full`, named after the tile holding the room) until a release makes room.
"""

from __future__ import annotations

from types import SimpleNamespace

from cyclesim.engine.space import Space, ledger_overflows


def two_branch_plan():
    """Memory L (100 b) holds node 1 (leaf 0's operand) and node 2 (leaf 1's), 6 values of
    10 b each, one slot each: 120 b at worst > 100 b, so L is watched ("tight"). Node 0 is
    both nodes' parent in D (no size: never watched)."""

    def node(index, memory, parent, backing=False):
        return SimpleNamespace(
            index=index,
            memory=memory,
            parent=parent,
            tile_values=6,
            stored_bits=10,
            is_backing=backing,
            slots=1,
        )

    nodes = (node(0, "D", None, backing=True), node(1, "L", 0), node(2, "L", 0))
    leaves = (
        SimpleNamespace(operands=(SimpleNamespace(node=1),)),
        SimpleNamespace(operands=(SimpleNamespace(node=2),)),
    )
    return SimpleNamespace(sizes={"L": 100}, nodes=nodes, leaves=leaves)


def test_a_fill_without_room_waits_for_the_release_named_after_the_tile_holding_it(env, log):
    # Cycle 0: node 1 takes 60 b for its tile 0 (0 + 60 <= 100). Cycle 1: node 2's tile 0
    # needs 60 b, 60 + 60 > 100: it waits, named after tile (1, 0). Cycle 5: node 1 frees its
    # tile, the waiter looks again in that cycle, finds room and takes it.
    space = Space(env, two_branch_plan(), ledger=True)
    assert space.tight == {"L"} and space.watched(1) and not space.watched(0)

    def first():
        space.take(1, 0)
        log.append((env.now, "take", 1, 0))
        yield env.timeout(5)
        space.free(1, 0)
        log.append((env.now, "free", 1, 0))

    def second():
        yield env.timeout(1)
        while not space.room(2):
            log.append((env.now, "waits for room held by", space.blocker(2)))
            yield space.wait(2)
        space.take(2, 0)
        log.append((env.now, "take", 2, 0))

    env.process(first())
    env.process(second())
    env.run()
    assert log == [
        (0, "take", 1, 0),
        (1, "waits for room held by", (1, 0)),
        (5, "free", 1, 0),
        (5, "take", 2, 0),
    ]
    assert space.ledger == [(0, "L", 60), (5, "L", -60), (5, "L", 60)]
    assert ledger_overflows(space.ledger, {"L": 100}) == []


def test_a_fill_of_one_branch_takes_room_only_in_its_leafs_turn(env, log):
    # Node 2 is on leaf 1's path only: while the PE array runs leaf 0 (from cycle 0) it waits
    # for its turn, and goes when the PE array enters leaf 1 at cycle 4. Node 0, on both
    # paths, is always in its turn.
    space = Space(env, two_branch_plan(), ledger=False)
    assert space.turn(0)

    def pe_array():
        space.enter(0)
        log.append((env.now, "enter", 0))
        yield env.timeout(4)
        space.enter(1)
        log.append((env.now, "enter", 1))

    def fill():
        if not space.turn(2):
            log.append((env.now, "waits for its turn", 2))
            yield space.wait_turn(2)
        log.append((env.now, "turn", 2))

    env.process(pe_array())
    env.process(fill())
    env.run()
    assert log == [(0, "enter", 0), (0, "waits for its turn", 2), (4, "enter", 1), (4, "turn", 2)]


def test_the_ledger_counts_a_cycles_releases_before_its_takes():
    # 60 b enter at 0; at 3 60 b leave and 60 b enter (listed take first): no overflow, the
    # release of a cycle frees its room for a take of the same cycle. At 7 another 60 b
    # enter while 60 b are held: 120 b > 100 b.
    ledger = [(0, "L", 60), (3, "L", 60), (3, "L", -60), (7, "L", 60)]
    assert ledger_overflows(ledger, {"L": 100}) == ["memory 'L' holds 120 b > its 100 b at cycle 7"]
