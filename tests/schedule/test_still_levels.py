"""Where an affine operand's register keeps its value (schedule/node_plans.py `still_levels`).

DESIGN "Operand registers hold the previous cycle's value only": a step of level l moves loop
l by one and resets every inner loop from bound - 1 to 0, so a coordinate sum(c * rank) moves
by c * stride(l) less the inner loops' c * stride * (bound - 1); where that is 0 for every
coordinate the register is not re-read.
"""

from __future__ import annotations

from cyclesim.schedule.node_plans import still_levels
from cyclesim.spec.mapping import Spatial, Temporal
from cyclesim.spec.workload import parse_projection


def projection(*dims: str) -> tuple:
    return tuple(parse_projection(d) for d in dims)


def test_n_plus_k_stands_still_when_n_moves_and_k_wraps_from_1():
    # n (2) above k (2), A[m, n + k]: level 1 (n) moves n + k by 1 - 1 * (2 - 1) = 0: still;
    # level 2 (k) moves it by 1. With k (3): 1 - 2 = -1 at level 1: never still.
    n, k = Temporal("n", 2, "n"), Temporal("k", 2, "k")
    assert still_levels((n, k), [n, k], [], projection("m", "n + k")) == {1}
    k3 = Temporal("k", 3, "k")
    assert still_levels((n, k3), [n, k3], [], projection("m", "n + k")) == frozenset()
    # a plain projection never stands still (changes follow the loops indexing it)
    assert still_levels((n, k), [n, k], [], projection("m", "k")) == frozenset()


def test_strides_count_the_spatial_loops_and_vector_lanes_below():
    # n (2), then a spatial k (2) above a temporal k (2): the temporal k's stride is 1, so
    # level 1 moves 2n + k by 2 - 1 * (2 - 1) = 1: not still. The spatial k below the
    # temporal one instead: the temporal k's stride is 2; level 1 moves 4n + k by
    # 4 - 2 * (2 - 1) = 2, n + k by 1 - 2 = -1 (not still), 2n + k by 2 - 2 = 0: still.
    n, kt, ks = Temporal("n", 2, "n"), Temporal("k", 2, "kt"), Spatial("k", 2, "X", "ks")
    assert still_levels((n, ks, kt), [n, kt], [], projection("2*n + k")) == frozenset()
    assert still_levels((n, kt, ks), [n, kt], [], projection("4*n + k")) == frozenset()
    assert still_levels((n, kt, ks), [n, kt], [], projection("n + k")) == frozenset()
    assert still_levels((n, kt, ks), [n, kt], [], projection("2*n + k")) == {1}
    # 4 MACs per cycle on k (8): the step runs k in 4 lanes, the temporal k (2) has stride 4;
    # 4n + k: level 1 moves it by 4 - 4 * (2 - 1) = 0: still
    k8 = Temporal("k", 8, "k8")
    grouped, lanes = Temporal("k", 2, "k8"), Temporal("k", 4, "k8")
    assert still_levels((n, k8), [n, grouped], [lanes], projection("4*n + k")) == {1}
    assert still_levels((n, k8), [n, grouped], [lanes], projection("2*n + k")) == frozenset()
