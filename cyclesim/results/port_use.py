"""When each port of an Activity is busy, and how much it moved: merged busy runs, port rows.

Read by the views (plots, HTML, VCD) and Result.port_use; they need only the Activity model.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from cyclesim.results.activity import Activity


def iter_busy_runs(act: Activity, key: str) -> Iterator[tuple[int, int]]:
    """[start, end) runs a port is busy (a transfer holds it or the PE array uses it), merged,
    in time order; lazily, so a writer streaming every port holds no copy of them."""
    transfers, pe = act.ports[key], act.pe_ports[key]
    spans = zip(transfers.starts, transfers.ends, strict=True)
    if pe and transfers:  # both by start: merged lazily
        spans = heapq.merge(spans, zip(pe.starts, pe.ends, strict=True))
    elif pe:
        spans = zip(pe.starts, pe.ends, strict=True)
    a = b = None
    for start, end in spans:
        if end <= start:
            continue
        if b is not None and start <= b:
            if end > b:
                b = end
            continue
        if b is not None:
            yield a, b
        a, b = start, end
    if b is not None:
        yield a, b


def busy_run_columns(act: Activity, key: str) -> tuple[np.ndarray, np.ndarray]:
    """iter_busy_runs as two int64 columns (starts, ends), merged by numpy: a run ends where
    the next record starts after every record before it has ended."""
    transfers, pe = act.ports[key], act.pe_ports[key]
    starts = np.concatenate((np.array(transfers.starts, np.int64), np.array(pe.starts, np.int64)))
    ends = np.concatenate((np.array(transfers.ends, np.int64), np.array(pe.ends, np.int64)))
    real = ends > starts
    return merged_runs(starts[real], ends[real])


def merged_runs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) ranges (int64 columns) merged where they overlap or touch, in time order."""
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    if not len(starts):
        return starts, ends
    reach = np.maximum.accumulate(ends)  # the latest end so far
    begins = np.flatnonzero(np.concatenate(([True], starts[1:] > reach[:-1])))
    return starts[begins], reach[np.append(begins[1:] - 1, len(starts) - 1)]


PORT_COLUMNS = [
    "port", "memory", "width_bits", "grants", "transfer_busy_cycles", "pe_busy_cycles",
    "busy_cycles", "transfer_bits", "pe_bits", "bits",
]  # fmt: skip


def port_rows(act: Activity) -> list[dict]:
    """Per port over the window: busy cycles and bits, the transfers' and the PE array's share.

    busy_cycles counts a cycle once when both use the port (the PE array takes part of its
    width, transfers the rest).
    """
    rows = []
    for key, bursts in act.ports.items():
        pe = act.pe_ports[key]
        rows.append(
            dict(
                port=key,
                memory=act.port_memory[key],
                width_bits=act.port_width[key],
                grants=len(bursts),
                transfer_busy_cycles=sum(bursts.ends) - sum(bursts.starts),
                pe_busy_cycles=sum(pe.ends) - sum(pe.starts),
                busy_cycles=sum(b - a for a, b in iter_busy_runs(act, key)),
                transfer_bits=sum(bursts.bits),
                pe_bits=sum(pe.bits),
                bits=sum(bursts.bits) + sum(pe.bits),
            )
        )
    return rows
