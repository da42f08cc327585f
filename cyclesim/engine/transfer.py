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

    Bursts are the smaller burst size of the two ports, counted on the parent side (the
    larger side: a multicast reads once what every child instance writes); each burst holds
    both ports for the cycles of the slower side; latency is paid once, after the last burst,
    without holding the ports.
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
    keys = (parent_port.key, child_port.key) if parent_port.key != child_port.key else (parent_port.key,)
    pk, ck = parent_port.key, child_port.key
    big, small = parent_bits, child_bits
    sent_big = sent_small = 0
    ev = fabric.request(who, keys, tensor)
    while True:
        if not ev.triggered:
            tl.append((env.now, S_PORT, keys))
            yield ev
        b = min(burst, big - sent_big)
        sent_big += b
        s = small * sent_big // big - sent_small
        sent_small += s
        cp = -(-b // max(1, fabric.effective_width(pk)))
        cc = -(-s // max(1, fabric.effective_width(ck)))
        cycles = max(cp, cc, 1)
        tl.append((env.now, S_BURST, pk if cp >= cc else ck))
        yield env.timeout(cycles)
        rec.events += 2
        if sent_big >= big:
            fabric.release(who, keys)
            break
        ev = fabric.release_and_request(who, keys, tensor)
    latency = max(parent_port.latency_cycles, child_port.latency_cycles)
    if latency:
        tl.append((env.now, S_LATENCY, pk if parent_port.latency_cycles >= child_port.latency_cycles else ck))
        yield env.timeout(latency)
        rec.events += 1
    if channel is not None:
        dma[0].release(channel)
