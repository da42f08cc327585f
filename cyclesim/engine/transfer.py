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
    ev = fabric.request(who, keys, tensor)
    while True:
        if ev is not None:
            tl.append((env.now, S_PORT, keys))
            yield ev
        wp = max(1, fabric.effective_width(pk))
        wc = max(1, fabric.effective_width(ck))
        start = env.now
        # cycles of bursts i.. while nobody competes: one timeout for the whole run
        ends = []
        t = start
        j = i
        slow = None
        cum_big = big * min(small, i * burst) // small
        while j < n_bursts:
            hi = min(small, (j + 1) * burst)
            s = hi - j * burst
            b_hi = big * hi // small
            b = b_hi - cum_big
            cum_big = b_hi
            cp = -(-b // wp)
            cc = -(-s // wc)
            if slow is None:
                slow = pk if cp >= cc else ck
            t += max(cp, cc, 1)
            ends.append(t)
            j += 1
            if fabric.contested(keys):
                break  # someone waits already: one burst, then round-robin
        tl.append((start, S_BURST, slow))
        if len(ends) > 1:
            fabric.start_run(keys, env.active_process)
            try:
                yield env.timeout(ends[-1] - start)
                done = len(ends)
            except simpy.Interrupt:
                now = env.now
                done = next(x for x, e in enumerate(ends) if e >= now) + 1
                fabric.end_run(keys)
                if ends[done - 1] > now:
                    yield env.timeout(ends[done - 1] - now)
            fabric.end_run(keys)
        else:
            yield env.timeout(ends[0] - start)
            done = 1
        rec.events += 2
        i += done
        last_start = ends[done - 2] if done >= 2 else start
        if i >= n_bursts:
            fabric.release(who, keys, last_start)
            break
        ev = fabric.release_and_request(who, keys, tensor, last_start)
    latency = max(parent_port.latency_cycles, child_port.latency_cycles)
    if latency:
        tl.append((env.now, S_LATENCY, pk if parent_port.latency_cycles >= child_port.latency_cycles else ck))
        yield env.timeout(latency)
        rec.events += 1
    if channel is not None:
        dma[0].release(channel)
