"""DRAMsim3's front end over one controller per channel: requests enter in arrival order.

One FIFO for the whole device: the request at its head enters its channel's transaction
queue at the first cycle at or after its arrival at which that queue has room, at most one
request a cycle; a request whose queue is full holds back every request behind it. Both
`cyclesim dram` (a trace, every request known up front) and the replay (requests pushed as
the transfers' bursts reach the port, engine/dram_loop.py) drive the same loop, so a request
gets the same completion cycle from either.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Any

from cyclesim.dram.config import DramConfig
from cyclesim.dram.controller import Channel, Transaction


class Request:
    """A request pushed into the front end: when it arrived, entered its queue and completed."""

    __slots__ = ("address", "is_write", "arrival", "trans", "owner", "cancelled", "waited_behind")

    def __init__(self, address: int, is_write: bool, arrival: int, owner: Any = None) -> None:
        self.address = address
        self.is_write = is_write
        self.arrival = arrival  # DRAM cycle it reached the front end
        self.trans: Transaction | None = None  # set when it enters its channel's queue
        self.owner: Any = owner  # who issued it (the replay: the link's name), for causes
        self.cancelled = False  # taken back before it entered (the replay: a cut run)
        self.waited_behind: Any = None  # the owner of the head request it waited behind, if another

    @property
    def entered(self) -> int:
        """DRAM cycle it entered its channel's transaction queue (-1: not yet)."""
        return self.trans.added if self.trans is not None else -1

    @property
    def complete(self) -> int:
        """DRAM cycle its read data is back or its write is accepted (-1: not yet known)."""
        return self.trans.complete if self.trans is not None else -1


class _Run:
    """Requests pushed together, in order of (arrival, push order): the FIFO holds each run
    once, at its first request not entered yet (`at`), so that a request costs the heap of
    runs one step, not a heap of requests two."""

    __slots__ = ("requests", "at", "order")

    def __init__(self, requests: list[Request], order: int) -> None:
        self.requests = requests
        self.at = 0
        self.order = order  # the push order of requests[0]; requests[k] is order + k


class FrontEnd:
    """The channels' controllers and the FIFO before them, advanced cycle by cycle where
    anything can happen (idle stretches skipped, as `simulate_trace` always did)."""

    def __init__(self, config: DramConfig, *, keep_commands: bool = False) -> None:
        self.config = config
        self.channels = [Channel(config, i, keep_log=keep_commands) for i in range(config.channels)]
        ch_pos, ch_width = config.field_layout()["ch"]
        self._ch_shift = (config.request_bytes - 1).bit_length() + ch_pos
        self._ch_mask = (1 << ch_width) - 1
        # the FIFO: a heap of (arrival, push order, run) of each run's first request waiting
        self.waiting: list[tuple[int, int, _Run]] = []
        self._order = 0  # the push order of the next request
        self.clk = 0  # the next cycle to simulate
        self.resume_at = 0  # the next cycle at which a tick can change anything
        self.entered: list[Request] | None = None  # every request in entry order, if recording
        self.pushed = 0
        self.n_entered = 0
        self._last_owner: Any = None  # who issued the request that entered last

    def channel_of(self, address: int) -> Channel:
        return self.channels[(address >> self._ch_shift) & self._ch_mask]

    def push(self, request: Request) -> None:
        """Queue a request; its arrival may not be before the next cycle to simulate."""
        if request.arrival < self.clk:
            raise ValueError(
                f"request arrives at {request.arrival}, already simulated to {self.clk}"
            )
        self._queue_run([request])

    def _queue_run(self, requests: list[Request]) -> None:
        """Queue requests whose arrivals (not before the next cycle) do not decrease."""
        order = self._order
        self._order = order + len(requests)
        heapq.heappush(self.waiting, (requests[0].arrival, order, _Run(requests, order)))
        self.pushed += len(requests)
        if requests[0].arrival < self.resume_at:
            self.resume_at = requests[0].arrival

    def push_run(
        self, addresses: list[int], ats: list[int], is_write: bool, owner: Any, num: int, den: int
    ) -> list[Request]:
        """Queue a request to each of `addresses`, the k-th reaching the front end in the first
        DRAM cycle of accelerator cycle ats[k] (num/den accelerator cycles a DRAM cycle), or at
        the next cycle to simulate if that is later (the replay's bursts, engine/dram_loop.py)."""
        out: list[Request] = []
        run: list[Request] = []
        clk = last = self.clk
        for k in range(len(addresses)):
            a = ats[k]
            arrival = (a - 1) * den // num + 1 if a > 0 else 0
            if arrival < clk:
                arrival = clk
            if arrival < last:  # arrives before the one pushed before it: a run of its own
                self._queue_run(run)
                run = []
            last = arrival
            r = Request(addresses[k], is_write, arrival, owner)
            run.append(r)
            out.append(r)
        if run:
            self._queue_run(run)
        return out

    def records(self) -> list[tuple[int, bool, int, int, int]]:
        """Every request that entered, in entry order (`entered` kept): (address, is write,
        arrival, entered, completed)."""
        out = []
        for r in self.entered or []:
            t = r.trans
            entered, complete = (t.added, t.complete) if t is not None else (-1, -1)
            out.append((r.address, r.is_write, r.arrival, entered, complete))
        return out

    def busy(self) -> bool:
        """Is a request waiting, queued or in flight anywhere?"""
        return bool(self.waiting) or any(
            not c.idle() or c.pending_reads or c.pending_writes for c in self.channels
        )

    def settled(self) -> int:
        """How many requests have their completion cycle (a write or a read served from the
        write buffer once it entered, any other read once its column command issued)."""
        n = 0
        for c in self.channels:
            n += c.settled
        return n

    def fire_until(
        self, fire: int, horizon: int, num: int, den: int, settled: int, entered: int
    ) -> tuple[int, bool]:
        """The replay's advances of the controllers (engine/dram_loop.py) from accelerator
        cycle `fire` on, while no other event comes before `horizon`: each runs every DRAM
        cycle up to the end of its accelerator cycle (an accelerator cycle is num/den DRAM
        cycles' worth: DRAM cycle d ends in accelerator cycle ceil(d * num / den)), the next
        is in the accelerator cycle `resume_at` falls in. (that fire, True) after the first
        at which `settled` requests are settled or `entered` entered (a waiter may be done),
        else (the first fire at or after `horizon`, False), not run."""
        while fire < horizon:
            self.run_until((fire * den) // num + 1)  # the first DRAM cycle of fire + 1
            if self.n_entered >= entered or self.settled() >= settled:
                return fire, True
            fire = -(-self.resume_at * num // den)
        return fire, False

    def _head(self) -> Request | None:
        """The first request waiting (cancelled ones dropped)."""
        waiting = self.waiting
        while waiting:
            run = waiting[0][2]
            head = run.requests[run.at]
            if not head.cancelled:
                return head
            self._pop()
        return None

    def _pop(self) -> None:
        """Take the first request waiting off the FIFO."""
        waiting = self.waiting
        run = waiting[0][2]
        run.at += 1
        if run.at == len(run.requests):
            heapq.heappop(waiting)
        else:
            heapq.heapreplace(waiting, (run.requests[run.at].arrival, run.order + run.at, run))

    def run_until(
        self,
        limit: int | None,
        *,
        flush_at_end: bool = False,
        skip_idle: bool = True,
        progress: Callable[[int, int, int], None] | None = None,
        progress_seconds: float = 5.0,
    ) -> None:
        """Simulate cycles up to `limit` (exclusive), or, with limit None, until every request
        pushed is done (a trace: `flush_at_end` drains the writes once the last has entered).
        `skip_idle=False` ticks every cycle (the reference the skipping is tested against).
        `progress(requests in, requests, cycle)` is called every `progress_seconds` or so.

        Over 80 lines: the controller's cycle loop with its idle-stretch skip and progress
        lines; its locals are the loop's state on the compiled hot path.
        """
        looks, next_line = 0, time.monotonic() + progress_seconds
        channels = self.channels
        period = max(_refresh_period(c) for c in channels) if limit is None else 0
        seen: dict[tuple, tuple[int, list]] = {}
        clk = self.clk
        while limit is None or clk < limit:
            looks += 1
            if progress is not None and looks & 0xFFF == 0 and time.monotonic() >= next_line:
                next_line = time.monotonic() + progress_seconds
                progress(self.n_entered, self.pushed, clk)
            for ch in channels:
                ch.changed = False
                ch.tick()
            injected = False
            head = self._head()
            if head is not None and head.arrival <= clk:
                ch = self.channel_of(head.address)
                if ch.will_accept(head.is_write):
                    self._pop()
                    head.trans = trans = ch.add(head.address, head.is_write)
                    trans.owner = head.owner
                    self.n_entered += 1
                    if clk > head.arrival and self._last_owner != head.owner:
                        head.waited_behind = self._last_owner  # it entered behind another's
                    self._last_owner = head.owner
                    if self.entered is not None:
                        self.entered.append(head)
                    injected = True
                    if flush_at_end and self._head() is None:
                        for c in channels:
                            c.flush_writes = True
            clk += 1
            self.clk = clk
            if limit is None and not self.busy():
                break
            if injected or not skip_idle or any(c.changed for c in channels):
                self.resume_at = clk
                continue
            # nothing changed this cycle: jump to the next cycle at which anything can
            nxt = min(c.next_change() for c in channels)
            head = self._head()
            if head is not None and head.arrival >= clk:
                nxt = min(nxt, head.arrival)
            self.resume_at = max(nxt, clk)
            if limit is not None:
                nxt = min(nxt, limit)
            if nxt > clk:
                for c in channels:
                    c.clk = nxt
                clk = nxt
                self.clk = clk
            if limit is not None:
                continue
            # a trace: idle with refresh only, the channels repeat every `period` cycles (the
            # refresh visits every rank, or bank, in turn): skip whole periods of a long gap
            if (
                head is not None
                and head.arrival - clk > 2 * period
                and all(c.quiet() for c in channels)
            ):
                state = tuple(c.idle_state(period) for c in channels)
                if state in seen:
                    before, marks = seen.pop(state)
                    span = clk - before
                    repeats = (head.arrival - clk - period) // span
                    if repeats > 0:
                        for c, mark in zip(channels, marks, strict=True):
                            c.advance(span, repeats, mark)
                        clk += span * repeats
                        self.clk = clk
                        seen.clear()
                        continue
                marks = [(list(c.stats.commands), len(c.stats.log or ())) for c in channels]
                seen[state] = (clk, marks)
            elif seen:
                seen.clear()


def _refresh_period(channel: Channel) -> int:
    """Cycles after which an idle channel's refresh is back where it started."""
    c = channel.config
    if c.refresh_policy == "RANK_LEVEL_SIMULTANEOUS":
        return channel.refresh_interval
    if c.refresh_policy == "BANK_LEVEL_STAGGERED":
        return channel.refresh_interval * c.ranks * c.banks
    return channel.refresh_interval * c.ranks


__all__ = ["FrontEnd", "Request"]
