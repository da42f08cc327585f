"""Cycle ranges (start, end): overlapping or touching ones merged into one, for explain's
cause ranges and the plots' PE busy runs alike."""

from __future__ import annotations


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges sorted, each overlapping or touching run of them merged into one."""
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]
