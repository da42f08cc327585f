"""One transfer between a parent and a child storage node, burst by burst.

The one transfer loop (transfer) and what times its runs of bursts: the ports alone
(PortRuns), or a DRAM end (DramRuns, shared by engine/dram_port.py's timer and
engine/dram_loop.py's controller); the loop and every side's cut rules read together: a
cut's rules are what keep every cycle and trace byte exact. What a transfer carries across a
yield lives in its TransferState (transfer_state.py), so fast-forward can compare and move
it; its Link and burst tables are in link.py.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from cyclesim.engine.fabric import Fabric
from cyclesim.engine.link import (
    Link,
    burst_timing,
    moved_bits,
    n_bursts_of,
    named_keys,
    parent_named,
)
from cyclesim.engine.record import Recorder
from cyclesim.engine.rows import Rows
from cyclesim.engine.transfer_state import TransferState
from cyclesim.vocabulary import Wait

if TYPE_CHECKING:
    from simpy.resources.resource import Request

    from cyclesim.engine.environment import ReplayEnvironment
    from cyclesim.engine.storage_node import NodeState

# the vocabulary's members this module reads on the hot path, bound once: an enum
# attribute costs ~0.2 us in Python 3.11 (EnumType's __getattr__), a global ~0.02 us
_BURST = Wait.BURST
_DMA = Wait.DMA
_LATENCY = Wait.LATENCY
_PORT = Wait.PORT
_SETUP = Wait.SETUP
_WIDTH = Wait.WIDTH


def acquire_dma(
    env: ReplayEnvironment, rec: Recorder, tl: Rows, dma, x=None, who: int = 0
) -> Generator[simpy.Event, Any, Request | None]:
    """Take a channel of the link's DMA engine (waiting if all are busy, or until the end of
    the cycle decides among its requests: engine/dma.py) and pay its setup; return the
    channel request to release when the transfer ends (None without a DMA engine).
    x: the transfer's state (TransferState), which holds the channel across the yields;
    who: the requester (the link's), for the tie order of a cycle's requests."""
    if dma is None:
        return None
    resource, setup, name = dma
    channel = resource.ask(who, tl)
    if x is not None:
        x.channel, x.stage = channel, _DMA
    yield channel
    if setup:
        tl.append((env.now, _SETUP, name))
        if x is not None:
            x.stage = _SETUP
        yield env.timeout(setup)
        rec.events += 1
    return x.channel if x is not None else channel


def transfer(
    env: ReplayEnvironment,
    fabric: Fabric,
    rec: Recorder,
    tl: Rows,
    link: Link,
    parent_bits: int,
    child_bits: int,
    owner: NodeState | None = None,
):
    """Move parent_bits through the parent's port and child_bits through each child's port.

    Bursts are the smaller burst size of the two ports, counted on the side that moves more bits
    (moved_bits; the other side moves its share of a multicast or reduction in them); each
    burst holds both ports for the cycles of the slower side; latency is paid once, after the last burst,
    without holding the ports. Uncontested bursts run back to back in one timeout.

    The one transfer loop: what times a run of bursts is the link's side, the ports alone
    (PortRuns) or, when one end is a DRAM-modelled memory, the ports and the DRAM (its timer,
    engine/dram_port.py, or the controller in the loop, engine/dram_loop.py). What the transfer
    carries across a yield lives in a TransferState (owner.xfer while a plain transfer runs),
    read back after every yield: fast-forward may have shifted it in the meantime.

    Over 80 lines: every fill and write-back runs it (`yield from`) per transfer, burst run by
    burst run, and each sub-generator would cost a frame per yield on the hot path; what it
    carries across yields (the bursts left, the DMA channel, the DRAM side) lives in its locals.
    """
    big, small = parent_bits, child_bits
    sized = link.sized.get((big, small))
    if sized is None:
        sized = link.sized[(big, small)] = _sized(env, fabric, tl, link, big, small)
    n_bursts, asking, whole, ports = sized
    x = TransferState(big, small)
    x.burst = link.burst
    side: Any  # PortRuns, or a DRAM side's (engine/dram_port.py, engine/dram_loop.py)
    if ports is not None:
        side = ports
        if owner is not None:
            owner.xfer = x
    else:
        dram = link.dram  # (no ports: one end is a DRAM-modelled memory)
        assert dram is not None
        side = dram.begin(env, fabric, rec, tl, link, big, small, n_bursts)
    dma = link.dma
    if dma is not None:
        yield from acquire_dma(env, rec, tl, dma, x, link.who)
    pk, ck, keys, who = link.pk, link.ck, link.keys, link.who
    one_port = len(keys) == 1
    width, reserved, timings = fabric.width, fabric.reserved, link.timings
    proc = env.active_process
    # (the fabric notes a wait in tl; a DRAM side is never granted before the cycle's end:
    # requests it issued cannot be taken back by a revoke)
    ev = fabric.request(who, asking, link.tensor, tl, side.at_once)
    while True:
        if ev is not None:
            x.stage = _PORT
            yield ev
        x.stopping = False
        x.start = env.now
        while True:  # time bursts i.. at the current widths; re-time when the PE's share changes
            wp = width[pk] - reserved[pk]
            wc = width[ck] - reserved[ck]
            if wp <= 0 or wc <= 0:  # the PE array takes the whole port this cycle: hold and wait
                tl.append((env.now, _PORT, keys))
                wake = fabric.wait_for_width(keys)
                x.stage = _WIDTH
                yield wake
                rec.events += 1
                x.start = env.now
                continue
            shape = (big, small, wp, wc)
            timing = timings.get(shape)
            if timing is None:
                timing = timings[shape] = burst_timing(
                    big, small, link.burst, wp, wc, link.child_on_tie
                )
            side.plan(x, timing, shape)  # the run [x.i, x.j), ending at x.end
            fabric.start_run(keys, proc, x.stopping)
            x.stage = _BURST
            try:
                yield env.fast_timeout(x.end - x.start)
                rec.events += 2
                fabric.end_run(keys)
                side.ran(x)
                break
            except simpy.Interrupt as irq:
                fabric.end_run(keys)
                if side.cut(x, irq.cause):  # the grant ends after what finish() moves
                    yield from side.finish(x)
                    break
        # the grant ends: the bits of its whole bursts go into its record, per port
        lo = x.granted
        x.granted = x.i
        if x.i - lo == n_bursts:  # one grant moved them all (an uncontested transfer)
            moved = whole
        else:
            moved = moved_bits(big, small, link.burst, lo, x.i)
            if one_port:  # parent and child share it: the parent's side is recorded
                moved = moved[:1]
        if x.i >= n_bursts:
            fabric.release(who, keys, x.last_start, moved)
            break
        asking = side.asking(x)
        if asking[0] != pk:  # the child's port named first
            moved = moved[1], moved[0]
        ev = fabric.release_and_request(
            who, asking, link.tensor, x.last_start, tl, side.at_once, moved
        )
    yield from side.tail()
    latency = link.latency
    if latency:
        tl.append((env.now, _LATENCY, link.latency_key))
        x.stage = _LATENCY
        yield env.fast_timeout(latency)
        rec.events += 1
    if dma is not None and x.channel is not None:
        dma[0].release(x.channel)
    if owner is not None:
        owner.xfer = None


def _sized(env, fabric: Fabric, tl: Rows, link: Link, big: int, small: int) -> tuple:
    """What every transfer of big parent bits and small child bits on a link shares, made
    once per link and size (Link.sized): its bursts, the keys its first wait names first,
    what a grant of all its bursts moved, and, without a DRAM end, its side (PortRuns keeps
    no state of a transfer's own: that lives in its TransferState)."""
    # bursts are counted where the bits meet (moved_bits); the other side moves its share in
    # the same bursts, all instances in lockstep
    n_bursts = n_bursts_of(big, small, link.burst)
    asking = named_keys(link, big, small, fabric.width)  # the ports' full widths: fixed
    whole = (big,) if len(link.keys) == 1 else (big, small)
    ports = PortRuns(env, fabric, tl, link, n_bursts) if link.dram is None else None
    return n_bursts, asking, whole, ports


class PortRuns:
    """The ports alone time a transfer: an uncontested run goes up to the first burst that
    names the other port; a cut re-times the rest of the burst in progress at the new widths
    (a competitor: then round-robin; the PE array's share: the run goes on)."""

    at_once = True  # granted in the cycle it asks when the ports are free

    __slots__ = ("env", "fabric", "tl", "link", "n_bursts", "named")

    def __init__(self, env, fabric: Fabric, tl: Rows, link: Link, n_bursts: int) -> None:
        self.env, self.fabric, self.tl, self.link, self.n_bursts = env, fabric, tl, link, n_bursts
        # burst -> named_keys at the ports' full widths (fixed): one PortRuns serves every
        # transfer of its link and size, and a contested transfer asks once per burst
        self.named: dict[int, tuple[str, ...]] = {}

    def asking(self, x: TransferState) -> tuple[str, ...]:
        """The keys to ask for burst x.i with (a short last burst may tie)."""
        keys = self.named.get(x.i)
        if keys is None:
            keys = self.named[x.i] = named_keys(self.link, x.big, x.small, self.fabric.width, x.i)
        return keys

    def plan(self, x: TransferState, timing: tuple, shape: tuple) -> None:
        """Time bursts x.i.. from x.start: set x.first, x.j, x.end, x.last, x.wp, x.wc."""
        link, n_bursts = self.link, self.n_bursts
        _, _, wp, wc = shape
        cycles, parent_slower, prefix, splits = timing
        i, rest, start = x.i, x.rest, x.start
        if rest is None:
            first, slower = cycles[i], parent_slower[i]
        else:
            cp, cc = -(-rest[0] // wp), -(-rest[1] // wc)
            first, slower = max(cp, cc, 1), parent_named(cp, cc, link.child_on_tie)
        self.tl.append((start, _BURST, link.pk if slower else link.ck))
        # someone waits (or we were told to stop): this burst, then round-robin
        if x.stopping or i + 1 == n_bursts or self.fabric.contested(link.keys):
            j, end, last = i + 1, start + first, start
        else:  # nobody competes: the remaining bursts in one run, up to the first burst
            # that names the other port (a short last burst may tie: DESIGN "Naming a
            # stalled transfer's port"), which starts a run of its own
            j = n_bursts
            if parent_slower[i + 1] != slower:
                j = i + 1
            elif splits and splits[-1] > i + 1:
                j = splits[bisect_right(splits, i + 1)]
            if j == i + 1:
                end, last = start + first, start
            else:
                end = start + first + prefix[j] - prefix[i + 1]
                last = end - cycles[j - 1]
        x.first, x.j, x.end, x.last, x.wp, x.wc = first, j, end, last, wp, wc

    @staticmethod
    def ran(x: TransferState) -> None:
        x.i, x.rest = x.j, None
        x.last_start = x.last

    def cut(self, x: TransferState, cause) -> bool:
        """The run was interrupted now: the bursts it finished, the rest of the one in
        progress (x.rest) to re-time; True when the grant ends here."""
        now = self.env.now
        if cause == "revoke":  # granted at once, then someone ahead asked this
            return True  # cycle: nothing moved; ask again (engine/fabric.py request)
        link, n_bursts = self.link, self.n_bursts
        big, small, burst = x.big, x.small, link.burst
        i, rest, start, first, j = x.i, x.rest, x.start, x.first, x.j
        prefix = link.timings[(big, small, x.wp, x.wc)][2]
        # the bursts i..j-1 of the interrupted run, as they were timed: burst i + q
        # ends at base + prefix[i + 1 + q] (strictly later one after another)
        base = start + first - prefix[i + 1]
        done = bisect_right(prefix, now - base, i + 1, j + 1) - (i + 1)  # ended by now
        x.i = i + done
        if x.i >= n_bursts or done == j - i:
            x.rest = None
            x.last_start = base + prefix[i + done - 1] if done > 1 else start
            return True
        if done:
            b, sm = moved_bits(big, small, burst, i + done, i + done + 1)
        else:
            b, sm = rest if rest is not None else moved_bits(big, small, burst, i, i + 1)
        begun = base + prefix[i + done] if done else start
        moved = now - begun  # cycles of burst i already spent at the old widths
        if done and not moved and cause == "competitor":
            # a competitor asked in the cycle a burst ended: the next burst is
            # arbitrated among every request of this cycle (DESIGN "Arbitration sees
            # every request of the cycle"), not kept by the run
            x.rest = None
            x.last_start = base + prefix[i + done - 1] if done > 1 else start
            return True
        rest = (max(0, b - moved * x.wp), max(0, sm - moved * x.wc))
        if rest == (0, 0):
            x.i, x.rest = x.i + 1, None
            x.last_start = begun
            return True
        x.rest = rest
        x.stopping = x.stopping or cause == "competitor"
        x.start = now
        return False

    @staticmethod
    def finish(x: TransferState) -> tuple:
        return ()  # nothing left to move: the rest of a burst is re-timed by the loop

    @staticmethod
    def tail() -> tuple:
        return ()  # no wait after the last burst but the port latency


class DramRuns:
    """What the two DRAM sides share (TimerRuns, engine/dram_port.py; ControllerRuns,
    engine/dram_loop.py): never granted at once (the DRAM cannot take back what a revoked
    run issued), the port asked for named after the first burst, runs of about one DRAM row
    of the transfer's bytes when nobody competes, and a cut that finishes the burst in
    progress at the ports' current widths, then gives up the grant."""

    at_once = False

    def __init__(self, env, fabric: Fabric, rec: Recorder, tl: Rows, link: Link,
                 big: int, small: int, n_bursts: int) -> None:  # fmt: skip
        self.env, self.fabric, self.rec, self.tl, self.link = env, fabric, rec, tl, link
        self.big, self.small, self.n_bursts = big, small, n_bursts
        side = self.side = link.dram
        assert side is not None  # (made for links with a DRAM end)
        self.timer = side.timer
        self.dram_key = link.pk  # the parent end is the DRAM (fills read it, write-backs write it)
        self.count = max(big, small)  # the side bursts are counted on (moved_bits)
        self.total = side.total
        # an uncontested run covers about one DRAM row of the transfer's bytes: one event per row
        row_bytes = self.timer.config.row_bytes
        self.per_row = max(1, row_bytes * self.count // max(1, self.total * link.burst))
        self.asked = named_keys(link, big, small, fabric.width)
        self.cycles: list[int] = []
        self.prefix: list[int] = []
        self.in_progress = 0  # the burst in progress when the run was cut

    def byte_at(self, j: int) -> int:
        """Transfer bytes before burst j (the DRAM side, pro rata)."""
        return self.total * min(self.count, j * self.link.burst) // self.count

    def asking(self, x: TransferState) -> tuple[str, ...]:
        return self.asked

    def _choose_run(self, x: TransferState, timing: tuple, shape: tuple) -> int:
        """The run's end burst j, from x.i: one burst when someone competes, else a row's."""
        self.cycles, _, self.prefix, _ = timing
        x.wp, x.wc = shape[2], shape[3]
        i, n_bursts = x.i, self.n_bursts
        single = i + 1 == n_bursts or self.fabric.contested(self.link.keys) or self.per_row == 1
        x.stopping = single
        x.j = i + 1 if single else min(n_bursts, i + self.per_row)
        return x.j

    def _next(self, x: TransferState, end: int) -> None:
        """The run [x.i, x.j) ended at `end`: where the grant's last burst started."""
        x.last_start = max(x.start, end - self.cycles[x.j - 1])
        x.i = x.j

    def _finish_in_progress(self, x: TransferState, now: int):
        """Generator: move what is left at `now` of the burst in progress, at the ports'
        widths of the moment (the PE array's share may have changed)."""
        link, burst_at = self.link, self.in_progress
        moved = now - (x.start + self.prefix[burst_at] - self.prefix[x.i])
        bits = moved_bits(self.big, self.small, link.burst, burst_at, burst_at + 1)
        rest = (max(0, bits[0] - moved * x.wp), max(0, bits[1] - moved * x.wc))
        yield from finish_burst(self.env, self.fabric, self.rec, self.tl, link, rest, self.dram_key)


def finish_burst(env, fabric: Fabric, rec: Recorder, tl: Rows, link: Link, rest, port_key):
    """Move the (parent bits, child bits) left of a burst at the ports' current widths,
    re-timing whenever the PE array's share changes (a port never moves more than its width)."""
    width, reserved, pk, ck, keys = fabric.width, fabric.reserved, link.pk, link.ck, link.keys
    proc = env.active_process
    while rest[0] > 0 or rest[1] > 0:
        wp, wc = width[pk] - reserved[pk], width[ck] - reserved[ck]
        if wp <= 0 or wc <= 0:  # the PE array takes the whole port: hold it and wait
            tl.append((env.now, _PORT, keys))
            yield fabric.wait_for_width(keys)
            rec.events += 1
            continue
        tl.append((env.now, _BURST, port_key))
        begun = env.now
        fabric.start_run(keys, proc, True)
        try:
            yield env.timeout(max(-(-rest[0] // wp), -(-rest[1] // wc), 1))
            rec.events += 1
            fabric.end_run(keys)
            return
        except simpy.Interrupt:
            fabric.end_run(keys)
            moved = env.now - begun
            rest = (max(0, rest[0] - moved * wp), max(0, rest[1] - moved * wc))
