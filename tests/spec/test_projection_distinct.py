"""A tile's footprint counts the distinct values its loops touch, not the span between them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cyclesim.spec.workload import Projection


def test_a_stride_larger_than_the_window_touches_every_other_index():
    # ix = 2*ox + fx: with fx 1 (a strided 1x1 convolution) 7 output columns read
    # ix 0, 2, ..., 12: 7 values, not the span 13; with fx 3 the windows overlap and the
    # span 2*6 + 2 + 1 = 15 is every index
    strided = Projection(((2, "ox"), (1, "fx")))
    assert strided.distinct({"ox": 7, "fx": 1}) == 7 and strided.extent({"ox": 7, "fx": 1}) == 13
    assert strided.distinct({"ox": 7, "fx": 3}) == strided.extent({"ox": 7, "fx": 3}) == 15
    # ix = 2*ox + fx with fx 2: windows just touch, every index 0..13: 14
    assert strided.distinct({"ox": 7, "fx": 2}) == 14


@given(
    st.lists(st.tuples(st.integers(1, 5), st.integers(1, 6)), min_size=1, max_size=3),
)
def test_distinct_equals_the_enumerated_set(terms):
    ranks = [f"r{i}" for i in range(len(terms))]
    projection = Projection(tuple((c, r) for (c, _), r in zip(terms, ranks, strict=True)))
    tile = {r: n for (_, n), r in zip(terms, ranks, strict=True)}
    touched = {0}
    for c, n in terms:
        touched = {v + c * i for v in touched for i in range(n)}
    assert projection.distinct(tile) == len(touched) <= projection.extent(tile)


def test_a_tile_clips_to_the_tensors_real_extent():
    # K padded to 102 iterations for a 100-wide tensor: a tile over all of K holds 100 values,
    # a tile of 34 iterations holds 34 (only a tile reaching past the extent is clipped)
    from cyclesim.spec.workload import TensorAccess

    access = TensorAccess("O", (Projection(((1, "K"),), 100), Projection(((1, "M"),))))
    assert access.footprint({"K": 102, "M": 3}) == 300
    assert access.footprint({"K": 34, "M": 3}) == 102
