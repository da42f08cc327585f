"""Cycle ranges (start, end): overlapping or touching ones merged into one, for explain's
cause ranges (the plots merge their long columns of runs by numpy: activity.merged_runs)."""

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
