"""The attribution walk's run reader: fast-forward's repeated rows read a shifted copy at a
time answer exactly like the rows written out, in any order of reading."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cyclesim.engine.rows import Rows, TileShift
from cyclesim.results.timeline_reader import RunReader, first_column, start_cycles, started_by


def nested_rows(gaps: list[int], K: int, K2: int) -> Rows:
    """A period of rows repeated K times, the whole repeated K2 times (an outer jump over an
    inner one), with a literal row after it (the tail the engine appends to)."""
    times = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    P = times[-1] + 1
    rows = Rows([(t, t + 1, i % 2, "resident", i) for i, t in enumerate(times)])
    rows.repeat(0, len(rows), K, ((0, P), (1, P)), TileShift(4, (0, 3)))
    P2 = (K + 1) * P
    rows.repeat(0, len(rows), K2, ((0, P2), (1, P2)), TileShift(4, (0, 3 * (K + 1))))
    rows.append((P2 * (K2 + 1), P2 * (K2 + 1) + 1, 0, "resident", -1))
    return rows


@given(
    gaps=st.lists(st.integers(1, 5), min_size=1, max_size=6),
    K=st.integers(1, 5),
    K2=st.integers(1, 3),
    order=st.lists(st.integers(0, 10_000), max_size=60),
    limit=st.sampled_from([-1, 2, 4096]),
    probe=st.integers(-3, 600),
)
def test_the_run_reader_reads_like_the_written_out_rows(gaps, K, K2, order, limit, probe):
    rows = nested_rows(gaps, K, K2)
    plain = list(rows)
    kept, RunReader.COPY_LIMIT = RunReader.COPY_LIMIT, limit  # row by row, small copies, whole
    try:
        check_reader(rows, plain, order, probe)
    finally:
        RunReader.COPY_LIMIT = kept


def check_reader(rows: Rows, plain: list, order: list[int], probe: int) -> None:
    reader = RunReader(rows)
    assert len(reader) == len(plain) and bool(reader)
    # in order, in an arbitrary order, and from the end: the same rows
    assert [reader[i] for i in range(len(plain))] == plain
    for k in order:
        i = k % len(plain)
        assert reader[i] == plain[i]
    assert reader[-1] == plain[-1]
    # the start column bisects like a bisect over the written-out starts, listed or not
    want = sum(1 for r in plain if r[0] <= probe)
    assert started_by(start_cycles(reader), probe) == want
    starts = start_cycles(rows)
    assert started_by(starts, probe) == want
    # ... and reads a row's start like the written-out rows, in any order
    assert len(starts) == len(plain)
    for k in order:
        assert starts[k % len(plain)] == plain[k % len(plain)][0]


@given(gaps=st.lists(st.integers(1, 5), min_size=1, max_size=6), K=st.integers(1, 5),
       K2=st.integers(1, 3))  # fmt: skip
def test_the_start_column_by_arithmetic_is_the_written_out_one(gaps, K, K2):
    # copy j of a repeat starts j periods on: its starts are the base's plus j * P, nested
    # repeats inside out, and the literal tail as it is
    rows = nested_rows(gaps, K, K2)
    assert first_column(rows) == [r[0] for r in rows]
