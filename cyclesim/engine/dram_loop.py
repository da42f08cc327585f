"""The DRAM controller in the replay's loop: every transfer's requests in one controller.

A memory whose `dram:` block says `timing: controller` is timed by the front end and the
per-channel controllers `cyclesim dram` runs (cyclesim/dram/frontend.py): each transfer's
bursts push their requests as they reach the port, so the requests of every transfer, reads
and writes, meet in the same transaction queues, command queues and write buffer and are
reordered there as DRAMsim3 reorders them. The controller is advanced lazily, to the end of
an accelerator cycle once every process of that cycle has run, and only while a transfer
waits on it; a request's arrival is the DRAM cycle its burst reaches the port (never before
the controller's next cycle). So recording every request with its arrival (`--dram-trace`)
and running `cyclesim dram` on that trace gives every request the completion cycle the
replay gave it (tests/dram/test_dram_loop.py). docs/dram_causes.md has the rules.
"""

from __future__ import annotations

from bisect import bisect_right
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

# the front end and controllers compiled with mypyc when built from the current sources, else
# pure Python (dram/native.py); looked up at each use, so that a test may swap them
from cyclesim.dram import native
from cyclesim.dram.config import DramConfig
from cyclesim.dram.timing import (
    ACTIVATE,
    PRECHARGE,
    READ_PRECHARGE,
    READS,
    REFRESH,
    REFRESH_BANK,
    WRITE_PRECHARGE,
    WRITES,
)
from cyclesim.engine.dram_waiters import NEVER, Waiter, targets
from cyclesim.engine.environment import ReplayEnvironment
from cyclesim.engine.fabric import DECIDE
from cyclesim.engine.transfer import DramRuns
from cyclesim.vocabulary import BankCommand, Cause, Wait

if TYPE_CHECKING:
    from cyclesim.dram.frontend import Request

# SimPy priority of advancing the controllers: after every process (NORMAL, 1) and the
# fabric's end-of-cycle grant decision (DECIDE, 2) of the cycle, and the processes that
# decision resumes; an event of lower priority always runs first at the same time, so
# nothing of this cycle is left to run when the controllers advance
ADVANCE = DECIDE + 1


class DramLoop:
    """A DRAM-modelled memory's controllers, driven by the replay's SimPy clock."""

    def __init__(
        self,
        env: ReplayEnvironment,
        config: DramConfig,
        clock_mhz: float,
        *,
        record: bool = False,
        keep_commands: bool = False,
    ) -> None:
        self.env, self.config = env, config
        self.ratio = Fraction(str(config.tck_ns)) * Fraction(str(clock_mhz)) / 1000
        self._num, self._den = self.ratio.numerator, self.ratio.denominator
        self.front = native.FrontEnd(config, keep_commands=keep_commands)
        if record:
            self.front.entered = []
        self.request_bytes = config.request_bytes
        self.waiters: list[Waiter] = []
        self._fire_event = None
        self._fire_at: int | None = None
        self.calls = 0  # requests pushed (fast-forward pairs two moments only if equal)

    # ------------------------------------------------------------- clock conversion
    def to_accel(self, d: int) -> int:
        """Accelerator cycle of DRAM cycle d (ceil)."""
        return -(-d * self._num // self._den)

    def to_dram(self, a: int) -> int:
        """The first DRAM cycle d with to_accel(d) >= a."""
        if a <= 0:
            return 0
        return (a - 1) * self._den // self._num + 1

    @property
    def ahead(self) -> bool:
        """Does a transfer wait on the controller (fast-forward takes no snapshot then)?"""
        return bool(self.waiters)

    # ------------------------------------------------------------- requests
    def push(self, address: int, is_write: bool, at: int, owner) -> Request:
        """A request reaching the controller's front end at accelerator cycle `at` (a run of
        one: the same arrival and clamp as the replay's runs)."""
        return self.push_run([address], [at], is_write, owner)[0]

    def push_run(self, addresses: list[int], ats: list[int], is_write: bool, owner) -> list:
        """Requests to `addresses`, the k-th reaching the front end at accelerator cycle
        ats[k] (as `push` each, in one compiled call)."""
        self.calls += len(addresses)
        return self.front.push_run(addresses, ats, is_write, owner, self._num, self._den)

    def wait(self, requests: list[Request], entered: bool):
        """Generator: the DRAM cycle by which all `requests` entered their queues (entered) or
        completed, and the request that did last."""
        w = Waiter(requests, entered)
        if not w.check():
            w.event = self.env.event()
            self.waiters.append(w)
            self._schedule(self.to_accel(self.front.resume_at))
            yield w.event
        return w.cycle, w.last

    def _schedule(self, at: int) -> None:
        now = self.env.now
        at = max(at, now)
        if self._fire_at is not None and self._fire_at <= at:
            return
        self._fire_at = at
        self._fire_event = self.env.call(self._fire, ADVANCE, at - now)

    def _fire(self, ev) -> None:
        if ev is not self._fire_event:
            return
        now = self.env.now
        self._fire_event = self._fire_at = None
        self.front.run_until(self.to_dram(now + 1))  # every DRAM cycle up to this one's end
        still = []
        for w in self.waiters:
            if w.check():
                w.event.succeed()
            else:
                still.append(w)
        self.waiters = still
        if still:
            self._schedule(self._next_fire(still))

    def _next_fire(self, waiters: list[Waiter]) -> int:
        """The accelerator cycle of the next advance a waiter may be done at, or of the first
        advance after the next event queued (the advances before it, which no other event
        comes between and which find no waiter done, are run here, in FrontEnd.fire_until,
        not queued one SimPy event each: the controllers and waiters end as they would)."""
        front = self.front
        at = self.to_accel(front.resume_at)
        horizon = self.env.peek()
        horizon = int(horizon) if horizon != float("inf") else NEVER
        while at < horizon:
            settled, entered = targets(waiters, front)
            at, stopped = front.fire_until(at, horizon, self._num, self._den, settled, entered)
            if not stopped or any(w.check() for w in waiters):
                return at
            at = self.to_accel(front.resume_at)
        return at

    def finish(self, end: int) -> None:
        """After the replay, which ended at accelerator cycle `end`: simulate the controllers
        through the run's last cycle (DRAM cycles before `end`), so the counts, open rows and
        bank commands are those of the run, as the traces show them (writes still buffered
        then stay buffered)."""
        self.front.run_until(max(self.front.clk, self.to_dram(end)))

    def drain(self) -> None:
        """Drain the buffered writes and finish every request, as `cyclesim dram` does at the
        end of a trace (its cycle count: the end of the last data burst)."""
        for c in self.front.channels:
            c.flush_writes = True
        self.front.run_until(None)

    # ------------------------------------------------------------- what it did
    @property
    def counts(self) -> dict[str, int]:
        chans = self.front.channels
        return {
            "requests": self.front.n_entered,
            # reads and writes issued to the banks: fewer than requests by the writes still in
            # the write buffer when the run ended (a write completes when it is accepted)
            "column_commands": sum(c.stats.commands[k] for c in chans for k in (*READS, *WRITES)),
            "row_hits": sum(c.stats.read_row_hits + c.stats.write_row_hits for c in chans),
            "activates": sum(c.stats.commands[ACTIVATE] for c in chans),
            "refreshes": sum(
                c.stats.commands[REFRESH] + c.stats.commands[REFRESH_BANK] for c in chans
            ),
        }

    @property
    def open_row(self) -> list[int]:
        """Each bank's open row (-1: closed), banks numbered across the device."""
        return [row for c in self.front.channels for row in c.open_row]

    def where(self, address: int) -> tuple[int, int, int]:
        """(channel, bank numbered across the device, row) of an address."""
        ch = self.front.channel_of(address)
        rank, bankgroup, bank, row, _ = ch.decode(address)
        return (ch.index, ch.index * ch.n_banks + ch._bank_index(rank, bankgroup, bank), row)

    def bank_records(self, name: str) -> list[tuple]:
        """The bank commands the controllers issued (keep_commands), as the traces read them
        (Recorder.dram_banks, results/activity.py): an activate opens a row, a precharge closes
        it (tRP), a refresh holds the rank's banks (tRFC); in accelerator cycles."""
        c, to_accel, out = self.config, self.to_accel, []
        for ch in self.front.channels:
            base = ch.index * ch.n_banks
            for clk, kind, rank, bankgroup, bank, row, _ in ch.stats.log or ():
                if kind == REFRESH:
                    first = base + rank * c.banks
                    out.append(
                        (to_accel(clk), name, first, BankCommand.REFRESH, to_accel(clk + c.tRFC))
                    )
                    continue
                b = base + (rank * c.bankgroups + bankgroup) * c.banks_per_group + bank
                if kind == ACTIVATE:
                    out.append((to_accel(clk), name, b, BankCommand.ACTIVATE, row))
                elif kind in (PRECHARGE, READ_PRECHARGE, WRITE_PRECHARGE):
                    out.append(
                        (to_accel(clk), name, b, BankCommand.PRECHARGE, to_accel(clk + c.tRP))
                    )
        out.sort(key=lambda r: r[0])
        return out

    def requests(self) -> tuple[tuple[int, bool, int, int, int], ...]:
        """Every request that entered, in entry order: (address, is write, arrival, entered,
        completed), in DRAM cycles (record=True; Recorder.dram_requests)."""
        return tuple(self.front.records())


def write_dram_trace(path: str | Path, requests) -> None:
    """Requests (DramLoop.requests) as a DRAMsim3 trace: `0xADDRESS READ|WRITE ARRIVAL`,
    written whole or not at all, its folder made if missing (as the views' outputs are)."""
    from cyclesim.outputs import write_atomically

    lines = (f"{a:#x} {'WRITE' if w else 'READ'} {arrival}\n" for a, w, arrival, _, _ in requests)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, "".join(lines))


def request_offsets(runs, request_bytes: int, prev: int | None) -> tuple[list[int], list[int]]:
    """(offsets in these bytes, request addresses) of the requests the strided byte runs
    cover, in order, as two lists: a line's requests are its own, and a first line that goes
    on from the previous call does not issue `prev` (the request the last burst ended in)
    again."""
    offsets, addresses = [], []
    off = 0
    mask = ~(request_bytes - 1)
    for address, size, stride, count in runs:
        for k in range(count):
            a = address + k * stride
            r, last = a & mask, (a + size - 1) & mask
            o = off
            while r <= last:
                if r != prev:
                    offsets.append(o)
                    addresses.append(r)
                o += r + request_bytes - max(r, a)
                r += request_bytes
            prev = None
            off += size
    return offsets, addresses


class ControllerRuns(DramRuns):
    """A DRAM end timed by the controller in the loop: each burst of a run pushes its requests
    into the controller's front end as it reaches the port (a request that cannot enter a full
    queue waits there, and so does every request behind it, as in DRAMsim3); the run holds the
    ports for their cycles only. A cut keeps the requests of the bursts up to the one in
    progress and takes the later ones back. After the last burst the transfer waits until
    every one of its requests completed (its read data back, its write accepted), the last
    one's delay charged to its causes."""

    def __init__(self, env, fabric, rec, tl, link, big, small, n_bursts) -> None:
        super().__init__(env, fabric, rec, tl, link, big, small, n_bursts)
        self.mine: list[Request] = []  # every request the transfer pushed and kept
        self.prev: int | None = None  # the request the last burst ended in
        self.run: list[Request] = []  # the requests of the current run
        self.bursts: list[int] = []  # the burst of each (nondecreasing)

    def plan(self, x, timing: tuple, shape: tuple) -> None:
        """Push the run's requests, each at the cycle its burst reaches the port."""
        loop: DramLoop = self.timer
        side, who, i, start = self.side, self.link.who, x.i, x.start
        j = self._choose_run(x, timing, shape)
        prefix, byte_at = self.prefix, self.byte_at
        lo, hi = byte_at(i), byte_at(j)
        go_on = self.prev if lo and side.mid_line(lo) else None
        offsets, addresses = request_offsets(side.slice(lo, hi), loop.request_bytes, go_on)
        bursts, ats = [], []
        b, edge = i, byte_at(i + 1) if i + 1 < j else hi  # the bytes before burst b + 1
        for o in offsets:
            while edge <= lo + o and b + 1 < j:
                b += 1
                edge = byte_at(b + 1) if b + 1 < j else hi
            bursts.append(b)
            ats.append(start + prefix[b] - prefix[i])
        self.bursts = bursts
        self.run = loop.push_run(addresses, ats, side.is_write, who)
        self.tl.append((start, Wait.BURST, self.dram_key))
        x.end = start + prefix[j] - prefix[i]

    def ran(self, x) -> None:
        self._keep()
        self._next(x, x.end)

    def cut(self, x, cause) -> bool:
        """The burst in progress now: its requests are pushed, the later ones taken back."""
        now, prefix, i = self.env.now, self.prefix, x.i
        b = i
        while b + 1 < x.j and x.start + prefix[b + 1] - prefix[i] <= now:
            b += 1
        keep = bisect_right(self.bursts, b)
        for r in self.run[keep:]:
            r.cancelled = True
        del self.run[keep:], self.bursts[keep:]
        self.in_progress, x.j = b, b + 1
        return True

    def finish(self, x):
        """Generator: the burst in progress at the ports."""
        yield from self._finish_in_progress(x, self.env.now)
        self._keep()
        self._next(x, self.env.now)

    def _keep(self) -> None:
        if self.run:
            self.prev = self.run[-1].address
            self.mine.extend(self.run)

    def tail(self):
        """Generator: until every request completed, charged by cause (_tail)."""
        if self.mine:
            env = self.env
            since = env.now
            _, last = yield from self.timer.wait(self.mine, False)
            yield from _tail(env, self.rec, self.tl, self.timer, last, self.dram_key, since)


def _tail(env, rec, tl, loop: DramLoop, last: Request, dram_key, since: int):
    """The wait from `since` (the last burst's end) until the transfer's last request
    completed, charged by cause: waiting to enter the controller (`dram_queue`), for its row
    (`row_miss`, `bank_conflict`, `refresh`) or the bus's turnaround, or behind older requests
    (`dram_queue`), then the data latency. The controller told its completion at `env.now`."""
    trans = last.trans
    end = loop.to_accel(trans.complete)
    if end <= since:
        return
    where = loop.where(last.address)
    pieces = [(loop.to_accel(trans.added), (Cause.DRAM_QUEUE, dram_key, last.waited_behind, where))]
    served = None if last.is_write else trans.served  # a write is done once accepted
    if served is not None:  # a read: its column command
        col, activated, after_refresh, opener, turned = served
        if activated >= trans.added:
            if after_refresh:
                cause, who = Cause.REFRESH, None
            elif opener is not None and opener != last.owner:
                cause, who = Cause.BANK_CONFLICT, opener
            else:
                cause, who = Cause.ROW_MISS, None
        else:
            cause, who = (Cause.TURNAROUND, None) if turned else (Cause.DRAM_QUEUE, None)
        pieces.append((loop.to_accel(col), (cause, dram_key, who, where)))
    t = since
    for until, info in pieces:
        if until > t:
            tl.append((t, Wait.DRAM, info))
            t = until
    if t < end:
        tl.append((t, Wait.LATENCY, dram_key))
    if end > env.now:
        yield env.timeout(end - env.now)
        rec.events += 1
