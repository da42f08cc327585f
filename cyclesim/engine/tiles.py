"""Per-node tile state: which tiles are resident, used, released, produced, written back."""

from __future__ import annotations

import simpy


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
            e = table[k] = self.env.event()
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
