"""One transfer between a parent and a child storage node, burst by burst."""

from __future__ import annotations

import simpy

from cyclesim.engine.fabric import Fabric
from cyclesim.engine.record import S_BURST, S_DMA, S_LATENCY, S_PORT, S_SETUP, Recorder
from cyclesim.schedule.plan import PortRef


def transfer(
    env: simpy.Environment,
    fabric: Fabric,
    rec: Recorder,
    tl: list,
    who: int,
    tensor: str,
    parent_port: PortRef,
    child_port: PortRef,
    parent_bits: int,
    child_bits: int,
    dma: tuple[simpy.Resource, int, str] | None,
):
    """Move parent_bits through the parent's port and child_bits through each child's port.

    Bursts are the smaller burst size of the two ports, counted on the child side (per
    instance; the parent moves its share of a multicast or reduction in the same bursts); each
    burst holds both ports for the cycles of the slower side; latency is paid once, after the last burst,
    without holding the ports. Uncontested bursts run back to back in one timeout.
    """
    channel = None
    if dma is not None:
        resource, setup, name = dma
        channel = resource.request()
        if not channel.triggered:
            tl.append((env.now, S_DMA, name))
        yield channel
        if setup:
            tl.append((env.now, S_SETUP, name))
            yield env.timeout(setup)
            rec.events += 1
    burst = min(parent_port.burst_bits, child_port.burst_bits)
    pk, ck = parent_port.key, child_port.key
    keys = (pk, ck) if pk != ck else (pk,)
    big, small = parent_bits, child_bits
    # bursts are counted on the child side (one instance); the parent side moves its share of a
    # multicast or reduction in the same bursts, all instances in lockstep
    n_bursts = -(-small // burst)
    i = 0  # next burst
    rest = None  # (parent bits, child bits) left of burst i when it was cut short
    ev = fabric.request(who, keys, tensor)
    while True:
        if ev is not None:
            tl.append((env.now, S_PORT, keys))
            yield ev
        stopping = False
        start = env.now
        while True:  # time bursts i.. at the current widths; re-time when the PE's share changes
            wp = fabric.effective_width(pk)
            wc = fabric.effective_width(ck)
            if wp <= 0 or wc <= 0:  # the PE array takes the whole port this cycle: hold and wait
                tl.append((env.now, S_PORT, keys))
                wake = fabric.wait_for_width(keys)
                yield wake
                rec.events += 1
                start = env.now
                continue
            sizes, ends = [], []
            t, j = start, i
            while j < n_bursts:
                if j == i and rest is not None:
                    b, sm = rest
                else:
                    lo, hi = j * burst, min(small, (j + 1) * burst)
                    b, sm = big * hi // small - big * lo // small, hi - lo
                cp, cc = -(-b // wp), -(-sm // wc)
                if j == i:
                    tl.append((start, S_BURST, pk if cp >= cc else ck))
                t += max(cp, cc, 1)
                sizes.append((b, sm))
                ends.append(t)
                j += 1
                if stopping or fabric.contested(keys):
                    break  # someone waits: this burst, then round-robin
            fabric.start_run(keys, env.active_process, stopping)
            try:
                yield env.timeout(ends[-1] - start)
                rec.events += 2
                fabric.end_run(keys)
                i, rest = j, None
                last_start = ends[-2] if len(ends) > 1 else start
                break
            except simpy.Interrupt as irq:
                now = env.now
                fabric.end_run(keys)
                done = sum(1 for e in ends if e <= now)
                i += done
                if i >= n_bursts or (done and done == len(ends)):
                    rest = None
                    last_start = ends[done - 2] if done > 1 else start
                    break
                b, sm = sizes[done]
                begun = ends[done - 1] if done else start
                moved = now - begun  # cycles of burst i already spent at the old widths
                rest = (max(0, b - moved * wp), max(0, sm - moved * wc))
                if rest == (0, 0):
                    i, rest = i + 1, None
                    last_start = begun
                    break
                stopping = stopping or irq.cause == "competitor"
                start = now
        if i >= n_bursts:
            fabric.release(who, keys, last_start)
            break
        ev = fabric.release_and_request(who, keys, tensor, last_start)
    latency = max(parent_port.latency_cycles, child_port.latency_cycles)
    if latency:
        tl.append(
            (
                env.now,
                S_LATENCY,
                pk if parent_port.latency_cycles >= child_port.latency_cycles else ck,
            )
        )
        yield env.timeout(latency)
        rec.events += 1
    if channel is not None:
        dma[0].release(channel)
