"""Per-node tile state: which tiles are resident, used, released, produced, written back."""

from __future__ import annotations

import simpy

from cyclesim.engine.snapshot import Origin, Unknown
from cyclesim.vocabulary import Wait

TABLES = ("resident", "used", "released")  # bounded: compared and shifted
# `produced` is only read by the consumers of an intermediate (never with one leaf): shifted
# with its node's tiles, not compared (a frozen node's parts fill it during the skip)
# `drained` holds every partial write-back until its values are reloaded, so it grows over an
# outer loop's iteration; it follows from the fill's and write-back's positions (an entry is
# there once written back, until the next visit reloads it), so only its waiter is compared:
# the fill's, when it waits at stage PREVIOUS_WRITE_BACK for the mark of entry st.prev
# (engine/storage_node.py); a jump rebuilds it with `last_visit` (StorageNode.shift)
COUNTDOWNS = ("remaining", "prod_left")
BY_PART = ("prod_left", "produced")  # keyed tile * dependency_groups + part, not by tile
# `lands_at` (tile -> cycle its results leave the PE pipeline) is compared as the cycles left
# until then, 0 once they have landed (a write-back reaching the tile later waits for nothing
# either way); a jump moves its tiles with the node's and its cycles with the clock. Between
# grants it stays put, as the clock's cycles then stand for cycles that did pass.


class Tiles:
    """Per-node tile state. A table maps tile -> True once done, or to the event a waiter holds.

    Events are created only when somebody has to wait, so a tile nobody waits for costs no
    SimPy event at all.
    """

    __slots__ = (
        "env",
        "resident",
        "used",
        "released",
        "produced",
        "remaining",
        "prod_left",
        "last_visit",
        "drained",
        "computed_tile",
        "computed_part",
        "lands_at",
    )

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.resident: dict = {}
        self.used: dict = {}
        self.released: dict = {}
        self.produced: dict = {}
        self.remaining: dict[int, int] = {}
        self.prod_left: dict[int, int] = {}
        self.last_visit: dict[int, int] = {}  # element key -> its latest entry
        self.drained: dict = {}  # entry -> written back (kept only while a later visit may wait)
        # intermediates only: the cycle the producer computed the values delivered so far, per
        # tile (its write-back passes it up) and per part key (its completion records it)
        self.computed_tile: dict[int, int] = {}
        self.computed_part: dict[int, int] = {}
        # outputs the PE array writes through its pipeline: tile -> the cycle its last results
        # leave the pipeline, from when the PE array is done with it until its write-back
        # reaches it (so at most a slot's worth of tiles)
        self.lands_at: dict[int, int] = {}

    def waiter(self, table: dict, k: int) -> simpy.Event | None:
        """None if tile k is already done in this table, else the event to wait for."""
        e = table.get(k)
        if e is True:
            return None
        if e is None:
            e = table[k] = simpy.Event(self.env)  # (env.event: a descriptor per call)
        return e

    def fire(self, table: dict, k: int) -> None:
        e = table.get(k)
        if e is not None and e is not True:
            e.succeed()
        table[k] = True

    def forget_parts(self, k: int, parts: int) -> None:
        """Drop the produced flags of every part of tile k (the tile has left the node)."""
        produced = self.produced
        for pkey in range(k * parts, (k + 1) * parts):
            produced.pop(pkey, None)

    def snapshot(
        self, origin: Origin, node: int, base: int, moving: bool, parts: int, finishers
    ) -> tuple[tuple, dict]:
        """The tables relative to tile base (a frozen node's, not moving: absolute), and a
        frozen node's countdowns of uses left, (node, table, tile) -> uses, which fall by a
        constant per period. parts: the node's dependency_groups; finishers: the recorder's
        last finisher of each tile (compared for a frozen node's tiles in use)."""
        event, now = origin.event, origin.now
        rows = []
        for name in TABLES:  # in key order: a table is only ever looked up
            table = getattr(self, name)
            rows.append(
                tuple(
                    (k - base, True if v is True else event(v, ("tile", node, name, k - base)))
                    for k, v in sorted(table.items())
                )
            )
        rows.append(tuple((k - base, max(0, v - now)) for k, v in sorted(self.lands_at.items())))
        countdowns = {}
        for name in COUNTDOWNS:
            table = getattr(self, name)
            if moving:
                at = base * parts if name in BY_PART else base
                rows.append(tuple(sorted((k - at, v) for k, v in table.items())))
            else:
                rows.append(tuple(sorted(table)))
                for k, v in table.items():
                    countdowns[(node, name, k)] = v
        if not moving:
            rows.append(tuple(finishers.get((node, k)) for k in sorted(self.remaining)))
        if self.computed_tile or self.computed_part:
            raise Unknown("intermediate")
        return tuple(rows), countdowns

    def shift(self, dt: int, tiles: int, parts: int) -> None:
        """Move the tables `tiles` tiles on (tile * parts for tables by part) and the cycles
        results land dt cycles on (a fast-forward jump; `drained` and `last_visit` are the
        storage node's to rebuild)."""
        if tiles:
            for name in (*TABLES, *COUNTDOWNS, "produced", "lands_at"):
                _rekey(getattr(self, name), tiles * parts if name in BY_PART else tiles)
        lands_at = self.lands_at
        for k in lands_at:
            lands_at[k] += dt

    def shift_visits(self, classifiers: tuple, moved: dict, shift: int) -> None:
        """Bring an output node's revisit tables to the entries its processes jumped to.

        The write-back marks the partial sums of each entry it passed as drained; the fill
        records each entry it passed as the latest visit of its values and takes the drained
        mark of the previous visit (a mark is always made before it is taken). A waiter in
        `drained` moves with the entries. moved: is the fill -> (state, entry at b).

        Both walks go entry by entry in one pass (an entry's mark, then the fill's visit of it),
        so `drained` holds only the marks not yet taken, never every skipped entry at once (an
        outer level's jump may pass millions).
        """
        t = self
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
        for a, b in zip(
            cuts, cuts[1:], strict=False
        ):  # stretches where the same walks are under way
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


def _rekey(table: dict, shift: int) -> None:
    """Shift every key of a tile table, in place (processes hold the dict) and in order."""
    if not table or not shift:
        return
    items = list(table.items())
    table.clear()
    table.update((k + shift, v) for k, v in items)


def entry_classifier(n) -> tuple:
    """Per storage node, two functions of an entry k, with its digit loops turned into strides:
    k -> (first visit, element key), as NodePlan.visit_flags(k)[0] and NodePlan.element_key(k),
    and k -> final visit, as NodePlan.visit_flags(k)[1].

    Adjacent counted loops that index the tensor (or that do not) form one run: its digits
    together are g // stride % span, so a run costs one division instead of one per loop.
    """
    runs = []  # [stride, span, relevant], innermost first
    stride = 1
    for bound, rel in zip(reversed(n.counted), reversed(n.relevant), strict=True):
        if runs and runs[-1][2] == rel:
            runs[-1][1] *= bound
        else:
            runs.append([stride, bound, rel])
        stride *= bound
    key_runs = []  # (stride, span, scale) of the runs of loops that index the tensor
    scale = 1
    for stride, span, rel in runs:
        if rel:
            key_runs.append((stride, span, scale))
            scale *= span
    other_runs = tuple((stride, span) for stride, span, rel in runs if not rel)
    key_runs = tuple(key_runs)

    def first_and_key(k: int) -> tuple[bool, int]:
        first = True
        for stride, span in other_runs:
            if k // stride % span:
                first = False
                break
        key = 0
        for stride, span, scale in key_runs:
            key += k // stride % span * scale
        return first, key

    def final(k: int) -> bool:
        for stride, span in other_runs:
            if k // stride % span != span - 1:
                return False
        return True

    return first_and_key, final
