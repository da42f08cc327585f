"""Invariants of the chip replay, over random small chips and mappings: every core's compute
and causes add up to the chip's cycles; a 1-core chip is today's single-core replay, bit for
bit; the same inputs give the same run."""

from __future__ import annotations

from chip_helpers import TINY_CORE, assert_sums, chip_runs, einsum, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cyclesim.analysis.simulate import replay
from cyclesim.chip import chip_from_dict, chip_mapping_from_dict
from cyclesim.chip.api import replay_chip
from cyclesim.spec import architecture_from_dict, mapping_from_dict, workload_from_dict

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(chip_runs())
def test_every_core_cycle_is_compute_or_one_cause(case):
    chip, einsums, layers, tensors, groups = case
    res = run(chip, einsums, layers, tensors, groups)
    assert_sums(res)
    for r in res.rows:
        assert r.cycles > 0 and r.cause
    # the links, buses and DRAM port never hold two bursts at once, and moved every bit
    for key, grants in res.run.grants.items():
        assert all(a[1] <= b[0] for a, b in zip(grants, grants[1:], strict=False)), key
    moved = sum(h.bits for h in res.run.plan.hops)
    assert sum(p.bits for p in res.ports if p.kind != "dram_port") == moved
    again = run(chip, einsums, layers, tensors, groups)
    assert again.to_json_dict() | {"wall_seconds": 0} == res.to_json_dict() | {"wall_seconds": 0}


@st.composite
def one_core_cases(draw):
    sizes = {r: draw(st.integers(1, 5)) for r in ("m", "n", "k")}
    order = draw(st.permutations(["m", "n", "k"]))
    width = draw(st.sampled_from([8, 16, 24, 1024]))
    latency = draw(st.integers(0, 3))
    return sizes, order, width, latency


@FAST
@given(one_core_cases())
def test_one_core_chip_is_the_single_core_replay(case):
    """One core, one layer, one step, every tensor resident: the chip's cycles, compute and
    causes are the single-core replay's, bit for bit."""
    sizes, order, width, latency = case
    core = dict(TINY_CORE)
    core["memories"] = [
        {"name": "sram", "size_bits": 1 << 20,
         "ports": [{"name": "rw", "kind": "read_write", "width_bits": width}]},
        {"name": "reg", "size_bits": 1 << 12,
         "ports": [{"name": "rw", "kind": "read_write", "width_bits": 8, "latency_cycles": latency}]},
    ]  # fmt: skip
    gemm = einsum("mm", [("A", ["m", "k"]), ("B", ["k", "n"])], ("Z", ["m", "n"]), sizes)
    tree = [{"type": "storage", "memory": "sram", "tensors": ["A", "B", "Z"]}]
    tree += [{"type": "temporal", "rank": r, "bound": sizes[r]} for r in order[:2]]
    tree += [{"type": "storage", "memory": "reg", "tensors": ["Z"]}]
    tree += [{"type": "temporal", "rank": order[2], "bound": sizes[order[2]]},
             {"type": "compute", "einsum": "mm"}]  # fmt: skip
    work = workload_from_dict({"name": "w", "default_bits_per_value": 8, "einsums": [gemm]})
    arch = architecture_from_dict(core)
    single = replay(arch, work, mapping_from_dict({"loop_tree": tree}, arch, work))
    chip = chip_from_dict({"name": "one", "cores": [{"name": "c0", "architecture": core}],
                           "offchip": {"ports": [{"name": "rw", "kind": "read_write", "width_bits": 8}]}})  # fmt: skip
    mapping = chip_mapping_from_dict(
        {"layers": [{"einsum": "mm", "cores": ["c0"], "loop_tree": tree}],
         "tensors": [{"tensor": "A", "home": "local"}, {"tensor": "B", "home": "local"},
                     {"tensor": "Z", "home": "kept"}]}, chip, work)  # fmt: skip
    res = replay_chip(chip, work, mapping)
    assert res.cycles == single.cycles
    assert res.compute_cycles["c0"] == single.ideal_compute_cycles
    chip_rows = sorted((r.step_phase, r.cause, r.tensor, r.cycles) for r in res.rows)
    core_rows = sorted((r.phase, r.cause, r.tensor, r.cycles) for r in single.stall_rows)
    assert chip_rows == core_rows
    assert res.run.plan.transfers == ()
