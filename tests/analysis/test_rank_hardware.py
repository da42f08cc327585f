"""`cyclesim rank zigzag-hardware`: the rank file (sweep axes over a ZigZag accelerator), the
variants it writes, and the two orders of the variants."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from cyclesim.analysis.rank_hardware import load_hardware_rank, order_summary
from cyclesim.checks.zigzag.variants import apply_settings
from cyclesim.cli import main
from cyclesim.errors import SpecError

EXAMPLE = Path(__file__).parents[2] / "examples" / "rank"


def _copy_example(tmp_path: Path, axes: str, top: int = 3) -> Path:
    for f in EXAMPLE.glob("eyeriss4x4_*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    path = tmp_path / "rank.yaml"
    path.write_text(
        "accelerator: eyeriss4x4_accelerator.yaml\nworkload: eyeriss4x4_workload.yaml\n"
        f"mapping: eyeriss4x4_mapping.yaml\ntop: {top}\naxes:\n{axes}"
    )
    return path


def test_sweep_fields_set_the_zigzag_fields_they_came_from():
    acc = yaml.safe_load((EXAMPLE / "eyeriss4x4_accelerator.yaml").read_text())
    out = apply_settings(acc, (
        ("architecture.memories.sram_8KB.size_bits", 4096),
        ("architecture.memories.dram.ports.rw_port_1.width_bits", 128),
        ("architecture.memories.sram_1M.ports.rw_port_1.latency", 3),
        ("architecture.pe_array.dims.D2", 8),
    ), "acc.yaml")  # fmt: skip
    assert out["memories"]["sram_8KB"]["size"] == 4096
    port = out["memories"]["dram"]["ports"][0]
    assert port["bandwidth_min"] == port["bandwidth_max"] == 128
    assert out["memories"]["sram_1M"]["latency"] == 3
    assert out["operational_array"]["sizes"] == [4, 8]
    assert acc["memories"]["sram_8KB"]["size"] != 4096  # the base is not changed


def test_a_field_without_a_zigzag_counterpart_is_refused_with_its_line(tmp_path):
    # line 6 of the file: accelerator, workload, mapping, top, axes, then the axis
    path = _copy_example(tmp_path, "  - field: architecture.memories.nope.size_bits\n"
                                   "    values: [1, 2]\n")  # fmt: skip
    with pytest.raises(SpecError) as info:
        load_hardware_rank(path)
    text = str(info.value)
    assert "rank.yaml:6" in text and "no memory 'nope'" in text and "axes[0]" in text


def test_a_mapping_axis_is_refused_hardware_only(tmp_path, capsys):
    path = _copy_example(tmp_path, "  - field: mapping\n    values: [a.yaml]\n")
    assert main(["rank", "zigzag-hardware", str(path)]) == 2
    assert "an architecture.PATH field" in capsys.readouterr().err


def test_order_summary_by_hand():
    # ZigZag's totals 10 < 12 < 15 prefer variant 0; the replays 30, 20, 40 prefer variant 1:
    # pairs (0,1) discordant, (0,2) concordant, (1,2) concordant: tau = (2 - 1) / 3;
    # regret of ZigZag's choice 30 / 20 - 1 = 50 %
    df = pd.DataFrame({"variant": [0, 1, 2], "peer_picks": [10, 12, 15],
                       "pick_replay": [30, 20, 40]})  # fmt: skip
    s = order_summary(df)
    assert (s["peer_choice"], s["replay_choice"]) == (0, 1)
    assert s["tau"] == pytest.approx(1 / 3) and s["regret"] == pytest.approx(0.5)
    assert not math.isnan(s["rho"])


@pytest.mark.peer
def test_the_example_ranks_every_variant(tmp_path, capsys):
    from cyclesim.checks.zigzag import peer
    from cyclesim.errors import PeerUnavailable

    try:
        peer.zigzag_version()
    except PeerUnavailable as exc:
        pytest.skip(str(exc))
    path = _copy_example(tmp_path, "  - field: architecture.memories.dram.ports.rw_port_1.width_bits\n"
                                   "    values: [16, 64]\n")  # fmt: skip
    out = tmp_path / "out"
    args = ["rank", "zigzag-hardware", str(path), "--out", str(out), "--cache", str(tmp_path / "c")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "2 variants: zigzag-dse prefers variant" in text
    df = pd.read_csv(out / "hardware.csv")
    assert list(df["dram.rw_port_1.width_bits"]) == [16, 64]
    assert (df["layers_ranked"] == 1).all()
    # a narrower DRAM port is slower in both models
    assert df["peer_picks"][0] > df["peer_picks"][1] and df["pick_replay"][0] > df["pick_replay"][1]
