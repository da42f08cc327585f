"""segment_classifier (schedule/steps.py) on a hand-made leaf: the level of a segment's first
step and whether it visits output elements first, read off the segment index's loop digits;
segment_classes, its numpy form for whole columns, equal to it on any leaf."""

from __future__ import annotations

from math import prod
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cyclesim.schedule.steps import segment_classes, segment_classifier


def test_level_and_first_visit_read_off_the_segment_digits():
    # Segments enumerate the leaf's outer 3 loops (seg_depth 3), bounds (2, 3, 4), outermost
    # first; the middle one does not index the output. Segment g has digits (d1, d2, d3),
    # g = 12 d1 + 4 d2 + d3:
    #   level = position (1-based) of the innermost non-zero digit, 0 for g = 0 (the first
    #           step of the segment advances that loop and every loop inside it);
    #   first visit of its output elements <=> the non-indexing digit is 0: d2 == 0.
    leaf = SimpleNamespace(seg_depth=3, bounds=(2, 3, 4, 5), out_relevant=(True, False, True, True))
    classify = segment_classifier(leaf)
    assert classify(0) == (0, True)
    assert classify(3) == (3, True)  # digits (0, 0, 3)
    assert classify(4) == (2, False)  # digits (0, 1, 0)
    assert classify(12) == (1, True)  # digits (1, 0, 0)
    assert classify(21) == (3, False)  # digits (1, 2, 1)
    for g in range(24):
        d = (g // 12, g // 4 % 3, g % 4)
        level = max((i + 1 for i in range(3) if d[i]), default=0)
        assert classify(g) == (level, d[1] == 0)


def test_adjacent_loops_that_do_not_index_the_output_form_one_run():
    # Bounds (3, 2, 2), none indexing the output except the outermost: the two inner loops form
    # one run of span 4; first visit <=> both inner digits are 0 <=> g % 4 == 0.
    leaf = SimpleNamespace(seg_depth=3, bounds=(3, 2, 2), out_relevant=(True, False, False))
    classify = segment_classifier(leaf)
    for g in range(12):
        d = (g // 4, g // 2 % 2, g % 2)
        level = max((i + 1 for i in range(3) if d[i]), default=0)
        assert classify(g) == (level, g % 4 == 0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 5), st.booleans()), min_size=1, max_size=5),
    st.integers(0, 5),
)
def test_segment_classes_by_numpy_equal_the_classifier_on_every_segment(loops, inner):
    # any leaf: loops (bound, indexes the output), outermost first, the first len(loops) - at
    # most `inner` of them enumerating segments; every segment number is classified both ways
    depth = max(1, len(loops) - inner)
    leaf = SimpleNamespace(seg_depth=depth, bounds=tuple(b for b, _ in loops),
                           out_relevant=tuple(o for _, o in loops))  # fmt: skip
    segments = prod(b for b, _ in loops[:depth])
    classify = segment_classifier(leaf)
    level, first = segment_classes(leaf, np.arange(segments, dtype=np.int64))
    assert list(zip(level.tolist(), first.tolist(), strict=True)) == [
        classify(g) for g in range(segments)
    ]
