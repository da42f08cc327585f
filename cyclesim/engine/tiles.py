"""Per-node tile state: which tiles are resident, used, released, produced, written back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cyclesim.engine.event_loop import Event
from cyclesim.engine.snapshot import Origin, Unknown

if TYPE_CHECKING:
    from cyclesim.engine.environment import ReplayEnvironment

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
        "succeed",
    )

    def __init__(self, env: ReplayEnvironment) -> None:
        self.env = env
        self.succeed = env.fast_succeed  # ev -> ev.succeed(), in one call (environment.py)
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

    def waiter(self, table: dict, k: int) -> Event | None:
        """None if tile k is already done in this table, else the event to wait for."""
        e = table.get(k)
        if e is True:
            return None
        if e is None:
            e = table[k] = Event(self.env)  # (the replay's: engine/event_loop.py)
        return e

    def fire(self, table: dict, k: int) -> None:
        e = table.get(k)
        if e is not None and e is not True:
            self.succeed(e)
        table[k] = True

    def forget_parts(self, k: int, parts: int) -> None:
        """Drop the produced flags of every part of tile k (the tile has left the node)."""
        produced = self.produced
        if not produced:  # (only an intermediate's consumers fill it: most nodes never do)
            return
        for pkey in range(k * parts, (k + 1) * parts):
            produced.pop(pkey, None)

    def snapshot(
        self, origin: Origin, node: int, base: int, moving: bool, parts: int, finishers
    ) -> tuple[tuple, dict]:
        """The tables relative to tile base (a frozen node's, not moving: absolute), and a
        frozen node's countdowns of uses left, (node, table, tile) -> uses, which fall by a
        constant per period. parts: the node's dependency_groups; finishers: the recorder's
        last finisher of each tile (compared for a frozen node's tiles in use)."""
        # most tables are empty or hold a tile or two: an empty one costs no sort
        rows = [_named(getattr(self, name), base, origin, node, name) for name in TABLES]
        lands_at, now = self.lands_at, origin.now
        rows.append(
            tuple([(k - base, max(0, v - now)) for k, v in sorted(lands_at.items())])
            if lands_at
            else ()
        )
        countdowns = {}
        for name in COUNTDOWNS:
            table = getattr(self, name)
            if not table:
                rows.append(())
            elif moving:
                at = base * parts if name in BY_PART else base
                rows.append(tuple(sorted([(k - at, v) for k, v in table.items()])))
            else:
                rows.append(tuple(sorted(table)))
                for k, v in table.items():
                    countdowns[(node, name, k)] = v
        if not moving:
            remaining = self.remaining
            rows.append(
                tuple([finishers.get((node, k)) for k in sorted(remaining)]) if remaining else ()
            )
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


def _named(table: dict, base: int, origin: Origin, node: int, name: str) -> tuple:
    """A tile table relative to tile base, in key order (a table is only ever looked up),
    each waiter's event named by origin."""
    if not table:
        return ()
    event = origin.event
    return tuple(
        [
            (k - base, True if v is True else event(v, ("tile", node, name, k - base)))
            for k, v in sorted(table.items())
        ]
    )


def _rekey(table: dict, shift: int) -> None:
    """Shift every key of a tile table, in place (processes hold the dict) and in order."""
    if not table or not shift:
        return
    items = list(table.items())
    table.clear()
    table.update((k + shift, v) for k, v in items)


def digit_runs(n) -> list[list]:
    """A node's counted loops as runs of adjacent loops that all index its tensor or all do
    not, innermost first: [stride, span, indexes the tensor] (an entry's run digit is
    k // stride % span)."""
    runs: list[list] = []
    stride = 1
    for bound, rel in zip(reversed(n.counted), reversed(n.relevant), strict=True):
        if runs and runs[-1][2] == rel:
            runs[-1][1] *= bound
        else:
            runs.append([stride, bound, rel])
        stride *= bound
    return runs


def entry_classifier(n) -> tuple:
    """Per storage node, two functions of an entry k, with its digit loops turned into strides:
    k -> (first visit, element key), as NodePlan.visit_flags(k)[0] and NodePlan.element_key(k),
    and k -> final visit, as NodePlan.visit_flags(k)[1].

    Adjacent counted loops that index the tensor (or that do not) form one run: its digits
    together are g // stride % span, so a run costs one division instead of one per loop.
    """
    runs = digit_runs(n)
    indexing = []  # (stride, span, scale) of the runs of loops that index the tensor
    scale = 1
    for stride, span, rel in runs:
        if rel:
            indexing.append((stride, span, scale))
            scale *= span
    other_runs = tuple((stride, span) for stride, span, rel in runs if not rel)
    key_runs = tuple(indexing)

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
