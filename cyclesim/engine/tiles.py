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
