"""ZigZag's own shipped inputs (zigzag-dse 3.9.1's inputs/): every hardware with its mapping, on
small layers of the shipped ONNX models, as a ZigZag user would run them.

Per case: the layer imports and replays, our model equals zigzag-dse term by term, and every
DRAM word count agrees with zigzag-dse or its difference is explained by a named mechanism.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cyclesim.checks.zigzag.network import LayerTask, check_layer
from cyclesim.checks.zigzag.shipped import HARDWARE, MIXED  # every shipped digital accelerator
from cyclesim.errors import PeerUnavailable, SpecError


def _inputs() -> Path:
    """zigzag-dse's shipped inputs folder, or skip with the reason."""
    from cyclesim.checks.zigzag import peer

    try:
        peer.zigzag_version()
    except PeerUnavailable as exc:
        pytest.skip(str(exc))
    import zigzag

    return Path(zigzag.__file__).parent / "inputs"


# resnet18's classifier: K 1000 is unrolled fractionally on every 32-wide array (1000 / 32)
FC = ("resnet18", "/fc/Gemm")
# small layers of each shipped ONNX model: a strided 1x1 convolution, a depthwise 3x3, a Gemm
SMALL_LAYERS = [
    ("resnet18", "/layer2/layer2.0/downsample/downsample.0/Conv"),
    ("mobilenetv2", "/features/features.14/conv/conv.1/conv.1.0/Conv"),
    ("alexnet", "Op22"),
]


# gemm_l1's mapping names the loops D0, D1, D2 (ZigZag's repository GEMM, not shipped in the
# wheel): a 64 x 64 x 64 GEMM with 8-bit inputs and 32-bit outputs in that form
GEMM_D012 = """\
- id: 0
  name: gemm
  operator_type: Gemm
  equation: O[d0][d2]+=I[d0][d1]*W[d1][d2]
  dimension_relations: []
  loop_dims: [D0, D1, D2]
  loop_sizes: [64, 64, 64]
  operand_precision: {W: 8, I: 8, O: 32, O_final: 32}
  operand_source: {I: 0, W: 0}
"""


def _check(hardware: str, mapping: str, model: str, layer: str) -> dict:
    inputs = _inputs()
    workload = model if model.endswith(".yaml") else str(inputs / "workload" / f"{model}.onnx")
    task = LayerTask(
        0,
        layer,
        str(inputs / "hardware" / f"{hardware}.yaml"),
        workload,
        str(inputs / "mapping" / f"{mapping}.yaml"),
        True,
    )
    return check_layer(task)


def _assert_agrees(row: dict, hardware: str = "") -> None:
    assert row["model_equals_zigzag"], (row["model_cycles"], row["zigzag_cycles"])
    assert row["status"] == "ok", row["error"]
    assert row["dram_rows"] > 0
    # every row that differs has its mechanism named (explain's fallback says 'unexplained')
    assert "unexplained" not in row["mechanisms"], row["mechanisms"]
    assert "a bug in cyclesim's model" not in row["mechanisms"]


@pytest.mark.peer
@pytest.mark.parametrize(("hardware", "mapping"), HARDWARE, ids=[h for h, _ in HARDWARE])
def test_shipped_hardware_replays_resnet18_fc_and_model_equals_zigzag(hardware, mapping):
    _assert_agrees(_check(hardware, mapping, *FC), hardware)


@pytest.mark.peer
@pytest.mark.parametrize("hardware", ["gemm_l1", "gemm_l1_l3"])
def test_gemm_hardware_replays_a_d0_d1_d2_gemm(hardware, tmp_path):
    workload = tmp_path / "gemm.yaml"
    workload.write_text(GEMM_D012)
    _assert_agrees(_check(hardware, hardware, str(workload), "gemm"))


@pytest.mark.peer
@pytest.mark.slow
@pytest.mark.parametrize(("hardware", "mapping"), MIXED, ids=[m for _, m in MIXED])
def test_shipped_mixed_mappings_replay_resnet18_fc(hardware, mapping):
    _assert_agrees(_check(hardware, mapping, *FC), hardware)


@pytest.mark.peer
@pytest.mark.slow
@pytest.mark.parametrize(("model", "layer"), SMALL_LAYERS, ids=[m for m, _ in SMALL_LAYERS])
@pytest.mark.parametrize(("hardware", "mapping"), HARDWARE[:2], ids=[h for h, _ in HARDWARE[:2]])
def test_small_layers_of_every_shipped_onnx_model(hardware, mapping, model, layer):
    _assert_agrees(_check(hardware, mapping, model, layer), hardware)


# the cases the replay refused before a shared memory below a spatial loop had a meaning: a
# memory shared across an array dim that holds fewer loops than another operand's
# per-position memory (tesla_npu_like's rf_1B, eyeriss_like's sram_8KB, edge_tpu_like_mixed's
# rf_1B on mobilenetv2's depthwise layer); each now replays with one instance serving the
# positions it is shared across, and every word row that differs names its mechanism
SHARED_BELOW_SPATIAL = [
    ("tesla_npu_like", "tesla_npu_like", *SMALL_LAYERS[0]),
    ("tesla_npu_like", "tesla_npu_like_mixed", *SMALL_LAYERS[0]),
    ("eyeriss_like", "default", *SMALL_LAYERS[0]),
    ("edge_tpu_like", "edge_tpu_like_mixed", *SMALL_LAYERS[1]),
]


@pytest.mark.peer
@pytest.mark.slow
@pytest.mark.parametrize(
    ("hardware", "mapping", "model", "layer"),
    SHARED_BELOW_SPATIAL,
    ids=[f"{m}-{model}" for _, m, model, _ in SHARED_BELOW_SPATIAL],
)
def test_a_memory_shared_below_another_operands_per_position_memory_replays(
    hardware, mapping, model, layer
):
    _assert_agrees(_check(hardware, mapping, model, layer), hardware)


# ZigZag's own resnet18.yaml (its repository; the wheel ships only the ONNX) writes max pooling
# as a layer whose W has 0 bits: ZigZag moves no word of W, the replay leaves W out
POOLING = """\
- id: 0
  name: conv
  operator_type: Conv
  equation: O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]
  dimension_relations: [ix=1*ox+1*fx, iy=1*oy+1*fy]
  loop_dims: [B, K, C, OY, OX, FY, FX]
  loop_sizes: [1, 64, 8, 29, 29, 1, 1]
  operand_precision: {W: 8, I: 8, O: 16, O_final: 8}
  operand_source: {I: 0, W: 0}
- id: 1
  name: maxpool
  operator_type: Pooling
  equation: O[b][g][oy][ox]+=W[fx][fy]*I[b][g][iy][ix]
  dimension_relations: [ix=2*ox+1*fx, iy=2*oy+1*fy]
  loop_dims: [B, G, OY, OX, FX, FY]
  loop_sizes: [1, 64, 14, 14, 3, 3]
  operand_precision: {I: 8, W: 0, O: 16, O_final: 8}
  operand_source: {I: 0, W: 1}
"""


@pytest.mark.peer
def test_a_pooling_layer_with_0_bit_weights_replays_without_weight_traffic(tmp_path):
    workload = tmp_path / "pool.yaml"
    workload.write_text(POOLING)
    row = _check("tpu_like", "tpu_like", str(workload), "maxpool")
    _assert_agrees(row)
    assert row["dram_equal"] == row["dram_rows"] == 2  # I read, O written: no W row at all


@pytest.mark.peer
def test_a_strided_1x1_convolution_fits_zigzags_own_tiles_and_its_input_words_equal():
    # ix = 2*ox + fx with FX 1 touches every other input column: a tile holds OX values, not
    # the 2*OX - 1 its span covers, so ZigZag's chosen mapping fits (it was refused on
    # capacity) and every DRAM word count equals zigzag-dse's
    row = _check("meta_prototype", "meta_prototype_like", "resnet18", SMALL_LAYERS[0][1])
    _assert_agrees(row)
    assert row["dram_equal"] == row["dram_rows"]


@pytest.mark.peer
def test_a_strided_1x1_input_padded_to_whole_spatial_steps_clips_to_the_values_it_touches():
    # tesla_npu_like unrolls OX 8 on D2, so resnet18's downsample pads OX from 28 to 32; its
    # input ix = 2*ox + fx (fx 1) touches 28 of the 56 columns. The input's extent (56, in
    # indices) was taken as the clip (in distinct values), 56 >= 32 left it unclipped, and the replay
    # read 64 x 28 x 32 = 57,344 input values from DRAM where ZigZag reads 64 x 28 x 28 = 50,176
    row = _check("tesla_npu_like", "tesla_npu_like", *SMALL_LAYERS[0])
    _assert_agrees(row, "tesla_npu_like")
    assert row["dram_equal"] == row["dram_rows"]


@pytest.mark.parametrize("hardware", ["aimc", "dimc"])
def test_imc_arrays_are_refused_by_name(hardware):
    from cyclesim.checks.zigzag.read_accelerator import parse_accelerator

    with pytest.raises(SpecError, match="IMC arrays are not modelled") as info:
        parse_accelerator(str(_inputs() / "hardware" / f"{hardware}.yaml"))
    assert info.value.field == "operational_array.is_imc"


@pytest.mark.peer
def test_a_mistyped_layer_of_an_onnx_model_names_the_model_not_its_yaml(capsys):
    """The ONNX model is read into a temporary ZigZag YAML; a user typed the ONNX file's name,
    so a `--layer` that is not in it names the model (not the temporary file) and exits 2."""
    from cyclesim.cli import main

    inputs = _inputs()
    onnx = str(inputs / "workload" / "resnet18.onnx")
    args = ["check", "zigzag", "--accelerator", str(inputs / "hardware" / "tpu_like.yaml"),
            "--workload", onnx, "--mapping", str(inputs / "mapping" / "tpu_like.yaml"),
            "--layer", "/conv1/Cnv"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{onnx}: --layer: no layer named '/conv1/Cnv'; did you mean '/conv1/Conv'?" in err
    # every layer is listed to pick from (eight and '...' hid the 13 after downsample)
    assert "21 layers: /conv1/Conv, " in err and "/layer4/layer4.1/conv2/Conv, /fc/Gemm" in err
    assert "cyclesim-zigzag-" not in err


@pytest.mark.peer
def test_buffer_full_note_agrees_with_the_one_slot_the_replay_gave(capsys):
    """resnet18's conv1 on tpu_like: ZigZag infers O double-buffered in rf_2B, two whole tiles do
    not fit, so the replay gives it one slot; the buffer_full note said 'two slots' before."""
    from cyclesim.cli import main

    inputs = _inputs()
    args = ["check", "zigzag", "--accelerator", str(inputs / "hardware" / "tpu_like.yaml"),
            "--workload", str(inputs / "workload" / "resnet18.onnx"),
            "--mapping", str(inputs / "mapping" / "tpu_like.yaml"), "--layer", "/conv1/Conv"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ZigZag counts O in rf_2B as double-buffered" in out  # the 'buffers:' note
    note = next(line for line in out.splitlines() if line.startswith("* stall, buffer_full"))
    assert "O tile at rf_2B had one slot (ZigZag infers double buffering" in note
    assert "two slots" not in note and "earlier tiles of an earlier" not in note


@pytest.mark.peer
def test_the_systolic_drain_counts_the_whole_unrollings_of_the_chosen_mapping():
    # tpu_like_mixed on resnet18's conv1: ZigZag picks D1 K 32 and D2 C 2 x FX 3 x FY 3 (18 of
    # 32 rows) on its systolic D1 and D2; its drain is (32 - 1) + (18 - 1) = 48 cycles, from the
    # whole unrollings (the fractional ones, C 1.5 x FX 7/3 x FY 7/3, round up to 9: 39)
    from cyclesim.checks.zigzag.check import choose_mapping
    from cyclesim.checks.zigzag.model import evaluate

    inputs = _inputs()
    chosen, theirs, _ = choose_mapping(
        str(inputs / "hardware" / "tpu_like.yaml"),
        str(inputs / "workload" / "resnet18.onnx"),
        str(inputs / "mapping" / "tpu_like_mixed.yaml"),
        layer_name="/conv1/Conv",
    )
    assert dict(chosen.mapping.spatial)["D2"] == (("C", 2), ("FX", 3), ("FY", 3))
    assert evaluate(chosen).systolic_drain_cycles == theirs.latency.systolic_drain_cycles == 48
