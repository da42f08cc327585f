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
from dataclasses import dataclass
from itertools import islice
from math import gcd, prod

from simpy.events import PENDING, Interruption, Process

from cyclesim.engine.record import FOREVER, S_SLOT, S_USES
from cyclesim.engine.state import DONE, DRAINED, PARENT, RUN, TRANSFER
from cyclesim.engine.tiles import entry_classifier

MIN_BOUND = 4  # a loop with fewer iterations has no room for two snapshots and a skip
MAX_BACKOFF = 64  # boundaries a level waits, at most, after snapshots that did not match
# a snapshot costs about as much as this many events: a level whose iterations take fewer
# timeouts is not worth looking at
MIN_EVENTS = 64
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
    prev: _Snapshot | None = None  # snapshot at the previous boundary
    wait: int = 0  # boundaries to let pass before the next try
    backoff: int = 0  # ... after the next pair that does not match


@dataclass(slots=True)
class _Snapshot:
    g: int
    time: int
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
        if self.levels:
            r.boundary_every = functools.reduce(gcd, (lv.period for lv in self.levels))
            r.boundaries = []

    # ------------------------------------------------------------------ the driver's hook
    def at_boundary(self, g: int) -> None:
        """The PE array started segment g (a multiple of some level's period): look, maybe jump."""
        now = self.r.env.now
        for lv in self.levels:  # outer loops first
            if g % lv.period:
                continue
            last, lv.last_time = lv.last_time, now
            events, lv.last_events = self.r.rec.events - lv.last_events, self.r.rec.events
            if events < MIN_EVENTS:
                lv.prev = None
                continue
            if lv.wait:
                lv.wait -= 1
                lv.prev = None
                continue
            if last is None or g // lv.period % lv.bound == 0:
                lv.prev = None  # the first iteration of L is never a reference
                continue
            snap = self._snapshot(lv, g, now, now - last)
            prev, lv.prev = lv.prev, snap
            if snap is None or prev is None:
                continue
            if prev.key != snap.key:
                self._miss("state", None)
                lv.prev = snap
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
                    other.prev, other.last_time = None, None
            lv.prev = None
            lv.last_time = self.r.env.now - (snap.time - prev.time)
            lv.last_events = self.r.rec.events
            return

    # ------------------------------------------------------------------ snapshots
    def _snapshot(self, lv: _Level, g: int, now: int, period_cycles: int) -> _Snapshot | None:
        try:
            key, countdowns = self._describe(lv, g, now, now - period_cycles)
        except _Unknown as e:
            return self._miss(str(e.args[0]) if e.args else "unknown", None)
        return _Snapshot(g, now, key, countdowns, self._marks())

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
        queue = sorted(env._queue)
        out.append(
            tuple(
                (t - now, prio, event(ev, ("queue", i))) for i, (t, prio, _, ev) in enumerate(queue)
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
                (k, tuple(event(ev, ("width", k, i)) for i, ev in enumerate(evs)))
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
                event(r.tiles[n.index].drained[st.prev], ("tile", n.index, "drained"))
            out.append(_node_state(st, base, now, recent, locs))
        pe = r.pe_state
        if pe.wait is not None or r.pe_waiting is not None or pe.g != g:
            raise _Unknown("pe")
        held = pe.held
        out.append((pe.stage, pe.start - now, None if held is None else id(held)))
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
            "lists": lists,
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
        if a.g // block != b.g // block or b.g - a.g != period:
            return self._miss("pe", 0)
        # the PE array: from a's iteration of L (never the first) up to the start of the last
        most = ((a.g // block + 1) * block - period - b.g) // period
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
            x1 = x2 - d
            if x1 < 0:
                return self._miss("outer tile", 0)
            if not n.output_role:  # an input's fills differ only in the parent tile they read
                if lv.below[n.parent]:
                    continue  # it moves with them
                top = (x1 // n.ratio + 1) * n.ratio - 1  # the frozen parent tile's last
                most = min(most, (top - x2) // d)
                continue
            span = d * bound  # tiles of n per iteration of the loop above L
            top = (x1 // span + 1) * span - 1  # last tile of this iteration above L
            if not n.relevant[lv.pos]:
                if is_fill and x1 // d % bound == 0:
                    return self._miss("first visit", 0)
                if not is_fill:
                    top -= d  # a final write-back differs from a partial one
            most = min(most, (top - x2) // d)
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
        below = lv.below
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
        pe.g += K * lv.period
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
        # the fabric's round-robin order: recent grants move with the clock, old ones stay
        recent = b.time - P
        last_grant = fabric.last_grant
        for who, v in last_grant.items():
            if v >= recent:
                last_grant[who] = v + dt
        for w in fabric.waiting:
            if w[0] >= recent:
                w[0] += dt
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
        # records: the period's, K times, shifted
        tile_shift = {}
        for n, d in zip(nodes, below, strict=True):
            tile_shift[n.index] = d
        for tls, name in ((rec.fill_tl, "fill_tl"), (rec.drain_tl, "drain_tl")):
            for node, tl in enumerate(tls):
                part = tl[ma[name][node] : mb[name][node]]
                if not part:
                    continue
                d = tile_shift[node]
                tiled = [(t, state, info, state in (S_SLOT, S_USES)) for t, state, info in part]
                for j in range(1, K + 1):
                    s, dj = j * P, j * d
                    tl += [
                        (t + s, state, info + dj) if f else (t + s, state, info)
                        for t, state, info, f in tiled
                    ]
        for key, grants in rec.grants.items():
            n0, n1 = ma["grants"][key], mb["grants"][key]
            live = None
            if fabric.holder[key] is not None:  # held at a too (same state): its grant is open
                live = grants.pop()  # ... and the one open at a is the period's first
                n0, n1 = n0 - 1, n1 - 1
            part = grants[n0:n1]
            for j in range(1, K + 1):
                s = j * P
                grants += [[g0 + s, g1 + s, who, tensor] for g0, g1, who, tensor in part]
            if live is not None:
                live[0] += dt
                grants.append(live)
        pe_waits = rec.pe_waits
        part = pe_waits[ma["lists"]["pe_waits"] : mb["lists"]["pe_waits"]]
        for j in range(1, K + 1):
            s = j * P
            pe_waits.extend(
                (w0 + s, w1 + s, node, kind, key + j * tile_shift[node])
                for w0, w1, node, kind, key in part
            )
        if rec.pe_segments is not None:
            lst = rec.pe_segments
            part = lst[ma["lists"]["pe_segments"] : mb["lists"]["pe_segments"]]
            for j in range(1, K + 1):
                s, sg = j * P, j * lv.period
                lst.extend((s0 + s, s1 + s, li, g + sg) for s0, s1, li, g in part)
        if rec.transfers is not None:
            lst = rec.transfers
            part = lst[ma["lists"]["transfers"] : mb["lists"]["transfers"]]
            for j in range(1, K + 1):
                s = j * P
                lst.extend(
                    (s0 + s, s1 + s, node, kind, k + j * tile_shift[node], bits)
                    for s0, s1, node, kind, k, bits in part
                )
        if rec.occupancy is not None:
            lst = rec.occupancy
            part = lst[ma["lists"]["occupancy"] : mb["lists"]["occupancy"]]
            for j in range(1, K + 1):
                s = j * P
                lst.extend((t + s, node, delta) for t, node, delta in part)
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
        s = self.stats
        self.stats = FastForwardStats(
            s.jumps + 1, s.periods + K, s.cycles_skipped + dt, s.segments_skipped + K * segments
        )


def _node_state(st, base: int, now: int, recent: int, locs: dict) -> tuple:
    """A fill's or write-back's state, relative; fields it overwrites before reading are left out."""
    x = st.xfer
    xfer = None
    if x is not None:
        channel = None if x.channel is None else locs.get(id(x.channel), "unseen")
        xfer = (x.stage, x.big, x.small, x.i, x.rest, x.stopping, channel)
        if x.stage == RUN:  # the run in progress: read back when it ends or is interrupted
            if x.last < recent:
                raise _Unknown("old run")  # its last burst start may become an old grant order
            xfer += (x.start - now, x.first, x.j, x.last - now, x.wp, x.wc)
    prev = st.prev - st.k if st.stage in (PARENT, DRAINED) and st.prev is not None else None
    start = st.start - now if st.stage == TRANSFER else None
    return (st.stage, st.k - base, prev, start, xfer)


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
