"""Rows, Finishers and SpanList: fast-forward's repeats read exactly like the lists they replace."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cyclesim.engine.finishers import Finishers
from cyclesim.engine.rows import Rows, TileShift
from cyclesim.results.record_columns import row_columns
from cyclesim.results.spans import SpanList, SpanRepeat
from cyclesim.results.stall_span import StallSpan
from cyclesim.vocabulary import Wait


def written_out(rows: list, start: int, stop: int, K: int, steps: dict, tile=None) -> list:
    """What fast-forward used to append: rows[start:stop] K more times, shifted by hand."""
    out = list(rows)
    for j in range(1, K + 1):
        for row in rows[start:stop]:
            r = list(row)
            for c, s in steps.items():
                r[c] += j * s
            if tile is not None:
                r[tile.column] += j * tile.of_row(row)
            out.append(tuple(r))
    return out


def test_a_timeline_repeat_reads_like_its_copies():
    # a period of 10 cycles: a burst at 3, a slot wait at 7 naming tile 4; two more periods
    # move the times by 10 and 20 and the slot's tile by 2 and 4 (2 tiles per period);
    # the burst's info (a port key) does not move
    rows = Rows([(0, Wait.BURST, "p"), (3, Wait.BURST, "p"), (7, Wait.SLOT, 4)])
    tile = TileShift(2, 2, states=(Wait.SLOT,))
    rows.repeat(1, 3, 2, ((0, 10),), tile)
    rows.append((30, Wait.BURST, "p"))
    want = [
        (0, Wait.BURST, "p"),
        (3, Wait.BURST, "p"),
        (7, Wait.SLOT, 4),
        (13, Wait.BURST, "p"),
        (17, Wait.SLOT, 6),
        (23, Wait.BURST, "p"),
        (27, Wait.SLOT, 8),
        (30, Wait.BURST, "p"),
    ]
    assert list(rows) == want and rows == want and len(rows) == 8
    assert [rows[i] for i in range(-8, 8)] == want + want
    assert rows[2:6] == want[2:6] and rows[-3:] == want[-3:]
    # rows starting at or before t: 17 -> the first five; 16 -> four; 100 -> all
    assert [rows.bisect_right(t) for t in (-1, 0, 7, 12, 13, 16, 17, 27, 29, 30, 100)] == [
        0, 1, 3, 3, 4, 4, 5, 7, 7, 8, 8,
    ]  # fmt: skip
    assert rows.repeated == 4 and rows.flat is None
    assert pickle.loads(pickle.dumps(rows)) == want


def test_rows_inside_a_repeat_cannot_change_but_the_tail_can():
    rows = Rows([(0, 1, 2, 3), (1, 2, 2, 3)])
    rows.repeat(0, 2, 3, ((0, 2), (1, 2)))
    rows.append([8, None, 2, 3])  # an open grant, closed later
    rows[-1] = (8, 9, 2, 3)
    assert rows[-1] == (8, 9, 2, 3)
    with pytest.raises(IndexError):
        rows[0] = (0, 0, 0, 0)
    with pytest.raises(IndexError):
        del rows[1:3]
    assert rows.pop() == (8, 9, 2, 3)
    with pytest.raises(IndexError):
        rows.pop()


@given(
    period=st.lists(st.integers(0, 4), min_size=1, max_size=6),
    K=st.integers(1, 6),
    K2=st.integers(1, 4),
    probe=st.integers(-5, 400),
)
def test_nested_repeats_equal_their_written_out_copies(period, K, K2, probe):
    """A repeat whose base holds another repeat (an outer level's jump over periods an inner
    level already skipped) reads like the copies written out, and bisect agrees with a
    bisect over the written-out start cycles."""
    gaps = [g + 1 for g in period]
    times = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    P = times[-1] + 1
    tile = TileShift(4, (0, 3))  # node 1's tiles move 3 per period, node 0's stay
    rows_list = [(t, t + 1, i % 2, "resident", i) for i, t in enumerate(times)]
    rows, plain = Rows(list(rows_list)), list(rows_list)
    rows.repeat(0, len(rows_list), K, ((0, P), (1, P)), tile)
    plain = written_out(plain, 0, len(rows_list), K, {0: P, 1: P}, tile)
    assert rows == plain
    P2 = (K + 1) * P
    rows.repeat(0, len(rows), K2, ((0, P2), (1, P2)), TileShift(4, (0, 3 * (K + 1))))
    plain = written_out(plain, 0, len(plain), K2, {0: P2, 1: P2}, TileShift(4, (0, 3 * (K + 1))))
    assert rows == plain and len(rows) == len(plain)
    assert rows.bisect_right(probe) == sum(1 for r in plain if r[0] <= probe)
    assert rows[len(plain) // 2] == plain[len(plain) // 2]


def test_finishers_rules_answer_like_the_dict_they_replace():
    # tiles 0..3 of node 5 finished in a period of 4 tiles; 3 more periods: tiles 4..15,
    # each finished by its twin 4, 8 or 12 tiles back
    lf = Finishers()
    for k in range(4):
        lf[(5, k)] = ("pe", k % 2)
    lf.add_rule(5, {k: lf[(5, k)] for k in range(4)}, 4, 3, range(4))
    assert lf.get((5, 13)) == ("pe", 1) and lf.get((5, 16)) is None and (5, 15) in lf
    lf[(5, 9)] = ("node", 7)  # the engine finishes a tile again after the rule: it wins
    want = {(5, k): ("pe", k % 2) for k in range(16)} | {(5, 9): ("node", 7)}
    assert lf == want and len(lf) == 16


def span(start, end, cause="bandwidth"):
    return StallSpan(
        start, end, "compute", cause, "sram", "A", "rd", "sram", None, "c", end - start
    )


def test_span_sums_multiply_a_repeat():
    # one copy: 2 bandwidth cycles at [5, 7) and 3 latency cycles at [8, 11); 4 copies 10
    # cycles apart: 8 bandwidth cycles, first at 5, last ending at 7 + 30 = 37
    copy = SpanList([[span(5, 7), span(8, 11, "latency")]])
    spans = SpanList([[span(0, 1)], SpanRepeat(copy, 4, 10, None)])
    groups = spans.groups(lambda s: (s.cause,))
    assert groups == {("bandwidth",): [9, 0, 37], ("latency",): [12, 8, 41]}
    written = list(spans)
    assert len(spans) == len(written) == 9 and written[-1] == span(38, 41, "latency")


def test_row_columns_write_repeats_out_as_iteration_does():
    # by hand: two rows, repeated twice with a period of 10 cycles (columns 0 and 1) and node 1's
    # tile moving 3 a period (column 3, TileShift by node in column 2): copy j adds 10j to the
    # times and 3j to node 1's tile; then a row still open at the end (end None -> none_as)
    rows = Rows([(0, 4, 0, 0, "A"), (4, 9, 1, 5, "B")])
    rows.repeat(0, 2, 2, ((0, 10), (1, 10)), TileShift(3, (0, 3)))
    rows.append((40, None, 1, 11, "B"))
    starts, ends, nodes, tiles, names = row_columns(rows, 5, none_as=-1)
    assert starts.tolist() == [0, 4, 10, 14, 20, 24, 40]
    assert ends.tolist() == [4, 9, 14, 19, 24, 29, -1]
    assert nodes.tolist() == [0, 1, 0, 1, 0, 1, 1]
    assert tiles.tolist() == [0, 5, 0, 8, 0, 11, 11]
    assert names == ["A", "B", "A", "B", "A", "B", "B"]
    closed = [(a, -1 if b is None else b, *rest) for a, b, *rest in rows]
    assert list(zip(starts.tolist(), ends.tolist(), nodes.tolist(), tiles.tolist(), names, strict=True)) == closed  # fmt: skip
