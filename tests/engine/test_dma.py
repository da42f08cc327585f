"""A DMA engine's channels alone (engine/dma.py), driven by tiny SimPy processes.

DESIGN "Arbitration sees every request of the cycle", applied to channels: requests of earlier
cycles first, and among requests of one cycle the tie order (the requester id: storage nodes in
loop-tree order, a node's fill before its write-back), decided at the end of the cycle.
"""

from __future__ import annotations

from cyclesim.engine.dma import Channels
from cyclesim.vocabulary import Wait


def test_channels_go_to_earlier_cycles_first_then_in_tie_order(env, log):
    # One channel; each requester holds it 3 cycles. 4, 0 and 2 ask at cycle 0 (in that process
    # order), 1 asks at cycle 2.
    #   cycle 0: the decision at the end of the cycle takes the lowest id: 0 (0..3). 4 and 2
    #            were not granted in the cycle they asked: they wait from 0.
    #   cycle 2: 1 asks while the channel is busy: it waits from 2.
    #   cycle 3: 0 releases; waiting (asked at 0) 2 and 4, (asked at 2) 1: 2 (3..6).
    #   cycle 6: 4, asked at 0, before 1, asked at 2, although 1 < 4 (6..9).  cycle 9: 1.
    channels = Channels(env, 1, "dma0")
    timelines = {who: [] for who in (0, 1, 2, 4)}

    def asker(who, at):
        yield env.timeout(at)
        req = channels.ask(who, timelines[who])
        yield req
        log.append((env.now, "channel", who))
        yield env.timeout(3)
        channels.release(req)

    for who, at in ((4, 0), (0, 0), (2, 0), (1, 2)):
        env.process(asker(who, at))
    env.run()
    assert log == [(0, "channel", 0), (3, "channel", 2), (6, "channel", 4), (9, "channel", 1)]
    assert timelines == {
        0: [],
        1: [(2, Wait.DMA, "dma0")],
        2: [(0, Wait.DMA, "dma0")],
        4: [(0, Wait.DMA, "dma0")],
    }


def test_two_channels_serve_two_requests_of_one_cycle_at_once(env, log):
    # Two channels, three requests at cycle 0 (ids 2, 1, 0 in process order), each held 2
    # cycles: 0 and 1 at 0, 2 at 2 (it waits from 0).
    channels = Channels(env, 2, "dma0")
    tl2: list = []

    def asker(who, tl):
        req = channels.ask(who, tl)
        yield req
        log.append((env.now, "channel", who))
        yield env.timeout(2)
        channels.release(req)

    for who in (2, 1, 0):
        env.process(asker(who, tl2 if who == 2 else []))
    env.run()
    assert log == [(0, "channel", 0), (0, "channel", 1), (2, "channel", 2)]
    assert tl2 == [(0, Wait.DMA, "dma0")]
