"""Transfers waiting on the DRAM controller in the loop (engine/dram_loop.py), and the counts
of requests the front end must reach before one of them can be done (its look-ahead)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cyclesim.dram.frontend import FrontEnd, Request

NEVER = 1 << 62  # no event queued: the look-ahead of DramLoop._next_fire has no horizon


class Waiter:
    """A transfer waiting until all its `requests` entered the controller's queue (entered)
    or completed; `cycle` the DRAM cycle the last of them did, `last` that request."""

    __slots__ = ("requests", "entered", "k", "cycle", "last", "event")

    def __init__(self, requests: list[Request], entered: bool) -> None:
        self.requests, self.entered = requests, entered
        self.k, self.cycle, self.last, self.event = 0, -1, None, None

    def check(self) -> bool:
        reqs, k, entered = self.requests, self.k, self.entered
        while k < len(reqs):
            r = reqs[k]
            t = r.trans
            if t is None:
                break
            c = t.added if entered else t.complete
            if c < 0:
                break
            if c >= self.cycle:
                self.cycle, self.last = c, r
            k += 1
        self.k = k
        return k == len(reqs)


def targets(waiters: list[Waiter], front: FrontEnd) -> tuple[int, int]:
    """(settled, entered): the counts the front end reaches first when a waiter is done, at
    the soonest (each request still not done must settle, or enter, for it to be)."""
    settled = entered = NEVER
    done_settled, done_entered = front.settled(), front.n_entered
    for w in waiters:
        if w.entered:
            left = sum(1 for r in w.requests[w.k :] if r.trans is None)
            entered = min(entered, done_entered + left)
        else:
            left = sum(1 for r in w.requests[w.k :] if r.trans is None or r.trans.complete < 0)
            settled = min(settled, done_settled + left)
    return settled, entered
