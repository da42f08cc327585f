"""Tile boxes and byte runs (cyclesim/schedule/addresses.py), derived by hand."""

from __future__ import annotations

import pytest

from cyclesim.schedule.addresses import (
    Placement,
    TileAddresses,
    box_runs,
    node_addresses,
    place_tensors,
    tile_box,
)
from cyclesim.spec import Spatial, Storage, Temporal
from cyclesim.spec.workload import parse_projection

MN = (parse_projection("m"), parse_projection("n"))


def test_tile_box_of_a_gemm_tile():
    # m runs 2..3 and n 4..7: the box is [2, 4) x [4, 8)
    assert tile_box(MN, {"m": 2, "n": 4}, {"m": 2, "n": 4}) == ((2, 4), (4, 8))


def test_tile_box_of_a_sliding_window():
    # ix = 2*ox + fx with ox in 3..4 and fx in 0..2: ix from 2*3 + 0 = 6 to 2*4 + 2 = 10
    proj = (parse_projection("c"), parse_projection("2*ox + fx"))
    assert tile_box(proj, {"c": 1, "ox": 3}, {"ox": 2, "fx": 3}) == ((1, 2), (6, 11))


def test_a_tile_of_a_row_major_matrix_is_one_strided_run():
    # Z[8][16] of 4-byte values at 0: a line is 64 B. Lines 2..3, columns 4..7: the first
    # byte is 2*64 + 4*4 = 144, 4 values = 16 B per line, the next line 64 B further, 2 lines
    z = Placement("Z", 0, (8, 16), (0, 1), 4)
    assert box_runs(z, ((2, 4), (4, 8))) == [(144, 16, 64, 2)]


def test_whole_lines_merge_into_one_contiguous_run():
    # lines 2..3 whole: 2 * 64 B from byte 128, one run
    z = Placement("Z", 4096, (8, 16), (0, 1), 4)
    assert box_runs(z, ((2, 4), (0, 16))) == [(4096 + 128, 128, 0, 1)]


def test_a_column_major_layout_strides_the_other_way():
    # order (1, 0): n outermost, a column of 8 values is 32 B. Columns 4..7, lines 2..3:
    # column 4 starts at 4*32 + 2*4 = 136, 2 values = 8 B, the next column 32 B further
    z = Placement("Z", 0, (8, 16), (1, 0), 4)
    assert box_runs(z, ((2, 4), (4, 8))) == [(136, 8, 32, 4)]


def test_three_dimensions_enumerate_the_outer_one():
    # I[2][4][8] of 1 B: c 0..1, y 1..2, x 2..5: 4 B runs, y strides them (8 B apart), c is
    # enumerated (32 B apart): from 1*8 + 2 = 10 and 32 + 10 = 42, 2 lines each
    i = Placement("I", 0, (2, 4, 8), (0, 1, 2), 1)
    assert box_runs(i, ((0, 2), (1, 3), (2, 6))) == [(10, 4, 8, 2), (42, 4, 8, 2)]
    # x whole: a line is 8 B and lines 1..2 are contiguous, so y merges too: 16 B from 8, and c
    # strides those 32 B apart
    assert box_runs(i, ((0, 2), (1, 3), (0, 8))) == [(8, 16, 32, 2)]


def test_placements_pack_row_aligned_and_refuse_overlaps():
    # A: 100 values of 1 B at 0; B starts at the next 64-byte boundary (128); Z after B (256)
    placed = place_tensors([("A", (100,), 1), ("B", (10, 10), 1), ("Z", (4,), 4)], 64)
    assert [p.base for p in placed.values()] == [0, 128, 256]
    with pytest.raises(ValueError, match="A and B overlap"):
        place_tensors([("A", (100,), 1), ("B", (4,), 1)], 64, {"B": (50, None)})


def test_counted_digits_and_strides_from_the_loops():
    # DRAM above; loops m 4, n 2, spatial n 4 (between DRAM and the node), node, then m 8 below.
    # m's outer loop strides by the 8 of the loop below it; n's by the spatial 4. Tile k = 5
    # is digits (m 2, n 1): origin m = 16, n = 4; the extent is m 8 below and n 4 between.
    above = (
        Storage("DRAM", ("Z",), "t[0]"),
        Temporal("m", 4),
        Temporal("n", 2),
        Spatial("n", 4, "X"),
    )
    below = (Temporal("m", 8),)
    counted, extent = node_addresses(above, below, 0, 2, frozenset({"m", "n"}))
    assert counted == (("m", 4, 8), ("n", 2, 4))
    assert extent == {"m": 8, "n": 4}
    z = Placement("Z", 0, (32, 8), (0, 1), 1)
    tiles = TileAddresses("DRAM", z, MN, counted, tuple(extent.items()))
    assert tiles.origin(5) == {"m": 16, "n": 4}
    # lines 16..23 of 8 B each, columns 4..7: from 16*8 + 4 = 132, 4 B per line
    assert tiles.runs(5) == [(132, 4, 8, 8)]


def test_irrelevant_loops_do_not_move_the_tile():
    # a k loop above a node of Z[m][n] counts tiles (retain keeps it below a relevant one only
    # when strict) but never moves Z's box
    above = (Storage("DRAM", ("Z",), "t[0]"), Temporal("k", 3), Temporal("m", 2))
    counted, extent = node_addresses(above, (Temporal("m", 4),), 0, 2, frozenset({"m", "n"}))
    assert counted == ((None, 3, 1), ("m", 2, 4))
    tiles = TileAddresses("DRAM", Placement("Z", 0, (8, 1), (0, 1), 1), MN, counted, (("m", 4),))
    assert tiles.origin(0) == tiles.origin(2) == {"m": 0}
    assert tiles.origin(5) == {"m": 4}
