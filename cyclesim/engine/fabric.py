"""Ports as plain resources: a burst holds both its ports; round-robin grants per burst.

DESIGN "Arbitration sees every request of the cycle": the grants of a cycle are decided once
every process of that cycle has run — by an event at the end of the cycle (SimPy priority
DECIDE, after every ordinary event of that time), scheduled only in cycles in which someone
waits for a port. Free ports nobody waits for go at once to the first comer, provisionally:
a requester of the same cycle that the round-robin puts ahead of it takes them back (its run
is interrupted before it moved a bit) and the decision settles it. There, port
by port (most requesters first, ties in architecture order), each free port grants the first
of its requesters after the one it served last (a rotating pointer over the requesters in the
tie order of "Ports and links": storage nodes in loop-tree order, fills before write-backs)
whose other port is free too; the grant takes both ports. The PE array reserves the width it
needs on a port for a segment; transfers get the rest.

A transfer that nobody competes with holds its ports for all its remaining bursts in one
timeout ("a run"). A competing request interrupts the run, which then stops at the end of the
burst in progress — the same grants as burst by burst, at a fraction of the events. A change
of the PE array's reservation interrupts the holder too, which re-times the rest of its
bursts (the one in progress included) at the new width: a port never moves more bits in a
cycle than its width.

Over 400 lines: one resource class (request, the grant decided at the cycle's end, release,
round-robin) whose methods share its queues; split, they would reach into each other's fields.
"""

from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter

import simpy

from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.engine.event_loop import Event
from cyclesim.engine.rows import Rows
from cyclesim.engine.snapshot import Origin, Unknown
from cyclesim.vocabulary import Wait

_WHO = itemgetter(1)  # a waiting request's requester id, its round-robin rank
PE = -1  # requester id of the PE array; a node's fills and write-backs: requester()
DECIDE = 2  # SimPy priority of the end-of-cycle grant decision: after URGENT (0) and NORMAL (1)


def requester(node: int, write_back: bool) -> int:
    """The requester id of a node's fills (2 * node) or write-backs (2 * node + 1): ids order
    the round-robin as "Ports and links" ties them, nodes in loop-tree order, fills first."""
    return 2 * node + write_back


def requester_of(who: int) -> tuple[int, bool]:
    """(node, is a write-back) of a transfer's requester id (the inverse of requester)."""
    return who // 2, bool(who % 2)


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
        "served",
        "order",
        "deciding",
        "granted_at",
        "before",
    )

    def __init__(
        self,
        env: ReplayEnvironment,
        widths: dict[str, int],
        grants: dict[str, Rows],
        order: tuple[str, ...] = (),
    ) -> None:
        """order: every port key in architecture order, the tie order of ports with as many
        requesters (DESIGN); empty: the order of widths."""
        self.env = env
        self.width = widths
        self.holder: dict[str, int | None] = {k: None for k in widths}
        self.reserved: dict[str, int] = {k: 0 for k in widths}
        self.waiting: list[list] = []  # [last_grant, who, keys, event, tensor]
        self.wanted: dict[str, int] = {k: 0 for k in widths}  # port -> waiting requests for it
        self.last_grant: dict[int, int] = {}
        self.runs: dict[str, list] = {}  # port -> [process timing a burst on it, told to stop]
        self.width_waiters: dict[str, list[Event]] = {}  # port -> holders waiting for width
        self.grants = grants
        # fast-forward, when it looks: ~who of every grant_every-th grant goes to grant_log
        self.grant_log: list | None = None
        self.grant_every = 1
        self.grants_seen = 0
        for k in widths:
            grants.setdefault(k, Rows())
        self.served: dict[str, int] = {}  # port -> the requester it granted last (the pointer)
        self.order = {k: i for i, k in enumerate(order or widths)}  # architecture order
        self.deciding: int | None = None  # the cycle an end-of-cycle decision is queued for
        self.granted_at: dict[str, int] = {}  # port -> cycle it was granted at once (request)
        self.before: dict[str, int | None] = {}  # port -> its pointer before that grant

    def request(
        self, who: int, keys: tuple[str, ...], tensor: str, tl=None, at_once: bool = True
    ) -> Event | None:
        """None if every port in keys is granted to who now, else an event that fires when
        they are (at the earliest at the end of this cycle).

        Free ports nobody waits for are granted at once, but only for this cycle's first
        comer: until the cycle ends, a requester that the round-robin puts ahead of it takes
        the grant back (the holder's run is interrupted at its first cycle, before it moved
        a bit), and the end-of-cycle decision grants among all of them. at_once=False (a
        DRAM link, whose timer cannot take back what it issued): always wait for the decision.
        tl: the requester's timeline; a request not granted in the cycle it was made in
        records there that it waits for the ports from that cycle on (Wait.PORT)."""
        holder, reserved, width, wanted = self.holder, self.reserved, self.width, self.wanted
        now = self.env.now
        if at_once:
            for k in keys:
                if holder[k] is not None or reserved[k] >= width[k] or wanted[k]:
                    break
            else:  # free and nobody waits for them: granted now, until someone ahead asks
                grants, served, before, granted_at = (
                    self.grants,
                    self.served,
                    self.before,
                    self.granted_at,
                )
                for k in keys:
                    holder[k] = who
                    before[k] = served.get(k)
                    served[k] = who
                    granted_at[k] = now
                    grants[k].append([now, None, who, tensor, None])
                self.last_grant[who] = now
                if self.grant_log is not None:
                    self.grants_seen += 1
                    if not self.grants_seen % self.grant_every:
                        self.grant_log.append(~who)
                return None
        ev = Event(self.env)  # (the replay's: engine/event_loop.py)
        self.waiting.append([self.last_grant.get(who, -1), who, keys, ev, tensor, now, tl])
        granted_at = self.granted_at
        for k in keys:  # a grant made at once this cycle to a requester behind this one
            h = holder[k]
            if h is not None and h != who and granted_at.get(k) == now:
                if _ahead(who, h, self.before.get(k)):
                    self._revoke(h, now)
        runs = self.runs
        for k in keys:
            wanted[k] += 1
            run = runs.get(k)
            if run is not None and not run[1]:
                self._interrupt(run, "competitor")
        self._dispatch()
        return ev

    def _revoke(self, who: int, now: int) -> None:
        """Take back the ports granted at once to who in this cycle (its run has not moved a
        bit yet): its transfer asks again, and the end of the cycle decides."""
        mine = [k for k, h in self.holder.items() if h == who and self.granted_at.get(k) == now]
        run = self.runs.get(mine[0]) if mine else None
        if run is None:  # no run to stop (it waits for width): the grant stands
            return
        for k in mine:
            before = self.before.get(k)
            if before is None:
                self.served.pop(k, None)
            else:
                self.served[k] = before
            del self.granted_at[k]
        self._interrupt(run, "revoke")

    def release(
        self,
        who: int,
        keys: tuple[str, ...],
        last_burst_start: int | None = None,
        moved: tuple[int, ...] | None = None,
    ) -> None:
        """End who's grants of these ports; moved: the bits each grant moved on its port (in
        the order of keys; None: none), written into the grant's record."""
        now = self.env.now
        holder, grants = self.holder, self.grants
        granted_at = self.granted_at
        if moved is None:
            moved = (0,) * len(keys)
        i = 0  # (an index: zip costs more per call, on the hot path)
        for k in keys:
            holder[k] = None
            granted_at.pop(k, None)
            grants[k].close_last(now, moved[i])
            i += 1
        if last_burst_start is not None:
            self.last_grant[who] = last_burst_start
        if self.waiting:
            self._dispatch()

    def release_and_request(
        self,
        who: int,
        keys: tuple[str, ...],
        tensor: str,
        last_burst_start: int | None = None,
        tl=None,
        at_once: bool = True,
        moved: tuple[int, ...] | None = None,
    ) -> Event | None:
        """End a burst and ask for the next one in one step, so round-robin sees both; moved:
        as for release."""
        now = self.env.now
        if moved is None:
            moved = (0,) * len(keys)
        holder, granted_at, grants = self.holder, self.granted_at, self.grants
        i = 0
        for k in keys:
            holder[k] = None
            granted_at.pop(k, None)
            grants[k].close_last(now, moved[i])
            i += 1
        if last_burst_start is not None:
            self.last_grant[who] = last_burst_start
        return self.request(who, keys, tensor, tl, at_once)

    def contested(self, keys: tuple[str, ...]) -> bool:
        """Does any waiting request want one of these ports?"""
        wanted = self.wanted
        for k in keys:
            if wanted[k]:
                return True
        return False

    def start_run(
        self, keys: tuple[str, ...], proc: simpy.Process | None, stopping: bool = False
    ) -> None:
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

    def wait_for_width(self, keys: tuple[str, ...]) -> Event:
        """An event that fires when the PE array's reservation on one of these ports changes."""
        ev = Event(self.env)
        for k in keys:
            waiters = self.width_waiters.setdefault(k, [])
            if waiters and waiters[0].triggered:  # woken through its other port: drop them
                waiters[:] = [w for w in waiters if not w.triggered]
            waiters.append(ev)
        return ev

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
                        self.env.fast_succeed(ev)
            run = runs.get(key)
            if run is not None:
                self._interrupt(run, "reserve")
            if bits < width[key] and self.waiting:  # the port may serve a transfer again
                self._dispatch()

    def _dispatch(self) -> None:
        """Queue the end-of-cycle decision, once per cycle, when someone waits."""
        if not self.waiting:
            return
        now = self.env.now
        if self.deciding == now:
            return
        self.deciding = now
        self.env.call(self._decide, DECIDE)

    def _decide(self, _event: simpy.Event | None = None) -> None:
        """Grant the ports that are free among all the requests of this cycle (DESIGN
        "Arbitration sees every request of the cycle")."""
        self.deciding = None
        waiting = self.waiting
        if not waiting:
            return
        holder, reserved, width = self.holder, self.reserved, self.width
        by_port: dict[str, list] = {}
        for w in waiting:
            for k in w[2]:
                by_port.setdefault(k, []).append(w)
        order = self.order
        if len(by_port) == 1:  # (one port: nothing to order)
            ports = list(by_port)
        else:
            ports = sorted(by_port, key=lambda k: (-len(by_port[k]), order[k]))
        served, wanted, now = self.served, self.wanted, self.env.now
        succeed = self.env.fast_succeed
        granted = []
        for k in ports:
            if holder[k] is not None or reserved[k] >= width[k]:
                continue
            last = served.get(k)
            ranked = sorted(by_port[k], key=_WHO)
            if last is not None:  # the first requester after the one served last, wrapping
                ranked = [w for w in ranked if w[1] > last] + [w for w in ranked if w[1] <= last]
            for w in ranked:
                if w[3].triggered:
                    continue
                keys = w[2]
                if not _all_free(keys, holder, reserved, width):
                    continue
                who = w[1]
                for o in keys:
                    holder[o] = who
                    served[o] = who
                    wanted[o] -= 1
                    self.grants[o].append([now, None, who, w[4], None])
                self.last_grant[who] = now
                succeed(w[3])
                granted.append(w)
                if self.grant_log is not None:
                    self.grants_seen += 1
                    if not self.grants_seen % self.grant_every:
                        self.grant_log.append(~who)
                break
        if granted:
            self.waiting = waiting = [w for w in waiting if not w[3].triggered]
        for w in waiting:  # not granted in the cycle they asked in: they wait for the ports
            if w[5] is not None:
                if w[6] is not None:
                    w[6].append((w[5], Wait.PORT, w[2]))
                w[5] = None

    # ------------------------------------------------------------------ fast-forward
    def recent(self, now: int) -> int:
        """The cycle from which last-grant cycles are compared exactly. Round robin only
        compares last-grant cycles. Every one set from now on is a grant's cycle (>= now) or
        the start of a holding's last burst (>= its grant's cycle), so it is >= this one;
        older ones matter by their order only."""
        grants = self.grants
        return min([now] + [grants[k][-1][0] for k, who in self.holder.items() if who is not None])

    def snapshot(self, origin: Origin, recent: int) -> tuple:
        """Holders with their open grants, reservations, runs, waiting requests and the
        round-robin order, relative to origin (engine/snapshot.py); recent: self.recent."""
        now, event = origin.now, origin.event
        open_grants = []
        for key, who in self.holder.items():
            if who is not None:
                start, end, gwho, tensor, _ = self.grants[key][-1]
                if end is not None:
                    raise Unknown("grant")
                open_grants.append((key, who, start - now, gwho, tensor))
        old = sorted(
            {v for v in self.last_grant.values() if v < recent}
            | {w[0] for w in self.waiting if w[0] < recent}
        )

        def order(v: int) -> tuple:
            return ("recent", v - now) if v >= recent else ("old", bisect_left(old, v))

        granted_now = (k for k, t in self.granted_at.items() if t == now)
        return (
            tuple(open_grants),
            tuple(self.reserved.items()),
            tuple(self.wanted.items()),
            tuple((k, origin.process(run[0]), run[1]) for k, run in self.runs.items()),
            tuple(sorted((who, order(v)) for who, v in self.last_grant.items())),
            # the round-robin pointers (requester ids: no time in them) and a queued decision
            tuple(sorted(self.served.items())),
            None if self.deciding is None else self.deciding - now,
            # grants made at once in this cycle, which a requester of the cycle may take back
            tuple(sorted((k, self.before.get(k)) for k in granted_now)),
            tuple(
                (
                    order(w[0]),
                    w[1],
                    w[2],
                    event(w[3], ("waiting", i)),
                    w[4],
                    None if w[5] is None else w[5] - now,  # asked this cycle, not yet decided
                )
                for i, w in enumerate(self.waiting)
            ),
            tuple(
                (
                    k,
                    tuple(
                        event(ev, ("width", k, i)) for i, ev in enumerate(evs) if not ev.triggered
                    ),
                )
                for k, evs in self.width_waiters.items()
            ),
        )

    def shift(self, dt: int, recent: int) -> None:
        """Move the round-robin order dt cycles on: recent grants move with the clock, old
        ones stay (a fast-forward jump; the queue moved the decision's event)."""
        last_grant = self.last_grant
        for who, v in last_grant.items():
            if v >= recent:
                last_grant[who] = v + dt
        for w in self.waiting:
            if w[0] >= recent:
                w[0] += dt
            if w[5] is not None:  # asked in the snapshot's cycle, decided at its end
                w[5] += dt
        if self.deciding is not None:
            self.deciding += dt
        for k in self.granted_at:  # grants made at once in the snapshot's cycle
            self.granted_at[k] += dt


def _all_free(keys: tuple[str, ...], holder: dict, reserved: dict, width: dict) -> bool:
    """Is every port in keys free (no holder, not all reserved by the PE array)? (A loop,
    not any() over a generator: it runs per waiting request and port at each decision.)"""
    for k in keys:
        if holder[k] is not None or reserved[k] >= width[k]:
            return False
    return True


def _ahead(who: int, other: int, last: int | None) -> bool:
    """Does who come before other in a round-robin whose pointer last served `last`?"""
    if last is None:
        return who < other
    return (who <= last, who) < (other <= last, other)
