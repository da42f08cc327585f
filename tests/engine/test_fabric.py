"""The port fabric alone (engine/fabric.py), driven by tiny SimPy processes with an event log.

DESIGN "Arbitration sees every request of the cycle": a port that falls free in cycle c is
granted among every transfer that wants it in cycle c, by a rotating round-robin pointer over
the requesters (storage nodes in loop-tree order: the requester id), to the first one after the
requester served last; ports decide in order of most requesters (ties in architecture order);
a grant takes both of its ports; which process happens to run first never decides a grant.
"""

from __future__ import annotations

import itertools

import pytest
import simpy

from cyclesim.engine.fabric import Fabric
from cyclesim.vocabulary import Wait


def mover(env, fabric, log, who, keys, bursts, cycles=1, at_once=True, tl=None):
    """Move `bursts` bursts of `cycles` cycles each over the ports `keys`, one grant per burst,
    as a contested transfer does (engine/transfer.py); a grant taken back in the cycle it was
    made ("revoke") asks again."""
    proc = env.active_process
    ev = fabric.request(who, keys, "T", tl, at_once)
    done = 0
    while True:
        if ev is not None:
            yield ev
        log.append((env.now, "grant", who))
        fabric.start_run(keys, proc, stopping=True)  # burst by burst: only a revoke stops it
        try:
            yield env.timeout(cycles)
        except simpy.Interrupt as irq:
            fabric.end_run(keys)
            log.append((env.now, irq.cause, who))
            ev = fabric.release_and_request(who, keys, "T", None, tl, at_once)
            continue
        fabric.end_run(keys)
        done += 1
        if done == bursts:
            fabric.release(who, keys, env.now - cycles)
            log.append((env.now, "done", who))
            return
        ev = fabric.release_and_request(who, keys, "T", env.now - cycles, tl, at_once)


def closed_grants(grants: dict, key: str) -> list[tuple]:
    """(start, end, who) of a port's grants that held it at least one cycle (the rows' first three
    columns: start, end, requester)."""
    return [tuple(g[:3]) for g in grants[key] if g[1] > g[0]]


def test_round_robin_over_three_requesters_whatever_process_runs_first(env, log):
    # Port P; requesters 0, 2, 4 each want 2 bursts of 1 cycle, all asking at cycle 0. The
    # processes start in the order 4, 2, 0:
    #   cycle 0: 4 asks first, the port is free and nobody waits: granted at once,
    #            provisionally. 2 asks: with no one served yet the pointer ranks 0 < 2 < 4, so
    #            2 is ahead of 4 and takes the grant back (4's run is interrupted: "revoke",
    #            a zero-cycle grant row). 0 asks; 4 asks again. The end-of-cycle decision
    #            grants the first in rank: 0.
    #   cycle 1: 0 ends its burst and asks again; pointer at 0 -> the next after it: 2.
    #   cycle 2: pointer at 2 -> 4.  cycle 3: pointer at 4 -> wraps to 0 (its 2nd burst).
    #   cycle 4: 0 is done; pointer at 0 -> 2.  cycle 5: 2 is done -> 4.  cycle 6: 4 is done.
    grants: dict = {}
    fabric = Fabric(env, {"P": 8}, grants)
    for who in (4, 2, 0):
        env.process(mover(env, fabric, log, who, ("P",), bursts=2))
    env.run()
    assert log == [
        (0, "grant", 4),
        (0, "revoke", 4),
        (0, "grant", 0),
        (1, "grant", 2),
        (2, "grant", 4),
        (3, "grant", 0),
        (4, "done", 0),
        (4, "grant", 2),
        (5, "done", 2),
        (5, "grant", 4),
        (6, "done", 4),
    ]
    assert [tuple(g[:3]) for g in grants["P"]][0] == (0, 0, 4)  # the grant taken back
    assert closed_grants(grants, "P") == [
        (0, 1, 0),
        (1, 2, 2),
        (2, 3, 4),
        (3, 4, 0),
        (4, 5, 2),
        (5, 6, 4),
    ]


@pytest.mark.parametrize("order", list(itertools.permutations((0, 2, 4))))
def test_which_process_runs_first_never_decides_a_grant(env, log, order):
    # The same three requesters as above, started in every order: the grants that hold the
    # port are always 0, 2, 4, 0, 2, 4 (DESIGN: "Which process happens to run first inside a
    # cycle never decides a grant"); only the provisional grants taken back differ.
    grants: dict = {}
    fabric = Fabric(env, {"P": 8}, grants)
    for who in order:
        env.process(mover(env, fabric, log, who, ("P",), bursts=2))
    env.run()
    assert closed_grants(grants, "P") == [
        (0, 1, 0),
        (1, 2, 2),
        (2, 3, 4),
        (3, 4, 0),
        (4, 5, 2),
        (5, 6, 4),
    ]


def test_the_port_with_most_requesters_decides_first_and_a_grant_takes_both_ports(env, log):
    # Ports X, Y (architecture order X first). At cycle 0 all ask, none granted at once (as
    # a DRAM link asks): 0 wants X; 2 wants X and Y; 4 and 6 want Y.
    #   cycle 0: Y has 3 requesters, X 2: Y decides first. Nobody served yet: 2 ranks first
    #            and its other port X is free: 2 takes X and Y. X is then held: nothing more.
    #            (Had X decided first, 0 would take X and 4 Y.)
    #   cycle 1: 2 releases both. Y (4 and 6 wait) decides before X (0 waits): pointer of Y
    #            at 2 -> 4; pointer of X at 2 -> wraps to 0.
    #   cycle 2: 4 and 0 are done; Y's pointer at 4 -> 6.   cycle 3: 6 is done.
    grants: dict = {}
    fabric = Fabric(env, {"X": 8, "Y": 8}, grants)
    wants = {0: ("X",), 2: ("X", "Y"), 4: ("Y",), 6: ("Y",)}
    for who, keys in wants.items():
        env.process(mover(env, fabric, log, who, keys, bursts=1, at_once=False))
    env.run()
    assert log == [
        (0, "grant", 2),
        (1, "done", 2),
        (1, "grant", 4),
        (1, "grant", 0),
        (2, "done", 4),
        (2, "done", 0),
        (2, "grant", 6),
        (3, "done", 6),
    ]
    assert closed_grants(grants, "X") == [(0, 1, 2), (1, 2, 0)]
    assert closed_grants(grants, "Y") == [(0, 1, 2), (1, 2, 4), (2, 3, 6)]


def test_a_competitor_stops_a_run_at_the_end_of_its_burst_in_progress(env, log):
    # Requester 2 asks for P at cycle 0 (granted at once) and runs 5 bursts of 2 cycles in one
    # timeout, interruptible. Requester 0 asks at cycle 3: the run is told to stop
    # ("competitor"); burst 2..4 is in progress, so 2 releases at 4, and the decision of cycle
    # 4 grants 0. 0 asked in cycle 3 and was not granted then: its timeline says it waits for
    # the port from cycle 3 (Wait.PORT).
    grants: dict = {}
    fabric = Fabric(env, {"P": 8}, grants)
    tl0: list = []

    def runner():
        assert fabric.request(2, ("P",), "T") is None
        log.append((env.now, "grant", 2))
        fabric.start_run(("P",), env.active_process)
        try:
            yield env.timeout(10)
        except simpy.Interrupt as irq:
            log.append((env.now, irq.cause, 2))
            fabric.end_run(("P",))
            yield env.timeout(-env.now % 2)  # to the end of the burst in progress
        fabric.release(2, ("P",))
        log.append((env.now, "release", 2))

    def late():
        yield env.timeout(3)
        yield from mover(env, fabric, log, 0, ("P",), bursts=1, tl=tl0)

    env.process(runner())
    env.process(late())
    env.run()
    assert log == [
        (0, "grant", 2),
        (3, "competitor", 2),
        (4, "release", 2),
        (4, "grant", 0),
        (5, "done", 0),
    ]
    assert closed_grants(grants, "P") == [(0, 4, 2), (4, 5, 0)]
    assert tl0 == [(3, Wait.PORT, ("P",))]


def test_a_port_the_pe_array_takes_whole_is_granted_once_it_gives_width_back(env, log):
    # The PE array reserves all 8 bits of P at cycle 0: requester 0 asking at 0 is not granted
    # (no width left), and waits for the port from cycle 0. At cycle 3 the PE array keeps 4
    # bits: the port may serve a transfer again, and the decision of cycle 3 grants 0 with
    # 8 - 4 = 4 bits per cycle (DESIGN "The PE array on a port": it takes what it needs
    # first, transfers get the rest).
    grants: dict = {}
    fabric = Fabric(env, {"P": 8}, grants)
    tl0: list = []

    def pe_array():
        fabric.set_shares((("P", 8),))
        yield env.timeout(3)
        fabric.set_shares((("P", 4),))

    def transfer():
        ev = fabric.request(0, ("P",), "T", tl0)
        yield ev
        log.append((env.now, "grant", 0, fabric.width["P"] - fabric.reserved["P"]))
        yield env.timeout(1)
        fabric.release(0, ("P",))

    env.process(pe_array())
    env.process(transfer())
    env.run()
    assert log == [(3, "grant", 0, 4)]
    assert tl0 == [(0, Wait.PORT, ("P",))]
    assert closed_grants(grants, "P") == [(3, 4, 0)]
