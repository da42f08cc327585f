"""The capacity space alone (engine/space.py), driven by tiny SimPy processes.

DESIGN "A memory never holds more than its size": a fill into a memory without room waits
(`buffer_full`, named after the tile holding the room) until a release makes room; room asked
for in one cycle is granted at its end in the tie order (node index), never process order.
"""

from __future__ import annotations

from types import SimpleNamespace

from cyclesim.engine.space import Space, ledger_overflows
from cyclesim.vocabulary import Wait


def two_branch_plan(one_leaf: bool = False):
    """Memory L (100 b) holds node 1 (leaf 0's operand) and node 2 (leaf 1's; with one_leaf,
    leaf 0 uses both), 6 values of 10 b each, one slot each: 120 b at worst > 100 b, so L is
    watched ("tight"). Node 0 is both nodes' parent in D (no size: never watched)."""

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
    if one_leaf:
        leaves = (SimpleNamespace(operands=(SimpleNamespace(node=1), SimpleNamespace(node=2))),)
    else:
        leaves = (
            SimpleNamespace(operands=(SimpleNamespace(node=1),)),
            SimpleNamespace(operands=(SimpleNamespace(node=2),)),
        )
    return SimpleNamespace(sizes={"L": 100}, nodes=nodes, leaves=leaves)


def test_a_fill_without_room_waits_for_the_release_named_after_the_tile_holding_it(env, log):
    # Cycle 0: the PE array runs leaf 0; node 1 asks 60 b for its tile 0, granted at the end of
    # the cycle (0 + 60 <= 100). Cycle 1: the PE array turns to leaf 1; node 2's tile 0 asks
    # 60 b, 60 + 60 > 100: it waits, its timeline names tile (1, 0). Cycle 5: node 1 frees its
    # tile; the decision at the end of cycle 5 finds the room and grants it to node 2.
    space = Space(env, two_branch_plan(), ledger=True)
    assert space.tight == {"L"} and space.watched(1) and not space.watched(0)
    tl1, tl2 = [], []

    def first():
        space.enter(0)
        yield space.ask(1, 0, tl1)
        log.append((env.now, "take", 1, 0))
        yield env.timeout(1)
        space.enter(1)
        yield env.timeout(4)
        space.free(1, 0)
        log.append((env.now, "free", 1, 0))

    def second():
        yield env.timeout(1)
        yield space.ask(2, 0, tl2)
        log.append((env.now, "take", 2, 0))

    env.process(first())
    env.process(second())
    env.run()
    assert log == [(0, "take", 1, 0), (5, "free", 1, 0), (5, "take", 2, 0)]
    assert tl1 == [] and tl2 == [(1, Wait.SPACE, (1, 0))]
    assert space.ledger == [(0, "L", 60), (5, "L", -60), (5, "L", 60)]
    assert ledger_overflows(space.ledger, {"L": 100}) == []


def test_a_fill_of_one_branch_takes_room_only_in_its_leafs_turn(env, log):
    # Node 2 is on leaf 1's path only: while the PE array runs leaf 0 (from cycle 0) it waits
    # for its turn (its timeline: no tile named), and is granted room when the PE array enters
    # leaf 1 at cycle 4 (room is there: nothing else holds any). Node 0, on both paths, is
    # always in its turn.
    space = Space(env, two_branch_plan(), ledger=False)
    assert space.turn(0)
    tl = []

    def pe_array():
        space.enter(0)
        log.append((env.now, "enter", 0))
        yield env.timeout(4)
        space.enter(1)
        log.append((env.now, "enter", 1))

    def fill():
        yield space.ask(2, 0, tl)
        log.append((env.now, "room", 2))

    env.process(pe_array())
    env.process(fill())
    env.run()
    assert log == [(0, "enter", 0), (4, "enter", 1), (4, "room", 2)]
    assert tl == [(0, Wait.SPACE, None)]


def test_room_asked_in_one_cycle_goes_in_tie_order_not_process_order(env, log):
    # D15 (the project's reading; DESIGN does not decide): nodes 1 and 2, both on leaf 0's
    # path, ask for 60 b each in cycle 0 and only 100 b exist. Node 2's process runs first,
    # but the end-of-cycle decision goes in the tie order of "Ports and links" (node index):
    # node 1 takes the room, node 2 waits named after tile (1, 0) until node 1 frees it at 3.
    space = Space(env, two_branch_plan(one_leaf=True), ledger=False)
    space.enter(0)
    tls = {1: [], 2: []}

    def fill(node):
        yield space.ask(node, 0, tls[node])
        log.append((env.now, "room", node))
        yield env.timeout(3)
        space.free(node, 0)

    env.process(fill(2))
    env.process(fill(1))
    env.run()
    assert log == [(0, "room", 1), (3, "room", 2)]
    assert tls == {1: [], 2: [(0, Wait.SPACE, (1, 0))]}


def test_the_ledger_counts_a_cycles_releases_before_its_takes():
    # 60 b enter at 0; at 3 60 b leave and 60 b enter (listed take first): no overflow, the
    # release of a cycle frees its room for a take of the same cycle. At 7 another 60 b
    # enter while 60 b are held: 120 b > 100 b.
    ledger = [(0, "L", 60), (3, "L", 60), (3, "L", -60), (7, "L", 60)]
    assert ledger_overflows(ledger, {"L": 100}) == ["memory 'L' holds 120 b > its 100 b at cycle 7"]
