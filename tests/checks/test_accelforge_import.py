"""AccelForge specs become cyclesim's own validated inputs, and our mapping goes back as LoopTree.

The round trip AccelForge YAML -> cyclesim Mapping -> LoopTree YAML must give the same
AccelForge-convention counts (our model) as the original file, for every spec in the suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cyclesim.checks.accelforge.importer import export_looptree, import_accelforge
from cyclesim.checks.accelforge.model import evaluate_model
from cyclesim.checks.accelforge.read import load_accelforge_spec
from cyclesim.errors import SpecError

SEEDS = (
    Path(__file__).resolve().parents[2] / "examples" / "accelforge_persist"
)  # = examples/accelforge_persist
SPECS = Path(__file__).with_name("accelforge_specs")
ALL_SPECS = sorted(SEEDS.glob("*.yaml")) + sorted(SPECS.glob("*.yaml"))


@pytest.mark.parametrize("spec_file", ALL_SPECS, ids=lambda p: p.stem)
def test_import_then_export_gives_the_same_counts(tmp_path, spec_file):
    spec = load_accelforge_spec([spec_file])
    imported = import_accelforge(spec)
    text = spec_file.read_text()
    again = tmp_path / "again.yaml"
    again.write_text(
        text[: text.index("mapping:")] + export_looptree(imported.mapping, imported.workload)
    )
    assert evaluate_model(load_accelforge_spec([again])).accesses.equals(
        evaluate_model(spec).accesses
    )


def test_fused_seed_imports_as_a_sequential_split_below_the_shared_loop():
    # seed_fused_n1: DRAM keeps everything, n1(16) is shared, SRAM keeps a 16-value AO column.
    imported = import_accelforge(load_accelforge_spec([SEEDS / "seed_fused_n1.yaml"]))
    kinds = [type(node).__name__ for node in imported.mapping.loop_tree]
    assert kinds == ["Storage", "Temporal", "Storage", "Sequential"]
    assert imported.mapping.loop_tree[1].bound == 16
    assert imported.workload.einsum("consumer").inputs[0].tensor == "AO"


def test_unbounded_throughputs_become_explicit_wide_ports_and_are_noted():
    # Seeds: memories have throughput inf; the widest tensor is 16 x 16 x 8 = 2048 bits, so
    # every port moves 2048 bits/cycle; the MAC runs 1 per cycle as in AccelForge.
    imported = import_accelforge(load_accelforge_spec([SEEDS / "seed_repro.yaml"]))
    assert {p.width_bits for m in imported.architecture.memories for p in m.ports} == {2048}
    assert any("unbounded throughput" in note for note in imported.notes)
    assert imported.architecture.pe_array.macs_per_pe_per_cycle == 1


def test_memories_below_the_pe_container_are_per_pe():
    imported = import_accelforge(load_accelforge_spec([SPECS / "matmul_spatial_4x4.yaml"]))
    shared = {m.name: m.shared_across for m in imported.architecture.memories}
    assert shared == {"DRAM": ("X", "Y"), "GLB": ("X", "Y"), "Reg": ()}


def test_pipeline_split_is_refused_by_name(tmp_path):
    text = (SEEDS / "seed_ao_above_split.yaml").read_text().replace("!Sequential", "!Pipeline")
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match="!Pipeline splits are not supported by the replay"):
        import_accelforge(load_accelforge_spec([path]))


def test_the_imported_architecture_declares_accelforges_joules():
    # AccelForge's energies (a spec's own and hwcomponents' models') are joules: the replay's
    # energies are printed in J, and the sweep's energy_pj is 10**12 times them
    imported = import_accelforge(load_accelforge_spec([SPECS / "matmul_3level.yaml"]))
    assert imported.architecture.energy_unit == "J"
