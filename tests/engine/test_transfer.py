"""One transfer through the fabric (engine/transfer.py), driven by tiny SimPy processes.

DESIGN "Ports": a transfer moves in bursts of the smaller burst size of its two ports; a burst
holds both ports for ceil(bits / width) cycles of the slower one; latency is paid once, after
the last burst, without holding the ports. Ports arbitrate per burst, round-robin.
"""

from __future__ import annotations

from cyclesim.engine.dma import Channels
from cyclesim.engine.fabric import Fabric
from cyclesim.engine.link import Link
from cyclesim.engine.record import Recorder
from cyclesim.engine.transfer import transfer
from cyclesim.schedule.types import PortRef
from cyclesim.vocabulary import Wait


def run_transfer(env, fabric, log, link, bits, tl):
    yield from transfer(env, fabric, Recorder(), tl, link, bits, bits)
    log.append((env.now, "done", link.who))


def test_an_uncontested_transfer_bursts_then_pays_its_latency(env, log):
    # Parent port Buf.rd: 8 b/cycle, bursts of 32 b, no latency; child port Reg.wr: 4 b/cycle,
    # bursts of 16 b, latency 2. 64 b move in bursts of min(32, 16) = 16 b: 4 bursts of
    # max(ceil(16 / 8), ceil(16 / 4)) = 4 cycles, the child's port the slower (the one named):
    # cycles 0..16 holding both ports, then the latency 16..18 holding none.
    parent = PortRef("Buf", "rd", 8, 32, 0)
    child = PortRef("Reg", "wr", 4, 16, 2)
    grants: dict = {}
    fabric = Fabric(env, {"Buf.rd": 8, "Reg.wr": 4}, grants)
    tl: list = []
    env.process(run_transfer(env, fabric, log, Link(0, "W", parent, child, None), 64, tl))
    env.run()
    assert log == [(18, "done", 0)]
    assert [tuple(g[:4]) for g in grants["Buf.rd"]] == [(0, 16, 0, "W")]
    assert [tuple(g[:4]) for g in grants["Reg.wr"]] == [(0, 16, 0, "W")]
    assert tl == [(0, Wait.BURST, "Reg.wr"), (16, Wait.LATENCY, "Reg.wr")]


def test_two_transfers_on_one_port_take_turns_per_burst(env, log):
    # Both read Buf.rd (8 b/cycle, bursts of 16 b) into their own child ports (16 b/cycle):
    # 32 b each, 2 bursts of max(16 / 8, 16 / 16) = 2 cycles. Requester 0 asks first at
    # cycle 0 and is granted at once; 2 asks in the same cycle, which stops 0's run after its
    # burst in progress (0..2). Round-robin per burst: 2 (2..4), 0 (4..6, done), 2 (6..8).
    buf = PortRef("Buf", "rd", 8, 16, 0)
    grants: dict = {}
    fabric = Fabric(env, {"Buf.rd": 8, "R0.wr": 16, "R2.wr": 16}, grants)
    for who in (0, 2):
        link = Link(who, "W", buf, PortRef(f"R{who}", "wr", 16, 16, 0), None)
        env.process(run_transfer(env, fabric, log, link, 32, []))
    env.run()
    assert log == [(6, "done", 0), (8, "done", 2)]
    assert [tuple(g[:3]) for g in grants["Buf.rd"]] == [(0, 2, 0), (2, 4, 2), (4, 6, 0), (6, 8, 2)]


def test_transfers_of_one_dma_channel_run_one_after_another_with_setup(env, log):
    # DESIGN "DMA engines limit how many transfers of their links run at once (channels) and
    # add setup cycles per transfer". One channel, setup 3; two transfers on ports of their
    # own (no port contention), 16 b each: one burst of max(16 / 8, 16 / 16) = 2 cycles, then
    # the child port's latency 1. Both ask at cycle 0; the decision at its end takes 0 first:
    #   0: channel 0..6 = setup 0..3, burst 3..5, latency 5..6, then the channel is released;
    #   2: waits for the channel from 0; setup 6..9, burst 9..11, latency 11..12.
    channels = Channels(env, 1, "d")
    widths = {"A.rd": 8, "A.wr": 16, "B.rd": 8, "B.wr": 16}
    fabric = Fabric(env, widths, {})
    tls = {0: [], 2: []}
    for who, mem in ((0, "A"), (2, "B")):
        link = Link(
            who,
            "W",
            PortRef(mem, "rd", 8, 16, 0),
            PortRef(mem, "wr", 16, 16, 1),
            (channels, 3, "d"),
        )
        env.process(run_transfer(env, fabric, log, link, 16, tls[who]))
    env.run()
    assert log == [(6, "done", 0), (12, "done", 2)]
    assert tls[0] == [(0, Wait.SETUP, "d"), (3, Wait.BURST, "A.rd"), (5, Wait.LATENCY, "A.wr")]
    assert tls[2] == [
        (0, Wait.DMA, "d"),
        (6, Wait.SETUP, "d"),
        (9, Wait.BURST, "B.rd"),
        (11, Wait.LATENCY, "B.wr"),
    ]


def test_each_grant_records_the_bits_its_whole_bursts_moved_on_each_port(env, log):
    # Bursts are counted where the bits meet (DESIGN): requester 0 moves 48 b through Buf.rd
    # (8 b/cycle, bursts of 16 b) and 20 b through its own R0.wr (16 b/cycle): the parent side
    # moves more, so 3 bursts of 16 parent bits, the child's share pro rata by running sums:
    # 20*16//48 = 6, 20*32//48 - 6 = 7, 20 - 13 = 7 child bits; each burst max(16/8, 7/16) = 2
    # cycles. Alone from cycle 0 it runs all 3 bursts in one run (0..6). Requester 2 (16 b,
    # one burst of 2 cycles on Buf.rd) asks at cycle 3: 0's run stops after its burst in
    # progress (burst 1, 2..4, its rest re-timed under the same grant), so 0's first grant
    # (0..4) moved bursts 0 and 1: 32 b on Buf.rd and 6 + 7 = 13 b on R0.wr. Round-robin
    # then serves 2 (4..6: 16 b on each port) and 0 its last burst (6..8: 16 b and 7 b).
    buf = PortRef("Buf", "rd", 8, 16, 0)
    grants: dict = {}
    fabric = Fabric(env, {"Buf.rd": 8, "R0.wr": 16, "R2.wr": 16}, grants)

    def late(proc, at):
        yield env.timeout(at)
        yield from proc

    link0 = Link(0, "W", buf, PortRef("R0", "wr", 16, 16, 0), None)
    link2 = Link(2, "W", buf, PortRef("R2", "wr", 16, 16, 0), None)
    env.process(transfer(env, fabric, Recorder(), [], link0, 48, 20))
    env.process(late(transfer(env, fabric, Recorder(), [], link2, 16, 16), 3))
    env.run()
    assert [tuple(g) for g in grants["Buf.rd"]] == [
        (0, 4, 0, "W", 32),
        (4, 6, 2, "W", 16),
        (6, 8, 0, "W", 16),
    ]
    assert [tuple(g) for g in grants["R0.wr"]] == [(0, 4, 0, "W", 13), (6, 8, 0, "W", 7)]
    assert [tuple(g) for g in grants["R2.wr"]] == [(4, 6, 2, "W", 16)]
