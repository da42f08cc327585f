"""Agreement between two orders of the same candidates: Kendall's tau-b and Spearman's rho.

scipy is not among cyclesim's dependencies, so both are computed here exactly (tau-b counts
every pair, O(n^2), fine for the hundreds of candidates a layer has; rho is Pearson's r on
average ranks), ties handled as scipy.stats.kendalltau / spearmanr handle them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def average_ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, ties sharing the mean of the ranks they span: [10, 20, 20] -> [1, 2.5, 2.5]."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b: (concordant - discordant) / sqrt((n0 - ties x)(n0 - ties y)).

    NaN when fewer than two items or when either side is all ties (no order to compare).
    """
    if len(x) != len(y):
        raise ValueError("kendall_tau: sequences of different lengths")
    concordant = discordant = ties_x = ties_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                ties_x += 1
                ties_y += 1
            elif dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - ties_x) * (pairs - ties_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho: Pearson's correlation of the average ranks. NaN as kendall_tau."""
    if len(x) != len(y):
        raise ValueError("spearman_rho: sequences of different lengths")
    if len(x) < 2:
        return math.nan
    rx, ry = average_ranks(x), average_ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else math.nan


def regret(picked: float, best: float) -> float:
    """How much worse the peer's pick replays than the best replayed candidate: picked / best - 1."""
    return picked / best - 1 if best else math.nan
