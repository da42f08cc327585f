"""The chip's tensor boxes clip at a tensor's extent (Projection.size): the bits a step moves are
the tensor's real bits, never a convolution's border or iterations padded to whole steps."""

from __future__ import annotations

from cyclesim.chip.steps import tensor_box, volume
from cyclesim.spec.workload import Projection, TensorAccess

RANKS = ("c", "oy", "fy")


def _input(size: int | None) -> TensorAccess:
    # I[c, oy + fy]: a 3-row window sliding over rows, 8 channels
    return TensorAccess("I", (Projection(((1, "c"),)), Projection(((1, "oy"), (1, "fy")), size)))


def test_the_last_row_tile_of_a_same_convolution_stops_at_the_tensors_edge():
    # rows oy 28..31 with fy 0..2 touch oy + fy = 28..33; the tensor has 32 rows (0..31), so
    # the box is rows [28, 32): 8 channels x 4 rows = 32 values (unclipped 8 x 6 = 48)
    box = ((0, 8), (28, 32), (0, 3))
    assert tensor_box(_input(None), box, RANKS) == ((0, 8), (28, 34))
    assert tensor_box(_input(32), box, RANKS) == ((0, 8), (28, 32))
    assert volume(tensor_box(_input(32), box, RANKS)) == 32


def test_an_interior_tile_is_not_clipped():
    # rows 4..7 + fy 0..2 = 4..9, inside 32 rows: 8 x 6 = 48 values either way
    box = ((0, 8), (4, 8), (0, 3))
    assert tensor_box(_input(32), box, RANKS) == tensor_box(_input(None), box, RANKS)
    assert volume(tensor_box(_input(32), box, RANKS)) == 48


def test_iterations_padded_past_the_edge_touch_nothing():
    # an output padded to whole spatial steps of 14: rows 28..41 of a 32-row output O[oy]
    out = TensorAccess("O", (Projection(((1, "oy"),), 32),))
    assert tensor_box(out, ((28, 42),), ("oy",)) == ((28, 32),)
    # a step only over padded rows 32..41 touches no value (the plan moves nothing for it)
    assert volume(tensor_box(out, ((32, 42),), ("oy",))) == 0


def test_a_core_double_buffering_two_layers_tensors_replays_each_layers_step():
    # one core runs e1 (A = X * Y) and e2 (Z = A * V); its sram double-buffers A and Z. A step
    # of e1 sees only its own tensors (X, Y, A): the single-core spec would refuse Z as a name
    # its workload does not have, so the step's architecture keeps (A,) there and e2's (A, Z)
    from chip_helpers import CHAIN, LOCAL, TINY_CORE, layer, run

    from cyclesim.chip import chip_from_dict
    from cyclesim.chip.layer_mapping import step_architecture
    from cyclesim.spec import workload_from_dict

    core = {**TINY_CORE, "memories": [{**TINY_CORE["memories"][0], "double_buffered": ["A", "Z"]}]}
    chip = chip_from_dict({
        "name": "chip", "cores": [{"name": "c0", "architecture": core}],
        "offchip": {"ports": [{"name": "rw", "kind": "read_write", "width_bits": 64}]},
        "interconnect": {"links": [], "buses": []}, "clock_mhz": 1000,
    })  # fmt: skip
    e1, e2 = CHAIN[0](8), CHAIN[1](8)
    res = run(chip, [e1, e2], [layer(e1, ["c0"]), layer(e2, ["c0"])], LOCAL)
    assert res.cycles > 0
    arch = chip.core("c0").architecture
    for einsum, doubled in ((e1, ("A",)), (e2, ("A", "Z"))):
        work = workload_from_dict({"name": "w", "default_bits_per_value": 8, "einsums": [einsum]})
        assert step_architecture(arch, work).memories[0].double_buffered == doubled
