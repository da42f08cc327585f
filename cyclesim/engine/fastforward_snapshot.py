"""Fast-forward's snapshot: the replay's whole state relative to the current cycle and tiles.

Two snapshots with equal keys mean the replay repeats from there on (engine/fastforward.py);
the marks (record lengths, accumulators) say what one period added, for the jump.
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from dataclasses import dataclass

from simpy.events import Interruption

from cyclesim.vocabulary import Wait

TABLES = ("resident", "used", "released")  # bounded: compared and shifted
# `produced` is only read by the consumers of an intermediate (never with one leaf): shifted
# with its node's tiles, not compared (a frozen node's parts fill it during the skip)
# `drained` holds every partial write-back until its values are reloaded, so it grows over an
# outer loop's iteration; it follows from the fill's and write-back's positions (an entry is
# there once written back, until the next visit reloads it), so only its waiter is compared:
# the fill's, when it waits at stage DRAINED for the mark of entry st.prev
COUNTDOWNS = ("remaining", "prod_left")
BY_PART = ("prod_left", "produced")  # keyed tile * dependency_groups + part, not by tile
# `lands_at` (tile -> cycle its results leave the PE pipeline) is compared as the cycles left
# until then, 0 once they have landed (a write-back reaching the tile later waits for nothing
# either way); a jump moves its tiles with the node's and its cycles with the clock. Between
# grants it stays put, as the clock's cycles then stand for cycles that did pass.


class Unknown(Exception):
    """Some state the snapshot cannot describe: no fast-forward from this boundary."""


@dataclass(frozen=True, slots=True)
class Watched:
    """The replay's processes as snapshots name them, in a fixed order."""

    procs: list  # [Process]: fills, write-backs, the PE array
    ids: dict  # id(process) -> its index in procs
    active: list  # (node, its fill's or write-back's state, is it the fill), as they run
    tiles_per: list  # per node: segments per tile


@dataclass(slots=True)
class Snapshot:
    """The state at segment g, cycle time: key compares, the rest says how to shift."""

    g: int
    time: int
    recent: int  # last-grant cycles from this one on are compared exactly, older ones by order
    key: tuple
    countdowns: dict  # (node, table, tile) of frozen nodes -> uses left
    marks: dict  # record lengths and accumulator values at the snapshot
    # per DRAM timer, its issue() calls so far (absolute): a period between two snapshots
    # repeats only if it called none (engine/fastforward.py: the DRAM rule)
    dram_calls: tuple = ()


def describe(
    r, watched: Watched, below: tuple, grants_only: bool, g: int, now: int
) -> tuple[tuple, dict, int]:
    """The state relative to cycle now and to each node's tile at segment g; the cycle from
    which last-grant cycles are compared exactly (before it, by their order only).

    below: per node, tiles per iteration of the level (0: frozen, compared absolutely);
    grants_only: a snapshot between grants inside transfers (the PE array stays put).
    Raise Unknown for any state it cannot describe."""
    env, fabric, nodes = r.env, r.fabric, r.plan.nodes
    # Round robin only compares last-grant cycles. Every one set from now on is a grant's
    # cycle (>= now) or the start of a holding's last burst (>= its grant's cycle), so it
    # is >= `recent`; older ones matter by their order only.
    grants = fabric.grants
    recent = min(
        [now] + [grants[key][-1][0] for key, who in fabric.holder.items() if who is not None]
    )
    locs: dict[int, tuple] = {}  # id(event) -> where it is held
    proc_ids = watched.ids
    resources = {id(resource): name for name, (resource, _, _) in r.dma.items()}

    def callback(cb) -> tuple:
        process = env.resumed_process(cb)
        if process is not None:
            pid = proc_ids.get(id(process))
            if pid is not None:
                return ("resume", pid)
        owner = getattr(cb, "__self__", None)
        if isinstance(owner, Interruption):
            return ("interrupt", proc_ids.get(id(owner.process)))
        if owner is fabric:  # the end-of-cycle grant decision (engine/fabric.py)
            return ("fabric", cb.__func__.__name__)
        name = resources.get(id(owner))
        if name is not None:  # a DMA engine serving its queue when a channel is freed
            return ("dma", name, cb.__func__.__name__)
        if isinstance(cb, functools.partial) and getattr(cb.func, "__name__", "") == ("_resident"):
            return ("resident", cb.args)
        raise Unknown(cb)

    def event(ev, loc: tuple) -> tuple:
        seen = locs.get(id(ev))
        if seen is not None:
            return ("same", seen)
        locs[id(ev)] = loc
        cbs = tuple(callback(cb) for cb in ev.callbacks) if ev.callbacks else ()
        return (type(ev).__name__, *env.event_state(ev), cbs)

    out = []
    # queued events in heap order; one nobody waits for (an interrupted run's timeout) does
    # nothing when it fires, whenever that is: left out (the jump moves it all the same)
    out.append(
        tuple(
            (t - now, prio, event(ev, ("queue", i)))
            for i, (t, prio, ev) in enumerate(env.queued())
            if ev.callbacks
        )
    )
    # tile tables, relative to each node's tile at segment g (frozen nodes: absolute)
    countdowns = {}
    lf = r.rec.last_finisher
    for n, t, d, per in zip(
        nodes, (s.tiles for s in r.nodes), below, watched.tiles_per, strict=True
    ):
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
        rows.append(tuple((k - base, max(0, v - now)) for k, v in sorted(t.lands_at.items())))
        for name in COUNTDOWNS:
            table = getattr(t, name)
            if d:
                at = base * n.dependency_groups if name in BY_PART else base
                rows.append(tuple(sorted((k - at, v) for k, v in table.items())))
            else:
                rows.append(tuple(sorted(table)))
                for k, v in table.items():
                    countdowns[(n.index, name, k)] = v
        if not d:
            rows.append(tuple(lf.get((n.index, k)) for k in sorted(t.remaining)))
        if t.computed_tile or t.computed_part:
            raise Unknown("intermediate")
        out.append(tuple(rows))
    # the fabric: holders with their open grants, reservations, runs, waiting requests
    open_grants = []
    for key, who in fabric.holder.items():
        if who is not None:
            start, end, gwho, tensor = grants[key][-1]
            if end is not None:
                raise Unknown("grant")
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
    # the round-robin pointers (requester ids: no time in them) and a queued decision
    out.append(tuple(sorted(fabric.served.items())))
    out.append(None if fabric.deciding is None else fabric.deciding - now)
    # grants made at once in this cycle, which a requester of the cycle may still take back
    out.append(
        tuple(sorted((k, fabric.before.get(k)) for k, t in fabric.granted_at.items() if t == now))
    )
    out.append(
        tuple(
            (
                order(w[0]),
                w[1],
                w[2],
                event(w[3], ("waiting", i)),
                w[4],
                None if w[5] is None else w[5] - now,  # asked this cycle, not yet decided
            )
            for i, w in enumerate(fabric.waiting)
        )
    )
    out.append(
        tuple(
            (
                k,
                tuple(event(ev, ("width", k, i)) for i, ev in enumerate(evs) if not ev.triggered),
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
            (
                proc_ids.get(id(q.proc)),
                event(q, ("dma", name, "queue", i)),
                q.cycle == now,  # asked this cycle: the decision ranks it with the others
                q.noted,
            )
            for i, q in enumerate(resource.queue)
        )
        dmas.append((name, users, waiting, resource.deciding))
    out.append(tuple(dmas))
    # the processes: state objects, and where the event each one waits for is held
    for n, st, is_fill in watched.active:
        base = g // watched.tiles_per[n.index] if below[n.index] else 0
        if is_fill and st.stage == Wait.PREVIOUS_WRITE_BACK:  # the only waiter `drained` ever holds
            waiter = r.nodes[n.index].tiles.drained.get(st.prev)
            if waiter is not None and waiter is not True:  # (True: it woke, in the queue)
                event(waiter, ("tile", n.index, "drained"))
        out.append(_node_state(st, base, now, locs, grants_only))
    pe = r.pe
    held = None if pe.held is None else id(pe.held)
    if not grants_only:
        if pe.wait is not None or r.pe.waiting is not None or pe.g != g:
            raise Unknown("pe")
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
        out.append((pe.stage, pe.g, pe.start, held, wait, r.pe.waiting))
    targets = []
    for p in watched.procs:
        if p.is_alive:
            loc = locs.get(id(p.target))
            if loc is None:
                raise Unknown("target")
            targets.append(loc)
        else:
            targets.append(None)
    out.append(tuple(targets))
    return tuple(out), countdowns, recent


def marks(r, active: list) -> dict:
    """Record lengths and accumulator values, to find what one period added."""
    rec = r.rec
    lists = {"pe_waits": len(rec.pe_waits)}
    for name in ("pe_segments", "transfers", "occupancy", "systolic_spans"):
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
        "runs": {k: sk.runs for k, sk in r.pe.kinds.items()},
        "segments": r.segments_done,
        "finishers": rec.last_finisher.entry_count,
        "rules": rec.last_finisher.rule_count,
        "in_use": [set(t.remaining) for t in (s.tiles for s in r.nodes)],
        "xfers": [None if st.xfer is None else (st.xfer, st.xfer.i) for _, st, _ in active],
    }


def _node_state(st, base: int, now: int, locs: dict, grants: bool) -> tuple:
    """A fill's or write-back's state, relative; fields it overwrites before reading are left out.

    grants (snapshots between grants, inside transfers): the burst index is left out (it is
    compared as a count that grows by a constant per period) and the transfer's start is kept
    absolute (the same transfer goes on)."""
    x = st.xfer
    xfer = None
    if x is not None:
        channel = None if x.channel is None else locs.get(id(x.channel), "unseen")
        xfer = (x.stage, x.big, x.small, None if grants else x.i, x.rest, x.stopping, channel)
        if x.stage == Wait.BURST:  # the run in progress: read back when it ends or is interrupted
            xfer += (x.start - now, x.first, x.j - x.i, x.last - now, x.wp, x.wc)
    prev = (
        st.prev - st.k
        if st.stage in (Wait.PARENT, Wait.PREVIOUS_WRITE_BACK) and st.prev is not None
        else None
    )
    start = None
    if st.stage == Wait.TRANSFER:
        start = st.start if grants else st.start - now
    return (st.stage, st.k - base, prev, start, xfer)
