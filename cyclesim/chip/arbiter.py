"""The chip's links, buses and DRAM port as ports arbitrated per burst, by DESIGN's rule
"Arbitration sees every request of the cycle": grants of a cycle are decided once every
process that runs in that cycle has run, port by port (most requesters first, ties in port
order), each port by a rotating round-robin pointer over requesters in rank order (hop id);
a grant takes every port the burst needs."""

from __future__ import annotations

import simpy


class Arbiter:
    def __init__(self, env: simpy.Environment, keys: tuple[str, ...]) -> None:
        self.env = env
        self.keys = keys
        self.order = {k: i for i, k in enumerate(keys)}
        self.holder: dict[str, int | None] = dict.fromkeys(keys)
        self.pointer: dict[str, int] = dict.fromkeys(keys, -1)  # id served last
        self.waiting: dict[int, tuple[tuple[str, ...], simpy.Event]] = {}
        self.grants: dict[str, list[tuple[int, int, int, int]]] = {k: [] for k in keys}
        self._open: dict[str, tuple[int, int]] = {}  # port -> (start, who) of the current grant
        self._bits: dict[int, int] = {}
        self._wake: simpy.Event | None = None
        self.decisions = 0

    def request(self, who: int, keys: tuple[str, ...], bits: int) -> simpy.Event:
        """An event that fires in the cycle the burst is granted all its ports."""
        ev = self.env.event()
        self.waiting[who] = (keys, ev)
        self._bits[who] = bits
        self._kick()
        return ev

    def release(self, who: int, keys: tuple[str, ...]) -> None:
        now = self.env.now
        for k in keys:
            start, w = self._open.pop(k)
            self.grants[k].append((start, now, w, self._bits[w]))
            self.holder[k] = None
        if self.waiting:
            self._kick()

    def _kick(self) -> None:
        if self._wake is None:
            self._wake = self.env.event()
            self.env.process(self._decide_at_end_of_cycle(self._wake))
            self._wake.succeed()

    def _decide_at_end_of_cycle(self, wake: simpy.Event):
        yield wake
        while self.env.peek() == self.env.now:  # others still run in this cycle: let them
            yield self.env.timeout(0)
        self._wake = None
        self._decide()

    def _decide(self) -> None:
        self.decisions += 1
        wanted: dict[str, list[int]] = {}
        for who, (keys, _) in self.waiting.items():
            for k in keys:
                wanted.setdefault(k, []).append(who)
        now = self.env.now
        for k in sorted(wanted, key=lambda k: (-len(wanted[k]), self.order[k])):
            if self.holder[k] is not None:
                continue
            last = self.pointer[k]
            ranked = sorted(wanted[k], key=lambda w: (w <= last, w))
            for who in ranked:
                if who not in self.waiting:
                    continue
                keys, ev = self.waiting[who]
                if all(self.holder[x] is None for x in keys):
                    for x in keys:
                        self.holder[x] = who
                        self.pointer[x] = who
                        self._open[x] = (now, who)
                    del self.waiting[who]
                    ev.succeed()
                    break
