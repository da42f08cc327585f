"""Compare two replays of one plan record by record: the proof obligation of fast-forward.

A replay that skipped steady-state periods must leave exactly the records, counts and end
time the full replay leaves; only SimPy's event counters may differ. `run_differences` names
what differs (empty when identical); `replay_plan(..., verify_fast_forward=True)` replays a
second time without fast-forward and raises `FastForwardMismatch` when it is not empty.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING

from cyclesim.engine.finishers import Finishers
from cyclesim.engine.record import Recorder
from cyclesim.engine.rows import Rows

if TYPE_CHECKING:
    from cyclesim.engine.run import RawRun

# what may differ between a fast-forwarded and a full replay: the cost, never the answer
_COUNTERS = frozenset({"events"})
# records read by key only (attribution looks tiles up in them): their order is no answer;
# every other dict is streamed in insertion order by a writer, so its order must agree too
_LOOKUPS = frozenset({"last_finisher", "produced", "occupancy_before"})
VERIFY_ENVIRONMENT_VARIABLE = "CYCLESIM_VERIFY_FAST_FORWARD"


class FastForwardMismatch(AssertionError):
    """A fast-forwarded replay left other records than the full replay: a bug in the engine."""


def run_differences(fast: RawRun, full: RawRun) -> list[str]:
    """What differs between two replays of one plan, event counters excepted (empty: same)."""
    out = []
    if fast.cycles != full.cycles:
        out.append(f"cycles: {fast.cycles} vs {full.cycles}")
    if fast.counts != full.counts:
        keys = [k for k in fast.counts.keys() | full.counts.keys()]
        bad = [k for k in keys if fast.counts.get(k) != full.counts.get(k)]
        out.append(f"counts differ on {len(bad)} keys, e.g. {sorted(map(str, bad))[:3]}")
    elif list(fast.counts) != list(full.counts):
        out.append("counts were made in another order")
    for f in fields(Recorder):
        if f.name in _COUNTERS:
            continue
        a, b = _expanded(getattr(fast.rec, f.name)), _expanded(getattr(full.rec, f.name))
        if a != b or (f.name not in _LOOKUPS and _ordered(a) != _ordered(b)):
            out.append(f"records '{f.name}': {_first_difference(a, b)}")
    return out


def _expanded(x: object) -> object:
    """A record with its repeated stretches written out (Rows, Finishers): what is compared is
    the contents a full replay would hold, not how fast-forward stored them."""
    if isinstance(x, Rows):
        return list(x)
    if isinstance(x, Finishers):
        return x.as_dict()
    if isinstance(x, list):
        return [_expanded(v) for v in x]
    if isinstance(x, dict):
        return {k: _expanded(v) for k, v in x.items()}
    return x


def _ordered(x: object) -> object:
    """A dict as its items in insertion order (the order the writers stream them in)."""
    return list(x.items()) if isinstance(x, dict) else x


def _first_difference(a: object, b: object) -> str:
    """Where two record containers first differ, briefly."""
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            head = f"{len(a)} vs {len(b)} entries"
        else:
            head = f"{len(a)} entries"
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return f"{head}; first difference at [{i}]: {_short(x)} vs {_short(y)}"
        return head
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() | b.keys():
            if a.get(k) != b.get(k):
                return f"at key {k!r}: {_short(a.get(k))} vs {_short(b.get(k))}"
        return "the same entries, made in another order"
    return f"{_short(a)} vs {_short(b)}"


def _short(x: object) -> str:
    s = repr(x)
    return s if len(s) <= 160 else s[:157] + "..."
