"""Exact steady-state fast-forward: skip whole iterations of a loop that repeat exactly.

At the start of an iteration of a temporal loop L of the leaf (every D segments), the driver
takes a snapshot of the replay's whole state relative to the current cycle T and to each
node's current tile: the event queue (time - T, priority, what each event resumes, in heap
order), every process's state object (engine/state.py), the tile tables, the fabric (holders,
reservations, waiting requests, runs, round-robin order), the DMA channels. When two
consecutive snapshots of L are equal, the system is in a steady state of period P cycles:
each further iteration repeats the last one shifted by P cycles, d_n tiles of every node n
below L and D segments, as long as the schedule says the iterations are of the same class.
The jump then advances everything by K periods at once: queued event times and the clock,
state objects and tile tables, the accumulators (counts, spatial and systolic stalls, kinds of
segment), and it replicates the period's records (timelines, grants, PE waits, trace) K times.

Nodes whose tile changes above L ("frozen") keep their tile during the skip; their countdowns
of uses left fall by a constant per period, which the jump never lets reach zero. It is exact
or it does not fire: any state it cannot capture (DRAM timing, L1 allocators, several leaves,
a trace window) turns it off, and any difference between two snapshots means simulate on.
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import chain, islice, repeat
from math import gcd, prod
from operator import add

from simpy.events import PENDING, Interruption, Process

from cyclesim.engine.record import FOREVER, S_SLOT, S_USES
from cyclesim.engine.state import DONE, DRAINED, PARENT, RUN, TRANSFER
from cyclesim.engine.tiles import entry_classifier

MIN_BOUND = 4  # a loop with fewer iterations has no room for two snapshots and a skip
MAX_BACKOFF = 64  # boundaries a level waits, at most, after snapshots that did not match
# a snapshot costs about as much as this many events: a level whose iterations take fewer
# timeouts is not worth looking at
MIN_EVENTS = 64
GRANT_SPACING = 16  # between grants: a snapshot at every 16th grant to one requester
HISTORY = 4  # a state may repeat every 1, 2, 3 or 4 iterations of L
TABLES = ("resident", "used", "released")  # bounded: compared and shifted
# `produced` is only read by the consumers of an intermediate (never with one leaf): shifted
# with its node's tiles, not compared (a frozen node's parts fill it during the skip)
# `drained` holds every partial write-back until its values are reloaded, so it grows over an
# outer loop's iteration; it follows from the fill's and write-back's positions (an entry is
# there once written back, until the next visit reloads it), so only its waiter is compared:
# the fill's, when it waits at stage DRAINED for the mark of entry st.prev
COUNTDOWNS = ("remaining", "prod_left")


@dataclass(frozen=True, slots=True)
class FastForwardStats:
    """What fast-forward skipped in one replay (all zero when it never fired or was off)."""

    jumps: int = 0  # times it fired
    periods: int = 0  # loop iterations skipped, over all jumps
    cycles_skipped: int = 0
    segments_skipped: int = 0


class _Unknown(Exception):
    """Some state the snapshot cannot describe: no fast-forward from this boundary."""


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
    seen: int = 0  # grants seen (grant levels)
    grants: bool = False  # boundaries are grants to one requester, not iterations of L


@dataclass(slots=True)
class _Snapshot:
    g: int
    time: int
    recent: int  # last-grant cycles from this one on are compared exactly, older ones by rank
    key: tuple
    countdowns: dict  # (node, table, tile) of frozen nodes -> uses left
    marks: dict  # record lengths and accumulator values at the snapshot


class FastForward:
    """Watches a replay's PE segment boundaries and jumps over repeating iterations."""

    def __init__(self, r, procs: list) -> None:
        self.r = r
        self.stats = FastForwardStats()
        self.misses: dict[str, int] = {}  # why a snapshot pair did not jump -> times
        self.levels: list[_Level] = []
        self.procs = procs  # [Process], fixed order: fills, write-backs, the PE array
        self.proc_ids = {id(p): i for i, p in enumerate(procs)}
        plan = r.plan
        # (node, its fill's or write-back's state, is it the fill), as the processes run
        self.active = []
        for n in plan.nodes:
            if n.parent is not None:
                self.active.append((n, r.fill_state[n.index], True))
                if n.output_role:
                    self.active.append((n, r.drain_state[n.index], False))
        if not _eligible(r):
            return
        leaf = plan.leaves[0]
        segments = leaf.segments
        self.tiles_per = [segments // n.entries for n in plan.nodes]  # R_n: segments per tile
        self.classifiers = [entry_classifier(n) for n in plan.nodes]
        depth = leaf.seg_depth
        for pos in range(depth):
            bound = leaf.bounds[pos]
            period = prod(leaf.bounds[pos + 1 : depth])
            if bound < MIN_BOUND:
                continue
            below = []
            for n, per in zip(plan.nodes, self.tiles_per, strict=True):
                if period % per == 0 and n.dependency_groups == 1:
                    below.append(period // per)
                elif per % (period * bound) == 0:
                    below.append(0)
                else:
                    break
            else:
                self.levels.append(_Level(pos, bound, period, tuple(below)))
        r.boundaries = []
        r.boundary_every = FOREVER  # no level: the PE array never reports a segment
        if self.levels:
            r.boundary_every = functools.reduce(gcd, (lv.period for lv in self.levels))
        # inside long transfers that take turns on a port, the state repeats between grants
        self.frozen = tuple(0 for _ in plan.nodes)
        self.grant_levels: dict[int, _Level] = {}
        r.fabric.grant_log = r.boundaries

    # ------------------------------------------------------------------ the driver's hook
    def at_boundary(self, g: int) -> None:
        """The PE array started segment g (a multiple of some level's period): look, maybe jump.

        The state may repeat every iteration of L or every few (two transfers that alternate
        in phase): the snapshot is compared with the last HISTORY ones of the same level.
        """
        if g < 0:
            self._at_grant(~g)
            return
        now = self.r.env.now
        for lv in self.levels:  # outer loops first
            if g % lv.period:
                continue
            last, lv.last_time = lv.last_time, now
            events, lv.last_events = self.r.rec.events - lv.last_events, self.r.rec.events
            history = lv.history
            if events < MIN_EVENTS or lv.wait or last is None or g // lv.period % lv.bound == 0:
                # not worth a look, backing off, or the first iteration of L (never a reference)
                lv.wait = max(0, lv.wait - 1)
                history.clear()
                continue
            snap = self._snapshot(lv, g, now, now - last)
            if snap is None:
                history.clear()
                continue
            prev = next((h for h in reversed(history) if h.key == snap.key), None)
            history.append(snap)
            if prev is None:
                if len(history) > HISTORY:
                    self._miss("state", None)
                    history.clear()
                    lv.wait, lv.backoff = lv.backoff, min(max(1, 2 * lv.backoff), MAX_BACKOFF)
                continue
            lv.backoff = 0
            periods = self._periods(lv, prev, snap)
            if periods < 1:
                continue
            self._jump(lv, prev, snap, periods)
            # inner levels' last snapshots and boundaries are now stale; outer ones' still
            # hold (everything they would see between two snapshots is what the run did)
            for other in self.levels:
                if other.pos > lv.pos:
                    other.history.clear()
                    other.last_time = None
            history.clear()
            lv.last_time = self.r.env.now - (now - last)
            lv.last_events = self.r.rec.events
            return

    def _at_grant(self, who: int) -> None:
        """A port was granted to requester who: every GRANT_SPACING-th time, look, maybe jump."""
        lv = self.grant_levels.get(who)
        if lv is None:
            lv = self.grant_levels[who] = _Level(-1, 0, 0, self.frozen, grants=True)
        lv.seen += 1
        if lv.seen % GRANT_SPACING:
            return
        r = self.r
        now = r.env.now
        last, lv.last_time = lv.last_time, now
        history = lv.history
        if lv.wait or last is None:
            lv.wait = max(0, lv.wait - 1)
            history.clear()
            return
        snap = self._snapshot(lv, r.pe_state.g, now, now - last)
        if snap is None:
            history.clear()
            return
        prev = next((h for h in reversed(history) if h.key == snap.key), None)
        history.append(snap)
        if prev is None:
            if len(history) > HISTORY:
                self._miss("state between grants", None)
                history.clear()
                lv.wait, lv.backoff = lv.backoff, min(max(1, 2 * lv.backoff), MAX_BACKOFF)
            return
        lv.backoff = 0
        periods = self._grant_periods(prev, snap)
        if periods < 1:
            return
        self._grant_jump(prev, snap, periods)
        for other in (*self.levels, *self.grant_levels.values()):
            other.history.clear()
            other.last_time = None

    def _grant_periods(self, a: _Snapshot, b: _Snapshot) -> int:
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
            if x.big * x.burst * delta % x.small:
                return self._miss("uneven bursts", 0)  # the parent's share of a burst varies
            n_bursts = -(-x.small // x.burst)
            ahead = max(1, x.j - x.i) if x.stage == RUN else 1
            k = (n_bursts - 1 - ahead - x.i) // delta
            most = k if most is None else min(most, k)
        if not most or most < 1:
            return self._miss("end of transfer", 0)
        return most

    def _grant_jump(self, a: _Snapshot, b: _Snapshot, K: int) -> None:
        """Skip K periods inside transfers: time, burst indices, grants and timelines."""
        r = self.r
        env = r.env
        P = b.time - a.time
        dt = K * P
        env._queue[:] = [(t + dt, prio, eid, ev) for t, prio, eid, ev in env._queue]
        env._now += dt
        for xa, xb in zip(a.marks["xfers"], b.marks["xfers"], strict=True):
            if xb is not None:
                x, moved = xb[0], K * (xb[1] - xa[1])
                x.shift(dt)
                x.i += moved
                x.j += moved
        _shift_round_robin(r.fabric, b.recent, dt)
        self._replicate(a, b, K, self.frozen, 0)
        s = self.stats
        self.stats = FastForwardStats(s.jumps + 1, s.periods + K, s.cycles_skipped + dt, 0)

    # ------------------------------------------------------------------ snapshots
    def _snapshot(self, lv: _Level, g: int, now: int, period_cycles: int) -> _Snapshot | None:
        try:
            key, countdowns = self._describe(lv, g, now, now - period_cycles)
        except _Unknown as e:
            return self._miss(str(e.args[0]) if e.args else "unknown", None)
        return _Snapshot(g, now, now - period_cycles, key, countdowns, self._marks())

    def _describe(self, lv: _Level, g: int, now: int, recent: int) -> tuple[tuple, dict]:
        """The state relative to cycle now and to each node's tile at segment g."""
        r = self.r
        env, fabric, nodes = r.env, r.fabric, r.plan.nodes
        locs: dict[int, tuple] = {}  # id(event) -> where it is held
        proc_ids = self.proc_ids

        def callback(cb) -> tuple:
            owner = getattr(cb, "__self__", None)
            if owner is not None and getattr(cb, "__func__", None) is Process._resume:
                pid = proc_ids.get(id(owner))
                if pid is not None:
                    return ("resume", pid)
            if isinstance(owner, Interruption):
                return ("interrupt", proc_ids.get(id(owner.process)))
            if isinstance(cb, functools.partial) and getattr(cb.func, "__name__", "") == (
                "_resident"
            ):
                return ("resident", cb.args)
            raise _Unknown(cb)

        def event(ev, loc: tuple) -> tuple:
            seen = locs.get(id(ev))
            if seen is not None:
                return ("same", seen)
            locs[id(ev)] = loc
            cause = ev._value.cause if isinstance(ev, Interruption) else None
            cbs = tuple(callback(cb) for cb in ev.callbacks) if ev.callbacks else ()
            return (type(ev).__name__, ev._value is PENDING, getattr(ev, "_ok", None), cause, cbs)

        out = []
        # queued events in heap order; one nobody waits for (an interrupted run's timeout) does
        # nothing when it fires, whenever that is: left out (the jump moves it all the same)
        queue = sorted(env._queue)
        out.append(
            tuple(
                (t - now, prio, event(ev, ("queue", i)))
                for i, (t, prio, _, ev) in enumerate(queue)
                if ev.callbacks
            )
        )
        # tile tables, relative to each node's tile at segment g (frozen nodes: absolute)
        countdowns = {}
        lf = r.rec.last_finisher
        for n, t, d, per in zip(nodes, r.tiles, lv.below, self.tiles_per, strict=True):
            base = g // per if d else 0
            rows = []
            for name in TABLES:
                table = getattr(t, name)
                rows.append(  # in key order: a table is only ever looked up
                    tuple(
                        (
                            k - base,
                            True if v is True else event(v, ("tile", n.index, name, k - base)),
                        )
                        for k, v in sorted(table.items())
                    )
                )
            for name in COUNTDOWNS:
                table = getattr(t, name)
                if d:
                    rows.append(tuple(sorted((k - base, v) for k, v in table.items())))
                else:
                    rows.append(tuple(sorted(table)))
                    for k, v in table.items():
                        countdowns[(n.index, name, k)] = v
            if not d:
                rows.append(tuple(lf.get((n.index, k)) for k in sorted(t.remaining)))
            if t.computed_tile or t.computed_part:
                raise _Unknown("intermediate")
            out.append(tuple(rows))
        # the fabric: holders with their open grants, reservations, runs, waiting requests
        grants = fabric.grants
        open_grants = []
        for key, who in fabric.holder.items():
            if who is not None:
                start, end, gwho, tensor = grants[key][-1]
                if end is not None or start < recent:
                    raise _Unknown("grant")
                open_grants.append((key, who, start - now, gwho, tensor))
        out.append(tuple(open_grants))
        out.append(tuple(fabric.reserved.items()))
        out.append(tuple(fabric.wanted.items()))
        out.append(tuple((k, proc_ids.get(id(run[0])), run[1]) for k, run in fabric.runs.items()))
        old = sorted(
            {v for v in fabric.last_grant.values() if v < recent}
            | {w[0] for w in fabric.waiting if w[0] < recent}
        )

        def order(v: int) -> tuple:
            return ("recent", v - now) if v >= recent else ("old", bisect_left(old, v))

        out.append(tuple(sorted((who, order(v)) for who, v in fabric.last_grant.items())))
        out.append(
            tuple(
                (order(w[0]), w[1], w[2], event(w[3], ("waiting", i)), w[4])
                for i, w in enumerate(fabric.waiting)
            )
        )
        out.append(
            tuple(
                (
                    k,
                    tuple(
                        event(ev, ("width", k, i)) for i, ev in enumerate(evs) if not ev.triggered
                    ),
                )
                for k, evs in fabric.width_waiters.items()
            )
        )
        dmas = []
        for name, (resource, _, _) in r.dma.items():
            users = tuple(
                (proc_ids.get(id(q.proc)), event(q, ("dma", name, "user", i)))
                for i, q in enumerate(resource.users)
            )
            waiting = tuple(
                (proc_ids.get(id(q.proc)), event(q, ("dma", name, "queue", i)))
                for i, q in enumerate(resource.queue)
            )
            dmas.append((name, users, waiting))
        out.append(tuple(dmas))
        # the processes: state objects, and where the event each one waits for is held
        for n, st, is_fill in self.active:
            base = g // self.tiles_per[n.index] if lv.below[n.index] else 0
            if is_fill and st.stage == DRAINED:  # the only waiter `drained` ever holds
                waiter = r.tiles[n.index].drained.get(st.prev)
                if waiter is not None and waiter is not True:  # (True: it woke, in the queue)
                    event(waiter, ("tile", n.index, "drained"))
            out.append(_node_state(st, base, now, recent, locs, lv.grants))
        pe = r.pe_state
        held = None if pe.held is None else id(pe.held)
        if not lv.grants:
            if pe.wait is not None or r.pe_waiting is not None or pe.g != g:
                raise _Unknown("pe")
            out.append((pe.stage, pe.start - now, held))
        else:  # between grants: the PE array stays where it is, waiting or not (times absolute)
            wait = pe.wait
            if wait is not None:
                wait = (
                    wait.start,
                    tuple(wait.met_at.items()),
                    tuple(wait.keys.items()),
                    tuple(wait.resident_at.items()),
                )
            out.append((pe.stage, pe.g, pe.start, held, wait, r.pe_waiting))
        targets = []
        for p in self.procs:
            if p.is_alive:
                loc = locs.get(id(p._target))
                if loc is None:
                    raise _Unknown("target")
                targets.append(loc)
            else:
                targets.append(None)
        out.append(tuple(targets))
        return tuple(out), countdowns

    def _marks(self) -> dict:
        """Record lengths and accumulator values, to find what one period added."""
        r = self.r
        rec = r.rec
        lists = {"pe_waits": len(rec.pe_waits)}
        for name in ("pe_segments", "transfers", "occupancy"):
            v = getattr(rec, name)
            if v is not None:
                lists[name] = len(v)
        return {
            "lists": lists,  # (compared whole between grants: nothing may be added)
            "fill_tl": [len(tl) for tl in rec.fill_tl],
            "drain_tl": [len(tl) for tl in rec.drain_tl],
            "grants": {k: len(v) for k, v in rec.grants.items()},
            "counts": {k: tuple(v) for k, v in r.counts.items()},
            "spatial": {k: tuple(v) for k, v in rec.spatial.items()},
            "systolic": {k: tuple(v) for k, v in rec.systolic.items()},
            "runs": {k: sk.runs for k, sk in r.pe_state.kinds.items()},
            "segments": r.segments_done,
            "finishers": len(rec.last_finisher),
            "in_use": [set(t.remaining) for t in r.tiles],
            "xfers": [
                None if st.xfer is None else (st.xfer, st.xfer.i) for _, st, _ in self.active
            ],
        }

    # ------------------------------------------------------------------ how far
    def _periods(self, lv: _Level, a: _Snapshot, b: _Snapshot) -> int:
        """How many periods after b are of the same class as the one from a to b (0: none).

        Every process's entry from a's to the resume point stays in one iteration of the loop
        above L (the PE array's segment and every tile of a node below L), and outputs whose
        values L does not index keep to the revisits (no first visit at a, no final write-back
        before the resume point). Frozen tiles keep at least one use left.
        """
        bound, period = lv.bound, lv.period
        block = period * bound  # segments per iteration of the loop above L
        m = (b.g - a.g) // period  # iterations of L per period of the state
        if a.g // block != b.g // block:
            return self._miss("pe", 0)
        # the PE array: from a's iteration of L (never the first) up to the start of the last
        most = ((a.g // block + 1) * block - period - b.g) // (m * period)
        for (node, name, k), v in b.countdowns.items():
            drop = a.countdowns.get((node, name, k), v) - v
            if drop < 0:
                return self._miss("countdown", 0)
            if drop:
                most = min(most, (v - 1) // drop)
        for n, st, is_fill in self.active:
            d = lv.below[n.index]
            if not d:
                continue
            if st.stage == DONE:
                return self._miss("done", 0)
            x2 = st.k
            x1 = x2 - m * d
            if x1 < 0:
                return self._miss("outer tile", 0)
            if not n.output_role:  # an input's fills differ only in the parent tile they read
                if lv.below[n.parent]:
                    continue  # it moves with them
                top = (x1 // n.ratio + 1) * n.ratio - 1  # the frozen parent tile's last
                most = min(most, (top - x2) // (m * d))
                continue
            span = d * bound  # tiles of n per iteration of the loop above L
            top = (x1 // span + 1) * span - 1  # last tile of this iteration above L
            if not n.relevant[lv.pos]:
                if is_fill and x1 // d % bound == 0:
                    return self._miss("first visit", 0)
                if not is_fill:
                    top -= d  # a final write-back differs from a partial one
            most = min(most, (top - x2) // (m * d))
        return most if most > 0 else self._miss("end of loop", 0)

    def _miss(self, why: str, value):
        """Count why a snapshot pair did not lead to a jump (for diagnostics and tests)."""
        self.misses[why] = self.misses.get(why, 0) + 1
        return value

    # ------------------------------------------------------------------ the jump
    def _visits(self, n, moved: dict, shift: int) -> None:
        """Bring an output node's revisit tables to the entries its processes jumped to.

        The write-back marks the partial sums of each entry it passed as drained; the fill
        records each entry it passed as the latest visit of its values and takes the drained
        mark of the previous visit (a mark is always made before it is taken). A waiter in
        `drained` moves with the entries. moved: is the fill -> (state, entry at b).
        """
        t = self.r.tiles[n.index]
        drained = t.drained
        waiters = []  # the fill's, if it waits for `drained` (nobody else does)
        if True in moved and moved[True][0].stage == DRAINED:
            key = moved[True][0].prev - shift
            if drained.get(key, True) is not True:
                waiters.append((key, drained.pop(key)))
        if False in moved:
            st, old = moved[False]
            final = self.classifiers[n.index][1]
            for x in range(old, st.k):
                if not final(x):
                    drained[x] = True
        if True in moved:
            st, old = moved[True]
            first_and_key = self.classifiers[n.index][0]
            last_visit = t.last_visit
            # the fill takes an entry's mark after its waits for the parent and `drained`
            taken = st.stage not in (PARENT, DRAINED)
            if not taken and st.prev is not None:  # entry `old` took its mark during the skip
                drained.pop(st.prev - shift, None)
            for x in range(old + 1, st.k + 1):
                first, key = first_and_key(x)
                prev = last_visit.get(key)
                last_visit[key] = x
                if not first and prev is not None and (x < st.k or taken):
                    drained.pop(prev, None)
        for k, v in waiters:
            drained[k + shift] = v

    def _jump(self, lv: _Level, a: _Snapshot, b: _Snapshot, K: int) -> None:
        r = self.r
        env, rec, fabric, nodes = r.env, r.rec, r.fabric, r.plan.nodes
        P = b.time - a.time
        dt = K * P
        m = (b.g - a.g) // lv.period  # iterations of L per period
        below = tuple(m * d for d in lv.below)  # tiles per period
        # the clock and the queue: a uniform shift keeps the heap's order
        env._queue[:] = [(t + dt, prio, eid, ev) for t, prio, eid, ev in env._queue]
        env._now += dt
        # the processes
        moved = {}  # output node -> is the fill -> (its state, entry at b)
        for n, st, is_fill in self.active:
            d = below[n.index]
            st.start += dt
            if st.xfer is not None:
                st.xfer.shift(dt)
            if d:
                old = st.k
                st.k += K * d
                if st.prev is not None:
                    st.prev += K * d
                if n.output_role:
                    moved.setdefault(n.index, {})[is_fill] = (st, old)
        pe = r.pe_state
        pe.g += K * m * lv.period
        pe.start += dt
        # tile tables
        for t, d in zip(r.tiles, below, strict=True):
            if d:
                for name in TABLES + COUNTDOWNS:
                    _rekey(getattr(t, name), K * d)
                _rekey(t.produced, K * d)
        for node, states in moved.items():
            self._visits(nodes[node], states, K * below[node])
        for (node, name, k), v in b.countdowns.items():
            drop = a.countdowns[(node, name, k)] - v
            if drop:
                getattr(r.tiles[node], name)[k] = v - K * drop
        _shift_round_robin(fabric, b.recent, dt)
        # accumulators: K more periods
        ma, mb = a.marks, b.marks
        for key, cell in r.counts.items():
            v0, b0 = ma["counts"].get(key, (0, 0))
            v1, b1 = mb["counts"][key]
            cell[0] += K * (v1 - v0)
            cell[1] += K * (b1 - b0)
        for table, name in ((rec.spatial, "spatial"), (rec.systolic, "systolic")):
            for key, cur in table.items():
                c0, _, l0 = ma[name].get(key, (0, None, None))
                c1, _, l1 = mb[name][key]
                if c1 != c0 or l1 != l0:
                    cur[0] += K * (c1 - c0)
                    cur[2] += dt
        for key, sk in pe.kinds.items():
            sk.runs += K * (mb["runs"][key] - ma["runs"].get(key, 0))
        segments = mb["segments"] - ma["segments"]
        r.segments_done += K * segments
        self._replicate(a, b, K, below, m * lv.period)
        s = self.stats
        self.stats = FastForwardStats(
            s.jumps + 1, s.periods + K, s.cycles_skipped + dt, s.segments_skipped + K * segments
        )

    def _replicate(self, a: _Snapshot, b: _Snapshot, K: int, tile_shift: tuple, step: int):
        """Append the records of the period from a to b K more times, shifted by whole periods:
        times by P, each node's tiles by tile_shift, PE segments by step."""
        rec, fabric = self.r.rec, self.r.fabric
        ma, mb = a.marks, b.marks
        P = b.time - a.time
        dt = K * P
        for tls, name in ((rec.fill_tl, "fill_tl"), (rec.drain_tl, "drain_tl")):
            for node, tl in enumerate(tls):
                part = tl[ma[name][node] : mb[name][node]]
                if part:
                    d = tile_shift[node]
                    per = [d if state in (S_SLOT, S_USES) else 0 for _, state, _ in part]
                    tl += _copies(part, K, {0: P}, {2: per} if d else None)
        for key, grants in rec.grants.items():
            n0, n1 = ma["grants"][key], mb["grants"][key]
            live = None
            if fabric.holder[key] is not None:  # held at a too (same state): its grant is open
                live = grants.pop()  # ... and the one open at a is the period's first
                n0, n1 = n0 - 1, n1 - 1
            if n1 > n0:
                grants += map(list, _copies(grants[n0:n1], K, {0: P, 1: P}))
            if live is not None:
                live[0] += dt
                grants.append(live)
        lists = ma["lists"], mb["lists"]
        part = rec.pe_waits[lists[0]["pe_waits"] : lists[1]["pe_waits"]]
        if part:
            per = [tile_shift[w[2]] for w in part]
            rec.pe_waits += _copies(part, K, {0: P, 1: P}, {4: per})
        if rec.pe_segments is not None:
            part = rec.pe_segments[lists[0]["pe_segments"] : lists[1]["pe_segments"]]
            if part:
                rec.pe_segments += _copies(part, K, {0: P, 1: P, 3: step})
        if rec.transfers is not None:
            part = rec.transfers[lists[0]["transfers"] : lists[1]["transfers"]]
            if part:
                per = [tile_shift[x[2]] for x in part]
                rec.transfers += _copies(part, K, {0: P, 1: P}, {4: per})
        if rec.occupancy is not None:
            part = rec.occupancy[lists[0]["occupancy"] : lists[1]["occupancy"]]
            if part:
                rec.occupancy += _copies(part, K, {0: P})
        # who finished each tile last: tiles done in the period repeat K times; the ones in use
        # now are in use K periods later
        lf = rec.last_finisher
        new = mb["finishers"] - ma["finishers"]
        keys = list(islice(reversed(lf), new)) if new else []
        done = set(keys)
        for node, in_use in enumerate(ma["in_use"]):
            done.update((node, k) for k in in_use)
        in_use_now = {(node, k) for node, s in enumerate(mb["in_use"]) for k in s}
        copies = {}
        for node, k in done - in_use_now:
            d = tile_shift[node]
            if d:
                who = lf.get((node, k))
                if who is not None:
                    for j in range(1, K + 1):
                        copies[(node, k + j * d)] = who
        for node, k in in_use_now:
            d = tile_shift[node]
            if d and (node, k) in lf:
                copies[(node, k + K * d)] = lf[(node, k)]
        lf.update(copies)


def _shift_round_robin(fabric, recent: int, dt: int) -> None:
    """The fabric's round-robin order: recent grants move with the clock, old ones stay."""
    last_grant = fabric.last_grant
    for who, v in last_grant.items():
        if v >= recent:
            last_grant[who] = v + dt
    for w in fabric.waiting:
        if w[0] >= recent:
            w[0] += dt


def _node_state(st, base: int, now: int, recent: int, locs: dict, grants: bool) -> tuple:
    """A fill's or write-back's state, relative; fields it overwrites before reading are left out.

    grants (snapshots between grants, inside transfers): the burst index is left out (it is
    compared as a count that grows by a constant per period) and the transfer's start is kept
    absolute (the same transfer goes on)."""
    x = st.xfer
    xfer = None
    if x is not None:
        channel = None if x.channel is None else locs.get(id(x.channel), "unseen")
        xfer = (x.stage, x.big, x.small, None if grants else x.i, x.rest, x.stopping, channel)
        if x.stage == RUN:  # the run in progress: read back when it ends or is interrupted
            if x.last < recent:
                raise _Unknown("old run")  # its last burst start may become an old grant order
            xfer += (x.start - now, x.first, x.j - x.i, x.last - now, x.wp, x.wc)
    prev = st.prev - st.k if st.stage in (PARENT, DRAINED) and st.prev is not None else None
    start = None
    if st.stage == TRANSFER:
        start = st.start if grants else st.start - now
    return (st.stage, st.k - base, prev, start, xfer)


def _copies(part: list, K: int, steps: dict, shifts: dict | None = None) -> list:
    """Records part repeated K times: period j adds j * steps[c] to every row's column c (times,
    segments) and j * shifts[c][row] to a row's column c (tiles; rows with 0 may hold anything
    there). Whole columns are made by map and zip; only the rows with a tile are rebuilt."""
    n = len(part)
    columns = []
    for c, col in enumerate(zip(*part, strict=True)):
        step = steps.get(c)
        if step:
            columns.append(
                chain.from_iterable([map(add, col, repeat(j * step, n)) for j in range(1, K + 1)])
            )
        else:
            columns.append(col * K)
    out = list(zip(*columns, strict=True))
    for c, per in (shifts or {}).items():
        rows = [(i, d) for i, d in enumerate(per) if d]
        for j in range(1, K + 1):
            base = (j - 1) * n
            for i, d in rows:
                row = out[base + i]
                out[base + i] = (*row[:c], row[c] + j * d, *row[c + 1 :])
    return out


def _rekey(table: dict, shift: int) -> None:
    """Shift every key of a tile table, in place (processes hold the dict) and in order."""
    if not table or not shift:
        return
    items = list(table.items())
    table.clear()
    table.update((k + shift, v) for k, v in items)


def _eligible(r) -> bool:
    """Can fast-forward capture this replay's whole state? (Else it stays off: still exact.)"""
    plan = r.plan
    if len(plan.leaves) != 1 or not isinstance(plan.root, int):
        return False
    if plan.dram or plan.allocators or r.l1 is not None or r.dram:
        return False
    if r.rec.trace_window != (0, FOREVER):
        return False  # the period's records are cut by the window: they would not repeat
    leaf = plan.leaves[0]
    for n in plan.nodes:
        if n.wait_producer or r.intermediate[n.index]:
            return False
        if leaf.segments % n.entries:
            return False
        if n.counted != leaf.bounds[: len(n.counted)]:
            return False
    for o in leaf.operands:
        if o.ratio * plan.nodes[o.node].entries != leaf.segments:
            return False
    return True
