"""DRAM behind a memory's ports: the replay's transfers through a DRAM-modelled memory.

A transfer's bursts are granted as for any link (engine/transfer.py, engine/fabric.py); each
run of bursts issues the DRAM requests of its bytes, in layout order, to the memory's timer
(dram/timer.py), and ends when both the ports and the DRAM are done with it. A run
covers about one DRAM row of the transfer's bytes when nobody competes, so a streaming fill
costs one event per row run, not per burst; a competitor, a change of the PE array's share or
another link of the same DRAM issuing requests cuts it after the burst in progress, so a
rollback never erases another link's requests (docs/dram_causes.md).
"""

from __future__ import annotations

from bisect import bisect_right

# compiled with mypyc when built from the current sources, else pure Python (dram/native.py)
from cyclesim.dram import native
from cyclesim.dram.native import DramTimer
from cyclesim.engine.dram_loop import ControllerRuns, DramLoop
from cyclesim.engine.transfer import DramRuns
from cyclesim.vocabulary import Wait


class DramSide:
    """The DRAM end of one link: its memory's timer, the node's tile addresses, read or write."""

    __slots__ = (
        "timer",
        "addresses",
        "is_write",
        "runs",
        "offsets",
        "total",
        "data_end",
        "stream",
        "last_dram_end",
        "pieces",
    )

    def __init__(self, timer: DramTimer, addresses, is_write: bool) -> None:
        self.timer = timer
        self.addresses = addresses  # schedule.addresses.TileAddresses
        self.is_write = is_write
        self.runs: list[tuple[int, int]] = []
        self.offsets: list[int] = [0]
        self.total = 0
        self.data_end = 0  # DRAM cycle the data of this side's last issued request ends
        # (accelerator cycle the last run ended, DRAM cycle of the stream's first request,
        # requests issued in it): runs that follow each other without a break are one stream
        self.stream: tuple[int, int, int] | None = None
        self.last_dram_end: int | None = None  # accelerator cycle the last run's DRAM side ends
        self.pieces: tuple = ()  # the column commands of the last run (DramTimer.pieces)

    def select(self, k: int) -> None:
        """The next transfer moves tile k: its strided byte runs."""
        self.runs = self.addresses.runs(k)
        offsets = [0]
        for _, size, _, count in self.runs:
            offsets.append(offsets[-1] + size * count)
        self.offsets, self.total = offsets, offsets[-1]

    def mid_line(self, at: int) -> bool:
        """Is transfer byte `at` inside a line (a contiguous run) rather than at its start?"""
        runs = self.runs
        if len(runs) == 1:  # one strided run: its lines start every `size` bytes
            return at % runs[0][1] != 0
        i = bisect_right(self.offsets, at) - 1
        return i < len(runs) and (at - self.offsets[i]) % runs[i][1] != 0

    def begin(self, env, fabric, rec, tl, link, big: int, small: int, n_bursts: int) -> DramRuns:
        """What times one transfer's runs of bursts through this side (engine/transfer.py):
        the timer, or the controller in the loop."""
        kind = ControllerRuns if isinstance(self.timer, DramLoop) else TimerRuns
        return kind(env, fabric, rec, tl, link, big, small, n_bursts)

    def slice(self, lo: int, hi: int) -> list[tuple[int, int, int, int]]:
        """The strided runs of transfer bytes [lo, hi) (dram/byte_runs.py)."""
        return native.byte_runs(self.runs, self.offsets, lo, hi)


class IssuedRun:
    """A granted run of bursts [i, j) of one link issued ahead: all its DRAM requests at its
    start, the timer's state from before them saved so that a cut can take them back."""

    __slots__ = ("tl", "side", "who", "i", "j", "start", "byte_at", "prefix", "port_key")
    __slots__ += ("saved", "before", "stream", "mark", "end", "kept")

    def __init__(self, tl, side, who, i, j, start, byte_at, prefix, port_key, state) -> None:
        self.tl, self.side, self.who, self.i, self.j = tl, side, who, i, j
        self.start, self.byte_at, self.prefix, self.port_key = start, byte_at, prefix, port_key
        # the timer's state before the run, the request the link's last burst issued if the run
        # goes on in it, the side's stream, the timeline's length; the run's end
        self.saved, self.before, self.stream, self.mark, self.end = state
        self.kept: tuple[int, int] | None = None

    def cut(self, now: int) -> tuple[int, int]:
        """Cut the run after the burst in progress at `now`: (that burst, the next). Issued
        ahead, the DRAM goes back to the run's start and its bursts up to that one are issued
        again. Once only: a later cut (the port's, at the same cycle) keeps what it kept."""
        side, who, i, j = self.side, self.who, self.i, self.j
        timer = side.timer
        timer.ahead.pop(who, None)
        if self.kept is not None:
            return self.kept
        byte_at, prefix, start = self.byte_at, self.prefix, self.start
        low, high = i, j - 1
        pieces = side.pieces
        while low < high:
            mid = (low + high) // 2
            # the run's first bursts up to mid: their requests, timed as in the run
            timer.set_last_request(who, self.before)
            visits = timer._visits(side.slice(byte_at(i), byte_at(mid + 1)), who)
            e = timer.to_accel(timer.prefix_end(pieces, sum(n for _, n in visits)))
            e = max(e, start + prefix[mid + 1] - prefix[i])
            if e > now:
                high = mid
            else:
                low = mid + 1
        timer.restore(self.saved)  # last_request[who] as well: `before`, as the run found it
        side.stream = self.stream
        del self.tl[self.mark :]
        _run(
            self.tl, timer, side, who, start, byte_at(i), byte_at(low + 1),
            prefix[low + 1] - prefix[i], self.port_key,
        )  # fmt: skip
        self.kept = (low, low + 1)
        return self.kept


class TimerRuns(DramRuns):
    """A DRAM end timed by the memory's timer (dram/timer.py): each run issues the DRAM
    requests of its bytes at its start and ends when both the ports (their width) and the DRAM
    are done with them, whichever is later. A competitor, a change of the PE array's share or
    another link of the DRAM issuing cuts the run after the burst in progress (the DRAM state
    is rolled back and the cut run issued again: IssuedRun). After the last burst the DRAM's
    data latency is paid without holding the ports."""

    def __init__(self, env, fabric, rec, tl, link, big, small, n_bursts) -> None:
        super().__init__(env, fabric, rec, tl, link, big, small, n_bursts)
        self.side.stream = None
        self.issued: IssuedRun | None = None
        self.mark = 0  # the timeline's length before the run
        self.dram_end = 0  # accelerator cycle the cut run's DRAM side ends

    def plan(self, x, timing: tuple, shape: tuple) -> None:
        """Issue the run's requests from x.start; x.end: when ports and DRAM are done."""
        timer, side, who, tl = self.timer, self.side, self.link.who, self.tl
        i, start = x.i, x.start
        j = self._choose_run(x, timing, shape)
        prefix = self.prefix
        if timer.ahead:  # another link's run issued ahead ends first
            _cut_others(timer, who, start)
        # the request the last burst issued, if this run goes on in the line that burst ended
        # in (a line's requests are its own: a new line issues its first request afresh)
        lo = self.byte_at(i)
        before = timer.last_request.get(who) if lo and side.mid_line(lo) else None
        timer.set_last_request(who, before)
        saved = None if x.stopping else timer.snapshot()  # with last_request[who] = before
        stream, mark = side.stream, len(tl)
        hi = self.byte_at(j)
        end = _run(tl, timer, side, who, start, lo, hi, prefix[j] - prefix[i], self.dram_key)
        issued = None
        if saved is not None:  # issued ahead: a cut may take it back
            state = (saved, before, stream, mark, end)
            issued = IssuedRun(
                tl, side, who, i, j, start, self.byte_at, prefix, self.dram_key, state
            )
            timer.ahead[who] = (issued, self.fabric, self.link.keys)
        self.issued, self.mark, x.end = issued, mark, end

    def ran(self, x) -> None:
        if self.issued is not None:
            self.timer.ahead.pop(self.link.who, None)
        self._next(x, x.end)

    def cut(self, x, cause) -> bool:
        """The burst in progress now and the next; if another link's issue cut the run, its
        DRAM side is rolled back already. The timeline's states after now are taken back."""
        now, tl = self.env.now, self.tl
        issued = self.issued
        self.in_progress, x.j = (x.i, x.j) if issued is None else issued.cut(now)
        self.dram_end = self.side.last_dram_end
        while len(tl) > self.mark + 1 and tl[-1][0] > now:
            tl.pop()
        return True

    def finish(self, x):
        """Generator: the burst in progress at the ports (its DRAM requests are issued
        already), then the DRAM side of the cut run."""
        env, side = self.env, self.side
        yield from self._finish_in_progress(x, env.now)
        if env.now < self.dram_end:
            yield env.timeout(self.dram_end - env.now)
            self.rec.events += 1
        end = env.now
        side.stream = (end,) + side.stream[1:]  # the stream goes on from here
        self._next(x, end)

    def tail(self):
        """Generator: the DRAM's read (or write) latency of the last request."""
        env = self.env
        wait = self.timer.to_accel(self.side.data_end) - env.now
        if wait > 0:
            self.tl.append((env.now, Wait.LATENCY, self.dram_key))
            yield env.timeout(wait)
            self.rec.events += 1


def _cut_others(timer: DramTimer, who, now: int) -> None:
    """Before `who` issues requests to the timer, cut every other link's run issued ahead
    (a run of bursts whose requests were all issued at its start, docs/dram_causes.md) after
    its burst in progress, as a competitor on its port would: the requests it keeps are
    timed before these, those it gives back after them, so no rollback ever erases another
    link's requests."""
    ahead = timer.ahead
    if not ahead or (len(ahead) == 1 and who in ahead):
        return
    for other in [o for o in ahead if o != who]:
        issued, fabric, keys = ahead.pop(other)
        if now >= issued.end:  # it has ended (its process resumes at this cycle): keep it all
            continue
        issued.cut(now)
        fabric.stop_run(keys, "dram")  # its port side stops after the burst in progress


def _ends(timer: DramTimer, side: DramSide, who, start: int, lo: int, hi: int):
    """Issue transfer bytes [lo, hi) from `start`, continuing the side's stream when the last
    run ended at `start` (so the granularity of runs does not change the DRAM's timing)."""
    stream = side.stream
    go_on = (stream[1], stream[2]) if stream is not None and stream[0] == start else None
    ahead = side.slice(hi, hi + timer.queue * timer.request_bytes) if hi < side.total else None
    out = timer.issue(side.slice(lo, hi), side.is_write, who, start, go_on, ahead)
    side.pieces = timer.pieces
    first = go_on[0] if go_on is not None else timer.to_dram(start)
    side.stream = (out[0], first, (go_on[1] if go_on is not None else 0) + timer.issued)
    return out


def _run(tl, timer, side, who, start, lo, hi, port_cycles, port_key) -> int:
    """Issue transfer bytes [lo, hi) from `start`; record the states of the run; its end."""
    dram_end, delays = _ends(timer, side, who, start, lo, hi)
    side.data_end = timer.data_end
    side.last_dram_end = dram_end
    port_end = start + port_cycles
    end = max(port_end, dram_end)
    side.stream = (end,) + side.stream[1:]  # a run starting at `end` continues the stream
    if dram_end <= port_end or not delays:  # the port binds (or the DRAM had no delay)
        tl.append((start, Wait.BURST, port_key))
        return end
    t = start
    for a, z, cause, opener, where in delays:
        a, z = max(a, t), min(z, end)
        if z <= a:
            continue
        if a > t:
            tl.append((t, Wait.BURST, port_key))
        tl.append((a, Wait.DRAM, (cause, port_key, opener, where)))
        t = z
    if t < end:
        tl.append((t, Wait.BURST, port_key))
    return end
