"""AccelForge's own shipped examples, as a user would pass them to `cyclesim check accelforge`.

The matrix: every shipped mapping (examples/mappings) on the arch and workload it is written
for (simple_fused.yaml names components of an arch that is not shipped — OffChipBuffer,
OnChipBuffer, ComputeUnit — so accelforge cannot evaluate it either), and the fan-out arches (examples/arches/fanout_variations: `spatial:` on a !Memory, on the
!Compute, or as a !Container) with the mappings accelforge's mapper chose for them (kept in
accelforge_examples/). Templates get small sizes through --jinja-data; everything else is
AccelForge's defaults. For each: it imports; under --isolate-einsums --reuse strict the replay's
bits equal accelforge's on every row and its energy on every row; on the fan-out arches the
replay's compute cycles equal AccelForge's latency and nothing stalls (unbounded throughput
is unbounded), the remaining cycles being the named fill of the first tiles and the drain.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from cyclesim import cli
from cyclesim.checks.accelforge import peer
from cyclesim.checks.accelforge.check import run_check
from cyclesim.checks.accelforge.rows import FLOAT32_TOLERANCE
from cyclesim.errors import PeerUnavailable, SpecError


def _examples() -> Path | None:
    try:
        return peer.accelforge_examples()
    except PeerUnavailable:
        if os.environ.get(peer.ENVIRONMENT_VARIABLE):  # CI: the environment must be there
            raise
        return None


EXAMPLES = _examples()
OURS = Path(__file__).with_name("accelforge_examples")
MATMULS = {"N_EINSUMS": 2, "M": 8, "KN": 8}
ONE_MATMUL = {"N_EINSUMS": 1, "M": 16, "KN": 16}

# (id, arch, workload, mapping, jinja data, fan-out arch)
CASES = (
    [
        (m.stem, "arches/simple.yaml", f"workloads/{wl}.yaml", f"mappings/{m.name}", data, False)
        for m, wl, data in [
            (Path("unfused_matmuls_to_simple.yaml"), "matmuls", MATMULS),
            (Path("fused_matmuls_to_simple.yaml"), "matmuls", MATMULS),
            (Path("unfused_matvecs_to_simple.yaml"), "matvecs", {}),
            (Path("fused_matvecs_to_simple_untiled.yaml"), "matvecs", {}),
            (Path("fused_matvecs_to_simple_tiled.yaml"), "matvecs", {}),
            (Path("fused_matvecs_to_simple_tiled_reuse_A.yaml"), "matvecs", {}),
        ]
    ]
    + [
        # snowcat: hwcomponents' Dummy class, actions without throughput (unbounded) or energy (0)
        (
            "snowcat+unfused_matmuls_to_simple",
            "arches/snowcat.yaml",
            "workloads/matmuls.yaml",
            "mappings/unfused_matmuls_to_simple.yaml",
            MATMULS,
            False,
        )
    ]
    + [
        # nvdla: throughputs per second (MAC 1e9), a separate-ports total_latency, a Register
        # sized `weight.bits_per_value if weight else 1` over the Einsum's renames, Dummy
        (
            "nvdla+unfused_matmuls_to_simple",
            "arches/nvdla.yaml",
            "workloads/matmuls.yaml",
            "mappings/unfused_matmuls_to_simple.yaml",
            MATMULS,
            False,
        ),
        (
            "nvdla+nvdla_matmul16",
            "arches/nvdla.yaml",
            "workloads/matmuls.yaml",
            OURS / "nvdla_matmul16.yaml",
            ONE_MATMUL,
            False,
        ),
    ]
    + [
        # tpu_v4i: `enabled: len(All) == 3` picks the MAC array over the ScalarUnit,
        # `keep: ~MainMemory.tensors`, a fan-out on LocalBuffer no loop of this mapping uses
        (
            "tpu_v4i+unfused_matmuls_to_simple",
            "arches/tpu_v4i.yaml",
            "workloads/matmuls.yaml",
            "mappings/unfused_matmuls_to_simple.yaml",
            MATMULS,
            False,
        ),
    ]
    + [
        # simba: costs from hwcomponents; two fan-outs and an AccumulationBuffer with its own
        # bits_per_value, none of which this mapping uses; a Register sized by weight's bits
        (
            "simba+unfused_matmuls_to_simple",
            "arches/simba.yaml",
            "workloads/matmuls.yaml",
            "mappings/unfused_matmuls_to_simple.yaml",
            MATMULS,
            False,
        ),
    ]
    + [
        # eyeriss: every action's energy (and the scratchpads' throughput) from hwcomponents
        # models (LPDDR4, SmartBufferSRAM on CACTI, Aladdin's IntMAC) through the real
        # accelforge; `total_latency` as a shared port in seconds; fan-outs with `reuse:`
        (
            "eyeriss+unfused_matmuls_to_simple",
            "arches/eyeriss.yaml",
            "workloads/matmuls.yaml",
            "mappings/unfused_matmuls_to_simple.yaml",
            MATMULS,
            False,
        ),
        (
            "eyeriss+eyeriss_matmul16",
            "arches/eyeriss.yaml",
            "workloads/matmuls.yaml",
            OURS / "eyeriss_matmul16.yaml",
            ONE_MATMUL,
            False,
        ),
    ]
    + [
        (
            f"{arch}+{mapping}",
            f"arches/fanout_variations/{arch}.yaml",
            "workloads/matmuls.yaml",
            OURS / f"{mapping}.yaml",
            ONE_MATMUL,
            True,
        )
        for arch, mapping in [
            ("at_glb", "at_glb_matmul16"),
            ("at_glb_with_fanout_node", "at_glb_with_fanout_node_matmul16"),
            ("at_mac", "at_mac_matmul16"),
            ("at_mac", "at_mac_spatial_matmul16"),
            ("at_mac_with_fanout_node", "at_mac_matmul16"),
            ("at_mac_with_constraints", "at_mac_matmul16"),
        ]
    ]
)
# Arches whose costs come from hwcomponents models need the real accelforge even to import.
NEEDS_MODELS = ("eyeriss", "simba")
PARAMS = [
    pytest.param(
        *case[1:], id=case[0], marks=pytest.mark.peer if case[0].startswith(NEEDS_MODELS) else ()
    )
    for case in CASES
]

pytestmark = pytest.mark.skipif(
    EXAMPLES is None, reason="no AccelForge environment with its shipped examples (make peers)"
)


def _files(arch: str, workload: str, mapping) -> list[Path]:
    return [EXAMPLES / arch, EXAMPLES / workload, EXAMPLES / mapping]


def _check(files, data, use_peer: bool):
    return run_check(
        files, reuse="strict", isolate_einsums=True, use_peer=use_peer, jinja_data=data
    )


@pytest.mark.parametrize(("arch", "workload", "mapping", "data", "fanout"), PARAMS)
def test_shipped_example_imports_and_the_isolated_strict_replay_equals_our_model(
    arch, workload, mapping, data, fanout
):
    check, _ = _check(_files(arch, workload, mapping), data, use_peer=False)
    assert check.accesses and check.energy
    assert all(a.replay_bits == a.model_bits for a in check.accesses)
    assert all(e.equal for e in check.energy)


@pytest.fixture(scope="module")
def accelforge_present():
    try:
        peer.accelforge_python()
    except PeerUnavailable as error:
        if os.environ.get(peer.ENVIRONMENT_VARIABLE):
            raise
        pytest.skip(f"accelforge unavailable: {error}")


@pytest.mark.peer
@pytest.mark.parametrize(("arch", "workload", "mapping", "data", "fanout"), PARAMS)
def test_shipped_example_equals_accelforge_on_every_row_and_energy(
    accelforge_present, arch, workload, mapping, data, fanout
):
    check, _ = _check(_files(arch, workload, mapping), data, use_peer=True)
    assert check.accelforge_version == "1.0.467"
    assert {a.key: a.replay_bits for a in check.accesses} == {
        a.key: a.accelforge_bits for a in check.accesses
    }
    # equal to accelforge's precision: it reports float32 (rows.FLOAT32_TOLERANCE)
    assert [e for e in check.energy if not e.equal] == []
    assert check.energy_total("replay") == pytest.approx(
        check.energy_total("accelforge"), rel=FLOAT32_TOLERANCE, abs=0
    )
    if fanout:
        # Unbounded throughput is unbounded: nothing stalls and the compute takes AccelForge's
        # latency; the replay adds only the fill of the first tiles (one cycle per level) and the
        # final write-back, which AccelForge does not model and the check's sentence names.
        lat = check.latency
        assert lat.stall_cycles == 0
        assert lat.ideal_compute_cycles == lat.accelforge_cycles
        assert (lat.onload_cycles, lat.offload_cycles) == (2, 1)
        assert any("perfect overlap with no fill or drain" in s for s in check.explanations)


def test_template_without_its_jinja_data_names_the_variable_and_how_to_give_it(capsys):
    files = _files(
        "arches/simple.yaml", "workloads/matmuls.yaml", "mappings/unfused_matmuls_to_simple.yaml"
    )
    assert cli.main(["check", "accelforge", *map(str, files), "--no-peer"]) == 2
    err = capsys.readouterr().err
    assert "matmuls.yaml" in err and "'N_EINSUMS' is undefined" in err
    assert "--jinja-data NAME=VALUE" in err and "Traceback" not in err


def test_jinja_data_from_a_file_and_name_value_later_wins(tmp_path, capsys):
    data = tmp_path / "sizes.yaml"
    data.write_text("N_EINSUMS: 2\nM: 64\nKN: 8\n")
    files = _files(
        "arches/simple.yaml", "workloads/matmuls.yaml", "mappings/unfused_matmuls_to_simple.yaml"
    )
    argv = ["check", "accelforge", *map(str, files), "--no-peer", "--json"]
    assert cli.main([*argv, "--jinja-data", str(data), "--jinja-data", "M=8"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)["accesses"]
    # M = KN = 8 at 8 bits: MainMemory reads T0 (8 x 8 values) once = 512 bits
    assert {"einsum": "Matmul0", "memory": "MainMemory", "tensor": "T0", "action": "read"} in [
        {k: r[k] for k in ("einsum", "memory", "tensor", "action")} for r in rows
    ]
    t0 = next(r for r in rows if r["memory"] == "MainMemory" and r["tensor"] == "T0")
    assert t0["replay_bits"] == 512


def test_bad_jinja_data_exits_2(capsys):
    files = _files(
        "arches/simple.yaml", "workloads/matmuls.yaml", "mappings/unfused_matmuls_to_simple.yaml"
    )
    argv = ["check", "accelforge", *map(str, files), "--no-peer", "--jinja-data", "no-such-file"]
    assert cli.main(argv) == 2
    assert "--jinja-data is neither NAME=VALUE nor a file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arch", "mapping", "data", "message"),
    [
        # the compute-in-memory arches: accelforge's own Spec.from_yaml refuses them too (YAML
        # anchor keys at the top level; its examples load them through _load_spec.py); the key
        # comes from include_text('_include.yaml') on line 3, or albireo's own on line 21
        (
            "compute_in_memory/basic_analog.yaml",
            EXAMPLES / "mappings/unfused_matmuls_to_simple.yaml" if EXAMPLES else None,
            MATMULS,
            "unknown top-level key 'input_sliced'",
        ),
        (
            "compute_in_memory/albireo_isca_2021.yaml",
            EXAMPLES / "mappings/unfused_matmuls_to_simple.yaml" if EXAMPLES else None,
            MATMULS,
            "unknown top-level key 'input_sliced'",
        ),
        # simba with the mapping accelforge's mapper picks: outputs kept in the
        # AccumulationBuffer at 3x their bits (a per-memory bits_per_value; its costs come
        # from hwcomponents through the real accelforge before the mapping is read)
        pytest.param(
            "simba.yaml",
            OURS / "simba_matmul16.yaml",
            ONE_MATMUL,
            "AccumulationBuffer stores T1 at its own bits per value (3 * output.bits_per_value)",
            marks=pytest.mark.peer,
        ),
    ],
)
def test_arches_left_out_are_refused_by_name_with_file_and_line(arch, mapping, data, message):
    files = [EXAMPLES / "arches" / arch, EXAMPLES / "workloads/matmuls.yaml", mapping]
    with pytest.raises(SpecError, match=re.escape(message)) as error:
        run_check(files, use_peer=False, jinja_data=data)
    assert error.value.file == str(files[0]) and error.value.line is not None


@pytest.mark.peer
def test_check_output_says_where_each_energy_came_from(accelforge_present, capsys):
    """The default CLI path on eyeriss: energies from hwcomponents models, named per action,
    and AccelForge's latency (seconds, per-second throughputs) in cycles of the MAC's clock."""
    files = _files("arches/eyeriss.yaml", "workloads/matmuls.yaml", OURS / "eyeriss_matmul16.yaml")
    data = [f"--jinja-data={k}={v}" for k, v in ONE_MATMUL.items()]
    argv = ["check", "accelforge", *map(str, files), *data, "--isolate-einsums"]
    assert cli.main([*argv, "--reuse", "strict"]) == 0
    out = capsys.readouterr().out
    assert "per-action energies from:" in out
    assert (
        "hwcomponents model SmartBufferSRAM for component class SmartBufferSRAM (via accelforge): "
        "GlobalBuffer read, GlobalBuffer write, InputScratchpad read" in out
    )
    assert "hwcomponents model AladdinIntMAC for component class IntMAC" in out
    assert (
        "throughput per second at a 2e+08 Hz clock, the compute's rate" in out
    )  # MAC total_latency: n / 200e6 s
    assert "  *" not in out.split("per-action energies from:")[0]  # every row and energy equal


def test_an_empty_spec_file_says_it_is_empty(tmp_path, capsys):
    # it read "the top level is not a mapping (found 'NoneType')"
    (tmp_path / "spec.yaml").write_text("# nothing yet\n")
    assert cli.main(["check", "accelforge", str(tmp_path / "spec.yaml"), "--no-peer"]) == 2
    err = capsys.readouterr().err
    assert "spec.yaml: the file is empty; expected keys such as arch:, workload:, mapping:" in err
