"""One compared term of `check stream`: Stream's value, its re-derivation, the two replays, and
the mechanism that makes them differ (one row of the text table, the CSV and --json)."""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_COLUMNS = (
    "section", "group", "item", "stream", "check", "as_scheduled", "dependency", "difference",
    "mechanism",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Row:
    """One compared term: Stream's value, the value re-derived (or replayed), and why they differ."""

    section: str  # total, group, slot, transfer, link, port, node, energy, ladder, replay
    group: int | None
    item: str
    stream: float | None
    check: float | None
    mechanism: str  # "" when they agree
    as_scheduled: float | None = None  # replay rows: Stream's slots as barriers, replayed times
    dependency: float | None = None  # replay rows: the chip replay, dependency-driven

    @property
    def difference(self) -> float | None:
        """The check (or, on replay rows, the as-scheduled replay) minus Stream."""
        other = self.check if self.check is not None else self.as_scheduled
        if self.stream is None or other is None:
            return None
        return other - self.stream
