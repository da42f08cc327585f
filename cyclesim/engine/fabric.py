"""Ports as plain resources: a burst holds both its ports; round-robin grants per burst.

Requests are granted greedily in round-robin order: the requester granted least recently
goes first, ties to storage nodes in loop-tree order (then tensors in workload order, which
the node order already encodes). The PE array reserves the width it needs on a port for the
length of a segment; transfers get the rest.
"""

from __future__ import annotations

import simpy

PE = -1  # requester id of the PE array


class Fabric:
    """Arbitrates bursts over the ports of all memories."""

    __slots__ = ("env", "holder", "waiting", "last_grant", "grants", "reserved", "width", "_seq")

    def __init__(self, env: simpy.Environment, widths: dict[str, int], grants: dict[str, list]) -> None:
        self.env = env
        self.width = widths
        self.holder: dict[str, int | None] = {k: None for k in widths}
        self.reserved: dict[str, int] = {k: 0 for k in widths}
        self.waiting: list[list] = []  # [last_grant, who, keys, event, tensor]
        self.last_grant: dict[int, int] = {}
        self.grants = grants
        for k in widths:
            grants.setdefault(k, [])

    def request(self, who: int, keys: tuple[str, ...], tensor: str) -> simpy.Event:
        """An event that fires when every port in keys is granted to who."""
        ev = self.env.event()
        self.waiting.append([self.last_grant.get(who, -1), who, keys, ev, tensor])
        self._dispatch()
        return ev

    def release(self, who: int, keys: tuple[str, ...]) -> None:
        now = self.env.now
        for k in keys:
            self.holder[k] = None
            self.grants[k][-1][1] = now
        self._dispatch()

    def release_and_request(self, who: int, keys: tuple[str, ...], tensor: str) -> simpy.Event:
        """End a burst and ask for the next one in one step, so round-robin sees both."""
        now = self.env.now
        for k in keys:
            self.holder[k] = None
            self.grants[k][-1][1] = now
        return self.request(who, keys, tensor)

    def effective_width(self, key: str) -> int:
        return self.width[key] - self.reserved[key]

    def reserve(self, key: str, bits_per_cycle: int) -> None:
        """The PE array takes bits_per_cycle of a port's width for a segment (0 gives it back)."""
        self.reserved[key] = min(bits_per_cycle, self.width[key])
        if not bits_per_cycle:
            self._dispatch()

    def _dispatch(self) -> None:
        if not self.waiting:
            return
        holder = self.holder
        self.waiting.sort(key=lambda w: (w[0], w[1]))
        granted = []
        for w in self.waiting:
            keys = w[2]
            if all(holder[k] is None and self.reserved[k] < self.width[k] for k in keys):
                now = self.env.now
                for k in keys:
                    holder[k] = w[1]
                    self.grants[k].append([now, None, w[1], w[4]])
                self.last_grant[w[1]] = now
                granted.append(w)
                w[3].succeed()
        if granted:
            done = {id(w) for w in granted}
            self.waiting = [w for w in self.waiting if id(w) not in done]
