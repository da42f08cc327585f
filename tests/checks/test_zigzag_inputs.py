"""Reading ZigZag 3.x inputs: good files load; bad ones give one message naming file, field and line."""

from __future__ import annotations

import copy

import pytest

from cyclesim.checks.zigzag import cases as zc
from cyclesim.checks.zigzag.inputs import DataDirection, MemoryOperand
from cyclesim.checks.zigzag.read import load_zigzag_inputs
from cyclesim.errors import SpecError

TM = zc.MEMSIZE_TEMPORAL_MAPPINGS["large"]


def load(tmp_path, accelerator=None, workload=None, mapping=None, tm=TM, layer_name=None):
    """Write a (possibly broken) case and load it."""
    files = zc.write_case(
        tmp_path,
        "case",
        accelerator or zc.eyeriss_accelerator(),
        workload or zc.gemm_workload(),
        mapping or zc.spatial_mapping(),
        tm,
    )
    return load_zigzag_inputs(
        files.accelerator,
        files.workload,
        files.mapping,
        files.temporal_mapping,
        layer_name=layer_name,
    ), files


def test_memsize_case_loads_with_zigzag_concepts(tmp_path):
    inputs, _ = load(tmp_path)
    acc = inputs.accelerator
    # memories innermost first; sram_1M holds I1 and O and is one level of each
    assert [m.name for m in acc.levels(MemoryOperand.I1)] == ["rf_64B_I", "sram_1M", "dram"]
    assert [m.name for m in acc.levels(MemoryOperand.O)] == [
        "rf_16B",
        "sram_8KB",
        "sram_1M",
        "dram",
    ]
    dram = acc.memories[-1]
    assert dram.ports[0].shared_by_both_inputs
    assert dram.port_for(MemoryOperand.I2, DataDirection.READ_TO_BELOW).bandwidth_max_bits == 64
    assert inputs.layer.operands == ("O", "W", "I") and inputs.layer.mac_count == 1_000_000
    assert inputs.mapping.memory_operand("W") == MemoryOperand.I2
    assert inputs.temporal_mapping.total_cycles == 62500


def test_direction_words():
    assert [d.words for d in DataDirection] == [
        "read to above",
        "written from above",
        "read to below",
        "written from below",
    ]
    assert [d.code for d in DataDirection] == ["th", "fh", "tl", "fl"]


def test_strided_convolution_loads(tmp_path):
    inputs, _ = load(tmp_path, workload=zc.conv_workload(), tm=zc.CONV_TEMPORAL_MAPPINGS["K4_C4"])
    (ix, iy) = inputs.layer.relations
    assert (ix.target, ix.first_dim, ix.first_coefficient, ix.second_dim) == ("IX", "OX", 2, "FX")
    assert inputs.layer.dims_of("I") == ("B", "C", "IY", "IX")


def broken_accelerator(edit):
    acc = copy.deepcopy(zc.eyeriss_accelerator())
    edit(acc)
    return acc


BAD_ACCELERATORS = [
    (
        "unknown operand in allocation",
        lambda a: a["memories"]["rf_64B_I"]["ports"][0].update(allocation=["I2, tl"]),
        "memories.rf_64B_I.ports[0].allocation[0]",
        "unknown operand 'I2' in allocation: memory 'rf_64B_I' holds only I1",
    ),
    (
        "allocation that is not operand, direction",
        lambda a: a["memories"]["dram"]["ports"][0].update(allocation=["I1 to low"]),
        "memories.dram.ports[0].allocation[0]",
        "bad port allocation",
    ),
    (
        "read port asked to write",
        lambda a: a["memories"]["rf_64B_W"]["ports"][0].update(allocation=["I2, tl", "I2, fh"]),
        "memories.rf_64B_W.ports[0].allocation[1]",
        "a read port cannot serve 'written from above' (fh)",
    ),
    (
        "one transfer listed twice on one port",
        lambda a: a["memories"]["sram_8KB"]["ports"][1]["allocation"].append("O, tl"),
        "memories.sram_8KB.ports[1].allocation[2]",
        "'O, tl' is listed twice on port 'rw_port_2'",
    ),
    (
        "served dimension the array does not have",
        lambda a: a["memories"]["dram"].update(served_dimensions=["D1", "D3"]),
        "memories.dram.served_dimensions[1]",
        "unknown array dimension",
    ),
    (
        "unknown field",
        lambda a: a["memories"]["dram"].update(banks=8),
        "memories.dram.banks",
        "unknown field 'banks' (allowed: area, auto_cost_extraction,",
    ),
    (
        "bandwidth_min above bandwidth_max",
        lambda a: a["memories"]["dram"]["ports"][0].update(bandwidth_min=128),
        "memories.dram.ports[0].bandwidth_min",
        "is larger than bandwidth_max",
    ),
]


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [c[1:] for c in BAD_ACCELERATORS],
    ids=[c[0] for c in BAD_ACCELERATORS],
)
def test_bad_accelerator_is_refused_with_its_field(tmp_path, edit, field, message):
    with pytest.raises(SpecError) as info:
        load(tmp_path, accelerator=broken_accelerator(edit))
    err = info.value
    assert err.field == field
    assert message in err.detail
    assert err.file.endswith("case_accelerator.yaml")
    assert err.line is not None and f":{err.line}: field '{field}'" in str(err)


def test_one_transfer_on_two_ports_is_served_by_the_last_one_as_in_zigzag(tmp_path):
    # AcceleratorFactory.create_port_allocation keeps one port per (operand, direction): the
    # last listed; 'O, th' moves from rw_port_1 to rw_port_2 and rw_port_1 keeps only 'O, fh'
    acc = broken_accelerator(
        lambda a: a["memories"]["sram_8KB"]["ports"][1]["allocation"].append("O, th")
    )
    inputs, _ = load(tmp_path, accelerator=acc)
    sram = next(m for m in inputs.accelerator.memories if m.name == "sram_8KB")
    th = DataDirection.READ_TO_ABOVE
    assert sram.port_for(MemoryOperand.O, th).name == "rw_port_2"
    assert [(a.memory_operand.value, a.direction.code) for a in sram.ports[0].allocation] == [
        ("O", "fh")
    ]


def test_missing_port_for_a_needed_transfer_is_refused(tmp_path):
    # nothing serves 'I1, fh' at rf_64B_I: the register file could never be filled
    acc = broken_accelerator(lambda a: a["memories"]["rf_64B_I"]["ports"].pop(1))
    with pytest.raises(
        SpecError, match=r"no port of memory 'rf_64B_I' serves 'I1, fh' \(written from above\)"
    ):
        load(tmp_path, accelerator=acc)


def broken_tm(edit):
    tm = copy.deepcopy(TM)
    edit(tm)
    return tm


BAD_TEMPORAL_MAPPINGS = [
    (
        "loop factors that do not multiply to the layer size",
        lambda t: t["W"][0].__setitem__(0, ["B", 4]),
        "W",
        "temporal factors of 'B' multiply to 80; with spatial unrolling 1 the layer size 100 needs ceil(100 / 1)",
    ),
    ("unknown dim", lambda t: t["I"][0].__setitem__(0, ["X", 5]), "I[0][0]", "unknown dim 'X'"),
    (
        "wrong number of levels",
        lambda t: t["O"].pop(),
        "O",
        "needs one loop list per memory level of O",
    ),
    ("unknown operand", lambda t: t.update(A=[]), "A", "unknown layer operand 'A'"),
    (
        "operands that disagree on the loop order",
        lambda t: t["I"][0].reverse(),
        "I",
        "the loops of I, read innermost first, differ from those of O at position 0",
    ),
]


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [c[1:] for c in BAD_TEMPORAL_MAPPINGS],
    ids=[c[0] for c in BAD_TEMPORAL_MAPPINGS],
)
def test_bad_temporal_mapping_is_refused(tmp_path, edit, field, message):
    with pytest.raises(SpecError) as info:
        load(tmp_path, tm=broken_tm(edit))
    assert info.value.field == field
    assert message in info.value.detail
    assert info.value.file.endswith("case_tm.json")


def test_bad_workload_and_mapping_are_refused(tmp_path):
    conv = zc.conv_workload()
    conv[0]["pr_loop_dims"] = ["IX"]
    conv[0]["padding"] = [[1, 1], [1, 1]]
    with pytest.raises(SpecError, match="one \\[before, after\\] pair per entry") as info:
        load(tmp_path, workload=conv, tm=None)
    assert info.value.field == "[0].padding"
    bad_eq = zc.gemm_workload()
    bad_eq[0]["equation"] = "O[b][k]+=W[k][x]*I[c][b]"
    with pytest.raises(SpecError, match="unknown dim 'X' of operand W"):
        load(tmp_path, workload=bad_eq, tm=None)
    links = zc.spatial_mapping()
    links[0]["memory_operand_links"] = {"O": "O", "W": "I1", "I": "I1"}
    with pytest.raises(SpecError, match="two layer operands are linked to the same memory operand"):
        load(tmp_path, mapping=links, tm=None)


def test_spatial_mapping_is_reduced_the_way_zigzag_reduces_it(tmp_path):
    # K 5 on a 4-wide D1 is cut to 4 (check_and_reduce), a unit unroll of a dim the layer
    # lacks ('G, 1', as the shipped Add entries have) is dropped
    cut = zc.spatial_mapping(("K", 5))
    cut[0]["spatial_mapping"]["D2"] = ["C, 4", "G, 1"]
    inputs, _ = load(tmp_path, mapping=cut, tm=None)
    assert inputs.mapping.spatial == (("D1", (("K", 4),)), ("D2", (("C", 4),)))
    assert inputs.mapping.spatial_complete
    # an array dimension left out is ZigZag's to search: read, marked incomplete
    partial = zc.spatial_mapping()
    del partial[0]["spatial_mapping"]["D2"]
    inputs, _ = load(tmp_path, mapping=partial, tm=None)
    assert not inputs.mapping.spatial_complete


def test_fractional_unrolling_is_read_as_zigzag_converts_it(tmp_path):
    # K 100 over 3 PEs: ceil(100 / 3) = 34 temporal steps, fractional factor 100 / 34 = 2.94...,
    # and the replay pads K to 34 x 3 = 102
    inputs, _ = load(tmp_path, mapping=zc.spatial_mapping(("K", 3)), tm=None)
    layer, mapping = inputs.layer, inputs.mapping
    assert mapping.temporal_size(layer, "K") == 34
    assert mapping.padded_size(layer, "K") == 102
    assert dict(dict(mapping.fractional_spatial(layer))["D1"])["K"] == pytest.approx(100 / 34)


def test_fractional_unrolling_over_two_array_dims_adjusts_the_largest(tmp_path):
    # K 100 unrolled 2 on D1 and 3 on D2: ZigZag adjusts the first array dim with the largest
    # unrolling (D2), with D1's 2 before it: 100 / ceil(100 / 6) / 2 = 100 / 34; D1 keeps 2.
    # ceil(100 / 6) = 17 temporal steps; the replay pads K to 17 x 6 = 102
    inputs, _ = load(tmp_path, mapping=zc.spatial_mapping(("K", 2), ("K", 3)), tm=None)
    layer, mapping = inputs.layer, inputs.mapping
    fractional = dict(mapping.fractional_spatial(layer))
    assert dict(fractional["D1"])["K"] == 2
    assert dict(fractional["D2"])["K"] == pytest.approx(100 / 34)
    assert mapping.temporal_size(layer, "K") == 17
    assert mapping.padded_size(layer, "K") == 102


def test_padding_and_input_extents_clip_the_input_like_zigzag(tmp_path):
    # ix = 2*ox + fx over OX 8, FX 3 spans 8*3 - (3 - 2)*(8 - 1) = 17 values (LayerNode's
    # calc_pr_dimension_size); padding [1, 1] leaves 15; pr_loop_sizes, when given, wins
    conv = zc.conv_workload()
    conv[0]["pr_loop_dims"] = ["IX", "IY"]
    conv[0]["padding"] = [[1, 1], [0, 0]]
    inputs, _ = load(tmp_path, workload=conv, tm=None)
    layer = inputs.layer
    assert layer.padding == (("IX", 1, 1), ("IY", 0, 0))
    assert layer.extent_limit("IX", 17) == 15
    conv[0]["pr_loop_sizes"] = [11, 17]
    inputs, _ = load(tmp_path, workload=conv, tm=None)
    assert inputs.layer.extent_limit("IX", 17) == 11


def test_the_imported_workload_keeps_each_operands_real_extent(tmp_path):
    # K 100 over 3 PEs pads K to 102 iterations; ix = 2*ox + fx over OX 8, FX 3 spans 17 and
    # padding [1, 1] leaves 15 stored: the replay's tiles clip to K 100 and IX 15 (no padded
    # value and no zero border is stored or moved, as ZigZag sizes them); IY, unpadded, spans
    # exactly what its loops reach and is left unclipped (size None)
    from cyclesim.checks.zigzag.to_spec import to_workload

    conv = zc.conv_workload(k=100)
    conv[0]["pr_loop_dims"] = ["IX", "IY"]
    conv[0]["padding"] = [[1, 1], [0, 0]]
    inputs, _ = load(tmp_path, workload=conv, mapping=zc.spatial_mapping(("K", 3)), tm=None)
    einsum = to_workload(inputs).einsums[0]
    assert dict(einsum.ranks)["K"] == 102
    sizes = {a.tensor: [p.size for p in a.projection] for a in einsum.accesses}
    assert sizes["O"] == [None, 100, None, None]  # B, K, OY, OX
    assert sizes["I"] == [None, None, None, 15]  # B, C, IY, IX
    whole = dict(einsum.ranks)
    assert einsum.output.footprint(whole) == 100 * 8 * 8
    assert einsum.access("I").footprint(whole) == 8 * 17 * 15


def test_a_temporal_ordering_over_dims_the_layer_lacks_is_thrown_out_as_zigzag_does(tmp_path):
    # gemm_l1's mapping orders D1, D2, D0 (ZigZag's repository GEMM); on a B/K/C layer ZigZag
    # drops those entries (remove_invalid_layer_dims) and keeps the rest
    mapping = zc.spatial_mapping()
    mapping[0]["temporal_ordering"] = [["D1", "*"], ["K", 5], ["D0", "*"], ["*", "*"]]
    inputs, _ = load(tmp_path, mapping=mapping, tm=None)
    assert inputs.mapping.temporal_ordering == (("K", 5), ("*", None))


def test_unnamed_layers_get_zigzags_default_name(tmp_path):
    from cyclesim.checks.zigzag.read import workload_layers

    two = zc.gemm_workload() + zc.gemm_workload()
    for i, entry in enumerate(two):
        entry.pop("name", None)
        entry["id"] = 30 + i
    inputs, files = load(tmp_path, workload=two, tm=None, layer_name="Layer31")
    assert inputs.layer.name == "Layer31"
    assert inputs.layer.layer_id == 31
    assert workload_layers(files.workload, files.mapping) == ["Layer30", "Layer31"]


def test_model_without_temporal_mapping_says_what_to_do(tmp_path):
    from cyclesim.checks.zigzag.model import evaluate

    inputs, _ = load(tmp_path, tm=None)
    with pytest.raises(SpecError, match="needs a fixed temporal mapping"):
        evaluate(inputs)


def test_yaml_syntax_error_names_the_line(tmp_path):
    bad = tmp_path / "acc.yaml"
    bad.write_text("name: x\nmemories: [\n")
    with pytest.raises(SpecError, match="not valid YAML") as info:
        load_zigzag_inputs(str(bad), "w.yaml", "m.yaml")
    assert info.value.line is not None
