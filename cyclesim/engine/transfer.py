"""One transfer between a parent and a child storage node, burst by burst."""

from __future__ import annotations

from bisect import bisect_right

import simpy

from cyclesim.engine.fabric import Fabric
from cyclesim.engine.record import Recorder
from cyclesim.engine.state import NodeState, TransferState
from cyclesim.schedule.plan import PortRef
from cyclesim.vocabulary import Wait


class Link:
    """One direction of a node's transfers (fill or write-back), resolved once per replay.

    Holds the ports' keys, the burst size, the latency and, per transfer size and port widths,
    the cycles of every burst and their running sums, so a run of bursts is timed by a
    subtraction instead of a loop.
    """

    __slots__ = (
        "who",
        "tensor",
        "pk",
        "ck",
        "keys",
        "burst",
        "latency",
        "latency_key",
        "dma",
        "timings",
        "dram",
        "child_on_tie",
        "splits",
    )

    def __init__(
        self,
        who: int,
        tensor: str,
        parent_port: PortRef,
        child_port: PortRef,
        dma: tuple[simpy.Resource, int, str] | None,
    ) -> None:
        self.who = who
        self.tensor = tensor
        self.pk, self.ck = parent_port.key, child_port.key
        self.keys = (self.pk, self.ck) if self.pk != self.ck else (self.pk,)
        self.burst = min(parent_port.burst_bits, child_port.burst_bits)
        self.latency = max(parent_port.latency_cycles, child_port.latency_cycles)
        self.latency_key = (
            self.pk if parent_port.latency_cycles >= child_port.latency_cycles else self.ck
        )
        self.dma = dma
        self.timings: dict[tuple, tuple[list, list, list]] = {}  # (bits, widths) -> _timing
        self.dram = None  # dram_port.DramSide when one end is a DRAM-modelled memory
        self.child_on_tie = False  # a write-back: a tie names the child's port, which data leaves
        self.splits: dict[tuple, list[int]] = {}  # (bits, widths) -> _splits of its timing


def _burst_bits(big: int, small: int, burst: int, j: int) -> tuple[int, int]:
    """(parent bits, child bits) of burst j.

    Bursts are counted where the bits meet (DESIGN "Bursts are counted where the bits meet"):
    on the side that moves more bits — the parent's port when it carries several instances'
    shares (parent bits > child bits), else one instance's port — and the other side moves
    its share pro rata in the same bursts.
    """
    if big > small:
        lo, hi = j * burst, min(big, (j + 1) * burst)
        return hi - lo, small * hi // big - small * lo // big
    lo, hi = j * burst, min(small, (j + 1) * burst)
    return big * hi // small - big * lo // small, hi - lo


def n_bursts_of(big: int, small: int, burst: int) -> int:
    """Bursts of a transfer of big parent bits and small bits per child instance."""
    return -(-max(big, small) // burst)


def _timing(
    big: int, small: int, burst: int, wp: int, wc: int, child_on_tie: bool = False
) -> tuple[list, list, list]:
    """Per burst at widths (wp, wc): cycles, whether the parent side is the one named (the
    slower; on a tie the side the data leaves: the parent for a fill, the child for a
    write-back, child_on_tie), and the running sum of cycles (prefix[j] = cycles of bursts
    0..j-1). Burst j as in _burst_bits."""
    if big > small:  # counted on the parent side: the same with the sides swapped
        cycles, child_named, prefix = _timing(small, big, burst, wc, wp, not child_on_tie)
        return cycles, [not c for c in child_named], prefix
    full = (small - 1) // burst  # bursts before the last one, all of `burst` child bits
    if full > 1 and big * burst % small == 0:  # they all move the same parent bits too
        share = big * burst // small
        cp, cc = -(-share // wp), -(-burst // wc)
        c = max(cp, cc, 1)
        lo = full * burst  # the last burst: as in the loop below
        cp_last, cc_last = -(-(big - big * lo // small) // wp), -(-(small - lo) // wc)
        c_last = max(cp_last, cc_last, 1)
        prefix = list(range(0, full * c + 1, c))
        prefix.append(prefix[-1] + c_last)
        named = [_parent_named(cp, cc, child_on_tie)] * full
        return (
            [c] * full + [c_last],
            named + [_parent_named(cp_last, cc_last, child_on_tie)],
            prefix,
        )
    cycles, parent_slower, prefix = [], [], [0]
    t = 0
    below = 0  # parent bits of the bursts before j: big * lo // small
    for lo in range(0, small, burst):
        hi = min(small, lo + burst)
        upto = big * hi // small
        cp, cc = -((below - upto) // wp), -((lo - hi) // wc)  # ceil divisions
        below = upto
        c = max(cp, cc, 1)
        cycles.append(c)
        parent_slower.append(_parent_named(cp, cc, child_on_tie))
        t += c
        prefix.append(t)
    return cycles, parent_slower, prefix


def _splits(parent_named: list) -> list[int]:
    """The bursts that name another port than the burst before them."""
    return [m for m in range(1, len(parent_named)) if parent_named[m] != parent_named[m - 1]]


def _parent_named(cp: int, cc: int, child_on_tie: bool) -> bool:
    """Does a burst of cp parent-side and cc child-side cycles name the parent's port?"""
    return cp > cc or (cp == cc and not child_on_tie)


def named_keys(
    link: Link, big: int, small: int, width: dict[str, int], j: int = 0
) -> tuple[str, ...]:
    """The link's port keys, the one a wait for burst j is named after first: the port whose
    ceil(bits / width) for that burst is largest, on a tie the port the data leaves (DESIGN
    "Naming a stalled transfer's port")."""
    if len(link.keys) == 1:
        return link.keys
    pb, cb = _burst_bits(big, small, link.burst, j)
    cp, cc = -(-pb // width[link.pk]), -(-cb // width[link.ck])
    return link.keys if _parent_named(cp, cc, link.child_on_tie) else (link.ck, link.pk)


def acquire_dma(
    env: simpy.Environment, rec: Recorder, tl: list, dma, x=None, who: int = 0
) -> object:
    """Take a channel of the link's DMA engine (waiting if all are busy, or until the end of
    the cycle decides among its requests: engine/dma.py) and pay its setup; return the
    channel request to release when the transfer ends (None without a DMA engine).
    x: the transfer's state (engine/state.py), which holds the channel across the yields;
    who: the requester (the link's), for the tie order of a cycle's requests."""
    if dma is None:
        return None
    resource, setup, name = dma
    channel = resource.ask(who, tl)
    if x is not None:
        x.channel, x.stage = channel, Wait.DMA
    yield channel
    if setup:
        tl.append((env.now, Wait.SETUP, name))
        if x is not None:
            x.stage = Wait.SETUP
        yield env.timeout(setup)
        rec.events += 1
    return x.channel if x is not None else channel


def transfer(
    env: simpy.Environment,
    fabric: Fabric,
    rec: Recorder,
    tl: list,
    link: Link,
    parent_bits: int,
    child_bits: int,
    owner: NodeState | None = None,
):
    """Move parent_bits through the parent's port and child_bits through each child's port.

    Bursts are the smaller burst size of the two ports, counted on the side that moves more bits
    (_burst_bits; the other side moves its share of a multicast or reduction in them); each
    burst holds both ports for the cycles of the slower side; latency is paid once, after the last burst,
    without holding the ports. Uncontested bursts run back to back in one timeout.

    What the transfer carries across a yield lives in a TransferState (owner.xfer while it
    runs), read back after every yield: fast-forward may have shifted it in the meantime.
    """
    if link.dram is not None:  # the DRAM's timer times the bursts too (engine/dram_port.py)
        from cyclesim.engine.dram_port import dram_transfer

        yield from dram_transfer(env, fabric, rec, tl, link, parent_bits, child_bits)
        return
    x = TransferState(parent_bits, child_bits)
    x.burst = link.burst
    if owner is not None:
        owner.xfer = x
    dma = link.dma
    if dma is not None:
        yield from acquire_dma(env, rec, tl, dma, x, link.who)
    burst, pk, ck, keys, who = link.burst, link.pk, link.ck, link.keys, link.who
    width, reserved, timings = fabric.width, fabric.reserved, link.timings
    big, small = parent_bits, child_bits
    # bursts are counted where the bits meet (_burst_bits); the other side moves its share in
    # the same bursts, all instances in lockstep
    n_bursts = n_bursts_of(big, small, burst)
    proc = env.active_process
    asking = named_keys(link, big, small, width)  # keys, the port a wait names first
    ev = fabric.request(who, asking, link.tensor, tl)  # (the fabric notes a wait in tl)
    while True:
        if ev is not None:
            x.stage = Wait.PORT
            yield ev
        x.stopping = False
        x.start = env.now
        while True:  # time bursts i.. at the current widths; re-time when the PE's share changes
            wp = width[pk] - reserved[pk]
            wc = width[ck] - reserved[ck]
            if wp <= 0 or wc <= 0:  # the PE array takes the whole port this cycle: hold and wait
                tl.append((env.now, Wait.PORT, keys))
                wake = fabric.wait_for_width(keys)
                x.stage = Wait.WIDTH
                yield wake
                rec.events += 1
                x.start = env.now
                continue
            shape = (big, small, wp, wc)
            timing = timings.get(shape)
            if timing is None:
                timing = timings[shape] = _timing(big, small, burst, wp, wc, link.child_on_tie)
            cycles, parent_slower, prefix = timing
            i, rest, start = x.i, x.rest, x.start
            if rest is None:
                first, slower = cycles[i], parent_slower[i]
            else:
                cp, cc = -(-rest[0] // wp), -(-rest[1] // wc)
                first, slower = max(cp, cc, 1), _parent_named(cp, cc, link.child_on_tie)
            tl.append((start, Wait.BURST, pk if slower else ck))
            # someone waits (or we were told to stop): this burst, then round-robin
            if x.stopping or i + 1 == n_bursts or fabric.contested(keys):
                j, end, last = i + 1, start + first, start
            else:  # nobody competes: the remaining bursts in one run, up to the first burst
                # that names the other port (a short last burst may tie: DESIGN "Naming a
                # stalled transfer's port"), which starts a run of its own
                j = n_bursts
                if parent_slower[i + 1] != slower:
                    j = i + 1
                else:
                    splits = link.splits.get(shape)
                    if splits is None:
                        splits = link.splits[shape] = _splits(parent_slower)
                    if splits and splits[-1] > i + 1:
                        j = splits[bisect_right(splits, i + 1)]
                if j == i + 1:
                    end, last = start + first, start
                else:
                    end = start + first + prefix[j] - prefix[i + 1]
                    last = end - cycles[j - 1]
            x.first, x.j, x.end, x.last, x.wp, x.wc = first, j, end, last, wp, wc
            fabric.start_run(keys, proc, x.stopping)
            x.stage = Wait.BURST
            try:
                yield env.timeout(end - start)
                rec.events += 2
                fabric.end_run(keys)
                x.i, x.rest = x.j, None
                x.last_start = x.last
                break
            except simpy.Interrupt as irq:
                now = env.now
                fabric.end_run(keys)
                if irq.cause == "revoke":  # granted at once, then someone ahead asked this
                    break  # cycle: nothing moved; ask again (engine/fabric.py request)
                i, rest, start, first, j = x.i, x.rest, x.start, x.first, x.j
                prefix = timings[(big, small, x.wp, x.wc)][2]
                # the bursts i..j-1 of the interrupted run, as they were timed: burst i + q
                # ends at base + prefix[i + 1 + q] (strictly later one after another)
                base = start + first - prefix[i + 1]
                done = bisect_right(prefix, now - base, i + 1, j + 1) - (i + 1)  # ended by now
                x.i = i + done
                if x.i >= n_bursts or done == j - i:
                    x.rest = None
                    x.last_start = base + prefix[i + done - 1] if done > 1 else start
                    break
                if done:
                    b, sm = _burst_bits(big, small, burst, i + done)
                else:
                    b, sm = rest if rest is not None else _burst_bits(big, small, burst, i)
                begun = base + prefix[i + done] if done else start
                moved = now - begun  # cycles of burst i already spent at the old widths
                if done and not moved and irq.cause == "competitor":
                    # a competitor asked in the cycle a burst ended: the next burst is
                    # arbitrated among every request of this cycle (DESIGN "Arbitration sees
                    # every request of the cycle"), not kept by the run
                    x.rest = None
                    x.last_start = base + prefix[i + done - 1] if done > 1 else start
                    break
                rest = (max(0, b - moved * x.wp), max(0, sm - moved * x.wc))
                if rest == (0, 0):
                    x.i, x.rest = x.i + 1, None
                    x.last_start = begun
                    break
                x.rest = rest
                x.stopping = x.stopping or irq.cause == "competitor"
                x.start = now
        if x.i >= n_bursts:
            fabric.release(who, keys, x.last_start)
            break
        asking = named_keys(link, big, small, width, x.i)  # (a short last burst may tie)
        ev = fabric.release_and_request(who, asking, link.tensor, x.last_start, tl)
    latency = link.latency
    if latency:
        tl.append((env.now, Wait.LATENCY, link.latency_key))
        x.stage = Wait.LATENCY
        yield env.timeout(latency)
        rec.events += 1
    if x.channel is not None:
        dma[0].release(x.channel)
    if owner is not None:
        owner.xfer = None
