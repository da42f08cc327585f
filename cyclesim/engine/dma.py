"""A DMA engine's channels: granted at the end of the cycle among all its requests.

DESIGN "Arbitration sees every request of the cycle", applied to channels: requests of
earlier cycles first (first come, first served), and among requests of the same cycle the
tie order of "Ports and links" (storage nodes in loop-tree order, then tensors in workload
order; a node's fill before its write-back). Like the fabric's grants (engine/fabric.py),
the decision is a zero-delay event, queued only in cycles in which a channel is free and
someone asks for one. It comes before the fabric's (CHANNELS, after every ordinary event and
before DECIDE): a transfer granted a channel (setup 0) asks for its ports in the same cycle,
so it takes part in that cycle's port arbitration whichever process ran first.
"""

from __future__ import annotations

import simpy
from simpy.resources.resource import Request

from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.engine.fabric import DECIDE
from cyclesim.engine.rows import Rows
from cyclesim.engine.snapshot import Origin
from cyclesim.vocabulary import Wait

CHANNELS = DECIDE - 0.5  # SimPy priority: after NORMAL (1), before the port decision (2)


class Channels(simpy.Resource):
    """A simpy.Resource whose free channels are handed out by _decide, never on request."""

    def __init__(self, env: ReplayEnvironment, capacity: int, name: str) -> None:
        super().__init__(env, capacity)
        self.name = name
        self.deciding = False  # an end-of-cycle decision is queued

    def ask(self, who: int, tl: Rows) -> Request:
        """A request for a channel by requester who (engine/fabric.py requester()), whose
        timeline tl gets the waiting state if it is not granted in the cycle it asks in."""
        req = self.request()
        req.cycle, req.who, req.tl = self._env.now, who, tl
        req.noted = len(self.users) >= self.capacity
        if req.noted:  # every channel busy: it waits at least until one is released
            tl.append((self._env.now, Wait.DMA, self.name))
        return req

    def _do_put(self, event) -> None:
        if len(self.users) < self.capacity and not self.deciding:
            self.deciding = True
            self._env.call(self._decide, CHANNELS)

    def _decide(self, _event: simpy.Event | None = None) -> None:
        """Grant the free channels: earlier cycles first, then the tie order."""
        self.deciding = False
        queue, now = self.put_queue, self._env.now
        queue.sort(key=lambda r: (r.cycle, r.who))  # stable: earlier requests stay first
        while queue and len(self.users) < self.capacity:
            req = queue.pop(0)
            self.users.append(req)
            req.usage_since = now
            req.succeed()
        for req in queue:  # not granted in the cycle they asked in: they wait
            if not req.noted:
                req.noted = True
                req.tl.append((now, Wait.DMA, self.name))

    def snapshot(self, origin: Origin) -> tuple:
        """Who holds a channel and who waits (asked in this cycle: the decision ranks it with
        the others), relative to origin (engine/snapshot.py). Nothing in it is a cycle: a
        jump moves only the queued decision, with the queue."""
        name, now = self.name, origin.now
        users = tuple(
            (origin.process(q.proc), origin.event(q, ("dma", name, "user", i)))
            for i, q in enumerate(self.users)
        )
        waiting = tuple(
            (
                origin.process(q.proc),
                origin.event(q, ("dma", name, "queue", i)),
                q.cycle == now,
                q.noted,
            )
            for i, q in enumerate(self.queue)
        )
        return (name, users, waiting, self.deciding)
