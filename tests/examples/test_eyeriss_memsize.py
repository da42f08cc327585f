"""The memsize example: the committed YAML loads, equals the ZigZag converter's import, and replays."""

from __future__ import annotations

import dataclasses
import sys
from math import gcd, prod
from pathlib import Path

import pytest
import yaml

from cyclesim.analysis.simulate import replay
from cyclesim.spec import (
    architecture_from_dict,
    load_architecture,
    mapping_from_dict,
    workload_from_dict,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "eyeriss_memsize"
sys.path.insert(0, str(EXAMPLE))

import memsize  # noqa: E402

# (sram_8KB, sram_64KB, sram_1M) in bits, docs/reference/zigzag.md §6.1
SIZES = {"large": (65536, 524288, 8388608), "small": (8192, 16384, 32768)}


@pytest.mark.parametrize("setting", ["large", "small"])
def test_hw_model_loads_with_the_reference_sizes_and_ports(setting):
    arch = load_architecture(str(memsize.ARCH_FILES[setting]))
    sizes = {m.name: m.size_bits for m in arch.memories}
    assert (sizes["sram_8KB"], sizes["sram_64KB"], sizes["sram_1M"]) == SIZES[setting]
    assert [m.name for m in arch.memories] == [
        "dram", "sram_1M", "sram_64KB", "sram_8KB", "rf_16B", "rf_64B_W", "rf_64B_I",
    ]  # fmt: skip
    widths = {f"{m.name}.{p.name}": p.width_bits for m in arch.memories for p in m.ports}
    assert widths["dram.rw_port_1"] == 64 and widths["rf_64B_I.r_port_1"] == 8
    assert widths["rf_16B.rw_port_1"] == 24 and widths["sram_1M.rw_port_2"] == 384
    # the issue layout: sram_8KB has one port towards sram_1M and one towards the PEs
    assert {p.name for p in arch.memory("sram_8KB").ports} == {"rw_port_1", "rw_port_2"}
    assert (
        arch.memory("sram_64KB").slots_for("W") == 1 and arch.memory("sram_1M").slots_for("I") == 2
    )


@pytest.mark.parametrize("setting", ["large", "small"])
def test_committed_yaml_equals_what_the_zigzag_converter_builds(setting):
    arch, workload, mapping = memsize.load_example(setting)
    spec = memsize.imported_spec(setting)
    assert arch.memories == spec.architecture.memories
    assert arch.pe_array == spec.architecture.pe_array
    assert workload.einsums == spec.workload.einsums and workload.tensors == spec.workload.tensors

    def strip(tree):
        return tuple(dataclasses.replace(n, path="") for n in tree)

    assert strip(mapping.loop_tree) == strip(spec.mapping.loop_tree)


def _scaled(setting: str, size: int):
    """The example's three inputs with B = K = C = size: outermost temporal loops shrunk to fit."""
    arch_d = yaml.safe_load(memsize.ARCH_FILES[setting].read_text())
    work_d = yaml.safe_load(memsize.WORKLOAD_FILE.read_text())
    map_d = yaml.safe_load(memsize.MAPPING_FILES[setting].read_text())
    work_d["einsums"][0]["ranks"] = {r: size for r in work_d["einsums"][0]["ranks"]}
    for rank in ("B", "K", "C"):
        loops = [
            n
            for n in map_d["loop_tree"]
            if n["type"] in ("temporal", "spatial") and n["rank"] == rank
        ]
        excess = prod(n["bound"] for n in loops) // size
        for n in loops:  # outermost first
            if n["type"] == "temporal":
                f = gcd(n["bound"], excess)
                n["bound"] //= f
                excess //= f
        assert excess == 1
    arch = architecture_from_dict(arch_d, "arch.yaml")
    workload = workload_from_dict(work_d, "workload.yaml")
    return arch, workload, mapping_from_dict(map_d, arch, workload, "mapping.yaml")


@pytest.mark.parametrize("setting", ["large", "small"])
def test_scaled_down_example_replays_and_reads_dram_as_the_loop_nest_says(setting):
    res = replay(*_scaled(setting, 20), progress=False)
    assert res.ideal_compute_cycles == 20 * 20 * 20 // 16
    assert (
        res.cycles
        == res.onload_cycles + res.ideal_compute_cycles + res.stall_cycles + res.offload_cycles
    )
    acc = res.accesses.set_index(["tensor", "memory", "action"])["values"]
    # every input value leaves DRAM once in both (the scaled nest has no refetching loop above
    # the SRAMs), every output value is written to DRAM once
    assert acc[("W", "dram", "read")] == acc[("I", "dram", "read")] == 400
    assert acc[("O", "dram", "write")] == 400
    assert set(res.stall_cycles_by_cause()) <= {
        "bandwidth",
        "contention",
        "spatial",
        "latency",
        "buffer_full",
    }


def test_sweep_file_runs_its_sizes_from_the_small_to_the_large_setting():
    """sweep.yaml (replacing the old hand-written loop): 7 sizes per SRAM, small to large,
    geometric and rounded to 128 bytes, each with both of ZigZag's mappings."""
    from cyclesim.analysis.sweep_spec import load_sweep

    spec = load_sweep(EXAMPLE / "sweep.yaml")
    sizes = [v for v in spec.axes[0].values]
    assert len(sizes) == 7 and sizes[0] == SIZES["small"] and sizes[-1] == SIZES["large"]
    for i in range(3):
        assert [p[i] for p in sizes] == sorted(p[i] for p in sizes)
        assert all(p[i] % 1024 == 0 for p in sizes)
    # the middle point: geometric means rounded to 1024 b (8192 * 8^0.5 = 23170.5 -> 23552)
    assert sizes[3] == (23552, 93184, 524288)
    assert len(spec.points()) == 14 and spec.columns_hook[1] == "zigzag_latency"


def test_the_readme_says_which_sram_each_failing_sweep_point_lacks():
    """The README said the large mapping fails 'until sram_64KB holds W'; 4 of its 6 failing
    points fail on sram_1M (I and O double-buffered, 1,280,000 b). Each point's capacity error
    is raised by the plan, before any replay."""
    import re

    import cyclesim
    from cyclesim.analysis.sweep_point import resolve_point
    from cyclesim.analysis.sweep_spec import load_sweep
    from cyclesim.errors import SpecError
    from cyclesim.schedule.plan import build_plan

    spec = load_sweep(EXAMPLE / "sweep.yaml")
    base = dict(
        architecture=cyclesim.load_architecture(str(spec.architecture)),
        workload=cyclesim.load_workload(str(spec.workload)),
    )
    lacking = {}
    for point in spec.points():
        task = resolve_point(spec, point, base)
        try:
            build_plan(task.architecture, task.workload, task.mapping)
        except SpecError as exc:
            assert dict(point.values)["mapping"] == "mapping_large.yaml"
            memory, need = re.search(r"memory '(\w+)' need (\d+) bits", str(exc)).groups()
            lacking[dict(point.values)["size_step"]] = (memory, int(need))
    assert lacking == {
        **{step: ("sram_1M", 1_280_000) for step in range(4)},
        **{step: ("sram_64KB", 320_000) for step in (4, 5)},
    }
    readme = " ".join((EXAMPLE / "README.md").read_text().split())
    assert "at steps 0-3 sram_1M cannot hold I and O double-buffered (1,280,000 b)" in readme
    assert "at steps 4 and 5 sram_64KB cannot hold the whole of W (320,000 b)" in readme
    assert "without it the column is empty" in readme


@pytest.mark.slow
def test_sweep_hook_puts_zigzags_latency_beside_the_replay(tmp_path):
    """The columns hook on the small setting: ZigZag's latency of the same mapping (250,294)."""
    import cyclesim
    from cyclesim.analysis.sweep_point import resolve_point, run_point
    from cyclesim.analysis.sweep_spec import load_sweep

    spec = load_sweep(EXAMPLE / "sweep.yaml")
    point = spec.points()[0]  # small sizes, small mapping
    base = dict(
        architecture=cyclesim.load_architecture(str(spec.architecture)),
        workload=cyclesim.load_workload(str(spec.workload)),
    )
    row = run_point(resolve_point(spec, point, base))
    assert row["status"] == "ok" and row["cycles"] > row["zigzag_latency"] == 250294
    assert row["total_sram_kib"] == 7.0  # 1 KB + 2 KB + 4 KB


@pytest.mark.peer
@pytest.mark.parametrize("setting", ["large", "small"])
def test_zigzag_search_picks_the_committed_mapping(setting, tmp_path):
    pytest.importorskip("zigzag.api", reason="zigzag-dse not importable")
    from cyclesim.checks.zigzag import cases as zc
    from cyclesim.checks.zigzag import peer

    files = memsize.zigzag_case(setting, "issue", tmp_path, temporal_mapping=None)
    result = peer.run_zigzag(files.accelerator, files.workload, files.mapping)
    chosen = {
        op: [[[dim, factor] for dim, factor in level] for level in levels]
        for op, levels in result.temporal_mapping.levels
    }
    assert chosen == zc.MEMSIZE_TEMPORAL_MAPPINGS[setting]
    assert result.latency.latency_total_cycles == {"large": 250148, "small": 250294}[setting]


def test_verdict_names_the_faster_setting_and_both_zigzag_versions():
    from verdict import ZigZagSide, comparison_table, verdict

    from cyclesim.checks.zigzag.model import evaluate
    from cyclesim.checks.zigzag.read import load_zigzag_inputs
    from cyclesim.checks.zigzag.terms import Terms

    results = {s: replay(*_scaled(s, 20), progress=False) for s in ("large", "small")}
    sides = []
    for s in ("large", "small"):
        f = memsize.zigzag_case(s)
        model = Terms.of_model(
            evaluate(load_zigzag_inputs(f.accelerator, f.workload, f.mapping, f.temporal_mapping))
        )
        sides.append(ZigZagSide(s, "issue", model, None, None, ""))
    text = verdict(results, sides)
    fast = "small" if results["small"].cycles < results["large"].cycles else "large"
    assert f"In the replay the {fast} SRAMs finish first" in text
    assert "our reimplementation of ZigZag 3.9.1" in text and "large 250,148, small 250,294" in text
    assert "3.6.3" in text and "small faster by 9,850" in text
    assert "small - large" in comparison_table(results)


@pytest.mark.slow
@pytest.mark.peer
def test_the_readme_sweep_command_writes_table_and_plots(tmp_path, capsys):
    """`cyclesim sweep examples/eyeriss_memsize/sweep.yaml --out DIR` as the README shows it."""
    import pandas as pd

    from cyclesim.cli import main

    assert main(["sweep", str(EXAMPLE / "sweep.yaml"), "--out", str(tmp_path)]) == 0
    assert "14 points (14 computed, 0 from the cache, 6 failed)" in capsys.readouterr().out
    table = pd.read_parquet(tmp_path / "sweep.parquet")
    small = table.query("mapping == 'mapping_small.yaml'")
    # a fixed mapping's tiles do not change with the sizes: the same replay at every size,
    # and ZigZag's latency of that mapping is its 250,294 at every size too
    assert set(small["cycles"]) == {311514} and set(small["zigzag_latency"]) == {250294}
    large = table.query("mapping == 'mapping_large.yaml'")
    # the large mapping keeps all of W (320,000 b) in sram_64KB: only the largest size holds it
    assert large["status"].tolist() == ["error"] * 6 + ["ok"]
    assert large["cycles"].iloc[-1] == 325172 and large["zigzag_latency"].iloc[-1] == 250148
    assert len(list(tmp_path.glob("*.png"))) == 2
