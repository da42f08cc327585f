"""The systolic PE array: a 4x4 array in each dataflow, fill, skew and drain derived by hand.

GEMM Z[m,n] += A[m,k] * B[k,n] with M=8, N=12, K=8, 8-bit values. The operands live in one
on-chip SRAM (the backing store: full at cycle 0, 1024 b/cycle ports); the stationary operand
sits in a register per PE, double-buffered, refilled at each fold. Per fold of T streamed
rows on an R x C = 4 x 4 array (SCALE-Sim 3.0.0's systolic_compute_{ws,os,is}.py):
  weight / input stationary: preload R=4, skew R-1=3, T, drain C-1=3  -> T + 10
  output stationary:         preload 0,   skew R-1=3, T, drain C-1=3  -> T + 6
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_helpers import inputs_from_dicts, memory, port

from cyclesim.analysis.simulate import replay
from cyclesim.checks.scalesim.importer import import_layer
from cyclesim.checks.scalesim.model import compute_cycles
from cyclesim.checks.scalesim.read import Layer, ScaleConfig
from cyclesim.errors import SpecError
from cyclesim.spec import architecture_from_dict
from cyclesim.spec.systolic import Dataflow

WORKLOAD = {
    "name": "gemm",
    "tensors": {
        "A": {"bits_per_value": 8},
        "B": {"bits_per_value": 8},
        "Z": {"bits_per_value": 8, "partial_sum_bits": 8},
    },
    "einsums": [
        {
            "name": "gemm",
            "expression": "Z[m,n] += A[m,k] * B[k,n]",
            "ranks": {"m": 8, "n": 12, "k": 8},
            "inputs": [
                {"tensor": "A", "projection": ["m", "k"]},
                {"tensor": "B", "projection": ["k", "n"]},
            ],
            "outputs": [{"tensor": "Z", "projection": ["m", "n"]}],
        }
    ],
}


def arch(dataflow: str, stationary: str, overlap: bool = False) -> dict:
    wide = [port("rd", "read", 1024), port("wr", "write", 1024)]
    # 128-b bursts: a fold's 16 registers load (or drain) in one burst on SRAM's port, each
    # register's 16-b port taking its 8 b in parallel (bursts are counted where the bits meet:
    # 16-b bursts would cross SRAM.rd in 8 bursts, 8 cycles)
    reg = [port("rd", "read", 16, 128), port("wr", "write", 16, 128)]
    return {
        "name": f"systolic_4x4_{dataflow}",
        "pe_array": {
            "dims": {"rows": 4, "cols": 4},
            "systolic": {"dataflow": dataflow, "overlap_folds": overlap},
        },
        "memories": [
            memory("SRAM", None, ["A", "B", "Z"], wide),
            memory("reg", 16, [stationary], reg, double_buffered=True, shared_across=[]),
        ],
    }


def mapping(folds: list[tuple[str, int]], cols: str, rows: str, stationary: str, stream: str):
    bound = {"m": 8, "n": 12, "k": 8}
    tree = [{"type": "storage", "memory": "SRAM", "tensors": ["A", "B", "Z"]}]
    tree += [{"type": "temporal", "rank": r, "bound": b} for r, b in folds]
    tree += [
        {"type": "spatial", "rank": cols, "bound": 4, "dim": "cols"},
        {"type": "spatial", "rank": rows, "bound": 4, "dim": "rows"},
        {"type": "storage", "memory": "reg", "tensors": [stationary]},
        {"type": "temporal", "rank": stream, "bound": bound[stream]},
        {"type": "compute", "einsum": "gemm"},
    ]
    return {"name": "systolic", "loop_tree": tree}


def run(arch_dict: dict, mapping_dict: dict):
    return replay(*inputs_from_dicts(arch_dict, WORKLOAD, mapping_dict), progress=False)


def causes(res) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in res.spans:
        out[s.cause] = out.get(s.cause, 0) + s.cycles
    return out


def test_weight_stationary_4x4_folds_preload_skew_stream_drain():
    # B stays in the PEs: rows hold k, columns hold n, m streams (T = M = 8).
    # folds = (K/4) * (N/4) = 2 * 3 = 6, each 4 + 3 + 8 + 3 = 18 cycles -> 108.
    # Onload: the first B tile (16 values x 8 b = 128 b) crosses SRAM.rd in 1 cycle; later
    # tiles load into the second register slot during the previous fold.
    # cycles = 1 + 108 = 109 = 1 + ideal 6*8=48 + fill 6*7=42 + drain 6*3=18.
    # SCALE-Sim reports 6 * 18 - 1 = 107 (the 0-based index of its last cycle).
    res = run(arch("weight_stationary", "B"), mapping([("n", 3), ("k", 2)], "n", "k", "B", "m"))
    assert (res.cycles, res.onload_cycles, res.ideal_compute_cycles) == (109, 1, 48)
    assert (res.stall_cycles, res.offload_cycles) == (60, 0)
    assert causes(res) == {"systolic_fill": 42, "systolic_drain": 18, "bandwidth": 1}


def test_output_stationary_4x4_has_no_preload_and_drains_the_last_tile():
    # Z stays in the PEs: rows hold m, columns hold n, k streams (T = K = 8).
    # folds = (M/4) * (N/4) = 2 * 3 = 6, each 0 + 3 + 8 + 3 = 14 cycles -> 84; no onload
    # (A and B are read straight from the SRAM, Z's first visit needs no load).
    # Offload: the last fold's 16 outputs leave the registers (8 b each on a 16 b port, the
    # SRAM takes 128 b in one cycle): 1 cycle. cycles = 84 + 1 = 85
    # = ideal 48 + fill 6*3=18 + drain 6*3=18 + offload 1.  SCALE-Sim: 6 * 14 - 1 = 83.
    res = run(arch("output_stationary", "Z"), mapping([("m", 2), ("n", 3)], "n", "m", "Z", "k"))
    assert (res.cycles, res.onload_cycles, res.ideal_compute_cycles) == (85, 0, 48)
    assert (res.stall_cycles, res.offload_cycles) == (36, 1)
    assert causes(res) == {"systolic_fill": 18, "systolic_drain": 18, "bandwidth": 1}


def test_input_stationary_4x4_streams_the_filters():
    # A stays in the PEs: rows hold k, columns hold m, n streams (T = N = 12).
    # folds = (K/4) * (M/4) = 2 * 2 = 4, each 4 + 3 + 12 + 3 = 22 cycles -> 88, + 1 onload
    # = 89 = 1 + ideal 4*12=48 + fill 4*7=28 + drain 4*3=12.  SCALE-Sim: 4 * 22 - 1 = 87.
    res = run(arch("input_stationary", "A"), mapping([("m", 2), ("k", 2)], "m", "k", "A", "n"))
    assert (res.cycles, res.onload_cycles, res.ideal_compute_cycles) == (89, 1, 48)
    assert causes(res) == {"systolic_fill": 28, "systolic_drain": 12, "bandwidth": 1}


def test_overlapping_folds_keep_only_the_first_fill_and_the_last_drain():
    # Weight stationary as above, but the next fold's preload and skew hide under the
    # current stream: 1 (onload) + 7 (first fill) + 6 * 8 (streams) + 3 (last drain) = 59.
    res = run(
        arch("weight_stationary", "B", overlap=True),
        mapping([("n", 3), ("k", 2)], "n", "k", "B", "m"),
    )
    assert res.cycles == 59
    assert causes(res) == {"systolic_fill": 7, "systolic_drain": 3, "bandwidth": 1}


def test_a_fold_is_two_engine_events_whatever_its_length():
    # one PE timeout per fold's stream plus one fill and one drain: 3 per fold, never per cycle
    res = run(arch("weight_stationary", "B"), mapping([("n", 3), ("k", 2)], "n", "k", "B", "m"))
    pe_events = 3 * 6
    assert res.engine_events <= pe_events + 6 * 4  # the register fills: a few events per transfer


def test_systolic_array_needs_two_dimensions():
    a = arch("weight_stationary", "B")
    a["pe_array"]["dims"] = {"rows": 4, "cols": 4, "lanes": 2}
    with pytest.raises(SpecError) as err:
        architecture_from_dict(a, "arch.yaml")
    assert err.value.field == "pe_array.dims" and "two dimensions" in str(err.value)


def test_unknown_dataflow_names_the_field():
    a = arch("weight_stationary", "B")
    a["pe_array"]["systolic"]["dataflow"] = "row_stationary"
    with pytest.raises(SpecError) as err:
        architecture_from_dict(a, "arch.yaml")
    assert "dataflow" in str(err.value)


def _config(dataflow: Dataflow, rows: int, cols: int, calc: bool) -> ScaleConfig:
    # USER mode with 1 KiB SRAMs: operands are tiled per fold and streams cut into chunks
    return ScaleConfig("t.cfg", "t", rows, cols, 1, 1, 1, dataflow, calc, 10, 10, 10)


@settings(max_examples=20, deadline=None)
@given(
    m=st.integers(1, 100),
    n=st.integers(1, 70),
    k=st.integers(1, 100),
    rows=st.sampled_from([2, 4, 8]),
    cols=st.sampled_from([2, 4, 16]),
    dataflow=st.sampled_from(list(Dataflow)),
    calc=st.booleans(),
)
def test_replay_compute_cycles_equal_the_fold_formula(m, n, k, rows, cols, dataflow, calc):
    # any GEMM, array, dataflow and memory: steps + wavefront = folds * (fill + T + drain)
    from cyclesim.checks.scalesim.check import replay_compute
    from cyclesim.spec import mapping_from_dict, workload_from_dict

    layer = Layer("g", 2, m, k, 1, k, 1, n, 1, True)
    imported = import_layer(layer, _config(dataflow, rows, cols, calc))
    a = architecture_from_dict(imported.arch)
    w = workload_from_dict(imported.workload)
    res = replay(a, w, mapping_from_dict(imported.mapping, a, w), progress=False)
    assert replay_compute(res) == compute_cycles(layer, a.pe_array.systolic)


def test_explain_proposes_overlapping_folds_and_replays_it():
    # The weight-stationary case above (109 cycles: fill 42, drain 18) against its overlapped
    # twin (59 cycles): explain's remedy for the fill is exactly that change, saving 50.
    from cyclesim.analysis.explain import explain

    a, w, m = inputs_from_dicts(
        arch("weight_stationary", "B"), WORKLOAD, mapping([("n", 3), ("k", 2)], "n", "k", "B", "m")
    )
    res = replay(a, w, m, progress=False)
    ex = explain(res, a, w, m, top=2, workers=1, progress=False)
    fill = next(c for c in ex.causes if c.cause == "systolic_fill")
    assert fill.where() == "PE array"
    (remedy,) = [r for r in fill.remedies if r.change.startswith("overlap systolic folds")]
    assert (remedy.cycles_before, remedy.cycles_after, remedy.saved) == (109, 59, 50)
