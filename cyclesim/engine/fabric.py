"""Ports as plain resources: a burst holds both its ports; round-robin grants per burst.

Requests are granted greedily in round-robin order: the requester whose last burst started
longest ago goes first, ties to storage nodes in loop-tree order (then tensors in workload
order, which the node order already encodes). The PE array reserves the width it needs on a
port for a segment; transfers get the rest.

A transfer that nobody competes with holds its ports for all its remaining bursts in one
timeout ("a run"). A competing request interrupts the run, which then stops at the end of the
burst in progress — the same grants as burst by burst, at a fraction of the events. A change
of the PE array's reservation interrupts the holder too, which re-times the rest of its
bursts (the one in progress included) at the new width: a port never moves more bits in a
cycle than its width.
"""

from __future__ import annotations

from operator import itemgetter

import simpy

from cyclesim.engine.rows import Rows

_ROUND_ROBIN = itemgetter(0, 1)  # a waiting request's (last grant, who): oldest grant first

PE = -1  # requester id of the PE array; a node's fills are 2 * node, its write-backs 2 * node + 1


class Fabric:
    """Arbitrates bursts over the ports of all memories."""

    __slots__ = (
        "env",
        "holder",
        "waiting",
        "wanted",
        "last_grant",
        "grants",
        "reserved",
        "width",
        "runs",
        "width_waiters",
        "grant_log",
        "grant_every",
        "grants_seen",
    )

    def __init__(
        self, env: simpy.Environment, widths: dict[str, int], grants: dict[str, list]
    ) -> None:
        self.env = env
        self.width = widths
        self.holder: dict[str, int | None] = {k: None for k in widths}
        self.reserved: dict[str, int] = {k: 0 for k in widths}
        self.waiting: list[list] = []  # [last_grant, who, keys, event, tensor]
        self.wanted: dict[str, int] = {k: 0 for k in widths}  # port -> waiting requests for it
        self.last_grant: dict[int, int] = {}
        self.runs: dict[str, list] = {}  # port -> [process timing a burst on it, told to stop]
        self.width_waiters: dict[str, list[simpy.Event]] = {}  # port -> holders waiting for width
        self.grants = grants
        # fast-forward, when it looks: ~who of every grant_every-th grant goes to grant_log
        self.grant_log: list | None = None
        self.grant_every = 1
        self.grants_seen = 0
        for k in widths:
            grants.setdefault(k, Rows())

    def request(self, who: int, keys: tuple[str, ...], tensor: str) -> simpy.Event | None:
        """None if every port in keys is granted to who now, else an event that fires when they are."""
        holder, reserved, width, wanted = self.holder, self.reserved, self.width, self.wanted
        for k in keys:
            if holder[k] is not None or reserved[k] >= width[k] or wanted[k]:
                break
        else:  # free and nobody waits for them: granted at once
            now = self.env.now
            grants = self.grants
            for k in keys:
                holder[k] = who
                grants[k].append([now, None, who, tensor])
            self.last_grant[who] = now
            if self.grant_log is not None:
                self.grants_seen += 1
                if not self.grants_seen % self.grant_every:
                    self.grant_log.append(~who)
            return None
        ev = self.env.event()
        self.waiting.append([self.last_grant.get(who, -1), who, keys, ev, tensor])
        runs = self.runs
        for k in keys:
            wanted[k] += 1
            run = runs.get(k)
            if run is not None and not run[1]:
                self._interrupt(run, "competitor")
        self._dispatch()
        return ev

    def release(self, who: int, keys: tuple[str, ...], last_burst_start: int | None = None) -> None:
        now = self.env.now
        holder, grants = self.holder, self.grants
        for k in keys:
            holder[k] = None
            _close(grants[k], now)
        if last_burst_start is not None:
            self.last_grant[who] = last_burst_start
        if self.waiting:
            self._dispatch()

    def release_and_request(
        self, who: int, keys: tuple[str, ...], tensor: str, last_burst_start: int | None = None
    ) -> simpy.Event:
        """End a burst and ask for the next one in one step, so round-robin sees both."""
        now = self.env.now
        for k in keys:
            self.holder[k] = None
            _close(self.grants[k], now)
        if last_burst_start is not None:
            self.last_grant[who] = last_burst_start
        return self.request(who, keys, tensor)

    def contested(self, keys: tuple[str, ...]) -> bool:
        """Does any waiting request want one of these ports?"""
        wanted = self.wanted
        for k in keys:
            if wanted[k]:
                return True
        return False

    def start_run(self, keys: tuple[str, ...], proc: simpy.Process, stopping: bool = False) -> None:
        """proc times bursts on these ports; it may be interrupted until end_run."""
        run = [proc, stopping]
        for k in keys:
            self.runs[k] = run

    def end_run(self, keys: tuple[str, ...]) -> None:
        for k in keys:
            self.runs.pop(k, None)

    def stop_run(self, keys: tuple[str, ...], cause: str) -> None:
        """Interrupt the run timed on these ports, if it is still going (engine/dram_port.py:
        another link of the same DRAM cuts it)."""
        run = self.runs.get(keys[0])
        if run is not None:
            self._interrupt(run, cause)

    def _interrupt(self, run: list, cause: str) -> None:
        for k in [k for k, r in self.runs.items() if r is run]:
            del self.runs[k]
        run[0].interrupt(cause)

    def wait_for_width(self, keys: tuple[str, ...]) -> simpy.Event:
        """An event that fires when the PE array's reservation on one of these ports changes."""
        ev = self.env.event()
        for k in keys:
            waiters = self.width_waiters.setdefault(k, [])
            if waiters and waiters[0].triggered:  # woken through its other port: drop them
                waiters[:] = [w for w in waiters if not w.triggered]
            waiters.append(ev)
        return ev

    def effective_width(self, key: str) -> int:
        return self.width[key] - self.reserved[key]

    def reserve(self, key: str, bits_per_cycle: int) -> None:
        """The PE array takes bits_per_cycle of a port's width (0 gives it back)."""
        self.set_shares(((key, bits_per_cycle),))

    def set_shares(self, shares) -> None:
        """reserve(key, bits) for each (key, bits) of shares, in order, in one call."""
        width, reserved, runs, width_waiters = (
            self.width,
            self.reserved,
            self.runs,
            self.width_waiters,
        )
        for key, bits in shares:
            if bits > width[key]:
                bits = width[key]
            if reserved[key] == bits:
                continue
            reserved[key] = bits
            if width_waiters:
                for ev in width_waiters.pop(key, ()):
                    if not ev.triggered:  # one event may wait on both ports of a transfer
                        ev.succeed()
            run = runs.get(key)
            if run is not None:
                self._interrupt(run, "reserve")
            if not bits and self.waiting:
                self._dispatch()

    def _dispatch(self) -> None:
        waiting = self.waiting
        if not waiting:
            return
        holder, reserved, width, wanted = self.holder, self.reserved, self.width, self.wanted
        if len(waiting) > 1:
            waiting.sort(key=_ROUND_ROBIN)
        granted = False
        keep = []
        for w in waiting:
            keys = w[2]
            for k in keys:
                if holder[k] is not None or reserved[k] >= width[k]:
                    keep.append(w)
                    break
            else:
                now = self.env.now
                who = w[1]
                for k in keys:
                    holder[k] = who
                    wanted[k] -= 1
                    self.grants[k].append([now, None, who, w[4]])
                self.last_grant[who] = now
                granted = True
                w[3].succeed()
                if self.grant_log is not None:
                    self.grants_seen += 1
                    if not self.grants_seen % self.grant_every:
                        self.grant_log.append(~who)
        if granted:
            self.waiting = keep


def _close(grants: list, now: int) -> None:
    """End the open grant (a list while open) at now, as a tuple: closed grants never change,
    and fast-forward copies them by the thousand (a tuple is made faster than a list and
    leaves the garbage collector's lists once it is seen to hold no references)."""
    start, _, who, tensor = grants[-1]
    grants[-1] = (start, now, who, tensor)
