"""Exact steady-state fast-forward: skip whole iterations of a loop that repeat exactly.

At the start of an iteration of a temporal loop L of the leaf (every D segments), the driver
takes a snapshot of the replay's whole state relative to the current cycle T and to each
node's current tile: the event queue (time - T, priority, what each event resumes, in heap
order), every process's state (engine/storage_node.py, pe_array.py), the tile tables, the fabric (holders,
reservations, waiting requests, runs, round-robin order), the DMA channels. When a snapshot
equals one of the last HISTORY of L (two fills that take turns on a port may repeat only
every second iteration), the system is in a steady state of period P cycles: each further
period repeats the last one shifted by P cycles, d_n tiles of every node n below L and D
segments per iteration, as long as the schedule says the iterations are of the same class
(_reach; an output's fill a tile ahead of the PE array or its write-back a tile behind may be
in the neighbouring iteration of the loop above L when that one's visits are of the same
class, engine/fastforward_classes.py, so a period may start at iteration 0 of an L that
indexes the output and a jump may land at the start of L's last iteration).
The jump then advances everything by K periods at once: queued event times and the clock,
state objects and tile tables, the accumulators (counts, spatial and systolic stalls, kinds of
segment), and it replicates the period's records (timelines, grants, PE waits, trace) K times.

Nodes whose tile changes above L ("frozen") keep their tile during the skip; their countdowns
of uses left fall by a constant per period, which the jump never lets reach zero.

Inside long transfers that take turns on a port (the load of a whole matrix, before any PE
segment) the same is done between grants: a snapshot every GRANT_SPACING-th grant, with the
burst indices left out (each transfer's grows by a constant per period); the jump moves them
on, keeping every transfer's last bursts to be simulated.

With a DRAM model it skips only periods that issue no DRAM request, with no DRAM transfer
under way at either end (engine/fastforward_dram.py says why that is exact); a loop in whose
every iteration a DRAM-linked node moves to other tiles is not watched, and a level backs
off after DRAM requests (looks that cannot jump cost as much as many events).

A snapshot that can end no jump is not taken when leaving it out changes no later decision
(_cannot_jump: from iteration bound - 2 of L on, with no earlier snapshot of the pass that lets
the processes as they stand go on, and no backoff the look could change). Where it looks
changes no result either: a level whose passes over L looked and never jumped lets passes go
by (_new_pass), and a look between grants with no transfer that has bursts to spare, which
ends no jump, is not taken (_room_between_grants).

It is exact or it does not fire: any state it cannot capture (L1 allocators, several
leaves, a trace window) turns it off, and any difference between two snapshots means
simulate on. The replay's results, records and traces are the same with it or without it;
only SimPy's event count differs.

This module holds the driver: the levels, when to look, and how far a jump may go. Each
component describes and moves its own state (snapshot and shift beside its fields: storage
nodes and their tiles, the PE array, the fabric, the DMA channels, transfers; Replay in
engine/shared.py puts them together, engine/snapshot.py names the events, an output's revisit
tables are engine/visits.py's); the copies of a period's records are
engine/fastforward_records.py.

Over 400 lines: how far a jump may go (_periods, _reach, _grant_periods) is the exactness
argument and reads with the levels it bounds.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from math import gcd, prod
from typing import TYPE_CHECKING

from cyclesim.engine import native
from cyclesim.engine.fastforward_classes import same_class_until
from cyclesim.engine.fastforward_dram import (
    DRAM_OFF_BECAUSE,
    DRAM_REQUESTS,
    DRAM_UNDER_WAY,
    dram_watch,
)
from cyclesim.engine.fastforward_records import replicate
from cyclesim.engine.link import n_bursts_of
from cyclesim.engine.record import FOREVER
from cyclesim.engine.snapshot import Snapshot, Unknown, Watched, cannot_capture
from cyclesim.vocabulary import Wait

if TYPE_CHECKING:
    from cyclesim.engine.shared import Replay

MIN_BOUND = 4  # a loop with fewer iterations has no room for two snapshots and a skip
MAX_BACKOFF = 64  # boundaries a level waits, at most, after snapshots that did not match
# a snapshot costs about as much as this many events: a level whose iterations take fewer
# timeouts is not worth looking at
MIN_EVENTS = 64
GRANT_SPACING = 16  # between grants: a snapshot at every 16th grant
HISTORY = 4  # a state may repeat every 1, 2, 3 or 4 iterations of L
# passes over L (iterations of the loop above it) that looked and never jumped before a level
# lets passes go by without a look: 1, 2, 4 ... at most MAX_DRY_SKIP, until a pass jumps
DRY_PASSES = 2
MAX_DRY_SKIP = 16


@dataclass(frozen=True, slots=True)
class FastForwardStats:
    """What fast-forward skipped in one replay (all zero when it never fired or was off)."""

    jumps: int = 0  # times it fired
    # periods skipped over all jumps: a period is one or a few (up to HISTORY) iterations of a
    # loop, or GRANT_SPACING grants inside transfers that take turns on a port
    periods: int = 0
    cycles_skipped: int = 0
    segments_skipped: int = 0  # PE segments not simulated
    # why it stayed off for this plan ('' when it was on), or that it never fired because
    # every period it looked at issued DRAM requests
    off_because: str = ""


@dataclass(slots=True)
class _Level:
    """One temporal loop L of the leaf at which snapshots are taken."""

    pos: int  # index in leaf.bounds
    bound: int  # B: iterations of L
    period: int  # D: segments per iteration of L
    below: tuple  # per node: tiles per iteration of L (d_n), or 0 for a frozen node
    last_time: int | None = None  # cycle of the last boundary seen
    last_events: int = 0  # the recorder's timeouts at that boundary
    history: list = field(default_factory=list)  # snapshots at the last boundaries, oldest first
    wait: int = 0  # boundaries to let pass before the next try
    backoff: int = 0  # ... after the next pair that does not match
    grants: bool = False  # boundaries are every GRANT_SPACING-th grant, not iterations of L
    # may iteration 0 of L be a period's start? Only when L indexes the output (_reach)
    from_zero: bool = False
    looked: bool = False  # a look was due in this pass over L ...
    jumped: bool = False  # ... and a jump made
    dry: int = 0  # passes in a row that looked and never jumped
    skip: int = 0  # passes still to let go by without a look
    dram_calls: tuple = ()  # per DRAM timer, its issue() calls at the last boundary


class FastForward:
    """Watches a replay's PE segment boundaries and jumps over repeating iterations."""

    def __init__(self, r: Replay, procs: list) -> None:
        self.r = r
        self._stats = FastForwardStats()
        self.misses: dict[str, int] = {}  # why a snapshot pair did not jump -> times
        self.levels: list[_Level] = []
        reason = cannot_capture(r)
        if reason:
            self._stats = FastForwardStats(off_because=reason)
            return
        plan = r.plan
        # (node, its fill's or write-back's state, is it the fill), as the processes run
        self.active = []
        for n in plan.nodes:
            if n.parent is not None:
                self.active.append((n, r.nodes[n.index].fill, True))
                if n.output_role:
                    self.active.append((n, r.nodes[n.index].write_back, False))
        self.dram = dram_watch(r, self.active)
        self.dram_levels = 0  # loops left out: DRAM requests in every iteration
        leaf = plan.leaves[0]
        segments = leaf.segments
        self.tiles_per = [segments // n.entries for n in plan.nodes]  # R_n: segments per tile
        # (the compiled storage nodes take the compiled VisitBlocks: engine/native.py)
        self.visits = [native.components.VisitBlocks(n) for n in plan.nodes]
        # procs: fixed order, fills, write-backs, the PE array
        ids = {id(p): i for i, p in enumerate(procs)}
        self.watched = Watched(procs, ids, self.active, self.tiles_per)
        depth = leaf.seg_depth
        for pos in range(depth):
            bound = leaf.bounds[pos]
            period = prod(leaf.bounds[pos + 1 : depth])
            if bound < MIN_BOUND:
                continue
            below = []
            for per in self.tiles_per:
                if period % per == 0:
                    below.append(period // per)
                elif per % (period * bound) == 0:
                    below.append(0)
                else:
                    break
            else:
                if self.dram.every_iteration(below):
                    self.dram_levels += 1
                    continue
                zero = leaf.out_relevant[pos]
                self.levels.append(_Level(pos, bound, period, tuple(below), from_zero=zero))
        r.boundaries = []
        r.boundary_every = FOREVER  # no level: the PE array never reports a segment
        if self.levels:
            r.boundary_every = functools.reduce(gcd, (lv.period for lv in self.levels))
        # inside long transfers that take turns on a port, the state repeats between grants
        self.grant_level = _Level(-1, 0, 0, tuple(0 for _ in plan.nodes), grants=True)
        r.fabric.grant_log, r.fabric.grant_every = r.boundaries, GRANT_SPACING

    # ------------------------------------------------------------------ the driver's hook
    def at_boundary(self, g: int) -> None:
        """The PE array started segment g (a multiple of some level's period): look, maybe jump.

        The state may repeat every iteration of L or every few (two transfers that alternate
        in phase): the snapshot is compared with the last HISTORY ones of the same level.
        """
        if g < 0:
            self._at_grant()
            return
        # called at every boundary of the innermost level: the levels that do not look cost
        # little (no look schedules an event: the recorder's count holds until a jump)
        now, total, dram = self.r.env.now, self.r.rec.events, self.dram.timers
        levels = self.levels
        first = len(levels)  # an outer level's period is a multiple of an inner one's: the
        while first and not g % levels[first - 1].period:  # levels at g are the inner ones
            first -= 1
        for lv in levels[first:]:  # outer loops first
            last, lv.last_time = lv.last_time, now
            events, lv.last_events = total - lv.last_events, total
            history = lv.history
            quiet = self._dram_quiet(lv) if dram else True
            zero = g // lv.period % lv.bound == 0
            if zero:
                _new_pass(lv)
                if history:  # no pair spans two iterations of the loop above L
                    history.clear()
            if (
                events < MIN_EVENTS
                or lv.wait
                or lv.skip
                or last is None
                or (zero and not lv.from_zero)
            ):
                # not worth a look, backing off, or iteration 0 of L that cannot start a period
                if lv.wait:
                    lv.wait -= 1
                if history:
                    history.clear()
                continue
            if not quiet:  # the state moved on, and may well go on moving: look less often
                history.clear()
                self._miss(DRAM_REQUESTS, None)
                lv.wait, lv.backoff = lv.backoff, min(max(1, 2 * lv.backoff), MAX_BACKOFF)
                continue
            lv.looked = True  # (a look _cannot_jump leaves out counts: it changes nothing)
            if self._cannot_jump(lv, g):
                self._miss("cannot jump", None)
                continue
            pair = self._matching_pair(lv, g, now, "state")
            if pair is None:
                continue
            prev, snap = pair
            periods = self._periods(lv, prev, snap)
            if periods < 1:
                continue
            dt, segments = self._jump(lv, prev, snap, periods)
            self._count(periods, dt, segments)
            lv.jumped = True
            # inner levels' snapshots are now stale (outer ones' still hold: everything they
            # would see between two snapshots is what the run did), but the jump lands on a
            # boundary of each of them: it counts as their last look (not as no look), so
            # their next boundary may already snapshot, and a wait counted before is void
            for other in self.levels:
                if other.pos > lv.pos:
                    other.history.clear()
                    other.last_time = self.r.env.now
                    other.last_events = self.r.rec.events
                    other.wait = other.backoff = 0
            history.clear()
            lv.backoff = 0
            lv.last_time = self.r.env.now - (now - last)
            lv.last_events = self.r.rec.events
            return

    def _cannot_jump(self, lv: _Level, g: int) -> bool:
        """Would a snapshot at boundary g of lv be for nothing, every later decision the same
        without it? Then it is not taken (a snapshot costs as much as many events).

        It is for nothing when it can be neither end of a jump: no earlier snapshot of this
        pass over L lets the PE array and the processes as they stand go on (_reach, which
        needs no snapshot), and no later one of the pass can (from iteration bound - 2 of L
        on, a pair leaves no period before the last iteration). Leaving it out changes nothing
        else when the level cannot back off in this pass (no backoff yet, no DRAM, and not
        HISTORY snapshots without a match): a match would only reset a backoff of 0, and the
        history and a wait to the end of the pass are void at the next pass's iteration 0.
        """
        if self.dram.timers or lv.backoff:
            return False
        i = g // lv.period % lv.bound
        history = lv.history
        if i < lv.bound - 2 or len(history) + lv.bound - i > HISTORY:
            return False
        return all(self._reach(lv, h.g, g)[0] < 1 for h in history)

    def _matching_pair(self, lv, g: int, now: int, why: str) -> tuple | None:
        """Snapshot the state at level lv; (an equal earlier snapshot, this one), or None.

        A state the snapshot cannot describe clears the level's history; a full history with
        no equal snapshot makes the level look less often for a while (counted under `why`).
        With DRAM, only snapshots taken since the last DRAM request may pair with this one.
        """
        history = lv.history
        snap = self._snapshot(lv, g, now)
        if snap is None:
            history.clear()
            return None
        if self.dram.timers:  # the DRAM rule: no request reached a timer between the two
            history[:] = [h for h in history if h.dram_calls == snap.dram_calls]
        prev = _match(history, snap)
        if prev is None:
            if not history:  # HISTORY snapshots, none the same: look less often for a while
                self._miss(why, None)
                lv.wait, lv.backoff = lv.backoff, min(max(1, 2 * lv.backoff), MAX_BACKOFF)
            return None
        if not self.dram.timers:  # (with DRAM a match may still end in DRAM requests: at a jump)
            lv.backoff = 0
        return prev, snap

    def _at_grant(self) -> None:
        """The fabric made its GRANT_SPACING-th grant since the last look: look, maybe jump."""
        lv = self.grant_level
        r = self.r
        now = r.env.now
        last, lv.last_time = lv.last_time, now
        history = lv.history
        quiet = self._dram_quiet(lv) if self.dram.timers else True
        if lv.wait or last is None:
            if lv.wait:
                lv.wait -= 1
            if history:
                history.clear()
            return
        if not quiet:
            history.clear()
            self._miss(DRAM_REQUESTS, None)
            lv.wait, lv.backoff = lv.backoff, min(max(1, 2 * lv.backoff), MAX_BACKOFF)
            return
        if not self._room_between_grants():
            return
        pair = self._matching_pair(lv, r.pe.g, now, "state between grants")
        if pair is None:
            return
        prev, snap = pair
        periods = self._grant_periods(prev, snap)
        if periods < 1:
            return
        dt = r.shift_between_grants(prev, snap, periods)
        replicate(r, prev, snap, periods, tuple(0 for _ in r.plan.nodes), 0)
        self._count(periods, dt, 0)
        for other in (*self.levels, self.grant_level):
            other.history.clear()
            other.last_time = None

    def _room_between_grants(self) -> bool:
        """Has some transfer under way a burst to spare beyond its current run and its last
        one? A look without one ends no jump (_grant_periods: each transfer that moved keeps
        its last bursts to be simulated), and it is not taken (a snapshot costs as much as
        many events); it could start one only if a competitor later cut a run short."""
        for _, st, _ in self.active:
            x = st.xfer
            if x is not None:
                if not x.burst:  # not timed yet
                    return True
                ahead = max(1, x.j - x.i) if x.stage == Wait.BURST else 1
                if n_bursts_of(x.big, x.small, x.burst) - 1 - ahead - x.i >= 1:
                    return True
        return False

    def _dram_quiet(self, lv: _Level) -> bool:
        """Did no request reach a DRAM timer since the level's last boundary (always true
        without DRAM)? If one did, no snapshot before this boundary may pair with any later
        one, and this one is not taken either: a period of DRAM requests is most often
        followed by another (a snapshot costs as much as many events)."""
        if not self.dram.timers:
            return True
        calls = self.dram.calls()
        quiet = calls == lv.dram_calls
        lv.dram_calls = calls
        return quiet

    def _snapshot(self, lv: _Level, g: int, now: int) -> Snapshot | None:
        """The state at this boundary, or None (and why, counted) when it cannot be described.

        A transfer through a DRAM side keeps its state in its generator and the side (streams,
        runs issued ahead): none may be under way."""
        if self.dram.timers and self.dram.under_way():
            return self._miss(DRAM_UNDER_WAY, None)
        try:
            key, countdowns, recent = self.r.snapshot(self.watched, lv.below, lv.grants, g, now)
        except Unknown as e:
            return self._miss(str(e.args[0]) if e.args else "unknown", None)
        calls = self.dram.calls()
        return Snapshot(g, now, recent, key, countdowns, self.r.marks(self.active), calls)

    def _jump(self, lv: _Level, a: Snapshot, b: Snapshot, K: int) -> tuple[int, int]:
        """Skip K periods of level lv (the one from a to b), as if they had run: the replay's
        state (Replay.shift) and the period's records (fastforward_records.py); return the
        cycles and PE segments skipped."""
        m = (b.g - a.g) // lv.period  # iterations of L per period
        tiles = tuple(m * d for d in lv.below)  # per node: tiles per period
        dt = self.r.shift(a, b, K, tiles, m * lv.period, self.visits)
        replicate(self.r, a, b, K, tiles, m * lv.period)
        return dt, K * (b.marks["segments"] - a.marks["segments"])

    @property
    def stats(self) -> FastForwardStats:
        """What it skipped so far; when it never fired because every look found DRAM traffic
        (and nothing else kept it from repeating), off_because says so."""
        s = self._stats
        if s.jumps or s.off_because or not (self.misses or self.dram_levels):
            return s
        if set(self.misses) <= {DRAM_REQUESTS, DRAM_UNDER_WAY}:
            return replace(s, off_because=DRAM_OFF_BECAUSE)
        return s

    def _count(self, periods: int, cycles: int, segments: int) -> None:
        """One more jump over `periods` periods, `cycles` cycles and `segments` PE segments."""
        s = self._stats
        self._stats = FastForwardStats(
            s.jumps + 1,
            s.periods + periods,
            s.cycles_skipped + cycles,
            s.segments_skipped + segments,
        )

    # ------------------------------------------------------------------ how far
    def _grant_periods(self, a: Snapshot, b: Snapshot) -> int:
        """How many periods between grants can be skipped: nothing but bursts happened (no
        record but timelines and grants, no count), each transfer moved a whole number of
        equal bursts, and every transfer keeps its last burst to be simulated."""
        ma, mb = a.marks, b.marks
        for name in ("lists", "counts", "spatial", "systolic", "runs", "segments", "finishers"):
            if ma[name] != mb[name]:
                return self._miss("work between grants", 0)
        if a.countdowns != b.countdowns:
            return self._miss("work between grants", 0)
        most = None
        for xa, xb in zip(ma["xfers"], mb["xfers"], strict=True):
            if xa is None and xb is None:
                continue
            if xa is None or xb is None or xa[0] is not xb[0]:
                return self._miss("another transfer", 0)
            x, delta = xb[0], xb[1] - xa[1]
            if delta < 0:
                return self._miss("another transfer", 0)
            if not delta:
                continue
            # bursts are counted on the side with more bits (engine/link.py moved_bits)
            more, fewer = max(x.big, x.small), min(x.big, x.small)
            if fewer * x.burst * delta % more:
                return self._miss("uneven bursts", 0)  # the other side's share of a burst varies
            n_bursts = n_bursts_of(x.big, x.small, x.burst)
            ahead = max(1, x.j - x.i) if x.stage == Wait.BURST else 1
            k = (n_bursts - 1 - ahead - x.i) // delta
            most = k if most is None else min(most, k)
        if not most or most < 1:
            return self._miss("end of transfer", 0)
        return most

    def _periods(self, lv: _Level, a: Snapshot, b: Snapshot) -> int:
        """How many periods after b are of the same class as the one from a to b (0: none).

        As far as the PE array and the processes allow (_reach), and frozen tiles keep at
        least one use left.
        """
        most, why = self._reach(lv, a.g, b.g)
        if why:
            return self._miss(why, 0)
        for (node, name, k), v in b.countdowns.items():
            drop = a.countdowns.get((node, name, k), v) - v
            if drop < 0:
                return self._miss("countdown", 0)
            if drop:
                most = min(most, (v - 1) // drop)
        if most > 0:
            return most
        # later pairs in this pass over L end sooner still: no more snapshots until the next
        # (but a pair from iteration 0 may end on a process still in the previous pass)
        if a.g // lv.period % lv.bound:
            lv.wait = lv.bound - 1 - b.g // lv.period % lv.bound
        return self._miss("end of loop", 0)

    def _reach(self, lv: _Level, ag: int, bg: int) -> tuple[int, str]:
        """How many periods after segment bg the PE array and the processes (as they stand
        now, at bg) allow for the period from segment ag, and why none ('' when the count
        says so): it needs no snapshot.

        The PE array's segment from a's to the resume point stays in one iteration of the loop
        above L, and so does every tile of a node below L, but for outputs that L indexes:
        their fills and write-backs (a step or two ahead of the PE array or behind it) may run
        on into iterations above L whose entries have the visits of the period's
        (engine/fastforward_classes.py), within their frozen parent tile. Outputs whose values
        L does not index keep to the revisits (no first visit at a, no final write-back before
        the resume point: a write-back still waiting to start may stand at the first final
        entry).

        a may be at iteration 0 of L when L indexes the output (_Level.from_zero): the segment
        kinds of an iteration then differ from the next one's in its first segment only
        (its level is an outer loop's; first visits follow loops L does not take part in),
        which the snapshots compare by profile (PeArray.snapshot's kind held).
        """
        bound, period = lv.bound, lv.period
        block = period * bound  # segments per iteration of the loop above L
        m = (bg - ag) // period  # iterations of L per period of the state
        if ag // block != bg // block:
            return 0, "pe"
        # the PE array: from a's iteration of L up to the start of the last
        most = ((ag // block + 1) * block - period - bg) // (m * period)
        for n, st, is_fill in self.active:
            d = lv.below[n.index]
            if not d:
                continue
            if st.stage == Wait.IDLE:
                return 0, "done"
            x2 = st.k
            x1 = x2 - m * d
            if x1 < 0:
                return 0, "outer tile"
            if not n.output_role:  # an input's fills differ only in the parent tile they read
                if lv.below[n.parent]:
                    continue  # it moves with them
                top = (x1 // n.ratio + 1) * n.ratio - 1  # the frozen parent tile's last
                most = min(most, (top - x2) // (m * d))
                continue
            if n.relevant[lv.pos]:  # on into the next iterations above L of the same class
                top = same_class_until(n, lv.pos, x1, is_fill, x2 + most * m * d)
                if not lv.below[n.parent]:  # ... and the frozen parent tile it reads or writes
                    top = min(top, (x1 // n.ratio + 1) * n.ratio - 1)
                most = min(most, (top - x2) // (m * d))
                continue
            span = d * bound  # tiles of n per iteration of the loop above L
            top = (x1 // span + 1) * span - 1  # last tile of this iteration above L
            if is_fill and x1 // d % bound == 0:
                return 0, "first visit"
            if not is_fill:
                top -= d  # a final write-back differs from a partial one
                if st.stage in (Wait.USES, Wait.PIPELINE, Wait.PARENT):
                    top += 1  # ... its entry st.k decides which only after these waits
            most = min(most, (top - x2) // (m * d))
        return most, ""

    def _miss(self, why: str, value):
        """Count why a snapshot pair did not lead to a jump (for diagnostics and tests)."""
        self.misses[why] = self.misses.get(why, 0) + 1
        return value


def _new_pass(lv: _Level) -> None:
    """Iteration 0 of L: after DRY_PASSES passes that looked and never jumped (the state does
    not repeat from one iteration of L to the next there), let 1, 2, 4 ... passes go by
    without a look (a snapshot costs as much as many events); a pass that jumps ends it."""
    if lv.skip:  # the pass that ended went by without a look
        lv.skip -= 1
    elif lv.looked:
        lv.dry = 0 if lv.jumped else lv.dry + 1
        if lv.dry >= DRY_PASSES:
            lv.skip = min(1 << (lv.dry - DRY_PASSES), MAX_DRY_SKIP)
    lv.looked = lv.jumped = False


def _match(history: list, snap: Snapshot) -> Snapshot | None:
    """The latest earlier snapshot equal to snap, or None; snap joins the history, which keeps
    the last HISTORY and is emptied when that many passed without a match."""
    prev = next((h for h in reversed(history) if h.key == snap.key), None)
    history.append(snap)
    if len(history) > HISTORY:
        del history[0]
        if prev is None:
            history.clear()
    return prev
