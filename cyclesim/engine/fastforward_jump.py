"""Fast-forward's jump: shift the replay's state by K periods that repeat a snapshot pair's.

The clock and queued events, process states and tile tables, revisit marks, round-robin order
and accumulators move by whole periods with arithmetic; the period's records are copied by
engine/fastforward_records.py.
"""

from __future__ import annotations

from cyclesim.engine.fastforward_records import replicate
from cyclesim.engine.fastforward_snapshot import BY_PART, COUNTDOWNS, TABLES, Snapshot
from cyclesim.vocabulary import Wait


def jump(
    r,
    active: list,
    classifiers: list,
    per_iteration: tuple,
    period: int,
    a: Snapshot,
    b: Snapshot,
    K: int,
) -> tuple[int, int]:
    """Skip K periods of a level L, as if they had run; return (cycles, segments) skipped.

    per_iteration: per node, tiles per iteration of L (0: frozen); period: segments per
    iteration of L; active: (node, state, is the fill) per process; classifiers: per node,
    tiles.entry_classifier."""
    env, rec, fabric = r.env, r.rec, r.fabric
    P = b.time - a.time
    dt = K * P
    m = (b.g - a.g) // period  # iterations of L per period
    below = tuple(m * d for d in per_iteration)  # tiles per period
    # the clock and the queue
    env.shift(dt)
    # the processes
    moved = {}  # output node -> is the fill -> (its state, entry at b)
    for n, st, is_fill in active:
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
    pe = r.pe
    pe.g += K * m * period
    pe.start += dt
    # tile tables
    for n, t, d in zip(r.plan.nodes, (s.tiles for s in r.nodes), below, strict=True):
        if d:
            for name in (*TABLES, *COUNTDOWNS, "produced", "lands_at"):
                unit = n.dependency_groups if name in BY_PART else 1
                _rekey(getattr(t, name), K * d * unit)
        lands_at = t.lands_at
        for k in lands_at:  # the cycles results leave the PE pipeline move with the clock
            lands_at[k] += dt
    for node, states in moved.items():
        _visits(r.nodes[node].tiles, classifiers[node], states, K * below[node])
    for (node, name, k), v in b.countdowns.items():
        drop = a.countdowns[(node, name, k)] - v
        if drop:
            getattr(r.nodes[node].tiles, name)[k] = v - K * drop
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
    replicate(r, a, b, K, below, m * period)
    return dt, K * segments


def grant_jump(r, a: Snapshot, b: Snapshot, K: int) -> int:
    """Skip K periods inside transfers: time, burst indices, grants and timelines; return the
    cycles skipped."""
    env = r.env
    P = b.time - a.time
    dt = K * P
    env.shift(dt)
    for xa, xb in zip(a.marks["xfers"], b.marks["xfers"], strict=True):
        if xb is not None:
            x, moved = xb[0], K * (xb[1] - xa[1])
            x.shift(dt)
            x.i += moved
            x.j += moved
    _shift_round_robin(r.fabric, b.recent, dt)
    replicate(r, a, b, K, tuple(0 for _ in r.plan.nodes), 0)
    return dt


def _visits(t, classifiers: tuple, moved: dict, shift: int) -> None:
    """Bring an output node's revisit tables to the entries its processes jumped to.

    The write-back marks the partial sums of each entry it passed as drained; the fill
    records each entry it passed as the latest visit of its values and takes the drained
    mark of the previous visit (a mark is always made before it is taken). A waiter in
    `drained` moves with the entries. moved: is the fill -> (state, entry at b).

    Both walks go entry by entry in one pass (an entry's mark, then the fill's visit of it),
    so `drained` holds only the marks not yet taken, never every skipped entry at once (an
    outer level's jump may pass millions).
    """
    drained = t.drained
    waiters = []  # the fill's, if it waits for `drained` (nobody else does)
    if True in moved and moved[True][0].stage == Wait.PREVIOUS_WRITE_BACK:
        key = moved[True][0].prev - shift
        if drained.get(key, True) is not True:
            waiters.append((key, drained.pop(key)))
    w_lo = w_hi = f_lo = f_hi = 0
    taken_during = None  # the mark entry `old` took during the skip (after the marks made)
    if False in moved:
        w_st, w_old = moved[False]
        w_lo, w_hi = w_old, w_st.k  # the write-back's entries [old, k)
        final = classifiers[1]
    if True in moved:
        f_st, f_old = moved[True]
        f_lo, f_hi = f_old + 1, f_st.k + 1  # the fill's entries (old, k]
        first_and_key = classifiers[0]
        last_visit = t.last_visit
        # the fill takes an entry's mark after its waits for the parent and `drained`
        taken = f_st.stage not in (Wait.PARENT, Wait.PREVIOUS_WRITE_BACK)
        if not taken and f_st.prev is not None:  # entry `old` took its mark during the skip
            taken_during = f_st.prev - shift
        last = f_st.k
    spans = [(x, y) for x, y in ((w_lo, w_hi), (f_lo, f_hi)) if y > x]
    lo = min(x for x, _ in spans) if spans else 0
    hi = max(y for _, y in spans) if spans else 0
    if taken_during is not None and not w_lo <= taken_during < w_hi:
        drained.pop(taken_during, None)
    cuts = sorted({v for v in (lo, hi, w_lo, w_hi, f_lo, f_hi) if lo <= v <= hi})
    for a, b in zip(cuts, cuts[1:], strict=False):  # stretches where the same walks are under way
        marks, visits = w_lo <= a < w_hi, f_lo <= a < f_hi
        if marks and not visits:
            for x in range(a, b):
                if not final(x):
                    drained[x] = True
            if a <= (taken_during if taken_during is not None else -1) < b:
                drained.pop(taken_during, None)
            continue
        if not visits:
            continue
        visit = last_visit.get
        pop = drained.pop
        for x in range(a, b):
            if marks and not final(x):
                drained[x] = True
                if x == taken_during:
                    del drained[x]
            first, key = first_and_key(x)
            prev = visit(key)
            last_visit[key] = x
            if not first and prev is not None and (x < last or taken):
                pop(prev, None)
    for k, v in waiters:
        drained[k + shift] = v


def _shift_round_robin(fabric, recent: int, dt: int) -> None:
    """The fabric's round-robin order: recent grants move with the clock, old ones stay."""
    last_grant = fabric.last_grant
    for who, v in last_grant.items():
        if v >= recent:
            last_grant[who] = v + dt
    for w in fabric.waiting:
        if w[0] >= recent:
            w[0] += dt
        if w[5] is not None:  # asked in the snapshot's cycle, decided at its end
            w[5] += dt
    if fabric.deciding is not None:  # its event moved with the queue
        fabric.deciding += dt
    for k in fabric.granted_at:  # grants made at once in the snapshot's cycle
        fabric.granted_at[k] += dt


def _rekey(table: dict, shift: int) -> None:
    """Shift every key of a tile table, in place (processes hold the dict) and in order."""
    if not table or not shift:
        return
    items = list(table.items())
    table.clear()
    table.update((k + shift, v) for k, v in items)
