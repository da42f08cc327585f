"""Per-action costs an AccelForge spec leaves to its component classes (hwcomponents models).

The reader takes them from a provider (in the check: the real accelforge, asked once per spec);
here a hand-written provider stands in for it, so the arithmetic can be derived by hand.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from cyclesim.checks.accelforge.read import load_accelforge_spec
from cyclesim.checks.accelforge.spec import AfActionCost
from cyclesim.errors import PeerUnavailable, SpecError

BASE = (Path(__file__).with_name("accelforge_specs") / "matmul_3level.yaml").read_text()

# GLB: energy and throughput from its class's model; the shared-port total_latency of eyeriss's
# GlobalBuffer form on DRAM; MAC from a model as well.
MODELLED = (
    BASE.replace(
        """    actions:
    - {name: read, energy: 5, throughput: 256}
    - {name: write, energy: 5, throughput: 256}""",
        """    component_class: SmartBufferSRAM
    extra_attributes_for_component_model: {n_banks: 2}""",
    )
    .replace(
        """    - {name: read, energy: 100, throughput: 64}
    - {name: write, energy: 100, throughput: 64}""",
        """    - {name: read, energy: 100, bits_per_action: 64}
    - {name: write, energy: 100, bits_per_action: 64}
    total_latency: sum(a.n_calls for a in actions) / 2 / 200e6""",
    )
    .replace(
        """    - {name: compute, energy: 1, throughput: 1}""",
        """    - {name: compute}
    component_class: IntMAC""",
    )
)

COSTS = {
    "GLB": {
        "read": AfActionCost(energy=2e-14, throughput=51.2e9, model="SmartBufferSRAM"),
        "write": AfActionCost(energy=3e-14, throughput=51.2e9, model="SmartBufferSRAM"),
    },
    "MAC": {"compute": AfActionCost(energy=1e-12, throughput=200e6, model="AladdinIntMAC")},
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def test_model_costs_are_used_and_per_second_throughputs_become_per_cycle(tmp_path):
    asked = []

    def provider():
        asked.append(1)
        return COSTS

    spec = load_accelforge_spec([_write(tmp_path, MODELLED)], component_costs=provider)
    assert asked == [1]  # once per spec, however many actions need it
    arch = spec.arch
    # The clock is the compute's rate, 200e6 actions/s, so the MAC does 1 a cycle.
    assert arch.clock_hz == 200e6
    assert arch.compute.throughput_computes_per_cycle == 1
    assert arch.compute.energy_per_compute == 1e-12
    glb = arch.node("GLB")
    # 51.2e9 reads/s at 200 MHz = 256 reads a cycle; energies as the model gives them
    assert glb.action("read").throughput_actions_per_cycle == pytest.approx(256)
    assert (glb.action("read").energy_per_action, glb.action("write").energy_per_action) == (
        2e-14,
        3e-14,
    )
    assert "SmartBufferSRAM" in glb.action("read").energy_source
    # DRAM: sum(n_calls) / 2 / 200e6 s = a port shared by reads and writes at 400e6 actions/s,
    # 2 a cycle; its energies are the spec's own
    dram = arch.node("DRAM")
    assert dram.action("write").throughput_actions_per_cycle == pytest.approx(2)
    assert dram.action("read").energy_per_action == 100
    assert dram.action("read").energy_source == "the spec"


def test_without_a_provider_the_class_is_named_with_file_and_line(tmp_path):
    path = _write(tmp_path, MODELLED)
    with pytest.raises(SpecError, match="component class 'SmartBufferSRAM'") as error:
        load_accelforge_spec([path])
    assert error.value.file == str(path) and error.value.line is not None


def test_no_accelforge_environment_is_a_spec_error_saying_how_to_get_one(tmp_path):
    def provider():
        raise PeerUnavailable("no AccelForge environment: run `make peers`")

    with pytest.raises(SpecError, match="make peers"):
        load_accelforge_spec([_write(tmp_path, MODELLED)], component_costs=provider)


def test_a_spec_that_states_every_cost_never_asks(tmp_path):
    def provider():
        raise AssertionError("asked for component costs the spec states itself")

    spec = load_accelforge_spec([_write(tmp_path, BASE)], component_costs=provider)
    assert spec.arch.clock_hz is None
    assert spec.arch.node("GLB").action("read").throughput_actions_per_cycle == 256


def test_component_energy_scale_multiplies_every_action(tmp_path):
    text = BASE.replace("    name: GLB\n", "    name: GLB\n    energy_scale: 3\n")
    spec = load_accelforge_spec([_write(tmp_path, text)])
    # AccelForge: energy 5 x component energy_scale 3
    assert spec.arch.node("GLB").action("write").energy_per_action == 15


def test_fanout_reuse_is_the_default_of_may_reuse(tmp_path):
    spatial = BASE.replace(
        "  - !Memory\n    name: Reg\n",
        "  - !Container\n    name: PE\n    spatial:\n"
        "    - {name: X, fanout: 4, reuse: B, min_usage: 1}\n"
        "    - {name: Y, fanout: 2}\n"
        "  - !Memory\n    name: Reg\n",
    )
    spec = load_accelforge_spec([_write(tmp_path, spatial)])
    container = spec.arch.node("PE")
    # AccelForge: may_reuse defaults to `reuse` when given, else All
    assert container.dimension("X").may_reuse_expression == "B"
    assert container.dimension("Y").may_reuse_expression == "All"


def test_a_model_throughput_with_an_unbounded_compute_has_no_clock(tmp_path):
    costs = {**COSTS, "MAC": {"compute": AfActionCost(0.0, math.inf, None)}}
    with pytest.raises(SpecError, match="no finite rate to serve as the clock"):
        load_accelforge_spec([_write(tmp_path, MODELLED)], component_costs=lambda: costs)


def test_throughputs_per_second_are_read_per_cycle_of_the_compute(tmp_path):
    # nvdla's convention: the MAC does 1e9 computes a second, GLB reads 4096e9 bits a second
    text = BASE.replace("throughput: 1}", "throughput: 1e9}").replace(
        "energy: 5, throughput: 256}", "energy: 5, throughput: 256e9}"
    )
    spec = load_accelforge_spec([_write(tmp_path, text)])
    assert spec.arch.clock_hz == 1e9
    assert spec.arch.compute.throughput_computes_per_cycle == 1
    assert spec.arch.node("GLB").action("read").throughput_actions_per_cycle == 256
    # DRAM's 64 a "second" would be 64e-9 a cycle: the same unit for every component
    assert spec.arch.node("DRAM").action("read").throughput_actions_per_cycle == 64e-9


TWO_EINSUMS = """
workload:
  iteration_space_shape: {m: 0 <= m < 1, k: 0 <= k < 1, n: 0 <= n < 1}  # no loops needed
  bits_per_value: {All: 8}
  einsums:
  - name: first
    tensor_accesses:
    - {name: A, projection: [m, k]}
    - {name: B, projection: [k, n]}
    - {name: Z, projection: [m, n], output: True}
    renames: {weight: B}
  - name: second
    tensor_accesses:
    - {name: Z, projection: [m, n]}
    - {name: C, projection: [m, n], output: True}
    renames: {weight: Nothing}
"""


def _sized(tmp_path: Path, size: str) -> Path:
    arch = BASE[: BASE.index("workload:")].replace("    size: 64\n", f"    size: {size}\n")
    mapping = """
mapping:
  nodes:
  - !Storage {tensors: [A, B, Z, C], component: DRAM}
  - !Sequential
    nodes:
    - !Nested {nodes: [!Compute {einsum: first, component: MAC}]}
    - !Nested {nodes: [!Compute {einsum: second, component: MAC}]}
"""
    return _write(tmp_path, arch + TWO_EINSUMS + mapping)


def test_a_register_sized_by_a_tensor_set_gets_its_bits_per_value(tmp_path):
    # `first` renames weight -> B (8 bits); `second` has an empty weight, so the default 8 applies:
    # both give 8, the one size of the replay's Reg
    spec = load_accelforge_spec([_sized(tmp_path, "weight.bits_per_value if weight else 8")])
    assert spec.arch.node("Reg").size_bits == 8


def test_a_tensor_set_size_that_differs_between_einsums_is_refused(tmp_path):
    path = _sized(tmp_path, "weight.bits_per_value if weight else 1")
    with pytest.raises(SpecError, match="the size differs between Einsums") as error:
        load_accelforge_spec([path])
    assert error.value.line is not None and "Reg" in error.value.field


SCALAR_UNIT = """  - !Compute
    name: ScalarUnit
    actions:
    - {name: compute, energy: 0, throughput: 128}
    enabled: ENABLED
  - !Memory
    name: Reg
"""


def test_a_component_enabled_for_no_einsum_is_left_out(tmp_path):
    # tpu_v4i's ScalarUnit: enabled for two-tensor Einsums; the matmul has three (A, B, Z)
    text = BASE.replace("  - !Memory\n    name: Reg\n", SCALAR_UNIT, 1)
    spec = load_accelforge_spec([_write(tmp_path, text.replace("ENABLED", "len(All) == 2"))])
    assert [node.name for node in spec.arch.nodes] == ["DRAM", "GLB", "Reg", "MAC"]
    kept = load_accelforge_spec(
        [_write(tmp_path, BASE.replace("    name: GLB\n", "    name: GLB\n    enabled: True\n"))]
    )
    assert "GLB" in [node.name for node in kept.arch.nodes]


def test_enabled_that_differs_between_einsums_is_refused_with_the_line(tmp_path):
    text = (
        _sized(tmp_path, "8")
        .read_text()
        .replace("    name: GLB\n", "    name: GLB\n    enabled: len(All) == 3 and not False\n")
    )
    path = _write(tmp_path, text)
    with pytest.raises(SpecError, match="enabled: differs between Einsums") as error:
        load_accelforge_spec([path])
    # first: A, B, Z (3 tensors); second: Z, C (2)
    assert "'first': True, 'second': False" in str(error.value)
    assert error.value.line is not None


def test_enabled_with_a_call_other_than_len_is_refused_by_name(tmp_path):
    text = BASE.replace("    name: GLB\n", "    name: GLB\n    enabled: open('x') == 1\n")
    with pytest.raises(SpecError, match="enabled: uses a construct this reader does not evaluate"):
        load_accelforge_spec([_write(tmp_path, text)])


def test_component_costs_are_cached_per_spec_on_disk(tmp_path, monkeypatch):
    """The models run CACTI (seconds per component): asked once per spec, then read back."""
    import sys

    from cyclesim.checks.accelforge import peer

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(peer, "accelforge_python", lambda: Path(sys.executable))
    monkeypatch.setattr(peer, "_COSTS", {})
    runs = []
    payload = {
        "components": [
            {
                "name": "GLB",
                "model": "SmartBufferSRAM",
                "actions": [{"name": "read", "energy": 2e-14, "throughput": 51.2e9}],
            }
        ]
    }

    def run(python, arguments, files, timeout_seconds):
        runs.append(arguments)
        return payload

    monkeypatch.setattr(peer, "_run_runner", run)
    spec = _write(tmp_path, MODELLED)
    first = peer.component_costs([spec], {"M": 8})
    monkeypatch.setattr(peer, "_COSTS", {})  # a new process: only the disk cache is left
    again = peer.component_costs([spec], {"M": 8})
    assert len(runs) == 1 and "--component-costs" in runs[0]
    assert first == again == {"GLB": {"read": AfActionCost(2e-14, 51.2e9, "SmartBufferSRAM")}}
    peer.component_costs([spec], {"M": 16})  # other Jinja data: another spec
    assert len(runs) == 2


SPATIAL = (Path(__file__).with_name("accelforge_specs") / "matmul_spatial_4x4.yaml").read_text()
# tpu_v4i's LocalBuffer: a fan-out written as `spatial:` on a memory, above the PE array
TWO_FANOUTS = SPATIAL.replace(
    "    name: GLB\n", "    name: GLB\n    spatial: [{name: Z, fanout: 2, may_reuse: Nothing}]\n"
)


def test_a_fanout_no_spatial_loop_uses_is_one_instance_and_the_counts_still_match(tmp_path):
    from cyclesim.checks.accelforge.importer import import_accelforge

    spec = load_accelforge_spec([_write(tmp_path, TWO_FANOUTS)])
    imported = import_accelforge(spec)
    assert {name for name, _ in imported.architecture.pe_array.dims} == {"X", "Y"}  # in use
    assert any("GLB (spatial): a fan-out no !Spatial loop uses" in n for n in imported.notes)


def test_a_mapping_using_two_fanouts_is_refused_naming_the_second_with_its_line(tmp_path):
    from cyclesim.checks.accelforge.importer import import_accelforge

    text = TWO_FANOUTS.replace(
        "  - !Storage {tensors: [A], component: GLB}\n",
        "  - !Spatial {rank_variable: m, tile_shape: 16, name: Z, component: GLB}\n"
        "  - !Storage {tensors: [A], component: GLB}\n",
    )
    spec = load_accelforge_spec([_write(tmp_path, text)])
    with pytest.raises(SpecError, match="two fan-outs") as error:
        import_accelforge(spec)
    assert error.value.line is not None


def test_a_per_memory_bits_per_value_is_refused_where_the_mapping_keeps_the_tensor(tmp_path):
    # simba's AccumulationBuffer: outputs at 3x their bits. BASE's mapping keeps Z in GLB.
    text = BASE.replace(
        "    name: GLB\n", "    name: GLB\n    bits_per_value: {Z: 3 * Z.bits_per_value}\n"
    )
    with pytest.raises(SpecError, match="GLB stores Z at its own bits per value") as error:
        load_accelforge_spec([_write(tmp_path, text)])
    assert error.value.line is not None and error.value.field.endswith("bits_per_value")


def test_a_per_memory_bits_per_value_for_tensors_the_memory_never_keeps_is_accepted(tmp_path):
    # BASE's mapping keeps Z and A in Reg, never B
    text = BASE.replace(
        "    name: Reg\n", "    name: Reg\n    bits_per_value: {B: 3 * B.bits_per_value}\n"
    )
    assert load_accelforge_spec([_write(tmp_path, text)]).arch.node("Reg").bits_per_value_overrides
