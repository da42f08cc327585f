"""Reading Stream's own inputs: the accelerator YAML (cores, connections, last-listed-wins),
the mapping YAML, the ONNX nodes, and the import-or-refuse verdict of every shipped system.

Bad input is one line naming file, field and line, exit 2 at the CLI, never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cyclesim.checks.stream.importer import check_file
from cyclesim.checks.stream.model import ConnectionKind, CoreKind
from cyclesim.checks.stream.read import (
    check_mapping,
    read_accelerator,
    read_mapping,
    read_onnx_nodes,
    resolve_channels,
)
from cyclesim.errors import PeerUnavailable, SpecError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "stream"
DUAL = EXAMPLES / "eyeriss_like_dual_core.yaml"
QUAD = EXAMPLES / "tpu_like_quad_core.yaml"
ONNX = EXAMPLES / "two_conv.onnx"


def _system(tmp_path: Path, connectivity: str, extra: str = "") -> Path:
    """A two-compute-core system around the example cores, with the given core_connectivity."""
    shutil.copytree(EXAMPLES / "cores", tmp_path / "cores")
    path = tmp_path / "acc.yaml"
    path.write_text(
        "name: t\ncores:\n  0: eyeriss_like.yaml\n  1: eyeriss_like.yaml\n  2: offchip.yaml\n"
        f"offchip_core_id: 2\n{extra}core_connectivity:\n{connectivity}"
    )
    return path


def test_dual_core_example_reads_with_its_mesh_dead():
    acc = read_accelerator(DUAL)
    assert [c.kind for c in acc.cores] == [CoreKind.COMPUTE] * 4 + [CoreKind.OFFCHIP]
    assert acc.core(4).top_memory == "dram" and acc.core(4).top_port_bits == 64
    assert acc.core(0).top_memory == "sram_1M"
    # the bus is listed last and spans every core: it wins every ordered pair, so the five
    # point-to-point links before it carry nothing (stream.md 3.1)
    assert [c.index for c in acc.dead_connections()] == [0, 1, 2, 3, 4]
    assert {index for _, _, index in acc.channels} == {5}


def test_last_listed_wins_either_way(tmp_path):
    link = "  - {type: link, cores: [0, 1], bandwidth: 32}\n"
    bus = "  - {type: bus, cores: [0, 1, 2], bandwidth: 128}\n"
    bus_last = read_accelerator(_system(tmp_path / "a", link + bus))
    assert dict(((a, b), i) for a, b, i in bus_last.channels)[(0, 1)] == 1
    link_last = read_accelerator(_system(tmp_path / "b", bus + link))
    channels = dict(((a, b), i) for a, b, i in link_last.channels)
    # 0<->1 by the link (listed last); 0,1 <-> 2 still by the bus
    assert channels[(0, 1)] == channels[(1, 0)] == 1
    assert channels[(0, 2)] == channels[(2, 1)] == 0
    assert link_last.connections[0].kind is ConnectionKind.BUS


def test_resolve_channels_one_per_ordered_pair():
    acc = read_accelerator(QUAD)
    pairs = [(a, b) for a, b, _ in resolve_channels(acc.connections)]
    assert len(pairs) == len(set(pairs)) == 7 * 6  # the bus joins all 7 cores


@pytest.mark.parametrize(
    ("connectivity", "field", "message"),
    [
        (
            "  - {type: link, cores: [0, 7], bandwidth: 32}\n",
            "core_connectivity[1].cores[1]",
            "names no core",
        ),
        (
            "  - {type: ring, cores: [0, 1], bandwidth: 32}\n",
            "core_connectivity[1].type",
            "unknown connection type",
        ),
        (
            "  - {type: link, cores: [0, 1, 2], bandwidth: 32}\n",
            "core_connectivity[1].cores",
            "exactly two",
        ),
        (
            "  - {type: link, cores: [0, 1], bandwidth: 0}\n",
            "core_connectivity[1].bandwidth",
            "positive",
        ),
        (
            "  - {type: link, cores: [0, 1], bandwith: 32}\n",
            "core_connectivity[1].bandwith",
            "unknown field",
        ),
    ],
)
def test_bad_connection_names_file_field_and_line(tmp_path, connectivity, field, message):
    path = _system(tmp_path, "  - {type: bus, cores: [0, 1, 2], bandwidth: 128}\n" + connectivity)
    with pytest.raises(SpecError) as caught:
        read_accelerator(path)
    text = str(caught.value)
    # the second entry of core_connectivity is line 9 of the file _system writes
    assert text.startswith(f"{path}:9:") and field in text and message in text


def test_missing_core_file_and_offchip_are_refused(tmp_path):
    path = _system(tmp_path, "  - {type: bus, cores: [0, 1, 2], bandwidth: 128}\n")
    path.write_text(path.read_text().replace("1: eyeriss_like.yaml", "1: nowhere.yaml"))
    with pytest.raises(SpecError, match=r"acc.yaml:4: field .cores\[1\].: core file not found"):
        read_accelerator(path)
    path.write_text(
        path.read_text()
        .replace("nowhere", "eyeriss_like")
        .replace("offchip_core_id: 2", "offchip_core_id: 0")
    )
    with pytest.raises(SpecError, match="not an off-chip core"):
        read_accelerator(path)


def test_refused_by_name_with_the_reason(tmp_path):
    shared = _system(
        tmp_path,
        "  - {type: bus, cores: [0, 1, 2], bandwidth: 128}\n",
        "core_memory_sharing: ['0, 1']\n",
    )
    verdict = check_file(shared)
    assert not verdict.imported and verdict.name == "t" and "core_memory_sharing" in verdict.reason


def test_every_shipped_system_imports_or_is_refused_by_name():
    from cyclesim.checks.stream.peer import stream_package

    try:
        folder = stream_package() / "inputs" / "examples" / "hardware"
    except PeerUnavailable as error:
        pytest.skip(str(error))
    verdicts = {p.stem: check_file(p) for p in sorted(folder.glob("*.yaml"))}
    assert len(verdicts) >= 9
    for stem, v in verdicts.items():
        assert v.imported or v.reason, stem  # never refused without a reason
    assert verdicts["tpu_like_quad_core"].imported and verdicts["eyeriss_like_dual_core"].imported
    assert verdicts["simba_small"].imported
    assert "bandwidth" in verdicts["tpu_v7_ironwood"].reason
    assert "core_memory_sharing" in verdicts["fusemax"].reason


def test_example_mappings_read_and_match_the_workload():
    acc, nodes = read_accelerator(DUAL), read_onnx_nodes(ONNX)
    assert [(n.name, n.op_type) for n in nodes] == [("Conv1", "Conv"), ("Conv2", "Conv")]
    for path in sorted(EXAMPLES.glob("dual_*.yaml")):
        check_mapping(read_mapping(path), acc, nodes)
    fused = read_mapping(EXAMPLES / "dual_fused_rows.yaml")
    assert fused.groups[0].intra_core_tiling == (("Conv1", "D2", 4),)
    assert fused.layers[0].inter_core_tiling == ((("D2", 2),),)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("Conv2, core_allocation: [[0, 1]]", "Conv9, core_allocation: [[0, 1]]"),
            "layers[1].name",
        ),
        (
            (
                "core_allocation: [[0, 1]], inter_core_tiling: [[{dim: D2, split: 2}]]}\n- {name: Conv2",
                "core_allocation: [[0, 4]], inter_core_tiling: [[{dim: D2, split: 2}]]}\n- {name: Conv2",
            ),
            "not a compute core",
        ),
        (
            ("{dim: D2, split: 2}]]}\n- {name: Conv2", "{dim: D2, split: 3}]]}\n- {name: Conv2"),
            "splits multiply to 3",
        ),
        (("Conv1.D2", "Conv3.D2"), "not in this group"),
        (("{dim: Conv1.D2, tile: 4}", "{dim: Conv1.D2, tile: 0}"), "at least 1"),
    ],
)
def test_bad_mapping_names_file_field_and_line(tmp_path, edit, message):
    path = tmp_path / "m.yaml"
    text = (EXAMPLES / "dual_fused_rows.yaml").read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1]))
    with pytest.raises(SpecError) as caught:
        check_mapping(read_mapping(path), read_accelerator(DUAL), read_onnx_nodes(ONNX))
    assert message in str(caught.value) and str(path) in str(caught.value)


def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys):
    from cyclesim.cli import main

    path = _system(tmp_path, "  - {type: link, cores: [0, 9], bandwidth: 32}\n")
    code = main(["check", "stream", "--accelerator", str(path), "--workload", str(ONNX)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "core_connectivity[0].cores[1]" in err and str(path) in err


def test_cli_not_onnx_is_exit_2(tmp_path, capsys):
    from cyclesim.cli import main

    bad = tmp_path / "w.onnx"
    bad.write_text("not a model")
    code = main(["check", "stream", "--accelerator", str(DUAL), "--workload", str(bad)])
    assert code == 2 and "not an ONNX model" in capsys.readouterr().err
