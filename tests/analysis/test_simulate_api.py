"""The Python API (`cyclesim.simulate`, `Result`, spec overrides) on the worked examples."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cyclesim
from cyclesim.errors import SpecError, TraceError
from cyclesim.spec import architecture_from_dict, load_architecture
from cyclesim.spec.override import architecture_to_dict, mapping_to_dict

REPO = Path(__file__).resolve().parents[2]
WORKED = REPO / "tests" / "cases" / "worked"


def inputs(case: str) -> tuple[Path, Path, Path]:
    return tuple(WORKED / case / f"{part}.yaml" for part in ("arch", "workload", "mapping"))


# (case, cycles, onload, ideal compute, stall, offload): the hand-derived numbers of
# tests/test_worked_examples.py, now read through the API
WORKED_TOTALS = [
    ("01_compute_bound", 21, 4, 16, 0, 1),
    ("03_single_buffer", 52, 8, 16, 24, 4),
    ("05_narrow_innermost_port", 38, 5, 8, 24, 1),
    ("05_narrow_innermost_port_reuse_every_other_cycle", 25, 3, 8, 12, 2),
]


@pytest.mark.parametrize("case,cycles,onload,ideal,stall,offload", WORKED_TOTALS)
def test_simulate_from_paths_gives_the_worked_numbers(case, cycles, onload, ideal, stall, offload):
    result = cyclesim.simulate(*inputs(case))
    assert result.cycles == cycles
    phases = dict(zip(result.phases["phase"], result.phases["cycles"], strict=True))
    assert phases == dict(onload=onload, ideal_compute=ideal, stall=stall, offload=offload)
    assert result.phases["cycles"].sum() == result.cycles


def test_simulate_takes_spec_objects_and_paths_alike():
    arch_path, work_path, map_path = inputs("03_single_buffer")
    arch = cyclesim.load_architecture(str(arch_path))
    work = cyclesim.load_workload(str(work_path))
    mapping = cyclesim.load_mapping(str(map_path), arch, work)
    from_objects = cyclesim.simulate(arch, work, mapping)
    from_paths = cyclesim.simulate(arch_path, work_path, map_path)
    assert from_objects.cycles == from_paths.cycles == 52
    assert from_objects.accesses.equals(from_paths.accesses)


def test_result_tables_stalls_accesses_events_and_json(tmp_path):
    result = cyclesim.simulate(*inputs("03_single_buffer"))
    # case 03: every non-compute cycle waits for A's fill through dram_rd (bandwidth): 8 + 24 + 4
    assert result.stalls_by_cause == {"bandwidth": 36}
    assert set(result.stalls["cause"]) == {"bandwidth"}
    dram_a = result.accesses.query("tensor == 'A' and memory == 'DRAM' and action == 'read'")
    assert dram_a["bits"].tolist() == [128]  # 16 values x 8 b
    # events: the run was not traced, so `traced` replays with tracing; 4 fills of A, 4 PE segments
    with pytest.raises(TraceError, match="traced"):
        _ = result.events
    events = cyclesim.traced(result).events
    assert (events["kind"] == "fill").sum() == 4 and (events["kind"] == "compute").sum() == 4
    assert events["end"].max() <= result.cycles
    doc = json.loads(result.to_json(tmp_path / "run.json"))
    assert doc["schema_version"] == 1 and doc["cycles"] == 52
    assert json.loads((tmp_path / "run.json").read_text()) == doc
    vcd, gtkw = cyclesim.write_vcd(result, tmp_path / "run.vcd")
    assert vcd.read_text().startswith("$") and gtkw.is_file()
    (trace, *_) = cyclesim.write_perfetto(result, tmp_path / "run.json.trace")
    assert "traceEvents" in json.loads(trace.read_text())
    assert "52" in cyclesim.report_text(result) and "Result(cycles=52" in repr(result)
    assert cyclesim.traced(result) is cyclesim.traced(result)  # replayed with tracing once
    assert result.energy is None or result.energy is not None  # hook present either way


def test_trace_true_records_during_the_run():
    result = cyclesim.simulate(*inputs("03_single_buffer"), trace=True)
    assert cyclesim.traced(result) is result
    assert len(result.events) == 9  # 4 fills, 4 PE segments, 1 write-back of Z


def test_a_name_the_api_had_before_one_result_type_says_where_it_went():
    result = cyclesim.simulate(*inputs("01_compute_bound"))
    with pytest.raises(AttributeError, match=r"Result\.to_vcd is gone: use cyclesim\.write_vcd"):
        result.to_vcd("run.vcd")
    with pytest.raises(AttributeError, match=r"Result\.sim is gone"):
        result.sim  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'cylces'"):  # a typo: the plain message
        result.cylces  # noqa: B018


def test_with_port_width_changes_the_cycles_as_derived():
    arch_path, work_path, map_path = inputs("03_single_buffer")
    arch = load_architecture(str(arch_path))
    # dram_rd 4 -> 8 b/cycle: each 32-b tile of A fills in 4 cycles, not 8; one slot, so
    # 4 x (fill 4 + compute 4) + Z's drain 4 = 36 cycles (was 4 x (8 + 4) + 4 = 52)
    wider = arch.with_port_width("DRAM", "dram_rd", 8)
    assert wider.memory("DRAM").ports[0].width_bits == 8
    assert arch.memory("DRAM").ports[0].width_bits == 4  # the original is untouched (frozen)
    assert cyclesim.simulate(wider, work_path, map_path).cycles == 36


def test_with_field_revalidates_and_names_the_field():
    arch = load_architecture(str(inputs("03_single_buffer")[0]))
    assert arch.with_field("memories.abuf.size_bits", 64).memory("abuf").size_bits == 64
    with pytest.raises(SpecError, match=r"size_bits.*greater than 0"):
        arch.with_field("memories.abuf.size_bits", -1)
    with pytest.raises(SpecError, match=r"memories.nosuch.*no item of this name.*abuf"):
        arch.with_field("memories.nosuch.size_bits", 64)
    with pytest.raises(SpecError, match="unknown field 'sizebits'"):
        arch.with_field("memories.abuf.sizebits", 64)


def test_mapping_with_field_is_checked_against_the_inputs():
    arch_path, work_path, map_path = inputs("03_single_buffer")
    arch, work = load_architecture(str(arch_path)), cyclesim.load_workload(str(work_path))
    mapping = cyclesim.load_mapping(str(map_path), arch, work)
    loop = next(i for i, n in enumerate(mapping.loop_tree) if hasattr(n, "bound"))
    with pytest.raises(SpecError, match="multiply to"):  # bounds must still cover the rank
        mapping.with_field(f"loop_tree[{loop}].bound", 3, architecture=arch, workload=work)


@pytest.mark.parametrize("path", sorted((REPO / "hw_models").glob("*.yaml")), ids=lambda p: p.stem)
def test_architecture_round_trips_through_its_yaml_form(path):
    """to_dict -> from_dict is the identity: an override changes only the field it names."""
    arch = load_architecture(str(path))
    again = architecture_from_dict(architecture_to_dict(arch), arch.source)
    assert again == arch


def test_mapping_round_trips_through_its_yaml_form():
    from cyclesim.spec import mapping_from_dict

    arch_path, work_path, map_path = inputs("01_compute_bound")
    arch, work = load_architecture(str(arch_path)), cyclesim.load_workload(str(work_path))
    mapping = cyclesim.load_mapping(str(map_path), arch, work)
    again = mapping_from_dict(mapping_to_dict(mapping), arch, work, mapping.source)
    assert replace(again, lines={}) == replace(mapping, lines={})


def test_import_cyclesim_is_cheap():
    """`import cyclesim` loads no pandas, SimPy or pydantic: names come on first use."""
    code = "import sys, cyclesim; print(sorted(m for m in ('pandas', 'simpy', 'pydantic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert "simulate" in dir(cyclesim)
    with pytest.raises(AttributeError):
        cyclesim.no_such_name  # noqa: B018


def test_bad_arguments_are_refused_with_a_message():
    with pytest.raises(cyclesim.CyclesimError, match="reuse"):
        cyclesim.simulate(*inputs("03_single_buffer"), reuse="sometimes")
    with pytest.raises(cyclesim.CyclesimError, match="architecture: expected a path"):
        cyclesim.simulate(42, *inputs("03_single_buffer")[1:])


@pytest.mark.slow
def test_the_api_example_script_runs(tmp_path):
    script = REPO / "examples" / "api" / "simulate.py"
    out = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "cycles" in out.stdout
    assert (tmp_path / "run.vcd").is_file() and (tmp_path / "sweep.csv").is_file()


ARCH_FILES = sorted((REPO / "hw_models").glob("*.yaml"))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), width=st.integers(1, 1 << 16))
def test_with_port_width_changes_that_port_only(data, width):
    """Any port of any shipped architecture: only its width (and a defaulted burst) changes."""
    arch = load_architecture(str(data.draw(st.sampled_from(ARCH_FILES))))
    memory = data.draw(st.sampled_from(arch.memories))
    port = data.draw(st.sampled_from(memory.ports))
    changed = arch.with_port_width(memory.name, port.name, width)
    new_port = next(p for p in changed.memory(memory.name).ports if p.name == port.name)
    assert new_port.width_bits == width
    defaulted = port.burst_bits == port.width_bits
    assert new_port.burst_bits == (width if defaulted else port.burst_bits)
    back = changed.with_port_width(memory.name, port.name, port.width_bits)
    assert replace(back, source=arch.source) == arch  # and back again: nothing else moved
